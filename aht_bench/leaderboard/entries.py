"""Leaderboard entries on disk: the evaluator's result record plus who submitted it.

    {
      "format": "aht-bench-result", "format_version": 1,     # the result record, unchanged
      "leaderboard": {"name": "...", "description": "...", "agent_path": "agents/x.py" | null},
      "payload": {...}, "payload_sha256": "...", "meta": {...}
    }

An entry is still a result record: the `leaderboard` block sits outside the payload, so
`payload_sha256` stays the evaluator's and `aht-bench compare` reads entries as they are.
`agent_path` is the agent file's path relative to the repository when the file is in it (what
`verify` re-runs and hashes), else null. The entry of a multi-seed record (`protocol.runs`
"seeds", one agent file per training seed) has `agent_paths` instead: one such path or null per
seed, in the record's seed order (`entry_agent_paths` reads both forms).

Entries live in `leaderboard/entries/<slug>.json` with the slug `<name>--<task_id>--<version>`
(the name lower-cased, runs of other characters than a-z and 0-9 turned into `-`), so one name
has one entry per task and heldout version. `$AHT_BENCH_LEADERBOARD` moves the leaderboard
folder (tests use it); the repository is the folder above the package.

May import the standard library, aht_bench.files and aht_bench.evaluation.record.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import unicodedata
from pathlib import Path, PurePath
from typing import Any

from aht_bench.evaluation.record import FORMAT

LEADERBOARD_ENV = "AHT_BENCH_LEADERBOARD"  # overrides where the leaderboard folder is
BLOCK = "leaderboard"  # the entry's key for what the submitter adds to the record
ENTRIES = "entries"
MAX_NAME = 80
MAX_DESCRIPTION = 500


class EntryError(ValueError):
    """Input that is not a result record or entry at all, or a bad name (a usage error)."""


class EntryExistsError(EntryError):
    """Submitting over an existing entry without `replace`."""


def repo_root() -> Path:
    """The checkout the package lives in: agent paths of entries are relative to it."""
    return Path(__file__).resolve().parents[2]


class NoBoardError(EntryError):
    """No leaderboard folder: the package runs outside a checkout and none was given."""


OUTSIDE_HELP = (
    "aht-bench runs outside a checkout of its repository, so there is no leaderboard/ to "
    "write to (an installed package never writes into site-packages). To submit an entry: "
    "(1) here, score the agent: `aht-bench evaluate my_agent.py --task TASK --out result.json`; "
    "(2) in a clone of the aht-bench repository (`make install` there), copy my_agent.py to "
    "agents/<you>/ and run `aht-bench leaderboard submit result.json --name NAME --description "
    "TEXT --agent agents/<you>/my_agent.py`, which re-runs the agent and writes "
    "leaderboard/entries/<entry>.json; (3) open a pull request with that entry and the agent "
    'file; CI re-runs it before it ranks (`aht-bench docs leaderboard`, "From outside a '
    'checkout"). For a board of your own instead, make a folder and pass it: '
    "`aht-bench leaderboard --board DIR submit result.json --name NAME --description TEXT`."
)


def checkout_leaderboard() -> Path | None:
    """leaderboard/ of the checkout the package runs from, or None outside one (installed)."""
    root = repo_root()
    if (root / "pyproject.toml").is_file() and (root / "leaderboard").is_dir():
        return root / "leaderboard"
    return None


def leaderboard_root() -> Path:
    """The leaderboard folder: $AHT_BENCH_LEADERBOARD (the CLI's `--board DIR` sets it), else
    leaderboard/ of the checkout; outside a checkout with neither, a `NoBoardError`."""
    override = os.environ.get(LEADERBOARD_ENV)
    if override:
        return Path(override)
    board = checkout_leaderboard()
    if board is None:
        raise NoBoardError(OUTSIDE_HELP)
    return board


def entries_folder(root: Path | None = None) -> Path:
    return (root or leaderboard_root()) / ENTRIES


def entry_paths(root: Path | None = None) -> list[Path]:
    """Every entry file, sorted by name (hidden files, such as half-written temp files, skipped)."""
    folder = entries_folder(root)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith("."))


def slugify(text: str) -> str:
    """`text` lower-cased in ASCII, every run of other characters than a-z0-9 one `-`."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


def entry_slug(name: str, task_id: str, version: str) -> str:
    return f"{slugify(name)}--{slugify(task_id)}--{slugify(version)}"


def check_name(name: str) -> str:
    """`name` stripped, or an EntryError saying what a name may be."""
    name = name.strip()
    if not name or len(name) > MAX_NAME or _has_control(name):
        raise EntryError(
            f"--name {name!r}: give one line of 1 to {MAX_NAME} characters, e.g. "
            '--name "random (example)"'
        )
    if not slugify(name):
        raise EntryError(
            f"--name {name!r} has no letter or digit (a-z, 0-9) to name the entry file after; "
            "add one"
        )
    return name


def check_description(description: str) -> str:
    description = description.strip()
    if not description or len(description) > MAX_DESCRIPTION or _has_control(description):
        breaks = ", with line breaks" if _has_control(description) else ""
        raise EntryError(
            f"--description: give one line of 1 to {MAX_DESCRIPTION} characters saying what "
            f"the agent is and how it was trained (got {len(description)} characters{breaks})"
        )
    return description


def _has_control(text: str) -> bool:
    return any(unicodedata.category(c) == "Cc" for c in text)


def read_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The result record or entry in `path`, parsed: an EntryError unless it is a JSON object
    with the result-record format marker (everything else is left to `checks`)."""
    p = Path(path)
    try:
        blob = p.read_bytes()
    except OSError as e:
        raise EntryError(f"cannot read {p}: {e.strerror or e}") from None
    try:
        data = json.loads(blob)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise EntryError(
            f"{p} is not valid JSON ({e}); pass the file `aht-bench evaluate --out` wrote"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise EntryError(
            f'{p} is not an aht-bench result record (no "format": "{FORMAT}"); pass the file '
            "`aht-bench evaluate AGENT --task T --out result.json` wrote"
        )
    return data


def make_entry(
    record: dict[str, Any],
    name: str,
    description: str,
    agent_path: str | None | list[str | None],
) -> dict[str, Any]:
    """The entry of `record`: the record's keys, unchanged, with the `leaderboard` block after
    the format marker (any block the record had is replaced). `agent_path` is a list, one
    path or None per seed, for a multi-seed record (stored as `agent_paths`)."""
    block: dict[str, Any] = {"name": name, "description": description}
    if isinstance(agent_path, list):
        block["agent_paths"] = agent_path
    else:
        block["agent_path"] = agent_path
    head = {k: record[k] for k in ("format", "format_version") if k in record}
    rest = {k: v for k, v in record.items() if k not in head and k != BLOCK}
    return head | {BLOCK: block} | rest


def entry_agent_paths(entry: dict[str, Any]) -> list[str | None]:
    """The repository-relative path (or None) of each agent file of a checked entry, in seed
    order: one for a one-file entry."""
    block = entry[BLOCK]
    return list(block["agent_paths"]) if "agent_paths" in block else [block["agent_path"]]


def record_of(entry: dict[str, Any]) -> dict[str, Any]:
    """The result record inside an entry (the entry without its `leaderboard` block)."""
    return {k: v for k, v in entry.items() if k != BLOCK}


def entry_bytes(entry: dict[str, Any]) -> bytes:
    """How an entry is written: the evaluator's layout (`record.write_record`)."""
    return (json.dumps(entry, indent=1, allow_nan=False) + "\n").encode()


def write_entry(path: Path, entry: dict[str, Any]) -> None:
    """Write `entry` to `path` atomically (a temp file renamed over it)."""
    from aht_bench.files import atomic_write_bytes

    atomic_write_bytes(path, entry_bytes(entry))


def find_entry(name: str | os.PathLike[str], root: Path | None = None) -> Path:
    """The entry file `name`: a path, or a file name or slug in leaderboard/entries/."""
    as_path = Path(name)
    if as_path.is_file():
        return as_path
    folder = entries_folder(root)
    for candidate in (folder / str(name), folder / f"{name}.json"):
        if candidate.is_file():
            return candidate
    have = [p.stem for p in entry_paths(root)]
    listing = f"entries in {folder}: {', '.join(have)}" if have else f"{folder} holds no entries"
    raise EntryError(f"no leaderboard entry {str(name)!r}; pass an entry file or slug ({listing})")


def locate_agent(recorded: str | None, repo: Path | None = None) -> str | None:
    """The repository-relative POSIX path of the agent file a record names (its
    `meta.agent_path`, as typed on the evaluating machine), or None when no file of the
    repository matches it. A path from another machine matches by its longest tail that
    exists in the repository (`/home/x/aht-bench/agents/a.py` -> `agents/a.py`), also when the
    path exists on this machine in another checkout; the agent hash check then decides whether
    it is the same file."""
    if not recorded:
        return None
    repo = (repo or repo_root()).resolve()
    direct = Path(recorded)
    if direct.is_file() and repo_relative(direct, repo) is not None:
        return repo_relative(direct, repo)
    parts = [p for p in PurePath(recorded).parts if p not in ("/", "\\")]
    if ".." in parts:
        return None
    for i in range(len(parts)):
        candidate = repo.joinpath(*parts[i:])
        if candidate.is_file():
            return candidate.relative_to(repo).as_posix()
    return None


def git_ignored(paths: list[str], repo: Path | None = None) -> list[str]:
    """The repository-relative `paths` that git ignores (a `.gitignore` rule names them): a
    clean checkout of the repository will not have them, so CI cannot re-run an entry whose
    agent file is one (a sweep's or a run's folder). Empty when `repo` is not a git checkout
    or git is not installed."""
    repo = repo or repo_root()
    if not paths or not (repo / ".git").exists():
        return []
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "check-ignore", "--stdin"],
            input="\n".join(paths),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line for line in done.stdout.splitlines() if line] if done.returncode == 0 else []


def repo_relative(path: Path, repo: Path | None = None) -> str | None:
    """`path` relative to the repository (POSIX), or None when it lies outside."""
    try:
        return path.resolve().relative_to((repo or repo_root()).resolve()).as_posix()
    except ValueError:
        return None
