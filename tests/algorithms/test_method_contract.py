"""One contract for every training method `aht-bench train` runs (`aht_bench.runs.ALGORITHMS`,
one per line of `aht_bench.catalog.METHODS`), parametrised over all of them (issue 31, step 5):

- each catalogue line names its module and the module's preset names;
- the module has a `METHOD` (`aht_bench.algorithms.api.Method`) that the one run loop
  (`runs.MethodLoop`) drives, and `init_seeds`, `iterate`, `run`, `train`, `ego_params`,
  `population`, `networks` and `preset` bound from it; an iteration method also its `REPORT`
  and `PRESETS`, the PPO stages (ippo, br, ego, counted in updates) `init`, `update`,
  `learner_params` and `network`, the pieces other methods build on, their presets those of
  `training.presets`;
- every preset it lists resolves on LBF and on an Overcooked v2 task (ROTATE's `sabotage` on the
  sabotage game), and its smoke-run overrides (its module's `SMOKE`, `aht_bench.runs.smoke`)
  validate;
- a bad value and an unknown field are refused with the field named;
- (slow) the smoke run trains; a run stopped by SIGTERM after its first step and resumed ends
  with final policies bit-identical to an uninterrupted run's; and what it publishes loads as
  policies (`load_policy`; a population file with `load_population`).
"""

import dataclasses
import functools
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from aht_bench import catalog, runs
from aht_bench.algorithms.api import Method, TaskConfig
from aht_bench.runs import smoke
from aht_bench.training import presets

METHODS = sorted(runs.ALGORITHMS)
BOUND = ("init_seeds", "iterate", "run", "train", "ego_params", "preset", "networks", "population")
UPDATE_API = ("init", "update", "learner_params", "network")  # presets: training.presets
ITERATION_API = ("REPORT", "PRESETS")


def _spec(method: str, preset: str = "quick", task: str = smoke.TASK, **kw: Any) -> runs.RunSpec:
    algo = runs.get(method)
    teammates = smoke.TEAMMATES if algo.needs_teammates else ()
    return runs.RunSpec(method, task, preset, teammates=teammates, **kw)


def test_every_method_has_its_smoke_overrides():
    missing = [m for m in METHODS if not hasattr(runs.get(m).module, "SMOKE")]
    assert not missing, f"no SMOKE (the overrides of a smoke run) in the modules of {missing}"
    assert sorted(smoke.OVERRIDES) == METHODS


def test_each_catalogue_line_names_its_module_and_presets():
    # the CLI reads the names and presets from the catalogue without importing the modules
    assert len(set(catalog.names())) == len(catalog.METHODS), "a method is registered twice"
    for entry in catalog.METHODS:
        algo = runs.get(entry.name)
        assert algo.module.__name__ == entry.module
        if algo.loop.unit == "update":
            real = {p for a, p in presets.PRESETS if a == entry.name}
        else:
            real = set(algo.module.METHOD.presets)
        assert set(entry.presets) == real == set(algo.presets), entry.name


@pytest.mark.parametrize("method", METHODS)
def test_the_module_exposes_what_its_loop_drives(method):
    algo = runs.get(method)
    module = algo.module
    api = BOUND + (UPDATE_API if algo.loop.unit == "update" else ITERATION_API)
    missing = [name for name in ("METHOD",) + api if not hasattr(module, name)]
    assert not missing, f"{module.__name__} lacks {missing}"
    # the one run loop drives the module's Method, and the module's names are the Method's
    assert isinstance(module.METHOD, Method) and isinstance(module.METHOD.presets, dict)
    assert isinstance(algo.loop, runs.MethodLoop) and algo.loop.method is module.METHOD
    assert algo.loop.report is module.METHOD.report
    assert tuple(module.METHOD.presets) == algo.presets
    for name in ("init_seeds", "iterate", "run", "train", "ego_params", "preset"):
        assert getattr(module, name) == getattr(module.METHOD, name), name
    if algo.loop.unit == "iteration":
        assert algo.loop.report is module.REPORT and tuple(module.PRESETS) == algo.presets
        assert isinstance(module.METHOD.preset("quick", "lbf"), TaskConfig)
    else:
        assert module.METHOD.preset("quick", "lbf") == presets.get(method, "quick", "lbf")


def test_the_progress_bar_shows_the_curves_marked_for_it_generation_first():
    bars = {
        m: runs.get(m).loop.progress_metrics
        for m in METHODS
        if runs.get(m).loop.unit == "iteration"
    }
    assert all(runs.get(m).loop.progress_metrics == (("ret", "episode_return"),)
               for m in ("ippo", "br", "ego"))  # fmt: skip
    assert bars["rotate"] == (("regret", "regret"), ("ego", "ego_return"))
    assert bars["comedi"] == (("sp", "sp_return"), ("xp", "xp_return"), ("ego", "ego_return"))
    assert bars["cole"] == (("train", "train_return"), ("ego", "ego_return"))
    for method, bar in bars.items():
        report = runs.get(method).loop.report
        drawn = [c.metric for c in report.generation_curves + report.ego_curves]
        shown = [metric for _, metric in bar]
        assert shown == [m for m in drawn if m in shown], method  # drawn curves, in their order


@pytest.mark.parametrize("method", METHODS)
def test_every_preset_resolves_and_the_smoke_overrides_validate(method):
    algo = runs.get(method)
    for preset in algo.presets:
        tasks = ["sabotage"] if preset == "sabotage" else ["lbf", "overcooked-cramped_room-v2"]
        for task in tasks:
            config = algo.config(_spec(method, preset, task))
            assert config.task_id == runs.RunSpec(method, task).task_id
    config = algo.config(_spec(method, overrides=smoke.pairs(method)))
    for field, value in smoke.pairs(method):
        group, _, name = field.rpartition(".")
        owner = getattr(config, group) if group else config
        assert str(getattr(owner, name)) == value or float(getattr(owner, name)) == float(value)


@pytest.mark.parametrize("method", METHODS)
def test_bad_fields_are_refused_with_the_field_named(method):
    algo = runs.get(method)
    field = smoke.pairs(method)[0][0]
    with pytest.raises(ValueError, match=f"^{field}=-1 is invalid"):
        algo.config(_spec(method, overrides=((field, "-1"),)))
    with pytest.raises(ValueError, match="unknown override 'no_such_field'"):
        algo.config(_spec(method, overrides=(("no_such_field", "1"),)))


# ------------------------------------------------------------------------ smoke runs (slow)


@dataclasses.dataclass
class _StopAfterFirstStep:
    """The method's own loop, except that a SIGTERM arrives while its first step runs (what a
    scheduler's kill does): the driver saves a checkpoint after that step and stops."""

    loop: Any

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loop, name)

    def run(self, algo: Any, state: Any, config: Any) -> Iterator[tuple[int, Any, Any]]:
        steps = self.loop.run(algo, state, config)
        first = next(steps)
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the driver's signal handler
        yield first
        yield from steps


def _tensors(folder: Path) -> dict[str, dict[str, np.ndarray]]:
    from safetensors.numpy import load_file

    return {p.name: load_file(str(p)) for p in sorted(folder.glob("*.safetensors"))}


@pytest.mark.parametrize(
    "method", [m for m in METHODS if runs.ALGORITHMS[m].loop.unit == "iteration"]
)
def test_a_setup_is_its_config_to_jit(method):
    """Two setups of equal configs are equal and hash alike, so a function jitted with a setup
    as a static argument traces once for both (runs of one config share compiled programs); a
    setup of another config is another static argument."""
    algo = runs.ALGORITHMS[method]
    config = algo.config(_spec(method, overrides=smoke.pairs(method)))
    first, second = algo.loop.method.setup(config), algo.loop.method.setup(config)
    assert first is not second and first == second and hash(first) == hash(second)
    other = dataclasses.replace(config, shaped_reward_coef=config.shaped_reward_coef + 1.0)
    assert algo.loop.method.setup(other) != first
    traces = []

    @functools.partial(jax.jit, static_argnames="setup")
    def add(x, setup):
        traces.append(setup)
        return x + setup.config.shaped_reward_coef

    add(1.0, first), add(1.0, second), add(1.0, algo.loop.method.setup(other))
    assert len(traces) == 2


@pytest.mark.slow  # compiles each method once (about 1-4 minutes each on two CPU cores)
@pytest.mark.parametrize("method", METHODS)
def test_smoke_run_resumes_bit_identically_and_publishes_policies(method, tmp_path):
    from aht_bench.policies import load_policy, load_population, read_card

    algo = runs.get(method)
    spec = _spec(method, overrides=smoke.pairs(method))
    quiet = dict(progress=False, log=lambda _: None)
    straight = runs.train(algo, spec, tmp_path / "straight", **quiet)
    assert straight.updates == algo.loop.total(straight.config)

    stopping = dataclasses.replace(algo, loop=_StopAfterFirstStep(algo.loop))
    with pytest.raises(runs.TrainingInterrupted) as stopped:
        runs.train(stopping, spec, tmp_path / "resumed", checkpoint_every_updates=10**9, **quiet)
    assert stopped.value.signum == signal.SIGTERM and stopped.value.update >= 1
    resumed = runs.train(algo, spec, tmp_path / "resumed", resume=True, **quiet)
    assert resumed.updates == straight.updates

    a, b = (_tensors(o.out / "policies" / "final") for o in (straight, resumed))
    assert sorted(a) == sorted(b) and a, "no final policies"
    for name in a:
        assert sorted(a[name]) == sorted(b[name]), name
        for key in a[name]:
            np.testing.assert_array_equal(a[name][key], b[name][key], err_msg=f"{name} {key}")

    for path in straight.policies:
        if read_card(path).get("population_size") is not None:
            assert load_population(path).size >= 1
        else:
            policy, params = load_policy(path)
            assert params is not None and hasattr(policy, "act")
