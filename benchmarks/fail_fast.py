"""How long a broken agent file takes to reach its error: `aht-bench evaluate BROKEN --task
forced_coord --episodes 1`, a fresh process each time, timed from start to exit (issue 53:
15-27 s before the agent file was checked first; target under 5 s, median of 5).

The broken files are the agent corpus's load failures (tests/agent_corpus/: a syntax error, an
import error, no act(obs), act with a wrong signature, TASKS without the task), which the check
before the expensive start catches; and, for comparison, a file whose act raises on its first
observation, which only playing finds (after the task is built and the teammates loaded).
`--baseline ROOT` times the same commands with the aht-bench of another checkout (e.g. main,
before the check) alternately with this one, on the same machine at the same time.

    python benchmarks/fail_fast.py [--repeats 5] [--baseline /path/to/main] \\
        [--out benchmarks/results/fail_fast.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "agent_corpus"
CAUGHT_EARLY = ("syntax_error.py", "import_error.py", "no_act.py", "wrong_signature.py",
                "wrong_task.py")  # fmt: skip
FOUND_PLAYING = ("act_raises.py",)


def _evaluate(root: Path, agent: Path, out: Path) -> tuple[float, int, str]:
    """(seconds, exit code, the error's first line) of one `aht-bench evaluate` run of the
    aht-bench in `root`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AHT_BENCH_")}
    env["PYTHONPATH"] = str(root)
    env.setdefault("JAX_PLATFORMS", "cpu")
    args = [sys.executable, "-m", "aht_bench.cli", "evaluate", str(agent), "--task",
            "forced_coord", "--episodes", "1", "--out", str(out), "--no-progress"]  # fmt: skip
    start = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True, env=env, cwd=out.parent)
    seconds = time.perf_counter() - start
    error = next((line for line in r.stderr.splitlines() if line.startswith("error:")), "")
    return seconds, r.returncode, error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to time")
    parser.add_argument("--out", type=Path, default=None)
    a = parser.parse_args()
    roots = {"this": REPO} | ({"baseline": a.baseline.resolve()} if a.baseline else {})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in CAUGHT_EARLY + FOUND_PLAYING:
            times: dict[str, list[float]] = {label: [] for label in roots}
            seen: dict[str, tuple[int, str]] = {}
            for rep in range(a.repeats):
                order = list(roots) if rep % 2 == 0 else list(roots)[::-1]
                for label in order:
                    out = Path(tmp) / f"{label}-{rep}.json"
                    seconds, code, error = _evaluate(roots[label], CORPUS / name, out)
                    times[label].append(round(seconds, 2))
                    seen[label] = (code, error)
                    assert not out.exists(), f"{name}: a result was written"
            row = {"file": name, "caught_before_start": name in CAUGHT_EARLY,
                   "seconds": times,
                   "median": {k: statistics.median(v) for k, v in times.items()},
                   "exit_code": {k: v[0] for k, v in seen.items()},
                   "error": {k: v[1] for k, v in seen.items()}}  # fmt: skip
            rows.append(row)
            medians = ", ".join(f"{k} {v:.1f}s" for k, v in row["median"].items())
            print(f"{name:20s} median of {a.repeats}: {medians}; exit {row['exit_code']['this']}: "
                  f"{row['error']['this'][:110]}")  # fmt: skip
    early = [r["median"]["this"] for r in rows if r["caught_before_start"]]
    summary = {
        "command": "python benchmarks/fail_fast.py " + " ".join(sys.argv[1:]),
        "evaluate": "aht-bench evaluate BROKEN --task forced_coord --episodes 1 --no-progress",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "load_average_at_end": list(os.getloadavg()),
        "worst_median_caught_before_start": max(early),
        "rows": rows,
    }
    print(f"worst median of the files caught before the start: {max(early):.1f}s (target < 5 s)")
    if a.out:
        a.out.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
