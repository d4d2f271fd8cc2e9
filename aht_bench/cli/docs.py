"""`aht-bench examples` and `aht-bench docs`: the example agents and the documentation that ship
with aht-bench.

May import click, the standard library and (inside the commands) aht_bench.shipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from aht_bench.cli.common import count
from aht_bench.cli.group import main


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
    click.echo(f"copied {count(len(written), 'file')} to {dest}/:")
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
