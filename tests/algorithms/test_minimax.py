"""Minimax Return: the teammate's loss is minus the ego's return (XP only, its one value head),
checked on hand-built data with values worked by hand; it runs in ROTATE's loop with no SP and
no BR; config validation; the paper preset against Table minimax_hyperparams; a tiny teammate
phase on a 2x2 game lowers the fixed ego's XP return; a tiny run through `runs.train`, stopped
by SIGTERM after its first iteration and resumed bit-identically (slow)."""

from __future__ import annotations

import functools
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
from aht_bench.algorithms import minimax, rotate
from aht_bench.policies import MLPActorCritic, load_population
from aht_bench.training import PPOConfig
from aht_bench.training.ppo import ppo_loss
from aht_bench.training.rollout import init_params
from aht_bench.training.streams import loss_streams

pytestmark = pytest.mark.usefixtures("tiny_tasks")


def _trajectory(rewards, time):
    return hand_trajectory(rewards, time, num_heads=1, num_learners=1)


# gamma = 0: A_t = r_t - V_old(s_t) = r_t, and the value target is r_t too.
PPO = PPOConfig(gamma=0.0, gae_lambda=0.0, normalize_advantages=False, ent_coef=0.1, vf_coef=0.5)


def _config(**kw):
    fields: dict[str, Any] = dict(
        task_id=TRUNC_TASK,
        iterations=2,
        teammate_timesteps=8 * 6 * 3,
        ego_timesteps=8 * 6 * 2,
        num_envs=8,
        rollout_length=6,
        teammate_ppo=PPOConfig(num_epochs=2, num_minibatches=2),
        ego_ppo=PPOConfig(num_epochs=2, num_minibatches=2),
        teammate_hidden=(8,),
        ego_hidden=8,
    )
    return minimax.MinimaxConfig(**(fields | kw))


def test_teammate_loss_is_minus_the_ego_return_by_hand():
    config = _config().rotate_config
    # steps 3, 4 of their episodes: a `t + 1` weighting (which Minimax must not have) would show
    xp = _trajectory([3.0, 1.0], [3, 4])
    terms = rotate.teammate_loss_terms(config)
    (stream,) = loss_streams(terms, {"xp": (xp, 0)}, PPO)
    params = {"s": jnp.float32(0.0), "v": jnp.float32(1.0)}
    loss, metrics = ppo_loss(params, LinearNet(num_heads=1), (stream,), PPO, recurrent=False)
    # L_XP = +mean(A_XP) = (3 + 1) / 2 = 2 (minimising the ego's return: the sign is -1)
    # value loss on the only head: (9 + 1) / 2 = 5; entropy of the uniform policy: -log 3
    np.testing.assert_allclose(float(metrics["policy_loss"]), 2.0, rtol=1e-6)
    np.testing.assert_allclose(float(metrics["value_loss"]), 5.0, rtol=1e-6)
    np.testing.assert_allclose(float(loss), 2.0 - 0.1 * math.log(3.0) + 0.5 * 5.0, rtol=1e-6)
    assert (float(stream.sign), int(stream.value_head)) == (-1.0, 0)
    np.testing.assert_array_equal(np.asarray(stream.weights), 1.0)
    # no SP stream, no BR, one rollout per update
    assert [t.data for t in terms] == ["xp"]
    assert rotate.best_response_loss_terms(config) == ()
    assert config.rollouts_per_update == 1 and config.teammate_batch_size == 8 * 6


def test_runs_in_rotates_loop_with_a_one_headed_teammate_and_no_best_responses():
    config = _config()
    assert config.rotate_config.variant == "minimax"
    assert (config.teammate_updates, config.ego_updates) == (3, 2)
    assert config.env_steps_per_iteration == 3 * 48 + 2 * 48
    nets = minimax.networks(config)
    assert nets.teammate.num_value_heads == 1  # "a standard actor-critic architecture"
    assert type(nets.ego).__name__ == "RecurrentEgo"
    state = jax.eval_shape(lambda k: rotate.init(k, minimax.setup(config)), jax.random.PRNGKey(0))
    assert state.buffer.best_responses is None
    assert all(x.shape[0] == 2 for x in jax.tree.leaves(state.buffer.teammates))
    assert hash(config) == hash(_config())  # a static jit argument


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"iterations": 0}, "iterations"),
        ({"teammate_timesteps": 10}, "teammate_timesteps"),
        ({"ego_timesteps": 10}, "ego_timesteps"),
        ({"num_envs": 0}, "num_envs"),
        ({"ego_seat": 2}, "ego_seat"),
        ({"teammate_hidden": (0,)}, "teammate_hidden"),
        ({"shaped_reward_coef": -1.0}, "shaped_reward_coef"),
        ({"ego_ppo": PPOConfig(num_minibatches=3)}, "ego_ppo.num_minibatches"),
        ({"teammate_ppo": PPOConfig(num_minibatches=5)}, "teammate_ppo.num_minibatches"),
        ({"task_id": "lbff"}, "task_id"),
    ],
)
def test_config_refuses_with_the_field_name(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        _config(**kw)


# Table minimax_hyperparams, typed from the paper: task -> (OEL iterations, timesteps per iter
# (ego), timesteps per iter (T), lr, minibatches, ent, clip, anneal); every task: 16 envs,
# 15 epochs.
TABLE = {
    "lbf": (30, 2e6, 1e7, 1e-3, 4, 0.03, 0.03, False),
    "cramped_room": (30, 2e6, 6e6, 1e-4, 8, 0.1, 0.1, True),
    "asymm_advantages": (30, 2e6, 6e6, 1e-5, 8, 0.05, 0.2, False),
    "counter_circuit": (20, 6e6, 1.6e7, 1e-5, 8, 0.005, 0.05, False),
    "coord_ring": (20, 6e6, 1.6e7, 1e-4, 8, 0.005, 0.1, False),
    "forced_coord": (20, 6e6, 1.6e7, 5e-5, 8, 0.01, 0.05, False),
}
BUDGET = {"lbf": 360e6, "cramped_room": 240e6, "asymm_advantages": 240e6}  # "Training Compute"


def test_paper_presets_follow_the_table():
    assert len(minimax.PRESETS["paper"]) == len(minimax.PAPER_TASKS) and len(TABLE) == 6
    for task, (iterations, ego_steps, tm_steps, lr, mb, ent, clip, anneal) in TABLE.items():
        config = minimax.preset("paper", task)
        assert (config.iterations, config.num_envs) == (iterations, 16)
        assert (config.ego_timesteps, config.teammate_timesteps) == (ego_steps, tm_steps)
        # the unmarked rows serve both learners
        for ppo in (config.teammate_ppo, config.ego_ppo):
            assert (ppo.learning_rate, ppo.num_minibatches, ppo.ent_coef, ppo.clip_eps) == (
                lr,
                mb,
                ent,
                clip,
            )
            assert (ppo.num_epochs, ppo.anneal_lr) == (15, anneal)
        assert config.iterations * (ego_steps + tm_steps) == BUDGET.get(task, 440e6)
    for name, table in minimax.PRESETS.items():
        assert set(table) == set(minimax.PAPER_TASKS), name
        for task_id in table:
            assert minimax.preset(name, task_id).task_id == task_id
    with pytest.raises(KeyError, match="Did you mean 'paper'"):
        minimax.preset("papr", "lbf")
    assert "minimax" in runs.ALGORITHMS


def test_the_teammate_lowers_the_fixed_egos_return():
    """The 2x2 game [[2, 0], [0, 1]] repeated 3 steps, the ego a fixed random init (about
    half A, half B): a random teammate gets about 0.75 a step with it; one that plays B
    against it about 0.5, one that plays A about 1.0. Minimising, it must go down."""
    config = _config(
        num_envs=32,
        teammate_timesteps=32 * 6 * 40,
        ego_timesteps=32 * 6,
        teammate_ppo=PPOConfig(learning_rate=3e-3, num_epochs=4, num_minibatches=4),
    ).rotate_config
    nets = rotate.networks(config)
    ego = init_params(nets.ego, jax.random.PRNGKey(1))
    teammate = init_params(nets.teammate, jax.random.PRNGKey(2))
    phase = jax.jit(functools.partial(rotate.core.teammate_phase, setup=rotate.setup(config)))
    trained, best_response, metrics = phase(ego, teammate, None, jax.random.PRNGKey(3))
    assert best_response is None
    returns = np.asarray(metrics["xp_return"])  # (40,), one per update, 64 episodes each
    assert returns.shape == (40,) and np.all(np.asarray(metrics["xp_episodes"]) == 64)
    first, last = returns[:2].mean(), returns[-10:].mean()
    print(f"XP return: first updates {first:.3f}, last updates {last:.3f}")
    assert first - last > 0.4, (first, last)
    assert last < 1.75


# ------------------------------------------------------------------------------ a tiny run

SEEDS = 2


def _spec():
    return runs.RunSpec("minimax", TRUNC_TASK, "quick", num_seeds=SEEDS, seed=3)


def _stop_after_first_iteration(message: str) -> None:
    # the run loop logs "first call ..." right after iteration 1: a SIGTERM then stops the
    # run at that iteration's boundary, as a user's would
    if message.startswith("first call"):
        os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.slow
def test_a_run_stopped_after_an_iteration_resumes_bit_identically(tmp_path, monkeypatch):
    monkeypatch.setitem(minimax.PRESETS["quick"], TRUNC_TASK, _config())
    algo = runs.get("minimax")
    reference = runs.train(algo, _spec(), tmp_path / "reference", progress=False, log=print)
    assert reference.updates == 2 and reference.env_steps == 2 * (3 * 48 + 2 * 48)
    out = tmp_path / "stopped"
    with pytest.raises(runs.TrainingInterrupted) as stopped:
        runs.train(algo, _spec(), out, progress=False, log=_stop_after_first_iteration)
    assert stopped.value.update == 1
    assert json.loads((out / "checkpoints" / "latest.json").read_text())["iteration"] == 1
    resumed = runs.train(algo, _spec(), out, resume=True, progress=False, log=print)
    assert resumed.updates == 2

    a, b = (runs.RunDir(p) for p in (tmp_path / "reference", out))
    latest_a, latest_b = a.latest_checkpoint(), b.latest_checkpoint()
    assert latest_a is not None and latest_b is not None
    state_a, state_b = load_file(latest_a), load_file(latest_b)
    assert state_a.keys() == state_b.keys()
    assert not any("best_responses" in k for k in state_a)  # Minimax trains no BR
    for k in state_a:
        np.testing.assert_array_equal(state_a[k], state_b[k], err_msg=k)
    strip = lambda r: {k: v for k, v in r.items() if k != "time_s"}  # noqa: E731
    rows_a, rows_b = runs.read_metrics(a.metrics), runs.read_metrics(b.metrics)
    assert [r["iteration"] for r in rows_b] == [1, 2]
    assert [strip(r) for r in rows_a] == [strip(r) for r in rows_b]
    assert {"xp_return", "ego_return", "teammate_loss"} <= set(rows_a[0])
    assert not {"sp_return", "regret"} & set(rows_a[0])
    for row in rows_a:
        for k in ("xp_return", "ego_return"):
            assert all(0.0 <= v <= 6.0 for v in row[k]), (k, row[k])  # 3 steps in [0, 2]
    names = sorted(p.name for p in (a.root / "policies" / "final").glob("*.safetensors"))
    assert names == [
        f"seed{s}-{k}.safetensors" for s in range(SEEDS) for k in ("ego", "population")
    ]
    for name in names:
        assert (a.root / "policies/final" / name).read_bytes() == (
            b.root / "policies/final" / name
        ).read_bytes(), name
    population = load_population(a.root / "policies/final/seed0-population.safetensors")
    assert population.size == 2
    assert isinstance(population.policy, MLPActorCritic)
    assert population.policy.num_value_heads == 1
    assert (a.root / "curve.png").stat().st_size > 0
