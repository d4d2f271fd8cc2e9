"""`aht-bench experiment diagnose`: a run folder's ego curve (training return and the score of
its kept egos against a development set), its generation curves and the return per seat, with
the still-rising rule; the run folder here is written by hand (metrics lines, records made from
recorded evaluations with chosen returns), so every number is known."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from aht_bench.cli import main
from aht_bench.evaluation import scores
from aht_bench.evaluation.record import (
    make_record,
    mean_returns_per_seating,
    score_matrix_of,
    write_record,
)
from aht_bench.experiments import diagnostics

TESTS = Path(__file__).parents[1]
ONE_FILE = TESTS / "leaderboard" / "data" / "random_agent-lbf-2ep.json"
MULTI_SEED = TESTS.parent / "agents" / "rotate" / "lbf" / "result-v1.json"


def test_the_rising_rule():
    assert diagnostics.rising([0.1, 0.2]) is None  # too short
    assert diagnostics.rising([0.1, 0.2, 0.3, 0.4]) is True  # 0.4 > 0.3 * 1.05
    assert diagnostics.rising([0.1, 0.3, 0.3, 0.31]) is False  # 0.31 < 0.3 * 1.05
    assert diagnostics.rising([0.5, 0.4, math.nan, 0.3]) is False


def _dev_record(folder: Path, score: float) -> None:
    """A development-set record whose every episode scores `score` with every member."""
    template = json.loads(ONE_FILE.read_text())
    payload = copy.deepcopy(template["payload"])
    for member in payload["members"]:
        value = score * member["upper"]
        member["returns"] = {k: [value] * len(r) for k, r in member["returns"].items()}
    matrix = score_matrix_of({"payload": payload})  # (episodes, members), all `score`
    payload["aggregates"] = scores.interval_estimates(matrix, reps=50)["aggregates"]
    folder.mkdir(parents=True)
    write_record(folder / diagnostics.DEV_RECORD, make_record(payload, {}))


@pytest.fixture
def run(tmp_path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    spec = {"algorithm": "rotate", "task_id": "lbf-v1", "preset": "medium", "num_seeds": 3}
    (run / "run.json").write_text(json.dumps({"spec": spec}))
    rows = [
        {"iteration": i, "env_steps": 1000 * i, "time_s": i, "sp_return": [0.1 * i, 0.3 * i],
         "xp_return": [0.0, 0.0], "regret": [1.0, 1.0], "ego_return": [0.2 * i, float("nan")]}
        for i in (1, 2, 3, 4)
    ]  # fmt: skip
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for i, score in ((1, 0.1), (2, 0.2), (3, 0.3), (4, 0.5)):
        _dev_record(run / "policies" / f"iteration-{i:06d}", score)
    return run


def test_diagnose_reads_the_curves_the_kept_scores_and_the_return_per_seat(run):
    found = diagnostics.diagnose(run, record=MULTI_SEED)
    assert found.iterations == [1, 2, 3, 4] and found.env_steps == [1000, 2000, 3000, 4000]
    np.testing.assert_allclose(found.ego_return, [0.2, 0.4, 0.6, 0.8])  # the NaN seed dropped
    assert list(found.generation) == ["sp_return", "xp_return", "regret"]
    np.testing.assert_allclose(found.generation["sp_return"]["values"], [0.2, 0.4, 0.6, 0.8])
    assert [p["iteration"] for p in found.dev] == [1, 2, 3, 4]
    np.testing.assert_allclose([p["score"] for p in found.dev], [0.1, 0.2, 0.3, 0.5], rtol=1e-9)
    assert found.dev[0]["set_id"] and found.dev[3]["env_steps"] == 4000
    assert found.still_rising is True and found.rising_from == "development set"
    record = json.loads(MULTI_SEED.read_text())
    seat = found.per_seat
    assert seat is not None and seat["seatings"] == [[0], [1]]
    assert seat["members"] == [m["name"] for m in record["payload"]["members"]]
    np.testing.assert_allclose(
        seat["returns"], mean_returns_per_seating(record["payload"]), atol=1e-6
    )


def test_the_command_writes_the_figure_and_json_and_refuses_a_run_without_iterations(run, tmp_path):
    out = tmp_path / "diag"
    result = CliRunner().invoke(
        main, ["experiment", "diagnose", str(run), "--record", str(MULTI_SEED), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "still rising at the end (development set)" in result.output
    assert (out / "diagnostics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((out / "diagnostics.json").read_text())
    assert data["still_rising"] is True and data["ego_return"][0] == pytest.approx(0.2)
    ippo = tmp_path / "ippo"
    ippo.mkdir()
    (ippo / "run.json").write_text(json.dumps({"spec": {"algorithm": "ippo"}}))
    result = CliRunner().invoke(main, ["experiment", "diagnose", str(ippo)])
    assert result.exit_code == 2 and "no iterations to diagnose" in result.output
    result = CliRunner().invoke(main, ["experiment", "diagnose", str(tmp_path)])
    assert result.exit_code == 2 and "holds no run" in result.output
