"""Compiled agent code under a wall-clock limit (issue 52, item 2): an exported JAX policy runs
as XLA in the evaluator's own process, where nothing but ending the process stops it.

The evaluations run as child processes: the watchdog ends the process it runs in.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from corpus_cases import ARMED, write_one_member_lbf_set

from aht_bench.cli import EXIT_AGENT_RUNTIME
from aht_bench.evaluation.evaluate import DEADLINE_EXIT_CODE
from aht_bench.policies.watchdog import Watchdog

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the bubblewrap sandbox is Linux-only"
)


def test_the_watchdog_exits_with_the_code_evaluate_documents():
    assert DEADLINE_EXIT_CODE == EXIT_AGENT_RUNTIME


def test_a_disarmed_watchdog_does_not_end_the_process():
    with Watchdog(0.2, "must not fire", exit_code=99):
        pass
    time.sleep(0.5)  # past its deadline: still here


def test_an_armed_while_loop_ends_evaluate_at_its_total_timeout(tmp_path):
    """The attack: a `jax_policy` whose `lax.while_loop` ends for the load check's key and on
    no other, so its compiled play never returns. Before the watchdog `evaluate ...
    --total-timeout 20` was still running at 180 s."""
    folder = tmp_path / "agent-armed"
    folder.mkdir()
    agent = folder / "armed.py"
    agent.write_text(textwrap.dedent(ARMED))
    lbf_set = write_one_member_lbf_set(tmp_path / "set", "lbf-v1/watchdog-test")
    out = tmp_path / "armed.json"
    limit = 15
    args = [
        "evaluate", str(agent), "--task", "lbf-v1", "--teammates", str(lbf_set),
        "--episodes", "2", "--reps", "100", "--out", str(out), "--no-progress",
        "--total-timeout", str(limit),
    ]  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "aht_bench.cli", *args], capture_output=True, text=True, timeout=300
    )
    wall = time.monotonic() - start
    assert done.returncode == EXIT_AGENT_RUNTIME, done.stderr[-2000:]
    assert f"agent file armed.py used up its total time limit of {limit}s" in done.stderr
    assert "compiled JAX policy" in done.stderr and "--total-timeout" in done.stderr
    assert wall < limit + 60, f"evaluate took {wall:.0f}s"  # the rest: start-up and loading
    assert not out.exists() and not out.with_suffix(".png").exists()


def test_evaluate_and_the_leaderboard_re_runs_have_time_limits_by_default():
    """Without them one hanging entry hangs CI (`.ci/run` runs `leaderboard verify`)."""
    from aht_bench.cli import DEFAULT_TOTAL_TIMEOUT, main
    from aht_bench.leaderboard.cli import leaderboard

    def default(command, name):
        return next(p.default for p in command.params if p.name == name)

    assert default(main.commands["evaluate"], "total_timeout") == DEFAULT_TOTAL_TIMEOUT
    assert default(leaderboard.commands["verify"], "timeout") == 1800
    assert default(leaderboard.commands["submit"], "timeout") == 1800
