"""The sha256 of one sabotage cell's P(S) array: is a difference the code or the host?

    python benchmarks/sabotage_cell_digest.py                       # per-trajectory, 10 seeds
    PYTHONPATH=<worktree of an older commit> python benchmarks/sabotage_cell_digest.py

Trains one cell of `aht-bench experiment sabotage` (the last of its main runs, per-trajectory
regret at lambda 0, by default; `--cell N` another) with the experiment's seeds and key, and
prints the sha256 of the last teammate's P(S) at the 341 states (float32, seeds x states) and
seed 0's first values. The same digest from two commits on one host: the code computes the same;
two hosts giving two digests from one commit: the host (benchmarks/results/cross_host.md). About
4 minutes on two CPU cores.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile

import numpy as np

from aht_bench.experiments import sabotage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", type=int, default=-1, help="index into the main runs")
    parser.add_argument("--seeds", type=int, default=sabotage.DEFAULT_SEEDS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as out:
        plan = sabotage.plan(out, seeds=args.seeds)
        cell = plan.main[args.cell]
        result = sabotage._train(cell, args.seeds, plan.overrides)
    p_s = np.asarray(result.p_sabotage, dtype=np.float32)
    print(f"{cell.name}: P(S) {p_s.shape} sha256 {hashlib.sha256(p_s.tobytes()).hexdigest()}")
    print("seed 0, states 0-3:", " ".join(f"{v:.8g}" for v in p_s[0, :4]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
