"""The throughput benchmark runs end to end (slow; tiny sizes: this checks the script, not
speed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "env_throughput.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("env_throughput", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # compiles the LBF rollout; like the other benchmark scripts' tests
def test_env_throughput_script_writes_rows_with_ratios(bench, tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = ["--tasks", "sabotage,lbf", "--num-envs", "4", "--steps", "3", "--repeats", "1"]
    assert bench.main([*argv, "--out", str(out)]) == 0
    rows = {r["task"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["sabotage-v1"]["backend"] == "native" and "ratio" not in rows["sabotage-v1"]
    assert rows["lbf-v1"]["backend"] == "jumanji" and rows["lbf-v1"]["ratio"] > 0
    assert "lbf-v1" in capsys.readouterr().out


def test_env_throughput_rejects_bad_sizes(bench):
    with pytest.raises(SystemExit) as e:
        bench.main(["--num-envs", "0"])
    assert e.value.code == 2
