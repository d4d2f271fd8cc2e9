"""The README's Stable-Baselines3 example with a heldout member runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_sb3_example_runs(capsys):
    pytest.importorskip("stable_baselines3")
    text = README.read_text()
    match = re.search(r"<!-- readme-sb3-example -->\n```python\n(.*?)```", text, re.S)
    assert match, "the README lost its Stable-Baselines3 example"
    exec(compile(match.group(1), "README.md", "exec"), {})
    printed = capsys.readouterr().out.strip().split()
    assert len(printed) == 2 and float(printed[1]) >= 0.0
