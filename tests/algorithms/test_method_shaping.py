"""Every method's `shaping` reaches each env its learners are built or trained in, and the
methods' `quick` presets on coord_ring, forced_coord and counter_circuit pay nothing for pickups
off a counter (benchmarks/results/hard_layout_quick_shaping.md has why)."""

import sys

import jax
import pytest

from aht_bench.algorithms import brdiv, cole, comedi, fcp, minimax, paired, rotate
from aht_bench.training import presets
from aht_bench.training.rollout import make_env as real_make_env

METHODS = {
    "rotate": rotate,
    "fcp": fcp,
    "brdiv": brdiv,
    "comedi": comedi,
    "paired": paired,
    "minimax": minimax,
    "cole": cole,
}
HARD = (
    "overcooked-coord_ring-v1",
    "overcooked-forced_coord-v1",
    "overcooked-counter_circuit-v1",
)
OTHERS = ("lbf-v1", "overcooked-cramped_room-v1", "overcooked-asymm_advantages-v1")
CP0 = (("counter_pickup", 0.0),)


def _learner_shapings(config) -> list[tuple]:
    """The `shaping` of the method config and of every nested config that trains a learner."""
    found = [config.shaping]
    for name in ("ego_config", "ippo_config", "rotate_config"):
        nested = getattr(config, name, None)
        if nested is not None:
            found.append(nested.shaping)
    return found


@pytest.mark.parametrize("method", sorted(METHODS))
def test_quick_presets_pay_no_counter_pickups_on_the_hard_layouts_only(method):
    module = METHODS[method]
    for task in HARD:
        shapings = _learner_shapings(module.preset("quick", task))
        assert len(shapings) >= 1 and all(s == CP0 for s in shapings), (task, shapings)
    for task in OTHERS:
        assert all(s == () for s in _learner_shapings(module.preset("quick", task))), task
    for task in HARD + OTHERS:  # the paper preset keeps the paper's shaping everywhere
        assert all(s == () for s in _learner_shapings(module.preset("paper", task))), task


def test_the_heldout_building_blocks_keep_the_papers_shaping():
    # the heldout v1 recipes are built from these presets; a published recipe never changes
    for algorithm in ("ippo", "br", "ego"):
        for task in HARD:
            assert presets.get(algorithm, "quick", task).shaping == ()


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_methods_shaping_reaches_every_env_it_makes(method, monkeypatch):
    calls: list[tuple[str, tuple]] = []

    def spy(task_id, shaping=()):
        calls.append((task_id, tuple(shaping)))
        return real_make_env(task_id, shaping)

    # every module of the method layer (a method package's submodules included)
    layer = [m for n, m in sys.modules.items() if n.startswith("aht_bench.algorithms.")]
    for module in layer:
        if hasattr(module, "make_env"):
            monkeypatch.setattr(module, "make_env", spy)
    module = METHODS[method]
    config = module.preset("quick", "overcooked-forced_coord-v1")  # v1 pays counter pickups
    for fn in (f for m in layer for f in vars(m).values()):  # networks are cached per config
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()
    module.init_seeds(jax.random.PRNGKey(0), config, num_seeds=1)
    assert calls, "init_seeds made no env: the spy is not where the method makes its envs"
    assert all(shaping == CP0 for _, shaping in calls), calls


def test_an_unknown_shaping_name_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="counter_pickup"):
        rotate.preset("quick", "forced_coord", shaping=(("counter_pikcup", 0.0),))
