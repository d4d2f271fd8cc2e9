"""ROTATE: the teammate's loss is the paper's L_REG (streams, weights, signs, heads, entropy once)
under each teammate objective, checked on hand-built data with values worked by hand; configs,
presets and old field names; one tiny run end to end with exact resume (slow: compiling the two
phases takes about a minute on two CPU cores); the sabotage game (slow)."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hand_losses import LinearNet, hand_trajectory
from tiny_tasks import TRUNC_TASK

from aht_bench.algorithms import rotate
from aht_bench.experiments import sabotage_analysis
from aht_bench.policies import MLPActorCritic, RecurrentEgo
from aht_bench.runs import RunSpec, apply_overrides
from aht_bench.training import PPOConfig
from aht_bench.training.buffer import TeammateBuffer
from aht_bench.training.ppo import ppo_loss
from aht_bench.training.streams import loss_streams

pytestmark = pytest.mark.usefixtures("tiny_tasks")


def _trajectory(rewards, time):
    return hand_trajectory(rewards, time, num_heads=2, num_learners=2)


# gamma = 0: A_t = r_t - V_old(s_t) = r_t, and the value target is r_t too.
PPO = PPOConfig(gamma=0.0, gae_lambda=0.0, normalize_advantages=False, ent_coef=0.1, vf_coef=0.5)
# SP and XP start at p0 (steps 1, 2 of their episodes: w_ts = 1, 2); SXP and XSP branch from
# stored states at steps 3, 4 (a clock that must NOT weight them).
DATA = {
    "sp": (_trajectory([1.0, 2.0], [1, 2]), 0),
    "sxp": (_trajectory([3.0, -1.0], [3, 4]), 0),
    "xp": (_trajectory([2.0, 1.0], [1, 2]), 0),
    "xsp": (_trajectory([1.0, 1.0], [3, 4]), 0),
}


def _config(**kw):
    fields = dict(
        task_id=TRUNC_TASK,
        iterations=2,
        teammate_timesteps=4 * 8 * 6 * 3,
        ego_timesteps=8 * 6 * 2,
        num_envs=8,
        rollout_length=6,
        teammate_ppo=PPOConfig(num_epochs=2, num_minibatches=2),
        ego_ppo=PPOConfig(num_epochs=2, num_minibatches=2),
        teammate_hidden=(8,),
        best_response_hidden=(8,),
        ego_hidden=8,
    )
    return rotate.RotateConfig(**(fields | kw))


def _streams(config):
    return loss_streams(rotate.teammate_loss_terms(config), DATA, PPO)


@pytest.mark.parametrize(
    "lambda_1,lambda_2,policy_loss",
    [
        # L_SP  = -(1 + l2) * mean(w_ts * A)  = -(1 + l2) * (1*1 + 2*2) / 2 = -(1 + l2) * 2.5
        # L_SXP = -(1 + l1) * mean(A)         = -(1 + l1) * (3 - 1) / 2   = -(1 + l1) * 1
        # L_XP  = +mean(w_ts * A)             = (1*2 + 2*1) / 2           = 2
        # L_XSP = +mean(A)                    = (1 + 1) / 2               = 1
        (0.0, 0.0, -2.5 - 1.0 + 2.0 + 1.0),  # only the four regret terms: -0.5
        (2.0, 1.0, -5.0 - 3.0 + 2.0 + 1.0),  # competence terms on SP and SXP only: -5
    ],
)
def test_teammate_loss_is_l_reg_by_hand(lambda_1, lambda_2, policy_loss):
    config = _config(
        competence_weight_xp=lambda_1,
        competence_weight_sp=lambda_2,
        teammate_objective="transition_mean",  # Eq. regret_pol_loss's terms as printed
    )
    streams = _streams(config)
    params = {"s": jnp.float32(0.0), "v": jnp.float32(1.0)}
    loss, metrics = ppo_loss(params, LinearNet(), streams, PPO, recurrent=False)
    # value loss: new values are 0, targets are the rewards
    #   head 0 (sigma^{-i,BR}) on SP + SXP: (1 + 4 + 9 + 1) / 4 = 3.75
    #   head 1 (sigma^{-i,ego}) on XP + XSP: (4 + 1 + 1 + 1) / 4 = 1.75
    # entropy once over all 8 transitions of the uniform policy: L_ENT = -log 3
    # (once per stream would give 4 * -log 3)
    expected = policy_loss + 0.1 * -math.log(3.0) + 0.5 * (3.75 + 1.75)
    np.testing.assert_allclose(float(metrics["policy_loss"]), policy_loss, rtol=1e-6)
    np.testing.assert_allclose(float(metrics["value_loss"]), 5.5, rtol=1e-6)
    np.testing.assert_allclose(float(metrics["entropy"]), math.log(3.0), rtol=1e-6)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-6)


def test_teammate_streams_weights_signs_and_heads():
    config = _config(
        competence_weight_xp=2.0, competence_weight_sp=1.0, teammate_objective="transition_mean"
    )
    terms = rotate.teammate_loss_terms(config)
    assert [t.data for t in terms] == ["sp", "sxp", "xp", "xsp"]
    sp, sxp, xp, xsp = _streams(config)
    # t + 1 weights on SP and XP only, (1 + lambda_2) on SP and (1 + lambda_1) on SXP
    np.testing.assert_array_equal(np.asarray(sp.weights)[:, 0], [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(sxp.weights)[:, 0], [3.0, 3.0])
    np.testing.assert_array_equal(np.asarray(xp.weights)[:, 0], [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(xsp.weights)[:, 0], [1.0, 1.0])
    assert [float(s.sign) for s in (sp, sxp, xp, xsp)] == [1.0, 1.0, -1.0, -1.0]
    heads = [int(s.value_head) for s in (sp, sxp, xp, xsp)]
    assert (
        heads
        == [rotate.config.BR_HEAD, rotate.config.BR_HEAD, rotate.EGO_HEAD, rotate.EGO_HEAD]
        == [0, 0, 1, 1]
    )
    # the BR: L_BR on SP + SXP, unit weights, positive sign, its own (single) critic
    br_terms = rotate.best_response_loss_terms(config)
    assert [(t.data, t.coef, t.timestep_weighted, t.sign, t.value_head) for t in br_terms] == [
        ("sp", 1.0, False, 1.0, 0),
        ("sxp", 1.0, False, 1.0, 0),
    ]
    # no_buffer changes only the ego's partners, not the teammate's loss
    assert rotate.teammate_loss_terms(dataclasses.replace(config, variant="no_buffer")) == terms


def test_variant_loss_terms():
    traj = rotate.teammate_loss_terms(_config(variant="per_trajectory", competence_weight_p0=3.0))
    # Eq. traj_regret_obj_lambda: everything from p0, one sample per trajectory (no t + 1)
    assert [(t.data, t.coef, t.timestep_weighted, t.sign, t.value_head) for t in traj] == [
        ("sp", 4.0, False, 1.0, 0),
        ("xp", 1.0, False, -1.0, 1),
    ]
    assert [t.data for t in rotate.best_response_loss_terms(_config(variant="per_trajectory"))] == [
        "sp"
    ]
    mixed = _config(variant="mixed_play", mixed_play_xp_coef=0.6, mixed_play_coef=0.7)
    assert [(t.data, t.coef, t.sign, t.value_head) for t in rotate.teammate_loss_terms(mixed)] == [
        ("sp", 1.0, 1.0, 0),
        ("xp", 0.6, -1.0, 1),
        ("mp", 0.7, 1.0, 0),
    ]
    assert [t.data for t in rotate.best_response_loss_terms(mixed)] == ["sp", "mp"]


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"variant": "per_state"}, "variant"),
        ({"teammate_objective": "eq8"}, "teammate_objective"),
        ({"competence_weight_xp": -1.0}, "competence_weight_xp"),
        ({"iterations": 0}, "iterations"),
        ({"teammate_timesteps": 10}, "teammate_timesteps"),
        ({"ego_timesteps": 10}, "ego_timesteps"),
        ({"ego_seat": 2}, "ego_seat"),
        ({"ego_ppo": PPOConfig(num_minibatches=3)}, "ego_ppo.num_minibatches"),
        ({"teammate_ppo": PPOConfig(num_minibatches=5)}, "teammate_ppo.num_minibatches"),
        ({"task_id": "lbff"}, "task_id"),
    ],
)
def test_config_refuses_with_the_field_name(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        _config(**kw)


def test_budgets_count_every_rollout():
    config = _config()
    assert config.teammate_batch_size == 4 * 8 * 6
    assert config.teammate_updates == 3 and config.ego_updates == 2
    traj = _config(variant="per_trajectory")
    assert traj.teammate_batch_size == 2 * 8 * 6 and traj.teammate_updates == 6
    assert hash(config) == hash(_config())  # a static jit argument


def test_paper_presets_follow_the_table():
    lbf = rotate.preset("paper", "lbf")
    assert (lbf.iterations, lbf.num_envs, lbf.competence_weight_xp, lbf.competence_weight_sp) == (
        30,
        16,
        4.0,
        4.0,
    )
    assert lbf.teammate_timesteps == 10_000_000 and lbf.ego_timesteps == 2_000_000
    assert lbf.teammate_ppo.num_epochs == 20 and lbf.teammate_ppo.clip_eps == 0.1
    assert lbf.ego_ppo.learning_rate == 5e-5 and not lbf.ego_ppo.anneal_lr
    # the paper's budget: 360M steps on LBF, 440M on forced_coord (App. "Training Compute")
    assert lbf.iterations * (lbf.teammate_timesteps + lbf.ego_timesteps) == 360_000_000
    fc = rotate.preset("paper", "forced_coord")
    assert fc.iterations * (fc.teammate_timesteps + fc.ego_timesteps) == 440_000_000
    assert (fc.competence_weight_xp, fc.competence_weight_sp, fc.ego_ppo.num_epochs) == (3, 4, 5)
    aa = rotate.preset("paper", "asymm_advantages")
    assert (aa.competence_weight_xp, aa.competence_weight_sp, aa.teammate_ppo.clip_eps) == (
        9,
        0,
        0.5,
    )
    for name, table in rotate.PRESETS.items():
        for task_id in table:
            assert rotate.preset(name, task_id).task_id == task_id
    with pytest.raises(KeyError, match="Did you mean 'quick'"):
        rotate.preset("quik", "lbf")
    assert rotate.preset("quick", "lbf", variant="no_buffer").variant == "no_buffer"


def test_networks_and_buffer_layout():
    config = _config()
    nets = rotate.networks(config)
    assert isinstance(nets.teammate, MLPActorCritic) and nets.teammate.num_value_heads == 2
    assert nets.best_response.num_value_heads == 1
    assert isinstance(nets.ego, RecurrentEgo)
    state = jax.eval_shape(lambda k: rotate.init(k, rotate.setup(config)), jax.random.PRNGKey(0))
    leaves = jax.tree.leaves(state.buffer.teammates) + jax.tree.leaves(state.buffer.best_responses)
    assert all(x.shape[0] == config.iterations for x in leaves)
    one, two = (TeammateBuffer(None, None, jnp.int32(n)) for n in (1, 2))
    np.testing.assert_array_equal(rotate.core.buffer_weights(one, config), [1.0, 0.0])
    np.testing.assert_array_equal(rotate.core.buffer_weights(two, config), [1.0, 1.0])
    no_buffer = dataclasses.replace(config, variant="no_buffer")
    np.testing.assert_array_equal(rotate.core.buffer_weights(two, no_buffer), [0.0, 1.0])


# SP and XP as in DATA; the branch streams now hold several episodes (`starts`):
#   SXP: 4 transitions in 2 episodes (the second cut by the rollout): N / E = 2
#   XSP: 4 transitions in 1 episode:                                  N / E = 4
_BRANCH_DATA = {
    "sp": DATA["sp"],
    "sxp": (
        _trajectory([3.0, -1.0, 2.0, 0.0], [3, 4, 5, 3])._replace(
            starts=jnp.array([[True], [False], [False], [True]])
        ),
        0,
    ),
    "xp": DATA["xp"],
    "xsp": (
        _trajectory([1.0, 1.0, 1.0, 0.5], [3, 4, 5, 6])._replace(
            starts=jnp.array([[True], [False], [False], [False]])
        ),
        0,
    ),
}


@pytest.mark.parametrize(
    "objective,weights,policy_loss",
    [
        # lambda_1 = 2, lambda_2 = 1; w_t per stream (SP, SXP, XP, XSP), worked by hand:
        # eq7: one unit per start state: SP (1 + 1) x (t + 1), SXP (1 + 2) x N/E = 3 x 2,
        # XP t + 1, XSP N/E = 4. Policy loss, A_t = r_t:
        #   L_SP  = -mean(2 (t + 1) A) = -(2*1 + 4*2) / 2         = -5
        #   L_SXP = -3 x (sum A) / E   = -3 x (3 - 1 + 2 + 0) / 2 = -6 (mean over 2 starts)
        #   L_XP  = +mean((t + 1) A)   = (1*2 + 2*1) / 2          = 2
        #   L_XSP = +(sum A) / E       = (1 + 1 + 1 + 0.5) / 1    = 3.5
        ("eq7", ([2, 4], [6, 6, 6, 6], [1, 2], [4, 4, 4, 4]), -5.0 - 6.0 + 2.0 + 3.5),
        # transition_mean: SXP 1 + 2, XSP 1: L_SXP = -3 x 4 / 4 = -3, L_XSP = 3.5 / 4 = 0.875
        ("transition_mean", ([2, 4], [3, 3, 3, 3], [1, 2], [1, 1, 1, 1]), -5.0 - 3.0 + 2.0 + 0.875),
        # public_code: unit weights, none on XSP, no lambda:
        #   L_SP = -(1 + 2) / 2 = -1.5, L_SXP = -4 / 4 = -1, L_XP = (2 + 1) / 2 = 1.5, L_XSP = 0
        ("public_code", ([1, 1], [1, 1, 1, 1], [1, 1], [0, 0, 0, 0]), -1.5 - 1.0 + 1.5 + 0.0),
    ],
)
def test_teammate_objectives_weight_their_streams_by_hand(objective, weights, policy_loss):
    config = _config(
        competence_weight_xp=2.0, competence_weight_sp=1.0, teammate_objective=objective
    )
    terms = rotate.teammate_loss_terms(config)
    streams = loss_streams(terms, _BRANCH_DATA, PPO)
    assert [t.data for t in terms] == ["sp", "sxp", "xp", "xsp"]
    for stream, expected in zip(streams, weights, strict=True):
        np.testing.assert_allclose(np.asarray(stream.weights)[:, 0], expected)
    # signs and heads are the same under every objective: only the weights differ
    assert [float(s.sign) for s in streams] == [1.0, 1.0, -1.0, -1.0]
    assert [int(s.value_head) for s in streams] == [0, 0, 1, 1]
    params = {"s": jnp.float32(0.0), "v": jnp.float32(1.0)}
    _, metrics = ppo_loss(params, LinearNet(), streams, PPO, recurrent=False)
    np.testing.assert_allclose(float(metrics["policy_loss"]), policy_loss, rtol=1e-6)


def test_eq7_is_the_default_and_v1_presets_pin_the_old_objective():
    assert rotate.TEAMMATE_OBJECTIVES[0] == "eq7" == _config().teammate_objective
    for field in dataclasses.fields(rotate.RotateConfig):
        if field.name == "teammate_objective":
            assert field.default == "eq7"
    # the quick and paper presets of v1 tasks keep what they trained before Eq. 7 became the
    # default; those of the v2 tasks, and the medium preset (new, sized for the v2 references)
    # of every task, use Eq. 7
    for name, table in rotate.PRESETS.items():
        for task_id, config in table.items():
            new = task_id.endswith("-v2") or name == "medium"
            want = "eq7" if new else rotate.V1_TEAMMATE_OBJECTIVE
            assert config.teammate_objective == want, (name, task_id)
    assert rotate.V1_TEAMMATE_OBJECTIVE == "transition_mean"
    # other variants' losses do not read the objective (Minimax Return builds its config
    # without it)
    for variant in ("per_trajectory", "mixed_play", "minimax"):
        terms = {
            rotate.teammate_loss_terms(_config(variant=variant, teammate_objective=o))
            for o in rotate.TEAMMATE_OBJECTIVES
        }
        assert len(terms) == 1, variant


def test_old_names_still_load():
    # the field was `branch_weights`, its values `unit` (today's transition_mean) and
    # `per_start_state` (Eq. 7); bundled cards and old runs' --set overrides say so
    assert _config(teammate_objective="unit").teammate_objective == "transition_mean"
    assert _config(teammate_objective="per_start_state").teammate_objective == "eq7"
    assert rotate.RotateConfig.upgrade_legacy({"branch_weights": "unit", "iterations": 2}) == {
        "teammate_objective": "transition_mean",
        "iterations": 2,
    }
    assert rotate.RotateConfig.upgrade_legacy({"teammate_objective": "per_start_state"}) == {
        "teammate_objective": "eq7"
    }
    quick = rotate.preset("quick", "lbf")
    upgraded = apply_overrides(quick, (("branch_weights", "per_start_state"),))
    assert upgraded == dataclasses.replace(quick, teammate_objective="eq7")
    old_run = RunSpec("rotate", "lbf", "quick", overrides=(("branch_weights", "unit"),))
    assert old_run.config() == quick
    with pytest.raises(ValueError, match="teammate_objective"):
        apply_overrides(quick, (("branch_weights", "per_state"),))


# ------------------------------------------------------------------------- whole runs (slow)


@pytest.fixture(scope="module")
def tiny_run():
    # payoff [[2, 0], [0, 1]] repeated 3 steps; 2 iterations, 2 seeds
    config = _config(competence_weight_xp=1.0, competence_weight_sp=1.0)
    state = rotate.init_seeds(jax.random.PRNGKey(3), config, num_seeds=2)
    straight = rotate.run(state, config)
    return config, state, straight


@pytest.mark.slow
def test_tiny_run_end_to_end(tiny_run):
    config, _, result = tiny_run
    m = result.metrics
    for k in ("sp_return", "xp_return", "regret", "sxp_return", "xsp_return", "ego_return"):
        assert m[k].shape == (2, 2) and np.all(np.isfinite(m[k])), k
        low = -6.0 if k == "regret" else 0.0  # returns: 3 steps of payoffs in [0, 2]
        assert np.all((m[k] >= low) & (m[k] <= 6.0)), k
    np.testing.assert_allclose(m["regret"], m["sp_return"] - m["xp_return"], rtol=1e-6)
    np.testing.assert_array_equal(m["population_size"], [[1, 2], [1, 2]])
    # per iteration: 3 teammate updates x 4 rollouts x 48 + 2 ego updates x 48 = 672
    np.testing.assert_array_equal(m["env_steps"][0], [672, 1344])
    assert np.all(np.asarray(result.state.iteration) == 2)
    pop = rotate.population(result.state, config, seed=1)
    assert pop.size == 2 and pop.policy == rotate.networks(config).teammate
    # the buffer holds what the teammate phase trained (not the fresh init it started from)
    slot = jax.tree.map(lambda x: x[1, 0], result.state.buffer.teammates)
    assert any(float(jnp.abs(x).sum()) > 0 for x in jax.tree.leaves(slot))
    with pytest.raises(ValueError, match="iterations"):
        rotate.iterate(result.state, config)


@pytest.mark.slow
def test_stopping_after_an_iteration_and_resuming_is_bit_identical(tiny_run):
    config, state, straight = tiny_run
    first = rotate.run(state, config, iterations=1)
    stored = jax.device_get(first.state)  # what a checkpoint holds: host copies of the state
    resumed = rotate.run(jax.tree.map(jnp.asarray, stored), config)
    for a, b in zip(jax.tree.leaves(straight.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for k, v in straight.metrics.items():
        both = np.concatenate([first.metrics[k], resumed.metrics[k]], axis=1)
        np.testing.assert_array_equal(v, both, err_msg=k)


@pytest.mark.slow
def test_sabotage_per_state_regret_sabotages_less_than_per_trajectory_regret():
    """Paper Sec. 6 RQ2 (about 10 minutes on two CPU cores): the last per-trajectory-regret
    teammate plays S with probability > 0.9 at many of the 341 non-terminal states (paper: over
    a third); ROTATE's, with the default objective (Eq. 7), sabotages less. Our ROTATE teammates
    do not reach the paper's "near-zero everywhere" in every seed (measured and explained in
    docs/rotate.md), so over all states the check is the comparison, with margins; over the
    states the training visits it is issue 27's target: Eq. 7 above 0.9 at no more than 5% in
    every seed, per-trajectory regret at 20% or more in 2 of 3."""
    per_state = sabotage_analysis.sabotage_experiment("rotate", seeds=3, teammate_objective="eq7")
    per_traj = sabotage_analysis.sabotage_experiment("per_trajectory", seeds=3)
    assert per_state.p_sabotage.shape == per_traj.p_sabotage.shape == (3, 341)
    summary = sabotage_analysis.sabotage_summary
    ours, theirs = summary(per_state), summary(per_traj)
    print({k: v.round(3).tolist() for k, v in ours.items()})
    print({k: v.round(3).tolist() for k, v in theirs.items()})
    assert theirs["frac_high"].mean() >= 0.25
    assert ours["frac_high"].mean() <= theirs["frac_high"].mean() - 0.1
    assert ours["mean"].mean() <= theirs["mean"].mean() - 0.1
    assert np.all(ours["trained_frac_high"] <= 0.05)
    assert np.sum(theirs["trained_frac_high"] >= 0.2) >= 2
    # and in play with the ego it was trained against: Eq. 7's teammate almost never plays S
    assert np.all(ours["p_sabotage_xp"] < 0.05) and np.all(theirs["p_sabotage_xp"] > 0.5)
