"""The paper's LBF heuristic teammates (App. "Evaluation Teammates", `seq_agent_*`).

Planning agents that collect the foods in a fixed order, working from the observation alone:

- `lexi`: lexicographic, row then column, smallest first;
- `rlexi`: reverse lexicographic (largest (row, col) first);
- `col`: column-major, column then row, smallest first;
- `rcol`: reverse column-major;
- `nearest` / `farthest`: by Manhattan distance from the agent's INITIAL position (the position
  seen at its first `act` of the episode, kept in the carry), nearest / farthest first. Ties
  are broken lexicographically (row, then column).

Each step the agent takes the first uneaten food in its order as its target, plans a shortest
path (a BFS distance field on the 7x7 grid, computed by `GRID_CELLS` relaxation sweeps) to the
nearest free cell 4-adjacent to the target, treating uneaten foods and the other agents as
obstacles, and takes the first move of that path. Once adjacent to the target it issues `load`
and keeps loading until the food is eaten, then goes on to the next food in its order. When
every food is eaten it does `noop`.

Details of the planner (what keeps two copies from blocking each other):

- Move ties are broken in Jumanji's action order: up, down, left, right.
- If no free adjacent cell is reachable (the other agents wall it off), the agent follows a
  second distance field that ignores the agents (foods only), so it heads towards the target
  and waits against whoever is in the way instead of standing still.
- Collision yielding: Jumanji leaves two agents in place when they move onto the same cell, so
  two copies of one heuristic heading for the same cell would collide forever. The carry holds
  the previous position and action; an agent whose move did not happen yields (does `noop` for
  one step) if a rival for the cell it tried to enter has a smaller cell index (row * 7 + col).
  Rivals are the other agents next to that cell, except those next to the agent's target food:
  those are (for copies, which pursue the same food) standing there loading, and counting them
  would make both movers yield in step forever. The rival with the smallest index goes first,
  so the tie is broken deterministically without randomness. With other partners a
  stationary agent next to the contested cell can still make two movers yield together.

Following another agent's order: `order_from="partner"` makes an agent compute its
`nearest`/`farthest` order from the initial position of another agent (the `partner`-th
"other agent" triple of its observation, seat order without itself; 0 = the only partner in
2-player LBF), so a partner collects the foods in the same order as a `nearest`/`farthest`
heuristic (the orders that do not depend on position are the same either way). With
`lbf_heuristic("nearest", order_from="partner")` in seat 1 and `lbf_heuristic("nearest")` in
seat 0, both seats pursue seat 0's order.

Tasks: the full-view tasks `lbf-v1` and `lbf-4p-v1` (pass `num_agents=4`; in 4-player LBF a
food needs three agents, or two level-2 ones, loading together). `lbf-po-v1` is NOT supported:
its coordinates are relative to the agent's view window and foods outside the view read
`(-1, -1, 0)` like eaten ones, so the agent would only see, order and plan in its window and
do `noop` when no food is visible; the constructor cannot tell the task from the observation
size (it is the same as `lbf-v1`), so nothing stops you from running it there, but its
behaviour is not the paper's.

The policies are pure, jittable and vmappable (see `aht_bench.policies.core`); `params` is
`None` and `act` ignores its key. `extras` holds `target`, the index (0..2) of the food being
pursued, or -1 when all are eaten.

May import jax, flax, numpy and aht_bench.envs only.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

GRID_SIZE = 7  # aht_bench.envs.lbf.GRID_SIZE
NUM_FOOD = 3  # aht_bench.envs.lbf.NUM_FOOD
GRID_CELLS = GRID_SIZE * GRID_SIZE  # relaxation sweeps: enough for any shortest path

NOOP, UP, DOWN, LEFT, RIGHT, LOAD = range(6)  # Jumanji's constants; UP is row - 1
_MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # UP, DOWN, LEFT, RIGHT as (d_row, d_col)
_BIG = 10_000  # "unreachable" distance

LBF_HEURISTICS = ("lexi", "rlexi", "col", "rcol", "nearest", "farthest")


class SeqCarry(NamedTuple):
    """The carry of a `SequentialAgent` (every leaf has the batch shape in front)."""

    started: jax.Array  # bool: the agent has acted in this episode
    order: jax.Array  # int32 (3,): food indices in collection order (set at the first act)
    prev_pos: jax.Array  # int32 (2,): own position at the previous act
    prev_action: jax.Array  # int32: the previous action (noop before the first act)


def food_order(name: str, food_pos: jax.Array, origin: jax.Array) -> jax.Array:
    """Food indices (int32 (3,)) in the collection order `name` for foods at `food_pos` (3, 2).

    `origin` (2,) is the position distances are measured from (`nearest`/`farthest` only).
    Ties are broken lexicographically (row, then column), then by food index.
    """
    row, col = food_pos[:, 0], food_pos[:, 1]
    lexi = row * GRID_SIZE + col
    colmaj = col * GRID_SIZE + row
    dist = jnp.sum(jnp.abs(food_pos - origin[None, :]), axis=1)
    if name == "lexi":
        key = lexi
    elif name == "rlexi":
        key = -lexi
    elif name == "col":
        key = colmaj
    elif name == "rcol":
        key = -colmaj
    elif name == "nearest":
        key = dist * GRID_CELLS + lexi
    elif name == "farthest":
        key = -dist * GRID_CELLS + lexi
    else:
        raise ValueError(f"unknown LBF heuristic {name!r}; expected one of {LBF_HEURISTICS}")
    return jnp.argsort(key, stable=True).astype(jnp.int32)


def _neighbour_min(dist: jax.Array) -> jax.Array:
    """For every cell, the smallest `dist` among its 4 neighbours (`_BIG` off the grid).

    Works on (..., 7, 7) stacks of grids.
    """
    lead = [(0, 0)] * (dist.ndim - 2)
    padded = jnp.pad(dist, lead + [(1, 1), (1, 1)], constant_values=_BIG)
    return jnp.minimum(
        jnp.minimum(padded[..., :-2, 1:-1], padded[..., 2:, 1:-1]),
        jnp.minimum(padded[..., 1:-1, :-2], padded[..., 1:-1, 2:]),
    )


def distance_field(free: jax.Array, goal: jax.Array) -> jax.Array:
    """BFS distance (int32 (..., 7, 7)) from each free cell to the nearest free `goal` cell.

    `free` and `goal` are bool (..., 7, 7) (leading axes: independent grids, one loop);
    blocked or unreachable cells get `_BIG`.
    """
    start = jnp.where(goal & free, 0, _BIG).astype(jnp.int32)

    def sweep(_, dist):
        return jnp.where(free, jnp.minimum(dist, _neighbour_min(dist) + 1), _BIG)

    return jax.lax.fori_loop(0, GRID_CELLS, sweep, start)


def _step_along(dist: jax.Array, pos: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(best move action, its distance) from `pos` down the field `dist`."""
    padded = jnp.pad(dist, 1, constant_values=_BIG)
    r, c = pos[0] + 1, pos[1] + 1
    around = jnp.stack([padded[r + dr, c + dc] for dr, dc in _MOVES])
    best = jnp.argmin(around)  # first minimum: up, down, left, right
    return (best + UP).astype(jnp.int32), around[best]


class SequentialAgent:
    """A `seq_agent_<order>` heuristic for LBF; see the module docstring.

    Args:
        order: one of `LBF_HEURISTICS`.
        num_agents: players in the task (2 for lbf-v1, 4 for lbf-4p-v1); fixes the obs layout.
        order_from: "self" (the paper's agents) or "partner": compute the order from the
            initial position of the `partner`-th other agent instead of one's own.
        partner: which other-agent triple of the observation `order_from="partner"` reads.
    """

    def __init__(self, order: str, num_agents: int = 2, order_from: str = "self", partner: int = 0):
        if order not in LBF_HEURISTICS:
            raise ValueError(f"unknown LBF heuristic {order!r}; expected one of {LBF_HEURISTICS}")
        if order_from not in ("self", "partner"):
            raise ValueError(f"order_from must be 'self' or 'partner', got {order_from!r}")
        if num_agents < 2:
            raise ValueError(f"num_agents must be at least 2, got {num_agents}")
        if not 0 <= partner < num_agents - 1:
            raise ValueError(f"partner must be in [0, {num_agents - 1}), got {partner}")
        self.order = order
        self.num_agents = num_agents
        self.order_from = order_from
        self.partner = partner
        self.obs_dim = 3 * (NUM_FOOD + num_agents) + 1
        self.name = f"seq_agent_{order}" + ("_from_partner" if order_from == "partner" else "")

    def __repr__(self) -> str:
        return (
            f"SequentialAgent({self.order!r}, num_agents={self.num_agents}, "
            f"order_from={self.order_from!r}, partner={self.partner})"
        )

    def init_carry(self, batch_shape: tuple[int, ...]) -> SeqCarry:
        shape = tuple(batch_shape)
        return SeqCarry(
            started=jnp.zeros(shape, bool),
            order=jnp.broadcast_to(jnp.arange(NUM_FOOD, dtype=jnp.int32), shape + (NUM_FOOD,)),
            prev_pos=jnp.zeros(shape + (2,), jnp.int32),
            prev_action=jnp.zeros(shape, jnp.int32),
        )

    def act(
        self, params, carry: SeqCarry, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, SeqCarry, dict[str, jax.Array]]:
        del params, key
        if obs.shape != (self.obs_dim,):
            raise ValueError(
                f"{self.name} for {self.num_agents} players takes one observation of shape "
                f"({self.obs_dim},), got {obs.shape}; vmap over batches"
            )
        triples = jnp.round(obs[:-1]).astype(jnp.int32).reshape(NUM_FOOD + self.num_agents, 3)
        food_pos, food_level = triples[:NUM_FOOD, :2], triples[:NUM_FOOD, 2]
        pos = triples[NUM_FOOD, :2]
        others = triples[NUM_FOOD + 1 :, :2]
        food_live = food_level > 0
        others_seen = jnp.all(others >= 0, axis=1)

        # The order, fixed at the first act of the episode.
        origin = others[self.partner] if self.order_from == "partner" else pos
        order = jnp.where(carry.started, carry.order, food_order(self.order, food_pos, origin))

        # Target: the first uneaten food in the order.
        live_in_order = food_live[order]
        any_live = jnp.any(live_in_order)
        target = order[jnp.argmax(live_in_order)]
        tpos = food_pos[target]

        # Obstacles: uneaten foods and the other agents.
        rows = jnp.arange(GRID_SIZE)[:, None]
        cols = jnp.arange(GRID_SIZE)[None, :]

        def cells_at(positions: jax.Array, mask: jax.Array) -> jax.Array:
            hit = (rows[None] == positions[:, 0, None, None]) & (
                cols[None] == positions[:, 1, None, None]
            )
            return jnp.any(hit & mask[:, None, None], axis=0)

        food_cells = cells_at(food_pos, food_live)
        agent_cells = cells_at(others, others_seen)
        goal = (jnp.abs(rows - tpos[0]) + jnp.abs(cols - tpos[1])) == 1
        free_all = ~(food_cells | agent_cells)
        free_foods = ~food_cells

        dist, fallback = distance_field(jnp.stack([free_all, free_foods]), goal[None])
        move, move_dist = _step_along(dist, pos)
        fb_move, fb_dist = _step_along(fallback, pos)
        move = jnp.where(move_dist < _BIG, move, jnp.where(fb_dist < _BIG, fb_move, NOOP))

        adjacent = jnp.sum(jnp.abs(pos - tpos)) == 1
        action = jnp.where(adjacent, LOAD, move)

        # Yield after a failed move to a nearby agent with a smaller cell index.
        prev_moved = (carry.prev_action >= UP) & (carry.prev_action <= RIGHT)
        blocked = carry.started & prev_moved & jnp.all(pos == carry.prev_pos)
        contested = carry.prev_pos + jnp.asarray(_MOVES)[jnp.clip(carry.prev_action - UP, 0, 3)]
        my_index = pos[0] * GRID_SIZE + pos[1]
        their_index = others[:, 0] * GRID_SIZE + others[:, 1]
        rival = (
            others_seen
            & (jnp.sum(jnp.abs(others - contested[None, :]), axis=1) == 1)
            & (jnp.sum(jnp.abs(others - tpos[None, :]), axis=1) != 1)  # not a loader at target
        )
        outranked = jnp.any(rival & (their_index < my_index))
        is_move = (action >= UP) & (action <= RIGHT)
        action = jnp.where(blocked & outranked & is_move, NOOP, action)

        action = jnp.where(any_live, action, NOOP).astype(jnp.int32)
        new_carry = SeqCarry(
            started=jnp.ones_like(carry.started),
            order=order,
            prev_pos=pos,
            prev_action=action,
        )
        extras = {"target": jnp.where(any_live, target, -1).astype(jnp.int32)}
        return action, new_carry, extras


def lbf_heuristic(
    name: str, num_agents: int = 2, order_from: str = "self", partner: int = 0
) -> SequentialAgent:
    """The LBF heuristic `name` (one of `LBF_HEURISTICS`, or "seq_agent_<name>")."""
    short = name.removeprefix("seq_agent_")
    return SequentialAgent(short, num_agents=num_agents, order_from=order_from, partner=partner)
