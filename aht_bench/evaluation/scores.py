"""BRProx normalisation and aggregate scores with stratified bootstrap confidence intervals.

Paper, Section 6.1 "Evaluation Metrics" and App. "Evaluation Return Normalization Procedure":
each evaluation teammate is its own evaluation task; the return with teammate `m` is
normalised as `(R - lower_m) / (upper_m - lower_m)` (lower 0, upper the best-response
estimate); aggregates are rliable's: the mean (the paper's main metric; the mean of the
per-member means), the interquartile mean (over all runs x members), the median (of the
per-member means), plus the worst case (the lowest per-member mean), each with a 95%
stratified bootstrap confidence interval from rliable (Agarwal et al. 2021): resampling runs
with replacement within each teammate. The paper's runs are training seeds ("the bootstrap
samples over training seeds within each evaluation task"): with one agent file per seed the
runs are the seeds (`seed_score_matrix`); for one agent file they are the evaluation episodes
(`score_matrix`), so the intervals measure how much the scores move with other episodes, not
with other training seeds.

Score matrices are `(runs, members)`, rliable's `(num_runs, num_tasks)`. Runs = episodes: an
entry is an episode's normalised return averaged over the seatings (the same episode index in
every seating shares its start state, see `rollout`). Runs = seeds: an entry is a seed's
normalised return averaged over its episodes and seatings.

rliable draws its resampling indices from NumPy's global generator (`np.random.choice`), so the
bootstrap functions seed it from `seed` and restore its state afterwards: same scores and seed,
same intervals.

May import numpy, scipy and rliable only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

AGGREGATES = ("mean", "iqm", "median", "worst_case")
DEFAULT_REPS = 2000
DEFAULT_CONFIDENCE = 0.95


def normalize(returns: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """BRProx normalised returns `(R - lower_m) / (upper_m - lower_m)`.

    returns: (members, ...) raw returns; lower, upper: (members,). Scores can exceed 1 when a
    partner beats a member's estimated upper bound (the paper then raises the bound).
    """
    returns = np.asarray(returns, np.float64)
    lower = np.asarray(lower, np.float64)
    upper = np.asarray(upper, np.float64)
    if lower.shape != (returns.shape[0],) or upper.shape != lower.shape:
        raise ValueError(
            f"bounds of shape {lower.shape} and {upper.shape} do not match returns of shape "
            f"{returns.shape} (members first)"
        )
    if np.any(upper <= lower):
        raise ValueError("every upper bound must exceed its lower bound")
    pad = (slice(None),) + (None,) * (returns.ndim - 1)
    return (returns - lower[pad]) / (upper - lower)[pad]


def score_matrix(normalized: np.ndarray) -> np.ndarray:
    """(runs, members) from normalised returns (members, seatings, episodes): the mean over
    seatings of each episode index."""
    normalized = np.asarray(normalized, np.float64)
    if normalized.ndim != 3:
        raise ValueError(
            f"expected normalised returns of shape (members, seatings, episodes), got "
            f"{normalized.shape}"
        )
    return normalized.mean(axis=1).T


def seed_score_matrix(normalized: np.ndarray) -> np.ndarray:
    """(seeds, members) from normalised returns (seeds, members, seatings, episodes): each
    seed's mean over its episodes and seatings, the paper's run = training seed."""
    normalized = np.asarray(normalized, np.float64)
    if normalized.ndim != 4:
        raise ValueError(
            f"expected normalised returns of shape (seeds, members, seatings, episodes), got "
            f"{normalized.shape}"
        )
    return normalized.mean(axis=(2, 3))


def worst_case(scores: np.ndarray) -> float:
    """The lowest per-member mean score: min_m mean_runs scores[:, m]."""
    return float(np.min(np.mean(scores, axis=0)))


def _aggregates_and_members(scores: np.ndarray) -> np.ndarray:
    """[mean, iqm, median, worst_case, mean of member 0, ..., mean of member M-1]."""
    from rliable import metrics

    return np.concatenate(
        [
            [
                metrics.aggregate_mean(scores),
                metrics.aggregate_iqm(scores),
                metrics.aggregate_median(scores),
                worst_case(scores),
            ],
            np.mean(scores, axis=0),
        ]
    )


@contextlib.contextmanager
def _global_numpy_seed(seed: int) -> Iterator[None]:
    # rliable's StratifiedBootstrap draws from NumPy's legacy global generator.
    state = np.random.get_state()  # noqa: NPY002
    np.random.seed(seed)  # noqa: NPY002
    try:
        yield
    finally:
        np.random.set_state(state)  # noqa: NPY002


def _check_scores(scores: np.ndarray, what: str = "scores") -> np.ndarray:
    scores = np.asarray(scores, np.float64)
    if scores.ndim != 2 or scores.shape[0] < 1 or scores.shape[1] < 1:
        raise ValueError(f"{what} must be a (runs, members) matrix, got shape {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{what} hold NaN or infinite values")
    return scores


def interval_estimates(
    scores: np.ndarray,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """Point estimates and stratified bootstrap CIs of the aggregates and per-member means.

    scores: (runs, members). Returns {"aggregates": {name: {"value", "ci": [lo, hi]}},
    "members": [{"value", "ci"}, ...]} (percentile intervals of `reps` resamples, rliable's
    `get_interval_estimates` with `StratifiedBootstrap`).
    """
    from rliable import library

    scores = _check_scores(scores)
    with _global_numpy_seed(seed):
        points, intervals = library.get_interval_estimates(
            {"x": scores},
            _aggregates_and_members,
            reps=reps,
            confidence_interval_size=confidence,
        )
    point, ci = points["x"], intervals["x"]

    def entry(i: int) -> dict[str, Any]:
        return {"value": float(point[i]), "ci": [float(ci[0, i]), float(ci[1, i])]}

    return {
        "aggregates": {name: entry(i) for i, name in enumerate(AGGREGATES)},
        "members": [entry(len(AGGREGATES) + m) for m in range(scores.shape[1])],
        "reps": reps,
        "confidence": confidence,
        "bootstrap_seed": seed,
    }


def improvement_probability(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """rliable's `probability_of_improvement` (Mann-Whitney U / (n_x n_y), per member, then
    averaged), computed by counting pairs: `P_m = (#{x > y} + #{x == y} / 2) / (n_x n_y)`.

    The same number as rliable's (tested), without a scipy call per member, so that thousands
    of bootstrap resamples take seconds.
    """
    x = np.asarray(scores_x, np.float64)[:, None, :]  # (n_x, 1, M)
    y = np.asarray(scores_y, np.float64)[None, :, :]  # (1, n_y, M)
    per_member = np.mean((x > y) + 0.5 * (x == y), axis=(0, 1))
    return float(np.mean(per_member))


def probability_of_improvement(
    scores_x: np.ndarray,
    scores_y: np.ndarray,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """P(X > Y): the probability that a run of X scores higher than a run of Y with the same
    member, averaged over members (rliable `probability_of_improvement`, Mann-Whitney U with
    ties counted half), with a stratified independent bootstrap CI. Both (runs, members) with
    the same members in the same order."""
    from rliable import library, metrics

    scores_x = _check_scores(scores_x, "scores_x")
    scores_y = _check_scores(scores_y, "scores_y")
    if scores_x.shape[1] != scores_y.shape[1]:
        raise ValueError(
            f"probability of improvement needs the same members: {scores_x.shape[1]} vs "
            f"{scores_y.shape[1]}"
        )

    def poi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.array([improvement_probability(x, y)])

    with _global_numpy_seed(seed):
        _, intervals = library.get_interval_estimates(
            {"xy": [scores_x, scores_y]}, poi, reps=reps, confidence_interval_size=confidence
        )
    return {
        "value": float(metrics.probability_of_improvement(scores_x, scores_y)),
        "ci": [float(intervals["xy"][0, 0]), float(intervals["xy"][1, 0])],
        "reps": reps,
        "confidence": confidence,
        "bootstrap_seed": seed,
    }
