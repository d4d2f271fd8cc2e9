"""`aht-bench check-agent`: load an agent file and play a few episodes with it, under the
limits `evaluate` runs it with.

May import click, the standard library, aht_bench.envs (for types) and (inside the command)
aht_bench.adapters, aht_bench.evaluation and aht_bench.policies.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aht_bench.cli import teammates
from aht_bench.cli.common import (
    EXIT_AGENT_LOAD,
    EXIT_AGENT_RUNTIME,
    EXIT_CODES_HELP,
    EXIT_USAGE,
    agent_failed,
    count,
    failed,
    internal_error,
    json_mode,
)
from aht_bench.cli.group import main
from aht_bench.cli.options import AgentLimits, agent_limits, debug_option, json_option, task_option

if TYPE_CHECKING:
    from aht_bench.envs import Task


@main.command("check-agent", epilog=EXIT_CODES_HELP)
@click.argument("agent", type=click.Path(path_type=Path))
@task_option()
@click.option("--seat", type=click.IntRange(min=0), default=0, show_default=True, help="Ego seat.")
@click.option("--episodes", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    default=None,
    help="Stop each episode after at most this many steps (default: play it to the end).",
)
@click.option(
    "--teammate",
    default="random",
    show_default=True,
    help="Partner in every other seat: random (uniform actions), a heuristic of the task "
    "(LBF: lexi, rlexi, col, rcol, nearest, farthest; Overcooked: onion_agent_<p>, "
    "plate_agent_<p>, independent_agent_<p>, static) or a heldout member, "
    "heldout:<version>:<member> (e.g. heldout:v2:ippo_mlp_0).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first episode.")
@click.option(
    "--no-isolate",
    is_flag=True,
    help="Run the agent in this process (trusted code only; faster to start; a crash or hang "
    "takes aht-bench down with it).",
)
@click.option(
    "--no-sandbox",
    is_flag=True,
    help="Run the agent in a separate process with the time limits but without the bubblewrap "
    "sandbox (trusted code only).",
)
@agent_limits(
    load="Seconds the agent file may take to load (isolated only).",
    step="Seconds one act(obs) or reset() may take (isolated only).",
    total="Seconds the agent may run in all (isolated only; default: no limit).",
    total_default=None,
    memory="GiB of memory the agent's sandbox may use in all: its processes, /tmp and /dev/shm "
    "(isolated only).",
)
@click.option("--agent-output", is_flag=True, help="Show what the agent prints (stderr).")
@json_option(
    "Print the result as JSON on stdout (agent, task_id, seat, teammate, returns, "
    "mean_return; the other lines go to stderr)."
)
@debug_option
def check_agent(
    agent: Path,
    task: Task,
    seat: int,
    episodes: int,
    steps: int | None,
    teammate: str,
    seed: int,
    no_isolate: bool,
    no_sandbox: bool,
    limits: AgentLimits,
    agent_output: bool,
    as_json: bool,
    debug: bool,
) -> None:
    """Load the agent file AGENT and play a few episodes of --task with it.

    Checks that AGENT follows the agent-file interface (docs/agent_files.md), runs it in a
    bubblewrap sandbox with time and memory limits (as `evaluate` does), prints each episode's
    base return and "agent OK".
    """
    from aht_bench.evaluation.evaluate import probe_agent_files
    from aht_bench.policies.agent_file import AgentLoadError, check_agent_path

    stdout = json_mode(as_json)
    try:
        path = check_agent_path(agent)
    except AgentLoadError as e:
        raise click.BadParameter(str(e), param_hint="AGENT") from None
    run_limits = limits.kwargs(agent_output) | {"sandbox": not no_sandbox}
    isolation = "in-process" if no_isolate else "process" if no_sandbox else "sandbox"
    with _agent_errors(debug):
        probe_agent_files([path], task, isolation, run_limits)  # before the teammate and the task
    num_agents = task.env.num_agents
    if seat >= num_agents:
        raise click.BadParameter(
            f"{task.id} has {num_agents} seats; pass --seat in [0, {num_agents})",
            param_hint="--seat",
        )
    partner = teammates.teammate(task, teammate)
    returns = _play(
        task, seat, partner, path, episodes, steps, seed, None if no_isolate else run_limits, debug
    )
    click.echo(
        f"mean base return {sum(returns) / len(returns):g} over {count(episodes, 'episode')} of "
        f"{task.id}, seat {seat}, teammate {teammate}"
    )
    click.echo(f"agent OK: {path.name}")
    if as_json:
        result = {"agent": path.name, "task_id": task.id, "seat": seat, "teammate": teammate,
                  "episodes": episodes, "returns": [float(r) for r in returns],
                  "mean_return": sum(returns) / len(returns), "ok": True}  # fmt: skip
        click.echo(json.dumps(result, indent=1), file=stdout)


@contextlib.contextmanager
def _agent_errors(debug: bool) -> Iterator[None]:
    """An agent file that fails to load (exit 3) or to play (exit 4), or a sandbox that cannot
    start (exit 2), as check-agent reports them."""
    from aht_bench.policies.agent_file import AgentLoadError, AgentRuntimeError
    from aht_bench.policies.sandbox import SandboxUnavailableError

    try:
        yield
    except AgentLoadError as e:
        raise agent_failed(e, EXIT_AGENT_LOAD, debug) from None
    except AgentRuntimeError as e:
        raise agent_failed(e, EXIT_AGENT_RUNTIME, debug) from None
    except SandboxUnavailableError as e:
        raise failed(f"error: {e}", EXIT_USAGE) from None


def _play(
    task: Task,
    seat: int,
    partner: tuple[Any, Any],
    path: Path,
    episodes: int,
    steps: int | None,
    seed: int,
    limits: dict[str, Any] | None,
    debug: bool,
) -> list[float]:
    """Each episode's base return of the agent file `path` in `seat` of `task`, the teammate
    `partner` (policy, params) in every other seat, isolated with `limits` (None: in this
    process); what else goes wrong while it plays is an internal error."""
    from aht_bench.adapters.gym import EgoEnv
    from aht_bench.evaluation.gym_runner import play_agent_file

    policy, params = partner
    try:
        with _agent_errors(debug):
            env = EgoEnv(task, teammate=policy, teammate_params=params, seat=seat)
            return play_agent_file(env, path, episodes, steps, seed, limits, echo=click.echo)
    except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt):
        raise
    except Exception as e:
        raise internal_error(e, debug) from None
