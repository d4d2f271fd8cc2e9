"""Level-Based Foraging (aht_bench/envs/lbf.py): hand-built states with hand-worked rewards,
episode ends, validation, observation bounds and layout, rendering.

Reward arithmetic used below (Jumanji `LevelBasedForaging.get_reward`, normalize_reward=True):
a loading agent i adjacent to food f gets level_i * level_f / (sum of loading levels *
total food level) when f is eaten, so the loaders of one food share level_f / total together.
aht-bench gives every agent 0.5 * (that sum over agents). With three foods of equal level L,
total = 3L, so one eaten food gives every agent 0.5 * L / 3L = 0.5 / 3 = 1/6, however many
agents loaded it and whatever their levels, and all three give 0.5.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench import envs
from aht_bench.envs.lbf import CELL_PX, GRID_SIZE, LBF, make_lbf

NOOP, UP, DOWN, LEFT, RIGHT, LOAD = range(6)
ONE_FOOD = 0.5 / 3
VARIANTS = ("lbf-v1", "lbf-po-v1", "lbf-4p-v1")


@functools.cache
def _env(variant: str) -> LBF:
    return make_lbf(variant)


@functools.cache
def _jit(variant: str, method: str):
    # eager JAX dispatches op by op (seconds per call on 2 cores); jit once per variant
    return jax.jit(getattr(_env(variant), method))


def _state(variant, agents, foods, *, eaten=(False, False, False), step_count=0):
    """A state of `variant` with `agents` = [(row, col, level)] and `foods` = [(row, col)].

    Food levels follow force_coop (sum of the min(N, 3) lowest agent levels), as in p0.
    """
    start, _ = _jit(variant, "reset")(jax.random.PRNGKey(0))
    inner = start.inner
    levels = np.array([a[2] for a in agents], np.int32)
    food_level = int(np.sort(levels)[: min(len(agents), 3)].sum())
    inner = inner.replace(
        agents=inner.agents.replace(
            position=jnp.array([a[:2] for a in agents], jnp.int32),
            level=jnp.asarray(levels),
            loading=jnp.zeros(len(agents), bool),
        ),
        food_items=inner.food_items.replace(
            position=jnp.array(foods, jnp.int32),
            level=jnp.full(3, food_level, jnp.int32),
            eaten=jnp.array(eaten, bool),
        ),
        step_count=jnp.asarray(step_count, jnp.int32),
    )
    state = start.replace(inner=inner)
    _env(variant).validate(state)  # every hand-built state here is one the env can reach
    return state


def _step(variant, state, actions):
    return _jit(variant, "step")(jax.random.PRNGKey(0), state, jnp.asarray(actions, jnp.int32))


# --------------------------------------------------------------------------- loading rules

# Food A at (3, 3); the other two foods far away. Agent 0 (level 1) above A at (2, 3), agent 1
# (level 2) below it at (4, 3); food level = 1 + 2 = 3, so neither can load A alone.
FOODS_2P = [(3, 3), (1, 1), (5, 5)]
BOTH_ADJACENT = [(2, 3, 1), (4, 3, 2)]


@pytest.mark.parametrize(
    ("agents", "actions"),
    [
        ([(2, 3, 1), (6, 0, 2)], [LOAD, NOOP]),  # agent 0 adjacent, loading alone
        ([(0, 6, 1), (4, 3, 2)], [NOOP, LOAD]),  # agent 1 (level 2 < 3) adjacent, alone
        ([(2, 3, 1), (6, 0, 2)], [LOAD, LOAD]),  # agent 1 loads too, but is not adjacent
        (BOTH_ADJACENT, [LOAD, NOOP]),  # both adjacent, only one loads
        (BOTH_ADJACENT, [NOOP, LOAD]),
    ],
)
def test_2p_food_stays_unless_both_adjacent_players_load(agents, actions):
    state = _state("lbf-v1", agents, FOODS_2P)
    next_state, ts = _step("lbf-v1", state, actions)
    assert not np.asarray(next_state.inner.food_items.eaten).any()
    np.testing.assert_array_equal(ts.reward, [0.0, 0.0])
    assert not ts.terminated and not ts.truncated


def test_2p_food_eaten_when_both_adjacent_players_load():
    state = _state("lbf-v1", BOTH_ADJACENT, FOODS_2P)
    next_state, ts = _step("lbf-v1", state, [LOAD, LOAD])
    np.testing.assert_array_equal(next_state.inner.food_items.eaten, [True, False, False])
    # Jumanji: agent 0 gets 1*3/(3*9) = 1/9, agent 1 gets 2*3/(3*9) = 2/9; team 1/3 -> 0.5/3 each
    np.testing.assert_allclose(ts.reward, [ONE_FOOD, ONE_FOOD], rtol=1e-6)
    np.testing.assert_allclose(ts.episode_return, [ONE_FOOD, ONE_FOOD], rtol=1e-6)
    assert not ts.terminated and not ts.truncated
    assert np.asarray(ts.shaped_reward).tolist() == [0.0, 0.0]


# Four level-1 players around food A at (3, 3): above, below, left, right. force_coop makes the
# food level the sum of the three lowest levels (Jumanji generator.py), 1 + 1 + 1 = 3.
AROUND_A = [(2, 3, 1), (4, 3, 1), (3, 2, 1), (3, 4, 1)]


@pytest.mark.parametrize(
    ("loaders", "eaten"),
    [((0,), False), ((0, 1), False), ((2, 3), False), ((0, 1, 2), True), ((0, 1, 2, 3), True)],
)
def test_4p_food_needs_loading_levels_to_reach_its_level(loaders, eaten):
    state = _state("lbf-4p-v1", AROUND_A, FOODS_2P)
    actions = [LOAD if i in loaders else NOOP for i in range(4)]
    next_state, ts = _step("lbf-4p-v1", state, actions)
    assert bool(next_state.inner.food_items.eaten[0]) == eaten
    # 3 loaders: 1*3/(3*9) = 1/9 each, team 1/3; 4 loaders: 1*3/(4*9) = 1/12 each, team 1/3;
    # either way 0.5 * 1/3 = 0.5/3 for all four agents, non-loaders included.
    np.testing.assert_allclose(ts.reward, [ONE_FOOD if eaten else 0.0] * 4, rtol=1e-6)


def test_4p_two_level2_players_eat_when_the_others_are_level1():
    # Jumanji quirk kept: levels (1, 1, 2, 2) give food level 1 + 1 + 2 = 4, which the two
    # level-2 players reach alone. Each gets 2*4/(4*12) = 1/6, team 1/3 -> 0.5/3 for all four.
    agents = [(2, 3, 1), (4, 3, 1), (3, 2, 2), (3, 4, 2)]
    state = _state("lbf-4p-v1", agents, FOODS_2P)
    assert int(state.inner.food_items.level[0]) == 4
    next_state, ts = _step("lbf-4p-v1", state, [NOOP, NOOP, LOAD, LOAD])
    assert bool(next_state.inner.food_items.eaten[0])
    np.testing.assert_allclose(ts.reward, [ONE_FOOD] * 4, rtol=1e-6)


# --------------------------------------------------------------------------- episode ends


def test_eating_all_food_returns_half_and_terminates():
    # Foods on a diagonal (2,2), (3,3), (4,4) (never 4-adjacent, as the generator requires).
    # Agent 0 at (2,3) and agent 1 at (3,2) are each adjacent to both (2,2) and (3,3).
    state = _state("lbf-v1", [(2, 3, 1), (3, 2, 2)], [(2, 2), (3, 3), (4, 4)])
    plan = [
        [LOAD, LOAD],  # eats (2,2) and (3,3) at once: 2 * 0.5/3 = 1/3 each
        [RIGHT, DOWN],  # agent 0 -> (2,4), agent 1 -> (4,2)
        [DOWN, RIGHT],  # agent 0 -> (3,4), agent 1 -> (4,3): both adjacent to (4,4)
        [LOAD, LOAD],  # eats (4,4): 0.5/3 each; return 1/3 + 1/6 = 0.5
    ]
    expected_reward = [2 * ONE_FOOD, 0.0, 0.0, ONE_FOOD]
    for t, (actions, reward) in enumerate(zip(plan, expected_reward, strict=True), start=1):
        state, ts = _step("lbf-v1", state, actions)
        np.testing.assert_allclose(ts.reward, [reward, reward], rtol=1e-6, atol=1e-7)
        assert int(ts.time) == t
        assert bool(ts.terminated) == (t == 4) and not ts.truncated
    np.testing.assert_array_equal(state.inner.agents.position, [[3, 4], [4, 3]])
    np.testing.assert_allclose(ts.episode_return, [0.5, 0.5], rtol=1e-6)
    assert float(ts.episode_return[0] * 200) == pytest.approx(100.0)  # percent eaten


def test_truncated_exactly_at_step_100_without_eating():
    state, _ = _jit("lbf-v1", "reset")(jax.random.PRNGKey(7))
    for t in range(1, 101):  # noop never eats
        state, ts = _step("lbf-v1", state, [NOOP, NOOP])
        assert int(ts.time) == t and not ts.terminated and not ts.reward.any()
        assert bool(ts.truncated) == (t == 100), f"truncated={ts.truncated} at step {t}"


# --------------------------------------------------------------------------- reset and validation


def _stack(trees):
    return jax.tree.map(lambda *xs: np.stack(xs), *trees)


def test_reset_positions_and_levels_vary_and_are_valid():
    env = _env("lbf-v1")
    reset = _jit("lbf-v1", "reset")
    states = _stack([reset(key)[0] for key in jax.random.split(jax.random.PRNGKey(0), 32)])
    env.validate(states)
    agent_pos = np.asarray(states.inner.agents.position).reshape(32, -1)
    food_pos = np.asarray(states.inner.food_items.position).reshape(32, -1)
    assert len({tuple(p) for p in agent_pos}) > 16 and len({tuple(p) for p in food_pos}) > 16
    assert len(np.unique(np.asarray(states.inner.agents.level), axis=0)) == 4  # (1|2, 1|2)
    assert states.inner.key.dtype == jnp.uint32


def test_reset_with_a_typed_key_keeps_a_raw_state_key():
    # State.key stays uint32 (2,) whatever key reset gets, so saved states have one layout
    env = _env("lbf-v1")
    for key in (jax.random.PRNGKey(3), jax.random.key(3)):
        state, _ = jax.eval_shape(env.reset, key)
        assert (state.inner.key.shape, state.inner.key.dtype) == ((2,), jnp.uint32)


def _edit_agents(state, positions):
    inner = state.inner
    agents = inner.agents.replace(position=jnp.array(positions, jnp.int32))
    return state.replace(inner=inner.replace(agents=agents))


@pytest.mark.parametrize(
    ("positions", "message"),
    [
        ([(2, 3), (2, 3)], "agents 0 and 1 share the cell [2, 3]"),
        ([(3, 3), (4, 3)], "agent 0 stands on uneaten food 0 at [3, 3]"),
        ([(2, 3), (7, 3)], "agent 1 at [7, 3] is outside the 7x7 grid"),
        ([(-1, 0), (4, 3)], "agent 0 at [-1, 0] is outside the 7x7 grid"),
    ],
)
def test_validate_rejects_impossible_positions(positions, message):
    env = _env("lbf-v1")
    state = _edit_agents(_state("lbf-v1", BOTH_ADJACENT, FOODS_2P), positions)
    with pytest.raises(envs.InvalidStateError, match=r"lbf-v1: impossible state") as info:
        env.validate(state)
    assert message in str(info.value)


def test_validate_rejects_wrong_levels_step_count_ids_and_shapes():
    env = _env("lbf-v1")
    state = _state("lbf-v1", BOTH_ADJACENT, FOODS_2P)
    inner = state.inner
    cases = {
        "agent levels [3, 2] are outside [1, 2]": inner.replace(
            agents=inner.agents.replace(level=jnp.array([3, 2], jnp.int32))
        ),
        "food levels [4, 4, 4] must all be 3": inner.replace(
            food_items=inner.food_items.replace(level=jnp.full(3, 4, jnp.int32))
        ),
        "step_count 101 is outside [0, 100]": inner.replace(step_count=jnp.int32(101)),
        "agents.id is [1, 0], expected 0..1": inner.replace(
            agents=inner.agents.replace(id=jnp.array([1, 0], jnp.int32))
        ),
        "agents.position has shape (2, 3), expected (2, 2)": inner.replace(
            agents=inner.agents.replace(position=jnp.zeros((2, 3), jnp.int32))
        ),
        "food 1 at [0, 1] is on or outside the grid's edge": inner.replace(
            food_items=inner.food_items.replace(
                position=jnp.array([(3, 3), (0, 1), (5, 5)], jnp.int32)
            )
        ),
    }
    for message, bad in cases.items():
        with pytest.raises(envs.InvalidStateError) as info:
            env.validate(state.replace(inner=bad))
        assert message in str(info.value), str(info.value)


def test_validate_accepts_an_agent_on_an_eaten_food():
    _state("lbf-v1", [(3, 3, 1), (4, 4, 2)], FOODS_2P, eaten=(True, False, False), step_count=9)


# --------------------------------------------------------------------------- observations


@functools.cache
def _random_rollout(variant: str):
    """States before and timesteps after 40 envs x 100 uniform-random steps (4000 steps).

    Each env runs one whole episode from p0 to the horizon. No AutoReset, no vmapped reset:
    the generator's compile is the slow part on CPU, and the unbatched jitted reset is shared.
    """
    env = _env(variant)
    reset = _jit(variant, "reset")
    keys = jax.random.split(jax.random.PRNGKey(11), 40)
    start, start_ts = _stack([reset(key) for key in keys])

    @jax.jit
    def run(key, state):
        def _env_step(state, step_key):
            key_act, key_env = jax.random.split(step_key)
            actions = jax.random.randint(key_act, (len(keys), env.num_agents), 0, 6)
            next_state, ts = jax.vmap(env.step)(
                jax.random.split(key_env, len(keys)), state, actions
            )
            return next_state, (state, ts)

        return jax.lax.scan(_env_step, state, jax.random.split(key, env.horizon))

    _, (states, ts) = run(jax.random.PRNGKey(12), start)
    obs = np.concatenate([start_ts.obs[None], ts.obs])  # (101, 40, num_agents, obs_dim)
    return jax.tree.map(np.asarray, states), obs


@pytest.mark.parametrize("variant", VARIANTS)
def test_random_rollouts_observations_in_bounds_and_states_valid(variant):
    env = _env(variant)
    states, obs = _random_rollout(variant)
    low, high = env.observation_bounds()
    assert low.shape == high.shape == (env.obs_dim,) == (3 * (3 + env.num_agents) + 1,)
    obs = obs.reshape(-1, env.obs_dim)
    assert np.isfinite(obs).all() and obs.shape == (101 * 40 * env.num_agents, env.obs_dim)
    assert (obs >= low).all() and (obs <= high).all()
    # the bounds are tight: each is reached, except -1 for eaten foods on the full-view tasks
    # (random players rarely eat; pinned by the eaten-food test below)
    reached_low = obs.min(axis=0) == low
    reached_high = obs.max(axis=0) == high
    assert reached_high.all(), np.nonzero(~reached_high)
    never_eaten_ok = np.zeros(env.obs_dim, bool)
    if env.fov >= GRID_SIZE - 1:
        never_eaten_ok[0:9] = True
    assert (reached_low | never_eaten_ok).all(), np.nonzero(~reached_low)
    # 200 states spread over the rollouts are valid start states
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), states)
    env.validate(jax.tree.map(lambda x: x[:: len(x) // 200][:200], flat))


def test_observation_layout_matches_jumanji_vector_observer():
    env = _env("lbf-4p-v1")
    state, _ = _jit("lbf-4p-v1", "reset")(jax.random.PRNGKey(5))
    actions = jnp.array([RIGHT, LOAD, UP, LEFT], jnp.int32)
    _, ts = _step("lbf-4p-v1", state, actions)
    _, jumanji_ts = jax.jit(env.jumanji.step)(state.inner, actions)
    np.testing.assert_array_equal(ts.obs[:, :-1], jumanji_ts.observation.agents_view)
    np.testing.assert_array_equal(ts.obs[:, -1], np.full(4, 0.01, np.float32))  # step 1 of 100
    assert ts.obs.dtype == jnp.float32


def test_partial_view_hides_far_entities_and_full_view_does_not():
    # agent 0 (level 1) in the top-left corner, agent 1 (level 2) in the bottom-right corner;
    # foods at (1,1), (3,3), (5,5). Worked by hand from VectorObserver: an entity is seen when
    # both |d_row|, |d_col| <= 2, at pos - own + min(2, own); unseen is (-1, -1, 0).
    agents, foods = [(0, 0, 1), (6, 6, 2)], [(1, 1), (3, 3), (5, 5)]
    state = _state("lbf-po-v1", agents, foods)
    obs = np.asarray(_jit("lbf-po-v1", "observe")(state).obs)
    hidden = [-1, -1, 0]
    np.testing.assert_array_equal(
        obs[0], [1, 1, 3, *hidden, *hidden, 0, 0, 1, *hidden, 0.0]
    )  # own (0,0): window starts at (0,0); sees food (1,1) only
    np.testing.assert_array_equal(
        obs[1], [*hidden, *hidden, 1, 1, 3, 2, 2, 2, *hidden, 0.0]
    )  # own (6,6): window starts at (4,4), so own reads (2,2), food (5,5) reads (1,1)
    # the full view sees every food and the other agent at absolute coordinates
    full = np.asarray(_jit("lbf-v1", "observe")(state).obs)
    np.testing.assert_array_equal(full[0], [1, 1, 3, 3, 3, 3, 5, 5, 3, 0, 0, 1, 6, 6, 2, 0.0])
    np.testing.assert_array_equal(full[1], [1, 1, 3, 3, 3, 3, 5, 5, 3, 6, 6, 2, 0, 0, 1, 0.0])
    # an eaten food is (-1, -1, 0) in the full view too; time is step_count / 100
    eaten = _state("lbf-v1", agents, foods, eaten=(False, True, False), step_count=37)
    full = np.asarray(_jit("lbf-v1", "observe")(eaten).obs)
    np.testing.assert_array_equal(full[0, 3:6], hidden)
    assert full[0, -1] == np.float32(0.37)


# --------------------------------------------------------------------------- rendering


def test_render_rgb_draws_agents_and_hides_eaten_food():
    env = _env("lbf-v1")
    state = _state("lbf-v1", BOTH_ADJACENT, FOODS_2P)
    image = env.render_rgb(state)
    assert image.shape == (GRID_SIZE * CELL_PX, GRID_SIZE * CELL_PX, 3)
    assert image.dtype == np.uint8

    def pixel(img, row, col):  # a point inside the cell, off the centred level digit
        return tuple(img[row * CELL_PX + CELL_PX // 4, col * CELL_PX + CELL_PX // 2])

    background = pixel(image, 0, 0)
    food, seat0, seat1 = pixel(image, 3, 3), pixel(image, 2, 3), pixel(image, 4, 3)
    assert len({background, food, seat0, seat1}) == 4
    eaten = _state("lbf-v1", BOTH_ADJACENT, FOODS_2P, eaten=(True, False, False), step_count=1)
    assert pixel(env.render_rgb(eaten), 3, 3) == background
    with pytest.raises(ValueError, match="unbatched"):
        env.render_rgb(jax.tree.map(lambda x: x[None], state))


def test_registry_builds_the_three_variants():
    for variant, agents, fov in (("lbf-v1", 2, 7), ("lbf-po-v1", 2, 2), ("lbf-4p-v1", 4, 7)):
        env = envs.make(variant)
        assert isinstance(env, LBF) and env.task_id == variant
        assert (env.num_agents, env.fov, env.horizon, env.num_actions) == (agents, fov, 100, 6)
        assert env.action_names == ("noop", "up", "down", "left", "right", "load")


def test_spawn_positions_are_uniform_over_cells_without_food():
    # Jumanji's generator never spawns an agent in a row equal to a food coordinate (about 68%
    # of agents land in rows 0 and 6); lbf.py redraws positions uniformly over food-free cells.
    env = _env("lbf-v1")
    states, _ = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(7), 4000))
    agents = np.asarray(states.inner.agents.position)  # (4000, 2, 2)
    foods = np.asarray(states.inner.food_items.position)  # (4000, 3, 2)
    on_food = (agents[:, :, None, :] == foods[:, None, :, :]).all(-1).any(-1)
    assert not on_food.any()
    assert (agents[:, 0] != agents[:, 1]).any(-1).all()
    # every row holds 1/7 of the spawns up to sampling noise (8000 spawns: sd about 0.004);
    # food rows 1-5 are a little rarer than edge rows, as foods take cells there (46 of 49
    # cells are free; an edge row is always fully free): 7/46 = 0.152 for rows 0 and 6
    row_freq = np.bincount(agents[:, :, 0].ravel(), minlength=7) / agents[:, :, 0].size
    assert row_freq[0] == pytest.approx(7 / 46, abs=0.015)
    assert row_freq[6] == pytest.approx(7 / 46, abs=0.015)
    assert (row_freq[1:6] > 0.12).all()
    # a food coordinate's row is no longer forbidden
    same_row = agents[:, :, None, 0] == foods[:, None, :, 0]
    assert same_row.mean() > 0.05
