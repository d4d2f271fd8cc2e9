"""Frames and GIFs of episodes: RGB for grid tasks (the task's `render_rgb`), text for the
matrix games (`render_text`, drawn onto a frame when a GIF is asked for).

May import numpy, PIL, jax, aht_bench.envs and aht_bench.files.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
from PIL import Image, ImageDraw

from aht_bench.envs.core import Environment, EnvState
from aht_bench.envs.rollout import random_rollout
from aht_bench.files import atomic_write_bytes

POLICIES = ("random",)


@dataclass(frozen=True)
class Episode:
    """One recorded episode: the states from the start to the last one, and what it earned."""

    states: list[EnvState[Any]]
    actions: np.ndarray  # (steps, num_agents) int32
    base_return: np.ndarray  # (num_agents,) float32
    shaped_return: np.ndarray  # (num_agents,) float32
    terminated: bool


def _unstack(tree: Any, n: int) -> list[Any]:
    return [jax.tree.map(lambda x, i=i: x[i], tree) for i in range(n)]


def record_episode(env: Environment, seed: int = 0, policy: str = "random") -> Episode:
    """Play one episode from p0 with uniform-random agents (the only `policy` until the policies
    issue brings heuristic teammates)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    key_reset, key_run = jax.random.split(jax.random.PRNGKey(seed))
    start, _ = env.reset(key_reset)
    last, (before, actions, ts) = random_rollout(env, key_run, start, env.horizon)
    before, last = jax.tree.map(np.asarray, (before, last))  # slice on the host, once
    done = np.asarray(ts.done)
    steps = int(np.argmax(done)) + 1 if done.any() else env.horizon
    # the state after step `steps` is the state before step `steps + 1`, or the scan's last
    final = jax.tree.map(lambda x: x[steps], before) if steps < env.horizon else last
    return Episode(
        states=_unstack(before, steps) + [final],
        actions=np.asarray(actions[:steps]),
        base_return=np.asarray(ts.reward[:steps].sum(axis=0)),
        shaped_return=np.asarray(ts.shaped_reward[:steps].sum(axis=0)),
        terminated=bool(np.asarray(ts.terminated)[steps - 1]),
    )


def text_frame(text: str, width: int = 480, height: int = 96) -> np.ndarray:
    """`text` drawn on a white RGB frame."""
    image = Image.new("RGB", (width, height), "white")
    ImageDraw.Draw(image).multiline_text((8, 8), text, fill="black")
    return np.asarray(image)


def render_frame(env: Environment, state: EnvState[Any]) -> np.ndarray:
    """One RGB frame (H, W, 3) uint8 of `state`."""
    if hasattr(env, "render_rgb"):
        return env.render_rgb(state)  # type: ignore[attr-defined]
    if hasattr(env, "render_text"):
        return text_frame(env.render_text(state))  # type: ignore[attr-defined]
    raise NotImplementedError(f"{env.task_id} has no renderer")


def save_gif(frames: list[np.ndarray], path: str | Path, fps: float = 8.0) -> Path:
    """Write `frames` as a looping GIF, atomically."""
    if not frames:
        raise ValueError("no frames to save")
    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise ValueError(f"{path} must end in .gif")
    images = [Image.fromarray(np.asarray(f, np.uint8)) for f in frames]
    buffer = io.BytesIO()
    images[0].save(
        buffer,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=int(1000 / fps),
        loop=0,
    )
    atomic_write_bytes(path, buffer.getvalue())
    return path
