"""benchmarks/peer_throughput.py without the peer: a source it cannot clone is a clear error
(exit 2, the fix named) and nothing is written; the report is rendered from a record."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "peer_throughput.py"


def _load():
    spec = importlib.util.spec_from_file_location("peer_throughput", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_source_that_cannot_be_cloned_is_a_clear_error_and_writes_nothing(tmp_path, capsys):
    bench = _load()
    out = tmp_path / "peer.json"
    argv = ["--peer-source", str(tmp_path / "no-such-repo"), "--peer-cache", str(tmp_path / "c")]
    assert bench.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("peer_throughput: ") and "--peer-source" in err, err
    assert not out.exists() and not out.with_suffix(".txt").exists()


def test_unknown_benchmark_names_the_choices(capsys):
    bench = _load()
    try:
        bench.main(["--benchmarks", "ippo/nope"])
    except SystemExit as e:
        assert e.code == 2
    assert "ippo/lbf-v1" in capsys.readouterr().err


def test_the_committed_record_renders_to_the_committed_table():
    import json

    bench = _load()
    results = SCRIPT.parent / "results"
    record = json.loads((results / "peer_throughput.json").read_text())
    assert bench.report(record) == (results / "peer_throughput.txt").read_text()
