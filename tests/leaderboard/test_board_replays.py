"""Episode replays on the leaderboard (issue 33): the sandboxed re-run of `verify` keeps its
first episodes of every teammate and seating as the entry's replays, each checked against the
re-run's record; `render` links them per teammate from index.html to a viewer page, only while
the entry's ledger line names the replay file's bytes; the link opens the teammate's episode in
headless Chromium, which draws the rendered pixels and ends on the replay's return."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from browser import chromium_page, needs_chromium
from lb_helpers import RECORD, REPO, run, submit_cli

from aht_bench.evaluation import load_set
from aht_bench.evaluation.evaluate import evaluate_agent_file
from aht_bench.evaluation.replay import ReplaySink, replay, write_replays
from aht_bench.leaderboard import ledger, replays
from aht_bench.leaderboard.cli import EXIT_FAILED, EXIT_OK
from aht_bench.leaderboard.entries import make_entry

SLUG = "random-example--lbf-v1--v1"


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A board with the example entry, verified on 2 episodes keeping 1 as replays, rendered."""
    root = tmp_path_factory.mktemp("replays") / "board"
    assert submit_cli(root, RECORD).exit_code == EXIT_OK
    result = run(root, "verify", SLUG, "--episodes", "2", "--replays", "1")
    assert result.exit_code == EXIT_OK, result.output
    assert "18 episodes kept as replays" in result.output
    result = run(root, "render")
    assert result.exit_code == EXIT_OK, result.output
    return root


def _entry(root: Path) -> dict:
    return json.loads((root / "entries" / f"{SLUG}.json").read_text())


def test_the_reruns_replays_are_kept_checked_and_named_by_the_ledger_line(board):
    path = replays.replays_path(board, SLUG)
    line = ledger.read(board)[SLUG]
    assert line["replays_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    kept = json.loads(path.read_text())
    entry = _entry(board)
    members = [m["name"] for m in entry["payload"]["members"]]
    assert [(r["member"], r["seating"], r["episode"]) for r in kept] == [
        (m, s, 0) for m in members for s in ([0], [1])
    ]
    for r in kept:
        assert r["agent"] == "random_agent.py" and r["task_id"] == "lbf-v1"
        assert float(replay(r).returns[-1]) == r["return"]


def test_index_links_each_teammates_replays_and_render_check_sees_a_stale_page(board, tmp_path):
    index = (board / "index.html").read_text()
    for m in _entry(board)["payload"]["members"]:
        assert f'href="replays/{SLUG}.html#member={m["name"]}"' in index
    page = replays.page_path(board, SLUG)
    assert page.is_file() and page.stat().st_size < 200_000
    assert run(board, "render", "--check").exit_code == EXIT_OK

    # a copy of the board whose page would say something else (its replays' date): stale
    dated = tmp_path / "dated"
    shutil.copytree(board, dated)
    lines = json.loads((dated / "verified.json").read_text())
    lines["entries"][SLUG]["replays_date_utc"] = "2000-01-01"
    (dated / "verified.json").write_text(json.dumps(lines))
    result = run(dated, "render", "--check")
    assert result.exit_code == EXIT_FAILED and f"{SLUG}.html is out of date" in result.stderr
    assert run(dated, "render").exit_code == EXIT_OK
    assert "on 2000-01-01" in replays.page_path(dated, SLUG).read_text()

    # a copy of the board whose replay file was edited by hand: no link, the page goes
    copied = tmp_path / "board"
    shutil.copytree(board, copied)
    path = replays.replays_path(copied, SLUG)
    edited = json.loads(path.read_text())
    edited[0]["return"] += 1.0
    path.write_text(json.dumps(edited))
    result = run(copied, "render", "--check")
    assert result.exit_code == EXIT_FAILED
    assert f"{SLUG}.html is out of date" in result.stderr
    assert run(copied, "render").exit_code == EXIT_OK
    assert "#member=" not in (copied / "index.html").read_text()
    assert not replays.page_path(copied, SLUG).exists()


def test_reproduce_keeps_the_replays_and_a_fresh_rerun_without_replays_drops_them(board, tmp_path):
    copied = tmp_path / "board"
    shutil.copytree(board, copied)
    before = ledger.read(copied)[SLUG]
    # what CI runs: the stored re-run played again with its salt; nothing is written
    result = run(copied, "verify", SLUG, "--episodes", "2", "--replays", "0", "--reproduce")
    assert result.exit_code == EXIT_OK, result.output
    assert "stored re-run played again" in result.output
    assert ledger.read(copied)[SLUG] == before
    assert replays.current(copied, SLUG, before) == before["replays_sha256"]
    assert run(copied, "render", "--check").exit_code == EXIT_OK  # CI changes no page

    # a fresh re-run plays other episodes (a new salt): the old replays are not of it
    result = run(copied, "verify", SLUG, "--episodes", "2", "--replays", "0")
    assert result.exit_code == EXIT_OK, result.output
    line = ledger.read(copied)[SLUG]
    assert line["salt"] != before["salt"]
    assert "replays_sha256" not in line
    assert not replays.replays_path(copied, SLUG).exists()
    assert not replays.page_path(copied, SLUG).exists()


@pytest.fixture(scope="module")
def played():
    """(entry, the record standing for a re-run's, the folder of its replays) of the example
    agent, 1 episode per teammate and seating, kept as replays (in this process)."""
    sink = ReplaySink(1)
    agent = REPO / "agents" / "examples" / "random_agent.py"
    record = evaluate_agent_file(
        agent, load_set("lbf", "v1"), num_episodes=1, isolation="in-process", reps=100,
        replays=sink,
    )  # fmt: skip
    entry = make_entry(record, "random (example)", "uniform random", None)
    return entry, record, sink.replays(record)


def _folder(tmp_path: Path, items: list[dict]) -> Path:
    folder = tmp_path / "rerun-replays"
    folder.mkdir(parents=True)
    for member in dict.fromkeys(r["member"] for r in items):
        write_replays(folder / f"{member}.json", [r for r in items if r["member"] == member])
    return folder


@pytest.mark.parametrize(
    "tamper, message",
    [
        ("return", "does not return what the re-run's record says"),
        ("agent", "is not of the entry's agent file"),
        ("episode", "is not of the entry's episode"),
        ("task", "is not of the entry's task"),
        ("missing", "the re-run kept 17 replays, not 18"),
        ("actions", "does not reproduce the evaluated episode|does not end at its last action"),
    ],
)
def test_replays_that_do_not_match_the_rerun_are_refused(played, tmp_path, tamper, message):
    entry, record, items = played
    assert len(replays.rerun_replays(entry, record, _folder(tmp_path / "good", items), 1)) == 18
    items = copy.deepcopy(items)
    scored = max(range(len(items)), key=lambda i: items[i]["return"])
    target = items[scored]
    assert target["return"] > 0  # other actions from its start earn something else
    if tamper == "return":
        target["return"] += 1.0
    elif tamper == "agent":
        target["agent"] = "other_agent.py"
    elif tamper == "episode":
        target["episode"] = 1
    elif tamper == "task":
        target["task_id"] = "lbf-po-v1"
    elif tamper == "missing":
        del items[scored]
    else:  # the same return from other actions: the env says no
        target["actions"] = [[4] * len(a) for a in target["actions"]]
    with pytest.raises(replays.ReplaysError, match=message):
        replays.rerun_replays(entry, record, _folder(tmp_path / "bad", items), 1)


@needs_chromium
def test_a_teammates_link_opens_its_episode_and_the_viewer_draws_the_rendered_frames(board):
    from aht_bench import envs
    from aht_bench.envs.render import render_frame

    kept = json.loads(replays.replays_path(board, SLUG).read_text())
    member = _entry(board)["payload"]["members"][2]["name"]
    want = next(r for r in kept if r["member"] == member)
    env, states = envs.task(want["task_id"]).env, replay(want).states
    with chromium_page() as (page, errors):
        page.goto((board / "index.html").as_uri())
        page.click(f'p.replays a[href$="#member={member}"]')
        page.wait_for_function("document.getElementById('screen') !== null")
        assert member in (page.text_content("#episode option:checked") or "")
        assert "Returns identical to the record's" in (page.text_content("#note") or "")
        steps = len(want["actions"])
        for t in (0, steps):
            if t:
                page.click("#end")
            page.wait_for_function(
                f"document.getElementById('screen').dataset.step === '{t}'", timeout=20_000
            )
            pixels = page.evaluate(
                "() => { const c = document.getElementById('screen');"
                " return Array.from(c.getContext('2d').getImageData(0, 0, c.width,"
                " c.height).data); }"
            )
            frame = render_frame(env, states[t])
            shown = np.asarray(pixels, np.uint8).reshape(*frame.shape[:2], 4)[..., :3]
            assert np.array_equal(shown, frame), f"step {t}: the canvas is not the frame"
        assert page.text_content("#step") == f"{steps} / {steps}"
        assert float(page.get_attribute("#score", "data-value") or "nan") == want["return"]
        assert not errors
