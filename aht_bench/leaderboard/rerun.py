"""Re-running an entry's agent: the evaluator in a child process on a seeded sample of
episodes, compared with the record.

    result = rerun_entry(entry, repo, episodes=8)
    result.agrees          # the re-run's mean BRProx is where the record's episodes put it

The child is `python -m aht_bench.cli evaluate` on the entry's agent file, task, heldout version
and seed, with `episodes` episodes per member and seating (episodes 0..episodes-1 of the
record's seed: every runner starts episode `e` from a state that depends only on the seed and
`e`) and the record's bootstrap settings; an agent that ran isolated runs isolated again. The
agent runs in a fresh process, as it did when it was evaluated, and cannot touch this one.

Agreement: the re-run's mean score is within `expected_range`, the range where 99% of the means
of as many episodes drawn from the record's own episodes fall (a seeded bootstrap over whole
episodes: every runner plays episode `e` of every member from the same start state, so the
members' scores in one episode are correlated, 0.1-0.4 on lbf-v1, and must be resampled
together). The range comes from the record's many episodes, not from the re-run's few, so an
honest record rarely fails: 0.6% of the time per agent file on average over the committed
entries' files, 1.5% at worst, for 8 episodes (`benchmarks/verify_false_alarms.py`; the rule it
replaced, overlap of CIs that resample each member's episodes on its own, failed 7.8%); a record
whose returns were made up fails unless they are near the agent's real ones. The re-run is
seeded, so the verdict on a given entry is the same every time. When the re-run's episodes are
the record's first ones (same runner and seed), how many returns are identical is reported too:
all of them for an agent whose actions depend only on its seed and what it sees.

A multi-seed entry re-runs every seed's file in one child (`evaluate` with all the files, the
same sample of episodes for each), and each seed is judged as a one-file entry would be: the
re-run's mean of that seed's file against the range the record's episodes of it give. The
entry agrees when every seed does; `seeds` names each seed's verdict.

May import numpy, the standard library, aht_bench.evaluation.record and aht_bench.leaderboard.
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

import numpy as np

from aht_bench.evaluation.record import (
    ResultFileError,
    agent_files,
    episode_score_matrices,
    is_multi_seed,
    read_record,
    returns_of,
)
from aht_bench.leaderboard.entries import entry_agent_paths

DEFAULT_EPISODES = 8
LEVEL = 0.99  # the share of honest re-runs whose mean `expected_range` covers
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
class SeedRerun:
    """One seed's file of a multi-seed entry, re-run."""

    file: str  # the agent file's name
    record_mean: float  # this seed's mean score over the record's episodes
    rerun_mean: float  # the same over the re-run's episodes
    expected: tuple[float, float]  # where the re-run's mean falls for an honest record
    agrees: bool  # `rerun_mean` is within `expected`
    identical: int | None  # returns identical to the record's, as in RerunResult
    compared: int


@dataclasses.dataclass(frozen=True)
class RerunResult:
    episodes: int  # per member and seating
    seed: int
    record_mean: dict[str, Any]  # {"value", "ci"}: the entry's mean score, as recorded
    rerun_mean: dict[str, Any]  # {"value", "ci"}: the re-run's, as its evaluator records it
    expected: tuple[float, float] | None  # one-file entry: where an honest re-run's mean falls
    agrees: bool  # the re-run's mean is within `expected` (multi-seed: every seed's is)
    identical: int | None  # returns identical to the record's (same runner and seed), else None
    compared: int  # returns compared for `identical`
    wall_seconds: float
    command: tuple[str, ...]
    seeds: tuple[SeedRerun, ...] = ()  # a multi-seed entry: each seed's verdict, in seed order
    replays: tuple[dict[str, Any], ...] = ()  # the kept episodes (`aht-bench-replay` records)


def intervals_overlap(a: dict[str, Any], b: dict[str, Any], tol: float = 1e-9) -> bool:
    """Whether the CIs of two estimates ({"value", "ci": [lo, hi]}) overlap."""
    (a_lo, a_hi), (b_lo, b_hi) = a["ci"], b["ci"]
    return a_lo <= b_hi + tol and b_lo <= a_hi + tol


def expected_range(
    matrix: np.ndarray, episodes: int, reps: int, seed: int, level: float = LEVEL
) -> tuple[float, float]:
    """Where the mean score of `episodes` episodes falls, `level` of the time, when they are
    drawn from the same start states as the episodes of an (episodes, members) score matrix of
    a record: the central `level` quantiles of `reps` means of `episodes` whole episodes drawn
    with replacement from the record's (a seeded bootstrap; each episode brings every member's
    score in it, since every runner plays episode `e` of every member from the same start
    state, and those scores are correlated)."""
    per_episode = np.asarray(matrix, np.float64).mean(axis=1)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(per_episode), size=(reps, episodes))
    means = per_episode[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return float(lo), float(hi)


def within(value: float, expected: tuple[float, float], tol: float = 1e-9) -> bool:
    return expected[0] - tol <= value <= expected[1] + tol


def rerun_command(
    entry: dict[str, Any], agents: list[Path], out: Path, episodes: int, seed: int, replays: int = 0
) -> list[str]:
    payload = entry["payload"]
    command = [
        sys.executable, "-m", "aht_bench.cli", "evaluate", *map(str, agents),
        "--task", payload["task_id"],
        "--teammates", payload["teammate_set"]["version"],
        "--episodes", str(episodes),
        "--seed", str(seed),
        "--reps", str(payload["protocol"]["bootstrap"]["reps"]),
        "--out", str(out), "--no-plot", "--no-progress",
    ]  # fmt: skip
    if payload["agent"]["runner"] == "python-isolated":
        command.append("--isolate")
    if replays:
        command += ["--replays", str(replays), "--no-viewer"]
    return command


def rerun_entry(
    entry: dict[str, Any],
    repo: Path,
    *,
    episodes: int = DEFAULT_EPISODES,
    seed: int | None = None,
    timeout: float | None = None,
    replays: int = 0,
) -> RerunResult:
    """Re-run the agent of `entry` (its agent paths must be files under `repo`); see the
    module docstring. With `replays`, the re-run also keeps the first `replays` episodes of
    every teammate and seating (of the first agent file), checked (`replays.rerun_replays`),
    in `RerunResult.replays`. Raises `RerunError` when the child fails or times out, or its
    replays do not check."""
    from aht_bench.leaderboard.replays import ReplaysError, rerun_replays

    payload = entry["payload"]
    agents = [repo / str(rel) for rel in entry_agent_paths(entry)]
    name = agents[0].name if len(agents) == 1 else f"the {len(agents)} seeds' agent files"
    sample_seed: int = payload["protocol"]["seed"] if seed is None else seed
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="aht-bench-verify-") as tmp:
        out = Path(tmp) / "rerun.json"
        kept = min(replays, episodes)
        command = rerun_command(entry, agents, out, episodes, sample_seed, kept)
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
                f"the re-run of {name} took longer than {timeout:g}s; verify with fewer --episodes"
            ) from None
        if done.returncode != 0:
            meaning = _EXIT_MEANINGS.get(done.returncode, "the evaluator failed")
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
            raise RerunError(
                f"the re-run of {name} stopped with exit code {done.returncode} "
                f"({meaning}): {tail}\n(command: {' '.join(command)})"
            )
        try:
            rerun = read_record(out)
        except ResultFileError as e:
            raise RerunError(f"the re-run wrote no readable result: {e}") from None
        try:
            played = rerun_replays(entry, rerun, Path(tmp) / "rerun-replays", kept) if kept else []
        except ReplaysError as e:
            raise RerunError(str(e)) from None
    identical = _identical_returns(entry, rerun["payload"], episodes, sample_seed)
    record_mean = payload["aggregates"]["mean"]
    rerun_mean = rerun["payload"]["aggregates"]["mean"]
    if is_multi_seed(payload):
        seeds = _seed_verdicts(entry, rerun, identical)
        expected = None
        agrees = all(s.agrees for s in seeds)
    else:
        seeds = ()
        boot = payload["protocol"]["bootstrap"]
        theirs = episode_score_matrices(rerun)[0]
        expected = expected_range(
            episode_score_matrices(entry)[0], theirs.shape[0], boot["reps"], boot["seed"]
        )
        agrees = within(float(theirs.mean()), expected)
    return RerunResult(
        episodes=episodes,
        seed=sample_seed,
        record_mean=record_mean,
        rerun_mean=rerun_mean,
        expected=expected,
        agrees=agrees,
        identical=None if identical is None else int(sum(i for i, _ in identical)),
        compared=0 if identical is None else int(sum(c for _, c in identical)),
        wall_seconds=round(time.perf_counter() - start, 1),
        command=tuple(command),
        seeds=seeds,
        replays=tuple(played),
    )


def _seed_verdicts(
    entry: dict[str, Any],
    rerun: dict[str, Any],
    identical: list[tuple[int, int]] | None,
) -> tuple[SeedRerun, ...]:
    """Each seed of a multi-seed entry judged as a one-file entry: the re-run's mean score of
    that seed's file against the range `expected_range` gives from the record's episodes of it
    (with the record's bootstrap reps and seed)."""
    boot = entry["payload"]["protocol"]["bootstrap"]
    mine, theirs = episode_score_matrices(entry), episode_score_matrices(rerun)
    out = []
    for i, file in enumerate(agent_files(entry["payload"])):
        expected = expected_range(mine[i], theirs.shape[1], boot["reps"], boot["seed"])
        rerun_mean = float(theirs[i].mean())
        out.append(
            SeedRerun(
                file=file["file"],
                record_mean=float(mine[i].mean()),
                rerun_mean=rerun_mean,
                expected=expected,
                agrees=within(rerun_mean, expected),
                identical=None if identical is None else identical[i][0],
                compared=0 if identical is None else identical[i][1],
            )
        )
    return tuple(out)


def _identical_returns(
    entry: dict[str, Any], rerun: dict[str, Any], episodes: int, seed: int
) -> list[tuple[int, int]] | None:
    """Per agent file, (returns of the re-run equal to the record's same episodes, returns
    compared), or None when the episodes are not the same ones (another seed or runner)."""
    payload = entry["payload"]
    same = (
        seed == payload["protocol"]["seed"]
        and rerun["agent"]["runner"] == payload["agent"]["runner"]
        and episodes <= payload["protocol"]["episodes"]
    )
    if not same:
        return None
    mine = returns_of(payload)[..., :episodes]  # (files, members, seatings, episodes)
    theirs = returns_of(rerun)
    equal = (mine == theirs).reshape(len(mine), -1)
    return [(int(row.sum()), row.size) for row in equal]
