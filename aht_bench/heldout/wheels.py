"""The heldout sets as wheels of their own, one distribution per version with the best
responses apart (the split `aht_bench.evaluation.data` names), built from a heldout/ folder.

    built = build_wheels(Path("heldout"), Path("dist"))   # [BuiltWheel(name, path, size, files)]

`packaging/build_heldout_wheels.py` is the command that runs it. A wheel holds
`aht_bench_heldout/<task_id>/<version>/...` and the version's locks
`aht_bench_heldout/<task_id>/<version>.sha256`, with METADATA, WHEEL and RECORD; it is written
reproducibly (files sorted, fixed time stamps and modes), so building twice gives the same
bytes. Before anything is written every published file is checked against its lock and every
lock against its pin (`verify(root, load_members=False)`): a wheel never carries a changed file.
Files that no distribution takes (a `vN` folder built here and not pinned, README.md) are
listed in `skipped`, never shipped.

May import the standard library and aht_bench.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

from aht_bench.evaluation import data

INDEX_LIMIT = 100_000_000
"""Bytes: the package index's usual limit on one file; a bigger wheel is an error."""
_EPOCH = (1980, 1, 1, 0, 0, 0)  # zip's earliest time stamp: reproducible wheels


class WheelBuildError(ValueError):
    """The heldout folder cannot be packed: a published file differs from its lock, or a
    wheel would pass the index's size limit."""


@dataclass(frozen=True)
class BuiltWheel:
    """One data wheel written by `build_wheels`."""

    name: str  # the distribution, e.g. "aht-bench-heldout-v1"
    path: Path  # the .whl file
    size: int  # bytes of the .whl
    files: int  # data files in it
    data_bytes: int  # bytes of those files, uncompressed


def plan(root: Path) -> tuple[dict[str, list[str]], list[str]]:
    """(distribution -> its files, sorted; files no distribution takes) of the heldout folder
    `root`."""
    groups: dict[str, list[str]] = {}
    skipped: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        name = data.distribution_of(rel)
        if name is None:
            skipped.append(rel)
        else:
            groups.setdefault(name, []).append(rel)
    return dict(sorted(groups.items())), skipped


def _version_of(name: str) -> str:
    """The set version a data distribution's name carries ("aht-bench-heldout-v1-br" -> "v1")."""
    tail = name.removeprefix(data.PREFIX)
    return tail.removesuffix(f"-{data.BEST_RESPONSES}") if name.endswith("-br") else tail


def _metadata(name: str, version: str, files: list[str]) -> str:
    tasks = sorted({f.split("/")[0] for f in files})
    br = name.endswith(f"-{data.BEST_RESPONSES}")
    what = (
        f"the best responses (the provenance of the bounds) of the {_version_of(name)} sets"
        if br
        else f"the {_version_of(name)} teammate sets (members, bounds, locks)"
    )
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {name}\n"
        f"Version: {version}\n"
        f"Summary: aht-bench heldout data: {what}\n"
        "License: Apache-2.0\n"
        "Description-Content-Type: text/markdown\n"
        "\n"
        f"Data for aht-bench, installed under `{data.DATA_PACKAGE}/`: {what}, for "
        f"{', '.join(tasks)} ({len(files)} files). Install every set with "
        f"`{data.INSTALL}`; `aht-bench heldout where` shows what is installed.\n"
    )


def _record_line(arcname: str, blob: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(blob).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(blob)}"


def _write(zf: zipfile.ZipFile, arcname: str, blob: bytes) -> None:
    info = zipfile.ZipInfo(arcname, date_time=_EPOCH)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, blob)


def write_wheel(root: Path, name: str, files: list[str], out: Path) -> BuiltWheel:
    """The wheel of distribution `name` holding `files` (relative to `root`), in `out`."""
    from aht_bench.files import atomic_write_bytes

    version = data.release(_version_of(name))
    stem = f"{name.replace('-', '_')}-{version}"
    info_dir = f"{stem}.dist-info"
    buffer = io.BytesIO()
    record = []
    size = 0
    with zipfile.ZipFile(buffer, "w") as zf:
        for rel in files:
            blob = (root / rel).read_bytes()
            size += len(blob)
            arcname = f"{data.DATA_PACKAGE}/{rel}"
            _write(zf, arcname, blob)
            record.append(_record_line(arcname, blob))
        meta = {
            "METADATA": _metadata(name, version, files).encode(),
            "WHEEL": b"Wheel-Version: 1.0\nGenerator: aht_bench.heldout.wheels\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n",
        }
        for fname, blob in meta.items():
            _write(zf, f"{info_dir}/{fname}", blob)
            record.append(_record_line(f"{info_dir}/{fname}", blob))
        record.append(f"{info_dir}/RECORD,,")
        _write(zf, f"{info_dir}/RECORD", ("\n".join(record) + "\n").encode())
    blob = buffer.getvalue()
    if len(blob) > INDEX_LIMIT:
        raise WheelBuildError(
            f"{name} would be {len(blob) / 1e6:.1f} MB, over the index's "
            f"{INDEX_LIMIT / 1e6:.0f} MB limit per file; split it in aht_bench/evaluation/data.py"
        )
    path = out / f"{stem}-py3-none-any.whl"
    atomic_write_bytes(path, blob)
    return BuiltWheel(name, path, len(blob), len(files), size)


def build_wheels(root: Path, out: Path) -> tuple[list[BuiltWheel], list[str]]:
    """Every data wheel of the heldout folder `root`, written to `out`, and the files skipped;
    a `WheelBuildError` (nothing written) if a published file or lock does not match."""
    from aht_bench.heldout import verify

    problems = verify(root, load_members=False)
    if problems:
        raise WheelBuildError(
            f"the published sets in {root} do not match their locks: {'; '.join(problems[:5])}"
            + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else "")
            + "; restore heldout/ from the repository before building its wheels"
        )
    groups, skipped = plan(root)
    out.mkdir(parents=True, exist_ok=True)
    return [write_wheel(root, name, files, out) for name, files in groups.items()], skipped


__all__ = ["INDEX_LIMIT", "BuiltWheel", "WheelBuildError", "build_wheels", "plan", "write_wheel"]
