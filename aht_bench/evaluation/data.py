"""Which installable distribution carries which heldout sets: the names the code wheel's
errors tell a user to install, and the split the data wheels are built by
(`aht_bench.heldout.wheels`, `packaging/build_heldout_wheels.py`).

The code wheel `aht-bench` carries no heldout data. The sets ship as separate distributions
that install their files into one folder, the namespace package `aht_bench_heldout` (no
`__init__.py`, so every distribution adds to the same tree, laid out as the checkout's
`heldout/`):

    aht-bench-heldout-<version>      every set of that version (`v1`, `v2`, `v3`, `human-proxy-v1`,
                                     ..., `dev`) with its lock, best-response folders left out
    aht-bench-heldout-<version>-br   the best responses of the version's sets (`<set>/br/`): the
                                     provenance of their bounds, never loaded by evaluation

One distribution per published version, because a published version never changes (`pins`):
its distribution is released once, and the next version is a new, separately sized
distribution instead of a bigger wheel. The best responses are apart because nothing but an
audit reads them and they are the largest part (v1: 26 MB of 47). The development sets
(`dev`) keep their best responses (3 MB in all) and follow the code's version.

`pip install 'aht-bench[heldout]'` installs every published version and the development sets;
`'aht-bench[heldout-br]'` adds the best responses. The extras in pyproject.toml list exactly
`extra_requirements()` (tests/heldout/test_wheels.py checks it).

May import the standard library, aht_bench.__version__ and aht_bench.evaluation.pins.
"""

from __future__ import annotations

import importlib.metadata

from aht_bench import __version__
from aht_bench.evaluation.pins import PINNED, pin_key

DATA_PACKAGE = "aht_bench_heldout"
"""The import name (a namespace package) every data distribution installs its files under."""
PREFIX = "aht-bench-heldout-"
BEST_RESPONSES = "br"  # the folder of a set holding its best responses
DEVELOPMENT = "dev"
PUBLISHED_RELEASE = "1.0.0"
"""The release of every published version's distributions: their files never change."""
EXTRA = "heldout"
EXTRA_BR = "heldout-br"
INSTALL = f"pip install 'aht-bench[{EXTRA}]'"
BR_VERSIONS = ("v1", "v2", "v3")
"""The published versions whose sets carry best responses (`<set>/br/`), so that have an
`aht-bench-heldout-<version>-br` distribution (the human-proxy sets have none)."""


def published_versions() -> list[str]:
    """Every published set version pinned in this package: the heldout sets `v1`, `v2`, ...
    first, then the others (`human-proxy-v1`, ...), each kind by number."""
    found = {key.split("/", 1)[1] for key in PINNED}

    def order(v: str) -> tuple[bool, str, int]:
        head = v.rstrip("0123456789")
        return head != "v", head, int(v[len(head) :] or 0)

    return sorted(found, key=order)


def data_versions() -> list[str]:
    """The versions that have a data distribution: the published ones and `dev`."""
    return [*published_versions(), DEVELOPMENT]


def distribution(version: str, best_responses: bool = False) -> str:
    """The distribution carrying `version`'s sets (`best_responses`: their `br/` folders)."""
    return f"{PREFIX}{version}" + (f"-{BEST_RESPONSES}" if best_responses else "")


def release(version: str) -> str:
    """The version number of `version`'s data distributions."""
    return __version__ if version == DEVELOPMENT else PUBLISHED_RELEASE


def extra_requirements(with_best_responses: bool) -> list[str]:
    """The requirements of the `heldout` extra (`with_best_responses`: of `heldout-br`, which
    adds the best-response distributions of `BR_VERSIONS`), as pyproject.toml lists them."""
    out = [f"{distribution(v)}=={release(v)}" for v in data_versions()]
    if with_best_responses:
        out += [f"{distribution(v, True)}=={release(v)}" for v in BR_VERSIONS]
    return out


def distribution_of(rel: str) -> str | None:
    """The distribution carrying the file `rel` (a posix path relative to heldout/), or None
    when none does (an unpublished version, a file outside the task folders)."""
    parts = rel.split("/")
    if len(parts) < 2 or any(p.startswith(".") or p == "__pycache__" for p in parts):
        return None
    task_id = parts[0]
    if len(parts) == 2:  # a lock, <task_id>/<version>.sha256
        version = parts[1].removesuffix(".sha256")
        if version == parts[1] or pin_key(task_id, version) not in PINNED:
            return None
        return distribution(version)
    version = parts[1]
    if version == DEVELOPMENT:
        return distribution(version)
    if pin_key(task_id, version) not in PINNED:
        return None
    best_responses = version in BR_VERSIONS and parts[2] == BEST_RESPONSES
    return distribution(version, best_responses)


def install_hint(version: str | None = None) -> str:
    """What to run to get the sets (`version`: of that version alone, too)."""
    if version is None or version not in data_versions():
        return INSTALL
    return f"{INSTALL} (or only this version: pip install {distribution(version)})"


def all_distributions() -> list[str]:
    """Every data distribution's name (`extra_requirements(True)` without the versions)."""
    return [r.split("==")[0] for r in extra_requirements(True)]


def installed() -> dict[str, str]:
    """The data distributions installed here: name -> version."""
    out = {}
    for dist in importlib.metadata.distributions():
        name = str(dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith(PREFIX):
            out[name] = dist.version
    return dict(sorted(out.items()))


__all__ = [
    "BR_VERSIONS",
    "all_distributions",
    "DATA_PACKAGE",
    "EXTRA",
    "EXTRA_BR",
    "INSTALL",
    "data_versions",
    "distribution",
    "distribution_of",
    "extra_requirements",
    "install_hint",
    "installed",
    "published_versions",
    "release",
]
