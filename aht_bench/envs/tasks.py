"""The registered tasks and the seats an ego takes in each (`ego_seatings`). Factories import
their backends lazily, so listing tasks is cheap.

Every id here is published: never change what an id builds; register a new version instead.

May import aht_bench.envs only (each backend lazily, in its factory).
"""

from __future__ import annotations

from aht_bench.envs.registry import TrainingDefaults, alias, register, supersede

# Horizons of the lazily built tasks, so the registry knows them without importing a backend
# (the built task's `horizon` must agree: tests/adapters/test_gym_conventions.py checks every id).
LBF_HORIZON = 100
OVERCOOKED_HORIZON = 400
LBF_TRAINING = TrainingDefaults(family="lbf", rollout_length=128)
OVERCOOKED_TRAINING = TrainingDefaults(family="overcooked", rollout_length=OVERCOOKED_HORIZON)
"""What the training presets need of each family (`registry.TrainingDefaults`): on Overcooked a
rollout is one whole episode."""

EGO_SEATINGS: dict[str, tuple[tuple[int, ...], ...]] = {
    "matrix-regret-v1": ((0,),),  # the ego plays rows only (paper App. A)
    "lbf-4p-v1": ((0, 1),),  # a 2-player ego sub-team, teammates in seats 2 and 3 (App. N-agent)
}
"""The seats the ego (the agent under evaluation) takes, per task, where not every seat of a
two-player task: each seating is the tuple of the ego's seats, the teammates take the others."""


def ego_seatings(task_id: str, num_agents: int) -> tuple[tuple[int, ...], ...]:
    """The seatings an ego plays on `task_id` (`EGO_SEATINGS`; else on two-player tasks each
    seat, `((0,), (1,))`, and on larger ones the first half of the seats). Evaluation meets every
    member in each; the gymnax shell draws the ego's seat from their seats."""
    if task_id in EGO_SEATINGS:
        return EGO_SEATINGS[task_id]
    if num_agents == 2:
        return ((0,), (1,))
    return (tuple(range(num_agents // 2)),)


OVERCOOKED_LAYOUTS = (
    "cramped_room",
    "asymm_advantages",
    "counter_circuit",
    "coord_ring",
    "forced_coord",
)


def _register_all() -> None:
    from aht_bench.envs import matrix

    register(
        "sabotage-v1",
        matrix.sabotage_game,
        "sabotage game: 5 steps, actions H/T/S, S gives -1 and ends the episode (paper Sec. 6)",
        horizon=matrix.SABOTAGE_STEPS,
    )
    register(
        "matrix-regret-v1",
        matrix.regret_matrix_game,
        "one-step matrix game where the regret-maximising teammate minimises return (App. A)",
        horizon=1,
    )

    def lbf(variant: str):
        def factory():
            from aht_bench.envs import lbf as lbf_module

            return lbf_module.make_lbf(variant)

        return factory

    for variant, description in (
        ("lbf-v1", "Level-Based Foraging 7x7, 2 players, 3 foods, horizon 100"),
        ("lbf-po-v1", "LBF with view radius 2 (paper App. partial obs.)"),
        ("lbf-4p-v1", "LBF with 4 players: 2 ego + 2 teammates (App.)"),
    ):
        register(variant, lbf(variant), description, horizon=LBF_HORIZON, training=LBF_TRAINING)

    def overcooked(layout: str, version: int):
        def factory():
            from aht_bench.envs import overcooked as oc

            return oc.make_overcooked(layout, version)

        return factory

    divided = ("seat 0 always on the left", "sides drawn per episode")
    shared = ("random spawns", "random spawns")
    sides = {
        x: divided if x in ("asymm_advantages", "forced_coord") else shared
        for x in OVERCOOKED_LAYOUTS
    }
    for layout in OVERCOOKED_LAYOUTS:
        register(
            f"overcooked-{layout}-v1",
            overcooked(layout, 1),
            f"Overcooked {layout} (v1 protocol): horizon 400, +20 per soup, empty pots and hands "
            f"at reset, {sides[layout][0]}, counter pickups paid",
            horizon=OVERCOOKED_HORIZON,
            training=OVERCOOKED_TRAINING,
        )
        register(
            f"overcooked-{layout}-v2",
            overcooked(layout, 2),
            f"Overcooked {layout} as the paper's code runs it: horizon 400, +20 per soup, "
            f"random object state at reset, {sides[layout][1]}, pile pickups paid only",
            horizon=OVERCOOKED_HORIZON,
            training=OVERCOOKED_TRAINING,
        )
        # The short names mean the game the paper's numbers were measured on (issue 27); every
        # record names the full id, so a v1 result stays a v1 result.
        alias(layout, f"overcooked-{layout}-v2")
        supersede(f"overcooked-{layout}-v1", by=f"overcooked-{layout}-v2")
    alias("lbf", "lbf-v1")
    alias("sabotage", "sabotage-v1")


_register_all()
