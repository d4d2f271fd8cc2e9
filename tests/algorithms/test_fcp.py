"""FCP: the pool is every snapshot of every IPPO run, bit-identical to what `ippo` itself trains
from the same seed key; the ego stage draws uniformly over the whole pool and trains; configs
and presets against the paper's table; a tiny run on disk stopped twice by SIGTERM and resumed
bit-identically (slow). Everything runs on one tiny matrix game with one seed, so the whole module
compiles FCP's three jitted pieces and IPPO's update once each."""

import dataclasses
import json
import os
import signal
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from safetensors.numpy import load_file
from tiny_tasks import TRUNC_TASK

from aht_bench import runs
from aht_bench.algorithms import fcp, ippo
from aht_bench.policies import MLPActorCritic, RecurrentEgo, load_policy, load_population
from aht_bench.training import PPOConfig, driver, presets

pytestmark = pytest.mark.usefixtures("tiny_tasks")

PPO = PPOConfig(num_epochs=2, num_minibatches=2)


def _config(**kw: Any) -> fcp.FCPConfig:
    # payoff [[2, 0], [0, 1]] repeated 3 steps; 2 IPPO runs of 5 updates of 8 x 6 steps, 3
    # snapshots each; the ego's 4 updates of 8 x 6 steps in 2 iterations
    fields: dict[str, Any] = dict(
        task_id=TRUNC_TASK,
        num_ippo_seeds=2,
        num_checkpoints=3,
        teammate_timesteps=8 * 6 * 5,
        teammate_num_envs=8,
        teammate_rollout_length=6,
        teammate_ppo=PPO,
        ego_timesteps=8 * 6 * 4,
        ego_num_envs=8,
        ego_rollout_length=6,
        ego_ppo=PPO,
        ego_iterations=2,
        teammate_hidden=(8,),
        ego_hidden=8,
    )
    return fcp.FCPConfig(**(fields | kw))


def _leaves_equal(a: Any, b: Any) -> bool:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    if len(leaves_a) != len(leaves_b):
        return False
    pairs = zip(leaves_a, leaves_b, strict=True)
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in pairs)


# ---------------------------------------------------------------------------- config, presets


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"task_id": "lbff"}, "task_id"),
        ({"num_ippo_seeds": 0}, "num_ippo_seeds"),
        ({"num_checkpoints": 0}, "num_checkpoints"),
        ({"num_checkpoints": 7}, "num_checkpoints"),  # 5 updates: at most 6 snapshots
        ({"teams_per_iteration": 3}, "teams_per_iteration"),  # must divide 2 runs
        ({"teammate_timesteps": 10}, "teammate_timesteps"),
        ({"teammate_hidden": (0,)}, "teammate_hidden"),
        ({"teammate_ppo": PPOConfig(num_minibatches=5)}, "teammate_ppo.num_minibatches"),
        ({"ego_timesteps": 10}, "ego_timesteps"),
        ({"ego_ppo": PPOConfig(num_minibatches=3)}, "ego_ppo.num_minibatches"),
        ({"ego_iterations": 5}, "ego_iterations"),  # 4 ego updates
        ({"ego_seat": 2}, "ego_seat"),
        ({"shaped_reward_coef": -1.0}, "shaped_reward_coef"),
    ],
)
def test_config_refuses_with_the_field_name(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        _config(**kw)


def test_snapshot_schedule_and_budget():
    config = _config()
    assert config.ippo_config.num_updates == 5
    # evenly spaced from the initial params (update 0) to the last update
    assert config.checkpoint_updates == (0, 2, 5)
    assert _config(num_checkpoints=6).checkpoint_updates == (0, 1, 2, 3, 4, 5)
    assert _config(num_checkpoints=1).checkpoint_updates == (5,)
    assert config.pool_size == 6
    assert (config.generation_iterations, config.iterations) == (2, 4)
    assert _config(teams_per_iteration=2).iterations == 3
    # each IPPO run 5 x 48 = 240 steps; then the ego's 2 chunks of 2 x 48 = 96
    assert [config.env_steps_after(i) for i in range(5)] == [0, 240, 480, 576, 672]
    assert config.env_steps_per_iteration == 672 // 4
    assert config.ego_config.learner_seat == 0 and config.ego_config.num_updates == 4
    assert hash(config) == hash(_config())  # a static jit argument


# Table fcp-tg-hyperparams, copied from the paper (columns LBF, CR, AA, CC, CoR, FC):
# timesteps per agent, num seeds, num checkpoints, num envs, LR, epochs, minibatches, ent-coef,
# eps-clip, anneal LR
PAPER_TABLE = {
    "lbf": (2e6, 23, 5, 8, 1e-5, 15, 4, 0.005, 0.5, True),
    "cramped_room": (2e6, 23, 5, 8, 1e-4, 15, 16, 0.01, 0.2, True),
    "asymm_advantages": (2e6, 23, 5, 8, 1e-5, 15, 16, 0.1, 0.2, True),
    "counter_circuit": (4e6, 22, 5, 8, 1e-3, 15, 16, 0.03, 0.05, True),
    "coord_ring": (4e6, 22, 5, 8, 1e-3, 15, 16, 0.01, 0.3, True),
    "forced_coord": (4e6, 22, 5, 8, 5e-4, 15, 16, 0.005, 0.2, True),
}


@pytest.mark.parametrize("task", list(PAPER_TABLE))
def test_paper_preset_follows_the_table(task):
    config = fcp.preset("paper", task)
    steps, seeds, checkpoints, envs, lr, epochs, minibatches, ent, clip, anneal = PAPER_TABLE[task]
    assert config.teammate_timesteps == steps and config.num_ippo_seeds == seeds
    assert config.num_checkpoints == checkpoints and config.teammate_num_envs == envs
    tm = config.teammate_ppo
    assert (tm.learning_rate, tm.num_epochs, tm.num_minibatches) == (lr, epochs, minibatches)
    assert (tm.ent_coef, tm.clip_eps, tm.anneal_lr) == (ent, clip, anneal)
    # "~110 agents per task" (App. Training Compute): 115 or 110 snapshots
    assert config.pool_size == seeds * 5 and config.pool_size in (110, 115)
    # what the table leaves open is IPPO's preset's (rollout length, gamma, network, ...)
    ippo_paper = presets.get("ippo", "paper", task)
    assert config.teammate_rollout_length == ippo_paper.rollout_length
    assert (tm.gamma, tm.gae_lambda, tm.vf_coef) == (0.99, 0.95, 0.5)
    assert config.teammate_hidden == (64, 64)
    # the ego stage is Table ppo_ego_tm_hyperparams exactly
    assert config.ego_config == presets.get("ego", "paper", task)
    assert config.env_steps_after(config.generation_iterations) == seeds * (
        config.ippo_config.num_updates * config.ippo_config.batch_size
    )


def test_paper_lbf_snapshots_and_preset_lookup():
    lbf = fcp.preset("paper", "lbf")
    # 2e6 // (8 envs x 128 steps) = 1953 updates, 5 snapshots
    assert lbf.checkpoint_updates == (0, 488, 976, 1464, 1953)
    assert lbf.ego_iterations == 30 and fcp.preset("paper", "forced_coord").ego_iterations == 60
    with pytest.raises(KeyError, match="Did you mean 'quick'"):
        fcp.preset("quik", "lbf")
    assert fcp.preset("quick", "lbf", num_ippo_seeds=2).num_ippo_seeds == 2
    for name, table in fcp.PRESETS.items():
        assert set(table) == set(presets.PAPER_TASKS), name
        for task_id in table:
            assert fcp.preset(name, task_id).task_id == task_id


# ----------------------------------------------------------------------- a tiny run, in memory


@pytest.fixture(scope="module")
def tiny_run():
    """The tiny config run iteration by iteration: (config, states after 0..4 iterations,
    metrics of iterations 1..4)."""
    config = _config()
    states = [fcp.init_seeds(jax.random.PRNGKey(3), config, num_seeds=1)]
    metrics = []
    for _ in range(config.iterations):
        state, m = fcp.iterate(states[-1], config)
        states.append(state)
        metrics.append(m)
    return config, states, metrics


def test_the_pool_is_every_snapshot_of_what_ippo_trains(tiny_run):
    config, states, metrics = tiny_run
    final = states[-1]
    pool = fcp.population(final, config, seed=0)
    assert pool.size == config.num_ippo_seeds * config.num_checkpoints == 6
    assert pool.policy == ippo.network(config.ippo_config) == fcp.networks(config).teammate
    assert [int(m["population_size"][0]) for m in metrics] == [3, 6, 6, 6]
    teammate_seat = 1 - config.ego_seat
    marks = config.checkpoint_updates
    for team in range(config.num_ippo_seeds):
        # IPPO itself, from the run's seed key for this team: `ippo.init`, then its Method's
        # run over `ippo.update` keeping the learners after the snapshot updates
        key = final.buffer.team_keys[0, team]
        ippo_config = dataclasses.replace(config.ippo_config, checkpoint_updates=marks[1:])
        start = driver.init_seeds(key[None], ippo.init, ippo_config)
        result = ippo.run(start, ippo_config)
        expected = [ippo.learner_params(start)] + [result.kept[u] for u in marks[1:]]
        for j, params in enumerate(expected):
            member = pool.get(team * config.num_checkpoints + j)
            ippo_agent = jax.tree.map(lambda x: x[0, teammate_seat], params)
            assert _leaves_equal(member, ippo_agent), (team, marks[j])
        # the first snapshot is untrained, the last is not
        first, last = pool.get(team * 3), pool.get(team * 3 + 2)
        assert not _leaves_equal(first, last)
    # different seeds, different teams
    assert not _leaves_equal(pool.get(0), pool.get(3))


def test_the_ego_draws_uniformly_from_the_whole_pool_and_trains(tiny_run):
    config, states, metrics = tiny_run
    ego_before = states[0].ego
    # while the pool is built, the ego's pool has zero weights and the ego is untouched
    np.testing.assert_array_equal(np.asarray(states[1].ego.teammates.weights), np.zeros((1, 6)))
    assert _leaves_equal(states[1].ego, ego_before)
    # the last generation iteration hands the whole pool over, every member with weight 1
    handed = states[2].ego
    np.testing.assert_array_equal(np.asarray(handed.teammates.weights), np.ones((1, 6)))
    assert _leaves_equal(handed.teammates.members.params, states[2].buffer.teammates)
    assert _leaves_equal(handed.learner, ego_before.learner)
    assert int(handed.update_step[0]) == 0
    # then the ego trains: 2 + 2 PPO updates, its params change, its return is reported
    assert int(states[4].ego.update_step[0]) == 4
    assert not _leaves_equal(states[4].ego.learner.params, ego_before.learner.params)
    for m in metrics[:2]:
        assert "ego_return" not in m and np.isfinite(m["sp_return"]).all()
        assert 0.0 <= float(m["sp_return"][0]) <= 6.0  # 3 steps of payoffs in [0, 2]
    for m in metrics[2:]:
        assert "sp_return" not in m and np.isfinite(m["ego_loss"]).all()
        assert 0.0 <= float(m["ego_return"][0]) <= 6.0
    assert [int(m["env_steps"][0]) for m in metrics] == [240, 480, 576, 672]
    assert [int(m["iteration"][0]) for m in metrics] == [1, 2, 3, 4]
    ego_params = fcp.ego_params(states[4], seed=0)
    assert _leaves_equal(ego_params, jax.tree.map(lambda x: x[0], states[4].ego.learner.params))
    assert isinstance(fcp.networks(config).ego, RecurrentEgo)
    with pytest.raises(ValueError, match="all 4 iterations"):
        fcp.iterate(states[4], config)
    with pytest.raises(ValueError, match="pool is empty"):
        fcp.population(states[0], config)


# ---------------------------------------------------------------------------- a run on disk


def _method(stop_at: int | None = None) -> Any:
    """`fcp.METHOD` with the tiny config as its only preset; sends itself SIGTERM during
    iteration `stop_at` (the run stops after it, with a checkpoint)."""

    def step(state, setup, done):
        state, metrics = fcp.METHOD.step(state, setup, done)
        if stop_at is not None and done + 1 == stop_at:
            os.kill(os.getpid(), signal.SIGTERM)
        return state, metrics

    return dataclasses.replace(fcp.METHOD, presets={"quick": {TRUNC_TASK: _config()}}, step=step)


def _train(out: Path, stop_at: int | None = None, resume: bool = False) -> runs.RunOutcome:
    algo = runs.Algorithm("fcp", fcp, runs.MethodLoop(_method(stop_at)))
    spec = runs.RunSpec("fcp", TRUNC_TASK, "quick", num_seeds=1, seed=3)
    return runs.train(algo, spec, out, resume=resume, progress=False, log=lambda m: None)


@pytest.mark.slow  # a second FCP run; the in-memory tiny run above is FCP's fast check
def test_a_run_on_disk_stopped_after_iterations_resumes_bit_identically(tmp_path):
    reference = tmp_path / "reference"
    outcome = _train(reference)
    assert (outcome.updates, outcome.env_steps, outcome.unit) == (4, 672, "iteration")
    stored = json.loads((reference / "run.json").read_text())
    assert stored["num_iterations"] == 4 and stored["config"]["num_checkpoints"] == 3
    rows = runs.read_metrics(reference / "metrics.jsonl")
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4]
    assert [r["env_steps"] for r in rows] == [240, 480, 576, 672]
    assert ["sp_return" in r for r in rows] == [True, True, False, False]
    assert ["ego_return" in r for r in rows] == [False, False, True, True]
    assert (reference / "curve.png").stat().st_size > 0
    final = reference / "policies" / "final"
    pool = load_population(final / "seed0-population.safetensors")
    assert pool.size == 6 and isinstance(pool.policy, MLPActorCritic)
    ego_policy, _ = load_policy(final / "seed0-ego.safetensors")
    assert isinstance(ego_policy, RecurrentEgo)

    # stopped after iteration 1 (mid pool) and after 3 (mid ego stage), resumed each time
    stopped = tmp_path / "stopped"
    for stop_at, resume in ((1, False), (3, True)):
        with pytest.raises(runs.TrainingInterrupted, match=f"after iteration {stop_at}"):
            _train(stopped, stop_at=stop_at, resume=resume)
    _train(stopped, resume=True)

    latest = [runs.RunDir(p).latest_checkpoint() for p in (reference, stopped)]
    assert latest[0] is not None and latest[1] is not None
    a, b = load_file(latest[0]), load_file(latest[1])
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    for name in ("seed0-ego.safetensors", "seed0-population.safetensors"):
        assert (final / name).read_bytes() == (stopped / "policies" / "final" / name).read_bytes()
    strip = lambda r: {k: v for k, v in r.items() if k != "time_s"}  # noqa: E731
    rows_b = runs.read_metrics(stopped / "metrics.jsonl")
    assert [strip(r) for r in rows] == [strip(r) for r in rows_b]
