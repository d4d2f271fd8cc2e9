"""Smoke-sized runs of every method: per method, overrides of its `quick` preset (as
`aht-bench train --set` takes them) that make a whole run of a few PPO updates per stage on LBF
(seconds of training; compilation dominates). The method contract test
(`tests/algorithms/test_method_contract.py`) and the bit-identity check of refactors
(`benchmarks/method_fingerprints.py`) run them.

May import the standard library only.
"""

from __future__ import annotations

TASK = "lbf"
"""The task the smoke runs train on."""

TEAMMATES = ("lexi",)
"""The teammates of the methods that train against given ones (br, ego)."""

_PPO = ("num_epochs=1", "num_minibatches=2")
_ROLLOUT = ("num_envs=8", "rollout_length=16")

OVERRIDES: dict[str, tuple[str, ...]] = {
    # 3 updates of 8 envs x 16 steps
    **{
        name: ("total_timesteps=384", *_ROLLOUT, *(f"ppo.{x}" for x in _PPO))
        for name in ("ippo", "br", "ego")
    },
    "rotate": (
        "iterations=2",
        "teammate_timesteps=1024",
        "ego_timesteps=256",
        *_ROLLOUT,
        *(f"teammate_ppo.{x}" for x in _PPO),
        *(f"ego_ppo.{x}" for x in _PPO),
    ),
    "minimax": (
        "iterations=2",
        "teammate_timesteps=512",
        "ego_timesteps=256",
        *_ROLLOUT,
        *(f"teammate_ppo.{x}" for x in _PPO),
        *(f"ego_ppo.{x}" for x in _PPO),
    ),
    "paired": (
        "iterations=2",
        "total_timesteps=512",
        *_ROLLOUT,
        *(f"teammate_ppo.{x}" for x in _PPO),
        *(f"ego_ppo.{x}" for x in _PPO),
    ),
    "comedi": (
        "population_size=2",
        "teammate_timesteps=512",
        *_ROLLOUT,
        "ego_timesteps=256",
        "ego_num_envs=8",
        "ego_iterations=1",
        *(f"teammate_ppo.{x}" for x in _PPO),
        *(f"ego_ppo.{x}" for x in _PPO),
    ),
    "fcp": (
        "num_ippo_seeds=2",
        "num_checkpoints=2",
        "teammate_timesteps=512",
        "teammate_num_envs=8",
        "teammate_rollout_length=16",
        "ego_timesteps=256",
        "ego_num_envs=8",
        "ego_rollout_length=16",
        "ego_iterations=1",
        *(f"teammate_ppo.{x}" for x in _PPO),
        *(f"ego_ppo.{x}" for x in _PPO),
    ),
    "brdiv": (
        "population_size=2",
        "generation_timesteps=1024",
        *_ROLLOUT,
        "generation_iterations=1",
        "ego_iterations=1",
        "ego_timesteps=256",
        "ego_num_envs=8",
        "ego_rollout_length=16",
        *(f"generation_ppo.{x}" for x in _PPO),
    ),
    "cole": (
        "population_size=2",
        "timesteps_per_iteration=256",
        *_ROLLOUT,
        "eval_envs=4",
        *(f"ppo.{x}" for x in _PPO),
    ),
}
"""Method name -> `field=value` overrides of its quick preset on `TASK`."""


def pairs(method: str) -> tuple[tuple[str, str], ...]:
    """`OVERRIDES[method]` as (field, value) pairs, as `RunSpec.overrides` takes them."""
    return tuple((k, v) for k, _, v in (item.partition("=") for item in OVERRIDES[method]))
