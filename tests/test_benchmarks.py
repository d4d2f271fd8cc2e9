"""The throughput benchmark runs end to end (slow; tiny sizes: this checks the script, not
speed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "env_throughput.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("env_throughput", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # compiles the LBF rollout; like the other benchmark scripts' tests
def test_env_throughput_script_writes_rows_with_ratios(bench, tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = ["--tasks", "sabotage,lbf", "--num-envs", "4", "--steps", "3", "--repeats", "1"]
    assert bench.main([*argv, "--out", str(out)]) == 0
    rows = {r["task"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["sabotage-v1"]["backend"] == "native" and "ratio" not in rows["sabotage-v1"]
    assert rows["lbf-v1"]["backend"] == "jumanji" and rows["lbf-v1"]["ratio"] > 0
    assert "lbf-v1" in capsys.readouterr().out


def test_env_throughput_rejects_bad_sizes(bench):
    with pytest.raises(SystemExit) as e:
        bench.main(["--num-envs", "0"])
    assert e.value.code == 2


def _load(name: str):
    path = SCRIPT.parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_training_signal_reports_best_returns_and_last_entropies(tmp_path, capsys):
    signal = _load("training_signal")
    rows = [
        {"iteration": 1, "sp_return": [0.0, 2.0], "ego_entropy": [1.5, 1.7], "env_steps": 10},
        {"iteration": 2, "sp_return": [4.0, None], "ego_entropy": [0.1, 0.3], "env_steps": 20},
        {"iteration": 3, "sp_return": [1.0, 1.0], "ego_entropy": [None, None], "env_steps": 30},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert signal.signal(tmp_path) == pytest.approx({"max sp_return": 4.0, "last ego_entropy": 0.2})
    assert signal.main([str(tmp_path)]) == 0
    assert "max sp_return 4" in capsys.readouterr().out
    assert signal.main([str(tmp_path / "missing")]) == 2
    assert "no metrics.jsonl" in capsys.readouterr().out


@pytest.mark.slow  # compiles the LBF vector step and the EgoEnv's
def test_gym_vector_script_writes_a_row_with_its_ratio(tmp_path, capsys):
    gym_vector = _load("gym_vector")
    out = tmp_path / "gym_vector.json"
    argv = ["--task", "lbf-v1", "--teammate", "lexi", "--num-envs", "2", "--steps", "2"]
    assert gym_vector.main([*argv, "--repeats", "1", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["task"] == "lbf-v1" and row["teammate"] == "lexi" and row["ratio"] > 0
    assert "lbf-v1" in capsys.readouterr().out


@pytest.mark.slow  # compiles the LBF gymnax rollout and both vector-env steps
def test_gymnax_throughput_script_writes_a_row_with_both_ratios(tmp_path, capsys):
    bench = _load("gymnax_throughput")
    out = tmp_path / "gymnax.json"
    argv = ["--task", "lbf-v1", "--teammate", "lexi", "--num-envs", "2", "--steps", "2"]
    assert bench.main([*argv, "--repeats", "1", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["task"] == "lbf-v1" and row["ratio_vs_vector"] > 0
    assert row["ratio_vs_vector_scan"] > 0
    assert "lbf-v1" in capsys.readouterr().out


def test_gymnax_throughput_rejects_bad_sizes():
    with pytest.raises(SystemExit) as e:
        _load("gymnax_throughput").main(["--steps", "0"])
    assert e.value.code == 2


def test_test_time_split_separates_common_from_added_tests(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location(
        "test_time_split", SCRIPT.with_name("test_time_split.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    before, after = tmp_path / "before.log", tmp_path / "after.log"
    table = "============================ slowest durations =============================\n"
    before.write_text(
        table + "2.00s call     tests/a.py::test_x\n1.00s setup    tests/a.py::test_x\n"
        "4.00s call     tests/b.py::test_gone\n"
        "============ 2 passed, 1 deselected in 10.00s ============\n"
    )
    after.write_text(
        table + "1.50s call     tests/a.py::test_x\n0.50s setup    tests/a.py::test_x\n"
        "5.00s call     tests/c.py::test_new\n"
        "============ 2 passed in 9.00s ============\n"
    )
    assert module.main([str(before), str(after)]) == 0
    out = capsys.readouterr().out
    assert "in both:       before      3.0s  after      2.0s  ratio 0.667" in out
    assert "only before:      1 tests      4.0s" in out
    assert "only after:       1 tests      5.0s" in out
    assert "before: wall 10.0s, per-test sum 7.0s, untimed rest 3.0s" in out
    assert "5.0s  tests/c.py" in out


def test_heldout_tables_compare_two_versions_from_their_manifests():
    tables = _load("heldout_tables")
    text = tables.compare_versions("lbf-v1", "v1", "v2")
    v2_manifest = json.loads(
        (Path(__file__).resolve().parents[1] / "heldout/lbf-v1/v2/manifest.json").read_text()
    )
    assert "| candidates kept | 9 of 14 | 17 of 17 |" in text
    assert f"{v2_manifest['cross_play']['diagonal_mean']:.4g}" in text
    for member in v2_manifest["members"]:
        assert f"| {member['name']} | {member['kind']} | " in text
    assert "pruned: not competent" in text  # v1's pruned BRDiv confederate, with its numbers
    with pytest.raises(SystemExit, match="human-proxy"):
        tables.compare_versions("overcooked-cramped_room-v2", "v2", "human-proxy-v2")


def test_sweep_throughput_short_runs_are_at_least_one_update_per_iteration():
    throughput = _load("sweep_throughput")
    from aht_bench.runs import RunSpec, get

    for task_id in throughput.KINDS.values():
        config = get("brdiv").config(RunSpec("brdiv", task_id, "paper"))
        cut = throughput.short_overrides("brdiv", config, throughput.SHORT_FRACTION["paper"])
        update = config.population_size**2 * config.num_envs * config.rollout_length
        per_iteration = cut["generation_timesteps"] / cut["generation_iterations"]
        assert per_iteration >= update, task_id  # cramped_room's cut alone was below one
    with pytest.raises(SystemExit) as bad:
        throughput.main(["--measure", "paper", "--kinds", "gpu"])
    assert bad.value.code == 2


def test_eval_seed_spread_reads_seed_ranges_and_refuses_too_few_seeds():
    spread = _load("eval_seed_spread")
    assert spread.parse_seeds("0-3") == [0, 1, 2, 3]
    assert spread.parse_seeds("0,5,9") == [0, 5, 9]
    for bad in ("4", "1,1"):  # one seed measures no spread; a repeated seed hides it
        with pytest.raises(SystemExit, match="at least two distinct seeds"):
            spread.parse_seeds(bad)


def test_eval_seed_spread_records_say_the_seed_spread_exceeds_the_ci():
    # the committed measurements the docs quote (docs/evaluation.md, docs/leaderboard.md)
    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    record = json.loads((results / "eval_seed_spread_fcp_forced_coord_v3.json").read_text())
    means = [row["mean"] for row in record["rows"]]
    widths = [row["ci"][1] - row["ci"][0] for row in record["rows"]]
    assert len(means) == 8 and record["set"] == "v3"
    assert max(means) - min(means) > 5 * max(widths)
    assert record["summary"]["range"] == pytest.approx(max(means) - min(means))
