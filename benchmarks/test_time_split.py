"""Split two `make test` runs' time into the tests both ran and the tests only one ran.

    PYTEST_ADDOPTS="--durations=0" make test > test.log     # in each tree (before, after)
    python benchmarks/test_time_split.py before/test.log after/test.log [--top 15]

Reads pytest's "slowest durations" table (setup, call and teardown of every test) of each log
and prints: the summed time of the tests in both runs (before, after, ratio), of the tests only
in one run, the rest of each run's wall time (collection, imports, fixtures shared by tests,
anything pytest does not time per test), and the tests that moved most. So "is the suite slower"
can be answered separately for the same tests and for the tests that were added or removed.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

ROW = re.compile(r"^(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S+)")
SUMMARY = re.compile(r" in (\d+(?:\.\d+)?)s")


def durations(log: Path) -> tuple[dict[str, float], float | None]:
    """(test id -> seconds (setup + call + teardown), the run's wall time from its summary)."""
    per_test: dict[str, float] = defaultdict(float)
    wall = None
    for line in log.read_text(errors="replace").splitlines():
        match = ROW.match(line)
        if match:
            per_test[match.group(3)] += float(match.group(1))
        elif line.startswith("=") or " passed" in line:
            found = SUMMARY.search(line)
            if found and ("passed" in line or "failed" in line):
                wall = float(found.group(1))
    if not per_test:
        raise SystemExit(f"{log}: no durations table (run pytest with --durations=0)")
    return dict(per_test), wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    (a, wall_a), (b, wall_b) = durations(args.before), durations(args.after)
    both = sorted(set(a) & set(b))
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    sum_a, sum_b = sum(a[t] for t in both), sum(b[t] for t in both)
    print(f"tests timed: before {len(a)}, after {len(b)}; in both {len(both)}")
    print(f"in both:       before {sum_a:8.1f}s  after {sum_b:8.1f}s  ratio {sum_b / sum_a:.3f}")
    print(f"only before:   {len(only_a):4d} tests {sum(a[t] for t in only_a):8.1f}s")
    print(f"only after:    {len(only_b):4d} tests {sum(b[t] for t in only_b):8.1f}s")
    for name, wall, per in (("before", wall_a, a), ("after", wall_b, b)):
        if wall is not None:
            print(f"{name}: wall {wall:.1f}s, per-test sum {sum(per.values()):.1f}s, "
                  f"untimed rest {wall - sum(per.values()):.1f}s")  # fmt: skip
    moved = sorted(both, key=lambda t: b[t] - a[t])
    print(f"\nfaster after (top {args.top}):")
    for t in moved[: args.top]:
        print(f"  {a[t]:7.2f}s -> {b[t]:7.2f}s  {t}")
    print(f"slower after (top {args.top}):")
    for t in reversed(moved[-args.top :]):
        print(f"  {a[t]:7.2f}s -> {b[t]:7.2f}s  {t}")
    by_file: dict[str, float] = defaultdict(float)
    for t in only_b:
        by_file[t.split("::")[0]] += b[t]
    print("\nadded tests by file (after):")
    for f, s in sorted(by_file.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {s:7.1f}s  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
