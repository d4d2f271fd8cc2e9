"""The method x task overview at the top of the leaderboard's pages: one row per entry name, one
column per current table (a task and its heldout set), each cell the verifier's mean BRProx
with its 95% CI and the entry's rank in that table; as a markdown table, an HTML table and one
figure (an SVG dot plot: a panel per column, a row per name, the mean as a dot and the CI as a
bar; filled for a ranked entry, hollow for an unranked one with a number of the verifier's).

    cells = {(name, column): Cell(...)}      # render.py builds them from the tables
    rows = order(cells)                      # names, best first
    lines = markdown(columns, rows, cells)
    svg = figure(columns, rows, cells)

Rows are ordered by their mean over the columns that rank them of the ranked means (highest
first), then by how many columns rank them (most first), then by name; rows ranked nowhere
come last. Output depends only on the cells (no dates, no paths): rendering twice
gives the same bytes.

May import the standard library only.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence

Column = tuple[str, str]  # (task_id, heldout version)


@dataclasses.dataclass(frozen=True)
class Cell:
    rank: str
    """The entry's rank in its table ("1", "2", ...) or "-" when unranked."""
    mean: dict | None
    """The verifier's mean {"value", "ci"}; None without a re-run of the verifier's."""

    @property
    def ranked(self) -> bool:
        return self.rank != "-"


def column_label(column: Column) -> str:
    """A column's short title: the task id without its family prefix, and the set version."""
    task_id, version = column
    return f"{task_id.removeprefix('overcooked-')} ({version})"


def order(cells: dict[tuple[str, Column], Cell]) -> list[str]:
    """The row names, best first (see the module docstring)."""
    names = sorted({name for name, _ in cells})

    def key(name: str) -> tuple[bool, float, int, str]:
        ranked = [
            c.mean["value"] for (n, _), c in cells.items() if n == name and c.ranked and c.mean
        ]
        mean = sum(ranked) / len(ranked) if ranked else 0.0
        return (not ranked, -mean, -len(ranked), name)

    return sorted(names, key=key)


def cell_text(cell: Cell | None) -> str:
    """`0.452 [0.431, 0.470] #2`; unranked: `(0.452 [...], unranked)`; no number: `-`."""
    if cell is None:
        return ""
    if cell.mean is None:
        return "-"
    lo, hi = cell.mean["ci"]
    number = f"{cell.mean['value']:.3f} [{lo:.3f}, {hi:.3f}]"
    return f"{number} #{cell.rank}" if cell.ranked else f"({number}, unranked)"


def _md(text: str) -> str:
    text = " ".join(text.split())
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(a, b)
    return text


def markdown(
    columns: Sequence[Column], rows: Sequence[str], cells: dict[tuple[str, Column], Cell]
) -> list[str]:
    """The overview as markdown table lines."""
    head = ["name", *(column_label(c) for c in columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for name in rows:
        texts = [cell_text(cells.get((name, c))) for c in columns]
        lines.append("| " + " | ".join([_md(name), *texts]) + " |")
    return lines


def html_table(
    columns: Sequence[Column], rows: Sequence[str], cells: dict[tuple[str, Column], Cell]
) -> str:
    """The overview as a static HTML table."""
    e = html.escape
    head = "".join(f'<th scope="col">{e(column_label(c))}</th>' for c in columns)
    body = []
    for name in rows:
        tds = "".join(f'<td class="num">{e(cell_text(cells.get((name, c))))}</td>' for c in columns)
        body.append(f'<tr><th scope="row">{e(name)}</th>{tds}</tr>')
    return (
        '<div class="scroll"><table class="overview"><thead><tr><th scope="col">name</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


# --- the figure ------------------------------------------------------------------------------

_LABEL, _PANEL, _GAP, _ROW, _TOP, _BOTTOM = 210.0, 130.0, 30.0, 18.0, 40.0, 26.0
_LEGEND_STEP = 330.0  # from the first legend item to the second
_RANKED, _UNRANKED = "#4c78a8", "#9a9a9a"


def figure(
    columns: Sequence[Column], rows: Sequence[str], cells: dict[tuple[str, Column], Cell]
) -> str:
    """The overview as one SVG (see the module docstring); the x axis of every panel is BRProx
    over [min(0, lowest CI end), max(1, highest CI end)], with 1 (a best response) dashed."""
    means = [c.mean for c in cells.values() if c.mean is not None]
    lo = min([0.0, *(m["ci"][0] for m in means)])
    hi = max([1.0, *(m["ci"][1] for m in means)])
    width = _LABEL + len(columns) * (_PANEL + _GAP)
    height = _TOP + len(rows) * _ROW + _BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
        'aria-label="mean BRProx with 95% CIs per entry and task">',
        "<style>text { font: 11px system-ui, sans-serif; fill: #1b1b1b; }</style>",
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="#fff"/>',
    ]
    for i, name in enumerate(rows):
        y = _TOP + i * _ROW + _ROW / 2
        if i % 2 == 0:
            out.append(
                f'<rect x="0" y="{y - _ROW / 2:.1f}" width="{width:.0f}" height="{_ROW:.0f}" '
                'fill="#f6f6f6"/>'
            )
        out.append(
            f'<text x="{_LABEL - 8:.1f}" y="{y + 4:.1f}" text-anchor="end">'
            f"{html.escape(name)}</text>"
        )
    for j, column in enumerate(columns):
        left = _LABEL + j * (_PANEL + _GAP)
        out += _panel(column, left, lo, hi, len(rows))
        for i, name in enumerate(rows):
            cell = cells.get((name, column))
            if cell is not None and cell.mean is not None:
                out.append(_mark(cell, left, _TOP + i * _ROW + _ROW / 2, lo, hi))
    legend_y = height - 6
    out.append(
        f'<circle cx="{_LABEL:.1f}" cy="{legend_y - 4:.1f}" r="3.5" fill="{_RANKED}"/>'
        f'<text x="{_LABEL + 8:.1f}" y="{legend_y:.1f}">ranked (re-run by the verifier, claim '
        f'reproduced)</text><circle cx="{_LABEL + _LEGEND_STEP:.1f}" cy="{legend_y - 4:.1f}" '
        f'r="3.5" fill="#fff" stroke="{_UNRANKED}" stroke-width="1.5"/>'
        f'<text x="{_LABEL + _LEGEND_STEP + 8:.1f}" y="{legend_y:.1f}">'
        "unranked, with the re-run's number</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _x(value: float, lo: float, hi: float, left: float) -> float:
    return left + (value - lo) / (hi - lo) * _PANEL


def _panel(column: Column, left: float, lo: float, hi: float, nrows: int) -> list[str]:
    bottom = _TOP + nrows * _ROW
    out = [
        f'<text x="{left + _PANEL / 2:.1f}" y="{_TOP - 22:.1f}" text-anchor="middle">'
        f"{html.escape(column_label(column))}</text>"
    ]
    for t in (0.0, 0.5, 1.0):
        x = _x(t, lo, hi, left)
        dash = ' stroke-dasharray="3 3"' if t == 1.0 else ""
        out.append(
            f'<line x1="{x:.1f}" y1="{_TOP - 4:.1f}" x2="{x:.1f}" y2="{bottom:.1f}" '
            f'stroke="#c8c8c8"{dash}/><text x="{x:.1f}" y="{_TOP - 8:.1f}" '
            f'text-anchor="middle">{t:g}</text>'
        )
    return out


def _mark(cell: Cell, left: float, y: float, lo: float, hi: float) -> str:
    assert cell.mean is not None
    c_lo, c_hi = (_x(v, lo, hi, left) for v in cell.mean["ci"])
    x = _x(cell.mean["value"], lo, hi, left)
    color = _RANKED if cell.ranked else _UNRANKED
    fill = color if cell.ranked else "#fff"
    return (
        f'<line x1="{c_lo:.1f}" y1="{y:.1f}" x2="{c_hi:.1f}" y2="{y:.1f}" stroke="{color}" '
        f'stroke-width="2"/><circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{fill}" '
        f'stroke="{color}" stroke-width="1.5"/>'
    )


__all__ = [
    "Cell",
    "Column",
    "cell_text",
    "column_label",
    "figure",
    "html_table",
    "markdown",
    "order",
]
