"""The verifier's own measurement of an entry: its agent re-run in a child process on episodes
the submitter could not know in advance, and the record's claim checked against it.

    result = rerun_entry(entry, repo)          # >= 64 episodes per member and seating
    result.record                              # the re-run's result record: the ranked number
    result.claim.reproduced                    # the submitter's record agrees with the re-run
    check = reproduce(entry, repo, stored, salt)   # CI: the same re-run again, compared

The child is `python -m aht_bench.cli evaluate` on the entry's agent files, task and heldout
version, sandboxed as the evaluator always runs agent files (an agent that ran isolated runs
isolated again), with the evaluator's own bootstrap settings. The agent runs in a fresh process
and cannot touch this one.

What is ranked is the re-run's score, not the record's: all members, both seatings, at least
`MIN_EPISODES` episodes per member and seating (the official protocol), on a seed nobody chose:
the first 31 bits of sha256(`payload_sha256|salt`), where the salt is the UTC time of the
verification to the microsecond (`new_salt`). The salt is kept with the re-run, so
`reproduce` (and `verify --reproduce`, as CI runs it) plays the same episodes again.

The claim: the record's returns must be the ones the agent produces. For a deterministic runner
(`DETERMINISTIC_RUNNERS`: the exported JAX path, whose actions are a function of the episode's
key and what it sees) the agent is re-run on the record's own seed and episodes and every
return must be identical. For any other runner (a Python agent file may draw randomness of its
own) each agent file's mean score over the record's episodes must be within the level-`LEVEL`
tolerance of a two-sample t-test from the salted re-run's mean (`claim_tolerance`; per-episode
scores averaged over members, since every runner plays episode `e` of every member from the
same start state, so members' scores in one episode are correlated).

`reproduce` re-runs a stored re-run with its salt and compares it with what was stored: the
returns must be identical, except that up to `REPRODUCE_SHARE` of them may differ on another
host (a float's last bit can flip an action sample) when the means also agree within
`claim_tolerance`; more is a stored re-run that this code does not produce.

May import numpy, scipy.stats, the standard library, aht_bench.evaluation.record and
aht_bench.leaderboard.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench.evaluation.record import (
    ResultFileError,
    agent_files,
    episode_score_matrices,
    read_record,
    returns_of,
)
from aht_bench.leaderboard.entries import entry_agent_paths

MIN_EPISODES = 64  # per member and seating: the official protocol, for records and re-runs
LEVEL = 0.99  # the claim check's two-sided level: an honest claim fails 1% of the time
DETERMINISTIC_RUNNERS = frozenset({"jax"})  # same seed, same host: the same returns
REPRODUCE_SHARE = 0.01  # returns of a reproduced re-run that may differ (another host)
DEFAULT_TIMEOUT = 1800.0  # seconds one child evaluation may take
_EXIT_MEANINGS = {
    2: "usage error",
    3: "the agent failed to load",
    4: "the agent failed while playing",
    5: "the heldout set failed its integrity check",
    130: "interrupted",
}


class RerunError(RuntimeError):
    """The re-run could not produce a result (the agent failed, or the evaluator did)."""


def new_salt() -> str:
    """The salt of a verification: the UTC time now, to the microsecond."""
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rerun_seed(payload_sha: str, salt: str) -> int:
    """The re-run's episode seed: the first 31 bits of sha256(`payload_sha|salt`)."""
    digest = hashlib.sha256(f"{payload_sha}|{salt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


@dataclasses.dataclass(frozen=True)
class Claim:
    """Whether the submitter's record agrees with what the agent does."""

    rule: str  # "identical" (deterministic runner) or "statistical"
    reproduced: bool
    detail: str  # one line: what was compared and how it came out


@dataclasses.dataclass(frozen=True)
class RerunResult:
    episodes: int  # per member and seating
    salt: str
    seed: int  # rerun_seed(payload_sha256, salt)
    record: dict[str, Any]  # the re-run's result record, as `aht-bench evaluate` wrote it
    claim: Claim
    wall_seconds: float
    commands: tuple[tuple[str, ...], ...]  # the child evaluations, in order
    replays: tuple[dict[str, Any], ...] = ()  # the kept episodes (`aht-bench-replay` records)

    @property
    def scores(self) -> dict[str, Any]:
        """The re-run's aggregates ({"mean", "iqm", "worst_case"}: {"value", "ci"})."""
        return self.record["payload"]["aggregates"]

    @property
    def mean(self) -> dict[str, Any]:
        return self.scores["mean"]


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """A stored re-run played again with its salt (`reproduce`)."""

    reproduced: bool  # the stored re-run came out again
    identical: int  # returns equal to the stored re-run's
    compared: int
    detail: str
    claim: Claim  # the record's claim, checked again
    wall_seconds: float


def claim_tolerance(record_scores: np.ndarray, rerun_scores: np.ndarray) -> float:
    """Half-width of the two-sided level-`LEVEL` two-sample t-test on the difference of the
    means of two samples of per-episode scores (pooled standard deviation)."""
    from scipy import stats

    a, b = np.asarray(record_scores, np.float64), np.asarray(rerun_scores, np.float64)
    n, m = len(a), len(b)
    pooled = ((n - 1) * a.var(ddof=1) + (m - 1) * b.var(ddof=1)) / (n + m - 2)
    t = float(stats.t.ppf(0.5 + LEVEL / 2.0, n + m - 2))
    return t * float(np.sqrt(pooled * (1.0 / n + 1.0 / m)))


def _per_episode(record: dict[str, Any]) -> np.ndarray:
    """(files, episodes): each episode's score averaged over members and seatings."""
    return episode_score_matrices(record).mean(axis=2)


def _statistical(record: dict[str, Any], rerun: dict[str, Any]) -> tuple[bool, list[str]]:
    """Per agent file: is the record's mean within `claim_tolerance` of the re-run's?"""
    names = [f["file"] for f in agent_files(record["payload"])]
    ok, parts = True, []
    for name, mine, theirs in zip(names, _per_episode(record), _per_episode(rerun), strict=True):
        tol = claim_tolerance(mine, theirs)
        diff = float(mine.mean() - theirs.mean())
        fine = abs(diff) <= tol + 1e-12
        ok &= fine
        parts.append(
            f"{name}: record {mine.mean():.3f}, re-run {theirs.mean():.3f} "
            f"(difference {diff:+.3f}, tolerance {tol:.3f}{'' if fine else ': OUTSIDE'})"
        )
    return ok, parts


def rerun_command(
    entry: dict[str, Any], agents: Sequence[Path], out: Path, episodes: int, seed: int,
    replays: int = 0,
) -> list[str]:  # fmt: skip
    payload = entry["payload"]
    command = [
        sys.executable, "-m", "aht_bench.cli", "evaluate", *map(str, agents),
        "--task", payload["task_id"],
        "--teammates", payload["teammate_set"]["version"],
        "--episodes", str(episodes),
        "--seed", str(seed),
        "--out", str(out), "--no-plot", "--no-progress",
    ]  # fmt: skip
    if payload["agent"]["runner"] == "python-isolated":
        command.append("--isolate")
    if replays:
        command += ["--replays", str(replays), "--no-viewer"]
    return command


def _evaluate(
    entry: dict[str, Any], repo: Path, tmp: Path, episodes: int, seed: int,
    timeout: float | None, replays: int = 0,
) -> tuple[dict[str, Any], list[dict[str, Any]], tuple[str, ...]]:  # fmt: skip
    """One child evaluation of the entry's agent files: (its record, its checked replays, the
    command). Raises `RerunError`."""
    from aht_bench.leaderboard.replays import ReplaysError, rerun_replays

    agents = [repo / str(rel) for rel in entry_agent_paths(entry)]
    name = agents[0].name if len(agents) == 1 else f"the {len(agents)} seeds' agent files"
    out = tmp / f"rerun-{seed}-{episodes}.json"
    command = rerun_command(entry, agents, out, episodes, seed, replays)
    try:
        done = subprocess.run(
            command, cwd=repo, env=os.environ.copy(), capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RerunError(
            f"the re-run of {name} took longer than {timeout:g}s (--timeout); an agent that "
            "needs longer for this many episodes cannot be verified"
        ) from None
    if done.returncode != 0:
        meaning = _EXIT_MEANINGS.get(done.returncode, "the evaluator failed")
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise RerunError(
            f"the re-run of {name} stopped with exit code {done.returncode} "
            f"({meaning}): {tail}\n(command: {' '.join(command)})"
        )
    try:
        record = read_record(out)
    except ResultFileError as e:
        raise RerunError(f"the re-run wrote no readable result: {e}") from None
    try:
        played = (
            rerun_replays(entry, record, tmp / f"{out.stem}-replays", replays) if replays else []
        )
    except ReplaysError as e:
        raise RerunError(str(e)) from None
    return record, played, tuple(command)


def rerun_entry(
    entry: dict[str, Any],
    repo: Path,
    *,
    episodes: int = MIN_EPISODES,
    salt: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    replays: int = 0,
) -> RerunResult:
    """The verifier's re-run of `entry` (its agent paths must be files under `repo`) and the
    check of its claim; see the module docstring. `salt` (default `new_salt()`) fixes the seed.
    With `replays`, the re-run also keeps the first `replays` episodes of every teammate and
    seating (of the first agent file), checked, in `RerunResult.replays`. Raises
    `RerunError` when a child fails or times out, or its replays do not check."""
    if episodes < MIN_EPISODES:
        raise ValueError(f"a re-run plays at least {MIN_EPISODES} episodes (got {episodes})")
    salt = new_salt() if salt is None else salt
    seed = rerun_seed(entry["payload_sha256"], salt)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="aht-bench-verify-") as tmp:
        record, played, command = _evaluate(
            entry, repo, Path(tmp), episodes, seed, timeout, min(replays, episodes)
        )
        claim, more = _check_claim(entry, repo, Path(tmp), record, timeout)
    return RerunResult(
        episodes=episodes,
        salt=salt,
        seed=seed,
        record=record,
        claim=claim,
        wall_seconds=round(time.perf_counter() - start, 1),
        commands=(command, *more),
        replays=tuple(played),
    )


def _check_claim(
    entry: dict[str, Any], repo: Path, tmp: Path, rerun: dict[str, Any], timeout: float | None
) -> tuple[Claim, tuple[tuple[str, ...], ...]]:
    """The verdict on the record's claim given the salted re-run `rerun`, and the commands of
    any child evaluation it took (a deterministic runner: the record's own seed again)."""
    payload = entry["payload"]
    if payload["agent"]["runner"] not in DETERMINISTIC_RUNNERS:
        ok, parts = _statistical(entry, rerun)
        return Claim("statistical", ok, "; ".join(parts)), ()
    own = payload["protocol"]
    again, _, command = _evaluate(entry, repo, tmp, own["episodes"], own["seed"], timeout)
    return _identical_claim(payload, again["payload"], own["seed"]), (command,)


def _identical_claim(payload: dict[str, Any], again: dict[str, Any], seed: int) -> Claim:
    mine, theirs = returns_of(payload), returns_of(again)
    same = int((mine == theirs).sum()) if mine.shape == theirs.shape else 0
    total = int(mine.size)
    return Claim(
        "identical",
        same == total,
        f"{same} of {total} returns identical when the agent is re-run on the record's own "
        f"seed {seed} and {payload['protocol']['episodes']} episodes",
    )


def reproduce(
    entry: dict[str, Any],
    repo: Path,
    stored: dict[str, Any],
    salt: str,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Reproduction:
    """Play the stored re-run `stored` (a result record) of `entry` again with its `salt` and
    compare the two: see the module docstring. Raises `RerunError`."""
    episodes = int(stored["payload"]["protocol"]["episodes"])
    seed = rerun_seed(entry["payload_sha256"], salt)
    start = time.perf_counter()
    unchecked = Claim("not checked", False, "the stored re-run did not come out again")
    if int(stored["payload"]["protocol"]["seed"]) != seed:
        return Reproduction(
            False, 0, 0,
            f"the stored re-run's seed {stored['payload']['protocol']['seed']} is not the "
            f"one its salt gives ({seed}): it was not made by `verify`",
            unchecked, 0.0,
        )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="aht-bench-reproduce-") as tmp:
        again, _, _ = _evaluate(entry, repo, Path(tmp), episodes, seed, timeout)
        mine, theirs = returns_of(stored["payload"]), returns_of(again["payload"])
        if mine.shape != theirs.shape:
            return Reproduction(
                False, 0, int(theirs.size),
                f"the stored re-run holds returns of shape {mine.shape}, the re-run's are "
                f"{theirs.shape}",
                unchecked, round(time.perf_counter() - start, 1),
            )  # fmt: skip
        claim, _ = _check_claim(entry, repo, Path(tmp), again, timeout)
    same, total = int((mine == theirs).sum()), int(mine.size)
    ok, parts = _statistical(stored, again)
    differ = total - same
    if differ == 0:
        reproduced, detail = True, f"all {total} returns identical"
    elif differ <= REPRODUCE_SHARE * total and ok:
        reproduced = True
        detail = (
            f"{differ} of {total} returns differ (at most {REPRODUCE_SHARE:.0%} may, on "
            f"another host) and the means agree: {'; '.join(parts)}"
        )
    else:
        reproduced = False
        detail = f"{differ} of {total} returns differ: {'; '.join(parts)}"
    return Reproduction(
        reproduced, same, total, detail, claim, round(time.perf_counter() - start, 1)
    )
