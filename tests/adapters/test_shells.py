"""The Gymnasium and PettingZoo shells, checked over every registered id with the upstream
checkers (gymnasium `check_env`, pettingzoo `parallel_api_test`/`parallel_seed_test`).

Compile time dominates: every shell of a task id reuses one jitted reset/step
(`aht_bench.envs.compiled.compiled_task`), so each task compiles once for the whole file.
"""

from __future__ import annotations

import warnings

import gymnasium
import jax
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from pettingzoo.test import parallel_api_test, parallel_seed_test

from aht_bench import envs
from aht_bench.adapters.gym import EgoEnv, register_gymnasium_envs
from aht_bench.adapters.pz import ParallelEnv
from aht_bench.envs.compiled import compiled_task

TASK_IDS = envs.registered_ids()
RANDOM_STEPS = 300
H, T, S = 0, 1, 2  # sabotage actions


def _gymnasium_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    # Gymnasium's checker reports problems through logger.warn, whose messages start "WARN:".
    return [str(w.message) for w in caught if "WARN:" in str(w.message)]


# ------------------------------------------------------------------ upstream checkers
@pytest.mark.parametrize("seat", [0, 1])
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_gymnasium_check_env(task_id, seat):
    env = EgoEnv(task_id, seat=seat)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    problems = [m for m in _gymnasium_warnings(caught) if "not having a spec" not in m]
    assert not problems, problems


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_gymnasium_check_env_through_make_checks_render_modes(task_id):
    # With a spec, check_env also builds the env in every declared render mode and renders it.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gymnasium.make(f"aht_bench/{task_id}")  # its PassiveEnvChecker checks the spaces
        assert env.unwrapped.metadata["render_modes"], f"{task_id} declares no render mode"
        check_env(env.unwrapped)
    problems = _gymnasium_warnings(caught)
    if task_id.replace("-v1", "-v2") in TASK_IDS and task_id.endswith("-v1"):
        # Gymnasium's own versioning notice for an id with a newer version (v1 Overcooked): true
        # and wanted; anything else is a problem.
        notice = f"aht_bench/{task_id} is out of date. You should consider upgrading to version"
        assert any(notice in m for m in problems), problems
        problems = [m for m in problems if notice not in m]
    assert not problems, problems


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_pettingzoo_parallel_api(task_id):
    env = ParallelEnv(task_id)
    # Longer than an episode, so the test sees `agents` emptied at the end.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=env.task.horizon + 2)
        parallel_seed_test(lambda: ParallelEnv(task_id), num_cycles=20)
    problems = [str(w.message) for w in caught if "pettingzoo" in w.filename]
    assert not problems, problems
    assert env.agents == []


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_observations_stay_inside_observation_space(task_id):
    env = ParallelEnv(task_id, reward="shaped", shaped_coef=0.5)
    for agent in env.possible_agents:
        env.action_space(agent).seed(1)
    obs, _ = env.reset(seed=0)
    for t in range(RANDOM_STEPS):
        for agent, o in obs.items():
            space = env.observation_space(agent)
            assert o.dtype == np.float32 and o.shape == space.shape
            assert o in space, (
                f"{task_id} step {t} {agent}: obs outside observation_bounds() at dims "
                f"{np.flatnonzero((o < space.low) | (o > space.high)).tolist()}"
            )
        if not env.agents:
            obs, _ = env.reset()
            continue
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rewards, _, _, infos = env.step(actions)
        for agent, info in infos.items():
            assert rewards[agent] == info["base_reward"] + 0.5 * info["shaped_reward"]


# ------------------------------------------------------------------ Gymnasium shell
def test_gymnasium_make_registers_every_task():
    env = gymnasium.make("aht_bench/sabotage-v1")
    obs, info = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape and info["time"] == 0
    assert env.spec is not None and env.spec.id == "aht_bench/sabotage-v1"
    env.close()
    registered = {f"aht_bench/{t}" for t in TASK_IDS}
    assert registered <= set(gymnasium.registry)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # re-registering would warn "Overriding environment"
        register_gymnasium_envs()
    # Constructor arguments pass through gymnasium.make.
    env = gymnasium.make("aht_bench/matrix-regret-v1", teammate=lambda obs: 1, seat=0)
    env.reset(seed=0)
    assert env.step(0)[1] == 1.0  # ego A, teammate Y: payoff[A][Y] = 1


def _episode(env: gymnasium.Env, seed: int, steps: int) -> list:
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    trace = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        trace += [obs, reward, terminated, truncated, info]
        if terminated or truncated:
            trace.append(env.reset()[0])
    return trace


def test_same_seed_same_episode_different_seed_different_episode():
    # lbf-v1 draws positions and levels at reset and the random teammate from np_random.
    first = _episode(EgoEnv("lbf-v1"), seed=3, steps=120)
    again = _episode(EgoEnv("lbf-v1"), seed=3, steps=120)
    other = _episode(EgoEnv("lbf-v1"), seed=4, steps=120)
    assert data_equivalence(first, again, exact=True)
    assert not data_equivalence(first, other)


def test_teammate_plays_every_other_seat():
    seen = []

    def saboteur(obs):
        seen.append(obs)
        return S

    env = EgoEnv("sabotage-v1", teammate=saboteur)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(H)
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info == {"base_reward": -1.0, "shaped_reward": 0.0, "episode_return": -1.0, "time": 1}
    assert len(seen) == 1 and seen[0].shape == (env.task.obs_dim,)
    assert seen[0].dtype == np.float32

    # Seat 1 is the ego: the teammate sits in seat 0 and sees seat 0's observation.
    calls = []
    env = EgoEnv("lbf-4p-v1", teammate=lambda obs: calls.append(obs) or 0, seat=1)
    env.reset(seed=0)
    env.step(0)
    assert len(calls) == 3  # seats 0, 2 and 3, each with its own observation of the start state
    start_obs, _ = ParallelEnv("lbf-4p-v1").reset(seed=0)  # same seed, same start state
    for call, agent in zip(calls, ["agent_0", "agent_2", "agent_3"], strict=True):
        np.testing.assert_array_equal(call, start_obs[agent])


def test_sabotage_hand_worked_episode():
    # H/H every step: payoff 1 per step for 5 steps; the game ends by termination, not horizon.
    env = EgoEnv("sabotage-v1", teammate=lambda obs: H, seat=1, render_mode="ansi")
    env.reset(seed=0)
    results = [env.step(H)[1:4] for _ in range(5)]
    assert results == [(1.0, False, False)] * 4 + [(1.0, True, False)]
    assert env.render() == "t=5  H/H H/H H/H H/H H/H  return=5"
    with pytest.raises(gymnasium.error.ResetNeeded, match="episode has ended"):
        env.step(H)


def test_gymnasium_and_pettingzoo_shells_agree():
    # Same seed, same joint actions: the two shells step the same episode (lbf-v1, ego in seat 1).
    ego_actions = [1, 4, 5, 2, 3, 0, 5, 1] * 5
    teammate_actions = iter([2, 3, 5, 1, 0, 4, 5, 2] * 5)
    ego = EgoEnv("lbf-v1", teammate=lambda obs: next(teammate_actions), seat=1)
    par = ParallelEnv("lbf-v1")
    ego_obs, _ = ego.reset(seed=11)
    par_obs, _ = par.reset(seed=11)
    teammate_replay = iter([2, 3, 5, 1, 0, 4, 5, 2] * 5)
    for a in ego_actions:
        np.testing.assert_array_equal(ego_obs, par_obs["agent_1"])
        ego_obs, reward, terminated, truncated, info = ego.step(a)
        par_obs, rewards, terms, truncs, infos = par.step(
            {"agent_0": next(teammate_replay), "agent_1": a}
        )
        assert (reward, terminated, truncated) == (
            rewards["agent_1"],
            terms["agent_1"],
            truncs["agent_1"],
        )
        # LBF infos carry the action mask, an array: compare as Gymnasium's checker does
        assert data_equivalence(info, infos["agent_1"], exact=True)


def test_shells_share_one_compiled_function_per_task():
    for _ in range(3):
        env = EgoEnv("sabotage-v1")
        env.reset(seed=0)
        env.step(0)
    par = ParallelEnv("sabotage")  # an alias shares the id's compiled functions
    par.reset(seed=0)
    par.step({"agent_0": 0, "agent_1": 0})
    task = compiled_task("sabotage-v1")
    assert env._task is par._task is task
    assert task.reset._cache_size() == 1 and task.step._cache_size() == 1


def test_rgb_render_through_gymnasium_make():
    env = gymnasium.make("aht_bench/lbf-v1", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
    assert frame.ndim == 3 and frame.shape[2] == 3


# ------------------------------------------------------------------ errors that name the fix
def test_bad_arguments_raise_errors_naming_the_problem():
    with pytest.raises(envs.UnknownTaskError, match="Did you mean 'sabotage-v1'"):
        EgoEnv("sabotage-v2")
    with pytest.raises(envs.UnknownTaskError, match="Did you mean"):
        ParallelEnv("lbf-v2")
    with pytest.raises(ValueError, match=r"seat 2 is out of range.*2 seats"):
        EgoEnv("sabotage-v1", seat=2)
    with pytest.raises(TypeError, match="seat must be an int"):
        EgoEnv("sabotage-v1", seat="1")  # type: ignore[arg-type]  (the wrong type on purpose)
    with pytest.raises(ValueError, match="reward='dense' is not a reward mode; use 'base'"):
        EgoEnv("sabotage-v1", reward="dense")
    with pytest.raises(ValueError, match="reward='dense' is not a reward mode"):
        ParallelEnv("sabotage-v1", reward="dense")
    with pytest.raises(ValueError, match="shaped_coef must be a finite number"):
        EgoEnv("sabotage-v1", reward="shaped", shaped_coef=float("nan"))
    with pytest.raises(TypeError, match="teammate must be a policy .* or None"):
        EgoEnv("sabotage-v1", teammate=2)
    with pytest.raises(ValueError, match=r"render_mode='rgb_array' is not supported.*'ansi'"):
        EgoEnv("sabotage-v1", render_mode="rgb_array")

    env = EgoEnv("sabotage-v1", teammate=lambda obs: 7)
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        env.step(0)
    env.reset(seed=0)
    for bad in (3, -1, 1.0, True, np.array([0])):
        with pytest.raises(ValueError, match=r"outside the action space.*\[0, 3\)"):
            _step_fresh(bad)
    with pytest.raises(ValueError, match=r"teammate \(seat 1\) returned 7 is outside"):
        env.step(0)

    par = ParallelEnv("sabotage-v1")
    with pytest.raises(RuntimeError, match="call reset"):
        par.step({"agent_0": 0, "agent_1": 0})
    par.reset(seed=0)
    with pytest.raises(ValueError, match=r"missing \['agent_1'\]"):
        par.step({"agent_0": 0})
    with pytest.raises(ValueError, match=r"unknown \['agent_7'\]"):
        par.step({"agent_0": 0, "agent_1": 0, "agent_7": 0})
    with pytest.raises(ValueError, match="action of agent_1 5 is outside"):
        par.step({"agent_0": 0, "agent_1": 5})
    with pytest.raises(KeyError, match="has no agent 'agent_2'"):
        par.observation_space("agent_2")


def _step_fresh(action):
    env = EgoEnv("sabotage-v1")
    env.reset(seed=0)
    env.step(action)


def test_numpy_actions_are_accepted():
    env = EgoEnv("sabotage-v1", teammate=lambda obs: np.int64(H))
    env.reset(seed=0)
    assert env.step(np.int32(H))[1] == 1.0
    assert env.step(np.array(T))[1] == 0.0


def test_gymnasium_vector_env_runs_the_shell():
    envs_ = gymnasium.make_vec("aht_bench/sabotage-v1", num_envs=3, vectorization_mode="sync")
    obs, _ = envs_.reset(seed=0)
    envs_.action_space.seed(0)
    assert obs.shape == (3, 30) and obs.dtype == np.float32
    for _ in range(7):  # crosses episode ends: the vector env resets the shell itself
        obs, reward, terminated, truncated, info = envs_.step(envs_.action_space.sample())
        # a step on which every sub-env was reset carries reset infos only (no base_reward)
        assert obs.shape == (3, 30) and set(info) >= {"episode_return", "time"}
    envs_.close()


# ------------------------------------------------------------------ protocol-policy teammates
@pytest.mark.parametrize("task_id", ["lbf-v1", "overcooked-forced_coord-v1"])
def test_egoenv_with_a_network_teammate_passes_check_env_and_is_seeded(task_id):
    from aht_bench.policies import MLPActorCritic, RecurrentEgo

    env = envs.make(task_id)
    for policy in (
        MLPActorCritic(env.obs_dim, env.num_actions),
        RecurrentEgo(env.obs_dim, env.num_actions, hidden=16),
    ):
        params = policy.init(jax.random.PRNGKey(0))
        ego = EgoEnv(task_id, teammate=policy, teammate_params=params)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(ego.unwrapped)
        problems = [m for m in _gymnasium_warnings(caught) if "not having a spec" not in m]
        assert not problems, problems

        def episode(seed, ego=ego):
            obs, _ = ego.reset(seed=seed)
            seen = [obs]
            for _ in range(30):
                obs, *_ = ego.step(0)
                seen.append(obs)
            return np.stack(seen)

        np.testing.assert_array_equal(episode(3), episode(3))
        assert len(ego._folded._runners) == env.num_agents - 1


@pytest.mark.parametrize("name", ["lexi", "nearest"])
def test_egoenv_with_an_lbf_heuristic_teammate_plays_with_its_copy(name):
    from aht_bench.policies.heuristics import lbf_heuristic

    ego = EgoEnv("lbf-v1", teammate=lbf_heuristic(name), seat=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(ego.unwrapped)
    problems = [m for m in _gymnasium_warnings(caught) if "not having a spec" not in m]
    assert not problems, problems
    # an ego that copies the heuristic's order and plan eats every food with it
    ego_policy = lbf_heuristic(name, order_from="partner") if name == "nearest" else None
    from aht_bench.policies import PolicyRunner

    mate = PolicyRunner(ego_policy or lbf_heuristic(name), None)
    obs, _ = ego.reset(seed=5)
    mate.reset()
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = ego.step(mate.act(obs))
        total += reward
        done = terminated or truncated
    assert total == pytest.approx(0.5)


def test_egoenv_with_a_loaded_network_teammate_passes_check_env(tmp_path):
    from aht_bench.policies import MLPActorCritic
    from aht_bench.policies.io import load_policy, save_policy

    env = envs.make("overcooked-cramped_room-v1")
    policy = MLPActorCritic(env.obs_dim, env.num_actions)
    save_policy(tmp_path / "mate", policy, policy.init(jax.random.PRNGKey(3)))
    loaded, params = load_policy(tmp_path / "mate")
    ego = EgoEnv(env.task_id, teammate=loaded, teammate_params=params, seat=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(ego.unwrapped)
    problems = [m for m in _gymnasium_warnings(caught) if "not having a spec" not in m]
    assert not problems, problems


# ------------------------------------------------------------------ PettingZoo folded seats
def test_pettingzoo_folded_heuristic_seat_matches_the_gymnasium_shell():
    # Seat 1 played by the lexi heuristic inside the shell: the PettingZoo shell then exposes only
    # agent_0 and steps the same episode as EgoEnv with the same teammate and seed.
    from aht_bench.policies.heuristics import lbf_heuristic

    mate = lbf_heuristic("lexi")
    par = ParallelEnv("lbf-v1", teammates={"agent_1": mate})
    ego = EgoEnv("lbf-v1", teammate=mate, seat=0)
    assert par.possible_agents == ["agent_0"]
    par_obs, _ = par.reset(seed=7)
    ego_obs, _ = ego.reset(seed=7)
    rng = np.random.default_rng(0)
    returns = []
    while par.agents:
        np.testing.assert_array_equal(par_obs["agent_0"], ego_obs)
        a = int(rng.integers(6))
        par_obs, rewards, terms, truncs, infos = par.step({"agent_0": a})
        ego_obs, reward, terminated, truncated, info = ego.step(a)
        assert (rewards["agent_0"], terms["agent_0"], truncs["agent_0"]) == (
            reward,
            terminated,
            truncated,
        )
        assert data_equivalence(infos["agent_0"], info, exact=True)
        returns.append(reward)
    assert len(returns) >= 1


def test_pettingzoo_with_folded_seats_passes_the_api_tests():
    from aht_bench.policies import MLPActorCritic
    from aht_bench.policies.heuristics import lbf_heuristic

    env = envs.make("lbf-4p-v1")
    net = MLPActorCritic(env.obs_dim, env.num_actions)
    teammates = {
        "agent_1": lbf_heuristic("col", num_agents=4),
        "agent_3": (net, net.init(jax.random.PRNGKey(0))),
    }
    par = ParallelEnv("lbf-4p-v1", teammates=teammates)
    assert par.possible_agents == ["agent_0", "agent_2"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel_api_test(par, num_cycles=env.horizon + 2)
        parallel_seed_test(lambda: ParallelEnv("lbf-4p-v1", teammates=teammates), num_cycles=20)
    problems = [str(w.message) for w in caught if "pettingzoo" in w.filename]
    assert not problems, problems

    # a callable teammate sees its own seat's observation
    seen = []
    par = ParallelEnv("lbf-v1", teammates={"agent_0": lambda obs: seen.append(obs) or 0})
    obs, _ = par.reset(seed=0)
    assert par.possible_agents == ["agent_1"]
    par.step({"agent_1": 0})
    start_obs, _ = ParallelEnv("lbf-v1").reset(seed=0)
    np.testing.assert_array_equal(seen[0], start_obs["agent_0"])


def test_pettingzoo_teammates_bad_arguments_name_the_problem():
    from aht_bench.policies.heuristics import lbf_heuristic

    with pytest.raises(KeyError, match=r"no seat 'agent_2'.*\['agent_0', 'agent_1'\]"):
        ParallelEnv("lbf-v1", teammates={"agent_2": lbf_heuristic("lexi")})
    with pytest.raises(TypeError, match="teammate of agent_1 is None"):
        ParallelEnv("lbf-v1", teammates={"agent_1": None})
    with pytest.raises(TypeError, match="must be a policy"):
        ParallelEnv("lbf-v1", teammates={"agent_1": 3})
    with pytest.raises(TypeError, match="must be a dict"):
        ParallelEnv("lbf-v1", teammates=[lbf_heuristic("lexi")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fill every seat"):
        ParallelEnv("sabotage-v1", teammates={"agent_0": lambda o: 0, "agent_1": lambda o: 0})
    par = ParallelEnv("sabotage-v1", teammates={"agent_1": lambda o: 7})
    par.reset(seed=0)
    with pytest.raises(ValueError, match=r"teammate \(seat 1\) returned 7 is outside"):
        par.step({"agent_0": 0})


def _heuristic_cases():
    from aht_bench.policies.heuristics import PAPER_HEURISTICS

    for task_id, names in PAPER_HEURISTICS.items():
        extra = ("random", "static") if task_id.startswith("overcooked-") else ()
        for name in (*names, *extra):
            yield task_id, name


@pytest.mark.parametrize(("task_id", "name"), list(_heuristic_cases()))
def test_egoenv_with_each_heuristic_teammate_passes_check_env(task_id, name):
    # Every heuristic of the paper's evaluation sets (plus random and static on Overcooked), in
    # the seat the ego does not take.
    from aht_bench.policies.heuristics import make_heuristic

    ego = EgoEnv(task_id, teammate=make_heuristic(task_id, name), seat=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(ego.unwrapped)
    problems = [m for m in _gymnasium_warnings(caught) if "not having a spec" not in m]
    assert not problems, problems
