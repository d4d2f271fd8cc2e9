"""The one PPO update: epochs x minibatches over several streams of one learner at once.

A `Stream` is one pairing's data for one learner, with its advantages, the value head they came
from and train, and the weight and sign of the paper's generalised clip loss (its pseudocode
appendix, Eq. ppo_clip_loss). The learner's loss on a minibatch is

    L = sum_s L_CLIP(stream s; w_s, sign_s)                       Eq. (ppo_clip_loss), per stream
      + ent_coef * L_ENT(union of all streams)                     Eq. (ent_loss), once
      + vf_coef  * sum_k L_VAL(head k; union of streams on head k)  Eq. (val_loss), per head

which is the paper's PPO loss for one stream with `w = 1`, `sign = +1` (IPPO, PPO-BR, the ego
update of the paper's ego-update algorithm), and its teammate loss L_REG (Eq. regret_pol_loss)
for the four streams SP, XP, SXP, XSP with weights `(1 + lambda_2) (t + 1)`, `t + 1`,
`1 + lambda_1`, `1`, signs `+1, -1, +1, -1` and value heads BR, ego, BR, ego. Each epoch shuffles
every stream and splits each into `num_minibatches` parts; minibatch m holds part m of every
stream.

Feed-forward learners minibatch over transitions. Recurrent learners (a non-empty carry)
minibatch over whole env sequences, time-major, and re-run the network from each sequence's
stored start carry, resetting the carry where an episode started (`Stream.starts`).

May import jax, optax, chex, aht_bench.policies and aht_bench.training only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

from aht_bench.policies.core import Carry, Params, reset_carry_where
from aht_bench.training import losses
from aht_bench.training.config import PPOConfig
from aht_bench.training.gae import gae
from aht_bench.training.rollout import Trajectory, record_action


class LearnerState(NamedTuple):
    """A learner's parameters and optimiser state."""

    params: Params
    opt_state: optax.OptState


class Stream(NamedTuple):
    """One pairing's data for one learner (time-major: T steps of E envs).

    `value_head` and `sign` may be Python numbers or traced scalars.
    """

    obs: jax.Array  # (T, E, obs_dim) float32
    actions: jax.Array  # (T, E) int32
    log_probs: jax.Array  # (T, E) float32: log pi_old(a_t | o_t)
    advantages: jax.Array  # (T, E) float32: A_t by GAE with the old critic of `value_head`
    targets: jax.Array  # (T, E) float32: V^targ = A_t + V_old(o_t), trains `value_head`
    values: jax.Array  # (T, E) float32: V_old(o_t) of `value_head`
    weights: jax.Array  # (T, E) float32: w_t of Eq. (ppo_clip_loss)
    mask: jax.Array  # (T, E) bool: valid transitions (invalid ones count nowhere)
    starts: jax.Array  # (T, E) bool: an episode starts at t (recurrent carry reset)
    initial_carry: Carry  # leaves (E, ...): carry before step 0; () for feed-forward learners
    value_head: Any  # () int: the critic head this stream's advantages come from and train
    sign: Any  # () float: sign of Eq. (ppo_clip_loss), +1 or -1


def timestep_weights(trajectory: Trajectory) -> jax.Array:
    """(T, E) float32 `w_ts = t + 1` for the zero-based step t of each transition in its episode.

    The paper weights its teammates' SP and XP transitions by their timestep (Eq. tsw_grad: the t-th
    transition of an episode from p0 stands for t + 1 start-state samples). The env's own step
    count is used, so episodes that began in an earlier rollout keep counting.
    """
    return trajectory.time.astype(jnp.float32)


def make_stream(
    trajectory: Trajectory,
    learner: int,
    config: PPOConfig,
    value_head: int | jax.Array = 0,
    weights: jax.Array | None = None,
    sign: float | jax.Array = 1.0,
    mask: jax.Array | None = None,
) -> Stream:
    """The stream of learner `learner` (index into `trajectory.learners`) with GAE advantages.

    Advantages use the values of `value_head` (Eq. val_loss's `sigma_old`); `weights` default to
    ones and `mask` to all valid.
    """
    data = trajectory.learners[learner]
    values = jnp.take(data.values, value_head, axis=-1)
    final_values = jnp.take(data.final_values, value_head, axis=-1)
    last_value = jnp.take(data.last_values, value_head, axis=-1)
    advantages, targets = gae(
        data.rewards,
        values,
        final_values,
        last_value,
        trajectory.terminated,
        trajectory.truncated,
        config.gamma,
        config.gae_lambda,
    )
    shape = data.actions.shape
    return Stream(
        obs=data.obs,
        actions=data.actions,
        log_probs=data.log_probs,
        advantages=advantages,
        targets=targets,
        values=values,
        weights=jnp.ones(shape, jnp.float32) if weights is None else weights,
        mask=jnp.ones(shape, bool) if mask is None else mask,
        starts=trajectory.starts,
        initial_carry=data.initial_carry,
        value_head=jnp.asarray(value_head, jnp.int32),
        sign=jnp.asarray(sign, jnp.float32),
    )


def make_optimizer(config: PPOConfig, num_updates: int) -> optax.GradientTransformation:
    """Global-norm clipping then Adam; with `anneal_lr` the step size falls linearly to 0,
    stepping once per PPO update (`num_epochs * num_minibatches` optimiser steps).

    The optimiser works on the params raveled into one vector (`optax.flatten`): the same
    maths, a third less compile time and fewer tiny kernels than one Adam per leaf.
    """
    steps_per_update = config.num_epochs * config.num_minibatches

    def _schedule(count: ArrayLike) -> jax.Array:
        done = (jnp.asarray(count) // steps_per_update).astype(jnp.float32) / num_updates
        return config.learning_rate * jnp.maximum(1.0 - done, 0.0)

    learning_rate = _schedule if config.anneal_lr else config.learning_rate
    return optax.flatten(
        optax.chain(
            optax.clip_by_global_norm(config.max_grad_norm),
            optax.adam(learning_rate, eps=1e-5),
        )
    )


def is_recurrent(streams: Sequence[Stream]) -> bool:
    """Whether the learner keeps a carry (then minibatches are whole env sequences)."""
    return any(jax.tree.leaves(s.initial_carry) for s in streams)


def _evaluate_sequences(network: Any, params: Params, stream: Stream):
    """Re-run a recurrent learner over (T, B) sequences: logits (T, B, A), values (T, B, K).

    A network with `evaluate_sequence` (`RecurrentEgo`) does it itself, batching what does not
    depend on the recurrence; otherwise `evaluate` is scanned over the steps.
    """
    if hasattr(network, "evaluate_sequence"):
        return network.evaluate_sequence(
            params, stream.initial_carry, stream.obs, stream.actions, stream.starts
        )
    evaluate = jax.vmap(network.evaluate, in_axes=(None, 0, 0))

    def _step(carry, inputs):
        obs, action, start = inputs
        carry = reset_carry_where(network, start, carry)
        logits, values, carry = evaluate(params, carry, obs)
        return record_action(carry, action), (logits, values)

    _, out = jax.lax.scan(_step, stream.initial_carry, (stream.obs, stream.actions, stream.starts))
    return out


def _evaluate(network: Any, params: Params, stream: Stream, recurrent: bool):
    """logits (N, A) and values (N, K) of a minibatch stream, flattened to N transitions."""
    if recurrent:
        logits, values = _evaluate_sequences(network, params, stream)
    else:
        obs = stream.obs.reshape((-1, stream.obs.shape[-1]))
        logits, values, _ = jax.vmap(network.evaluate, in_axes=(None, None, 0))(params, (), obs)
    return logits.reshape(-1, logits.shape[-1]), values.reshape(-1, values.shape[-1])


def ppo_loss(
    params: Params,
    network: Any,
    streams: Sequence[Stream],
    config: PPOConfig,
    recurrent: bool,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The learner's loss on one minibatch of every stream (module docstring), and diagnostics."""
    clip_total = jnp.zeros((), jnp.float32)
    flat: dict[str, list[jax.Array]] = {
        k: [] for k in ("logits", "log_probs", "old", "pred", "targets", "mask", "head")
    }
    for s in streams:
        logits, values = _evaluate(network, params, s, recurrent)
        actions = s.actions.reshape(-1)
        mask = s.mask.reshape(-1)
        log_probs = jnp.take_along_axis(jax.nn.log_softmax(logits), actions[:, None], -1)[:, 0]
        advantages = s.advantages.reshape(-1)
        if config.normalize_advantages:
            advantages = losses.normalize_advantages(advantages, mask)
        old = s.log_probs.reshape(-1)
        clip_total = clip_total + losses.clip_loss(
            log_probs, old, advantages, s.weights.reshape(-1), s.sign, config.clip_eps, mask
        )
        flat["logits"].append(logits)
        flat["log_probs"].append(log_probs)
        flat["old"].append(old)
        flat["pred"].append(jnp.take(values, s.value_head, axis=-1))
        flat["targets"].append(s.targets.reshape(-1))
        flat["mask"].append(mask)
        flat["head"].append(jnp.broadcast_to(s.value_head, mask.shape))
        num_heads = values.shape[-1]
    union = {k: jnp.concatenate(v) for k, v in flat.items()}
    entropy = losses.entropy_loss(union["logits"], union["mask"])
    value = sum(
        losses.value_loss(union["pred"], union["targets"], union["mask"] & (union["head"] == k))
        for k in range(num_heads)
    )
    loss = clip_total + config.ent_coef * entropy + config.vf_coef * value
    metrics = {
        "loss": loss,
        "policy_loss": clip_total,
        "value_loss": value,
        "entropy": -entropy,
        "approx_kl": losses.approx_kl(union["log_probs"], union["old"], union["mask"]),
        "clip_fraction": losses.clip_fraction(
            union["log_probs"], union["old"], config.clip_eps, union["mask"]
        ),
    }
    return loss, metrics


_PER_STEP = (
    "obs",
    "actions",
    "log_probs",
    "advantages",
    "targets",
    "values",
    "weights",
    "mask",
    "starts",
)


def _shuffle(stream: Stream, key: jax.Array, num_minibatches: int, recurrent: bool) -> jax.Array:
    """(num_minibatches, units / num_minibatches) int32: a random split of the stream's units.

    Units are transitions (flat index `t * E + e`) or, for recurrent learners, envs.
    """
    steps, envs = stream.actions.shape
    units = envs if recurrent else steps * envs
    return permutation(key, units).reshape((num_minibatches, -1))


def permutation(key: jax.Array, n: int) -> jax.Array:
    """(n,) int32: a uniformly random permutation of `0..n-1`.

    `jax.random.permutation` for short ones; from 4096 units on, `_packed_key_permutation`,
    several times faster on CPU. Short sorts cost little either way (the env sequences of
    recurrent learners), and keeping jax's shuffles there keeps small runs as they were.
    """
    if n < 4096 or n > 2**24:
        return jax.random.permutation(key, n).astype(jnp.int32)
    return _packed_key_permutation(key, n)


def _packed_key_permutation(key: jax.Array, n: int) -> jax.Array:
    """(n,) int32: a uniformly random permutation of `0..n-1` (n <= 2**24).

    Like `jax.random.permutation`, it sorts the positions by random keys, in rounds, so that
    the bias of keys that collide (they keep their order) is negligible: `rounds * key_bits >=
    3 log2(n)`, jax's rule. jax sorts 32-bit keys with the positions alongside; here each round
    sorts one uint32 array holding random high bits and the position in its low bits, which
    XLA's CPU sort runs about 6x faster (no comparator call per comparison). The shuffles
    differ from jax's, not their distribution.
    """
    index_bits = max(int(n - 1).bit_length(), 1)
    key_bits = 32 - index_bits
    rounds = max(-(-3 * index_bits // key_bits), 1)
    positions = jnp.arange(n, dtype=jnp.uint32)
    perm = positions
    for round_key in jax.random.split(key, rounds):
        bits = jax.random.bits(round_key, (n,), jnp.uint32)
        packed = (bits >> index_bits) << index_bits | positions
        order = jax.lax.sort(packed) & jnp.uint32((1 << index_bits) - 1)
        perm = perm[order]
    return perm.astype(jnp.int32)


def _minibatch(stream: Stream, indices: jax.Array, recurrent: bool) -> Stream:
    """The part of `stream` at `indices` (a row of `_shuffle`): whole env sequences (T, B, ...)
    for recurrent learners, else transitions flattened to (1, B, ...).

    Gathered once per minibatch from the unshuffled stream, so each observation is copied
    once per epoch (a shuffled copy of the whole stream, then slicing it, copied it twice).
    """
    steps, envs = stream.actions.shape
    fields = stream._asdict()
    for k in _PER_STEP:
        x = fields[k]
        if recurrent:
            fields[k] = x[:, indices]
        else:
            fields[k] = x.reshape((steps * envs,) + x.shape[2:])[indices][None]
    if recurrent:
        fields["initial_carry"] = jax.tree.map(lambda c: c[indices], stream.initial_carry)
    return Stream(**fields)


def _minibatches(stream: Stream, key: jax.Array, num_minibatches: int, recurrent: bool) -> Stream:
    """The stream shuffled and split: every leaf gets a leading (num_minibatches,) axis."""
    parts = [
        _minibatch(stream, indices, recurrent)
        for indices in _shuffle(stream, key, num_minibatches, recurrent)
    ]
    parts = [p._replace(value_head=jnp.asarray(p.value_head, jnp.int32)) for p in parts]
    parts = [p._replace(sign=jnp.asarray(p.sign, jnp.float32)) for p in parts]
    if not recurrent:  # (1, B, ...) -> (B, ...)
        parts = [p._replace(**{k: getattr(p, k)[0] for k in _PER_STEP}) for p in parts]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *parts)


def ppo_update(
    network: Any,
    learner: LearnerState,
    streams: Sequence[Stream],
    key: jax.Array,
    config: PPOConfig,
    optimizer: optax.GradientTransformation,
) -> tuple[LearnerState, dict[str, jax.Array]]:
    """`config.num_epochs` epochs of `config.num_minibatches` gradient steps on all `streams`.

    `network` has `evaluate(params, carry, obs) -> (logits (A,), values (K,), carry)` and
    `init_carry`. Returns the new learner state and the diagnostics of `ppo_loss`, averaged
    over all minibatches. Jittable and vmappable (e.g. over IPPO's agents).
    """
    streams = tuple(streams)
    if not streams:
        raise ValueError("ppo_update needs at least one stream")
    recurrent = is_recurrent(streams)
    units = [s.actions.shape[1] if recurrent else s.actions.size for s in streams]
    for u in units:
        if u % config.num_minibatches:
            what = "envs" if recurrent else "transitions"
            raise ValueError(
                f"a stream has {u} {what}, not divisible by num_minibatches="
                f"{config.num_minibatches}; change num_minibatches or the rollout size"
            )
    for s in streams:
        chex.assert_equal_shape([s.actions, s.log_probs, s.advantages, s.targets, s.weights])

    def _update_minibatch(learner: LearnerState, indices: tuple[jax.Array, ...]):
        batch = tuple(_minibatch(s, i, recurrent) for s, i in zip(streams, indices, strict=True))
        grad_fn = jax.grad(ppo_loss, has_aux=True)
        grads, metrics = grad_fn(learner.params, network, batch, config, recurrent)
        updates, opt_state = optimizer.update(grads, learner.opt_state, learner.params)
        return LearnerState(optax.apply_updates(learner.params, updates), opt_state), metrics

    def _update_epoch(learner: LearnerState, epoch_key: jax.Array):
        keys = jax.random.split(epoch_key, len(streams))
        indices = tuple(
            _shuffle(s, k, config.num_minibatches, recurrent)
            for s, k in zip(streams, keys, strict=True)
        )
        return jax.lax.scan(_update_minibatch, learner, indices)

    learner, metrics = jax.lax.scan(
        _update_epoch, learner, jax.random.split(key, config.num_epochs)
    )
    return learner, jax.tree.map(jnp.mean, metrics)
