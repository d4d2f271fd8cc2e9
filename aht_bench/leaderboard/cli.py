"""`aht-bench leaderboard ...`: submit result records, render the pages, verify entries (thin:
parse, call one function of `aht_bench.leaderboard.board`, print).

    from aht_bench.leaderboard.cli import leaderboard
    main.add_command(leaderboard)          # in aht_bench/cli.py

Exit codes: 0 ok; 1 verification failed (a check, or the re-run, failed; nothing written), or an
internal error (the message says so); 2 usage error or bad input (bad option, a file that is not
a result record, an entry that exists without --replace, an unknown entry). Errors print lines
starting with `error:` to stderr, without a traceback (`--debug` shows it).

May import click, the standard library and (inside the commands) aht_bench.leaderboard,
aht_bench.evaluation.record and aht_bench.heldout (`verify` checks the published sets).
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

EXIT_CODES_HELP = """\b
Exit codes:
  0  ok
  1  verification failed (each problem is printed with its fix), or an internal error
  2  usage error or bad input (not a result record, entry exists, unknown entry)"""


_RERUN_EPISODES = click.option(
    "--episodes",
    type=click.IntRange(min=1),
    default=None,
    help="Episodes per teammate and seating of the verifier's re-run (the protocol: at least "
    "64) [default: 64].",
)
"""The re-run's sample size, the same for `submit` and `verify`."""

_REPLAYS = click.option(
    "--replays",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Episodes per teammate and seating of the re-run to keep as the entry's replays "
    "(leaderboard/replays/; the first seed's file of a multi-seed entry), linked from "
    "index.html by `render`; 0 keeps none.",
)
"""How many of the re-run's episodes become the entry's replays, for `submit` and `verify`."""

_RERUN_TIMEOUT = click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=1800.0,
    show_default=True,
    help="Seconds one re-run may take (an entry's agent that hangs fails its re-run then).",
)
"""The bound on one re-run, for `submit` and `verify`: what keeps CI from hanging on an entry."""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--board",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The leaderboard folder (as $AHT_BENCH_LEADERBOARD; default: leaderboard/ of the "
    "checkout aht-bench runs from; outside a checkout it must be given).",
)
def leaderboard(board: Path | None) -> None:
    """The leaderboard in leaderboard/: submit result records, render the table, verify entries."""
    import os

    from aht_bench.leaderboard import entries

    if board is not None:
        os.environ[entries.LEADERBOARD_ENV] = str(board.resolve())
    try:
        entries.leaderboard_root()
    except entries.NoBoardError as e:
        click.echo(f"error: {e}", err=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None


def _internal_error(error: Exception, debug: bool) -> click.exceptions.Exit:
    if debug:
        click.echo(traceback.format_exc().rstrip(), err=True)
    click.echo(
        f"internal error: {type(error).__name__}: {error} (a bug in aht-bench; rerun with "
        "--debug and report it)",
        err=True,
    )
    return click.exceptions.Exit(EXIT_FAILED)


def _summary(entry: dict[str, Any]) -> str:
    from aht_bench.evaluation.record import agent_files, is_multi_seed

    payload = entry["payload"]
    mean = payload["aggregates"]["mean"]
    lo, hi = mean["ci"]
    seeds = f" over {len(agent_files(payload))} seeds" if is_multi_seed(payload) else ""
    return (
        f"{entry['leaderboard']['name']}: {payload['task_id']} on heldout "
        f"{payload['teammate_set']['version']}, mean BRProx {mean['value']:.3f} "
        f"[{lo:.3f}, {hi:.3f}]{seeds}"
    )


@leaderboard.command(epilog=EXIT_CODES_HELP)
@click.argument("result", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--name", required=True, help='Entry name, one line, e.g. "random (example)".')
@click.option(
    "--description",
    required=True,
    help="One line: what the agent is, how it was trained, with what budget.",
)
@click.option(
    "--agent",
    type=click.Path(dir_okay=False, path_type=Path),
    multiple=True,
    help="The agent file the record was made with, when its recorded path does not find it "
    "(default: the record's meta.agent_path, matched against the repository). A multi-seed "
    "record: once per seed, in seed order (default: meta.agent_paths).",
)
@click.option("--replace", is_flag=True, help="Overwrite an entry of the same name, task and set.")
@click.option(
    "--no-rerun",
    is_flag=True,
    help="Write the entry without re-running its agent (it stays unranked until `leaderboard "
    "verify` re-runs it).",
)
@_RERUN_EPISODES
@_REPLAYS
@_RERUN_TIMEOUT
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
def submit(
    result: Path,
    name: str,
    description: str,
    agent: tuple[Path, ...],
    replace: bool,
    no_rerun: bool,
    episodes: int | None,
    replays: int,
    timeout: float,
    debug: bool,
) -> None:
    """Check the result record RESULT (written by `aht-bench evaluate --out`) and add it to
    leaderboard/entries/ as <name>--<task_id>--<version>.json.

    Checked: the record's schema; the heldout set (a shipped version, its manifest sha256,
    members, bounds and seatings); every score, recomputed from the per-episode returns; the
    agent file's sha256 when the file is in the repository (every seed's file, for a record
    of several seeds); the payload sha256. Then the agent is re-run in the sandbox as
    `leaderboard verify` does, and the entry is ranked (its line in leaderboard/verified.json,
    with the re-run's first --replays episodes as its replays) when the re-run reproduces the
    record; an agent file outside the repository cannot be
    re-run and its entry stays unranked. Nothing is written when a check or the re-run fails.
    Then run `aht-bench leaderboard render`.

    \b
    aht-bench leaderboard submit results/my_agent/lbf-v1.json --name "my agent" \\
        --description "PPO ego agent, 3M steps, seed 0"
    """
    from aht_bench.leaderboard import board

    episodes = _rerun_episodes(episodes)
    name, description = _checked_texts(name, description)
    target, previous = _target_of(result, name)
    path, entry = _write_submission(result, name, description, agent, replace, debug)
    if no_rerun:
        click.echo(f"wrote {path} ({_summary(entry)})")
        click.echo(
            f"next: `{_command('verify ' + path.stem)}` re-runs the agent in the sandbox "
            f"(the entry is ranked only once a re-run reproduces it), then `{_command('render')}` "
            f"updates {_pages()}"
        )
        return
    click.echo(
        f"re-running the agent in the sandbox ({episodes} episodes per teammate and seating)..."
    )
    try:
        v = board.verify(path, rerun=True, episodes=episodes, replays=replays, timeout=timeout)
    except BaseException:
        _undo(path if target is None else target, previous)
        _forget(path)
        raise
    _report_submitted_rerun(v, path, previous if target == path else None)
    ranked = "ranked" if v.rerun is not None else "unranked (not re-run)"
    click.echo(f"wrote {path} ({_summary(entry)}); {ranked}")
    click.echo(f"next: `{_command('render')}` updates {_pages()}")


def _checked_texts(name: str, description: str) -> tuple[str, str]:
    """--name and --description as an entry keeps them, or the usage error naming the option."""
    from aht_bench.leaderboard import entries

    try:
        name = entries.check_name(name)
    except entries.EntryError as e:
        raise click.BadParameter(str(e), param_hint="--name") from None
    try:
        description = entries.check_description(description)
    except entries.EntryError as e:
        raise click.BadParameter(str(e), param_hint="--description") from None
    return name, description


def _write_submission(
    result: Path,
    name: str,
    description: str,
    agent: tuple[Path, ...],
    replace: bool,
    debug: bool,
) -> tuple[Path, dict[str, Any]]:
    """`board.submit` (the checks, then the entry file), its report printed; a rejected record
    exits with EXIT_FAILED, a bad argument with a usage error."""
    from aht_bench.leaderboard import board, entries

    try:
        path, entry, report = board.submit(
            result, name, description, agent=list(agent) or None, replace=replace
        )
    except board.Rejected as e:
        for problem in e.report.problems:
            click.echo(f"error: {problem.message}", err=True)
        click.echo(
            f"submission rejected: {len(e.report.problems)} problem(s); nothing was written",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_FAILED) from None
    except entries.EntryExistsError as e:
        raise click.UsageError(str(e)) from None
    except entries.EntryError as e:
        raise click.BadParameter(str(e), param_hint="RESULT") from None
    except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt):
        raise
    except Exception as e:
        raise _internal_error(e, debug) from None
    for line in report.passed:
        click.echo(f"ok: {line}")
    for note in report.notes:
        click.echo(f"note: {note}")
    return path, entry


def _report_submitted_rerun(v: Any, path: Path, previous: bytes | None) -> None:
    """Print the submitted entry's re-run; when it did not reproduce the record, put the entry
    file back as it was (`previous`), drop what the re-run wrote and exit with EXIT_FAILED."""
    if v.rerun_skipped:
        click.echo(f"note: {v.rerun_skipped}")
    _print_rerun(v)
    if not v.ok:
        _undo(path, previous)
        _forget(path)
        for problem in v.report.problems:
            click.echo(f"error: {problem.message}", err=True)
        click.echo("submission rejected: the re-run did not reproduce the record; nothing was "
                   "written", err=True)  # fmt: skip
        raise click.exceptions.Exit(EXIT_FAILED)


def _command(sub: str) -> str:
    """`aht-bench leaderboard SUB` as the user runs it next: with the `--board DIR` this run
    was given (a board other than the checkout's leaderboard/)."""
    import os
    import shlex

    from aht_bench.leaderboard import entries

    board = os.environ.get(entries.LEADERBOARD_ENV)
    own = entries.checkout_leaderboard()
    if board and (own is None or Path(board).resolve() != own.resolve()):
        return f"aht-bench leaderboard --board {shlex.quote(board)} {sub}"
    return f"aht-bench leaderboard {sub}"


def _pages() -> str:
    """The pages `render` writes, in the board this run uses."""
    from aht_bench.leaderboard import entries

    root = entries.leaderboard_root()
    return f"{root / 'README.md'} and index.html"


def _target_of(result: Path, name: str) -> tuple[Path | None, bytes | None]:
    """The entry file `submit` would write for the record `result` and its current bytes (None
    where it cannot tell or there is none): what a failed re-run restores."""
    from aht_bench.leaderboard import entries

    try:
        payload = entries.read_json(result)["payload"]
        slug = entries.entry_slug(
            entries.check_name(name), payload["task_id"], payload["teammate_set"]["version"]
        )
    except (entries.EntryError, KeyError, TypeError):
        return None, None
    target = entries.entries_folder() / f"{slug}.json"
    return target, (target.read_bytes() if target.is_file() else None)


def _forget(path: Path) -> None:
    """Drop what a rejected submission's re-run wrote: its ledger line, stored re-run and
    replays (an entry replaced by a rejected one loses its ranking with its file)."""
    from aht_bench.leaderboard import entries, ledger
    from aht_bench.leaderboard import replays as replay_files

    if path.parent == entries.entries_folder():
        ledger.forget(None, path.stem)
        replay_files.remove(entries.leaderboard_root(), path.stem)


def _undo(path: Path, previous: bytes | None) -> None:
    """Put the entry file back as it was before `submit`: its old bytes, or no file."""
    if previous is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(previous)


@leaderboard.command(epilog=EXIT_CODES_HELP)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 if README.md, index.html or a replay page is not what render "
    "would write.",
)
def render(check: bool) -> None:
    """Regenerate the table in leaderboard/README.md (between its generated-content markers;
    the text around them is kept) and leaderboard/index.html from leaderboard/entries/, and
    the replay page (leaderboard/replays/SLUG.html) of every ranked entry with replays that
    has none or a stale one (each takes seconds: its episodes are replayed and drawn)."""
    from aht_bench.leaderboard import board, entries

    def building(path: Path) -> None:
        click.echo(f"drawing {path} ...")

    try:
        changed = board.render_files(check=check, on_page=None if check else building)
    except entries.EntryError as e:
        raise click.UsageError(str(e)) from None
    n = len(entries.entry_paths())
    if check:
        if changed:
            for path in changed:
                click.echo(f"error: {path} is out of date with the entries", err=True)
            click.echo("run `aht-bench leaderboard render` and commit the result", err=True)
            raise click.exceptions.Exit(EXIT_FAILED)
        click.echo(f"up to date ({n} entries)")
        return
    done = ", ".join(str(p) for p in changed) if changed else "nothing changed"
    click.echo(f"rendered {n} entries: {done}")


@leaderboard.command(epilog=EXIT_CODES_HELP)
@click.argument("entry", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--all", "all_entries", is_flag=True, help="Verify every entry in leaderboard/entries/."
)
@click.option(
    "--since",
    "since",
    default=None,
    metavar="REV",
    help="Verify (with a re-run) every entry added or changed since git revision REV, every "
    "entry whose verified.json line was added or changed since, and every entry whose agent "
    "bundle changed since its re-run: what a merge must re-run.",
)
@click.option("--no-rerun", is_flag=True, help="Checks only: schema, scores and hashes.")
@_RERUN_EPISODES
@_REPLAYS
@click.option(
    "--salt",
    default=None,
    metavar="TEXT",
    help="Salt of the re-run's seed (sha256 of the payload hash and the salt) [default: the "
    "UTC time now]; the salt of a ledger line reproduces its re-run.",
)
@click.option(
    "--reproduce",
    is_flag=True,
    help="For an entry with a current line in verified.json: play its stored re-run again with "
    "the line's salt and compare (returns identical; on another host at most 1% may differ, "
    "means agreeing) and check the claim again; write nothing (what CI runs). Entries without "
    "such a line get the checks only (they are unranked).",
)
@_RERUN_TIMEOUT
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
def verify(
    entry: tuple[Path, ...],
    all_entries: bool,
    since: str | None,
    no_rerun: bool,
    episodes: int | None,
    replays: int,
    salt: str | None,
    reproduce: bool,
    timeout: float,
    debug: bool,
) -> None:
    """Check each ENTRY (an entry file, or its name in leaderboard/entries/) as `submit` does,
    then measure it: re-run its agent in the sandbox with the evaluator on --episodes episodes
    per teammate and seating of a seed derived from the payload hash and a salt (the time now),
    and check the record's claim against what the agent does (the exported JAX path: every
    return identical on the record's own seed; a Python agent file: each file's mean within a
    99% two-sample t-test of the re-run's). The entry gets its line in
    leaderboard/verified.json and the re-run's record in leaderboard/reruns/: the pages show
    the re-run's scores, ranked when the claim was reproduced. An entry whose agent file is
    not in the repository gets the checks only. The line comes with the re-run's first
    --replays episodes of every teammate and seating as the entry's replays
    (leaderboard/replays/), which `render` links from index.html. With --reproduce, a current
    line's re-run is played again and compared instead (CI). With --all, entries deleted
    after their re-run and heldout sets failing their pins are reported too.

    \b
    aht-bench leaderboard verify random-example--lbf-v1--v1
    aht-bench leaderboard verify --all --no-rerun
    """
    from aht_bench.leaderboard import board

    episodes = _rerun_episodes(episodes)
    paths = _entries_to_verify(entry, all_entries, since)
    if paths is None:
        return
    verify_one = functools.partial(
        board.verify,
        rerun=not no_rerun,
        episodes=episodes,
        salt=salt,
        again=reproduce,
        timeout=timeout,
        on_checked=_on_checked(episodes, reproduce),
        replays=replays,
    )
    failed = sum(not _verified(path, verify_one, debug) for path in paths)
    problems = _board_problems() if all_entries else []
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
    if failed or problems:
        what = f"verification failed for {failed} of {len(paths)} entries"
        click.echo(
            what + (f"; {len(problems)} problem(s) of the board" if problems else ""), err=True
        )
        raise click.exceptions.Exit(EXIT_FAILED)


def _verified(path: Path, verify_one: Callable[[Path], Any], debug: bool) -> bool:
    """`verify_one(path)` (`board.verify` with the command's options), its outcome printed:
    whether the entry passed."""
    from aht_bench.leaderboard import entries

    try:
        v = verify_one(path)
    except entries.EntryError as e:
        click.echo(f"error: {e}", err=True)
        return False
    except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt):
        raise
    except Exception as e:
        raise _internal_error(e, debug) from None
    _print_rerun(v)
    if v.ok:
        click.echo(f"  verified: {_summary(v.entry)} (the record's claim)")
    else:
        click.echo(f"  FAILED: {path}", err=True)
    return v.ok


def _rerun_episodes(episodes: int | None) -> int:
    """--episodes, checked against the protocol's least sample (`rerun.MIN_EPISODES`)."""
    from aht_bench.leaderboard.rerun import MIN_EPISODES

    if episodes is None:
        return MIN_EPISODES
    if episodes < MIN_EPISODES:
        raise click.BadParameter(
            f"{episodes} is fewer than the protocol's {MIN_EPISODES} episodes per teammate and "
            f"seating; a ranked number is measured on at least {MIN_EPISODES}",
            param_hint="--episodes",
        )
    return episodes


def _entries_to_verify(
    entry: tuple[Path, ...], all_entries: bool, since: str | None
) -> list[Path] | None:
    """The entry files `verify` checks (None: --since found none, nothing to do)."""
    from aht_bench.leaderboard import entries

    if sum(map(bool, (all_entries, entry, since))) > 1:
        raise click.UsageError("pass ENTRY arguments, --all or --since, not two of them")
    if since is not None:
        try:
            slugs = _changed_since(since)
        except entries.EntryError as e:
            raise click.BadParameter(str(e), param_hint="--since") from None
        paths = [entries.entries_folder() / f"{slug}.json" for slug in slugs]
        paths = [p for p in paths if p.is_file()]
        click.echo(f"{len(paths)} entries added or changed since {since}")
        return paths or None
    if all_entries:
        paths = entries.entry_paths()
        if not paths:
            click.echo(f"no entries in {entries.entries_folder()}")
        return paths
    if entry:
        try:
            return [entries.find_entry(e) for e in entry]
        except entries.EntryError as e:
            raise click.BadParameter(str(e), param_hint="ENTRY") from None
    raise click.UsageError("name an ENTRY to verify, or pass --all")


def _on_checked(episodes: int, reproduce: bool = False) -> Callable[[Any], None]:
    """What `verify` prints once an entry's checks are done, before its re-run."""
    from aht_bench.leaderboard import entries

    def checked(v: Any) -> None:
        click.echo(f"{v.path}:")
        for line in v.report.passed:
            click.echo(f"  ok: {line}")
        for note in v.report.notes:
            click.echo(f"  note: {note}")
        for problem in v.report.problems:
            click.echo(f"  error: {problem.message}", err=True)
        if v.rerun_skipped:
            click.echo(f"  {v.rerun_skipped}")
            return
        paths = entries.entry_agent_paths(v.entry)
        what = paths[0] if len(paths) == 1 else f"{len(paths)} seeds ({', '.join(map(str, paths))})"
        if reproduce:
            click.echo(f"  playing the stored re-run of {what} again with its salt...")
            return
        click.echo(
            f"  re-running {what} in a child process "
            f"(`aht-bench evaluate`, {episodes} episodes per teammate and seating)..."
        )

    return checked


def _changed_since(rev: str) -> list[str]:
    """Slugs of entries whose file or verified.json line differs from git revision `rev`."""
    import json
    import subprocess

    from aht_bench.leaderboard import entries, ledger

    root = entries.leaderboard_root()
    try:
        top = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--show-toplevel"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        rel = root.resolve().relative_to(Path(top).resolve()).as_posix()
        names = subprocess.run(
            ["git", "-C", top, "diff", "--name-only", rev, "--", f"{rel}/{entries.ENTRIES}"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        old = subprocess.run(
            ["git", "-C", top, "show", f"{rev}:{rel}/{ledger.FILE}"], capture_output=True, text=True
        )  # fmt: skip
        untracked = subprocess.run(
            ["git", "-C", top, "ls-files", "--others", "--exclude-standard", "--",
             f"{rel}/{entries.ENTRIES}"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        why = getattr(e, "stderr", None) or str(e)
        raise entries.EntryError(
            f"cannot compare with git revision {rev!r}: {why.strip()}"
        ) from None
    before = json.loads(old.stdout).get("entries", {}) if old.returncode == 0 else {}
    now = ledger.read(root)
    changed = {Path(n).stem for n in names + untracked if n.endswith(".json")}
    changed |= {slug for slug, line in now.items() if before.get(slug) != line}
    changed |= _bundles_changed(root, now)
    return sorted(changed)


def _bundles_changed(root: Path, lines: dict[str, dict]) -> set[str]:
    """Slugs whose agent bundle (a weight or helper file beside the agent) is not the one the
    verifier's re-run ran, by their ledger lines: changed without the entry changing."""
    from aht_bench.leaderboard import entries, ledger

    out = set()
    for path in entries.entry_paths(root):
        line = lines.get(path.stem)
        if line is None or "bundle_sha256" not in line:
            continue
        if line["bundle_sha256"] != ledger.bundles_now(entries.read_json(path)):
            out.add(path.stem)
    return out


def _board_problems() -> list[str]:
    """What no single entry shows: entries deleted after their re-run (a line of
    verified.json without its entry) and published heldout sets that fail their pins or locks."""
    from aht_bench import heldout
    from aht_bench.leaderboard import entries, ledger

    out = [
        f"entry {slug} was deleted (leaderboard/{ledger.FILE} records its re-run); restore "
        f"leaderboard/entries/{slug}.json, or remove its line to withdraw it"
        for slug in ledger.deleted(None, {p.stem for p in entries.entry_paths()})
    ]
    out += [
        f"heldout: {p} (`aht-bench heldout verify`)" for p in heldout.verify(load_members=False)
    ]
    return out


def _show(est: dict[str, Any]) -> str:
    return f"{est['value']:.3f} [{est['ci'][0]:.3f}, {est['ci'][1]:.3f}]"


def _print_rerun(v: Any) -> None:
    """What a verification measured: the re-run's numbers and the claim's verdict, or the
    reproduction of a stored re-run."""
    if v.rerun_error is not None:
        click.echo(f"  error: {v.rerun_error}", err=True)
        return
    if v.reproduction is not None:
        r = v.reproduction
        say = "ok" if r.reproduced else "error"
        click.echo(
            f"  {say}: stored re-run played again ({r.wall_seconds:.0f}s): {r.detail}",
            err=not r.reproduced,
        )
        _print_claim(r.claim)
        return
    r = v.rerun
    if r is None:
        return
    kept = f"; {len(r.replays)} episodes kept as replays" if r.replays else ""
    click.echo(
        f"  re-run: {r.episodes} episodes per teammate and seating, salt {r.salt}, seed "
        f"{r.seed}, {r.wall_seconds:.0f}s{kept}"
    )
    scores = ", ".join(f"{k} {_show(r.scores[k])}" for k in ("mean", "iqm", "worst_case"))
    click.echo(f"  measured (the ranked numbers): {scores}")
    _print_claim(r.claim)


def _print_claim(claim: Any) -> None:
    if claim.reproduced:
        click.echo(f"  ok: the record's claim is reproduced ({claim.rule}): {claim.detail}")
    else:
        click.echo(
            f"  error: the record's claim is not reproduced ({claim.rule}): {claim.detail}; "
            "evaluate the agent again and submit that record with --replace (the entry is "
            "listed unranked with the re-run's numbers meanwhile)",
            err=True,
        )
