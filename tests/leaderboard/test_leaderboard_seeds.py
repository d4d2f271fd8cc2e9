"""The leaderboard with a multi-seed record (one agent file per training seed, CIs over seeds):
`submit` takes it and checks every seed's file; each tampering is rejected with its message;
`render` shows the seed count; `verify` re-runs every seed and names one that disagrees."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from lb_helpers import (
    RECORD,
    REPO,
    SEED_FILES,
    SEED_TAMPERS,
    SEEDS_RECORD,
    ci_check,
    load_record,
    load_seeds_record,
    rescore_seeds,
    run,
    submit_cli,
    tamper_seeds,
    write_json,
)

from aht_bench.cli import main
from aht_bench.evaluation import sets
from aht_bench.evaluation.record import returns_of
from aht_bench.leaderboard import Rejected, board, submit
from aht_bench.leaderboard.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from aht_bench.leaderboard.entries import entry_slug, make_entry, write_entry

ENTRY = "random-seeds--lbf-v1--v1"


def _eval_helpers():
    """tests/evaluation/eval_helpers.py (the tiny sabotage set), by path: that folder is not
    on sys.path when only these tests run."""
    here = Path(__file__).resolve().parents[1] / "evaluation" / "eval_helpers.py"
    spec = importlib.util.spec_from_file_location("lb_eval_helpers", here)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


eval_helpers = _eval_helpers()


def _submit(root: Path, result: Path, *extra: str):
    return submit_cli(root, result, "random seeds", *extra)


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_the_data_record_is_three_seeds_of_the_one_file_protocol():
    """Seed 0 draws from the same generator as the one-file RECORD's random_agent.py: the same
    protocol gives it the same returns."""
    seeds, one = load_seeds_record()["payload"], load_record()["payload"]
    assert seeds["protocol"]["runs"] == "seeds"
    assert [f["file"] for f in seeds["agent"]["files"]] == [Path(f).name for f in SEED_FILES]
    for a, b in zip(seeds["members"], one["members"], strict=True):
        assert a["returns_per_seed"][0] == b["returns"]


def test_submit_takes_a_multi_seed_record_and_checks_every_seeds_file(tmp_path):
    result = _submit(tmp_path, SEEDS_RECORD)
    assert result.exit_code == EXIT_OK, result.output
    for i, path in enumerate(SEED_FILES):
        assert f"ok: seed {i}'s agent file {path}: sha256 matches" in result.output
    assert "over 3 seeds" in result.output
    path = tmp_path / "entries" / f"{ENTRY}.json"
    entry = json.loads(path.read_text())
    assert entry["leaderboard"] == {
        "name": "random seeds",
        "description": "uniform random",
        "agent_paths": SEED_FILES,  # found from the record's meta.agent_paths
    }
    assert {k: v for k, v in entry.items() if k != "leaderboard"} == load_seeds_record()
    assert ci_check(path).ok


@pytest.mark.parametrize("how", sorted(SEED_TAMPERS))
def test_submit_rejects_each_tampering_of_a_multi_seed_record(tmp_path, how):
    kind, message = SEED_TAMPERS[how]
    bad = write_json(tmp_path / "in" / "result.json", tamper_seeds(load_seeds_record(), how))
    root = tmp_path / "board"
    result = _submit(root, bad)
    assert result.exit_code == EXIT_FAILED, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, errors  # only the targeted check fires (the payload was rehashed)
    assert re.search(message, errors[0]), errors[0]
    assert not root.exists() or _files(root) == []
    with pytest.raises(Rejected) as caught:
        submit(bad, "x", "y", root=root)
    assert caught.value.report.kinds() == [kind]


def test_the_ci_check_rejects_a_tampered_multi_seed_entry(tmp_path):
    assert _submit(tmp_path, SEEDS_RECORD).exit_code == EXIT_OK
    path = tmp_path / "entries" / f"{ENTRY}.json"
    write_json(path, tamper_seeds(json.loads(path.read_text()), "seed_returns"))
    assert ci_check(path).report.kinds() == ["score"]
    entry = json.loads(path.read_text())
    entry["leaderboard"]["agent_paths"] = SEED_FILES[:2]
    write_json(path, entry)
    result = run(tmp_path, "verify", "--all", "--no-rerun")
    assert result.exit_code == EXIT_FAILED
    assert "leaderboard.agent_paths should be 3 items, one per seed" in result.stderr


def test_schema_errors_of_a_multi_seed_record_name_the_seed(tmp_path):
    record = load_seeds_record()
    p = record["payload"]
    p["members"][1]["returns_per_seed"][2]["1"] = [0.0]
    p["members"][0]["normalized_per_seed"].pop()
    bad = write_json(tmp_path / "result.json", record)
    result = _submit(tmp_path / "board", bad)
    assert result.exit_code == EXIT_FAILED
    assert (
        "payload.members[1].returns_per_seed[2]['1'] should be 2 numbers (protocol.episodes)"
        in result.stderr
    )
    assert "payload.members[0].normalized_per_seed should be 3 numbers, one per seed" in (
        result.stderr
    )

    twice = load_seeds_record()
    twice["payload"]["agent"]["files"][2] = twice["payload"]["agent"]["files"][0]
    result = _submit(tmp_path / "board", write_json(tmp_path / "twice.json", twice))
    assert result.exit_code == EXIT_FAILED
    assert "payload.agent.files[2].sha256 repeats files[0]'s" in result.stderr

    runs = load_seeds_record()
    runs["payload"]["protocol"]["runs"] = "episodes"
    result = _submit(tmp_path / "board", write_json(tmp_path / "runs.json", runs))
    assert result.exit_code == EXIT_FAILED
    assert "payload.protocol.runs should be 'seeds'" in result.stderr


def test_agent_takes_one_file_per_seed(tmp_path):
    outside = []
    for path in SEED_FILES:
        outside.append(tmp_path / Path(path).name)
        shutil.copy(REPO / path, outside[-1])
    agents = [a for f in outside for a in ("--agent", str(f))]
    result = _submit(tmp_path / "board", SEEDS_RECORD, *agents)
    assert result.exit_code == EXIT_OK, result.output
    assert "seed 1's agent file random_seed1.py is not in this repository" in result.output
    result = _submit(tmp_path / "other", SEEDS_RECORD, *agents[:2])
    assert result.exit_code == EXIT_USAGE
    assert "pass --agent once per seed, in the record's seed order (got 1)" in result.output
    swapped = [*agents[2:4], *agents[0:2], *agents[4:]]  # seeds 0 and 1 in the wrong order
    result = _submit(tmp_path / "other", SEEDS_RECORD, *swapped)
    assert result.exit_code == EXIT_FAILED
    assert re.search(r"random_seed1.py \(sha256 \w{16}\.\.\.\) is not seed 0's file", result.stderr)
    assert re.search(r"random_seed0.py \(sha256 \w{16}\.\.\.\) is not seed 1's file", result.stderr)


def test_render_shows_the_seed_count(tmp_path):
    for name, record, paths in (
        ("random (example)", load_record(), "agents/examples/random_agent.py"),
        ("random seeds", load_seeds_record(), SEED_FILES),
    ):
        entry = make_entry(record, name, "x", paths)
        write_entry(tmp_path / "entries" / f"{entry_slug(name, 'lbf-v1', 'v1')}.json", entry)
    assert run(tmp_path, "render").exit_code == 0
    readme = (tmp_path / "README.md").read_text()
    head = next(line for line in readme.splitlines() if line.startswith("| # |"))
    rows = {
        line.split(" | ")[1].split(" (`")[0]: line.split(" | ")
        for line in readme.splitlines()
        if re.match(r"\| (\d+|-) \|", line)
    }
    column = head.split(" | ").index("seeds")
    assert rows["random seeds"][column] == "3" and rows["random (example)"][column] == "1"
    assert (
        "random_seed0.py, random_seed1.py, random_seed2.py (sha256 "
        in (rows["random seeds"][column + 3])  # seeds, episodes, checked, agent
    )
    assert "CIs: over the training seeds for an entry of several seeds" in readme
    page = (tmp_path / "index.html").read_text()
    assert '"seeds":3' in page and '"seeds":1' in page
    assert "3 seeds (CIs over seeds), 9 teammates" in page


def test_compare_reads_multi_seed_entries(tmp_path):
    assert _submit(tmp_path, SEEDS_RECORD).exit_code == EXIT_OK
    entry = tmp_path / "entries" / f"{ENTRY}.json"
    other = rescore_seeds(load_seeds_record(), returns_of(load_seeds_record()["payload"]) * 0.5)
    half = write_json(tmp_path / "half.json", other)
    result = CliRunner().invoke(main, ["compare", str(entry), str(half), str(RECORD), "--no-plot"])
    assert result.exit_code == 0, result.output
    assert "probability of improvement P(X > Y) [95% CI]:" in result.output
    assert re.search(r"P\(random_seed0.py \(3 seeds\) \(\S+\) > random_seed0.py", result.output)
    assert "not computed: one record's runs are training seeds, the other's episodes" in (
        result.output
    )


# --- verify: a re-run of every seed, on a tiny shipped set ---------------------------------------

SEEDS_OF_PLAIN = [eval_helpers.PLAIN_AGENT.replace("% 2", f"% {m}") for m in (2, 3, 5)]


@pytest.fixture
def sabotage_board(tmp_path, monkeypatch):
    """A repository with three seed files of a plain sabotage agent and a shipped heldout set
    `test` of sabotage-v1, the files' multi-seed record submitted as the entry "plain"."""
    heldout = tmp_path / "heldout"
    eval_helpers.write_sabotage_set(heldout / "sabotage-v1" / "test")
    monkeypatch.setenv(sets.HELDOUT_ENV, str(heldout))  # the re-run's child inherits it
    repo = tmp_path / "repo"
    (repo / "agents").mkdir(parents=True)
    agents = []
    for i, text in enumerate(SEEDS_OF_PLAIN):
        agents.append(repo / "agents" / f"seed{i}.py")
        agents[-1].write_text(text)
    out = tmp_path / "result.json"
    result = CliRunner().invoke(main, [
        "evaluate", *map(str, agents), "--task", "sabotage", "--teammates", "test",
        "--episodes", "4", "--reps", "200", "--out", str(out), "--no-plot", "--no-progress",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    root = tmp_path / "board"
    path, _, report = board.submit(out, "plain", "plain seeds", root=root, repo=repo)
    assert "seed 2's agent file agents/seed2.py: sha256 matches" in report.passed
    monkeypatch.setattr(board, "repo_root", lambda: repo)  # for `aht-bench leaderboard verify`
    return path, root


def test_verify_reruns_every_seed_and_names_one_that_disagrees(sabotage_board):
    path, root = sabotage_board
    result = run(root, "verify", path.stem, "--episodes", "2")
    assert result.exit_code == EXIT_OK, result.output
    assert "re-running 3 seeds (agents/seed0.py, agents/seed1.py, agents/seed2.py)" in (
        result.output
    )
    assert "re-run: 2 episodes per teammate and seating, salt " in result.output
    assert "ok: the record's claim is reproduced (statistical): seed0.py: record " in (
        result.output
    )
    assert "seed1.py: record " in result.output and "seed2.py: record " in result.output

    entry = json.loads(path.read_text())
    returns = returns_of(entry["payload"])
    returns[1] = 5.0  # seed 1's returns forged to the upper bound, every score consistent
    write_entry(path, rescore_seeds(entry, returns))
    assert ci_check(path).ok  # the checks cannot tell; the re-run can
    result = run(root, "verify", path.stem, "--episodes", "2")
    assert result.exit_code == EXIT_FAILED, result.output
    assert "error: the record's claim is not reproduced (statistical)" in result.stderr
    assert re.search(r"seed1\.py: record [^;]*: OUTSIDE\)", result.stderr), result.stderr
    assert result.stderr.count("OUTSIDE") == 1  # seeds 0 and 2 agree
