"""A teammate set or member named on the command line, resolved once into what the library takes,
or the usage error (exit 2) or integrity failure (exit 5) the commands report.

May import click, the standard library, aht_bench.envs (for types) and (inside the
functions) aht_bench.evaluation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from aht_bench.cli.common import EXIT_TEAMMATE_INTEGRITY, failed

if TYPE_CHECKING:
    from aht_bench.envs import Task


def teammate(task: Task, name: str) -> tuple[Any, Any]:
    """(policy, params) of the teammate `name` for `task` (`resolve_teammate`: random, a
    heuristic or heldout:<version>:<member>); a bad name is a usage error, a set that fails
    its integrity check exit 5."""
    from aht_bench.evaluation.sets import TeammateSetIntegrityError
    from aht_bench.evaluation.teammates import resolve_teammate

    try:
        return resolve_teammate(task, name)
    except TeammateSetIntegrityError as e:
        message = f"error: teammate set integrity check failed: {e}"
        raise failed(message, EXIT_TEAMMATE_INTEGRITY) from None
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--teammate") from None


def verified_set(task: Task, name: str, param_hint: str) -> Any:
    """The teammate set `name` of `task`, verified; exit 5 on an integrity failure, a usage
    error naming `param_hint` when there is no such set."""
    from aht_bench.evaluation.sets import TeammateSetError, TeammateSetIntegrityError, load_set

    try:
        return load_set(task, name)
    except TeammateSetIntegrityError as e:
        message = f"error: teammate set integrity check failed: {e}"
        raise failed(message, EXIT_TEAMMATE_INTEGRITY) from None
    except TeammateSetError as e:
        raise click.BadParameter(str(e), param_hint=param_hint) from None


def newest_set(task_id: str, option: str) -> str:
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
