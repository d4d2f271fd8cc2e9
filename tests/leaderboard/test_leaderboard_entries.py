"""The CI check of the committed leaderboard: every entry in leaderboard/entries/ passes the
checks (schema, heldout set, scores, hashes); entries whose agent file is in the repository
are re-run (all of them: slow; one reference entry per environment family on 2 episodes per
member and seating: fast, so that CI notices when a change to the code moves a committed
score); the committed README table and index.html are what render writes."""

from __future__ import annotations

import json

import pytest
from lb_helpers import (
    COMMITTED,
    REPO,
    ci_check,
    load_record,
    messages,
    rescore,
    returns_of,
    run,
    tamper,
)

from aht_bench.leaderboard import verify
from aht_bench.leaderboard.board import render_files
from aht_bench.leaderboard.entries import (
    entry_agent_paths,
    entry_paths,
    make_entry,
    read_json,
    write_entry,
)
from aht_bench.leaderboard.rerun import intervals_overlap

ENTRIES = entry_paths(COMMITTED)
RERUNNABLE = [
    p
    for p in ENTRIES
    if all(path and (REPO / path).is_file() for path in entry_agent_paths(read_json(p)))
]

# The CI sample of the re-runs: ROTATE's reference entry on one task of each environment family.
CI_RERUN = [p for p in RERUNNABLE if p.name.startswith("rotate-quick--lbf-")] + [
    p for p in RERUNNABLE if p.name.startswith("rotate-quick--overcooked-cramped-room-")
]


def test_the_leaderboard_has_entries():
    assert ENTRIES, f"no entries in {COMMITTED / 'entries'}"


@pytest.mark.parametrize("path", ENTRIES, ids=lambda p: p.stem)
def test_committed_entry_passes_the_checks(path):
    verification = ci_check(path)
    assert verification.ok, "\n".join(messages(verification))


def test_committed_pages_are_what_render_writes():
    stale = render_files(COMMITTED, check=True)
    assert not stale, f"{stale} differ from `aht-bench leaderboard render`: run it and commit"


@pytest.mark.slow
@pytest.mark.parametrize("path", RERUNNABLE, ids=lambda p: p.stem)
def test_committed_entry_reruns_in_agreement(path):
    # record=False: a test must not rewrite the committed ledger (leaderboard/verified.json:
    # each agreeing re-run stamped today's date on its line; a failing one would have dropped
    # the entry's line and replays); `aht-bench leaderboard verify` is what records
    verification = verify(path, record=False)
    assert verification.rerun is not None, verification.rerun_skipped or verification.rerun_error
    assert verification.ok, (verification.rerun_error, verification.rerun)


def test_the_ci_sample_covers_both_environment_families():
    assert len(CI_RERUN) == 2, f"expected ROTATE's LBF and cramped_room entries, got {CI_RERUN}"


@pytest.mark.parametrize("path", CI_RERUN, ids=lambda p: p.stem)
def test_a_reference_entry_reruns_to_the_recorded_returns(path):
    """On CPU with the pinned packages the re-run reproduces the record's returns exactly:
    a change to an environment, the policy code or the evaluator that moves them fails here.
    (Whether 2 episodes' CI overlaps the record's is not asserted: the statistical verdict
    needs verify's default sample, which the slow test above uses.) record=False: the committed
    ledger keeps its full re-run's line, not this 2-episode sample's."""
    verification = verify(path, episodes=2, record=False)
    rerun = verification.rerun
    assert rerun is not None, verification.rerun_skipped or verification.rerun_error
    assert verification.report.ok, "\n".join(messages(verification))
    assert rerun.compared > 0
    assert rerun.identical == rerun.compared, (
        f"{rerun.identical} of {rerun.compared} re-run returns equal the record's"
    )


@pytest.mark.parametrize("kind", ["heldout_version", "heldout_hash"])
def test_a_heldout_problem_names_the_set_to_evaluate_against(tmp_path, kind):
    """Overcooked ships two published sets (v1 and human-proxy-v1): the fix names the record's
    own version when it is shipped, else the default v1, never the alphabetically first."""
    (path,) = [p for p in ENTRIES if p.name == "rotate-quick--overcooked-cramped-room-v1--v1.json"]
    bad = tmp_path / path.name
    bad.write_text(json.dumps(tamper(read_json(path), kind)))
    (message,) = messages(ci_check(bad))
    assert message.endswith(
        "`aht-bench evaluate AGENT --task overcooked-cramped_room-v1 --teammates v1`"
    ), message


def test_ci_overlap_worked_by_hand():
    record = {"value": 0.5, "ci": [0.4, 0.6]}
    assert intervals_overlap(record, {"value": 0.65, "ci": [0.6, 0.7]})  # touching counts
    assert intervals_overlap(record, {"value": 0.3, "ci": [0.1, 0.45]})
    assert not intervals_overlap(record, {"value": 0.7, "ci": [0.61, 0.8]})
    assert not intervals_overlap(record, {"value": 0.2, "ci": [0.1, 0.39]})


@pytest.mark.slow
def test_a_consistent_forgery_fails_the_rerun(tmp_path):
    """Every return set to the member's upper bound, every score recomputed and the payload
    rehashed: the checks pass, the re-run of the random agent does not come close."""
    record = load_record()
    upper = [m["upper"] for m in record["payload"]["members"]]
    returns = returns_of(record) * 0 + [[[u]] for u in upper]
    forged = make_entry(
        rescore(record, returns), "forged", "perfect", "agents/examples/random_agent.py"
    )
    path = tmp_path / "entries" / "forged--lbf-v1--v1.json"
    write_entry(path, forged)
    assert ci_check(path).ok
    result = run(tmp_path, "verify", "forged--lbf-v1--v1", "--episodes", "2")
    assert result.exit_code == 1, result.output
    assert "is outside [1.000, 1.000], where 99% of the means of 2 of the record's" in (
        result.stderr
    )
