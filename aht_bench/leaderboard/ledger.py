"""What the verifier measured for each leaderboard entry: `leaderboard/verified.json`, and the
re-runs' own records in `leaderboard/reruns/<slug>.json`.

    ledger = read(root)                                  # {slug: line}
    record_rerun(root, slug, entry, result)              # after `verify` re-ran the entry
    status(slug, entry, ledger)                          # RERUN, NOT_REPRODUCED, CHANGED, ...
    stored_rerun(root, slug, line)                       # the re-run's result record

`aht-bench leaderboard verify` writes one line per entry it re-ran (`rerun.rerun_entry`): the
entry's payload sha256 and agent files' sha256, the sha256 of each agent file's bundle the
re-run ran (every file its sandbox showed it, as the re-run's record names it), the re-run's
salt, seed and episodes, its scores (mean, IQM, worst case with CIs: the entry's ranked
numbers), the verdict on the record's claim, the sha256 of the re-run's result record
(written beside, in reruns/, so `verify --reproduce` can compare a re-run with it and the
pages can draw its per-teammate scores), and the sha256 and date of the entry's replay file
(`replays`), if it has one.

Statuses (`status`): RERUN, ranked by the line's scores: a current line of this rule whose
claim was reproduced, for a record and a re-run of at least `RANKED_EPISODES` episodes.
Listed unranked: NOT_REPRODUCED (the re-run's number is shown, the claim flagged),
FEW_EPISODES (a record or a re-run of fewer episodes than the protocol), OLD_RULE (a line of
the retired rule: 8 episodes on the record's own seed, compared with the record; no number of
the verifier's), CHANGED (the entry, its agent's bundle or its stored re-run differs from
what the line names)
and NOT_RERUN (no line: never re-run, or its agent file is not in the repository).
`verify --no-rerun` reports a line whose entry file is gone (a deleted entry).

The ledger is a record of what was run, not a proof: a line can be written by hand like any
file in the repository, so a line is worth what the re-run that CI or a maintainer does on it
is worth: CI plays the stored re-run of every changed line again (`verify --reproduce`,
docs/leaderboard.md says what that guarantees).

May import the standard library, aht_bench.files, aht_bench.evaluation.record,
aht_bench.policies (bundle, sandbox) and aht_bench.leaderboard.entries.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from aht_bench.evaluation.record import agent_files
from aht_bench.leaderboard.entries import (
    EntryError,
    entry_agent_paths,
    leaderboard_root,
    repo_root,
)

FILE = "verified.json"
RERUNS = "reruns"  # the folder of the re-runs' result records
FORMAT = "aht-bench-leaderboard-reruns"
FORMAT_VERSION = 1
RULE = 2  # a line's "rule": 2, the verifier's own salted re-run; lines without one: the old rule
RANKED_EPISODES = 64  # per member and seating, of a ranked entry's record and re-run
RERUN = "re-run"
NOT_REPRODUCED = "claim not reproduced"
FEW_EPISODES = "few episodes"
OLD_RULE = "old rule"
CHANGED = "changed"
NOT_RERUN = "not re-run"


def path(root: Path | None = None) -> Path:
    return (root or leaderboard_root()) / FILE


def read(root: Path | None = None) -> dict[str, dict[str, Any]]:
    """slug -> line of the ledger in `root` (empty when there is none)."""
    p = path(root)
    if not p.is_file():
        return {}
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise EntryError(f"{p} is not valid JSON ({e}); restore it from the repository") from None
    if data.get("format") != FORMAT or data.get("format_version") != FORMAT_VERSION:
        raise EntryError(f"{p} is not an {FORMAT} v{FORMAT_VERSION} file")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        raise EntryError(f"{p} has no 'entries' object")
    return entries


def _write(root: Path | None, entries: dict[str, dict[str, Any]]) -> None:
    from aht_bench.files import atomic_write_bytes

    data = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "entries": dict(sorted(entries.items())),
    }
    atomic_write_bytes(path(root), (json.dumps(data, indent=1) + "\n").encode())


def _agent_hashes(entry: dict[str, Any]) -> list[str]:
    return [str(f["sha256"]) for f in agent_files(entry["payload"])]


def _bundle_hashes(record: dict[str, Any]) -> list[str | None]:
    """The sha256 of each agent file's bundle, as the re-run's own record names it."""
    out: list[str | None] = []
    for f in agent_files(record["payload"]):
        bundle = f.get("bundle")
        out.append(str(bundle["sha256"]) if isinstance(bundle, dict) else None)
    return out


def bundles_now(entry: dict[str, Any], repo: Path | None = None) -> list[str | None]:
    """The sha256 of each of the entry's agent files' bundle as it is in the repository now
    (`sandbox.shown_bundle`; None for a file not there or whose bundle cannot be made)."""
    from aht_bench.policies.bundle import BundleError
    from aht_bench.policies.sandbox import shown_bundle

    repo = repo or repo_root()
    out: list[str | None] = []
    for rel in entry_agent_paths(entry):
        path = repo / rel if rel else None
        try:
            out.append(shown_bundle(path).sha256() if path and path.is_file() else None)
        except BundleError:
            out.append(None)
    return out


def rerun_path(root: Path | None, slug: str) -> Path:
    """Where the re-run's result record of `slug` is kept."""
    return (root or leaderboard_root()) / RERUNS / f"{slug}.json"


def record_rerun(
    root: Path | None,
    slug: str,
    entry: dict[str, Any],
    result: Any,
    replays: dict[str, str] | None = None,
) -> None:
    """Write the re-run's record of `slug` to reruns/ and its ledger line after a re-run
    `result` (a `rerun.RerunResult`); `replays` ({"sha256", "date_utc"}): the entry's replay
    file (`replays.save`), if any."""
    from aht_bench import __version__
    from aht_bench.files import atomic_write_bytes

    record = rerun_path(root, slug)
    data = (json.dumps(result.record, indent=1, sort_keys=True) + "\n").encode()
    atomic_write_bytes(record, data)
    lines = read(root)
    lines[slug] = {
        "rule": RULE,
        "payload_sha256": entry["payload_sha256"],
        "agent_sha256": _agent_hashes(entry),
        "bundle_sha256": _bundle_hashes(result.record),
        "salt": str(result.salt),
        "seed": int(result.seed),
        "episodes": int(result.episodes),
        "scores": {k: result.scores[k] for k in ("mean", "iqm", "worst_case")},
        "claim": {
            "rule": result.claim.rule,
            "reproduced": bool(result.claim.reproduced),
            "detail": result.claim.detail,
        },
        "record_mean": float(entry["payload"]["aggregates"]["mean"]["value"]),
        "rerun_sha256": hashlib.sha256(data).hexdigest(),
        "wall_seconds": float(result.wall_seconds),
        "isolation": "sandbox",
        "aht_bench": __version__,
        "date_utc": today(),
    }
    if replays is not None:
        lines[slug]["replays_sha256"] = replays["sha256"]
        lines[slug]["replays_date_utc"] = replays["date_utc"]
    _write(root, lines)


def stored_rerun(root: Path | None, slug: str, line: dict[str, Any]) -> dict[str, Any] | None:
    """The re-run's result record of `slug` when its file is the one `line` names, else None."""
    path = rerun_path(root, slug)
    if not path.is_file():
        return None
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != line.get("rerun_sha256"):
        return None
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        return None


def today() -> str:
    """The date of a ledger line (UTC, YYYY-MM-DD)."""
    return time.strftime("%Y-%m-%d", time.gmtime())


def forget(root: Path | None, slug: str) -> bool:
    """Drop the line of `slug` and its stored re-run (its re-run failed or its entry was
    removed); whether it had a line."""
    rerun_path(root, slug).unlink(missing_ok=True)
    lines = read(root)
    if slug not in lines:
        return False
    del lines[slug]
    _write(root, lines)
    return True


def status(
    slug: str,
    entry: dict[str, Any],
    lines: dict[str, dict[str, Any]],
    root: Path | None = None,
    repo: Path | None = None,
) -> str:
    """The standing of `entry` given its ledger line (see the module docstring); with `root`,
    a line of this rule whose stored re-run is missing or altered, or whose agent bundle in
    the repository `repo` (default the checkout's) is not the one the re-run ran, is CHANGED."""
    line = lines.get(slug)
    if line is None:
        return NOT_RERUN
    same = line.get("payload_sha256") == entry["payload_sha256"]
    same = same and line.get("agent_sha256") == _agent_hashes(entry)
    if not same:
        return CHANGED
    if (
        root is not None
        and "bundle_sha256" in line
        and line["bundle_sha256"] != bundles_now(entry, repo)
    ):
        return CHANGED  # a file beside the agent changed since the re-run
    if line.get("rule") != RULE:
        return OLD_RULE
    if root is not None and stored_rerun(root, slug, line) is None:
        return CHANGED
    if not (line.get("claim") or {}).get("reproduced"):
        return NOT_REPRODUCED
    fewest = min(int(entry["payload"]["protocol"]["episodes"]), int(line.get("episodes", 0)))
    if fewest < RANKED_EPISODES:
        return FEW_EPISODES
    return RERUN


def deleted(root: Path | None, slugs: set[str]) -> list[str]:
    """Ledger slugs with no entry among `slugs`: entries deleted after they were re-run."""
    return sorted(s for s in read(root) if s not in slugs)


__all__ = [
    "CHANGED",
    "FEW_EPISODES",
    "NOT_REPRODUCED",
    "NOT_RERUN",
    "OLD_RULE",
    "RERUN",
    "RULE",
    "deleted",
    "forget",
    "read",
    "record_rerun",
    "rerun_path",
    "status",
    "stored_rerun",
    "today",
]
