"""`aht-bench ...`: the command line. Thin: each command parses, calls one library function and
prints. Exit codes: 0 ok, 2 usage error (bad option or unknown task), 1 anything else.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from aht_bench import __version__


class _TaskType(click.ParamType):
    """A task id or alias, resolved (with a "did you mean") before any work starts."""

    name = "task"

    def convert(self, value, param, ctx):
        from aht_bench.envs.registry import UnknownTaskError, resolve

        try:
            return resolve(value)
        except UnknownTaskError as e:
            self.fail(str(e), param, ctx)


TASK = _TaskType()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="aht-bench")
def main() -> None:
    """aht-bench: environments, teammates and evaluation for ad hoc teamwork."""


@main.command()
def tasks() -> None:
    """List the registered tasks and their short aliases."""
    from aht_bench import envs

    short = {v: k for k, v in envs.aliases().items()}
    for task_id in envs.registered_ids():
        alias = f" (alias: {short[task_id]})" if task_id in short else ""
        click.echo(f"{task_id:32s} {envs.describe(task_id)}{alias}")


@main.command()
@click.option("--task", "task_id", type=TASK, required=True, help="Task id or alias.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Output GIF (e.g. episode.gif); parent folders are created.",
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
def render(task_id: str, out: Path, seed: int, policy: str, fps: float) -> None:
    """Play one episode and save it as a GIF; prints the episode's base return."""
    if out.suffix.lower() != ".gif":
        raise click.BadParameter(f"{out} must end in .gif", param_hint="--out")
    from aht_bench import envs
    from aht_bench.envs.render import record_episode, render_frame, save_gif

    env = envs.make(task_id)
    start = time.perf_counter()
    episode = record_episode(env, seed=seed, policy=policy)
    with click.progressbar(episode.states, label=f"rendering {len(episode.states)} frames") as bar:
        frames = [render_frame(env, s) for s in bar]
    save_gif(frames, out, fps=fps)
    end = "terminated" if episode.terminated else "reached the horizon"
    click.echo(
        f"{task_id}: {len(episode.actions)} steps ({end}), {policy} agents, seed {seed}\n"
        f"base return per agent: {', '.join(f'{r:g}' for r in episode.base_return)}\n"
        f"shaped return per agent: {', '.join(f'{r:g}' for r in episode.shaped_return)}\n"
        f"wrote {out} in {time.perf_counter() - start:.1f}s"
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
