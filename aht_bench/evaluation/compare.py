"""Comparing result records: the library behind `aht-bench compare`.

Records are grouped by task and teammate set (task id and manifest sha256): scores against
different sets or bounds are not comparable. Within a group each record's aggregates are
tabulated with their CIs, and for each pair (X, Y) the probability of improvement P(X > Y)
(rliable; tasks = members, runs = episodes for one-file records and training seeds for
multi-seed ones) is computed with a stratified bootstrap CI. A pair of a one-file and a
multi-seed record gets none: a seed's mean score and one episode's score are not draws of the
same thing.

May import numpy, the standard library and aht_bench.evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from aht_bench.evaluation import scores
from aht_bench.evaluation.record import agent_label, count, is_multi_seed, score_matrix_of

_HEAD = {"mean": "mean", "iqm": "IQM", "median": "median", "worst_case": "worst case"}


def _labels(records: Sequence[tuple[Path, dict[str, Any]]]) -> list[str]:
    """The agent file name of each record (with its seed count when it has several), made
    unique with the result file when needed."""
    names = [agent_label(r["payload"]) for _, r in records]
    out = []
    for (path, _), name in zip(records, names, strict=True):
        out.append(name if names.count(name) == 1 else f"{name} ({path})")
    return out


def comparison(
    records: Sequence[tuple[Path, dict[str, Any]]],
    out: Path | None = None,
    reps: int = scores.DEFAULT_REPS,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The comparison as data, one dict per group (task and teammate set): its `task_id`,
    `set_id`, `manifest_sha256`, `results` (per record its `label`, `path`, `aggregates`,
    `multi_seed`, `runner`), `improvement` (per pair `x`, `y` and the probability of
    improvement's `value` and `ci`, or `not_computed` with the reason) and `plots` (the files
    written: with `out`, `out` (aggregates) and `<out stem>-poi.png`, or one pair per group)."""
    groups: dict[tuple[str, str], list[tuple[Path, dict[str, Any]]]] = {}
    for path, record in records:
        payload = record["payload"]
        key = (payload["task_id"], str(payload["teammate_set"]["manifest_sha256"]))
        groups.setdefault(key, []).append((path, record))
    out_groups = []
    for g, ((task_id, digest), group) in enumerate(groups.items()):
        labels = _labels(group)
        results = [
            {"label": label, "path": str(path), "aggregates": r["payload"]["aggregates"],
             "multi_seed": is_multi_seed(r["payload"]), "runner": r["payload"]["agent"]["runner"]}
            for label, (path, r) in zip(labels, group, strict=True)
        ]  # fmt: skip
        improvement: list[dict[str, Any]] = []
        for i, j in combinations(range(len(group)), 2):
            pair: dict[str, Any] = {"x": labels[i], "y": labels[j]}
            if results[i]["multi_seed"] != results[j]["multi_seed"]:
                pair["not_computed"] = (
                    "one record's runs are training seeds, the other's episodes; evaluate both "
                    "the same way (one file each, or every seed's file)"
                )
            else:
                x, y = score_matrix_of(group[i][1]), score_matrix_of(group[j][1])
                pair |= scores.probability_of_improvement(x, y, reps=reps, seed=seed)
            improvement.append(pair)
        set_id = group[0][1]["payload"]["teammate_set"]["id"]
        entry = {"task_id": task_id, "set_id": set_id, "manifest_sha256": digest,
                 "results": results, "improvement": improvement, "plots": []}  # fmt: skip
        if out is not None:
            target = out if len(groups) == 1 else out.with_name(f"{out.stem}-{task_id}-{g}.png")
            entry["plots"] = _plot(entry, target)
        out_groups.append(entry)
    return out_groups


def _plot(group: dict[str, Any], target: Path) -> list[str]:
    from aht_bench.evaluation.plots import plot_compare, plot_improvement

    title = f"{group['task_id']}, teammates {group['set_id']}"
    labels = [r["label"] for r in group["results"]]
    plot_compare(labels, [r["aggregates"] for r in group["results"]], title, target)
    written = [str(target)]
    pairs = [(p["x"], p["y"], p) for p in group["improvement"] if "value" in p]
    if pairs:
        poi_path = target.with_name(f"{target.stem}-poi.png")
        plot_improvement(pairs, title, poi_path)
        written.append(str(poi_path))
    return written


def comparison_lines(groups: list[dict[str, Any]]) -> list[str]:
    """The tables `aht-bench compare` prints for `comparison`'s groups."""
    lines: list[str] = []
    for group in groups:
        results = group["results"]
        lines.append(
            f"{group['task_id']}, teammate set {group['set_id']} (manifest "
            f"{group['manifest_sha256'][:12]}...): {count(len(results), 'result')}"
        )
        width = max(8, *(len(r["label"]) for r in results))
        lines.append(f"  {'agent':{width}s}  " + "  ".join(f"{h:>22s}" for h in _HEAD.values()))
        for r in results:
            agg = r["aggregates"]
            cells = [
                f"{agg[k]['value']:6.3f} [{agg[k]['ci'][0]:.3f}, {agg[k]['ci'][1]:.3f}]"
                for k in _HEAD
            ]
            lines.append(f"  {r['label']:{width}s}  " + "  ".join(f"{c:>22s}" for c in cells))
        if len(results) > 1:
            seeded = [r["multi_seed"] for r in results]
            runs = "training seeds" if all(seeded) else "episodes" if not any(seeded) else None
            over = f" (runs = {runs})" if runs else ""
            lines.append(f"  probability of improvement P(X > Y) [95% CI]{over}:")
        for p in group["improvement"]:
            if "not_computed" in p:
                lines.append(f"    P({p['x']} > {p['y']}): not computed: {p['not_computed']}")
                continue
            lo, hi = p["ci"]
            lines.append(f"    P({p['x']} > {p['y']}) = {p['value']:.3f} [{lo:.3f}, {hi:.3f}]")
        if len({r["runner"] for r in results}) > 1:
            lines.append(
                "  note: these results ran on different runners (jax and step-by-step draw "
                "different start states), so their episodes are independent samples"
            )
        if group["plots"]:
            lines.append(f"  wrote {', '.join(group['plots'])}")
    return lines


def compare_records(
    records: Sequence[tuple[Path, dict[str, Any]]],
    out: Path | None,
    reps: int = scores.DEFAULT_REPS,
    seed: int = 0,
) -> list[str]:
    """Lines of the comparison tables; with `out`, plots `out` (aggregates) and
    `<out stem>-poi.png` (probabilities of improvement), or one pair per group."""
    return comparison_lines(comparison(records, out, reps, seed))
