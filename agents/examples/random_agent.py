"""The smallest agent file: uniform random actions, plain Python on NumPy.

    aht-bench check-agent agents/examples/random_agent.py --task lbf-v1

An agent file defines `act(obs) -> int` at module level (and optionally `reset()`, called at
every episode start). `obs` is one agent's flat float32 observation, shape (obs_dim,) of the
task; the action is an int in [0, num_actions). `act` does not see the task, so this file
lists in `TASKS` the tasks whose action count it hard-codes: every LBF and Overcooked task
has 6 actions. See docs/agent_files.md for the whole interface.
"""

import numpy as np

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
NUM_ACTIONS = 6

_rng = np.random.default_rng(0)


def act(obs: np.ndarray) -> int:
    return int(_rng.integers(NUM_ACTIONS))
