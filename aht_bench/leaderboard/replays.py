"""Episode replays of leaderboard entries: what the sandboxed re-run of `verify` played, kept
as `leaderboard/replays/<slug>.json` and shown by `leaderboard/replays/<slug>.html`.

    kept = rerun_replays(entry, rerun_record, folder)    # the re-run's replays, each checked
    sha = save(root, slug, kept)                          # after the re-run agreed
    pages(root, entries, lines)                           # `render`: the viewer pages

The replays come from the suite's own re-run of the agent, never from the submitter: `verify
--replays N` (and `submit`, which verifies) has the evaluator keep the first N episodes of every
teammate and seating (of the first agent file of a multi-seed entry) as `aht-bench-replay`
records. Each must be of the entry's task, heldout set and agent file, return what the re-run's
record says for its episode, and replay exactly through the environment. They are written only
when the re-run agrees with the record and gets its ledger line, which holds their sha256 and
date; a later re-run with `--replays 0` (what CI runs) keeps them while the entry and its agent
files are unchanged, so CI never rewrites an entry's replays. The pages link an entry's replays
only while its line is current and names the file's bytes, so a replay file edited by hand, or
left from an earlier re-run, is not shown.

`render` writes one viewer page per entry with replays (`aht_bench.evaluation.viewer`, stamped
with the replays' sha256 and a hash of the page's title and note): built when missing or
stale, so a render that changes nothing is quick. The page says where its episodes come from
and how many of their returns are the record's own for the same episodes (all of them for an
agent that acts the same given its seed and what it sees).

May import numpy, the standard library, aht_bench.files, aht_bench.evaluation and
aht_bench.leaderboard.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aht_bench.evaluation.record import agent_files, returns_of
from aht_bench.leaderboard.entries import EntryError
from aht_bench.leaderboard.schema import seating_key

FOLDER = "replays"


class ReplaysError(RuntimeError):
    """The re-run's replays are missing or do not match its record: the message says which."""


def replays_path(root: Path, slug: str) -> Path:
    return root / FOLDER / f"{slug}.json"


def page_path(root: Path, slug: str) -> Path:
    return root / FOLDER / f"{slug}.html"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def rerun_replays(
    entry: dict[str, Any], rerun: dict[str, Any], folder: Path, episodes: int
) -> list[dict[str, Any]]:
    """The replays the re-run's evaluator wrote in `folder` (MEMBER.json), checked against
    the entry and the re-run's record `rerun`: every teammate and seating's first `episodes`
    episodes of the first agent file, each of the entry's task, heldout set and agent file,
    with the re-run's return for its episode, replaying exactly. Raises `ReplaysError`."""
    from aht_bench.evaluation.replay import ReplayError, read_replays, replay

    payload = entry["payload"]
    seatings = [seating_key(s) for s in payload["protocol"]["seatings"]]
    members = [m["name"] for m in payload["members"]]
    theirs = returns_of(rerun["payload"])[0]  # the first file's
    agent = agent_files(payload)[0]["file"]
    kept: dict[tuple[str, str, int], dict[str, Any]] = {}
    try:
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            for r in read_replays(path):
                where = f"the re-run's replay {path.name} ({r['member']}, episode {r['episode']})"
                wrong = [
                    what
                    for what, ok in (
                        ("task", r["task_id"] == payload["task_id"]),
                        ("heldout set", r.get("teammate_set") == _set_of(payload)),
                        ("agent file", r.get("agent") == agent),
                        ("teammate", r["member"] in members),
                        ("seating", seating_key(r["seating"]) in seatings),
                        ("episode", isinstance(r["episode"], int) and 0 <= r["episode"] < episodes),
                    )
                    if not ok
                ]
                if wrong:
                    raise ReplaysError(f"{where} is not of the entry's {', '.join(wrong)}")
                if float(r["return"]) != _recorded(theirs, payload, r):
                    raise ReplaysError(f"{where} does not return what the re-run's record says")
                replay(r)
                kept[(r["member"], seating_key(r["seating"]), r["episode"])] = r
    except ReplayError as e:
        raise ReplaysError(f"a replay of the re-run: {e}") from None
    want = len(members) * len(seatings) * episodes
    if len(kept) != want:
        raise ReplaysError(
            f"the re-run kept {len(kept)} replays, not {want} (every teammate and seating's "
            f"first {episodes} episodes)"
        )
    order = sorted(kept, key=lambda k: (members.index(k[0]), seatings.index(k[1]), k[2]))
    return [kept[k] for k in order]


def _recorded(returns: Any, payload: dict[str, Any], replay: dict[str, Any]) -> float:
    """What `returns` (members, seatings, episodes) of `payload` hold for `replay`'s episode."""
    member = [m["name"] for m in payload["members"]].index(replay["member"])
    seating = [seating_key(s) for s in payload["protocol"]["seatings"]].index(
        seating_key(replay["seating"])
    )
    return float(returns[member, seating, replay["episode"]])


def _set_of(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: payload["teammate_set"][k] for k in ("id", "manifest_sha256")}


def save(root: Path, slug: str, replays: list[dict[str, Any]]) -> str:
    """Write the replays of `slug` (`write_replays`, atomically); their file's sha256."""
    from aht_bench.evaluation.replay import write_replays

    path = replays_path(root, slug)
    write_replays(path, replays)  # atomic_write_bytes makes the folder
    return _sha256(path.read_bytes())


def remove(root: Path, slug: str) -> None:
    """Drop the replays of `slug` and their page (the re-run they came from is no longer the
    entry's)."""
    replays_path(root, slug).unlink(missing_ok=True)
    page_path(root, slug).unlink(missing_ok=True)


def current(root: Path, slug: str, line: dict[str, Any] | None) -> str | None:
    """The sha256 of `slug`'s replays when the ledger line `line` (current for the entry) names
    that file's bytes, else None: replays to show."""
    want = None if line is None else line.get("replays_sha256")
    path = replays_path(root, slug)
    if not want or not path.is_file():
        return None
    return want if _sha256(path.read_bytes()) == want else None


def read(root: Path, slug: str) -> list[dict[str, Any]]:
    from aht_bench.evaluation.replay import ReplayError, read_replays

    try:
        return read_replays(replays_path(root, slug))
    except ReplayError as e:
        raise EntryError(f"{e}; re-run `aht-bench leaderboard verify {slug}`") from None


def _load(root: Path, slug: str) -> list[dict[str, Any]]:
    """The replays of `slug` as JSON, read without replaying or importing JAX (for the links
    and the page's text)."""
    try:
        data = json.loads(replays_path(root, slug).read_bytes())
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise TypeError("not a list of objects")
        return data
    except (OSError, ValueError, TypeError) as e:
        raise EntryError(
            f"{replays_path(root, slug)} is not a list of replays ({e}); re-run "
            f"`aht-bench leaderboard verify {slug}`"
        ) from None


def members(root: Path, slug: str) -> list[str]:
    """The teammates the replays of `slug` show, in order (for the links of the pages)."""
    return list(dict.fromkeys(str(r.get("member")) for r in _load(root, slug)))


def note(entry: dict[str, Any], line: dict[str, Any], replays: list[dict[str, Any]]) -> str:
    """Where a page's episodes come from, and how many returns are the record's own."""
    payload = entry["payload"]
    mine = returns_of(payload)[0]  # the first file's; the re-run played the record's seed
    identical = sum(float(r["return"]) == _recorded(mine, payload, r) for r in replays)
    episodes = 1 + max(r["episode"] for r in replays)
    file = agent_files(payload)[0]
    seeds = " (the first seed's)" if len(agent_files(payload)) > 1 else ""
    return (
        f"Episodes of the sandboxed re-run by `aht-bench leaderboard verify` on "
        f"{line.get('replays_date_utc', '?')}: the first "
        f"{episodes} episode(s) of every teammate and seating with the record's seed, agent file "
        f"{file['file']}{seeds} (sha256 {file['sha256'][:16]}...). Returns identical to the "
        f"record's for the same episodes: {identical} of {len(replays)}."
    )


def pages(
    root: Path,
    shown: dict[str, tuple[dict[str, Any], dict[str, Any]]],
    *,
    check: bool = False,
    on_page: Callable[[Path], None] | None = None,
) -> list[Path]:
    """Make the viewer page of every entry in `shown` (slug -> (entry, its current ledger line
    with replays)) whose page is missing or stale, and remove pages of no such entry; the
    pages that changed (with `check`, that would change; nothing is written). `on_page(path)`
    is called before a page is drawn."""
    from aht_bench.evaluation.viewer import page_stamp, stamp, write_viewer

    changed = []
    for slug, (entry, line) in sorted(shown.items()):
        path = page_path(root, slug)
        title = f"{entry['leaderboard']['name']}: replays on {entry['payload']['task_id']}"
        text = note(entry, line, _load(root, slug))
        # the replays' bytes and the page's words: a page is stale when either changed
        words = _sha256(f"{title}\n{text}".encode())[:16]
        source = f"sha256:{line['replays_sha256']}; text {words}"
        if page_stamp(path) == stamp(source):
            continue
        changed.append(path)
        if check:
            continue
        if on_page is not None:
            on_page(path)
        write_viewer(path, read(root, slug), title, text, source)
    folder = root / FOLDER
    for path in sorted(folder.glob("*.html")) if folder.is_dir() else []:
        if path.stem not in shown:
            changed.append(path)
            if not check:
                path.unlink()
    return changed


__all__ = [
    "FOLDER",
    "ReplaysError",
    "current",
    "members",
    "note",
    "page_path",
    "pages",
    "read",
    "remove",
    "replays_path",
    "rerun_replays",
    "save",
]
