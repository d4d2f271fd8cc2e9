"""The five classic Overcooked layouts, wrapping JaxMARL 0.2.0's vanilla Overcooked.

Two published versions of each layout (docs/overcooked.md, "v1 and v2"):

- `overcooked-<layout>-v2` (`OvercookedV2`, `make_overcooked(layout, version=2)`): the game the
  paper's numbers were measured on, as its public code runs it (../shared/FACTS.md): on the
  divided layouts the seats draw their sides every episode (each side with probability 1/2);
  every reset starts from a random object state (each pot's status uniform over 0..23, each
  seat's held item uniform over empty/onion/plate/dish, counters bare); a pickup pays +0.1 only
  from a pile (onion or plate pile), nothing taken off or put on a counter pays.
- `overcooked-<layout>-v1` (`Overcooked`): the v1 protocol, unchanged: seat 0 always on the
  left of a divided layout, empty pots and hands at reset, pickups off a counter paid.

What follows describes v1; `OvercookedV2` changes only the reset and the shaped-reward
coefficients.

`make_overcooked(layout)` builds `overcooked-<layout>-v1` for cramped_room, asymm_advantages,
counter_circuit, coord_ring and forced_coord: two seats, six actions in JaxMARL's order (up, down,
right, left, stay, interact), horizon 400 (a truncation), +20 base reward to both seats per
delivered soup (paper App. "Experimental Tasks"). The backend state `EnvState.inner` is JaxMARL's
own `State`, stepped with JaxMARL's `step_agents` and observed with its `get_obs`; nothing of the
game's rules is copied here. docs/overcooked.md has the maps, seat table and observation channels.

JaxMARL quirks corrected here (each pinned by tests/envs/test_overcooked.py):

1. Observation shape: JaxMARL's `observation_space` declares `(width, height, 26)`, but `get_obs`
   returns `(height, width, 26)`. We flatten the real `(H, W, 26)` array and publish
   `grid_obs_shape = (height, width, 26)`; `obs.reshape(grid_obs_shape)[y, x]` is cell (x, y).
   Its declared bounds (0..255) are replaced by tight per-channel bounds (`observation_bounds`).
2. Spawn rule: `random_reset=False` always spawns at the layout's fixed cells, and
   `random_reset=True` also randomises pot contents and held items and can put both agents on one
   side of a divided layout (unsolvable). We randomise spawn positions only (empty pots, empty
   hands, no loose items, step 0, uniformly random orientations as JaxMARL does). On the divided
   layouts (asymm_advantages, forced_coord) seat 0 spawns uniformly in the left region and seat 1
   uniformly in the right region; elsewhere both seats are uniform over the free floor cells,
   never on the same cell.
3. Shaped reward: JaxMARL's `info["shaped_reward"]` uses its own coefficients (3 for an onion in
   a pot, 3 for a plate pickup that it judges useful, 5 for a soup pickup, nothing for onion
   pickups). We use the paper's, per seat: +0.1 onion pickup, +0.5 onion into a pot, +0.1 plate
   pickup, +1.0 soup pickup (see `Overcooked._shaped_reward` for the exact rule).
4. Agent order: seat i is JaxMARL's `agent_i` (its observation lists its own layers first). That
   is not the overcooked_ai player order: JaxMARL's default spawns differ from overcooked_ai's
   layout files on every layout but coord_ring, and on forced_coord and asymm_advantages JaxMARL's
   agent_0 (our seat 0, left side) is overcooked_ai's player 2 (the "2" in its layout file).
5. Dtypes: JaxMARL's reset gives a weakly typed `step`; our states always hold a strong int32
   step, so reset states and stepped states have identical types (scan carries, `jnp.where`).

Kept as JaxMARL has it: the urgency channel is on when `400 - step < 40` (39 or fewer steps
left, as in overcooked_ai), where the paper's text says "40 or fewer"; a soup is ready 20 steps
after the third onion, counting the step that puts it in as the first.

Speed: `AutoReset` resets every env at every step and keeps the result where an episode ended,
so reset is on the hot path. `_start_inner` therefore writes the two agents into a precomputed
agent-free map (built once with JaxMARL's `make_overcooked_map`) instead of rebuilding the padded
map; tests check the two agree for every spawn pair. `get_obs` (with its channel transpose) is the
dominant cost of a step on CPU.

The onion-pass task of the heldout pass teammates (`with_shaping(env, onion_pass=c)`) lives in
`overcooked_pass`, the drawing of frames and text pictures in `overcooked_render`.

May import jax, flax, numpy, jaxmarl and aht_bench.envs (core; overcooked_pass and
overcooked_render inside functions).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
import warnings
from collections import deque
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from flax.core.frozen_dict import FrozenDict

from aht_bench.envs.core import Environment, EnvState


@contextlib.contextmanager
def _quiet_jaxmarl_import():
    """Import jaxmarl without its stdout notices and deprecation warnings.

    jaxmarl 0.2.0's mabrax module ends its import with `sys.stdout = sys.__stdout__` (and the same
    for stderr), which silently undoes any redirection in force (pytest's capture, a notebook's
    output, `contextlib.redirect_stdout`). So the real streams are swapped too, then restored.
    """
    saved = sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__
    sink = io.StringIO()
    sys.stdout = sys.stderr = sys.__stdout__ = sys.__stderr__ = sink  # type: ignore[misc]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__ = saved  # type: ignore[misc]


with _quiet_jaxmarl_import():
    from jaxmarl.environments.overcooked import overcooked as _backend
    from jaxmarl.environments.overcooked.common import (
        COLOR_TO_INDEX,
        DIR_TO_VEC,
        OBJECT_TO_INDEX,
        make_overcooked_map,
    )
    from jaxmarl.environments.overcooked.layouts import overcooked_layouts

JaxMARLOvercooked = _backend.Overcooked
OvercookedState = _backend.State  # JaxMARL's state: the `inner` of every EnvState here
POT_EMPTY_STATUS = _backend.POT_EMPTY_STATUS  # 23

LAYOUTS = ("cramped_room", "asymm_advantages", "counter_circuit", "coord_ring", "forced_coord")
DIVIDED_LAYOUTS = ("asymm_advantages", "forced_coord")
HORIZON = 400
NUM_CHANNELS = 26
ACTION_NAMES = ("up", "down", "right", "left", "stay", "interact")
# JaxMARL keeps `agent_view_size - 1 = 4` cells of wall padding around the grid in `maze_map`.
AGENT_VIEW_SIZE = 5
RENDER_CELL = 48  # pixels per grid cell of the rendered frames
POT_STATUS_MAX = POT_EMPTY_STATUS  # 23 = empty; 22, 21, 20 = 1, 2, 3 onions; 19..0 cooking; 0 ready

EMPTY = OBJECT_TO_INDEX["empty"]
WALL = OBJECT_TO_INDEX["wall"]
ONION = OBJECT_TO_INDEX["onion"]
PLATE = OBJECT_TO_INDEX["plate"]
POT = OBJECT_TO_INDEX["pot"]
DISH = OBJECT_TO_INDEX["dish"]
AGENT = OBJECT_TO_INDEX["agent"]
INVENTORY_ITEMS = (EMPTY, ONION, PLATE, DISH)

# Static cell kinds of a layout (our own codes, for spawning, validation and rendering).
FLOOR, COUNTER, CELL_ONION_PILE, CELL_PLATE_PILE, CELL_POT, CELL_GOAL = range(6)
_KIND_NAMES = ("floor", "counter", "onion pile", "plate pile", "pot", "delivery cell")

# Per-channel observation maxima, read from JaxMARL's `get_obs` (see docs/overcooked.md):
# 16 onions in a pot that has not started cooking (0..3), 18 onions in a cooking/ready soup or a
# held/placed dish (0 or 3), 20 cooking time left (19..1; status 20 is decremented to 19 in the
# step that completes the pot, so 20 is never shown). The tomato channels 13/17/19/24 are always
# 0 but keep the bound 1: Gymnasium warns about every dimension whose low equals its high.
_CHANNEL_HIGH = np.ones(NUM_CHANNELS, np.float32)
_CHANNEL_HIGH[16] = 3.0
_CHANNEL_HIGH[18] = 3.0
_CHANNEL_HIGH[20] = 19.0


@struct.dataclass
class ShapingParams:
    """The paper's shaped-reward coefficients (vmappable numbers, per seat and event)."""

    onion_pickup: jax.Array  # () float32: empty hand -> onion
    onion_in_pot: jax.Array  # () float32: onion -> empty while facing a pot
    plate_pickup: jax.Array  # () float32: empty hand -> plate
    soup_pickup: jax.Array  # () float32: plate -> dish (a ready soup taken from a pot)
    onion_on_counter: jax.Array  # () float32: onion -> empty while facing a counter (a pass)
    counter_pickup: jax.Array  # () float32: factor on onion/plate pickups taken off a counter
    onion_pass: jax.Array  # () float32: to both seats per passed onion put in a pot (see below)
    useful_plate_pickup: jax.Array  # () float32: extra, for a plate pickup a pot may need


PAPER_SHAPING = dict(
    onion_pickup=0.1,
    onion_in_pot=0.5,
    plate_pickup=0.1,
    soup_pickup=1.0,
    onion_on_counter=0.0,
    counter_pickup=1.0,
    onion_pass=0.0,
    useful_plate_pickup=0.0,
)
"""The paper's coefficients. The last three are not the paper's and are 0/1/0 here: an onion put
on a counter (`onion_on_counter`, farmable: see docs/heldout.md), the factor on pickups off a
counter (`counter_pickup`, 0 for the heldout forced_coord teammates) and a completed onion pass
(`onion_pass`, the heldout counter_circuit `ippo_mlp_pass` teammates; only `PassShapedOvercooked`
pays it). `useful_plate_pickup` (0 in v1 and v2) is the paper text's conditional plate-pickup
bonus, which the paper's code never pays (see `Overcooked._shaped_reward`). Set them with
`with_shaping`."""

V2_SHAPING = dict(PAPER_SHAPING, counter_pickup=0.0)
"""`overcooked-<layout>-v2`'s coefficients: the paper's code's task configs as that code pays
them. A pickup from a pile pays 0.1 (an onion from the onion pile through `onion_pickup`, a
plate from the plate pile through `plate_pickup`), one off a counter nothing
(`counter_pickup = 0`); nothing put on a counter pays. The paper's code also has a +0.1 plate
pickup bonus "when no plate lies on a counter and a pot is not empty", but it looks for a plate
by comparing every channel of the map with the plate's object id (5), which is also the colour
id of every wall (grey), so the bonus is never paid; v2 pays what the paper's numbers were
measured with (`useful_plate_pickup = 0`)."""


def with_shaping(env: Overcooked, **coefficients: float) -> Overcooked:
    """A copy of `env` whose shaped reward uses `coefficients` in place of the paper's
    (names of `ShapingParams`); the base reward, observations and dynamics are unchanged."""
    import copy

    unknown = sorted(set(coefficients) - set(PAPER_SHAPING))
    if unknown:
        raise ValueError(
            f"unknown shaped-reward coefficients {unknown}; choose from {sorted(PAPER_SHAPING)}"
        )
    from aht_bench.envs.overcooked_pass import PassShapedOvercooked, PassShapedOvercookedV2

    out = copy.copy(env)
    if "onion_pass" in coefficients and not isinstance(env, PassShapedOvercooked):
        cls = PassShapedOvercookedV2 if isinstance(env, OvercookedV2) else PassShapedOvercooked
        out = cls.__new__(cls)
        out.__dict__.update(env.__dict__)
    out.params = dataclasses.replace(
        env.params, **{k: jnp.asarray(v, jnp.float32) for k, v in coefficients.items()}
    )
    return out


def _positions(flat_idx: Any, width: int) -> np.ndarray:
    """Flat layout indices -> (n, 2) uint32 (x, y) positions, JaxMARL's convention."""
    idx = np.asarray(flat_idx, np.int64).reshape(-1)
    return np.stack([idx % width, idx // width], axis=1).astype(np.uint32)


def _regions(free: np.ndarray) -> list[np.ndarray]:
    """4-connected regions of the True cells of `free` (H, W), each as (n, 2) (x, y) sorted by
    row then column; regions are ordered by their leftmost column."""
    height, width = free.shape
    label = -np.ones(free.shape, np.int64)
    regions: list[list[tuple[int, int]]] = []
    for y0, x0 in zip(*np.nonzero(free), strict=True):
        if label[y0, x0] >= 0:
            continue
        label[y0, x0] = len(regions)
        cells, queue = [], deque([(int(y0), int(x0))])
        while queue:
            y, x = queue.popleft()
            cells.append((y, x))
            for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                ny, nx = y + dy, x + dx
                if 0 <= ny < height and 0 <= nx < width and free[ny, nx] and label[ny, nx] < 0:
                    label[ny, nx] = len(regions)
                    queue.append((ny, nx))
        regions.append(cells)
    regions.sort(key=lambda cells: min(x for _, x in cells))
    return [np.asarray([(x, y) for y, x in sorted(cells)], np.int64) for cells in regions]


class Overcooked(Environment[OvercookedState]):
    """One Overcooked layout: JaxMARL's rules, the paper's spawns and shaped reward.

    Static attributes beyond `Environment`'s:
        layout: the layout name (JaxMARL's key).
        height, width: grid size in cells.
        grid_obs_shape: `(height, width, 26)`, the shape of one agent's unflattened observation.
        divided: whether the free floor splits into a left and a right region (one seat each).
        spawn_cells: per seat, the (n, 2) int (x, y) cells that seat can spawn on in v1: on a
            divided layout the left and the right region (in v2 the seats draw which region
            each takes), elsewhere all floor cells twice.
        kinds: (H, W) int cell kinds (FLOOR, COUNTER, CELL_ONION_PILE, CELL_PLATE_PILE,
            CELL_POT, CELL_GOAL).
    """

    def __init__(self, layout: str, horizon: int = HORIZON):
        if layout not in overcooked_layouts:
            raise ValueError(
                f"unknown Overcooked layout {layout!r}; choose one of {', '.join(LAYOUTS)}"
            )
        spec = overcooked_layouts[layout]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.backend = JaxMARLOvercooked(
                layout=FrozenDict(spec), random_reset=False, max_steps=horizon
            )
        self.layout = layout
        self.task_id = f"overcooked-{layout}-v1"
        self.num_agents = 2
        self.num_actions = len(ACTION_NAMES)
        self.action_names = ACTION_NAMES
        self.horizon = horizon
        self.height = self.backend.height
        self.width = self.backend.width
        self.grid_obs_shape = (self.height, self.width, NUM_CHANNELS)
        self.obs_dim = self.height * self.width * NUM_CHANNELS
        self.params = ShapingParams(
            **{k: jnp.asarray(v, jnp.float32) for k, v in PAPER_SHAPING.items()}
        )

        # Static layout arrays, in NumPy, computed once.
        h, w = self.height, self.width
        wall = np.zeros(h * w, bool)
        wall[np.asarray(spec["wall_idx"])] = True
        self.wall_map = wall.reshape(h, w)
        self.goal_pos = _positions(spec["goal_idx"], w)
        self.pot_pos = _positions(spec["pot_idx"], w)
        self.onion_pile_pos = _positions(spec["onion_pile_idx"], w)
        self.plate_pile_pos = _positions(spec["plate_pile_idx"], w)
        kinds = np.where(self.wall_map, COUNTER, FLOOR)
        for pos, kind in (
            (self.onion_pile_pos, CELL_ONION_PILE),
            (self.plate_pile_pos, CELL_PLATE_PILE),
            (self.pot_pos, CELL_POT),
            (self.goal_pos, CELL_GOAL),
        ):
            kinds[pos[:, 1], pos[:, 0]] = kind
        self.kinds = kinds

        regions = _regions(~self.wall_map)
        self.divided = len(regions) == 2
        if layout in DIVIDED_LAYOUTS and not self.divided:
            raise AssertionError(f"{layout}: expected two floor regions, found {len(regions)}")
        if not self.divided and len(regions) != 1:
            raise AssertionError(f"{layout}: floor splits into {len(regions)} regions")
        if self.divided:
            self.spawn_cells = (regions[0], regions[1])
        else:
            self.spawn_cells = (regions[0], regions[0])
        # Seat i's spawn table: rows offset[i] .. offset[i] + count[i] of `_spawn_table`.
        self._spawn_table = jnp.asarray(
            np.concatenate(self.spawn_cells if self.divided else self.spawn_cells[:1]), jnp.uint32
        )
        self._pot_mask = jnp.asarray(kinds == CELL_POT)
        self._counter_mask = jnp.asarray(kinds == COUNTER)
        # The start maze_map without agents, built once by JaxMARL's own map builder; a reset
        # only writes the two agent cells into it (see `_start_inner`).
        none = np.zeros((0, 2), np.uint32)
        self._maze_without_agents = np.asarray(
            make_overcooked_map(
                self.wall_map,
                self.goal_pos,
                none,
                np.zeros((0,), np.int32),
                self.plate_pile_pos,
                self.onion_pile_pos,
                self.pot_pos,
                np.full((len(self.pot_pos),), POT_EMPTY_STATUS),
                none,
                none,
                none,
                pad_obs=True,
                num_agents=0,
                agent_view_size=AGENT_VIEW_SIZE,
            )
        )

    # ------------------------------------------------------------------ building states
    def make_inner(
        self,
        agent_pos: Any,
        agent_dir_idx: Any,
        agent_inv: Any = None,
        pot_status: Any = None,
        step: Any = 0,
        onion_pos: Any = None,
        plate_pos: Any = None,
        dish_pos: Any = None,
    ) -> OvercookedState:
        """A JaxMARL state built with JaxMARL's `make_overcooked_map` (jittable in the agents).

        agent_pos: (2, 2) (x, y) per seat; agent_dir_idx: (2,) in 0..3 (up, down, right, left);
        agent_inv: (2,) item ids (default empty hands); pot_status: (num_pots,) in 0..23
        (default 23, empty); onion_pos/plate_pos/dish_pos: (n, 2) (x, y) loose items on counters.
        The result is not validated: call `validate(EnvState(...))` on states built by hand.
        """
        agent_pos = jnp.asarray(agent_pos, jnp.uint32)
        agent_dir_idx = jnp.asarray(agent_dir_idx, jnp.int32)
        if agent_inv is None:
            agent_inv = np.full((2,), EMPTY)
        if pot_status is None:
            pot_status = np.full((len(self.pot_pos),), POT_EMPTY_STATUS)

        def items(pos: Any) -> np.ndarray:
            return np.zeros((0, 2), np.uint32) if pos is None else np.asarray(pos, np.uint32)

        maze_map = make_overcooked_map(
            self.wall_map,
            self.goal_pos,
            agent_pos,
            agent_dir_idx,
            self.plate_pile_pos,
            self.onion_pile_pos,
            self.pot_pos,
            pot_status,
            items(onion_pos),
            items(plate_pos),
            items(dish_pos),
            pad_obs=True,
            num_agents=2,
            agent_view_size=AGENT_VIEW_SIZE,
        )
        step = jnp.asarray(step, jnp.int32)
        return OvercookedState(
            agent_pos=agent_pos,
            agent_dir=DIR_TO_VEC[agent_dir_idx],
            agent_dir_idx=agent_dir_idx,
            agent_inv=jnp.asarray(agent_inv, jnp.int32),
            goal_pos=jnp.asarray(self.goal_pos),
            pot_pos=jnp.asarray(self.pot_pos),
            wall_map=jnp.asarray(self.wall_map),
            maze_map=maze_map,
            step=step,
            done=step >= self.horizon,
        )

    # ------------------------------------------------------------------ hooks
    def _reset_inner(self, key: jax.Array) -> OvercookedState:
        key_pos, key_dir = jax.random.split(key)
        n0, n1 = len(self.spawn_cells[0]), len(self.spawn_cells[1])
        if self.divided:
            # Seat 0 uniform in the left region, seat 1 uniform in the right region.
            draw = jax.random.randint(key_pos, (2,), 0, jnp.array([n0, n1]))
            rows = draw + jnp.array([0, n0])
        else:
            # Two distinct cells uniformly: seat 1 draws from the n - 1 cells left by seat 0.
            draw = jax.random.randint(key_pos, (2,), 0, jnp.array([n0, n0 - 1]))
            rows = draw.at[1].add((draw[1] >= draw[0]).astype(draw.dtype))
        agent_pos = self._spawn_table[rows]
        agent_dir_idx = jax.random.randint(key_dir, (2,), 0, len(DIR_TO_VEC))
        return self._start_inner(agent_pos, agent_dir_idx)

    def _start_inner(
        self,
        agent_pos: jax.Array,
        agent_dir_idx: jax.Array,
        agent_inv: jax.Array | None = None,
        pot_status: jax.Array | None = None,
    ) -> OvercookedState:
        """`make_inner(agent_pos, agent_dir_idx, agent_inv, pot_status)` at step 0 with bare
        counters (default: empty hands and pots), made faster.

        Under vmap, rebuilding the whole padded map with `make_overcooked_map` at every reset
        (AutoReset resets every env at every step, then selects) cost as much as the
        observation. Here the agent-free map is a constant and the two agent cells are written
        exactly as `make_overcooked_map` writes them ([agent, red + 2 * seat, direction]);
        tests/envs/test_overcooked.py checks it against `make_overcooked_map` for every spawn
        pair and orientation pair.
        """
        pad = AGENT_VIEW_SIZE - 1
        seat_colour = COLOR_TO_INDEX["red"] + 2 * jnp.arange(2)
        agents = jnp.stack([jnp.full((2,), AGENT), seat_colour, agent_dir_idx], axis=1).astype(
            jnp.uint8
        )  # (2, 3)
        x = agent_pos[:, 0].astype(jnp.int32) + pad
        y = agent_pos[:, 1].astype(jnp.int32) + pad
        maze_map = jnp.asarray(self._maze_without_agents)
        if pot_status is not None:  # the status channel of each pot cell
            px, py = self.pot_pos[:, 0] + pad, self.pot_pos[:, 1] + pad
            maze_map = maze_map.at[py, px, 2].set(pot_status.astype(jnp.uint8))
        maze_map = maze_map.at[y, x].set(agents)
        if agent_inv is None:
            agent_inv = jnp.full((2,), EMPTY, jnp.int32)
        step = jnp.zeros((), jnp.int32)
        return OvercookedState(
            agent_pos=agent_pos.astype(jnp.uint32),
            agent_dir=DIR_TO_VEC[agent_dir_idx],
            agent_dir_idx=agent_dir_idx.astype(jnp.int32),
            agent_inv=agent_inv.astype(jnp.int32),
            goal_pos=jnp.asarray(self.goal_pos),
            pot_pos=jnp.asarray(self.pot_pos),
            wall_map=jnp.asarray(self.wall_map),
            maze_map=maze_map,
            step=step,
            done=jnp.zeros((), bool),
        )

    def _step_inner(
        self, key: jax.Array, inner: OvercookedState, actions: jax.Array
    ) -> tuple[OvercookedState, jax.Array, jax.Array]:
        # Our action indices are JaxMARL's `action_set` (the identity 0..5), so no mapping.
        stepped, reward, _ = self.backend.step_agents(key, inner, actions)
        step = inner.step + 1
        stepped = dataclasses.replace(stepped, step=step, done=step >= self.horizon)
        shaped = self._shaped_reward(inner, stepped)
        return stepped, jnp.full((2,), reward, jnp.float32), shaped

    def _shaped_reward(self, before: OvercookedState, after: OvercookedState) -> jax.Array:
        """The paper's shaped reward, per seat, from each seat's held item before/after a step.

        Only an interact changes what a seat holds, and an interacting seat does not move, so
        the cell it faced is `agent_pos + agent_dir` before the step. Per seat:
            empty -> onion                   : onion pickup (pile or counter)   +0.1
            onion -> empty, facing a pot     : onion into pot                   +0.5
            onion -> empty, facing a counter : onion placed on a counter         0 (see below)
            empty -> plate                   : plate pickup (pile or counter)   +0.1
            plate -> dish                    : soup pickup from a ready pot     +1.0
        (onion -> empty facing a counter is a drop, and dish -> empty a drop or a delivery:
        neither is shaped, except that `with_shaping(env, onion_on_counter=c)` rewards an onion
        placed on a counter with c: the heldout `ippo_mlp_pass` teammates). A pickup off a
        counter is scaled by `counter_pickup` (1; `with_shaping(env, counter_pickup=0)` pays
        only pile pickups, which removes the drop-and-pick-up loop on one counter cell that
        forced_coord's IPPO otherwise learns). Unlike JaxMARL, a plate pickup is rewarded whether
        or not a pot needs it; `useful_plate_pickup` (0 in v1 and v2) adds a bonus for a plate
        pickup made while no plate lies on a counter and at least one pot is not empty (both
        read before the step), the paper's text's "+0.1 plate pickup" condition. Shape (2,)
        float32.
        """
        held, now = before.agent_inv, after.agent_inv
        faced = before.agent_pos.astype(jnp.int32) + before.agent_dir.astype(jnp.int32)
        facing_pot = self._pot_mask[faced[:, 1], faced[:, 0]]
        facing_counter = self._counter_mask[faced[:, 1], faced[:, 0]]
        p = self.params
        pickup = jnp.where(facing_counter, p.counter_pickup, 1.0)
        plate_pickup = (held == EMPTY) & (now == PLATE)
        pad = AGENT_VIEW_SIZE - 1
        grid = before.maze_map[pad : pad + self.height, pad : pad + self.width]
        no_plate_on_counters = ~jnp.any(grid[..., 0] == PLATE)
        pot_not_empty = jnp.any(self._pot_mask & (grid[..., 2] != POT_EMPTY_STATUS))
        return (
            p.onion_pickup * pickup * ((held == EMPTY) & (now == ONION))
            + p.onion_in_pot * ((held == ONION) & (now == EMPTY) & facing_pot)
            + p.onion_on_counter * ((held == ONION) & (now == EMPTY) & facing_counter)
            + p.plate_pickup * pickup * plate_pickup
            + p.useful_plate_pickup * (plate_pickup & no_plate_on_counters & pot_not_empty)
            + p.soup_pickup * ((held == PLATE) & (now == DISH))
        )

    def _observe_inner(self, inner: OvercookedState) -> jax.Array:
        obs = self.backend.get_obs(inner)  # {"agent_i": (H, W, 26) uint8}
        # Reshape-then-concatenate rather than jnp.stack: under vmap, stack puts the agent axis
        # before the batch axis and XLA then fuses a batch-wide transpose into the (already
        # transposing) observation loop; this form measured about 2x faster on CPU.
        seats = [obs[a].reshape(1, *self.grid_obs_shape) for a in ("agent_0", "agent_1")]
        return jnp.concatenate(seats).reshape(2, self.obs_dim)

    def _time(self, inner: OvercookedState) -> jax.Array:
        return inner.step

    def _is_terminal(self, inner: OvercookedState) -> jax.Array:
        return jnp.zeros((), bool)  # the 400-step horizon is a truncation

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-channel bounds broadcast over cells: 0/1 masks (the always-zero tomato channels
        too), 0..3 onions, 0..19 timer. Flat layout is `(H, W, 26)` row-major."""
        high = np.broadcast_to(_CHANNEL_HIGH, self.grid_obs_shape).reshape(-1).copy()
        return np.zeros(self.obs_dim, np.float32), high

    # ------------------------------------------------------------------ validation
    def _validate_inner(self, inner: Any) -> list[str]:
        h, w = self.height, self.width
        pad = AGENT_VIEW_SIZE - 1
        expected_shapes = {
            "agent_pos": (2, 2),
            "agent_dir": (2, 2),
            "agent_dir_idx": (2,),
            "agent_inv": (2,),
            "goal_pos": self.goal_pos.shape,
            "pot_pos": self.pot_pos.shape,
            "wall_map": (h, w),
            "maze_map": (h + 2 * pad, w + 2 * pad, 3),
            "step": (),
            "done": (),
        }
        problems = [
            f"{name} has shape {np.shape(getattr(inner, name))}, expected {shape}"
            for name, shape in expected_shapes.items()
            if np.shape(getattr(inner, name)) != shape
        ]
        if problems:
            return problems

        if not np.array_equal(np.asarray(inner.wall_map, bool), self.wall_map):
            problems.append(f"wall_map differs from the {self.layout} layout")
        for name in ("goal_pos", "pot_pos"):
            if not np.array_equal(np.asarray(getattr(inner, name)), getattr(self, name)):
                problems.append(f"{name} differs from the {self.layout} layout")
        step = int(inner.step)
        if not 0 <= step <= self.horizon:
            problems.append(f"step {step} is outside [0, {self.horizon}]")
        elif bool(inner.done) and step < self.horizon:
            problems.append(f"done is set at step {step}, before the horizon {self.horizon}")

        pos = np.asarray(inner.agent_pos).astype(np.int64)
        dir_idx = np.asarray(inner.agent_dir_idx).astype(np.int64)
        inv = np.asarray(inner.agent_inv).astype(np.int64)
        on_grid = [0 <= x < w and 0 <= y < h for x, y in pos]
        for i, ((x, y), inside) in enumerate(zip(pos, on_grid, strict=True)):
            if not inside:
                problems.append(f"agent {i} at (x={x}, y={y}) is outside the {h}x{w} grid")
            elif self.kinds[y, x] != FLOOR:
                kind = _KIND_NAMES[self.kinds[y, x]]
                problems.append(f"agent {i} stands on a {kind} at (x={x}, y={y}), not on floor")
        if np.array_equal(pos[0], pos[1]):
            problems.append(f"both agents occupy one cell (x={pos[0, 0]}, y={pos[0, 1]})")
        dir_ok = (dir_idx >= 0) & (dir_idx < 4)
        for i in range(2):
            if not dir_ok[i]:
                problems.append(f"agent {i} has agent_dir_idx {dir_idx[i]}, expected 0..3")
            elif not np.array_equal(
                np.asarray(inner.agent_dir[i]), np.asarray(DIR_TO_VEC)[dir_idx[i]]
            ):
                problems.append(
                    f"agent {i}: agent_dir {np.asarray(inner.agent_dir[i]).tolist()} disagrees "
                    f"with agent_dir_idx {dir_idx[i]}"
                )
            if inv[i] not in INVENTORY_ITEMS:
                problems.append(
                    f"agent {i} holds item id {inv[i]}, expected empty/onion/plate/dish "
                    f"({', '.join(str(v) for v in INVENTORY_ITEMS)})"
                )
        problems += self._validate_maze(np.asarray(inner.maze_map), pos, dir_idx, on_grid)
        return problems

    def _validate_maze(
        self, maze: np.ndarray, pos: np.ndarray, dir_idx: np.ndarray, on_grid: list[bool]
    ) -> list[str]:
        """Check the duplicated copy: `maze_map` against the layout and the agent fields."""
        h, w = self.height, self.width
        pad = AGENT_VIEW_SIZE - 1
        problems = []
        grey = COLOR_TO_INDEX["grey"]
        border = np.ones(maze.shape[:2], bool)
        border[pad : pad + h, pad : pad + w] = False
        if np.any(maze[border] != np.array([WALL, grey, 0])):
            problems.append("maze_map padding outside the grid is not all wall")
        grid = maze[pad : pad + h, pad : pad + w].astype(np.int64)
        obj = grid[..., 0]

        def vec(name: str, colour: str, status: int = 0) -> np.ndarray:
            return np.array([OBJECT_TO_INDEX[name], COLOR_TO_INDEX[colour], status])

        # Agents in maze_map must be exactly the cells of agent_pos, with colour and direction.
        agent_cells = {(int(x), int(y)) for (x, y), ok in zip(pos, on_grid, strict=True) if ok}
        for y, x in zip(*np.nonzero(obj == AGENT), strict=True):
            if (int(x), int(y)) not in agent_cells:
                problems.append(
                    f"maze_map has an agent at (x={x}, y={y}) where agent_pos has none "
                    "(agent_pos disagrees with maze_map)"
                )
        for i, ((x, y), ok) in enumerate(zip(pos, on_grid, strict=True)):
            if not ok:
                continue
            want = np.array([AGENT, COLOR_TO_INDEX["red"] + 2 * i, dir_idx[i]])
            if not np.array_equal(grid[y, x], want):
                problems.append(
                    f"agent {i}: agent_pos (x={x}, y={y}) / agent_dir_idx {dir_idx[i]} disagree "
                    f"with maze_map, which holds {grid[y, x].tolist()} there "
                    f"(expected {want.tolist()})"
                )

        # Everything that is not an agent must match the layout.
        static = {
            CELL_ONION_PILE: vec("onion_pile", "yellow"),
            CELL_PLATE_PILE: vec("plate_pile", "white"),
            CELL_GOAL: vec("goal", "green"),
        }
        counter_items = np.stack(
            [
                vec("wall", "grey"),
                vec("onion", "yellow"),
                vec("plate", "white"),
                vec("dish", "white"),
            ]
        )
        for y in range(h):
            for x in range(w):
                cell, kind = grid[y, x], self.kinds[y, x]
                if kind == FLOOR:
                    if cell[0] == AGENT:
                        continue
                    if not np.array_equal(cell, vec("empty", "red")):
                        problems.append(
                            f"maze_map floor cell (x={x}, y={y}) holds {cell.tolist()}, "
                            "expected empty floor"
                        )
                elif kind == COUNTER:
                    if not np.any(np.all(counter_items == cell, axis=1)):
                        problems.append(
                            f"maze_map counter (x={x}, y={y}) holds {cell.tolist()}, expected "
                            "a bare counter or an onion, plate or dish on it"
                        )
                elif kind == CELL_POT:
                    status = int(cell[2])
                    if cell[0] != POT or cell[1] != COLOR_TO_INDEX["black"]:
                        problems.append(
                            f"maze_map pot cell (x={x}, y={y}) holds {cell.tolist()}, not a pot"
                        )
                    elif not 0 <= status <= POT_STATUS_MAX:
                        problems.append(
                            f"pot at (x={x}, y={y}) has status {status}, expected 0..23"
                        )
                elif not np.array_equal(cell, static[kind]):
                    problems.append(
                        f"maze_map {_KIND_NAMES[kind]} (x={x}, y={y}) holds {cell.tolist()}, "
                        f"expected {static[kind].tolist()}"
                    )
        return problems

    # ------------------------------------------------------------------ rendering
    render_cell = RENDER_CELL  # pixels per grid cell of `render_rgb`'s frames

    def render_rgb(self, state: EnvState[OvercookedState], cell: int = RENDER_CELL) -> np.ndarray:
        """One frame as uint8 (height * cell, width * cell, 3), drawn with PIL."""
        from aht_bench.envs.overcooked_render import render_rgb

        return render_rgb(self, jax.device_get(state.inner), cell)

    def render_text(self, state: EnvState[OvercookedState]) -> str:
        """One state as text: the map of docs/overcooked.md with the agents and loose items on
        it, then one line per seat and per pot (see `overcooked_render.render_text`)."""
        from aht_bench.envs.overcooked_render import render_text

        return render_text(self, jax.device_get(state.inner), state.episode_return)


class OvercookedV2(Overcooked):
    """`overcooked-<layout>-v2`: the game the paper's numbers were measured on.

    As the paper's public code runs it (../shared/FACTS.md, "Overcooked as the paper's own code
    runs it"); every other rule, the observations and the base reward are `Overcooked`'s:

    - Sides: on a divided layout a fair coin decides which region (`spawn_cells[0]`, the left,
      or `spawn_cells[1]`, the right) each seat starts in, every episode; a uniform cell inside
      it. Elsewhere two distinct floor cells, uniform, as in v1. Orientations uniform.
    - Random object state at every reset, the same for training and evaluation: each pot's
      status uniform over 0..23 (23 empty, 22/21 one/two onions, 20 full and starting to cook,
      19..1 cooking, 0 ready), each seat's held item uniform over empty/onion/plate/dish,
      independently; counters bare; step 0.
    - Shaping `V2_SHAPING`: pile pickups +0.1, onion into a pot +0.5, soup pickup +1.0,
      nothing off or onto a counter.
    """

    def __init__(self, layout: str, horizon: int = HORIZON):
        super().__init__(layout, horizon)
        self.task_id = f"overcooked-{layout}-v2"
        self.params = ShapingParams(
            **{k: jnp.asarray(v, jnp.float32) for k, v in V2_SHAPING.items()}
        )

    def _reset_inner(self, key: jax.Array) -> OvercookedState:
        key_pos, key_dir, key_side, key_pot, key_inv = jax.random.split(key, 5)
        n0, n1 = len(self.spawn_cells[0]), len(self.spawn_cells[1])
        if self.divided:
            # Region r's cells are rows offset[r] .. offset[r] + size[r] of the spawn table;
            # seat i takes region i, or region 1 - i when the coin says swap.
            swap = jax.random.bernoulli(key_side).astype(jnp.int32)
            region = jnp.array([0, 1]) ^ swap
            size, offset = jnp.array([n0, n1])[region], jnp.array([0, n0])[region]
            rows = offset + jax.random.randint(key_pos, (2,), 0, size)
        else:
            draw = jax.random.randint(key_pos, (2,), 0, jnp.array([n0, n0 - 1]))
            rows = draw.at[1].add((draw[1] >= draw[0]).astype(draw.dtype))
        agent_pos = self._spawn_table[rows]
        agent_dir_idx = jax.random.randint(key_dir, (2,), 0, len(DIR_TO_VEC))
        pot_status = jax.random.randint(key_pot, (len(self.pot_pos),), 0, POT_STATUS_MAX + 1)
        agent_inv = jnp.asarray(INVENTORY_ITEMS, jnp.int32)[
            jax.random.randint(key_inv, (2,), 0, len(INVENTORY_ITEMS))
        ]
        return self._start_inner(agent_pos, agent_dir_idx, agent_inv, pot_status)


def make_overcooked(layout: str, version: int = 1) -> Overcooked:
    """`overcooked-<layout>-v<version>`: one of the five classic layouts, v1 or v2 (see the
    module docstring)."""
    if layout not in LAYOUTS:
        raise ValueError(
            f"unknown Overcooked layout {layout!r}; choose one of {', '.join(LAYOUTS)}"
        )
    if version not in (1, 2):
        raise ValueError(f"Overcooked has versions 1 and 2, not {version!r}")
    return OvercookedV2(layout) if version == 2 else Overcooked(layout)
