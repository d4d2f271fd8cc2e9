"""Human-proxy partners for the five Overcooked layouts: behaviour cloning on the Carroll et al.
(2019) human-human gameplay data, as in the paper's App. "Human Proxy Evaluations".

    from aht_bench.heldout import human
    human.fetch()                      # download, verify and convert the data once (cached)
    human.build("overcooked-cramped_room-v1")  # -> heldout/<that task>/human-proxy-v1/
    human.build("overcooked-cramped_room-v2")  # -> heldout/<that task>/human-proxy-v3/

Three published versions (`VERSIONS`, `ProxyVersion`), one recipe: `human-proxy-v1` on the
`overcooked-<layout>-v1` tasks, `human-proxy-v2` and `human-proxy-v3` on the
`overcooked-<layout>-v2` tasks (the game as the paper's code runs it). v2 differs from v1 only
in the task the proxies are evaluated and bounded on, the bound rule and the seat rule (below);
v3 has v2's weights and differs from it only in how an example agent counts towards the bound
(`ProxyVersion.example_upper_ci`). Their manifests list the differences under
`changes_from_human_proxy_v1`. With no version given, a task gets the newest built on its task
version (`resolve_task`: human-proxy-v1 on v1 tasks, human-proxy-v3 on v2 tasks).

Per layout, two behaviour-cloned MLPs (the usual protocol of Carroll et al.):

- `human_proxy`: cloned from the TEST split. It is the one member of the published set
  (kind `human-proxy`), with BRProx bounds lower 0 and upper, on human-proxy-v1, its own
  self-play return on the set's task (both seats the proxy; the paper normalises human-proxy
  returns this way); on human-proxy-v2, Bounds v2 (`upper_bound_sources`, `build.upper_bound`):
  the highest return of its self-play, the BC partner, the layout's paper heuristics and the
  example agents that list the task, every source recorded in the manifest.
- `bc_partner`: cloned from the TRAIN split, a partner for training ego agents; listed in the
  manifest under "bc_partner", not as a member.

**The data** ships inside the `overcooked-ai` source distribution on PyPI: two pandas pickles
(`clean_{train,test}_trials.pickle`, 76 human-human trials of about 1,200 joint steps each).
They are never committed or redistributed; `fetch` builds a local cache (default
`~/.cache/aht-bench/human_data`, or `$AHT_BENCH_HUMAN_DATA`, or `data_dir=`):

1. `python -m pip download overcooked-ai==1.1.0 --no-deps --no-binary :all:` through a
   requirements file that pins the sdist's sha256 (`--require-hashes`: pip checks the archive
   before it prepares the package's metadata, which runs its setup.py in a build environment);
   the sha256 is checked again here (`SDIST_SHA256`).
2. The two pickles, and nothing else, are read out of the tarball by exact member name (no
   `extractall`) and their sha256 checked (`PICKLES`).
3. They are unpickled by `AllowListUnpickler`, whose `find_class` resolves only the exact
   pandas/numpy (module, name) pairs in `ALLOWED_GLOBALS` and refuses any other global with a
   `HumanDataError` (a crafted pickle naming `os.system` cannot run).
4. Each frame is converted ONCE to a safe format, `clean_<split>_trials.npz` (plain numeric and
   fixed-width string arrays, read with `np.load(allow_pickle=False)`): per trial its layout,
   and per recorded state the players' positions, orientations and held items and the loose
   objects (items on counters, pot contents); per joint step the two actions and the reward.
   States are parsed with `ast.literal_eval` (no code runs). The pickles are deleted after the
   conversion; later builds read only the `.npz` files.

**Replay.** Each trial is replayed open-loop in our JaxMARL environment from its first recorded
state (`Overcooked.make_inner`), one vmapped `lax.scan` per layout, to get OUR egocentric
observation of every state the humans acted in. After every joint step the replayed state is
compared with the recorded next state: positions and held items (the `replay_match_rate` of the
manifest) and, in addition, orientations, pot contents and counter items (`full_match_rate`).
Conversion from overcooked_ai's conventions: positions are (x, y) in both; orientation and
move vectors (0,-1), (0,1), (1,0), (-1,0) are our up, down, right, left (0..3); `[0, 0]` is
stay (4) and "INTERACT" interact (5); a held or placed "dish" is our plate, a "soup" off a pot
our dish (a plated soup); a pot's soup with n < 3 onions is pot status 23 - n, a full one that
has cooked c steps is max(0, 20 - c).

Seats: the replay runs with JaxMARL agent i = the data's player i, because JaxMARL, like
overcooked_ai, resolves the two interacts of a step in agent order (when both players use one
counter in the same step the order decides who gets the item; replaying forced_coord's test
split with the players swapped diverged at the first such step and matched 49% of the steps
instead of 100%). The outputs are then put in our seat order. human-proxy-v1: on the divided
layouts seat 0 is the player in the LEFT region (the v1 env's seat rule), elsewhere seat i is
the data's player i. human-proxy-v2: seat i is the data's player i on every layout (the v2
task draws each seat's side every episode, so no side belongs to a seat). Our observations are
egocentric (own layers first; nothing else depends on the seat), so an observation does not
depend on which seat the replay gave the player; the seat order only orders the pooled BC
transitions (and so the minibatches). The replay starts from recorded states
(`make_inner`), never from a reset, so v2's random reset does not enter it: on v1 and v2 it
steps the same dynamics and returns the same observations and match rates.

Human games lasted about 1,200 steps, ours 400, and our observation's urgency channel is on in
the last 39 steps. The replayed state's `step` is therefore set to
`max(0, 400 - steps_left_in_the_trial)`: the urgency channel is on exactly when the humans had
fewer than 40 steps left, and off before.

**Behaviour cloning** (`train_bc`): an `MLPActorCritic` (value head unused) trained with Adam
on the cross-entropy of its policy logits against the human action, on both players'
transitions, every step kept (idle "stay" steps included: they are how the humans played). A
few whole trials of the training split (`BCConfig.validation_fraction`) are held out for early
stopping on their cross-entropy; the best epoch's weights are kept. Held-out action accuracy is
measured on the OTHER split (the proxy on the train split, the partner on the test split), with
the majority-action baseline next to it.

**Evaluation**: self-play of each network and the proxy with the partner, `BCConfig.episodes`
episodes per seating, both seatings, seed `BCConfig.eval_seed`, through
`aht_bench.evaluation.evaluate.cross_play` on the set's task (v2: episodes start from v2's
random object state and sides); the networks act by sampling from their logits.

The set folder holds `manifest.json` (+ `manifest.sha256`), `human_proxy.safetensors` and
`bc_partner.safetensors` (+ their JSON cards); nothing derived from the data but the trained
weights and the measured numbers. It is assembled in a temporary folder and renamed into place;
an existing set is never overwritten (rebuild elsewhere with `out=`).

May import jax, optax, numpy, pandas (to read the pickles only), the standard library and
aht_bench.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import os
import pickle
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

if TYPE_CHECKING:
    from aht_bench.envs import Task

Log = Callable[[str], None]

OVERCOOKED_AI_VERSION = "1.1.0"
SDIST_FILENAME = f"overcooked_ai-{OVERCOOKED_AI_VERSION}.tar.gz"
SDIST_SHA256 = "478bf319274bdb6c5bede8048ee901d088912353111ab85e9fb2bf389c6ccddf"
_PICKLE_FOLDER = f"overcooked_ai-{OVERCOOKED_AI_VERSION}/src/overcooked_ai_py/data/human_data"
SPLITS = ("train", "test")
# split -> (member of the sdist, sha256): the two files read out of the tarball.
PICKLES: dict[str, tuple[str, str]] = {
    "train": (
        f"{_PICKLE_FOLDER}/clean_train_trials.pickle",
        "28659cfd09ee033d82b56bed905b239f078877e1b09d1f1b916e4bc0480ca4fa",
    ),
    "test": (
        f"{_PICKLE_FOLDER}/clean_test_trials.pickle",
        "59979552a053f1efe762de976f37dd83e269d70d19b67613c61e856c86705666",
    ),
}
DATA_ENV = "AHT_BENCH_HUMAN_DATA"
DEFAULT_DATA_DIR = "~/.cache/aht-bench/human_data"
SAFE_FORMAT = "aht-bench-human-data"
SAFE_FORMAT_VERSION = 1


# (module, name) a pickle may name -> (module, name) imported in its place. The 2019 pickles
# (pandas 0.2x, numpy 1.x) name the first group; two of those moved since: numpy.core is
# numpy._core in numpy 2, and pandas 2 folded Int64Index into Index (pandas' own pickle_compat
# maps it the same way). The second group is what the installed pandas 2 / numpy 2 write for a
# frame with the same column dtypes (the tests pickle such a stand-in frame).
_LEGACY_GLOBALS: dict[tuple[str, str], tuple[str, str]] = {
    ("pandas.core.frame", "DataFrame"): ("pandas.core.frame", "DataFrame"),
    ("pandas.core.internals.managers", "BlockManager"): (
        "pandas.core.internals.managers",
        "BlockManager",
    ),
    ("pandas.core.indexes.base", "_new_Index"): ("pandas.core.indexes.base", "_new_Index"),
    ("pandas.core.indexes.base", "Index"): ("pandas.core.indexes.base", "Index"),
    ("pandas.core.indexes.numeric", "Int64Index"): ("pandas.core.indexes.base", "Index"),
    ("numpy", "ndarray"): ("numpy", "ndarray"),
    ("numpy", "dtype"): ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "_reconstruct"),
}
_CURRENT_GLOBALS: dict[tuple[str, str], tuple[str, str]] = {
    ("numpy._core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.numeric", "_frombuffer"): ("numpy._core.numeric", "_frombuffer"),
    ("pandas._libs.internals", "_unpickle_block"): ("pandas._libs.internals", "_unpickle_block"),
    ("builtins", "slice"): ("builtins", "slice"),
}
ALLOWED_GLOBALS: dict[tuple[str, str], tuple[str, str]] = _LEGACY_GLOBALS | _CURRENT_GLOBALS

# Columns of the frames that the conversion reads.
_COLUMNS = (
    "layout_name",
    "layout",
    "workerid_num",
    "cur_gameloop",
    "state",
    "next_state",
    "joint_action",
    "reward",
)
# overcooked_ai direction vectors in our (JaxMARL's) order: up, down, right, left.
_DIRECTIONS = ((0, -1), (0, 1), (1, 0), (-1, 0))
STAY, INTERACT = 4, 5
# Item codes of the safe format: what a player holds or what lies on a cell.
NOTHING, ONION_ITEM, PLATE_ITEM, SOUP_ITEM = 0, 1, 2, 3
_HELD_NAMES = {"onion": ONION_ITEM, "dish": PLATE_ITEM, "soup": SOUP_ITEM}
# Cells of the layout grid as the data writes them -> our cell kinds (overcooked.FLOOR, ...).
_GRID_KINDS = {" ": 0, "1": 0, "2": 0, "X": 1, "O": 2, "D": 3, "P": 4, "S": 5}


@dataclasses.dataclass(frozen=True)
class ProxyVersion:
    """One published human-proxy version: the task it is built and measured on, its seat rule.

    Everything else (data, splits, BC config, seeds, evaluation protocol) is the same recipe
    in every version.
    """

    name: str
    """The set's version, its folder under heldout/<task_id>/."""
    task_version: int
    """Built, evaluated and bounded on `overcooked-<layout>-v<task_version>`."""
    seats_by_side: bool
    """Divided layouts: seat 0 is the player in the left region (v1's env puts seat 0 there);
    False: seat i is the data's player i everywhere."""
    seats: str
    """The seat rule in words (the manifest's `source.seats`)."""
    changes: tuple[str, ...] = ()
    """How it differs from human-proxy-v1 (the manifest's `changes_from_human_proxy_v1`; not
    written for v1 itself)."""
    bounds_v2: bool = False
    """Upper bound by Bounds v2 (`upper_bound_sources`: the highest return of any partner
    measured with the proxy); False: the proxy's self-play return (v1)."""
    example_upper_ci: bool = False
    """Bounds v2 only. True: an example agent's candidate is the upper end of its 95% CI
    under `aht-bench evaluate`'s default protocol (`build._example_upper_returns`, the rule of
    the v2 heldout sets), so no example agent scores above 1 at its upper CI; False
    (human-proxy-v2): its mean return over the build's episodes."""

    def task_id(self, layout: str) -> str:
        return f"overcooked-{layout}-v{self.task_version}"

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.task_id(layout) for layout in DATA_LAYOUT_NAMES)


# Our layout name -> the layout's name in the human data.
DATA_LAYOUT_NAMES: dict[str, str] = {
    "cramped_room": "cramped_room",
    "asymm_advantages": "asymmetric_advantages",
    "coord_ring": "coordination_ring",
    "forced_coord": "random0",
    "counter_circuit": "random3",
}
_V2_CHANGES = (
    "task: built, evaluated and bounded on overcooked-<layout>-v2 (sides drawn per "
    "episode on the divided layouts, random pot status and held items at every reset, "
    "pile pickups only shaped); the evaluation episodes therefore start from random "
    "object states",
    "bounds: Bounds v2 (issue 27; docs/heldout.md): the upper bound is the highest mean "
    "return measured with the proxy during the build, over its self-play, the BC "
    "partner, the layout's paper heuristics and the example agents of agents/examples/ "
    "that list the task, each in every seating (members[0].bounds.upper_candidates, "
    "upper_set_by); v1's bound is the proxy's self-play return alone",
    "seats: seat i is the data's player i on every layout (v1: on asymm_advantages and "
    "forced_coord seat 0 is the left player); on those two layouts this changes only "
    "the order of the pooled BC transitions, hence the minibatches, hence the weights; "
    "on the three shared layouts the BC inputs are those of v1",
    "unchanged: the data (overcooked-ai 1.1.0 pickles, same sha256), the splits, the "
    "open-loop replay from each trial's recorded first state (the random reset never "
    "enters; observations and match rates are v1's), BCConfig, the seeds (proxy "
    "seed, partner seed + 1) and the evaluation protocol (episodes per seating, seed)",
)
"""How human-proxy-v2 differs from human-proxy-v1 (v3 adds one line)."""

VERSIONS: dict[str, ProxyVersion] = {
    "human-proxy-v1": ProxyVersion(
        name="human-proxy-v1",
        task_version=1,
        seats_by_side=True,
        seats="divided layouts: seat 0 is the player in the left region; otherwise seat i is "
        "the data's player i",
    ),
    "human-proxy-v2": ProxyVersion(
        name="human-proxy-v2",
        task_version=2,
        seats_by_side=False,
        seats="seat i is the data's player i on every layout (the v2 task draws each seat's "
        "side per episode, so no side belongs to a seat); the seat only orders the pooled "
        "transitions, the observations are egocentric",
        changes=_V2_CHANGES,
        bounds_v2=True,
    ),
    "human-proxy-v3": ProxyVersion(
        name="human-proxy-v3",
        task_version=2,
        seats_by_side=False,
        seats="seat i is the data's player i on every layout (as human-proxy-v2)",
        changes=(
            *_V2_CHANGES,
            "bounds (human-proxy-v3, the one change from human-proxy-v2): an example agent's "
            "candidate is the upper end of its per-member 95% CI as `aht-bench evaluate` "
            "computes it with its default protocol (64 episodes per seating, seed 0; "
            "aht_bench.heldout.build._example_upper_returns, the rule of the v2 heldout sets), "
            "not its mean over the build's 128 episodes per seating, plus the rounding step "
            "(rounding_raise) that keeps its normalised upper CI at most 1. On human-proxy-v2 "
            "agents/examples/heuristic_agent.py scored above 1 at its upper CI on "
            "asymm_advantages and forced_coord "
            "(benchmarks/results/example_agents_v2-human-proxy-v2.json). "
            "Data, replay, BC recipe, seeds and weights are human-proxy-v2's",
        ),
        bounds_v2=True,
        example_upper_ci=True,
    ),
}
# Our task id (both task versions) -> the layout's name in the human data.
DATA_LAYOUTS: dict[str, str] = {
    v.task_id(layout): name for v in VERSIONS.values() for layout, name in DATA_LAYOUT_NAMES.items()
}


class HumanDataError(ValueError):
    """Human gameplay data that cannot be fetched, verified, read or replayed."""


# ---------------------------------------------------------------------------- fetching


def data_folder(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache folder: `data_dir`, else $AHT_BENCH_HUMAN_DATA, else ~/.cache/aht-bench/...."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DATA_DIR).expanduser()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256(path: Path, expected: str, what: str) -> None:
    """Raise `HumanDataError` unless the file at `path` hashes to `expected`."""
    digest = sha256_file(path)
    if digest != expected:
        raise HumanDataError(
            f"{path} ({what}) has sha256 {digest}, expected {expected}: the file is corrupted "
            f"or not the pinned overcooked-ai {OVERCOOKED_AI_VERSION} release; delete it and "
            "run fetch again"
        )


def _download_sdist(folder: Path, log: Log) -> Path:
    """The pinned sdist in `folder`, downloaded with pip if it is not there yet."""
    path = folder / SDIST_FILENAME
    if path.is_file():
        check_sha256(path, SDIST_SHA256, "overcooked-ai sdist")
        return path
    log(f"downloading overcooked-ai=={OVERCOOKED_AI_VERSION} (sdist) with pip into {folder}")
    with tempfile.TemporaryDirectory(dir=folder, prefix=".pip-") as tmp:
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text(
            f"overcooked-ai=={OVERCOOKED_AI_VERSION} --hash=sha256:{SDIST_SHA256}\n"
        )
        target = Path(tmp) / "dl"
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--require-hashes",
            "-r",
            str(requirements),
            "-d",
            str(target),
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise HumanDataError(
                f"`pip download overcooked-ai=={OVERCOOKED_AI_VERSION}` failed (exit "
                f"{done.returncode}): {' | '.join(tail)}; check the network, or put "
                f"{SDIST_FILENAME} (sha256 {SDIST_SHA256}) into {folder} yourself"
            )
        got = target / SDIST_FILENAME
        if not got.is_file():
            raise HumanDataError(f"pip did not save {SDIST_FILENAME} (got {os.listdir(target)})")
        check_sha256(got, SDIST_SHA256, "overcooked-ai sdist")
        os.replace(got, path)
    return path


def extract_member(tar_path: Path, member: str, dest: Path) -> Path:
    """Copy one regular-file member of a tarball to `dest` (never `extractall`)."""
    with tarfile.open(tar_path, "r:gz") as archive:
        try:
            info = archive.getmember(member)
        except KeyError:
            raise HumanDataError(f"{tar_path} has no member {member}") from None
        if not info.isfile():
            raise HumanDataError(f"{member} in {tar_path} is not a regular file")
        source = archive.extractfile(info)
        if source is None:
            raise HumanDataError(f"cannot read {member} from {tar_path}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.tmp")
        with source, open(tmp, "wb") as out:
            shutil.copyfileobj(source, out)
        os.replace(tmp, dest)
    return dest


class AllowListUnpickler(pickle.Unpickler):
    """Unpickles only objects built from the (module, name) pairs of `ALLOWED_GLOBALS`.

    Every other global (functions such as `os.system`, any class) is refused with a
    `HumanDataError` before it is imported, so loading cannot run code outside pandas' and
    numpy's constructors of frames, indexes and arrays.
    """

    def __init__(self, file: Any, source: str = "pickle") -> None:
        super().__init__(file)
        self.source = source

    def find_class(self, module: str, name: str) -> Any:
        target = ALLOWED_GLOBALS.get((module, name))
        if target is None:
            allowed = ", ".join(f"{m}.{n}" for m, n in ALLOWED_GLOBALS)
            raise HumanDataError(
                f"{self.source} names the global {module}.{name}, which is not on the "
                f"allow-list of pandas/numpy names the human data needs ({allowed}); refusing "
                "to load it: it is not the Carroll et al. data file (or it was tampered with)"
            )
        return getattr(importlib.import_module(target[0]), target[1])

    def persistent_load(self, pid: Any) -> Any:
        raise HumanDataError(f"{self.source} uses persistent ids; the human data does not")


def load_pickle(path: Path, expected_sha256: str | None = None) -> Any:
    """The pandas DataFrame in `path`, read with `AllowListUnpickler` (sha256 checked first)."""
    import pandas as pd

    if expected_sha256 is not None:
        check_sha256(path, expected_sha256, "human data pickle")
    with open(path, "rb") as f:
        frame = AllowListUnpickler(f, source=str(path)).load()
    if not isinstance(frame, pd.DataFrame):
        raise HumanDataError(f"{path} holds a {type(frame).__name__}, not a pandas DataFrame")
    missing = [c for c in _COLUMNS if c not in frame.columns]
    if missing:
        raise HumanDataError(f"{path}: the frame lacks the columns {missing}")
    return frame


def fetch(data_dir: str | os.PathLike[str] | None = None, log: Log = print) -> Path:
    """Download, verify and convert the human data once; returns the cache folder.

    The folder then holds the sdist and `clean_{train,test}_trials.npz` (the safe format). A
    folder that already holds both `.npz` files is returned as it is.
    """
    folder = data_folder(data_dir)
    if all((folder / _npz_name(s)).is_file() for s in SPLITS):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    sdist = _download_sdist(folder, log)
    for split in SPLITS:
        if (folder / _npz_name(split)).is_file():
            continue
        member, digest = PICKLES[split]
        raw = folder / f".{Path(member).name}"
        try:
            extract_member(sdist, member, raw)
            check_sha256(raw, digest, f"{split} split pickle")
            start = time.perf_counter()
            frame = load_pickle(raw)
            data = convert(frame)
            save_data(folder / _npz_name(split), data)
        finally:
            raw.unlink(missing_ok=True)
        log(
            f"converted the {split} split: {data.num_trials} trials, "
            f"{len(data.reward)} joint steps ({time.perf_counter() - start:.0f}s)"
        )
    return folder


# ---------------------------------------------------------------------------- safe format


def _npz_name(split: str) -> str:
    return f"clean_{split}_trials.npz"


@dataclasses.dataclass(frozen=True)
class HumanData:
    """One split of the human data, as plain arrays (the safe format).

    Trial i has `n_i` joint steps and `n_i + 1` states: its states are rows
    `state_start[i] : state_start[i + 1]` of the state arrays, its steps rows
    `state_start[i] - i : state_start[i + 1] - i - 1` of the step arrays (`steps(i)`).
    Players are in the data's order (player 0 is "1" in the layout file).
    """

    layout: np.ndarray  # (trials,) str: the layout's name in the data, e.g. "random0"
    worker: np.ndarray  # (trials,) int64: the data's workerid_num
    grid: np.ndarray  # (trials,) str: the layout's rows as recorded, joined by "\n"
    state_start: np.ndarray  # (trials + 1,) int64: offsets into the state arrays
    pos: np.ndarray  # (states, 2, 2) int16: each player's (x, y)
    dir: np.ndarray  # (states, 2) int8: each player's orientation, 0..3 = up, down, right, left
    held: np.ndarray  # (states, 2) int8: NOTHING, ONION_ITEM, PLATE_ITEM or SOUP_ITEM
    object_state: np.ndarray  # (objects,) int64: the state row each loose object belongs to
    object_pos: np.ndarray  # (objects, 2) int16: (x, y) of the object
    object_kind: np.ndarray  # (objects,) int8: ONION_ITEM, PLATE_ITEM or SOUP_ITEM
    object_onions: np.ndarray  # (objects,) int8: onions in a soup (0 for other items)
    object_cook: np.ndarray  # (objects,) int16: steps a soup has cooked (0 for other items)
    action: np.ndarray  # (steps, 2) int8: each player's action, 0..5 (our action indices)
    reward: np.ndarray  # (steps,) float32: the data's team reward (5 per soup)

    @property
    def num_trials(self) -> int:
        return len(self.layout)

    def states(self, i: int) -> slice:
        return slice(int(self.state_start[i]), int(self.state_start[i + 1]))

    def steps(self, i: int) -> slice:
        return slice(int(self.state_start[i]) - i, int(self.state_start[i + 1]) - i - 1)

    def trials_of(self, layout: str) -> list[int]:
        """Indices of the trials on `layout` (the data's layout name)."""
        return [i for i in range(self.num_trials) if self.layout[i] == layout]


def save_data(path: Path, data: HumanData) -> None:
    """Write `data` to `path` (.npz, no pickled objects), atomically."""
    arrays = {f.name: np.asarray(getattr(data, f.name)) for f in dataclasses.fields(data)}
    arrays["format"] = np.asarray(SAFE_FORMAT)
    arrays["format_version"] = np.asarray(SAFE_FORMAT_VERSION)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.npz")
    np.savez_compressed(tmp, **arrays)  # type: ignore[arg-type]
    os.replace(tmp, path)


def load_data(path: Path) -> HumanData:
    """Read a split written by `save_data` with `allow_pickle=False`."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise HumanDataError(
            f"cannot read {path} ({e}); delete it and run fetch again to rebuild it"
        ) from None
    if str(arrays.get("format")) != SAFE_FORMAT or int(arrays.get("format_version", -1)) != (
        SAFE_FORMAT_VERSION
    ):
        raise HumanDataError(
            f"{path} is not an {SAFE_FORMAT} v{SAFE_FORMAT_VERSION} file; delete it and run "
            "fetch again to rebuild it"
        )
    names = [f.name for f in dataclasses.fields(HumanData)]
    missing = [n for n in names if n not in arrays]
    if missing:
        raise HumanDataError(f"{path} lacks the arrays {missing}; delete it and run fetch again")
    return HumanData(**{n: arrays[n] for n in names})


def load_split(split: str, data_dir: str | os.PathLike[str] | None = None) -> HumanData:
    """The converted `split` ("train" or "test") from the cache (run `fetch` first)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    path = data_folder(data_dir) / _npz_name(split)
    if not path.is_file():
        raise HumanDataError(
            f"{path} is missing: run `aht_bench.heldout.human.fetch()` first (it downloads the "
            "overcooked-ai sdist from PyPI and converts the human data once)"
        )
    return load_data(path)


# ---------------------------------------------------------------------------- conversion


def _direction(vec: Any, what: str) -> int:
    key = tuple(int(v) for v in vec)
    if key not in _DIRECTIONS:
        raise HumanDataError(f"{what}: unknown direction {list(vec)!r}")
    return _DIRECTIONS.index(key)


def parse_action(action: Any) -> int:
    """One overcooked_ai action (a direction vector, [0, 0] or "INTERACT") -> our index 0..5."""
    if isinstance(action, str):
        if action.upper() == "INTERACT":
            return INTERACT
        raise HumanDataError(f"unknown action {action!r}")
    if tuple(int(v) for v in action) == (0, 0):
        return STAY
    return _direction(action, "action")


def _item(name: Any, what: str) -> int:
    if name not in _HELD_NAMES:
        raise HumanDataError(f"{what}: unknown object {name!r} (expected onion, dish or soup)")
    return _HELD_NAMES[name]


def parse_state(text: str) -> tuple[list[Any], list[tuple[int, int, int, int, int]]]:
    """An overcooked_ai state (its repr) -> (players [(x, y, dir, held)], objects
    [(x, y, kind, onions, cook_time)]). Read with `ast.literal_eval`: no code runs."""
    try:
        state = ast.literal_eval(text)
        players = []
        for p in state["players"]:
            held = p.get("held_object")
            item = NOTHING if held is None else _item(held["name"], "held object")
            x, y = (int(v) for v in p["position"])
            players.append((x, y, _direction(p["orientation"], "orientation"), item))
        objects = []
        for obj in state["objects"].values():
            kind = _item(obj["name"], "object")
            x, y = (int(v) for v in obj["position"])
            onions = cook = 0
            if kind == SOUP_ITEM:
                soup, onions, cook = obj["state"]
                if soup != "onion":
                    raise HumanDataError(f"a {soup!r} soup; only onion soups exist here")
            objects.append((x, y, kind, int(onions), int(cook)))
    except (ValueError, SyntaxError, KeyError, TypeError) as e:
        raise HumanDataError(f"cannot parse the recorded state {text[:80]!r}...: {e}") from None
    if len(players) != 2:
        raise HumanDataError(f"a state with {len(players)} players; the data has 2")
    return players, objects


def convert(frame: Any) -> HumanData:
    """A human-data DataFrame -> `HumanData`. A trial is one (layout_name, workerid_num);
    its rows are ordered by `cur_gameloop`, which must count up by one, and each row's
    `next_state` must be the next row's `state`. Trials are sorted by (layout, worker)."""
    layouts, workers, grids, state_start = [], [], [], [0]
    pos, dirs, held, objects, actions, rewards = [], [], [], [], [], []
    keys = sorted(
        {(str(a), int(b)) for a, b in zip(frame["layout_name"], frame["workerid_num"], strict=True)}
    )
    for layout, worker in keys:
        rows = frame[(frame["layout_name"] == layout) & (frame["workerid_num"] == worker)]
        rows = rows.sort_values("cur_gameloop")
        what = f"trial {layout}/worker {worker}"
        loops = rows["cur_gameloop"].to_numpy()
        if len(rows) < 1 or not np.all(np.diff(loops) == 1):
            raise HumanDataError(f"{what}: its game loops do not count up by one")
        texts = list(rows["state"]) + [rows["next_state"].iloc[-1]]
        if any(
            a != b
            for a, b in zip(rows["next_state"].iloc[:-1], rows["state"].iloc[1:], strict=True)
        ):
            raise HumanDataError(f"{what}: a row's next_state is not the next row's state")
        for text in texts:
            players, objs = parse_state(text)
            pos.append([(x, y) for x, y, _, _ in players])
            dirs.append([d for _, _, d, _ in players])
            held.append([h for _, _, _, h in players])
            objects += [(len(pos) - 1, *o) for o in objs]
        for text in rows["joint_action"]:
            joint = ast.literal_eval(text) if isinstance(text, str) else text
            actions.append([parse_action(a) for a in joint])
        rewards += [float(r) for r in rows["reward"]]
        grid = rows["layout"].iloc[0]
        grid = ast.literal_eval(grid) if isinstance(grid, str) else grid
        layouts.append(layout)
        workers.append(worker)
        grids.append("\n".join(str(line) for line in grid))
        state_start.append(len(pos))
    obj = np.asarray(objects, np.int64).reshape(-1, 6)
    return HumanData(
        layout=np.asarray(layouts, dtype=str),
        worker=np.asarray(workers, np.int64),
        grid=np.asarray(grids, dtype=str),
        state_start=np.asarray(state_start, np.int64),
        pos=np.asarray(pos, np.int16).reshape(-1, 2, 2),
        dir=np.asarray(dirs, np.int8).reshape(-1, 2),
        held=np.asarray(held, np.int8).reshape(-1, 2),
        object_state=obj[:, 0],
        object_pos=obj[:, 1:3].astype(np.int16),
        object_kind=obj[:, 3].astype(np.int8),
        object_onions=obj[:, 4].astype(np.int8),
        object_cook=obj[:, 5].astype(np.int16),
        action=np.asarray(actions, np.int8).reshape(-1, 2),
        reward=np.asarray(rewards, np.float32),
    )


# ---------------------------------------------------------------------------- replay


@dataclasses.dataclass(frozen=True)
class Replay:
    """Trials replayed in our environment: observations and actions per seat, and the check."""

    obs: np.ndarray  # (steps, 2, obs_dim) uint8: each seat's observation before the step
    actions: np.ndarray  # (steps, 2) int32: each seat's human action (seat order: `seat_order`)
    trial: np.ndarray  # (steps,) int64: the data's trial index of each step
    matched: np.ndarray  # (steps,) bool: positions and held items after the step match
    full_match: np.ndarray  # (steps,) bool: ...and orientations, pot contents, counter items

    @property
    def match_rate(self) -> float:
        return float(self.matched.mean()) if len(self.matched) else float("nan")

    @property
    def full_match_rate(self) -> float:
        return float(self.full_match.mean()) if len(self.full_match) else float("nan")


def check_grid(env: Any, grid: str) -> None:
    """Raise `HumanDataError` unless the recorded layout grid is `env`'s layout."""
    rows = grid.split("\n")
    ok = len(rows) == env.height and all(len(r) == env.width for r in rows)
    if ok:
        kinds = np.array([[_GRID_KINDS.get(c, -1) for c in r] for r in rows])
        ok = bool(np.array_equal(kinds, env.kinds))
    if not ok:
        raise HumanDataError(
            f"the recorded layout\n{grid}\nis not {env.task_id}'s layout; check DATA_LAYOUTS"
        )


def seat_order(env: Any, pos0: np.ndarray, by_side: bool) -> np.ndarray:
    """seat -> data player. `by_side` (human-proxy-v1): on divided layouts seat 0 is the player
    in the left region; otherwise, and on every layout without `by_side`, seat i is player i."""
    if not (by_side and env.divided):
        return np.array([0, 1])
    left = {tuple(int(v) for v in c) for c in env.spawn_cells[0]}
    in_left = [tuple(int(v) for v in p) in left for p in pos0]
    if in_left == [True, False]:
        return np.array([0, 1])
    if in_left == [False, True]:
        return np.array([1, 0])
    raise HumanDataError(f"{env.task_id}: the players start at {pos0.tolist()}, not one per side")


def _jax_items(env_module: Any) -> np.ndarray:
    """Safe-format item code -> JaxMARL object id (NOTHING, onion, plate, dish)."""
    return np.array([env_module.EMPTY, env_module.ONION, env_module.PLATE, env_module.DISH])


def _pot_status(onions: np.ndarray, cook: np.ndarray) -> np.ndarray:
    """overcooked_ai soup in a pot -> JaxMARL pot status (23 empty ... 0 ready)."""
    return np.where(onions < 3, 23 - onions, np.maximum(0, 20 - cook))


def _expected(env: Any, data: HumanData, i: int) -> dict[str, np.ndarray]:
    """Trial i's recorded states in our terms, players in the data's order: pos, dir, inv
    (JaxMARL ids),
    pot status (states, pots), counter items (states, H, W) as JaxMARL ids (0 = bare)."""
    from aht_bench.envs import overcooked as oc

    rows = data.states(i)
    first, n = rows.start, rows.stop - rows.start
    items = _jax_items(oc)
    pots = np.full((n, len(env.pot_pos)), oc.POT_EMPTY_STATUS, np.int64)
    counters = np.zeros((n, env.height, env.width), np.int64)
    sel = (data.object_state >= rows.start) & (data.object_state < rows.stop)
    s = data.object_state[sel] - first
    xy = data.object_pos[sel].astype(np.int64)
    kind = data.object_kind[sel].astype(np.int64)
    onions = data.object_onions[sel].astype(np.int64)
    cook = data.object_cook[sel].astype(np.int64)
    pot_index = {(int(x), int(y)): k for k, (x, y) in enumerate(env.pot_pos)}
    at_pot = np.array([(int(x), int(y)) in pot_index for x, y in xy], bool).reshape(-1)
    if np.any(at_pot & (kind != SOUP_ITEM)):
        raise HumanDataError(f"trial {i}: an item other than a soup lies in a pot")
    k = np.array([pot_index.get((int(x), int(y)), -1) for x, y in xy], np.int64).reshape(-1)
    pots[s[at_pot], k[at_pot]] = _pot_status(onions[at_pot], cook[at_pot])
    loose = ~at_pot
    lx, ly = xy[loose, 0], xy[loose, 1]
    if np.any(env.kinds[ly, lx] != oc.COUNTER):
        raise HumanDataError(f"trial {i}: a loose item lies off the counters")
    counters[s[loose], ly, lx] = items[kind[loose]]
    return {
        "pos": data.pos[rows].astype(np.int64),
        "dir": data.dir[rows].astype(np.int64),
        "inv": items[data.held[rows].astype(np.int64)],
        "pots": pots,
        "counters": counters,
    }


def _start_inner(env: Any, expected: dict[str, np.ndarray], step: int) -> Any:
    """The JaxMARL state of a trial's first recorded state (`make_inner`), validated."""
    from aht_bench.envs import overcooked as oc
    from aht_bench.envs.core import EnvState, InvalidStateError

    counters = expected["counters"][0]

    def where(item: int) -> np.ndarray:
        y, x = np.nonzero(counters == item)
        return np.stack([x, y], axis=1)

    inner = env.make_inner(
        expected["pos"][0],
        expected["dir"][0],
        expected["inv"][0],
        expected["pots"][0],
        step,
        where(oc.ONION),
        where(oc.PLATE),
        where(oc.DISH),
    )
    state = EnvState(inner=inner, episode_return=jnp.zeros((2,), jnp.float32))
    try:
        env.validate(state)
    except InvalidStateError as e:
        raise HumanDataError(
            f"a trial's first state is not a state of {env.task_id}: {e}"
        ) from None
    return inner


def obs_steps(num_steps: int, horizon: int) -> np.ndarray:
    """The `step` our observation shows at each of a trial's `num_steps` decision points:
    `max(0, horizon - steps_left)`, so the urgency channel is on when fewer than 40 are left."""
    left = num_steps - np.arange(num_steps)
    return np.maximum(0, horizon - left).astype(np.int32)


def replay(env: Any, data: HumanData, trials: list[int], *, seats_by_side: bool) -> Replay:
    """Replay `trials` of `data` open-loop in `env` (see the module docstring); the outputs are
    in seat order, `seat_order(env, first positions, seats_by_side)` (`ProxyVersion`)."""
    from aht_bench.envs import overcooked as oc

    if not trials:
        raise HumanDataError(f"no trials to replay for {env.task_id}")
    orders, expected, starts, lengths = [], [], [], []
    for i in trials:
        check_grid(env, str(data.grid[i]))
        order = seat_order(env, data.pos[data.states(i)][0], seats_by_side)
        exp = _expected(env, data, i)
        n = data.steps(i).stop - data.steps(i).start
        orders.append(order)
        expected.append(exp)
        lengths.append(n)
        starts.append(_start_inner(env, exp, int(obs_steps(n, env.horizon)[0])))
    longest = max(lengths)
    acts = np.full((len(trials), longest, 2), STAY, np.int32)
    steps = np.zeros((len(trials), longest), np.int32)
    for b, (i, n) in enumerate(zip(trials, lengths, strict=True)):
        acts[b, :n] = data.action[data.steps(i)]  # JaxMARL agent i = the data's player i
        steps[b, :n] = obs_steps(n, env.horizon)
    inner0 = jax.tree.map(lambda *x: jnp.stack(x), *starts)
    out = _replay_scan(env)(inner0, jnp.asarray(acts), jnp.asarray(steps))
    obs, pos, dirs, inv, pots, grid = (np.asarray(x) for x in out)

    counter_cells = env.kinds == oc.COUNTER
    bare = np.where(np.isin(grid, (oc.ONION, oc.PLATE, oc.DISH)), grid, 0)
    all_obs, all_acts, all_trial, matched, full = [], [], [], [], []
    for b, (i, exp, n, order) in enumerate(zip(trials, expected, lengths, orders, strict=True)):
        ok = np.all(pos[b, :n] == exp["pos"][1:], axis=(1, 2)) & np.all(
            inv[b, :n] == exp["inv"][1:], axis=1
        )
        same_counters = np.all((bare[b, :n] == exp["counters"][1:]) | ~counter_cells, axis=(1, 2))
        ok_full = (
            ok
            & np.all(dirs[b, :n] == exp["dir"][1:], axis=1)
            & np.all(pots[b, :n] == exp["pots"][1:], axis=1)
            & same_counters
        )
        all_obs.append(obs[b, :n][:, order])  # players -> our seats
        all_acts.append(acts[b, :n][:, order])
        all_trial.append(np.full(n, i, np.int64))
        matched.append(ok)
        full.append(ok_full)
    return Replay(
        obs=np.concatenate(all_obs),
        actions=np.concatenate(all_acts),
        trial=np.concatenate(all_trial),
        matched=np.concatenate(matched),
        full_match=np.concatenate(full),
    )


def _replay_scan(env: Any) -> Callable[..., Any]:
    """jit(vmap over trials of a scan over steps): observations before each joint action and
    the state after it (positions, orientations, inventories, pot statuses, grid objects)."""
    from aht_bench.envs import overcooked as oc
    from aht_bench.envs.core import EnvState

    pad = oc.AGENT_VIEW_SIZE - 1
    h, w = env.height, env.width
    pot_x = jnp.asarray(env.pot_pos[:, 0].astype(np.int32)) + pad
    pot_y = jnp.asarray(env.pot_pos[:, 1].astype(np.int32)) + pad
    key = jax.random.PRNGKey(0)  # Overcooked steps are deterministic

    def _env_step(inner: Any, x: tuple[jax.Array, jax.Array]) -> tuple[Any, tuple[Any, ...]]:
        actions, step = x
        state = EnvState(
            inner=inner.replace(step=step), episode_return=jnp.zeros((2,), jnp.float32)
        )
        obs = env.observe(state).obs.astype(jnp.uint8)
        nxt = env.step(key, state, actions)[0].inner
        maze = nxt.maze_map
        out = (
            obs,
            nxt.agent_pos.astype(jnp.int32),
            nxt.agent_dir_idx.astype(jnp.int32),
            nxt.agent_inv.astype(jnp.int32),
            maze[pot_y, pot_x, 2].astype(jnp.int32),
            maze[pad : pad + h, pad : pad + w, 0].astype(jnp.int32),
        )
        return nxt, out

    def _trial(inner: Any, actions: jax.Array, steps: jax.Array) -> tuple[Any, ...]:
        return jax.lax.scan(_env_step, inner, (actions, steps))[1]

    return jax.jit(jax.vmap(_trial))


# ---------------------------------------------------------------------------- behaviour cloning


@dataclasses.dataclass(frozen=True)
class BCConfig:
    """Behaviour cloning and evaluation of the human proxies."""

    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the actor (and of the unused critic) MLP."""
    learning_rate: float = 1e-3
    """Adam step size."""
    batch_size: int = 256
    """Transitions per gradient step."""
    max_epochs: int = 60
    """Upper limit on passes over the training transitions."""
    patience: int = 6
    """Stop after this many epochs without a lower validation cross-entropy."""
    validation_fraction: float = 0.15
    """Share of the split's trials (at least one) held out for early stopping."""
    episodes: int = 128
    """Evaluation episodes per seating (self-play and proxy-with-partner returns)."""
    eval_seed: int = 0
    """Seed of the evaluation episodes."""


def _logits(network: Any, params: Any, obs: jax.Array) -> jax.Array:
    """Policy logits (n, A) for uint8 observations (n, obs_dim)."""
    out = jax.vmap(lambda o: network.evaluate(params, (), o)[0])(obs.astype(jnp.float32))
    return out


def cross_entropy(logits: jax.Array, actions: jax.Array) -> jax.Array:
    """Mean of -log softmax(logits)[action] over the batch: logits (n, A), actions (n,)."""
    chex_ok = logits.ndim == 2 and actions.shape == logits.shape[:1]
    if not chex_ok:
        raise ValueError(f"logits {logits.shape} and actions {actions.shape} do not fit")
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, actions[:, None], axis=1))


def evaluate_bc(
    network: Any, params: Any, obs: np.ndarray, actions: np.ndarray, chunk: int = 8192
) -> dict[str, float]:
    """Action accuracy (argmax of the logits) and cross-entropy on (n, obs_dim) uint8
    observations and (n,) actions, with the majority-action baseline accuracy."""
    fn = jax.jit(lambda p, o: _logits(network, p, o))
    correct, nll = 0, 0.0
    for s in range(0, len(actions), chunk):
        logits = fn(params, jnp.asarray(obs[s : s + chunk]))
        a = jnp.asarray(actions[s : s + chunk], jnp.int32)
        correct += int(jnp.sum(jnp.argmax(logits, axis=1) == a))
        nll += float(cross_entropy(logits, a)) * len(a)
    counts = np.bincount(actions.astype(np.int64), minlength=network.num_actions)
    return {
        "action_accuracy": correct / len(actions),
        "cross_entropy": nll / len(actions),
        "majority_action_accuracy": float(counts.max() / len(actions)),
        "transitions": len(actions),
    }


def train_bc(
    key: jax.Array,
    network: Any,
    obs: np.ndarray,
    actions: np.ndarray,
    val_obs: np.ndarray,
    val_actions: np.ndarray,
    config: BCConfig,
    log: Log = print,
) -> tuple[Any, dict[str, Any]]:
    """Behaviour cloning: Adam on the cross-entropy of `network`'s logits against `actions`
    ((n,) in 0..A-1, for uint8 observations (n, obs_dim)), early-stopped on the validation
    cross-entropy. Returns (the best epoch's params, a record of the run)."""
    import optax

    from aht_bench.training.rollout import init_params

    if obs.shape[0] != actions.shape[0] or val_obs.shape[0] != val_actions.shape[0]:
        raise ValueError("observations and actions must have the same number of rows")
    n = len(actions)
    batch = min(config.batch_size, n)
    num_batches = n // batch
    key, init_key = jax.random.split(key)
    params = init_params(network, init_key)
    optimizer = optax.adam(config.learning_rate)
    opt_state = optimizer.init(params)
    obs_d, act_d = jnp.asarray(obs), jnp.asarray(actions, jnp.int32)
    val_obs_d, val_act_d = jnp.asarray(val_obs), jnp.asarray(val_actions, jnp.int32)

    def loss_fn(p: Any, o: jax.Array, a: jax.Array) -> jax.Array:
        return cross_entropy(_logits(network, p, o), a)

    @jax.jit
    def _update_epoch(params: Any, opt_state: Any, key: jax.Array) -> tuple[Any, Any, jax.Array]:
        perm = jax.random.permutation(key, n)[: num_batches * batch].reshape(num_batches, batch)

        def _update_minibatch(carry: Any, idx: jax.Array) -> tuple[Any, jax.Array]:
            p, s = carry
            loss, grads = jax.value_and_grad(loss_fn)(p, obs_d[idx], act_d[idx])
            updates, s = optimizer.update(grads, s, p)
            return (optax.apply_updates(p, updates), s), loss

        (params, opt_state), losses = jax.lax.scan(_update_minibatch, (params, opt_state), perm)
        return params, opt_state, losses.mean()

    val_loss_fn = jax.jit(lambda p: loss_fn(p, val_obs_d, val_act_d))
    best, best_loss, best_epoch, history = params, float(val_loss_fn(params)), 0, []
    for epoch in range(1, config.max_epochs + 1):
        key, sub = jax.random.split(key)
        params, opt_state, train_loss = _update_epoch(params, opt_state, sub)
        val_loss = float(val_loss_fn(params))
        history.append([round(float(train_loss), 5), round(val_loss, 5)])
        if val_loss < best_loss:
            best, best_loss, best_epoch = params, val_loss, epoch
        elif epoch - best_epoch >= config.patience:
            break
    log(
        f"  BC: {len(history)} epochs, best epoch {best_epoch} (validation cross-entropy "
        f"{best_loss:.4f})"
    )
    return best, {
        "epochs_run": len(history),
        "best_epoch": best_epoch,
        "best_validation_cross_entropy": best_loss,
        "loss_history": history,
    }


def _transitions(rep: Replay, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every cloned seat's (obs, action) of the steps where `keep`: (seats * k, obs_dim),
    (seats * k,)."""
    obs = rep.obs[keep].reshape(-1, rep.obs.shape[-1])
    return obs, rep.actions[keep].reshape(-1)


# ---------------------------------------------------------------------------- building a set


def resolve_task(task: str | Task, version: str | None = None) -> tuple[Task, ProxyVersion]:
    """(the `Task` of `task`, an id, alias or `Task`, and its `ProxyVersion`), or a ValueError
    naming the fix. `version` None: the newest version built on the task's version (v1 task:
    human-proxy-v1, v2 task: human-proxy-v3)."""
    from aht_bench import envs

    task = envs.task(task)
    task_id = task.id
    if task_id not in DATA_LAYOUTS:
        have = ", ".join(t for v in VERSIONS.values() for t in v.tasks)
        raise ValueError(f"no human gameplay data for {task_id}; human proxies exist for {have}")
    if version is None:  # the newest version built on the task's version
        *_, proxy = (v for v in VERSIONS.values() if task_id in v.tasks)
        return task, proxy
    if version not in VERSIONS:
        raise ValueError(
            f"unknown human-proxy version {version!r}; choose one of {', '.join(VERSIONS)}"
        )
    proxy = VERSIONS[version]
    if task_id not in proxy.tasks:
        layout = task_id.removeprefix("overcooked-").rsplit("-", 1)[0]
        raise ValueError(
            f"{version} is built on the v{proxy.task_version} tasks, not on {task_id}: build it "
            f"for {proxy.task_id(layout)}"
        )
    return task, proxy


BOUNDS_V2 = (
    "Bounds v2 (issue 27; docs/heldout.md, docs/human_proxies.md): lower 0; upper the highest "
    "mean return measured with the proxy during the build: its self-play, the BC partner, the "
    "layout's paper heuristics and the example agents of agents/examples/ that list the task "
    "(played by the evaluator, aht_bench.evaluation.evaluate.evaluate_agent_file), each in "
    "every seating, with the build's episodes and seed; Overcooked has no task maximum. No "
    "best response to the proxy is trained (see docs/human_proxies.md). human-proxy-v1 used "
    "the proxy's self-play return alone. members[0].bounds.upper_candidates lists every source"
)


def upper_bound_sources(
    task: str | Task,
    proxy_set: Any,
    seatings: tuple[tuple[int, ...], ...],
    self_play: float,
    with_partner: float,
    cfg: BCConfig,
    log: Log,
    proxy: ProxyVersion,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[np.ndarray]]:
    """The candidate upper bounds of the proxy (Bounds v2, `build.upper_bound` takes them):
    `{"set_by", "kind", "value"}` per partner, the mean return of that partner with the proxy
    over every seating, `cfg.episodes` episodes each, seed `cfg.eval_seed`. In order: the
    proxy's self-play and with the BC partner (measured by the caller), each paper heuristic
    of the layout (jitted, `cross_play`) and each example agent file whose TASKS lists the task
    (`build._example_agent_returns`: the evaluator itself). With `proxy.example_upper_ci`
    (human-proxy-v3) an example agent is played with `aht-bench evaluate`'s default protocol
    (`DEFAULT_EPISODES` per seating, seed `cfg.eval_seed`) and its candidate is the upper end
    of its 95% CI (`build._example_upper_returns`), with its `mean` beside it. Also returns
    one record per example agent file (sha256 and runner, or why it was skipped) and each
    played example agent's returns with the proxy, (1, seatings, episodes)."""
    from aht_bench import envs
    from aht_bench.evaluation.evaluate import DEFAULT_EPISODES, cross_play
    from aht_bench.heldout import recipes
    from aht_bench.heldout.build import _example_agent_returns, _example_upper_returns
    from aht_bench.policies.heuristics import PAPER_HEURISTICS, make_heuristic
    from aht_bench.policies.population import TeammateSet

    task = envs.task(task)
    sources = [
        {"set_by": "human_proxy self-play", "kind": "self-play", "value": self_play},
        {"set_by": "bc_partner", "kind": "bc-partner", "value": with_partner},
    ]
    names = list(PAPER_HEURISTICS[task.id])
    heuristics = TeammateSet(names, [(make_heuristic(task, n), None) for n in names])
    # rows: the heuristics; (heuristics, 1, seatings, episodes)
    returns = cross_play(task, heuristics, proxy_set, seatings, cfg.episodes, cfg.eval_seed)
    for name, value in zip(names, returns[:, 0].mean(axis=(1, 2)), strict=True):
        sources.append({"set_by": name, "kind": "heuristic", "value": float(value)})
        log(f"  {name} with human_proxy: {value:.2f}")
    # the example agents, played by the evaluator: human-proxy-v2 with this build's episodes
    # and a mean, from v3 on with `aht-bench evaluate`'s protocol and the upper end of the CI
    upper_ci = proxy.example_upper_ci
    episodes = DEFAULT_EPISODES if upper_ci else cfg.episodes
    rec = recipes.Recipe(
        task_id=task.id,
        version=proxy.name,
        ippo=(),
        brdiv=None,
        heuristics=(),
        example_agents=recipes.EXAMPLE_AGENTS,
        episodes=episodes,
        eval_seed=cfg.eval_seed,
    )
    examples, example_info = _example_agent_returns(rec, proxy_set, seatings, log)
    for rel, returns in examples:
        source = {"set_by": rel, "kind": "example_agent", "value": float(returns[0].mean())}
        if upper_ci:
            mean = source["value"]
            source["value"] = float(_example_upper_returns(returns, cfg.eval_seed)[0])
            source |= {"mean": mean, "value_is": "upper end of the 95% CI (evaluator)"}
            log(f"  {rel} with human_proxy: mean {mean:.2f}, upper CI {source['value']:.2f}")
        sources.append(source)
    protocol = {"episodes_per_seating": episodes, "seed": cfg.eval_seed}
    return sources, [info | protocol for info in example_info], [r for _, r in examples]


def _replay_splits(
    env: Any, data_layout: str, proxy: ProxyVersion, cache: Path, log: Log
) -> tuple[dict[str, Replay], dict[str, dict[str, Any]]]:
    """Every split's trials of `data_layout` replayed through `env`: (replay per split, the
    manifest's numbers per split)."""
    replays: dict[str, Replay] = {}
    splits: dict[str, dict[str, Any]] = {}
    for split in SPLITS:
        data = load_split(split, cache)
        trials = data.trials_of(data_layout)
        t0 = time.perf_counter()
        rep = replay(env, data, trials, seats_by_side=proxy.seats_by_side)
        replays[split] = rep
        splits[split] = {
            "trials": len(trials),
            "workers": [int(data.worker[i]) for i in trials],
            "joint_steps": len(rep.actions),
            "transitions": 2 * len(rep.actions),
            "replay_match_rate": rep.match_rate,
            "replay_full_match_rate": rep.full_match_rate,
        }
        log(
            f"{env.task_id} {split}: {len(trials)} trials, {len(rep.actions)} joint steps; "
            f"replay match {rep.match_rate:.4%} (full {rep.full_match_rate:.4%}) "
            f"[{time.perf_counter() - t0:.0f}s]"
        )
    return replays, splits


def _clone(
    name: str,
    split: str,
    other: str,
    net_seed: int,
    network: Any,
    replays: dict[str, Replay],
    splits: dict[str, dict[str, Any]],
    cfg: BCConfig,
    log: Log,
) -> tuple[Any, dict[str, Any]]:
    """(params, record) of the BC model `name` trained on `split` (a validation share of its
    trials held out for early stopping), scored on the `other` split."""
    rep = replays[split]
    trials = np.unique(rep.trial)  # the data's trial indices, ascending
    # who played each trial, in the same order: the Carroll data's workers, or the file of
    # each recorded play episode (aht_bench.heldout.played)
    label = "workers" if "workers" in splits[split] else "episodes"
    players = np.asarray(splits[split][label])
    rng = np.random.default_rng(net_seed)
    n_val = max(1, int(round(cfg.validation_fraction * len(trials))))
    if n_val >= len(trials):
        raise HumanDataError(f"{split} split has too few trials to hold one out")
    val_trials = np.sort(rng.choice(trials, n_val, replace=False))
    is_val = np.isin(rep.trial, val_trials)
    seats = rep.actions.shape[1]  # the seats whose actions are cloned (2 here, 1 for play)
    log(
        f"{name}: BC on the {split} split, {len(trials) - n_val} trials "
        f"({seats * int((~is_val).sum())} transitions), {n_val} held out for early stopping"
    )
    t0 = time.perf_counter()
    params, record = train_bc(
        jax.random.PRNGKey(net_seed),
        network,
        *_transitions(rep, ~is_val),
        *_transitions(rep, is_val),
        cfg,
        log,
    )
    everything = np.ones(len(replays[other].trial), bool)
    held_out = evaluate_bc(network, params, *_transitions(replays[other], everything))
    validation = evaluate_bc(network, params, *_transitions(rep, is_val))
    record |= {
        "trained_on": f"{split} split",
        "seed": net_seed,
        "validation_trials": [int(t) for t in val_trials],
        f"validation_{label}": players[np.searchsorted(trials, val_trials)].tolist(),
        "train_seconds": round(time.perf_counter() - t0, 1),
        "held_out": {"split": other} | held_out,
        "validation": validation,
    }
    log(
        f"  held-out ({other} split) action accuracy {held_out['action_accuracy']:.4f} "
        f"(majority action {held_out['majority_action_accuracy']:.4f})"
    )
    return params, record


def _summary(returns: np.ndarray) -> dict[str, Any]:
    """Mean, per-seating mean and std of (seatings, episodes) returns."""
    return {
        "return": float(returns.mean()),
        "return_per_seating": [float(r.mean()) for r in returns],
        "return_std": float(returns.std()),
    }


def _play_models(
    task: Task,
    network: Any,
    trained: dict[str, tuple[Any, dict[str, Any]]],
    seatings: tuple[tuple[int, ...], ...],
    cfg: BCConfig,
    log: Log,
) -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(the proxy as a TeammateSet, the proxy's self-play, the BC partner's self-play, the two
    together): returns over the build's evaluation protocol."""
    from aht_bench.evaluation.evaluate import cross_play
    from aht_bench.policies.population import TeammateSet

    team = TeammateSet(
        ["human_proxy", "bc_partner"],
        [(network, trained["human_proxy"][0]), (network, trained["bc_partner"][0])],
    )
    proxy_only = TeammateSet(["human_proxy"], [(network, trained["human_proxy"][0])])
    log(f"evaluating: {cfg.episodes} episodes per seating, seed {cfg.eval_seed}")
    t0 = time.perf_counter()
    # rows: the agent's seats; cols: the others. (2, 1, seatings, episodes)
    with_proxy = cross_play(task, team, proxy_only, seatings, cfg.episodes, cfg.eval_seed)
    partner_only = TeammateSet(["bc_partner"], [(network, trained["bc_partner"][0])])
    partner_sp = cross_play(task, partner_only, partner_only, seatings, cfg.episodes, cfg.eval_seed)
    proxy_sp = _summary(with_proxy[0, 0])
    partner_sp_s = _summary(partner_sp[0, 0])
    mixed = _summary(with_proxy[1, 0])
    log(
        f"  self-play: human_proxy {proxy_sp['return']:.2f}, "
        f"bc_partner {partner_sp_s['return']:.2f}; "
        f"human_proxy with bc_partner {mixed['return']:.2f} [{time.perf_counter() - t0:.0f}s]"
    )
    return proxy_only, proxy_sp, partner_sp_s, mixed


def _proxy_bounds(
    task: Task,
    proxy: ProxyVersion,
    proxy_only: Any,
    seatings: tuple[tuple[int, ...], ...],
    proxy_sp: dict[str, Any],
    mixed: dict[str, Any],
    cfg: BCConfig,
    log: Log,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the human proxy's bounds, the example agents' build info): its self-play return
    (human-proxy-v1), or Bounds v2, the highest return a partner measured in the build reaches
    with it (raised, where the version says so, until no example agent's upper CI is above 1)."""
    if proxy_sp["return"] <= 0 and not proxy.bounds_v2:
        raise HumanDataError(
            f"{task.id}: the human proxy never scores in self-play, so it has no upper bound"
        )
    bounds: dict[str, Any] = {
        "lower": 0.0,
        "upper": proxy_sp["return"],
        "upper_set_by": "human_proxy self-play",
        "self_play_return_per_seating": proxy_sp["return_per_seating"],
    }
    if not proxy.bounds_v2:
        return bounds, []
    from aht_bench.heldout.build import _fit_example_bounds, upper_bound

    t0 = time.perf_counter()
    sources, example_info, example_returns = upper_bound_sources(
        task, proxy_only, seatings, proxy_sp["return"], mixed["return"], cfg, log, proxy
    )
    bound = upper_bound(sources)
    if bound["upper"] <= 0:
        raise HumanDataError(
            f"{task.id}: no partner of the build scores with the human proxy (self-play, the "
            "BC partner, the heuristics, the example agents), so it has no upper bound; "
            "clone it from more or better episodes"
        )
    bounds = {
        "lower": 0.0,
        "upper": bound["upper"],
        "upper_set_by": bound["upper_set_by"],
        "upper_set_by_kind": bound["kind"],
        "self_play_return": proxy_sp["return"],
        "self_play_return_per_seating": proxy_sp["return_per_seating"],
        "raised_by": bound["upper"] - proxy_sp["return"],
        "upper_candidates": sources,
    }
    if proxy.example_upper_ci and example_returns:
        (fitted,) = _fit_example_bounds(np.array([bound["upper"]]), example_returns, cfg.eval_seed)
        if fitted != bound["upper"]:
            bounds["rounding_raise"] = float(fitted) - bound["upper"]
            bounds["upper"] = float(fitted)
            bounds["raised_by"] = float(fitted) - proxy_sp["return"]
            log(f"  upper bound raised by {bounds['rounding_raise']:.3g} (rounding)")
    log(
        f"  Bounds v2: upper {bounds['upper']:.2f} set by {bound['upper_set_by']} "
        f"(self-play {proxy_sp['return']:.2f}) [{time.perf_counter() - t0:.0f}s]"
    )
    return bounds, example_info


def carroll_data(data_layout: str) -> Callable[[str], str]:
    """What a model's card says it was cloned from, given its record's `trained_on`."""
    return lambda trained_on: (
        f"Carroll et al. 2019 human-human trials, {trained_on}, layout {data_layout} "
        f"(overcooked-ai {OVERCOOKED_AI_VERSION})"
    )


@dataclasses.dataclass(frozen=True)
class Cloned:
    """The two BC models of a human-proxy build, what they return together and the proxy's
    bounds (`clone_and_bound`)."""

    trained: dict[str, tuple[Any, dict[str, Any]]]  # name -> (params, training record)
    proxy_sp: dict[str, Any]  # the proxy's self-play returns (`_summary`)
    partner_sp: dict[str, Any]  # the BC partner's self-play returns
    mixed: dict[str, Any]  # the proxy with the BC partner
    bounds: dict[str, Any]  # the proxy's BRProx bounds and their provenance
    example_info: list[dict[str, Any]]  # the example agents' build info (Bounds v2)


def clone_and_bound(
    task: str | Task,
    proxy: ProxyVersion,
    network: Any,
    replays: dict[str, Replay],
    splits: dict[str, dict[str, Any]],
    seatings: tuple[tuple[int, ...], ...],
    seed: int,
    cfg: BCConfig,
    log: Log,
) -> Cloned:
    """The recipe shared by every human-proxy build: `human_proxy` cloned from the test split
    (seed `seed`), `bc_partner` from the train split (`seed + 1`), each scored on the other
    split; both played (`_play_models`) and the proxy's bounds set (`_proxy_bounds`)."""
    from aht_bench import envs

    task = envs.task(task)
    trained = {
        name: _clone(name, split, other, net_seed, network, replays, splits, cfg, log)
        for name, split, other, net_seed in (
            ("human_proxy", "test", "train", seed),
            ("bc_partner", "train", "test", seed + 1),
        )
    }
    proxy_only, proxy_sp, partner_sp, mixed = _play_models(
        task, network, trained, seatings, cfg, log
    )
    bounds, example_info = _proxy_bounds(
        task, proxy, proxy_only, seatings, proxy_sp, mixed, cfg, log
    )
    return Cloned(trained, proxy_sp, partner_sp, mixed, bounds, example_info)


def _save_models(
    task_id: str,
    data: Callable[[str], str],
    network: Any,
    trained: dict[str, tuple[Any, dict[str, Any]]],
    work: Path,
) -> dict[str, dict[str, str]]:
    """Save both BC models into `work`; per model its file and sha256. `data(trained_on)`
    names the data a model was cloned from (its card's provenance)."""
    from aht_bench.policies.io import save_policy

    files = {}
    for name, (params, record) in trained.items():
        rel = f"{name}.safetensors"
        provenance = {
            "algorithm": "behaviour cloning (aht_bench.heldout.human.train_bc)",
            "data": data(record["trained_on"]),
            "seed": record["seed"],
            "best_epoch": record["best_epoch"],
        }
        save_policy(work / rel, network, params, {"task_id": task_id, "provenance": provenance})
        files[name] = {"file": rel, "sha256": sha256_file(work / rel)}
    return files


def _model_numbers(record: dict[str, Any], sp: dict[str, Any]) -> dict[str, Any]:
    """The manifest's `results` entry of one BC model."""
    return {
        "trained_on": record["trained_on"],
        "held_out_split": record["held_out"]["split"],
        "held_out_action_accuracy": record["held_out"]["action_accuracy"],
        "held_out_cross_entropy": record["held_out"]["cross_entropy"],
        "held_out_majority_action_accuracy": record["held_out"]["majority_action_accuracy"],
        "held_out_transitions": record["held_out"]["transitions"],
        "validation_action_accuracy": record["validation"]["action_accuracy"],
        "self_play_return": sp["return"],
        "self_play_return_per_seating": sp["return_per_seating"],
    }


def _results(
    trained: dict[str, tuple[Any, dict[str, Any]]],
    proxy_sp: dict[str, Any],
    partner_sp: dict[str, Any],
    mixed: dict[str, Any],
) -> dict[str, Any]:
    """The manifest's `results`: each model's numbers and the two playing together."""
    return {
        "human_proxy": _model_numbers(trained["human_proxy"][1], proxy_sp),
        "bc_partner": _model_numbers(trained["bc_partner"][1], partner_sp),
        "human_proxy_with_bc_partner": {
            "return": mixed["return"],
            "return_per_seating": mixed["return_per_seating"],
            "note": "seating s: the BC partner in seat s, the proxy in the other",
        },
    }


def _bounds_v2_fields(bounds: dict[str, Any], example_info: list[dict]) -> dict[str, Any]:
    """What a Bounds v2 human-proxy manifest adds (its `status` replaces v1's)."""
    candidates = bounds["upper_candidates"]
    return {
        "status": (
            "PUBLISHED human-proxy set: a behaviour-cloned model of the Carroll et al. "
            "(2019) test-split humans, normalised by Bounds v2 (the highest return any "
            "partner measured in the build reached with it; human-proxy-v1: its self-play "
            "return); immutable"
        ),
        "partner_returns": {
            "rows": [c["set_by"] for c in candidates],
            "kinds": [c["kind"] for c in candidates],
            "cols": ["human_proxy"],
            "mean_return": [[round(c["value"], 6)] for c in candidates],
        },
        "example_agents": example_info,
        "bounds_procedure": BOUNDS_V2,
    }


def _source(data_layout: str, proxy: ProxyVersion, splits: dict[str, Any]) -> dict[str, Any]:
    """The manifest's `source`: the data the proxies were cloned from."""
    return {
        "dataset": "Carroll et al. 2019 human-human Overcooked trials",
        "overcooked_ai_version": OVERCOOKED_AI_VERSION,
        "sdist": SDIST_FILENAME,
        "sdist_sha256": SDIST_SHA256,
        "pickles": {s: {"member": m, "sha256": d} for s, (m, d) in PICKLES.items()},
        "data_layout": data_layout,
        "splits": splits,
        "seats": proxy.seats,
        "observation_step": "max(0, 400 - steps left in the human trial)",
    }


def _build_recipe(
    task_id: str,
    proxy: ProxyVersion,
    seed: int,
    cfg: BCConfig,
    network: Any,
    trained: dict[str, tuple[Any, dict[str, Any]]],
    seconds: float,
) -> dict[str, Any]:
    """The manifest's `recipe`: the command that rebuilds the set and what went into it."""
    return {
        # v1 and v2 recorded no version (then the only one per task version); from v3 on
        # the command names it, so it still builds this set once a newer one exists
        "command": 'python -c "from aht_bench.heldout.human import build; '
        + (
            f"build('{task_id}', seed={seed})\""
            if proxy.name in ("human-proxy-v1", "human-proxy-v2")
            else f"build('{task_id}', version='{proxy.name}', seed={seed})\""
        ),
        "bc": dataclasses.asdict(cfg) | {"hidden": list(cfg.hidden)},
        "network": network.config(),
        "seeds": {"human_proxy": seed, "bc_partner": seed + 1},
        "training": {
            name: {k: v for k, v in rec.items() if k not in ("held_out", "validation")}
            for name, (_, rec) in trained.items()
        },
        "evaluation": {
            "episodes_per_seating": cfg.episodes,
            "seed": cfg.eval_seed,
            "runner": "aht_bench.evaluation.evaluate.cross_play (jitted)",
        },
        "build_seconds": round(seconds, 1),
    }


def build(
    task: str | Task,
    out: str | os.PathLike[str] | None = None,
    *,
    version: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
    config: BCConfig | None = None,
    log: Log = print,
) -> Path:
    """Build the human-proxy set `version` of `task` into `out` (default
    heldout/<task_id>/<version>/); fetches the data first if needed. Returns the folder.
    `version` None: the one built on the task's version (`resolve_task`).

    `seed` seeds the proxy's BC (`seed`) and the partner's (`seed + 1`): initialisation,
    validation trials and minibatch order. Refuses to overwrite an existing set.
    """
    from aht_bench.evaluation import sets
    from aht_bench.heldout.build import manifest_head
    from aht_bench.policies.networks import MLPActorCritic

    cfg = config or BCConfig()
    task, proxy = resolve_task(task, version)
    task_id = task.id
    data_layout = DATA_LAYOUTS[task_id]
    folder = Path(out) if out is not None else sets.heldout_root() / task_id / proxy.name
    if folder.exists() and any(folder.iterdir()):
        raise HumanDataError(
            f"{folder} already exists and is not empty: a published set is never overwritten; "
            "build into another folder with out=, or delete it first if it was never published"
        )
    start = time.perf_counter()
    cache = fetch(data_dir, log)
    env = task.env
    seatings = sets.default_seatings(task_id, env.num_agents)
    replays, splits = _replay_splits(env, data_layout, proxy, cache, log)

    network = MLPActorCritic(env.obs_dim, env.num_actions, 1, cfg.hidden)
    cloned = clone_and_bound(task, proxy, network, replays, splits, seatings, seed, cfg, log)
    trained = cloned.trained

    with sets.staged(folder) as work:
        files = _save_models(task_id, carroll_data(data_layout), network, trained, work)

        status = (
            "PUBLISHED human-proxy set: a behaviour-cloned model of the Carroll et al. (2019) "
            "test-split humans, normalised by its own self-play return (paper App. 'Human Proxy "
            "Evaluations'); immutable"
        )
        manifest = manifest_head(task_id, proxy.name, status, seatings) | {
            "members": [
                {
                    "name": "human_proxy",
                    "kind": "human-proxy",
                    **files["human_proxy"],
                    "bounds": cloned.bounds,
                }
            ],
            "bc_partner": files["bc_partner"]
            | {
                "kind": "bc-partner",
                "note": "behaviour-cloned on the train split: a partner for training ego "
                "agents, not a member of the evaluation set",
            },
            "results": _results(trained, cloned.proxy_sp, cloned.partner_sp, cloned.mixed),
            "source": _source(data_layout, proxy, splits),
            "recipe": _build_recipe(
                task_id, proxy, seed, cfg, network, trained, time.perf_counter() - start
            ),
        }
        if proxy.changes:  # v1's manifest keeps exactly its published keys
            manifest["changes_from_human_proxy_v1"] = list(proxy.changes)
        if proxy.bounds_v2:
            manifest |= _bounds_v2_fields(cloned.bounds, cloned.example_info)
        sets.write_manifest(work, manifest)
        sets.load_set(task, work)  # the set loads, verified, before it is published
    log(f"wrote {folder}/ in {time.perf_counter() - start:.0f}s")
    return folder
