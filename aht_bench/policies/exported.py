"""A user's JAX policy carried out of the sandbox as compiled code, run on the jitted path here.

    # in the sandboxed worker, where the agent file's Python runs:
    blob, tensors, info = export_policy(policy, params, obs_dim, platform="cpu")
    # in the evaluator, which never runs the agent's Python:
    policy, params = load_exported(blob, tensors, info)   # the aht_bench.policies protocol

`export_policy` traces `act`, vmapped over a symbolic batch `b`, with `jax.export` into
StableHLO; params travel as safetensors. The evaluator deserialises the module and checks it
before use (`check_module`): no effects, and no custom call but JAX's own shape assertions, so
the module is pure XLA arithmetic over its inputs; a host callback (`jax.debug.print`,
`pure_callback`, `io_callback`), which would call back into the evaluator's Python, is refused.

`ExportedPolicy.act` runs the module on one observation and, under `vmap` (the runner vmaps over
seats, seatings and episodes), on the whole batch at once: a `custom_vmap` rule flattens the
leading axes into `b`. The carry is the policy's carry leaves as a flat tuple, started from the
worker's `init_carry` of one (which must broadcast: `init_carry((2,))` equal to two copies).

May import jax, numpy, safetensors and the standard library.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

FORMAT = "aht-bench-exported-policy"
FORMAT_VERSION = 1
ALLOWED_CUSTOM_CALLS = frozenset({"shape_assertion"})
"""Custom-call targets an exported policy may contain: JAX's checks of the symbolic batch."""
_CUSTOM_CALL = re.compile(r"custom_call\s*@([\w.$-]+)|call_target_name\s*=\s*\"([^\"]*)\"")


class ExportError(ValueError):
    """A JAX policy that cannot be carried out of the sandbox, or a module that must not run."""


def _key_data(key: jax.Array) -> jax.Array:
    return jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key


def export_policy(
    policy: Any, params: Any, obs_dim: int, platform: str
) -> tuple[bytes, dict[str, np.ndarray], dict[str, Any]]:
    """(serialised module, params tensors, info JSON) of `policy` with `params`; runs where the
    agent's code may run (the sandbox). Raises `ExportError` for a carry that does not
    broadcast or a policy that cannot be exported."""
    from jax import export

    carry_one = policy.init_carry((1,))
    carry_two = policy.init_carry((2,))
    one_leaves, carry_tree = jax.tree.flatten(carry_one)
    two_leaves, two_tree = jax.tree.flatten(carry_two)
    if carry_tree != two_tree or any(
        np.shape(b) != (2, *np.shape(a)[1:])
        or not np.array_equal(np.broadcast_to(np.asarray(a), np.shape(b)), np.asarray(b))
        for a, b in zip(one_leaves, two_leaves, strict=True)
    ):
        raise ExportError(
            "init_carry(batch_shape) must give every batch entry the same start carry "
            "(init_carry((2,)) equal to two copies of init_carry((1,)))"
        )
    param_leaves, param_tree = jax.tree.flatten(params)
    (b,) = export.symbolic_shape("b")

    def batched(param_leaves: list, carry_leaves: list, obs: jax.Array, keys: jax.Array) -> Any:
        p = jax.tree.unflatten(param_tree, param_leaves)
        carry = jax.tree.unflatten(carry_tree, carry_leaves)
        action, carry, _ = jax.vmap(policy.act, in_axes=(None, 0, 0, 0))(p, carry, obs, keys)
        return jnp.asarray(action, jnp.int32), tuple(jax.tree.leaves(carry))

    def spec(x: Any, lead: tuple[Any, ...] = ()) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct((*lead, *np.shape(x)), np.asarray(x).dtype)

    key_shape = np.shape(_key_data(jax.random.PRNGKey(0)))
    concrete = (
        [spec(x) for x in param_leaves],
        [spec(np.asarray(x)[0], (2,)) for x in one_leaves],
        jax.ShapeDtypeStruct((2, obs_dim), jnp.float32),
        jax.ShapeDtypeStruct((2, *key_shape), jnp.uint32),
    )
    try:
        closed = jax.make_jaxpr(batched)(*concrete)
    except Exception as e:  # the policy's own error, while tracing
        raise ExportError(f"the policy could not be traced ({type(e).__name__}: {e})") from e
    calls = sorted(_callbacks(closed.jaxpr))
    if closed.effects or calls:
        raise ExportError(
            "the JAX policy has side effects or host callbacks "
            f"({', '.join(calls) or 'effects'}: e.g. jax.debug.print, pure_callback), which the "
            "sandboxed fast path does not run; remove them (print in act(obs) instead)"
        )
    args = (
        [spec(x) for x in param_leaves],
        [spec(np.asarray(x)[0], (b,)) for x in one_leaves],
        jax.ShapeDtypeStruct((b, obs_dim), jnp.float32),
        jax.ShapeDtypeStruct((b, *key_shape), jnp.uint32),
    )
    try:
        exported = export.export(jax.jit(batched), platforms=(platform,))(*args)
    except Exception as e:  # the policy's own error, while tracing
        raise ExportError(f"the policy could not be exported ({type(e).__name__}: {e})") from e
    tensors = {f"p{i}": np.asarray(x) for i, x in enumerate(param_leaves)}
    info = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "obs_dim": int(obs_dim),
        "num_params": len(param_leaves),
        "carry": [np.asarray(x)[0].tolist() for x in one_leaves],
        "carry_dtypes": [str(np.asarray(x).dtype) for x in one_leaves],
    }
    return bytes(exported.serialize()), tensors, info


def _callbacks(jaxpr: Any) -> set[str]:
    """Names of the callback primitives anywhere in `jaxpr` (sub-jaxprs included)."""
    from jax.extend import core

    found = set()
    for eqn in jaxpr.eqns:
        if "callback" in eqn.primitive.name:
            found.add(eqn.primitive.name)
        for sub in core.jaxprs_in_params(eqn.params):
            found |= _callbacks(sub)
    return found


def check_module(exported: Any, info: dict[str, Any]) -> None:
    """Refuse (`ExportError`) a module that is not pure arithmetic over the expected inputs."""
    if exported.ordered_effects or exported.unordered_effects:
        raise ExportError(
            "the JAX policy has side effects (e.g. jax.debug.print or a callback); remove them"
        )
    targets = {a or b for a, b in _CUSTOM_CALL.findall(exported.mlir_module())}
    bad = sorted(targets - ALLOWED_CUSTOM_CALLS)
    if bad:
        raise ExportError(
            f"the JAX policy calls {', '.join(bad)} (custom calls: host callbacks such as "
            "jax.debug.print or pure_callback, or native kernels), which the sandboxed fast "
            "path does not run; write act in plain jax.numpy/jax.lax"
        )
    n_carry = len(info["carry"])
    expected_in = info["num_params"] + n_carry + 2
    if len(exported.in_avals) != expected_in or len(exported.out_avals) != 1 + n_carry:
        raise ExportError("the exported policy does not have the inputs and outputs it declares")
    action = exported.out_avals[0]
    if len(action.shape) != 1 or not jnp.issubdtype(action.dtype, jnp.integer):
        raise ExportError("the exported policy does not return one integer action per batch entry")


def load_exported(
    blob: bytes, tensors: dict[str, np.ndarray], info: dict[str, Any]
) -> tuple[ExportedPolicy, tuple[jax.Array, ...]]:
    """(policy, params) of an exported policy, checked; raises `ExportError`."""
    from jax import export

    if info.get("format") != FORMAT or info.get("format_version") != FORMAT_VERSION:
        raise ExportError(f"not an {FORMAT} v{FORMAT_VERSION}: {json.dumps(info)[:200]}")
    try:
        exported = export.deserialize(bytearray(blob))
    except Exception as e:
        raise ExportError(f"the exported policy cannot be read ({type(e).__name__})") from None
    check_module(exported, info)
    params = tuple(jnp.asarray(tensors[f"p{i}"]) for i in range(info["num_params"]))
    carry = tuple(
        np.asarray(v, dtype=d) for v, d in zip(info["carry"], info["carry_dtypes"], strict=True)
    )
    return ExportedPolicy(exported, carry, int(info["obs_dim"])), params


class ExportedPolicy:
    """An exported policy under the `aht_bench.policies` protocol (params: the leaves tuple)."""

    def __init__(self, exported: Any, carry: tuple[np.ndarray, ...], obs_dim: int) -> None:
        self.exported = exported
        self.carry = carry
        self.obs_dim = obs_dim
        self._single = self._batched_call(())

    def init_carry(self, batch_shape: tuple[int, ...]) -> tuple[jax.Array, ...]:
        return tuple(jnp.broadcast_to(c, (*batch_shape, *c.shape)) for c in self.carry)

    def act(
        self, params: tuple[jax.Array, ...], carry: tuple[jax.Array, ...], obs: jax.Array, key: Any
    ) -> tuple[jax.Array, tuple[jax.Array, ...], dict[str, jax.Array]]:
        action, carry = self._single(params, carry, obs, _key_data(key))
        return action, carry, {}

    def _batched_call(self, lead: tuple[int, ...]) -> Any:
        """The module over leading axes `lead` (flattened into its batch `b`); vmapping it adds
        an axis in front (the custom_vmap rule), so nested vmaps become one call."""
        from jax.custom_batching import custom_vmap

        exported, n = self.exported, int(np.prod(lead, dtype=np.int64))

        @custom_vmap
        def call(params: Any, carry: Any, obs: jax.Array, key: jax.Array) -> Any:
            def flat(x: jax.Array) -> jax.Array:
                return jnp.reshape(x, (n, *x.shape[len(lead) :]))

            action, new = exported.call(
                list(params), [flat(c) for c in carry], flat(obs), flat(key)
            )
            return jnp.reshape(action, lead), tuple(
                jnp.reshape(c, (*lead, *c.shape[1:])) for c in new
            )

        @call.def_vmap
        def _rule(axis_size: int, in_batched: Any, params: Any, carry: Any, obs: Any, key: Any):
            params_b, carry_b, obs_b, key_b = in_batched
            if any(jax.tree.leaves(params_b)):
                raise ExportError("an exported policy's params cannot be batched")

            def lift(x: jax.Array, batched: bool) -> jax.Array:
                return x if batched else jnp.broadcast_to(x, (axis_size, *x.shape))

            carry = tuple(lift(c, b) for c, b in zip(carry, carry_b, strict=True))
            out = self._batched_call((axis_size, *lead))(
                params, carry, lift(obs, obs_b), lift(key, key_b)
            )
            return out, (True, tuple(True for _ in carry))

        return call

    def __repr__(self) -> str:
        return f"ExportedPolicy(obs_dim={self.obs_dim}, carry leaves={len(self.carry)})"


__all__ = ["ExportError", "ExportedPolicy", "check_module", "export_policy", "load_exported"]
