"""benchmarks/eval_speed.py runs end to end (tiny sizes: this checks the script, not speed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "eval_speed.py"


@pytest.mark.slow
def test_eval_speed_script_reports_both_paths(tmp_path):
    spec = importlib.util.spec_from_file_location("eval_speed", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "speed.txt"
    argv = ["--layout", "lbf", "--members", "2", "--episodes", "2", "--python-episodes", "1"]
    assert module.main([*argv, "--out", str(out)]) == 0
    text = out.read_text()
    assert "jitted, both seatings: 2 members x 2 seating(s) x 2 episodes x 100 steps" in text
    assert "step by step, in process" in text and "step by step, isolated" in text
