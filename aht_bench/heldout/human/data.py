"""The safe format of the human data (`HumanData`, plain `.npz` arrays) and the conversion of
the pickled frames into it.

May import jax, optax, numpy, pandas (to read the pickles only), the standard library and
aht_bench.
"""

from __future__ import annotations

import ast
import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench.heldout.human.versions import (
    _DIRECTIONS,
    _HELD_NAMES,
    DATA_ENV,
    DEFAULT_DATA_DIR,
    INTERACT,
    NOTHING,
    SAFE_FORMAT,
    SAFE_FORMAT_VERSION,
    SOUP_ITEM,
    SPLITS,
    STAY,
    HumanDataError,
)


def data_folder(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache folder: `data_dir`, else $AHT_BENCH_HUMAN_DATA, else ~/.cache/aht-bench/...."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DATA_DIR).expanduser()


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
