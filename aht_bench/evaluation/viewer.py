"""The replay viewer: one self-contained HTML page (no server, no network) that plays replays
of evaluated episodes on a canvas, with play/pause, step, a speed choice, a slider, both
agents' actions and the rewards on a timeline.

    html = viewer_html(replays)            # replays: `aht_bench.evaluation.replay` records
    write_viewer(Path("replays.html"), replays)

Every replay is replayed first (`replay.replay`: it must reproduce its recorded return to the
bit), and each state is drawn by the task's own renderer (`aht_bench.envs.render.render_frame`,
the frames of `aht-bench render`), stored as palette PNGs in the page. The page shows the
return after each step; at the last step it is the replay's return, the number in the result
record.

May import numpy, PIL, jax, the standard library, aht_bench.envs, aht_bench.files and
aht_bench.evaluation.
"""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from aht_bench.evaluation.replay import replay


def png_data_uri(frame: np.ndarray, small: bool = True) -> str:
    """An RGB frame as a PNG data URI: `small` a 64-colour palette, optimised (pages that are
    kept: the viewer), else RGB at the fastest compression (frames sent once: the play page)."""
    buffer = io.BytesIO()
    image = Image.fromarray(np.asarray(frame, np.uint8))
    if small:
        image.quantize(colors=64).save(buffer, format="PNG", optimize=True)
    else:
        image.save(buffer, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def episode_view(record: dict[str, Any]) -> dict[str, Any]:
    """What the page needs of one replay: its frames, actions (by name), rewards, returns."""
    from aht_bench.envs.render import render_frame
    from aht_bench.evaluation.rollout import task_env

    env = task_env(record["task_id"])
    played = replay(record)
    frames = [png_data_uri(render_frame(env, state)) for state in played.states]
    names = list(getattr(env, "action_names", ())) or [str(a) for a in range(env.num_actions)]
    return {
        "title": (
            f"{record['agent']} with {record['member']} on {record['task_id']}: agent in "
            f"seat {','.join(str(s) for s in record['seating'])}, episode {record['episode']}"
        ),
        "agent_seats": record["seating"],
        "actions": [[names[a] for a in step] for step in record["actions"]],
        "rewards": [float(r) for r in played.rewards],
        "returns": [float(r) for r in played.returns],
        "recorded_return": float(record["return"]),
        "frames": frames,
    }


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{font-family:system-ui,sans-serif;margin:16px;color:#222}
#controls button,#controls select{font-size:14px;margin-right:4px}
#stage{display:flex;gap:16px;align-items:flex-start;margin-top:8px}
#screen{border:1px solid #888;image-rendering:pixelated}
#info td{padding:2px 8px}
#timeline{border:1px solid #ccc;margin-top:8px;cursor:pointer}
</style></head><body>
<h2>__TITLE__</h2>
<div><label>Episode <select id="episode"></select></label></div>
<div id="controls" style="margin-top:8px">
<button id="play">Play</button><button id="back">&#9664; Step</button>
<button id="next">Step &#9654;</button><button id="end">End</button>
<label>Speed <select id="speed"><option value="2">2/s</option><option value="8" selected>8/s
</option><option value="30">30/s</option><option value="120">120/s</option></select></label>
<input id="slider" type="range" min="0" value="0" style="width:320px">
</div>
<div id="stage"><canvas id="screen"></canvas>
<table id="info"><tr><td>step</td><td id="step"></td></tr>
<tr><td>actions</td><td id="actions"></td></tr>
<tr><td>reward</td><td id="reward"></td></tr>
<tr><td>return</td><td id="score"></td></tr>
<tr><td>recorded return</td><td id="recorded"></td></tr></table></div>
<canvas id="timeline" width="720" height="60"></canvas>
<script id="data" type="application/json">__DATA__</script>
<script>
const EPISODES = JSON.parse(document.getElementById("data").textContent);
const $ = (id) => document.getElementById(id);
let ep = null, t = 0, timer = null;
const images = {};
function image(src) {
  if (!images[src]) { images[src] = new Image(); images[src].src = src; }
  return images[src];
}
function draw() {
  const img = image(ep.frames[t]);
  const paint = () => {
    const c = $("screen"); c.width = img.width; c.height = img.height;
    c.style.width = Math.round(img.width * 1.5) + "px";
    c.getContext("2d").drawImage(img, 0, 0);
  };
  if (img.complete) paint(); else img.onload = paint;
  const last = ep.frames.length - 1;
  $("step").textContent = t + " / " + last;
  $("actions").textContent = t > 0 ? ep.actions[t - 1].map((a, s) =>
      "seat " + s + (ep.agent_seats.includes(s) ? " (agent)" : " (teammate)") + ": " + a
    ).join(", ") : "(start)";
  const fmt = (x) => String(Number(x.toPrecision(6)));
  $("reward").textContent = t > 0 ? fmt(ep.rewards[t - 1]) : "";
  $("score").textContent = fmt(ep.returns[t]);
  $("score").dataset.value = String(ep.returns[t]);
  $("recorded").textContent = fmt(ep.recorded_return);
  $("slider").value = t;
  timeline();
}
function timeline() {
  const c = $("timeline"), g = c.getContext("2d"), n = ep.frames.length - 1;
  g.clearRect(0, 0, c.width, c.height);
  g.fillStyle = "#eee"; g.fillRect(0, 20, c.width, 20);
  ep.rewards.forEach((r, i) => { if (r !== 0) {
    g.fillStyle = r > 0 ? "#2a2" : "#c22";
    g.fillRect(Math.floor(i * c.width / n), 4, 3, 52);
  }});
  g.fillStyle = "#06c"; g.fillRect(Math.floor(t * c.width / Math.max(n, 1)) - 1, 0, 3, 60);
}
function go(step) {
  t = Math.max(0, Math.min(ep.frames.length - 1, step)); draw();
  if (t === ep.frames.length - 1) stop();
}
function stop() {
  if (timer) { clearInterval(timer); timer = null; }
  $("play").textContent = "Play";
}
function play() {
  if (timer) { stop(); return; }
  if (t === ep.frames.length - 1) t = 0;
  $("play").textContent = "Pause";
  timer = setInterval(() => go(t + 1), 1000 / Number($("speed").value));
}
function select(i) {
  stop(); ep = EPISODES[i]; t = 0;
  $("slider").max = ep.frames.length - 1; draw();
}
EPISODES.forEach((e, i) => {
  const o = document.createElement("option"); o.value = i; o.textContent = e.title;
  $("episode").appendChild(o);
});
$("episode").onchange = (e) => select(Number(e.target.value));
$("play").onclick = play;
$("back").onclick = () => { stop(); go(t - 1); };
$("next").onclick = () => { stop(); go(t + 1); };
$("end").onclick = () => { stop(); go(ep.frames.length - 1); };
$("slider").oninput = (e) => { stop(); go(Number(e.target.value)); };
$("speed").onchange = () => { if (timer) { stop(); play(); } };
$("timeline").onclick = (e) => {
  stop(); go(Math.round(e.offsetX / $("timeline").width * (ep.frames.length - 1)));
};
document.addEventListener("keydown", (e) => {
  if (e.key === " ") { e.preventDefault(); play(); }
  if (e.key === "ArrowRight") { stop(); go(t + 1); }
  if (e.key === "ArrowLeft") { stop(); go(t - 1); }
});
select(0);
</script></body></html>
"""


def viewer_html(replays: list[dict[str, Any]], title: str = "aht-bench replays") -> str:
    """The viewer page for `replays` (each replayed and checked first)."""
    if not replays:
        raise ValueError("no replays to show")
    data = json.dumps([episode_view(r) for r in replays], separators=(",", ":"))
    # JSON inside <script>: "</" would end the element
    data = data.replace("</", "<\\/")
    return _PAGE.replace("__TITLE__", html.escape(title)).replace("__DATA__", data)


def write_viewer(
    path: Path, replays: list[dict[str, Any]], title: str = "aht-bench replays"
) -> Path:
    """`viewer_html(replays)` written to `path`, atomically."""
    from aht_bench.files import atomic_write_bytes

    atomic_write_bytes(path, viewer_html(replays, title).encode())
    return path


__all__ = ["episode_view", "png_data_uri", "viewer_html", "write_viewer"]
