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
from aht_bench.evaluation.record import agent_label, is_multi_seed, score_matrix_of

_HEAD = {"mean": "mean", "iqm": "IQM", "median": "median", "worst_case": "worst case"}


def _labels(records: Sequence[tuple[Path, dict[str, Any]]]) -> list[str]:
    """The agent file name of each record (with its seed count when it has several), made
    unique with the result file when needed."""
    names = [agent_label(r["payload"]) for _, r in records]
    out = []
    for (path, _), name in zip(records, names, strict=True):
        out.append(name if names.count(name) == 1 else f"{name} ({path})")
    return out


def compare_records(
    records: Sequence[tuple[Path, dict[str, Any]]],
    out: Path | None,
    reps: int = scores.DEFAULT_REPS,
    seed: int = 0,
) -> list[str]:
    """Lines of the comparison tables; with `out`, plots `out` (aggregates) and
    `<out stem>-poi.png` (probabilities of improvement), or one pair per group."""
    groups: dict[tuple[str, str], list[tuple[Path, dict[str, Any]]]] = {}
    for path, record in records:
        payload = record["payload"]
        key = (payload["task_id"], str(payload["teammate_set"]["manifest_sha256"]))
        groups.setdefault(key, []).append((path, record))
    lines: list[str] = []
    for g, ((task_id, digest), group) in enumerate(groups.items()):
        labels = _labels(group)
        set_id = group[0][1]["payload"]["teammate_set"]["id"]
        lines.append(
            f"{task_id}, teammate set {set_id} (manifest {digest[:12]}...): {len(group)} result(s)"
        )
        width = max(8, *(len(label) for label in labels))
        lines.append(f"  {'agent':{width}s}  " + "  ".join(f"{h:>22s}" for h in _HEAD.values()))
        aggregates = []
        for label, (_, record) in zip(labels, group, strict=True):
            agg = record["payload"]["aggregates"]
            aggregates.append(agg)
            cells = [
                f"{agg[k]['value']:6.3f} [{agg[k]['ci'][0]:.3f}, {agg[k]['ci'][1]:.3f}]"
                for k in _HEAD
            ]
            lines.append(f"  {label:{width}s}  " + "  ".join(f"{c:>22s}" for c in cells))
        pairs = []
        seeded = [is_multi_seed(r["payload"]) for _, r in group]
        if len(group) > 1:
            runs = "training seeds" if all(seeded) else "episodes" if not any(seeded) else None
            over = f" (runs = {runs})" if runs else ""
            lines.append(f"  probability of improvement P(X > Y) [95% CI]{over}:")
        for i, j in combinations(range(len(group)), 2):
            if seeded[i] != seeded[j]:
                lines.append(
                    f"    P({labels[i]} > {labels[j]}): not computed: one record's runs are "
                    "training seeds, the other's episodes; evaluate both the same way (one "
                    "file each, or every seed's file)"
                )
                continue
            x, y = score_matrix_of(group[i][1]), score_matrix_of(group[j][1])
            poi = scores.probability_of_improvement(x, y, reps=reps, seed=seed)
            pairs.append((labels[i], labels[j], poi))
            lo, hi = poi["ci"]
            lines.append(
                f"    P({labels[i]} > {labels[j]}) = {poi['value']:.3f} [{lo:.3f}, {hi:.3f}]"
            )
        runners = {r["payload"]["agent"]["runner"] for _, r in group}
        if len(runners) > 1:
            lines.append(
                "  note: these results ran on different runners (jax and step-by-step draw "
                "different start states), so their episodes are independent samples"
            )
        if out is not None:
            from aht_bench.evaluation.plots import plot_compare, plot_improvement

            target = out if len(groups) == 1 else out.with_name(f"{out.stem}-{task_id}-{g}.png")
            title = f"{task_id}, teammates {set_id}"
            plot_compare(labels, aggregates, title, target)
            written = [str(target)]
            if pairs:
                poi_path = target.with_name(f"{target.stem}-poi.png")
                plot_improvement(pairs, title, poi_path)
                written.append(str(poi_path))
            lines.append(f"  wrote {', '.join(written)}")
    return lines
