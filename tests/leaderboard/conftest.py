"""The leaderboard tests' records are of 2 episodes per member and seating (fast to check and
re-run); the protocol's least sample (64, `rerun.MIN_EPISODES` and `ledger.RANKED_EPISODES`)
is lowered to 2 for them. Tests of the rule itself set it back (`protocol_minimum`).

The re-runs' salts are made deterministic (`rerun.new_salt`: the test's or module's name and a
counter), so a statistical verdict on 2 episodes is the same on every run of a test, however
the tests are spread over workers; each call still gives a new salt."""

from __future__ import annotations

import itertools

import pytest

from aht_bench.leaderboard import ledger, rerun

FIXTURE_EPISODES = 2


@pytest.fixture(autouse=True, scope="module")
def fixture_sized_minimum(request):
    """Module-scoped, so that a module's own board fixtures see it too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rerun, "MIN_EPISODES", FIXTURE_EPISODES)
        patch.setattr(ledger, "RANKED_EPISODES", FIXTURE_EPISODES)
        patch.setattr(rerun, "new_salt", _salts(request.module.__name__))
        yield


@pytest.fixture(autouse=True)
def deterministic_salts(request, monkeypatch):
    monkeypatch.setattr(rerun, "new_salt", _salts(request.node.nodeid))


def _salts(name: str):
    counter = itertools.count()
    return lambda: f"test:{name}:{next(counter)}"


@pytest.fixture
def protocol_minimum(monkeypatch):
    """The rule as shipped: 64 episodes."""
    monkeypatch.setattr(rerun, "MIN_EPISODES", 64)
    monkeypatch.setattr(ledger, "RANKED_EPISODES", 64)
