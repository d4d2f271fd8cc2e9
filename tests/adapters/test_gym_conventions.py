"""Gymnasium conventions of the shells (issue 30, part 4): `spec.max_episode_steps`, the LBF action
mask in `info`, teammates by name, the `ansi` render mode and the jitted vector env
(`aht_bench.adapters.vector.EgoVectorEnv`, each id's `vector_entry_point`).

Gymnasium 1.x ships no checker for vector envs, so `_check_vector_env` writes the equivalent
assertions (spaces, reset/step shapes and dtypes, determinism, same-step auto-reset), and the
vector env is stepped side by side with Gymnasium's own `SyncVectorEnv` of `EgoEnv`s
(reference implementation: the same seeds and actions must give the same transitions).
"""

from __future__ import annotations

import warnings

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner
from gymnasium.utils.env_checker import check_env, data_equivalence
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from aht_bench import envs
from aht_bench.adapters.gym import EgoEnv
from aht_bench.adapters.pz import ParallelEnv
from aht_bench.adapters.vector import EgoVectorEnv

H, T, S = 0, 1, 2  # sabotage actions: H/H pays 1 per step, S pays -1 and ends the episode
LBF_MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right as (row, col) steps


def _gymnasium_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "WARN:" in str(w.message)]


class AlwaysHold:
    """A deterministic protocol policy for the sabotage game: always H."""

    def init_carry(self, batch_shape):
        return ()

    def act(self, params, carry, obs, key):
        return jnp.asarray(H, jnp.int32), carry, {}


@pytest.fixture(scope="module")
def sabotage_net():
    from aht_bench.policies import MLPActorCritic

    net = MLPActorCritic(30, 3)  # sabotage: obs_dim 30, 3 actions
    return net, net.init(jax.random.PRNGKey(0))


# ------------------------------------------------------------------ spec.max_episode_steps
def test_every_id_declares_its_registered_horizon_and_a_vector_entry_point():
    from aht_bench.envs.registry import registered_horizon

    for task_id in envs.registered_ids():
        spec = gymnasium.spec(f"aht_bench/{task_id}")
        assert spec.max_episode_steps == registered_horizon(task_id) is not None, task_id
        assert spec.vector_entry_point == "aht_bench.adapters.vector:EgoVectorEnv"
    # the registered horizon is the built task's (every id: the slow test below)
    for task_id in ("sabotage-v1", "matrix-regret-v1", "lbf-v1", "overcooked-cramped_room-v2"):
        assert gymnasium.spec(f"aht_bench/{task_id}").max_episode_steps == (
            envs.make(task_id).horizon
        )
    assert gymnasium.spec("aht_bench/overcooked-cramped_room-v2").max_episode_steps == 400
    assert gymnasium.spec("aht_bench/sabotage-v1").max_episode_steps == 5


@pytest.mark.slow  # builds every task (JaxMARL's maps for every layout)
def test_every_id_max_episode_steps_is_the_built_tasks_horizon():
    for task_id in envs.registered_ids():
        spec = gymnasium.spec(f"aht_bench/{task_id}")
        assert spec.max_episode_steps == envs.make(task_id).horizon, task_id


# ------------------------------------------------------------------ teammates by name
def test_check_env_passes_with_a_heuristic_named_through_gymnasium_make():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gymnasium.make("aht_bench/lbf-v1", teammate="lexi", seat=1)
        check_env(env.unwrapped)  # with a spec: also rebuilds it in rgb_array and ansi modes
    assert not _gymnasium_warnings(caught), _gymnasium_warnings(caught)
    from aht_bench.policies.heuristics import make_heuristic

    ego = env.unwrapped
    assert isinstance(ego, EgoEnv) and ego.teammate_name == "lexi"
    assert repr(ego.teammate) == repr(make_heuristic("lbf-v1", "seq_agent_lexi"))
    assert EgoEnv("lbf-v1", teammate="random").teammate is None


def test_check_env_passes_with_a_heldout_member_named_through_gymnasium_make():
    from aht_bench import heldout

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gymnasium.make("aht_bench/lbf-v1", teammate="heldout:v2:ippo_mlp_0")
        check_env(env.unwrapped)
    assert not _gymnasium_warnings(caught), _gymnasium_warnings(caught)
    policy, params = heldout.member("lbf-v1", "ippo_mlp_0", "v2")
    ego = env.unwrapped
    assert isinstance(ego, EgoEnv) and type(ego.teammate) is type(policy)
    assert data_equivalence(jax.device_get(ego.teammate_params), jax.device_get(params))
    # the named member plays exactly as the same member passed as (policy, params)
    by_object = EgoEnv("lbf-v1", teammate=policy, teammate_params=params)
    for e in (ego, by_object):
        e.action_space.seed(4)
    first = [ego.reset(seed=4)] + [ego.step(a) for a in [5, 1, 3, 0, 4, 2, 5, 5]]
    again = [by_object.reset(seed=4)] + [by_object.step(a) for a in [5, 1, 3, 0, 4, 2, 5, 5]]
    assert data_equivalence(first, again, exact=True)


@pytest.mark.parametrize(
    ("task", "name", "needles"),
    [
        ("lbf-v1", "lexx", ["unknown heuristic 'lexx'", "seq_agent_lexi", "random", "heldout:"]),
        ("lbf-v1", "heldout:v9:ippo_mlp_0", ["no teammate set 'v9'", "dev, v1, v2"]),
        (
            "lbf-v1",
            "heldout:v2:ippo_mlp_9",
            ["no member 'ippo_mlp_9'", "Did you mean 'ippo_mlp_", "seq_agent_farthest"],
        ),
        ("lbf-v1", "heldout:v2", ["not of the form heldout:<version>:<member>", "v2"]),
        (
            "sabotage-v1",
            "lexi",
            ["no heuristic teammates for sabotage-v1", "random", "no teammate sets"],
        ),
    ],
)
def test_a_bad_teammate_name_is_a_value_error_listing_the_choices(task, name, needles):
    with pytest.raises(ValueError) as caught:
        gymnasium.make(f"aht_bench/{task}", teammate=name)
    for needle in needles:
        assert needle in str(caught.value), (needle, str(caught.value))


def test_a_named_teammate_brings_its_own_params():
    with pytest.raises(ValueError, match="leave teammate_params=None"):
        EgoEnv("lbf-v1", teammate="lexi", teammate_params={"w": 1})


def test_check_agent_takes_a_heldout_member_as_teammate():
    from aht_bench.cli import main

    agent = "agents/examples/random_agent.py"
    args = ["check-agent", agent, "--task", "lbf-v1", "--no-isolate", "--steps", "3"]
    result = CliRunner().invoke(main, [*args, "--teammate", "heldout:v2:brdiv-conf1_0"])
    assert result.exit_code == 0, result.output
    assert "teammate heldout:v2:brdiv-conf1_0" in result.output
    result = CliRunner().invoke(main, [*args, "--teammate", "heldout:v2:brdiv"])
    assert result.exit_code == 2 and "no member 'brdiv'" in result.output


# ------------------------------------------------------------------ LBF action mask
def _legal_lbf_actions(state, agent: int) -> list[int]:
    """noop, up, down, left, right, load: 1 where legal, from the rules (not Jumanji's code):
    a move needs an on-grid cell without another agent or uneaten food, a load an uneaten food
    4-adjacent, noop is always legal."""
    inner = jax.device_get(state.inner)
    row, col = (int(v) for v in inner.agents.position[agent])
    agents = {tuple(int(v) for v in p) for i, p in enumerate(inner.agents.position) if i != agent}
    foods = {
        tuple(int(v) for v in p)
        for p, eaten in zip(inner.food_items.position, inner.food_items.eaten, strict=True)
        if not eaten
    }
    legal = [1]
    for dr, dc in LBF_MOVES:
        cell = (row + dr, col + dc)
        on_grid = 0 <= cell[0] < 7 and 0 <= cell[1] < 7
        legal.append(int(on_grid and cell not in agents and cell not in foods))
    legal.append(int(any(abs(row - r) + abs(col - c) == 1 for r, c in foods)))
    return legal


def test_lbf_action_mask_in_info_matches_the_legal_actions():
    env = ParallelEnv("lbf-4p-v1")
    rng = np.random.default_rng(0)
    _, infos = env.reset(seed=3)
    seen = []
    for _ in range(40):
        for i, agent in enumerate(env.possible_agents):
            mask = infos[agent]["action_mask"]
            assert mask.dtype == np.int8 and mask.shape == (6,)
            assert mask.tolist() == _legal_lbf_actions(env.env_state, i)
            seen.append(mask)
        if not env.agents:
            break
        actions = {a: int(rng.integers(6)) for a in env.agents}
        _, _, _, _, infos = env.step(actions)
    seen = np.stack(seen)
    assert (seen[:, 1:5] == 0).any() and (seen[:, 5] == 1).any()  # the states exercise the mask

    # The Gymnasium shell gives its own seat's mask, usable by Discrete.sample(mask=...).
    ego = EgoEnv("lbf-v1", teammate="lexi", seat=1)
    _, info = ego.reset(seed=2)
    for _ in range(10):
        assert info["action_mask"].tolist() == _legal_lbf_actions(ego.env_state, 1)
        action = ego.action_space.sample(mask=info["action_mask"])
        _, _, _, _, info = ego.step(action)


def test_tasks_without_a_mask_put_none_in_info():
    for task_id in ("sabotage-v1", "overcooked-cramped_room-v1"):
        env = EgoEnv(task_id)
        _, info = env.reset(seed=0)
        assert "action_mask" not in info
        assert "action_mask" not in env.step(0)[4]


# ------------------------------------------------------------------ ansi render mode
def test_ansi_renders_lbf_as_a_text_grid():
    env = gymnasium.make("aht_bench/lbf-v1", render_mode="ansi")
    assert env.unwrapped.metadata["render_modes"] == ["rgb_array", "ansi"]
    env.reset(seed=1)
    text = env.render()
    assert isinstance(text, str)
    lines = text.split("\n")
    assert lines[0] == "t=0  return=0" and len(lines) == 8
    grid = [line.split(" ") for line in lines[1:]]
    ego = env.unwrapped
    assert isinstance(ego, EgoEnv) and ego.env_state is not None
    inner = jax.device_get(ego.env_state.inner)
    expected = [[".."] * 7 for _ in range(7)]
    for (r, c), level in zip(inner.food_items.position, inner.food_items.level, strict=True):
        expected[r][c] = f"F{level}"
    for letter, (r, c), level in zip("AB", inner.agents.position, inner.agents.level, strict=True):
        expected[r][c] = f"{letter}{level}"
    assert grid == expected


def test_ansi_renders_overcooked_on_the_documented_map():
    env = EgoEnv("overcooked-cramped_room-v1", render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and env.env_state is not None
    lines = text.split("\n")
    # docs/overcooked.md's cramped_room map, floor blank, the seats written on it
    expected = [list("WWPWW"), list("O   O"), list("W   W"), list("WBWXW")]
    positions = np.asarray(env.env_state.inner.agent_pos)
    for seat, (x, y) in enumerate(positions):
        expected[y][x] = str(seat)
    assert lines[0] == "t=0  return=0"
    assert lines[1:5] == ["".join(row) for row in expected]
    assert lines[5].startswith(f"seat 0 at ({positions[0][0]},{positions[0][1]}) facing ")
    assert lines[5].endswith("holding nothing") and lines[6].endswith("holding nothing")
    assert lines[7] == "pot (2,0): empty"


# ------------------------------------------------------------------ the vector env
def _check_vector_env(make, steps: int = 12) -> None:
    """Gymnasium's API for a vector env, asserted (Gymnasium 1.x has no vector checker)."""
    vec = make()
    n = vec.num_envs
    assert isinstance(vec, gymnasium.vector.VectorEnv)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert isinstance(vec.single_action_space, gymnasium.spaces.Discrete)
    assert vec.observation_space == batch_space(vec.single_observation_space, n)
    assert vec.action_space == batch_space(vec.single_action_space, n)

    obs, info = vec.reset(seed=11)
    assert obs.dtype == np.float32 and obs in vec.observation_space
    for key, value in info.items():
        assert len(value) == n, key
        if key.startswith("_"):
            assert value.dtype == np.bool_ and value.all(), key
    again = make()
    assert data_equivalence((obs, info), again.reset(seed=11), exact=True)

    vec.action_space.seed(11)
    for _ in range(steps):
        actions = vec.action_space.sample()
        out = vec.step(actions)
        assert data_equivalence(out, again.step(actions), exact=True)
        obs, reward, terminated, truncated, info = out
        assert obs.dtype == np.float32 and obs in vec.observation_space
        assert reward.dtype == np.float64 and reward.shape == (n,)
        assert terminated.dtype == truncated.dtype == np.bool_
        assert terminated.shape == truncated.shape == (n,)
        done = terminated | truncated
        if done.any():  # same-step auto-reset: the next episode's first obs, the last one kept
            assert np.array_equal(info["_final_obs"], done)
            assert np.array_equal(info["_final_info"], done)
            for i in np.flatnonzero(done):
                assert info["final_obs"][i] in vec.single_observation_space
            assert (info["time"][done] == 0).all() and (info["episode_return"][done] == 0).all()
        else:
            assert "final_obs" not in info and "final_info" not in info
    vec.close()
    vec.close()  # closing twice is allowed


def _first_episodes_agree(vec, sync, actions: np.ndarray) -> int:
    """Step `vec` and `sync` (a SyncVectorEnv of EgoEnvs, same-step auto-reset) with the same
    seeds and actions: every env's first episode, its final observation and info included, must
    be the same. Returns how many first episodes ended."""
    assert data_equivalence(vec.reset(seed=5), sync.reset(seed=5), exact=True)
    ended = np.zeros(vec.num_envs, bool)
    for a in actions:
        mine, theirs = vec.step(a), sync.step(a)
        live = ~ended
        for k in (1, 2, 3):  # reward, terminated, truncated
            assert np.array_equal(mine[k][live], theirs[k][live])
        done = mine[2] | mine[3]
        going = live & ~done
        assert np.array_equal(mine[0][going], theirs[0][going])
        for key in ("base_reward", "episode_return", "time", "action_mask"):
            if key in theirs[4]:
                assert np.array_equal(mine[4][key][going], theirs[4][key][going]), key
        last = live & done
        if last.any():
            for i in np.flatnonzero(last):
                assert np.array_equal(mine[4]["final_obs"][i], theirs[4]["final_obs"][i])
            for key, value in theirs[4]["final_info"].items():
                assert np.array_equal(mine[4]["final_info"][key][last], value[last]), key
        ended |= done
        if ended.all():
            break
    return int(ended.sum())


def _sync(task: str, num_envs: int, **kwargs):
    return gymnasium.make_vec(
        f"aht_bench/{task}",
        num_envs=num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        **kwargs,
    )


def _vec(task: str, num_envs: int, **kwargs):
    # through make_vec, as _sync: both get the spec's max_episode_steps (the TimeLimit that
    # gymnasium.make wraps each EgoEnv in also flags the horizon step truncated if it terminated)
    return gymnasium.make_vec(
        f"aht_bench/{task}", num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs
    )


def test_the_vector_env_passes_the_vector_api_checks(sabotage_net):
    net, params = sabotage_net

    def make():
        return gymnasium.make_vec(
            "aht_bench/sabotage-v1",
            num_envs=4,
            vectorization_mode="vector_entry_point",
            teammate=net,
            teammate_params=params,
        )

    vec = make()
    assert isinstance(vec, EgoVectorEnv) and vec.spec is not None
    assert vec.spec.id == "aht_bench/sabotage-v1" and vec.max_episode_steps == 5
    _check_vector_env(make)


def test_the_vector_env_steps_like_a_sync_vector_env_of_ego_envs():
    # A deterministic teammate and sabotage's single start state: every episode is defined by
    # the actions alone, so the two agree across auto-resets too, infos included.
    vec = _vec("sabotage-v1", 3, teammate=AlwaysHold(), seat=1, reward="shaped")
    sync = _sync("sabotage-v1", 3, teammate=AlwaysHold(), seat=1, reward="shaped")
    assert data_equivalence(vec.reset(seed=0), sync.reset(seed=0), exact=True)
    rng = np.random.default_rng(1)
    ends = 0
    for _ in range(25):
        actions = rng.choice([H, H, H, T, S], size=3)
        mine, theirs = vec.step(actions), sync.step(actions)
        assert data_equivalence(mine, theirs, exact=True)
        ends += int((mine[2] | mine[3]).sum())
    assert ends >= 5  # several auto-resets were compared


def test_the_vector_env_plays_each_first_episode_of_ego_env_with_a_network_teammate(sabotage_net):
    net, params = sabotage_net
    kwargs = {"teammate": net, "teammate_params": params}
    vec = _vec("sabotage-v1", 6, **kwargs)
    actions = np.full((6, 6), H)  # the ego holds: the (stochastic) teammate decides the ends
    assert _first_episodes_agree(vec, _sync("sabotage-v1", 6, **kwargs), actions) == 6


def test_the_vector_env_truncates_at_max_episode_steps_and_renders():
    vec = EgoVectorEnv(
        "sabotage-v1", num_envs=2, teammate=AlwaysHold(), max_episode_steps=2, render_mode="ansi"
    )
    vec.reset(seed=0)
    first = vec.step(np.array([H, H]))
    assert first[1].tolist() == [1.0, 1.0] and not first[3].any()
    _, reward, terminated, truncated, info = vec.step(np.array([H, H]))
    # H/H twice: return 2, cut by the limit (the game itself runs 5 steps)
    assert truncated.all() and not terminated.any()
    assert info["final_info"]["episode_return"].tolist() == [2.0, 2.0]
    assert vec.render() == ("t=0  -  return=0",) * 2  # both restarted


def test_vector_env_errors_name_the_fix():
    with pytest.raises(TypeError, match="vectorization_mode='sync'"):
        EgoVectorEnv("sabotage-v1", num_envs=2, teammate=lambda obs: 0)
    with pytest.raises(ValueError, match="num_envs must be at least 1"):
        EgoVectorEnv("sabotage-v1", num_envs=0)
    with pytest.raises(ValueError, match="max_episode_steps must be a positive int"):
        EgoVectorEnv("sabotage-v1", max_episode_steps=0)
    with pytest.raises(ValueError, match="unknown heuristic 'lexx'"):
        gymnasium.make_vec("aht_bench/lbf-v1", num_envs=2, teammate="lexx")
    vec = EgoVectorEnv("sabotage-v1", num_envs=2)
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        vec.step(np.array([0, 0]))
    with pytest.raises(ValueError, match="no reset_mask is needed"):
        vec.reset(options={"reset_mask": np.array([True, False])})
    vec.reset(seed=0)
    for bad in (np.array([0, 3]), np.array([0]), np.array([0.0, 1.0]), [[0, 1]]):
        with pytest.raises(ValueError, match=r"actions must be 2 ints in \[0, 3\)"):
            vec.step(bad)
    with pytest.raises(ValueError, match="a list of 2 seeds"):
        vec.reset(seed=[1, 2, 3])


# ------------------------------------------------------------------ the same on the real tasks
@pytest.mark.slow  # compiles the LBF and Overcooked vector steps with their teammates
@pytest.mark.parametrize(
    ("task", "teammate", "steps"),
    [
        ("lbf-v1", "lexi", 100),
        ("lbf-v1", "heldout:v2:ippo_mlp_0", 100),
        ("overcooked-cramped_room-v2", "heldout:v2:ippo_mlp_0", 400),
        ("overcooked-forced_coord-v1", "heldout:v1:ippo_mlp_0", 400),  # a two-sided SeatPair
    ],
)
def test_the_vector_env_agrees_with_ego_envs_on_the_heldout_tasks(task, teammate, steps):
    default = gymnasium.make_vec(f"aht_bench/{task}", num_envs=3, teammate=teammate, seat=1)
    assert isinstance(default, EgoVectorEnv)  # the default vectorization is the entry point
    vec = _vec(task, 3, teammate=teammate, seat=1)
    sync = _sync(task, 3, teammate=teammate, seat=1)
    actions = np.random.default_rng(2).integers(6, size=(steps, 3))
    assert _first_episodes_agree(vec, sync, actions) == 3


@pytest.mark.slow
def test_check_env_passes_with_an_overcooked_heldout_member():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gymnasium.make(
            "aht_bench/overcooked-cramped_room-v2", teammate="heldout:v2:ippo_mlp_0"
        )
        check_env(env.unwrapped)
    assert not _gymnasium_warnings(caught), _gymnasium_warnings(caught)
