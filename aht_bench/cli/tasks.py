"""`aht-bench tasks`: the registered tasks, their aliases and (--json) what a script needs to
know about each.

May import click, the standard library and (inside the command) aht_bench.envs,
aht_bench.adapters and aht_bench.evaluation.
"""

from __future__ import annotations

import json
from typing import Any

import click

from aht_bench.cli.group import main


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
        click.echo(json.dumps([task_row(t) for t in envs.registered_ids()], indent=1))
        return
    for task_id in envs.registered_ids():
        alias = f" (alias: {short[task_id]})" if task_id in short else ""
        click.echo(f"{task_id:32s} {envs.describe(task_id)}{alias}")


def task_row(task_id: str) -> dict[str, Any]:
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
