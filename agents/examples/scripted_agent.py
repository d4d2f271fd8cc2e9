"""A rule-based LBF agent with per-episode state, written as `make_agent(task_id, seat)`.

    aht-bench check-agent agents/examples/scripted_agent.py --task lbf-v1 --teammate lexi

Every LBF food needs all players loading together, so it helps: if another agent stands next
to an uneaten food, that food is its target (the nearest such food); otherwise it walks to the
nearest uneaten food (Manhattan distance, ties broken by row then column) and waits there,
loading, for a partner. It loads when it stands next to its target. Moves go around foods and
other agents greedily; when a move fails for a few steps in a row (the partner is in the way),
it takes a random step to get unstuck.

`make_agent` is the form to use when an agent keeps state across steps of an episode: the
evaluator may build several agents from one file (one per seat or per parallel episode), each
gets its own object, and `reset()` is called on it at every episode start.

Observation layout of the full-view LBF tasks (aht_bench/envs/lbf.py): three foods
(row, col, level), then the agent itself (row, col, level), then the other agents in seat
order, then the elapsed time; an eaten food reads (-1, -1, 0).
"""

import numpy as np

TASKS = ("lbf-v1", "lbf-4p-v1")
GRID_SIZE = 7
NUM_FOOD = 3
NOOP, UP, DOWN, LEFT, RIGHT, LOAD = range(6)  # UP is row - 1
MOVES = {UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}
STUCK_STEPS = 3  # failed moves in a row before a random step


class NearestFoodAgent:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.reset()

    def reset(self) -> None:
        self.target: tuple[int, int] | None = None
        self.last_pos: tuple[int, int] | None = None
        self.last_action = NOOP
        self.stuck = 0

    def act(self, obs: np.ndarray) -> int:
        triples = obs[:-1].reshape(-1, 3).astype(int)
        foods = {(r, c) for r, c, level in triples[:NUM_FOOD] if level > 0}
        me = (int(triples[NUM_FOOD][0]), int(triples[NUM_FOOD][1]))
        others = {(r, c) for r, c, level in triples[NUM_FOOD + 1 :] if level > 0}

        if self.last_action in MOVES and me == self.last_pos:
            self.stuck += 1
        else:
            self.stuck = 0
        action = self._choose(me, foods, others)
        self.last_pos, self.last_action = me, action
        return action

    def _choose(self, me, foods, others) -> int:
        if not foods:
            return NOOP
        helped = {f for f in foods if any(_dist(o, f) == 1 for o in others)}
        if helped and self.target not in helped:
            self.target = min(helped, key=lambda f: (_dist(me, f), f))
        elif self.target not in foods:
            self.target = min(foods, key=lambda f: (_dist(me, f), f))
        if _dist(me, self.target) == 1:
            return LOAD
        blocked = foods | others
        legal = [a for a, d in MOVES.items() if _free(_add(me, d), blocked)]
        if not legal:
            return NOOP
        if self.stuck >= STUCK_STEPS:
            self.stuck = 0
            return int(self.rng.choice(legal))
        goals = [_add(self.target, d) for d in MOVES.values()]
        goals = [g for g in goals if _free(g, blocked)] or [self.target]
        goal = min(goals, key=lambda g: (_dist(me, g), g))
        return min(legal, key=lambda a: (_dist(_add(me, MOVES[a]), goal), a))


def _dist(a, b) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def _add(a, d):
    return (a[0] + d[0], a[1] + d[1])


def _free(cell, blocked) -> bool:
    return 0 <= cell[0] < GRID_SIZE and 0 <= cell[1] < GRID_SIZE and cell not in blocked


def make_agent(task_id: str, seat: int) -> NearestFoodAgent:
    return NearestFoodAgent(seed=seat)
