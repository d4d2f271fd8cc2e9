"""The random-agent floor of each teammate set: what uniform random actions score on it, to read
an agent's aggregates against (issue 53: 0.21 on forced_coord is the floor, not a start).

    floor = random_floor("overcooked-forced_coord-v2/v2", manifest_sha256)   # or None
    line = floor_line(record)      # what `aht-bench evaluate` prints under the aggregates

The scores are a measurement shipped with the package, `random_floor.json` beside this module,
written by `benchmarks/random_floor.py`: every published set (and the development sets) played
by an ego of uniform random actions under evaluate's protocol (64 episodes per member and
seating, seed 0), with each aggregate's CI. A set's entry holds the sha256 of the manifest it
was measured on; a set whose manifest differs (a development set rebuilt, a set folder of one's
own) has no floor here, and the line says how to measure it.

May import the standard library.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

FLOOR_FILE = Path(__file__).resolve().parent / "random_floor.json"
AGGREGATES = (("mean", "mean"), ("iqm", "IQM"), ("median", "median"), ("worst_case", "worst case"))


@functools.cache
def _table() -> dict[str, Any]:
    try:
        return json.loads(FLOOR_FILE.read_text())
    except (OSError, ValueError):
        return {"sets": {}}


def random_floor(set_id: str, manifest_sha256: str | None) -> dict[str, Any] | None:
    """The random agent's aggregates on the set `set_id` ({"mean": {"value", "ci"}, ...}), or
    None when it was not measured on this manifest."""
    entry = _table().get("sets", {}).get(set_id)
    if not entry or manifest_sha256 is None or entry.get("manifest_sha256") != manifest_sha256:
        return None
    return entry


def floor_line(record: dict[str, Any]) -> str:
    """One line on the random agent's score on the record's teammate set: its mean and IQM with
    their CIs, or that it was not measured and how to measure it."""
    payload = record["payload"]
    ts = payload["teammate_set"]
    floor = random_floor(ts["id"], ts.get("manifest_sha256"))
    if floor is None:
        return (
            f"random-agent floor: not measured for {ts['id']} (a development set or a set of "
            f"your own); `aht-bench evaluate agents/examples/random_agent.py --task "
            f"{payload['task_id']} --teammates {ts.get('version') or 'SET'}` measures it"
        )
    parts = []
    for key, label in AGGREGATES[:2]:
        lo, hi = floor[key]["ci"]
        parts.append(f"{label} {floor[key]['value']:.3f} [{lo:.3f}, {hi:.3f}]")
    table = _table()
    return (
        f"random-agent floor on {ts['id']}: {', '.join(parts)} (uniform random actions, "
        f"{table.get('episodes', '?')} episodes; {table.get('measured_by', 'random_floor.json')})"
    )


__all__ = ["FLOOR_FILE", "floor_line", "random_floor"]
