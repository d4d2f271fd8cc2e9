"""Human proxies cloned from episodes people played with `aht-bench play --record DIR`.

    from aht_bench.heldout import played
    played.build("cramped_room", "human_data/", version="human-proxy-play-lab1")
    # -> heldout/overcooked-cramped_room-v2/human-proxy-play-lab1/

or `aht-bench heldout build --task cramped_room --version human-proxy-play-lab1 --episodes
human_data/`. The recipe is `aht_bench.heldout.human`'s (the Carroll data's) on other data:

- **The data**: every replay file (`*.json`, `aht_bench.evaluation.replay`) in the folder
  whose `agent` is `"human"` (what the play page saves), all on the build's task and each
  replayed exactly through the environment before it is used (a file that does not reproduce
  its recorded return is refused, naming it). A file that is not a human's episode on the task
  is refused rather than skipped, so the data is what the folder holds. Only the human's seat
  is cloned: the other seat was the teammate the person played with.
- **Splits**: the episodes, sorted by their files' sha256, are shuffled with the build's seed;
  the first half (rounded up) is the TEST split, cloned into `human_proxy` (the set's one
  member), the rest the TRAIN split, cloned into `bc_partner` (a partner to train ego agents
  with). Each split holds out one or more whole episodes for early stopping
  (`BCConfig.validation_fraction`), so a build needs at least `MIN_EPISODES` episodes.
- **BC, evaluation and bounds** are human-proxy-v3's (`human.train_bc`, `human.BCConfig`,
  Bounds v2 with the example agents at the upper end of their CI): lower 0, upper the highest
  return any partner of the build reaches with the proxy.

The manifest's `source` lists every episode (file name, sha256, seat, teammate, steps, return,
split), so the set is rebuilt from the same files with the command in its `recipe`. A version
is `human-proxy-play-<label>`: the label is yours (lower-case letters, digits, `-` and `_`);
like every set it is never overwritten, and it is published only once its lock is pinned.

May import numpy, the standard library and aht_bench.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from aht_bench.heldout import human

if TYPE_CHECKING:
    from aht_bench.envs import Task

PREFIX = "human-proxy-play-"
"""The versions of sets cloned from played episodes: `human-proxy-play-<label>`."""
_LABEL = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
MIN_EPISODES = 4
"""Two per split: each holds one out for early stopping and clones the others."""
AGENT = "human"
"""The `agent` of a replay the play page saved."""


class PlayedDataError(human.HumanDataError):
    """Played episodes that cannot be cloned: the message names the file and the fix."""


def is_played_version(version: str) -> bool:
    """Whether `version` names a set cloned from played episodes (any label)."""
    return version.startswith(PREFIX)


def check_version(version: str) -> str:
    """`version` if it is `human-proxy-play-<label>`, else a `PlayedDataError` naming the fix."""
    label = version.removeprefix(PREFIX)
    if not is_played_version(version) or not _LABEL.fullmatch(label):
        raise PlayedDataError(
            f"{version!r} is not a played-proxy version; name it {PREFIX}<label>, the label "
            "1-40 lower-case letters, digits, '-' or '_' starting with a letter or digit "
            f"(e.g. {PREFIX}lab1)"
        )
    return version


@dataclasses.dataclass(frozen=True)
class PlayedEpisode:
    """One recorded episode, replayed: the human's observations and actions."""

    file: str  # the file's name in the episodes folder (with `[i]` if the file holds several)
    sha256: str  # of the file
    replay: dict[str, Any]  # the replay as saved
    obs: np.ndarray  # float32 (steps, obs_dim): the human's observation before each step
    actions: np.ndarray  # int32 (steps,): the human's action at each step

    def source(self, split: str) -> dict[str, Any]:
        """The manifest's entry of this episode."""
        r = self.replay
        return {
            "file": self.file,
            "sha256": self.sha256,
            "split": split,
            "seat": int(r["seating"][0]),
            "teammate": r["member"],
            "steps": len(self.actions),
            "return": float(r["return"]),
            "played_utc": r.get("played_utc"),
        }


def read_episodes(task_id: str, folder: Path) -> list[PlayedEpisode]:
    """Every human episode on `task_id` saved in `folder`, replayed and checked, ordered by
    the files' sha256 (then their place in the file). Refuses an empty folder, a file that is
    not a human's episode on the task, and one that does not replay exactly."""
    from aht_bench.evaluation.replay import ReplayError, read_replays, replay

    folder = Path(folder)
    if not folder.is_dir():
        raise PlayedDataError(
            f"{folder} is not a folder; pass the folder `aht-bench play --record DIR` wrote"
        )
    files = sorted(folder.glob("*.json"))
    if not files:
        raise PlayedDataError(
            f"{folder} holds no episodes (*.json); record some with `aht-bench play --task "
            f"{task_id} --teammate ... --record {folder}`"
        )
    episodes = []
    for path in files:
        try:
            replays = read_replays(path)  # an unreadable file is a ReplayError too
        except ReplayError as e:
            raise PlayedDataError(f"{e}; move it out of {folder}") from None
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        for i, rec in enumerate(replays):
            name = path.name if len(replays) == 1 else f"{path.name}[{i}]"
            if rec.get("agent") != AGENT or len(rec["seating"]) != 1:
                raise PlayedDataError(
                    f"{folder / name} is not an episode a person played (agent "
                    f"{rec.get('agent')!r}, seats {rec['seating']}); only the play page's "
                    "recordings are cloned: move it out of the folder"
                )
            if rec["task_id"] != task_id:
                raise PlayedDataError(
                    f"{folder / name} was played on {rec['task_id']}, not on {task_id}; keep "
                    "one task's episodes per folder"
                )
            try:
                replayed = replay(rec)
            except ReplayError as e:
                raise PlayedDataError(f"{folder / name}: {e}") from None
            seat = int(rec["seating"][0])
            actions = np.asarray(rec["actions"], np.int32)[:, seat]
            episodes.append(PlayedEpisode(name, digest, rec, replayed.obs[:, seat], actions))
    episodes.sort(key=lambda e: (e.sha256, e.file))
    if len(episodes) < MIN_EPISODES:
        raise PlayedDataError(
            f"{folder} holds {len(episodes)} episode(s) on {task_id}; cloning needs at least "
            f"{MIN_EPISODES} (two per split, each holding one out for early stopping)"
        )
    return episodes


def split_episodes(episodes: list[PlayedEpisode], seed: int) -> dict[str, list[int]]:
    """Indices of `episodes` per split: a permutation by `seed`, the first half (rounded up)
    the test split (the proxy), the rest the train split (the partner); each sorted."""
    order = np.random.default_rng(seed).permutation(len(episodes))
    cut = (len(episodes) + 1) // 2
    return {"test": sorted(order[:cut].tolist()), "train": sorted(order[cut:].tolist())}


def as_replay(episodes: list[PlayedEpisode], indices: list[int]) -> human.Replay:
    """The episodes `indices` as a `human.Replay` of one seat (the human's); trial i is the
    i-th episode of `episodes`."""
    steps = [len(episodes[i].actions) for i in indices]
    return human.Replay(
        obs=np.concatenate([episodes[i].obs for i in indices])[:, None, :],
        actions=np.concatenate([episodes[i].actions for i in indices])[:, None],
        trial=np.repeat(np.asarray(indices, np.int64), steps),
        matched=np.ones(sum(steps), bool),  # every episode replayed exactly
        full_match=np.ones(sum(steps), bool),
    )


def proxy_version(task_id: str, version: str) -> human.ProxyVersion:
    """The recipe flags of a played-proxy set: human-proxy-v3's bounds rule."""
    return human.ProxyVersion(
        name=version,
        task_version=int(task_id.rsplit("-v", 1)[1]),
        seats_by_side=False,
        seats="the human's seat of each recorded episode (observations are egocentric)",
        bounds_v2=True,
        example_upper_ci=True,
    )


def _splits(
    episodes: list[PlayedEpisode], split_of: dict[str, list[int]]
) -> tuple[dict[str, human.Replay], dict[str, dict[str, Any]]]:
    """(each split's episodes as a `human.Replay`, the manifest's numbers per split)."""
    replays = {split: as_replay(episodes, idx) for split, idx in split_of.items()}
    splits = {
        split: {
            "trials": len(idx),
            "episodes": [episodes[i].file for i in idx],
            "joint_steps": len(replays[split].actions),
            "transitions": len(replays[split].actions),  # one seat cloned per step
        }
        for split, idx in split_of.items()
    }
    return replays, splits


def _source(
    episodes: list[PlayedEpisode],
    split_of: dict[str, list[int]],
    splits: dict[str, dict[str, Any]],
    proxy: human.ProxyVersion,
) -> dict[str, Any]:
    """The manifest's `source`: every episode cloned, and the splits."""
    listed = [episodes[i].source(split) for split, idx in split_of.items() for i in idx]
    return {
        "dataset": "episodes played with `aht-bench play --record` (agent 'human')",
        "episodes": sorted(listed, key=lambda e: e["file"]),
        "splits": splits,
        "split_rule": "episodes ordered by file sha256, permuted with the seed; the first half "
        "(rounded up) is the test split (human_proxy), the rest the train split (bc_partner)",
        "seats": proxy.seats,
    }


def build(
    task: str | Task,
    episodes_dir: str | Path,
    out: str | Path | None = None,
    *,
    version: str,
    seed: int = 0,
    config: human.BCConfig | None = None,
    log: human.Log = print,
) -> Path:
    """Clone the set `version` (`human-proxy-play-<label>`) of `task` from the played episodes
    in `episodes_dir` into `out` (default heldout/<task_id>/<version>/); returns the folder.
    `seed` shuffles the splits and seeds the proxy's BC (`seed`) and the partner's
    (`seed + 1`). Refuses to overwrite an existing set."""
    from aht_bench import envs
    from aht_bench.evaluation import sets
    from aht_bench.heldout.build import manifest_head
    from aht_bench.policies.networks import MLPActorCritic

    cfg = config or human.BCConfig()
    check_version(version)
    task = envs.task(task)
    task_id = task.id
    folder = Path(out) if out is not None else sets.heldout_root() / task_id / version
    if folder.exists() and any(folder.iterdir()):
        raise PlayedDataError(
            f"{folder} already exists and is not empty: a set is never overwritten; build "
            "into another folder with out= (--out), or choose another version label"
        )
    start = time.perf_counter()
    episodes = read_episodes(task_id, Path(episodes_dir))
    env = task.env
    seatings = sets.default_seatings(task_id, env.num_agents)
    split_of = split_episodes(episodes, seed)
    replays, splits = _splits(episodes, split_of)
    log(
        f"{task_id}: {len(episodes)} played episodes, "
        + ", ".join(f"{s} split {len(i)}" for s, i in split_of.items())
    )

    network = MLPActorCritic(env.obs_dim, env.num_actions, 1, cfg.hidden)
    proxy = proxy_version(task_id, version)
    cloned = human.clone_and_bound(task, proxy, network, replays, splits, seatings, seed, cfg, log)
    trained = cloned.trained

    def data(trained_on: str) -> str:
        return f"{len(episodes)} episodes played with aht-bench play on {task_id}, {trained_on}"

    status = (
        f"human-proxy set cloned from {len(episodes)} episodes people played with "
        "`aht-bench play`, normalised by Bounds v2 (the highest return any partner of the "
        "build reached with it); a development set until its lock is pinned"
    )
    with sets.staged(folder) as work:
        files = human.save_models(task_id, data, network, trained, work)
        recipe = human.build_recipe(
            task_id, proxy, seed, cfg, network, trained, time.perf_counter() - start
        )
        manifest = manifest_head(task_id, version, status, seatings) | {
            "members": [
                {"name": "human_proxy", "kind": "human-proxy", **files["human_proxy"]}
                | {"bounds": cloned.bounds}
            ],
            "bc_partner": files["bc_partner"]
            | {
                "kind": "bc-partner",
                "note": "behaviour-cloned on the train split of the played episodes: a "
                "partner for training ego agents, not a member of the evaluation set",
            },
            "results": human.results_record(
                trained, cloned.proxy_sp, cloned.partner_sp, cloned.mixed
            ),
            "source": _source(episodes, split_of, splits, proxy),
            "recipe": recipe
            | {
                "command": f"aht-bench heldout build --task {task_id} --version {version} "
                "--episodes EPISODES_DIR (the files listed in source.episodes)",
                "seeds": {"split": seed, "human_proxy": seed, "bc_partner": seed + 1},
            },
        }
        manifest |= human.bounds_v2_fields(cloned.bounds, cloned.example_info)
        manifest["status"] = status
        sets.write_manifest(work, manifest)
        sets.load_set(task, work)  # the set loads, verified, before it is written
    log(f"wrote {folder}/ in {time.perf_counter() - start:.0f}s")
    return folder


__all__ = [
    "MIN_EPISODES",
    "PREFIX",
    "PlayedDataError",
    "PlayedEpisode",
    "as_replay",
    "build",
    "check_version",
    "is_played_version",
    "read_episodes",
    "split_episodes",
]
