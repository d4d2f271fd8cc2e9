"""Hand-checkable loss data for the tests of the methods' loss streams (ROTATE, PAIRED,
Minimax Return): a linear policy whose loss terms can be worked out by hand, and trajectories of
one env with known rewards and episode clocks."""

from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp

from aht_bench.training import LearnerData, Trajectory

A = 3  # actions


@dataclasses.dataclass(frozen=True)
class LinearNet:
    """logits = s * obs[:A], values = v * obs[A:A + num_heads] (scalar params s, v)."""

    num_heads: int = 2

    def init_carry(self, batch_shape):
        return ()

    def evaluate(self, params, carry, obs):
        return params["s"] * obs[:A], params["v"] * obs[A : A + self.num_heads], carry


def hand_trajectory(rewards, time, num_heads: int = 2, num_learners: int = 2) -> Trajectory:
    """Steps of one env with `rewards` and episode clock `time`; zero observations (so s = 0
    gives the uniform policy and every new value is 0), old log-probs log(1/3) (ratio 1), old
    values 0. Every learner of the pairing sees the same data: it only matters who reads it."""
    shape = (len(rewards), 1)
    data = LearnerData(
        obs=jnp.zeros(shape + (A + num_heads,), jnp.float32),
        actions=jnp.zeros(shape, jnp.int32),
        log_probs=jnp.full(shape, -math.log(A), jnp.float32),
        values=jnp.zeros(shape + (num_heads,), jnp.float32),
        final_values=jnp.zeros(shape + (num_heads,), jnp.float32),
        last_values=jnp.zeros((1, num_heads), jnp.float32),
        rewards=jnp.asarray(rewards, jnp.float32).reshape(shape),
        initial_carry=(),
    )
    flags = jnp.zeros(shape, bool)
    return Trajectory(
        learners=(data,) * num_learners,
        starts=flags,
        terminated=flags,
        truncated=flags,
        episode_return=jnp.zeros(shape + (2,), jnp.float32),
        time=jnp.asarray(time, jnp.int32).reshape(shape),
        states=None,
    )
