"""What every `aht-bench` command shares: the exit codes, how an error is reported, the progress
bar and the --json mode.

May import click, tqdm and the standard library.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from typing import Any

import click

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


def count(n: int, noun: str) -> str:
    """ "1 member", "2 members": `n` and `noun`, plural unless `n` is 1."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def failed(message: str, code: int) -> click.exceptions.Exit:
    """Print `message` on stderr and give the exit (with `code`) to raise."""
    click.echo(message, err=True)
    return click.exceptions.Exit(code)


def internal_error(error: Exception, debug: bool) -> click.exceptions.Exit:
    """Report an unexpected exception (a bug in aht-bench) and give the exit to raise."""
    if debug:
        click.echo(traceback.format_exc().rstrip(), err=True)
    return failed(
        f"internal error: {type(error).__name__}: {error} (a bug in aht-bench; rerun with "
        "--debug and report it)",
        EXIT_INTERNAL,
    )


def agent_failed(error: Exception, code: int, debug: bool) -> click.exceptions.Exit:
    """Report an agent that failed to load or to play (with what it printed, under `debug`) and
    give the exit (with `code`) to raise."""
    details = getattr(error, "details", None)
    if debug and details:
        click.echo(details.rstrip(), err=True)
    return failed(f"error: {error}", code)


def json_mode(as_json: bool) -> Any:
    """The stream the JSON result goes to; with `as_json`, every other line of the command is
    sent to stderr (until the command ends), so stdout carries the JSON alone."""
    stdout = sys.stdout
    if as_json:
        click.get_current_context().with_resource(contextlib.redirect_stdout(sys.stderr))
    return stdout


class Progress:
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
