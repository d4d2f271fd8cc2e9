"""`aht-bench heldout build|list|where|show|verify|xp`: the heldout teammate sets.

May import click, the standard library, aht_bench.envs (for types) and (inside the commands)
aht_bench.evaluation and aht_bench.heldout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from aht_bench.cli.common import (
    EXIT_SIGINT,
    EXIT_TEAMMATE_INTEGRITY,
    EXIT_USAGE,
    Progress,
    count,
    failed,
)
from aht_bench.cli.group import main
from aht_bench.cli.options import (
    json_option,
    no_progress_option,
    plot_option,
    set_version_option,
    task_option,
)
from aht_bench.cli.teammates import newest_set, verified_set

if TYPE_CHECKING:
    from aht_bench.envs import Task


@main.group()
def heldout() -> None:
    """Heldout teammate sets: build, list, show, verify and their cross-play matrices."""


@heldout.command("build")
@task_option()
@click.option(
    "--version",
    default="v1",
    show_default=True,
    help="Set version: v1 (IPPO, BRDiv and heuristic members), v2 (the same on lbf-v1 and "
    "the v2 Overcooked tasks, with Bounds v2), v3 (forced_coord-v2 only: more IPPO teams and "
    "BRDiv trained to competence), human-proxy-v1 (on the v1 Overcooked tasks), "
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
    from aht_bench.heldout import build as hb

    try:
        if list_units or unit is not None:
            _build_units(task, version, work, None if list_units else unit)
            return
        folder = _build_set(task, version, out, work, data_dir, episodes_dir)
    except (hb.HeldoutBuildError, ValueError) as e:  # incl. human.HumanDataError, bad tasks
        raise click.UsageError(str(e)) from None
    except KeyboardInterrupt:
        message = "interrupted; nothing was published (trained pieces stay cached)"
        raise failed(message, EXIT_SIGINT) from None
    if out is None:
        _lock(task, version, folder)


def _build_units(task: Task, version: str, work: Path | None, unit: str | None) -> None:
    """`heldout build --list-units` (`unit` None): print the recipe's units; `--unit`: train
    that one into the work cache."""
    from aht_bench.heldout import build as hb

    if version.startswith("human-proxy-"):
        raise click.UsageError("--unit and --list-units are for v1/v2 builds only")
    if unit is None:
        for name in hb.units(task, version):
            click.echo(name)
        return
    hb.train_unit(task, version, unit, work=work, log=click.echo)


def _build_set(
    task: Task,
    version: str,
    out: Path | None,
    work: Path | None,
    data_dir: Path | None,
    episodes_dir: Path | None,
) -> Path:
    """Build the set `version` of `task` by the builder of its kind (cloned from played
    episodes, from the human data, or from its recipe); returns its folder."""
    from aht_bench.heldout import build as hb
    from aht_bench.heldout import played

    if (episodes_dir is not None) != played.is_played_version(version):
        raise click.UsageError(
            f"--episodes DIR goes with a --version {played.PREFIX}<label> (a proxy cloned "
            "from played episodes), and such a version needs it"
        )
    if episodes_dir is not None:
        return played.build(task, episodes_dir, out, version=version, log=click.echo)
    if version.startswith("human-proxy-"):
        from aht_bench.heldout import human

        return human.build(task, out, version=version, data_dir=data_dir, log=click.echo)
    hb.recipe(task, version)
    return hb.build(task, version, out=out, work=work, log=click.echo)


def _lock(task: Task, version: str, folder: Path) -> None:
    """Lock the set just built into heldout/ and say how to publish it (pin its lock)."""
    from aht_bench import heldout as ho
    from aht_bench.evaluation.pins import pin_line, read_lock_file

    if version == ho.DEVELOPMENT:
        click.echo(f"{folder} is a development set (--teammates dev): never locked nor pinned")
        return
    added = ho.lock_new(folder)
    click.echo(f"locked {added} files in {ho.lock_path(folder)}")
    click.echo(
        "to publish it, pin its lock: add this line to PINNED in "
        "aht_bench/evaluation/pins.py (until then it loads as a development set)\n"
        + pin_line(task.id, version, read_lock_file(ho.lock_path(folder)))
    )


@heldout.command("list")
@json_option("The sets as one JSON list.")
def heldout_list(as_json: bool) -> None:
    """Every shipped set: task, version, members and the diversity of published sets."""
    from aht_bench import heldout as ho

    rows = ho.list_sets()
    if rows and as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        from aht_bench.evaluation.sets import HELDOUT_ENV, searched_text

        raise failed(
            f"error: no teammate sets found; looked in {searched_text()}. Fix: install "
            f"aht-bench with its data, run from a checkout, or pass --heldout DIR "
            f"(${HELDOUT_ENV})",
            EXIT_USAGE,
        )
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
            f"{count(len(row['members']), 'member')}{diversity})"
        )
        click.echo(f"    {', '.join(str(m) for m in row['members'])}")


@heldout.command("where")
@json_option("The lookup order and the data as JSON.")
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
        raise failed(
            f"no heldout folder found: install the data ({data.INSTALL}), run from a checkout "
            "or pass --heldout DIR",
            EXIT_USAGE,
        )
    if not as_json:
        click.echo(where.summary())


@heldout.command("show")
@task_option()
@set_version_option
@json_option("The verified set's manifest, as JSON, with its sha256.")
def heldout_show(task: Task, version: str | None, as_json: bool) -> None:
    """Verify one set and print its members, kinds, bounds and who set them."""
    eval_set = verified_set(task, version or newest_set(task.id, "--version"), "--version")
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
@no_progress_option
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
    bar = Progress(not no_progress, "loading sets")
    try:
        problems = ho.verify(progress=bar)
    finally:
        bar.close()
    if problems:
        for p in problems:
            click.echo(f"error: {p}", err=True)
        raise failed(
            "the published heldout sets do not match their lock: restore heldout/ from the "
            "repository (published sets never change)",
            EXIT_TEAMMATE_INTEGRITY,
        )
    from aht_bench.evaluation.sets import heldout_root

    sets_ = ho.published_sets()
    files = sum((heldout_root() / rel).is_file() for rel in ho.read_lock())
    click.echo(f"verified {count(len(sets_), 'published set')} ({count(files, 'file')})")


@heldout.command("xp")
@task_option()
@set_version_option
@plot_option("Also draw the matrix as a heatmap (.png).")
def heldout_xp(task: Task, version: str | None, plot: Path | None) -> None:
    """The best-response cross-play matrix of a set (row: a member's best response, column: a
    member), with its diagonal and off-diagonal means."""
    eval_set = verified_set(task, version or newest_set(task.id, "--version"), "--version")
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
