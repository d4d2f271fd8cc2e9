"""Replays (`aht-bench evaluate --replays N`): enough to replay an evaluated episode exactly, on
both runners, without changing the record; and the viewer page, driven in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from browser import chromium_page, needs_chromium
from click.testing import CliRunner

from aht_bench.cli import main
from aht_bench.evaluation import load_set
from aht_bench.evaluation.evaluate import evaluate_agent_file
from aht_bench.evaluation.replay import ReplayError, ReplaySink, read_replays, replay

ROOT = Path(__file__).parents[2]
POLICY = ROOT / "agents" / "rotate" / "lbf" / "seed0-ego.safetensors"  # the jitted runner
SCRIPTED = ROOT / "agents" / "examples" / "scripted_agent.py"  # step by step


@pytest.fixture(scope="module")
def lbf():
    return load_set("lbf", "v2")


def _evaluated(path: Path, eval_set, episodes: int, kept: int) -> tuple[dict, dict, list]:
    """(record without replays, record with, its replays) of `path`, in this process."""
    plain = evaluate_agent_file(path, eval_set, num_episodes=episodes, isolation="in-process",
                                reps=100)  # fmt: skip
    sink = ReplaySink(kept)
    record = evaluate_agent_file(
        path, eval_set, num_episodes=episodes, isolation="in-process", reps=100, replays=sink
    )
    return plain, record, sink.replays(record)


@pytest.fixture(scope="module")
def jitted(lbf):
    """The bundled ROTATE ego on LBF (the jitted runner): 2 episodes, both kept."""
    return _evaluated(POLICY, lbf, 2, 2)


def _recorded(record: dict, replayed: dict) -> float:
    """The return the record holds for the replay's member, seating and episode."""
    member = next(m for m in record["payload"]["members"] if m["name"] == replayed["member"])
    return member["returns"][",".join(str(s) for s in replayed["seating"])][replayed["episode"]]


@pytest.mark.parametrize("runner", ["jax", "host"])
def test_replays_reproduce_the_evaluated_episodes_and_leave_the_record_unchanged(
    lbf, jitted, runner
):
    # the step-by-step runner: the scripted example agent, 1 episode per member and seating
    plain, record, replays = jitted if runner == "jax" else _evaluated(SCRIPTED, lbf, 1, 1)
    assert record["payload_sha256"] == plain["payload_sha256"]
    kept = 2 if runner == "jax" else 1
    assert len(replays) == len(lbf.names) * len(lbf.seatings) * kept
    assert {r["start"]["runner"] for r in replays} == {runner}
    assert {r["episode"] for r in replays} == set(range(kept))
    for r in replays:
        played = replay(r)
        assert float(played.returns[-1]) == _recorded(record, r)
        assert len(played.states) == len(r["actions"]) + 1 <= 101
        assert np.isclose(played.rewards.sum(), played.returns[-1], atol=1e-5)
    # some episode earned something, so the check above is not only of zeros
    assert any(r["return"] > 0 for r in replays)


def test_a_replay_that_does_not_reproduce_its_episode_is_refused(jitted):
    good = max(jitted[2], key=lambda r: r["return"])
    assert good["return"] > 0
    with pytest.raises(ReplayError, match="not the recorded"):
        replay({**good, "return": good["return"] + 1.0})
    with pytest.raises(ReplayError, match="does not end at its last action"):
        replay({**good, "actions": good["actions"][:-1]})
    with pytest.raises(ReplayError, match="unknown start runner"):
        replay({**good, "start": {"runner": "gpu"}})
    # the same actions from another evaluation seed's start do not reproduce the episode
    with pytest.raises(ReplayError):
        replay({**good, "start": {**good["start"], "seed": 1}})


def test_evaluate_writes_replays_and_a_viewer_per_member(tmp_path):
    out = tmp_path / "rot.json"
    args = ["evaluate", str(POLICY), "--task", "lbf", "--episodes", "1", "--replays", "1"]
    result = CliRunner().invoke(
        main, [*args, "--out", str(out), "--reps", "100", "--no-plot", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    folder = tmp_path / "rot-replays"
    record = json.loads(out.read_text())
    names = [m["name"] for m in record["payload"]["members"]]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{n}.json" for n in names] + [f"{n}.html" for n in names]
    )
    items = read_replays(folder / f"{names[0]}.json")
    assert [(r["seating"], r["episode"]) for r in items] == [([0], 0), ([1], 0)]
    assert all(_recorded(record, r) == r["return"] for r in items)
    lone = CliRunner().invoke(main, ["evaluate", str(POLICY), "--task", "lbf", "--no-viewer"])
    assert lone.exit_code == 2 and "--no-viewer goes with --replays N" in lone.output


def test_replays_of_several_seeds_files_are_the_first_files_episodes(tmp_path):
    out = tmp_path / "seeds.json"
    files = [str(POLICY), str(POLICY.with_name("seed1-ego.safetensors"))]
    args = ["evaluate", *files, "--task", "lbf", "--episodes", "1", "--replays", "1"]
    result = CliRunner().invoke(main, [*args, "--no-viewer", "--out", str(out), "--reps", "100",
                                       "--no-plot", "--no-progress"])  # fmt: skip
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    folder = tmp_path / "seeds-replays"
    assert all(p.suffix == ".json" for p in folder.iterdir())  # --no-viewer: no pages
    for member in record["payload"]["members"]:
        items = read_replays(folder / f"{member['name']}.json")
        assert {r["agent"] for r in items} == {POLICY.name}
        first, second = member["returns_per_seed"]
        for r in items:
            key = ",".join(str(s) for s in r["seating"])
            assert r["return"] == first[key][r["episode"]]
            assert float(replay(r).returns[-1]) == r["return"]
    # the two seeds' files played differently somewhere, so the check above tells them apart
    assert any(m["returns_per_seed"][0] != m["returns_per_seed"][1] for m in record["payload"][
        "members"])  # fmt: skip


def test_render_draws_a_replay_file_as_a_page_or_a_gif_and_refuses_what_does_not_replay(
    jitted, tmp_path
):
    from aht_bench.evaluation.replay import write_replays
    from aht_bench.evaluation.viewer import page_stamp

    kept = sorted(jitted[2], key=lambda r: -r["return"])[:2]
    path = tmp_path / "two.json"
    write_replays(path, kept)
    page = CliRunner().invoke(
        main, ["render", "--replay", str(path), "--out", str(tmp_path / "p.html")]
    )
    assert page.exit_code == 0, page.output
    assert "2 episode(s)" in page.output and page_stamp(tmp_path / "p.html") is not None
    gif = CliRunner().invoke(
        main, ["render", "--replay", str(path), "--out", str(tmp_path / "e.gif")]
    )
    assert gif.exit_code == 0, gif.output
    from PIL import Image

    with Image.open(tmp_path / "e.gif") as image:
        # one frame a state, runs of equal frames merged by the GIF writer
        assert 1 < image.n_frames <= len(kept[0]["actions"]) + 1
    forged = tmp_path / "forged.json"
    write_replays(forged, [{**kept[0], "return": kept[0]["return"] + 1.0}])
    bad = CliRunner().invoke(
        main, ["render", "--replay", str(forged), "--out", str(tmp_path / "x.html")]
    )
    assert bad.exit_code == 2 and "does not reproduce the evaluated episode" in bad.output
    assert not (tmp_path / "x.html").exists()
    both = CliRunner().invoke(
        main, ["render", "--task", "lbf", "--replay", str(path), "--out", "x.gif"]
    )
    assert both.exit_code == 2 and "give --task (a new episode) or --replay FILE" in both.output


@needs_chromium
def test_the_viewer_replays_an_episode_to_the_records_score_in_headless_chromium(jitted, tmp_path):
    from aht_bench.evaluation.viewer import write_viewer

    _, record, kept = jitted
    replays = sorted(kept, key=lambda r: -r["return"])[:2]
    page_file = write_viewer(tmp_path / "viewer.html", replays)
    with chromium_page() as (page, errors):
        page.goto(page_file.as_uri())
        for i, r in enumerate(replays):
            page.select_option("#episode", str(i))
            steps = len(r["actions"])
            assert page.text_content("#step") == f"0 / {steps}"
            page.click("#next")
            assert page.text_content("#step") == f"1 / {steps}"
            page.select_option("#speed", "120")
            page.click("#play")  # plays to the end and stops there
            page.wait_for_function(
                f"document.getElementById('step').textContent === '{steps} / {steps}'",
                timeout=20_000,
            )
            shown = float(page.get_attribute("#score", "data-value") or "nan")
            assert shown == pytest.approx(_recorded(record, r), abs=0)
            assert page.text_content("#play") == "Play"
        assert not errors
