"""Behaviour cloning on the replayed transitions (`train_bc`, `evaluate_bc`).

May import jax, optax, numpy, pandas (to read the pickles only), the standard library and
aht_bench.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.heldout.human.replay import Replay
from aht_bench.heldout.human.versions import Log


@dataclasses.dataclass(frozen=True)
class BCConfig:
    """Behaviour cloning and evaluation of the human proxies."""

    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the actor (and of the unused critic) MLP."""
    learning_rate: float = 1e-3
    """Adam step size."""
    batch_size: int = 256
    """Transitions per gradient step."""
    max_epochs: int = 60
    """Upper limit on passes over the training transitions."""
    patience: int = 6
    """Stop after this many epochs without a lower validation cross-entropy."""
    validation_fraction: float = 0.15
    """Share of the split's trials (at least one) held out for early stopping."""
    episodes: int = 128
    """Evaluation episodes per seating (self-play and proxy-with-partner returns)."""
    eval_seed: int = 0
    """Seed of the evaluation episodes."""


def _logits(network: Any, params: Any, obs: jax.Array) -> jax.Array:
    """Policy logits (n, A) for uint8 observations (n, obs_dim)."""
    out = jax.vmap(lambda o: network.evaluate(params, (), o)[0])(obs.astype(jnp.float32))
    return out


def cross_entropy(logits: jax.Array, actions: jax.Array) -> jax.Array:
    """Mean of -log softmax(logits)[action] over the batch: logits (n, A), actions (n,)."""
    chex_ok = logits.ndim == 2 and actions.shape == logits.shape[:1]
    if not chex_ok:
        raise ValueError(f"logits {logits.shape} and actions {actions.shape} do not fit")
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, actions[:, None], axis=1))


def evaluate_bc(
    network: Any, params: Any, obs: np.ndarray, actions: np.ndarray, chunk: int = 8192
) -> dict[str, float]:
    """Action accuracy (argmax of the logits) and cross-entropy on (n, obs_dim) uint8
    observations and (n,) actions, with the majority-action baseline accuracy."""
    fn = jax.jit(lambda p, o: _logits(network, p, o))
    correct, nll = 0, 0.0
    for s in range(0, len(actions), chunk):
        logits = fn(params, jnp.asarray(obs[s : s + chunk]))
        a = jnp.asarray(actions[s : s + chunk], jnp.int32)
        correct += int(jnp.sum(jnp.argmax(logits, axis=1) == a))
        nll += float(cross_entropy(logits, a)) * len(a)
    counts = np.bincount(actions.astype(np.int64), minlength=network.num_actions)
    return {
        "action_accuracy": correct / len(actions),
        "cross_entropy": nll / len(actions),
        "majority_action_accuracy": float(counts.max() / len(actions)),
        "transitions": len(actions),
    }


def train_bc(
    key: jax.Array,
    network: Any,
    obs: np.ndarray,
    actions: np.ndarray,
    val_obs: np.ndarray,
    val_actions: np.ndarray,
    config: BCConfig,
    log: Log = print,
) -> tuple[Any, dict[str, Any]]:
    """Behaviour cloning: Adam on the cross-entropy of `network`'s logits against `actions`
    ((n,) in 0..A-1, for uint8 observations (n, obs_dim)), early-stopped on the validation
    cross-entropy. Returns (the best epoch's params, a record of the run)."""
    import optax

    from aht_bench.training.rollout import init_params

    if obs.shape[0] != actions.shape[0] or val_obs.shape[0] != val_actions.shape[0]:
        raise ValueError("observations and actions must have the same number of rows")
    n = len(actions)
    batch = min(config.batch_size, n)
    num_batches = n // batch
    key, init_key = jax.random.split(key)
    params = init_params(network, init_key)
    optimizer = optax.adam(config.learning_rate)
    opt_state = optimizer.init(params)
    obs_d, act_d = jnp.asarray(obs), jnp.asarray(actions, jnp.int32)
    val_obs_d, val_act_d = jnp.asarray(val_obs), jnp.asarray(val_actions, jnp.int32)

    def loss_fn(p: Any, o: jax.Array, a: jax.Array) -> jax.Array:
        return cross_entropy(_logits(network, p, o), a)

    @jax.jit
    def _update_epoch(params: Any, opt_state: Any, key: jax.Array) -> tuple[Any, Any, jax.Array]:
        perm = jax.random.permutation(key, n)[: num_batches * batch].reshape(num_batches, batch)

        def _update_minibatch(carry: Any, idx: jax.Array) -> tuple[Any, jax.Array]:
            p, s = carry
            loss, grads = jax.value_and_grad(loss_fn)(p, obs_d[idx], act_d[idx])
            updates, s = optimizer.update(grads, s, p)
            return (optax.apply_updates(p, updates), s), loss

        (params, opt_state), losses = jax.lax.scan(_update_minibatch, (params, opt_state), perm)
        return params, opt_state, losses.mean()

    val_loss_fn = jax.jit(lambda p: loss_fn(p, val_obs_d, val_act_d))
    best, best_loss, best_epoch, history = params, float(val_loss_fn(params)), 0, []
    for epoch in range(1, config.max_epochs + 1):
        key, sub = jax.random.split(key)
        params, opt_state, train_loss = _update_epoch(params, opt_state, sub)
        val_loss = float(val_loss_fn(params))
        history.append([round(float(train_loss), 5), round(val_loss, 5)])
        if val_loss < best_loss:
            best, best_loss, best_epoch = params, val_loss, epoch
        elif epoch - best_epoch >= config.patience:
            break
    log(
        f"  BC: {len(history)} epochs, best epoch {best_epoch} (validation cross-entropy "
        f"{best_loss:.4f})"
    )
    return best, {
        "epochs_run": len(history),
        "best_epoch": best_epoch,
        "best_validation_cross_entropy": best_loss,
        "loss_history": history,
    }


def _transitions(rep: Replay, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every cloned seat's (obs, action) of the steps where `keep`: (seats * k, obs_dim),
    (seats * k,)."""
    obs = rep.obs[keep].reshape(-1, rep.obs.shape[-1])
    return obs, rep.actions[keep].reshape(-1)
