"""The replay viewer: one self-contained HTML page (no server, no network) that plays replays
of evaluated episodes on a canvas, with play/pause, step, a speed choice, a slider, both
agents' actions and the rewards on a timeline.

    html = viewer_html(replays)            # replays: `aht_bench.evaluation.replay` records
    write_viewer(Path("replays.html"), replays)

Every replay is replayed first (`replay.replay`: it must reproduce its recorded return to the
bit), and each state is drawn by the task's own renderer (`aht_bench.envs.render.render_frame`,
the frames of `aht-bench render`). The page holds each distinct tile of those frames once
(`Atlas`: the task's grid cells, exact pixels, one PNG) and every frame as the tiles that
changed, so an Overcooked episode of 400 steps takes about ten kilobytes, not a picture per
step. The page shows the return after each step; at the last step it is the replay's return,
the number in the result record. `#member=NAME` in the page's address opens that teammate's
first episode (the leaderboard's links).

May import numpy, PIL, jax, the standard library, aht_bench.envs, aht_bench.files and
aht_bench.evaluation.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from aht_bench.evaluation.replay import replay


def png_data_uri(frame: np.ndarray, optimize: bool = False) -> str:
    """An RGB frame as a PNG data URI, exact: `optimize` for pages that are kept (the viewer's
    atlas), else the fastest compression (frames sent once: the play page)."""
    buffer = io.BytesIO()
    image = Image.fromarray(np.asarray(frame, np.uint8))
    if optimize:
        image.save(buffer, format="PNG", optimize=True)
    else:
        image.save(buffer, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


@dataclasses.dataclass
class Atlas:
    """The distinct tiles of a page's frames: every frame is cut into tiles of one size (the
    task's grid cell, `render_cell`, or the whole frame for a task without one) and stored once
    per distinct tile, so a page holds each picture of a cell once, not every frame. Exact: the
    tiles are the rendered pixels, unquantised."""

    tile: tuple[int, int] | None = None  # (height, width) in pixels
    tiles: list[np.ndarray] = dataclasses.field(default_factory=list)
    index: dict[bytes, int] = dataclasses.field(default_factory=dict)

    def add(self, frame: np.ndarray, cell: int | None) -> tuple[tuple[int, int], list[int]]:
        """((rows, cols), each tile's index, row-major) of `frame` (H, W, 3) cut into `cell`
        pixel tiles, adding the tiles not seen before."""
        frame = np.asarray(frame, np.uint8)
        height, width = int(frame.shape[0]), int(frame.shape[1])
        th, tw = (height, width)
        if cell and height % cell == 0 and width % cell == 0:
            th, tw = cell, cell
        if self.tile is None:
            self.tile = (th, tw)
        if self.tile != (th, tw):
            raise ValueError(f"tiles of {th}x{tw} pixels on a page of {self.tile} tiles")
        rows, cols = height // th, width // tw
        blocks = frame.reshape(rows, th, cols, tw, 3).swapaxes(1, 2).reshape(-1, th, tw, 3)
        out = []
        for block in blocks:
            key = block.tobytes()
            if key not in self.index:
                self.index[key] = len(self.tiles)
                self.tiles.append(block)
            out.append(self.index[key])
        return (rows, cols), out

    def data(self) -> dict[str, Any]:
        """The page's atlas: one PNG of every tile, `per_row` to a row, and the tile size."""
        if self.tile is None:
            raise ValueError("an atlas without tiles")
        th, tw = self.tile
        per_row = max(1, min(len(self.tiles), _ATLAS_WIDTH // tw))
        rows = -(-len(self.tiles) // per_row)
        image = np.zeros((rows * th, per_row * tw, 3), np.uint8)
        for i, block in enumerate(self.tiles):
            r, c = divmod(i, per_row)
            image[r * th : (r + 1) * th, c * tw : (c + 1) * tw] = block
        return {"png": png_data_uri(image, optimize=True), "tile": [th, tw],
                "per_row": per_row}  # fmt: skip


_ATLAS_WIDTH = 1536  # pixels: the atlas's rows hold this many pixels of tiles at most


def _deltas(grids: list[list[int]]) -> list[list[int]]:
    """Each frame after the first as the tiles that changed: [position, tile, ...]."""
    out = []
    for before, after in zip(grids, grids[1:], strict=False):
        out.append([x for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b
                    for x in (i, b)])  # fmt: skip
    return out


def episode_view(record: dict[str, Any], atlas: Atlas) -> dict[str, Any]:
    """What the page needs of one replay: its frames (tiles of `atlas`: the first frame's, then
    each step's changes), joint actions and the agent's return after each step."""
    from aht_bench import envs
    from aht_bench.envs.render import render_frame

    env = envs.task(record["task_id"]).env
    played = replay(record)
    cell = getattr(env, "render_cell", None)
    tiled = [atlas.add(render_frame(env, state), cell) for state in played.states]
    shapes, grids = zip(*tiled, strict=True)
    names = list(getattr(env, "action_names", ())) or [str(a) for a in range(env.num_actions)]
    return {
        "title": (
            f"{record['agent']} with {record['member']} on {record['task_id']}: agent in "
            f"seat {','.join(str(s) for s in record['seating'])}, episode {record['episode']}"
        ),
        "member": record["member"],
        "agent_seats": record["seating"],
        "action_names": names,
        "actions": [[int(a) for a in step] for step in record["actions"]],
        "returns": [float(r) for r in played.returns],
        "recorded_return": float(record["return"]),
        "grid": list(shapes[0]),
        "first": grids[0],
        "changes": _deltas(list(grids)),
    }


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="aht-bench-viewer" content="__STAMP__"><title>__TITLE__</title>
<style>
body{font-family:system-ui,sans-serif;margin:16px;color:#222}
#controls button,#controls select{font-size:14px;margin-right:4px}
#stage{display:flex;gap:16px;align-items:flex-start;margin-top:8px}
#screen{border:1px solid #888;image-rendering:pixelated}
#info td{padding:2px 8px}
#timeline{border:1px solid #ccc;margin-top:8px;cursor:pointer}
</style></head><body>
<h2>__TITLE__</h2>
<p id="note">__NOTE__</p>
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
const DATA = JSON.parse(document.getElementById("data").textContent);
const EPISODES = DATA.episodes, ATLAS = DATA.atlas;
const $ = (id) => document.getElementById(id);
let ep = null, frames = [], t = 0, timer = null;
const atlas = new Image();
function decode(e) {
  // the first frame's tiles, then each step's changed tiles ([position, tile, ...])
  const out = [e.first.slice()];
  e.changes.forEach((ch) => {
    const g = out[out.length - 1].slice();
    for (let i = 0; i < ch.length; i += 2) g[ch[i]] = ch[i + 1];
    out.push(g);
  });
  return out;
}
function paint() {
  const [th, tw] = ATLAS.tile, [rows, cols] = ep.grid, c = $("screen");
  if (c.width !== cols * tw || c.height !== rows * th) {
    c.width = cols * tw; c.height = rows * th;
    c.style.width = Math.round(c.width * 1.5) + "px";
  }
  const g = c.getContext("2d"), tiles = frames[t];
  for (let i = 0; i < tiles.length; i++) {
    const k = tiles[i], sx = (k % ATLAS.per_row) * tw, sy = Math.floor(k / ATLAS.per_row) * th;
    g.drawImage(atlas, sx, sy, tw, th, (i % cols) * tw, Math.floor(i / cols) * th, tw, th);
  }
  c.dataset.step = String(t);
}
function draw() {
  if (atlas.complete && atlas.naturalWidth) paint(); else atlas.onload = paint;
  const last = frames.length - 1;
  $("step").textContent = t + " / " + last;
  $("actions").textContent = t > 0 ? ep.actions[t - 1].map((a, s) =>
      "seat " + s + (ep.agent_seats.includes(s) ? " (agent)" : " (teammate)") + ": " +
      ep.action_names[a]
    ).join(", ") : "(start)";
  const fmt = (x) => String(Number(x.toPrecision(6)));
  $("reward").textContent = t > 0 ? fmt(ep.returns[t] - ep.returns[t - 1]) : "";
  $("score").textContent = fmt(ep.returns[t]);
  $("score").dataset.value = String(ep.returns[t]);
  $("recorded").textContent = fmt(ep.recorded_return);
  $("slider").value = t;
  timeline();
}
function timeline() {
  const c = $("timeline"), g = c.getContext("2d"), n = frames.length - 1;
  g.clearRect(0, 0, c.width, c.height);
  g.fillStyle = "#eee"; g.fillRect(0, 20, c.width, 20);
  for (let i = 0; i < n; i++) {
    const r = ep.returns[i + 1] - ep.returns[i];
    if (r === 0) continue;
    g.fillStyle = r > 0 ? "#2a2" : "#c22";
    g.fillRect(Math.floor(i * c.width / n), 4, 3, 52);
  }
  g.fillStyle = "#06c"; g.fillRect(Math.floor(t * c.width / Math.max(n, 1)) - 1, 0, 3, 60);
}
function go(step) {
  t = Math.max(0, Math.min(frames.length - 1, step)); draw();
  if (t === frames.length - 1) stop();
}
function stop() {
  if (timer) { clearInterval(timer); timer = null; }
  $("play").textContent = "Play";
}
function play() {
  if (timer) { stop(); return; }
  if (t === frames.length - 1) t = 0;
  $("play").textContent = "Pause";
  timer = setInterval(() => go(t + 1), 1000 / Number($("speed").value));
}
function select(i) {
  stop(); ep = EPISODES[i]; frames = decode(ep); t = 0;
  $("episode").value = String(i);
  $("slider").max = frames.length - 1; draw();
}
function fromHash() {
  // #member=NAME opens that teammate's first episode (the leaderboard's links)
  const m = /^#member=(.*)$/.exec(location.hash);
  const i = m ? EPISODES.findIndex((e) => e.member === decodeURIComponent(m[1])) : -1;
  return Math.max(i, 0);
}
EPISODES.forEach((e, i) => {
  const o = document.createElement("option"); o.value = i; o.textContent = e.title;
  $("episode").appendChild(o);
});
$("episode").onchange = (e) => select(Number(e.target.value));
$("play").onclick = play;
$("back").onclick = () => { stop(); go(t - 1); };
$("next").onclick = () => { stop(); go(t + 1); };
$("end").onclick = () => { stop(); go(frames.length - 1); };
$("slider").oninput = (e) => { stop(); go(Number(e.target.value)); };
$("speed").onchange = () => { if (timer) { stop(); play(); } };
$("timeline").onclick = (e) => {
  stop(); go(Math.round(e.offsetX / $("timeline").width * (frames.length - 1)));
};
document.addEventListener("keydown", (e) => {
  if (e.key === " ") { e.preventDefault(); play(); }
  if (e.key === "ArrowRight") { stop(); go(t + 1); }
  if (e.key === "ArrowLeft") { stop(); go(t - 1); }
});
window.addEventListener("hashchange", () => select(fromHash()));
atlas.src = ATLAS.png;
select(fromHash());
</script></body></html>
"""


VIEWER_VERSION = 2  # of the page's data and script; part of every page's stamp
_STAMP = re.compile(r'<meta name="aht-bench-viewer" content="([^"]*)">')


def viewer_html(
    replays: list[dict[str, Any]],
    title: str = "aht-bench replays",
    note: str = "",
    source: str = "",
) -> str:
    """The viewer page for `replays` (each replayed and checked first), `note` under its title.
    The page is stamped with `VIEWER_VERSION` and `source` (e.g. the sha256 of the replays'
    file): `page_stamp` reads it back, so a page can be rebuilt only when either changed."""
    if not replays:
        raise ValueError("no replays to show")
    atlas = Atlas()
    episodes = [episode_view(r, atlas) for r in replays]
    data = json.dumps({"atlas": atlas.data(), "episodes": episodes}, separators=(",", ":"))
    # JSON inside <script>: "</" would end the element
    data = data.replace("</", "<\\/")
    return (
        _PAGE.replace("__STAMP__", html.escape(stamp(source), quote=True))
        .replace("__TITLE__", html.escape(title))
        .replace("__NOTE__", html.escape(note))
        .replace("__DATA__", data)
    )


def stamp(source: str) -> str:
    """The stamp of a page of `source` made by this viewer."""
    return f"viewer {VIEWER_VERSION}; {source}"


def page_stamp(path: Path) -> str | None:
    """The stamp of the viewer page at `path`, or None (no such file, or not a viewer page)."""
    try:
        head = path.read_bytes()[:2048].decode("utf-8", "replace")
    except OSError:
        return None
    found = _STAMP.search(head)
    return html.unescape(found.group(1)) if found else None


def write_viewer(
    path: Path,
    replays: list[dict[str, Any]],
    title: str = "aht-bench replays",
    note: str = "",
    source: str = "",
) -> Path:
    """`viewer_html(...)` written to `path`, atomically."""
    from aht_bench.files import atomic_write_bytes

    atomic_write_bytes(path, viewer_html(replays, title, note, source).encode())
    return path


__all__ = [
    "VIEWER_VERSION",
    "Atlas",
    "episode_view",
    "page_stamp",
    "png_data_uri",
    "stamp",
    "viewer_html",
    "write_viewer",
]
