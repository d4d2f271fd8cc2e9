"""Uniform random actions on the JAX fast path: the random floor as a jitted agent file.

    aht-bench evaluate agents/examples/random_jax_agent.py --task cramped_room

The same policy as `random_agent.py` (uniform over the six actions of every LBF and Overcooked
task), drawn from the episode's key instead of a NumPy generator, so the evaluator jits and
vmaps it like any network, where `random_agent.py` plays step by step across the sandbox's
process boundary, many times slower (its leaderboard re-runs would not fit CI's time). The
leaderboard's floor rows, "random (floor)", are this file; `benchmarks/random_floor.py`
measures the same policy on every set and prints `random_agent.py`'s mean beside it where that
was measured.
"""

from aht_bench.policies.heuristics import RandomHeuristic

BUNDLE = []  # its sandbox shows it this file alone (docs/agent_files.md): nothing else is used

TASKS = (
    "lbf-v1",
    "lbf-po-v1",
    "lbf-4p-v1",
    "overcooked-cramped_room-v1",
    "overcooked-asymm_advantages-v1",
    "overcooked-counter_circuit-v1",
    "overcooked-coord_ring-v1",
    "overcooked-forced_coord-v1",
    "overcooked-cramped_room-v2",
    "overcooked-asymm_advantages-v2",
    "overcooked-counter_circuit-v2",
    "overcooked-coord_ring-v2",
    "overcooked-forced_coord-v2",
)


def jax_policy(task_id: str):
    return RandomHeuristic(), None
