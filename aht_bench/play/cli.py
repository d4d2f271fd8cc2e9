"""The `aht-bench play` command (see `aht_bench.play`).

May import click, aiohttp, the standard library and aht_bench.play.
"""

from __future__ import annotations

import webbrowser
from pathlib import Path

import click


@click.command()
@click.option("--task", required=True, help="Task id or alias (LBF or an Overcooked layout).")
@click.option(
    "--teammate",
    required=True,
    help="heldout:<version>:<member> (e.g. heldout:v2:ippo_mlp_0), a heuristic's name, or random.",
)
@click.option("--seat", type=click.IntRange(0, 1), default=0, show_default=True, help="Your seat.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to serve on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--tick-hz",
    type=click.FloatRange(min=0.5, max=200),
    default=6.0,
    show_default=True,
    help="Env steps per second.",
)
@click.option(
    "--record",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Save every finished episode here as a replay (opt-in; docs/play.md).",
)
@click.option("--max-players", type=click.IntRange(min=1), default=32, show_default=True)
@click.option("--no-browser", is_flag=True, help="Do not open the page in a browser.")
def play(
    task: str,
    teammate: str,
    seat: int,
    host: str,
    port: int,
    tick_hz: float,
    record: Path | None,
    max_players: int,
    no_browser: bool,
) -> None:
    """Play a task in the browser with a teammate: a local web server runs the episode (the
    JAX env and the teammate's policy, one step per tick with your last key) and shows it;
    the episode ends with your return and, with a heldout member, its BRProx. Other tasks and
    teammates: the page's ?task=&teammate=&seat= query.

    \b
    aht-bench play --task cramped_room --teammate heldout:v2:ippo_mlp_0
    """
    try:
        from aiohttp import web

        from aht_bench.play.server import PlayConfig, PlayError, make_app
    except ImportError:
        raise click.UsageError(
            "aht-bench play needs aiohttp: pip install 'aht-bench[play]'"
        ) from None

    config = PlayConfig(task, teammate, seat, tick_hz, record, max_players)
    try:
        app = make_app(config)
    except PlayError as e:
        raise click.BadParameter(str(e)) from None
    url = f"http://{host}:{port}/"
    saving = f"; saving episodes to {record}" if record else ""
    click.echo(f"serving {url} (Ctrl-C to stop){saving}")
    if not no_browser:
        webbrowser.open(url)
    web.run_app(app, host=host, port=port, print=None)


__all__ = ["play"]
