"""The PPO update over several streams: the loss composition against a NumPy reference, value
heads trained only on their own streams, signs, and recurrent minibatches."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench.policies import MLPActorCritic
from aht_bench.training import LearnerState, PPOConfig, Stream, make_optimizer, ppo_update
from aht_bench.training.ppo import ppo_loss

A, K = 3, 2


@dataclasses.dataclass(frozen=True)
class LinearNet:
    """Test network whose outputs are read off the observation: logits = s * obs[:A],
    values = v * obs[A:A + K], with scalar params s and v."""

    def init_carry(self, batch_shape):
        return ()

    def evaluate(self, params, carry, obs):
        return params["s"] * obs[:A], params["v"] * obs[A : A + K], carry


def _stream(rng, steps, envs, head, sign, weights=None, mask=None):
    shape = (steps, envs)
    return Stream(
        obs=jnp.asarray(rng.normal(size=shape + (A + K,)), jnp.float32),
        actions=jnp.asarray(rng.integers(0, A, size=shape), jnp.int32),
        log_probs=jnp.asarray(np.log(rng.uniform(0.2, 0.5, size=shape)), jnp.float32),
        advantages=jnp.asarray(rng.normal(size=shape), jnp.float32),
        targets=jnp.asarray(rng.normal(size=shape), jnp.float32),
        values=jnp.zeros(shape, jnp.float32),
        weights=jnp.ones(shape, jnp.float32) if weights is None else weights,
        mask=jnp.ones(shape, bool) if mask is None else mask,
        starts=jnp.zeros(shape, bool),
        initial_carry=(),
        value_head=jnp.int32(head),
        sign=jnp.float32(sign),
    )


def _reference_loss(params, streams, cfg):
    """The module docstring's loss, written out in NumPy one transition at a time."""
    clip_total, ent_terms, sq_terms = 0.0, [], {k: [] for k in range(K)}
    for s in streams:
        obs = np.asarray(s.obs).reshape(-1, A + K)
        act = np.asarray(s.actions).reshape(-1)
        old = np.asarray(s.log_probs).reshape(-1)
        adv = np.asarray(s.advantages).reshape(-1)
        w = np.asarray(s.weights).reshape(-1)
        mask = np.asarray(s.mask).reshape(-1)
        targ = np.asarray(s.targets).reshape(-1)
        head, sign = int(s.value_head), float(s.sign)
        terms = []
        for i in range(len(act)):
            if not mask[i]:
                continue
            logits = params["s"] * obs[i, :A]
            logp = logits - np.log(np.sum(np.exp(logits)))
            ratio = np.exp(logp[act[i]] - old[i])
            signed = sign * w[i] * adv[i]
            terms.append(
                -min(ratio * signed, np.clip(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps) * signed)
            )
            ent_terms.append(np.sum(np.exp(logp) * logp))
            value = params["v"] * obs[i, A + head]
            sq_terms[head].append((value - targ[i]) ** 2)
        clip_total += np.mean(terms)
    value_total = sum(np.mean(v) for v in sq_terms.values() if v)
    return clip_total + cfg.ent_coef * np.mean(ent_terms) + cfg.vf_coef * value_total


def test_multi_stream_loss_matches_reference():
    rng = np.random.default_rng(1)
    steps = 3
    timestep_w = jnp.broadcast_to(jnp.arange(1.0, steps + 1)[:, None], (steps, 2))
    mask = jnp.array([[True, True], [True, False]])
    streams = (
        _stream(rng, steps, 2, head=0, sign=1.0, weights=timestep_w),  # e.g. SP: w = t + 1
        _stream(rng, 2, 2, head=1, sign=-1.0, mask=mask),  # e.g. XSP: sign -1, other head
        _stream(rng, 2, 2, head=0, sign=1.0, weights=jnp.full((2, 2), 3.0)),  # (1 + lambda)
    )
    cfg = PPOConfig(clip_eps=0.2, ent_coef=0.05, vf_coef=0.7, normalize_advantages=False)
    params = {"s": jnp.float32(1.3), "v": jnp.float32(-0.4)}
    got, metrics = ppo_loss(params, LinearNet(), streams, cfg, recurrent=False)
    want = _reference_loss({k: float(v) for k, v in params.items()}, streams, cfg)
    assert float(got) == pytest.approx(want, rel=1e-5)
    assert float(metrics["loss"]) == pytest.approx(want, rel=1e-5)


def _constant_obs_streams(net_obs_dim, n=64):
    """Two streams on one constant observation: action 0 has advantage +1 in both, stream 0
    trains head 0 towards +1 with sign +1, stream 1 trains head 1 towards -1 with sign -1."""
    shape = (n, 1)
    base = {
        "obs": jnp.ones(shape + (net_obs_dim,), jnp.float32),
        "actions": jnp.zeros(shape, jnp.int32),
        "log_probs": jnp.full(shape, np.log(1 / 4), jnp.float32),
        "advantages": jnp.ones(shape, jnp.float32),
        "values": jnp.zeros(shape, jnp.float32),
        "weights": jnp.ones(shape, jnp.float32),
        "mask": jnp.ones(shape, bool),
        "starts": jnp.zeros(shape, bool),
        "initial_carry": (),
    }
    plus = Stream(**base, targets=jnp.ones(shape), value_head=0, sign=1.0)
    minus = Stream(**base, targets=-jnp.ones(shape), value_head=1, sign=-1.0)
    return plus, minus


@pytest.fixture(scope="module")
def two_head_net():
    return MLPActorCritic(4, 4, num_value_heads=2, hidden=(16,))


def _train(net, streams, cfg, updates=40):
    opt = make_optimizer(cfg, updates)
    params = net.init(jax.random.PRNGKey(0))
    learner = LearnerState(params, opt.init(params))
    step = jax.jit(lambda lr, k: ppo_update(net, lr, streams, k, cfg, opt))
    for i in range(updates):
        learner, metrics = step(learner, jax.random.PRNGKey(i))
    return learner, metrics


def test_value_heads_train_only_on_their_streams(two_head_net):
    plus, minus = _constant_obs_streams(4)
    cfg = PPOConfig(
        learning_rate=3e-2,
        anneal_lr=False,
        num_epochs=2,
        num_minibatches=4,
        normalize_advantages=False,
        ent_coef=0.0,
    )
    learner, metrics = _train(two_head_net, (plus, minus), cfg)
    _, values, _ = two_head_net.evaluate(learner.params, (), jnp.ones(4))
    np.testing.assert_allclose(np.asarray(values), [1.0, -1.0], atol=0.05)
    assert np.isfinite(float(metrics["approx_kl"]))


@pytest.mark.parametrize("sign,direction", [(1.0, 1), (-1.0, -1)])
def test_sign_sets_the_direction_of_the_policy_step(two_head_net, sign, direction):
    plus, _ = _constant_obs_streams(4)
    stream = plus._replace(sign=sign)
    cfg = PPOConfig(
        learning_rate=1e-2,
        anneal_lr=False,
        num_epochs=1,
        num_minibatches=1,
        normalize_advantages=False,
        ent_coef=0.0,
        vf_coef=0.0,
    )
    learner, _ = _train(two_head_net, (stream,), cfg, updates=3)
    logits, _, _ = two_head_net.evaluate(learner.params, (), jnp.ones(4))
    p0 = float(jax.nn.softmax(logits)[0])
    assert (p0 - 0.25) * direction > 0.05


def test_minibatch_count_must_divide_every_stream(two_head_net):
    plus, _ = _constant_obs_streams(4, n=10)
    cfg = PPOConfig(num_minibatches=4)
    opt = make_optimizer(cfg, 1)
    params = two_head_net.init(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="num_minibatches=4"):
        ppo_update(
            two_head_net,
            LearnerState(params, opt.init(params)),
            (plus,),
            jax.random.PRNGKey(0),
            cfg,
            opt,
        )
