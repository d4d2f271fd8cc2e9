"""`aht-bench evaluate`'s options checked before any work starts: the agent files, the tasks
(`--task all`), each task's teammate set, the records to write and the memory the episodes need.
Each failure is a usage error naming the option, and nothing has run.

May import click, the standard library and (inside the functions) aht_bench.envs,
aht_bench.evaluation, aht_bench.files and aht_bench.policies.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from aht_bench.cli.common import count
from aht_bench.cli.teammates import newest_set

if TYPE_CHECKING:
    from aht_bench.envs import Task


class Plan(NamedTuple):
    """What `evaluate` will do, its options checked together (`plan_evaluation`)."""

    paths: list[Path]
    """The agent files (several: the seeds of one agent), resolved."""
    tasks: list[Task]
    """The tasks to play, each resolved once."""
    versions: dict[Task, str]
    """The teammate set of each task."""
    several: bool
    """Several tasks (`--task all`): --out is a folder."""
    isolation: str
    """Where the agent's code runs: "sandbox", "process" or "in-process"."""
    out: Path | None
    """--out as given."""
    targets: list[Path]
    """The record each task writes."""


def plan_evaluation(
    agent: tuple[Path, ...],
    task: str,
    teammates: str | None,
    out: Path | None,
    isolate: bool,
    no_sandbox: bool,
    in_process: bool,
) -> Plan:
    """`evaluate`'s options checked together: the agent files, the tasks, the teammate set
    of each, whether there are several (`--task all`), how the agent runs and where each
    record goes; a `click.BadParameter` naming the option."""
    from aht_bench.evaluation.evaluate import SeedFilesError, check_seed_files
    from aht_bench.evaluation.record import result_path
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
    versions = {t: teammates or newest_set(t.id, "--teammates") for t in tasks}
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
    targets = [result_path(out, paths[0], t.id, several, len(paths)) for t in tasks]
    return Plan(paths, tasks, versions, several, isolation, out, targets)


def check_before_running(plan: Plan, force: bool, limits: dict[str, Any], episodes: int) -> None:
    """The checks of `plan` that need more than the options, cheap next to an evaluation: each
    task's set is there, verified and for the task, every record can be written and would
    replace none (`_check_sets_and_records`); every agent file imports where it will run
    (`probe_agent_files`); and the episodes fit in memory (`_check_memory`, which builds each
    task's env: after the agent). Raises what they raise."""
    from aht_bench.evaluation.evaluate import probe_agent_files

    _check_sets_and_records(plan.tasks, plan.versions, plan.targets, plan.out, force)
    probe_agent_files(plan.paths, plan.tasks[0], plan.isolation, limits)
    _check_memory(plan.tasks, plan.versions, episodes)


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
    from aht_bench.policies.agent_file import literal_tasks

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
        f"{episodes} episodes per member and seating of {task.id} ({count(members, 'member')}, "
        f"{count(seatings, 'seating')}) need about {need / 1024**3:.3g} GiB of memory "
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
            what = f"mean {mean:.3f}, {count(payload['protocol']['episodes'], 'episode')}"
        except (ResultFileError, KeyError, TypeError):
            what = "not a readable record"
        described.append(f"{path} ({what})")
    given = "--out" if out is not None else "the default --out"
    raise click.UsageError(
        f"{given} holds a result already: {'; '.join(described)}; pass --force to replace it, "
        "or --out with a new name (nothing was run or written)"
    )
