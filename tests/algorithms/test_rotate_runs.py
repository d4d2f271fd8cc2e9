"""`aht-bench train rotate`: ROTATE's long runs on disk (`aht_bench.runs` with the
`ITERATIONS` loop): a checkpoint after every iteration and exact resume after SIGKILL, the
metrics lines, curves and final files, typed `--set` overrides and usage errors, divergence.

The CLI runs are subprocesses of one tiny config on the sabotage game that share JAX's
persistent compile cache: the first compiles ROTATE's two phases (about 40 s here), the others
load them. The divergence test drives the loop with a toy module (no compile).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import struct
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import load_file

from aht_bench import runs
from aht_bench.algorithms import rotate
from aht_bench.algorithms.api import Method, MethodSetup
from aht_bench.cli import main
from aht_bench.policies import RecurrentEgo, load_policy, load_population
from aht_bench.training import checkpoint

TASK = "sabotage-v1"
ITERATIONS = 5
SEEDS = 2
OVERRIDES = (
    ("iterations", str(ITERATIONS)),
    ("num_envs", "8"),
    ("teammate_timesteps", "512"),
    ("ego_timesteps", "128"),
    ("teammate_hidden", "16"),
    ("best_response_hidden", "16"),
    ("ego_hidden", "8"),
)
# One iteration (rollout_length 8 in the preset): 512 // (4 rollouts x 8 envs x 8 steps) = 2
# teammate updates of 256 joint steps, then 128 // (8 x 8) = 2 ego updates of 64.
STEPS_PER_ITERATION = 2 * 256 + 2 * 64
CLI = [sys.executable, "-m", "aht_bench.cli"]
COMMAND = CLI + ["train", "rotate", "--task", TASK, "--preset", "sabotage", "--seeds", str(SEEDS)]
COMMAND += ["--seed", "1", "--no-progress"]
COMMAND += [a for k, v in OVERRIDES for a in ("--set", f"{k}={v}")]
SPEC = runs.RunSpec("rotate", TASK, "sabotage", num_seeds=SEEDS, seed=1, overrides=OVERRIDES)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    """The environment of every CLI run here: one persistent compile cache."""
    flags = os.environ.get("XLA_FLAGS", "")
    return os.environ | {
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path_factory.mktemp("jax-cache")),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        # halves the compile of the two phases (88 s -> 38 s measured here, same numbers);
        # every run of this module uses the same flags, so they compare like for like
        "XLA_FLAGS": f"{flags} --xla_backend_optimization_level=0".strip(),
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory, env) -> Path:
    """One uninterrupted run."""
    out = tmp_path_factory.mktemp("rotate") / "reference"
    done = subprocess.run(COMMAND + ["--out", str(out)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    total = ITERATIONS * STEPS_PER_ITERATION
    assert f"done: {ITERATIONS} iterations, {total:,} env steps per seed" in done.stdout
    assert "mean ego return with the population over the last 10% of iterations" in done.stdout
    return out


def _latest(out: Path) -> Path:
    latest = runs.RunDir(out).latest_checkpoint()
    assert latest is not None, f"{out} has no checkpoint"
    return latest


def _assert_same_run(a: Path, b: Path) -> None:
    state_a, state_b = load_file(_latest(a)), load_file(_latest(b))
    assert state_a.keys() == state_b.keys()
    for k in state_a:
        np.testing.assert_array_equal(state_a[k], state_b[k], err_msg=f"leaf {k}")
    files_a = sorted(p.name for p in (a / "policies" / "final").glob("*.safetensors"))
    files_b = sorted(p.name for p in (b / "policies" / "final").glob("*.safetensors"))
    assert files_a == files_b and len(files_a) == 2 * SEEDS
    for name in files_a:
        assert (a / "policies" / "final" / name).read_bytes() == (
            b / "policies" / "final" / name
        ).read_bytes(), name
    rows_a = runs.read_metrics(a / "metrics.jsonl")
    rows_b = runs.read_metrics(b / "metrics.jsonl")
    assert [r["iteration"] for r in rows_b] == list(range(1, ITERATIONS + 1))
    strip = lambda r: {k: v for k, v in r.items() if k != "time_s"}  # noqa: E731
    assert [strip(r) for r in rows_a] == [strip(r) for r in rows_b]


def _png_size(path: Path) -> tuple[int, int]:
    blob = path.read_bytes()
    assert blob[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", blob[16:24])  # the IHDR chunk: width, height


def test_a_run_leaves_metrics_curves_checkpoints_and_policies(reference: Path):
    run = runs.RunDir(reference)
    stored = json.loads(run.spec.read_text())
    assert stored["spec"]["algorithm"] == "rotate" and stored["spec"]["preset"] == "sabotage"
    assert stored["num_iterations"] == ITERATIONS
    assert stored["env_steps_per_iteration"] == STEPS_PER_ITERATION
    assert stored["config"]["teammate_hidden"] == [16] and stored["config"]["ego_hidden"] == 8
    assert stored["config"]["competence_weight_xp"] == 3.0  # the preset's, not overridden

    # metrics.jsonl: one line per iteration, every metric a list over seeds
    rows = runs.read_metrics(run.metrics)
    assert [r["iteration"] for r in rows] == list(range(1, ITERATIONS + 1))
    assert [r["env_steps"] for r in rows] == [i * STEPS_PER_ITERATION for i in range(1, 6)]
    assert [r["population_size"] for r in rows] == [[float(i)] * SEEDS for i in range(1, 6)]
    times = [r["time_s"] for r in rows]
    assert times == sorted(times)
    for row in rows:
        for k in ("sp_return", "xp_return", "sxp_return", "xsp_return", "ego_return"):
            # sabotage-game episodes end within 5 steps: every 8-step rollout ends some;
            # an episode's return is in [-1, 5] (S ends it with -1; H,H or T,T pays 1 a step)
            assert len(row[k]) == SEEDS and all(-1.0 <= v <= 5.0 for v in row[k]), (k, row)
        sp, xp = np.float32(row["sp_return"]), np.float32(row["xp_return"])
        np.testing.assert_allclose(row["regret"], sp - xp, rtol=1e-6, atol=1e-6)
        assert len(row["teammate_loss"]) == len(row["ego_loss"]) == SEEDS

    # a checkpoint after every iteration, the last two kept
    kept = sorted(p.name for p in run.checkpoints.glob("*.safetensors"))
    assert kept == ["iteration-000004.safetensors", "iteration-000005.safetensors"]
    meta = checkpoint.read_meta(_latest(reference))
    assert meta["iteration"] == ITERATIONS
    assert meta["env_steps"] == ITERATIONS * STEPS_PER_ITERATION

    # curve.png: the two panels (regret curve, ego's learning curve) side by side
    assert _png_size(run.curve) == (1100, 400)

    # policies/final: per seed the ego and the population, equal to the final state's
    final = run.policies / "final"
    config = SPEC.config()
    template = rotate.init_seeds(jax.random.PRNGKey(0), config, SEEDS)
    state, _ = checkpoint.load_state(_latest(reference), template)
    for s in range(SEEDS):
        policy, params = load_policy(final / f"seed{s}-ego.safetensors")
        assert isinstance(policy, RecurrentEgo) and policy == rotate.networks(config).ego
        for x, y in zip(
            jax.tree.leaves(params), jax.tree.leaves(rotate.ego_params(state, s)), strict=True
        ):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        population = load_population(final / f"seed{s}-population.safetensors")
        assert population.size == ITERATIONS
        expected = rotate.population(state, config, s)
        for x, y in zip(
            jax.tree.leaves(population.params), jax.tree.leaves(expected.params), strict=True
        ):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    card = json.loads((final / "seed1-population.safetensors.json").read_text())
    assert card["task_id"] == TASK and card["provenance"]["iteration"] == ITERATIONS
    assert not list(run.policies.glob("iteration-*"))  # no population files per iteration


def test_sigkill_after_an_iteration_then_resume_is_bit_identical(
    reference: Path, env: dict[str, str], tmp_path: Path
):
    out = tmp_path / "killed"
    child = subprocess.Popen(
        COMMAND + ["--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    )
    pointer = out / "checkpoints" / "latest.json"
    deadline = time.time() + 300
    while time.time() < deadline and child.poll() is None:
        if pointer.exists() and json.loads(pointer.read_text() or "{}").get("iteration", 0) >= 1:
            break
        time.sleep(0.002)
    child.kill()  # SIGKILL: no handler runs
    child.wait()
    output = child.stdout.read().decode() if child.stdout else ""
    assert child.returncode == -signal.SIGKILL, output[-3000:]
    killed_at = checkpoint.read_meta(_latest(out))["iteration"]
    assert 1 <= killed_at < ITERATIONS, "the kill did not land mid-run"
    assert not (out / "policies").exists()

    resumed = subprocess.run(
        CLI + ["train", "rotate", "--out", str(out), "--resume", "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming {out} from iteration {killed_at}" in resumed.stderr
    _assert_same_run(reference, out)


def test_resume_refuses_a_different_spec(reference: Path):
    before = (reference / "metrics.jsonl").read_bytes()
    args = ["train", "rotate", "--out", str(reference), "--resume", "--seeds", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "num_seeds: run has 2, asked 1" in result.output
    assert (reference / "metrics.jsonl").read_bytes() == before


SABOTAGE = ["--task", TASK, "--preset", "sabotage"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["rotate", *SABOTAGE, "--set", "teammate_ppo.lr=1"], "unknown override 'teammate_ppo.lr'"),
        (["rotate", *SABOTAGE, "--set", "iteration=3"], "did you mean 'iterations'?"),
        (["rotate", *SABOTAGE, "--set", "iterations=many"], "iterations='many' is invalid"),
        (["rotate", *SABOTAGE, "--set", "ego_ppo.num_minibatches=3"], "ego_ppo.num_minibatches=3"),
        (["rotate", *SABOTAGE, "--set", "teammate_ppo.clip_eps=0"], "teammate_ppo.clip_eps=0.0"),
        (["rotate", *SABOTAGE, "--set", "teammate_hidden=0"], "teammate_hidden=(0,) is invalid"),
        (["rotate", *SABOTAGE, "--teammates", "lexi"], "rotate takes no teammates"),
        (["rotate", "--task", "lbf", "--preset", "sabotage"], "has no 'lbf-v1'"),
        (["ippo", *SABOTAGE], "ippo has no 'sabotage' preset (it has quick, paper)"),
        (["ego", *SABOTAGE, "--teammates", "x"], "ego has no 'sabotage' preset"),
    ],
)
def test_cli_usage_errors_exit_2_and_write_nothing(args: list[str], message: str, tmp_path):
    result = CliRunner().invoke(main, ["train", *args, "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "run").exists()


def test_overrides_reach_nested_and_tuple_fields():
    overrides = (
        ("teammate_ppo.learning_rate", "3e-4"),
        ("best_response_hidden", "32,16"),
        ("reset_ego_critic", "false"),
        ("variant", "per_trajectory"),
    )
    config = runs.RunSpec("rotate", "sabotage", "sabotage", overrides=overrides).config()
    base = rotate.preset("sabotage", TASK)
    assert config.teammate_ppo == dataclasses.replace(base.teammate_ppo, learning_rate=3e-4)
    assert config.ego_ppo == base.ego_ppo
    assert config.best_response_hidden == (32, 16) and config.reset_ego_critic is False
    assert config.variant == "per_trajectory"
    assert runs.RunSpec("rotate", "lbf", "quick").config() == rotate.preset("quick", "lbf")
    with pytest.raises(ValueError, match="choose it with --task"):
        runs.RunSpec("rotate", TASK, "sabotage", overrides=(("task_id", "lbf"),)).config()


# ---------------------------------------------------------------- the loop, with a toy module


@dataclasses.dataclass(frozen=True)
class _ToyConfig:
    task_id: str
    iterations: int = 4
    env_steps_per_iteration: int = 10

    def env_steps_after(self, done: int) -> int:
        return done * self.env_steps_per_iteration


class _ToyState(NamedTuple):
    ego: jax.Array  # (num_seeds, 3)
    buffer: jax.Array  # (num_seeds, iterations)
    iteration: jax.Array  # (num_seeds,)


def _toy(poison: str, at: int) -> Method:
    """An open-ended method whose seed 1 gets NaN `poison` ("ego" params or "ego_loss") at
    iteration `at`, or that sends itself SIGTERM during iteration `at` (`poison="sigterm"`);
    returns are NaN at iteration 1 (no episode ended: allowed)."""

    def init(key, setup):
        return _ToyState(jnp.zeros(3), jnp.zeros(4), jnp.zeros((), jnp.int32))

    def iterate(state, setup, done):
        step = state.iteration + 1
        bad = (step == at) & (jnp.arange(step.shape[0]) == 1)
        if poison == "sigterm" and int(step[0]) == at:
            os.kill(os.getpid(), signal.SIGTERM)
        ego = state.ego + 1.0
        if poison == "ego":
            ego = jnp.where(bad[:, None], jnp.nan, ego)
        returns = jnp.where(step == 1, jnp.nan, 1.0 * step)
        metrics = {
            "sp_return": returns,
            "xp_return": returns / 2,
            "regret": returns / 2,
            "ego_return": returns,
            "ego_loss": jnp.where(bad & (poison == "ego_loss"), jnp.nan, 0.5),
            "iteration": step,
        }
        return _ToyState(ego, state.buffer, step), {k: np.asarray(v) for k, v in metrics.items()}

    return Method(
        name="toy",
        presets={"quick": {runs.RunSpec("toy", TASK).task_id: _ToyConfig(TASK)}},
        setup=lambda config: MethodSetup(config=config, env=None, networks=None),
        init=init,
        step=iterate,
        population=lambda state, setup, seed: None,
        report=rotate.REPORT,
        exhausted="",
    )


@pytest.mark.parametrize(
    "poison,message",
    [
        ("ego", r"the ego's parameters became non-finite by iteration 3; nothing of that "),
        ("ego_loss", r"ego_loss became nan at iteration 3 \(seed index 1\); nothing of that "),
    ],
)
def test_non_finite_ego_stops_the_run_naming_the_iteration(poison, message, tmp_path):
    toy: Any = _toy(poison, at=3)
    algo = runs.Algorithm("toy", types.ModuleType("toy"), runs.MethodLoop(toy))
    out = tmp_path / "toy"
    spec = runs.RunSpec("toy", TASK, num_seeds=2)
    with pytest.raises(runs.TrainingDiverged, match=message):
        runs.train(algo, spec, out, progress=False, log=lambda m: None)
    rows = runs.read_metrics(out / "metrics.jsonl")
    assert [r["iteration"] for r in rows] == [1, 2]  # nothing of iteration 3 was written
    assert rows[0]["sp_return"] == [None, None] and rows[1]["sp_return"] == [2.0, 2.0]
    assert [r["env_steps"] for r in rows] == [10, 20]
    assert checkpoint.read_meta(_latest(out))["iteration"] == 2
    assert _png_size(out / "curve.png") == (1100, 400)


def test_sigterm_stops_after_the_current_iteration_with_a_checkpoint(tmp_path):
    toy: Any = _toy("sigterm", at=2)
    algo = runs.Algorithm("toy", types.ModuleType("toy"), runs.MethodLoop(toy))
    out = tmp_path / "toy"
    with pytest.raises(runs.TrainingInterrupted, match="SIGTERM: stopped after iteration 2") as e:
        runs.train(algo, runs.RunSpec("toy", TASK, num_seeds=2), out, progress=False, log=print)
    assert e.value.exit_code == 143 and e.value.update == 2
    assert checkpoint.read_meta(_latest(out))["iteration"] == 2
    assert [r["iteration"] for r in runs.read_metrics(out / "metrics.jsonl")] == [1, 2]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored


def test_keep_every_saves_the_egos_of_those_iterations_and_trains_the_same(
    reference: Path, env, tmp_path: Path
):
    out = tmp_path / "kept"
    done = subprocess.run(
        COMMAND + ["--out", str(out), "--keep-every", "2"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    policies = out / "policies"
    assert sorted(p.name for p in policies.iterdir()) == [
        "final",
        "iteration-000002",
        "iteration-000004",
    ]
    for folder in ("iteration-000002", "iteration-000004"):
        names = sorted(p.name for p in (policies / folder).glob("*.safetensors"))
        assert names == [f"seed{s}-ego.safetensors" for s in range(SEEDS)]  # no populations
        card = json.loads((policies / folder / "seed1-ego.safetensors.json").read_text())
        assert card["provenance"]["iteration"] == int(folder.split("-")[1])
        policy, params = load_policy(policies / folder / "seed1-ego.safetensors")
        assert isinstance(policy, RecurrentEgo) and params is not None
    for name in ("seed0-ego.safetensors", "seed1-population.safetensors"):  # nothing else moved
        assert (policies / "final" / name).read_bytes() == (
            reference / "policies" / "final" / name
        ).read_bytes()
