"""Results safe and legible (issue 53): evaluate never replaces a record without --force, a CI
from fewer than 2 runs per member is flagged in the table and the record, the random-agent
floor is printed under the aggregates, a broken agent file fails before anything expensive
starts, and --json on evaluate, check-agent, compare and --version. On the tiny sabotage set
of conftest.py (one member plays in a second or two)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from eval_helpers import load_json

from aht_bench.cli import EXIT_AGENT_LOAD, EXIT_OK, EXIT_USAGE, main
from aht_bench.evaluation import floor, sets
from aht_bench.evaluation import record as rec

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "agent_corpus"


def _run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _evaluate(agent, set_folder, out, *extra: str):
    return _run(
        "evaluate", str(agent), "--task", "sabotage", "--teammates", str(set_folder),
        "--episodes", "2", "--out", str(out), "--reps", "200", "--no-progress", "--no-plot",
        *extra,
    )  # fmt: skip


def test_an_existing_record_is_never_replaced_without_force(
    sabotage_set, sabotage_agents, tmp_path
):
    agent = sabotage_agents["jax_agent.py"]
    out = tmp_path / "r.json"
    assert _evaluate(agent, sabotage_set, out, "--episodes", "4").exit_code == EXIT_OK
    before = out.read_bytes()
    stamp = out.stat().st_mtime_ns
    again = _evaluate(agent, sabotage_set, out, "--episodes", "1")
    assert again.exit_code == EXIT_USAGE, again.output
    assert f"--out holds a result already: {out} (mean " in again.output
    assert "4 episodes" in again.output and "--force" in again.output
    assert "nothing was run or written" in again.output
    assert out.read_bytes() == before and out.stat().st_mtime_ns == stamp
    assert "loaded" not in again.output  # it stopped before the agent was loaded
    forced = _evaluate(agent, sabotage_set, out, "--episodes", "1", "--force")
    assert forced.exit_code == EXIT_OK, forced.output
    assert load_json(out)["payload"]["protocol"]["episodes"] == 1


def test_the_default_out_is_protected_too(sabotage_set, sabotage_agents, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    agent = sabotage_agents["plain_agent.py"]
    args = ["evaluate", str(agent), "--task", "sabotage", "--teammates", str(sabotage_set),
            "--episodes", "2", "--reps", "200", "--no-progress", "--no-plot"]  # fmt: skip
    assert _run(*args).exit_code == EXIT_OK
    default = Path("results") / "plain_agent" / "sabotage-v1.json"
    assert default.is_file()
    again = _run(*args)
    assert again.exit_code == EXIT_USAGE
    assert f"the default --out holds a result already: {default}" in again.output


def test_one_episode_is_flagged_as_no_ci_in_the_table_and_the_record(
    sabotage_set, sabotage_agents, tmp_path
):
    out = tmp_path / "one.json"
    result = _evaluate(sabotage_agents["jax_agent.py"], sabotage_set, out, "--episodes", "1")
    assert result.exit_code == EXIT_OK, result.output
    assert "normalised [95% CI] (1 episode per member: no CI)" in result.output
    assert result.output.count("<- not a CI") == 4
    assert "warning: the CIs come from 1 episode per member" in result.output
    assert "aggregate over 2 members x 1 episode (each the mean of 2 seatings)" in result.output
    payload = load_json(out)["payload"]
    assert payload["ci_warning"].startswith("the CIs come from 1 episode per member")
    lo, hi = payload["aggregates"]["mean"]["ci"]
    assert lo == hi  # the zero-width interval the flag is about
    two = tmp_path / "two.json"
    result = _evaluate(sabotage_agents["jax_agent.py"], sabotage_set, two)
    assert "not a CI" not in result.output and "ci_warning" not in load_json(two)["payload"]


def test_runs_per_member_counts_episodes_or_seeds():
    one_file = {"agent": {"file": "a.py"}, "protocol": {"episodes": 1}}
    assert rec.runs_per_member(one_file) == 1 and rec.ci_warning(one_file)
    assert rec.ci_warning({"agent": {"file": "a.py"}, "protocol": {"episodes": 2}}) is None
    seeds = {"agent": {"files": [{}, {}]}, "protocol": {"runs": "seeds", "episodes": 1}}
    assert rec.runs_per_member(seeds) == 2 and rec.ci_warning(seeds) is None
    assert rec.count(1, "member") == "1 member" and rec.count(3, "episode") == "3 episodes"


def test_the_random_floor_is_printed_under_the_aggregates(sabotage_set, sabotage_agents, tmp_path):
    result = _evaluate(sabotage_agents["jax_agent.py"], sabotage_set, tmp_path / "r.json")
    lines = result.output.splitlines()
    worst = next(i for i, line in enumerate(lines) if line.lstrip().startswith("worst case"))
    # a set of one's own: no shipped measurement, and the line says how to measure it
    assert lines[worst + 1].startswith("random-agent floor: not measured for sabotage-v1/test")
    measure = "aht-bench evaluate agents/examples/random_agent.py --task sabotage-v1"
    assert measure in lines[worst + 1]


def test_every_published_set_has_a_measured_floor_on_its_manifest():
    table = json.loads(floor.FLOOR_FILE.read_text())
    assert table["episodes"] == 64 and table["measured_by"] == "benchmarks/random_floor.py"
    from aht_bench.evaluation.pins import PINNED

    for key in PINNED:
        task_id, version = key.split("/", 1)
        _, digest = sets.read_manifest(sets.heldout_root() / task_id / version)
        entry = floor.random_floor(key, digest)
        assert entry is not None, key
        for name in ("mean", "iqm", "median", "worst_case"):
            lo, hi = entry[name]["ci"]
            assert 0.0 <= lo <= entry[name]["value"] <= hi, (key, name)
    assert floor.random_floor("lbf-v1/v2", "0" * 64) is None  # another manifest: not this floor
    record = {"payload": {"task_id": "overcooked-forced_coord-v2", "teammate_set": {
        "id": "overcooked-forced_coord-v2/v2", "version": "v2",
        "manifest_sha256": sets.read_manifest(
            sets.heldout_root() / "overcooked-forced_coord-v2" / "v2")[1]}}}  # fmt: skip
    line = floor.floor_line(record)
    assert line.startswith("random-agent floor on overcooked-forced_coord-v2/v2: mean 0.")
    assert "IQM" in line and "64 episodes" in line


def test_a_broken_agent_file_fails_before_the_set_is_loaded_or_the_task_built(monkeypatch):
    # issue 53: the error came after the teammates were loaded and the task compiled (15-27 s)
    def never(*_args, **_kwargs):
        raise AssertionError("the evaluation started before the agent file was checked")

    monkeypatch.setattr(sets, "load_set", never)
    monkeypatch.setattr("aht_bench.envs.compiled.compiled_task", never)
    for name, needle in (
        ("syntax_error.py", "syntax error at line 4"),
        ("import_error.py", "No module named 'aht_bench_no_such_module'"),
        ("no_act.py", "defines no act(obs)"),
        ("wrong_signature.py", "wrong signature act(obs, key)"),
    ):
        result = CliRunner().invoke(
            main, ["evaluate", str(CORPUS / name), "--task", "lbf", "--episodes", "1"]
        )
        assert result.exit_code == EXIT_AGENT_LOAD, (name, result.output)
        assert needle in result.stderr, (name, result.stderr)
        result = CliRunner().invoke(main, ["check-agent", str(CORPUS / name), "--task", "lbf"])
        assert result.exit_code == EXIT_AGENT_LOAD, (name, result.output)


def test_json_on_evaluate_compare_check_agent_and_version(sabotage_set, sabotage_agents, tmp_path):
    outs = []
    for name in ("jax_agent.py", "plain_agent.py"):
        out = tmp_path / f"{name}.json"
        result = _evaluate(sabotage_agents[name], sabotage_set, out, "--json")
        assert result.exit_code == EXIT_OK, result.output
        (row,) = json.loads(result.stdout)  # stdout carries the JSON alone
        assert row["out"] == str(out) and row["record"] == load_json(out)
        assert row["random_floor"] is None and "normalised" in result.stderr
        outs.append(str(out))
    result = _run("compare", *outs, "--reps", "200", "--json")
    (group,) = json.loads(result.stdout)
    assert [r["label"] for r in group["results"]] == ["jax_agent.py", "plain_agent.py"]
    assert 0.0 <= group["improvement"][0]["value"] <= 1.0 and group["plots"] == []
    assert not list(tmp_path.glob("*.png"))  # compare plots only when given --out
    result = _run("compare", *outs, "--reps", "200", "--out", str(tmp_path / "c.png"))
    assert (tmp_path / "c.png").is_file() and f"wrote {tmp_path / 'c.png'}" in result.output
    result = _run("check-agent", str(sabotage_agents["plain_agent.py"]), "--task", "sabotage",
                  "--episodes", "2", "--json")  # fmt: skip
    checked = json.loads(result.stdout)
    assert checked["ok"] is True and len(checked["returns"]) == 2
    assert checked["task_id"] == "sabotage-v1"
    version = json.loads(_run("--version", "--json").stdout)
    assert version["published_sets"]["lbf-v1"] == ["v1", "v2"]
    assert version["version"] and version["heldout"]
