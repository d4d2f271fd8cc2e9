"""The machine a measurement ran on, as recorded next to results that are bit-identical on one
host only (the sabotage table, the method fingerprints).

The CPU's model name is not enough to tell two hosts apart: two machines that both report "AMD
EPYC" gave other sabotage numbers from the same code and seeds
(benchmarks/results/cross_host.md). So the record also holds the CPU family, model and stepping
and the vector extensions XLA's CPU code is compiled for.

May import the standard library only.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

_ISA_PREFIXES = ("avx", "amx", "fma", "sse4")


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo ({} where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor's block ends at its blank line
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def cpu() -> dict[str, Any]:
    """The CPU: `model` (its name), `family`/`model_id`/`stepping` (x86; None elsewhere),
    `isa` (the vector extensions: avx*, amx*, fma, sse4*), `machine` and `cores`."""
    fields = _cpuinfo()
    flags = fields.get("flags", "").split()
    return {
        "model": fields.get("model name") or platform.processor() or platform.machine(),
        "family": fields.get("cpu family"),
        "model_id": fields.get("model"),
        "stepping": fields.get("stepping"),
        "isa": sorted(f for f in flags if f.startswith(_ISA_PREFIXES)),
        "machine": platform.machine(),
        "cores": os.cpu_count(),
    }


def describe(info: dict[str, Any] | None = None) -> str:
    """One line for a table or a log, e.g. "AMD EPYC, family 25 model 1 stepping 1, 2 cores
    (avx avx2 fma sse4_1 sse4_2 sse4a)"; an older record without the x86 fields gives its model
    and cores only."""
    info = cpu() if info is None else info
    name = info.get("model") or info.get("cpu") or "unknown CPU"
    parts = [str(name)]
    if info.get("family") is not None:
        parts.append(
            f"family {info['family']} model {info.get('model_id')} stepping {info.get('stepping')}"
        )
    if info.get("cores") is not None:
        parts.append(f"{info['cores']} cores")
    text = ", ".join(parts)
    isa = info.get("isa")
    return f"{text} ({' '.join(isa)})" if isa else text
