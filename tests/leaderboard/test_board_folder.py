"""The leaderboard works on an explicit board folder (issue 30): --board DIR, else the checkout's
leaderboard/; outside a checkout every command exits 2, writes nothing and says how to submit."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from aht_bench.cli import main
from aht_bench.leaderboard import entries


def _unset(monkeypatch, name: str) -> None:
    """Unset `name` for the test and restore its value after, also when a command under test
    sets it (the CLI's --heldout / --board do, in this process)."""
    monkeypatch.setenv(name, "")
    monkeypatch.delenv(name)


def test_inside_the_checkout_the_board_is_its_leaderboard_folder(monkeypatch):
    _unset(monkeypatch, entries.LEADERBOARD_ENV)
    repo = Path(entries.__file__).resolve().parents[2]
    assert entries.leaderboard_root() == repo / "leaderboard"


def test_outside_a_checkout_every_command_refuses_and_writes_nothing(monkeypatch, tmp_path):
    site = tmp_path / "site-packages"  # what repo_root() is for an installed package
    site.mkdir()
    _unset(monkeypatch, entries.LEADERBOARD_ENV)
    monkeypatch.setattr(entries, "repo_root", lambda: site)
    record = tmp_path / "result.json"
    record.write_text("{}")
    runner = CliRunner()
    for argv in (
        ["leaderboard", "submit", str(record), "--name", "x"],
        ["leaderboard", "render"],
        ["leaderboard", "verify", "--all", "--no-rerun"],
    ):
        r = runner.invoke(main, argv)
        assert r.exit_code == 2, (argv, r.output)
        assert "outside a checkout" in r.output and "pull request" in r.output
        assert "--board DIR" in r.output
    assert list(site.iterdir()) == []


def test_board_names_the_folder(monkeypatch, tmp_path):
    site = tmp_path / "site-packages"
    site.mkdir()
    board = tmp_path / "board"
    board.mkdir()
    _unset(monkeypatch, entries.LEADERBOARD_ENV)
    monkeypatch.setattr(entries, "repo_root", lambda: site)
    r = CliRunner().invoke(main, ["leaderboard", "--board", str(board), "render"])
    assert r.exit_code == 0, r.output
    assert (board / "README.md").is_file() and list(site.iterdir()) == []
    r = CliRunner().invoke(main, ["leaderboard", "--board", str(tmp_path / "nope"), "render"])
    assert r.exit_code == 2 and "does not exist" in r.output
