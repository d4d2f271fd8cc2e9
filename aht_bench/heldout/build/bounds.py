"""Step 5, the bounds: the upper bound's candidates (`upper_bound`) and the example agents'
returns as the evaluator computes them (Bounds v2).

May import jax, numpy, tqdm, the standard library and aht_bench.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aht_bench.evaluation import sets
from aht_bench.heldout.build.core import HeldoutBuildError, Log
from aht_bench.heldout.recipes import Recipe
from aht_bench.policies.teammate_set import TeammateSet


def upper_bound(sources: list[dict[str, Any]]) -> dict[str, Any]:
    """The upper bound of one member from its candidate values (Bounds v2): the highest `value`
    of `sources` (each `{"set_by", "kind", "value"}`; NaN values ignored), with the `set_by` of
    the first source that reaches it (list the measured ones before the task maximum)."""
    finite = [x for x in sources if np.isfinite(x["value"])]
    if not finite:
        raise HeldoutBuildError("no finite candidate value for an upper bound")
    best = max(x["value"] for x in finite)
    first = next(x for x in finite if x["value"] == best)
    return {"upper": float(best), "upper_set_by": first["set_by"], "kind": first["kind"]}


def _example_agent_returns(
    rec: Recipe, cols: TeammateSet, seatings: tuple[tuple[int, ...], ...], log: Log
) -> tuple[list[tuple[str, np.ndarray]], list[dict[str, Any]]]:
    """Each applicable example agent's returns with every candidate, (candidates, seatings,
    episodes) over `rec.episodes` episodes, seed `rec.eval_seed` (what `aht-bench evaluate`
    plays), played by the evaluator itself (jitted for a JAX policy, step by step otherwise);
    and one record per agent file (its sha256, runner, or why it was skipped)."""
    from aht_bench.evaluation.evaluate import evaluate_agent_file, file_sha256
    from aht_bench.evaluation.record import returns_of
    from aht_bench.evaluation.sets import EvaluationSet
    from aht_bench.policies.agent_file import AgentLoadError

    repo = sets.heldout_root().parent
    in_memory = EvaluationSet(
        set_id=f"{rec.task_id}/{rec.version}-build",
        task=rec.task,
        teammates=cols,
        lower=np.zeros(cols.size),
        upper=np.ones(cols.size),
        seatings=seatings,
    )
    rows: list[tuple[str, np.ndarray]] = []
    info: list[dict[str, Any]] = []
    for rel in rec.example_agents:
        path = repo / rel
        if not path.is_file():
            raise HeldoutBuildError(
                f"example agent {rel} is missing from {repo}: build from a checkout of the "
                "repository (the recipe plays agents/examples/ to set the bounds)"
            )
        try:
            record = evaluate_agent_file(
                path, in_memory, num_episodes=rec.episodes, seed=rec.eval_seed, reps=100
            )
        except AgentLoadError as e:
            if "(its TASKS)" not in str(e):
                raise HeldoutBuildError(f"example agent {rel} failed to load: {e}") from None
            log(f"example agent {rel}: not for {rec.task_id} (its TASKS), skipped")
            info.append({"file": rel, "sha256": file_sha256(path), "skipped": str(e)})
            continue
        returns = returns_of(record["payload"])[0]  # (candidates, seatings, episodes)
        agent = record["payload"]["agent"]
        best = returns.mean(axis=(1, 2)).max()
        log(f"example agent {rel} ({agent.get('runner')}): best mean return {best:.4g}")
        rows.append((rel, returns))
        info.append(
            {"file": rel, "sha256": file_sha256(path), "runner": agent.get("runner"),
             "kind": agent.get("kind")}
        )  # fmt: skip
    return rows, info


def _example_upper_returns(returns: np.ndarray, seed: int) -> np.ndarray:
    """The upper end of the per-member 95% CI of an example agent's mean return with each
    member of a set, (members,) from its returns (members, seatings, episodes) with exactly
    those members: the evaluator's stratified bootstrap (same resamples, `seed` its episode
    seed), on raw returns. With lower bounds 0, a member whose upper bound is at least this
    value gives the agent a normalised upper CI of at most 1 (`_fit_example_bounds` settles
    the last rounding)."""
    from aht_bench.evaluation import scores

    est = scores.interval_estimates(scores.score_matrix(returns), seed=seed)
    return np.array([m["ci"][1] for m in est["members"]], np.float64)


def _fit_example_bounds(
    upper: np.ndarray, examples: list[np.ndarray], seed: int, max_steps: int = 64
) -> np.ndarray:
    """`upper` (members,), each raised by the fewest float steps (`np.nextafter`) after which
    every example agent's normalised per-member upper CI, as the evaluator computes it with
    lower bounds 0, is at most 1. The bounds set from `_example_upper_returns` are already
    there up to the rounding of (R / upper) against R, a few units in the last place."""
    from aht_bench.evaluation import scores

    upper = np.asarray(upper, np.float64).copy()
    for _ in range(max_steps):
        high = np.zeros_like(upper)
        for returns in examples:
            normalized = scores.normalize(returns, np.zeros_like(upper), upper)
            est = scores.interval_estimates(scores.score_matrix(normalized), seed=seed)
            high = np.maximum(high, [m["ci"][1] for m in est["members"]])
        over = high > 1.0
        if not over.any():
            return upper
        upper[over] = np.nextafter(upper[over], np.inf)
    raise HeldoutBuildError(
        f"an example agent's upper CI stays above 1 after {max_steps} float steps of its bound"
    )


def _settle_example_rounding(
    members: list[dict[str, Any]], examples: list[np.ndarray], seed: int, log: Log
) -> None:
    """Raise, in place, any member's upper bound that leaves an example agent's normalised
    upper CI a rounding step above 1 (`_fit_example_bounds`), recording the raise."""
    upper = np.array([m["bounds"]["upper"] for m in members], np.float64)
    fitted = _fit_example_bounds(upper, examples, seed)
    for m, before, after in zip(members, upper, fitted, strict=True):
        if after != before:
            b = m["bounds"]
            b["upper"] = float(after)
            b["raised_by"] = float(after) - b["best_response_return"]
            b["rounding_raise"] = float(after - before)
            log(f"{m['name']}: upper bound raised by {after - before:.3g} (rounding)")
