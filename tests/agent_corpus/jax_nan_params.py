"""Bad: the JAX fast path's params contain NaN (jax_policy returns a corrupted weight)."""

import jax.numpy as jnp

TASKS = ("lbf-v1",)


class Linear:
    def init_carry(self, batch_shape):
        return ()

    def act(self, params, carry, obs, key):
        return jnp.argmax(params["w"] @ obs).astype(jnp.int32), carry, {}


def jax_policy(task_id):
    w = jnp.ones((6, 16)).at[2, 3].set(jnp.nan)
    return Linear(), {"w": w}
