"""Level-Based Foraging (paper Sec. 6 and App. "Experimental Tasks"): Jumanji's LBF, wrapped.

Three tasks, all on a 7x7 grid with 3 foods, agent levels 1-2, horizon 100:

- `lbf-v1`: 2 players, full observability (the paper's main LBF task);
- `lbf-po-v1`: 2 players, view radius 2 (App. "Extension to a Partially Observable Scenario");
- `lbf-4p-v1`: 4 players, seats 0-1 the ego sub-team and 2-3 the teammates (App. N-agent).

`EnvState.inner` is Jumanji's own `State` (jumanji 1.1.x, `routing/lbf/types.py`), untouched,
and `LevelBasedForaging.step` does the dynamics, so backend states round-trip both ways.
Start states come from Jumanji's `RandomGenerator(force_coop=True)`: foods off the edge and
never 4-adjacent to each other, agents on distinct cells off the foods (see "Spawn positions"),
levels uniform in {1, 2}. `LBF._reset_inner` computes the generator's draws bit for bit
without calling it (its loops made resets most of the cost of an LBF step on CPU).

What this wrapper corrects or adds on top of Jumanji:

- Reward scale. Jumanji gives each loading agent its level-weighted share of the eaten food,
  normalised so that the rewards of all agents over a whole episode sum to 1. The paper gives
  both players the same team reward with an episode maximum of 0.5, so here every agent gets
  `0.5 * sum_i jumanji_reward_i`; eating all food returns exactly 0.5 per agent and
  "percent eaten" is `return * 200`. With three foods of equal level, each food is 0.5/3.
- State validation. Jumanji accepts any state (two agents on one cell, an agent standing on
  food, positions off the grid); `LBF._validate_inner` rejects what the generator and the
  dynamics can never produce.
- Observation layout. Jumanji's `VectorObserver` view, followed by the elapsed time:
  `obs[i] = [food_0 (3), food_1 (3), food_2 (3), self (3), other agents in seat order (3 each),
  step_count / 100]`, each triple `(row, col, level)` as float32, so `obs_dim = 3 * (3 + N) + 1`.
  An eaten food or an entity outside the view is `(-1, -1, 0)`. Coordinates are absolute
  on the full-view tasks; with view radius r they are `pos - own_pos + min(r, own_pos)`
  (lb-foraging's window that is clipped at the top/left edge only), so the own triple reads
  `min(r, own_pos)`, not the absolute position.
- Spawn positions. Jumanji's generator means to keep agents off food cells but masks whole
  grid rows (`mask.at[food_positions]` on a 2-D mask): no agent starts in a row whose index
  equals any coordinate (row or column) of any food, so about 68% of agents start in row 0 or
  row 6. Here agent positions are drawn again, uniformly over distinct cells without food
  (foods and levels stay Jumanji's). This differs from the paper's start distribution, which
  ran Jumanji's LBF with the bias.
- Action mask: every action may be sent (an illegal move leaves the agent in place and a load
  with no food adjacent does nothing); `LBF.action_mask(state)` gives Jumanji's mask of the
  actions that can have an effect (its `compute_action_mask`), which the Gymnasium and
  PettingZoo shells put in `info["action_mask"]`.

Jumanji behaviour kept as is (pinned by tests/envs/test_lbf.py):

- `force_coop` sets every food's level to the sum of the (at most) three lowest agent levels.
  With 2 players both must load together; with 4 players any group whose levels reach that sum
  eats (three players always do; two level-2 players do when the other two are level 1).
- Loading agents do not move; moves into an occupied or off-grid cell, and moves of agents that
  would end on the same cell, leave the agents in place. Several foods can be eaten at once.
- `State.key` is carried but unused by the dynamics (Jumanji's own auto-reset reads it).

May import jax, numpy, PIL, jumanji and aht_bench.envs.core only.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jumanji.environments.routing.lbf import LevelBasedForaging
from jumanji.environments.routing.lbf.generator import RandomGenerator
from jumanji.environments.routing.lbf.observer import VectorObserver
from jumanji.environments.routing.lbf.types import Agent, Food, State
from jumanji.environments.routing.lbf.utils import compute_action_mask
from PIL import Image, ImageDraw, ImageFont

from aht_bench.envs.core import Environment, EnvState

GRID_SIZE = 7
NUM_FOOD = 3
MAX_AGENT_LEVEL = 2
HORIZON = 100
TEAM_REWARD_SCALE = 0.5  # paper: an episode that eats every food returns 0.5 per agent
ACTION_NAMES = ("noop", "up", "down", "left", "right", "load")  # Jumanji's order

# task id -> (num_agents, view radius); a radius >= GRID_SIZE - 1 sees the whole grid
VARIANTS: dict[str, tuple[int, int]] = {
    "lbf-v1": (2, 7),
    "lbf-po-v1": (2, 2),
    "lbf-4p-v1": (4, 7),
}

CELL_PX = 48
_BACKGROUND = (236, 236, 228)
_GRID_LINE = (190, 190, 180)
_FOOD = (200, 40, 40)
_TEXT = (255, 255, 255)
_SEAT_COLOURS = ((31, 119, 180), (255, 127, 14), (44, 160, 44), (148, 103, 189))


def make_lbf(variant: str) -> LBF:
    """The LBF task `variant` (one of `VARIANTS`)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown LBF variant {variant!r}; expected one of {sorted(VARIANTS)}")
    num_agents, fov = VARIANTS[variant]
    return LBF(variant, num_agents=num_agents, fov=fov)


# Cells off the grid's edge, row-major, and the upper-triangular ones whose product with a 0/1
# row vector is its running sum (see `_sample_food`).
_INNER_CELLS = np.pad(np.ones((GRID_SIZE - 2,) * 2, bool), 1).ravel()
_PREFIX_SUM = np.triu(np.ones((GRID_SIZE * GRID_SIZE,) * 2, np.float32))


def _sample_food(key: jax.Array) -> jax.Array:
    """(NUM_FOOD, 2) int32 food cells: Jumanji's `RandomGenerator.sample_food(key)`, bit for bit.

    Each food is `jax.random.choice(key_j, 49, p=mask)` on the cells off the edge and not
    4-adjacent to an earlier food, which is `searchsorted(cumsum(p), sum(p) * (1 - u))` with
    `u = uniform(key_j)`. The running sum is a matmul with an upper-triangular matrix (exact:
    sums of at most 49 ones) and the search a count, and the three draws are unrolled: the
    scan, `cumsum` and `searchsorted` loops were most of the cost of a vmapped reset on CPU.
    """
    cells = jnp.arange(GRID_SIZE * GRID_SIZE)
    mask = jnp.asarray(_INNER_CELLS)
    flat = []
    for food_key in jax.random.split(key, NUM_FOOD):
        running = mask.astype(jnp.float32) @ jnp.asarray(_PREFIX_SUM)
        r = running[-1] * (1 - jax.random.uniform(food_key, (), jnp.float32))
        cell = jnp.sum(running < r).astype(jnp.int32)
        # the food's cell and the flat indices +-1, +-GRID_SIZE (its 4 neighbours: it is off
        # the edge), as Jumanji masks them
        offset = jnp.abs(cells - cell)
        mask = mask & (offset != 0) & (offset != 1) & (offset != GRID_SIZE)
        flat.append(cell)
    cell = jnp.stack(flat)
    return jnp.stack([cell // GRID_SIZE, cell % GRID_SIZE], axis=1)


class LBF(Environment[State]):
    """Jumanji's `LevelBasedForaging` behind the aht-bench contract; see the module docstring."""

    render_cell = CELL_PX  # pixels per grid cell of `render_rgb`'s frames

    def __init__(self, task_id: str, num_agents: int, fov: int):
        self.task_id = task_id
        self.num_agents = num_agents
        self.num_actions = len(ACTION_NAMES)
        self.action_names = ACTION_NAMES
        self.horizon = HORIZON
        self.fov = fov
        self.obs_dim = 3 * (NUM_FOOD + num_agents) + 1
        self.generator = RandomGenerator(
            grid_size=GRID_SIZE,
            fov=fov,
            num_agents=num_agents,
            num_food=NUM_FOOD,
            max_agent_level=MAX_AGENT_LEVEL,
            force_coop=True,
        )
        self.jumanji = LevelBasedForaging(
            generator=self.generator,
            time_limit=HORIZON,
            normalize_reward=True,
            penalty=0.0,
        )
        # The same observer Jumanji builds; ours so observations need no private attribute.
        self.observer = VectorObserver(
            fov=fov, grid_size=GRID_SIZE, num_agents=num_agents, num_food=NUM_FOOD
        )
        # force_coop: food level = sum of the min(N, 3) lowest agent levels (generator.py)
        self.coop_group = min(num_agents, 3)

    # ------------------------------------------------------------------ hooks
    def _reset_inner(self, key: jax.Array) -> State:
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)  # keep State.key a raw uint32 (2,) key
        key_generator, key_agents = jax.random.split(key)
        # Jumanji's `RandomGenerator(force_coop=True)(key_generator)`, bit for bit, except for
        # the agent positions (tests/envs/test_lbf.py compares the two on many keys).
        key_food, _, _, key_agent_level, _ = jax.random.split(key_generator, 5)
        food = _sample_food(key_food)
        levels = jax.random.randint(key_agent_level, (self.num_agents,), 1, MAX_AGENT_LEVEL + 1)
        food_level = jnp.sum(jnp.sort(levels)[: self.coop_group])
        # Jumanji masks whole rows here (see "Spawn positions"); draw positions uniformly over
        # the cells without food instead.
        free = jnp.ones((GRID_SIZE, GRID_SIZE), bool).at[food[:, 0], food[:, 1]].set(False)
        cells = jax.random.choice(
            key_agents, GRID_SIZE * GRID_SIZE, (self.num_agents,), replace=False, p=free.ravel()
        )
        position = jnp.stack(jnp.divmod(cells, GRID_SIZE), axis=1).astype(jnp.int32)
        agents = jax.vmap(Agent)(
            id=jnp.arange(self.num_agents),
            position=position,
            level=levels,
            loading=jnp.zeros((self.num_agents,), bool),
        )
        food_items = jax.vmap(Food)(
            id=jnp.arange(NUM_FOOD),
            position=food,
            level=jnp.full((NUM_FOOD,), food_level),
            eaten=jnp.zeros((NUM_FOOD,), bool),
        )
        step_count = jnp.array(0, jnp.int32)
        return State(key=key_generator, step_count=step_count, agents=agents, food_items=food_items)

    def _step_inner(
        self, key: jax.Array, inner: State, actions: jax.Array
    ) -> tuple[State, jax.Array, jax.Array]:
        del key  # LBF is deterministic
        next_inner, timestep = self.jumanji.step(inner, actions)
        team = TEAM_REWARD_SCALE * jnp.sum(timestep.reward)
        reward = jnp.full((self.num_agents,), team, jnp.float32)
        return next_inner, reward, jnp.zeros((self.num_agents,), jnp.float32)

    def _observe_inner(self, inner: State) -> jax.Array:
        views = jax.vmap(self.observer.make_agents_view, (0, None))(inner.agents, inner)
        elapsed = jnp.broadcast_to(inner.step_count / self.horizon, (self.num_agents, 1))
        return jnp.concatenate([views, elapsed], axis=1).astype(jnp.float32)

    def _time(self, inner: State) -> jax.Array:
        return jnp.asarray(inner.step_count, jnp.int32)

    def _is_terminal(self, inner: State) -> jax.Array:
        return jnp.all(inner.food_items.eaten)

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        last = GRID_SIZE - 1
        full_view = self.fov >= last
        # A seen coordinate is pos - own + min(fov, own): in [0, 2 fov] and at most pos's own
        # maximum, which is last - 1 for foods (never on the edge) and last for agents.
        food_high = min(2 * self.fov, last - 1)
        agent_high = min(2 * self.fov, last)
        food_level = self.coop_group * MAX_AGENT_LEVEL
        # (low, high) of each (row, col, level) triple; -1/-1/0 = eaten or out of view
        food = ((-1, -1, 0), (food_high, food_high, food_level))
        own = ((0, 0, 1), (min(self.fov, last),) * 2 + (MAX_AGENT_LEVEL,))
        other_low = (0, 0, 1) if full_view else (-1, -1, 0)  # the full view sees every agent
        other = (other_low, (agent_high, agent_high, MAX_AGENT_LEVEL))
        triples = [food] * NUM_FOOD + [own] + [other] * (self.num_agents - 1)
        low = [v for t in triples for v in t[0]] + [0.0]
        high = [v for t in triples for v in t[1]] + [1.0]
        return np.asarray(low, np.float32), np.asarray(high, np.float32)

    def _validate_inner(self, inner: State) -> list[str]:
        n, f = self.num_agents, NUM_FOOD
        agents, foods = inner.agents, inner.food_items
        expected = {
            "agents.id": (agents.id, (n,), "i"),
            "agents.position": (agents.position, (n, 2), "i"),
            "agents.level": (agents.level, (n,), "i"),
            "agents.loading": (agents.loading, (n,), "b"),
            "food_items.id": (foods.id, (f,), "i"),
            "food_items.position": (foods.position, (f, 2), "i"),
            "food_items.level": (foods.level, (f,), "i"),
            "food_items.eaten": (foods.eaten, (f,), "b"),
            "step_count": (inner.step_count, (), "i"),
            "key": (inner.key, (2,), "u"),
        }
        problems = []
        for name, (value, shape, kind) in expected.items():
            value = np.asarray(value)
            if value.shape != shape:
                problems.append(f"{name} has shape {value.shape}, expected {shape}")
            elif value.dtype.kind != kind and not (kind == "i" and value.dtype.kind == "u"):
                problems.append(f"{name} has dtype {value.dtype}, expected kind {kind!r}")
        if problems:
            return problems

        a_pos, f_pos = np.asarray(agents.position), np.asarray(foods.position)
        a_lvl, f_lvl = np.asarray(agents.level), np.asarray(foods.level)
        eaten, step = np.asarray(foods.eaten), int(inner.step_count)
        if not np.array_equal(agents.id, np.arange(n)):
            problems.append(f"agents.id is {np.asarray(agents.id).tolist()}, expected 0..{n - 1}")
        if not np.array_equal(foods.id, np.arange(f)):
            problems.append(
                f"food_items.id is {np.asarray(foods.id).tolist()}, expected 0..{f - 1}"
            )
        for i, p in enumerate(a_pos):
            if np.any((p < 0) | (p >= GRID_SIZE)):
                problems.append(
                    f"agent {i} at {p.tolist()} is outside the {GRID_SIZE}x{GRID_SIZE} grid"
                )
        for j, p in enumerate(f_pos):
            if np.any((p < 1) | (p >= GRID_SIZE - 1)):
                problems.append(
                    f"food {j} at {p.tolist()} is on or outside the grid's edge "
                    f"(foods lie in rows and columns 1..{GRID_SIZE - 2})"
                )
        for i in range(n):
            for k in range(i + 1, n):
                if np.array_equal(a_pos[i], a_pos[k]):
                    problems.append(f"agents {i} and {k} share the cell {a_pos[i].tolist()}")
            for j in range(f):
                if not eaten[j] and np.array_equal(a_pos[i], f_pos[j]):
                    problems.append(f"agent {i} stands on uneaten food {j} at {a_pos[i].tolist()}")
        for j in range(f):
            for k in range(j + 1, f):
                if np.abs(f_pos[j] - f_pos[k]).sum() <= 1:
                    problems.append(
                        f"foods {j} and {k} at {f_pos[j].tolist()} and {f_pos[k].tolist()} "
                        "share a cell or are adjacent"
                    )
        if np.any((a_lvl < 1) | (a_lvl > MAX_AGENT_LEVEL)):
            problems.append(f"agent levels {a_lvl.tolist()} are outside [1, {MAX_AGENT_LEVEL}]")
        else:
            need = int(np.sort(a_lvl)[: self.coop_group].sum())
            if np.any(f_lvl != need):
                problems.append(
                    f"food levels {f_lvl.tolist()} must all be {need}: the sum of the "
                    f"{self.coop_group} lowest agent levels {a_lvl.tolist()} (force_coop)"
                )
        if not 0 <= step <= self.horizon:
            problems.append(f"step_count {step} is outside [0, {self.horizon}]")
        elif step == 0 and eaten.any():
            problems.append("a food is eaten at step_count 0, before any step")
        return problems

    def action_mask(self, state: EnvState[State]) -> jax.Array:
        """bool (num_agents, num_actions): Jumanji's legal actions of each agent in `state`.

        noop is always legal; a move is legal if its cell is on the grid and holds no other
        agent and no uneaten food; load is legal if an uneaten food is 4-adjacent. Jittable.
        """
        inner = state.inner
        mask = jax.vmap(compute_action_mask, (0, None, None))(inner.agents, inner, GRID_SIZE)
        return jnp.asarray(mask, bool)

    # ------------------------------------------------------------------ rendering
    def render_text(self, state: EnvState[State]) -> str:
        """One state as a text grid, one two-character cell per grid cell.

        `..` is an empty cell, `F<l>` an uneaten food of level l, `A<l>`, `B<l>`, ... the agent
        of seat 0, 1, ... with its level (lower case while it loads). The first line gives the
        step and the base return.
        """
        inner = jax.tree.map(np.asarray, state.inner)
        grid = [[".."] * GRID_SIZE for _ in range(GRID_SIZE)]
        foods = inner.food_items
        for (row, col), level, eaten in zip(foods.position, foods.level, foods.eaten, strict=True):
            if not eaten:
                grid[row][col] = f"F{int(level)}"
        agents = inner.agents
        for seat, ((row, col), level, loading) in enumerate(
            zip(agents.position, agents.level, agents.loading, strict=True)
        ):
            letter = chr(ord("A") + seat)
            grid[row][col] = f"{letter.lower() if loading else letter}{int(level)}"
        ret = np.asarray(state.episode_return)
        head = f"t={int(inner.step_count)}  return={float(ret[0]):g}"
        return "\n".join([head, *(" ".join(row) for row in grid)])

    def render_rgb(self, state: EnvState[State]) -> np.ndarray:
        """One state as a uint8 (H, W, 3) image, `CELL_PX` pixels per cell.

        Foods are red discs with their level, agents squares in their seat's colour with their
        level; eaten foods are not drawn.
        """
        inner = jax.tree.map(np.asarray, state.inner)
        if inner.agents.position.shape != (self.num_agents, 2):
            raise ValueError(
                f"render_rgb takes one unbatched state; got agent positions of shape "
                f"{inner.agents.position.shape}. Index the batch first, e.g. "
                "jax.tree.map(lambda x: x[0], states)."
            )
        size = GRID_SIZE * CELL_PX
        image = Image.new("RGB", (size, size), _BACKGROUND)
        draw = ImageDraw.Draw(image)
        for k in range(1, GRID_SIZE):
            draw.line([(k * CELL_PX, 0), (k * CELL_PX, size)], fill=_GRID_LINE, width=1)
            draw.line([(0, k * CELL_PX), (size, k * CELL_PX)], fill=_GRID_LINE, width=1)
        font = _font()
        pad = CELL_PX // 8
        foods = inner.food_items
        for (row, col), level, eaten in zip(foods.position, foods.level, foods.eaten, strict=True):
            if eaten:
                continue
            box = _cell_box(int(row), int(col), pad)
            draw.ellipse(box, fill=_FOOD)
            _label(draw, box, str(int(level)), font)
        agents = inner.agents
        for seat, ((row, col), level) in enumerate(zip(agents.position, agents.level, strict=True)):
            box = _cell_box(int(row), int(col), pad)
            colour = _SEAT_COLOURS[seat % len(_SEAT_COLOURS)]
            draw.rounded_rectangle(box, radius=CELL_PX // 6, fill=colour)
            _label(draw, box, str(int(level)), font)
        return np.asarray(image, dtype=np.uint8)


def _cell_box(row: int, col: int, pad: int) -> tuple[int, int, int, int]:
    x0, y0 = col * CELL_PX, row * CELL_PX
    return (x0 + pad, y0 + pad, x0 + CELL_PX - pad, y0 + CELL_PX - pad)


def _label(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], text: str, font) -> None:
    centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
    draw.text(centre, text, fill=_TEXT, font=font, anchor="mm")


@functools.cache
def _font():
    try:
        return ImageFont.load_default(size=CELL_PX // 2)
    except (TypeError, OSError):  # Pillow without FreeType: fixed-size bitmap font
        return ImageFont.load_default()
