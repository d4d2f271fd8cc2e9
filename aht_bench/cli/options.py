"""The options several `aht-bench` commands take, written once: the task and seed types, --task,
--debug, --no-progress, --json, --reps, --plot, a set's --version, and the limits on an agent
file's run (`agent_limits`, handed to the command as one `AgentLimits`).

May import click and the standard library; aht_bench.envs inside `TASK`'s conversion.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class _TaskType(click.ParamType):
    """A task id or alias, resolved once (with a "did you mean") before any work starts, into
    the `aht_bench.envs.Task` the command passes down."""

    name = "task"

    def convert(self, value, param, ctx):
        from aht_bench import envs

        if isinstance(value, envs.Task):  # a default, or a value click converts twice
            return value
        try:
            return envs.task(value)
        except envs.UnknownTaskError as e:
            self.fail(str(e), param, ctx)


TASK = _TaskType()

MAX_SEED = 2**32 - 1
"""The largest evaluation seed: NumPy seeds the bootstrap with it (0 to 2**32 - 1), and a JAX
key keeps only its low 32 bits, so a larger seed would replay a smaller one's episodes."""


class _SeedType(click.ParamType):
    """An evaluation seed, 0 to `MAX_SEED`, checked before any work starts."""

    name = "integer"

    def convert(self, value, param, ctx):
        seed = click.INT.convert(value, param, ctx)
        if not 0 <= seed <= MAX_SEED:
            self.fail(
                f"{seed} is not a seed an evaluation can use; pass one from 0 to {MAX_SEED} "
                "(2**32 - 1: NumPy seeds the bootstrap with it, and a JAX key keeps only its "
                "32 low bits)",
                param,
                ctx,
            )
        return seed


SEED = _SeedType()


def task_option(required: bool = True) -> Decorator:
    """--task: a task id or alias, resolved into a `Task` (`TASK`)."""
    return click.option("--task", type=TASK, required=required, help="Task id or alias.")


debug_option = click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
no_progress_option = click.option("--no-progress", is_flag=True, help="No progress bar.")


def json_option(help_text: str) -> Decorator:
    """--json (the command's `as_json`): print the result as JSON, as `help_text` says."""
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def reps_option(help_text: str) -> Decorator:
    """--reps: bootstrap resamples of the command's confidence intervals."""
    return click.option(
        "--reps", type=click.IntRange(min=100), default=2000, show_default=True, help=help_text
    )


def plot_option(help_text: str) -> Decorator:
    """--plot PNG: a heatmap to draw, as `help_text` says."""
    return click.option(
        "--plot", type=click.Path(dir_okay=False, path_type=Path), default=None, help=help_text
    )


set_version_option = click.option(
    "--version",
    default=None,
    help="Set version or folder (default: the task's newest published set, as evaluate uses).",
)
"""A heldout set's --version (show, xp): the newest published one by default."""


@dataclasses.dataclass(frozen=True)
class AgentLimits:
    """What an agent file's run may take (`agent_limits`), as the options gave it."""

    load_timeout: float
    """Seconds the agent file may take to load."""
    step_timeout: float
    """Seconds one act(obs) or reset() may take."""
    total_timeout: float | None
    """Seconds the agent may run in all (None: no limit)."""
    memory_limit: float
    """GiB of memory the agent's sandbox may use in all."""

    def kwargs(self, echo_output: bool) -> dict[str, Any]:
        """The limits as `IsolatedAgent` and `evaluate_agent_files` take them (memory in
        bytes); `echo_output`: show what the agent prints."""
        return {
            "load_timeout": self.load_timeout,
            "step_timeout": self.step_timeout,
            "total_timeout": self.total_timeout,
            "memory_limit": int(self.memory_limit * 1024**3),
            "echo_output": echo_output,
        }


def agent_limits(
    *, load: str, step: str, total: str, total_default: float | None, memory: str
) -> Decorator:
    """--load-timeout, --step-timeout, --total-timeout (default `total_default`; None: no
    limit) and --memory-limit, with these help texts, for the commands that run an agent file
    (check-agent, evaluate); the command takes them as one `limits: AgentLimits`."""
    seconds = click.FloatRange(min=0, min_open=True)
    shown: dict[str, Any] = {"show_default": True} if total_default is not None else {}
    options = [
        click.option("--load-timeout", type=seconds, default=60.0, show_default=True, help=load),
        click.option("--step-timeout", type=seconds, default=5.0, show_default=True, help=step),
        click.option("--total-timeout", type=seconds, default=total_default, help=total, **shown),
        click.option(
            "--memory-limit",
            type=click.FloatRange(min=0.1),
            default=8.0,
            show_default=True,
            help=memory,
        ),
    ]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def with_limits(
            *args: Any,
            load_timeout: float,
            step_timeout: float,
            total_timeout: float | None,
            memory_limit: float,
            **kwargs: Any,
        ) -> Any:
            limits = AgentLimits(load_timeout, step_timeout, total_timeout, memory_limit)
            return command(*args, limits=limits, **kwargs)

        for option in reversed(options):  # bottom-up, as decorators written in this order
            with_limits = option(with_limits)
        return with_limits

    return decorate
