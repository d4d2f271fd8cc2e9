"""Measured training throughput per method, task and preset, for `aht-bench sweep --dry-run`.

    python benchmarks/sweep_throughput.py                  # rates of the bundled quick runs
    python benchmarks/sweep_throughput.py --measure paper  # + a short run per method and task
                                                           #   kind at the paper preset's
                                                           #   per-step settings (~1 h)

Both write `aht_bench/sweeps/throughput.json` (a measurement already there is kept unless
measured again).

- The bundled rates: the v1 reference agents' own measurements (agents/METHOD/TASK/card.json:
  env steps per seed and the wall seconds of the training calls, three seeds vmapped at the
  quick preset, compile included). They serve `quick` and `medium` (quick's per-step settings).
- `--measure PRESET`: for each method on LBF (lbf-v1) and on one Overcooked layout
  (overcooked-cramped_room-v2, the task kind's stand-in), a short run of PRESET's per-step
  settings (its envs, rollout length, epochs, minibatches, networks) with its budgets cut to
  `SHORT_ITERATIONS` small iterations (`short_overrides`), three seeds vmapped as the bundled
  runs were; the rate is the env steps per seed of iterations 2.. over their wall time (the
  first iteration's compile left out). A task of the same kind without its own measurement is
  estimated at its kind's rate, and the dry run says so.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "aht_bench" / "sweeps" / "throughput.json"
METHODS = ("rotate", "fcp", "brdiv", "comedi", "paired", "minimax", "cole")
KINDS = {"lbf": "lbf-v1", "overcooked": "overcooked-cramped_room-v2"}
SHORT_ITERATIONS = 4
SHORT_FRACTION = {"paper": 1 / 60, "quick": 1 / 6, "medium": 1 / 6}
"""Of each budget field, per preset: a short iteration of about half a minute to two minutes."""
METHOD_SCALE = {"paired": 1 / 4}
"""Times `SHORT_FRACTION`, per method whose budget unit is larger: a PAIRED iteration trains
the protagonist and the antagonist for a tenth of the whole run (24 M env steps on the paper's
LBF), so 1/60 of it was a 10-minute iteration here."""


def short_overrides(method: str, config: Any, fraction: float) -> dict[str, int]:
    """`--set` values that cut `config` (a method's preset) to `SHORT_ITERATIONS` iterations of
    `fraction` of its per-unit budgets, its per-step settings unchanged."""
    n = SHORT_ITERATIONS
    cut = lambda steps: max(1, int(steps * fraction))  # noqa: E731 (floored to whole updates)
    if method in ("rotate", "minimax"):
        return {
            "iterations": n,
            "teammate_timesteps": cut(config.teammate_timesteps),
            "ego_timesteps": cut(config.ego_timesteps),
        }
    if method == "paired":
        return {
            "iterations": n,
            "total_timesteps": cut(config.total_timesteps / config.iterations) * n,
        }
    if method == "fcp":
        return {
            "num_ippo_seeds": n - 1,
            "ego_iterations": 1,
            "teammate_timesteps": cut(config.teammate_timesteps),
            "ego_timesteps": cut(config.ego_timesteps / config.ego_iterations),
        }
    if method == "brdiv":
        per_iteration = config.generation_timesteps / config.generation_iterations
        # at least one update per iteration (the paper's is 9 pairs x 128 envs x 400 steps)
        update = config.population_size**2 * config.num_envs * config.rollout_length
        return {
            "generation_iterations": n - 1,
            "ego_iterations": 1,
            "generation_timesteps": max(cut(per_iteration), update) * (n - 1),
            "ego_timesteps": cut(config.ego_timesteps / config.ego_iterations),
        }
    if method == "comedi":
        return {
            "population_size": n - 1,
            "ego_iterations": 1,
            "teammate_timesteps": cut(config.teammate_timesteps),
            "ego_timesteps": cut(config.ego_timesteps / config.ego_iterations),
        }
    if method == "cole":
        return {
            "population_size": n,
            "timesteps_per_iteration": cut(config.timesteps_per_iteration),
        }
    raise ValueError(f"no short run for {method}")


def _metrics(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


def measure(method: str, task_id: str, preset: str) -> dict[str, Any]:
    """One short run of `preset`'s per-step settings (`short_overrides`); its rate."""
    from aht_bench.runs import RunSpec, get

    config = get(method).config(RunSpec(method, task_id, preset))
    overrides = short_overrides(
        method, config, SHORT_FRACTION[preset] * METHOD_SCALE.get(method, 1)
    )
    cli = Path(sys.executable).with_name("aht-bench")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = [str(cli), "train", method, "--task", task_id, "--preset", preset]
        command += ["--seeds", "3", "--no-progress", "--out", str(out)]
        command += [a for k, v in overrides.items() for a in ("--set", f"{k}={v}")]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
        rows = _metrics(out)
    first, last = rows[0], rows[-1]
    steps = last["env_steps"] - first["env_steps"]
    seconds = last["time_s"] - first["time_s"]
    return {
        "env_steps_per_second_per_seed": round(steps / seconds, 1),
        "seeds_vmapped": 3,
        "preset": preset,
        "machine": f"{platform.machine()}, {_cpu()}",
        "source": "benchmarks/sweep_throughput.py --measure "
        f"{preset}: a short run ({', '.join(f'{k}={v}' for k, v in overrides.items())}), "
        f"iterations 2-{len(rows)} ({steps:,} env steps per seed in {seconds:.0f} s; "
        f"{time.perf_counter() - start:.0f} s with compile and start-up)",
        "measured": time.strftime("%Y-%m-%d"),
    }


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def bundled() -> dict[str, dict[str, Any]]:
    rates: dict[str, dict[str, Any]] = {}
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
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--measure", choices=sorted(SHORT_FRACTION), default=None)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--kinds", default=",".join(KINDS), help="of " + ", ".join(KINDS))
    args = parser.parse_args(argv)
    unknown = [k for k in args.kinds.split(",") if k and k not in KINDS]
    if unknown:
        parser.error(f"--kinds: unknown {', '.join(unknown)}; choose of {', '.join(KINDS)}")
    held = json.loads(args.out.read_text()) if args.out.is_file() else {}
    measured = dict(held.get("measured", {}))
    if args.measure is not None:
        for method in [m for m in args.methods.split(",") if m]:
            for kind, task_id in [(k, KINDS[k]) for k in args.kinds.split(",") if k]:
                rate = measure(method, task_id, args.measure)
                measured[f"{method}/{kind}/{args.measure}"] = rate
                print(f"{method} {kind} {args.measure}: {rate['env_steps_per_second_per_seed']:,} "
                      "env steps/s per seed", flush=True)  # fmt: skip
                args.out.write_text(json.dumps(_data(measured), indent=1) + "\n")
    data = _data(measured)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out} ({len(data['rates'])} bundled rates, {len(measured)} measured)")
    return 0


def _data(measured: dict[str, Any]) -> dict[str, Any]:
    return {
        "command": "python benchmarks/sweep_throughput.py [--measure PRESET]",
        "what": "rates: per method/task, env steps per second per seed of the bundled quick "
        "reference runs (training calls, compile included; three seeds vmapped); measured: per "
        "method/task kind/preset, a short run's rate at that preset's per-step settings "
        "(three seeds vmapped, compile excluded)",
        "rates": bundled(),
        "measured": measured,
    }


if __name__ == "__main__":
    raise SystemExit(main())
