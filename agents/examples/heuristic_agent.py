"""A built-in Overcooked heuristic as an agent file: the JAX fast path without weights.

    aht-bench evaluate agents/examples/heuristic_agent.py --task forced_coord

`jax_policy(task_id)` returns `(policy, params)`; here the policy is one of aht-bench's
programmed teammates (`aht_bench.policies.heuristics.make_heuristic`): an "independent" cook
that does both jobs (onions and plates), choosing from the kitchen's state, and puts an item it
takes from a pile or pot on a shared counter with probability 0.3 (on forced_coord that is how
the left seat hands items over; docs/heuristics.md). `params` is None: it has no weights.
The evaluator jits and vmaps it like any network. It is a competent partner on every classic
layout, a useful contrast to `random_agent.py`; note that it is a sibling of the development
set's member `independent_agent_0.6`, so it is NOT an unseen-partner result.
"""

from aht_bench.policies.heuristics import make_heuristic

TASKS = (
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
NAME = "independent_agent_0.3"


def jax_policy(task_id: str):
    return make_heuristic(task_id, NAME), None
