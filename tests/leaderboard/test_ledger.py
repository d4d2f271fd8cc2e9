"""Entries are ranked only once a sandboxed re-run reproduced them (`leaderboard/verified.json`,
`aht_bench.leaderboard.ledger`, issue 28): the re-run writes the line, the pages rank only those
entries, an edited entry loses its rank, and a deleted entry is reported."""

from __future__ import annotations

import json

from lb_helpers import RECORD, load_record, rescore, returns_of, run, stand_in_rerun, submit_cli

from aht_bench.leaderboard import ledger, render
from aht_bench.leaderboard.cli import EXIT_FAILED, EXIT_OK

SLUG = "random-example--lbf-v1--v1"


def test_a_rerun_that_agrees_ranks_the_entry_and_an_edit_unranks_it(tmp_path):
    root = tmp_path / "board"
    assert submit_cli(root, RECORD).exit_code == EXIT_OK
    assert submit_cli(root, RECORD, "random again").exit_code == EXIT_OK
    entry = json.loads((root / "entries" / f"{SLUG}.json").read_text())
    assert ledger.status(SLUG, entry, ledger.read(root)) == ledger.NOT_RERUN

    result = run(root, "verify", SLUG, "--episodes", "2")
    assert result.exit_code == EXIT_OK, result.output
    line = ledger.read(root)[SLUG]
    assert line["payload_sha256"] == entry["payload_sha256"] and line["isolation"] == "sandbox"
    assert ledger.status(SLUG, entry, ledger.read(root)) == ledger.RERUN

    assert run(root, "render").exit_code == EXIT_OK
    table = (root / "README.md").read_text()
    rows = [r for r in table.splitlines() if r.startswith("| ") and "`random" in r]
    assert rows[0].startswith("| 1 | random (example)") and "re-run \u2713" in rows[0]
    assert rows[1].startswith("| - | random again") and "| not re-run |" in rows[1]

    # an edit after the re-run (here the description) leaves the line stale: unranked again
    path = root / "entries" / f"{SLUG}.json"
    edited = json.loads(path.read_text())
    edited["payload_sha256"] = "0" * 64
    path.write_text(json.dumps(edited))
    assert ledger.status(SLUG, edited, ledger.read(root)) == ledger.CHANGED


def test_a_deleted_entry_is_reported_by_verify_all_no_rerun(tmp_path):
    root = tmp_path / "board"
    assert submit_cli(root, RECORD).exit_code == EXIT_OK
    entry = json.loads((root / "entries" / f"{SLUG}.json").read_text())
    ledger.record_rerun(root, SLUG, entry, stand_in_rerun(entry))
    assert run(root, "verify", "--all", "--no-rerun").exit_code == EXIT_OK
    (root / "entries" / f"{SLUG}.json").unlink()
    result = run(root, "verify", "--all", "--no-rerun")
    assert result.exit_code == EXIT_FAILED
    assert f"entry {SLUG} was deleted" in result.stderr


def test_render_ranks_only_rerun_entries(tmp_path):
    entry = json.loads(RECORD.read_text()) | {
        "leaderboard": {"name": "a", "description": "d", "agent_path": None}
    }
    better = json.loads(json.dumps(entry))
    better["payload"]["aggregates"]["mean"]["value"] += 0.5
    better["leaderboard"]["name"] = "b"
    entries = [("a--lbf-v1--v1", entry), ("b--lbf-v1--v1", better)]
    table = render.render_table(entries, {"a--lbf-v1--v1": ledger.RERUN})
    rows = [r for r in table.splitlines() if r.startswith("| ") and "--lbf-v1--v1`" in r]
    # b scores higher but was never re-run: a is ranked first, b follows unranked
    assert rows[0].startswith("| 1 | a (") and rows[1].startswith("| - | b (")
    html = render.render_html(entries, {"a--lbf-v1--v1": ledger.RERUN})
    assert '"checked":"not re-run"' in html and '"rank":"-"' in html


def test_since_lists_entries_and_ledger_lines_changed_since_a_git_revision(tmp_path):
    """What a merge must re-run: an entry added since the base, and an old entry whose line in
    verified.json was added by hand (a forged 're-run' the checks alone cannot tell)."""
    import subprocess

    repo = tmp_path / "repo"
    root = repo / "leaderboard"
    assert submit_cli(root, RECORD).exit_code == EXIT_OK
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], check=True)
    assert "0 entries added or changed since HEAD" in run(root, "verify", "--since", "HEAD").output

    entry = json.loads((root / "entries" / f"{SLUG}.json").read_text())
    ledger.record_rerun(root, SLUG, entry, stand_in_rerun(entry))  # by hand, not by a re-run
    assert submit_cli(root, RECORD, "random again").exit_code == EXIT_OK
    result = run(root, "verify", "--since", "HEAD", "--no-rerun")
    assert result.exit_code == EXIT_OK, result.output
    assert "2 entries added or changed since HEAD" in result.output
    assert SLUG in result.output and "random-again--lbf-v1--v1" in result.output


def test_submit_reruns_the_agent_and_ranks_an_entry_that_reproduces(tmp_path):
    root = tmp_path / "board"
    result = submit_cli(root, RECORD, "random (example)", "--episodes", "2", rerun=True)
    assert result.exit_code == EXIT_OK, result.output
    assert "re-run: 2 episodes per teammate and seating" in result.output
    assert "; ranked" in result.output
    entry = json.loads((root / "entries" / f"{SLUG}.json").read_text())
    assert ledger.status(SLUG, entry, ledger.read(root)) == ledger.RERUN


def test_submit_of_a_consistent_forgery_fails_its_rerun_and_writes_nothing(tmp_path):
    """Every return set to the member's upper bound, every score recomputed and the payload
    rehashed: the checks pass, the re-run of the random agent does not come close, and the
    submission leaves no entry and no ledger line (nor touches the entry it would replace)."""
    record = load_record()
    upper = [m["upper"] for m in record["payload"]["members"]]
    forged = rescore(record, returns_of(record) * 0 + [[[u]] for u in upper])
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    root = tmp_path / "board"
    assert submit_cli(root, RECORD, "random (example)").exit_code == EXIT_OK
    before = (root / "entries" / f"{SLUG}.json").read_bytes()
    # 8 episodes of re-run against the record's 2: the t-test on 2 and 2 (df 2) is too weak
    result = submit_cli(root, path, "random (example)", "--replace", "--episodes", "8", rerun=True)
    assert result.exit_code == EXIT_FAILED, result.output
    assert "the re-run did not reproduce the record; nothing was written" in result.stderr
    assert "random_agent.py: record 1.000, re-run " in result.stderr
    assert ": OUTSIDE)" in result.stderr
    assert (root / "entries" / f"{SLUG}.json").read_bytes() == before
    assert SLUG not in ledger.read(root)
    result = submit_cli(root, path, "forged", "--episodes", "8", rerun=True)
    assert result.exit_code == EXIT_FAILED
    assert not (root / "entries" / "forged--lbf-v1--v1.json").exists()
