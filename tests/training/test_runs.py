"""Long runs on disk (aht_bench.runs and `aht-bench train`): exact resume after SIGTERM
and after SIGKILL (slow), divergence stops, checkpoint verification, run-folder and option errors.

Every run here is the same tiny IPPO config on the sabotage game (so in-process runs share one
compile); the subprocess runs pay their own compile (~15 s each).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file

from aht_bench import runs
from aht_bench.algorithms import ippo
from aht_bench.policies import load_policy
from aht_bench.training import checkpoint, driver

TASK = "sabotage-v1"
OVERRIDES = (("total_timesteps", "6144"), ("num_envs", "8"), ("rollout_length", "16"))
NUM_UPDATES = 48
SPEC = runs.RunSpec("ippo", TASK, num_seeds=2, seed=3, overrides=OVERRIDES)
CLI = [sys.executable, "-m", "aht_bench.cli"]


def _quiet(message: str) -> None:
    pass


def _train(out: Path, **kwargs) -> runs.RunOutcome:
    kwargs.setdefault("progress", False)
    kwargs.setdefault("log", _quiet)
    return runs.train(runs.get("ippo"), SPEC, out, **kwargs)


def _final_state(out: Path) -> dict[str, np.ndarray]:
    run = runs.RunDir(out)
    latest = run.latest_checkpoint()
    assert latest is not None
    return load_file(latest)


def _assert_same_run(a: Path, b: Path) -> None:
    state_a, state_b = _final_state(a), _final_state(b)
    assert state_a.keys() == state_b.keys()
    for k in state_a:
        np.testing.assert_array_equal(state_a[k], state_b[k], err_msg=f"leaf {k}")
    for policy in sorted((a / "policies" / "final").glob("*.safetensors")):
        other = b / "policies" / "final" / policy.name
        assert policy.read_bytes() == other.read_bytes(), policy.name
    rows_a = runs.read_metrics(a / "metrics.jsonl")
    rows_b = runs.read_metrics(b / "metrics.jsonl")
    assert [r["update"] for r in rows_b] == list(range(1, NUM_UPDATES + 1))
    strip = lambda r: {k: v for k, v in r.items() if k != "time_s"}  # noqa: E731
    assert [strip(r) for r in rows_a] == [strip(r) for r in rows_b]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """One uninterrupted run, checkpointing every 5 updates."""
    out = tmp_path_factory.mktemp("runs") / "reference"
    outcome = _train(out, checkpoint_every_updates=5)
    assert outcome.updates == NUM_UPDATES
    return out


def test_a_run_leaves_its_folder(reference: Path):
    run = runs.RunDir(reference)
    spec = json.loads(run.spec.read_text())
    assert spec["spec"]["algorithm"] == "ippo" and spec["num_updates"] == NUM_UPDATES
    assert spec["config"]["num_envs"] == 8
    assert spec["backend"] == jax.default_backend() == "cpu" and spec["repeatable"] is True
    rows = runs.read_metrics(run.metrics)
    assert [r["update"] for r in rows] == list(range(1, NUM_UPDATES + 1))
    assert rows[-1]["env_steps"] == NUM_UPDATES * 8 * 16
    assert len(rows[-1]["loss"]) == 2  # one value per seed
    # Only the last two checkpoints are kept; the pointer names the final one.
    kept = sorted(p.name for p in run.checkpoints.glob("update-*.safetensors"))
    assert kept == ["update-000045.safetensors", "update-000048.safetensors"]
    assert checkpoint.read_meta(run.latest_checkpoint())["update"] == NUM_UPDATES
    assert run.curve.stat().st_size > 1000
    # Final policies: one per seed and seat, loadable, equal to the checkpointed params.
    files = sorted(p.name for p in (run.policies / "final").glob("*.safetensors"))
    assert files == [f"seed{s}-agent{a}.safetensors" for s in (0, 1) for a in (0, 1)]
    policy, params = load_policy(run.policies / "final" / "seed1-agent0.safetensors")
    assert type(policy).__name__ == "MLPActorCritic"
    assert (
        json.loads((run.policies / "final" / "seed1-agent0.safetensors.json").read_text())[
            "provenance"
        ]["update"]
        == NUM_UPDATES
    )


def test_checkpoint_round_trip_restores_every_leaf(reference: Path, tmp_path: Path):
    run = runs.RunDir(reference)
    config = SPEC.config()
    template = ippo.init(jax.random.PRNGKey(0), config)
    template = jax.tree.map(lambda x: jnp.stack([x, x]), template)
    state, meta = checkpoint.load_state(run.latest_checkpoint(), template)
    assert meta["update"] == NUM_UPDATES
    assert int(state.update_step[0]) == NUM_UPDATES
    # Saving the loaded state again gives the same tensor bytes.
    checkpoint.save_state(tmp_path / "again.safetensors", state, meta)
    assert (tmp_path / "again.safetensors").read_bytes() == run.latest_checkpoint().read_bytes()


def test_tampered_or_mismatched_checkpoints_are_refused(reference: Path, tmp_path: Path):
    run = runs.RunDir(reference)
    config = SPEC.config()
    one = ippo.init(jax.random.PRNGKey(0), config)
    template = jax.tree.map(lambda x: jnp.stack([x, x]), one)
    bad = tmp_path / "bad.safetensors"
    blob = bytearray(run.latest_checkpoint().read_bytes())
    blob[-3] ^= 0xFF
    bad.write_bytes(bytes(blob))
    bad.with_name(bad.name + ".json").write_bytes(
        checkpoint.card_path(run.latest_checkpoint()).read_bytes()
    )
    with pytest.raises(checkpoint.CheckpointError, match="sha256"):
        checkpoint.load_state(bad, template)
    with pytest.raises(checkpoint.CheckpointError, match="does not fit"):
        checkpoint.load_state(run.latest_checkpoint(), one)  # no seed axis: shapes differ
    with pytest.raises(checkpoint.CheckpointError, match="no card"):
        checkpoint.load_state(tmp_path / "missing.safetensors", template)


def test_sigterm_stops_at_an_update_boundary_and_resume_is_exact(reference: Path, tmp_path):
    out = tmp_path / "stopped"
    metrics = out / "metrics.jsonl"

    def _stop_after_a_few_updates():
        deadline = time.time() + 120
        while time.time() < deadline:
            if metrics.exists() and len(metrics.read_text().splitlines()) >= 7:
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.005)

    watcher = threading.Thread(target=_stop_after_a_few_updates, daemon=True)
    watcher.start()
    with pytest.raises(runs.TrainingInterrupted) as stopped:
        _train(out, checkpoint_every_updates=1000, checkpoint_every_s=1e9)
    watcher.join()
    assert stopped.value.exit_code == 143
    stopped_at = stopped.value.update
    assert 7 <= stopped_at < NUM_UPDATES
    assert checkpoint.read_meta(runs.RunDir(out).latest_checkpoint())["update"] == stopped_at
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored

    outcome = _train(out, resume=True)
    assert outcome.updates == NUM_UPDATES
    _assert_same_run(reference, out)


# slow: a second CLI SIGKILL-and-resume run; ROTATE's (tests/algorithms/test_rotate_runs.py)
# and IPPO's in-process SIGTERM resume above stay in the fast set
@pytest.mark.slow
def test_sigkill_mid_run_then_resume_is_bit_identical(reference: Path, tmp_path: Path):
    out = tmp_path / "killed"
    command = CLI + ["train", "ippo", "--task", TASK, "--seeds", "2", "--seed", "3"]
    command += [a for k, v in OVERRIDES for a in ("--set", f"{k}={v}")]
    command += ["--out", str(out), "--checkpoint-every", "1", "--no-progress"]
    # JAX's persistent compilation cache: the resumed processes reuse the first one's compile.
    env = os.environ | {
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax-cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    pointer = out / "checkpoints" / "latest.json"
    deadline = time.time() + 240
    while time.time() < deadline and child.poll() is None:
        if pointer.exists() and json.loads(pointer.read_text() or "{}").get("update", 0) >= 3:
            break
        time.sleep(0.002)
    child.kill()  # SIGKILL: no handler runs
    child.wait()
    assert child.returncode == -signal.SIGKILL, child.stdout.read().decode()[-2000:]
    killed_at = checkpoint.read_meta(runs.RunDir(out).latest_checkpoint())["update"]
    assert 3 <= killed_at < NUM_UPDATES, "the kill did not land mid-run"

    resumed = subprocess.run(
        CLI + ["train", "ippo", "--out", str(out), "--resume", "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming {out} from update {killed_at}" in resumed.stderr
    _assert_same_run(reference, out)

    # A finished run resumes to "done" without training again.
    again = subprocess.run(
        CLI + ["train", "ippo", "--out", str(out), "--resume", "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert again.returncode == 0 and f"done: {NUM_UPDATES} updates" in again.stdout
    _assert_same_run(reference, out)


def test_non_finite_loss_stops_the_run_naming_the_update(tmp_path: Path):
    def _poisoned_update(state, config):
        state, metrics = ippo.update(state, config)
        poison = jnp.where(state.update_step == 4, jnp.nan, 0.0)
        return state, metrics | {"value_loss": metrics["value_loss"] + poison}

    poisoned = dataclasses.replace(
        ippo.METHOD,
        step=lambda state, setup, done: driver.update_seeds(state, _poisoned_update, setup.config),
    )
    algo = runs.Algorithm("ippo", ippo, runs.MethodLoop(poisoned))
    out = tmp_path / "nan"
    with pytest.raises(runs.TrainingDiverged, match=r"value_loss became nan at update 4 \(seed"):
        runs.train(algo, SPEC, out, progress=False, log=_quiet, checkpoint_every_updates=2)
    rows = runs.read_metrics(out / "metrics.jsonl")
    assert [r["update"] for r in rows] == [1, 2, 3]  # nothing of update 4 was written
    assert checkpoint.read_meta(runs.RunDir(out).latest_checkpoint())["update"] == 2


def test_importing_the_package_asks_xla_for_deterministic_gpu_ops():
    show = "import os, aht_bench; print(os.environ['XLA_FLAGS'], aht_bench.deterministic_gpu_ops())"

    def flags_after_import(given: str | None) -> str:
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        env |= {} if given is None else {"XLA_FLAGS": given}
        done = subprocess.run([sys.executable, "-c", show], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert flags_after_import(None) == "--xla_gpu_deterministic_ops=true True"
    on, off = "--xla_gpu_deterministic_ops=true", "--xla_gpu_deterministic_ops=false"
    assert flags_after_import("--xla_cpu_a=1") == f"--xla_cpu_a=1 {on} True"
    # a user's own setting of the flag is kept, whatever its value
    assert flags_after_import(off) == f"{off} False"


def test_which_flags_make_gpu_runs_repeatable(monkeypatch):
    from aht_bench import deterministic_gpu_ops

    assert deterministic_gpu_ops("--xla_gpu_deterministic_ops")  # a bare flag means true
    assert deterministic_gpu_ops("--xla_gpu_deterministic_ops=1 --xla_cpu_a=1")
    assert not deterministic_gpu_ops("")
    on, off = "--xla_gpu_deterministic_ops=true", "--xla_gpu_deterministic_ops=false"
    assert not deterministic_gpu_ops(f"{on} {off}")  # the last mention counts
    assert not deterministic_gpu_ops("--xla_gpu_deterministic_ops_extra=true")
    monkeypatch.setenv("XLA_FLAGS", off)
    assert runs.folder.repeatable("gpu") is False and runs.folder.repeatable("cpu") is True
    assert runs.folder.repeatable("tpu") is None  # not measured
    monkeypatch.setenv("XLA_FLAGS", on)
    assert runs.folder.repeatable("gpu") is True


def test_a_run_that_cannot_repeat_says_so(monkeypatch, tmp_path: Path):
    """A GPU run with deterministic ops turned off warns, and run.json records it; on this CPU
    machine the backend's answer is stood in for."""
    monkeypatch.setattr(runs.driver, "repeatable", lambda: False)
    monkeypatch.setattr(runs.folder, "repeatable", lambda: False)
    said: list[str] = []
    _train(tmp_path / "gpu-like", log=said.append)
    assert runs.driver.NOT_REPEATABLE in said
    assert json.loads((tmp_path / "gpu-like" / "run.json").read_text())["repeatable"] is False


def test_run_folder_errors(reference: Path, tmp_path: Path):
    with pytest.raises(runs.RunDirError, match="already holds a run; pass --resume"):
        _train(reference)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    with pytest.raises(runs.RunDirError, match="not empty and holds no run"):
        _train(tmp_path / "full")
    assert (tmp_path / "full" / "notes.txt").read_text() == "mine"
    with pytest.raises(runs.RunDirError, match="holds no run to resume"):
        _train(tmp_path / "nothing", resume=True)
    other = runs.RunSpec("ippo", TASK, num_seeds=1, seed=3, overrides=OVERRIDES)
    with pytest.raises(runs.RunDirError, match="num_seeds: run has 2, asked 1"):
        runs.train(runs.get("ippo"), other, reference, resume=True, progress=False)


def test_overrides_are_typed_and_checked():
    config = runs.RunSpec(
        "ippo", TASK, overrides=(("total_timesteps", "1e5"), ("ppo.anneal_lr", "false"))
    ).config()
    assert config.total_timesteps == 100_000 and config.ppo.anneal_lr is False
    hidden = runs.RunSpec("ippo", TASK, overrides=(("hidden", "32,16"),)).config()
    assert hidden.hidden == (32, 16)
    anneal = runs.RunSpec("ippo", TASK, overrides=(("shaped_reward_anneal_steps", "5e4"),))
    assert anneal.config().shaped_reward_anneal_steps == 50_000
    off = runs.RunSpec("ippo", TASK, overrides=(("shaped_reward_anneal_steps", "None"),))
    assert off.config().shaped_reward_anneal_steps is None
    with pytest.raises(ValueError, match="shaped_reward_anneal_steps='soon' is invalid"):
        runs.RunSpec("ippo", TASK, overrides=(("shaped_reward_anneal_steps", "soon"),)).config()
    cc = "overcooked-counter_circuit-v1"
    shaping = (("shaping", "counter_pickup:0, onion_on_counter:0.5"),)
    assert runs.RunSpec("ippo", cc, overrides=shaping).config().shaping == (
        ("counter_pickup", 0.0),
        ("onion_on_counter", 0.5),
    )
    with pytest.raises(ValueError, match="'counter_pickup' is not NAME:NUMBER"):
        runs.RunSpec("ippo", cc, overrides=(("shaping", "counter_pickup"),)).config()
    with pytest.raises(ValueError, match="unknown coefficients \\['pass'\\]"):
        runs.RunSpec("ippo", cc, overrides=(("shaping", "pass:1"),)).config()
    with pytest.raises(ValueError, match="unknown override 'ppo.lr'"):
        runs.RunSpec("ippo", TASK, overrides=(("ppo.lr", "1"),)).config()
    with pytest.raises(ValueError, match="num_envs='many' is invalid"):
        runs.RunSpec("ippo", TASK, overrides=(("num_envs", "many"),)).config()
    with pytest.raises(ValueError, match="clip_eps=0.0 is invalid"):
        runs.RunSpec("ippo", TASK, overrides=(("ppo.clip_eps", "0"),)).config()
    with pytest.raises(ValueError, match="takes no teammates"):
        runs.check_teammates(runs.get("ippo"), runs.RunSpec("ippo", TASK, teammates=("x",)))
    with pytest.raises(ValueError, match="trains against teammates"):
        runs.check_teammates(runs.get("br"), runs.RunSpec("br", TASK))


def test_cli_train_usage_errors(tmp_path: Path):
    from click.testing import CliRunner

    from aht_bench.cli import main

    cli = CliRunner()
    result = cli.invoke(main, ["train", "ippo", "--out", str(tmp_path / "a")])
    assert result.exit_code == 2 and "--task is required" in result.output
    result = cli.invoke(main, ["train", "br", "--task", TASK, "--out", str(tmp_path / "b")])
    assert result.exit_code == 2 and "trains against teammates" in result.output
    result = cli.invoke(
        main, ["train", "ippo", "--task", TASK, "--set", "gamma", "--out", str(tmp_path / "c")]
    )
    assert result.exit_code == 2 and "is not FIELD=VALUE" in result.output
    result = cli.invoke(
        main,
        ["train", "ippo", "--task", TASK, "--set", "ppo.gamma=2", "--out", str(tmp_path / "d")],
    )
    assert result.exit_code == 2 and "gamma=2.0 is invalid" in result.output
    result = cli.invoke(main, ["train", "ego", "--out", str(tmp_path / "e"), "--resume"])
    assert result.exit_code == 2 and "holds no run to resume" in result.output
    for name in "abcde":
        assert not (tmp_path / name).exists()  # nothing written on bad input


def test_br_against_a_policy_file_teammate(reference: Path, tmp_path: Path):
    mate = tmp_path / "mate.safetensors"
    source = reference / "policies" / "final" / "seed0-agent1.safetensors"
    mate.write_bytes(source.read_bytes())
    Path(str(mate) + ".json").write_bytes(Path(str(source) + ".json").read_bytes())
    overrides = (("num_envs", "8"), ("rollout_length", "16"), ("total_timesteps", "256"))
    spec = runs.RunSpec("br", TASK, teammates=(str(mate),), overrides=overrides)
    out = tmp_path / "br"
    outcome = runs.train(runs.get("br"), spec, out, progress=False, log=_quiet)
    assert outcome.updates == 2 and len(outcome.policies) == 1
    record = json.loads((out / "run.json").read_text())["teammates"][0]
    assert record["kind"] == "policy" and len(record["sha256"]) == 64
    other = reference / "policies" / "final" / "seed1-agent1.safetensors"
    mate.write_bytes(other.read_bytes())  # a valid policy file, but not the one trained against
    Path(str(mate) + ".json").write_bytes(Path(str(other) + ".json").read_bytes())
    with pytest.raises(runs.RunDirError, match="changed since the run started"):
        runs.train(runs.get("br"), spec, out, resume=True, progress=False, log=_quiet)


def test_keep_every_saves_the_learners_of_those_updates_and_trains_the_same(
    reference: Path, tmp_path: Path
):
    out = tmp_path / "kept"
    _train(out, checkpoint_every_updates=5, keep_every=20)
    kept = sorted(p.name for p in (out / "policies").iterdir() if p.name != "final")
    per_call = runs.get("ippo").config(SPEC).updates_per_call
    # the calls that pass update 20 and 40 (a call of several updates is kept whole)
    expected = sorted({f"update-{-(-m // per_call) * per_call:06d}" for m in (20, 40)})
    assert kept == expected
    files = sorted(p.name for p in (out / "policies" / kept[0]).glob("*.safetensors"))
    assert files == [f"seed{s}-agent{a}.safetensors" for s in (0, 1) for a in (0, 1)]
    _assert_same_run(reference, out)
