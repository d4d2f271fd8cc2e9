"""Open-loop replay of the human trials in our environment: our observation of every state the
humans acted in, checked step by step against the recorded next state.

May import jax, optax, numpy, pandas (to read the pickles only), the standard library and
aht_bench.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.heldout.human.data import HumanData
from aht_bench.heldout.human.versions import _GRID_KINDS, SOUP_ITEM, STAY, HumanDataError


@dataclasses.dataclass(frozen=True)
class Replay:
    """Trials replayed in our environment: observations and actions per seat, and the check."""

    obs: np.ndarray  # (steps, 2, obs_dim) uint8: each seat's observation before the step
    actions: np.ndarray  # (steps, 2) int32: each seat's human action (seat order: `seat_order`)
    trial: np.ndarray  # (steps,) int64: the data's trial index of each step
    matched: np.ndarray  # (steps,) bool: positions and held items after the step match
    full_match: np.ndarray  # (steps,) bool: ...and orientations, pot contents, counter items

    @property
    def match_rate(self) -> float:
        return float(self.matched.mean()) if len(self.matched) else float("nan")

    @property
    def full_match_rate(self) -> float:
        return float(self.full_match.mean()) if len(self.full_match) else float("nan")


def check_grid(env: Any, grid: str) -> None:
    """Raise `HumanDataError` unless the recorded layout grid is `env`'s layout."""
    rows = grid.split("\n")
    ok = len(rows) == env.height and all(len(r) == env.width for r in rows)
    if ok:
        kinds = np.array([[_GRID_KINDS.get(c, -1) for c in r] for r in rows])
        ok = bool(np.array_equal(kinds, env.kinds))
    if not ok:
        raise HumanDataError(
            f"the recorded layout\n{grid}\nis not {env.task_id}'s layout; check DATA_LAYOUTS"
        )


def seat_order(env: Any, pos0: np.ndarray, by_side: bool) -> np.ndarray:
    """seat -> data player. `by_side` (human-proxy-v1): on divided layouts seat 0 is the player
    in the left region; otherwise, and on every layout without `by_side`, seat i is player i."""
    if not (by_side and env.divided):
        return np.array([0, 1])
    left = {tuple(int(v) for v in c) for c in env.spawn_cells[0]}
    in_left = [tuple(int(v) for v in p) in left for p in pos0]
    if in_left == [True, False]:
        return np.array([0, 1])
    if in_left == [False, True]:
        return np.array([1, 0])
    raise HumanDataError(f"{env.task_id}: the players start at {pos0.tolist()}, not one per side")


def _jax_items(env_module: Any) -> np.ndarray:
    """Safe-format item code -> JaxMARL object id (NOTHING, onion, plate, dish)."""
    return np.array([env_module.EMPTY, env_module.ONION, env_module.PLATE, env_module.DISH])


def _pot_status(onions: np.ndarray, cook: np.ndarray) -> np.ndarray:
    """overcooked_ai soup in a pot -> JaxMARL pot status (23 empty ... 0 ready)."""
    return np.where(onions < 3, 23 - onions, np.maximum(0, 20 - cook))


def _expected(env: Any, data: HumanData, i: int) -> dict[str, np.ndarray]:
    """Trial i's recorded states in our terms, players in the data's order: pos, dir, inv
    (JaxMARL ids),
    pot status (states, pots), counter items (states, H, W) as JaxMARL ids (0 = bare)."""
    from aht_bench.envs import overcooked as oc

    rows = data.states(i)
    first, n = rows.start, rows.stop - rows.start
    items = _jax_items(oc)
    pots = np.full((n, len(env.pot_pos)), oc.POT_EMPTY_STATUS, np.int64)
    counters = np.zeros((n, env.height, env.width), np.int64)
    sel = (data.object_state >= rows.start) & (data.object_state < rows.stop)
    s = data.object_state[sel] - first
    xy = data.object_pos[sel].astype(np.int64)
    kind = data.object_kind[sel].astype(np.int64)
    onions = data.object_onions[sel].astype(np.int64)
    cook = data.object_cook[sel].astype(np.int64)
    pot_index = {(int(x), int(y)): k for k, (x, y) in enumerate(env.pot_pos)}
    at_pot = np.array([(int(x), int(y)) in pot_index for x, y in xy], bool).reshape(-1)
    if np.any(at_pot & (kind != SOUP_ITEM)):
        raise HumanDataError(f"trial {i}: an item other than a soup lies in a pot")
    k = np.array([pot_index.get((int(x), int(y)), -1) for x, y in xy], np.int64).reshape(-1)
    pots[s[at_pot], k[at_pot]] = _pot_status(onions[at_pot], cook[at_pot])
    loose = ~at_pot
    lx, ly = xy[loose, 0], xy[loose, 1]
    if np.any(env.kinds[ly, lx] != oc.COUNTER):
        raise HumanDataError(f"trial {i}: a loose item lies off the counters")
    counters[s[loose], ly, lx] = items[kind[loose]]
    return {
        "pos": data.pos[rows].astype(np.int64),
        "dir": data.dir[rows].astype(np.int64),
        "inv": items[data.held[rows].astype(np.int64)],
        "pots": pots,
        "counters": counters,
    }


def _start_inner(env: Any, expected: dict[str, np.ndarray], step: int) -> Any:
    """The JaxMARL state of a trial's first recorded state (`make_inner`), validated."""
    from aht_bench.envs import overcooked as oc
    from aht_bench.envs.core import EnvState, InvalidStateError

    counters = expected["counters"][0]

    def where(item: int) -> np.ndarray:
        y, x = np.nonzero(counters == item)
        return np.stack([x, y], axis=1)

    inner = env.make_inner(
        expected["pos"][0],
        expected["dir"][0],
        expected["inv"][0],
        expected["pots"][0],
        step,
        where(oc.ONION),
        where(oc.PLATE),
        where(oc.DISH),
    )
    state = EnvState(inner=inner, episode_return=jnp.zeros((2,), jnp.float32))
    try:
        env.validate(state)
    except InvalidStateError as e:
        raise HumanDataError(
            f"a trial's first state is not a state of {env.task_id}: {e}"
        ) from None
    return inner


def obs_steps(num_steps: int, horizon: int) -> np.ndarray:
    """The `step` our observation shows at each of a trial's `num_steps` decision points:
    `max(0, horizon - steps_left)`, so the urgency channel is on when fewer than 40 are left."""
    left = num_steps - np.arange(num_steps)
    return np.maximum(0, horizon - left).astype(np.int32)


def replay(env: Any, data: HumanData, trials: list[int], *, seats_by_side: bool) -> Replay:
    """Replay `trials` of `data` open-loop in `env` (see the module docstring); the outputs are
    in seat order, `seat_order(env, first positions, seats_by_side)` (`ProxyVersion`)."""
    from aht_bench.envs import overcooked as oc

    if not trials:
        raise HumanDataError(f"no trials to replay for {env.task_id}")
    orders, expected, starts, lengths = [], [], [], []
    for i in trials:
        check_grid(env, str(data.grid[i]))
        order = seat_order(env, data.pos[data.states(i)][0], seats_by_side)
        exp = _expected(env, data, i)
        n = data.steps(i).stop - data.steps(i).start
        orders.append(order)
        expected.append(exp)
        lengths.append(n)
        starts.append(_start_inner(env, exp, int(obs_steps(n, env.horizon)[0])))
    longest = max(lengths)
    acts = np.full((len(trials), longest, 2), STAY, np.int32)
    steps = np.zeros((len(trials), longest), np.int32)
    for b, (i, n) in enumerate(zip(trials, lengths, strict=True)):
        acts[b, :n] = data.action[data.steps(i)]  # JaxMARL agent i = the data's player i
        steps[b, :n] = obs_steps(n, env.horizon)
    inner0 = jax.tree.map(lambda *x: jnp.stack(x), *starts)
    out = _replay_scan(env)(inner0, jnp.asarray(acts), jnp.asarray(steps))
    obs, pos, dirs, inv, pots, grid = (np.asarray(x) for x in out)

    counter_cells = env.kinds == oc.COUNTER
    bare = np.where(np.isin(grid, (oc.ONION, oc.PLATE, oc.DISH)), grid, 0)
    all_obs, all_acts, all_trial, matched, full = [], [], [], [], []
    for b, (i, exp, n, order) in enumerate(zip(trials, expected, lengths, orders, strict=True)):
        ok = np.all(pos[b, :n] == exp["pos"][1:], axis=(1, 2)) & np.all(
            inv[b, :n] == exp["inv"][1:], axis=1
        )
        same_counters = np.all((bare[b, :n] == exp["counters"][1:]) | ~counter_cells, axis=(1, 2))
        ok_full = (
            ok
            & np.all(dirs[b, :n] == exp["dir"][1:], axis=1)
            & np.all(pots[b, :n] == exp["pots"][1:], axis=1)
            & same_counters
        )
        all_obs.append(obs[b, :n][:, order])  # players -> our seats
        all_acts.append(acts[b, :n][:, order])
        all_trial.append(np.full(n, i, np.int64))
        matched.append(ok)
        full.append(ok_full)
    return Replay(
        obs=np.concatenate(all_obs),
        actions=np.concatenate(all_acts),
        trial=np.concatenate(all_trial),
        matched=np.concatenate(matched),
        full_match=np.concatenate(full),
    )


def _replay_scan(env: Any) -> Callable[..., Any]:
    """jit(vmap over trials of a scan over steps): observations before each joint action and
    the state after it (positions, orientations, inventories, pot statuses, grid objects)."""
    from aht_bench.envs import overcooked as oc
    from aht_bench.envs.core import EnvState

    pad = oc.AGENT_VIEW_SIZE - 1
    h, w = env.height, env.width
    pot_x = jnp.asarray(env.pot_pos[:, 0].astype(np.int32)) + pad
    pot_y = jnp.asarray(env.pot_pos[:, 1].astype(np.int32)) + pad
    key = jax.random.PRNGKey(0)  # Overcooked steps are deterministic

    def _env_step(inner: Any, x: tuple[jax.Array, jax.Array]) -> tuple[Any, tuple[Any, ...]]:
        actions, step = x
        state = EnvState(
            inner=inner.replace(step=step), episode_return=jnp.zeros((2,), jnp.float32)
        )
        obs = env.observe(state).obs.astype(jnp.uint8)
        nxt = env.step(key, state, actions)[0].inner
        maze = nxt.maze_map
        out = (
            obs,
            nxt.agent_pos.astype(jnp.int32),
            nxt.agent_dir_idx.astype(jnp.int32),
            nxt.agent_inv.astype(jnp.int32),
            maze[pot_y, pot_x, 2].astype(jnp.int32),
            maze[pad : pad + h, pad : pad + w, 0].astype(jnp.int32),
        )
        return nxt, out

    def _trial(inner: Any, actions: jax.Array, steps: jax.Array) -> tuple[Any, ...]:
        return jax.lax.scan(_env_step, inner, (actions, steps))[1]

    return jax.jit(jax.vmap(_trial))
