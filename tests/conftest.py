"""The `tiny_tasks` fixture (registers the test-only tasks of tests/tiny_tasks.py for one module)
and a session guard: no test may change the committed leaderboard/."""

import hashlib
from pathlib import Path

import pytest
from tiny_tasks import COORD_TASK, TRUNC_TASK, TruncatedGame

from aht_bench.envs import registry
from aht_bench.envs.matrix import RepeatedMatrixGame


@pytest.fixture(scope="module")
def tiny_tasks():
    def coord():
        return RepeatedMatrixGame(COORD_TASK, ((2.0, 0.0), (0.0, 1.0)), ("A", "B"), steps=1)

    def trunc():
        return TruncatedGame(TRUNC_TASK, ((2.0, 0.0), (0.0, 1.0)), ("A", "B"), steps=3)

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(registry._REGISTRY, COORD_TASK, coord)
        mp.setitem(registry._REGISTRY, TRUNC_TASK, trunc)
        yield


LEADERBOARD = Path(__file__).resolve().parents[1] / "leaderboard"


def _tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="session", autouse=True)
def _committed_leaderboard_untouched():
    """No test may write into the committed leaderboard/ (its ledger ranks entries): two
    re-run tests once stamped their 2-episode samples over two ledger lines, and a results
    commit carried them in. Tests that verify or render write under tmp_path."""
    before = _tree_digest(LEADERBOARD)
    yield
    assert _tree_digest(LEADERBOARD) == before, (
        "a test changed files under leaderboard/ (git status shows which); "
        "tests must verify, render and record into tmp_path"
    )
