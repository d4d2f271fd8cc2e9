"""`aht_bench.envs.Task`: a task name resolved once into the object inner code is handed (STYLE
"Resolve once at the boundary")."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from aht_bench import envs
from aht_bench.envs import Task


def test_a_name_resolves_once_into_a_task_that_passes_through_unchanged():
    task = envs.task("sabotage")
    assert task.id == "sabotage-v1" and str(task) == "sabotage-v1"
    assert envs.task(task) is task  # a Task is not resolved again
    assert envs.task("sabotage-v1") == task and hash(envs.task("sabotage-v1")) == hash(task)
    assert task != envs.task("lbf-v1")
    assert task.horizon == 5 and "sabotage" in task.description


def test_a_task_is_built_only_from_a_registered_id():
    with pytest.raises(ValueError, match=r"'sabotage' is not a registered task id.*envs\.task"):
        Task("sabotage")  # an alias: only envs.task resolves names
    with pytest.raises(envs.UnknownTaskError, match="Did you mean 'sabotage'"):
        envs.task("sabotag")


def test_the_env_is_one_shared_object_and_concrete_even_when_asked_for_under_jit():
    task = envs.task("matrix-regret-v1")

    @jax.jit
    def first_use(x: jax.Array) -> jax.Array:
        # the env's arrays must be concrete constants, not tracers of this trace
        return x + task.env.num_actions

    assert int(first_use(jnp.int32(1))) == 1 + task.env.num_actions
    assert envs.task("matrix-regret-v1").env is task.env is task.compiled.env
    assert not isinstance(task.env.num_actions, jax.core.Tracer)


def test_the_v1_overcooked_games_are_superseded_by_the_v2_ones():
    """The leaderboard lists a superseded task's tables as a retired protocol."""
    from aht_bench.envs import superseded_by
    from aht_bench.envs.registry import supersede

    for layout in ("cramped_room", "asymm_advantages", "coord_ring", "forced_coord"):
        assert superseded_by(f"overcooked-{layout}-v1") == f"overcooked-{layout}-v2"
        assert superseded_by(f"overcooked-{layout}-v2") is None
    assert superseded_by("cramped_room") is None  # the alias means the current game
    assert superseded_by("lbf") is None
    with pytest.raises(ValueError, match="unregistered id 'lbf-v9'"):
        supersede("lbf-v1", by="lbf-v9")
