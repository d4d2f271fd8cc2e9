"""`aht-bench ...`: the command line. Thin: each command parses, calls one library function and
prints.

Exit codes (the same for every command; `EXIT_*` below):

    0  ok
    1  internal error (a bug in aht-bench: please report it)
    2  usage error: bad option, unknown task, agent file missing or not a .py file
    3  the agent file failed to load (import error, no act(obs), TASKS mismatch, load timeout)
    4  the agent failed while playing (act raised or returned a bad action, step timeout, crash)
    5  a teammate set failed its integrity check (`evaluate`, `devset show`)
    6  training stopped: a loss or parameter became NaN or infinite (`train`)
  130  stopped by Ctrl-C (SIGINT) after saving a checkpoint (`train`; resume with --resume)
  143  stopped by SIGTERM after saving a checkpoint (`train`; resume with --resume)

Errors print one message to stderr, without a traceback (`--debug` shows it where offered).

May import click, tqdm, the standard library and aht_bench (the top layer: it parses the
options, resolves ids once and calls the library).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aht_bench import __version__

if TYPE_CHECKING:
    from aht_bench.envs import Task

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_AGENT_LOAD = 3
EXIT_AGENT_RUNTIME = 4
EXIT_TEAMMATE_INTEGRITY = 5
EXIT_TRAINING_DIVERGED = 6
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

EXIT_CODES_HELP = """\b
Exit codes:
  0  ok
  1  internal error (a bug in aht-bench)
  2  usage error (bad option, unknown task, agent file missing or not .py)
  3  the agent failed to load (incl. load timeout)
  4  the agent failed while playing (incl. step timeout, crash)
  5  teammate-set integrity failure (evaluate: manifest or weights fail sha256)"""

TRAIN_EXIT_CODES_HELP = """\b
Exit codes:
    0  ok (the run finished)
    1  internal error (a bug in aht-bench)
    2  usage error (bad option or override, --out in use, nothing to resume, bad checkpoint)
    6  a loss or parameter became NaN/inf (the update or iteration is named; nothing of it
       was saved)
  130  Ctrl-C: stopped at an update (rotate: iteration) boundary after a checkpoint (continue
       with --resume)
  143  SIGTERM: stopped at an update (rotate: iteration) boundary after a checkpoint
       (continue with --resume)"""


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


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    if ctx.meta.get("version_json"):
        from aht_bench.heldout import where

        click.echo(json.dumps(where.as_json(), indent=1))
        ctx.exit()
    click.echo(f"aht-bench, version {__version__}")
    from aht_bench.heldout import where

    click.echo(where.summary())
    ctx.exit()


class _Main(click.Group):
    """The top-level group; `--version --json` is seen before the eager --version runs."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["version_json"] = "--version" in args and "--json" in args
        return super().parse_args(ctx, args)


def _set_heldout(_ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        from aht_bench.evaluation.sets import HELDOUT_ENV

        os.environ[HELDOUT_ENV] = str(value.resolve())


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Print the version and the heldout data it finds, and exit.",
)
@click.option(
    "--json", "version_json", is_flag=True, expose_value=False, help="With --version: as JSON."
)
@click.option(
    "--heldout",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    expose_value=False,
    is_eager=True,
    callback=_set_heldout,
    help="The heldout/ folder to use (as $AHT_BENCH_HELDOUT; default: the checkout's, else the "
    "sets installed with aht-bench; `aht-bench heldout where` shows the order).",
)
def main() -> None:
    """aht-bench: environments, teammates and evaluation for ad hoc teamwork."""


@main.command()
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON list, a row per task: task_id, alias, aliases, description, agents, "
    "horizon, obs_dim, num_actions, gymnasium_id, heldout_sets (published), default_set, sets "
    "(builds every task: some seconds).",
)
def tasks(as_json: bool) -> None:
    """List the registered tasks and their short aliases."""
    from aht_bench import envs

    short = {v: k for k, v in envs.aliases().items()}
    if as_json:
        click.echo(json.dumps([_task_row(t) for t in envs.registered_ids()], indent=1))
        return
    for task_id in envs.registered_ids():
        alias = f" (alias: {short[task_id]})" if task_id in short else ""
        click.echo(f"{task_id:32s} {envs.describe(task_id)}{alias}")


def _task_row(task_id: str) -> dict[str, Any]:
    """What a script needs to know about one task (`tasks --json`): sizes from the built
    environment, its Gymnasium ids and the teammate sets found here."""
    from aht_bench import envs
    from aht_bench.adapters.gym import gymnasium_aliases, gymnasium_id
    from aht_bench.evaluation.sets import HUMAN_PROXY, available_sets, published_versions

    env = envs.make(task_id)
    aliases = sorted(a for a, t in envs.aliases().items() if t == task_id)
    published = published_versions(task_id) + published_versions(task_id, HUMAN_PROXY)
    return {
        "task_id": task_id,
        "alias": aliases[0] if aliases else None,
        "aliases": aliases,
        "description": envs.describe(task_id),
        "agents": int(env.num_agents),
        "horizon": int(env.horizon),
        "obs_dim": int(env.obs_dim),
        "num_actions": int(env.num_actions),
        "gymnasium_id": gymnasium_id(task_id),
        "gymnasium_alias_ids": [gymnasium_id(a) for a in aliases if a in gymnasium_aliases()],
        "heldout_sets": published,
        "default_set": (published_versions(task_id) or [None])[-1],
        "sets": available_sets(task_id),
    }


@main.command()
@click.argument(
    "folder", type=click.Path(file_okay=False, path_type=Path), required=False, default=None
)
@click.option("--force", is_flag=True, help="Replace example files that exist in FOLDER.")
def examples(folder: Path | None, force: bool) -> None:
    """Copy the example agents (random, scripted, heuristic, JAX MLP, Stable-Baselines3) into
    FOLDER (default: ./agents/examples, the path errors and docs cite), to evaluate or edit.

    \b
    aht-bench examples
    aht-bench evaluate agents/examples/random_agent.py --task forced_coord --episodes 2
    """
    from aht_bench.shipped import DEFAULT_EXAMPLES_DIR, ShippedFileError, copy_examples

    dest = folder if folder is not None else DEFAULT_EXAMPLES_DIR
    try:
        written = copy_examples(dest, force=force)
    except ShippedFileError as e:
        raise click.BadParameter(str(e), param_hint="FOLDER") from None
    click.echo(f"copied {_count(len(written), 'file')} to {dest}/:")
    for path in written:
        click.echo(f"  {path}")
    click.echo(
        f"next: aht-bench evaluate {dest / 'random_agent.py'} --task forced_coord --episodes 2 "
        "(docs/agent_files.md, `aht-bench docs agent_files`, says how to write your own)"
    )


@main.command()
@click.argument("page", required=False, default=None)
@click.option("--path", "as_path", is_flag=True, help="Print the page's file, not its text.")
@click.option("--json", "as_json", is_flag=True, help="The pages as one JSON list.")
def docs(page: str | None, as_path: bool, as_json: bool) -> None:
    """The documentation that ships with aht-bench: without PAGE, list the pages and where
    they are; with PAGE (e.g. evaluation, agent_files, baselines/brdiv), print it (Markdown).

    \b
    aht-bench docs
    aht-bench docs evaluation
    """
    from aht_bench.shipped import ShippedFileError, docs_root, page_path, pages

    if page is None:
        rows = pages()
        if as_json:
            click.echo(json.dumps([{"page": n, "title": t} for n, t in rows], indent=1))
            return
        click.echo(f"docs in {docs_root()} (aht-bench docs PAGE prints one):")
        width = max((len(n) for n, _ in rows), default=0)
        for name, title in rows:
            click.echo(f"  {name:{width}s}  {title}")
        return
    try:
        path = page_path(page)
    except ShippedFileError as e:
        raise click.BadParameter(str(e), param_hint="PAGE") from None
    click.echo(str(path) if as_path else path.read_text().rstrip("\n"))


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


def _teammate(task: Task, name: str) -> tuple[Any, Any]:
    """(policy, params) of the teammate `name` for `task` (`resolve_teammate`: random, a
    heuristic or heldout:<version>:<member>); a bad name is a usage error, a set that fails
    its integrity check exit 5."""
    from aht_bench.evaluation.sets import TeammateSetIntegrityError
    from aht_bench.evaluation.teammates import resolve_teammate

    try:
        return resolve_teammate(task, name)
    except TeammateSetIntegrityError as e:
        click.echo(f"error: teammate set integrity check failed: {e}", err=True)
        raise click.exceptions.Exit(EXIT_TEAMMATE_INTEGRITY) from None
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--teammate") from None


def _internal_error(error: Exception, debug: bool) -> click.exceptions.Exit:
    """Report an unexpected exception (a bug in aht-bench) and give the exit to raise."""
    if debug:
        click.echo(traceback.format_exc().rstrip(), err=True)
    click.echo(
        f"internal error: {type(error).__name__}: {error} (a bug in aht-bench; rerun with "
        "--debug and report it)",
        err=True,
    )
    return click.exceptions.Exit(EXIT_INTERNAL)


def _agent_failed(error: Exception, code: int, debug: bool) -> click.exceptions.Exit:
    details = getattr(error, "details", None)
    if debug and details:
        click.echo(details.rstrip(), err=True)
    click.echo(f"error: {error}", err=True)
    return click.exceptions.Exit(code)


def _memory_limit(help_text: str) -> Callable[[Any], Any]:
    """The --memory-limit option of the commands that run an agent file (check-agent, evaluate)."""
    return click.option(
        "--memory-limit",
        type=click.FloatRange(min=0.1),
        default=8.0,
        show_default=True,
        help=help_text,
    )


@main.command("check-agent", epilog=EXIT_CODES_HELP)
@click.argument("agent", type=click.Path(path_type=Path))
@click.option("--task", type=TASK, required=True, help="Task id or alias.")
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
@click.option(
    "--load-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds the agent file may take to load (isolated only).",
)
@click.option(
    "--step-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    help="Seconds one act(obs) or reset() may take (isolated only).",
)
@click.option(
    "--total-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds the agent may run in all (isolated only; default: no limit).",
)
@_memory_limit(
    "GiB of memory the agent's sandbox may use in all: its processes, /tmp and /dev/shm "
    "(isolated only)."
)
@click.option("--agent-output", is_flag=True, help="Show what the agent prints (stderr).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result as JSON on stdout (agent, task_id, seat, teammate, returns, "
    "mean_return; the other lines go to stderr).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
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
    load_timeout: float,
    step_timeout: float,
    total_timeout: float | None,
    memory_limit: float,
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
    from aht_bench.policies.agent_file import AgentLoadError, AgentRuntimeError, check_agent_path
    from aht_bench.policies.sandbox import SandboxUnavailableError

    stdout = _json_mode(as_json)
    try:
        path = check_agent_path(agent)
    except AgentLoadError as e:
        raise click.BadParameter(str(e), param_hint="AGENT") from None
    from aht_bench.adapters.gym import EgoEnv
    from aht_bench.evaluation.gym_runner import play_agent_file

    limits = {
        "load_timeout": load_timeout,
        "step_timeout": step_timeout,
        "total_timeout": total_timeout,
        "memory_limit": int(memory_limit * 1024**3),
        "echo_output": agent_output,
        "sandbox": not no_sandbox,
    }
    isolation = "in-process" if no_isolate else "process" if no_sandbox else "sandbox"
    try:
        probe_agent_files([path], task, isolation, limits)  # before the teammate and the task
    except AgentLoadError as e:
        raise _agent_failed(e, EXIT_AGENT_LOAD, debug) from None
    except SandboxUnavailableError as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None
    num_agents = task.env.num_agents
    if seat >= num_agents:
        raise click.BadParameter(
            f"{task.id} has {num_agents} seats; pass --seat in [0, {num_agents})",
            param_hint="--seat",
        )
    partner, partner_params = _teammate(task, teammate)
    try:
        env = EgoEnv(task, teammate=partner, teammate_params=partner_params, seat=seat)
        returns = play_agent_file(
            env, path, episodes, steps, seed, None if no_isolate else limits, echo=click.echo
        )
    except AgentLoadError as e:
        raise _agent_failed(e, EXIT_AGENT_LOAD, debug) from None
    except AgentRuntimeError as e:
        raise _agent_failed(e, EXIT_AGENT_RUNTIME, debug) from None
    except SandboxUnavailableError as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None
    except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt):
        raise
    except Exception as e:
        raise _internal_error(e, debug) from None
    click.echo(
        f"mean base return {sum(returns) / len(returns):g} over {_count(episodes, 'episode')} of "
        f"{task.id}, seat {seat}, teammate {teammate}"
    )
    click.echo(f"agent OK: {path.name}")
    if as_json:
        result = {"agent": path.name, "task_id": task.id, "seat": seat, "teammate": teammate,
                  "episodes": episodes, "returns": [float(r) for r in returns],
                  "mean_return": sum(returns) / len(returns), "ok": True}  # fmt: skip
        click.echo(json.dumps(result, indent=1), file=stdout)


def _train_spec(
    algorithm: str, out: Path, resume: bool, given: dict[str, Any], devices: int
) -> Any:
    """The RunSpec from the options; with --resume, options left out come from the run."""
    from aht_bench.runs import RunDirError, read_spec
    from aht_bench.runs.spec import spec_from_options

    stored = None
    if resume:
        try:
            stored = read_spec(out)
        except RunDirError as e:
            raise click.BadParameter(str(e), param_hint="--out") from None
        if stored.algorithm != algorithm:
            raise click.BadParameter(
                f"{out} holds a {stored.algorithm} run, not {algorithm}; resume it with "
                f"`aht-bench train {stored.algorithm} --out {out} --resume`",
                param_hint="ALGORITHM",
            )
    elif given["task_id"] is None:
        raise click.BadParameter("--task is required (unless --resume)", param_hint="--task")
    try:
        return spec_from_options(algorithm, given, stored, devices)
    except (ValueError, KeyError) as e:
        raise click.UsageError(str(e).strip('"')) from None


TRAINABLE = ("ippo", "br", "ego", "rotate", "fcp", "brdiv", "comedi", "paired", "minimax", "cole")
"""The keys of `aht_bench.runs.ALGORITHMS` (listed here so `--help` does not import JAX;
tests/test_cli.py checks they agree)."""


def _override_pairs(overrides: tuple[str, ...]) -> list[tuple[str, str]]:
    """`--set FIELD=VALUE` options as (field, value) pairs."""
    pairs = []
    for item in overrides:
        field, sep, value = item.partition("=")
        if not sep or not field.strip():
            raise click.BadParameter(f"{item!r} is not FIELD=VALUE", param_hint="--set")
        pairs.append((field.strip(), value.strip()))
    return pairs


def _shard_seeds(devices: int, num_seeds: int, group: int | None) -> None:
    """Split the run's seeds over the first `devices` devices (`--devices`), each device's
    share a multiple of the seed `group` size (`--seed-group`)."""
    from aht_bench.training.driver import SeedSplitError, split_seeds

    try:
        split_seeds(devices, num_seeds, group)
    except SeedSplitError as e:
        raise click.BadParameter(str(e), param_hint="--" + e.field.replace("_", "-")) from None


@main.command(epilog=TRAIN_EXIT_CODES_HELP)
@click.argument("algorithm", type=click.Choice(TRAINABLE))
@click.option("--task", type=TASK, default=None, help="Task id or alias.")
@click.option(
    "--preset",
    type=click.Choice(["quick", "medium", "paper", "sabotage"]),
    default=None,
    help="quick: minutes on two CPU cores; medium (ROTATE and the baselines): a tenth of the "
    "paper's env steps at quick's per-step settings, about an hour for three seeds on two CPU "
    "cores; paper: the paper's hyperparameter table (cluster scale); sabotage: rotate on the "
    "sabotage game (--task sabotage) only. [default: quick]",
)
@click.option(
    "--seeds",
    "num_seeds",
    type=click.IntRange(min=1),
    default=None,
    help="Seeds trained at once (vmapped). [default: 1]",
)
@click.option("--seed", type=int, default=None, help="Base seed. [default: 0]")
@click.option(
    "--teammates",
    default=None,
    help="br/ego only: comma-separated heuristic names of the task (e.g. "
    "independent_agent_0,onion_agent_0.1 or lexi,col) or policy/population .safetensors files.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Override a config field, e.g. --set total_timesteps=1e6 --set ppo.learning_rate=3e-4 "
    "(rotate: --set iterations=10 --set teammate_ppo.learning_rate=3e-4; repeatable).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Run folder (new or empty; with --resume, the run to continue).",
)
@click.option("--resume", is_flag=True, help="Continue the run in --out from its last checkpoint.")
@click.option(
    "--checkpoint-every",
    type=click.IntRange(min=1),
    default=None,
    help="Checkpoint every this many updates (default: every --checkpoint-seconds; rotate "
    "checkpoints after every iteration).",
)
@click.option(
    "--checkpoint-seconds",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="Checkpoint at least this often (wall seconds).",
)
@click.option(
    "--devices",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Split the seeds over this many of this machine's devices (GPUs; --seeds a multiple "
    "of it); see docs/training.md for when results are bit-identical to one device.",
)
@click.option(
    "--seed-group",
    type=click.IntRange(min=1),
    default=None,
    help="Run the seeds in groups of this size, one group after another on each device "
    "(default: all of a device's seeds at once). Runs with the same group size train the same "
    "parameters to the bit on one device or several: 4 seeds on --devices 2 equal 4 seeds "
    "on one device with --seed-group 2.",
)
@click.option(
    "--keep-every",
    type=click.IntRange(min=1),
    default=None,
    help="Also save the egos as policy files every this many iterations (ippo/br/ego: the "
    "learners every this many updates) into policies/iteration-NNNNNN/ (update-NNNNNN/), e.g. "
    "to score the ego against a development set as it trains (benchmarks/budget_study.py). "
    "The parameters trained do not change.",
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def train(
    algorithm: str,
    task: Task | None,
    preset: str | None,
    num_seeds: int | None,
    seed: int | None,
    teammates: str | None,
    overrides: tuple[str, ...],
    out: Path,
    resume: bool,
    checkpoint_every: int | None,
    checkpoint_seconds: float,
    devices: int,
    seed_group: int | None,
    keep_every: int | None,
    no_progress: bool,
    debug: bool,
) -> None:
    """Train ALGORITHM (see the choices above) on a task, with checkpoints, metrics and curves.

    \b
    aht-bench train ippo --task cramped_room --preset quick --seeds 3 --out runs/ippo-cr
    aht-bench train br --task cramped_room --teammates independent_agent_0 --out runs/br
    aht-bench train rotate --task sabotage --preset sabotage --seeds 3 --out runs/rot-sab
    aht-bench train ippo --out runs/ippo-cr --resume

    The folder gets run.json, metrics.jsonl (one line per update; rotate: per iteration),
    checkpoints/, curve.png (rotate: SP/XP returns, regret and the ego's return per iteration)
    and policies/final/*.safetensors (load them with aht_bench.policies.load_policy; rotate:
    per seed the ego and the generated population, load_population). See docs/training.md.
    """
    from aht_bench import runs
    from aht_bench.training.checkpoint import CheckpointError

    pairs = _override_pairs(overrides)
    given = {
        "task_id": None if task is None else task.id,
        "preset": preset,
        "num_seeds": num_seeds,
        "seed": seed,
        "teammates": None if teammates is None else [t for t in teammates.split(",") if t],
        "overrides": pairs or None,
        "seed_group": seed_group,
    }
    algo = runs.get(algorithm)
    if preset is not None and preset not in algo.presets:
        raise click.BadParameter(
            f"{algorithm} has no {preset!r} preset (it has {', '.join(algo.presets)})",
            param_hint="--preset",
        )
    spec = _train_spec(algorithm, out, resume, given, devices)
    try:
        runs.check_teammates(algo, spec)
        algo.config(spec)
    except (ValueError, KeyError) as e:
        raise click.UsageError(str(e).strip('"')) from None
    if devices > 1:
        _shard_seeds(devices, spec.num_seeds, spec.seed_group)
    try:
        outcome = runs.train(
            algo,
            spec,
            out,
            resume=resume,
            checkpoint_every_updates=checkpoint_every,
            checkpoint_every_s=checkpoint_seconds,
            keep_every=keep_every,
            progress=not no_progress,
        )
    except runs.TrainingInterrupted as e:
        click.echo(str(e), err=True)
        raise click.exceptions.Exit(e.exit_code) from None
    except KeyboardInterrupt:
        click.echo("aborted without saving; --resume continues from the last checkpoint", err=True)
        raise click.exceptions.Exit(EXIT_SIGINT) from None
    except runs.TrainingDiverged as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(EXIT_TRAINING_DIVERGED) from None
    except (runs.RunDirError, CheckpointError) as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None
    except ValueError as e:
        if debug:
            click.echo(traceback.format_exc().rstrip(), err=True)
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None
    except (click.exceptions.Exit, click.ClickException):
        raise
    except Exception as e:
        raise _internal_error(e, debug) from None
    click.echo(_trained(outcome, algo.loop.curve_label))


def _trained(outcome: Any, curve_label: str) -> str:
    """What `train` prints when a run is done."""
    returns = ", ".join(f"{r:.4g}" for r in outcome.final_return)
    unit = outcome.unit
    return (
        f"done: {outcome.updates} {unit}s, {outcome.env_steps:,} env steps per seed in "
        f"{outcome.train_seconds:.0f}s of training\n"
        f"mean {curve_label} over the last 10% of {unit}s, per seed: {returns}\n"
        f"wrote {outcome.out}/ (curve.png, metrics.jsonl, policies/final/: "
        f"{len(outcome.policies)} policy files)"
    )


DEFAULT_TOTAL_TIMEOUT = 3600.0
"""`evaluate`'s limit on one agent file's whole evaluation of one task, in seconds: an hour is
many times what the official protocol takes (64 episodes per member and seating)."""

EVALUATE_EXIT_CODES_HELP = """\b
Exit codes:
  0  ok
  1  internal error (a bug in aht-bench)
  2  usage error (bad option, unknown task or teammate set, agent file missing or not .py,
     a seed file given twice)
  3  the agent failed to load (incl. load timeout, TASKS without the task, bad JAX policy)
  4  the agent failed while playing (incl. step timeout, crash, out-of-range action)
  5  teammate-set integrity failure (manifest or weight file does not match its sha256)
130  stopped by Ctrl-C (nothing written)"""


def _count(n: int, noun: str) -> str:
    """ "1 member", "2 members": `n` and `noun`, plural unless `n` is 1."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class _Progress:
    """A tqdm bar on stderr (the one progress style of every command: train, heldout build and
    the experiments use tqdm too) that appears on the first update, when the total is known."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled
        self.label = label
        self._bar: Any = None
        self._done = 0

    def __call__(self, done: int, total: int, what: str) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=self.label,
                file=sys.stderr,
                dynamic_ncols=True,
                mininterval=0.1 if sys.stderr.isatty() else 30.0,  # a log file gets few lines
            )
        self._bar.set_postfix_str(what, refresh=False)
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        """End the bar; the next update starts a new one."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._done = 0


def _newest_set(task_id: str, option: str) -> str:
    """The newest published heldout version of `task_id` (the default when `option`, the
    option that names a set, is not given); none is a usage error that blames --task, the
    input given, and names the sets there are, `option` to pick one, or the data to install."""
    from aht_bench.evaluation import data
    from aht_bench.evaluation.sets import (
        available_sets,
        newest_version,
        published_versions,
        searched_text,
        tasks_with_sets,
    )

    newest = newest_version(task_id)
    if newest is not None:
        return newest
    others = [t for t in tasks_with_sets() if published_versions(t)]
    have = available_sets(task_id)
    if have:
        fix = f"its sets here are {', '.join(have)}: pass {option} {have[0]} (or a set folder)"
    elif others:
        fix = f"pass {option} with a set folder, or a task that has one: {', '.join(others)}"
    else:
        fix = (
            f"none is found for any task (looked in {searched_text()}); install the heldout "
            f"data ({data.INSTALL}), run from a checkout, or pass --heldout DIR"
        )
    raise click.BadParameter(f"{task_id} has no published heldout set; {fix}", param_hint="--task")


def _evaluation_tasks(task: str, teammates: str | None, agent: Path) -> list[Task]:
    """The tasks `--task` names, each resolved once: one, or for "all" every task with the set
    `teammates` (None: any published heldout version) that the agent's TASKS (if literal)
    supports."""
    from aht_bench import envs
    from aht_bench.evaluation.sets import (
        TeammateSetError,
        available_sets,
        published_versions,
        set_folder_task,
        tasks_with_sets,
    )

    if task != "all":
        try:
            return [envs.task(task)]
        except envs.UnknownTaskError as e:
            raise click.BadParameter(str(e), param_hint="--task") from None
    wanted = f"a teammate set {teammates!r}"
    if teammates is None:
        with_sets = [t for t in tasks_with_sets() if published_versions(t)]
        wanted = "a published heldout set"
    elif os.sep in teammates or Path(teammates).exists():  # a set folder: its own task
        try:
            return [envs.task(set_folder_task(teammates))]
        except envs.UnknownTaskError as e:
            raise click.BadParameter(f"{teammates}: {e}", param_hint="--teammates") from None
        except TeammateSetError as e:
            raise click.BadParameter(str(e), param_hint="--teammates") from None
    else:
        with_sets = [t for t in tasks_with_sets() if teammates in available_sets(t)]
    if not with_sets:
        raise click.BadParameter(
            f"no task has {wanted} (tasks with sets: {', '.join(tasks_with_sets()) or 'none'})",
            param_hint="--task",
        )
    from aht_bench.policies.agent_file import literal_tasks

    declared = literal_tasks(agent)
    if declared is None:
        return [envs.Task(t) for t in with_sets]
    names = {task_id for t in declared if (task_id := _task_id_or_none(t))}
    chosen = [envs.Task(t) for t in with_sets if t in names]
    if not chosen:
        raise click.BadParameter(
            f"{agent.name} supports only {', '.join(declared)} (its TASKS), and none of them "
            f"has {wanted} (tasks with one: {', '.join(with_sets)})",
            param_hint="--task",
        )
    skipped = [t for t in with_sets if t not in names]
    if skipped:
        click.echo(f"skipping {', '.join(skipped)}: not in the TASKS of {agent.name}")
    return chosen


def _task_id_or_none(name: str) -> str | None:
    """The id `name` (one of an agent file's TASKS) resolves to; None for an unknown name."""
    from aht_bench import envs

    try:
        return envs.task(name).id
    except envs.UnknownTaskError:
        return None


@main.command(epilog=EVALUATE_EXIT_CODES_HELP)
@click.argument("agent", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--task",
    "task",
    required=True,
    help="Task id or alias, or `all`: every task that has the teammate set (and that the "
    "agent's TASKS lists).",
)
@click.option(
    "--teammates",
    default=None,
    help="Teammate set: a version under heldout/<task>/ (v1, v2: published heldout sets; "
    "human-proxy-v1, -v2, -v3 on Overcooked; human-proxy-play-<label>: cloned from played "
    "episodes; dev: development sets) or a set folder. Default: the "
    "newest published version (vN) of each task.",
)
@click.option(
    "--episodes",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Episodes per teammate and seating (refused before any work when they would not fit "
    "in memory).",
)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help=f"Seed of the episodes (0 to {MAX_SEED}).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Result record (.json; the bar plot goes next to it as .png). With --task all, a "
    "folder for one <task_id>.json per task. [default: results/<agent>/<task_id>.json; "
    "with N seed files results/<first agent>/<task_id>-<N>seeds.json]",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace result records that exist at --out (without it, an existing record is an "
    "error and nothing is run or written).",
)
@click.option(
    "--isolate",
    is_flag=True,
    help="Play step by step through the agent's act(obs) in its worker even when it has a "
    "JAX policy (the runner of records made with --isolate before).",
)
@click.option(
    "--no-sandbox",
    is_flag=True,
    help="Run the agent in a separate process with the limits but without the bubblewrap "
    "sandbox (where bwrap cannot run; trusted code only).",
)
@click.option(
    "--in-process",
    is_flag=True,
    help="Run the agent's code in this process: trusted code only, no limits; the record is "
    "marked so and the leaderboard refuses it.",
)
@click.option(
    "--load-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds the agent file may take to load.",
)
@click.option(
    "--step-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    help="Seconds one act(obs) or reset() may take.",
)
@click.option(
    "--total-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TOTAL_TIMEOUT,
    show_default=True,
    help="Seconds one agent file may take on one task in all: loading, every seating and its "
    "JAX policy's compiled play (compiled code still running then ends the evaluation, exit "
    "code 4, nothing written). Not with --in-process.",
)
@_memory_limit(
    "GiB of memory the agent's sandbox may use in all: its processes, /tmp and /dev/shm."
)
@click.option(
    "--reps",
    type=click.IntRange(min=100),
    default=2000,
    show_default=True,
    help="Bootstrap resamples of the confidence intervals.",
)
@click.option(
    "--replays",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Save the first N episodes of every member and seating as replays (JSON) with a "
    "viewer page per member (HTML), in <result>-replays/ (of several seeds' files: the first "
    "file's episodes).",
)
@click.option(
    "--no-viewer",
    is_flag=True,
    help="With --replays: save the replays (JSON) only, no viewer pages.",
)
@click.option("--no-plot", is_flag=True, help="Do not draw the bar plot.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--agent-output", is_flag=True, help="Show what an isolated agent prints.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON list, per task {out, record, random_floor}, on stdout (the other lines "
    "go to stderr).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def evaluate(
    agent: tuple[Path, ...],
    task: str,
    teammates: str | None,
    episodes: int,
    seed: int,
    out: Path | None,
    force: bool,
    isolate: bool,
    no_sandbox: bool,
    in_process: bool,
    load_timeout: float,
    step_timeout: float,
    total_timeout: float,
    memory_limit: float,
    reps: int,
    replays: int,
    no_viewer: bool,
    no_plot: bool,
    no_progress: bool,
    agent_output: bool,
    as_json: bool,
    debug: bool,
) -> None:
    """Score the agent file AGENT against a teammate set: BRProx with confidence intervals.

    Every member of the set plays --episodes episodes with AGENT in every seating of the
    task. Each return is normalised by the member's bounds, (R - lower) / (upper - lower);
    the mean, IQM, median and worst case come with stratified bootstrap 95% CIs (rliable).
    Prints a table per member and the aggregates, and writes a result record (JSON) and a
    bar plot (PNG). The agent's code runs in a bubblewrap sandbox (no network, no access to
    your files or the heldout sets, nothing left running after it) with time and memory
    limits; a JAX policy is handed over compiled and runs jitted, any other agent step by
    step.

    Several AGENT files are the independently trained seeds of one agent (one task; not
    with --task all): each plays the same episodes, and the CIs are over the seeds (the
    paper's runs), each seed's score its mean over episodes and seatings.

    \b
    aht-bench evaluate agents/examples/random_agent.py --task forced_coord
    aht-bench evaluate my_agent.py --task all --out results/my_agent/
    aht-bench evaluate run/policies/final/seed{0,1,2}-ego.safetensors --task lbf
    """
    from aht_bench.evaluation.evaluate import probe_agent_files
    from aht_bench.evaluation.record import result_path, write_record

    paths, tasks, versions, several, isolation = _evaluate_options(
        agent, task, teammates, out, isolate, no_sandbox, in_process
    )
    if no_viewer and not replays:
        raise click.BadParameter("--no-viewer goes with --replays N", param_hint="--no-viewer")
    targets = [result_path(out, paths[0], t.id, several, len(paths)) for t in tasks]
    stdout, results = _json_mode(as_json), []
    limits = {
        "load_timeout": load_timeout,
        "step_timeout": step_timeout,
        "total_timeout": total_timeout,
        "echo_output": agent_output,
        "memory_limit": int(memory_limit * 1024**3),
    }
    with _evaluation_errors(_Progress(False, ""), debug):  # the cheap checks, before any work
        _check_sets_and_records(tasks, versions, targets, out, force)
        probe_agent_files(paths, tasks[0], isolation, limits)
        _check_memory(tasks, versions, episodes)  # builds the task's env: after the agent
    for one_task, target in zip(tasks, targets, strict=True):
        bar = _Progress(not no_progress, "playing")
        folder: Path | None = None
        with _evaluation_errors(bar, debug):
            from aht_bench.evaluation.evaluate import evaluate_agent_files
            from aht_bench.evaluation.replay import ReplaySink, save_replays
            from aht_bench.evaluation.sets import load_set

            sink = ReplaySink(min(replays, episodes)) if replays else None
            eval_set = load_set(one_task, versions[one_task])
            _announce(paths, one_task.id, eval_set, episodes, seed)
            record = evaluate_agent_files(
                paths,
                eval_set,
                num_episodes=episodes,
                seed=seed,
                isolate=isolate,
                isolation=isolation,
                limits=limits,
                reps=reps,
                progress=bar,
                on_loaded=_on_loaded(paths, isolation, bar),
                replays=sink,
            )
            bar.close()
            write_record(target, record)
            if not no_plot:
                from aht_bench.evaluation.plots import plot_result

                plot_result(record, target.with_suffix(".png"))
            if sink is not None:
                folder = save_replays(sink, record, target, viewer=not no_viewer)
        results.append(_print_result(record, target, folder, no_plot, no_viewer))
    if as_json:
        click.echo(json.dumps(results, indent=1), file=stdout)


def _print_result(
    record: dict[str, Any], target: Path, folder: Path | None, no_plot: bool, no_viewer: bool
) -> dict[str, Any]:
    """What `evaluate` prints for one task's record: the table with the random-agent floor
    under the aggregates, then what it wrote; returns the task's row of `--json`."""
    from aht_bench.evaluation import record as rec
    from aht_bench.evaluation.floor import floor_line, random_floor

    click.echo("\n".join(rec.result_lines(record, floor_line(record))))
    plot = "" if no_plot else f" and {target.with_suffix('.png')}"
    click.echo(
        f"wrote {target}{plot} (payload sha256 {record['payload_sha256'][:16]}..., "
        f"{record['meta']['wall_seconds']:.0f}s)"
    )
    if folder is not None:
        pages = "" if no_viewer else " and their viewer pages (open MEMBER.html)"
        click.echo(f"replays{pages}: {folder}/")
    ts = record["payload"]["teammate_set"]
    return {"out": str(target), "record": record,
            "random_floor": random_floor(ts["id"], ts["manifest_sha256"])}  # fmt: skip


def _check_sets_and_records(
    tasks: list[Task],
    versions: dict[Task, str],
    targets: list[Path],
    out: Path | None,
    force: bool,
) -> None:
    """`evaluate`'s checks that need neither the agent nor the task built: each task's set is
    there, verified and for the task (`find_set`), and every record can be written and would
    replace none."""
    from aht_bench.evaluation.sets import find_set

    for one_task in tasks:
        find_set(one_task.id, versions[one_task])
    _refuse_overwrite(targets, out, force)
    _refuse_unwritable(targets, out)


def _check_memory(tasks: list[Task], versions: dict[Task, str], episodes: int) -> None:
    """Every task's --episodes fit in memory (`_refuse_beyond_memory`)."""
    from aht_bench.evaluation.sets import set_shape

    for one_task in tasks:
        members, seatings = set_shape(one_task, versions[one_task])
        _refuse_beyond_memory(one_task, members, seatings, episodes)


def _refuse_beyond_memory(task: Task, members: int, seatings: int, episodes: int) -> None:
    """A usage error when `episodes` per member and seating would need more memory than this
    machine has available (`evaluate.memory_estimate`), naming the most that fit."""
    from aht_bench.evaluation.evaluate import available_memory, memory_estimate

    available = available_memory()
    need = memory_estimate(task.env, members, seatings, episodes)
    if available is None or need <= available:
        return
    fit = max(1, episodes * available // need)
    raise click.BadParameter(
        f"{episodes} episodes per member and seating of {task.id} ({_count(members, 'member')}, "
        f"{_count(seatings, 'seating')}) need about {need / 1024**3:.3g} GiB of memory "
        f"(aht_bench.evaluation.evaluate.memory_estimate), more than the "
        f"{available / 1024**3:.3g} GiB available here; pass --episodes {fit} or fewer (the "
        "official protocol plays 64; nothing was run)",
        param_hint="--episodes",
    )


def _refuse_unwritable(targets: list[Path], out: Path | None) -> None:
    """A usage error, before anything runs, when a result record could not be written: the
    evaluation's result would be lost after it ran."""
    from aht_bench.files import unwritable_reason

    for target in targets:
        why = unwritable_reason(target)
        if why is not None:
            given = "--out" if out is not None else "the default --out"
            raise click.BadParameter(
                f"cannot write {target}: {why}; pass --out with a path in a folder you can "
                "write (nothing was run)",
                param_hint=given,
            )


def _refuse_overwrite(targets: list[Path], out: Path | None, force: bool) -> None:
    """A usage error, before anything runs, when a result record to write exists and `force`
    is not given: a record is never replaced silently (issue 53)."""
    taken = [t for t in targets if t.exists()]
    if not taken or force:
        return
    from aht_bench.evaluation.record import ResultFileError, read_record

    described = []
    for path in taken:
        try:
            payload = read_record(path)["payload"]
            mean = payload["aggregates"]["mean"]["value"]
            what = f"mean {mean:.3f}, {_count(payload['protocol']['episodes'], 'episode')}"
        except (ResultFileError, KeyError, TypeError):
            what = "not a readable record"
        described.append(f"{path} ({what})")
    given = "--out" if out is not None else "the default --out"
    raise click.UsageError(
        f"{given} holds a result already: {'; '.join(described)}; pass --force to replace it, "
        "or --out with a new name (nothing was run or written)"
    )


def _json_mode(as_json: bool) -> Any:
    """The stream the JSON result goes to; with `as_json`, every other line of the command is
    sent to stderr (until the command ends), so stdout carries the JSON alone."""
    stdout = sys.stdout
    if as_json:
        click.get_current_context().with_resource(contextlib.redirect_stdout(sys.stderr))
    return stdout


def _evaluate_options(
    agent: tuple[Path, ...],
    task: str,
    teammates: str | None,
    out: Path | None,
    isolate: bool,
    no_sandbox: bool,
    in_process: bool,
) -> tuple[list[Path], list[Task], dict[Task, str], bool, str]:
    """`evaluate`'s options checked together: the agent files, the tasks, the teammate set
    of each, whether there are several (`--task all`) and how the agent runs; a
    `click.BadParameter` naming the option."""
    from aht_bench.evaluation.evaluate import SeedFilesError, check_seed_files
    from aht_bench.policies.agent_file import AgentLoadError, check_agent_path

    try:
        paths = [check_agent_path(a) for a in agent]
        check_seed_files(paths)
    except (AgentLoadError, SeedFilesError) as e:
        raise click.BadParameter(str(e), param_hint="AGENT") from None
    if task == "all" and len(paths) > 1:
        raise click.BadParameter(
            f"--task all takes one agent file, not {len(paths)}: the seeds of a trained agent "
            "are evaluated together on one task; pass --task T (once per task)",
            param_hint="--task",
        )
    tasks = _evaluation_tasks(task, teammates, paths[0])
    versions = {t: teammates or _newest_set(t.id, "--teammates") for t in tasks}
    several = task == "all"
    if out is not None and not several and out.suffix.lower() != ".json":
        raise click.BadParameter(f"{out} must end in .json", param_hint="--out")
    if out is not None and several and out.suffix:
        raise click.BadParameter(
            f"with --task all, --out is a folder (one <task_id>.json per task), not {out}",
            param_hint="--out",
        )
    if in_process and (no_sandbox or isolate):
        raise click.BadParameter(
            "--in-process runs the agent in this process; it cannot be combined with "
            "--no-sandbox or --isolate (both run it in a worker)",
            param_hint="--in-process",
        )
    isolation = "in-process" if in_process else "process" if no_sandbox else "sandbox"
    return paths, tasks, versions, several, isolation


def _announce(paths: list[Path], task_id: str, eval_set: Any, episodes: int, seed: int) -> None:
    """The line `evaluate` prints before it plays a task."""
    dev = " (DEVELOPMENT set, not a heldout set)" if eval_set.is_development else ""
    who = paths[0].name
    if len(paths) > 1:
        who = f"{len(paths)} seeds of one agent ({', '.join(p.name for p in paths)})"
    click.echo(
        f"\n{who} on {task_id}: {_count(eval_set.teammates.size, 'teammate')} of "
        f"{eval_set.set_id}{dev}, {_count(episodes, 'episode')} x "
        f"{_count(len(eval_set.seatings), 'seating')} each, seed {seed}"
    )


def _on_loaded(
    paths: list[Path], isolation: str, bar: _Progress
) -> Callable[[int, str, str], None]:
    """What `evaluate` says once an agent file has loaded: which runner plays it, and how
    its code is isolated."""

    def loaded(index: int, kind: str, runner: str) -> None:
        how = {
            "jax": "jitted JAX path",
            "python": "step by step in this process",
            "python-isolated": "step by step in a separate process",
        }[runner] + {
            "sandbox": " (agent code sandboxed)",
            "process": " (agent code in a separate process, NOT sandboxed)",
            "in-process": " (agent code in this process, NOT sandboxed)",
        }[isolation]
        jax_note = ", with a JAX policy" if runner == "jax" else ""
        seed_note = f"seed {index}: " if len(paths) > 1 else ""
        bar.close()  # a line between two seeds' progress, not inside the bar
        click.echo(f"{seed_note}loaded {paths[index].name} ({kind}{jax_note}); running {how}")

    return loaded


@contextlib.contextmanager
def _evaluation_errors(bar: _Progress, debug: bool) -> Iterator[None]:
    """Turn what can go wrong while one task is evaluated into `evaluate`'s messages and exit
    codes, the progress bar closed first; nothing is written for that task."""
    from aht_bench.evaluation.evaluate import SeedFilesError
    from aht_bench.evaluation.gym_runner import UnsupportedSeatingError
    from aht_bench.evaluation.sets import TeammateSetError, TeammateSetIntegrityError
    from aht_bench.policies.agent_file import AgentLoadError, AgentRuntimeError
    from aht_bench.policies.sandbox import SandboxUnavailableError

    try:
        yield
    except TeammateSetIntegrityError as e:
        bar.close()
        click.echo(f"error: teammate set integrity check failed: {e}", err=True)
        raise click.exceptions.Exit(EXIT_TEAMMATE_INTEGRITY) from None
    except (TeammateSetError, UnsupportedSeatingError) as e:
        bar.close()
        raise click.BadParameter(str(e), param_hint="--teammates") from None
    except SeedFilesError as e:
        bar.close()
        raise click.BadParameter(str(e), param_hint="AGENT") from None
    except AgentLoadError as e:
        bar.close()
        raise _agent_failed(e, EXIT_AGENT_LOAD, debug) from None
    except AgentRuntimeError as e:
        bar.close()
        raise _agent_failed(e, EXIT_AGENT_RUNTIME, debug) from None
    except SandboxUnavailableError as e:
        bar.close()
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None
    except KeyboardInterrupt:
        bar.close()
        click.echo("interrupted; no result written for this task", err=True)
        raise click.exceptions.Exit(EXIT_SIGINT) from None
    except (click.exceptions.Exit, click.ClickException):
        bar.close()
        raise
    except Exception as e:
        bar.close()
        raise _internal_error(e, debug) from None


@main.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also plot the aggregates (.png); the probability of improvement goes to "
    "<out>-poi.png. With results on several tasks or sets, one pair of plots per group "
    "(<out>-<task>.png). Without --out, only the tables.",
)
@click.option(
    "--reps",
    type=click.IntRange(min=100),
    default=2000,
    show_default=True,
    help="Bootstrap resamples of the probability-of-improvement CIs.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--no-plot", is_flag=True, help="No plots even with --out (only the tables).")
@click.option(
    "--json", "as_json", is_flag=True, help="The comparison as one JSON list, a group per set."
)
def compare(
    results: tuple[Path, ...], out: Path | None, reps: int, seed: int, no_plot: bool, as_json: bool
) -> None:
    """Compare result records of `aht-bench evaluate`: aggregates with CIs, and the
    probability of improvement P(X > Y) for each pair of results on the same teammate set.

    \b
    aht-bench compare results/a/lbf-v1.json results/b/lbf-v1.json
    aht-bench compare results/a/lbf-v1.json results/b/lbf-v1.json --out compare.png
    """
    from aht_bench.evaluation.compare import comparison, comparison_lines
    from aht_bench.evaluation.record import ResultFileError, read_record

    if out is not None and out.suffix.lower() != ".png":
        raise click.BadParameter(f"{out} must end in .png", param_hint="--out")
    try:
        records = [(p, read_record(p)) for p in results]
    except ResultFileError as e:
        raise click.BadParameter(str(e), param_hint="RESULTS") from None
    groups = comparison(records, None if no_plot else out, reps=reps, seed=seed)
    if as_json:
        click.echo(json.dumps(groups, indent=1))
        return
    for line in comparison_lines(groups):
        click.echo(line)


@main.group()
def devset() -> None:
    """Development teammate sets (heuristic members, bounds from short BR runs)."""


@devset.command("build")
@click.option("--task", type=TASK, required=True, help="Task id or alias.")
@click.option(
    "--br-timesteps",
    type=click.IntRange(min=1),
    default=None,
    help="Env steps of each best response (default: the task's recipe).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Set folder (default: heldout/<task_id>/dev, replaced when the build succeeds).",
)
def devset_build(task: Task, br_timesteps: int | None, out: Path | None) -> None:
    """Rebuild the development set of a task: train the best responses, evaluate every
    partner with every member, write the manifest with bounds and provenance."""
    from aht_bench.heldout import devset as ds

    try:
        ds.recipe(task)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--task") from None
    try:
        ds.build(task, out, br_timesteps=br_timesteps, log=click.echo)
    except KeyboardInterrupt:
        click.echo("interrupted; the previous set is untouched", err=True)
        raise click.exceptions.Exit(EXIT_SIGINT) from None


@devset.command("show")
@click.option("--task", type=TASK, required=True, help="Task id or alias.")
@click.option("--teammates", default="dev", show_default=True, help="Set version or folder.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Draw the partner x member return matrix as a heatmap (.png).",
)
def devset_show(task: Task, teammates: str, plot: Path | None) -> None:
    """Verify a teammate set and print its members, bounds and who set them."""
    eval_set = _verified_set(task, teammates, "--teammates")
    manifest = eval_set.manifest or {}
    click.echo(f"{eval_set.set_id} (manifest sha256 {eval_set.manifest_sha256}): verified")
    if manifest.get("status"):
        click.echo(manifest["status"])
    click.echo(f"seatings (the agent's seats): {[list(s) for s in eval_set.seatings]}")
    for member in manifest.get("members", []):
        b = member["bounds"]
        click.echo(
            f"  {member['name']:28s} lower {b['lower']:g}  upper {b['upper']:.4g} "
            f"(set by {b.get('upper_set_by', '?')}; best response "
            f"{b.get('best_response_return', float('nan')):.4g})"
        )
    if plot is not None:
        from aht_bench.evaluation.plots import plot_heatmap

        xp = manifest.get("partner_returns")
        if not xp:
            raise click.BadParameter(
                "this set's manifest has no partner_returns", param_hint="--plot"
            )
        plot_heatmap(
            xp["mean_return"], xp["rows"], xp["cols"],
            f"{eval_set.set_id}: mean base return of partner (row) with member (column)", plot,
        )  # fmt: skip
        click.echo(f"wrote {plot}")


def _verified_set(task: Task, name: str, param_hint: str) -> Any:
    """The teammate set `name` of `task`, verified; exit 5 on an integrity failure, a usage
    error naming `param_hint` when there is no such set."""
    from aht_bench.evaluation.sets import TeammateSetError, TeammateSetIntegrityError, load_set

    try:
        return load_set(task, name)
    except TeammateSetIntegrityError as e:
        click.echo(f"error: teammate set integrity check failed: {e}", err=True)
        raise click.exceptions.Exit(EXIT_TEAMMATE_INTEGRITY) from None
    except TeammateSetError as e:
        raise click.BadParameter(str(e), param_hint=param_hint) from None


@main.group()
def heldout() -> None:
    """Heldout teammate sets: build, list, show, verify and their cross-play matrices."""


@heldout.command("build")
@click.option("--task", type=TASK, required=True, help="Task id or alias.")
@click.option(
    "--version",
    default="v1",
    show_default=True,
    help="Set version: v1 (IPPO, BRDiv and heuristic members), v2 (the same on lbf-v1 and "
    "the v2 Overcooked tasks, with Bounds v2), human-proxy-v1 (on the v1 Overcooked tasks), "
    "human-proxy-v2 or human-proxy-v3 (on the v2 ones; v3 counts the example agents at the "
    "upper end of their CI), human-proxy-play-<label> (cloned from episodes people played, "
    "--episodes), or dev (a development set of a v2 Overcooked task: the v2 recipe with other "
    "seeds and heuristics, smaller; for tuning, never published).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Set folder (default: heldout/<task_id>/<version>; never an existing set).",
)
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Cache of trained candidates and best responses (default: "
    "~/.cache/aht-bench/heldout-build or $AHT_BENCH_BUILD_DIR); an interrupted build resumes "
    "from it.",
)
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="human-proxy-vN only: where the human data is cached.")  # fmt: skip
@click.option(
    "--episodes",
    "episodes_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="human-proxy-play-<label> only: the folder of episodes `aht-bench play --record DIR` "
    "saved (at least 4 on the task).",
)
@click.option(
    "--unit",
    default=None,
    help="Train only this unit into the work cache and stop (ippo:<source>:<team>, "
    "brdiv:<run>, br:<candidate>), to spread one build over several processes or machines; "
    "--list-units names them.",
)
@click.option("--list-units", is_flag=True, help="Print the recipe's IPPO and BRDiv units.")
def heldout_build(
    task: Task,
    version: str,
    out: Path | None,
    work: Path | None,
    data_dir: Path | None,
    episodes_dir: Path | None,
    unit: str | None,
    list_units: bool,
) -> None:
    """Build a heldout set from its recorded recipe, seeds and configs (CPU).

    Publishing into heldout/ writes the set's lock, heldout/<task_id>/<version>.sha256; a set is
    never overwritten: rebuild into --out DIR to compare with it."""
    from aht_bench import heldout as ho
    from aht_bench.heldout import build as hb

    try:
        if list_units or unit is not None:
            if version.startswith("human-proxy-"):
                raise click.UsageError("--unit and --list-units are for v1/v2 builds only")
            if list_units:
                for name in hb.units(task, version):
                    click.echo(name)
                return
            assert unit is not None
            hb.train_unit(task, version, unit, work=work, log=click.echo)
            return
        from aht_bench.heldout import played

        if (episodes_dir is not None) != played.is_played_version(version):
            raise click.UsageError(
                f"--episodes DIR goes with a --version {played.PREFIX}<label> (a proxy cloned "
                "from played episodes), and such a version needs it"
            )
        if episodes_dir is not None:
            folder = played.build(task, episodes_dir, out, version=version, log=click.echo)
        elif version.startswith("human-proxy-"):
            from aht_bench.heldout import human

            folder = human.build(task, out, version=version, data_dir=data_dir, log=click.echo)
        else:
            hb.recipe(task, version)
            folder = hb.build(task, version, out=out, work=work, log=click.echo)
    except (hb.HeldoutBuildError, ValueError) as e:  # incl. human.HumanDataError, bad tasks
        raise click.UsageError(str(e)) from None
    except KeyboardInterrupt:
        click.echo("interrupted; nothing was published (trained pieces stay cached)", err=True)
        raise click.exceptions.Exit(EXIT_SIGINT) from None
    if out is None:
        from aht_bench.evaluation.pins import pin_line, read_lock_file

        added = ho.lock_new(folder)
        click.echo(f"locked {added} files in {ho.lock_path(folder)}")
        if version == "dev":
            click.echo(f"{folder} is a development set (--teammates dev); it is never pinned")
            return
        click.echo(
            "to publish it, pin its lock: add this line to PINNED in "
            "aht_bench/evaluation/pins.py (until then it loads as a development set)\n"
            + pin_line(task.id, version, read_lock_file(ho.lock_path(folder)))
        )


@heldout.command("list")
@click.option("--json", "as_json", is_flag=True, help="The sets as one JSON list.")
def heldout_list(as_json: bool) -> None:
    """Every shipped set: task, version, members and the diversity of published sets."""
    from aht_bench import heldout as ho

    rows = ho.list_sets()
    if rows and as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        from aht_bench.evaluation.sets import HELDOUT_ENV, searched_text

        click.echo(
            f"error: no teammate sets found; looked in {searched_text()}. Fix: install "
            f"aht-bench with its data, run from a checkout, or pass --heldout DIR "
            f"(${HELDOUT_ENV})",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_USAGE)
    for row in rows:
        if "error" in row:
            click.echo(f"{row['task_id']}/{row['version']}: UNREADABLE: {row['error']}")
            continue
        label = "published" if row["published"] else "development"
        diversity = ""
        if row.get("diagonal_mean") is not None:
            diversity = (
                f"; BR cross-play diagonal {row['diagonal_mean']:.4g} vs off-diagonal "
                f"{row['off_diagonal_mean']:.4g}"
            )
        click.echo(
            f"{row['task_id']}/{row['version']} ({label}, "
            f"{_count(len(row['members']), 'member')}{diversity})"
        )
        click.echo(f"    {', '.join(str(m) for m in row['members'])}")


@heldout.command("where")
@click.option("--json", "as_json", is_flag=True, help="The lookup order and the data as JSON.")
def heldout_where(as_json: bool) -> None:
    """Where the heldout sets are looked up, in order, which folder is used, and which data
    distributions are installed (`pip install 'aht-bench[heldout]'` installs them all)."""
    from aht_bench.evaluation import data, sets
    from aht_bench.heldout import where

    root = sets.heldout_root()
    rows = where.search_rows()
    have = data.installed()
    missing = [d for d in data.all_distributions() if d not in have]
    if as_json:
        click.echo(json.dumps({"search": rows, "used": str(root) if root.is_dir() else None,
                               "installed": have, "not_installed": missing,
                               "install": data.INSTALL}, indent=1))  # fmt: skip
    else:
        for i, row in enumerate(rows, 1):
            state = "none" if row["folder"] is None else f"{row['folder']} (missing)"
            if row["sets"] is not None:
                state = f"{row['folder']} ({row['sets']} sets)"
            click.echo(f"{i}. {row['label']}: {state}{'  <- used' if row['used'] else ''}")
        if sets.checkout_heldout_root() is None:  # a checkout needs no data distribution
            click.echo(where.distributions_line(have, missing))
    if not root.is_dir():
        click.echo(
            f"no heldout folder found: install the data ({data.INSTALL}), run from a checkout "
            "or pass --heldout DIR",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_USAGE)
    if not as_json:
        click.echo(where.summary())


@heldout.command("show")
@click.option("--task", type=TASK, required=True, help="Task id or alias.")
@click.option(
    "--version",
    default=None,
    help="Set version or folder (default: the task's newest published set, as evaluate uses).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="The verified set's manifest, as JSON, with its sha256."
)
def heldout_show(task: Task, version: str | None, as_json: bool) -> None:
    """Verify one set and print its members, kinds, bounds and who set them."""
    eval_set = _verified_set(task, version or _newest_set(task.id, "--version"), "--version")
    manifest = eval_set.manifest or {}
    if as_json:
        out = {"set_id": eval_set.set_id, "manifest_sha256": eval_set.manifest_sha256,
               "published": not eval_set.is_development, "manifest": manifest}  # fmt: skip
        click.echo(json.dumps(out, indent=1))
        return
    click.echo(f"{eval_set.set_id} (manifest sha256 {eval_set.manifest_sha256}): verified")
    if manifest.get("status"):
        click.echo(manifest["status"])
    for member in manifest.get("members", []):
        b = member["bounds"]
        click.echo(
            f"  {member['name']:24s} {member.get('kind', '?'):16s} upper {b['upper']:.4g} "
            f"(set by {b.get('upper_set_by', '?')}; best response "
            f"{b.get('best_response_return', float('nan')):.4g})"
        )
    for p in manifest.get("pruned", []):
        click.echo(f"  pruned {p['name']}: {p['reason']}")


@heldout.command("verify")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def heldout_verify(no_progress: bool) -> None:
    """Check every published set's lock against the digest pinned in aht-bench, every file
    against its lock (heldout/<task_id>/<version>.sha256), and load each set; exit code 5 naming
    the files if anything differs or a pinned set is missing. In the installed data, the sets of
    a data distribution that is not installed are named and skipped."""
    from aht_bench import heldout as ho

    for key, line in ho.unpinned_sets():
        click.echo(
            f"note: {key} is locked but not pinned in aht_bench/evaluation/pins.py: not a "
            f"published set (it loads as a development set); to publish it, add\n{line}"
        )
    absent = ho.not_installed()
    if absent:
        from aht_bench.evaluation import data

        click.echo(
            f"note: not installed, so not verified: {', '.join(absent)} (install them with "
            f"pip install 'aht-bench[{data.EXTRA_BR}]')"
        )
    bar = _Progress(not no_progress, "loading sets")
    try:
        problems = ho.verify(progress=bar)
    finally:
        bar.close()
    if problems:
        for p in problems:
            click.echo(f"error: {p}", err=True)
        click.echo(
            "the published heldout sets do not match their lock: restore heldout/ from the "
            "repository (published sets never change)",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_TEAMMATE_INTEGRITY)
    from aht_bench.evaluation.sets import heldout_root

    sets_ = ho.published_sets()
    files = sum((heldout_root() / rel).is_file() for rel in ho.read_lock())
    click.echo(f"verified {_count(len(sets_), 'published set')} ({_count(files, 'file')})")


@heldout.command("xp")
@click.option("--task", type=TASK, required=True, help="Task id or alias.")
@click.option(
    "--version",
    default=None,
    help="Set version or folder (default: the task's newest published set, as evaluate uses).",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also draw the matrix as a heatmap (.png).",
)
def heldout_xp(task: Task, version: str | None, plot: Path | None) -> None:
    """The best-response cross-play matrix of a set (row: a member's best response, column: a
    member), with its diagonal and off-diagonal means."""
    eval_set = _verified_set(task, version or _newest_set(task.id, "--version"), "--version")
    xp = (eval_set.manifest or {}).get("cross_play")
    if not xp:
        raise click.UsageError(f"{eval_set.set_id} has no best-response cross-play matrix")
    cols = xp["cols"]
    width = max(len(c) for c in cols) + 2
    click.echo(" " * width + "".join(f"{c[:10]:>11s}" for c in cols))
    for name, row in zip(xp["rows"], xp["mean_return"], strict=True):
        click.echo(f"{name[: width - 1]:{width}s}" + "".join(f"{v:11.4g}" for v in row))
    click.echo(
        f"diagonal mean {xp['diagonal_mean']:.4g}, off-diagonal mean {xp['off_diagonal_mean']:.4g}"
    )
    if plot is not None:
        from aht_bench.evaluation.plots import plot_heatmap

        plot_heatmap(
            xp["mean_return"], xp["rows"], cols,
            f"{eval_set.set_id}: best response (row) with member (column)", plot,
        )  # fmt: skip
        click.echo(f"wrote {plot}")


def _register_experiments() -> None:
    from aht_bench.experiments.cli import experiment

    main.add_command(experiment)


_register_experiments()


def _register_leaderboard() -> None:
    from aht_bench.leaderboard.cli import leaderboard

    main.add_command(leaderboard)


_register_leaderboard()


def _register_play() -> None:
    from aht_bench.play.cli import play

    main.add_command(play)


_register_play()


def _register_sweep() -> None:
    from aht_bench.sweeps.cli import sweep

    main.add_command(sweep)


_register_sweep()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
