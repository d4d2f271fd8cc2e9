"""Neural-network policies: a feed-forward actor-critic and a recurrent ego agent (flax linen).

Both follow the protocol in `aht_bench.policies.core`; their `params` are the flax variables
dict (`{"params": ...}`) that `init(key)` returns, a plain pytree of float32 arrays.

- `MLPActorCritic`: the paper's state-based teammates and best responses (appendix "Agent
  Architectures"): separate actor and critic MLPs on the observation, with `num_value_heads`
  (K) critic outputs, one per interaction type (e.g. K=2 for a ROTATE/PAIRED teammate that
  estimates returns with the ego agent and with its best response). Carry is `()`.
- `RecurrentEgo`: the history-conditioned ego agent. The paper uses an S5 actor-critic; this is
  a GRU (flax `GRUCell`), chosen for simplicity and speed on CPU. The input at each step is the
  observation and a one-hot of the agent's previous action (all zeros before the first action),
  and the carry is `GRUCarry(hidden (H,), prev_action int32 ())`, with `prev_action = -1`
  meaning "no previous action" in a fresh carry.

Every network also has a pure `evaluate(params, carry, obs) -> (logits, values, carry)` for
PPO: `act` is exactly `evaluate`, a categorical sample from the logits, and (for the GRU)
writing the sampled action into the carry's `prev_action`.

Both classes are frozen dataclasses (hashable, usable as static jit arguments); `config()` gives
their constructor keyword arguments as JSON-able values, which `aht_bench.policies.io` stores.

May import jax, flax, numpy and aht_bench.policies.core only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.policies.core import Carry, Extras, Params


def _dense(features: int, scale: float, name: str) -> nn.Dense:
    # Orthogonal init with PureJaxRL's scales: sqrt(2) for tanh/relu trunks, 0.01 for the policy
    # logits (a near-uniform initial policy), 1.0 for the value heads.
    return nn.Dense(
        features,
        kernel_init=nn.initializers.orthogonal(scale),
        bias_init=nn.initializers.zeros,
        name=name,
    )


def _apply_dense(p: Params, x: jax.Array) -> jax.Array:
    """A `_dense` layer with params `p` ({"kernel", "bias"}) on `x` (..., in): flax's Dense."""
    out: Any = nn.Dense(p["kernel"].shape[-1]).apply({"params": p}, x)
    return out


class _MLPActorCriticNet(nn.Module):
    num_actions: int
    num_value_heads: int
    hidden: tuple[int, ...]

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = obs
        for i, h in enumerate(self.hidden):
            x = nn.tanh(_dense(h, np.sqrt(2.0), f"actor_{i}")(x))
        logits = _dense(self.num_actions, 0.01, "actor_out")(x)
        v = obs
        for i, h in enumerate(self.hidden):
            v = nn.tanh(_dense(h, np.sqrt(2.0), f"critic_{i}")(v))
        values = _dense(self.num_value_heads, 1.0, "critic_out")(v)
        return logits, values


class _GRUActorCriticNet(nn.Module):
    num_actions: int
    num_value_heads: int
    hidden: int

    @nn.compact
    def __call__(
        self, h: jax.Array, obs: jax.Array, prev_action: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        # one_hot(-1) is all zeros: "no previous action" at the start of an episode.
        x = jnp.concatenate([obs, jax.nn.one_hot(prev_action, self.num_actions, dtype=obs.dtype)])
        x = nn.relu(_dense(self.hidden, np.sqrt(2.0), "embed")(x))
        h, y = nn.GRUCell(features=self.hidden, name="gru")(h, x)
        a = nn.relu(_dense(self.hidden, np.sqrt(2.0), "actor_0")(y))
        logits = _dense(self.num_actions, 0.01, "actor_out")(a)
        c = nn.relu(_dense(self.hidden, np.sqrt(2.0), "critic_0")(y))
        values = _dense(self.num_value_heads, 1.0, "critic_out")(c)
        return h, logits, values


def _sample(key: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(action int32 (), log pi(action) float32 ()) for a categorical over `logits` (A,)."""
    action = jax.random.categorical(key, logits).astype(jnp.int32)
    log_prob = jax.nn.log_softmax(logits)[action]
    return action, log_prob


def _check_obs(obs: jax.Array, obs_dim: int, name: str) -> None:
    if obs.shape != (obs_dim,):
        raise ValueError(
            f"{name} takes one agent's observation of shape ({obs_dim},), got {obs.shape}; "
            "vmap over the batch axis for batches"
        )


@dataclasses.dataclass(frozen=True)
class MLPActorCritic:
    """Feed-forward actor-critic with K value heads; carry `()`.

    extras of `act`: "logits" (A,) float32, "log_prob" () float32, "value" (K,) float32.
    """

    obs_dim: int
    num_actions: int
    num_value_heads: int = 1
    hidden: tuple[int, ...] = (64, 64)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))

    @property
    def _net(self) -> _MLPActorCriticNet:
        return _MLPActorCriticNet(self.num_actions, self.num_value_heads, self.hidden)

    def config(self) -> dict[str, Any]:
        """Constructor keyword arguments, JSON-able."""
        return {
            "obs_dim": self.obs_dim,
            "num_actions": self.num_actions,
            "num_value_heads": self.num_value_heads,
            "hidden": list(self.hidden),
        }

    def init(self, key: jax.Array) -> Params:
        """Fresh flax variables `{"params": ...}`."""
        return self._net.init(key, jnp.zeros((self.obs_dim,), jnp.float32))

    def init_carry(self, batch_shape: tuple[int, ...]) -> Carry:
        return ()

    def evaluate(
        self, params: Params, carry: Carry, obs: jax.Array
    ) -> tuple[jax.Array, jax.Array, Carry]:
        """(logits (A,), values (K,), carry) for one observation (obs_dim,)."""
        _check_obs(obs, self.obs_dim, "MLPActorCritic")
        out: Any = self._net.apply(params, obs)
        logits, values = out
        return logits, values, carry

    def act(
        self, params: Params, carry: Carry, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, Carry, Extras]:
        logits, values, carry = self.evaluate(params, carry, obs)
        action, log_prob = _sample(key, logits)
        return action, carry, {"logits": logits, "log_prob": log_prob, "value": values}


class GRUCarry(NamedTuple):
    """The memory of a `RecurrentEgo`."""

    hidden: jax.Array  # (..., H) float32: GRU state, zeros at an episode start
    prev_action: jax.Array  # (...,) int32: the agent's last action, -1 at an episode start


@dataclasses.dataclass(frozen=True)
class RecurrentEgo:
    """GRU actor-critic ego agent (the paper's S5 replaced by a GRU) that sees obs + prev action.

    extras of `act`: "logits" (A,) float32, "log_prob" () float32, "value" (K,) float32.
    """

    obs_dim: int
    num_actions: int
    hidden: int = 64
    num_value_heads: int = 1

    @property
    def _net(self) -> _GRUActorCriticNet:
        return _GRUActorCriticNet(self.num_actions, self.num_value_heads, self.hidden)

    def config(self) -> dict[str, Any]:
        """Constructor keyword arguments, JSON-able."""
        return {
            "obs_dim": self.obs_dim,
            "num_actions": self.num_actions,
            "hidden": self.hidden,
            "num_value_heads": self.num_value_heads,
        }

    def init(self, key: jax.Array) -> Params:
        """Fresh flax variables `{"params": ...}`."""
        c = self.init_carry(())
        return self._net.init(key, c.hidden, jnp.zeros((self.obs_dim,), jnp.float32), c.prev_action)

    def init_carry(self, batch_shape: tuple[int, ...]) -> GRUCarry:
        batch_shape = tuple(batch_shape)
        return GRUCarry(
            hidden=jnp.zeros(batch_shape + (self.hidden,), jnp.float32),
            prev_action=jnp.full(batch_shape, -1, jnp.int32),
        )

    def evaluate(
        self, params: Params, carry: GRUCarry, obs: jax.Array
    ) -> tuple[jax.Array, jax.Array, GRUCarry]:
        """(logits (A,), values (K,), carry) for one observation (obs_dim,).

        The returned carry holds the new GRU state and the *unchanged* `prev_action`: the caller
        that picks an action writes it in (`carry._replace(prev_action=action)`), as `act` does.
        """
        _check_obs(obs, self.obs_dim, "RecurrentEgo")
        out: Any = self._net.apply(params, carry.hidden, obs, carry.prev_action)
        hidden, logits, values = out
        return logits, values, carry._replace(hidden=hidden)

    def evaluate_sequence(
        self,
        params: Params,
        carry: GRUCarry,
        obs: jax.Array,
        actions: jax.Array,
        starts: jax.Array,
    ) -> tuple[jax.Array, jax.Array]:
        """(logits (T, B, A), values (T, B, K)) of B sequences of T steps: `evaluate` at every
        step, the carry reset where `starts` (T, B) and told the action taken (`actions`
        (T, B)) after each step, starting from `carry` (leaves (B, ...)).

        The same numbers as scanning `evaluate`, computed with only the GRU recurrence inside
        the scan: the input layer and the actor and critic heads run once over all T x B
        steps (PPO re-runs the ego over every minibatch; on CPU the per-step scan was most of
        it).
        """
        p = params["params"]
        first = jnp.where(starts[0], -1, carry.prev_action)
        prev_action = jnp.where(starts[1:], -1, actions[:-1])
        prev_action = jnp.concatenate([first[None], prev_action]).astype(jnp.int32)
        x = jnp.concatenate(
            [obs, jax.nn.one_hot(prev_action, self.num_actions, dtype=obs.dtype)], axis=-1
        )
        x = nn.relu(_apply_dense(p["embed"], x))
        gru = nn.GRUCell(features=self.hidden)

        def _step(h: jax.Array, inputs: tuple[jax.Array, jax.Array]):
            x_t, start_t = inputs
            h = jnp.where(start_t[:, None], jnp.zeros_like(h), h)
            out: Any = gru.apply({"params": p["gru"]}, h, x_t)
            return out

        _, y = jax.lax.scan(_step, carry.hidden, (x, starts))
        logits = _apply_dense(p["actor_out"], nn.relu(_apply_dense(p["actor_0"], y)))
        values = _apply_dense(p["critic_out"], nn.relu(_apply_dense(p["critic_0"], y)))
        return logits, values

    def act(
        self, params: Params, carry: GRUCarry, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, GRUCarry, Extras]:
        logits, values, carry = self.evaluate(params, carry, obs)
        action, log_prob = _sample(key, logits)
        carry = carry._replace(prev_action=action)
        return action, carry, {"logits": logits, "log_prob": log_prob, "value": values}
