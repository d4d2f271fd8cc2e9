"""Measured training throughput per method and task, for `aht-bench sweep --dry-run` estimates.

    python benchmarks/sweep_throughput.py          # writes aht_bench/sweeps/throughput.json

The numbers are the bundled reference agents' own measurements (agents/METHOD/TASK/card.json:
env steps per seed and the wall seconds of the training calls, three seeds vmapped at the quick
preset, on the machine the card names). Per seed, a run's rate is `env_steps_per_seed /
wall_seconds`; a one-seed run is somewhat faster than that, a GPU much faster.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "aht_bench" / "sweeps" / "throughput.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rates: dict[str, dict[str, object]] = {}
    for card_path in sorted((REPO / "agents").glob("*/*/card.json")):
        card = json.loads(card_path.read_text())
        key = f"{card['algorithm']}/{card['task_id']}"
        rates[key] = {
            "env_steps_per_second_per_seed": round(
                card["env_steps_per_seed"] / card["wall_seconds"], 1
            ),
            "seeds_vmapped": card["num_seeds"],
            "preset": card["preset"],
            "machine": card["machine"],
            "source": str(card_path.relative_to(REPO)),
        }
    data = {
        "command": "python benchmarks/sweep_throughput.py",
        "what": "per method/task: env steps per second per seed of the bundled reference "
        "runs (training calls, compile included; the seeds vmapped)",
        "rates": rates,
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out} ({len(rates)} method/task rates)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
