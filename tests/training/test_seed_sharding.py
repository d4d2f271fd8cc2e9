"""Seeds split over several devices (`aht-bench train --devices`, `driver.shard_seeds`): the
same parameters as on one device.

The slow test forces two host devices (`XLA_FLAGS=--xla_force_host_platform_device_count=2`, in
subprocesses: the flag must be set before JAX starts) and trains the same IPPO run with its four
seeds on one device and split over two."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import load_file

from aht_bench.cli import main
from aht_bench.training import driver

TINY = [
    *("--set", "total_timesteps=512", "--set", "num_envs=16", "--set", "rollout_length=8"),
    *("--set", "ppo.num_epochs=1", "--set", "ppo.num_minibatches=2"),
]


def _train(out: Path, seeds: int, devices: int) -> subprocess.CompletedProcess:
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    args = ["train", "ippo", "--task", "lbf", "--seeds", str(seeds), *TINY, "--out", str(out)]
    args += ["--devices", str(devices), "--no-progress"]
    return subprocess.run(
        [sys.executable, "-m", "aht_bench.cli", *args], env=env, capture_output=True, text=True
    )


@pytest.mark.slow  # two tiny IPPO runs in subprocesses (about 2-3 minutes on two CPU cores)
def test_four_seeds_split_over_two_devices_train_the_same_parameters(tmp_path):
    one, two = _train(tmp_path / "one", 4, 1), _train(tmp_path / "two", 4, 2)
    assert one.returncode == 0, one.stdout + one.stderr
    assert two.returncode == 0, two.stdout + two.stderr
    files = sorted(p.name for p in (tmp_path / "one" / "policies" / "final").glob("*.safetensors"))
    assert len(files) == 8  # 4 seeds x 2 agents
    for name in files:
        a = load_file(str(tmp_path / "one" / "policies" / "final" / name))
        b = load_file(str(tmp_path / "two" / "policies" / "final" / name))
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a), name
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
