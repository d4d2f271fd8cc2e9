"""The ranked number is the verifier's (issue 52): an entry is ranked by its own sandboxed re-run
on a seed nobody chose, the record's claim is checked against what the agent does, and CI plays
the stored re-run again. Each forgery of the issue is a test here:

1. a deterministic agent's record of 2 episodes with one episode raised to every member's upper
   bound, every score recomputed and the payload re-hashed (ranked #3 on lbf before);
2. an entry and its stored re-run hand-tuned together (passed `verify --since` before);
3. a record of fewer than 64 episodes (accepted before).

The records are the example JAX agent's (agents/examples/jax_mlp_agent.py, the exported JAX
runner: deterministic) on 2 episodes; conftest.py lowers the protocol's 64 to 2 for them, and
`protocol_minimum` sets it back."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from lb_helpers import REPO, rescore, returns_of, run, submit_cli

from aht_bench.cli import main
from aht_bench.leaderboard import ledger
from aht_bench.leaderboard.cli import EXIT_FAILED, EXIT_OK

AGENT = REPO / "agents" / "examples" / "jax_mlp_agent.py"
SLUG = "jax-mlp--lbf-v1--v1"


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """The JAX example agent's record: lbf heldout v1, 2 episodes per member and seating."""
    out = tmp_path_factory.mktemp("jax") / "record.json"
    result = CliRunner().invoke(main, [
        "evaluate", str(AGENT), "--task", "lbf", "--teammates", "v1", "--episodes", "2",
        "--reps", "200", "--out", str(out), "--no-plot", "--no-progress",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def board(honest, tmp_path_factory):
    """A board where the honest record was submitted (re-run and ranked)."""
    root = tmp_path_factory.mktemp("board") / "board"
    result = submit_cli(root, honest, "jax mlp", "--replays", "0", rerun=True)
    assert result.exit_code == EXIT_OK, result.output
    assert "ok: the record's claim is reproduced (identical): 36 of 36 returns identical" in (
        result.output
    )  # 9 members x 2 seatings x 2 episodes
    return root


def _raised(record_path, tmp_path):
    """Forgery 1: episode 0 of every member and seating at the member's upper bound."""
    record = json.loads(record_path.read_text())
    returns = returns_of(record)
    returns[:, :, 0] = [[m["upper"]] for m in record["payload"]["members"]]
    out = tmp_path / "forged.json"
    out.write_text(json.dumps(rescore(record, returns)))
    return out


def _row(root, slug):
    table = (root / "README.md").read_text()
    (row,) = [r for r in table.splitlines() if f"(`{slug}`)" in r]
    return row.split(" | ")


def test_the_ranked_number_is_the_reruns_not_the_records(board):
    entry = json.loads((board / "entries" / f"{SLUG}.json").read_text())
    line = ledger.read(board)[SLUG]
    assert line["rule"] == ledger.RULE and line["claim"]["reproduced"]
    stored = ledger.stored_rerun(board, SLUG, line)
    assert stored is not None and stored["payload"]["protocol"]["seed"] == line["seed"]
    assert line["seed"] != entry["payload"]["protocol"]["seed"]  # not the record's episodes
    assert line["scores"]["mean"] == stored["payload"]["aggregates"]["mean"]
    assert run(board, "render").exit_code == EXIT_OK
    cells = _row(board, SLUG)
    mean = line["scores"]["mean"]
    assert cells[0] == "| 1" and "re-run \u2713" in cells
    assert cells[2] == f"{mean['value']:.3f} [{mean['ci'][0]:.3f}, {mean['ci'][1]:.3f}]"
    claimed = entry["payload"]["aggregates"]["mean"]["value"]
    assert cells[5].startswith(f"{claimed:.3f} [")  # the claim, beside


def test_a_file_changed_beside_a_ranked_agent_unranks_its_entry(board, tmp_path):
    """The ledger line names the bundle the re-run ran (every file the sandbox showed the
    agent); a file added beside the agent afterwards makes the line stale (CHANGED)."""
    entry = json.loads((board / "entries" / f"{SLUG}.json").read_text())
    lines = ledger.read(board)
    stored = ledger.stored_rerun(board, SLUG, lines[SLUG])
    ran = stored["payload"]["agent"]["bundle"]["sha256"]
    assert lines[SLUG]["bundle_sha256"] == [ran]
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "agents" / "examples", repo / "agents" / "examples")
    assert ledger.status(SLUG, entry, lines, board, repo) == ledger.RERUN
    (repo / "agents" / "examples" / "policy_table.json").write_text("{}")
    assert ledger.status(SLUG, entry, lines, board, repo) == ledger.CHANGED


def test_forgery_1_one_raised_episode_of_a_deterministic_agent_is_refused(honest, board, tmp_path):
    forged = _raised(honest, tmp_path)
    before = sorted(p.name for p in (board / "entries").iterdir())
    lines = ledger.read(board)
    result = submit_cli(board, forged, "forged", "--replays", "0", rerun=True)
    assert result.exit_code == EXIT_FAILED, result.output
    assert "claim is not reproduced (identical): 18 of 36 returns identical" in result.stderr
    assert "nothing was written" in result.stderr
    assert sorted(p.name for p in (board / "entries").iterdir()) == before
    assert ledger.read(board) == lines
    assert not ledger.rerun_path(board, "forged--lbf-v1--v1").exists()


def test_forgery_1_written_in_by_hand_is_shown_unranked_with_the_reruns_number(
    honest, board, tmp_path
):
    import shutil

    root = tmp_path / "board"
    shutil.copytree(board, root)
    forged = json.loads(_raised(honest, tmp_path).read_text())
    path = root / "entries" / f"{SLUG}.json"
    entry = json.loads(path.read_text())
    path.write_text(json.dumps(forged | {"leaderboard": entry["leaderboard"]}))
    result = run(root, "verify", SLUG, "--replays", "0")
    assert result.exit_code == EXIT_FAILED, result.output
    line = ledger.read(root)[SLUG]
    assert line["claim"]["reproduced"] is False
    assert run(root, "render").exit_code == EXIT_OK
    cells = _row(root, SLUG)
    mean = line["scores"]["mean"]["value"]
    assert cells[0] == "| -" and "claim not reproduced by the re-run" in cells
    assert cells[2].startswith(f"{mean:.3f} [")  # the re-run's number, not the forged claim
    assert mean < forged["payload"]["aggregates"]["mean"]["value"]


def test_forgery_2_a_hand_tuned_stored_rerun_fails_reproduce(board, tmp_path):
    """The stored re-run (and the line naming it) edited to a better score, consistently: the
    pages would rank it, CI's `verify --reproduce` plays the re-run again and refuses it."""
    import hashlib
    import shutil

    root = tmp_path / "board"
    shutil.copytree(board, root)
    assert run(root, "verify", SLUG, "--reproduce").exit_code == EXIT_OK  # untouched: fine
    line = ledger.read(root)[SLUG]
    stored = ledger.stored_rerun(root, SLUG, line)
    returns = returns_of(stored)
    returns[:, :, 0] = np.maximum(returns[:, :, 0], 0.5)  # tuned, not absurd
    tuned = rescore(stored, returns)
    data = (json.dumps(tuned, indent=1, sort_keys=True) + "\n").encode()
    ledger.rerun_path(root, SLUG).write_bytes(data)
    lines = ledger.read(root)
    lines[SLUG] |= {
        "rerun_sha256": hashlib.sha256(data).hexdigest(),
        "scores": {k: tuned["payload"]["aggregates"][k] for k in ("mean", "iqm", "worst_case")},
    }
    ledger._write(root, lines)
    assert run(root, "render").exit_code == EXIT_OK
    assert _row(root, SLUG)[0] == "| 1"  # the pages cannot tell
    result = run(root, "verify", SLUG, "--reproduce")
    assert result.exit_code == EXIT_FAILED, result.output
    assert "returns differ" in result.stderr
    assert ledger.read(root) == lines  # --reproduce writes nothing


def test_a_line_whose_scores_are_not_its_stored_reruns_is_unranked(board, tmp_path):
    import shutil

    root = tmp_path / "board"
    shutil.copytree(board, root)
    lines = ledger.read(root)
    lines[SLUG]["scores"]["mean"]["value"] += 0.1
    ledger._write(root, lines)
    assert run(root, "render").exit_code == EXIT_OK
    cells = _row(root, SLUG)
    assert cells[0] == "| -" and "changed since its re-run" in cells


def test_a_record_of_fewer_than_64_episodes_is_refused(honest, tmp_path, protocol_minimum):
    root = tmp_path / "board"
    result = submit_cli(root, honest, "jax mlp", rerun=True)
    assert result.exit_code == EXIT_FAILED, result.output
    assert "the record has 2 episodes per teammate and seating; the protocol" in result.stderr
    assert "needs at least 64: evaluate with --episodes 64" in result.stderr
    assert not (root / "entries").exists() or not list((root / "entries").iterdir())
    result = run(root, "verify", "x", "--episodes", "8")
    assert result.exit_code == 2 and "fewer than the protocol's 64 episodes" in result.output


def test_an_entry_of_few_episodes_is_unranked_even_with_its_line(board, protocol_minimum):
    entry = json.loads((board / "entries" / f"{SLUG}.json").read_text())
    lines = ledger.read(board)
    assert ledger.status(SLUG, entry, lines, board) == ledger.FEW_EPISODES
