"""A stateful NumPy adapter that runs any `Policy` in a plain Python loop.

    runner = PolicyRunner(policy, params, seed=0)
    runner.reset()                   # at every episode start
    action = runner.act(obs)         # obs: np.ndarray (obs_dim,) -> int

The runner keeps the policy's carry and a PRNG key. Each `act` splits the key as
`key, step_key = jax.random.split(key)` and calls `policy.act(params, carry, obs, step_key)`,
jitted once per policy object (shared by all runners of an equal policy; policies that are
pytrees, such as the Overcooked heuristics, share one compile per structure). `reset()` replaces
the carry by `init_carry(())` and keeps the key stream going; `reset(seed)` also reseeds.

May import jax, numpy and aht_bench.policies.core only.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.policies.core import Params, Policy

_JITTED: weakref.WeakKeyDictionary[Any, Callable[..., Any]] = weakref.WeakKeyDictionary()


@jax.jit
def _act_of_pytree_policy(
    policy: Any, params: Params, carry: Any, obs: jax.Array, key: jax.Array
) -> Any:
    return policy.act(params, carry, obs, key)


def _is_pytree_policy(policy: Policy) -> bool:
    """Whether `policy` is a registered pytree (e.g. a flax struct) with array-like leaves."""
    leaves = jax.tree.leaves(policy)
    return bool(leaves) and not (len(leaves) == 1 and leaves[0] is policy)


def _jitted_act(policy: Policy) -> Callable[..., Any]:
    if _is_pytree_policy(policy):
        # The policy travels as an argument: every policy of one structure (e.g. the Overcooked
        # heuristics of one layout, whatever their role and p) shares one compiled act.
        return functools.partial(_act_of_pytree_policy, policy)
    try:
        return _JITTED[policy]
    except KeyError:
        pass
    except TypeError:  # unhashable or not weak-referenceable: jit for this runner only
        return jax.jit(policy.act)
    fn = jax.jit(policy.act)
    _JITTED[policy] = fn
    return fn


class PolicyRunner:
    """Runs `policy` with `params` one observation at a time; see the module docstring."""

    def __init__(self, policy: Policy, params: Params, seed: int = 0) -> None:
        self.policy = policy
        self.params = params
        self._act = _jitted_act(policy)
        self._obs_dim: int | None = getattr(policy, "obs_dim", None)
        self.key = jax.random.PRNGKey(seed)
        self.carry = policy.init_carry(())

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode: fresh carry; with `seed`, also a fresh key stream."""
        self.carry = self.policy.init_carry(())
        if seed is not None:
            self.key = jax.random.PRNGKey(seed)

    def act(self, obs: np.ndarray) -> int:
        """The action for one observation (obs_dim,), as a Python int."""
        x = jnp.asarray(obs, jnp.float32)
        if x.ndim != 1 or (self._obs_dim is not None and x.shape[0] != self._obs_dim):
            want = f"({self._obs_dim},)" if self._obs_dim is not None else "(obs_dim,)"
            raise ValueError(
                f"PolicyRunner.act takes one agent's observation of shape {want}, got "
                f"{np.shape(obs)}; for a batch, vmap policy.act instead"
            )
        self.key, step_key = jax.random.split(self.key)
        action, self.carry, _ = self._act(self.params, self.carry, x, step_key)
        return int(action)
