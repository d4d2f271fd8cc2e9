"""Teammate sets for evaluation: members, normalisation bounds and seatings, loaded verified.

    eval_set = load_set("forced_coord", "dev")     # heldout/overcooked-forced_coord-v1/dev/
    eval_set = load_set("lbf", "path/to/set/")     # a folder (or manifest.json) of any set
    eval_set.teammates                             # TeammateSet (JAX, jittable)
    eval_set.lower, eval_set.upper                 # float64 (members,): BRProx bounds

A set lives in a folder `heldout/<task_id>/<version>/` (the layout of the heldout-sets issue):
`manifest.json` lists the members, each with its kind, how to build it (`heuristic`: a name
for `make_heuristic`; or `file` + `sha256`: a policy file saved with `save_policy`), and its
bounds with their provenance; `manifest.sha256` holds the manifest's sha256 (`sha256sum`
format). `load_set` checks the manifest against it, and every weight file against the
manifest, before it builds anything: a mismatch is a `TeammateSetIntegrityError` (exit code 5
of `aht-bench evaluate`).

`seatings` are the seat assignments evaluation plays: each is the tuple of seats the agent
under evaluation takes (the members take the others). Two-player tasks use `((0,), (1,))`:
every member is met in both seats; `matrix-regret-v1` defines only seat 0 for the ego (paper
App. A); `lbf-4p-v1` seats the agent in 0 and 1 and the members in 2 and 3.

Sets whose `version` is `dev` are development sets (heuristic members, bounds from short CPU
best-response runs), not the published heldout sets; their manifest says so.

Published sets are pinned in the package (`pins`): a set under heldout/<task_id>/<version>/
whose version is pinned loads only if its lock's digest is the pinned one and the lock lists
the manifest's sha256, so a set whose files and lock were rewritten together fails its
integrity check; a `vN`, `human-proxy-vN` or `human-proxy-play-<label>` folder that is not
pinned (built here and not published, or edited) is treated as a development set and is not a
default.

The sets come from the first of: $AHT_BENCH_HELDOUT (`--heldout DIR`), the checkout's heldout/,
the data distributions installed beside the package (`aht_bench.evaluation.data`); an error
that finds no set names the distribution to install.

May import numpy, the standard library, aht_bench.files, aht_bench.envs, aht_bench.policies
and aht_bench.evaluation (pins, data).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench.envs import Task
from aht_bench.envs.tasks import ego_seatings
from aht_bench.evaluation import data
from aht_bench.evaluation.pins import (
    PINNED,
    LockFormatError,
    lock_digest,
    parse_lock,
    pin_key,
    read_lock_file,
)
from aht_bench.policies.teammate_set import TeammateSet

MANIFEST = "manifest.json"
MANIFEST_HASH = "manifest.sha256"
FORMAT = "aht-bench-teammate-set"
FORMAT_VERSION = 1
HELDOUT_ENV = "AHT_BENCH_HELDOUT"  # overrides where the heldout/ folder is looked up


class TeammateSetError(ValueError):
    """A teammate set that cannot be found or read (a usage error)."""


class TeammateSetIntegrityError(TeammateSetError):
    """A teammate set whose files do not match their recorded sha256 (corrupted or edited)."""


def default_seatings(task_id: str, num_agents: int) -> tuple[tuple[int, ...], ...]:
    """The seatings evaluation plays on `task_id` (see the module docstring): the task's
    `aht_bench.envs.tasks.ego_seatings`, which the gymnax shell draws the ego's seat from too."""
    return ego_seatings(task_id, num_agents)


def check_seatings(seatings: Any, num_agents: int) -> tuple[tuple[int, ...], ...]:
    """`seatings` as a tuple of tuples, or a ValueError: all of one size, distinct valid seats."""
    out = tuple(tuple(int(s) for s in seating) for seating in seatings)
    if not out:
        raise ValueError("seatings must hold at least one seating")
    sizes = {len(s) for s in out}
    if len(sizes) != 1 or 0 in sizes or num_agents in sizes:
        raise ValueError(
            f"seatings {out}: every seating must give the agent the same number of seats, "
            f"at least one and fewer than {num_agents}"
        )
    for seating in out:
        if len(set(seating)) != len(seating) or not all(0 <= s < num_agents for s in seating):
            raise ValueError(f"seating {seating} must hold distinct seats in [0, {num_agents})")
    return out


@dataclasses.dataclass(frozen=True)
class EvaluationSet:
    """Members to evaluate against, with their BRProx bounds (paper App. "Evaluation Return
    Normalization Procedure": lower 0, upper the best-response return raised by any better
    partner)."""

    set_id: str  # e.g. "overcooked-forced_coord-v1/dev"
    task: Task  # the task, resolved once (`aht_bench.envs.task`)
    teammates: TeammateSet  # the members (names are the member names)
    lower: np.ndarray  # float64 (members,): lower bounds
    upper: np.ndarray  # float64 (members,): upper bounds
    seatings: tuple[tuple[int, ...], ...]  # the agent's seats in each seating
    manifest_sha256: str | None = None  # None for sets built in memory
    manifest: dict[str, Any] | None = None  # the parsed manifest (None in memory)
    pinned: bool = False  # a published set whose lock matches the package's pin (`pins`)

    def __post_init__(self) -> None:
        if not isinstance(self.task, Task):
            raise TypeError(
                f"{self.set_id}: task must be an aht_bench.envs.Task, got "
                f"{type(self.task).__name__} {self.task!r}; pass aht_bench.envs.task(name)"
            )
        m = self.teammates.size
        lower = np.asarray(self.lower, np.float64).reshape(-1)
        upper = np.asarray(self.upper, np.float64).reshape(-1)
        if lower.shape != (m,) or upper.shape != (m,):
            raise ValueError(
                f"{self.set_id}: {m} members need {m} lower and upper bounds, got "
                f"{lower.shape[0]} and {upper.shape[0]}"
            )
        if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
            raise ValueError(f"{self.set_id}: bounds must be finite numbers")
        bad = [self.teammates.names[i] for i in np.flatnonzero(upper <= lower)]
        if bad:
            raise ValueError(
                f"{self.set_id}: the upper bound must exceed the lower bound, not so for {bad}"
            )
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def task_id(self) -> str:
        """The registered id of the set's task (what records and folders name)."""
        return self.task.id

    @property
    def names(self) -> tuple[str, ...]:
        return self.teammates.names

    @property
    def is_development(self) -> bool:
        """A development set: version `dev`, or a published-looking version that is not pinned
        in this package (see the module docstring)."""
        version = str((self.manifest or {}).get("version", ""))
        return version == "dev" or (looks_published(version) and not self.pinned)


def looks_published(version: str) -> bool:
    """`vN`, `human-proxy-vN` or `human-proxy-play-<label>` (cloned from played episodes,
    `aht_bench.heldout.played`): the names published heldout sets take."""
    if version.startswith("human-proxy-play-"):
        return True
    tail = version.removeprefix("human-proxy-")
    return tail[:1] == "v" and tail[1:].isdigit()


DATA_PACKAGE = data.DATA_PACKAGE
"""The import name under which the heldout data distributions install the sets (a namespace
package that every one of them adds to: `aht_bench.evaluation.data`)."""


def checkout_heldout_root() -> Path | None:
    """heldout/ of the checkout the package runs from (an editable install or the source tree),
    or None when the package is installed elsewhere (site-packages)."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "heldout").is_dir():
        return root / "heldout"
    return None


def installed_heldout_folders() -> list[Path]:
    """Every folder of the installed data (`aht_bench_heldout`): one when the data
    distributions are installed into one environment, as pip does."""
    import importlib.util

    spec = importlib.util.find_spec(DATA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations if Path(p).is_dir()]


def installed_heldout_root() -> Path | None:
    """The heldout sets installed by the data distributions (`aht_bench_heldout`), or None;
    of several folders (data installed into two environments on the path) the first."""
    folders = installed_heldout_folders()
    return folders[0] if folders else None


def package_heldout_root() -> Path:
    """The heldout/ folder that ships with the package: the checkout's, else the installed data
    (the sets whose locks `pins` pins; a folder given by $AHT_BENCH_HELDOUT is checked against
    the same pins)."""
    return (
        checkout_heldout_root()
        or installed_heldout_root()
        or Path(__file__).resolve().parents[2] / "heldout"
    )


def heldout_search() -> list[tuple[str, Path | None]]:
    """Where the heldout sets are looked up, in order: ($AHT_BENCH_HELDOUT or `--heldout DIR`,
    the checkout's heldout/, the installed data), each with its folder or None where there is
    none. `heldout_root` takes the first that exists."""
    override = os.environ.get(HELDOUT_ENV)
    return [
        (f"${HELDOUT_ENV} / --heldout", Path(override) if override else None),
        ("the checkout's heldout/", checkout_heldout_root()),
        (f"the installed data ({DATA_PACKAGE})", installed_heldout_root()),
    ]


def searched_text() -> str:
    """The lookup order as one line, for "not found" messages."""
    parts = []
    for label, folder in heldout_search():
        parts.append(f"{label}: {folder if folder is not None else 'none'}")
    return "; ".join(parts)


def heldout_root() -> Path:
    """The heldout/ folder: $AHT_BENCH_HELDOUT (the CLI's `--heldout DIR` sets it) if set, else
    the checkout's, else the sets installed with the package (`heldout_search`)."""
    for _label, folder in heldout_search():
        if folder is not None:
            return folder
    return package_heldout_root()


def available_sets(task_id: str) -> list[str]:
    """The versions of sets shipped for `task_id` (folders under heldout/<task_id>/)."""
    folder = heldout_root() / task_id
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / MANIFEST).is_file())


HUMAN_PROXY = "human-proxy-v"  # the prefix of the human-proxy sets' versions


def numbered(versions: Iterable[str], prefix: str = "v") -> list[str]:
    """The names of `versions` that are `<prefix>N` ("v1", "v2", ...; `prefix=HUMAN_PROXY`
    "human-proxy-v1", ...), oldest (smallest N) first."""
    found = [v for v in versions if v.startswith(prefix) and v[len(prefix) :].isdigit()]
    return sorted(found, key=lambda v: int(v[len(prefix) :]))


def published_versions(task_id: str, prefix: str = "v") -> list[str]:
    """The published versions of `task_id` named `<prefix>N` (by default the heldout sets "v1",
    "v2", ...; `prefix=HUMAN_PROXY` the human-proxy sets): a folder with its lock file beside
    it, pinned in `pins`, oldest first. Development sets are never listed."""
    folder = heldout_root() / task_id
    return [
        v
        for v in numbered(available_sets(task_id), prefix)
        if (folder / f"{v}.sha256").is_file() and pin_key(task_id, v) in PINNED
    ]


def newest_version(task_id: str, prefix: str = "v") -> str | None:
    """The newest published version of `task_id` named `<prefix>N` (the heldout set `aht-bench
    evaluate` uses by default), or None if none is shipped."""
    versions = published_versions(task_id, prefix)
    return versions[-1] if versions else None


def tasks_with_sets() -> list[str]:
    """Registered task ids that have at least one shipped set."""
    from aht_bench import envs

    return [t for t in envs.registered_ids() if available_sets(t)]


def resolve_set_folder(task_id: str, name: str | os.PathLike[str]) -> Path:
    """The folder of set `name` for `task_id`: a version under heldout/<task_id>/, or a path
    to a set folder or its manifest.json. Raises `TeammateSetError` naming the choices."""
    text = str(name)
    as_path = Path(text)
    if os.sep in text or text.endswith(".json") or (as_path.exists() and as_path.is_dir()):
        folder = (
            as_path.parent if as_path.name == MANIFEST or as_path.suffix == ".json" else as_path
        )
        if not (folder / MANIFEST).is_file():
            raise TeammateSetError(
                f"{as_path} is not a teammate set: no {MANIFEST} in {folder}; pass a set "
                "version such as 'dev' or a folder holding a manifest.json"
            )
        return folder
    folder = heldout_root() / task_id / text
    if not (folder / MANIFEST).is_file():
        versions = available_sets(task_id)
        have = (
            f"sets for {task_id}: {', '.join(versions)}"
            if versions
            else f"no set is shipped for {task_id} (tasks with sets: "
            f"{', '.join(tasks_with_sets()) or 'none'})"
        )
        fix = (
            ""
            if versions
            else "; looked in " + searched_text() + ". Fix: install the heldout data ("
            f"{data.install_hint(text)}), run from a checkout, or point --heldout DIR / "
            f"${HELDOUT_ENV} at a heldout/ folder"
        )
        if versions and pin_key(task_id, text) in PINNED and checkout_heldout_root() is None:
            fix = f"; the {text} sets install with {data.install_hint(text)}"
        raise TeammateSetError(
            f"no teammate set {text!r} for {task_id} in {heldout_root()}; {have}{fix}"
        )
    return folder


def _sha256(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def _expected_manifest_hash(folder: Path) -> str:
    path = folder / MANIFEST_HASH
    try:
        text = path.read_text()
    except OSError:
        raise TeammateSetIntegrityError(
            f"{path} is missing: the manifest of the set in {folder} cannot be verified; "
            "restore it from the repository (or rebuild the set)"
        ) from None
    digest = text.split()[0] if text.split() else ""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise TeammateSetIntegrityError(f"{path} does not hold a sha256 digest")
    return digest


def read_manifest(folder: Path) -> tuple[dict[str, Any], str]:
    """(manifest, its sha256) of the set in `folder`, verified against manifest.sha256."""
    path = folder / MANIFEST
    blob = path.read_bytes()
    digest = _sha256(blob)
    expected = _expected_manifest_hash(folder)
    if digest != expected:
        raise TeammateSetIntegrityError(
            f"{path} does not match its recorded sha256 (file {digest[:12]}..., "
            f"{MANIFEST_HASH} {expected[:12]}...): the teammate set was edited or corrupted; "
            "restore it from the repository, or rebuild it (`aht-bench devset build`)"
        )
    try:
        manifest = json.loads(blob)
    except json.JSONDecodeError as e:
        raise TeammateSetIntegrityError(f"{path} is not valid JSON: {e}") from None
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise TeammateSetIntegrityError(
            f"{path} is not an {FORMAT} v{FORMAT_VERSION} manifest "
            f"(format {manifest.get('format')!r}, version {manifest.get('format_version')!r})"
        )
    return manifest, digest


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """Assemble a set in a `staging_folder` next to `out`: when the block ends without an
    error the folder is renamed to `out` (which must be missing or empty), otherwise removed,
    so `out` holds a whole set or nothing."""
    import shutil

    work = staging_folder(out)
    try:
        yield work
        if out.exists():
            out.rmdir()  # empty: a builder refuses a non-empty `out` before it starts
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def staging_folder(out: Path) -> Path:
    """A fresh hidden folder next to `out` to assemble a set in, with the permissions of
    published data (mkdtemp makes 0700); the caller renames it to `out` when the set is complete
    and removes it otherwise, so an interrupted build never leaves a half-written set."""
    import tempfile

    out.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f".{out.name}-build-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(folder, 0o777 & ~umask)
    return folder


def write_manifest(folder: Path, manifest: dict[str, Any]) -> str:
    """Write `manifest.json` and `manifest.sha256` to `folder` atomically; returns the sha256."""
    from aht_bench.files import atomic_write_bytes

    blob = (json.dumps(manifest, indent=2, sort_keys=False) + "\n").encode()
    digest = _sha256(blob)
    atomic_write_bytes(folder / MANIFEST, blob)
    atomic_write_bytes(folder / MANIFEST_HASH, f"{digest}  {MANIFEST}\n".encode())
    return digest


def _build_member(task: Task, folder: Path, member: dict[str, Any]) -> tuple[Any, Any]:
    """(policy, params) of one manifest member, weight files checked against the manifest."""
    name = member.get("name", "?")
    if "heuristic" in member:
        from aht_bench.policies.heuristics import make_heuristic

        try:
            return make_heuristic(task, str(member["heuristic"])), None
        except ValueError as e:
            raise TeammateSetIntegrityError(f"member {name}: {e}") from None
    if "file" in member:
        return load_member_weights(folder, name, member)
    if "seat_files" in member:
        from aht_bench.policies.seated import SeatPair

        files = member["seat_files"]
        if not isinstance(files, list) or [f.get("seat") for f in files] != [0, 1]:
            raise TeammateSetIntegrityError(
                f"member {name} of the set in {folder}: seat_files must list seat 0 then seat 1"
            )
        (left, p_left), (right, p_right) = (load_member_weights(folder, name, f) for f in files)
        try:
            pair = SeatPair.for_env(task.env, (left, right))
        except ValueError as e:
            raise TeammateSetIntegrityError(f"member {name}: {e}") from None
        return pair, (p_left, p_right)
    raise TeammateSetIntegrityError(
        f"member {name} of the set in {folder} has neither 'heuristic', 'file' nor 'seat_files'"
    )


def load_member_weights(folder: Path, name: str, entry: dict[str, Any]) -> tuple[Any, Any]:
    """(policy, params) of the weight file `entry["file"]`, checked against `entry["sha256"]`."""
    from aht_bench.policies.io import PolicyFileError, load_policy

    path = folder / str(entry["file"])
    try:
        blob = path.read_bytes()
    except OSError:
        raise TeammateSetIntegrityError(
            f"member {name}: weight file {path} is missing; restore the set"
        ) from None
    if _sha256(blob) != entry.get("sha256"):
        raise TeammateSetIntegrityError(
            f"member {name}: {path} does not match the sha256 in the manifest: the weight "
            "file was edited or corrupted; restore the set"
        )
    try:
        return load_policy(path)
    except PolicyFileError as e:
        raise TeammateSetIntegrityError(f"member {name}: {e}") from None


def _bound(member: dict[str, Any], key: str, folder: Path) -> float:
    try:
        value = float(member["bounds"][key])
    except (KeyError, TypeError, ValueError):
        raise TeammateSetIntegrityError(
            f"member {member.get('name', '?')} of the set in {folder} has no numeric bounds.{key}"
        ) from None
    if not math.isfinite(value):
        raise TeammateSetIntegrityError(f"member {member.get('name')}: bounds.{key} is {value}")
    return value


def check_pin(task_id: str, folder: Path, manifest_digest: str) -> bool:
    """Whether the set in `folder` is a pinned published set (see the module docstring); a
    pinned version whose lock or manifest does not match is a `TeammateSetIntegrityError`."""
    home = heldout_root() / task_id
    if folder.resolve().parent != home.resolve():
        return False
    key = pin_key(task_id, folder.name)
    if key not in PINNED:
        return False
    lock = home / f"{folder.name}.sha256"
    fix = "restore heldout/ from the repository (`aht-bench heldout verify` lists what changed)"
    try:
        entries = read_lock_file(lock)
    except OSError:
        raise TeammateSetIntegrityError(
            f"{lock} is missing: the published set {key} cannot be verified; {fix}"
        ) from None
    except LockFormatError as e:
        raise TeammateSetIntegrityError(f"{e}; {fix}") from None
    if lock_digest(entries) != PINNED[key]:
        raise TeammateSetIntegrityError(
            f"{changed_files_text(task_id, folder.name, entries)}the lock of the published set "
            f"{key} does not match the digest pinned in this aht-bench "
            f"(aht_bench/evaluation/pins.py): its files and lock were changed together; {fix}"
        )
    if entries.get(f"{key}/{MANIFEST}") != manifest_digest:
        raise TeammateSetIntegrityError(
            f"the manifest of the published set {key} is not the one its pinned lock lists; {fix}"
        )
    return True


def pinned_lock_entries(task_id: str, version: str) -> dict[str, str] | None:
    """The entries of the lock pinned for `task_id`/`version` (`pins.PINNED`), read from a copy
    that still matches its pin: the lock in the checkout's heldout/ or in the installed data, or
    a committed version of the checkout's lock (git history; the lock re-hashed may be the
    checkout's own). None when no copy is found. The pin is one digest: it tells that a lock
    changed, and only a pinned copy tells which files."""
    key = pin_key(task_id, version)
    if key not in PINNED:
        return None
    rel = f"{task_id}/{version}.sha256"
    for text in _lock_copies(rel):
        try:
            entries = parse_lock(text, rel)
        except LockFormatError:
            continue
        if lock_digest(entries) == PINNED[key]:
            return entries
    return None


def _lock_copies(rel: str) -> Iterator[str]:
    """Texts of the lock `rel` (relative to heldout/): the package's copies, then the versions
    committed in the checkout's git history (newest first, at most 100)."""
    import subprocess

    checkout = checkout_heldout_root()
    for root in [r for r in (checkout, *installed_heldout_folders()) if r is not None]:
        try:
            yield (root / rel).read_text()
        except OSError:
            pass
    if checkout is None:
        return
    git = ["git", "-C", str(checkout.parent)]
    path = f"{checkout.name}/{rel}"
    try:
        revs = subprocess.run(
            [*git, "log", "--format=%H", "-n", "100", "--", path],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.split()  # fmt: skip
        for rev in revs:
            shown = subprocess.run(
                [*git, "show", f"{rev}:{path}"], capture_output=True, text=True, timeout=30
            )
            if shown.returncode == 0:
                yield shown.stdout
    except (OSError, subprocess.SubprocessError):
        return


def changed_files_text(task_id: str, version: str, entries: dict[str, str]) -> str:
    """The start of the message for a published set whose lock (`entries`) does not match its
    pin: the files that differ from the pinned lock's ("lbf-v1/v1/manifest.json is not
    the published file: "), or, with no pinned copy to compare with, how to find them."""
    pinned = pinned_lock_entries(task_id, version)
    if pinned is None:
        return (
            f"a file of {pin_key(task_id, version)} was changed (no copy of its pinned lock "
            "is here to tell which; `git diff heldout/` may): "
        )
    changed = sorted(r for r in set(pinned) | set(entries) if pinned.get(r) != entries.get(r))
    if not changed:
        return ""
    shown = ", ".join(changed[:5])
    more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
    verb = "is not the published file" if len(changed) == 1 else "are not the published files"
    return f"{shown}{more} {verb} (sha256 not the one the pinned lock lists): "


def check_published_files(task_id: str, folder: Path) -> None:
    """Every file of the pinned published set in `folder` against its lock (after `check_pin`):
    a `TeammateSetIntegrityError` naming the first file missing or changed."""
    key = pin_key(task_id, folder.name)
    entries = read_lock_file(heldout_root() / task_id / f"{folder.name}.sha256")
    root = heldout_root()
    for rel, digest in sorted(entries.items()):
        path = root / rel
        try:
            actual = _sha256(path.read_bytes())
        except OSError:
            raise TeammateSetIntegrityError(
                f"{rel} of the published set {key} is missing; restore heldout/ from the repository"
            ) from None
        if actual != digest:
            raise TeammateSetIntegrityError(
                f"{rel} of the published set {key} does not match its lock (changed or "
                "corrupted); restore heldout/ from the repository"
            )


def find_set(task_id: str, name: str | os.PathLike[str]) -> tuple[Path, dict[str, Any], str]:
    """(folder, manifest, its sha256) of the set `name` for `task_id`, the manifest verified and
    for this task, without building anything: what `load_set` checks first, cheap enough to
    run before an evaluation starts. Raises `TeammateSetError` (or its integrity error)."""
    folder = resolve_set_folder(task_id, name)
    manifest, digest = read_manifest(folder)
    if manifest.get("task_id") != task_id:
        raise TeammateSetError(
            f"the set in {folder} is for {manifest.get('task_id')!r}, not {task_id}; pass "
            f"--task {manifest.get('task_id')} or another set"
        )
    return folder, manifest, digest


def set_folder_task(path: str | os.PathLike[str]) -> str:
    """The task id the manifest of the set folder `path` (or its manifest.json) names, read as
    it is (not verified: `find_set` does that); a `TeammateSetError` when there is no readable
    manifest naming one."""
    folder = Path(path)
    folder = folder.parent if folder.suffix == ".json" else folder
    try:
        return str(json.loads((folder / MANIFEST).read_text())["task_id"])
    except (OSError, ValueError, KeyError):
        raise TeammateSetError(
            f"{path} is not a teammate set folder (no readable {MANIFEST})"
        ) from None


def set_shape(task: Task, name: str | os.PathLike[str]) -> tuple[int, int]:
    """(members, seatings) of the set `name` of `task`, from its verified manifest (`find_set`),
    without building a member: what sizes an evaluation before it starts."""
    _, manifest, _ = find_set(task.id, name)
    seatings = manifest.get("seatings") or default_seatings(task.id, task.env.num_agents)
    return len(manifest.get("members") or ()), len(seatings)


def load_set(task: str | Task, name: str | os.PathLike[str] = "v1") -> EvaluationSet:
    """The teammate set `name` (a version such as "v1" or "dev", or a set folder) for `task` (a
    `Task`, or a task id or alias, resolved here)."""
    from aht_bench import envs

    task = envs.task(task)
    task_id = task.id
    folder, manifest, digest = find_set(task_id, name)
    pinned = check_pin(task_id, folder, digest)
    members = manifest.get("members") or []
    if not members:
        raise TeammateSetIntegrityError(f"the set in {folder} lists no members")
    built = [_build_member(task, folder, m) for m in members]
    env = task.env
    try:
        seatings = check_seatings(
            manifest.get("seatings", default_seatings(task_id, env.num_agents)), env.num_agents
        )
    except ValueError as e:
        raise TeammateSetIntegrityError(f"the set in {folder}: {e}") from None
    return EvaluationSet(
        set_id=str(manifest.get("set_id", f"{task_id}/{folder.name}")),
        task=task,
        teammates=TeammateSet([str(m["name"]) for m in members], built),
        lower=np.array([_bound(m, "lower", folder) for m in members]),
        upper=np.array([_bound(m, "upper", folder) for m in members]),
        seatings=seatings,
        manifest_sha256=digest,
        manifest=manifest,
        pinned=pinned,
    )
