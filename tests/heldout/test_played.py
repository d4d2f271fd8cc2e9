"""Human proxies cloned from episodes saved by the play page (`aht_bench.heldout.played`,
issue 33 item 3): a handful of recorded episodes go through `heldout build` and the proxy plays
as a teammate; bad episode folders are refused, naming the file and the fix."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("aiohttp")  # the play page records the episodes

from aht_bench import envs, heldout  # noqa: E402
from aht_bench.adapters.gym import EgoEnv  # noqa: E402
from aht_bench.cli import main  # noqa: E402
from aht_bench.evaluation.replay import read_replays, write_replays  # noqa: E402
from aht_bench.evaluation.sets import HELDOUT_ENV, load_set  # noqa: E402
from aht_bench.heldout import human, played, recipes  # noqa: E402
from aht_bench.play.server import PlayConfig, _Episode, _save, check_choice  # noqa: E402

TASK = "overcooked-cramped_room-v2"
VERSION = "human-proxy-play-test"


def record_episodes(folder: Path, n: int, task: str = TASK) -> None:
    """`n` episodes saved the way the play page saves them (its `_Episode` and `_save`, no
    browser): a scripted "human" pressing random keys with independent_agent_0, seats 0, 1, ..."""
    config = PlayConfig(task=task, teammate="independent_agent_0", record=folder)
    rng = np.random.default_rng(0)
    for i in range(n):
        episode = _Episode(check_choice(task, "independent_agent_0", i % 2), seed=100 + i)
        episode.begin()
        while not episode.done:
            episode.act(int(rng.integers(len(episode.names))))
        _save(config, episode.replay())


@pytest.fixture(scope="module")
def episodes(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("played") / "episodes"
    record_episodes(folder, 4)
    return folder


def env_actions(task: str) -> int:
    return envs.make(task).num_actions


def _copy(episodes: Path, dest: Path) -> Path:
    shutil.copytree(episodes, dest)
    return dest


def test_a_bc_proxy_cloned_from_four_played_episodes_plays_as_a_teammate(
    episodes, tmp_path, monkeypatch
):
    # the example agents' evaluator runs are the slow part of the bounds (tested in
    # test_bounds_v2); the full recipe, through the CLI, is the slow test below
    monkeypatch.setattr(recipes, "EXAMPLE_AGENTS", ())
    root = tmp_path / "heldout"
    out = root / TASK / VERSION
    tiny = human.BCConfig(episodes=2, max_epochs=3)
    played.build("cramped_room", episodes, out, version=VERSION, config=tiny, log=lambda _: None)

    manifest = json.loads((out / "manifest.json").read_text())
    source = manifest["source"]
    assert len(source["episodes"]) == 4
    assert {e["split"] for e in source["episodes"]} == {"test", "train"}
    assert sorted(e["seat"] for e in source["episodes"]) == [0, 0, 1, 1]
    # one seat cloned per episode: each split's transitions are its episodes' steps
    steps = {
        s: sum(e["steps"] for e in source["episodes"] if e["split"] == s) for s in source["splits"]
    }
    assert steps == {s: v["transitions"] for s, v in source["splits"].items()}
    assert manifest["results"]["human_proxy"]["trained_on"] == "test split"
    bounds = manifest["members"][0]["bounds"]
    assert bounds["upper"] > bounds["lower"] == 0.0
    assert bounds["upper"] == max(c["value"] for c in bounds["upper_candidates"])

    eval_set = load_set(TASK, out)
    assert eval_set.names == ("human_proxy",) and eval_set.is_development  # not pinned

    # as a teammate, by name, from a heldout folder: the Gymnasium shell the play page uses
    monkeypatch.setenv(HELDOUT_ENV, str(root))
    partner, _ = heldout.bc_partner("cramped_room", VERSION)  # the train split's clone
    assert partner.num_actions == env_actions(TASK)
    env = EgoEnv(TASK, teammate=f"heldout:{VERSION}:human_proxy", seat=1)
    env.reset(seed=3)
    for _ in range(env.task.horizon):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            break
    assert env.last_actions is not None and truncated
    teammate_actions = set()
    env.reset(seed=4)
    for _ in range(40):
        env.step(4)
        teammate_actions.add(int(env.last_actions[0]))
    assert len(teammate_actions) > 1  # the proxy acts, it does not stand still


def _build(args: list[str]):
    return CliRunner().invoke(main, ["heldout", "build", "--task", "cramped_room", *args])


def test_the_cli_pairs_episodes_with_a_played_version_and_checks_the_label(episodes, tmp_path):
    out = ["--out", str(tmp_path / "set")]
    no_episodes = _build(["--version", VERSION, *out])
    assert no_episodes.exit_code == 2 and "--episodes DIR goes with" in no_episodes.output
    wrong_version = _build(["--version", "human-proxy-v3", "--episodes", str(episodes), *out])
    assert wrong_version.exit_code == 2 and "--episodes DIR goes with" in wrong_version.output
    bad_label = _build(["--version", "human-proxy-play-Lab 1", "--episodes", str(episodes), *out])
    assert bad_label.exit_code == 2 and "human-proxy-play-<label>" in bad_label.output
    assert not (tmp_path / "set").exists()


def test_episode_folders_that_cannot_be_cloned_are_refused_naming_the_file(episodes, tmp_path):
    def refused(folder: Path) -> str:
        result = _build(
            ["--version", VERSION, "--episodes", str(folder), "--out", str(tmp_path / "x")]
        )
        assert result.exit_code == 2, result.output
        assert not (tmp_path / "x").exists()
        return result.output

    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no episodes" in refused(empty)
    assert "is not a folder" in refused(tmp_path / "missing")

    few = _copy(episodes, tmp_path / "few")
    for path in sorted(few.glob("*.json"))[1:]:
        path.unlink()
    assert "holds 1 episode(s)" in refused(few)

    forged = _copy(episodes, tmp_path / "forged")
    path = sorted(forged.glob("*.json"))[0]
    (rec,) = read_replays(path)
    write_replays(path, [rec | {"return": rec["return"] + 20.0}])
    out = refused(forged)
    assert path.name in out and "does not reproduce" in out

    agent = _copy(episodes, tmp_path / "agent")
    path = sorted(agent.glob("*.json"))[0]
    write_replays(path, [rec | {"agent": "my_agent.py"}])
    out = refused(agent)
    assert path.name in out and "not an episode a person played" in out

    other_task = _copy(episodes, tmp_path / "other_task")
    write_replays(other_task / "lbf.json", [rec | {"task_id": "lbf-v1"}])
    assert "played on lbf-v1, not on overcooked-cramped_room-v2" in refused(other_task)

    junk = _copy(episodes, tmp_path / "junk")
    (junk / "notes.json").write_text("{}")
    assert "notes.json [0] is not a replay" in refused(junk)


def test_the_split_is_fixed_by_the_seed_and_the_files_not_their_names(episodes):
    a = played.read_episodes(TASK, episodes)
    assert [e.sha256 for e in a] == sorted(e.sha256 for e in a)
    split = played.split_episodes(a, seed=0)
    assert split == played.split_episodes(a, seed=0)
    assert sorted(split["test"] + split["train"]) == [0, 1, 2, 3] and len(split["test"]) == 2
    assert any(played.split_episodes(a, seed=s) != split for s in range(1, 10))
    replay = played.as_replay(a, split["test"])
    assert replay.obs.shape == (sum(len(a[i].actions) for i in split["test"]), 1, a[0].obs.shape[1])


@pytest.mark.slow
def test_heldout_build_clones_played_episodes_with_the_full_recipe_and_evaluate_scores_it(
    episodes, tmp_path
):
    """The command line end to end: the default BC config and Bounds v2 with the example
    agents, then `aht-bench evaluate` against the new set."""
    root = tmp_path / "heldout"
    out = root / TASK / VERSION
    args = ["heldout", "build", "--task", "cramped_room", "--version", VERSION]
    args += ["--episodes", str(episodes), "--out", str(out)]
    cmd = [sys.executable, "-m", "aht_bench.cli"]
    built = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=1500)
    assert built.returncode == 0, built.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    kinds = {c["kind"] for c in manifest["members"][0]["bounds"]["upper_candidates"]}
    assert kinds == {"self-play", "bc-partner", "heuristic", "example_agent"}
    record = tmp_path / "record.json"
    evaluate = [*cmd, "--heldout", str(root), "evaluate", "agents/examples/heuristic_agent.py"]
    evaluate += ["--task", "cramped_room", "--teammates", VERSION, "--episodes", "4"]
    evaluate += ["--out", str(record)]
    done = subprocess.run(evaluate, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    payload = json.loads(record.read_text())["payload"]
    assert payload["teammate_set"]["version"] == VERSION
    assert payload["teammate_set"]["development_set"] is True
