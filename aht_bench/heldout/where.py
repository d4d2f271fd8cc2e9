"""Where the heldout sets are found: the folders looked up, in order, the one used, the published
sets in it and the data distributions installed (`aht-bench --version`, `aht-bench heldout
where`). The lookup itself is `aht_bench.evaluation.sets.heldout_search`.

May import the standard library and aht_bench.evaluation (sets, data).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aht_bench import __version__
from aht_bench.evaluation import data, sets


def _published(root: Path, human_proxy: bool) -> dict[str, list[str]]:
    """task id -> its published versions under `root` (`human_proxy`: those sets too)."""
    found = {}
    for task_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        versions = sets.published_versions(task_dir.name)
        if human_proxy:
            versions += sets.published_versions(task_dir.name, sets.HUMAN_PROXY)
        if versions:
            found[task_dir.name] = versions
    return found


def summary() -> str:
    """One line: where the heldout sets come from and which published versions are there."""
    root = sets.heldout_root()
    label = next((lab for lab, f in sets.heldout_search() if f == root), "none")
    if not root.is_dir():
        return f"heldout data: none found ({sets.searched_text()})"
    found = [f"{task} {','.join(versions)}" for task, versions in _published(root, False).items()]
    return f"heldout data: {root} ({label}); published sets: " + ("; ".join(found) or "none")


def as_json() -> dict[str, Any]:
    """The version, the heldout folder used, the published sets in it and the data
    distributions installed (`aht-bench --version --json`)."""
    root = sets.heldout_root()
    label = next((lab for lab, f in sets.heldout_search() if f == root), None)
    return {
        "version": __version__,
        "heldout": str(root) if root.is_dir() else None,
        "heldout_source": label,
        "published_sets": _published(root, True) if root.is_dir() else {},
        "data_distributions": data.installed(),
    }


def search_rows() -> list[dict[str, Any]]:
    """The lookup order, a row per place: its label, folder (None: not there), how many sets
    it holds (None: no such folder) and whether it is the one used (the first that exists)."""
    search = sets.heldout_search()
    first = next((i for i, (_, f) in enumerate(search, 1) if f is not None), None)
    rows = []
    for i, (label, folder) in enumerate(search, 1):
        n = None
        if folder is not None and folder.is_dir():
            n = sum(1 for t in folder.iterdir() if t.is_dir() for v in t.glob("*/manifest.json"))
        rows.append({"label": label, "folder": None if folder is None else str(folder),
                     "sets": n, "used": i == first})  # fmt: skip
    return rows


def distributions_line(have: dict[str, str], missing: list[str]) -> str:
    """The data distributions installed (`have`: name -> version) and not (`missing`)."""
    line = "data distributions installed: " + (
        ", ".join(f"{k}=={v}" for k, v in have.items()) or "none"
    )
    if missing:
        line += f"; not installed: {', '.join(missing)} ({data.INSTALL}"
        line += f", or '[{data.EXTRA_BR}]' for the best responses too)"
    return line
