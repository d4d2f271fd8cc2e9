"""Re-running an entry's agent: the evaluator in a child process on a seeded sample of
episodes, compared with the record.

    result = rerun_entry(entry, repo, episodes=8)
    result.agrees          # the re-run's mean BRProx CI overlaps the record's

The child is `python -m aht_bench.cli evaluate` on the entry's agent file, task, heldout version
and seed, with `episodes` episodes per member and seating (episodes 0..episodes-1 of the
record's seed: every runner starts episode `e` from a state that depends only on the seed and
`e`) and the record's bootstrap settings; an agent that ran isolated runs isolated again. The
agent runs in a fresh process, as it did when it was evaluated, and cannot touch this one.

Agreement: the re-run's 95% CI of the mean score overlaps the record's, i.e. the two means
differ by at most the sum of the two half-widths. A CI from few episodes is wide, so an honest
record passes all but rarely (about 1% of the time for the default sample and a record of 32
episodes); a record whose returns were made up fails unless they are near the agent's real
ones. The re-run is seeded, so the verdict on a given entry is the same every time. When the
re-run's episodes are the record's first ones (same runner and seed), how many returns are
identical is reported too: all of them for an agent whose actions depend only on its seed and
what it sees.

May import the standard library, aht_bench.evaluation.record and aht_bench.leaderboard.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aht_bench.evaluation.record import ResultFileError, read_record
from aht_bench.leaderboard.checks import seating_key
from aht_bench.leaderboard.entries import BLOCK

DEFAULT_EPISODES = 8
_EXIT_MEANINGS = {
    2: "usage error",
    3: "the agent failed to load",
    4: "the agent failed while playing",
    5: "the heldout set failed its integrity check",
    130: "interrupted",
}


class RerunError(RuntimeError):
    """The re-run could not produce a result (the agent failed, or the evaluator did)."""


@dataclasses.dataclass(frozen=True)
class RerunResult:
    episodes: int  # per member and seating
    seed: int
    record_mean: dict[str, Any]  # {"value", "ci"} of the entry
    rerun_mean: dict[str, Any]  # {"value", "ci"} of the re-run
    agrees: bool  # the two CIs overlap
    identical: int | None  # returns identical to the record's (same runner and seed), else None
    compared: int  # returns compared for `identical`
    wall_seconds: float
    command: tuple[str, ...]


def intervals_overlap(a: dict[str, Any], b: dict[str, Any], tol: float = 1e-9) -> bool:
    """Whether the CIs of two estimates ({"value", "ci": [lo, hi]}) overlap."""
    (a_lo, a_hi), (b_lo, b_hi) = a["ci"], b["ci"]
    return a_lo <= b_hi + tol and b_lo <= a_hi + tol


def rerun_command(
    entry: dict[str, Any], agent: Path, out: Path, episodes: int, seed: int
) -> list[str]:
    payload = entry["payload"]
    command = [
        sys.executable, "-m", "aht_bench.cli", "evaluate", str(agent),
        "--task", payload["task_id"],
        "--teammates", payload["teammate_set"]["version"],
        "--episodes", str(episodes),
        "--seed", str(seed),
        "--reps", str(payload["protocol"]["bootstrap"]["reps"]),
        "--out", str(out), "--no-plot", "--no-progress",
    ]  # fmt: skip
    if payload["agent"]["runner"] == "python-isolated":
        command.append("--isolate")
    return command


def rerun_entry(
    entry: dict[str, Any],
    repo: Path,
    *,
    episodes: int = DEFAULT_EPISODES,
    seed: int | None = None,
    timeout: float | None = None,
) -> RerunResult:
    """Re-run the agent of `entry` (its `agent_path` must be a file under `repo`); see the
    module docstring. Raises `RerunError` when the child fails or times out."""
    payload = entry["payload"]
    agent = repo / entry[BLOCK]["agent_path"]
    sample_seed: int = payload["protocol"]["seed"] if seed is None else seed
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="aht-bench-verify-") as tmp:
        out = Path(tmp) / "rerun.json"
        command = rerun_command(entry, agent, out, episodes, sample_seed)
        try:
            done = subprocess.run(
                command,
                cwd=repo,
                env=os.environ.copy(),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise RerunError(
                f"the re-run of {agent.name} took longer than {timeout:g}s; verify with fewer "
                "--episodes"
            ) from None
        if done.returncode != 0:
            meaning = _EXIT_MEANINGS.get(done.returncode, "the evaluator failed")
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
            raise RerunError(
                f"the re-run of {agent.name} stopped with exit code {done.returncode} "
                f"({meaning}): {tail}\n(command: {' '.join(command)})"
            )
        try:
            rerun = read_record(out)
        except ResultFileError as e:
            raise RerunError(f"the re-run wrote no readable result: {e}") from None
    identical, compared = _identical_returns(entry, rerun["payload"], episodes, sample_seed)
    record_mean = payload["aggregates"]["mean"]
    rerun_mean = rerun["payload"]["aggregates"]["mean"]
    return RerunResult(
        episodes=episodes,
        seed=sample_seed,
        record_mean=record_mean,
        rerun_mean=rerun_mean,
        agrees=intervals_overlap(record_mean, rerun_mean),
        identical=identical,
        compared=compared,
        wall_seconds=round(time.perf_counter() - start, 1),
        command=tuple(command),
    )


def _identical_returns(
    entry: dict[str, Any], rerun: dict[str, Any], episodes: int, seed: int
) -> tuple[int | None, int]:
    """(returns of the re-run equal to the record's same episodes, returns compared), or
    (None, 0) when the episodes are not the same ones (another seed or runner)."""
    payload = entry["payload"]
    same = (
        seed == payload["protocol"]["seed"]
        and rerun["agent"]["runner"] == payload["agent"]["runner"]
        and episodes <= payload["protocol"]["episodes"]
    )
    if not same:
        return None, 0
    identical = compared = 0
    for mine, theirs in zip(payload["members"], rerun["members"], strict=True):
        for seating in payload["protocol"]["seatings"]:
            key = seating_key(seating)
            pairs = zip(mine["returns"][key][:episodes], theirs["returns"][key], strict=True)
            for a, b in pairs:
                compared += 1
                identical += int(a == b)
    return identical, compared
