"""The schema check of a leaderboard entry (`checks.check_entry`'s first check): the record has
every field `aht-bench evaluate` writes, of the right type, and the `leaderboard` block is well
formed; a multi-seed record (`protocol.runs` "seeds") has its per-seed fields, one per seed, and
no agent file twice.

    schema_errors(entry)    # [(what is wrong, how to fix it)], at most 10

May import the standard library, aht_bench.evaluation (record, scores) and
aht_bench.leaderboard.entries.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from aht_bench.evaluation import scores
from aht_bench.evaluation.record import FORMAT, FORMAT_VERSION, RUNS_SEEDS
from aht_bench.leaderboard.entries import BLOCK, MAX_DESCRIPTION, MAX_NAME

REEVALUATE = (
    "evaluate the agent again (`aht-bench evaluate AGENT --task TASK --out result.json`) and "
    "submit the file it writes, unedited"
)

Check = Callable[[Any], str | None]  # None when the value is fine, else what was expected


def _number(v: Any) -> str | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    return None if ok else "a finite number"


def _integer(v: Any) -> str | None:
    return None if isinstance(v, int) and not isinstance(v, bool) else "an integer"


def _positive(v: Any) -> str | None:
    return None if _integer(v) is None and v >= 1 else "an integer >= 1"


def _text(v: Any) -> str | None:
    return None if isinstance(v, str) and v else "a non-empty string"


def _text_or_null(v: Any) -> str | None:
    return None if v is None or isinstance(v, str) else "a string or null"


def _boolean(v: Any) -> str | None:
    return None if isinstance(v, bool) else "true or false"


def sha256_error(v: Any) -> str | None:
    ok = isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)
    return None if ok else "a sha256 (64 lowercase hex digits)"


def _simple_name(v: Any) -> str | None:
    ok = isinstance(v, str) and v and "/" not in v and "\\" not in v and v not in (".", "..")
    return None if ok else "a version name such as v1 (no path)"


def _mapping(v: Any) -> str | None:
    return None if isinstance(v, dict) else "an object"


def _interval(v: Any) -> str | None:
    if isinstance(v, list) and len(v) == 2 and all(_number(x) is None for x in v) and v[0] <= v[1]:
        return None
    return "[low, high]: two numbers, low <= high"


def _seatings(v: Any) -> str | None:
    ok = (
        isinstance(v, list)
        and len(v) > 0
        and all(
            isinstance(s, list) and s and all(_integer(x) is None and x >= 0 for x in s) for s in v
        )
    )
    return None if ok else "a non-empty list of seatings, each a non-empty list of seats"


def _confidence(v: Any) -> str | None:
    return None if _number(v) is None and 0 < v < 1 else "a number in (0, 1)"


def _agent_path(v: Any) -> str | None:
    if v is None:
        return None
    ok = (
        isinstance(v, str)
        and v
        and not v.startswith("/")
        and "\\" not in v
        and ".." not in v.split("/")
    )
    return None if ok else "null or a path relative to the repository, e.g. agents/x/agent.py"


def _seed_files(v: Any) -> str | None:
    ok = (
        isinstance(v, list)
        and len(v) >= 2
        and all(
            isinstance(f, dict)
            and _text(f.get("file")) is None
            and sha256_error(f.get("sha256")) is None
            and "kind" in f
            and _text_or_null(f["kind"]) is None
            for f in v
        )
    )
    return None if ok else "a list of 2 or more agent files, each {file, sha256, kind}"


def _list(v: Any) -> str | None:
    return None if isinstance(v, list) else "a list, one item per seed"


def _one_line(limit: int) -> Check:
    def check(v: Any) -> str | None:
        ok = isinstance(v, str) and 0 < len(v.strip()) and len(v) <= limit
        ok = ok and not any(ord(c) < 32 or ord(c) == 127 for c in v)
        return None if ok else f"one line of 1 to {limit} characters"

    return check


_ESTIMATE = {"value": _number, "ci": _interval}
_ENTRY_SPEC: dict[str, Any] = {
    "format_version": _integer,
    BLOCK: {
        "name": _one_line(MAX_NAME),
        "description": _one_line(MAX_DESCRIPTION),
        "agent_path": _agent_path,
    },
    "payload": {
        "package_version": _text,
        "libraries": _mapping,
        "task_id": _simple_name,
        "agent": {"file": _text, "sha256": sha256_error, "kind": _text_or_null, "runner": _text},
        "teammate_set": {
            "id": _text,
            "version": _simple_name,
            "manifest_sha256": sha256_error,
            "development_set": _boolean,
        },
        "protocol": {
            "episodes": _positive,
            "seed": _integer,
            "seatings": _seatings,
            "bootstrap": {
                "reps": _positive,
                "confidence": _confidence,
                "seed": _integer,
            },
        },
        "aggregates": {name: _ESTIMATE for name in scores.AGGREGATES},
    },
    "payload_sha256": _text,
}
_MEMBER_SPEC: dict[str, Any] = {
    "name": _text,
    "lower": _number,
    "upper": _number,
    "mean_return": _number,
    "normalized": _ESTIMATE,
    "max_normalized_episode": _number,
    "returns": _mapping,
}
# The multi-seed form (record.py): per-seed files, returns and scores.
_SEEDS_ENTRY_SPEC: dict[str, Any] = _ENTRY_SPEC | {
    BLOCK: {
        "name": _ENTRY_SPEC[BLOCK]["name"],
        "description": _ENTRY_SPEC[BLOCK]["description"],
        "agent_paths": _list,
    },
    "payload": _ENTRY_SPEC["payload"] | {"agent": {"files": _seed_files, "runner": _text}},
}
_SEEDS_MEMBER_SPEC: dict[str, Any] = {k: v for k, v in _MEMBER_SPEC.items() if k != "returns"} | {
    "normalized_per_seed": _list,
    "returns_per_seed": _list,
}


def _walk(value: Any, spec: Any, where: str, errors: list[str]) -> None:
    if callable(spec):
        expected = spec(value)
        if expected is not None:
            errors.append(f"{where} should be {expected}, not {_show(value)}")
        return
    if not isinstance(value, dict):
        errors.append(f"{where} should be an object, not {_show(value)}")
        return
    for key, sub in spec.items():
        if key not in value:
            errors.append(f"{where}.{key} is missing")
        else:
            _walk(value[key], sub, f"{where}.{key}", errors)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def seating_key(seating: list[int]) -> str:
    """The key of a seating's returns in a member entry (`record.member_entries`): "0" or "0,1"."""
    return ",".join(str(s) for s in seating)


def schema_errors(entry: Any) -> list[tuple[str, str]]:
    """(what is wrong, how to fix it) for each schema error of `entry` (at most 10)."""
    errors: list[str] = []
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return [(f'the file has no "format": "{FORMAT}"', REEVALUATE)]
    payload = entry.get("payload")
    protocol = payload.get("protocol") if isinstance(payload, dict) else None
    runs = protocol.get("runs") if isinstance(protocol, dict) else None
    seeded = runs == RUNS_SEEDS
    _walk(entry, _SEEDS_ENTRY_SPEC if seeded else _ENTRY_SPEC, "entry", errors)
    if runs is not None and not seeded:
        errors.append(
            f"entry.payload.protocol.runs should be {RUNS_SEEDS!r} (a multi-seed record) or "
            f"absent (one agent file), not {_show(runs)}"
        )
    files = _checked_files(payload) if seeded else None
    if seeded and files is not None:
        errors += _seed_file_errors(entry, files)
    block_errors = [e for e in errors if e.startswith(f"entry.{BLOCK}")]
    out = [(e.removeprefix("entry."), REEVALUATE) for e in errors if e not in block_errors]
    block_fix = "submit the result record again with `aht-bench leaderboard submit`"
    out += [(e.removeprefix("entry."), block_fix) for e in block_errors]
    if entry.get("format_version") not in (None, FORMAT_VERSION):
        out.append(
            (f"format_version is {entry['format_version']!r}, not {FORMAT_VERSION}", REEVALUATE)
        )
    if not (
        isinstance(payload, dict)
        and isinstance(protocol, dict)
        and _positive(protocol.get("episodes")) is None
        and _seatings(protocol.get("seatings")) is None
        and (not seeded or files is not None)
    ):
        return out[:10]  # the members cannot be checked without these
    members = payload.get("members")
    if not isinstance(members, list) or not members:
        out.append(("payload.members should be a non-empty list of members", REEVALUATE))
        return out[:10]
    episodes = protocol["episodes"]
    keys = [seating_key(s) for s in protocol["seatings"]]
    for i, member in enumerate(members):
        where = f"payload.members[{i}]"
        member_errors: list[str] = []
        _walk(member, _SEEDS_MEMBER_SPEC if seeded else _MEMBER_SPEC, where, member_errors)
        out += [(e, REEVALUATE) for e in member_errors]
        if member_errors:
            continue
        per_seating = member.get("mean_return_per_seating")
        if not (
            isinstance(per_seating, list)
            and len(per_seating) == len(keys)
            and all(_number(x) is None for x in per_seating)
        ):
            out.append(
                (f"{where}.mean_return_per_seating should be {len(keys)} numbers", REEVALUATE)
            )
        if files is None:
            problems = _returns_errors(member["returns"], keys, episodes, f"{where}.returns")
            out += [(e, REEVALUATE) for e in problems]
            continue
        n = len(files)
        per_seed = member["normalized_per_seed"]
        if len(per_seed) != n or any(_number(x) is not None for x in per_seed):
            out.append(
                (
                    f"{where}.normalized_per_seed should be {n} numbers, one per seed "
                    "(payload.agent.files)",
                    REEVALUATE,
                )
            )
        seeds = member["returns_per_seed"]
        if len(seeds) != n:
            out.append(
                (
                    f"{where}.returns_per_seed should hold {n} seeds' returns "
                    f"(payload.agent.files), not {len(seeds)}",
                    REEVALUATE,
                )
            )
            continue
        for f, returns in enumerate(seeds):
            at = f"{where}.returns_per_seed[{f}]"
            if not isinstance(returns, dict):
                out.append((f"{at} should be an object, not {_show(returns)}", REEVALUATE))
                continue
            out += [(e, REEVALUATE) for e in _returns_errors(returns, keys, episodes, at)]
    return out[:10]


def _returns_errors(
    returns: dict[str, Any], keys: list[str], episodes: int, where: str
) -> list[str]:
    """What is wrong with the per-seating per-episode returns `returns` ({"<seats>": [...]})."""
    if sorted(returns) != sorted(keys):
        return [f"{where} should have the seatings {keys} as keys, not {sorted(returns)}"]
    out = []
    for key in keys:
        r = returns[key]
        if not (isinstance(r, list) and len(r) == episodes and all(_number(x) is None for x in r)):
            out.append(
                f"{where}[{key!r}] should be {episodes} numbers (protocol.episodes), one per "
                "episode"
            )
    return out


def _checked_files(payload: Any) -> list[dict[str, Any]] | None:
    """A multi-seed payload's agent files when well formed (else None)."""
    agent = payload.get("agent") if isinstance(payload, dict) else None
    files = agent.get("files") if isinstance(agent, dict) else None
    return files if _seed_files(files) is None else None


def _seed_file_errors(entry: dict[str, Any], files: list[dict[str, Any]]) -> list[str]:
    """A file given twice (one trained agent counted as two seeds) and a block whose
    `agent_paths` do not match the files."""
    errors = []
    first: dict[str, int] = {}
    for i, f in enumerate(files):
        j = first.setdefault(f["sha256"], i)
        if j != i:
            errors.append(
                f"entry.payload.agent.files[{i}].sha256 repeats files[{j}]'s: one agent file "
                "counted as two seeds; evaluate each training seed's file once"
            )
    block = entry.get(BLOCK)
    paths = block.get("agent_paths") if isinstance(block, dict) else None
    if isinstance(paths, list):
        if len(paths) != len(files) or any(_agent_path(x) is not None for x in paths):
            errors.append(
                f"entry.{BLOCK}.agent_paths should be {len(files)} items, one per seed "
                "(payload.agent.files), each null or a path relative to the repository"
            )
    return errors
