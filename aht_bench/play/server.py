"""The play server: one page, one WebSocket per player, one episode per connection (see
`aht_bench.play`).

    app = make_app(PlayConfig(task="cramped_room", teammate="heldout:v2:ippo_mlp_0"))
    aiohttp.web.run_app(app, host="127.0.0.1", port=8765)

The page and the socket take `?task=&teammate=&seat=` (default: the config's); a bad name is
refused before anything starts, with the message `check_choice` gives (HTTP 400). Messages on
the socket are JSON: the browser sends {"action": "<action name>"} (the last one before a tick
is played; none: the task's no-op); the server sends {"type": "start", ...}, then one
{"type": "step", "t", "return", "frame"} per tick, then {"type": "end", "return", "brprox",
"saved"}. Frames are PNG data URIs drawn by the task's renderer.

May import aiohttp, numpy, the standard library, aht_bench.envs, aht_bench.adapters,
aht_bench.evaluation and aht_bench.play.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from aiohttp import WSMsgType, web

from aht_bench.evaluation.viewer import png_data_uri
from aht_bench.play.page import PAGE

if TYPE_CHECKING:
    from aht_bench.envs import Task

NOOPS = ("stay", "noop")
"""The action a tick plays when the player pressed nothing (the task's name for it)."""


class PlayError(ValueError):
    """A task, teammate or seat the server cannot play: the message names the fix."""


@dataclasses.dataclass(frozen=True)
class PlayConfig:
    task: str
    teammate: str
    seat: int = 0
    tick_hz: float = 6.0
    """Env steps per second of every episode (the Overcooked-AI demo plays at about 5-7)."""
    record: Path | None = None
    """Where finished episodes are saved as replays; None: nothing is saved."""
    max_players: int = 32


CONFIG: web.AppKey[PlayConfig] = web.AppKey("config", PlayConfig)
PLAYERS: web.AppKey[set[Any]] = web.AppKey("players", set)


@dataclasses.dataclass(frozen=True)
class Choice:
    """A checked (task, teammate, seat): what one player's episode plays."""

    task: Task
    teammate: str
    seat: int
    policy: Any
    params: Any
    bounds: tuple[float, float] | None
    """(lower, upper) of a heldout member (BRProx); None for other teammates."""
    teammate_set: dict[str, Any] | None

    @property
    def task_id(self) -> str:
        return self.task.id


@functools.lru_cache(maxsize=64)
def check_choice(task: str, teammate: str, seat: int) -> Choice:
    """The (task, teammate, seat) checked and resolved once; `PlayError` names what is wrong."""
    from aht_bench import envs
    from aht_bench.evaluation.sets import load_set
    from aht_bench.evaluation.teammates import HELDOUT_PREFIX, resolve_teammate

    try:
        resolved = envs.task(task)
    except envs.UnknownTaskError as e:
        raise PlayError(f"task {task!r}: {e}") from None
    task_id, env = resolved.id, resolved.env
    if env.num_agents != 2 or not hasattr(env, "render_rgb"):
        raise PlayError(
            f"task {task_id}: the play page plays two-player grid tasks (LBF and the Overcooked "
            "layouts); choose one of them"
        )
    if seat not in range(env.num_agents):
        raise PlayError(f"seat {seat}: {task_id} has seats 0 and 1")
    try:
        policy, params = resolve_teammate(resolved, teammate)
    except ValueError as e:
        raise PlayError(str(e)) from None
    bounds, set_block = None, None
    if teammate.startswith(HELDOUT_PREFIX):
        version, _, member = teammate.removeprefix(HELDOUT_PREFIX).partition(":")
        eval_set = load_set(resolved, version)
        i = eval_set.names.index(member)
        bounds = (float(eval_set.lower[i]), float(eval_set.upper[i]))
        set_block = {"id": eval_set.set_id, "manifest_sha256": eval_set.manifest_sha256}
    return Choice(resolved, teammate, seat, policy, params, bounds, set_block)


class _Episode:
    """One player's episode: the shell, the actions played, the return so far."""

    def __init__(self, choice: Choice, seed: int) -> None:
        from aht_bench.adapters.gym import EgoEnv

        self.choice, self.seed = choice, seed
        self.env = EgoEnv(
            choice.task,
            teammate=choice.policy,
            teammate_params=choice.params,
            seat=choice.seat,
            render_mode="rgb_array",
        )
        names = list(self.env.task.action_names)
        self.names = names
        self.noop = next((names.index(n) for n in NOOPS if n in names), 0)
        self.actions: list[list[int]] = []
        self.episode_return, self.t, self.done = 0.0, 0, False

    def begin(self) -> None:
        self.env.reset(seed=self.seed)

    def act(self, action: int) -> None:
        """One tick: the player's `action`, the teammate's, one env step."""
        _, _, terminated, truncated, info = self.env.step(action)
        assert self.env.last_actions is not None
        self.actions.append([int(a) for a in self.env.last_actions])
        self.episode_return = float(info["episode_return"])
        self.t, self.done = self.t + 1, bool(terminated or truncated)

    def frame(self) -> str:
        return png_data_uri(self.env.render())  # type: ignore[arg-type]

    def reset(self) -> str:
        self.begin()
        return self.frame()

    def step(self, action: int) -> str:
        self.act(action)
        return self.frame()

    def replay(self) -> dict[str, Any]:
        """The finished episode as a replay (`aht_bench.evaluation.replay`)."""
        from aht_bench.evaluation.replay import make_replay

        made = make_replay(
            task_id=self.choice.task_id,
            teammate_set=self.choice.teammate_set or {"id": None, "manifest_sha256": None},
            agent="human",
            member=self.choice.teammate,
            seating=[self.choice.seat],
            episode=0,
            start={"runner": "host", "jax_seed": self.env.jax_seed},
            actions=np.asarray(self.actions, np.int64),
            episode_return=self.episode_return,
        )
        made["played_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return made


def _choice_of(request: web.Request) -> tuple[Choice, int]:
    """The checked choice and seed of a request's query (the config's where not given)."""
    config, query = request.app[CONFIG], request.query
    try:
        seat = int(query.get("seat", config.seat))
        seed = int(query.get("seed", secrets.randbits(31)))
    except ValueError:
        raise PlayError("seat (0 or 1) and seed must be whole numbers") from None
    task, teammate = query.get("task", config.task), query.get("teammate", config.teammate)
    return check_choice(task, teammate, seat), seed


def _refused(e: PlayError) -> web.Response:
    return web.Response(status=400, text=f"error: {e}\n")


async def _page(request: web.Request) -> web.Response:
    try:
        choice, _ = _choice_of(request)
    except PlayError as e:
        return _refused(e)
    page = PAGE.replace("__TITLE__", f"{choice.task_id} with {choice.teammate}")
    return web.Response(text=page, content_type="text/html")


def _save(config: PlayConfig, replay: dict[str, Any]) -> str | None:
    if config.record is None:
        return None
    from aht_bench.evaluation.replay import write_replays

    config.record.mkdir(parents=True, exist_ok=True)
    name = f"{replay['played_utc'].replace(':', '')}-{secrets.token_hex(4)}.json"
    write_replays(config.record / name, [replay])
    return name


async def _socket(request: web.Request) -> web.StreamResponse:
    config: PlayConfig = request.app[CONFIG]
    try:
        choice, seed = _choice_of(request)
    except PlayError as e:
        return _refused(e)
    players: set[Any] = request.app[PLAYERS]
    if len(players) >= config.max_players:
        return web.Response(status=503, text=f"error: {config.max_players} players already\n")
    ws = web.WebSocketResponse(heartbeat=30)
    await ws.prepare(request)
    players.add(ws)
    try:
        await _run_episode(ws, choice, config, seed)
    except ConnectionResetError:  # the player left mid-episode: nothing to finish or save
        pass
    finally:
        players.discard(ws)
        await ws.close()
    return ws


async def _run_episode(ws: web.WebSocketResponse, choice: Choice, config: PlayConfig, seed: int):
    episode = _Episode(choice, seed)
    frame = await asyncio.to_thread(episode.reset)
    start = {"type": "start", "task_id": choice.task_id, "teammate": choice.teammate}
    start |= {"seat": choice.seat, "actions": episode.names, "horizon": episode.env.task.horizon}
    await ws.send_json(start | {"frame": frame, "tick_hz": config.tick_hz})
    pressed: list[int] = []

    async def read() -> None:
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                name = json.loads(msg.data).get("action")
                if name in episode.names:
                    pressed.append(episode.names.index(name))

    reader = asyncio.create_task(read())
    period, began = 1.0 / config.tick_hz, time.monotonic()
    try:
        while not episode.done and not ws.closed:
            await asyncio.sleep(max(0.0, began + (episode.t + 1) * period - time.monotonic()))
            action = pressed[-1] if pressed else episode.noop
            pressed.clear()
            frame = await asyncio.to_thread(episode.step, action)
            step = {"type": "step", "t": episode.t, "return": episode.episode_return}
            await ws.send_json(step | {"frame": frame})
    finally:
        reader.cancel()
    if not episode.done:
        return
    lower_upper = choice.bounds
    brprox = None
    if lower_upper is not None:
        brprox = (episode.episode_return - lower_upper[0]) / (lower_upper[1] - lower_upper[0])
    rate = episode.t / max(time.monotonic() - began, 1e-9)
    saved = _save(config, episode.replay())
    end = {"type": "end", "return": episode.episode_return, "brprox": brprox, "saved": saved}
    await ws.send_json(end | {"bounds": lower_upper, "tick_hz_reached": rate})


@contextlib.contextmanager
def serving(config: PlayConfig) -> Iterator[str]:
    """The app of `config` served on a free localhost port from a thread (tests, benchmarks);
    yields its base URL."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(make_app(config))
    ready = threading.Event()
    port: list[int] = []

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.append(runner.addresses[0][1])
        ready.set()

    def run() -> None:
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if not ready.wait(120):
        raise PlayError("the play server did not start in 120 s")
    try:
        yield f"http://127.0.0.1:{port[0]}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(60)


def make_app(config: PlayConfig) -> web.Application:
    """The web app of `config` (its default choice checked first: `PlayError`)."""
    if config.tick_hz <= 0 or config.max_players < 1:
        raise PlayError("tick_hz must be > 0 and max_players >= 1")
    check_choice(config.task, config.teammate, config.seat)
    app = web.Application()
    app[CONFIG], app[PLAYERS] = config, set()
    app.router.add_get("/", _page)
    app.router.add_get("/ws", _socket)
    return app


__all__ = ["Choice", "PlayConfig", "PlayError", "check_choice", "make_app", "serving"]
