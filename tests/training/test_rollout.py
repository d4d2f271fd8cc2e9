"""Rollouts: values and truncation bootstraps checked by replaying the env by hand, seats,
recurrent re-runs that reproduce the collected log-probs, per-episode teammate draws and
stored-state starts."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_tasks import TRUNC_TASK, ConstantAction

from aht_bench import envs
from aht_bench.policies import MLPActorCritic, RecurrentEgo, TeammateSet
from aht_bench.training import (
    Pairing,
    PPOConfig,
    SampledTeammate,
    init_rollout,
    make_stream,
    rollout,
    teammate_pool,
    timestep_weights,
)
from aht_bench.training.ppo import _evaluate_sequences, _minibatches
from aht_bench.training.rollout import make_env

pytestmark = pytest.mark.usefixtures("tiny_tasks")

NUM_ENVS, STEPS = 4, 7

# One compiled rollout per (env, pairing, length): tests that share them compile once.
run_rollout = jax.jit(rollout, static_argnames=("env", "pairing", "num_steps", "keep_states"))


@pytest.fixture(scope="module")
def env():
    return make_env(TRUNC_TASK)


def test_values_and_truncation_bootstrap_match_a_hand_replay(env):
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    params = (net.init(jax.random.PRNGKey(1)), net.init(jax.random.PRNGKey(2)))
    pairing = Pairing(policies=(net, net), learners=(0, 1))
    state = init_rollout(env, pairing, jax.random.PRNGKey(0), NUM_ENVS)
    _, traj = run_rollout(env, pairing, params, state, jax.random.PRNGKey(3), STEPS, True)
    # horizon 3, never terminated: truncation at steps 2 and 5, episode starts at 0, 3, 6
    expected_trunc = np.zeros((STEPS, NUM_ENVS), bool)
    expected_trunc[[2, 5]] = True
    np.testing.assert_array_equal(np.asarray(traj.truncated), expected_trunc)
    assert not np.any(np.asarray(traj.terminated))
    np.testing.assert_array_equal(np.asarray(traj.starts)[:, 0], [1, 0, 0, 1, 0, 0, 1])
    np.testing.assert_array_equal(np.asarray(traj.time)[:, 0], [1, 2, 3, 1, 2, 3, 1])
    np.testing.assert_array_equal(np.asarray(timestep_weights(traj))[:, 0], [1, 2, 3, 1, 2, 3, 1])

    evaluate = jax.jit(net.evaluate)

    def value(i, obs):
        return float(evaluate(params[i], (), obs)[1][0])

    base = env.env  # the unwrapped game: replay each env's episodes by hand
    reset, step = jax.jit(base.reset), jax.jit(base.step)
    for e in range(NUM_ENVS):
        s, ts = reset(jax.random.PRNGKey(0))
        for t in range(STEPS):
            joint = jnp.stack([traj.learners[0].actions[t, e], traj.learners[1].actions[t, e]])
            for i in range(2):
                np.testing.assert_allclose(traj.learners[i].obs[t, e], ts.obs[i])
                assert float(traj.learners[i].values[t, e, 0]) == pytest.approx(
                    value(i, ts.obs[i]), abs=1e-5
                )
            s, ts = step(jax.random.PRNGKey(0), s, joint)
            for i in range(2):
                assert float(traj.learners[i].rewards[t, e]) == float(ts.reward[i])
                # V(final_obs) where the horizon cut the episode
                assert float(traj.learners[i].final_values[t, e, 0]) == pytest.approx(
                    value(i, ts.obs[i]), abs=1e-5
                )
            if bool(ts.truncated):
                s, ts = reset(jax.random.PRNGKey(0))
        for i in range(2):  # V of the observation the next rollout starts from
            assert float(traj.learners[i].last_values[e, 0]) == pytest.approx(
                value(i, ts.obs[i]), abs=1e-5
            )


def test_learner_in_seat_one_sees_and_earns_seat_one(env):
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    # role 0: constant B in seat 0; role 1: the learner in seat 1
    pairing = Pairing(policies=(ConstantAction(1), net), learners=(1,), seats=(0, 1)[::-1])
    assert pairing.role_of_seat == (1, 0)
    params = (None, net.init(jax.random.PRNGKey(1)))
    state = init_rollout(env, pairing, jax.random.PRNGKey(0), NUM_ENVS)
    _, traj = run_rollout(env, pairing, params, state, jax.random.PRNGKey(3), 2)
    data = traj.learners[0]
    # After one step the observation of seat 1 (own action first) shows the partner's B in
    # the partner slot: history[0] = (own one-hot, partner one-hot = B).
    obs1 = np.asarray(data.obs[1]).reshape(NUM_ENVS, 3, 2, 2)
    np.testing.assert_array_equal(obs1[:, 0, 1], np.tile([0.0, 1.0], (NUM_ENVS, 1)))
    # payoff [[2, 0], [0, 1]] indexed [seat 0, seat 1] = [B, learner]
    expected = np.where(np.asarray(data.actions) == 1, 1.0, 0.0)
    np.testing.assert_array_equal(np.asarray(data.rewards), expected)


def test_pairing_rejects_bad_seats_and_non_network_learners(env):
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    with pytest.raises(ValueError, match="permutation"):
        Pairing(policies=(net, net), learners=(0,), seats=(0, 0))
    with pytest.raises(ValueError, match="evaluate"):
        Pairing(policies=(ConstantAction(0), net), learners=(0,))


def test_recurrent_rerun_reproduces_collected_log_probs_and_values(env):
    ego = RecurrentEgo(env.obs_dim, env.num_actions, hidden=8)
    pairing = Pairing(policies=(ego, ConstantAction(0)), learners=(0,))
    params = (ego.init(jax.random.PRNGKey(1)), None)
    state = init_rollout(env, pairing, jax.random.PRNGKey(0), NUM_ENVS)
    state, _ = run_rollout(env, pairing, params, state, jax.random.PRNGKey(1), 4)
    # the second rollout starts mid-episode (time 1 of 3), from a carried-over GRU state
    _, traj = run_rollout(env, pairing, params, state, jax.random.PRNGKey(2), 4)
    assert not np.all(np.asarray(traj.starts)[0])
    stream = make_stream(traj, 0, PPOConfig())
    rerun = jax.jit(_evaluate_sequences, static_argnums=0)
    logits, values = rerun(ego, params[0], stream)
    log_probs = jnp.take_along_axis(jax.nn.log_softmax(logits), stream.actions[..., None], -1)
    np.testing.assert_allclose(
        np.asarray(log_probs[..., 0]), np.asarray(stream.log_probs), atol=1e-5
    )
    np.testing.assert_allclose(np.asarray(values[..., 0]), np.asarray(stream.values), atol=1e-5)
    # the same through recurrent minibatches (whole env sequences, shuffled)
    batches = _minibatches(stream, jax.random.PRNGKey(5), 2, recurrent=True)
    for m in range(2):
        part = jax.tree.map(lambda x, m=m: x[m], batches)
        logits, _ = rerun(ego, params[0], part)
        lp = jnp.take_along_axis(jax.nn.log_softmax(logits), part.actions[..., None], -1)
        np.testing.assert_allclose(np.asarray(lp[..., 0]), np.asarray(part.log_probs), atol=1e-5)


def test_sampled_teammate_keeps_one_member_per_episode(env):
    mates = TeammateSet(
        ["A", "B", "never"],
        [(ConstantAction(0), None), (ConstantAction(1), None), (ConstantAction(0), None)],
    )
    learner = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    pairing = Pairing(policies=(learner, SampledTeammate(mates)), learners=(0,))
    pool = teammate_pool(mates, jnp.array([1.0, 1.0, 0.0]))
    params = (learner.init(jax.random.PRNGKey(0)), pool)
    state = init_rollout(env, pairing, jax.random.PRNGKey(0), 32)
    state, _ = run_rollout(env, pairing, params, state, jax.random.PRNGKey(1), 3)
    # read the partner's actions back from the learner's observations of full episodes
    _, traj = run_rollout(env, pairing, params, state, jax.random.PRNGKey(2), 3)
    final = np.asarray(traj.learners[0].obs[-1]).reshape(32, 3, 2, 2)  # after 2 of 3 steps
    partner = final[:, :2, 1].argmax(-1)  # partner's action at steps 0 and 1
    assert np.all(partner[:, 0] == partner[:, 1])  # one member for the whole episode
    assert set(partner[:, 0].tolist()) == {0, 1}  # both drawn members appear
    assert int(state.carries[1].member.max()) <= 1  # "never" (weight 0) is never drawn


def test_rollout_from_stored_states_continues_their_clock(env):
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    pairing = Pairing(policies=(net, net), learners=(0, 1))
    params = (net.init(jax.random.PRNGKey(1)), net.init(jax.random.PRNGKey(2)))
    state = init_rollout(env, pairing, jax.random.PRNGKey(0), NUM_ENVS)
    _, traj = run_rollout(env, pairing, params, state, jax.random.PRNGKey(3), STEPS, True)
    assert traj.states is not None
    # states seen at step 1 (time 1 of 3), stored: episodes restart there, with 2 steps left
    stored = jax.tree.map(lambda x: x[1], traj.states)
    branch_env = envs.AutoReset(env.env, envs.StoredStates(stored))
    branch = init_rollout(branch_env, pairing, jax.random.PRNGKey(4), NUM_ENVS)
    _, btraj = run_rollout(branch_env, pairing, params, branch, jax.random.PRNGKey(5), 4)
    np.testing.assert_array_equal(np.asarray(btraj.time)[:, 0], [2, 3, 2, 3])
    np.testing.assert_array_equal(np.asarray(btraj.truncated)[:, 0], [0, 1, 0, 1])


def test_a_traced_shaped_reward_coefficient_replaces_the_pairings():
    # cramped_room with two random MLP learners: the actions do not depend on the coefficient,
    # so the learners' rewards differ by coefficient x shaped reward
    oc = make_env("cramped_room")
    net = MLPActorCritic(oc.obs_dim, oc.num_actions, hidden=(8,))
    pairing = Pairing(policies=(net, net), learners=(0, 1))
    params = (net.init(jax.random.PRNGKey(1)), net.init(jax.random.PRNGKey(2)))
    state = init_rollout(oc, pairing, jax.random.PRNGKey(0), 8)
    step = jax.jit(rollout, static_argnames=("env", "pairing", "num_steps"))

    def rewards(coef):
        _, traj = step(
            oc, pairing, params, state, jax.random.PRNGKey(3), 200, shaped_reward_coef=coef
        )
        return np.stack([np.asarray(d.rewards) for d in traj.learners])

    _, default = step(oc, pairing, params, state, jax.random.PRNGKey(3), 200)
    base, one, two = (rewards(jnp.float32(c)) for c in (0.0, 1.0, 2.0))
    np.testing.assert_array_equal(np.stack([np.asarray(d.rewards) for d in default.learners]), one)
    shaped = one - base
    assert np.count_nonzero(shaped) > 0  # random agents picked something up
    np.testing.assert_allclose(two - base, 2 * shaped, rtol=1e-6, atol=1e-6)
