"""Load of the play server (`aht-bench play`): N players at once on localhost, each playing one
whole episode with keys sent every tick, and the tick rate each reached.

    python benchmarks/play_load.py --task cramped_room --teammate heldout:v2:ippo_mlp_0 \
        --players 20 --tick-hz 6 [--out benchmarks/results/play_load.json]

A tick is one env step of the player's episode with the teammate's policy, the frame drawn and
sent as a PNG. `--players 1 --tick-hz 200` measures the fastest one episode can go (the
server's per-step cost). Prints min / median / max of the reached rates and the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import aiohttp

from aht_bench.play.server import PlayConfig, serving


async def _player(url: str, seed: int) -> dict:
    moves = ["up", "down", "left", "right"]
    steps = 0
    async with aiohttp.ClientSession() as s, s.ws_connect(f"{url}/ws?seed={seed}") as ws:
        async for msg in ws:
            m = json.loads(msg.data)
            if m["type"] == "step":
                steps += 1
                await ws.send_json({"action": moves[steps % 4]})
            elif m["type"] == "end":
                return m | {"steps": steps}
    raise RuntimeError(f"player {seed}: the socket closed before the end")


async def _crowd(url: str, players: int) -> list[dict]:
    return await asyncio.gather(*(_player(url, i) for i in range(players)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--task", default="cramped_room")
    parser.add_argument("--teammate", default="heldout:v2:ippo_mlp_0")
    parser.add_argument("--players", type=int, default=20)
    parser.add_argument("--tick-hz", type=float, default=6.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    config = PlayConfig(args.task, args.teammate, tick_hz=args.tick_hz, max_players=args.players)
    with serving(config) as url:
        began = time.monotonic()
        ends = asyncio.run(_crowd(url, args.players))
        took = time.monotonic() - began
    rates = sorted(e["tick_hz_reached"] for e in ends)
    row = {
        "task": args.task,
        "teammate": args.teammate,
        "players": args.players,
        "tick_hz_asked": args.tick_hz,
        "steps_per_episode": ends[0]["steps"],
        "reached_min": rates[0],
        "reached_median": statistics.median(rates),
        "reached_max": rates[-1],
        "wall_s": took,
    }
    print(
        f"{args.players} player(s), {args.task} with {args.teammate}, {args.tick_hz:g} Hz asked: "
        f"reached {rates[0]:.2f} / {row['reached_median']:.2f} / {rates[-1]:.2f} Hz "
        f"(min / median / max), {row['steps_per_episode']} steps each, {took:.1f} s"
    )
    if args.out is not None:
        args.out.write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
