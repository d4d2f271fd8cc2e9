"""Step 4, pruning: which candidates are kept (competent and diverse), with every pruned one's
reason and numbers.

May import jax, numpy, tqdm, the standard library and aht_bench.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def select(
    xp: np.ndarray, names: list[str], min_competence: float, min_gap: float
) -> tuple[list[int], list[dict[str, Any]]]:
    """Indices of the kept candidates and the pruned ones' records.

    `xp[i, j]`: mean return of candidate i's best response with candidate j (diagonal: each with
    its own). Competence first (diag > 0 and >= `min_competence` * max diag), then diversity:
    while some kept j has `diag_j - offdiag_j < min_gap * diag_j` (offdiag over the other kept
    candidates' best responses), drop the one with the smallest gap ratio.
    """
    diag = np.diag(xp).astype(np.float64)
    best = float(diag.max()) if diag.size else 0.0
    kept: list[int] = []
    pruned: list[dict[str, Any]] = []
    for j, name in enumerate(names):
        if diag[j] <= 0 or diag[j] < min_competence * best:
            pruned.append(
                {
                    "name": name,
                    "reason": "not competent",
                    "best_response_return": float(diag[j]),
                    "threshold": float(max(min_competence * best, 0.0)),
                }
            )
        else:
            kept.append(j)
    while len(kept) > 1:
        gaps = []
        for j in kept:
            others = [i for i in kept if i != j]
            off = float(xp[others, j].mean())
            gaps.append(((diag[j] - off) / diag[j], j, off))
        worst = min(gaps)
        if worst[0] >= min_gap:
            break
        ratio, j, off = worst
        kept.remove(j)
        pruned.append(
            {
                "name": names[j],
                "reason": "adds no diversity",
                "best_response_return": float(diag[j]),
                "other_best_responses_return": off,
                "gap_fraction": ratio,
                "threshold": min_gap,
            }
        )
    return kept, pruned
