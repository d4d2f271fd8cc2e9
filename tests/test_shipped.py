"""What an installed aht-bench carries beside its code (issue 53): `aht-bench examples` copies the
example agents the errors cite, `aht-bench docs` lists and prints the docs, and the wheel ships
both (tests/test_install.py runs them from an installed wheel)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from aht_bench import shipped
from aht_bench.cli import main
from aht_bench.policies.agent_file import EXAMPLES_NOTE, AgentLoadError

REPO = Path(__file__).resolve().parents[1]


def test_examples_copies_every_example_and_refuses_to_overwrite(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    r = runner.invoke(main, ["examples"])
    assert r.exit_code == 0, r.output
    source = REPO / "agents" / "examples"
    want = sorted(
        p.relative_to(source).as_posix()
        for p in source.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    dest = tmp_path / "agents" / "examples"  # the path the errors cite
    got = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert got == want and "random_agent.py" in got and "sb3_ppo/agent.py" in got
    assert (dest / "random_agent.py").read_bytes() == (source / "random_agent.py").read_bytes()
    assert "next: aht-bench evaluate agents/examples/random_agent.py" in r.output
    (dest / "random_agent.py").write_text("# mine\n")
    r = runner.invoke(main, ["examples"])
    assert r.exit_code == 2 and "--force" in r.output
    assert (dest / "random_agent.py").read_text() == "# mine\n"  # nothing changed
    r = runner.invoke(main, ["examples", "--force"])
    assert r.exit_code == 0
    assert (dest / "random_agent.py").read_bytes() == (source / "random_agent.py").read_bytes()
    r = runner.invoke(main, ["examples", "elsewhere"])
    assert r.exit_code == 0 and (tmp_path / "elsewhere" / "scripted_agent.py").is_file()


def test_docs_lists_and_prints_the_pages():
    runner = CliRunner()
    r = runner.invoke(main, ["docs"])
    assert r.exit_code == 0, r.output
    assert str(shipped.docs_root()) in r.output and "evaluation" in r.output
    rows = json.loads(runner.invoke(main, ["docs", "--json"]).output)
    names = {row["page"] for row in rows}
    on_disk = {p.relative_to(REPO / "docs").with_suffix("").as_posix()
               for p in (REPO / "docs").rglob("*.md")}  # fmt: skip
    assert names == on_disk
    r = runner.invoke(main, ["docs", "evaluation"])
    assert r.exit_code == 0 and r.output == (REPO / "docs/evaluation.md").read_text()
    r = runner.invoke(main, ["docs", "evaluation.md", "--path"])
    assert r.output.strip() == str(REPO / "docs" / "evaluation.md")
    r = runner.invoke(main, ["docs", "evalution"])
    assert r.exit_code == 2 and "Did you mean 'evaluation'" in r.output


def test_errors_that_cite_the_examples_say_how_to_get_them():
    e = AgentLoadError("agent file x.py defines no act(obs) (see agents/examples/random_agent.py)")
    assert str(e).endswith(f"({EXAMPLES_NOTE})") and "aht-bench examples" in EXAMPLES_NOTE
    assert str(AgentLoadError(str(e))) == str(e)  # re-raised from the worker: said once
    assert str(AgentLoadError("agent file x.py raised")) == "agent file x.py raised"


def test_the_wheel_ships_every_example_and_every_docs_page():
    # setup.py maps both folders into the package; its globs must take every file of them
    import ast

    tree = ast.parse((REPO / "setup.py").read_text())
    values = {
        n.targets[0].id: ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
    }
    assert values["SHIPPED"] == {
        "aht_bench._shipped.examples": "agents/examples",
        "aht_bench._shipped.docs": "docs",
    }
    for package, folder in values["SHIPPED"].items():
        root = REPO / folder
        files = {p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
        files = {p for p in files if "images" not in p.relative_to(root).parts}  # screenshots
        matched = {p for g in values["SHIPPED_FILES"][package] for p in root.glob(g)}
        assert files == {p for p in matched if p.is_file() and "__pycache__" not in p.parts}
