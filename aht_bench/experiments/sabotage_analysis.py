"""ROTATE on the 5-step sabotage game (paper Sec. 6, RQ2), read exactly over the game tree: train
it (`sabotage_experiment`), then take the last generated teammate's action probabilities at
each of the 341 non-terminal states (`sabotage_action_probabilities`), the probability that an
episode with its best response or with the ego passes each state (`partner_action_probabilities`,
`joint_reach_probabilities`; the recurrent ego run along each history) and the fractions
`aht-bench experiment sabotage` reports (`sabotage_summary`). The command's files, tables and
plots are `aht_bench.experiments.sabotage`.

May import jax, numpy, the standard library, aht_bench.envs, aht_bench.policies,
aht_bench.training and aht_bench.algorithms.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.algorithms.rotate import RotateConfig, init_seeds, networks, preset, run, setup
from aht_bench.envs.core import EnvState
from aht_bench.envs.matrix import RepeatedMatrixGame, enumerate_nonterminal_states
from aht_bench.policies.core import Params
from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.training.rollout import make_env


class SabotageResult(NamedTuple):
    """What `sabotage_experiment` returns."""

    p_sabotage: np.ndarray  # (num_seeds, 341) float: the last teammate's P(S) at each state
    p_actions: np.ndarray  # (num_seeds, 341, 3) float: its P(H), P(T), P(S) at each state
    own_reach: np.ndarray  # (num_seeds, 341) float: P(the teammate plays its own part of the
    #   state's history) = product of its probabilities of its past actions (1 at the start)
    sp_reach: np.ndarray  # (num_seeds, 341) float: P(an episode of the teammate with its best
    #   response passes the state), exact over the game tree (0 where there is no BR)
    xp_reach: np.ndarray  # (num_seeds, 341) float: the same with the ego it was trained against
    #   (the ego after the second-to-last iteration; the initial ego with one iteration)
    states: EnvState[Any]  # the 341 non-terminal states, in `enumerate_nonterminal_states` order
    metrics: dict[str, np.ndarray]  # name -> (num_seeds, iterations): the runs' metrics
    config: RotateConfig  # the config that was run


def _sabotage_game(config: RotateConfig) -> RepeatedMatrixGame:
    env = make_env(config.task_id, config.shaping).env
    if not isinstance(env, RepeatedMatrixGame) or env.ending_action is None:
        raise ValueError(f"task_id={config.task_id!r} is not the sabotage game (sabotage-v1)")
    return env


def sabotage_action_probabilities(teammate: Params, config: RotateConfig) -> np.ndarray:
    """A teammate's action probabilities (params of `networks(config).teammate`, unbatched) at
    each of the 341 non-terminal states of the sabotage game, seen from its seat: (341, 3)."""
    return _mlp_probabilities(networks(config).teammate, teammate, config, 1 - config.ego_seat)


def _mlp_probabilities(
    net: MLPActorCritic, params: Params, config: RotateConfig, seat: int
) -> np.ndarray:
    """(341, 3): an MLP policy's action probabilities at every non-terminal state from `seat`."""
    env = _sabotage_game(config)
    obs = jax.vmap(env.observe)(enumerate_nonterminal_states(env)).obs[:, seat]
    logits, _, _ = jax.vmap(net.evaluate, in_axes=(None, None, 0))(params, (), obs)
    return np.asarray(jax.nn.softmax(logits))


def partner_action_probabilities(
    params: Params, network: MLPActorCritic | RecurrentEgo, config: RotateConfig
) -> np.ndarray:
    """The teammate's partner's action probabilities (a best response's or the ego's params,
    unbatched) at each of the 341 non-terminal states, seen from the ego's seat: (341, 3). The
    recurrent ego runs along each state's history from the episode start, its memory told its
    own past actions, as in a rollout."""
    if isinstance(network, MLPActorCritic):
        return _mlp_probabilities(network, params, config, config.ego_seat)
    env = _sabotage_game(config)
    states = enumerate_nonterminal_states(env)
    obs = jax.vmap(env.observe)(states).obs[:, config.ego_seat]
    history = np.asarray(states.inner.history)
    played = (history[:, :, 0] >= 0).sum(axis=1)
    index = _history_index(history)
    hidden = np.zeros((len(history), network.hidden), np.float32)
    out = np.zeros((len(history), network.num_actions), np.float32)
    for depth in range(int(played.max()) + 1):  # a state's parent is one step shorter
        rows = np.flatnonzero(played == depth)
        carry = network.init_carry((len(rows),))
        if depth:
            parents = [index[_played(history[i][: depth - 1])] for i in rows]
            carry = carry._replace(
                hidden=jnp.asarray(hidden[parents]),
                prev_action=jnp.asarray(history[rows, depth - 1, config.ego_seat], jnp.int32),
            )
        logits, _, carry = jax.vmap(network.evaluate, in_axes=(None, 0, 0))(
            params, carry, obs[rows]
        )
        hidden[rows] = np.asarray(carry.hidden)
        out[rows] = np.asarray(jax.nn.softmax(logits))
    return out


def _played(history: np.ndarray) -> tuple[tuple[int, ...], ...]:
    return tuple(map(tuple, history[history[:, 0] >= 0].tolist()))


def _history_index(history: np.ndarray) -> dict[tuple[tuple[int, ...], ...], int]:
    return {_played(h): i for i, h in enumerate(history)}


def joint_reach_probabilities(
    p_teammate: np.ndarray, p_partner: np.ndarray | None, config: RotateConfig
) -> np.ndarray:
    """(341,) for each state, the probability that the teammate with action probabilities
    `p_teammate` (341, 3) and its partner with `p_partner` (341, 3, from the ego's seat) play
    the state's history: the product of both seats' probabilities of their actions at each
    earlier state. `p_partner=None` takes the partner's actions as given (`own_reach`)."""
    env = _sabotage_game(config)
    history = np.asarray(enumerate_nonterminal_states(env).inner.history)
    seat = 1 - config.ego_seat
    index = _history_index(history)
    reach = np.ones(len(history))
    for i, h in enumerate(history):
        played = h[h[:, 0] >= 0]
        for t in range(len(played)):
            prefix = index[_played(played[:t])]
            reach[i] *= p_teammate[prefix, played[t, seat]]
            if p_partner is not None:
                reach[i] *= p_partner[prefix, played[t, config.ego_seat]]
    return reach


def own_reach_probabilities(p_actions: np.ndarray, config: RotateConfig) -> np.ndarray:
    """(341,) for each state, the probability that the teammate with action probabilities
    `p_actions` (341, 3) plays its own actions of the state's history (the partner's actions
    given): states near 0 are ones its rollouts (almost) never visit, whatever the partner."""
    return joint_reach_probabilities(p_actions, None, config)


def sabotage_summary(
    result: SabotageResult, low: float = 0.05, high: float = 0.9, reached: float = 0.01
) -> dict[str, np.ndarray]:
    """Per seed (num_seeds,): the fraction of the 341 states with P(S) < `low` and > `high`;
    the same over the states its training reaches (`trained_*`: an episode with its best
    response or with the ego it was trained against passes the state with probability >=
    `reached`, the states Eq. 7 bounds its competence on) and over the states its own actions
    reach (`reached_*`, whatever the partner plays); and the probability that it plays S in
    an episode with the ego (`p_sabotage_xp`) and with its best response (`p_sabotage_sp`)."""
    p, on = result.p_sabotage, result.own_reach >= reached
    trained = np.maximum(result.sp_reach, result.xp_reach) >= reached
    count = np.maximum(on.sum(axis=1), 1)
    trained_count = np.maximum(trained.sum(axis=1), 1)
    return {
        "frac_low": (p < low).mean(axis=1),
        "frac_high": (p > high).mean(axis=1),
        "mean": p.mean(axis=1),
        "trained_states": trained.sum(axis=1),
        "trained_frac_low": ((p < low) & trained).sum(axis=1) / trained_count,
        "trained_frac_high": ((p > high) & trained).sum(axis=1) / trained_count,
        "p_sabotage_xp": (result.xp_reach * p).sum(axis=1),
        "p_sabotage_sp": (result.sp_reach * p).sum(axis=1),
        "reached_states": on.sum(axis=1),
        "reached_frac_low": ((p < low) & on).sum(axis=1) / count,
        "reached_frac_high": ((p > high) & on).sum(axis=1) / count,
    }


def sabotage_experiment(
    variant: str = "rotate",
    seeds: int = 3,
    competence_weight_xp: float | None = None,
    competence_weight_sp: float | None = None,
    competence_weight_p0: float | None = None,
    key: jax.Array | None = None,
    **overrides: Any,
) -> SabotageResult:
    """Paper Sec. 6 RQ2: train ROTATE (`preset("sabotage", "sabotage")`, `variant`, lambdas
    where given, other config `overrides`, e.g. `teammate_objective="eq7"`: the preset pins
    `transition_mean`) for `seeds` seeds (vmapped), then read the LAST generated teammate's
    probability of S at each of the 341 non-terminal states."""
    fields = {
        "variant": variant,
        "competence_weight_xp": competence_weight_xp,
        "competence_weight_sp": competence_weight_sp,
        "competence_weight_p0": competence_weight_p0,
    }
    fields = {k: v for k, v in fields.items() if v is not None} | overrides
    config = preset("sabotage", "sabotage-v1", **fields)
    run_setup = setup(config)
    start = init_seeds(jax.random.PRNGKey(0) if key is None else key, run_setup, seeds)
    egos = [start.ego]  # the ego before each iteration, then the final one
    result = run(start, run_setup, on_iteration=lambda _, state, __: egos.append(state.ego))
    last = config.iterations - 1
    ego_of_last = egos[last]  # the ego the last teammate was generated against
    nets = run_setup.networks
    buffer = result.state.buffer

    def seed_of(tree: Any, s: int, slot: int | None = last) -> Any:
        return jax.tree.map(lambda x: x[s] if slot is None else x[s, slot], tree)

    probs = np.stack(
        [sabotage_action_probabilities(seed_of(buffer.teammates, s), config) for s in range(seeds)]
    )
    xp = [
        partner_action_probabilities(seed_of(ego_of_last, s, None), nets.ego, config)
        for s in range(seeds)
    ]
    has_br = buffer.best_responses is not None
    sp = [
        partner_action_probabilities(seed_of(buffer.best_responses, s), nets.best_response, config)
        if has_br
        else None
        for s in range(seeds)
    ]
    env = _sabotage_game(config)
    assert env.ending_action is not None
    return SabotageResult(
        p_sabotage=probs[..., env.ending_action],
        p_actions=probs,
        own_reach=np.stack([own_reach_probabilities(p, config) for p in probs]),
        sp_reach=np.stack(
            [
                joint_reach_probabilities(p, q, config) if q is not None else np.zeros(len(p))
                for p, q in zip(probs, sp, strict=True)
            ]
        ),
        xp_reach=np.stack(
            [joint_reach_probabilities(p, q, config) for p, q in zip(probs, xp, strict=True)]
        ),
        states=enumerate_nonterminal_states(env),
        metrics=result.metrics,
        config=config,
    )
