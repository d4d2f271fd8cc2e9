"""CoMeDi: the teammate's loss (Eq. mp_regret_obj with alpha, beta: streams, weights, signs,
heads, pi^comp's envs only) checked on hand-built data with values worked by hand; the XP
rollout splitting its envs among the earlier teammates and pi^comp found from them; the mixed
partner; configs, budgets and presets (about 20 s). Slow (about 95 s on two lightly loaded CPU
cores, mostly compiling): on a one-step coordination game with three equally good conventions,
each new teammate learns a convention none of the earlier ones plays (SP high, XP with them
low), and a run through `runs.train` stopped after every iteration and resumed ends
bit-identical."""

import dataclasses
import math
import os
import signal
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file

from aht_bench import runs
from aht_bench.algorithms import comedi
from aht_bench.envs import registry
from aht_bench.envs.matrix import RepeatedMatrixGame
from aht_bench.policies import load_policy, load_population
from aht_bench.policies.population import Population
from aht_bench.runs import get
from aht_bench.training import LearnerData, PPOConfig, Trajectory
from aht_bench.training.partners import MixedPartner
from aht_bench.training.ppo import ppo_loss
from aht_bench.training.rollout import reset_rollout, rollout

TASK = "test-coord3-v1"  # identity payoffs: three equally good conventions, one step


@pytest.fixture(scope="module", autouse=True)
def coord3():
    def factory():
        payoff = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
        return RepeatedMatrixGame(TASK, payoff, ("A", "B", "C"), steps=1)

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(registry._REGISTRY, TASK, factory)
        yield


def _config(**kw: Any) -> comedi.CoMeDiConfig:
    fields: dict[str, Any] = dict(
        task_id=TASK,
        population_size=3,
        teammate_timesteps=60 * 4 * 32 * 4,  # 60 updates of 4 rollouts x 32 envs x 4 steps
        num_envs=32,
        rollout_length=4,
        teammate_ppo=PPOConfig(
            learning_rate=3e-3, anneal_lr=False, num_epochs=2, num_minibatches=2, ent_coef=0.01
        ),
        xp_coef=1.0,
        mp_coef=0.5,
        ego_timesteps=2 * 8 * 4,  # 2 updates of 8 envs x 4 steps
        ego_num_envs=8,
        ego_ppo=PPOConfig(num_epochs=1, num_minibatches=2),
        ego_iterations=2,
        teammate_hidden=(16,),
        best_response_hidden=(16,),
        ego_hidden=8,
    )
    return comedi.CoMeDiConfig(**(fields | kw))


# ------------------------------------------------------------------------ the loss, by hand

A, K = 3, 3  # actions; value heads = population_size (head 0: BR, head 1 + j: teammate j)


@dataclasses.dataclass(frozen=True)
class LinearNet:
    """logits = s * obs[:A], values = v * obs[A:A + K] (scalar params s, v)."""

    def init_carry(self, batch_shape):
        return ()

    def evaluate(self, params, carry, obs):
        return params["s"] * obs[:A], params["v"] * obs[A : A + K], carry


def _trajectory(rewards):
    """(T, E) rewards; zero observations (s = 0: the uniform policy, every new value 0), old
    log-probs log(1/3) (ratio 1), old values 0."""
    rewards = jnp.asarray(rewards, jnp.float32)
    shape = rewards.shape
    data = LearnerData(
        obs=jnp.zeros(shape + (A + K,), jnp.float32),
        actions=jnp.zeros(shape, jnp.int32),
        log_probs=jnp.full(shape, -math.log(A), jnp.float32),
        values=jnp.zeros(shape + (K,), jnp.float32),
        final_values=jnp.zeros(shape + (K,), jnp.float32),
        last_values=jnp.zeros((shape[1], K), jnp.float32),
        rewards=rewards,
        initial_carry=(),
    )
    flags = jnp.zeros(shape, bool)
    return Trajectory(
        learners=(data, data),
        starts=flags,
        terminated=flags,
        truncated=flags,
        episode_return=jnp.zeros(shape + (2,), jnp.float32),
        time=jnp.ones(shape, jnp.int32),
        states=None,
    )


# gamma = 0: A_t = r_t - V_old = r_t, and the value target is r_t.
PPO = PPOConfig(gamma=0.0, gae_lambda=0.0, normalize_advantages=False, ent_coef=0.1, vf_coef=0.5)
# 2 steps x 2 envs. XP: with 2 earlier teammates, env 0 plays teammate 0, env 1 teammate 1.
DATA = {
    "sp": (_trajectory([[1.0, 2.0], [3.0, 0.0]]), 0),
    "xp": (_trajectory([[2.0, 10.0], [4.0, 20.0]]), 0),
    "mp": (_trajectory([[1.0, 1.0], [1.0, 1.0]]), 0),
}


def test_xp_envs_are_split_among_earlier_teammates_and_comp_is_the_most_compatible():
    xp = DATA["xp"][0]
    np.testing.assert_array_equal(comedi.core.xp_slots(5, 2), [0, 1, 0, 1, 0])
    np.testing.assert_array_equal(comedi.core.xp_slots(3, 0), [0, 0, 0])  # no earlier teammate yet
    # mean reward per step: teammate 0 (env 0) (2 + 4) / 2 = 3, teammate 1 (env 1) 15;
    # slot 2 is not filled yet
    np.testing.assert_array_equal(comedi.core.compatibility(xp, 2), [3.0, 15.0, -np.inf])
    assert int(comedi.core.choose_comp(xp, 2)) == 1
    # with one earlier teammate both envs play it
    np.testing.assert_array_equal(comedi.core.compatibility(xp, 1), [9.0, -np.inf, -np.inf])
    assert int(comedi.core.choose_comp(xp, 1)) == 0


@pytest.mark.parametrize(
    "comp,policy_loss,value_loss",
    [
        # L_SP = -1 * mean(A_SP)          = -(1 + 2 + 3 + 0) / 4 = -1.5
        # L_XP = +0.5 * mean(A_XP | comp) = comp 1 (env 1): 0.5 * (10 + 20) / 2 = 7.5
        #                                   comp 0 (env 0): 0.5 * (2 + 4) / 2   = 1.5
        # L_MP = -2 * mean(A_MP)          = -2 * 1 = -2
        # value: head 0 on SP + MP: (1 + 4 + 9 + 0 + 4 * 1) / 8 = 2.25; head 1 + comp on
        # comp's XP envs: (100 + 400) / 2 = 250 or (4 + 16) / 2 = 10; the other head: nothing
        (1, -1.5 + 7.5 - 2.0, 2.25 + 250.0),
        (0, -1.5 + 1.5 - 2.0, 2.25 + 10.0),
    ],
)
def test_teammate_loss_is_eq_mp_regret_obj_by_hand(comp, policy_loss, value_loss):
    config = _config(xp_coef=0.5, mp_coef=2.0, teammate_ppo=PPO)
    streams = comedi.core.teammate_streams(config, DATA, comp, count=2)
    params = {"s": jnp.float32(0.0), "v": jnp.float32(1.0)}
    loss, metrics = ppo_loss(params, LinearNet(), streams, PPO, recurrent=False)
    # entropy once over the 4 + 2 + 4 valid transitions of the uniform policy: -log 3
    expected = policy_loss + 0.1 * -math.log(3.0) + 0.5 * value_loss
    np.testing.assert_allclose(float(metrics["policy_loss"]), policy_loss, rtol=1e-6)
    np.testing.assert_allclose(float(metrics["value_loss"]), value_loss, rtol=1e-6)
    np.testing.assert_allclose(float(metrics["entropy"]), math.log(3.0), rtol=1e-6)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-6)


def test_loss_terms_coefficients_signs_and_heads():
    config = _config(xp_coef=0.6, mp_coef=1.0)
    terms = comedi.config.teammate_loss_terms(config)
    as_rows = [(t.data, t.coef, t.timestep_weighted, t.sign, t.value_head) for t in terms]
    assert as_rows == [
        ("sp", 1.0, False, 1.0, comedi.config.BR_HEAD),
        ("xp", 0.6, False, -1.0, comedi.config.XP_HEAD),
        ("mp", 1.0, False, 1.0, comedi.config.BR_HEAD),
    ]
    assert (comedi.config.BR_HEAD, comedi.config.XP_HEAD) == (0, 1)
    assert [t.value_head for t in comedi.config.with_xp_head(terms, 1)] == [0, 2, 0]
    sp, xp, mp = comedi.core.teammate_streams(config, DATA, 1, count=2)
    assert [float(s.sign) for s in (sp, xp, mp)] == [1.0, -1.0, 1.0]
    assert [int(s.value_head) for s in (sp, xp, mp)] == [0, 2, 0]
    np.testing.assert_array_equal(np.asarray(xp.weights), np.float32(0.6))
    np.testing.assert_array_equal(np.asarray(mp.weights), 1.0)
    np.testing.assert_array_equal(np.asarray(xp.mask), [[False, True], [False, True]])
    assert bool(jnp.all(sp.mask)) and bool(jnp.all(mp.mask))
    # the first teammate: self-play only, for it and its BR
    (first,) = comedi.core.teammate_streams(config, {"sp": DATA["sp"]}, None, count=0)
    assert (float(first.sign), int(first.value_head)) == (1.0, 0)
    assert [t.data for t in comedi.config.best_response_loss_terms(first=True)] == ["sp"]
    br = comedi.config.best_response_loss_terms(first=False)
    assert [(t.data, t.coef, t.sign, t.value_head) for t in br] == [
        ("sp", 1.0, 1.0, 0),
        ("mp", 1.0, 1.0, 0),
    ]


# ------------------------------------------------------------------- partners, on the game


def _always(net, action, seed=0):
    """MLPActorCritic params that play `action` with probability ~1."""
    params = net.init(jax.random.PRNGKey(seed))
    out = params["params"]["actor_out"]
    out = {"kernel": jnp.zeros_like(out["kernel"]), "bias": 30.0 * jax.nn.one_hot(action, A)}
    return {"params": {**params["params"], "actor_out": out}}


def test_xp_rollout_plays_earlier_teammate_env_mod_count_and_finds_comp():
    config = _config()
    setup = comedi.setup(config)
    nets = setup.networks
    # slots: teammate 0 plays A, teammate 1 plays B, slot 2 (not filled) plays C
    earlier = Population.stack(nets.teammate, [_always(nets.teammate, a) for a in range(3)])
    learner = _always(nets.teammate, 1)  # the new teammate plays B
    env, pairing = setup.env, setup.pairings.xp
    start = reset_rollout(env, pairing, jax.random.PRNGKey(1), 6)
    params = ((earlier, jnp.int32(2)), learner)
    _, xp = rollout(env, pairing, params, start, jax.random.PRNGKey(2), 3)
    # envs 1, 3, 5 play teammate 1 (B with B: 1), envs 0, 2, 4 teammate 0 (A with B: 0)
    np.testing.assert_array_equal(np.asarray(xp.learners[0].rewards), [[0, 1] * 3] * 3)
    np.testing.assert_array_equal(comedi.core.compatibility(xp, 2), [0.0, 1.0, -np.inf])
    assert int(comedi.core.choose_comp(xp, 2)) == 1


def test_mixed_partner_plays_comp_or_br_with_probability_one_half():
    config = _config()
    nets = comedi.networks(config)
    mixed = MixedPartner(nets.teammate, nets.best_response)
    comp, br = _always(nets.teammate, 0), _always(nets.best_response, 2)
    obs = jnp.zeros((nets.teammate.obs_dim,))
    keys = jax.random.split(jax.random.PRNGKey(0), 4000)
    actions, _, _ = jax.vmap(mixed.act, in_axes=(None, None, None, 0))((comp, br), (), obs, keys)
    counts = np.bincount(np.asarray(actions), minlength=3)
    assert counts[1] == 0 and counts[0] + counts[2] == 4000
    assert abs(counts[0] / 4000 - 0.5) < 0.04  # 5 standard deviations


# ------------------------------------------------------------------ configs, budgets, presets


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"population_size": 0}, "population_size"),
        ({"num_envs": 1}, "num_envs"),  # 2 earlier teammates need 2 XP envs
        ({"teammate_timesteps": 100}, "teammate_timesteps"),
        ({"xp_coef": -0.1}, "xp_coef"),
        ({"mp_coef": -1.0}, "mp_coef"),
        ({"teammate_ppo": PPOConfig(num_minibatches=5)}, "teammate_ppo.num_minibatches"),
        ({"ego_ppo": PPOConfig(num_minibatches=3)}, "ego_ppo.num_minibatches"),
        ({"ego_timesteps": 10}, "ego_timesteps"),
        ({"ego_iterations": 3}, "ego_iterations"),  # the ego stage has 2 updates
        ({"teammate_hidden": (0,)}, "teammate_hidden"),
        ({"task_id": "lbff"}, "task_id"),
    ],
)
def test_config_refuses_with_the_field_name(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        _config(**kw)


def test_budgets_and_env_steps_per_iteration():
    config = _config()
    assert config.teammate_batch_size == 4 * 32 * 4 and config.teammate_updates == 60
    assert config.iterations == 3 + 2
    # teammate 0: 60 SP updates of 32 x 4 = 7680; teammates 1, 2: 60 x 4 x 128 = 30720 each;
    # then 2 ego chunks of one update of 8 x 4 = 32 steps
    assert [config.env_steps_after(i) for i in range(6)] == [
        0,
        7680,
        38400,
        69120,
        69152,
        69184,
    ]
    assert config.ego_config.learner_seat == comedi.config.PARTNER_SEAT == 0
    assert comedi.config.TEAMMATE_SEAT == 1
    assert hash(config) == hash(_config())  # a static jit argument


def test_networks_and_state_layout():
    config = _config()
    nets = comedi.networks(config)
    assert nets.teammate.num_value_heads == config.population_size
    assert nets.best_response.num_value_heads == 1
    assert nets.ego.hidden == config.ego_hidden
    state = jax.eval_shape(lambda k: comedi.init(k, comedi.setup(config)), jax.random.PRNGKey(0))
    leaves = jax.tree.leaves(state.buffer.teammates) + jax.tree.leaves(state.buffer.best_responses)
    assert all(x.shape[0] == config.population_size for x in leaves)
    assert state.ego.rollout.obs.shape[0] == config.ego_num_envs


def test_paper_presets_follow_the_table():
    # Table comedi-tg-hyperparams: (timesteps/iter, lr, ent, clip, alpha, beta) per task
    table = {
        "lbf": (3.3e7, 5e-4, 0.03, 0.3, 0.6, 1.0),
        "cramped_room": (2.1e7, 5e-4, 0.005, 0.3, 0.4, 0.7),
        "asymm_advantages": (2.1e7, 5e-5, 0.1, 0.1, 0.4, 0.4),
        "counter_circuit": (3.8e7, 1e-3, 0.03, 0.5, 0.1, 0.1),
        "coord_ring": (3.8e7, 1e-3, 0.005, 0.3, 0.7, 0.4),
        "forced_coord": (3.8e7, 5e-4, 0.01, 0.5, 0.3, 0.4),
    }
    assert len(table) == 6 and len(comedi.presets.PAPER_TASKS) == len(comedi.PRESETS["paper"])
    for task, (steps, lr, ent, clip, alpha, beta) in table.items():
        c = comedi.preset("paper", task)
        ppo = c.teammate_ppo
        assert (c.population_size, c.num_envs, ppo.num_epochs, ppo.num_minibatches) == (
            10,
            48,
            15,
            8,
        )
        assert not ppo.anneal_lr
        assert (c.teammate_timesteps, ppo.learning_rate, ppo.ent_coef, ppo.clip_eps) == (
            int(steps),
            lr,
            ent,
            clip,
        )
        assert (c.xp_coef, c.mp_coef) == (alpha, beta)
        # the ego stage is Table ppo_ego_tm_hyperparams (the shared `ego` paper preset)
        ego = get("ego").config(runs.RunSpec("ego", task, "paper"))
        assert c.ego_config.ppo == ego.ppo
        assert (c.ego_timesteps, c.ego_num_envs, c.rollout_length) == (
            ego.total_timesteps,
            ego.num_envs,
            ego.rollout_length,
        )
    lbf = comedi.preset("paper", "lbf")
    assert lbf.teammate_updates == 33_000_000 // (4 * 48 * 128) == 1342
    assert comedi.preset("paper", "forced_coord").ego_ppo.num_epochs == 5
    for name, presets in comedi.PRESETS.items():
        for task_id in presets:
            assert comedi.preset(name, task_id).task_id == task_id
    quick = comedi.preset("quick", "cramped_room")
    assert (quick.xp_coef, quick.mp_coef) == (0.4, 0.7)  # the paper's alpha, beta
    with pytest.raises(KeyError, match="Did you mean 'quick'"):
        comedi.preset("quik", "lbf")
    assert comedi.preset("quick", "lbf", xp_coef=0.0).xp_coef == 0.0
    # what `aht-bench train comedi --set ...` reaches
    spec = runs.RunSpec("comedi", "lbf", "quick", overrides=(("ego_ppo.learning_rate", "1e-4"),))
    assert spec.config().ego_ppo.learning_rate == 1e-4


# ------------------------------------------------------------------------- whole runs (slow)

SEEDS = 2


@pytest.fixture(scope="module")
def generated():
    """The three teammates of 2 seeds (the generation stage only, `comedi.run`)."""
    config = _config()
    state = comedi.init_seeds(jax.random.PRNGKey(0), config, SEEDS)
    result = comedi.run(state, config, iterations=config.population_size)
    return config, result.state, result.metrics


def _action_probs(config, state, seed):
    """(population_size, A) each teammate's action probabilities (the game's one state)."""
    net = comedi.networks(config).teammate
    obs = jnp.zeros((net.obs_dim,))
    members = comedi.population(state, config, seed)
    logits = [net.evaluate(members.get(j), (), obs)[0] for j in range(members.size)]
    return np.asarray(jax.nn.softmax(jnp.stack(logits)))


@pytest.mark.slow
def test_each_new_teammate_learns_a_convention_no_earlier_teammate_plays(generated):
    config, state, metrics = generated
    for seed in range(SEEDS):
        probs = _action_probs(config, state, seed)
        print(seed, probs.round(3))
        # three teammates, three different conventions
        assert sorted(probs.argmax(axis=1).tolist()) == [0, 1, 2]
        for k in (1, 2):
            # SP with its BR high, XP with pi^comp low (last quarter of its training)
            assert metrics["sp_return"][seed, k] >= 0.8
            assert metrics["xp_return"][seed, k] <= 0.2
            assert metrics["mp_return"][seed, k] >= 0.8
            # P(teammate k and earlier teammate j play the same action): low
            for j in range(k):
                assert float(probs[k] @ probs[j]) <= 0.2, (seed, k, j)
    assert np.all(np.isnan(metrics["xp_return"][:, 0]))  # the first has no earlier teammate
    np.testing.assert_array_equal(metrics["population_size"], [[1, 2, 3]] * SEEDS)


def _latest(run: runs.RunDir) -> Path:
    latest = run.latest_checkpoint()
    assert latest is not None, f"{run.root} has no checkpoint"
    return latest


class _StopAfterEachCall:
    """`log` of `runs.train` that sends SIGTERM to this process after the run's first call:
    the run stops after that iteration with a checkpoint (`TrainingInterrupted`)."""

    def __call__(self, message: str) -> None:
        if message.startswith("first call"):
            os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.slow
def test_stopping_after_every_iteration_and_resuming_is_bit_identical(generated, tmp_path):
    config = generated[0]
    algo = get("comedi")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(comedi.PRESETS["quick"], TASK, config)
        spec = runs.RunSpec("comedi", TASK, "quick", num_seeds=SEEDS)
        straight = runs.train(algo, spec, tmp_path / "straight", progress=False, log=lambda m: None)
        stops = 0
        while True:
            try:
                stopped = runs.train(
                    algo,
                    spec,
                    tmp_path / "stopped",
                    resume=stops > 0,
                    progress=False,
                    log=_StopAfterEachCall(),
                )
                break
            except runs.TrainingInterrupted as e:
                stops += 1
                assert e.update == stops
    assert stops == config.iterations
    assert straight.env_steps == stopped.env_steps == config.env_steps_after(config.iterations)
    a, b = runs.RunDir(straight.out), runs.RunDir(stopped.out)
    state_a, state_b = (load_file(_latest(r)) for r in (a, b))
    assert state_a.keys() == state_b.keys()
    for k in state_a:
        np.testing.assert_array_equal(state_a[k], state_b[k], err_msg=k)
    names = sorted(p.name for p in (a.policies / "final").iterdir())
    assert names == sorted(p.name for p in (b.policies / "final").iterdir())
    for name in names:
        assert (a.policies / "final" / name).read_bytes() == (
            b.policies / "final" / name
        ).read_bytes()
    strip = lambda r: {k: v for k, v in r.items() if k != "time_s"}  # noqa: E731
    rows = runs.read_metrics(a.metrics)
    assert [strip(r) for r in rows] == [strip(r) for r in runs.read_metrics(b.metrics)]
    # generation iterations report the teammates' returns, ego iterations the ego's
    assert [("xp_return" in r, "ego_return" in r) for r in rows] == [(False, False)] + [
        (True, False)
    ] * 2 + [(False, True)] * 2
    assert [r["env_steps"] for r in rows] == [config.env_steps_after(i) for i in range(1, 6)]
    assert a.curve.exists()
    # the run's teammates are the ones the generation stage alone makes (same seeds)
    members = load_population(a.policies / "final" / "seed1-population.safetensors")
    assert members.size == 3
    expected = comedi.population(generated[1], config, seed=1)
    for x, y in zip(jax.tree.leaves(members), jax.tree.leaves(expected), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    ego, _ = load_policy(a.policies / "final" / "seed0-ego.safetensors")
    assert ego == comedi.networks(config).ego
