"""`aht-bench sweep report`: the table and figures of a sweep folder from its runs' records.

The records here are real result records (the format `aht-bench evaluate` writes, hashed) made
from a recorded evaluation with chosen returns, so each cell's expected numbers are known by
hand; the slow sweep test in test_sweeps.py reports a sweep that really trained.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from aht_bench import sweeps
from aht_bench.cli import main
from aht_bench.evaluation.record import make_record, write_record
from aht_bench.sweeps import report

TEMPLATE = Path(__file__).parents[1] / "leaderboard" / "data" / "random_agent-lbf-2ep.json"
SPEC = {
    "name": "lam",
    "methods": ["fcp", "rotate"],
    "tasks": ["lbf"],
    "seeds": 2,
    "preset": "quick",
    "episodes": 2,
    "grid": {"rotate": {"competence_weight_xp": [0, 2], "competence_weight_sp": [0, 1]}},
}


def _score(run: sweeps.SweepRun, member: int) -> float:
    """The normalised score this test gives `run` with `member` (distinct per run and seed)."""
    variant = sum(ord(c) for c in run.variant) % 7
    return 0.1 * (1 + variant % 5) + 0.05 * run.seed + 0.02 * member


def _write_run(root: Path, run: sweeps.SweepRun, template: dict, **change) -> None:
    """The run's ego file and a record that scores it with `_score` (every episode and
    seating the same return); `change` edits the payload (task_id=, manifest=)."""
    folder = root / run.name
    ego = folder / "policies" / "final" / "seed0-ego.safetensors"
    ego.parent.mkdir(parents=True)
    ego.write_bytes(f"ego of {run.name}".encode())
    payload = copy.deepcopy(template["payload"])
    payload["task_id"] = change.get("task_id", run.task_id)
    payload["agent"]["sha256"] = hashlib.sha256(ego.read_bytes()).hexdigest()
    payload["teammate_set"]["manifest_sha256"] = change.get(
        "manifest", payload["teammate_set"]["manifest_sha256"]
    )
    for m, member in enumerate(payload["members"]):
        value = _score(run, m) * member["upper"]
        member["returns"] = {seats: [value] * len(r) for seats, r in member["returns"].items()}
    write_record(folder / sweeps.RECORD, make_record(payload, {}))


@pytest.fixture(scope="module")
def grid() -> sweeps.Sweep:
    return sweeps.parse(copy.deepcopy(SPEC), "lam.toml")


@pytest.fixture
def template() -> dict:
    return json.loads(TEMPLATE.read_text())


@pytest.fixture
def folder(tmp_path, grid, template) -> Path:
    """A sweep folder whose runs all have a record, except rotate's last variant's seed 1."""
    root = tmp_path / "lam"
    sweeps.start_folder(root, grid)
    for run in grid.runs[:-1]:
        _write_run(root, run, template)
    return root


def _members(template: dict) -> int:
    return len(template["payload"]["members"])


def test_each_cell_is_the_mean_over_members_of_the_seed_means_with_a_bootstrap_ci(
    folder, grid, template
):
    made = report.build_report(folder, reps=500)
    est = report.estimates(made)
    assert made.missing == (grid.runs[-1].name,) and made.runs == len(grid.runs)
    assert made.labels() == [
        "fcp",
        *(
            f"rotate [competence_weight_xp={x},competence_weight_sp={s}]"
            for x in (0, 2)
            for s in (0, 1)
        ),
    ]
    members = _members(template)
    uppers = np.array([m["upper"] for m in template["payload"]["members"]])
    for label in made.labels():
        cell = made.cell(label, "lbf-v1")
        assert cell is not None
        runs = [r for r in grid.runs if (r.method, r.variant) == (cell.method, cell.variant)]
        runs = [r for r in runs if r.name not in made.missing]
        assert cell.seeds == tuple(r.seed for r in runs) and len(runs) in (1, 2)
        by_hand = np.array([[_score(r, m) for m in range(members)] for r in runs])
        np.testing.assert_allclose(cell.normalized, by_hand, rtol=1e-12)
        np.testing.assert_allclose(cell.base_return, by_hand * uppers, rtol=1e-6)
        value = est[(label, "lbf-v1")]["normalized"]
        assert value["value"] == pytest.approx(by_hand.mean(), rel=1e-12)
        lo, hi = value["ci"]
        if len(runs) == 2:  # two seeds that differ: a CI of resampled seeds, within reach
            assert lo < value["value"] < hi
            assert lo >= by_hand.min(axis=0).mean() - 1e-12
            assert hi <= by_hand.max(axis=0).mean() + 1e-12
        else:  # one seed: nothing to resample
            assert lo == hi == pytest.approx(value["value"])
        base = est[(label, "lbf-v1")]["base_return"]["value"]
        assert base == pytest.approx((by_hand * uppers).mean(), rel=1e-6)


def test_the_report_writes_tables_figures_and_json_and_lists_missing_runs(folder, grid):
    made = report.build_report(folder, reps=200)
    est = report.estimates(made)
    written = report.write_report(made, est, folder / "report")
    names = sorted(p.name for p in written)
    assert names == ["comparison.png", "grid-rotate-lbf-v1.png", "report.json", "report.md"]
    for png in (p for p in written if p.suffix == ".png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    md = (folder / "report" / "report.md").read_text()
    assert "## Normalised return (BRProx)" in md and "## Base return" in md
    assert f"- {grid.runs[-1].name}" in md
    fcp = est[("fcp", "lbf-v1")]["normalized"]
    assert f"| fcp | {fcp['value']:.3f} [{fcp['ci'][0]:.3f}, {fcp['ci'][1]:.3f}] (2) |" in md
    data = json.loads((folder / "report" / "report.json").read_text())
    assert data["format"] == report.REPORT_FORMAT and len(data["cells"]) == 5
    rotate = [c for c in data["cells"] if c["method"] == "rotate"]
    assert [c["grid"] for c in rotate][1] == [
        ["competence_weight_xp", "0"],
        ["competence_weight_sp", "1"],
    ]
    assert rotate[-1]["seeds"] == [0]


def test_the_command_prints_the_table_and_refuses_a_folder_without_records(folder, tmp_path):
    result = CliRunner().invoke(
        main, ["sweep", "report", str(folder), "--reps", "200", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    assert "| fcp |" in result.output and "Runs without a record (1)" in result.output
    assert (tmp_path / "r" / "comparison.png").is_file()
    empty = tmp_path / "empty"
    sweeps.start_folder(empty, sweeps.parse(copy.deepcopy(SPEC), "lam.toml"))
    result = CliRunner().invoke(main, ["sweep", "report", str(empty)])
    assert result.exit_code == 1 and "none of the 10 runs" in result.output
    result = CliRunner().invoke(main, ["sweep", "report", str(tmp_path / "nowhere")])
    assert result.exit_code == 1 and "holds no sweep (no sweep.json)" in result.output
    assert not (empty / "report").exists()


def _rewrite(path: Path, edit) -> None:
    record = json.loads(path.read_text())
    edit(record["payload"])
    path.write_text(json.dumps(record))


def test_an_edited_record_is_refused_naming_the_run(folder, grid):
    run = grid.runs[0]
    _rewrite(folder / run.name / sweeps.RECORD, lambda p: p["members"][0].update(lower=-1.0))
    with pytest.raises(sweeps.SweepError, match=f"{run.name}: .*edited or corrupted"):
        report.build_report(folder)


def test_a_record_of_another_ego_or_task_is_refused(folder, grid, template, tmp_path):
    run = grid.runs[1]
    (folder / run.name / "policies" / "final" / "seed0-ego.safetensors").write_bytes(b"other")
    with pytest.raises(sweeps.SweepError, match="does not score the run's ego .*another sha256"):
        report.build_report(folder)
    root = tmp_path / "task"
    sweeps.start_folder(root, grid)
    _write_run(root, grid.runs[0], template, task_id="lbf-v2")
    with pytest.raises(sweeps.SweepError, match="scores task 'lbf-v2', not the run's 'lbf-v1'"):
        report.build_report(root)


def test_records_of_one_task_against_two_teammate_sets_are_refused(tmp_path, grid, template):
    root = tmp_path / "sets"
    sweeps.start_folder(root, grid)
    _write_run(root, grid.runs[0], template)
    _write_run(root, grid.runs[1], template, manifest="0" * 64)
    with pytest.raises(sweeps.SweepError, match="2 different teammate sets"):
        report.build_report(root)


def test_the_run_command_is_still_the_default_of_the_group():
    for args in (["sweep", "rq4", "--dry-run"], ["sweep", "--dry-run", "rq4"]):
        result = CliRunner().invoke(main, [*args, "--preset", "quick", "--seeds", "1"])
        assert result.exit_code == 0, result.output
        assert "rotate  lbf-v1" in result.output
    assert CliRunner().invoke(main, ["sweep", "run", "rq4", "--dry-run"]).exit_code == 0


MULTI_SEED = Path(__file__).parents[2] / "agents" / "rotate" / "lbf" / "result-v1.json"


def test_a_run_of_vmapped_seeds_gives_its_cell_one_row_per_seed(tmp_path):
    """A record that scores a run's three vmapped egos together (a multi-seed record, as
    `seeds_per_run = 3` runs leave) is three rows of its cell, seeds 0, 1, 2; the mixed preset
    variants of a spec with parts are their own cells."""
    spec = {
        "name": "refs",
        "methods": ["fcp"],
        "tasks": ["lbf"],
        "seeds": 3,
        "seeds_per_run": 3,
        "part": [{"preset": "quick"}, {"preset": "paper"}],
    }
    grid = sweeps.parse(spec, "refs.toml")
    template = json.loads(MULTI_SEED.read_text())
    root = tmp_path / "refs"
    sweeps.start_folder(root, grid)
    by_hand = {}
    for r, run in enumerate(grid.runs):
        final = root / run.name / "policies" / "final"
        final.mkdir(parents=True)
        payload = copy.deepcopy(template["payload"])
        payload["task_id"] = run.task_id
        score = np.array([[0.1 * (k + 1) + 0.01 * m + 0.3 * r for m in range(_members(template))]
                          for k in range(3)])  # fmt: skip
        by_hand[run.variant] = score
        for k, entry in enumerate(payload["agent"]["files"]):
            ego = final / f"seed{k}-ego.safetensors"
            ego.write_bytes(f"ego {k} of {run.name}".encode())
            entry["sha256"] = hashlib.sha256(ego.read_bytes()).hexdigest()
        for m, member in enumerate(payload["members"]):
            member["returns_per_seed"] = [
                {seats: [score[k, m] * member["upper"]] * len(ret) for seats, ret in seed.items()}
                for k, seed in enumerate(member["returns_per_seed"])
            ]
        write_record(root / run.name / sweeps.RECORD, make_record(payload, {}))
    made = report.build_report(root, reps=200)
    assert made.labels() == ["fcp [quick]", "fcp [paper]"]
    for variant, score in by_hand.items():
        cell = made.cell(f"fcp [{variant}]", "lbf-v1")
        assert cell is not None and cell.seeds == (0, 1, 2) and cell.grid == ()
        np.testing.assert_allclose(cell.normalized, score, rtol=1e-9)
    # one ego swapped under the record: refused, naming the file
    (root / grid.runs[0].name / "policies" / "final" / "seed2-ego.safetensors").write_bytes(b"x")
    with pytest.raises(sweeps.SweepError, match="seed2-ego.safetensors: another sha256"):
        report.build_report(root)
