"""The `aht-bench` group itself: --version (--json), --heldout and -h; every command module of
`aht_bench.cli` adds its commands to `main`.

May import click, the standard library and (inside the callbacks) aht_bench.evaluation and
aht_bench.heldout.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from aht_bench import __version__


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from aht_bench.heldout import where

    if ctx.meta.get("version_json"):
        click.echo(json.dumps(where.as_json(), indent=1))
        ctx.exit()
    click.echo(f"aht-bench, version {__version__}")
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
