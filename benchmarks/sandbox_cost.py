"""What the bubblewrap sandbox costs: `aht-bench evaluate` on `make demo`'s plain agents with the
agent in the sandbox (the default) and in a plain child process (`--no-sandbox`, the path that
`--isolate` was before the sandbox), alternated in one run on one machine.

Target (issue 28): the sandboxed wall time at most 1.5x the plain child process's, and the same
returns episode by episode. Each evaluation is a fresh `aht-bench evaluate` process, timed from
start to exit (Python and JAX start-up, the worker's boot, every episode, the bootstrap).
`--episodes` is per teammate and seating (make demo: 4 on cramped_room, 16 on LBF; fewer keeps
the benchmark to minutes, the per-step cost is what differs).

    python benchmarks/sandbox_cost.py [--episodes-cramped 1] [--episodes-lbf 4] [--repeats 2] \\
        [--out benchmarks/results/sandbox_cost.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = (  # (agent, task): make demo's plain (step-by-step) agents
    ("agents/examples/random_agent.py", "cramped_room"),
    ("agents/examples/scripted_agent.py", "lbf"),
)


def _evaluate(agent: str, task: str, episodes: int, sandbox: bool, out: Path) -> float:
    args = [sys.executable, "-m", "aht_bench.cli", "evaluate", str(REPO / agent), "--task", task]
    args += ["--episodes", str(episodes), "--out", str(out), "--no-plot", "--no-progress"]
    args += [] if sandbox else ["--no-sandbox"]
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, cwd=REPO)
    return time.perf_counter() - start


def _returns(path: Path) -> list[float]:
    members = json.loads(path.read_text())["payload"]["members"]
    return [r for m in members for s in sorted(m["returns"]) for r in m["returns"][s]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes-cramped", type=int, default=1)
    parser.add_argument("--episodes-lbf", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    a = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for agent, task in CASES:
            episodes = a.episodes_cramped if task == "cramped_room" else a.episodes_lbf
            times: dict[str, list[float]] = {"sandbox": [], "process": []}
            returns = {}
            for rep in range(a.repeats):
                for mode in ("process", "sandbox") if rep % 2 == 0 else ("sandbox", "process"):
                    out = Path(tmp) / f"{Path(agent).stem}-{mode}-{rep}.json"
                    times[mode].append(_evaluate(agent, task, episodes, mode == "sandbox", out))
                    returns[mode] = _returns(out)
            best = {mode: min(t) for mode, t in times.items()}
            row = {
                "agent": agent,
                "task": task,
                "episodes": episodes,
                "seconds": times,
                "ratio_best": best["sandbox"] / best["process"],
                "same_returns": returns["sandbox"] == returns["process"],
            }
            rows.append(row)
            print(
                f"{agent} on {task} ({episodes} episodes per member and seating): --no-sandbox "
                f"{best['process']:.1f}s, sandbox {best['sandbox']:.1f}s (best of "
                f"{a.repeats}): ratio {row['ratio_best']:.2f}; same returns: "
                f"{row['same_returns']}"
            )
    worst = max(r["ratio_best"] for r in rows)
    verdict = "PASS" if worst <= 1.5 and all(r["same_returns"] for r in rows) else "FAIL"
    print(f"worst ratio {worst:.2f} (target <= 1.5): {verdict}")
    if a.out is not None:
        result = {
            "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
            "machine": f"{platform.node()} ({os.cpu_count()} CPUs), load {os.getloadavg()}",
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "rows": rows,
            "worst_ratio": worst,
            "verdict": verdict,
        }
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
