"""Native JAX matrix games: the sabotage game (paper Sec. 6, RQ2) and the App. A regret example.

Sabotage game (`sabotage-v1`): two agents, actions H, T, S, payoff (both agents)
[[1, 0, -1], [0, 1, -1], [-1, -1, -1]]; S by either agent gives -1 and ends the episode; the
game lasts 5 steps; each agent observes the full history of joint actions. Non-terminal states
are the histories of 0..4 joint actions without S: 1 + 4 + 16 + 64 + 256 = 341
(`enumerate_nonterminal_states`).

Regret example (`matrix-regret-v1`): one step; seat 0 (ego) plays rows A/B, seat 1 (teammate)
columns X/Y, payoff [[5, 1], [5, 0]] for both. The regret-maximising teammate (Y) minimises
return with every ego policy.

Both games end by termination (the game is over), never by truncation.
May import jax, flax, numpy and aht_bench.envs.core only.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from aht_bench.envs.core import Environment, EnvState

SABOTAGE_PAYOFF = ((1.0, 0.0, -1.0), (0.0, 1.0, -1.0), (-1.0, -1.0, -1.0))
SABOTAGE_ACTIONS = ("H", "T", "S")
SABOTAGE_STEPS = 5
REGRET_PAYOFF = ((5.0, 1.0), (5.0, 0.0))


@struct.dataclass
class MatrixParams:
    """Numeric parameters (vmappable): the team payoff for each joint action."""

    payoff: jax.Array  # (num_actions, num_actions) float32: payoff[a_seat0, a_seat1]


@struct.dataclass
class MatrixState:
    """State of a repeated two-player matrix game."""

    history: jax.Array  # (steps, 2) int32: joint action at each step, -1 before it is played
    time: jax.Array  # () int32: steps played
    ended: jax.Array  # () bool: an ending action was played


class RepeatedMatrixGame(Environment[MatrixState]):
    """A two-player matrix game repeated for `steps` steps, observing the joint-action history.

    Each agent's observation is the history one-hot encoded as (steps, 2, num_actions), with
    its own action first and its partner's second, flattened; steps not yet played are zero.
    `ending_action` (if set) ends the game when either agent plays it.
    """

    def __init__(
        self,
        task_id: str,
        payoff: tuple[tuple[float, ...], ...],
        action_names: tuple[str, ...],
        steps: int,
        ending_action: int | None = None,
    ):
        self.task_id = task_id
        self.num_agents = 2
        self.num_actions = len(action_names)
        self.action_names = action_names
        self.horizon = steps
        self.obs_dim = steps * 2 * self.num_actions
        self.ending_action = ending_action
        self.params = MatrixParams(payoff=jnp.asarray(payoff, jnp.float32))

    def _reset_inner(self, key: jax.Array) -> MatrixState:
        del key  # the start state is fixed
        return MatrixState(
            history=jnp.full((self.horizon, 2), -1, jnp.int32),
            time=jnp.zeros((), jnp.int32),
            ended=jnp.zeros((), bool),
        )

    def _step_inner(
        self, key: jax.Array, inner: MatrixState, actions: jax.Array
    ) -> tuple[MatrixState, jax.Array, jax.Array]:
        del key  # deterministic
        reward = self.params.payoff[actions[0], actions[1]]
        history = inner.history.at[inner.time].set(actions)
        ended = inner.ended
        if self.ending_action is not None:
            ended = ended | jnp.any(actions == self.ending_action)
        next_inner = MatrixState(history=history, time=inner.time + 1, ended=ended)
        rewards = jnp.full((2,), reward, jnp.float32)
        return next_inner, rewards, jnp.zeros((2,), jnp.float32)

    def _observe_inner(self, inner: MatrixState) -> jax.Array:
        onehot = jax.nn.one_hot(inner.history, self.num_actions)  # (steps, 2, A); -1 -> zeros
        own_first = jnp.stack([onehot, onehot[:, ::-1]])  # (2 agents, steps, 2, A)
        return own_first.reshape(2, self.obs_dim)

    def _time(self, inner: MatrixState) -> jax.Array:
        return inner.time

    def _is_terminal(self, inner: MatrixState) -> jax.Array:
        return inner.ended | (inner.time >= self.horizon)

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.obs_dim, np.float32), np.ones(self.obs_dim, np.float32)

    def _validate_inner(self, inner: MatrixState) -> list[str]:
        problems = []
        h, t, ended = np.asarray(inner.history), int(inner.time), bool(inner.ended)
        if h.shape != (self.horizon, 2):
            return [f"history has shape {h.shape}, expected ({self.horizon}, 2)"]
        if not 0 <= t <= self.horizon:
            problems.append(f"time {t} is outside [0, {self.horizon}]")
            return problems
        played, unplayed = h[:t], h[t:]
        if np.any((played < 0) | (played >= self.num_actions)):
            problems.append(
                f"history before time {t} holds actions outside [0, {self.num_actions})"
            )
        if np.any(unplayed != -1):
            problems.append(f"history after time {t} must be -1 (not yet played)")
        if self.ending_action is not None:
            ends = np.any(played == self.ending_action, axis=1)
            if np.any(ends[:-1]):
                problems.append("the history continues after an ending action")
            if ended != bool(ends.any()):
                problems.append(f"ended={ended} disagrees with the history")
        elif ended:
            problems.append("ended is set but this game has no ending action")
        return problems

    def render_text(self, state: EnvState[MatrixState]) -> str:
        """The history as text, e.g. 't=2  H/H T/H'."""
        inner = jax.tree.map(np.asarray, state.inner)
        t = int(inner.time)
        moves = " ".join(
            f"{self.action_names[a]}/{self.action_names[b]}" for a, b in inner.history[:t]
        )
        tail = " (ended)" if bool(inner.ended) else ""
        ret = np.asarray(state.episode_return)
        return f"t={t}  {moves or '-'}{tail}  return={ret[0]:g}"


def sabotage_game() -> RepeatedMatrixGame:
    """`sabotage-v1`: the paper's 5-step sabotage game."""
    return RepeatedMatrixGame(
        "sabotage-v1", SABOTAGE_PAYOFF, SABOTAGE_ACTIONS, SABOTAGE_STEPS, ending_action=2
    )


def regret_matrix_game() -> RepeatedMatrixGame:
    """`matrix-regret-v1`: the one-step game of the paper's App. A."""
    return RepeatedMatrixGame("matrix-regret-v1", REGRET_PAYOFF, ("A/X", "B/Y"), 1)


def enumerate_nonterminal_states(env: RepeatedMatrixGame) -> EnvState[MatrixState]:
    """Every non-terminal state of a game with an ending action, batched on a leading axis.

    For the sabotage game: all histories of 0..4 joint actions from {H, T}^2, 341 states, in
    order of length, then lexicographically.
    """
    if env.ending_action is None:
        raise ValueError(f"{env.task_id} has no ending action; its states are all histories")
    safe = [a for a in range(env.num_actions) if a != env.ending_action]
    joint = list(itertools.product(safe, safe))
    payoff = np.asarray(env.params.payoff)
    histories, times, returns = [], [], []
    for t in range(env.horizon):
        for seq in itertools.product(joint, repeat=t):
            h = np.full((env.horizon, 2), -1, np.int32)
            if t:
                h[:t] = np.asarray(seq, np.int32)
            histories.append(h)
            times.append(t)
            returns.append(sum(payoff[a, b] for a, b in seq))
    n = len(histories)
    inner = MatrixState(
        history=jnp.asarray(np.stack(histories)),
        time=jnp.asarray(times, jnp.int32),
        ended=jnp.zeros((n,), bool),
    )
    episode_return = jnp.repeat(jnp.asarray(returns, jnp.float32)[:, None], 2, axis=1)
    return EnvState(inner=inner, episode_return=episode_return)
