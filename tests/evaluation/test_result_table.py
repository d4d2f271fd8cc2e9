"""What `aht-bench evaluate` shows per member: the mean base return per seating next to the
overall mean and the score, and a flag naming every member whose mean score exceeds 1 (its
upper bound is too low). Records are built by hand from known per-episode returns; the
expected numbers are worked out in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aht_bench.evaluation import record as rec
from aht_bench.evaluation import scores
from aht_bench.evaluation.plots import plot_result

REPO = Path(__file__).resolve().parents[2]
NAMES = ("one_sided", "over_bound", "both_sides")


def _print_result(record: dict) -> None:
    """What `aht-bench evaluate` prints for `record`."""
    print("\n".join(rec.result_lines(record)))


SEATINGS = ((0,), (1,))
LOWER = np.zeros(3)
UPPER = np.array([60.0, 10.0, 40.0])
# (members, seatings, episodes): seat 0 first, then seat 1
RETURNS = np.array(
    [
        [[50.0, 56.0, 54.0, 52.0], [0.0, 0.0, 0.0, 0.0]],  # learned only seat 0
        [[12.0, 10.0, 14.0, 12.0], [11.0, 13.0, 9.0, 11.0]],  # beats its upper bound 10
        [[20.0, 24.0, 22.0, 22.0], [18.0, 20.0, 22.0, 20.0]],
    ]
)
# By hand, per member: seat 0 mean, seat 1 mean, overall mean, score = mean / upper
#   one_sided:  (50+56+54+52)/4 = 53,  0,                      26.5,  26.5/60 = 0.4417
#   over_bound: (12+10+14+12)/4 = 12,  (11+13+9+11)/4 = 11,    11.5,  11.5/10 = 1.15
#   both_sides: (20+24+22+22)/4 = 22,  (18+20+22+20)/4 = 20,   21,    21/40   = 0.525
PER_SEAT = [[53.0, 0.0], [12.0, 11.0], [22.0, 20.0]]
MEANS = [26.5, 11.5, 21.0]
SCORES = [26.5 / 60, 1.15, 0.525]


def _payload(returns: np.ndarray, upper: np.ndarray) -> dict:
    """A one-file payload scored the evaluator's way (`evaluate.build_record`)."""
    normalized = scores.normalize(returns, LOWER, upper)
    est = scores.interval_estimates(scores.score_matrix(normalized), reps=200, seed=0)
    return {
        "task_id": "overcooked-forced_coord-v1",
        "agent": {"file": "my_agent.py", "sha256": "0" * 64, "kind": "act", "runner": "python"},
        "teammate_set": {"id": "test/v1", "version": "v1"},
        "protocol": {
            "episodes": returns.shape[-1],
            "seed": 0,
            "seatings": [list(s) for s in SEATINGS],
            "bootstrap": {"reps": 200, "confidence": 0.95, "seed": 0, "method": "percentile"},
        },
        "members": rec.member_entries(
            NAMES, LOWER, upper, returns, normalized, est["members"], SEATINGS
        ),
        "aggregates": est["aggregates"],
    }


def _seeds_payload(returns: np.ndarray) -> dict:
    """A multi-seed payload of `returns` (seeds, members, seatings, episodes)."""
    normalized = np.stack([scores.normalize(r, LOWER, UPPER) for r in returns])
    matrix = scores.seed_score_matrix(normalized)
    est = scores.interval_estimates(matrix, reps=200, seed=0)
    payload = _payload(returns[0], UPPER)
    payload["agent"] = {
        "files": [{"file": f"seed{i}.py", "sha256": str(i) * 64, "kind": "act"} for i in (0, 1)],
        "runner": "python",
    }
    payload["protocol"]["runs"] = rec.RUNS_SEEDS
    payload["members"] = rec.seed_member_entries(
        NAMES, LOWER, UPPER, returns, normalized, matrix, est["members"], SEATINGS
    )
    payload["aggregates"] = est["aggregates"]
    return payload


def _record(payload: dict) -> dict:
    return rec.make_record(payload, {})


def _rows(output: str) -> dict[str, list[str]]:
    """The table's row of each member, split on whitespace."""
    return {
        line.split()[0]: line.split()
        for line in output.splitlines()
        if line.split() and line.split()[0] in NAMES
    }


def test_mean_returns_per_seating_are_computed_from_the_episode_returns():
    payload = _payload(RETURNS, UPPER)
    np.testing.assert_allclose(rec.mean_returns_per_seating(payload), PER_SEAT)
    for m, mean, score in zip(payload["members"], MEANS, SCORES, strict=True):
        assert m["mean_return"] == pytest.approx(mean)
        assert m["normalized"]["value"] == pytest.approx(score)
    assert [rec.seating_label(s) for s in ([0], [1], [0, 1])] == ["seat 0", "seat 1", "seats 0,1"]


def test_mean_returns_per_seating_of_a_multi_seed_record_pool_the_seeds():
    # seed 1 plays every return + 2, so each per-seat mean is the one-file mean + 1
    payload = _seeds_payload(np.stack([RETURNS, RETURNS + 2.0]))
    np.testing.assert_allclose(rec.mean_returns_per_seating(payload), np.add(PER_SEAT, 1.0))


def test_the_table_shows_each_seat_next_to_the_mean_and_the_score(capsys):
    _print_result(_record(_payload(RETURNS, UPPER)))
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("member"))
    assert "mean return  ego seat 0  ego seat 1  normalised [95% CI]" in header
    rows = _rows(out)
    # name, lower, upper, mean return, ego seat 0, ego seat 1, score, [ci lo, ci hi] ...
    assert rows["one_sided"][3:7] == ["26.5", "53", "0", "0.442"]
    assert rows["over_bound"][3:7] == ["11.5", "12", "11", "1.150"]
    assert rows["both_sides"][3:7] == ["21", "22", "20", "0.525"]


def test_a_score_above_1_is_flagged_naming_the_member_and_its_bound(capsys):
    _print_result(_record(_payload(RETURNS, UPPER)))
    out = capsys.readouterr().out
    rows = _rows(out)
    assert " ".join(rows["over_bound"]).endswith("> 1: bound too low")
    assert "bound too low" not in " ".join(rows["one_sided"] + rows["both_sides"])
    [warning] = [line for line in out.splitlines() if line.startswith("warning:")]
    assert "mean score 1.150" in warning and "against over_bound" in warning
    assert "upper bound 10" in warning and "the bound is too low" in warning


def test_no_flag_when_every_score_is_at_most_1(capsys):
    upper = np.array([60.0, 12.0, 40.0])  # over_bound: 11.5 / 12 = 0.958
    payload = _payload(RETURNS, upper)
    assert rec.members_above_one(payload) == []
    _print_result(_record(payload))
    out = capsys.readouterr().out
    assert "warning:" not in out and "bound too low" not in out


def test_a_multi_seed_table_shows_the_seats_and_the_flag(capsys):
    _print_result(_record(_seeds_payload(np.stack([RETURNS, RETURNS + 2.0]))))
    out = capsys.readouterr().out
    assert "normalised [95% CI over 2 seeds]" in out
    # one_sided: seat 0 (53 + 55) / 2 = 54, seat 1 (0 + 2) / 2 = 1; mean 27.5
    assert _rows(out)["one_sided"][3:6] == ["27.5", "54", "1"]
    # over_bound: mean 12.5 / 10 = 1.25 (the mean of the seeds' 1.15 and 1.35)
    [warning] = [line for line in out.splitlines() if line.startswith("warning:")]
    assert "mean score 1.250" in warning and "against over_bound" in warning


def test_the_plot_draws_a_flagged_record(tmp_path):
    path = tmp_path / "result.png"
    plot_result(_record(_payload(RETURNS, UPPER)), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_committed_leaderboard_records_give_their_stored_per_seating_means():
    """The display reads the per-episode returns of every published record (one-file and
    multi-seed) and agrees with the per-seating means they store."""
    paths = sorted((REPO / "leaderboard" / "entries").glob("*.json"))
    assert paths
    for path in paths:
        payload = json.loads(path.read_text())["payload"]
        stored = [m["mean_return_per_seating"] for m in payload["members"]]
        np.testing.assert_allclose(rec.mean_returns_per_seating(payload), stored, err_msg=path.name)
