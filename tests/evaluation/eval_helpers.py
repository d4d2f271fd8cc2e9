"""Shared pieces of the evaluation tests: constant and mirror policies on the matrix games (whose
best responses and returns are known by hand), a tiny teammate set on disk and agent files.
The fixtures that use them are in conftest.py."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench import envs
from aht_bench.evaluation import sets
from aht_bench.policies.io import save_policy
from aht_bench.policies.networks import MLPActorCritic

H, T = 0, 1  # sabotage actions (S = 2 ends the game)


class Const:
    """Always plays `action` (JAX policy protocol; hashable by value)."""

    def __init__(self, action: int) -> None:
        self.action = action

    def init_carry(self, batch_shape):
        return ()

    def act(self, params, carry, obs, key):
        return jnp.int32(self.action), carry, {}

    def __hash__(self):
        return hash(("Const", self.action))

    def __eq__(self, other):
        return isinstance(other, Const) and other.action == self.action


class Mirror:
    """Sabotage: H at the first step, then the partner's previous action (JAX protocol).

    The observation is the joint-action history one-hot, (steps, 2 [own, partner], 3 actions),
    flattened; the rows played so far are the ones with a 1 in them.
    """

    def init_carry(self, batch_shape):
        return ()

    def act(self, params, carry, obs, key):
        history = obs.reshape(5, 2, 3)
        t = jnp.sum(history[:, 0, :])  # steps played
        prev = jnp.argmax(history[jnp.maximum(t.astype(jnp.int32) - 1, 0), 1, :])
        return jnp.where(t > 0, prev, H).astype(jnp.int32), carry, {}


class MirrorNumpy:
    """The same agent for the step-by-step runner (reset / act on NumPy)."""

    def reset(self):
        pass

    def act(self, obs):
        history = obs.reshape(5, 2, 3)
        t = int(history[:, 0, :].sum())
        return H if t == 0 else int(np.argmax(history[t - 1, 1, :]))


JAX_AGENT = '''"""A JAX agent for the sabotage game: a seeded random MLP."""
import jax
from aht_bench.policies.networks import MLPActorCritic

TASKS = ("sabotage-v1",)
policy = MLPActorCritic(30, 3, hidden=(8,))
params = policy.init(jax.random.PRNGKey(3))
'''

PLAIN_AGENT = '''"""A plain agent for the sabotage game: H, or T when the obs sum is odd."""
TASKS = ("sabotage-v1",)


def act(obs):
    return int(obs.sum()) % 2
'''


def write_sabotage_set(folder: Path) -> Path:
    """A two-member set of seeded random MLPs for sabotage-v1 (policy files with sha256),
    bounds [0, 5] (the best response to anything is at most 5 for the whole game)."""
    env = envs.make("sabotage-v1")
    members = []
    for i in range(2):
        policy = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
        rel = f"mlp_{i}.safetensors"
        save_policy(folder / rel, policy, policy.init(jax.random.PRNGKey(10 + i)), {})
        members.append(
            {
                "name": f"mlp_{i}",
                "kind": "ippo",
                "file": rel,
                "sha256": __import__("hashlib").sha256((folder / rel).read_bytes()).hexdigest(),
                "bounds": {"lower": 0.0, "upper": 5.0, "upper_set_by": "analytic"},
            }
        )
    manifest = {
        "format": sets.FORMAT,
        "format_version": sets.FORMAT_VERSION,
        "set_id": "sabotage-v1/test",
        "version": "test",
        "task_id": "sabotage-v1",
        "env_id": "sabotage-v1",
        "seatings": [[0], [1]],
        "members": members,
    }
    sets.write_manifest(folder, manifest)
    return folder


def load_json(path: Path) -> dict:
    return json.loads(path.read_text())
