"""BRDiv: the loss terms (weights 1 + 2w / w, signs, value heads) by hand and as streams on
hand-built pair data, with the loss worked by hand; config validation; the paper preset against
Table brdiv_hyperparams; and one tiny run on a 3x3 identity coordination game through
`runs.train`, stopped by SIGINT after iterations 1, 2 and 3 and resumed, which must end
bit-identical to the uninterrupted run and must have learnt a cross-play matrix with a high
diagonal and a low off-diagonal (the point of BRDiv). The tiny run is slow."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file
from tiny_tasks import COORD_TASK

from aht_bench import runs
from aht_bench.algorithms import brdiv
from aht_bench.envs import registry
from aht_bench.envs.matrix import RepeatedMatrixGame
from aht_bench.policies import MLPActorCritic, load_population
from aht_bench.training import LearnerData, PPOConfig, Trajectory, presets
from aht_bench.training.config import EgoConfig
from aht_bench.training.ppo import ppo_loss

pytestmark = pytest.mark.usefixtures("tiny_tasks")

IDENTITY_TASK = "test-brdiv-identity3-v1"


@pytest.fixture(scope="module", autouse=True)
def identity_game():
    """Registers the 3x3 identity game (`_make_identity`) for this module."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(registry._REGISTRY, IDENTITY_TASK, _make_identity)
        yield


def _config(**kw) -> brdiv.BRDivConfig:
    task = kw.pop("task_id", COORD_TASK)
    fields: dict[str, Any] = dict(
        task_id=task,
        population_size=2,
        xp_coef=0.5,
        generation_timesteps=4 * 8 * 4 * 6,
        num_envs=8,
        rollout_length=4,
        generation_ppo=PPOConfig(num_epochs=2, num_minibatches=2),
        ego_timesteps=8 * 4 * 2,
        ego_num_envs=8,
        ego_rollout_length=4,
        ego_ppo=PPOConfig(num_epochs=2, num_minibatches=2),
        ego_hidden=8,
        generation_iterations=2,
        ego_iterations=2,
        confederate_hidden=(8,),
        best_response_hidden=(8,),
    )
    return brdiv.BRDivConfig(**(fields | kw))


# ------------------------------------------------------------------------------- loss terms


def test_loss_terms_by_hand():
    config = _config(population_size=3, xp_coef=0.25, generation_timesteps=9 * 8 * 4 * 2)
    assert config.sp_coef == 1.5  # 1 + 2 * 0.25
    # confederate 1: one stream per BR j, its value head j; SP (j = 1) maximised, XP minimised
    assert [tuple(t) for t in brdiv.confederate_loss_terms(config, 1)] == [
        ("c1-br0", 0.25, False, -1.0, 0, False),
        ("c1-br1", 1.5, False, 1.0, 1, False),
        ("c1-br2", 0.25, False, -1.0, 2, False),
    ]
    # BR 2: one stream per confederate i, its value head i
    assert [tuple(t) for t in brdiv.best_response_loss_terms(config, 2)] == [
        ("c0-br2", 0.25, False, -1.0, 0, False),
        ("c1-br2", 0.25, False, -1.0, 1, False),
        ("c2-br2", 1.5, False, 1.0, 2, False),
    ]
    table = brdiv.core.term_table(config, brdiv.config.BEST_RESPONSE)
    np.testing.assert_array_equal(
        table.coef, [[1.5, 0.25, 0.25], [0.25, 1.5, 0.25]] + [[0.25] * 2 + [1.5]]
    )
    np.testing.assert_array_equal(table.sign, 2 * np.eye(3) - 1)
    np.testing.assert_array_equal(table.value_head, [[0, 1, 2]] * 3)
    # xp_coef = 0: plain self-play of each pair
    plain = brdiv.confederate_loss_terms(_config(xp_coef=0.0), 0)
    assert [(t.coef, t.sign) for t in plain] == [(1.0, 1.0), (0.0, -1.0)]


A, K = 3, 2  # actions of LinearNet, value heads (= population size 2)


@dataclasses.dataclass(frozen=True)
class LinearNet:
    """logits = s * obs[:A], values = v * obs[A:A + K] (scalar params s, v)."""

    def init_carry(self, batch_shape):
        return ()

    def evaluate(self, params, carry, obs):
        return params["s"] * obs[:A], params["v"] * obs[A : A + K], carry


def _data(rewards):
    """Two steps of one env, zero observations (s = 0: the uniform policy, new values 0), old
    log-probs log(1/3) (ratio 1), old values 0 on head 0 and 1 on head 1."""
    shape = (2, 1)
    return LearnerData(
        obs=jnp.zeros(shape + (A + K,), jnp.float32),
        actions=jnp.zeros(shape, jnp.int32),
        log_probs=jnp.full(shape, -math.log(A), jnp.float32),
        values=jnp.broadcast_to(jnp.arange(K, dtype=jnp.float32), shape + (K,)),
        final_values=jnp.zeros(shape + (K,), jnp.float32),
        last_values=jnp.zeros((1, K), jnp.float32),
        rewards=jnp.asarray(rewards, jnp.float32).reshape(shape),
        initial_carry=(),
    )


def _pair(rewards):
    """A pair rollout; the BR's rewards are 10x the confederate's (to tell who is read)."""
    flags = jnp.zeros((2, 1), bool)
    return Trajectory(
        learners=(_data(rewards), _data([10 * r for r in rewards])),
        starts=flags,
        terminated=flags,
        truncated=flags,
        episode_return=jnp.zeros((2, 1, 2), jnp.float32),
        time=jnp.ones((2, 1), jnp.int32),
        states=None,
    )


# pair (confederate i, BR j) -> confederate's rewards
REWARDS = {(0, 0): [1.0, 2.0], (0, 1): [3.0, 1.0], (1, 0): [0.0, 4.0], (1, 1): [2.0, 2.0]}
# gamma = 0: A_t = r_t - V_old(head), the value target is r_t.
PPO = PPOConfig(gamma=0.0, gae_lambda=0.0, normalize_advantages=False, ent_coef=0.1, vf_coef=0.5)


def _learner(streams, a):
    return tuple(jax.tree.map(lambda x: x[a], s) for s in streams)


def test_streams_and_loss_by_hand():
    config = _config(xp_coef=0.5, generation_ppo=PPO)  # SP weight 2, XP weight 0.5
    pairs = [[_pair(REWARDS[i, j]) for j in range(2)] for i in range(2)]
    trajectories = jax.tree.map(
        lambda *xs: jnp.stack(xs), *[jax.tree.map(lambda *y: jnp.stack(y), *row) for row in pairs]
    )
    confederates = brdiv.core._side_streams(trajectories, brdiv.config.CONFEDERATE, config)
    best_responses = brdiv.core._side_streams(trajectories, brdiv.config.BEST_RESPONSE, config)
    sp, xp = _learner(confederates, 0)  # confederate 0: pairs (0, 0), (0, 1)
    np.testing.assert_array_equal(np.asarray(sp.weights)[:, 0], [2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(xp.weights)[:, 0], [0.5, 0.5])
    assert (float(sp.sign), int(sp.value_head), float(xp.sign), int(xp.value_head)) == (1, 0, -1, 1)
    # advantages r - V_old of the stream's head: SP head 0 (V = 0), XP head 1 (V = 1)
    np.testing.assert_array_equal(np.asarray(sp.advantages)[:, 0], [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(xp.advantages)[:, 0], [2.0, 0.0])
    params = {"s": jnp.float32(0.0), "v": jnp.float32(1.0)}
    loss, metrics = ppo_loss(params, LinearNet(), (sp, xp), PPO, recurrent=False)
    # L_CLIP at ratio 1 = -sign * w * mean(A): SP -2 * 1.5 = -3, XP +0.5 * 1 = 0.5
    # value loss, new values 0, targets r: head 0 on SP (1 + 4) / 2, head 1 on XP (9 + 1) / 2
    # entropy once over the 4 transitions of the uniform policy: L_ENT = -log 3
    np.testing.assert_allclose(float(metrics["policy_loss"]), -2.5, rtol=1e-6)
    np.testing.assert_allclose(float(metrics["value_loss"]), 7.5, rtol=1e-6)
    np.testing.assert_allclose(float(loss), -2.5 + 0.1 * -math.log(3) + 0.5 * 7.5, rtol=1e-6)

    # BR 1: pairs (0, 1) (XP, its head 0 = confederate 0) and (1, 1) (SP, head 1), BR rewards
    xp, sp = _learner(best_responses, 1)
    assert (float(xp.sign), int(xp.value_head), float(sp.sign), int(sp.value_head)) == (-1, 0, 1, 1)
    np.testing.assert_array_equal(np.asarray(xp.advantages)[:, 0], [30.0, 10.0])  # V_old 0
    np.testing.assert_array_equal(np.asarray(sp.advantages)[:, 0], [19.0, 19.0])  # V_old 1
    _, metrics = ppo_loss(params, LinearNet(), (xp, sp), PPO, recurrent=False)
    # +0.5 * 20 - 2 * 19 = -28
    np.testing.assert_allclose(float(metrics["policy_loss"]), -28.0, rtol=1e-6)


# ------------------------------------------------------------------------------------ config


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"population_size": 1}, "population_size"),
        ({"xp_coef": -0.1}, "xp_coef"),
        ({"num_envs": 0}, "num_envs"),
        ({"generation_timesteps": 10}, "generation_timesteps"),
        ({"generation_ppo": PPOConfig(num_minibatches=3)}, "generation_ppo.num_minibatches"),
        ({"generation_iterations": 0}, "generation_iterations"),
        ({"generation_iterations": 7}, "generation_iterations"),  # 6 updates
        ({"ego_iterations": 3}, "ego_iterations"),  # 2 updates
        ({"ego_num_envs": 0}, "ego_num_envs"),
        ({"ego_timesteps": 16}, "ego_timesteps"),  # one ego update takes 32
        ({"ego_ppo": PPOConfig(num_minibatches=3)}, "ego_ppo.num_minibatches"),
        ({"ego_seat": 2}, "ego_seat"),
        ({"confederate_hidden": (0,)}, "confederate_hidden"),
        ({"task_id": "lbff"}, "task_id"),
    ],
)
def test_config_refuses_with_the_field_name(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        _config(**kw)


def test_the_ego_stage_is_the_flat_ego_fields():
    config = _config()
    ego = config.ego_config
    assert isinstance(ego, EgoConfig)
    assert (ego.total_timesteps, ego.num_envs, ego.rollout_length, ego.hidden) == (64, 8, 4, 8)
    assert ego.ppo == config.ego_ppo and ego.learner_seat == config.ego_seat == 0
    assert (ego.task_id, ego.shaping) == (config.task_id, config.shaping)


def test_the_nested_ego_stage_of_older_versions_is_read_as_the_flat_fields():
    """Older aht-bench held BRDiv's ego stage as a nested `ego: EgoConfig` (cards and run
    folders recorded `"ego": {...}`, overrides were `ego.num_envs=8`): both read as today's."""
    config = _config()
    old = {k: v for k, v in dataclasses.asdict(config).items() if not k.startswith("ego_")}
    ego = dataclasses.asdict(config.ego_config)
    old["ego"] = ego | {"checkpoint_updates": [], "shaping": list(ego["shaping"])}
    old["ego_iterations"] = config.ego_iterations  # a field then as now
    assert brdiv.BRDivConfig.upgrade_legacy(old) == dataclasses.asdict(config)
    # a value of the old stage with no flat field is kept under its old name, not dropped
    other = old | {"ego": old["ego"] | {"task_id": IDENTITY_TASK, "updates_per_call": 2}}
    kept = brdiv.BRDivConfig.upgrade_legacy(other)
    assert (kept["ego.task_id"], kept["ego.updates_per_call"]) == (IDENTITY_TASK, 2)
    # old override names resume; a field of the old stage with no flat home is refused, named
    spec = runs.RunSpec("brdiv", "lbf", "quick", overrides=(("ego.num_envs", "32"),))
    assert spec.config().ego_num_envs == 32
    with pytest.raises(ValueError, match="unknown override 'ego.updates_per_call'"):
        runs.RunSpec("brdiv", "lbf", "quick", overrides=(("ego.updates_per_call", "2"),)).config()


def test_budgets_count_every_pair():
    config = _config()
    assert config.generation_batch_size == 2 * 2 * 8 * 4
    assert config.generation_updates == 6 and config.generation_chunks == (3, 3)
    assert config.ego_chunks == (1, 1) and config.iterations == 4
    steps = [config.env_steps_after(d) for d in range(5)]
    assert steps == [0, 384, 768, 800, 832]  # 3 x 128, then 1 ego update of 32
    assert hash(config) == hash(_config())  # a static jit argument


def test_paper_presets_follow_the_table():
    # Table brdiv_hyperparams: timesteps, XP coefficient, population size, envs, LR, ent, clip
    table = {
        "lbf": (3.3e8, 0.1, 3, 64, 5e-5, 0.005, 0.2),
        "cramped_room": (2.1e8, 0.5, 4, 64, 1e-5, 0.05, 0.3),
        "asymm_advantages": (2.1e8, 0.5, 3, 64, 1e-3, 0.05, 0.05),
        "counter_circuit": (3.8e8, 0.01, 3, 128, 1e-5, 0.01, 0.01),
        "coord_ring": (3.8e8, 0.005, 3, 128, 1e-5, 0.05, 0.1),
        "forced_coord": (3.8e8, 0.01, 3, 128, 5e-4, 0.01, 0.05),
    }
    assert {registry.resolve(t) for t in table} <= set(brdiv.presets.PAPER_TASKS)
    assert set(brdiv.presets.PAPER_TASKS) == set(brdiv.PRESETS["paper"])
    for task, (steps, xp, size, envs, lr, ent, clip) in table.items():
        c = brdiv.preset("paper", task)
        ppo = c.generation_ppo
        got = (c.generation_timesteps, c.xp_coef, c.population_size, c.num_envs)
        assert got == (int(steps), xp, size, envs), task
        assert (ppo.learning_rate, ppo.ent_coef, ppo.clip_eps) == (lr, ent, clip), task
        assert c.sp_coef == 1 + 2 * xp
        # not in the table: the IPPO table's epochs, minibatches, annealing
        assert (ppo.num_epochs, ppo.anneal_lr) == (15, True)
        assert ppo.num_minibatches == (4 if task == "lbf" else 16)
        # the ego stage is Table ppo_ego_tm_hyperparams (the `ego` paper preset)
        assert c.ego_config == presets.get("ego", "paper", task)
    lbf = brdiv.preset("paper", "lbf")
    assert lbf.ego_timesteps == 60_000_000 and lbf.ego_ppo.learning_rate == 5e-5
    for name, table_of in brdiv.PRESETS.items():
        for task_id in table_of:
            assert brdiv.preset(name, task_id).task_id == task_id
    with pytest.raises(KeyError, match="Did you mean 'quick'"):
        brdiv.preset("quik", "lbf")
    assert brdiv.preset("quick", "lbf", population_size=2).population_size == 2
    # what `aht-bench train brdiv --set ...` reaches: top-level fields and one level down
    overrides = (
        ("ego_timesteps", "1e6"),
        ("generation_ppo.learning_rate", "5e-4"),
        ("ego_ppo.learning_rate", "2e-4"),
    )
    config = runs.RunSpec("brdiv", "lbf", "quick", overrides=overrides).config()
    got = (config.ego_timesteps, config.generation_ppo.learning_rate, config.ego_ppo.learning_rate)
    assert got == (1e6, 5e-4, 2e-4)


def test_networks_have_a_value_head_per_partner():
    config = _config(population_size=3, generation_timesteps=9 * 8 * 4 * 2)
    nets = brdiv.networks(config)
    assert nets.confederate.num_value_heads == nets.best_response.num_value_heads == 3
    assert nets.ego.hidden == 8


# ------------------------------------------------------------------------------ a tiny run
#
# Runs go through `runs.train` in subprocesses (`_main` below) with XLA's backend optimisation
# off and one persistent compile cache: that halves the compile of the two stages (62 s -> 31 s
# of CPU measured here, the same for every run, so they compare like for like), and the resumed
# runs load the compiled stages from the cache.


def _make_identity() -> RepeatedMatrixGame:
    """A one-step 3x3 coordination game: payoff 1 when both play the same action, else 0."""
    eye = tuple(tuple(1.0 if a == b else 0.0 for b in range(3)) for a in range(3))
    return RepeatedMatrixGame(IDENTITY_TASK, eye, ("A", "B", "C"), steps=1)


def _tiny_config() -> brdiv.BRDivConfig:
    """3 pairs on the identity game (built lazily: the task exists only inside this module)."""
    return brdiv.BRDivConfig(
        task_id=IDENTITY_TASK,
        population_size=3,
        xp_coef=0.5,
        generation_timesteps=9 * 16 * 4 * 40,  # 40 updates
        num_envs=16,
        rollout_length=4,
        generation_ppo=PPOConfig(
            learning_rate=3e-3, anneal_lr=False, num_epochs=4, num_minibatches=2, ent_coef=0.01
        ),
        ego_timesteps=16 * 4 * 4,
        ego_num_envs=16,
        ego_rollout_length=4,
        ego_ppo=PPOConfig(num_epochs=2, num_minibatches=2),
        ego_hidden=8,
        generation_iterations=2,
        ego_iterations=2,
        confederate_hidden=(16,),
        best_response_hidden=(16,),
    )


SEEDS = 2


def _tiny_algorithm(stop_after: set[int]) -> runs.Algorithm:
    """`brdiv` with a `tiny` preset on the identity game; SIGINT after the iterations in
    `stop_after` (what Ctrl-C does: the run stops after that iteration, with a checkpoint)."""
    module = types.ModuleType("brdiv_tiny")
    presets = {"tiny": {IDENTITY_TASK: _tiny_config()}}

    def step(state, setup, done):
        state, metrics = brdiv.METHOD.step(state, setup, done)
        if done + 1 in stop_after:
            os.kill(os.getpid(), signal.SIGINT)
        return state, metrics

    method = dataclasses.replace(brdiv.METHOD, presets=presets, step=step)
    vars(module).update(vars(brdiv))
    vars(module).update(METHOD=method, PRESETS=presets, preset=method.preset)
    return runs.Algorithm("brdiv", module, runs.MethodLoop(method))


def _main(out: str, resume: str, stops: str) -> None:
    """The subprocess: the tiny run in `out` (resumed if `resume == "1"`), stopped by SIGINT
    after the iterations in `stops` (comma separated); exits 130 when stopped."""
    registry._REGISTRY[IDENTITY_TASK] = _make_identity
    stop_after = {int(s) for s in stops.split(",") if s}
    spec = runs.RunSpec("brdiv", IDENTITY_TASK, "tiny", num_seeds=SEEDS, seed=3)
    try:
        runs.train(
            _tiny_algorithm(stop_after), spec, Path(out), resume=resume == "1", progress=False
        )
    except runs.TrainingInterrupted as e:
        print(e, file=sys.stderr)
        raise SystemExit(e.exit_code) from None


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    flags = os.environ.get("XLA_FLAGS", "")
    return os.environ | {
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path_factory.mktemp("jax-cache")),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        "XLA_FLAGS": f"{flags} --xla_backend_optimization_level=0".strip(),
    }


def _run(env: dict[str, str], out: Path, resume: bool = False, stops: tuple[int, ...] = ()):
    here = Path(__file__).parent
    code = (
        f"import sys; sys.path[:0] = [{str(here)!r}, {str(here.parent)!r}]; "
        "import test_brdiv; test_brdiv._main(*sys.argv[1:])"
    )
    args = [str(out), "1" if resume else "0", ",".join(map(str, stops))]
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory, env) -> Path:
    """One uninterrupted tiny run: 2 generation iterations of 20 updates, 2 ego iterations."""
    out = tmp_path_factory.mktemp("brdiv") / "reference"
    done = _run(env, out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_brdiv_is_registered():
    assert runs.get("brdiv").module is brdiv
    assert set(runs.get("brdiv").presets) == {"medium", "paper", "quick"}
    assert runs.get("brdiv").loop.report is brdiv.REPORT


@pytest.mark.slow  # the subprocess run compiles both stages (about 40 s on two CPU cores)
def test_tiny_run_learns_a_diverse_population(reference: Path):
    """After the generation stage (40 updates of the 9 pairs, seconds once compiled) the
    cross-play matrix has a high diagonal and a low off-diagonal: each confederate coordinates
    with its own BR and not with the others' (BRDiv's objective)."""
    rows = runs.read_metrics(reference / "metrics.jsonl")
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4]
    last = rows[1]  # the last generation iteration (its last quarter of updates)
    matrix = np.array([[last[f"pair_{i}_{j}_return"] for j in range(3)] for i in range(3)])
    matrix = matrix.transpose(2, 0, 1)  # (seeds, confederate, BR)
    diagonal = np.diagonal(matrix, axis1=1, axis2=2)
    off = matrix[:, ~np.eye(3, dtype=bool)]
    print(np.round(matrix, 2))
    assert np.all(diagonal >= 0.8), diagonal  # every confederate's SP return is high
    assert np.all(off.mean(axis=1) <= 0.2), off
    np.testing.assert_allclose(last["sp_return"], diagonal.mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(last["xp_return"], off.mean(axis=1), rtol=1e-5)
    # generation iterations report the matrix, ego iterations the ego's return
    assert "ego_return" not in rows[1] and "sp_return" not in rows[2]
    assert all(0.0 <= v <= 1.0 for r in rows[2:] for v in r["ego_return"])
    # 20 updates x 9 pairs x 16 envs x 4 steps, then 2 ego updates x 16 x 4
    assert [r["env_steps"] for r in rows] == [11520, 23040, 23168, 23296]
    stored = json.loads((reference / "run.json").read_text())
    assert stored["num_iterations"] == 4 and stored["config"]["population_size"] == 3
    # the final files: per seed the ego and the confederates
    final = reference / "policies" / "final"
    assert sorted(p.name for p in final.glob("*.safetensors")) == [
        f"seed{s}-{k}.safetensors" for s in range(SEEDS) for k in ("ego", "population")
    ]
    confederates = load_population(final / "seed1-population.safetensors")
    net = confederates.policy
    assert isinstance(net, MLPActorCritic) and confederates.size == net.num_value_heads == 3
    # the trained confederates play three different conventions
    obs = jnp.zeros((net.obs_dim,))
    logits = [net.evaluate(confederates.get(i), (), obs)[0] for i in range(3)]
    assert sorted(np.argmax(np.stack(logits), axis=1).tolist()) == [0, 1, 2]
    assert (reference / "curve.png").stat().st_size > 0


@pytest.mark.slow
def test_interrupted_and_resumed_run_is_bit_identical(reference: Path, env, tmp_path: Path):
    """Stopped by SIGINT after iterations 1 (mid-generation), 2 (the generation/ego boundary)
    and 3 (mid-ego), resumed each time: the same checkpoint, policy files and metrics."""
    out = tmp_path / "resumed"
    stops = (1, 2, 3)
    for k, stop in enumerate(stops):
        done = _run(env, out, resume=k > 0, stops=stops)
        assert done.returncode == 130, done.stderr[-3000:]
        assert f"stopped after iteration {stop}" in done.stderr
    done = _run(env, out, resume=True, stops=stops)
    assert done.returncode == 0, done.stderr[-3000:]
    run_a, run_b = runs.RunDir(reference), runs.RunDir(out)
    latest_a, latest_b = run_a.latest_checkpoint(), run_b.latest_checkpoint()
    assert latest_a is not None and latest_b is not None
    state_a, state_b = load_file(latest_a), load_file(latest_b)
    assert state_a.keys() == state_b.keys()
    for k in state_a:
        np.testing.assert_array_equal(state_a[k], state_b[k], err_msg=k)
    for f in sorted((reference / "policies" / "final").glob("*.safetensors")):
        assert f.read_bytes() == (out / "policies" / "final" / f.name).read_bytes(), f.name
    strip = lambda r: {k: v for k, v in r.items() if k != "time_s"}  # noqa: E731
    rows_a, rows_b = (runs.read_metrics(r.metrics) for r in (run_a, run_b))
    assert [strip(r) for r in rows_a] == [strip(r) for r in rows_b]


def test_population_and_best_responses_of_a_state():
    config = _config(population_size=3, generation_timesteps=9 * 8 * 4 * 2)
    nets = brdiv.networks(config)
    shapes = jax.eval_shape(nets.confederate.init, jax.random.PRNGKey(0))
    tag = 10 * np.arange(2)[:, None] + np.arange(3)[None, :]  # seed s, member m: 10 s + m

    def stacked(offset):
        def leaf(x):
            values = (offset + tag).reshape((2, 3) + (1,) * len(x.shape))
            return np.broadcast_to(values, (2, 3) + tuple(x.shape)).astype(np.float32)

        return jax.tree.map(leaf, shapes)

    buffer = brdiv.core.PairPopulation(confederates=stacked(0), best_responses=stacked(100))
    state = brdiv.BRDivState(
        ego=cast(Any, None),
        buffer=buffer,
        generation=cast(Any, None),
        key=cast(Any, None),
        iteration=cast(Any, None),
    )
    pop, brs = brdiv.population(state, config, 1), brdiv.best_responses(state, config, 1)
    assert pop.policy == nets.confederate and brs.policy == nets.best_response
    assert pop.size == brs.size == 3
    for m in range(3):
        assert all(np.all(x == 10 + m) for x in jax.tree.leaves(pop.get(m)))
        assert all(np.all(x == 110 + m) for x in jax.tree.leaves(brs.get(m)))
