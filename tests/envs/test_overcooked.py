"""Overcooked (aht_bench.envs.overcooked): spawns, rewards, cooking time, observations, validation.

Expected values come from the paper (App. "Experimental Tasks": +20 per soup, shaped +0.1 onion
pickup, +0.5 onion into pot, +0.1 plate pickup, +1.0 soup pickup), from the layout maps written
out by hand below, and from JaxMARL's documented pot rule (23 = empty, one onion takes one off,
3 onions = 20, then one off per step down to 0 = ready), worked by hand in comments. States are
built here with JaxMARL's own `make_overcooked_map`, not with the code under test.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench.envs.core import EnvState, InvalidStateError
from aht_bench.envs.overcooked import LAYOUTS, make_overcooked

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from jaxmarl.environments.overcooked.common import DIR_TO_VEC, make_overcooked_map
    from jaxmarl.environments.overcooked.overcooked import State

UP, DOWN, RIGHT, LEFT, STAY, INTERACT = range(6)
N, S, E, W = 0, 1, 2, 3  # JaxMARL direction indices: north, south, east, west
EMPTY, ONION, PLATE, DISH = 1, 3, 5, 9  # JaxMARL object ids of held items
PAD = 4  # JaxMARL pads maze_map with agent_view_size - 1 = 4 cells

# The layouts, transcribed by hand from JaxMARL 0.2.0's layouts.py (W counter, O onion pile,
# B plate pile, P pot, X delivery, ' ' floor; agents' default cells shown as floor).
MAPS = {
    "cramped_room": ["WWPWW", "O   O", "W   W", "WBWXW"],
    "asymm_advantages": ["WWWWWWWWW", "O WXWOW X", "W   P   W", "W   P   W", "WWWBWBWWW"],
    "counter_circuit": ["WWWPPWWW", "W      W", "B WWWW X", "W      W", "WWWOOWWW"],
    "coord_ring": ["WWWPW", "W   P", "B W W", "O   W", "WOXWW"],
    "forced_coord": ["WWWPW", "O W P", "O W W", "B W W", "WWWXW"],
}
DIVIDED = {"asymm_advantages", "forced_coord"}


def floor_cells(layout: str) -> set[tuple[int, int]]:
    return {(x, y) for y, row in enumerate(MAPS[layout]) for x, c in enumerate(row) if c == " "}


def cells_of(layout: str, symbol: str) -> np.ndarray:
    rows = MAPS[layout]
    return np.array(
        [(x, y) for y, row in enumerate(rows) for x, c in enumerate(row) if c == symbol], np.uint32
    ).reshape(-1, 2)


def build_inner(
    layout,
    agent_pos,
    agent_dir_idx,
    agent_inv=(EMPTY, EMPTY),
    pot_status=None,
    onion_pos=(),
    plate_pos=(),
    dish_pos=(),
    step=0,
) -> State:
    """A JaxMARL state built with JaxMARL's own map builder from the hand-written map."""
    rows = MAPS[layout]
    wall_map = np.array([[c != " " for c in row] for row in rows])
    pots = cells_of(layout, "P")
    if pot_status is None:
        pot_status = [23] * len(pots)

    def items(pos):
        return np.asarray(pos, np.uint32).reshape(-1, 2)

    agent_pos = jnp.asarray(agent_pos, jnp.uint32)
    agent_dir_idx = jnp.asarray(agent_dir_idx, jnp.int32)
    maze_map = make_overcooked_map(
        wall_map,
        cells_of(layout, "X"),
        agent_pos,
        agent_dir_idx,
        cells_of(layout, "B"),
        cells_of(layout, "O"),
        pots,
        np.asarray(pot_status),
        items(onion_pos),
        items(plate_pos),
        items(dish_pos),
        pad_obs=True,
        num_agents=2,
        agent_view_size=5,
    )
    return State(
        agent_pos=agent_pos,
        agent_dir=DIR_TO_VEC[agent_dir_idx],
        agent_dir_idx=agent_dir_idx,
        agent_inv=jnp.asarray(agent_inv, jnp.int32),
        goal_pos=jnp.asarray(cells_of(layout, "X")),
        pot_pos=jnp.asarray(pots),
        wall_map=jnp.asarray(wall_map),
        maze_map=maze_map,
        step=jnp.asarray(step, jnp.int32),
        done=jnp.asarray(False),
    )


def as_state(inner: State) -> EnvState:
    return EnvState(inner=inner, episode_return=jnp.zeros((2,), jnp.float32))


@functools.cache
def env_and_step(layout: str):
    env = make_overcooked(layout)
    return env, jax.jit(env.step)


KEY = jax.random.PRNGKey(0)


def test_static_attributes():
    for layout in LAYOUTS:
        env = make_overcooked(layout)
        h, w = len(MAPS[layout]), len(MAPS[layout][0])
        assert env.task_id == f"overcooked-{layout}-v1"
        assert (env.num_agents, env.num_actions, env.horizon) == (2, 6, 400)
        assert env.action_names == ("up", "down", "right", "left", "stay", "interact")
        assert env.grid_obs_shape == (h, w, 26)
        assert env.obs_dim == h * w * 26
    with pytest.raises(ValueError, match="unknown Overcooked layout"):
        make_overcooked("cramped_rooom")


# ---------------------------------------------------------------------- cooking and delivery
def test_soup_cooks_20_steps_and_delivery_pays_20_to_both():
    """Seat 0 cooks and delivers a soup on cramped_room while seat 1 stays.

    Map (x right, y down):   y0 WWPWW   pot (2,0)
                             y1 O   O   onion piles (0,1), (4,1); seat 0 starts at (1,1) facing W
                             y2 W   W
                             y3 WBWXW   plate pile (1,3), delivery (3,3); seat 1 stays at (3,1)
    Pot status by JaxMARL's rule: 23 empty; each onion -1; the step that puts in the third onion
    makes it 20 and the cooking update of that same step makes it 19 ("step 1 of 20"); each later
    step -1, so after step 14 + k the status is 19 - k and it reaches 0 (ready) after step
    14 + 19 = 33, the 20th step counting step 14 as the first. Interacts in a step see the status
    from before that step's cooking update, so the plate interact at step 33 sees status 1 and
    does nothing, and the one at step 34 takes the soup.
    """
    env, step = env_and_step("cramped_room")
    fetch_onion_and_fill = [INTERACT, RIGHT, UP, INTERACT]  # pick at (1,1), go to (2,1), face pot
    back = [LEFT]
    script = (
        fetch_onion_and_fill  # steps 1-4: onion 1 (pickup at 1, into pot at 4)
        + back
        + fetch_onion_and_fill  # steps 5-9: onion 2 (pickup at 6, into pot at 9)
        + back
        + fetch_onion_and_fill  # steps 10-14: onion 3 (pickup at 11, into pot at 14)
        + [DOWN, LEFT, DOWN, INTERACT]  # steps 15-18: (2,2), (1,2), face plate pile, take plate
        + [UP, RIGHT, UP]  # steps 19-21: (1,1), (2,1), face the pot
        + [STAY] * 11  # steps 22-32
        + [INTERACT, INTERACT]  # step 33: still cooking; step 34: soup pickup
        + [DOWN, RIGHT, DOWN, INTERACT]  # steps 35-38: (2,2), (3,2), face delivery, deliver
    )
    assert len(script) == 38
    shaped_expected = {1: 0.1, 4: 0.5, 6: 0.1, 9: 0.5, 11: 0.1, 14: 0.5, 18: 0.1, 34: 1.0}
    state = as_state(build_inner("cramped_room", [[1, 1], [3, 1]], [W, E]))
    env.validate(state)
    low, high = env.observation_bounds()
    pot_y, pot_x = 0, 2
    for t, action in enumerate(script, start=1):
        state, ts = step(jax.random.PRNGKey(t), state, jnp.array([action, STAY]))
        obs = np.asarray(ts.obs)
        assert np.all((obs >= low) & (obs <= high)), f"step {t}: obs outside bounds"
        grid = obs[0].reshape(env.grid_obs_shape)
        status = int(state.inner.maze_map[PAD + pot_y, PAD + pot_x, 2])
        np.testing.assert_allclose(ts.shaped_reward, [shaped_expected.get(t, 0.0), 0.0], atol=1e-6)
        want_reward = [20.0, 20.0] if t == 38 else [0.0, 0.0]
        np.testing.assert_array_equal(ts.reward, want_reward, err_msg=f"step {t}")
        np.testing.assert_array_equal(ts.episode_return, want_reward, err_msg=f"step {t}")
        assert int(ts.time) == t
        if t in (4, 9):
            assert grid[pot_y, pot_x, 16] == {4: 1, 9: 2}[t]  # onions in a pot not cooking
        if 14 <= t <= 33:
            k = t - 14
            assert status == 19 - k, f"step {t}"
            assert grid[pot_y, pot_x, 20] == 19 - k  # cooking time left (0 once ready)
            assert grid[pot_y, pot_x, 18] == 3  # onions in the soup
            assert grid[pot_y, pot_x, 16] == 0
            assert grid[pot_y, pot_x, 21] == (1 if t == 33 else 0), f"step {t}: ready flag"
        if t == 33:
            assert int(state.inner.agent_inv[0]) == PLATE  # the interact at 33 did nothing
        if t == 34:
            assert int(state.inner.agent_inv[0]) == DISH
            assert status == 23  # the pot is empty again
            assert grid[1, 2, 21] == 1 and grid[1, 2, 18] == 3  # seat 0 at (2,1) holds a soup
    assert int(state.inner.agent_inv[0]) == EMPTY
    env.validate(state)


# ---------------------------------------------------------------------- shaped reward
# (acting seat's cell, facing, held item, pot status, the other seat's cell,
#  expected shaped reward of the acting seat, expected base reward, item held afterwards)
EVENTS = {
    # facing the onion pile at (0,1): the paper's +0.1
    "onion_pickup": ((1, 1), W, EMPTY, 23, (3, 2), 0.1, 0.0, ONION),
    # facing the empty pot at (2,0) with an onion: +0.5
    "onion_into_pot": ((2, 1), N, ONION, 23, (3, 2), 0.5, 0.0, EMPTY),
    # facing the plate pile at (1,3): +0.1
    "plate_pickup": ((1, 2), S, EMPTY, 23, (3, 1), 0.1, 0.0, PLATE),
    # facing a ready pot (status 0) with a plate: +1.0
    "soup_pickup": ((2, 1), N, PLATE, 0, (3, 2), 1.0, 0.0, DISH),
    # facing the delivery cell (3,3) with a soup: base +20 to both, no shaping
    "delivery": ((3, 2), S, DISH, 23, (1, 1), 0.0, 20.0, EMPTY),
    # onion dropped on the counter at (0,2): not an onion into a pot
    "onion_on_counter": ((1, 2), W, ONION, 23, (3, 2), 0.0, 0.0, EMPTY),
    # plate against a cooking pot (status 10): nothing happens
    "plate_on_cooking_pot": ((2, 1), N, PLATE, 10, (3, 2), 0.0, 0.0, PLATE),
    # onion against a full pot that is cooking: nothing happens, no +0.5
    "onion_on_cooking_pot": ((2, 1), N, ONION, 10, (3, 2), 0.0, 0.0, ONION),
}


@pytest.mark.parametrize("seat", [0, 1])
@pytest.mark.parametrize("event", list(EVENTS))
def test_shaped_reward_goes_to_the_acting_seat_only(event, seat):
    env, step = env_and_step("cramped_room")
    cell, facing, held, pot, other_cell, shaped, base, held_after = EVENTS[event]
    pos, dirs, inv = [None, None], [None, None], [EMPTY, EMPTY]
    pos[seat], dirs[seat], inv[seat] = cell, facing, held
    pos[1 - seat], dirs[1 - seat] = other_cell, S
    state = as_state(build_inner("cramped_room", pos, dirs, inv, pot_status=[pot]))
    env.validate(state)
    actions = [STAY, STAY]
    actions[seat] = INTERACT
    state, ts = step(KEY, state, jnp.array(actions))
    want = [0.0, 0.0]
    want[seat] = shaped
    np.testing.assert_allclose(ts.shaped_reward, want, atol=1e-6)
    np.testing.assert_array_equal(ts.reward, [base, base])
    assert int(state.inner.agent_inv[seat]) == held_after
    assert int(state.inner.agent_inv[1 - seat]) == EMPTY


def test_pickups_from_counters():
    """An onion or a plate taken from a counter is a pickup too (+0.1); a soup taken from a
    counter is not a soup pickup from a pot (0)."""
    env, step = env_and_step("cramped_room")
    # Seat 0 at (1,2) faces the counter (0,2); seat 1 at (3,2) faces the counter (4,2).
    for item, kwargs, want in (
        (ONION, dict(onion_pos=[[0, 2]]), 0.1),
        (PLATE, dict(plate_pos=[[0, 2]]), 0.1),
        (DISH, dict(dish_pos=[[0, 2]]), 0.0),
    ):
        state = as_state(build_inner("cramped_room", [[1, 2], [3, 2]], [W, E], **kwargs))
        env.validate(state)
        state, ts = step(KEY, state, jnp.array([INTERACT, INTERACT]))
        np.testing.assert_allclose(ts.shaped_reward, [want, 0.0], atol=1e-6)
        assert int(state.inner.agent_inv[0]) == item
        assert int(state.inner.agent_inv[1]) == EMPTY  # the counter (4,2) was bare


def test_counter_pickup_zero_pays_pile_pickups_only():
    """`with_shaping(env, counter_pickup=0)` (the heldout forced_coord teammates' shaping):
    an onion or plate taken off a counter earns nothing, one taken from a pile still +0.1, and
    the base reward and the next state are unchanged."""
    from aht_bench.envs.overcooked import with_shaping

    paper = make_overcooked("cramped_room")
    env = with_shaping(paper, counter_pickup=0.0)
    step, paper_step = jax.jit(env.step), jax.jit(paper.step)
    # seat 0 at (1,2) faces the counter (0,2); seat 1 at (1,1) faces the onion pile (0,1)
    for item, kwargs in ((ONION, dict(onion_pos=[[0, 2]])), (PLATE, dict(plate_pos=[[0, 2]]))):
        state = as_state(build_inner("cramped_room", [[1, 2], [1, 1]], [W, W], **kwargs))
        after, ts = step(KEY, state, jnp.array([INTERACT, INTERACT]))
        paper_after, paper_ts = paper_step(KEY, state, jnp.array([INTERACT, INTERACT]))
        np.testing.assert_allclose(ts.shaped_reward, [0.0, 0.1], atol=1e-6)
        np.testing.assert_allclose(paper_ts.shaped_reward, [0.1, 0.1], atol=1e-6)
        np.testing.assert_array_equal(ts.reward, paper_ts.reward)
        assert after.inner.agent_inv.tolist() == [item, ONION]
        assert paper_after.inner.agent_inv.tolist() == [item, ONION]


# ---------------------------------------------------------------------- spawns
@pytest.mark.parametrize("layout", LAYOUTS)
def test_spawns(layout):
    env = make_overcooked(layout)
    states, ts = jax.jit(jax.vmap(env.reset))(jax.random.split(KEY, 1000))
    inner = jax.tree.map(np.asarray, states.inner)
    pos = inner.agent_pos.astype(np.int64)  # (1000, 2, 2) (x, y)
    floor = floor_cells(layout)
    width = len(MAPS[layout][0])
    for seat in (0, 1):
        seen = {tuple(p) for p in pos[:, seat]}
        assert seen <= floor, f"seat {seat} spawned off the floor: {seen - floor}"
        if layout in DIVIDED:
            side = {(x, y) for x, y in floor if (x < width / 2) == (seat == 0)}
            assert seen == side, f"seat {seat} must cover exactly its side: {sorted(seen)}"
        else:
            assert seen == floor, "both seats should reach every floor cell"
    assert not np.any(np.all(pos[:, 0] == pos[:, 1], axis=-1)), "two agents on one cell"
    assert np.all(inner.agent_inv == EMPTY)
    assert np.all(inner.step == 0)
    assert set(np.unique(inner.agent_dir_idx)) == {0, 1, 2, 3}
    grid = inner.maze_map[:, PAD:-PAD, PAD:-PAD]
    pots = cells_of(layout, "P").astype(np.int64)
    assert np.all(grid[:, pots[:, 1], pots[:, 0], 2] == 23), "pots must start empty"
    assert not np.any(np.isin(grid[..., 0], [ONION, PLATE, DISH])), "no loose items at the start"
    np.testing.assert_array_equal(ts.episode_return, 0.0)
    env.validate(jax.tree.map(lambda x: x[:50], states))
    assert sorted(len(c) for c in env.spawn_cells) == sorted(
        [len(floor) // 2] * 2 if layout in DIVIDED else [len(floor)] * 2
    )


@pytest.mark.parametrize("layout", ["counter_circuit", "forced_coord"])
def test_reset_maps_match_jaxmarl_builder(layout):
    """Reset writes the agents into a precomputed agent-free map; for every spawn pair and
    orientation pair the whole state must equal JaxMARL's `make_overcooked_map` build."""
    env = make_overcooked(layout)
    pairs = [
        (p0, p1, d0, d1)
        for p0 in env.spawn_cells[0]
        for p1 in env.spawn_cells[1]
        for d0 in range(4)
        for d1 in range(4)
        if tuple(p0) != tuple(p1)
    ]
    pos = jnp.asarray(np.array([[p0, p1] for p0, p1, _, _ in pairs]), jnp.uint32)
    dirs = jnp.asarray(np.array([[d0, d1] for _, _, d0, d1 in pairs]), jnp.int32)
    ours = jax.jit(jax.vmap(env._start_inner))(pos, dirs)
    theirs = jax.jit(jax.vmap(lambda p, d: build_inner(layout, p, d)))(pos, dirs)
    for name in vars(theirs):
        a, b = getattr(ours, name), getattr(theirs, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_spawn_cell_counts():
    # Counted by hand from MAPS: cramped_room 6 floor cells, counter_circuit 14, coord_ring 8;
    # asymm_advantages 7 per side, forced_coord 3 per side.
    counts = {
        "cramped_room": (6, 6),
        "asymm_advantages": (7, 7),
        "counter_circuit": (14, 14),
        "coord_ring": (8, 8),
        "forced_coord": (3, 3),
    }
    for layout, want in counts.items():
        env = make_overcooked(layout)
        assert tuple(len(c) for c in env.spawn_cells) == want
        assert env.divided == (layout in DIVIDED)


# ---------------------------------------------------------------------- observations
def test_observation_layout_is_height_width_channels():
    # counter_circuit is 5 high and 8 wide, so a (width, height) mix-up cannot pass.
    env, _ = env_and_step("counter_circuit")
    observe = jax.jit(env.observe)
    state = as_state(build_inner("counter_circuit", [[6, 1], [2, 3]], [E, W]))
    ts = observe(state)
    assert ts.obs.shape == (2, 5 * 8 * 26) and ts.obs.dtype == jnp.float32
    me, other = np.asarray(ts.obs).reshape(2, 5, 8, 26)
    assert me[1, 6, 0] == 1 and me[:, :, 0].sum() == 1  # seat 0's own position at (y=1, x=6)
    assert me[3, 2, 1] == 1 and me[:, :, 1].sum() == 1  # the partner at (y=3, x=2)
    assert me[1, 6, 2 + E] == 1 and me[3, 2, 6 + W] == 1  # orientations: own 2-5, partner 6-9
    assert other[3, 2, 0] == 1 and other[1, 6, 1] == 1  # seat 1 sees itself first
    assert me[0, 3, 10] == 1 and me[0, 4, 10] == 1  # pots at (3,0), (4,0)
    assert me[2, 7, 15] == 1  # delivery at (7,2)
    assert np.all(me[..., 25] == 0)  # urgency is off at step 0
    # Urgency is on when 400 - step < 40 (JaxMARL and overcooked_ai; the paper's text says
    # "40 or fewer"): off at step 360 (40 left), on at step 361 (39 left).
    for t, flag in ((360, 0), (361, 1)):
        late = as_state(build_inner("counter_circuit", [[6, 1], [2, 3]], [E, W], step=t))
        assert np.all(np.asarray(observe(late).obs).reshape(2, 5, 8, 26)[..., 25] == flag)


@pytest.mark.parametrize("layout", ["forced_coord", "counter_circuit"])
def test_random_rollouts_stay_valid_and_in_bounds(layout):
    """200 states from random rollouts (4 envs x 50 steps, interact-heavy) are valid and their
    observations finite and inside observation_bounds()."""
    env, step = env_and_step(layout)
    low, high = env.observation_bounds()

    def rollout(key):
        key, k = jax.random.split(key)
        state, ts = env.reset(k)

        def body(carry, key):
            state = carry
            ka, ks = jax.random.split(key)
            probs = jnp.array([0.15, 0.15, 0.15, 0.15, 0.05, 0.35])
            actions = jax.random.choice(ka, 6, (2,), p=probs)
            state, ts = env.step(ks, state, actions)
            return state, (state, ts.obs)

        _, out = jax.lax.scan(body, state, jax.random.split(key, 50))
        return out

    states, obs = jax.jit(jax.vmap(rollout))(jax.random.split(KEY, 4))
    obs = np.asarray(obs)
    assert obs.shape == (4, 50, 2, env.obs_dim)
    assert np.all(np.isfinite(obs))
    assert np.all((obs >= low) & (obs <= high))
    env.validate(states)  # raises on any of the 200 states


# ---------------------------------------------------------------------- validation
def test_validate_rejects_impossible_states():
    env, _ = env_and_step("cramped_room")
    good = build_inner("cramped_room", [[1, 1], [3, 2]], [W, S])
    env.validate(as_state(good))

    on_counter = build_inner("cramped_room", [[0, 2], [3, 2]], [W, S])
    with pytest.raises(InvalidStateError, match=r"agent 0 stands on a counter at \(x=0, y=2\)"):
        env.validate(as_state(on_counter))

    on_pot = build_inner("cramped_room", [[2, 0], [3, 2]], [W, S])
    with pytest.raises(InvalidStateError, match="agent 0 stands on a pot"):
        env.validate(as_state(on_pot))

    same_cell = build_inner("cramped_room", [[2, 2], [2, 2]], [W, S])
    with pytest.raises(InvalidStateError, match="both agents occupy one cell"):
        env.validate(as_state(same_cell))

    # agent_pos edited without maze_map (the duplicated copy)
    moved = good.replace(agent_pos=good.agent_pos.at[0].set(jnp.array([2, 2], jnp.uint32)))
    with pytest.raises(InvalidStateError, match="disagree with maze_map") as info:
        env.validate(as_state(moved))
    assert "maze_map has an agent at (x=1, y=1)" in str(info.value)

    turned = good.replace(agent_dir_idx=good.agent_dir_idx.at[1].set(N))
    with pytest.raises(InvalidStateError, match="agent_dir .* disagrees with agent_dir_idx"):
        env.validate(as_state(turned))

    with pytest.raises(InvalidStateError, match="holds item id 4"):
        env.validate(as_state(good.replace(agent_inv=jnp.array([4, EMPTY], jnp.int32))))

    with pytest.raises(InvalidStateError, match="step 401 is outside"):
        env.validate(as_state(good.replace(step=jnp.asarray(401, jnp.int32))))

    bad_pot = build_inner("cramped_room", [[1, 1], [3, 2]], [W, S], pot_status=[30])
    with pytest.raises(InvalidStateError, match="status 30"):
        env.validate(as_state(bad_pot))

    with pytest.raises(InvalidStateError, match="wall_map differs"):
        env.validate(as_state(good.replace(wall_map=good.wall_map.at[1, 2].set(True))))


# ---------------------------------------------------------------------- rendering
def test_render_rgb():
    env, _ = env_and_step("asymm_advantages")
    state = as_state(build_inner("asymm_advantages", [[1, 1], [7, 1]], [S, W]))
    frame = env.render_rgb(state)
    assert frame.dtype == np.uint8 and frame.shape == (5 * 48, 9 * 48, 3)
    busy = as_state(
        build_inner(
            "asymm_advantages",
            [[2, 2], [6, 3]],
            [N, E],
            [ONION, DISH],
            pot_status=[21, 5],
            onion_pos=[[0, 2]],
            plate_pos=[[8, 2]],
            dish_pos=[[4, 1]],
        )
    )
    env.validate(busy)
    other = env.render_rgb(busy)
    assert other.shape == frame.shape and not np.array_equal(other, frame)


def test_importing_the_backend_keeps_stdout_redirection_and_prints_nothing():
    # jaxmarl 0.2.0 prints notices on import and resets sys.stdout to sys.__stdout__ (mabrax);
    # overcooked.py must neither print nor break a redirection in force (fresh process: the
    # module is already imported here).
    code = (
        "import contextlib, io\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    import aht_bench.envs.overcooked\n"
        "    print('kept')\n"
        "assert buf.getvalue() == 'kept\\n', repr(buf.getvalue())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
