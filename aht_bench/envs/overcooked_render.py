"""Drawing an Overcooked state: an RGB frame (`render_rgb`, PIL) and a text picture
(`render_text`), behind `Overcooked.render_rgb` and `Overcooked.render_text`.

May import numpy, PIL and aht_bench.envs.overcooked (its constants, for types the class).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from aht_bench.envs.overcooked import (
    ACTION_NAMES,
    AGENT_VIEW_SIZE,
    CELL_GOAL,
    CELL_ONION_PILE,
    CELL_PLATE_PILE,
    CELL_POT,
    COUNTER,
    DIR_TO_VEC,
    DISH,
    EMPTY,
    FLOOR,
    ONION,
    PLATE,
    POT_EMPTY_STATUS,
)

if TYPE_CHECKING:
    from aht_bench.envs.overcooked import Overcooked

_FLOOR_RGB = (236, 226, 204)
_COUNTER_RGB = (160, 120, 80)
_COUNTER_EDGE = (110, 80, 50)
_GOAL_RGB = (120, 170, 120)
_POT_RGB = (60, 60, 60)
_ONION_RGB = (235, 200, 40)
_PLATE_RGB = (250, 250, 250)
_SOUP_RGB = (230, 120, 40)
_SEAT_RGB = ((40, 100, 230), (220, 60, 60))


def render_rgb(env: Overcooked, inner: Any, cell: int) -> np.ndarray:
    from PIL import Image, ImageDraw

    h, w, c = env.height, env.width, cell
    pad = AGENT_VIEW_SIZE - 1
    maze = np.asarray(inner.maze_map)[pad : pad + h, pad : pad + w]
    image = Image.new("RGB", (w * c, h * c), _FLOOR_RGB)
    draw = ImageDraw.Draw(image)

    def box(x: int, y: int, margin: float) -> tuple[float, float, float, float]:
        m = margin * c
        return (x * c + m, y * c + m, (x + 1) * c - 1 - m, (y + 1) * c - 1 - m)

    def item(x: float, y: float, kind: int, scale: float = 1.0) -> None:
        # An item centred at cell coordinates (x, y) (cell units), kind an object id.
        r = 0.18 * c * scale
        cx, cy = x * c, y * c
        if kind == ONION:
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), _ONION_RGB, (150, 120, 0))
        elif kind in (PLATE, DISH):
            r *= 1.3
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), _PLATE_RGB, (120, 120, 120))
            if kind == DISH:
                s = 0.6 * r
                draw.ellipse((cx - s, cy - s, cx + s, cy + s), _SOUP_RGB)

    for y in range(h):
        for x in range(w):
            kind = env.kinds[y, x]
            if kind == FLOOR:
                continue
            draw.rectangle(box(x, y, 0), _COUNTER_RGB, _COUNTER_EDGE)
            if kind == COUNTER:
                item(x + 0.5, y + 0.5, int(maze[y, x, 0]))
            elif kind == CELL_ONION_PILE:
                for dx, dy in ((0.35, 0.38), (0.65, 0.38), (0.5, 0.65)):
                    item(x + dx, y + dy, ONION, 0.8)
            elif kind == CELL_PLATE_PILE:
                for dy in (0.62, 0.5, 0.38):
                    item(x + 0.5, y + dy, PLATE, 0.9)
            elif kind == CELL_GOAL:
                draw.rectangle(box(x, y, 0.08), _GOAL_RGB)
                draw.polygon(
                    [
                        (x * c + 0.3 * c, y * c + 0.3 * c),
                        (x * c + 0.7 * c, y * c + 0.5 * c),
                        (x * c + 0.3 * c, y * c + 0.7 * c),
                    ],
                    (255, 255, 255),
                )
            elif kind == CELL_POT:
                status = int(maze[y, x, 2])
                draw.rounded_rectangle(box(x, y, 0.12), 0.1 * c, _POT_RGB)
                if status >= 20:  # 23 - status onions in, not cooking
                    for k in range(POT_EMPTY_STATUS - status):
                        item(x + 0.3 + 0.2 * k, y + 0.45, ONION, 0.6)
                else:
                    soup = (90, 200, 90) if status == 0 else _SOUP_RGB
                    draw.ellipse(box(x, y, 0.22), soup)
                    if status > 0:  # cooking progress bar
                        done = (20 - status) / 20
                        x0, y0 = x * c + 0.15 * c, y * c + 0.8 * c
                        draw.rectangle((x0, y0, x0 + 0.7 * c, y0 + 0.07 * c), (30, 30, 30))
                        draw.rectangle((x0, y0, x0 + 0.7 * c * done, y0 + 0.07 * c), _ONION_RGB)

    dir_vec = np.asarray(DIR_TO_VEC).astype(np.float64)
    for i in range(2):
        x, y = (int(v) for v in np.asarray(inner.agent_pos[i]))
        dx, dy = dir_vec[int(inner.agent_dir_idx[i])]
        cx, cy, r = (x + 0.5) * c, (y + 0.5) * c, 0.34 * c
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), _SEAT_RGB[i], (20, 20, 20), 2)
        # A triangle pointing where the agent faces.
        tip = (cx + dx * 0.48 * c, cy + dy * 0.48 * c)
        side = (-dy * 0.14 * c, dx * 0.14 * c)
        base = (cx + dx * 0.28 * c, cy + dy * 0.28 * c)
        draw.polygon(
            [tip, (base[0] + side[0], base[1] + side[1]), (base[0] - side[0], base[1] - side[1])],
            (20, 20, 20),
        )
        held = int(inner.agent_inv[i])
        if held != EMPTY:
            item(x + 0.5 - dx * 0.08, y + 0.5 - dy * 0.08, held, 0.8)
        draw.text((x * c + 3, y * c + 1), str(i), fill=(20, 20, 20))
    return np.asarray(image, np.uint8)


_KIND_CHARS = {
    COUNTER: "W",
    CELL_ONION_PILE: "O",
    CELL_PLATE_PILE: "B",
    CELL_POT: "P",
    CELL_GOAL: "X",
}
_ITEM_CHARS = {ONION: "o", PLATE: "b", DISH: "d"}  # loose on a counter
_ITEM_NAMES = {EMPTY: "nothing", ONION: "an onion", PLATE: "a plate", DISH: "a soup"}


def _pot_text(status: int) -> str:
    if status >= 20:  # 23 - status onions in, not cooking yet
        onions = POT_EMPTY_STATUS - status
        return "empty" if onions == 0 else f"{onions} onion{'s' if onions > 1 else ''}"
    return "soup ready" if status == 0 else f"cooking, {status} steps left"


def render_text(env: Overcooked, inner: Any, episode_return: Any) -> str:
    """The layout in docs/overcooked.md's symbols (`W` counter, `O` onion pile, `B` plate pile,
    `P` pot, `X` delivery, blank floor) with the seats as `0`/`1` and loose items on counters as
    `o` onion, `b` plate, `d` soup; then the step and base return, each seat's cell, facing and
    held item, and each pot's content."""
    h, w = env.height, env.width
    pad = AGENT_VIEW_SIZE - 1
    maze = np.asarray(inner.maze_map)[pad : pad + h, pad : pad + w]
    rows = [[_KIND_CHARS.get(int(k), " ") for k in kinds] for kinds in env.kinds]
    for y, x in zip(*np.nonzero(env.kinds == COUNTER), strict=True):
        rows[y][x] = _ITEM_CHARS.get(int(maze[y, x, 0]), "W")
    seats = []
    for i in range(env.num_agents):
        x, y = (int(v) for v in np.asarray(inner.agent_pos[i]))
        rows[y][x] = str(i)
        facing = ACTION_NAMES[int(inner.agent_dir_idx[i])]
        held = _ITEM_NAMES.get(int(inner.agent_inv[i]), "?")
        seats.append(f"seat {i} at ({x},{y}) facing {facing}, holding {held}")
    pots = [
        f"pot ({x},{y}): {_pot_text(int(maze[y, x, 2]))}"
        for x, y in (tuple(int(v) for v in p) for p in env.pot_pos)
    ]
    ret = float(np.asarray(episode_return)[0])
    head = f"t={int(inner.step)}  return={ret:g}"
    return "\n".join([head, *("".join(r) for r in rows), *seats, *pots])


__all__ = ["render_rgb", "render_text"]
