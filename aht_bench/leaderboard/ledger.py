"""Which leaderboard entries a sandboxed re-run has reproduced: `leaderboard/verified.json`.

    ledger = read(root)                                  # {slug: line}
    record_rerun(root, slug, entry, result)              # after `verify` agrees
    status(slug, entry, ledger)                          # "re-run", "changed" or "not re-run"

`aht-bench leaderboard verify` (with its re-run) writes one line per entry whose re-run in the
sandbox agrees with the record: the entry's payload sha256, the agent files' sha256, the re-run's
episodes, seed, mean and expected range, how many returns came out identical, and the sha256 and
date of the entry's replay file (`replays`), if it has one. The pages
rank an entry only while its line matches it ("re-run"); an entry edited since ("changed") or
never re-run ("not re-run": made before the sandbox, or its agent file is not in the repository)
is listed unranked. `verify --no-rerun` reports a line whose entry file is gone (a deleted
entry).

The ledger is a record of what was run, not a proof: a line can be written by hand like any
file in the repository, so a line is worth what the re-run that CI or a maintainer does on it
is worth (docs/leaderboard.md says what is guaranteed).

May import the standard library, aht_bench.files, aht_bench.evaluation.record and
aht_bench.leaderboard.entries.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from aht_bench.evaluation.record import agent_files
from aht_bench.leaderboard.entries import EntryError, leaderboard_root

FILE = "verified.json"
FORMAT = "aht-bench-leaderboard-reruns"
FORMAT_VERSION = 1
RERUN = "re-run"
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


def record_rerun(
    root: Path | None,
    slug: str,
    entry: dict[str, Any],
    result: Any,
    replays: dict[str, str] | None = None,
) -> None:
    """Write the ledger line of `slug` after a re-run `result` (a `rerun.RerunResult`) agreed;
    `replays` ({"sha256", "date_utc"}): the entry's replay file (`replays.save`), if any."""
    from aht_bench import __version__

    lines = read(root)
    lines[slug] = {
        "payload_sha256": entry["payload_sha256"],
        "agent_sha256": _agent_hashes(entry),
        "episodes": int(result.episodes),
        "seed": int(result.seed),
        "rerun_mean": float(result.rerun_mean["value"]),
        "record_mean": float(result.record_mean["value"]),
        "expected_range": None if result.expected is None else [float(x) for x in result.expected],
        "identical_returns": None
        if result.identical is None
        else f"{result.identical} of {result.compared}",
        "isolation": "sandbox",
        "aht_bench": __version__,
        "date_utc": today(),
    }
    if replays is not None:
        lines[slug]["replays_sha256"] = replays["sha256"]
        lines[slug]["replays_date_utc"] = replays["date_utc"]
    _write(root, lines)


def today() -> str:
    """The date of a ledger line (UTC, YYYY-MM-DD)."""
    return time.strftime("%Y-%m-%d", time.gmtime())


def forget(root: Path | None, slug: str) -> bool:
    """Drop the line of `slug` (its re-run failed or its entry was removed); whether it had one."""
    lines = read(root)
    if slug not in lines:
        return False
    del lines[slug]
    _write(root, lines)
    return True


def status(slug: str, entry: dict[str, Any], lines: dict[str, dict[str, Any]]) -> str:
    """RERUN when the ledger's line of `slug` matches `entry`, CHANGED when the entry differs
    from what was re-run, NOT_RERUN when there is no line."""
    line = lines.get(slug)
    if line is None:
        return NOT_RERUN
    same = line.get("payload_sha256") == entry["payload_sha256"]
    same = same and line.get("agent_sha256") == _agent_hashes(entry)
    return RERUN if same else CHANGED


def deleted(root: Path | None, slugs: set[str]) -> list[str]:
    """Ledger slugs with no entry among `slugs`: entries deleted after they were re-run."""
    return sorted(s for s in read(root) if s not in slugs)


__all__ = [
    "CHANGED",
    "NOT_RERUN",
    "RERUN",
    "deleted",
    "forget",
    "read",
    "record_rerun",
    "status",
    "today",
]
