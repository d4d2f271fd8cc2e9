"""The host record kept next to results that repeat bit for bit on one host only."""

from __future__ import annotations

from pathlib import Path

from aht_bench import hostinfo
from aht_bench.experiments import sabotage


def test_cpu_keeps_the_ids_that_tell_two_hosts_of_one_name_apart(monkeypatch):
    text = (
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
        "model name\t: AMD EPYC\nstepping\t: 1\nflags\t\t: fpu sse4_1 avx2 fma avx sha_ni\n\n"
        "processor\t: 1\nmodel name\t: another\nflags\t\t: avx512f\n"
    )
    real = Path.read_text
    monkeypatch.setattr(
        Path, "read_text", lambda p, *a, **k: text if str(p) == "/proc/cpuinfo" else real(p)
    )
    info = hostinfo.cpu()
    assert (info["model"], info["family"], info["model_id"], info["stepping"]) == (
        "AMD EPYC",
        "25",
        "1",
        "1",
    )
    assert info["isa"] == ["avx", "avx2", "fma", "sse4_1"]  # the first processor's flags only
    line = hostinfo.describe(info)
    assert line.startswith("AMD EPYC, family 25 model 1 stepping 1, ")
    assert line.endswith("(avx avx2 fma sse4_1)")


def test_a_host_without_cpuinfo_is_named_by_its_platform(monkeypatch):
    def missing(p, *a, **k):
        raise OSError("no such file")

    monkeypatch.setattr(Path, "read_text", missing)
    info = hostinfo.cpu()
    assert info["family"] is None and info["isa"] == [] and info["model"]
    assert hostinfo.describe(info) == f"{info['model']}, {info['cores']} cores"


def test_sabotage_tables_name_the_host_old_records_as_they_were():
    new = sabotage.host()
    assert new["cpu"] and "family" in new and "isa" in new
    old = {"cpu": "AMD EPYC", "machine": "x86_64", "cores": 2}
    assert hostinfo.describe(old) == "AMD EPYC, 2 cores"
    import json

    committed = Path(__file__).parents[1] / "benchmarks/results/sabotage_objectives"
    rerun = committed / "rerun_2026-12-07"
    source = "benchmarks/results/sabotage_objectives/rerun_2026-12-07/sabotage_summary.json"
    table = sabotage.markdown_table(
        json.loads((rerun / "sabotage_summary.json").read_text()), source
    )
    assert "measured on AMD EPYC, family 25 model 1 stepping 1, 2 cores (avx " in table
    assert table == (rerun / "sabotage_table.md").read_text()
    first = sabotage.markdown_table(json.loads((committed / "sabotage_summary.json").read_text()))
    assert "measured on AMD EPYC (2 cores)" in first
