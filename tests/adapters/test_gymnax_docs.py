"""The code blocks of docs/gymnax.md run as written: the quick start and the same rollout in the
three JAX conventions (aht-bench's functional API, JaxMARL's, gymnax's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import aht_bench.adapters.gymnax  # noqa: F401  (before the blocks' gymnax imports: see "six")

DOC = Path(__file__).resolve().parents[2] / "docs" / "gymnax.md"


def _block(marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert match, f"docs/gymnax.md lost its block {marker}"
    return match.group(1)


@pytest.mark.slow  # compiles LBF's step with the six heuristics of its dev set (about 30 s)
def test_the_quick_start_runs():
    scope: dict = {}
    exec(compile(_block("gymnax-doc-quickstart"), "docs/gymnax.md", "exec"), scope)
    assert scope["obs"].shape == (64, 16)
    assert set(scope["info"]) >= {"teammate", "seat", "returned_episode_returns"}


@pytest.mark.parametrize(
    "marker,label",
    [
        ("gymnax-doc-functional", "functional API:"),
        ("gymnax-doc-jaxmarl", "JaxMARL:"),
        ("gymnax-doc-gymnax", "gymnax:"),
    ],
)
def test_the_same_rollout_runs_in_each_convention(marker, label, capsys):
    exec(compile(_block(marker), "docs/gymnax.md", "exec"), {})
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    assert printed.startswith(label)
    ego_return = float(printed.removeprefix(label))
    assert ego_return >= 0.0 and ego_return % 20 == 0  # base reward: +20 per delivered soup
