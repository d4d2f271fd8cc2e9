"""`overcooked-<layout>-v2`: the game as the paper's public code runs it (../shared/FACTS.md).

Expected values: the reference distributions are the paper's code's reset rule (sides by a fair
coin on divided layouts; pot status uniform over 0..23; each held item uniform over
empty/onion/plate/dish), tested with chi-square goodness of fit; the shaping rules come from its
task configs (pile pickup +0.1, onion into a pot +0.5, soup pickup +1.0, nothing off or onto a
counter), each checked on a state built by hand with JaxMARL's own map builder.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from test_overcooked import (
    DISH,
    EMPTY,
    INTERACT,
    MAPS,
    ONION,
    PAD,
    PLATE,
    STAY,
    E,
    N,
    S,
    W,
    as_state,
    build_inner,
    cells_of,
    floor_cells,
)

from aht_bench import envs
from aht_bench.envs.overcooked import (
    LAYOUTS,
    OvercookedV2,
    make_overcooked,
    with_shaping,
)
from aht_bench.envs.overcooked_pass import PassShapedOvercookedV2

KEY = jax.random.PRNGKey(0)
RESETS = 1000


@functools.cache
def resets(layout: str):
    """1000 v2 resets of `layout` as NumPy arrays (one jitted vmap)."""
    env = make_overcooked(layout, version=2)
    states, ts = jax.jit(jax.vmap(env.reset))(jax.random.split(KEY, RESETS))
    return env, jax.tree.map(np.asarray, states), jax.tree.map(np.asarray, ts)


@functools.cache
def env_and_step(layout: str):
    env = make_overcooked(layout, version=2)
    return env, jax.jit(env.step)


def test_registered_and_distinct_from_v1():
    for layout in LAYOUTS:
        env = envs.make(f"overcooked-{layout}-v2")
        assert isinstance(env, OvercookedV2) and env.task_id == f"overcooked-{layout}-v2"
        v1 = envs.make(f"overcooked-{layout}-v1")
        assert type(v1).__name__ == "Overcooked" and v1.task_id.endswith("-v1")
        assert float(env.params.counter_pickup) == 0.0 and float(v1.params.counter_pickup) == 1.0


# ---------------------------------------------------------------------- sides
@pytest.mark.parametrize("layout", ["asymm_advantages", "forced_coord"])
def test_divided_layouts_draw_sides_per_episode(layout):
    """Over 1000 resets seat 0 starts on the left in 0.5 +- 0.05 of them, the seats are always
    on opposite sides, and each seat reaches every floor cell of both sides."""
    _, states, _ = resets(layout)
    pos = states.inner.agent_pos.astype(np.int64)  # (1000, 2, 2) (x, y)
    width = len(MAPS[layout][0])
    left = pos[..., 0] < width / 2  # (1000, 2)
    assert np.all(left[:, 0] != left[:, 1]), "both seats on one side"
    frequency = left[:, 0].mean()
    assert abs(frequency - 0.5) <= 0.05, f"seat 0 on the left in {frequency:.3f} of resets"
    floor = floor_cells(layout)
    for seat in (0, 1):
        assert {tuple(p) for p in pos[:, seat]} == floor


@pytest.mark.parametrize("layout", ["cramped_room", "counter_circuit", "coord_ring"])
def test_undivided_layouts_spawn_on_two_distinct_floor_cells(layout):
    _, states, _ = resets(layout)
    pos = states.inner.agent_pos.astype(np.int64)
    assert not np.any(np.all(pos[:, 0] == pos[:, 1], axis=-1))
    for seat in (0, 1):
        assert {tuple(p) for p in pos[:, seat]} == floor_cells(layout)


# ---------------------------------------------------------------------- object state
@pytest.mark.parametrize("layout", LAYOUTS)
def test_reset_object_state_matches_the_reference_distributions(layout):
    """Pot status uniform over 0..23 and each seat's held item uniform over
    {empty, onion, plate, dish}: chi-square goodness of fit, p > 0.01 (fixed seed)."""
    env, states, ts = resets(layout)
    grid = states.inner.maze_map[:, PAD:-PAD, PAD:-PAD]
    pots = cells_of(layout, "P").astype(np.int64)
    status = grid[:, pots[:, 1], pots[:, 0], 2].astype(np.int64)  # (1000, pots)
    assert np.all(grid[:, pots[:, 1], pots[:, 0], 0] == 8), "pot cells hold pots"
    for k in range(len(pots)):
        counts = np.bincount(status[:, k], minlength=24)
        assert len(counts) == 24, f"pot status outside 0..23: {np.unique(status)}"
        assert stats.chisquare(counts).pvalue > 0.01, counts
    held = states.inner.agent_inv
    for seat in (0, 1):
        counts = np.array([(held[:, seat] == item).sum() for item in (EMPTY, ONION, PLATE, DISH)])
        assert counts.sum() == RESETS, f"seat {seat} holds an item outside the four"
        assert stats.chisquare(counts).pvalue > 0.01, counts
    # counters bare, step 0, nothing earned yet
    counters = np.array([[c == "W" for c in row] for row in MAPS[layout]])
    assert not np.any(np.isin(grid[:, counters, 0], [ONION, PLATE, DISH]))
    assert np.all(states.inner.step == 0)
    np.testing.assert_array_equal(ts.episode_return, 0.0)


@pytest.mark.parametrize("layout", ["forced_coord", "counter_circuit"])
def test_reset_states_equal_jaxmarl_builds_and_validate(layout):
    """Each reset state equals the state JaxMARL's `make_overcooked_map` builds from the same
    positions, orientations, held items and pot statuses, and passes `validate`."""
    env, states, _ = resets(layout)
    n = 40
    pots = cells_of(layout, "P").astype(np.int64)
    for k in range(n):
        inner = jax.tree.map(lambda x, k=k: x[k], states.inner)
        status = inner.maze_map[PAD + pots[:, 1], PAD + pots[:, 0], 2]
        theirs = build_inner(
            layout, inner.agent_pos, inner.agent_dir_idx, inner.agent_inv, pot_status=status
        )
        for name in vars(theirs):
            a, b = np.asarray(getattr(inner, name)), np.asarray(getattr(theirs, name))
            assert a.dtype == b.dtype and a.shape == b.shape, name
            np.testing.assert_array_equal(a, b, err_msg=f"{name} of reset {k}")
    env.validate(jax.tree.map(lambda x: x[:200], states))


# ---------------------------------------------------------------------- shaped reward
def _interact(layout, seat0, facing, held=EMPTY, pot=23, other=(3, 2), **items):
    """Seat 0 at `seat0` facing `facing` holding `held` interacts; seat 1 stands at `other`
    facing south and stays. Returns (state after, timestep)."""
    env, step = env_and_step(layout)
    state = as_state(
        build_inner(layout, [seat0, other], [facing, S], [held, EMPTY], [pot], **items)
    )
    env.validate(state)
    return step(KEY, state, jnp.array([INTERACT, STAY]))


# cramped_room ("WWPWW", "O   O", "W   W", "WBWXW"): onion piles (0,1), (4,1); pot (2,0);
# plate pile (1,3); delivery (3,3); bare counters e.g. (0,2).
PILE_PICKUPS = {
    "onion from the onion pile": (((1, 1), W), ONION),
    "plate from the plate pile": (((1, 2), S), PLATE),
}


@pytest.mark.parametrize("event", list(PILE_PICKUPS))
def test_a_pile_pickup_pays_0_1(event):
    (cell, facing), item = PILE_PICKUPS[event]
    after, ts = _interact("cramped_room", cell, facing)
    assert int(after.inner.agent_inv[0]) == item
    np.testing.assert_allclose(ts.shaped_reward, [0.1, 0.0], atol=1e-6)


@pytest.mark.parametrize(
    "item, where", [(ONION, "onion_pos"), (PLATE, "plate_pos"), (DISH, "dish_pos")]
)
def test_counter_pickups_and_drops_pay_nothing(item, where):
    # pickup: the item lies on the counter (0,2) that seat 0 at (1,2) faces
    after, ts = _interact("cramped_room", (1, 2), W, **{where: [[0, 2]]})
    assert int(after.inner.agent_inv[0]) == item
    np.testing.assert_allclose(ts.shaped_reward, [0.0, 0.0], atol=1e-6)
    # drop: seat 0 holds the item and faces the bare counter (0,2)
    after, ts = _interact("cramped_room", (1, 2), W, held=item)
    assert int(after.inner.agent_inv[0]) == EMPTY
    assert int(np.asarray(after.inner.maze_map)[PAD + 2, PAD + 0, 0]) == item
    np.testing.assert_allclose(ts.shaped_reward, [0.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("pot, pays, pot_after", [(23, 0.5, 22), (21, 0.5, 19), (20, 0.0, 19)])
def test_onion_into_a_pot_that_is_not_full_pays_0_5(pot, pays, pot_after):
    """Seat 0 at (2,1) faces the pot (2,0) with an onion: empty and two-onion pots take it
    (+0.5; 21 -> 20 is the third onion and the soup cooks its first step in the same step: 19);
    a full pot (20) does not, and cooks one step on (19)."""
    after, ts = _interact("cramped_room", (2, 1), N, held=ONION, pot=pot)
    np.testing.assert_allclose(ts.shaped_reward, [pays, 0.0], atol=1e-6)
    assert int(np.asarray(after.inner.maze_map)[PAD + 0, PAD + 2, 2]) == pot_after
    assert int(after.inner.agent_inv[0]) == (EMPTY if pays else ONION)


@pytest.mark.parametrize("pot, pays, held_after", [(0, 1.0, DISH), (5, 0.0, PLATE)])
def test_soup_pickup_pays_1_from_a_ready_pot_only(pot, pays, held_after):
    after, ts = _interact("cramped_room", (2, 1), N, held=PLATE, pot=pot)
    np.testing.assert_allclose(ts.shaped_reward, [pays, 0.0], atol=1e-6)
    assert int(after.inner.agent_inv[0]) == held_after


def test_delivery_pays_20_to_both_and_no_shaping():
    after, ts = _interact("cramped_room", (3, 2), S, held=DISH, other=(1, 1))
    np.testing.assert_array_equal(ts.reward, [20.0, 20.0])
    np.testing.assert_allclose(ts.shaped_reward, [0.0, 0.0], atol=1e-6)


def test_the_plate_pickup_bonus_is_paid_only_under_its_conditions():
    """The paper's code's plate-pickup bonus (no plate on any counter, a pot not empty) is 0 in
    v2 because that code never pays it: its test for "a plate on a counter" compares every
    channel of the map with the plate id 5, which is also every wall's colour id (grey), so it
    always finds one. With the bonus switched on (`useful_plate_pickup=0.1`) it is paid on top
    of the pile pickup's 0.1 exactly when both conditions hold."""
    env = make_overcooked("cramped_room", version=2)
    assert float(env.params.useful_plate_pickup) == 0.0
    for layout in LAYOUTS:  # every map holds the value 5 somewhere: the walls' colour
        _, states, _ = resets(layout)
        assert np.all(np.any(states.inner.maze_map == PLATE, axis=(1, 2, 3)))
    on = with_shaping(env, useful_plate_pickup=0.1)
    step = jax.jit(on.step)
    # seat 0 at (1,2) faces the plate pile (1,3); seat 1 at (3,2)
    cases = [
        (dict(pot_status=[23]), 0.1),  # every pot empty: no bonus
        (dict(pot_status=[22]), 0.2),  # a pot with an onion, no plate on a counter: bonus
        (dict(pot_status=[0]), 0.2),  # a ready soup waits
        (dict(pot_status=[22], plate_pos=[[4, 2]]), 0.1),  # a plate already on a counter
    ]
    for kwargs, want in cases:
        state = as_state(build_inner("cramped_room", [[1, 2], [3, 2]], [S, E], **kwargs))
        on.validate(state)
        after, ts = step(KEY, state, jnp.array([INTERACT, STAY]))
        assert int(after.inner.agent_inv[0]) == PLATE
        np.testing.assert_allclose(ts.shaped_reward, [want, 0.0], atol=1e-6, err_msg=kwargs)
        _, default = env_and_step("cramped_room")
        np.testing.assert_allclose(
            default(KEY, state, jnp.array([INTERACT, STAY]))[1].shaped_reward, [0.1, 0.0]
        )


def test_pass_shaping_keeps_the_v2_reset():
    env = with_shaping(make_overcooked("counter_circuit", version=2), onion_pass=2.0)
    assert isinstance(env, PassShapedOvercookedV2) and env.task_id.endswith("-v2")
    states, _ = jax.jit(jax.vmap(env.reset))(jax.random.split(KEY, 200))
    held = np.asarray(states.inner.base.agent_inv)
    assert set(np.unique(held)) == {EMPTY, ONION, PLATE, DISH}
