"""Shared test helpers (imported as `from tiny_tasks import ...`; a module name no other test
folder uses, unlike `conftest`): `ConstantAction` (a test-only heuristic) and tiny test-only
tasks for the training and algorithm tests. A module that uses the tasks asks for the
`tiny_tasks` fixture of tests/conftest.py (`pytestmark = pytest.mark.usefixtures("tiny_tasks")`),
which registers them for that module only: the registry contract tests must never see them."""

import dataclasses

import jax.numpy as jnp

from aht_bench.envs.matrix import RepeatedMatrixGame

COORD_TASK = "test-coord2x2-v1"
TRUNC_TASK = "test-trunc-v1"


@dataclasses.dataclass(frozen=True)
class ConstantAction:
    """Test-only heuristic: always plays `action`, no params, empty carry, no extras."""

    action: int

    def init_carry(self, batch_shape):
        return ()

    def act(self, params, carry, obs, key):
        return jnp.int32(self.action), carry, {}


class TruncatedGame(RepeatedMatrixGame):
    """The 2x2 game repeated 3 steps, ended by the horizon (truncation), not by the task."""

    def _is_terminal(self, inner):
        return inner.ended
