"""`aht-bench evaluate` and `aht-bench compare` on a tiny sabotage set: the result record, the
plots, determinism, the integrity check (exit 5) and the usage errors (exit 2)."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
from click.testing import CliRunner
from eval_helpers import load_json

from aht_bench import heldout
from aht_bench.cli import EXIT_OK, EXIT_TEAMMATE_INTEGRITY, EXIT_USAGE, main
from aht_bench.evaluation import pins, sets

PNG = b"\x89PNG\r\n\x1a\n"


def _run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _evaluate(agent, set_folder, out, *extra: str):
    return _run(
        "evaluate", str(agent), "--task", "sabotage", "--teammates", str(set_folder),
        "--episodes", "4", "--out", str(out), "--reps", "200", "--no-progress", *extra,
    )  # fmt: skip


def test_evaluate_writes_a_complete_result_record_and_a_plot(
    sabotage_set, sabotage_agents, tmp_path
):
    agent = sabotage_agents["jax_agent.py"]
    out = tmp_path / "res" / "jax.json"
    result = _evaluate(agent, sabotage_set, out)
    assert result.exit_code == EXIT_OK, result.output
    assert "jitted JAX path" in result.output
    assert "mlp_0" in result.output and "mean" in result.output and "worst case" in result.output
    assert out.with_suffix(".png").read_bytes()[:8] == PNG

    record = load_json(out)
    payload = record["payload"]
    assert payload["package_version"] and payload["task_id"] == "sabotage-v1"
    assert payload["agent"]["sha256"] == hashlib.sha256(agent.read_bytes()).hexdigest()
    assert payload["agent"]["runner"] == "jax"
    manifest_sha = hashlib.sha256((sabotage_set / sets.MANIFEST).read_bytes()).hexdigest()
    assert payload["teammate_set"] == {
        "id": "sabotage-v1/test",
        "version": "test",
        "manifest_sha256": manifest_sha,
        "development_set": False,
    }
    assert payload["protocol"]["episodes"] == 4 and payload["protocol"]["seed"] == 0
    assert payload["protocol"]["seatings"] == [[0], [1]]
    for member in payload["members"]:
        assert set(member["returns"]) == {"0", "1"}
        assert all(len(r) == 4 for r in member["returns"].values())
        # the score is the normalised mean return (bounds [0, 5])
        mean = np.mean(list(member["returns"].values()))
        assert member["normalized"]["value"] == np.float64(mean / 5.0)
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    assert record["payload_sha256"] == hashlib.sha256(canonical).hexdigest()


def test_evaluating_twice_gives_identical_returns_and_payload_hash(
    sabotage_set, sabotage_agents, tmp_path
):
    for name in ("jax_agent.py", "plain_agent.py"):
        records = []
        for i in range(2):
            out = tmp_path / f"{name}-{i}.json"
            result = _evaluate(sabotage_agents[name], sabotage_set, out, "--no-plot")
            assert result.exit_code == EXIT_OK, result.output
            records.append(load_json(out))
        a, b = records
        assert [m["returns"] for m in a["payload"]["members"]] == [
            m["returns"] for m in b["payload"]["members"]
        ]
        assert a["payload_sha256"] == b["payload_sha256"]
        assert a["meta"]["created_utc"]  # the time stamp lives outside the hashed payload


def test_a_tampered_manifest_exits_5(sabotage_set, sabotage_agents, tmp_path):
    manifest = sabotage_set / sets.MANIFEST
    manifest.write_text(manifest.read_text().replace('"upper": 5.0', '"upper": 4.0', 1))
    out = tmp_path / "r.json"
    result = _evaluate(sabotage_agents["plain_agent.py"], sabotage_set, out)
    assert result.exit_code == EXIT_TEAMMATE_INTEGRITY, result.output
    assert "manifest.json does not match its recorded sha256" in result.stderr
    assert "Traceback" not in result.output and not out.exists()


def test_a_flipped_byte_in_a_weight_file_exits_5_naming_the_file(
    sabotage_set, sabotage_agents, tmp_path
):
    weights = sabotage_set / "mlp_1.safetensors"
    blob = bytearray(weights.read_bytes())
    blob[-1] ^= 0x01
    weights.write_bytes(bytes(blob))
    result = _evaluate(sabotage_agents["jax_agent.py"], sabotage_set, tmp_path / "r.json")
    assert result.exit_code == EXIT_TEAMMATE_INTEGRITY, result.output
    assert "mlp_1.safetensors does not match the sha256 in the manifest" in result.stderr


def test_a_missing_manifest_hash_exits_5(sabotage_set, sabotage_agents, tmp_path):
    (sabotage_set / sets.MANIFEST_HASH).unlink()
    result = _evaluate(sabotage_agents["jax_agent.py"], sabotage_set, tmp_path / "r.json")
    assert result.exit_code == EXIT_TEAMMATE_INTEGRITY, result.output
    assert "manifest.sha256 is missing" in result.stderr


def test_usage_errors_exit_2(sabotage_set, sabotage_agents, tmp_path):
    agent = str(sabotage_agents["plain_agent.py"])
    cases = [
        (["evaluate", agent, "--task", "sabotage", "--teammates", "nope"], "no teammate set"),
        (["evaluate", agent, "--task", "sabotag"], "Did you mean"),
        (["evaluate", str(tmp_path / "missing.py"), "--task", "sabotage"], "does not exist"),
        (
            [
                "evaluate",
                agent,
                "--task",
                "sabotage",
                "--teammates",
                str(sabotage_set),
                "--out",
                str(tmp_path / "r.txt"),
            ],
            "must end in .json",
        ),  # fmt: skip
        (
            ["evaluate", agent, "--task", "lbf", "--teammates", str(sabotage_set)],
            "is for 'sabotage-v1', not lbf-v1",
        ),
        (["evaluate", agent, "--task", "sabotage", "--episodes", "0"], "--episodes"),
    ]
    for args, needle in cases:
        result = _run(*args)
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        assert needle in result.output, (args, result.output)


def test_task_all_evaluates_every_task_with_the_set(
    sabotage_set, sabotage_agents, tmp_path, monkeypatch
):
    root = tmp_path / "heldout"
    shutil.copytree(sabotage_set, root / "sabotage-v1" / "test")
    monkeypatch.setenv(sets.HELDOUT_ENV, str(root))
    out = tmp_path / "all"
    result = _run(
        "evaluate", str(sabotage_agents["plain_agent.py"]), "--task", "all", "--teammates",
        "test", "--episodes", "2", "--out", str(out), "--reps", "200", "--no-plot",
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.output
    assert load_json(out / "sabotage-v1.json")["payload"]["task_id"] == "sabotage-v1"


def test_compare_prints_aggregates_and_the_probability_of_improvement(
    sabotage_set, sabotage_agents, tmp_path
):
    paths = []
    for name in ("jax_agent.py", "plain_agent.py"):
        out = tmp_path / f"{name}.json"
        assert _evaluate(sabotage_agents[name], sabotage_set, out, "--no-plot").exit_code == 0
        paths.append(str(out))
    png = tmp_path / "cmp.png"
    result = _run("compare", *paths, "--out", str(png), "--reps", "200")
    assert result.exit_code == EXIT_OK, result.output
    assert "P(jax_agent.py > plain_agent.py) = " in result.output
    assert "IQM" in result.output and "worst case" in result.output
    assert png.read_bytes()[:8] == PNG
    assert (tmp_path / "cmp-poi.png").read_bytes()[:8] == PNG

    edited = json.loads(open(paths[0]).read())
    edited["payload"]["aggregates"]["mean"]["value"] = 1.0
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    result = _run("compare", str(tmp_path / "edited.json"), paths[1], "--no-plot")
    assert result.exit_code == EXIT_USAGE
    assert "payload does not match payload_sha256" in result.output


JAX_LATE_BAD = '''"""A JAX agent: fine on the reset observation, returns 7 once play starts."""
import jax.numpy as jnp

TASKS = ("sabotage-v1",)


class LateBad:
    def init_carry(self, batch_shape):
        return ()

    def act(self, params, carry, obs, key):
        return jnp.where(obs.sum() > 0, 7, 0).astype(jnp.int32), carry, {}


policy = LateBad()
params = None
'''


def test_an_out_of_range_action_during_jitted_play_exits_4(sabotage_set, tmp_path):
    agent = tmp_path / "late_bad.py"
    agent.write_text(JAX_LATE_BAD)
    result = _evaluate(agent, sabotage_set, tmp_path / "r.json")
    assert result.exit_code == 4, result.output
    assert "returned action 7, outside [0, 3) of sabotage-v1" in result.stderr
    assert "teammate mlp_0, seats (0,), episode 0" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "r.json").exists()


def test_evaluate_uses_the_newest_published_version_by_default(
    sabotage_set, sabotage_agents, tmp_path, monkeypatch
):
    """A version is published when its lock file `vN.sha256` lies beside it and the lock's
    digest is pinned in the package (here: monkeypatched pins): with v1 and v3 published, v2
    unlocked (a draft), v4 locked but not pinned and a dev set, the default is v3; v1 stays
    selectable."""
    root = tmp_path / "heldout"
    for version in ("v1", "v2", "v3", "v4", "dev", "v10-draft"):
        folder = root / "sabotage-v1" / version
        shutil.copytree(sabotage_set, folder)
        manifest, _ = sets.read_manifest(folder)
        sets.write_manifest(folder, {**manifest, "set_id": f"sabotage-v1/{version}"})
    pinned = dict(pins.PINNED)
    for version in ("v1", "v3", "v4"):
        heldout.lock_new(root / "sabotage-v1" / version, root)
        lock = pins.read_lock_file(root / "sabotage-v1" / f"{version}.sha256")
        if version != "v4":
            pinned[pins.pin_key("sabotage-v1", version)] = pins.lock_digest(lock)
    monkeypatch.setattr(pins, "PINNED", pinned)
    monkeypatch.setattr(sets, "PINNED", pinned)
    monkeypatch.setenv(sets.HELDOUT_ENV, str(root))
    assert sets.published_versions("sabotage-v1") == ["v1", "v3"]
    assert sets.newest_version("sabotage-v1") == "v3"
    assert sets.newest_version("lbf-4p-v1") is None
    agent = str(sabotage_agents["plain_agent.py"])
    common = ("--episodes", "2", "--reps", "200", "--no-plot")
    result = _run(
        "evaluate", agent, "--task", "sabotage", *common, "--out", str(tmp_path / "a.json")
    )
    assert result.exit_code == EXIT_OK, result.output
    assert "of sabotage-v1/v3," in result.output, result.output
    result = _run("evaluate", agent, "--task", "sabotage", "--teammates", "v1", *common,
                  "--out", str(tmp_path / "b.json"))  # fmt: skip
    assert result.exit_code == EXIT_OK, result.output
    assert "of sabotage-v1/v1," in result.output, result.output


def test_evaluate_resolves_the_task_name_once_and_passes_the_task_down(
    sabotage_set, sabotage_agents, tmp_path, monkeypatch
):
    # STYLE "Resolve once at the boundary": `--task sabotage` becomes a Task in the CLI; the set,
    # the agent file's spec, the step-by-step shells and the jitted runner are handed that Task
    # and never turn a name into a task again
    from aht_bench import envs

    names = []
    real = envs.task

    def counting(name):
        if not isinstance(name, envs.Task):
            names.append(name)
        return real(name)

    monkeypatch.setattr(envs, "task", counting)
    for agent in ("plain_agent.py", "jax_agent.py"):
        names.clear()
        out = tmp_path / f"{agent}.json"
        result = _evaluate(sabotage_agents[agent], sabotage_set, out, "--in-process")
        assert result.exit_code == EXIT_OK, result.output
        assert names == ["sabotage"], agent
        assert load_json(out)["payload"]["task_id"] == "sabotage-v1"


def test_a_seed_outside_0_to_2_32_is_a_usage_error_before_any_work(sabotage_set, sabotage_agents):
    """Before: exit 1 "internal error" (NumPy cannot seed the bootstrap with it), after the
    evaluation ran; and a JAX key keeps only 32 bits, so 2**32 would replay seed 0."""
    agent = str(sabotage_agents["plain_agent.py"])
    for seed in ("-1", str(2**70), str(2**32)):
        result = _run("evaluate", agent, "--task", "sabotage", "--teammates", str(sabotage_set),
                      "--seed", seed)  # fmt: skip
        assert result.exit_code == EXIT_USAGE, (seed, result.output)
        assert f"{seed} is not a seed an evaluation can use" in result.output
        assert "pass one from 0 to 4294967295" in result.output
        assert "loaded" not in result.output


def test_episodes_beyond_the_memory_estimate_are_refused_with_the_most_that_fit(
    sabotage_set, sabotage_agents, tmp_path
):
    out = tmp_path / "r.json"
    result = _evaluate(sabotage_agents["jax_agent.py"], sabotage_set, out, "--episodes",
                       str(10**12))  # fmt: skip
    assert result.exit_code == EXIT_USAGE, result.output
    assert "1000000000000 episodes per member and seating of sabotage-v1" in result.output
    assert "GiB of memory" in result.output and "nothing was run" in result.output
    fit = int(result.output.split("pass --episodes ")[1].split()[0])
    assert 64 <= fit < 10**12
    assert "loaded" not in result.output and not out.exists()


def test_an_unwritable_out_is_a_usage_error_before_any_work_and_leaves_nothing(
    sabotage_set, sabotage_agents, tmp_path
):
    """Before: exit 1 "internal error" after the whole evaluation (its result lost)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    before = sorted(tmp_path.rglob("*"))
    cases = [("/proc/x/out.json", "/proc is not writable"),
             (str(blocker / "r.json"), f"{blocker} is a file, not a folder")]  # fmt: skip
    for out, why in cases:
        result = _evaluate(sabotage_agents["plain_agent.py"], sabotage_set, out)
        assert result.exit_code == EXIT_USAGE, (out, result.output)
        assert f"cannot write {out}: {why}" in result.output and "nothing was run" in result.output
        assert "loaded" not in result.output
    assert sorted(tmp_path.rglob("*")) == before
