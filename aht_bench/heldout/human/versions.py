"""The published human-proxy versions, the data's pins and the safe format's constants.

May import jax, optax, numpy, pandas (to read the pickles only), the standard library and
aht_bench.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

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
