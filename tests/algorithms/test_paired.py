"""PAIRED: the teammate's loss is per-trajectory regret (+SP on the BR head, -XP on the ego head)
and the BR and ego train by plain PPO, checked on hand-built data with values worked by hand;
config validation; the paper preset against Table paired_hyperparams; a tiny run in lockstep
(all three learners move every iteration, the population is the teammate's snapshots) through
`runs.train`, stopped by SIGTERM after its first iteration and resumed bit-identically (slow:
compiling the lockstep update takes about 40 s of CPU; both tests share one compile)."""

from __future__ import annotations

import json
import math
import os
import signal
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hand_losses import LinearNet, hand_trajectory
from safetensors.numpy import load_file
from tiny_tasks import TRUNC_TASK

from aht_bench import runs
from aht_bench.algorithms import paired, rotate
from aht_bench.policies import load_population
from aht_bench.training import PPOConfig
from aht_bench.training.ppo import ppo_loss
from aht_bench.training.streams import loss_streams

pytestmark = pytest.mark.usefixtures("tiny_tasks")


def _trajectory(rewards, time):
    return hand_trajectory(rewards, time, num_heads=2, num_learners=2)


# gamma = 0: A_t = r_t - V_old(s_t) = r_t, and the value target is r_t too. Steps 3 and 4 of
# their episodes: a `t + 1` weighting (which PAIRED must not have) would show.
PPO = PPOConfig(gamma=0.0, gae_lambda=0.0, normalize_advantages=False, ent_coef=0.1, vf_coef=0.5)
SP = _trajectory([1.0, 2.0], [3, 4])
XP = _trajectory([3.0, 1.0], [3, 4])
PARAMS = {"s": jnp.float32(0.0), "v": jnp.float32(1.0)}


def _config(**kw):
    fields: dict[str, Any] = dict(
        task_id=TRUNC_TASK,
        total_timesteps=2 * 3 * (2 * 8 * 6),  # 2 iterations x 3 updates x (SP + XP)
        iterations=2,
        num_envs=8,
        rollout_length=6,
        teammate_ppo=PPOConfig(num_epochs=2, num_minibatches=2),
        ego_ppo=PPOConfig(num_epochs=2, num_minibatches=2),
        teammate_hidden=(8,),
        best_response_hidden=(8,),
        ego_hidden=8,
    )
    return paired.PairedConfig(**(fields | kw))


def test_teammate_loss_is_per_trajectory_regret_by_hand():
    config = _config()
    streams = loss_streams(paired.teammate_loss_terms(config), {"sp": (SP, 0), "xp": (XP, 0)}, PPO)
    loss, metrics = ppo_loss(PARAMS, LinearNet(), streams, PPO, recurrent=False)
    # L_SP = -mean(A_SP) = -(1 + 2) / 2 = -1.5 (maximise the return with the BR)
    # L_XP = +mean(A_XP) = (3 + 1) / 2 = 2.0   (minimise the return with the ego)
    policy_loss = -1.5 + 2.0
    # values: head 0 (sigma^{-i,BR}) on SP: (1 + 4) / 2 = 2.5; head 1 (sigma^{-i,ego}) on XP:
    # (9 + 1) / 2 = 5; entropy once over the 4 transitions of the uniform policy: -log 3
    expected = policy_loss + 0.1 * -math.log(3.0) + 0.5 * (2.5 + 5.0)
    np.testing.assert_allclose(float(metrics["policy_loss"]), policy_loss, rtol=1e-6)
    np.testing.assert_allclose(float(metrics["value_loss"]), 7.5, rtol=1e-6)
    np.testing.assert_allclose(float(metrics["entropy"]), math.log(3.0), rtol=1e-6)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-6)
    sp, xp = streams
    assert [float(s.sign) for s in streams] == [1.0, -1.0]
    assert (
        [int(s.value_head) for s in streams] == [rotate.config.BR_HEAD, rotate.EGO_HEAD] == [0, 1]
    )
    np.testing.assert_array_equal(np.asarray(sp.weights), 1.0)  # no t + 1 weights
    np.testing.assert_array_equal(np.asarray(xp.weights), 1.0)
    # the same as ROTATE's per-trajectory regret without its competence term (lambda = 0)
    traj = rotate.RotateConfig(
        task_id=TRUNC_TASK,
        iterations=1,
        teammate_timesteps=2 * 8 * 6,
        ego_timesteps=8 * 6,
        num_envs=8,
        rollout_length=6,
        teammate_ppo=PPOConfig(num_minibatches=2),
        ego_ppo=PPOConfig(num_minibatches=2),
        variant="per_trajectory",
    )
    assert paired.teammate_loss_terms(config) == rotate.teammate_loss_terms(traj)


def test_best_response_and_ego_train_by_plain_ppo_by_hand():
    config = _config()
    for terms, data in (
        (paired.config.best_response_loss_terms(config), {"sp": (SP, 1)}),
        (paired.config.ego_loss_terms(config), {"xp": (XP, 1)}),
    ):
        (stream,) = loss_streams(terms, data, PPO)
        assert (float(stream.sign), int(stream.value_head)) == (1.0, 0)
        loss, metrics = ppo_loss(PARAMS, LinearNet(), (stream,), PPO, recurrent=False)
        rewards = np.asarray(data[terms[0].data][0].learners[1].rewards)[:, 0]
        # L = -mean(A) + 0.1 * (-log 3) + 0.5 * mean((0 - r)^2)
        expected = -rewards.mean() - 0.1 * math.log(3.0) + 0.5 * (rewards**2).mean()
        np.testing.assert_allclose(float(metrics["policy_loss"]), -rewards.mean(), rtol=1e-6)
        np.testing.assert_allclose(float(loss), expected, rtol=1e-6)


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"iterations": 0}, "iterations"),
        ({"total_timesteps": 100}, "total_timesteps"),
        ({"num_envs": 0}, "num_envs"),
        ({"rollout_length": 0}, "rollout_length"),
        ({"ego_seat": 2}, "ego_seat"),
        ({"ego_hidden": 0}, "ego_hidden"),
        ({"teammate_hidden": ()}, "teammate_hidden"),
        ({"shaped_reward_coef": -1.0}, "shaped_reward_coef"),
        ({"ego_ppo": PPOConfig(num_minibatches=3)}, "ego_ppo.num_minibatches"),
        ({"teammate_ppo": PPOConfig(num_minibatches=5)}, "teammate_ppo.num_minibatches"),
        ({"task_id": "lbff"}, "task_id"),
    ],
)
def test_config_refuses_with_the_field_name(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        _config(**kw)


def test_budget_counts_both_rollouts():
    config = _config()
    assert config.batch_size == 2 * 8 * 6
    assert (config.updates_per_iteration, config.num_updates) == (3, 6)
    assert config.env_steps_per_iteration == 3 * 96
    assert hash(config) == hash(_config())  # a static jit argument


# Table paired_hyperparams, typed from the paper: task -> (timesteps, lr, minibatches, ent,
# clip); every task: 3 seeds, 10 checkpoints, 16 envs, 15 epochs, no annealing.
TABLE = {
    "lbf": (3.6e8, 1e-4, 4, 0.03, 0.2),
    "cramped_room": (2.4e8, 5e-4, 8, 0.005, 0.05),
    "asymm_advantages": (2.4e8, 1e-5, 8, 0.05, 0.1),
    "counter_circuit": (4.4e8, 5e-5, 8, 0.01, 0.05),
    "coord_ring": (4.4e8, 1e-4, 8, 0.005, 0.05),
    "forced_coord": (4.4e8, 5e-5, 8, 0.1, 0.3),
}


def test_paper_presets_follow_the_table():
    assert len(paired.PRESETS["paper"]) == len(paired.presets.PAPER_TASKS) and len(TABLE) == 6
    for task, (steps, lr, minibatches, ent, clip) in TABLE.items():
        config = paired.preset("paper", task)
        assert (config.total_timesteps, config.iterations, config.num_envs) == (steps, 10, 16)
        for ppo in (config.teammate_ppo, config.ego_ppo):
            assert (ppo.learning_rate, ppo.num_minibatches, ppo.ent_coef, ppo.clip_eps) == (
                lr,
                minibatches,
                ent,
                clip,
            )
            assert (ppo.num_epochs, ppo.anneal_lr) == (15, False)
        assert config.rollout_length == (128 if task == "lbf" else 400)
        # whole updates only: at most one update's steps per iteration left out
        spent = config.iterations * config.env_steps_per_iteration
        assert 0 <= steps - spent < config.iterations * config.batch_size
    assert paired.preset("paper", "lbf").env_steps_per_iteration * 10 == 359_997_440
    for name, table in paired.PRESETS.items():
        assert set(table) == set(paired.presets.PAPER_TASKS), name
        for task_id in table:
            assert paired.preset(name, task_id).task_id == task_id
    with pytest.raises(KeyError, match="Did you mean 'quick'"):
        paired.preset("quik", "lbf")
    assert "paired" in runs.ALGORITHMS


def test_networks():
    nets = paired.networks(_config())
    assert nets.teammate.num_value_heads == 2  # a critic per partner type (BR, ego)
    assert nets.best_response.num_value_heads == 1
    assert type(nets.ego).__name__ == "RecurrentEgo"


# ------------------------------------------------------------------------------ a tiny run

SEEDS = 2


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(jax.device_get(tree))]


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(_leaves(a), _leaves(b), strict=True))


@pytest.fixture(scope="module")
def tiny_config():
    return _config()


@pytest.mark.slow
def test_lockstep_iterations_and_teammate_snapshots(tiny_config):
    config = tiny_config
    start = paired.init_seeds(jax.random.PRNGKey(0), config, num_seeds=SEEDS)
    first, m1 = paired.iterate(start, config)
    second, m2 = paired.iterate(first, config)
    # every iteration moves all three learners (trained jointly, not in phases)
    for a, b in ((start, first), (first, second)):
        for role in ("teammate", "best_response", "ego"):
            assert not _same(getattr(a, role).params, getattr(b, role).params), role
    # the population is the teammate as it was after each iteration; no more is kept
    assert _same(jax.tree.map(lambda x: x[:, 0], second.buffer), first.teammate.params)
    assert _same(jax.tree.map(lambda x: x[:, 1], second.buffer), second.teammate.params)
    pop = paired.population(second, config, seed=1)
    assert pop.size == 2 and pop.policy == paired.networks(config).teammate
    for m, done in ((m1, 1), (m2, 2)):
        np.testing.assert_array_equal(m["iteration"], [done] * SEEDS)
        np.testing.assert_array_equal(m["env_steps"], [done * 288] * SEEDS)
        for k in ("sp_return", "xp_return", "ego_return"):
            # 3 steps of payoffs in [0, 2]
            assert np.all((m[k] >= 0.0) & (m[k] <= 6.0)), (k, m[k])
        np.testing.assert_allclose(m["regret"], m["sp_return"] - m["xp_return"], rtol=1e-6)
        np.testing.assert_array_equal(m["ego_return"], m["xp_return"])
        for k in ("teammate_loss", "best_response_loss", "ego_loss"):
            assert m[k].shape == (SEEDS,) and np.all(np.isfinite(m[k])), k
    with pytest.raises(ValueError, match="iterations"):
        paired.iterate(second, config)


def _spec():
    return runs.RunSpec("paired", TRUNC_TASK, "quick", num_seeds=SEEDS, seed=3)


def _stop_after_first_iteration(message: str) -> None:
    # the run loop logs "first call ..." right after iteration 1: a SIGTERM then stops the
    # run at that iteration's boundary, as a user's would
    if message.startswith("first call"):
        os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.slow
def test_a_run_stopped_after_an_iteration_resumes_bit_identically(
    tiny_config, tmp_path, monkeypatch
):
    monkeypatch.setitem(paired.PRESETS["quick"], TRUNC_TASK, tiny_config)
    algo = runs.get("paired")
    reference = runs.train(algo, _spec(), tmp_path / "reference", progress=False, log=print)
    assert reference.updates == 2 and reference.env_steps == 576
    out = tmp_path / "stopped"
    with pytest.raises(runs.TrainingInterrupted) as stopped:
        runs.train(algo, _spec(), out, progress=False, log=_stop_after_first_iteration)
    assert stopped.value.update == 1
    assert json.loads((out / "checkpoints" / "latest.json").read_text())["iteration"] == 1
    assert not (out / "policies" / "final").exists()
    resumed = runs.train(algo, _spec(), out, resume=True, progress=False, log=print)
    assert resumed.updates == 2

    a, b = (runs.RunDir(p) for p in (tmp_path / "reference", out))
    latest_a, latest_b = a.latest_checkpoint(), b.latest_checkpoint()
    assert latest_a is not None and latest_b is not None
    state_a, state_b = load_file(latest_a), load_file(latest_b)
    assert state_a.keys() == state_b.keys()
    for k in state_a:
        np.testing.assert_array_equal(state_a[k], state_b[k], err_msg=k)
    strip = lambda r: {k: v for k, v in r.items() if k != "time_s"}  # noqa: E731
    rows_a, rows_b = runs.read_metrics(a.metrics), runs.read_metrics(b.metrics)
    assert [r["iteration"] for r in rows_b] == [1, 2]
    assert [strip(r) for r in rows_a] == [strip(r) for r in rows_b]
    assert {"sp_return", "xp_return", "regret", "ego_return"} <= set(rows_a[0])
    names = sorted(p.name for p in (a.root / "policies" / "final").glob("*.safetensors"))
    assert names == [
        f"seed{s}-{k}.safetensors" for s in range(SEEDS) for k in ("ego", "population")
    ]
    for name in names:
        assert (a.root / "policies/final" / name).read_bytes() == (
            b.root / "policies/final" / name
        ).read_bytes(), name
    assert load_population(a.root / "policies/final/seed0-population.safetensors").size == 2
    assert (a.root / "curve.png").stat().st_size > 0
