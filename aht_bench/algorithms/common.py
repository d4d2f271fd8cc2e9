"""What the method modules (rotate, fcp, brdiv, comedi, paired, minimax, cole) share besides the
PPO core: config validation that names the field and the fix, the two-player env check, the
networks of the methods that train a teammate, its best response and an ego, the preset
lookup, and the stacking of per-seed states and the in-memory loop over iterations.

May import jax, numpy, aht_bench.envs, aht_bench.policies and aht_bench.training only.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import jax
import numpy as np

from aht_bench.policies.networks import MLPActorCritic, RecurrentEgo
from aht_bench.training.config import EGO_STAGE_FIELDS, PPOConfig, require
from aht_bench.training.ppo import ppo_update
from aht_bench.training.rollout import make_env
from aht_bench.training.setup import Setup
from aht_bench.training.streams import prefixed

C = TypeVar("C")
S = TypeVar("S")
SetupT = TypeVar("SetupT", bound=Setup)


def require_at_least(config: Any, minimum: int, *names: str) -> None:
    """Each field `names` of `config` is at least `minimum`; a ValueError names the first that
    is not."""
    for name in names:
        value = getattr(config, name)
        require(value >= minimum, name, value, f"use a value >= {minimum}")


def require_seat(field: str, seat: int) -> None:
    """`seat` (the field `field`) is a seat of a two-player task."""
    require(seat in (0, 1), field, seat, "use seat 0 or 1")


def require_one_update(field: str, timesteps: int, batch: int, update: str) -> None:
    """The budget `field` = `timesteps` holds at least one update of `batch` joint env steps
    (`update`, in words: "one <learner> update takes <what>")."""
    require(timesteps >= batch, field, timesteps, f"{update} = {batch} timesteps")


def require_divides(field: str, minibatches: int, transitions: int, stream: str) -> None:
    """The PPO minibatch count `field` = `minibatches` divides the `transitions` of one update
    of a feed-forward learner's `stream` (in words, with how it is made)."""
    fix = f"it must divide the {transitions} transitions of {stream}"
    require(transitions % minibatches == 0, field, minibatches, fix)


def require_sequences_divide(field: str, minibatches: int, envs: int, envs_field: str) -> None:
    """The recurrent ego's minibatches split whole env sequences: `minibatches` (the field
    `field`) divides the `envs` parallel envs (the field `envs_field`)."""
    fix = (
        f"the recurrent ego's minibatches split the {envs} env sequences; it must divide "
        f"{envs_field}"
    )
    require(envs % minibatches == 0, field, minibatches, fix)


def require_stream_minibatches(config: Any, ppo: str, stream: str) -> None:
    """The minibatch count of `config`'s PPO settings `ppo` (a field name) divides the
    `num_envs` x `rollout_length` transitions of one `stream` (in words)."""
    transitions = config.num_envs * config.rollout_length
    minibatches = getattr(config, ppo).num_minibatches
    stream = f"{stream} (num_envs x rollout_length)"
    require_divides(f"{ppo}.num_minibatches", minibatches, transitions, stream)


def require_teammate_and_ego_minibatches(config: Any, stream: str, ego_envs: str) -> None:
    """The minibatch checks of a config whose teammate learns from `num_envs` x
    `rollout_length` transitions per `stream` (`teammate_ppo`) and whose recurrent ego
    (`ego_ppo`) splits the env sequences of the field `ego_envs`."""
    require_stream_minibatches(config, "teammate_ppo", stream)
    envs = getattr(config, ego_envs)
    require_sequences_divide(
        "ego_ppo.num_minibatches", config.ego_ppo.num_minibatches, envs, ego_envs
    )


def require_chunks(field: str, iterations: int, updates: int, stage: str) -> None:
    """A stage of `updates` PPO updates splits into `iterations` (the field `field`) run-loop
    iterations: 1..updates."""
    fix = f"use 1..{updates} (the {stage} stage has {updates} PPO updates)"
    require(1 <= iterations <= updates, field, iterations, fix)


def require_ego_stage(config: Any) -> None:
    """The checks of an ego stage held as the flat fields `ego_timesteps`, `ego_num_envs`,
    `ego_rollout_length`, `ego_ppo`, `ego_hidden`, `ego_seat` and `ego_iterations` (FCP's and
    BRDiv's), each error naming its field."""
    require_at_least(config, 1, "ego_num_envs", "ego_rollout_length", "ego_hidden")
    require_seat("ego_seat", config.ego_seat)
    batch = config.ego_num_envs * config.ego_rollout_length
    update = "one ego update takes ego_num_envs x ego_rollout_length"
    require_one_update("ego_timesteps", config.ego_timesteps, batch, update)
    minibatches = config.ego_ppo.num_minibatches
    envs = config.ego_num_envs
    require_sequences_divide("ego_ppo.num_minibatches", minibatches, envs, "ego_num_envs")
    updates = config.ego_timesteps // batch
    require_chunks("ego_iterations", config.ego_iterations, updates, "ego")


def legacy_ego_stage(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` (a config as JSON, or `--set` overrides) with a nested ego stage as older
    aht-bench wrote it (`"ego": {...}` or `"ego.num_envs": "8"`) in today's flat `ego_*`
    names (`EGO_STAGE_FIELDS`). Entries of the old stage with no flat field (its `task_id`,
    `shaping`, ...) stay as `ego.<name>`: a config check or override then names them instead
    of dropping a value that may have mattered. Anything else is returned as it is."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "ego" and isinstance(value, dict):
            implied = {"checkpoint_updates": [], "updates_per_call": 1}
            implied |= {
                k: fields[k] for k in ("task_id", "shaped_reward_coef", "shaping") if k in fields
            }
            kept = {
                k: v for k, v in value.items() if k not in implied or _json(v) != _json(implied[k])
            }
            out.update(legacy_ego_stage({f"ego.{k}": v for k, v in kept.items()}))
            continue
        group, dot, field = name.partition(".")
        if group == "ego" and dot and field in EGO_STAGE_FIELDS:
            out[EGO_STAGE_FIELDS[field]] = value
        else:
            out[name] = value
    return out


def _json(value: Any) -> Any:
    """`value` as JSON reads it back (tuples as lists), for comparing configs with records."""
    return json.loads(json.dumps(value))


def two_player_env(config: Any, method: str) -> Any:
    """The env of `config`'s task under its shaping (`make_env`); a ValueError naming the task
    unless it has two seats (`method`: who needs them)."""
    env = make_env(config.task_id, config.shaping)
    if env.num_agents != 2:
        raise ValueError(
            f"task_id={config.task_id!r} has {env.num_agents} seats; {method} here is for "
            "two-player tasks (one ego, one teammate)"
        )
    return env


class TeammateNetworks(NamedTuple):
    """The architectures of a method that trains a teammate, its best response and an ego
    (ROTATE, Minimax Return, CoMeDi, PAIRED)."""

    teammate: MLPActorCritic  # its value heads: `teammate_networks`'s `teammate_heads`
    best_response: MLPActorCritic  # one value head
    ego: RecurrentEgo


def teammate_networks(config: Any, method: str, teammate_heads: int) -> TeammateNetworks:
    """The `TeammateNetworks` of `config` (its `teammate_hidden`, `best_response_hidden` and
    `ego_hidden`) on its two-player task; the teammate's critic has `teammate_heads` heads."""
    env = two_player_env(config, method)
    return TeammateNetworks(
        teammate=MLPActorCritic(
            env.obs_dim,
            env.num_actions,
            num_value_heads=teammate_heads,
            hidden=config.teammate_hidden,
        ),
        best_response=MLPActorCritic(
            env.obs_dim, env.num_actions, num_value_heads=1, hidden=config.best_response_hidden
        ),
        ego=RecurrentEgo(env.obs_dim, env.num_actions, hidden=config.ego_hidden),
    )


def params_shape(network: Any) -> Any:
    """The params `network.init` gives, as ShapeDtypeStructs, without computing them (what one
    slot of a buffer holds)."""
    return jax.eval_shape(network.init, jax.random.PRNGKey(0))


def slot_structs(params: Any, slots: int) -> Any:
    """`params`' ShapeDtypeStructs with a leading axis of `slots`: a buffer's structure, for a
    `SampledTeammate` built before its members exist (it compares structures only)."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct((slots,) + x.shape, x.dtype), params)


def update_teammate_and_best_response(
    nets: TeammateNetworks,
    carry: Any,
    streams: tuple[Any, Any],
    keys: tuple[Any, Any],
    ppo_config: PPOConfig,
    optimizer: Any,
) -> tuple[Any, Any, dict[str, jax.Array]]:
    """One PPO update of `carry.teammate` and of `carry.best_response` from their loss `streams`
    (teammate's, BR's) with `keys`, both on `ppo_config` and `optimizer` (the teammate phase's):
    the new learner states and their metrics, prefixed."""
    teammate, tm_metrics = ppo_update(
        nets.teammate, carry.teammate, streams[0], keys[0], ppo_config, optimizer
    )
    best_response, br_metrics = ppo_update(
        nets.best_response, carry.best_response, streams[1], keys[1], ppo_config, optimizer
    )
    return teammate, best_response, prefixed(teammate=tm_metrics, best_response=br_metrics)


def check_choice(field: str, value: str, choices: tuple[str, ...]) -> None:
    """Raise a ValueError naming `field` (with the closest choice) unless `value` is one of
    `choices`."""
    if value not in choices:
        close = difflib.get_close_matches(value, choices, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"{field}={value!r} is invalid: use one of {choices}{hint}")


def stack_seeds(
    init: Callable[..., S], key: jax.Array, config: Any, num_seeds: int, *inputs: Any
) -> S:
    """`init(k, config, *inputs)` for each `k` of `split(key, num_seeds)`, stacked on a leading
    seed axis.

    Seeds are initialised one by one outside jit: a vmapped `MLPActorCritic.init` never returns
    on CPU (see `aht_bench.training.rollout.init_params`); `stack_trees` stacks them."""
    keys = np.asarray(jax.random.split(key, num_seeds))
    return stack_trees([init(k, config, *inputs) for k in keys])


def stack_trees(trees: list[Any]) -> Any:
    """`trees` (one per seed, the same structure) stacked on a leading seed axis: on the host,
    then put on the device once (eager `jnp.stack`s would compile one small kernel per leaf
    shape)."""
    stacked = jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)
    return jax.device_put(stacked)


def iterations_done(state: Any) -> int:
    """The iteration counter of a (seed-stacked) iteration-loop state, as a Python int."""
    return int(np.asarray(jax.device_get(state.iteration)).reshape(-1)[0])
