"""The `tiny_tasks` fixture: registers the test-only tasks of tests/tiny_tasks.py for one module."""

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
