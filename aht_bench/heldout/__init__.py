"""Heldout teammate sets: load, list, verify and build the published sets in `heldout/`.

    from aht_bench import heldout
    mates = heldout.load("cramped_room")                 # TeammateSet of the newest set (JAX)
    policy, params = heldout.member("cramped_room", "ippo_mlp_0")
    env = EgoEnv("cramped_room", teammate=policy, teammate_params=params)   # Gymnasium
    eval_set = heldout.load_set("cramped_room", "v2")    # + bounds and seatings (BRProx)
    heldout.verify()                                     # every published byte vs its lock
    policy, params = heldout.bc_partner("cramped_room")  # human-data partner to TRAIN with

Without a version, `load`, `member` and `bc_partner` take the task's newest published set (as
`aht-bench evaluate` does); name the version (`load(task, "v1")`) for a number that must not
move when a new set is published.

A published set is `heldout/<task_id>/<version>/` (`v1`, `human-proxy-v1`; `dev` folders are
development sets, not published): `manifest.json` (members, kinds, weight files with sha256,
bounds with provenance, the best-response cross-play matrix, the recipe that built it),
`manifest.sha256`, and the weights. Its lock `heldout/<task_id>/<version>.sha256`, written once
when the set is published, holds the sha256 of every file of the set (`sha256sum -c` format,
run from heldout/), and the lock's digest is pinned in the package
(`aht_bench.evaluation.pins`), so rewriting files and lock together is caught too; `verify`
checks every lock against its pin and every file against its lock, refuses unlisted files in a
published folder and published sets missing, and loads every set (manifest and weight hashes
again). Published sets are immutable: publishing adds files, it never edits one (`lock_new`
refuses to rewrite a lock) and adds one line to the pins.

`build` (in `aht_bench.heldout.build`) makes a set from its recipe (`aht_bench.heldout.recipes`);
`aht_bench.heldout.human` builds the human-proxy sets from the Carroll data,
`aht_bench.heldout.played` from episodes played with `aht-bench play` (`human-proxy-play-*`),
`aht_bench.heldout.devset` the development sets (`heldout/<task>/dev`); `aht_bench.heldout.where`
says where the sets are found (`aht-bench --version`, `heldout where`).

May import the standard library, numpy and aht_bench.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aht_bench.evaluation import data
from aht_bench.evaluation.pins import (
    PINNED,
    LockFormatError,
    lock_digest,
    pin_key,
    pin_line,
    read_lock_file,
)
from aht_bench.evaluation.sets import (
    HUMAN_PROXY,
    MANIFEST,
    EvaluationSet,
    TeammateSetError,
    TeammateSetIntegrityError,
    changed_files_text,
    heldout_root,
    installed_heldout_folders,
    load_set,
    newest_version,
    package_heldout_root,
    read_manifest,
)
from aht_bench.policies.teammate_set import TeammateSet

if TYPE_CHECKING:
    from aht_bench.envs import Task

LOCK_SUFFIX = ".sha256"
LOCK = "<task_id>/<version>.sha256"  # where each published set's lock lives
DEVELOPMENT = "dev"

__all__ = [
    "LOCK",
    "EvaluationSet",
    "TeammateSetError",
    "TeammateSetIntegrityError",
    "bc_partner",
    "list_sets",
    "load",
    "load_set",
    "lock_new",
    "member",
    "not_installed",
    "published_sets",
    "unpinned_sets",
    "verify",
]


def _version(task: Task, version: str | None, prefix: str = "v") -> str:
    """`version`, or the newest published `<prefix>N` set of `task` when it is None."""
    if version is not None:
        return version
    task_id = task.id
    newest = newest_version(task_id, prefix)
    if newest is None:
        raise TeammateSetError(
            f"no published {prefix}N set for {task_id}; `aht-bench heldout list` lists the "
            "shipped sets, or pass a set folder as the version"
        )
    return newest


def load(task: str | Task, version: str | None = None) -> TeammateSet:
    """The members of `task`'s heldout set `version` (default: its newest published one) as a
    `TeammateSet`, verified.

    `TeammateSet.act(index, carry, obs, key)` is jittable and vmappable; `names`, `policies`
    and `params` give each member as a policy of the `aht_bench.policies` protocol.
    """
    from aht_bench import envs

    task = envs.task(task)
    return load_set(task, _version(task, version)).teammates


def member(task: str | Task, name: str, version: str | None = None) -> tuple[Any, Any]:
    """(policy, params) of member `name` of `task`'s set `version` (default: the newest): a
    teammate for `EgoEnv(task, teammate=policy, teammate_params=params)` or PettingZoo's
    `teammates=`."""
    mates = load(task, version)
    i = mates.index(name)
    return mates.policies[i], mates.params[i]


def bc_partner(task: str | Task, version: str | None = None) -> tuple[Any, Any]:
    """(policy, params) of the behaviour-cloned partner shipped with `task`'s human-proxy set
    `version` (default: its newest published human-proxy set): cloned from the TRAIN split of
    the human data, so an ego agent may train with it and still be evaluated fairly against the
    human proxy (cloned from the test split). Verified."""
    from aht_bench import envs
    from aht_bench.evaluation.sets import load_member_weights, resolve_set_folder

    task = envs.task(task)
    version = _version(task, version, HUMAN_PROXY)
    folder = resolve_set_folder(task.id, version)
    manifest, _ = read_manifest(folder)
    entry = manifest.get("bc_partner")
    if not isinstance(entry, dict):
        raise TeammateSetError(f"the set in {folder} ships no bc_partner")
    return load_member_weights(folder, "bc_partner", entry)


def _is_published(folder: Path) -> bool:
    return folder.name != DEVELOPMENT and (folder / MANIFEST).is_file()


def published_sets(root: Path | None = None) -> list[Path]:
    """Folders of every published set under `root` (default: the heldout/ folder)."""
    root = root or heldout_root()
    if not root.is_dir():
        return []
    return sorted(v for t in root.iterdir() if t.is_dir() for v in t.iterdir() if _is_published(v))


def list_sets(root: Path | None = None) -> list[dict[str, Any]]:
    """One summary per set (published and development): task, version, members, status."""
    root = root or heldout_root()
    out = []
    if not root.is_dir():
        return out
    for task_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for folder in sorted(p for p in task_dir.iterdir() if (p / MANIFEST).is_file()):
            try:
                manifest, digest = read_manifest(folder)
            except TeammateSetError as e:
                out.append({"task_id": task_dir.name, "version": folder.name, "error": str(e)})
                continue
            xp = manifest.get("cross_play") or {}
            out.append(
                {
                    "task_id": manifest.get("task_id", task_dir.name),
                    "version": manifest.get("version", folder.name),
                    # published: its lock pinned in the package (an unpinned vN folder is a
                    # development set, as `load_set` treats it)
                    "published": pin_key(task_dir.name, folder.name) in PINNED,
                    "members": [m.get("name") for m in manifest.get("members", [])],
                    "kinds": [m.get("kind") for m in manifest.get("members", [])],
                    "diagonal_mean": xp.get("diagonal_mean"),
                    "off_diagonal_mean": xp.get("off_diagonal_mean"),
                    "manifest_sha256": digest,
                    "folder": str(folder),
                }
            )
    return out


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lock_path(folder: Path) -> Path:
    """The lock of the set in `folder`: `heldout/<task_id>/<version>.sha256`, next to it."""
    return folder.parent / f"{folder.name}{LOCK_SUFFIX}"


def _read_lock_file(path: Path, root: Path) -> dict[str, str]:
    try:
        return read_lock_file(path)
    except LockFormatError as e:
        raise TeammateSetIntegrityError(str(e)) from None


def read_lock(root: Path | None = None) -> dict[str, str]:
    """path relative to `root` -> sha256, from every set lock under `root` (heldout/)."""
    root = root or heldout_root()
    out: dict[str, str] = {}
    if root.is_dir():
        for path in sorted(root.glob(f"*/*{LOCK_SUFFIX}")):
            out |= _read_lock_file(path, root)
    return out


def lock_new(folder: Path, root: Path | None = None) -> int:
    """Write the lock of the newly published set in `folder` (every file's sha256); returns how
    many files it lists.

    A lock is written once: if the set already has one, nothing is written, and a file whose
    digest differs from its locked one is a TeammateSetIntegrityError (a published set never
    changes; publish a new version instead). A development set (`dev`) is never locked: it
    is never pinned nor published, and no data wheel carries a lock of it (ValueError)."""
    from aht_bench.files import atomic_write_bytes

    if folder.name == DEVELOPMENT:
        raise ValueError(
            f"{folder} is a development set: it is never locked (only a published vN set is)"
        )
    root = root or heldout_root()
    lock = {p.relative_to(root).as_posix(): _digest(p) for p in _files(folder)}
    path = lock_path(folder)
    if path.is_file():
        old = _read_lock_file(path, root)
        changed = sorted(p for p in lock if p in old and old[p] != lock[p])
        added = sorted(set(lock) - set(old))
        if changed or added:
            what = changed[0] if changed else added[0]
            raise TeammateSetIntegrityError(
                f"{what} differs from the published set's lock {path.name} ("
                f"{'changed' if changed else 'added'}): a published set never changes; "
                "publish a new version instead"
            )
        return 0
    text = f"# sha256 of every file of the published set {folder.name}; never edit by hand\n"
    text += "".join(f"{d}  {p}\n" for p, d in sorted(lock.items()))
    atomic_write_bytes(path, text.encode())
    return len(lock)


def _locks(root: Path, folders: list[Path]) -> dict[str, dict[str, str]]:
    """`<task_id>/<version>` -> lock entries of every locked set folder in `folders`."""
    out = {}
    for folder in folders:
        path = lock_path(folder)
        if path.is_file():
            out[pin_key(folder.parent.name, folder.name)] = _read_lock_file(path, root)
    return out


def not_installed(root: Path | None = None) -> list[str]:
    """The data distributions (`aht_bench.evaluation.data`) whose files `root` may lack: when
    `root` is the installed data, every data distribution not installed here; elsewhere (a
    checkout, a folder given by --heldout) none, for there every published file must be."""
    root = root or heldout_root()
    installed_roots = [f.resolve() for f in installed_heldout_folders()]
    if root.resolve() not in installed_roots:
        return []
    have = data.installed()
    return [name for name in data.all_distributions() if name not in have]


def _pin_problems(root: Path, folders: list[Path], absent: set[str]) -> list[str]:
    """Locks whose digest is not the package's pin; in the package's own heldout/ (the
    checkout's, or the installed data), pinned sets that are missing, unless their
    distribution is not installed (`absent`); another root may hold only some sets."""
    problems = []
    locked = _locks(root, folders)
    checkout = root.resolve() == package_heldout_root().resolve()
    for key, digest in sorted(PINNED.items()):
        if key not in locked:
            if checkout and data.distribution(key.split("/", 1)[1]) not in absent:
                problems.append(
                    f"{key}: missing (a published set pinned in aht_bench/evaluation/pins.py)"
                )
        elif lock_digest(locked[key]) != digest:
            task_id, version = key.split("/", 1)
            changed = changed_files_text(task_id, version, locked[key]).removesuffix(": ")
            problems.append(
                f"{key}{LOCK_SUFFIX}: its entries do not match the digest pinned in "
                "aht_bench/evaluation/pins.py (files and lock were changed together)"
                + (f"; {changed}" if changed else "")
            )
    return problems


def unpinned_sets(root: Path | None = None) -> list[tuple[str, str]]:
    """(`<task_id>/<version>`, the line that would pin it) of every locked set under `root`
    that is not pinned in this package: built here, not published by this aht-bench; it loads
    as a development set."""
    root = root or heldout_root()
    locked = _locks(root, published_sets(root))
    out = []
    for key, entries in sorted(locked.items()):
        if key not in PINNED:
            task_id, version = key.split("/", 1)
            out.append((key, pin_line(task_id, version, entries)))
    return out


def verify(
    root: Path | None = None,
    load_members: bool = True,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[str]:
    """Problems found in the published sets (an empty list when all is well).

    Every locked file must exist with its digest; a published folder must hold no file the lock
    does not list; each published set must load (manifest and weight hashes, cards, shapes).
    In the installed data, the files of a data distribution that is not installed
    (`not_installed`: the best responses, say) may be absent. `progress(done, total, set)` is
    called as each set is loaded.
    """
    root = root or heldout_root()
    problems: list[str] = []
    lock = read_lock(root)
    folders = published_sets(root)
    absent = set(not_installed(root))
    for folder in folders:
        if not lock_path(folder).is_file():
            rel = lock_path(folder).relative_to(root).as_posix()
            problems.append(f"{rel} is missing: the published set cannot be verified")
    problems += _pin_problems(root, folders, absent)
    for rel, digest in sorted(lock.items()):
        path = root / rel
        if not path.is_file():
            if data.distribution_of(rel) not in absent:
                problems.append(f"{rel}: missing (published file)")
        elif _digest(path) != digest:
            problems.append(f"{rel}: sha256 differs from its lock (the file was changed)")
    for folder in folders:
        for path in _files(folder):
            rel = path.relative_to(root).as_posix()
            if rel not in lock:
                problems.append(
                    f"{rel}: not in {lock_path(folder).name} (an unpublished file in a published "
                    "set)"
                )
    for i, folder in enumerate(folders if load_members else []):
        key = folder.relative_to(root).as_posix()
        if progress is not None:
            progress(i, len(folders), key)
        try:
            load_set(folder.parent.name, folder)
        except (TeammateSetError, ValueError) as e:
            problems.append(f"{key}: {e}")
    if progress is not None and load_members:
        progress(len(folders), len(folders), "done")
    return problems
