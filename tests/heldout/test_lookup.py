"""Where the heldout sets are looked up (issue 30): --heldout / $AHT_BENCH_HELDOUT, the
checkout's heldout/, the installed data; `heldout where`, `--version`, the "not found" errors,
and --json on tasks, heldout list and heldout show. The installed case itself is covered by
tests/test_install.py."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from aht_bench.cli import main
from aht_bench.evaluation import sets

REPO = Path(__file__).resolve().parents[2]


def _unset(monkeypatch, name: str) -> None:
    """Unset `name` for the test and restore its value after, also when a command under test
    sets it (the CLI's --heldout / --board do, in this process)."""
    monkeypatch.setenv(name, "")
    monkeypatch.delenv(name)


def test_the_lookup_order_takes_the_override_then_the_checkout(monkeypatch, tmp_path):
    _unset(monkeypatch, sets.HELDOUT_ENV)
    labels = [label for label, _ in sets.heldout_search()]
    assert labels[0].startswith("$AHT_BENCH_HELDOUT") and "checkout" in labels[1]
    assert "installed" in labels[2]
    assert sets.checkout_heldout_root() == REPO / "heldout"
    assert sets.heldout_root() == REPO / "heldout"
    monkeypatch.setenv(sets.HELDOUT_ENV, str(tmp_path))
    assert sets.heldout_root() == tmp_path
    assert sets.heldout_search()[0][1] == tmp_path


def test_where_marks_the_folder_used(monkeypatch):
    _unset(monkeypatch, sets.HELDOUT_ENV)
    r = CliRunner().invoke(main, ["heldout", "where"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "1. $AHT_BENCH_HELDOUT / --heldout: none"
    assert lines[1].startswith(f"2. the checkout's heldout/: {REPO / 'heldout'} (")
    assert lines[1].endswith("<- used") and sum("<- used" in line for line in lines) == 1
    assert "published sets: lbf-v1 v1,v2" in r.output


def test_an_empty_heldout_folder_is_an_error_that_names_where_it_looked(monkeypatch, tmp_path):
    _unset(monkeypatch, sets.HELDOUT_ENV)
    runner = CliRunner()
    r = runner.invoke(main, ["--heldout", str(tmp_path), "heldout", "list"])
    assert r.exit_code == 2
    assert f"$AHT_BENCH_HELDOUT / --heldout: {tmp_path.resolve()}" in r.output
    assert "the checkout's heldout/" in r.output and "--heldout DIR" in r.output
    r = runner.invoke(
        main,
        ["--heldout", str(tmp_path), "evaluate", str(REPO / "agents/examples/random_agent.py"),
         "--task", "cramped_room", "--episodes", "1"],
    )  # fmt: skip
    assert r.exit_code == 2
    # issue 53: the error blames the input given (--task), not a --teammates 'v1' never passed
    assert "Invalid value for --task: overcooked-cramped_room-v2 has no published heldout set" in (
        r.output
    )
    assert "'v1'" not in r.output and "--teammates" not in r.output
    assert f"looked in $AHT_BENCH_HELDOUT / --heldout: {tmp_path.resolve()}" in r.output
    assert "pip install 'aht-bench[heldout]'" in r.output


def test_a_missing_heldout_folder_is_a_usage_error():
    r = CliRunner().invoke(main, ["--heldout", "/no/such/folder", "heldout", "list"])
    assert r.exit_code == 2 and "does not exist" in r.output


def test_version_prints_the_data_it_finds(monkeypatch):
    _unset(monkeypatch, sets.HELDOUT_ENV)
    r = CliRunner().invoke(main, ["--version"])
    assert r.exit_code == 0
    first, second = r.output.splitlines()[:2]
    from aht_bench import __version__

    assert first == f"aht-bench, version {__version__}"
    assert second.startswith(f"heldout data: {REPO / 'heldout'} (the checkout's heldout/)")
    assert "overcooked-cramped_room-v2 v2" in second


def test_json_listings(monkeypatch):
    _unset(monkeypatch, sets.HELDOUT_ENV)
    runner = CliRunner()
    tasks = json.loads(runner.invoke(main, ["tasks", "--json"]).output)
    by_id = {t["task_id"]: t for t in tasks}
    assert by_id["lbf-v1"]["alias"] == "lbf" and by_id["lbf-v1"]["description"]
    listed = json.loads(runner.invoke(main, ["heldout", "list", "--json"]).output)
    keys = {(row["task_id"], row["version"]) for row in listed}
    assert ("lbf-v1", "v2") in keys and ("overcooked-cramped_room-v2", "v2") in keys
    shown = json.loads(
        runner.invoke(
            main, ["heldout", "show", "--task", "lbf", "--version", "v2", "--json"]
        ).output
    )
    assert shown["set_id"] == "lbf-v1/v2" and shown["published"] is True
    assert [m["name"] for m in shown["manifest"]["members"]] == [
        row["members"] for row in listed if (row["task_id"], row["version"]) == ("lbf-v1", "v2")
    ][0]


def test_list_calls_an_unpinned_version_folder_a_development_set(monkeypatch, tmp_path):
    import shutil

    _unset(monkeypatch, sets.HELDOUT_ENV)
    shutil.copytree(REPO / "heldout" / "lbf-v1" / "v2", tmp_path / "lbf-v1" / "v9")
    r = CliRunner().invoke(main, ["--heldout", str(tmp_path), "heldout", "list", "--json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)
    assert (row["task_id"], row["published"]) == ("lbf-v1", False)
    monkeypatch.delenv(sets.HELDOUT_ENV)  # --heldout set it for this process
    r = CliRunner().invoke(main, ["heldout", "list", "--json"])  # the checkout's, pinned
    rows = {(x["task_id"], x["version"]): x for x in json.loads(r.output)}
    assert rows[("lbf-v1", "v2")]["published"] is True
    assert rows[("lbf-v1", "dev")]["published"] is False
