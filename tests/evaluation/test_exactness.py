"""The evaluator on the matrix games, where best responses and returns are known by hand.

matrix-regret-v1 (paper App. A): one step, seat 0 (ego) rows A/B, seat 1 columns X/Y,
payoff [[5, 1], [5, 0]]. The best response to X scores 5 (either row), to Y scores 1 (row A),
so the BRProx bounds are [0, 5] and [0, 1]. Ego A: returns 5 and 1, scores 1 and 1. Ego B:
returns 5 and 0, scores 1 and 0.

sabotage-v1: 5 steps, payoff [[1, 0, -1], [0, 1, -1], [-1, -1, -1]]. The best response to
always-H is always-H (return 5), to always-T always-T (5). The mirror agent (H first, then
the partner's previous action) gets 5 with always-H and 0 + 4 = 4 with always-T (it
mismatches only at the first step), in either seat: scores 1 and 0.8.
"""

from __future__ import annotations

import numpy as np
import pytest
from eval_helpers import Const, H, Mirror, MirrorNumpy, T

from aht_bench.envs import Task
from aht_bench.evaluation import EvaluationSet, cross_play, default_seatings, evaluate_policy
from aht_bench.evaluation.gym_runner import play_python
from aht_bench.evaluation.rollout import hashable_set
from aht_bench.policies.teammate_set import TeammateSet

A, B, X, Y = 0, 1, 0, 1


def regret_set() -> EvaluationSet:
    mates = TeammateSet(["X", "Y"], [(Const(X), None), (Const(Y), None)])
    return EvaluationSet(
        "regret/analytic",
        Task("matrix-regret-v1"),
        mates,
        lower=np.zeros(2),
        upper=np.array([5.0, 1.0]),
        seatings=default_seatings("matrix-regret-v1", 2),
    )


def analytic_sabotage_set() -> EvaluationSet:
    mates = TeammateSet(["always_H", "always_T"], [(Const(H), None), (Const(T), None)])
    return EvaluationSet(
        "sabotage/analytic",
        Task("sabotage-v1"),
        mates,
        lower=np.zeros(2),
        upper=np.array([5.0, 5.0]),
        seatings=default_seatings("sabotage-v1", 2),
    )


def test_default_seatings_follow_the_tasks():
    assert default_seatings("matrix-regret-v1", 2) == ((0,),)
    assert default_seatings("sabotage-v1", 2) == ((0,), (1,))
    assert default_seatings("lbf-4p-v1", 4) == ((0, 1),)


@pytest.mark.parametrize(
    ("ego", "returns", "scores", "mean", "worst"),
    [(A, [5.0, 1.0], [1.0, 1.0], 1.0, 1.0), (B, [5.0, 0.0], [1.0, 0.0], 0.5, 0.0)],
)
def test_regret_game_scores_equal_the_analytic_values(ego, returns, scores, mean, worst):
    record = evaluate_policy(Const(ego), None, regret_set(), num_episodes=4, reps=200)
    payload = record["payload"]
    for member, r, s in zip(payload["members"], returns, scores, strict=True):
        assert member["returns"] == {"0": [r] * 4}
        assert member["normalized"]["value"] == s
        assert member["normalized"]["ci"] == [s, s]  # no variance, no interval
    agg = payload["aggregates"]
    assert agg["mean"]["value"] == mean and agg["mean"]["ci"] == [mean, mean]
    assert agg["worst_case"]["value"] == worst
    assert agg["median"]["value"] == mean  # half the entries are scores[0], half scores[1]
    assert agg["iqm"]["value"] == mean


def test_sabotage_mirror_scores_equal_the_analytic_values_on_both_runners():
    eval_set = analytic_sabotage_set()
    record = evaluate_policy(Mirror(), None, eval_set, num_episodes=3, reps=200)
    members = record["payload"]["members"]
    assert [m["returns"] for m in members] == [
        {"0": [5.0] * 3, "1": [5.0] * 3},
        {"0": [4.0] * 3, "1": [4.0] * 3},
    ]
    assert [m["normalized"]["value"] for m in members] == pytest.approx([1.0, 0.8], abs=1e-12)
    assert record["payload"]["aggregates"]["mean"]["value"] == pytest.approx(0.9, abs=1e-12)

    step_by_step = play_python(lambda seat: MirrorNumpy(), eval_set, num_episodes=3, seed=0)
    np.testing.assert_array_equal(step_by_step, [[[5.0] * 3] * 2, [[4.0] * 3] * 2])


def test_uniform_random_ego_matches_its_expected_score():
    # Uniform rows: with X the return is 5 (score 1); with Y it is 1 with probability 1/2
    # (score 1/2 on average). Mean over both members: 0.75; the sample mean of 512 episodes
    # has a standard deviation of 0.25 / sqrt(512) ~ 0.011.
    class Uniform(Const):
        def act(self, params, carry, obs, key):
            import jax

            return jax.random.randint(key, (), 0, 2), carry, {}

    record = evaluate_policy(Uniform(7), None, regret_set(), num_episodes=512, reps=200)
    assert record["payload"]["members"][0]["normalized"]["value"] == 1.0
    assert record["payload"]["aggregates"]["mean"]["value"] == pytest.approx(0.75, abs=0.05)


def test_cross_play_matrix_is_the_payoff_matrix():
    rows = hashable_set(["A", "B"], [(Const(A), None), (Const(B), None)])
    cols = hashable_set(["X", "Y"], [(Const(X), None), (Const(Y), None)])
    returns = cross_play("matrix-regret-v1", rows, cols, ((0,),), num_episodes=2, seed=0)
    assert returns.shape == (2, 2, 1, 2)
    np.testing.assert_array_equal(returns.mean(axis=(2, 3)), [[5.0, 1.0], [5.0, 0.0]])


def test_heatmap_of_a_cross_play_matrix_is_a_png(tmp_path):
    from aht_bench.evaluation.plots import plot_heatmap

    path = tmp_path / "xp.png"
    plot_heatmap(np.array([[5.0, 1.0], [5.0, 0.0]]), ["A", "B"], ["X", "Y"], "regret", path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bounds_must_be_ordered():
    mates = TeammateSet(["X"], [(Const(X), None)])
    with pytest.raises(ValueError, match="upper bound must exceed the lower bound"):
        EvaluationSet("x", Task("matrix-regret-v1"), mates, np.zeros(1), np.zeros(1), ((0,),))
