"""`aht-bench play`: the play server and page. A person's episode is scripted key presses in
headless Chromium; the saved trajectory must replay exactly through the env; bad names are
refused with a clear message; 20 players at once on localhost (a bounded load test)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from browser import ARGS, CHROMIUM, needs_chromium

aiohttp = pytest.importorskip("aiohttp", reason="the play extra: pip install 'aht-bench[play]'")

from aht_bench.evaluation.replay import read_replays, replay  # noqa: E402
from aht_bench.play.server import PlayConfig, serving  # noqa: E402


def test_bad_task_teammate_or_seat_names_are_refused_with_the_fix():
    config = PlayConfig("lbf", "random")
    with serving(config) as url:

        async def get(path: str) -> tuple[int, str]:
            async with aiohttp.ClientSession() as s, s.get(url + path) as r:
                return r.status, await r.text()

        status, text = asyncio.run(get("/?task=lbff"))
        assert status == 400 and "unknown task 'lbff'" in text and "lbf-v1" in text
        status, text = asyncio.run(get("/ws?teammate=heldout:v2:ippo_mlp_9"))
        assert status == 400 and "has no member 'ippo_mlp_9'" in text
        status, text = asyncio.run(get("/?task=sabotage"))
        assert status == 400 and "two-player grid tasks" in text
        status, text = asyncio.run(get("/?seat=3"))
        assert status == 400 and "seat 3" in text
        status, text = asyncio.run(get("/ws?seed=abc"))
        assert status == 400 and "seed must be whole numbers" in text
        status, text = asyncio.run(get("/"))
        assert status == 200 and "lbf-v1 with random" in text


@needs_chromium
def test_a_scripted_player_finishes_cramped_room_and_the_saved_episode_replays_exactly(tmp_path):
    from playwright.sync_api import sync_playwright

    # 40 Hz: a 10 s episode, long enough for many key presses even when another test worker
    # loads the machine (at 100 Hz a loaded run pressed 49 keys in the whole episode)
    config = PlayConfig(
        "cramped_room", "heldout:v2:ippo_mlp_0", tick_hz=40.0, record=tmp_path / "human"
    )
    keys = ["ArrowLeft", "ArrowUp", " ", "ArrowRight", "ArrowDown", " "]
    with serving(config) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            page.goto(url + "/?seed=7")
            page.wait_for_selector("#status[data-state=playing]", timeout=120_000)
            pressed = 0
            deadline = time.monotonic() + 300
            while page.get_attribute("#status", "data-state") == "playing":
                assert time.monotonic() < deadline, "the episode did not end"
                page.keyboard.press(keys[pressed % len(keys)])
                pressed += 1
                page.wait_for_timeout(25)
            assert page.get_attribute("#status", "data-state") == "over"
            assert page.text_content("#step") == "400 / 400"
            shown = float(page.get_attribute("#score", "data-value") or "nan")
            saved = page.get_attribute("#status", "data-saved")
            brprox = page.text_content("#brprox")
        finally:
            browser.close()
    assert saved, f"nothing saved after {pressed} key presses"
    (episode,) = read_replays(tmp_path / "human" / saved)
    assert episode["member"] == "heldout:v2:ippo_mlp_0" and episode["agent"] == "human"
    assert len(episode["actions"]) == 400
    moves = [a[0] for a in episode["actions"]]  # the player's seat: keys became actions
    assert len(set(moves)) >= 3 and sum(m != 4 for m in moves) >= 20, (pressed, moves)
    played = replay(episode)  # raises unless it ends at its last action with its return
    assert float(played.returns[-1]) == shown == episode["return"]
    assert brprox and (brprox[0].isdigit() or brprox[0] == "-")


def test_twenty_players_at_once_each_finish_their_episode():
    config = PlayConfig("lbf", "heldout:v2:ippo_mlp_0", tick_hz=10.0, max_players=32)

    async def player(url: str, i: int) -> dict:
        steps = 0
        async with aiohttp.ClientSession() as s, s.ws_connect(url + f"/ws?seed={i}") as ws:
            async for msg in ws:
                m = json.loads(msg.data)
                if m["type"] == "start":
                    await ws.send_json({"action": "load"})
                elif m["type"] == "step":
                    steps += 1
                    await ws.send_json({"action": ["up", "down", "left", "right"][steps % 4]})
                elif m["type"] == "end":
                    return m | {"steps": steps}
        raise AssertionError(f"player {i}: the socket closed before the end")

    async def crowd(url: str) -> list[dict]:
        return await asyncio.wait_for(asyncio.gather(*(player(url, i) for i in range(20))), 300)

    with serving(config) as url:
        began = time.monotonic()
        ends = asyncio.run(crowd(url))
        took = time.monotonic() - began
    assert len(ends) == 20 and all(e["steps"] == 100 for e in ends)
    rates = sorted(e["tick_hz_reached"] for e in ends)
    print(f"20 players, LBF, 10 Hz asked: reached {rates[0]:.2f}-{rates[-1]:.2f} Hz, {took:.1f}s")
    assert all(e["brprox"] is not None for e in ends)
