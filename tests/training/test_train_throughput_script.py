"""benchmarks/train_throughput.py runs end to end (tiny sizes; slow only because it compiles a
full IPPO update)."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "train_throughput.py"


@pytest.mark.slow
def test_train_throughput_script_writes_json_and_text(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("train_throughput", SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "tp.json"
    argv = ["--tasks", "sabotage", "--num-envs", "8", "--updates", "1", "--repeats", "1"]
    assert bench.main([*argv, "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert rows[0]["task"] == "sabotage-v1" and rows[0]["steps_per_s"] > 0
    assert "vs_peer" not in rows[0]  # the peer is measured side by side: peer_throughput.py
    assert "sabotage-v1" in out.with_suffix(".txt").read_text()
    assert "sabotage-v1" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main(["--num-envs", "0"])
