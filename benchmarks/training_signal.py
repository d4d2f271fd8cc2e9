"""Did a training run learn anything? For each run folder or reference bundle (a folder with a
`metrics.jsonl`), the best mean-over-seeds value any iteration reached of every `*return`
metric (base returns: sparse, no shaping) and the last mean-over-seeds value of every
`*entropy` metric (a policy near 0 plays one action; uniform over Overcooked's 6 is 1.79).

    python benchmarks/training_signal.py agents/*/forced_coord
    python benchmarks/training_signal.py ~/.cache/aht-bench/reference-runs/rotate-counter_circuit
"""

import json
import sys
from pathlib import Path


def _mean(values: list) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def signal(folder: Path) -> dict[str, float]:
    """metric -> best mean return over iterations, or last mean entropy."""
    best: dict[str, float] = {}
    last: dict[str, float] = {}
    for line in (folder / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        for name, value in row.items():
            if not isinstance(value, list):
                continue
            mean = _mean(value)
            if mean is None:
                continue
            if name.endswith("return"):
                best[name] = max(best.get(name, mean), mean)
            elif name.endswith("entropy"):
                last[name] = mean
    return {**{f"max {k}": v for k, v in best.items()}, **{f"last {k}": v for k, v in last.items()}}


def main(folders: list[str]) -> int:
    if not folders:
        print(__doc__, file=sys.stderr)
        return 2
    for name in folders:
        folder = Path(name)
        if not (folder / "metrics.jsonl").is_file():
            print(f"{folder}: no metrics.jsonl (give a run folder or an agents/<method>/<task>)")
            return 2
        values = signal(folder)
        cells = ", ".join(f"{k} {v:.3g}" for k, v in values.items())
        print(f"{folder}: {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
