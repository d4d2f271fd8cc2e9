"""docs/write_your_own_method.md runs as written: its method (the first Python block, saved as
`aht_bench.algorithms.self_play`) is under 200 lines, trains over the method contract, resumes
bit for bit, publishes a population and an ego that load as policies, and runs through the run
driver behind `aht-bench train` from its catalogue line (the third block); its usage block (the
second) runs as written with a smaller preset. tests/algorithms/test_add_a_method.py adds it to
a copy of the package as the page says."""

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import jax
import numpy as np
import pytest

from aht_bench import catalog, runs
from aht_bench.policies import load_policy, load_population
from aht_bench.runs import registry

DOC = Path(__file__).resolve().parents[2] / "docs" / "write_your_own_method.md"
MODULE = "aht_bench.algorithms.self_play"  # where the page saves the method
TINY = {"teammate_updates": 2, "ego_updates": 2, "num_envs": 4, "rollout_length": 16}


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.fixture(scope="module")
def self_play(tmp_path_factory) -> ModuleType:
    folder = tmp_path_factory.mktemp("method")
    path = folder / "self_play.py"
    path.write_text(_blocks()[0])
    spec = importlib.util.spec_from_file_location(MODULE, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE] = module  # `from aht_bench.algorithms import self_play` finds it
    spec.loader.exec_module(module)
    yield module
    del sys.modules[MODULE]


def _catalogue_line() -> catalog.Entry:
    """The page's line for `aht_bench.catalog.METHODS`."""
    line = _blocks()[2].strip()
    assert line.startswith("Entry(") and line.endswith("),") and "\n" not in line
    return eval(line.removesuffix(","), {"Entry": catalog.Entry})


def _equal(a, b) -> bool:
    leaves = zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in leaves)


def test_the_method_is_under_200_lines():
    assert len(_blocks()[0].splitlines()) < 200


def test_the_method_trains_resumes_and_publishes(self_play, tmp_path):
    method = self_play.METHOD
    config = method.preset("quick", "lbf", iterations=2, **TINY)
    result = method.train(jax.random.PRNGKey(0), config, num_seeds=2)
    assert result.metrics["sp_return"].shape == (2, 2)
    assert result.metrics["ego_return"].shape == (2, 2)
    assert result.metrics["population_size"].tolist() == [[1, 2], [1, 2]]
    steps = config.env_steps_per_iteration
    assert result.metrics["env_steps"].tolist() == [[steps, 2 * steps]] * 2
    assert np.isfinite(result.metrics["teammate_policy_loss"]).all()
    with pytest.raises(ValueError, match="done all 2 iterations"):
        method.iterate(result.state, config)

    # stopped after one iteration and continued: the same state, bit for bit
    half = method.run(method.init_seeds(jax.random.PRNGKey(0), config, 2), config, 1).state
    assert _equal(method.run(half, config).state, result.state)
    assert not _equal(half.ego, result.state.ego)  # the second iteration trained the ego

    from aht_bench.policies import save_policy, save_population

    members = method.published(result.state, config, 1)
    save_population(tmp_path / "pop.safetensors", members, {"task_id": "lbf-v1"})
    assert load_population(tmp_path / "pop.safetensors").size == 2
    ego = method.ego_params(result.state, seed=1)
    save_policy(tmp_path / "ego.safetensors", method.networks(config).ego, ego, {})
    loaded = load_policy(tmp_path / "ego.safetensors")
    assert _equal(loaded[1], ego)


def test_the_run_driver_trains_it_from_its_catalogue_line(self_play, tmp_path):
    entry = _catalogue_line()
    assert (entry.name, entry.module) == ("self_play", MODULE)
    algo = registry.algorithm(entry)  # as the registry builds `runs.ALGORITHMS`
    assert isinstance(algo.loop, runs.MethodLoop) and algo.loop.method is self_play.METHOD
    assert algo.module is self_play
    assert algo.presets == tuple(self_play.PRESETS) == entry.presets
    overrides = (("iterations", "2"), *((k, str(v)) for k, v in TINY.items()))
    # two seeds, as in the test above: the same config and shapes reuse its compiled iteration
    spec = runs.RunSpec(algorithm="self_play", task_id="lbf", num_seeds=2, overrides=overrides)
    outcome = runs.train(algo, spec, tmp_path / "run", progress=False, log=lambda m: None)
    assert (outcome.updates, outcome.unit) == (2, "iteration")
    names = sorted(p.name for p in outcome.policies)
    assert names == [f"seed{s}-{k}.safetensors" for s in (0, 1) for k in ("ego", "population")]
    for path in outcome.policies:
        if "ego" in path.name:
            load_policy(path)
        else:
            assert load_population(path).size == 2


@pytest.mark.slow
def test_the_usage_block_runs_as_written(self_play, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    quick = self_play.METHOD.presets["quick"]["lbf-v1"]
    monkeypatch.setitem(quick.__dict__, "teammate_updates", 4)
    monkeypatch.setitem(quick.__dict__, "ego_updates", 4)
    exec(compile(_blocks()[1], "usage", "exec"), {})
    assert load_population(tmp_path / "teammates.safetensors").size == 2
    load_policy(tmp_path / "ego.safetensors")
