"""BRProx normalisation, the stratified bootstrap CIs and the probability of improvement,
against values computed here by hand or by a plain loop."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from rliable import metrics

from aht_bench.evaluation import scores


def test_normalize_is_min_max_per_member():
    returns = np.array([[[0.0, 50.0]], [[1.0, 3.0]]])  # (members, seatings, episodes)
    out = scores.normalize(returns, lower=np.array([0.0, 1.0]), upper=np.array([100.0, 5.0]))
    # member 0: R / 100; member 1: (R - 1) / 4
    np.testing.assert_allclose(out, [[[0.0, 0.5]], [[0.0, 0.5]]])
    with pytest.raises(ValueError, match="upper bound must exceed"):
        scores.normalize(returns, np.zeros(2), np.array([1.0, 0.0]))


def test_score_matrix_averages_seatings_per_episode():
    normalized = np.array([[[0.0, 1.0], [1.0, 1.0]]])  # 1 member, 2 seatings, 2 episodes
    np.testing.assert_array_equal(scores.score_matrix(normalized), [[0.5], [1.0]])


# A tiny hand-made score matrix: 3 runs (rows) x 2 members (columns).
TINY = np.array([[0.0, 1.0], [0.5, 0.25], [1.0, 0.75]])


def test_bootstrap_ci_matches_a_direct_computation_with_the_same_seed():
    reps, seed = 400, 3
    got = scores.interval_estimates(TINY, reps=reps, seed=seed)

    # Direct: the stratified bootstrap resamples the runs of each member independently, with
    # replacement (rliable draws the indices with np.random.choice from the global generator).
    np.random.seed(seed)  # noqa: NPY002
    stats = []
    for _ in range(reps):
        rows = np.random.choice(3, TINY.shape, replace=True)  # noqa: NPY002
        sample = TINY[rows, np.arange(2)[None, :]]
        stats.append(
            [
                sample.mean(),
                scipy.stats.trim_mean(sample, 0.25, axis=None),
                np.median(sample.mean(axis=0)),  # rliable: median of the member means
                sample.mean(axis=0).min(),
                *sample.mean(axis=0),
            ]
        )
    low, high = np.percentile(np.asarray(stats), [2.5, 97.5], axis=0)
    names = ["mean", "iqm", "median", "worst_case"]
    for i, name in enumerate(names):
        assert got["aggregates"][name]["ci"] == pytest.approx([low[i], high[i]], abs=1e-12)
    for m in range(2):
        assert got["members"][m]["ci"] == pytest.approx([low[4 + m], high[4 + m]], abs=1e-12)
    # point estimates on the data itself
    assert got["aggregates"]["mean"]["value"] == pytest.approx(3.5 / 6)
    assert got["aggregates"]["worst_case"]["value"] == pytest.approx(0.5)  # member 0: 1.5 / 3
    assert got["members"][1]["value"] == pytest.approx(2.0 / 3)


def test_bootstrap_ci_of_two_runs_spans_the_extreme_resamples():
    # With 2 runs per member, a resample of a member is one of {(a,a), (a,b), (b,a), (b,b)}:
    # 16 equally likely combinations for 2 members. Each has probability 1/16 > 2.5%, so the
    # 95% percentile interval of the mean is [mean of the all-min resample, all-max resample].
    x = np.array([[0.0, 0.2], [1.0, 0.6]])
    got = scores.interval_estimates(x, reps=4000, seed=0)["aggregates"]["mean"]
    assert got["ci"] == pytest.approx([(0.0 + 0.2) / 2, (1.0 + 0.6) / 2])


def test_same_seed_same_intervals_and_the_global_generator_is_restored():
    np.random.seed(123)  # noqa: NPY002
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    a = scores.interval_estimates(TINY, reps=300, seed=5)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # noqa: NPY002
    b = scores.interval_estimates(TINY, reps=300, seed=5)
    assert a == b


def test_improvement_probability_equals_rliables():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (20, 3)).astype(float)  # many ties
    y = rng.integers(0, 4, (15, 3)).astype(float)
    assert scores.improvement_probability(x, y) == pytest.approx(
        metrics.probability_of_improvement(x, y), abs=1e-12
    )


def test_probability_of_improvement_by_hand():
    x = np.ones((4, 2))
    y = np.zeros((5, 2))
    got = scores.probability_of_improvement(x, y, reps=200)
    assert got["value"] == 1.0 and got["ci"] == [1.0, 1.0]
    # member 0: x > y always (1); member 1: all ties (1/2): mean 0.75
    y2 = np.stack([np.zeros(5), np.ones(5)], axis=1)
    assert scores.probability_of_improvement(x, y2, reps=200)["value"] == 0.75
    with pytest.raises(ValueError, match="same members"):
        scores.probability_of_improvement(x, np.zeros((5, 3)))
