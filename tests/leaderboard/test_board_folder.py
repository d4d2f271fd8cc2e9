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


def test_a_board_of_ones_own_gets_next_steps_with_its_board_and_no_dead_docs_link(
    monkeypatch, tmp_path
):
    # issue 53: `--board DIR submit` printed a next step without --board, and its README linked
    # ../docs/leaderboard.md, which a folder outside the repository does not have
    from lb_helpers import RECORD

    _unset(monkeypatch, entries.LEADERBOARD_ENV)
    board = tmp_path / "my board"
    board.mkdir()
    runner = CliRunner()
    r = runner.invoke(
        main,
        ["leaderboard", "--board", str(board), "submit", str(RECORD), "--name", "mine",
         "--description", "uniform random", "--no-rerun"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    quoted = f"'{board.resolve()}'"  # shell-quoted: the folder's name has a space
    assert f"aht-bench leaderboard --board {quoted} verify mine--lbf-v1--v1" in r.output
    assert f"aht-bench leaderboard --board {quoted} render" in r.output
    assert f"updates {board.resolve() / 'README.md'} and index.html" in r.output
    r = runner.invoke(main, ["leaderboard", "--board", str(board), "render"])
    assert r.exit_code == 0, r.output
    readme = (board / "README.md").read_text()
    assert "../docs/leaderboard.md" not in readme and "`aht-bench docs leaderboard`" in readme
    assert "../docs/leaderboard.md" not in (board / "index.html").read_text()
    # the repository's own board keeps its link, which resolves there
    repo_board = Path(entries.__file__).resolve().parents[2] / "leaderboard"
    assert "](../docs/leaderboard.md)" in (repo_board / "README.md").read_text()
    assert (repo_board / "../docs/leaderboard.md").resolve().is_file()
