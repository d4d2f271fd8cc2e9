"""Episode replays: what `aht-bench evaluate --replays N` saves, enough to replay an evaluated
episode exactly, and the replay itself.

A replay is one episode of one member in one seating, as compact JSON:

    {
      "format": "aht-bench-replay", "format_version": 1,
      "task_id": "overcooked-cramped_room-v2",
      "teammate_set": {"id": ..., "manifest_sha256": ...},
      "agent": "my_agent.py", "member": "ippo_mlp_0",
      "seating": [0],                 # the agent's seats
      "episode": 3,                   # the evaluation's episode index
      "start": {"runner": "jax", "seed": 0, "seating_index": 0}
             | {"runner": "host", "jax_seed": 1234567},
      "actions": [[a_0, a_1], ...],   # the joint action of every step until the episode ended
      "return": 40.0                  # the agent's base return, as the record has it
    }

The start says how the evaluation drew its randomness: the jitted runner ("jax":
`rollout.episode_keys` of the evaluation seed, episode and seating; the env's key of each step
from `rollout.env_step_keys`) or the step-by-step runner ("host": the seed `EgoEnv.reset` gave
the compiled task, whose `step` carries the key). `replay` steps the task's environment with the
recorded joint actions from that start and returns every state; the replayed return must equal
the recorded one to the bit, or `ReplayError`.

May import numpy, jax, the standard library, aht_bench.envs, aht_bench.files and
aht_bench.evaluation.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench.envs.core import EnvState

REPLAY_FORMAT = "aht-bench-replay"
REPLAY_FORMAT_VERSION = 1


class ReplayError(ValueError):
    """A replay that cannot be read or does not reproduce its return: the message says why."""


@dataclasses.dataclass(frozen=True)
class Replayed:
    """An episode replayed: its states (the start, then one per step) and what it earned."""

    states: list[EnvState[Any]]
    rewards: np.ndarray  # float32 (steps,): the agent's base reward of each step
    returns: np.ndarray  # float32 (steps + 1,): the agent's base return after each step
    obs: np.ndarray  # float32 (steps, num_agents, obs_dim): every seat's obs before each step


@dataclasses.dataclass
class ReplaySink:
    """Collects the joint actions of the first `episodes` episodes of every member and seating
    while an evaluation plays (the runners' `sink`; of the first agent file, for several seeds'
    files); `replays(record)` turns them into replays, each replayed and checked against the
    record."""

    episodes: int
    items: list[tuple[int, int, int, dict[str, Any], np.ndarray, float]] = dataclasses.field(
        default_factory=list
    )

    def add(
        self, member: int, seating: int, episode: int, start: dict[str, Any], actions: Any, ret: Any
    ) -> None:
        self.items.append((member, seating, episode, start, np.asarray(actions), float(ret)))

    def replays(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """The replays of what was collected while `record` was evaluated, in member, seating
        and episode order; raises `ReplayError` if one does not reproduce its episode."""
        payload = record["payload"]
        agent = payload["agent"].get("file") or payload["agent"]["files"][0]["file"]
        out = []
        for member, seating, episode, start, actions, ret in sorted(
            self.items, key=lambda i: i[:3]
        ):
            entry = payload["members"][member]
            recorded = payload["protocol"]["seatings"][seating]
            key = ",".join(str(x) for x in recorded)
            # the first agent file's returns (a record of several seeds: the first seed's)
            returns = entry["returns_per_seed"][0] if "returns_per_seed" in entry else None
            returns = returns or entry["returns"]
            if returns[key][episode] != ret:
                raise ReplayError(f"{entry['name']}: a collected return is not the record's")
            made = make_replay(
                task_id=payload["task_id"],
                teammate_set=payload["teammate_set"],
                agent=agent,
                member=entry["name"],
                seating=recorded,
                episode=episode,
                start=start,
                actions=actions,
                episode_return=ret,
            )
            made = trimmed(made)
            replay(made)
            out.append(made)
        return out


def make_replay(
    *,
    task_id: str,
    teammate_set: dict[str, Any],
    agent: str,
    member: str,
    seating: tuple[int, ...] | list[int],
    episode: int,
    start: dict[str, Any],
    actions: np.ndarray,
    episode_return: float,
) -> dict[str, Any]:
    """A replay (see the module docstring); `actions` (steps, num_agents) up to the end."""
    return {
        "format": REPLAY_FORMAT,
        "format_version": REPLAY_FORMAT_VERSION,
        "task_id": task_id,
        "teammate_set": {k: teammate_set[k] for k in ("id", "manifest_sha256")},
        "agent": agent,
        "member": member,
        "seating": [int(s) for s in seating],
        "episode": int(episode),
        "start": dict(start),
        "actions": np.asarray(actions, np.int64).tolist(),
        "return": float(episode_return),
    }


@functools.partial(jax.jit, static_argnums=0)
def _jax_start(env: Any, seed_key: jax.Array, episode: jax.Array, seating: jax.Array) -> Any:
    from aht_bench.evaluation.rollout import env_step_keys, episode_keys

    reset_key, play_key = episode_keys(seed_key, episode, seating)
    state, timestep = env.reset(reset_key)
    return state, timestep, env_step_keys(play_key, env.horizon)


def _start_jax(record: dict[str, Any]) -> tuple[Any, Any, Any, jax.Array]:
    """(env, start state, start timestep, env key of every step) of the jitted runner."""
    from aht_bench import envs

    env = envs.task(record["task_id"]).env
    state, timestep, keys = _jax_start(
        env,
        jax.random.PRNGKey(int(record["start"]["seed"])),
        jnp.asarray(record["episode"], jnp.int32),
        jnp.asarray(record["start"]["seating_index"], jnp.int32),
    )
    return env, state, timestep, keys


@functools.partial(jax.jit, static_argnums=1)
def _key_chain(key: jax.Array, horizon: int) -> jax.Array:
    """The keys the compiled task's `step` splits off `key`, one per step."""

    def split(k: jax.Array, _: Any) -> tuple[jax.Array, jax.Array]:
        k, step_key = jax.random.split(k)
        return k, step_key

    return jax.lax.scan(split, key, None, length=horizon)[1]


def _start_host(record: dict[str, Any]) -> tuple[Any, Any, Any, jax.Array]:
    """The same for the step-by-step runner: the compiled task's reset, and the keys its
    `step` splits off the episode's key one step at a time."""
    from aht_bench import envs

    task = envs.task(record["task_id"]).compiled
    key, state, timestep = task.reset(np.uint32(record["start"]["jax_seed"]))
    return task.env, state, timestep, _key_chain(key, task.env.horizon)


@functools.partial(jax.jit, static_argnums=0)
def _run(env: Any, state: Any, keys: jax.Array, actions: jax.Array) -> tuple[Any, Any]:
    """Every state and timestep of stepping `env` from `state` with `actions` (horizon, A)
    and the env keys `keys` (horizon,)."""

    def body(state: Any, x: tuple[jax.Array, jax.Array]) -> tuple[Any, Any]:
        state, timestep = env.step(x[0], state, x[1])
        return state, (state, timestep)

    _, out = jax.lax.scan(body, state, (keys, actions))
    return out


def _states(record: dict[str, Any]) -> tuple[list[Any], np.ndarray, np.ndarray, np.ndarray]:
    """(states, done (steps + 1,), base return of the agent's first seat (steps + 1,), every
    seat's observation (steps + 1, num_agents, obs_dim)) of the replay up to the episode's end
    or its last action."""
    runner = record["start"].get("runner")
    if runner not in ("jax", "host"):
        raise ReplayError(f"unknown start runner {runner!r} (expected 'jax' or 'host')")
    env, state, timestep, keys = (_start_jax if runner == "jax" else _start_host)(record)
    actions = np.asarray(record["actions"], np.int32).reshape(-1, env.num_agents)
    if len(actions) > env.horizon:
        raise ReplayError(f"a replay of {len(actions)} steps is longer than the horizon")
    seat = int(record["seating"][0])
    done = [bool(np.asarray(timestep.done))]
    returns = [np.asarray(timestep.episode_return)[seat]]
    obs = [np.asarray(timestep.obs)]
    states = [state]
    if len(actions) and not done[0]:
        # padded to the horizon: one compile per task, whatever the episode's length
        padded = np.zeros((env.horizon, env.num_agents), np.int32)
        padded[: len(actions)] = actions
        stacked, steps = jax.device_get(_run(env, state, keys, jnp.asarray(padded)))
        n = len(actions)
        done += [bool(d) for d in np.asarray(steps.done)[:n]]
        returns += list(np.asarray(steps.episode_return)[:n, seat])
        obs += list(np.asarray(steps.obs)[:n])
        states += [jax.tree.map(lambda x, i=i: x[i], stacked) for i in range(n)]
    end = done.index(True) + 1 if True in done else len(done)
    return (
        states[:end],
        np.asarray(done[:end]),
        np.asarray(returns[:end], np.float32),
        np.asarray(obs[:end], np.float32),
    )


def trimmed(record: dict[str, Any]) -> dict[str, Any]:
    """`record` with its actions cut where the episode ended (an evaluation records every
    step of the horizon; steps after the end are never played)."""
    states, _, _, _ = _states(record)
    return {**record, "actions": record["actions"][: len(states) - 1]}


def replay(record: dict[str, Any]) -> Replayed:
    """Step the task's environment through the replay `record` from its start; raises
    `ReplayError` unless the episode ends exactly at its last action with its recorded return."""
    states, done, returns, obs = _states(record)
    where = f"{record['member']}, seats {record['seating']}, episode {record['episode']}"
    if not done[-1] or len(states) - 1 != len(record["actions"]):
        raise ReplayError(
            f"the replay of {where} does not end at its last action (it played "
            f"{len(states) - 1} of {len(record['actions'])} actions)"
        )
    if float(returns[-1]) != float(np.float32(record["return"])):
        raise ReplayError(
            f"the replay of {where} returns {float(returns[-1])!r}, not the recorded "
            f"{record['return']!r}: it does not reproduce the evaluated episode"
        )
    return Replayed(states, np.diff(returns), returns, obs[:-1])


def check_replay_file(data: Any, where: str) -> dict[str, Any]:
    """A replay read from JSON, its format and fields checked (not yet replayed)."""
    if not isinstance(data, dict) or data.get("format") != REPLAY_FORMAT:
        raise ReplayError(f'{where} is not a replay (no "format": "{REPLAY_FORMAT}")')
    if data.get("format_version") != REPLAY_FORMAT_VERSION:
        raise ReplayError(
            f"{where} is a replay of format version {data.get('format_version')!r}; this "
            f"aht-bench reads version {REPLAY_FORMAT_VERSION}"
        )
    keys = ("task_id", "member", "seating", "episode", "start", "actions", "return")
    missing = [k for k in keys if k not in data]
    if missing:
        raise ReplayError(f"{where}: a replay without {', '.join(missing)}")
    return data


def read_replays(path: Path) -> list[dict[str, Any]]:
    """The replays of a file written by `write_replays` (a JSON list) or of one replay."""
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise ReplayError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise ReplayError(f"{path} is not valid JSON: {e}") from None
    items = data if isinstance(data, list) else [data]
    return [check_replay_file(r, f"{path} [{i}]") for i, r in enumerate(items)]


def write_replays(path: Path, replays: list[dict[str, Any]]) -> None:
    """`replays` as one JSON file (a list), atomically."""
    from aht_bench.files import atomic_write_bytes

    atomic_write_bytes(path, (json.dumps(replays, separators=(",", ":")) + "\n").encode())


def save_replays(sink: ReplaySink, record: dict[str, Any], target: Path, viewer: bool) -> Path:
    """The replays `sink` collected while `record` was evaluated, checked by replaying them
    (`ReplaySink.replays`), as <target stem>-replays/MEMBER.json and (`viewer`) a viewer page
    MEMBER.html per member, next to the record `target`; returns that folder."""
    from aht_bench.evaluation.viewer import write_viewer

    folder = target.with_name(f"{target.stem}-replays")
    folder.mkdir(parents=True, exist_ok=True)
    by_member: dict[str, list[dict[str, Any]]] = {}
    for item in sink.replays(record):
        by_member.setdefault(item["member"], []).append(item)
    for member, items in by_member.items():
        write_replays(folder / f"{member}.json", items)
        if viewer:
            title = f"{items[0]['agent']} with {member} on {items[0]['task_id']}"
            write_viewer(folder / f"{member}.html", items, title)
    return folder


__all__ = [
    "REPLAY_FORMAT",
    "ReplayError",
    "ReplaySink",
    "Replayed",
    "check_replay_file",
    "make_replay",
    "read_replays",
    "replay",
    "save_replays",
    "trimmed",
    "write_replays",
]
