"""The leaderboard operations behind `aht-bench leaderboard`: submit, verify and render.

    path, entry, report = submit("result.json", "my agent", "PPO ego, 3M steps")
    verification = verify(path)                    # checks, then a re-run when possible
    changed = render_files()                       # README.md, index.html and overview.svg

Errors: `EntryError` for input that is not a result record, a bad name or an entry that exists
(usage errors); `Rejected` (with its `Report`) for a record that fails a check.

May import the standard library, aht_bench.files, aht_bench.envs (its task registry),
aht_bench.evaluation (record, sets) and aht_bench.leaderboard.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aht_bench.evaluation.record import RUNS_SEEDS, agent_files
from aht_bench.leaderboard import ledger, render
from aht_bench.leaderboard import replays as replay_files
from aht_bench.leaderboard import rerun as reruns
from aht_bench.leaderboard.checks import Problem, Report, check_entry
from aht_bench.leaderboard.entries import (
    EntryError,
    EntryExistsError,
    check_description,
    check_name,
    entries_folder,
    entry_agent_paths,
    entry_paths,
    entry_slug,
    git_ignored,
    leaderboard_root,
    locate_agent,
    make_entry,
    read_json,
    repo_relative,
    repo_root,
    write_entry,
)
from aht_bench.leaderboard.rerun import (
    DEFAULT_TIMEOUT,
    Reproduction,
    RerunError,
    RerunResult,
    reproduce,
    rerun_entry,
)
from aht_bench.leaderboard.schema import schema_errors

README = "README.md"
HTML = "index.html"


class Rejected(Exception):
    """A record or entry that fails a check; `report.problems` says which and how to fix each."""

    def __init__(self, report: Report) -> None:
        super().__init__("; ".join(p.message for p in report.problems))
        self.report = report


def submit(
    result: str | os.PathLike[str],
    name: str,
    description: str,
    *,
    agent: Path | Sequence[Path] | None = None,
    replace: bool = False,
    root: Path | None = None,
    repo: Path | None = None,
) -> tuple[Path, dict[str, Any], Report]:
    """Check the result record `result` and write it as the entry `name` in
    leaderboard/entries/ (atomically; nothing is written when a check fails).

    `agent` is the agent file the record was made with, when its recorded path
    (`meta.agent_path`) does not find it in the repository; it must match the record's sha256.
    For a multi-seed record, the files of every seed in seed order (recorded paths:
    `meta.agent_paths`).
    """
    repo = repo or repo_root()
    record = read_json(result)
    name = check_name(name)
    description = check_description(description)
    recorded = _recorded_files(record)
    seeded = _is_seeded(record)
    extra: list[Problem] = []
    agent_paths: list[str | None]
    if agent is not None:
        given = [agent] if isinstance(agent, Path) else list(agent)
        if seeded and len(given) != len(recorded):
            raise EntryError(
                f"--agent: the record holds {len(recorded)} seeds' agent files; pass --agent "
                f"once per seed, in the record's seed order (got {len(given)})"
            )
        if not seeded and len(given) != 1:
            raise EntryError(f"--agent: the record is of one agent file; got {len(given)}")
        agent_paths = []
        for i, path in enumerate(given):
            if not path.is_file():
                raise EntryError(
                    f"--agent {path}: no such file; pass the agent file the record was made with"
                )
            agent_paths.append(repo_relative(path, repo))
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            sha = recorded[i] if i < len(recorded) else None
            if agent_paths[-1] is None and digest != sha:  # inside the repo, check_entry says it
                what = f"seed {i}'s file" if seeded else "the file"
                extra.append(
                    Problem(
                        "agent_hash",
                        f"agent hash mismatch: {path} (sha256 {digest[:16]}...) is not {what} "
                        f"the record was made with ({str(sha)[:16]}...); pass that file to "
                        "--agent, or evaluate this one and submit its record",
                    )
                )
    else:
        meta = record.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        if seeded:
            recorded_paths = meta.get("agent_paths")
            if not isinstance(recorded_paths, list):
                recorded_paths = [None] * len(recorded)
            agent_paths = [
                locate_agent(p if isinstance(p, str) else None, repo) for p in recorded_paths
            ]
        else:
            agent_paths = [locate_agent(meta.get("agent_path"), repo)]
    extra += _ignored_agent_files(agent_paths, repo)
    entry = make_entry(record, name, description, agent_paths if seeded else agent_paths[0])
    report = check_entry(entry, repo=repo)
    report.problems += extra
    least = reruns.MIN_EPISODES
    episodes = entry["payload"]["protocol"]["episodes"] if report.ok else least
    if episodes < least:
        report.problems.append(
            Problem(
                "episodes",
                f"the record has {episodes} episodes per teammate and seating; the protocol "
                f"(and a ranked entry) needs at least {least}: evaluate with --episodes "
                f"{least} (the default) and submit that record",
            )
        )
    if not report.ok:
        raise Rejected(report)
    payload = entry["payload"]
    slug = entry_slug(name, payload["task_id"], payload["teammate_set"]["version"])
    target = entries_folder(root) / f"{slug}.json"
    if target.exists() and not replace:
        raise EntryExistsError(
            f"the entry {target} already exists (same name, task and heldout version); pass "
            "--replace to overwrite it, or choose another --name"
        )
    write_entry(target, entry)
    return target, entry, report


def _ignored_agent_files(agent_paths: list[str | None], repo: Path) -> list[Problem]:
    """A problem for each agent file in a folder git ignores: a clean checkout (CI's) would
    not have it, so the entry could not be re-run there."""
    return [
        Problem(
            "agent_path",
            f"the agent file {rel} is in a folder git ignores (.gitignore): a clean checkout "
            "will not have it, so CI could not re-run the entry; copy the file (with its card "
            "or bundle) into a folder the repository keeps, such as agents/<name>/, and pass "
            "that copy to --agent",
        )
        for rel in git_ignored([p for p in agent_paths if p], repo)
    ]


def _is_seeded(record: dict[str, Any]) -> bool:
    """Whether a record, not yet checked, says it is of several seeds' agent files."""
    payload = record.get("payload")
    protocol = payload.get("protocol") if isinstance(payload, dict) else None
    return isinstance(protocol, dict) and protocol.get("runs") == RUNS_SEEDS


def _recorded_files(record: dict[str, Any]) -> list[Any]:
    """The sha256 of each agent file a record, not yet checked, names (None where missing)."""
    payload = record.get("payload")
    agent = payload.get("agent") if isinstance(payload, dict) else None
    if not isinstance(agent, dict):
        return []
    if not _is_seeded(record):
        return [agent.get("sha256")]
    files = agent.get("files")
    if not isinstance(files, list):
        return []
    return [f.get("sha256") if isinstance(f, dict) else None for f in files]


@dataclasses.dataclass
class Verification:
    path: Path
    entry: dict[str, Any]
    report: Report
    rerun: RerunResult | None = None  # a fresh re-run (and its claim check)
    reproduction: Reproduction | None = None  # `reproduce`: the stored re-run played again
    rerun_error: str | None = None  # the re-run failed: why
    rerun_skipped: str | None = None  # no re-run: why

    @property
    def ok(self) -> bool:
        rerun_ok = self.rerun is None or self.rerun.claim.reproduced
        again_ok = self.reproduction is None or (
            self.reproduction.reproduced and self.reproduction.claim.reproduced
        )
        return self.report.ok and self.rerun_error is None and rerun_ok and again_ok


def verify(
    path: Path,
    *,
    rerun: bool = True,
    episodes: int | None = None,
    salt: str | None = None,
    again: bool = False,
    repo: Path | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    on_checked: Callable[[Verification], None] | None = None,
    record: bool = True,
    root: Path | None = None,
    replays: int = 0,
) -> Verification:
    """Every check of `checks` on the entry in `path`, then, when they pass and the agent file
    is in the repository, the verifier's re-run of the agent (`rerun.rerun_entry`: `episodes`
    per member and seating, default and least `rerun.MIN_EPISODES`, on the seed of `salt`, default a
    new one) and the check of the record's claim. `on_checked(verification)` is called between
    the checks and the re-run.

    With `again` (what CI does), nothing is written: an entry whose ledger line is current (of
    this rule, for this entry) has its stored re-run played again with the line's salt and
    compared (`rerun.reproduce`); an entry without such a line gets the checks only (it is
    unranked, so no number of the pages rests on a re-run).

    With `record`, an entry of the leaderboard in `root` gets its ledger line and stored re-run
    (`ledger.record_rerun`) after a fresh re-run, whether its claim was reproduced or not (the
    pages show the re-run's number either way, ranked only when it was), and loses both when a
    check or the re-run fails; with `replays`, the line comes with the re-run's first `replays`
    episodes of every teammate and seating as the entry's replays (`replays.save`); without,
    the entry's replays go (they are of an earlier re-run)."""
    repo = repo or repo_root()
    entry = read_json(path)
    report = check_entry(entry, repo=repo)
    out = Verification(path, entry, report)
    missing = _missing_agent(entry, repo) if report.ok else None
    if not rerun:
        out.rerun_skipped = "not re-run (--no-rerun)"
    elif not report.ok:
        out.rerun_skipped = "not re-run: the checks above failed"
    elif missing is not None:
        out.rerun_skipped = (
            f"not re-run: {missing} is not in this repository (schema, score and hash checks only)"
        )
    board = root or leaderboard_root()
    in_board = path.parent == entries_folder(root)
    line = ledger.read(board).get(path.stem) if in_board else None
    stored = _current_rerun(board, path.stem, entry, line, repo) if report.ok else None
    if again and out.rerun_skipped is None and stored is None:
        out.rerun_skipped = (
            "not re-run: no current line of the verifier's in verified.json (the entry is "
            f"unranked); `verify {path.stem}` measures it"
        )
    if on_checked is not None:
        on_checked(out)
    if out.rerun_skipped is not None:
        return out
    try:
        if again and stored is not None and line is not None:
            out.reproduction = reproduce(entry, repo, stored, str(line["salt"]), timeout=timeout)
            return out
        out.rerun = rerun_entry(
            entry,
            repo,
            episodes=episodes or reruns.MIN_EPISODES,
            salt=salt,
            timeout=timeout,
            replays=replays,
        )
    except RerunError as e:
        out.rerun_error = str(e)
    if record and in_board and not again:
        if out.rerun is not None:
            kept = (
                {"sha256": replay_files.save(board, path.stem, list(out.rerun.replays)),
                 "date_utc": ledger.today()}
                if out.rerun.replays
                else None
            )  # fmt: skip
            if kept is None:
                replay_files.remove(board, path.stem)
            ledger.record_rerun(root, path.stem, entry, out.rerun, kept)
        else:
            ledger.forget(root, path.stem)
            replay_files.remove(board, path.stem)
    return out


def _current_rerun(
    board: Path,
    slug: str,
    entry: dict[str, Any],
    line: dict[str, Any] | None,
    repo: Path | None = None,
) -> dict[str, Any] | None:
    """The stored re-run of `slug` when its ledger line is current for `entry` and of this
    rule, its scores the stored record's (else None)."""
    if line is None or ledger.status(slug, entry, {slug: line}, board, repo) in (
        ledger.NOT_RERUN, ledger.CHANGED, ledger.OLD_RULE,
    ):  # fmt: skip
        return None
    stored = ledger.stored_rerun(board, slug, line)
    if stored is None or line.get("scores") != {
        k: stored["payload"]["aggregates"][k] for k in ("mean", "iqm", "worst_case")
    }:
        return None
    return stored


def _missing_agent(entry: dict[str, Any], repo: Path) -> str | None:
    """Which agent file of a checked entry is not in the repository ("the agent file x", or
    "seed i's agent file x"), or None when all are: a re-run needs every seed's file."""
    paths = entry_agent_paths(entry)
    files = agent_files(entry["payload"])
    for i, (rel, file) in enumerate(zip(paths, files, strict=True)):
        if rel is None or not (repo / rel).is_file():
            who = "the agent file" if len(paths) == 1 else f"seed {i}'s agent file"
            return f"{who} {rel or file['file']}"
    return None


def load_entries(root: Path | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(slug, entry) of every entry file, each schema-checked (an EntryError names a bad one)."""
    out = []
    for path in entry_paths(root):
        entry = read_json(path)
        errors = schema_errors(entry)
        if errors:
            raise EntryError(
                f"{path} is not a well-formed entry ({errors[0][0]}); run `aht-bench leaderboard "
                f"verify {path}`, then fix or remove it"
            )
        out.append((path.stem, entry))
    return out


def render_files(
    root: Path | None = None,
    *,
    check: bool = False,
    on_page: Callable[[Path], None] | None = None,
) -> list[Path]:
    """Regenerate README.md (between its markers) and index.html of the leaderboard folder
    from its entries, and the replay pages of the entries whose current ledger line has
    replays (`replays.pages`: only those missing or stale); returns the files that changed
    (with `check`, that would change, and nothing is written). `on_page(path)` is called
    before each replay page is drawn."""
    from aht_bench.files import atomic_write_bytes

    root = root or leaderboard_root()
    entries = load_entries(root)
    lines = ledger.read(root)
    reruns = {slug: ledger.status(slug, entry, lines, root) for slug, entry in entries}
    measured = {
        slug: stored
        for slug, entry in entries
        if (stored := _current_rerun(root, slug, entry, lines.get(slug))) is not None
    }
    for slug in reruns:
        if reruns[slug] not in (ledger.OLD_RULE, ledger.NOT_RERUN) and slug not in measured:
            reruns[slug] = ledger.CHANGED  # a line whose scores are not its stored re-run's
    shown = {
        slug: (entry, lines[slug])
        for slug, entry in entries
        if reruns[slug] not in (ledger.CHANGED, ledger.NOT_RERUN)
        and replay_files.current(root, slug, lines[slug])
    }
    members = {slug: replay_files.members(root, slug) for slug in shown}
    readme = root / README
    current = readme.read_text(encoding="utf-8") if readme.is_file() else None
    linked = (root / render.DOCS_LINK).is_file()  # the repository's board, beside docs/
    retired = retired_groups(entries)
    pages: dict[Path, str | None] = {
        readme: render.render_readme(current, entries, reruns, linked, measured, retired),
        root / HTML: render.render_html(entries, reruns, members, linked, measured, retired),
        root / render.OVERVIEW_FIGURE: render.overview_figure(entries, reruns, measured, retired),
    }
    changed = replay_files.pages(root, shown, check=check, on_page=on_page)
    for path, text in pages.items():
        old = path.read_bytes() if path.is_file() else None
        if old != (None if text is None else text.encode()):
            changed.append(path)
            if check:
                continue
            if text is None:
                path.unlink()  # no overview any more
            else:
                atomic_write_bytes(path, text.encode())
    return changed


def retired_groups(entries: list[tuple[str, dict[str, Any]]]) -> dict[tuple[str, str], str]:
    """(task_id, heldout version) -> why it is a retired protocol, for each table of `entries`
    that is: a task superseded by a newer game (`envs.superseded_by`), or a heldout set with a
    newer published version of its kind (v1 -> v2, human-proxy-v2 -> human-proxy-v3)."""
    from aht_bench import envs
    from aht_bench.evaluation.sets import heldout_root, numbered
    from aht_bench.leaderboard.checks import shipped_versions

    out: dict[tuple[str, str], str] = {}
    for task_id, version in {render.group_key(entry) for _, entry in entries}:
        try:
            by = envs.superseded_by(task_id)
        except envs.UnknownTaskError:
            continue
        if by is not None:
            out[(task_id, version)] = f"the {task_id} game, superseded by {by} (docs/overcooked.md)"
            continue
        kind = version.rstrip("0123456789")
        newest = numbered(shipped_versions(task_id, heldout_root()), kind)[-1:]
        if newest and newest[0] != version and version in numbered([version], kind):
            out[(task_id, version)] = f"heldout {version}, superseded by heldout {newest[0]}"
    return out
