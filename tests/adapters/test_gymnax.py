"""The gymnax shell (`aht_bench.adapters.gymnax`) against the functional API stepped side by side.

Each rollout runs the gymnax env (inside gymnax's `LogWrapper` and `FlattenObservationWrapper`)
under `jit(vmap(...))` with `lax.scan` for whole episodes, then replays the same keys in a
plain Python loop over `env.reset`/`env.step` of the task and `TeammateSet.act` of the members,
written from the key contract in the module docstring, and compares step by step: teammate
actions, rewards, flags, each episode's draws of member and seat, and episode returns.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench import envs, heldout
from aht_bench.adapters import gymnax as aht_gymnax
from aht_bench.evaluation import sets
from aht_bench.policies.heuristics import PAPER_HEURISTICS
from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.policies.teammate_set import TeammateSet

CRAMPED = "overcooked-cramped_room-v2"


def _gymnax_rollout(env, params, num_envs: int, steps: int, seed: int):
    """jit(vmap) reset and a lax.scan of jit(vmap) steps of the wrapped env, random ego actions.
    Returns the keys and actions it used and what each step gave, as NumPy."""
    # after aht_bench.adapters.gymnax, which makes gymnax importable without `six`
    from gymnax.wrappers.purerl import FlattenObservationWrapper, LogWrapper

    wrapped = LogWrapper(FlattenObservationWrapper(env))
    key = jax.random.PRNGKey(seed)
    key_reset, key_steps, key_actions = jax.random.split(key, 3)
    reset_keys = jax.random.split(key_reset, num_envs)
    step_keys = jax.random.split(key_steps, (steps, num_envs))
    actions = jax.random.randint(key_actions, (steps, num_envs), 0, env.num_actions)

    @jax.jit
    def run(reset_keys, step_keys, actions):
        obs, state = jax.vmap(wrapped.reset, (0, None))(reset_keys, params)

        def _env_step(state, xs):
            keys, action = xs
            obs, state, reward, terminated, truncated, info = jax.vmap(
                wrapped.step, (0, 0, 0, None)
            )(keys, state, action, params)
            return state, (obs, reward, terminated, truncated, info)

        _, out = jax.lax.scan(_env_step, state, (step_keys, actions))
        return obs, out

    first_obs, (obs, reward, terminated, truncated, info) = run(reset_keys, step_keys, actions)
    out = {
        "first_obs": first_obs,
        "obs": obs,
        "reward": reward,
        "terminated": terminated,
        "truncated": truncated,
        **info,
    }
    host = {k: np.asarray(v) for k, v in out.items()}
    return np.asarray(reset_keys), np.asarray(step_keys), np.asarray(actions), host


def _reference(task, mates, seats, reset_keys, step_keys, actions, shaped_coef=0.0):
    """The same keys through the functional API in Python loops (the module docstring's key
    contract, written out): per env and step, the reward, flags, episode return, teammate
    actions, seat and member, and each step's observation after any auto-reset."""
    env = task.env
    num_mates = env.num_agents - 1
    step = jax.jit(env.step)
    act = jax.jit(mates.act)

    @jax.jit
    def draw(key):  # reset_env's three keys: start state, member, seat
        k_start, k_mate, k_seat = jax.random.split(key, 3)
        state, ts = env.reset(k_start)
        member = jax.random.randint(k_mate, (), 0, mates.size)
        return state, ts.obs, member, jax.random.randint(k_seat, (), 0, len(seats))

    @jax.jit
    def split_step_key(key):  # gymnax's (step, reset), then step_env's (task, teammates)
        key_step, key_reset = jax.random.split(key)
        key_task, key_mates = jax.random.split(key_step)
        return key_task, jax.random.split(key_mates, num_mates), key_reset

    def start(key):
        state, obs, member, pick = draw(key)
        carry = [mates.init_carry(()) for _ in range(num_mates)]
        return state, np.asarray(obs), int(member), int(seats[int(pick)]), carry

    steps, num_envs = actions.shape
    rows = {k: np.zeros((steps, num_envs)) for k in ("reward", "base", "ret", "seat", "member")}
    rows["done"] = np.zeros((steps, num_envs), bool)
    rows["terminated"] = np.zeros((steps, num_envs), bool)
    rows["mate_actions"] = np.zeros((steps, num_envs, num_mates), np.int64)
    rows["obs"] = np.zeros((steps, num_envs, env.obs_dim), np.float32)
    first_obs = np.zeros((num_envs, env.obs_dim), np.float32)
    for i in range(num_envs):
        state, obs, member, seat, carry = start(reset_keys[i])
        first_obs[i] = obs[seat]
        for t in range(steps):
            key_task, mate_keys, key_reset = split_step_key(step_keys[t, i])
            others = [s for s in range(env.num_agents) if s != seat]
            joint = np.zeros(env.num_agents, np.int32)
            joint[seat] = actions[t, i]
            for j, other in enumerate(others):
                a, carry[j], _ = act(member, carry[j], jnp.asarray(obs[other]), mate_keys[j])
                joint[other] = int(a)
                rows["mate_actions"][t, i, j] = int(a)
            state, ts = step(key_task, state, jnp.asarray(joint))
            base = float(ts.reward[seat])
            rows["base"][t, i] = base
            rows["reward"][t, i] = base + shaped_coef * float(ts.shaped_reward[seat])
            rows["ret"][t, i] = float(ts.episode_return[seat])
            rows["seat"][t, i], rows["member"][t, i] = seat, member
            rows["terminated"][t, i] = bool(ts.terminated)
            rows["done"][t, i] = bool(ts.terminated) or bool(ts.truncated)
            obs = np.asarray(ts.obs)
            if rows["done"][t, i]:
                state, obs, member, seat, carry = start(key_reset)
            rows["obs"][t, i] = obs[seat]
    return first_obs, rows


def _check_side_by_side(env, params, mates, num_envs, steps, seed, shaped_coef=0.0):
    reset_keys, step_keys, actions, got = _gymnax_rollout(env, params, num_envs, steps, seed)
    first_obs, ref = _reference(
        env.task_spec, mates, env.seats, reset_keys, step_keys, actions, shaped_coef
    )
    np.testing.assert_array_equal(got["teammate_actions"], ref["mate_actions"])
    np.testing.assert_array_equal(got["seat"], ref["seat"])
    np.testing.assert_array_equal(got["teammate"], ref["member"])
    np.testing.assert_array_equal(got["terminated"] | got["truncated"], ref["done"])
    np.testing.assert_array_equal(got["terminated"], ref["terminated"])
    np.testing.assert_allclose(got["base_reward"], ref["base"], atol=1e-6)
    np.testing.assert_allclose(got["reward"], ref["reward"], atol=1e-5)
    np.testing.assert_allclose(got["episode_return"], ref["ret"], atol=1e-5)
    np.testing.assert_array_equal(got["first_obs"], first_obs)
    np.testing.assert_array_equal(got["obs"], ref["obs"])  # after auto-reset: the new episode's
    done = ref["done"]
    assert done.any(), "the rollout must end at least one episode"
    # gymnax's LogWrapper sees the same episode returns (reward is the base one here)
    if shaped_coef == 0.0:
        np.testing.assert_allclose(
            got["returned_episode_returns"][done], ref["ret"][done], atol=1e-5
        )
    return got, ref


def _episodes(ref):
    """(seat, member) of every episode that started in the reference rollout, env by env."""
    out = []
    for i in range(ref["seat"].shape[1]):
        starts = [0] + [t + 1 for t in np.flatnonzero(ref["done"][:-1, i])]
        out += [(int(ref["seat"][t, i]), int(ref["member"][t, i])) for t in starts]
    return out


def _dev_style_set(folder, task_id):
    """A development set as `aht-bench devset build` lays it out (the paper's heuristics of the
    task), with placeholder bounds: for tasks whose dev set is not shipped yet."""
    members = [
        {"name": h, "kind": "heuristic", "heuristic": h, "bounds": {"lower": 0.0, "upper": 100.0}}
        for h in PAPER_HEURISTICS[task_id]
    ]
    manifest = {
        "format": sets.FORMAT,
        "format_version": sets.FORMAT_VERSION,
        "task_id": task_id,
        "version": "dev",
        "members": members,
    }
    folder.mkdir()
    sets.write_manifest(folder, manifest)
    return folder


# ------------------------------------------------------------------ side by side
def test_lbf_development_set_side_by_side_new_member_and_seat_each_episode():
    env, params = aht_gymnax.make("lbf-v1", "dev")
    mates = sets.load_set("lbf-v1", "dev").teammates
    assert env.teammate_names == mates.names and env.seats == (0, 1)
    _, ref = _check_side_by_side(env, params, mates, num_envs=4, steps=230, seed=0)
    episodes = _episodes(ref)
    assert len(episodes) >= 12
    assert {s for s, _ in episodes} == {0, 1}
    assert len({m for _, m in episodes}) >= 4  # drawn per episode from all 6 members


def test_lbf_heldout_member_side_by_side():
    env, params = aht_gymnax.make("lbf-v1", "heldout:v2:ippo_mlp_0")
    policy, member_params = heldout.member("lbf-v1", "ippo_mlp_0", "v2")
    mates = TeammateSet(["ippo_mlp_0"], [(policy, member_params)])
    _check_side_by_side(env, params, mates, num_envs=3, steps=201, seed=1)


def test_lbf_recurrent_teammate_keeps_its_carry_in_the_state():
    env_ = envs.make("lbf-v1")
    gru = RecurrentEgo(env_.obs_dim, env_.num_actions, hidden=16)
    gru_params = gru.init(jax.random.PRNGKey(3))
    env, params = aht_gymnax.make("lbf-v1", gru, teammate_params=gru_params, seats=(1,))
    mates = TeammateSet(["teammate"], [(gru, gru_params)])
    got, _ = _check_side_by_side(env, params, mates, num_envs=3, steps=120, seed=2)
    assert set(np.unique(got["seat"])) == {1}


def test_overcooked_v2_heldout_member_side_by_side_with_shaped_reward():
    env, params = aht_gymnax.make(
        CRAMPED, "heldout:v2:ippo_mlp_0", reward="shaped", shaped_coef=0.5
    )
    assert params.shaped_coef == 0.5 and params.max_steps_in_episode == 400
    policy, member_params = heldout.member(CRAMPED, "ippo_mlp_0", "v2")
    mates = TeammateSet(["ippo_mlp_0"], [(policy, member_params)])
    got, ref = _check_side_by_side(
        env, params, mates, num_envs=2, steps=405, seed=3, shaped_coef=0.5
    )
    assert ref["done"][399].all() and got["truncated"][399].all()  # the horizon, 400 steps
    assert not got["terminated"].any()


def test_overcooked_v2_development_set_side_by_side(tmp_path):
    folder = _dev_style_set(tmp_path / "dev", CRAMPED)
    env, params = aht_gymnax.make(CRAMPED, str(folder))
    mates = sets.load_set(CRAMPED, folder).teammates
    assert env.teammate_names == PAPER_HEURISTICS[CRAMPED]
    _, ref = _check_side_by_side(env, params, mates, num_envs=3, steps=402, seed=4)
    episodes = _episodes(ref)
    assert len(episodes) == 6
    assert {s for s, _ in episodes} == {0, 1} and len({m for _, m in episodes}) >= 2


# ------------------------------------------------------------------ contract
def test_spaces_params_and_default_seats():
    env, params = aht_gymnax.make("lbf-v1", "lexi,col")
    assert env.teammate_names == ("lexi", "col")
    assert env.num_actions == 6 and env.action_space(params).n == 6
    space = env.observation_space(params)
    assert space.shape == (16,)
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    assert obs.shape == (16,) and obs.dtype == jnp.float32 and bool(space.contains(obs))
    assert bool(env.action_space(params).contains(jnp.int32(5)))
    assert env.action_mask(state).shape == (6,)
    # params=None is gymnax's default_params
    a = env.step(jax.random.PRNGKey(1), state, 0)
    b = env.step(jax.random.PRNGKey(1), state, 0, params)
    np.testing.assert_array_equal(a[0], b[0])
    assert aht_gymnax.EgoGymnaxEnv("matrix-regret-v1").seats == (0,)
    assert aht_gymnax.EgoGymnaxEnv("lbf-4p-v1").seats == (0, 1)
    assert aht_gymnax.EgoGymnaxEnv("lbf-4p-v1").num_teammate_seats == 3


def test_max_steps_truncates_and_stored_states_start_episodes():
    env_ = envs.make("lbf-v1")
    states = jax.vmap(lambda k: env_.reset(k)[0])(jax.random.split(jax.random.PRNGKey(5), 4))
    states = states.replace(inner=states.inner.replace(step_count=jnp.full((4,), 7, jnp.int32)))
    env, params = aht_gymnax.make(
        "lbf-v1", "lexi", starts=envs.StoredStates(states), max_steps_in_episode=10
    )
    _, state = env.reset(jax.random.PRNGKey(0), params)
    assert int(state.time) == 7  # a stored state keeps its clock
    flags = []
    for t in range(3):
        _, state, _, terminated, truncated, _ = env.step(jax.random.PRNGKey(t), state, 4, params)
        flags.append((bool(terminated), bool(truncated)))
    assert flags == [(False, False), (False, False), (False, True)]  # 7 + 3 steps: the limit
    # params are a jit argument: a new limit does not need a new env
    params20 = params.replace(max_steps_in_episode=20)
    _, state = env.reset(jax.random.PRNGKey(0), params20)
    _, _, _, _, truncated, _ = env.step(jax.random.PRNGKey(1), state, 0, params20)
    assert not bool(truncated)


def test_population_draws_a_member_per_episode():
    from aht_bench.policies.population import Population

    env_ = envs.make("lbf-v1")
    net = MLPActorCritic(env_.obs_dim, env_.num_actions, hidden=(8,))
    pop = Population.stack(net, [net.init(jax.random.PRNGKey(i)) for i in range(3)])
    env, params = aht_gymnax.make("lbf-v1", pop)
    members = jax.vmap(lambda k: env.reset(k, params)[1].teammate)(
        jax.random.split(jax.random.PRNGKey(0), 64)
    )
    assert set(np.asarray(members).tolist()) == {0, 1, 2}


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "teammates,message",
    [
        ("dev", "sabotage-v1 has no development set"),
        ("heldout:v9", "no teammate set 'v9' for sabotage-v1"),
        ("nobody", "no heuristic teammates for sabotage-v1"),
        ("random,,random", "empty name between commas"),
    ],
)
def test_bad_teammate_names_say_what_exists(teammates, message):
    with pytest.raises(ValueError, match=message):
        aht_gymnax.make("sabotage-v1", teammates)


def test_bad_member_seats_and_teammates_are_refused():
    with pytest.raises(ValueError, match="has no member 'nobody'"):
        aht_gymnax.make("lbf-v1", "heldout:v2:nobody")
    with pytest.raises(ValueError, match="lexi more than once"):
        aht_gymnax.make("lbf-v1", "lexi,lexi")
    with pytest.raises(ValueError, match=r"pass distinct seats in \[0, 2\)"):
        aht_gymnax.make("lbf-v1", seats=(2,))
    with pytest.raises(ValueError, match="cannot act on lbf-v1's observations"):
        aht_gymnax.make(
            "lbf-v1",
            MLPActorCritic(3, 6),
            teammate_params=MLPActorCritic(3, 6).init(jax.random.PRNGKey(0)),
        )
    with pytest.raises(TypeError, match="teammates must be a name"):
        aht_gymnax.make("lbf-v1", 42)
    with pytest.raises(ValueError, match="brings its own params"):
        aht_gymnax.make("lbf-v1", "lexi", teammate_params={})
    with pytest.raises(ValueError, match="reward mode"):
        aht_gymnax.make("lbf-v1", reward="dense")
    with pytest.raises(ValueError, match=r"max_steps_in_episode must be an int in \[1, 100\]"):
        aht_gymnax.make("lbf-v1", max_steps_in_episode=101)


def test_importing_the_shell_leaves_no_six_stand_in_behind():
    import importlib.util
    import sys

    if importlib.util.find_spec("six") is None:
        assert "six" not in sys.modules and "six.moves.urllib.request" not in sys.modules


def test_step_equals_gymnax_own_step_through_episode_ends():
    # EgoGymnaxEnv.step is written out (one observation build per step); gymnax's
    # Environment.step, called on the same env, must give the same everything.
    from gymnax.environments.environment import Environment as GymnaxEnvironment

    env, params = aht_gymnax.make("lbf-v1", "dev", max_steps_in_episode=3)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    theirs = state
    for t in range(8):  # episodes end at steps 3 and 6: both resets are compared
        key = jax.random.PRNGKey(100 + t)
        ours_out = env.step(key, state, t % 6, params)
        theirs_out = GymnaxEnvironment.step(env, key, theirs, t % 6, params)
        assert set(ours_out[5]) == set(theirs_out[5])
        for a, b in zip(jax.tree.leaves(ours_out), jax.tree.leaves(theirs_out), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        state, theirs = ours_out[1], theirs_out[1]
        assert bool(ours_out[4]) == (t % 3 == 2)
