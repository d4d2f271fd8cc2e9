"""`aht-bench render`: one episode as a GIF, or a replay file's episodes as a viewer page.

May import click, tqdm, the standard library and (inside the commands) aht_bench.envs and
aht_bench.evaluation.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from aht_bench.cli.group import main
from aht_bench.cli.options import TASK

if TYPE_CHECKING:
    from aht_bench.envs import Task


@main.command()
@click.option("--task", type=TASK, default=None, help="Task id or alias: a new episode.")
@click.option(
    "--replay",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Draw the episodes of a replay file instead (of `evaluate --replays`, `play --record` "
    "or leaderboard/replays/), each replayed and checked first.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Output: a GIF (e.g. episode.gif; of a replay file, its first episode) or, with "
    "--replay, a viewer page (e.g. episodes.html); parent folders are created.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Episode seed.")
@click.option(
    "--policy",
    type=click.Choice(["random"]),
    default="random",
    show_default=True,
    help="Policy of every seat.",
)
@click.option("--fps", type=click.FloatRange(min=0.5, max=60), default=8.0, show_default=True)
def render(
    task: Task | None, replay: Path | None, out: Path, seed: int, policy: str, fps: float
) -> None:
    """Play one episode and save it as a GIF; prints the episode's base return. With --replay,
    draw a replay file's episodes: a viewer page (.html) or the first episode as a GIF.

    \b
    aht-bench render --task cramped_room --out episode.gif
    aht-bench render --replay human_data/episode-0001.json --out episode.html
    """
    if (task is None) == (replay is None):
        raise click.UsageError("give --task (a new episode) or --replay FILE (a saved one)")
    suffixes = (".gif", ".html") if replay is not None else (".gif",)
    if out.suffix.lower() not in suffixes:
        raise click.BadParameter(f"{out} must end in {' or '.join(suffixes)}", param_hint="--out")
    if replay is not None:
        _render_replay(replay, out, fps)
        return
    from aht_bench.envs.render import record_episode, render_frame, save_gif

    assert task is not None
    env = task.env
    start = time.perf_counter()
    episode = record_episode(env, seed=seed, policy=policy)
    from tqdm import tqdm

    frames = [
        render_frame(env, s)
        for s in tqdm(episode.states, desc="rendering frames", unit="frame", file=sys.stderr)
    ]
    save_gif(frames, out, fps=fps)
    end = "terminated" if episode.terminated else "reached the horizon"
    click.echo(
        f"{task.id}: {len(episode.actions)} steps ({end}), {policy} agents, seed {seed}\n"
        f"base return per agent: {', '.join(f'{r:g}' for r in episode.base_return)}\n"
        f"shaped return per agent: {', '.join(f'{r:g}' for r in episode.shaped_return)}\n"
        f"wrote {out} in {time.perf_counter() - start:.1f}s"
    )


def _render_replay(path: Path, out: Path, fps: float) -> None:
    """`render --replay`: the episodes of the replay file `path` as a viewer page, or the first
    as a GIF; a file that is not a replay, or does not reproduce its return, is a usage error."""
    from aht_bench import envs
    from aht_bench.envs.registry import UnknownTaskError
    from aht_bench.envs.render import render_frame, save_gif
    from aht_bench.evaluation.replay import ReplayError, read_replays
    from aht_bench.evaluation.replay import replay as replay_episode
    from aht_bench.evaluation.viewer import write_viewer

    start = time.perf_counter()
    try:
        replays = read_replays(path)
        if not replays:
            raise ReplayError(f"{path} holds no replays")
        if out.suffix.lower() == ".html":
            write_viewer(out, replays, f"{path.name}: {replays[0]['task_id']}")
            what = f"{len(replays)} episode(s)"
        else:
            first = replays[0]
            env = envs.task(first["task_id"]).env
            save_gif([render_frame(env, s) for s in replay_episode(first).states], out, fps=fps)
            what = f"episode {first['episode']} of {first['member']}, return {first['return']:g}"
    except (ReplayError, UnknownTaskError) as e:
        message = e.args[0] if isinstance(e, UnknownTaskError) else str(e)
        raise click.BadParameter(message, param_hint="--replay") from None
    click.echo(f"wrote {out} ({what}) in {time.perf_counter() - start:.1f}s")
