"""Fingerprints of what every training method produces, to check a refactor changes nothing.

    python benchmarks/method_fingerprints.py --out benchmarks/results/method_fingerprints.json
    python benchmarks/method_fingerprints.py --check benchmarks/results/method_fingerprints.json
    python benchmarks/method_fingerprints.py --budget quick --only rotate,fcp   # minutes each

Each method of `aht_bench.runs.ALGORITHMS` is trained through the same path as `aht-bench
train` (`aht_bench.runs.train`, fixed seed 0, one seed) on LBF, at `--budget tiny` (the quick
preset shrunk to a few updates per stage by `aht_bench.runs.smoke.OVERRIDES`: seconds to a
minute each, mostly compilation) or `quick` (the quick preset as shipped). The fingerprint of a
run is the sha256 of every tensor of every final policy file (`policies/final/*.safetensors`:
names, dtypes, shapes and bytes, in name order; the JSON cards, which hold times and paths, are
left out), one per file and one over all of them. `--check FILE` re-runs the methods FILE lists
at its budget with the overrides FILE recorded and exits 1 naming every method whose
parameters differ (issue 31: "parameters bit-identical to the code before the change", CPU;
XLA on one machine and one jax version is deterministic, so compare fingerprints made on the
same machine and library versions; XLA's CPU code depends on the instruction set, so the record
names the CPU and its vector extensions, and a check on another CPU says so: on 2026-11-28 a
host with AVX-512 gave other fingerprints than the baseline for every method, the same for the
code before and after the change). The run driver is looked up where it lives
(`aht_bench.runs`, or `aht_bench.training.runs` before issue 31), so a baseline can be made on
an older checkout: `PYTHONPATH=<checkout> python benchmarks/method_fingerprints.py --check
FILE --out BASE.json` there, with FILE a record made here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

TASK = "lbf"  # aht_bench.runs.smoke.TASK
TEAMMATES = ("lexi",)  # aht_bench.runs.smoke.TEAMMATES: br and ego train against a fixed teammate


def _smoke_overrides() -> dict[str, tuple[str, ...]]:
    """Per method, the smoke-run overrides of its quick preset (`aht_bench.runs.smoke`)."""
    try:
        from aht_bench.runs import smoke
    except ImportError:
        raise SystemExit(
            "this checkout has no aht_bench.runs.smoke (it predates issue 31's move): pass "
            "--check FILE, which re-runs the overrides FILE recorded"
        ) from None
    return smoke.OVERRIDES


def _overrides(items: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(item.split("=", 1)) for item in items)  # type: ignore[misc]


def tensors_sha256(path: Path) -> str:
    """sha256 over a safetensors file's tensors (name, dtype, shape, bytes; name order)."""
    from safetensors.numpy import load_file

    digest = hashlib.sha256()
    for name, array in sorted(load_file(str(path)).items()):
        a = np.ascontiguousarray(array)
        digest.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def _runs() -> Any:
    """The run driver: `aht_bench.runs`, or where it lived before issue 31 moved it
    (`aht_bench.training.runs`, methods looked up in `aht_bench.algorithms`), so that one script
    fingerprints the code before and after the move."""
    try:
        from aht_bench import runs

        return runs
    except ImportError:
        from aht_bench import algorithms
        from aht_bench.training import runs

        runs.get, runs.ALGORITHMS = algorithms.get, algorithms.ALGORITHMS
        return runs


def _spec(method: str, budget: str, tiny: tuple[str, ...]) -> Any:
    """The run spec of `method` at `budget` (`tiny`: its overrides; the config is validated, so
    a bad override fails here, before anything trains)."""
    runs = _runs()
    algo = runs.get(method)
    overrides = _overrides(tiny) if budget == "tiny" else ()
    spec = runs.RunSpec(
        method,
        TASK,
        "quick",
        num_seeds=1,
        seed=0,
        teammates=TEAMMATES if algo.needs_teammates else (),
        overrides=overrides,
    )
    algo.config(spec)
    return spec


def fingerprint(method: str, budget: str, tiny: tuple[str, ...], root: Path) -> dict[str, Any]:
    """Train `method` at `budget` into a folder under `root`; its policies' fingerprints."""
    runs = _runs()
    algo, spec = runs.get(method), _spec(method, budget, tiny)
    out = root / method
    start = time.perf_counter()
    runs.train(algo, spec, out, progress=False)
    seconds = time.perf_counter() - start
    files = sorted((out / "policies" / "final").glob("*.safetensors"))
    if not files:
        raise SystemExit(f"{method}: the run wrote no policies/final/*.safetensors")
    per_file = {f.name: tensors_sha256(f) for f in files}
    overall = hashlib.sha256("".join(f"{k}={v}\n" for k, v in per_file.items()).encode())
    return {
        "fingerprint": overall.hexdigest(),
        "files": per_file,
        "overrides": list(tiny) if budget == "tiny" else [],
        "seconds": round(seconds, 1),
    }


def _source_commit() -> str:
    """The git commit of the aht_bench source that ran (its checkout), "+dirty" if changed."""
    import subprocess

    import aht_bench

    root = Path(aht_bench.__file__).resolve().parents[1]
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    dirty = subprocess.run([*git, "status", "--porcelain", "aht_bench"], capture_output=True)
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _cpu() -> str:
    """The CPU's model and the vector extensions XLA's CPU code depends on (Linux; else the
    platform's processor string)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    fields = dict(
        (k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in info.splitlines())
    )
    flags = fields.get("flags", "").split()
    isa = sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "sse4")))
    return f"{fields.get('model name', 'unknown')}; {' '.join(isa)}"


def _environment() -> dict[str, str]:
    import jax

    from aht_bench import __version__

    environment = {
        "aht_bench": __version__,
        "jax": jax.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "backend": jax.default_backend(),
        "cpu": _cpu(),
    }
    if jax.default_backend() != "cpu":  # the accelerator compiles the programs: name it too
        environment["device"] = jax.devices()[0].device_kind
        environment["xla_flags"] = os.environ.get("XLA_FLAGS", "")  # deterministic ops or not
    return environment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", choices=("tiny", "quick"), default="tiny")
    parser.add_argument("--only", default=None, help="comma-separated methods (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="write the fingerprints (JSON)")
    parser.add_argument("--check", type=Path, default=None, help="compare with a saved FILE")
    args = parser.parse_args(argv)
    runs = _runs()

    saved = json.loads(args.check.read_text()) if args.check else None
    budget = saved["budget"] if saved else args.budget
    methods = list(saved["methods"]) if saved else list(runs.ALGORITHMS)
    if args.only:
        wanted = [m.strip() for m in args.only.split(",") if m.strip()]
        unknown = sorted(set(wanted) - set(runs.ALGORITHMS))
        if unknown:
            parser.error(f"unknown method(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(runs.ALGORITHMS)}")  # fmt: skip
        methods = [m for m in methods if m in wanted]
    if saved is not None:  # the very overrides the saved run used
        tiny = {m: tuple(saved["methods"][m]["overrides"]) for m in methods}
    else:
        tiny = dict(_smoke_overrides()) if budget == "tiny" else {m: () for m in methods}
    for method in methods:
        _spec(method, budget, tiny[method])  # every config is valid before the first run
    record: dict[str, Any] = {
        "command": "python benchmarks/method_fingerprints.py " + " ".join(argv or sys.argv[1:]),
        "budget": budget,
        "task": TASK,
        "environment": _environment(),
        "source_commit": _source_commit(),
        "methods": {},
    }
    results = record["methods"]
    with tempfile.TemporaryDirectory(prefix="aht-fingerprints-") as tmp:
        for method in methods:
            results[method] = fingerprint(method, budget, tiny[method], Path(tmp))
            print(f"{method:8s} {results[method]['fingerprint'][:16]} "
                  f"[{results[method]['seconds']:.0f} s]", flush=True)  # fmt: skip
            if args.out:  # after every method: an interrupted run keeps what it measured
                args.out.write_text(json.dumps(record, indent=1) + "\n")
    if args.out:
        print(f"wrote {args.out}")
    if saved is None:
        return 0
    if saved["environment"] != record["environment"]:
        print(f"note: saved on {saved['environment']}, now {record['environment']}")
    differ = [m for m in methods if saved["methods"][m]["fingerprint"] != results[m]["fingerprint"]]
    for m in differ:
        print(f"DIFFERS {m}: {saved['methods'][m]['fingerprint'][:16]} -> "
              f"{results[m]['fingerprint'][:16]}")  # fmt: skip
    print(f"{len(methods) - len(differ)} of {len(methods)} methods bit-identical")
    if differ and saved["environment"].get("cpu") != record["environment"]["cpu"]:
        made_on = saved["environment"].get("cpu", "not recorded")
        print(
            f"note: {args.check} was made on another CPU ({made_on}); "
            "XLA compiles for the instruction set, so these differences may come from the host. "
            "Make a baseline of the code before the change here (PYTHONPATH=<its checkout> python "
            f"benchmarks/method_fingerprints.py --check {args.check} --out BASE.json) and check "
            "against BASE.json."
        )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
