"""Registry, AutoReset reset sources and state files, on the cheap sabotage game."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aht_bench import envs
from aht_bench.envs.matrix import enumerate_nonterminal_states
from aht_bench.envs.registry import register


def test_unknown_id_suggests_the_closest():
    with pytest.raises(envs.UnknownTaskError, match="Did you mean 'forced_coord'"):
        envs.make("forced_cord")
    with pytest.raises(envs.UnknownTaskError, match="Did you mean 'overcooked-cramped_room-v"):
        envs.make("overcooked-cramped_room-v3")


def test_aliases_resolve_to_versioned_ids():
    assert envs.resolve("forced_coord") == "overcooked-forced_coord-v2"
    assert envs.resolve("lbf") == "lbf-v1"
    assert envs.make("sabotage").task_id == "sabotage-v1"


def test_ids_carry_a_version_and_are_never_reregistered():
    expected = {
        "lbf-v1", "lbf-po-v1", "lbf-4p-v1", "sabotage-v1", "matrix-regret-v1",
        *(f"overcooked-{x}-v{v}" for v in (1, 2) for x in
          ("cramped_room", "asymm_advantages", "counter_circuit", "coord_ring", "forced_coord")),
    }  # fmt: skip
    assert set(envs.registered_ids()) == expected
    with pytest.raises(ValueError, match="already registered"):
        register("sabotage-v1", lambda: None)
    with pytest.raises(ValueError, match="must end in a version"):
        register("sabotage", lambda: None)


def test_stored_states_reset_source_samples_uniformly():
    env = envs.make("sabotage-v1")
    stored = enumerate_nonterminal_states(env)
    auto = envs.AutoReset(env, envs.StoredStates(stored))
    keys = jax.random.split(jax.random.PRNGKey(0), 20_000)
    starts, ts = jax.jit(jax.vmap(auto.reset))(keys)
    # every start is one of the stored states, its return restarted at zero
    assert (starts.episode_return == 0).all()
    times = np.asarray(starts.inner.time)
    # uniform over the 341 states: P(time = t) = 4^t / 341
    freq = np.bincount(times, minlength=5) / len(times)
    np.testing.assert_allclose(freq, np.array([1, 4, 16, 64, 256]) / 341, atol=0.015)
    assert (np.asarray(ts.time) == times).all()


def test_autoreset_from_stored_states_restarts_there():
    env = envs.make("sabotage-v1")
    # one stored state: history H/H, H/H, H/H, H/H (time 4): one more step ends the game
    stored = enumerate_nonterminal_states(env)
    last = jax.tree.map(lambda x: x[-1:], stored)
    auto = envs.AutoReset(env, envs.StoredStates(last))
    state, _ = env.reset(jax.random.PRNGKey(0))
    state, ts = auto.step(jax.random.PRNGKey(1), state, jnp.array([2, 0]))  # S ends the game
    assert bool(ts.terminated) and ts.episode_return.tolist() == [-1.0, -1.0]
    assert int(state.inner.time) == 4 and int(ts.time) == 1  # ts reports the ended episode
    np.testing.assert_array_equal(ts.obs, env.observe(state).obs)  # obs of the new start
    assert not np.array_equal(ts.final_obs, ts.obs)
    state, ts = auto.step(jax.random.PRNGKey(2), state, jnp.array([1, 1]))
    assert bool(ts.terminated) and ts.episode_return.tolist() == [1.0, 1.0]


def test_state_file_round_trip_and_corruption(tmp_path):
    env = envs.make("sabotage-v1")
    states = enumerate_nonterminal_states(env)
    path = tmp_path / "states.safetensors"
    card = envs.save_states(path, env, states)
    meta = json.loads(card.read_text())
    assert meta["task_id"] == "sabotage-v1" and meta["batch_shape"] == [341]
    loaded = envs.load_states(path, env)
    for a, b in zip(jax.tree.leaves(states), jax.tree.leaves(loaded), strict=True):
        np.testing.assert_array_equal(a, b)

    with pytest.raises(envs.StateFileError, match="not 'matrix-regret-v1'"):
        envs.load_states(path, envs.make("matrix-regret-v1"))

    blob = bytearray(path.read_bytes())
    blob[-3] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(envs.StateFileError, match="does not match the sha256"):
        envs.load_states(path, env)
    with pytest.raises(envs.StateFileError, match="does not exist"):
        envs.load_states(tmp_path / "missing.safetensors", env)


def test_loading_an_impossible_state_fails_validation(tmp_path):
    env = envs.make("sabotage-v1")
    state, _ = env.reset(jax.random.PRNGKey(0))
    bad = state.replace(inner=state.inner.replace(time=jnp.asarray(9, jnp.int32)))
    path = tmp_path / "bad.safetensors"
    envs.save_states(path, env, bad)
    with pytest.raises(envs.InvalidStateError, match="time 9 is outside"):
        envs.load_states(path, env)


def test_save_refuses_states_of_another_structure(tmp_path):
    env = envs.make("sabotage-v1")
    state, _ = env.reset(jax.random.PRNGKey(0))
    bad = state.replace(inner=state.inner.replace(history=jnp.zeros((3, 2), jnp.int32)))
    with pytest.raises(envs.StateFileError, match="do not have the structure"):
        envs.save_states(tmp_path / "x.safetensors", env, bad)
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_state_files_get_ordinary_permissions(tmp_path):
    import os

    env = envs.make("sabotage-v1")
    state, _ = env.reset(jax.random.PRNGKey(0))
    card = envs.save_states(tmp_path / "s.safetensors", env, state)
    umask = os.umask(0)
    os.umask(umask)
    for p in (tmp_path / "s.safetensors", card):
        assert p.stat().st_mode & 0o777 == 0o666 & ~umask
