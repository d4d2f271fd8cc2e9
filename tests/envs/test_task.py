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


def test_every_task_with_presets_registers_its_training_defaults():
    """Rollout length and family come from the task's registration, not from its id's prefix."""
    from aht_bench.training.presets import PAPER_TASKS, paper_rollout_length

    for task_id in PAPER_TASKS:
        defaults = envs.training_defaults(task_id)
        assert envs.task(task_id).training == defaults
        assert paper_rollout_length(task_id) == defaults.rollout_length
        assert defaults.family == task_id.split("-")[0]
    assert envs.training_defaults("forced_coord").rollout_length == 400  # an alias resolves
    assert envs.training_defaults("lbf-po-v1").rollout_length == 128


def test_a_task_registered_without_training_defaults_names_the_fix(monkeypatch):
    from aht_bench.envs import registry
    from aht_bench.envs.matrix import sabotage_game
    from aht_bench.training.presets import paper_rollouts

    monkeypatch.setitem(registry._REGISTRY, "untrained-v1", sabotage_game)
    monkeypatch.setitem(registry._DESCRIPTIONS, "untrained-v1", "")
    monkeypatch.setitem(registry._HORIZONS, "untrained-v1", 5)
    with pytest.raises(envs.NoTrainingDefaultsError, match="untrained-v1.*TrainingDefaults"):
        paper_rollouts("untrained-v1", 16)
    with pytest.raises(envs.NoTrainingDefaultsError, match="sabotage-v1"):
        envs.training_defaults("sabotage-v1")  # evaluated on, never trained with a preset
