"""The paper's Overcooked heuristic teammates (aht_bench/policies/heuristics/overcooked.py).

- competence: on each layout, pairs of heuristics deliver at least one soup in at least 90% of
  64 full-horizon episodes from random spawns (forced_coord: `independent_agent_0.6` in both
  seats, which must pass items over the dividing counter);
- the actions of every role, in both seats, lie in [0, 6) on every state of random rollouts;
- every role jits and vmaps over 1024 envs on every layout;
- behaviour on hand-built states (expected actions worked out by hand from the maps in
  docs/overcooked.md);
- `make_heuristic` resolves the paper's names and rejects unknown ones with the choices.

Compile time dominates on CPU, so all rollouts of a layout (every competence pair and the
random rollouts) run in one jitted, vmapped scan: the heuristics' role and p are pytree leaves,
so stacked teams share one compiled `act` and each lane gathers its own team. The full table of
pairs lives in benchmarks/overcooked_heuristics.py (written to benchmarks/results/ with
AHT_BENCH_WRITE_RESULTS=1).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench import envs
from aht_bench.envs import EnvState, UnknownTaskError
from aht_bench.envs import overcooked as oc
from aht_bench.envs.tasks import OVERCOOKED_LAYOUTS
from aht_bench.policies.core import Policy, reset_carry_where
from aht_bench.policies.heuristics import (
    PAPER_HEURISTICS,
    SUBGOALS,
    OvercookedCarry,
    OvercookedHeuristic,
    SequentialAgent,
    heuristic_names,
    make_heuristic,
    overcooked_heuristic,
)
from aht_bench.policies.heuristics.overcooked import (
    DELIVER,
    FETCH_ONION,
    FILL_POT,
    IDLE,
    PLACE,
    TAKE_SOUP,
    WAIT_FOR_SOUP,
    neighbour_table,
    path_costs,
)

UP, DOWN, RIGHT, LEFT, STAY, INTERACT = range(6)
EPISODES = 64
SHADOW_EPISODES = 8
# Jits that run once or twice favour compile time over run time: XLA CPU's optimisation level
# 0 compiles about twice as fast (the rollouts keep the default: there run time dominates).
FAST_COMPILE = {"xla_backend_optimization_level": 0}

# Pairs that must deliver a soup in >= 90% of episodes: the paper's evaluation teammates of
# each layout, with a partner of the complementary role or a copy.
COMPETENCE = {
    "cramped_room": [
        ("onion_agent_0.1", "plate_agent_0.1"),
        ("independent_agent_0", "independent_agent_0"),
        ("independent_agent_0.4", "independent_agent_0.4"),
    ],
    "asymm_advantages": [
        ("onion_agent_0", "plate_agent_0"),
        ("independent_agent_0", "independent_agent_0"),
    ],
    "counter_circuit": [
        ("onion_agent_0", "plate_agent_0"),
        ("independent_agent_0", "independent_agent_0"),
    ],
    "coord_ring": [
        ("onion_agent_0", "plate_agent_0"),
        ("independent_agent_0", "independent_agent_0"),
    ],
    "forced_coord": [("independent_agent_0.6", "independent_agent_0.6")],
}
# Teams that only shadow random rollouts (the env takes uniform actions): every role in both
# seats, with p = 0, 0.5 and 1.
SHADOWS = [
    ("onion_agent_1", "independent_agent_0"),
    ("plate_agent_0.5", "onion_agent_1"),
    ("independent_agent_0", "plate_agent_0.5"),
]


def _stack(policies):
    return jax.tree.map(lambda *leaves: jnp.asarray(leaves), *policies)


def _seats_act(team, carry, obs, keys):
    """Both seats act: vmapped over a stacked team of two heuristics."""
    return jax.vmap(lambda pol, c, o, k: pol.act(None, c, o, k))(team, carry, obs, keys)


@functools.cache
def _rollouts(layout: str) -> dict[str, np.ndarray]:
    """Full-horizon episodes of the COMPETENCE teams (EPISODES each, the heuristics act) and of
    the SHADOWS (SHADOW_EPISODES each: the env takes uniform random actions while the
    heuristics act on its observations), all lanes of one vmapped scan (one compile).

    Returns per lane: `team` index into COMPETENCE[layout] + SHADOWS, `explore` flag, `ret`
    base return, `actions` / `subgoals` int32 (horizon, 2) that the heuristics chose.
    """
    env = envs.make(f"overcooked-{layout}-v1")  # the game the thresholds were set on
    teams = COMPETENCE[layout] + SHADOWS
    team_stack = _stack([_stack([make_heuristic(layout, n) for n in team]) for team in teams])
    n_comp = len(COMPETENCE[layout])
    team_ix = np.concatenate(
        [np.repeat(np.arange(n_comp), EPISODES)]
        + [np.full(SHADOW_EPISODES, n_comp + i) for i in range(len(SHADOWS))]
    )
    explore = team_ix >= n_comp
    episode_keys = jax.random.split(jax.random.key(0), EPISODES)
    keys = jnp.concatenate(
        [episode_keys] * n_comp
        + [jax.random.split(jax.random.key(1 + i), SHADOW_EPISODES) for i in range(len(SHADOWS))]
    )
    template = make_heuristic(layout, teams[0][0])

    def lane(index, explore, key):
        team = jax.tree.map(lambda leaf: leaf[index], team_stack)
        state, ts = env.reset(key)
        carry = template.init_carry((2,))

        def _env_step(loop, step_key):
            state, ts, carry = loop
            key_act, key_random, key_env = jax.random.split(step_key, 3)
            actions, carry, extras = _seats_act(team, carry, ts.obs, jax.random.split(key_act))
            taken = jnp.where(explore, jax.random.randint(key_random, (2,), 0, 6), actions)
            state, ts = env.step(key_env, state, taken)
            return (state, ts, carry), (ts.reward[0], actions, extras["subgoal"])

        steps = jax.random.split(key, env.horizon)
        _, (reward, actions, subgoals) = jax.lax.scan(_env_step, (state, ts, carry), steps)
        return reward.sum(), actions, subgoals

    ret, actions, subgoals = jax.jit(jax.vmap(lane))(
        jnp.asarray(team_ix), jnp.asarray(explore), keys
    )
    return {
        "team": team_ix,
        "explore": explore,
        "ret": np.asarray(ret),
        "actions": np.asarray(actions),
        "subgoals": np.asarray(subgoals),
    }


@pytest.mark.parametrize("layout", OVERCOOKED_LAYOUTS)
def test_competence(layout):
    out = _rollouts(layout)
    report = []
    for i, (a, b) in enumerate(COMPETENCE[layout]):
        ret = out["ret"][out["team"] == i]
        assert ret.shape == (EPISODES,)
        soup = float(np.mean(ret > 0))
        report.append((a, b, soup, float(ret.mean())))
        print(f"{layout} {a} + {b}: soup in {soup:.0%} of episodes, mean return {ret.mean():.1f}")
    for a, b, soup, mean in report:
        assert soup >= 0.9, f"{layout}: {a} + {b} delivered in {soup:.0%} (mean {mean:.1f})"


@pytest.mark.parametrize("layout", OVERCOOKED_LAYOUTS)
def test_actions_valid_on_random_rollouts(layout):
    out = _rollouts(layout)
    actions, subgoals = out["actions"], out["subgoals"]
    assert actions.dtype == np.int32 and subgoals.dtype == np.int32
    assert np.all((actions >= 0) & (actions < 6))
    assert np.all((subgoals >= 0) & (subgoals < len(SUBGOALS)))
    # the shadow lanes: every role in both seats saw SHADOW_EPISODES random episodes
    shadow = out["explore"]
    assert actions[shadow].shape == (len(SHADOWS) * SHADOW_EPISODES, 400, 2)
    # and they did not just idle (random play rarely cooks a soup, so few sub-goals show)
    assert len(np.unique(subgoals[shadow])) >= 3


@pytest.mark.parametrize("layout", OVERCOOKED_LAYOUTS)
def test_jit_vmap_1024_envs(layout):
    env = envs.make(layout)
    keys = jax.random.split(jax.random.key(4), 1024)
    roles = [overcooked_heuristic(layout, r, 0.5) for r in ("onion", "plate", "independent")]
    for policy in roles:
        assert isinstance(policy, Policy) and isinstance(policy, OvercookedHeuristic)
    trivial = [overcooked_heuristic(layout, r) for r in ("random", "static")]

    @functools.partial(jax.jit, compiler_options=FAST_COMPILE)
    def first_acts(team, keys):
        _, ts = jax.vmap(env.reset)(keys)
        obs = ts.obs[:, 0]

        def one_role(policy):
            carry = policy.init_carry((1024,))
            return jax.vmap(policy.act, (None, 0, 0, 0))(None, carry, obs, keys)

        others = [jax.vmap(p.act, (None, None, 0, 0))(None, (), obs, keys) for p in trivial]
        return jax.vmap(one_role)(team), others

    (a, carry, extras), others = first_acts(_stack(roles), keys)
    assert a.shape == (3, 1024) and a.dtype == jnp.int32
    assert bool(jnp.all((a >= 0) & (a < 6)))
    assert extras["subgoal"].shape == (3, 1024)
    assert bool(jnp.all(carry.started))
    assert carry.own_items.shape == (3, 1024, env.height * env.width)
    for b, _, _ in others:
        assert b.shape == (1024,) and b.dtype == jnp.int32
        assert bool(jnp.all((b >= 0) & (b < 6)))
    # a carry resets where episodes ended
    one = jax.tree.map(lambda leaf: leaf[0], carry)
    done = jnp.arange(1024) % 2 == 0
    reset = reset_carry_where(roles[0], done, one)
    assert bool(jnp.all(reset.started == ~done))


# ---------------------------------------------------------------------- hand-built states
# cramped_room (x right, y down):      forced_coord:
#   WWPWW   pot (2,0)                    WWWPW   pots (3,0), (4,1)
#   O...O   onion piles (0,1), (4,1)     O.W.P   left floor x=1, right floor x=3
#   W...W                                O.W.W   dividing counters (2,1), (2,2), (2,3)
#   WBWXW   plates (1,3), delivery (3,3) B.W.W
#                                        WWWXW   delivery (3,4)
N, S, E, W = 0, 1, 2, 3  # facings: up, down, right, left


@functools.cache
def _act_fn(layout: str):
    """One jit per layout for every role and p (they are leaves of the policy)."""
    del layout  # part of the cache key: one compiled function per grid shape
    return jax.jit(lambda pol, c, o, k: pol.act(None, c, o, k), compiler_options=FAST_COMPILE)


@functools.cache
def _step_fn(layout: str):
    return jax.jit(envs.make(layout).step, compiler_options=FAST_COMPILE)


@functools.cache
def _observe_fn(layout: str):
    return jax.jit(envs.make(layout).observe, compiler_options=FAST_COMPILE)


def _obs(layout, pos, facing, held=("", ""), pot=None, onions=(), plates=(), seat=0):
    """Seat `seat`'s observation of a hand-built state; `held` per seat in "", "onion",
    "plate", "dish"; `pot` a list of JaxMARL pot statuses (23 empty, 20 - k cooking, 0 ready)."""
    env = envs.make(layout)
    ids = {"": oc.EMPTY, "onion": oc.ONION, "plate": oc.PLATE, "dish": oc.DISH}
    inner = env.make_inner(
        agent_pos=pos,
        agent_dir_idx=facing,
        agent_inv=[ids[h] for h in held],
        pot_status=pot,
        onion_pos=onions or None,
        plate_pos=plates or None,
    )
    state = EnvState(inner=inner, episode_return=jnp.zeros(2, jnp.float32))
    env.validate(state)
    return state, _observe_fn(layout)(state).obs[seat]


def _carry(policy, started=False, prev_pos=0, prev_action=STAY, prev_held=0, drop_intent=False):
    carry = policy.init_carry(())
    return carry._replace(
        started=jnp.asarray(started),
        prev_pos=jnp.asarray(prev_pos, jnp.int32),
        prev_action=jnp.asarray(prev_action, jnp.int32),
        prev_held=jnp.asarray(prev_held, jnp.int32),
        drop_intent=jnp.asarray(drop_intent),
    )


def _act(policy, obs, carry=None, seed=0):
    carry = policy.init_carry(()) if carry is None else carry
    a, carry, extras = _act_fn(policy.layout)(policy, carry, obs, jax.random.key(seed))
    return int(a), carry, int(extras["subgoal"])


def test_onion_agent_fills_a_pot():
    onion = overcooked_heuristic("cramped_room", "onion")
    # holding an onion below the empty pot: facing it -> interact; facing left -> turn up
    _, obs = _obs("cramped_room", [[2, 1], [1, 2]], [N, N], held=("onion", ""))
    assert _act(onion, obs)[::2] == (INTERACT, FILL_POT)
    _, obs = _obs("cramped_room", [[2, 1], [1, 2]], [W, N], held=("onion", ""))
    assert _act(onion, obs)[::2] == (UP, FILL_POT)
    # a cooking pot takes no onion: nothing to do
    _, obs = _obs("cramped_room", [[2, 1], [1, 2]], [N, N], held=("onion", ""), pot=[10])
    assert _act(onion, obs)[::2] == (STAY, IDLE)
    # empty hands at (3,1): the nearest onion source is the pile (4,1) to the right
    _, obs = _obs("cramped_room", [[3, 1], [1, 2]], [N, N])
    assert _act(onion, obs)[::2] == (RIGHT, FETCH_ONION)


def test_plate_agent_waits_takes_soup_and_delivers():
    plate = overcooked_heuristic("cramped_room", "plate")
    # plate in hand below a cooking pot, facing it: wait; once ready: take the soup
    _, obs = _obs("cramped_room", [[2, 1], [1, 2]], [N, N], held=("plate", ""), pot=[5])
    assert _act(plate, obs)[::2] == (STAY, WAIT_FOR_SOUP)
    _, obs = _obs("cramped_room", [[2, 1], [1, 2]], [N, N], held=("plate", ""), pot=[0])
    assert _act(plate, obs)[::2] == (INTERACT, TAKE_SOUP)
    # a dish at (1,1), partner at (3,1): delivery (3,3) is used from (3,2), 3 steps away;
    # first moves down (to (1,2)) and right (to (2,1)) tie, and ties go up, down, right, left
    _, obs = _obs("cramped_room", [[1, 1], [3, 1]], [N, N], held=("dish", ""))
    assert _act(plate, obs)[::2] == (DOWN, DELIVER)
    # with the partner on (1,2) the way down is blocked: right
    _, obs = _obs("cramped_room", [[1, 1], [1, 2]], [N, N], held=("dish", ""))
    assert _act(plate, obs)[::2] == (RIGHT, DELIVER)
    # at (3,2) facing the delivery cell: interact
    _, obs = _obs("cramped_room", [[3, 2], [1, 1]], [S, N], held=("dish", ""))
    assert _act(plate, obs)[::2] == (INTERACT, DELIVER)


def test_p1_agent_places_a_fresh_item_on_the_counter_it_faces():
    # at (1,2) facing the bare counter (0,2) with an onion just taken (a fresh carry): p = 1
    # places it there; p = 0 turns to the pot instead (up the column to (2,1): right or up)
    _, obs = _obs("cramped_room", [[1, 2], [3, 1]], [W, N], held=("onion", ""))
    placer = overcooked_heuristic("cramped_room", "onion", 1.0)
    action, carry, subgoal = _act(placer, obs)
    assert (action, subgoal) == (INTERACT, PLACE) and bool(carry.drop_intent)
    action, carry, subgoal = _act(overcooked_heuristic("cramped_room", "onion", 0.0), obs)
    assert subgoal == FILL_POT and action in (UP, RIGHT) and not bool(carry.drop_intent)


def test_p09_agent_does_not_take_back_the_onion_it_placed():
    env = envs.make("cramped_room")
    agent = overcooked_heuristic("cramped_room", "onion", 0.9)
    cell = 2 * env.width + 1  # (1,2)
    # it holds an onion it decided to place (drop_intent), facing the bare counter (0,2)
    state, obs = _obs("cramped_room", [[1, 2], [3, 1]], [W, N], held=("onion", ""))
    carry = _carry(agent, True, cell, LEFT, prev_held=1, drop_intent=True)  # 1 = ONION
    action, carry, subgoal = _act(agent, obs, carry)
    assert (action, subgoal) == (INTERACT, PLACE)
    state, ts = _step_fn("cramped_room")(
        jax.random.key(0), state, jnp.asarray([action, STAY], jnp.int32)
    )
    assert int(state.inner.agent_inv[0]) == oc.EMPTY  # the onion is on (0,2) now
    # next step: still facing its own onion, it goes for the pile instead of taking it back
    action, carry, subgoal = _act(agent, ts.obs[0], carry)
    assert bool(carry.own_items[2 * env.width + 0])
    assert subgoal == FETCH_ONION and action != INTERACT
    # an onion the partner left there is fair game: same cell, fresh carry -> interact
    _, obs = _obs("cramped_room", [[1, 2], [3, 1]], [W, N], onions=[[0, 2]])
    assert _act(agent, obs)[::2] == (INTERACT, FETCH_ONION)


def test_stuck_agent_hands_items_over_on_forced_coord():
    # seat 0 on the left half holds an onion it took earlier (not fresh); it can reach no pot.
    # With p = 1 it places it on the dividing counter (2,2) it faces; with p = 0 it idles.
    _, obs = _obs("forced_coord", [[1, 2], [3, 2]], [E, W], held=("onion", ""))
    cell = 2 * 5 + 1
    for p, expected in ((1.0, (INTERACT, PLACE)), (0.0, (STAY, IDLE))):
        agent = overcooked_heuristic("forced_coord", "independent", p)
        carry = _carry(agent, True, cell, INTERACT, prev_held=1)
        assert _act(agent, obs, carry)[::2] == expected, p
    # it never places on an outer counter, which the right half cannot reach: at (1,1) facing
    # up (the counter (1,0)) it turns right to the dividing counter (2,1)
    _, obs = _obs("forced_coord", [[1, 1], [3, 2]], [N, W], held=("onion", ""))
    agent = overcooked_heuristic("forced_coord", "independent", 1.0)
    carry = _carry(agent, True, 1 * 5 + 1, INTERACT, prev_held=1)
    assert _act(agent, obs, carry)[::2] == (RIGHT, PLACE)
    # the right half fetches onions from the divider
    right = overcooked_heuristic("forced_coord", "independent", 0.6)
    _, obs = _obs("forced_coord", [[1, 1], [3, 2]], [N, W], onions=[[2, 2]], seat=1)
    assert _act(right, obs)[::2] == (INTERACT, FETCH_ONION)


def test_idle_agent_yields_to_a_partner_trying_to_pass():
    # the onion agent idles on (2,1) (the pot is cooking, its hands are empty); the partner on
    # (2,2) faces it and did not move: half of the time it sidesteps to (1,1) or (3,1),
    # never into the partner
    agent = overcooked_heuristic("cramped_room", "onion")
    _, obs = _obs("cramped_room", [[2, 1], [2, 2]], [N, N], pot=[10])
    me, partner = 1 * 5 + 2, 2 * 5 + 2
    carry = _carry(agent, True, me, STAY)._replace(partner_prev_pos=jnp.asarray(partner))
    actions = [_act(agent, obs, carry, seed)[0] for seed in range(40)]
    assert set(actions) <= {STAY, LEFT, RIGHT}
    assert 8 <= sum(a != STAY for a in actions) <= 32
    # a partner that just arrived (it moved) is not in the way yet
    moved = carry._replace(partner_prev_pos=jnp.asarray(partner + 1))
    assert {_act(agent, obs, moved, seed)[0] for seed in range(10)} == {STAY}


def test_random_and_static():
    _, obs = _obs("cramped_room", [[2, 1], [2, 2]], [N, N])
    static = make_heuristic("cramped_room", "static")
    random = make_heuristic("cramped_room", "random")
    assert static.init_carry((4,)) == () and random.init_carry(()) == ()
    keys = jax.random.split(jax.random.key(0), 600)
    a_static = jax.vmap(static.act, (None, None, None, 0))(None, (), obs, keys)[0]
    a_random = jax.vmap(random.act, (None, None, None, 0))(None, (), obs, keys)[0]
    assert a_static.dtype == jnp.int32 and set(np.asarray(a_static).tolist()) == {STAY}
    counts = np.bincount(np.asarray(a_random), minlength=6)
    assert a_random.dtype == jnp.int32 and counts.shape == (6,) and counts.min() > 60


def test_path_costs_match_a_hand_count():
    # 3x4 grid, a wall at (row 1, col 1) and (row 1, col 2); source at (0, 0):
    #   S . . .      costs 1 2 3 4
    #   . # # .            2 - - 5
    #   . . . .            3 4 5 6
    free = np.ones((3, 4), bool)
    free[1, 1:3] = False
    cost = jnp.asarray(np.where(free, 1, 10_000).reshape(-1))
    source = jnp.zeros(12, bool).at[0].set(True)
    got = np.asarray(path_costs(cost, source, 4, sweeps=10)).reshape(3, 4)
    want = np.array([[1, 2, 3, 4], [2, 10_000, 10_000, 5], [3, 4, 5, 6]])
    np.testing.assert_array_equal(got, want)
    table = neighbour_table(3, 4)
    assert table[0].tolist() == [12, 4, 1, 12] and table[11].tolist() == [7, 12, 12, 10]


# ---------------------------------------------------------------------- names and factory
def test_make_heuristic_resolves_the_paper_names():
    for task_id, names in PAPER_HEURISTICS.items():
        for name in names:
            policy = make_heuristic(task_id, name)
            assert isinstance(policy, Policy)
            assert policy.name == name, (task_id, name)
    fc = make_heuristic("forced_coord", "independent_agent_0.6")
    assert isinstance(fc, OvercookedHeuristic) and (fc.role, fc.p) == (2, 0.6)
    assert make_heuristic("overcooked-cramped_room-v1", "onion_agent_0.1").name == (
        "onion_agent_0.1"
    )
    assert make_heuristic("coord_ring", "plate_agent_0.25").name == "plate_agent_0.25"
    assert make_heuristic("cramped_room", "random").name == "random"
    lexi = make_heuristic("lbf", "lexi")
    assert isinstance(lexi, SequentialAgent) and lexi.name == "seq_agent_lexi"
    assert make_heuristic("lbf-4p-v1", "seq_agent_col").num_agents == 4
    assert heuristic_names("cramped_room")[-2:] == ("random", "static")


def test_make_heuristic_rejects_unknown_names():
    with pytest.raises(ValueError) as err:
        make_heuristic("cramped_room", "onoin_agent_0")
    message = str(err.value)
    assert "unknown heuristic 'onoin_agent_0' for overcooked-cramped_room-v2" in message
    assert "independent_agent_0.4" in message and "static" in message
    assert "Did you mean 'onion_agent_0.1'?" in message
    with pytest.raises(ValueError, match="seq_agent_lexi, seq_agent_rlexi"):
        make_heuristic("lbf-v1", "seq_agent_diagonal")
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        make_heuristic("forced_coord", "independent_agent_1.5")
    with pytest.raises(ValueError, match="unknown heuristic 'onion_agent_x'"):
        make_heuristic("forced_coord", "onion_agent_x")
    with pytest.raises(ValueError, match="no heuristic teammates for sabotage-v1"):
        make_heuristic("sabotage", "static")
    with pytest.raises(ValueError, match="lbf-po-v1"):
        make_heuristic("lbf-po-v1", "lexi")
    with pytest.raises(UnknownTaskError):
        make_heuristic("cramped_rom", "static")
    with pytest.raises(ValueError, match="choose one of onion, plate, independent"):
        overcooked_heuristic("cramped_room", "soup")
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        overcooked_heuristic("cramped_room", "onion", -0.1)
    with pytest.raises(ValueError, match="takes no p"):
        overcooked_heuristic("cramped_room", "static", 0.5)
    with pytest.raises(ValueError, match="not an Overcooked task"):
        overcooked_heuristic("lbf-v1", "onion")
    with pytest.raises(ValueError, match="vmap"):
        overcooked_heuristic("cramped_room", "onion").act(
            None, OvercookedCarry(*[None] * 7), jnp.zeros(3), jax.random.key(0)
        )


@pytest.mark.slow
def test_benchmark_script_runs(capsys):
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "overcooked_heuristics.py"
    spec = importlib.util.spec_from_file_location("overcooked_heuristics", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--layouts", "cramped_room", "--episodes", "2"]) == 0
    assert "onion_agent_0.1" in capsys.readouterr().out
