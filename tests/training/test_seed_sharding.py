"""Seeds split over several devices (`aht-bench train --devices`, `driver.shard_seeds`) and run
in groups (`--seed-group`, `driver.group_seeds`): the same parameters as on one device.

The slow tests force two host devices (`XLA_FLAGS=--xla_force_host_platform_device_count=2`, in
subprocesses: the flag must be set before JAX starts) and train the same run with its four
seeds on one device and split over two: IPPO as it is, and the recurrent ego (whose rounding
depends on how many seeds one compiled program holds) with groups of two on the one device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import load_file

from aht_bench.cli import main
from aht_bench.runs import RunSpec
from aht_bench.training import driver

TINY = [
    *("--set", "total_timesteps=512", "--set", "num_envs=16", "--set", "rollout_length=8"),
    *("--set", "ppo.num_epochs=1", "--set", "ppo.num_minibatches=2"),
]


def _train(
    out: Path, seeds: int, devices: int, *extra: str, method: str = "ippo"
) -> subprocess.CompletedProcess:
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    args = ["train", method, "--task", "lbf", "--seeds", str(seeds), *TINY, "--out", str(out)]
    args += ["--devices", str(devices), "--no-progress", *extra]
    return subprocess.run(
        [sys.executable, "-m", "aht_bench.cli", *args], env=env, capture_output=True, text=True
    )


def _same_policies(one: Path, two: Path, count: int) -> None:
    files = sorted(p.name for p in (one / "policies" / "final").glob("*.safetensors"))
    assert len(files) == count
    for name in files:
        a = load_file(str(one / "policies" / "final" / name))
        b = load_file(str(two / "policies" / "final" / name))
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a), name


@pytest.mark.slow  # two tiny IPPO runs in subprocesses (about 2-3 minutes on two CPU cores)
def test_four_seeds_split_over_two_devices_train_the_same_parameters(tmp_path):
    one, two = _train(tmp_path / "one", 4, 1), _train(tmp_path / "two", 4, 2)
    assert one.returncode == 0, one.stdout + one.stderr
    assert two.returncode == 0, two.stdout + two.stderr
    _same_policies(tmp_path / "one", tmp_path / "two", 8)  # 4 seeds x 2 agents
    odd = _train(tmp_path / "odd", 3, 2)
    assert odd.returncode == 2 and "3 seeds do not split over 2 devices" in odd.stderr


def test_the_seeds_run_on_the_devices_shard_seeds_names():
    """On this machine's one device: no mesh, the plain vmap; asking for more devices than
    there are is refused with the count."""
    driver.shard_seeds(None)
    assert driver.seed_devices() == 1
    out = driver.map_seeds(lambda x: x * 2, np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0])
    result = CliRunner().invoke(
        main, ["train", "ippo", "--task", "lbf", "--devices", "2", "--out", "unused"]
    )
    assert result.exit_code == 2
    assert f"this machine has {len(jax.devices())} CPU device(s)" in result.output
    assert not Path("unused").exists()


@pytest.mark.slow  # two tiny ego runs in subprocesses (about 3 minutes on two CPU cores)
def test_a_recurrent_ego_over_two_devices_equals_one_device_in_groups_of_two(tmp_path):
    """Issue 32: 4 seeds of the ego (a GRU; FCP's and ROTATE's second stage) split 2 + 2 over
    two devices train the parameters of 4 seeds on one device run in groups of 2. Without the
    groups they differ in the last bits (benchmarks/results/seed_sharding.txt)."""
    lexi = ("--teammates", "lexi")
    one = _train(tmp_path / "one", 4, 1, "--seed-group", "2", *lexi, method="ego")
    two = _train(tmp_path / "two", 4, 2, *lexi, method="ego")
    assert one.returncode == 0, one.stdout + one.stderr
    assert two.returncode == 0, two.stdout + two.stderr
    assert "x 4 seed(s) in groups of 2" in one.stderr
    _same_policies(tmp_path / "one", tmp_path / "two", 4)  # 4 seeds x the ego
    for run in ("one", "two"):  # given, and recorded for the two devices' runs of 2 seeds each
        assert json.loads((tmp_path / run / "run.json").read_text())["spec"]["seed_group"] == 2


def test_seeds_in_groups_run_one_group_after_another_and_compute_the_same_function():
    x = np.arange(12.0).reshape(4, 3)
    try:
        driver.group_seeds(2)
        assert driver.seed_group() == 2
        grouped = driver.map_seeds(lambda s: jnp.tanh(s) * 2.0 + s.sum(), jnp.asarray(x))
        jaxpr = str(jax.make_jaxpr(lambda v: driver.map_seeds(jnp.sin, v))(jnp.asarray(x)))
        assert "scan" in jaxpr  # lax.map over the two groups
        driver.group_seeds(3)
        with pytest.raises(ValueError, match="4 seeds .* do not split into groups of 3"):
            driver.map_seeds(jnp.sin, jnp.asarray(x))
        with pytest.raises(ValueError, match="seed group size 0 is invalid"):
            driver.group_seeds(0)
    finally:
        driver.group_seeds(None)
    assert driver.seed_group() is None
    plain = jax.vmap(lambda s: jnp.tanh(s) * 2.0 + s.sum())(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(grouped), np.asarray(plain), rtol=1e-6)
    assert "scan" not in str(jax.make_jaxpr(lambda v: driver.map_seeds(jnp.sin, v))(x))


def test_the_seed_group_is_part_of_the_run_spec_and_checked(tmp_path):
    spec = RunSpec("ippo", "lbf", num_seeds=4, seed_group=2)
    assert spec.to_json()["seed_group"] == 2
    assert RunSpec.from_json(spec.to_json()) == spec
    plain = RunSpec("ippo", "lbf", num_seeds=4)
    assert "seed_group" not in plain.to_json()  # run.json of runs without groups: unchanged
    assert RunSpec.from_json(plain.to_json()).seed_group is None
    with pytest.raises(ValueError, match="seed_group=3 is invalid for 4 seeds"):
        RunSpec("ippo", "lbf", num_seeds=4, seed_group=3)
    out = tmp_path / "run"
    args = ["train", "ippo", "--task", "lbf", "--seeds", "4", "--seed-group", "3"]
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 2
    assert "seed_group=3 is invalid for 4 seeds" in result.output
    assert not out.exists()


def test_split_seeds_names_the_option_to_change_and_a_split_run_records_its_group():
    """`driver.split_seeds` (`train --devices`) refuses a split it cannot make, naming the field
    to change; a new run over several devices records the seed group each one compiles for
    (`spec_from_options`), a resumed one keeps its own."""
    from aht_bench.runs.spec import spec_from_options

    with pytest.raises(driver.SeedSplitError, match="device") as devices:
        driver.split_seeds(len(jax.devices()) + 1, 4, None)
    assert devices.value.field == "devices"
    with pytest.raises(driver.SeedSplitError, match="groups of 3") as group:
        driver.split_seeds(1, 4, 3)
    assert group.value.field == "seed_group"
    given = {"task_id": "lbf-v1", "num_seeds": 4}
    assert spec_from_options("ippo", given, devices=2).seed_group == 2
    assert spec_from_options("ippo", given, devices=3).seed_group is None  # 4 do not split
    stored = RunSpec("ippo", "lbf-v1", num_seeds=4)
    assert spec_from_options("ippo", {"num_seeds": None}, stored, devices=2).seed_group is None
