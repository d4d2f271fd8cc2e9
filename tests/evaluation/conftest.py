"""Fixtures of the evaluation tests (helpers in eval_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_helpers import JAX_AGENT, PLAIN_AGENT, write_sabotage_set


@pytest.fixture
def sabotage_set(tmp_path: Path) -> Path:
    return write_sabotage_set(tmp_path / "set")


@pytest.fixture
def sabotage_agents(tmp_path: Path) -> dict[str, Path]:
    """Two agent files in a folder of their own (their bundle: the records written to
    tmp_path stay out of it)."""
    out = {}
    (tmp_path / "agents").mkdir(exist_ok=True)
    for name, text in (("jax_agent.py", JAX_AGENT), ("plain_agent.py", PLAIN_AGENT)):
        path = tmp_path / "agents" / name
        path.write_text(text)
        out[name] = path
    return out
