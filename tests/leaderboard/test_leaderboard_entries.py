"""The CI check of the committed leaderboard: every entry in leaderboard/entries/ passes the
checks (schema, heldout set, scores, hashes); entries whose agent file is in the repository
are re-run (all of them: slow; one reference entry per environment family on the record's
first 2 episodes per member and seating: fast, so that CI notices when a change to the code
moves a committed score); the committed README table and index.html are what render writes."""

from __future__ import annotations

import json
import subprocess

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

from aht_bench.evaluation.record import returns_of as returns_of_payload
from aht_bench.leaderboard import rerun, verify
from aht_bench.leaderboard.board import render_files
from aht_bench.leaderboard.entries import (
    entry_agent_paths,
    entry_paths,
    make_entry,
    read_json,
    write_entry,
)

ENTRIES = entry_paths(COMMITTED)
REAL_NEW_SALT = rerun.new_salt  # taken at import, before conftest.py makes salts deterministic
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


def test_every_committed_agent_path_is_a_file_the_repository_tracks():
    """A clean clone (CI's) has only what git tracks: an entry naming a file in an ignored
    folder (sweeps/, runs/) renders as changed there and cannot be re-run."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    tracked = set(listed.split("\0"))
    missing = [
        f"{p.name}: {rel}"
        for p in ENTRIES
        for rel in entry_agent_paths(read_json(p))
        if rel and rel not in tracked
    ]
    assert not missing, f"agent files git does not track (commit them or fix the path): {missing}"


def test_committed_pages_are_what_render_writes(protocol_minimum):
    """Under the shipped rule (64 episodes: conftest.py lowers it for the fixture records)."""
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
def test_a_reference_entry_reruns_to_the_recorded_returns(path, tmp_path):
    """On CPU with the pinned packages the evaluator, on the record's own seed, reproduces the
    record's first 2 episodes of every teammate and seating exactly: a change to an
    environment, the policy code or the evaluator that moves them fails here (the slow test
    above runs verify's full re-run and claim check)."""
    entry = read_json(path)
    assert ci_check(path).ok, "\n".join(messages(ci_check(path)))
    seed = entry["payload"]["protocol"]["seed"]
    again, _, _ = rerun._evaluate(entry, REPO, tmp_path, 2, seed, timeout=600)
    mine = returns_of_payload(entry["payload"])[..., :2]
    theirs = returns_of_payload(again["payload"])
    assert mine.shape == theirs.shape and (mine == theirs).all(), (
        f"{int((mine == theirs).sum())} of {mine.size} re-run returns equal the record's"
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


def test_claim_tolerance_worked_by_hand():
    """Record [0, 1, 0, 1], re-run [0, 1]: sample variances 1/3 and 1/2, pooled (3/3 + 1/2) / 4
    = 0.375; t(0.995, 4 df) = 4.604095; half-width 4.604095 * sqrt(0.375 * (1/4 + 1/2))."""
    tol = rerun.claim_tolerance([0.0, 1.0, 0.0, 1.0], [0.0, 1.0])
    assert abs(tol - 4.604095 * (0.375 * 0.75) ** 0.5) < 1e-5


def test_the_reruns_seed_comes_from_the_payload_hash_and_the_salt():
    a = rerun.rerun_seed("ab" * 32, "2026-12-04T18:00:00.000001Z")
    assert a == rerun.rerun_seed("ab" * 32, "2026-12-04T18:00:00.000001Z")
    assert a != rerun.rerun_seed("ab" * 32, "2026-12-04T18:00:00.000002Z")
    assert a != rerun.rerun_seed("cd" * 32, "2026-12-04T18:00:00.000001Z")
    assert 0 <= a < 2**31
    salt = REAL_NEW_SALT()
    assert salt.endswith("Z") and len(salt) == len("2026-12-04T18:00:00.000001Z")


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
    assert "claim is not reproduced (statistical): random_agent.py: record 1.000" in (result.stderr)
