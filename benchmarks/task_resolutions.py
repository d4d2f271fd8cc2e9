"""How often a task name is resolved during one `aht-bench` command (issue 31, build item 4:
"the CLI turns a task id into a task object once and passes it down").

    python benchmarks/task_resolutions.py evaluate agents/examples/random_agent.py --task lbf \
        --episodes 1 --no-plot --no-progress --out /tmp/r.json

Runs the command in this process and counts every call of `aht_bench.envs.registry.resolve`
(however it was imported), by caller and by what it was given: `alias` (a name that is not a
registered id: a real resolution) or `id` (an id looked up again). An isolated agent's worker is
another process and is not counted. To count another tree, run from outside the checkout with
`PYTHONPATH=<tree>`; the first line printed is the package that was imported.
"""

from __future__ import annotations

import collections
import sys
import threading
from types import FrameType
from typing import Any

import aht_bench
from aht_bench.cli import main
from aht_bench.envs import registry


def count(argv: list[str]) -> collections.Counter[tuple[str, str]]:
    """(kind, caller) -> calls of `registry.resolve` while `aht-bench argv` runs."""
    code = registry.resolve.__code__
    calls: collections.Counter[tuple[str, str]] = collections.Counter()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call" or frame.f_code is not code or frame.f_back is None:
            return
        caller = frame.f_back.f_code
        where = caller.co_filename.split("aht_bench/")[-1] + ":" + caller.co_name
        kind = "id" if frame.f_locals.get("name") in registry.registered_ids() else "alias"
        calls[(kind, where)] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        main(argv, standalone_mode=False)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return calls


def main_() -> None:
    calls = count(sys.argv[1:])
    print(f"package: {aht_bench.__file__}")
    for (kind, where), n in sorted(calls.items()):
        print(f"{n:5d}  {kind:5s}  {where}")
    aliases = sum(n for (kind, _), n in calls.items() if kind == "alias")
    print(f"total {sum(calls.values())} calls, {aliases} of them resolving a name")


if __name__ == "__main__":
    main_()
