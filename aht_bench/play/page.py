"""The play page (HTML + JS, no dependencies): connects to the server's socket with the page's
query, draws each frame it gets, sends the player's keys, and shows the score at the end.

Keys: arrows move, space interacts (Overcooked) or loads (LBF); nothing pressed: no-op.

May import nothing.
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>aht-bench play: __TITLE__</title>
<style>
body{font-family:system-ui,sans-serif;margin:16px;color:#222}
#screen{border:1px solid #888;image-rendering:pixelated}
#status{font-size:18px;margin:8px 0}
td{padding:2px 8px}
</style></head><body>
<h2>__TITLE__</h2>
<div id="status">connecting...</div>
<canvas id="screen" tabindex="0"></canvas>
<table><tr><td>you</td><td id="seat"></td></tr>
<tr><td>step</td><td id="step"></td></tr>
<tr><td>return</td><td id="score"></td></tr>
<tr><td>BRProx</td><td id="brprox"></td></tr></table>
<p id="again" hidden><a href="">Play again</a></p>
<p>Arrow keys move; space interacts (Overcooked) or loads (LBF). The teammate plays on its own.</p>
<script>
const $ = (id) => document.getElementById(id);
let horizon = 0, actions = [];
const KEYS = {ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right"};
const proto = location.protocol === "https:" ? "wss://" : "ws://";
const ws = new WebSocket(proto + location.host + "/ws" + location.search);
const img = new Image();
img.onload = () => {
  const c = $("screen"); c.width = img.width; c.height = img.height;
  c.style.width = Math.round(img.width * 1.5) + "px";
  c.getContext("2d").drawImage(img, 0, 0);
};
function score(x) { $("score").textContent = String(Number(x.toPrecision(6)));
  $("score").dataset.value = String(x); }
ws.onmessage = (event) => {
  const m = JSON.parse(event.data);
  if (m.type === "start") {
    horizon = m.horizon; actions = m.actions;
    $("seat").textContent = "seat " + m.seat + " (" + m.task_id + ", with " + m.teammate + ")";
    $("status").textContent = "playing"; $("status").dataset.state = "playing";
    $("step").textContent = "0 / " + horizon; score(0);
  } else if (m.type === "step") {
    $("step").textContent = m.t + " / " + horizon; score(m["return"]);
  } else if (m.type === "end") {
    score(m["return"]);
    $("brprox").textContent = m.brprox === null ? "(no bounds: not a heldout member)"
      : String(Number(m.brprox.toPrecision(4)));
    $("status").textContent = "episode over: return " + $("score").textContent +
      (m.saved ? " (saved as " + m.saved + ")" : "");
    $("status").dataset.state = "over"; $("status").dataset.saved = m.saved || "";
    $("again").hidden = false;
  }
  if (m.frame) img.src = m.frame;
};
ws.onclose = () => { if ($("status").dataset.state !== "over") {
  $("status").textContent = "disconnected"; $("status").dataset.state = "closed"; } };
function send(name) { if (ws.readyState === 1 && actions.includes(name))
  ws.send(JSON.stringify({action: name})); }
document.addEventListener("keydown", (e) => {
  let name = KEYS[e.key];
  if (e.key === " ") name = actions.includes("interact") ? "interact" : "load";
  if (name) { e.preventDefault(); send(name); }
});
</script></body></html>
"""
