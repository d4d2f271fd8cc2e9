"""The paper's Overcooked heuristic teammates (App. "Evaluation Teammates"): `onion_agent_<p>`,
`plate_agent_<p>`, `independent_agent_<p>`, plus `random` and `static`.

    policy = overcooked_heuristic("forced_coord", "independent", p=0.6)

The paper: "pre-programmed roles that are agnostic to the layout, along with some basic
collision-avoidance logic". Roles:

- `onion`: fetches onions (from a pile, or loose ones on counters) and puts them in pots that
  are neither cooking nor ready;
- `plate`: once a soup cooks, fetches a plate, waits next to the cooking pot, takes the soup and
  delivers it; it also picks up and delivers soups (dishes) lying on counters;
- `independent`: both jobs, choosing from the kitchen's state (below);
- `random`: uniform over the six actions; `static`: always `stay` (both with carry `()`).

The agents read everything from their own observation (docs/overcooked.md lists the channels);
from the layout they take only the grid size and its number of floor cells (a bound on path
lengths). A step of `onion` / `plate` / `independent`:

1. **Parse** the grid (flat, row-major): own and partner cell, facing and held item (the item
   channels at a seat's own cell), pots (onions in, cooking, ready), piles, loose onions,
   plates and dishes on counters, bare counters, delivery cells.
2. **Path costs**, one loop of Bellman-Ford sweeps over the floor: from each of the agent's
   four neighbouring cells, entering the partner's cell costing `_DETOUR` (so a path avoids
   the partner whenever one exists, and walks up to it when it is in the only way), and a flood
   fill from the partner. A tile is *usable* by a seat when it is next to a floor cell the seat
   can reach (ignoring the other seat). On forced_coord the left seat can use no pot and no
   delivery cell. *Shared counters* are the bare counters usable by both seats: the dividing
   counters on forced_coord, every usable counter on the other layouts.
3. **Sub-goal**: the first option of this list that applies to the role and held item and has
   a usable target (codes in `SUBGOALS`):
   - `place` (anything held that is to be placed, by the p rule below or to free the hands)
     on the nearest free shared counter;
   - empty hands: `fetch_dish` (plate, independent); `fetch_plate` (independent, when a plate
     is wanted and a soup is ready or no onion is wanted); `fetch_onion` (onion, independent,
     when an onion is wanted); `fetch_plate` (plate, independent, when a plate is wanted);
   - `fill_pot` with an onion; `take_soup` from a ready pot, else `wait_for_soup` next to a
     cooking pot, with a plate; `deliver` a dish;
   - otherwise `idle` (`stay`).
   An onion is *wanted* while the pots that take onions miss more onions than the partner
   holds; the onion piles are targets only while onions are *short* (the loose onions on
   counters do not cover what is missing either), so agents do not flood the counters. Plates
   alike, for the cooking and ready pots. Items the agent placed itself by the p rule do not
   count, unless it can reach no pot (it is a feeder: they are for the partner). An independent
   agent holding an onion that no usable pot takes while a plate is wanted (or a plate while no
   usable pot is cooking or ready and an onion is wanted) puts it down on a shared counter to
   free its hands; an onion agent does that with a plate and a plate agent with an onion.
4. **Navigation**: it moves to the neighbour with the cheapest path to a floor cell next to a
   target (ties in action order up, down, right, left). Next to a target it turns to it (a move
   towards a tile that is not floor only turns; the tile it faces is preferred) and then
   interacts (stays, for `wait_for_soup`).

**The p rule** (the paper: "the probability that the agent places whatever it is holding on a
nearby counter"). Each item the agent takes from a source (an onion or plate pile, or a soup
from a pot) is, with probability p drawn at the pickup, destined for a counter: the agent
carries it to the nearest free shared counter instead of using it. Items taken from counters
are never re-placed this way (otherwise two agents with p > 0 pass items back and forth). An
agent that holds an item whose destination it cannot reach at all (a pot for onions and plates,
a delivery cell for dishes: the left seat of forced_coord) redraws with probability p at every
step, so a stuck agent hands its item over the counter: this is what makes
`independent_agent_0.6` work on forced_coord, where with p = 0 it holds its first onion forever.
With no free shared counter usable the placement waits and the agent follows its role. The
carry remembers the counters it filled this way, and the agent never takes items back from them
(else a p = 0.9 agent picks its own onion up again at once); a mark is dropped once the counter
is empty. Items the partner placed are fair game. So soups that `plate_agent_0.9` places are
delivered only by a partner that picks them up (an independent or an ego agent).

**Collision avoidance** (JaxMARL keeps both seats in place when they move onto one cell or
swap, and blocks a move into a seat that stays):
- *blocked*: when its last action was a move towards a floor cell and it did not move, the
  agent moves, with probability 1/2, to a uniformly random free neighbouring cell instead;
- *yielding*: an agent that idles or waits next to a cooking pot steps aside the same way,
  with probability 1/2, when the partner is next to it, faces it and did not move last step
  (the partner is trying to walk into its cell): this frees single-access cells such as the
  only cell next to cramped_room's pot;
- *hesitating*: an agent about to undo the move it just made stays instead, with probability
  1/2. Two agents heading opposite ways along a ring (coord_ring, counter_circuit) otherwise
  re-plan around each other in step and swing back and forth forever.
All randomness comes from the `key`: `act` is a pure function of (carry, obs, key).

`role` and `p` are pytree leaves of `OvercookedHeuristic` (the grid size is static), so every
role and p of a layout shares one compiled `act`, and a stack of heuristics vmaps:
`jax.tree.map(lambda *x: jnp.asarray(x), *policies)`. `params` is `None`. `extras["subgoal"]`
is the int32 code of the sub-goal pursued (`SUBGOALS[code]`: 0 idle, 1 fetch_onion,
2 fill_pot, 3 fetch_plate, 4 wait_for_soup, 5 take_soup, 6 deliver, 7 place, 8 fetch_dish),
-1 for `random` and `static`.

May import jax, flax, numpy and aht_bench.envs only.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

UP, DOWN, RIGHT, LEFT, STAY, INTERACT = range(6)  # JaxMARL's actions; 0..3 are also facings
_MOVES = ((-1, 0), (1, 0), (0, 1), (0, -1))  # up, down, right, left as (d_row, d_col)
_REVERSE = (DOWN, UP, LEFT, RIGHT)  # the move undoing each move
EMPTY, ONION, PLATE, DISH = range(4)  # what a seat holds (our codes, not JaxMARL's ids)
NUM_CHANNELS = 26
_BIG = 10_000  # "unreachable" path cost
_DETOUR = 100  # cost of entering the partner's cell: more than any path on these grids

ROLES = ("onion", "plate", "independent", "random", "static")
P_ROLES = ROLES[:3]  # the roles with a placement probability p (codes 0, 1, 2)
SUBGOALS = (
    "idle",
    "fetch_onion",
    "fill_pot",
    "fetch_plate",
    "wait_for_soup",
    "take_soup",
    "deliver",
    "place",
    "fetch_dish",
)
(
    IDLE,
    FETCH_ONION,
    FILL_POT,
    FETCH_PLATE,
    WAIT_FOR_SOUP,
    TAKE_SOUP,
    DELIVER,
    PLACE,
    FETCH_DISH,
) = range(len(SUBGOALS))

# Observation channels (docs/overcooked.md).
_OWN, _PARTNER, _OWN_DIR, _PARTNER_DIR = 0, 1, 2, 6  # facing layers: up, down, right, left
_POT, _COUNTER, _ONION_PILE, _PLATE_PILE, _DELIVERY = 10, 11, 12, 14, 15
_ONIONS_IN_POT, _COOK_TIME, _SOUP_READY, _PLATES, _ONIONS = 16, 20, 21, 22, 23


class OvercookedCarry(NamedTuple):
    """The carry of an `OvercookedHeuristic` (every leaf has the batch shape in front).

    Cells are flat row-major indices `row * width + col`.
    """

    started: jax.Array  # () bool: the agent has acted in this episode
    prev_pos: jax.Array  # () int32: own cell at the previous act
    prev_action: jax.Array  # () int32: the previous action (stay before the first act)
    prev_held: jax.Array  # () int32: what it held at the previous act (EMPTY, ONION, ...)
    partner_prev_pos: jax.Array  # () int32: the partner's cell at the previous act
    drop_intent: jax.Array  # () bool: the held item is to be placed on a counter (p rule)
    own_items: jax.Array  # (height * width,) bool: counters holding an item it placed on purpose


# ---------------------------------------------------------------------- grid helpers
@functools.cache
def neighbour_table(height: int, width: int) -> np.ndarray:
    """int32 (height * width, 4): the flat index of each cell's neighbour up, down, right and
    left, or `height * width` (one past the last cell) off the grid."""
    n = height * width
    table = np.full((n, 4), n, np.int32)
    for row in range(height):
        for col in range(width):
            for d, (d_row, d_col) in enumerate(_MOVES):
                if 0 <= row + d_row < height and 0 <= col + d_col < width:
                    table[row * width + col, d] = (row + d_row) * width + col + d_col
    return table


def _at(values: jax.Array, index: jax.Array, fill) -> jax.Array:
    """`values[..., index]` where `index` may be one past the last cell (then `fill`)."""
    pad = jnp.full(values.shape[:-1] + (1,), fill, values.dtype)
    return jnp.concatenate([values, pad], axis=-1)[..., index]


def _shifted(values: jax.Array, width: int, fill) -> list[jax.Array]:
    """`values` (..., N) at each cell's neighbour up, down, right and left (`fill` off the
    grid), as four (..., N) arrays: slices and concatenations, which XLA fuses (a gather with
    the neighbour table measured several times slower under vmap)."""
    n = values.shape[-1]
    col = np.arange(n) % width

    def pad(k: int) -> jax.Array:
        return jnp.full(values.shape[:-1] + (k,), fill, values.dtype)

    up = jnp.concatenate([pad(width), values[..., : n - width]], axis=-1)
    down = jnp.concatenate([values[..., width:], pad(width)], axis=-1)
    right = jnp.where(col == width - 1, fill, jnp.concatenate([values[..., 1:], pad(1)], -1))
    left = jnp.where(col == 0, fill, jnp.concatenate([pad(1), values[..., :-1]], -1))
    return [up, down, right, left]


def next_to(mask: jax.Array, width: int) -> jax.Array:
    """Cells 4-adjacent to a True cell of `mask` (bool (..., N), rows of `width` cells)."""
    up, down, right, left = _shifted(mask, width, False)
    return up | down | right | left


def path_costs(cost: jax.Array, source: jax.Array, width: int, sweeps: int) -> jax.Array:
    """Least cost (int32 (..., N)) of a path from a `source` cell to each cell, a path costing
    the sum of the `cost` of the cells it enters, its first cell included (`_BIG` where
    unreachable). Bellman-Ford sweeps: exact for paths of up to `sweeps` steps.

    `cost`: int32 (..., N), `_BIG` on blocked cells; `source`: bool (..., N); flat row-major
    grids with rows of `width` cells (leading axes: independent fields, one loop). With cost 1
    on every free cell this is the BFS distance plus one.
    """
    start = jnp.where(source, cost, _BIG).astype(jnp.int32)

    def sweep(_, dist):
        up, down, right, left = _shifted(dist, width, _BIG)
        around = jnp.minimum(jnp.minimum(up, down), jnp.minimum(right, left))
        return jnp.minimum(dist, jnp.minimum(around + cost, _BIG))

    return jax.lax.fori_loop(0, sweeps, sweep, start)


def _held(cell: jax.Array) -> jax.Array:
    """What a seat holds, from the 26 channels of its own cell."""
    return jnp.select(
        [cell[_SOUP_READY] > 0.5, cell[_PLATES] > 0.5, cell[_ONIONS] > 0.5],
        [DISH, PLATE, ONION],
        EMPTY,
    ).astype(jnp.int32)


class _Scene(NamedTuple):
    """One seat's observation, parsed (step 1 of a heuristic's step): flat row-major cells."""

    me: jax.Array  # (cells,) bool: the seat's own cell
    mate: jax.Array  # (cells,) bool: the partner's cell
    pos: jax.Array  # own cell index
    mate_pos: jax.Array
    facing: jax.Array  # own facing, in action order
    mate_facing: jax.Array
    held: jax.Array  # EMPTY, ONION, PLATE or DISH
    mate_held: jax.Array
    around: jax.Array  # (4,) the neighbouring cells, in action order
    faced: jax.Array  # the cell the seat faces
    pot: jax.Array
    cooking: jax.Array
    ready: jax.Array
    fillable: jax.Array  # pots neither cooking nor ready
    onions_in_pot: jax.Array  # (cells,) float
    loose_onion: jax.Array  # items on counters
    loose_plate: jax.Array
    loose_dish: jax.Array
    loose_any: jax.Array
    bare_counter: jax.Array
    delivery: jax.Array
    onion_pile: jax.Array
    plate_pile: jax.Array
    floor: jax.Array
    free_of_mate: jax.Array  # floor cells the partner does not stand on


def _parse(g: jax.Array, table: jax.Array) -> _Scene:
    """The `_Scene` of a (cells, channels) observation grid; `table`: `neighbour_table`."""
    on = g > 0.5
    me, mate = on[:, _OWN], on[:, _PARTNER]
    pos = jnp.argmax(me).astype(jnp.int32)
    mate_pos = jnp.argmax(mate).astype(jnp.int32)
    facing = jnp.argmax(g[pos, _OWN_DIR : _OWN_DIR + 4]).astype(jnp.int32)
    around = table[pos]
    pot = on[:, _POT]
    cooking = pot & (g[:, _COOK_TIME] > 0.5)
    ready = pot & on[:, _SOUP_READY]
    loose = ~(me | mate | pot)  # here the item channels mean "an item on a counter"
    loose_onion = loose & on[:, _ONIONS]
    loose_plate = loose & on[:, _PLATES]
    loose_dish = loose & on[:, _SOUP_READY]
    loose_any = loose_onion | loose_plate | loose_dish
    bare_counter = on[:, _COUNTER]
    delivery = on[:, _DELIVERY]
    onion_pile, plate_pile = on[:, _ONION_PILE], on[:, _PLATE_PILE]
    floor = ~(pot | bare_counter | onion_pile | plate_pile | delivery | loose_any)
    return _Scene(
        me=me,
        mate=mate,
        pos=pos,
        mate_pos=mate_pos,
        facing=facing,
        mate_facing=jnp.argmax(g[mate_pos, _PARTNER_DIR : _PARTNER_DIR + 4]),
        held=_held(g[pos]),
        mate_held=_held(g[mate_pos]),
        around=around,
        faced=around[facing],
        pot=pot,
        cooking=cooking,
        ready=ready,
        fillable=pot & ~cooking & ~ready,
        onions_in_pot=g[:, _ONIONS_IN_POT],
        loose_onion=loose_onion,
        loose_plate=loose_plate,
        loose_dish=loose_dish,
        loose_any=loose_any,
        bare_counter=bare_counter,
        delivery=delivery,
        onion_pile=onion_pile,
        plate_pile=plate_pile,
        floor=floor,
        free_of_mate=floor & ~mate,
    )


def _wants(
    s: _Scene, own: jax.Array, can_reach_pot: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """(onion wanted, onions short, plate wanted, plates short): an onion is wanted while the
    pots that take onions miss more than the partner holds, and short while the loose onions
    that count do not cover the rest either; plates alike, for the cooking and ready pots. The
    seat's own placed items do not count unless it can reach no pot (they are for the partner)."""
    counted = ~own | ~can_reach_pot
    mate_onion, mate_plate = s.mate_held == ONION, s.mate_held == PLATE
    onions_missing = jnp.sum(jnp.where(s.fillable, 3.0 - s.onions_in_pot, 0.0))
    onion_short = onions_missing > jnp.sum(s.loose_onion & counted) + mate_onion
    plates_needed = jnp.sum(s.cooking | s.ready)
    plate_short = plates_needed > jnp.sum(s.loose_plate & counted) + mate_plate
    return onions_missing > mate_onion, onion_short, plates_needed > mate_plate, plate_short


def _navigate(
    s: _Scene, target: jax.Array, waits: jax.Array, active: jax.Array, dist: jax.Array, w: int
) -> tuple[jax.Array, jax.Array]:
    """(action, whether the seat stands next to a target): step 4, the neighbour on a shortest
    path to a floor cell next to a target; there, turn to it, then interact (or wait)."""
    goal = s.floor & next_to(target, w)
    via = jnp.min(jnp.where(goal, dist[:4], _BIG), axis=1)  # (4,) path cost per first move
    move = jnp.where(jnp.min(via) < _BIG, jnp.argmin(via), STAY)
    target_around = _at(target, s.around, False)
    turn = jnp.where(target_around[s.facing], s.facing, jnp.argmax(target_around))
    at_goal = jnp.any(target_around)
    use = jnp.where(turn == s.facing, jnp.where(waits, STAY, INTERACT), turn)
    return jnp.where(active, jnp.where(at_goal, use, move), STAY), at_goal


def _avoid_collisions(
    s: _Scene,
    carry: OvercookedCarry,
    action: jax.Array,
    passive: jax.Array,
    table: jax.Array,
    u: jax.Array,
) -> jax.Array:
    """The action after collision avoidance: random sidesteps when blocked or (`passive`: idle
    or waiting next to its target) in the partner's way, and hesitation before turning back."""
    free_around = _at(s.free_of_mate, s.around, False)
    count = jnp.sum(free_around)
    kth = jnp.minimum(jnp.floor(u[3] * count), count - 1)
    sidestep = jnp.where(count > 0, jnp.argmax(jnp.cumsum(free_around) > kth), STAY)
    prev_dir = jnp.clip(carry.prev_action, 0, 3)
    blocked = (
        carry.started
        & (carry.prev_action < STAY)
        & (s.pos == carry.prev_pos)
        & _at(s.floor, table[carry.prev_pos, prev_dir], False)
        & (action < STAY)
    )
    mate_in_way = (
        carry.started
        & jnp.any(s.around == s.mate_pos)
        & (table[s.mate_pos, s.mate_facing] == s.pos)
        & (s.mate_pos == carry.partner_prev_pos)
    )
    coin = u[2] < 0.5
    dodge = (blocked | (passive & mate_in_way)) & coin
    # Two agents re-planning around each other flip between the two ways round a ring in
    # step; hesitating (half of the time) before turning back after a move breaks the tie.
    moved = carry.started & (s.pos != carry.prev_pos)
    turn_back = moved & (action == jnp.asarray(_REVERSE)[prev_dir]) & (action < STAY)
    action = jnp.where(dodge, sidestep, jnp.where(turn_back & coin, STAY, action))
    return action.astype(jnp.int32)


# ---------------------------------------------------------------------- policies
@struct.dataclass
class OvercookedHeuristic:
    """An `onion` / `plate` / `independent` agent with placement probability `p`.

    Build it with `overcooked_heuristic`; the module docstring has the behaviour. `role` and `p`
    are pytree leaves (Python numbers as built, arrays once stacked), the grid size is static:
    all roles and p on one layout share one compiled `act`, and a stack of them vmaps.
    """

    role: int  # leaf: index into ROLES (0 onion, 1 plate, 2 independent)
    p: float  # leaf: probability of placing a freshly taken item on a shared counter
    height: int = struct.field(pytree_node=False)  # grid rows
    width: int = struct.field(pytree_node=False)  # grid columns
    sweeps: int = struct.field(pytree_node=False)  # path-cost sweeps: >= floor cells - 1
    layout: str = struct.field(pytree_node=False)  # layout name, for names and messages

    @property
    def name(self) -> str:
        """The paper's name, e.g. "onion_agent_0.1" (for a single, unstacked agent)."""
        return f"{ROLES[int(self.role)]}_agent_{float(self.p):g}"

    @property
    def obs_dim(self) -> int:
        return self.height * self.width * NUM_CHANNELS

    def init_carry(self, batch_shape: tuple[int, ...]) -> OvercookedCarry:
        shape = tuple(batch_shape)
        return OvercookedCarry(
            started=jnp.zeros(shape, bool),
            prev_pos=jnp.zeros(shape, jnp.int32),
            prev_action=jnp.full(shape, STAY, jnp.int32),
            prev_held=jnp.full(shape, EMPTY, jnp.int32),
            partner_prev_pos=jnp.zeros(shape, jnp.int32),
            drop_intent=jnp.zeros(shape, bool),
            own_items=jnp.zeros(shape + (self.height * self.width,), bool),
        )

    def act(
        self, params, carry: OvercookedCarry, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, OvercookedCarry, dict[str, jax.Array]]:
        del params
        if obs.shape != (self.obs_dim,):
            raise ValueError(
                f"Overcooked heuristics for {self.layout} take one observation of shape "
                f"({self.obs_dim},), got {obs.shape}; vmap over batches"
            )
        n, w = self.height * self.width, self.width
        table = jnp.asarray(neighbour_table(self.height, self.width))
        role, p = jnp.asarray(self.role), jnp.asarray(self.p, jnp.float32)
        is_onion, is_plate, is_indep = role == 0, role == 1, role == 2
        u = jax.random.uniform(key, (4,))  # pickup draw, stuck draw, coin, sidestep choice

        # 1. Parse the observation (flat cells, row-major).
        s = _parse(obs.reshape(n, NUM_CHANNELS), table)
        held, cells = s.held, jnp.arange(n)

        # Counters this agent filled on purpose: a mark lasts while the counter holds an item.
        was_interact = carry.started & (carry.prev_action == INTERACT)
        placed = was_interact & (carry.prev_held != EMPTY) & (held == EMPTY) & carry.drop_intent
        own = (carry.own_items | (placed & (cells == s.faced))) & s.loose_any

        # 2. One loop of path costs: from each neighbour, entering the partner's cell costing
        # `_DETOUR` (so a path avoids the partner whenever one exists), and from the partner.
        step_cost = jnp.where(s.floor, jnp.where(s.mate, _DETOUR, 1), _BIG).astype(jnp.int32)
        dist = path_costs(
            jnp.concatenate([jnp.tile(step_cost, (4, 1)), jnp.where(s.floor, 1, _BIG)[None]]),
            jnp.concatenate([cells[None, :] == s.around[:, None], s.mate[None]]),
            w,
            self.sweeps,
        )
        region = s.me | jnp.any(dist[:4] < _BIG, axis=0)
        usable = next_to(region, w)
        shared = usable & next_to(dist[4] < _BIG, w)

        can_reach_pot = jnp.any(s.pot & usable)
        onion_wanted, onion_short, plate_wanted, plate_short = _wants(s, own, can_reach_pot)

        # Loose items are fetched while wanted; the piles only when the loose ones fall short.
        onion_src = (s.onion_pile & onion_short) | (s.loose_onion & ~own)
        plate_src = (s.plate_pile & plate_short) | (s.loose_plate & ~own)
        dish_src = s.loose_dish & ~own

        # The p rule: draw at each pickup from a source; redraw every step while stuck.
        took_from_counter = (
            was_interact & (carry.prev_held == EMPTY) & _at(s.bare_counter, s.faced, False)
        )
        fresh = (held != EMPTY) & (held != carry.prev_held) & ~took_from_counter
        drop_intent = (held != EMPTY) & jnp.where(fresh, u[0] < p, carry.drop_intent)
        dest_reachable = jnp.where(held == DISH, jnp.any(s.delivery & usable), can_reach_pot)
        drop_intent = drop_intent | ((held != EMPTY) & ~dest_reachable & (u[1] < p))

        # 3. Sub-goal: the first applicable option whose targets are usable.
        empty, h_onion, h_plate, h_dish = (held == v for v in (EMPTY, ONION, PLATE, DISH))
        hands_free = jnp.where(
            is_indep,
            (h_onion & ~jnp.any(s.fillable & usable) & can_reach_pot & plate_wanted)
            | (h_plate & ~jnp.any((s.cooking | s.ready) & usable) & can_reach_pot & onion_wanted),
            (is_onion & h_plate) | (is_plate & h_onion),
        )
        plate_first = is_indep & plate_wanted & (jnp.any(s.ready) | ~onion_wanted)
        options = [  # (condition, target cells, sub-goal code, wait instead of interacting)
            (~empty & (drop_intent | hands_free), s.bare_counter & shared, PLACE, False),
            (empty & (is_plate | is_indep), dish_src, FETCH_DISH, False),
            (empty & plate_first, plate_src, FETCH_PLATE, False),
            (empty & (is_onion | is_indep) & onion_wanted, onion_src, FETCH_ONION, False),
            (empty & (is_plate | is_indep) & plate_wanted, plate_src, FETCH_PLATE, False),
            (h_onion, s.fillable, FILL_POT, False),
            (h_plate, s.ready, TAKE_SOUP, False),
            (h_plate, s.cooking, WAIT_FOR_SOUP, True),
            (h_dish, s.delivery, DELIVER, False),
        ]
        targets = jnp.stack([o[1] for o in options])
        valid = jnp.stack([o[0] for o in options]) & jnp.any(targets & usable, axis=1)
        chosen = jnp.argmax(valid)
        active = jnp.any(valid)
        subgoal = jnp.where(active, jnp.asarray([o[2] for o in options])[chosen], IDLE)
        waits = jnp.asarray([o[3] for o in options])[chosen]

        # 4. Navigation, then collision avoidance.
        action, at_goal = _navigate(s, targets[chosen], waits, active, dist, w)
        action = _avoid_collisions(s, carry, action, ~active | (waits & at_goal), table, u)

        new_carry = OvercookedCarry(
            started=jnp.ones_like(carry.started),
            prev_pos=s.pos,
            prev_action=action,
            prev_held=held,
            partner_prev_pos=s.mate_pos.astype(jnp.int32),
            drop_intent=drop_intent,
            own_items=own,
        )
        return action, new_carry, {"subgoal": subgoal.astype(jnp.int32)}


@dataclasses.dataclass(frozen=True)
class RandomHeuristic:
    """`random`: uniform over the six actions. Feed-forward: the carry is `()`."""

    layout: str = ""

    @property
    def name(self) -> str:
        return "random"

    def init_carry(self, batch_shape: tuple[int, ...]) -> tuple:
        return ()

    def act(self, params, carry, obs, key):
        del params, obs
        action = jax.random.randint(key, (), 0, 6, dtype=jnp.int32)
        return action, carry, {"subgoal": jnp.asarray(-1, jnp.int32)}


@dataclasses.dataclass(frozen=True)
class StaticHeuristic:
    """`static`: always `stay`. Feed-forward: the carry is `()`."""

    layout: str = ""

    @property
    def name(self) -> str:
        return "static"

    def init_carry(self, batch_shape: tuple[int, ...]) -> tuple:
        return ()

    def act(self, params, carry, obs, key):
        del params, obs, key
        return jnp.asarray(STAY, jnp.int32), carry, {"subgoal": jnp.asarray(-1, jnp.int32)}


def overcooked_layout(task_or_layout: str) -> str:
    """The layout of an Overcooked task id or alias ("forced_coord", "overcooked-forced_coord-v1").

    Raises `UnknownTaskError` for an unknown name and `ValueError` for a task that is not
    Overcooked.
    """
    from aht_bench.envs.registry import resolve
    from aht_bench.envs.tasks import OVERCOOKED_LAYOUTS

    task_id = resolve(task_or_layout)
    layout = task_id.removeprefix("overcooked-").rpartition("-v")[0]
    if not task_id.startswith("overcooked-") or layout not in OVERCOOKED_LAYOUTS:
        raise ValueError(
            f"{task_or_layout!r} is not an Overcooked task; choose one of "
            f"{', '.join(OVERCOOKED_LAYOUTS)} (or their ids overcooked-<layout>-v1)"
        )
    return layout


def overcooked_heuristic(
    task_or_layout: str, role: str, p: float = 0.0
) -> OvercookedHeuristic | RandomHeuristic | StaticHeuristic:
    """The Overcooked heuristic `role` (one of `ROLES`) with placement probability `p`.

    `task_or_layout`: a layout ("cramped_room", ...), its task id or alias. `p` in [0, 1]
    applies to "onion", "plate" and "independent" only. See the module docstring.
    """
    if role not in ROLES:
        raise ValueError(
            f"unknown Overcooked heuristic role {role!r}; choose one of {', '.join(ROLES)}"
        )
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    if role not in P_ROLES and p != 0.0:
        raise ValueError(f"the {role!r} heuristic takes no p (got p={p})")
    layout = overcooked_layout(task_or_layout)
    if role == "random":
        return RandomHeuristic(layout)
    if role == "static":
        return StaticHeuristic(layout)
    from aht_bench.envs.overcooked import FLOOR, make_overcooked

    env = make_overcooked(layout)
    sweeps = int(np.sum(env.kinds == FLOOR))
    return OvercookedHeuristic(
        role=ROLES.index(role),
        p=p,
        height=env.height,
        width=env.width,
        sweeps=sweeps,
        layout=layout,
    )
