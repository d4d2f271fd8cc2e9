"""LBF start states: `LBF._reset_inner` (rewritten without Jumanji's generator call, for speed)
gives bit for bit what the generator gives, plus agent positions drawn again uniformly over the
cells without food. The reference is the generator itself, run side by side on the same keys."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench.envs.lbf import GRID_SIZE, make_lbf


def _generator_reset(env, key):
    """The reset as written on top of Jumanji's `RandomGenerator(force_coop=True)`."""
    key_generator, key_agents = jax.random.split(key)
    inner = env.generator(key_generator)
    food = jnp.asarray(inner.food_items.position)
    free = jnp.ones((GRID_SIZE, GRID_SIZE), bool).at[food[:, 0], food[:, 1]].set(False)
    cells = jax.random.choice(
        key_agents, GRID_SIZE * GRID_SIZE, (env.num_agents,), replace=False, p=free.ravel()
    )
    position = jnp.stack(jnp.divmod(cells, GRID_SIZE), axis=1).astype(jnp.int32)
    return inner.replace(agents=inner.agents.replace(position=position), key=key_generator)


@pytest.mark.parametrize("variant", ["lbf-v1", "lbf-4p-v1"])
def test_reset_matches_jumanji_generator_bit_for_bit(variant):
    env = make_lbf(variant)
    keys = jax.random.split(jax.random.PRNGKey(11), 2000)
    ours = jax.jit(jax.vmap(env._reset_inner))(keys)
    reference = jax.jit(jax.vmap(lambda k: _generator_reset(env, k)))(keys)
    assert jax.tree.structure(ours) == jax.tree.structure(reference)
    for (path, want), got in zip(
        jax.tree.leaves_with_path(reference), jax.tree.leaves(ours), strict=True
    ):
        name = jax.tree_util.keystr(path)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=name)
