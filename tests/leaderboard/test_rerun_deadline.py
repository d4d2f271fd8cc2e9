"""Issue 52, attack 3 through the leaderboard: a `jax_policy` whose `lax.while_loop` runs
forever on any key but the load check's hangs the evaluator's own process. `verify` and
`submit` re-run the entry in a child evaluation with a wall-clock limit (`--timeout`; default
1800 s, so `.ci/run` cannot hang on an entry): the child is killed at the limit and the command
ends with an error naming the agent and the option."""

from __future__ import annotations

import copy
import hashlib
import json
import sys
import textwrap
import time

import pytest
from corpus_cases import ARMED
from lb_helpers import load_record, run

from aht_bench.evaluation.record import payload_sha256
from aht_bench.leaderboard.cli import EXIT_FAILED
from aht_bench.leaderboard.entries import make_entry

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the bubblewrap sandbox is Linux-only"
)
LIMIT = 40


@pytest.fixture
def armed_record(tmp_path, monkeypatch):
    """A consistent record of the armed agent (lbf heldout v1, the JAX runner), its agent file
    in a repository of its own, and that repository made the verifier's."""
    repo = tmp_path / "repo"
    folder = repo / "agents" / "armed"
    folder.mkdir(parents=True)
    agent = folder / "armed.py"
    agent.write_text(textwrap.dedent(ARMED))
    record = copy.deepcopy(load_record())
    record["payload"]["agent"] |= {
        "file": "armed.py",
        "sha256": hashlib.sha256(agent.read_bytes()).hexdigest(),
        "kind": "jax_policy",
        "runner": "jax",
    }
    record["payload_sha256"] = payload_sha256(record["payload"])
    record["meta"]["agent_path"] = str(agent)
    out = tmp_path / "armed.json"
    out.write_text(json.dumps(record))
    monkeypatch.setattr("aht_bench.leaderboard.entries.repo_root", lambda: repo)
    monkeypatch.setattr("aht_bench.leaderboard.board.repo_root", lambda: repo)
    return out, repo


def _ends_in_time(result, start):
    wall = time.monotonic() - start
    assert result.exit_code == EXIT_FAILED, result.output
    assert f"the re-run of armed.py took longer than {LIMIT}s (--timeout)" in result.output
    assert wall < LIMIT + 60, f"took {wall:.0f}s"


def test_submit_ends_the_armed_agents_re_run_at_its_timeout(armed_record, tmp_path):
    record, _ = armed_record
    board = tmp_path / "board"
    start = time.monotonic()
    result = run(
        board, "submit", str(record), "--name", "armed", "--description", "hangs",
        "--replays", "0", "--timeout", str(LIMIT),
    )  # fmt: skip
    _ends_in_time(result, start)
    assert not (board / "entries" / "armed--lbf-v1--v1.json").exists()


def test_verify_ends_the_armed_agents_re_run_at_its_timeout(armed_record, tmp_path):
    record, repo = armed_record
    board = tmp_path / "board"
    (board / "entries").mkdir(parents=True)
    entry = make_entry(json.loads(record.read_text()), "armed", "hangs", "agents/armed/armed.py")
    path = board / "entries" / "armed--lbf-v1--v1.json"
    path.write_text(json.dumps(entry))
    start = time.monotonic()
    result = run(board, "verify", str(path), "--replays", "0", "--timeout", str(LIMIT))
    _ends_in_time(result, start)
