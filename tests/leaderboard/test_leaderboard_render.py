"""`aht-bench leaderboard render`: the README table and the HTML page show every entry, are
deterministic, keep the README's own text, escape what submitters typed, and the page's script
builds its sortable tables in a real browser (headless Chromium)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from lb_helpers import load_record, rescore, returns_of, run

from aht_bench.leaderboard import render
from aht_bench.leaderboard.board import load_entries, render_files
from aht_bench.leaderboard.entries import entry_slug, make_entry, write_entry

REQUIRE_CHROMIUM = "AHT_BENCH_REQUIRE_CHROMIUM"  # set by .ci/run: a missing browser fails


def _board(root: Path) -> list[str]:
    """Three entries on lbf (one a forged better score, one with markup in its name), written
    without the checks: rendering only needs well-formed entries."""
    record = load_record()
    better = rescore(record, returns_of(record) * 2.0)
    names = [
        ("random (example)", "uniform random", record),
        ("doubled", "twice the returns | a pipe", better),
        ("<b>bold</b> & co", "<script>alert(1)</script>", record),
    ]
    for name, description, rec in names:
        entry = make_entry(rec, name, description, "agents/examples/random_agent.py")
        slug = entry_slug(name, "lbf-v1", "v1")
        write_entry(root / "entries" / f"{slug}.json", entry)
    return [n for n, _, _ in names]


def test_render_shows_every_entry_ranked_and_is_deterministic(tmp_path):
    names = _board(tmp_path)
    (tmp_path / "README.md").write_text("# My board\n\nOwn text.\n")
    result = run(tmp_path, "render")
    assert result.exit_code == 0, result.output
    readme = (tmp_path / "README.md").read_text()
    page = (tmp_path / "index.html").read_text()
    assert readme.startswith("# My board\n\nOwn text.\n\n" + render.BEGIN)
    rows = [line for line in readme.splitlines() if re.match(r"\| (\d+|-) \|", line)]
    assert [row.split(" | ")[1].split(" (`")[0] for row in rows] == [
        "doubled",
        "&lt;b&gt;bold&lt;/b&gt; &amp; co",  # markup escaped; ties (same record) by name
        "random (example)",
    ]
    assert "twice the returns \\| a pipe" in readme
    for name in names:
        assert render.html.escape(name) in page
    assert "<script>alert(1)</script>" not in page and "<b>bold" not in page
    assert page.count('<section class="entry"') == 3 and page.count("<svg") == 3
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page  # self-contained: nothing fetched

    before = {p: p.read_bytes() for p in (tmp_path / "README.md", tmp_path / "index.html")}
    assert run(tmp_path, "render", "--check").exit_code == 0
    assert render_files(tmp_path) == []  # a second render changes nothing
    assert {p: p.read_bytes() for p in before} == before
    entries = load_entries(tmp_path)
    assert render.render_html(entries[::-1]) == render.render_html(entries)


def test_render_replaces_only_the_generated_part(tmp_path):
    _board(tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"# Head\n\n{render.BEGIN}\nstale table\n{render.END}\n\nFooter.\n")
    assert run(tmp_path, "render").exit_code == 0
    text = readme.read_text()
    assert "stale table" not in text
    assert text.startswith(f"# Head\n\n{render.BEGIN}") and text.endswith(
        f"{render.END}\n\nFooter.\n"
    )
    assert text.count(render.BEGIN) == 1

    (tmp_path / "index.html").write_text("edited by hand")
    check = run(tmp_path, "render", "--check")
    assert check.exit_code == 1 and "index.html is out of date" in check.stderr


def test_render_refuses_a_malformed_entry(tmp_path):
    (tmp_path / "entries").mkdir()
    (tmp_path / "entries" / "bad.json").write_text('{"format": "aht-bench-result"}')
    result = run(tmp_path, "render")
    assert result.exit_code == 2 and "bad.json is not a well-formed entry" in result.output


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get(REQUIRE_CHROMIUM):
        pytest.fail(f"{REQUIRE_CHROMIUM} is set but chromium is not on PATH")
    pytest.skip("chromium is not installed (apt-get install chromium)")


def test_the_page_builds_its_tables_in_headless_chromium(tmp_path):
    browser = _chromium()
    names = _board(tmp_path)
    assert run(tmp_path, "render").exit_code == 0
    page = tmp_path / "index.html"
    assert "<tbody></tbody>" in page.read_text()  # rows exist only once the script ran
    dom = subprocess.run(
        [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri(),
        ],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert 'data-tables="ready"' in dom
    [table] = re.findall(r'<table class="board".*?</table>', dom, re.S)
    rows = re.findall(r'<tr data-slug="([^"]+)">(.*?)</tr>', table, re.S)
    assert len(rows) == 3
    shown = [re.findall(r'<a href="#entry-[^"]+">(.*?)</a>', cells)[0] for _, cells in rows]
    assert shown == [render.html.escape(n, quote=False) for n in [names[1], names[2], names[0]]]
    assert "mean [95% CI]" in table and "0.282 [" in table


def test_render_flags_a_score_above_1_naming_the_teammate(tmp_path):
    record = load_record()
    upper = np.array([m["upper"] for m in record["payload"]["members"]])
    # ippo_mlp_1's returns are seat 0 [1/6, 0], seat 1 [1/3, 0]: mean 0.125. With the upper
    # bound lowered to 0.1 (lower 0) its score is 0.125 / 0.1 = 1.25.
    upper[1] = 0.1
    above = rescore(record, returns_of(record), upper)
    for name, rec in (("too low", above), ("fine", record)):
        entry = make_entry(rec, name, "d", "agents/examples/random_agent.py")
        write_entry(tmp_path / "entries" / f"{entry_slug(name, 'lbf-v1', 'v1')}.json", entry)
    assert run(tmp_path, "render").exit_code == 0
    readme = (tmp_path / "README.md").read_text()
    page = (tmp_path / "index.html").read_text()

    rows = [line for line in readme.splitlines() if re.match(r"\| (\d+|-) \|", line)]
    assert [row.split(" | ")[1].split(" (`")[0] for row in rows] == ["too low \u2020", "fine"]
    [note] = [line for line in readme.splitlines() if line.startswith("\u2020")]
    assert note.startswith("\u2020 too low (`too-low--lbf-v1--v1`): score above 1 against ")
    assert "ippo_mlp_1: the bound is too low (mean score 1.250 [" in note
    assert "upper bound 0.1)" in note and note.count("score above 1") == 1  # only ippo_mlp_1

    assert page.count('<p class="above-one">') == 2  # under the table and in the entry
    assert "score above 1 against ippo_mlp_1: the bound is too low" in page
    assert page.count(render._ABOVE_ONE_COLOR) == 1  # its bar in the chart, no other


def test_render_flags_nothing_when_no_score_exceeds_1(tmp_path):
    _board(tmp_path)
    assert run(tmp_path, "render").exit_code == 0
    for page in ("README.md", "index.html"):
        text = (tmp_path / page).read_text()
        assert "\u2020" not in text and "above 1" not in text


def _entry(record, name, version="v2", task_id="lbf-v1"):
    record = dict(record, payload=dict(record["payload"], task_id=task_id))
    record["payload"]["teammate_set"] = dict(record["payload"]["teammate_set"], version=version)
    entry = make_entry(record, name, "d", "agents/examples/random_agent.py")
    return entry_slug(name, task_id, version), entry


def test_current_tables_come_first_under_an_overview_and_retired_ones_last():
    """Issue 51: v2 tables first, under a method x task overview (table and figure); the
    retired protocol's tables below, under a heading that says so."""
    record = load_record()
    better = rescore(record, returns_of(record) * 2.0)
    entries = [
        _entry(better, "ranked"),
        _entry(record, "unranked"),
        _entry(record, "old", version="v1"),
    ]
    slugs = [slug for slug, _ in entries]
    reruns = {slugs[0]: render.RERUN, slugs[1]: "claim not reproduced", slugs[2]: "old rule"}
    measured = {slugs[0]: better, slugs[1]: record}
    retired = {("lbf-v1", "v1"): "heldout v1, superseded by heldout v2"}
    table = render.render_table(entries, reruns, True, measured, retired)
    order = [
        "## Overview",
        "### lbf-v1, heldout v2",
        f"## {render.RETIRED_HEADING}",
        "### lbf-v1, heldout v1 (9 teammates): retired",
        "Retired: heldout v1, superseded by heldout v2.",
    ]
    assert [table.index(h) for h in order] == sorted(table.index(h) for h in order)
    overview_rows = table[table.index("## Overview") : table.index("### lbf-v1, heldout v2")]
    mean = better["payload"]["aggregates"]["mean"]
    assert f"| ranked | {mean['value']:.3f} [{mean['ci'][0]:.3f}, {mean['ci'][1]:.3f}] #1 |" in (
        overview_rows
    )
    assert "| unranked | (" in overview_rows and ", unranked) |" in overview_rows
    assert "| old |" not in overview_rows  # a retired table is not in the overview
    assert f"]({render.OVERVIEW_FIGURE})" in overview_rows

    figure = render.overview_figure(entries, reruns, measured, retired)
    assert figure is not None and figure.count("<circle") == 2 + 2  # two marks, two in legend
    page = render.render_html(entries, reruns, None, True, measured, retired)
    assert page.index('<table class="overview">') < page.index(render.RETIRED_HEADING)
    assert "lbf-v1, heldout v1 (9 teammates): retired" in page
    assert render.overview_figure(entries[2:], reruns, measured, retired) is None


def test_retired_groups_name_the_superseding_game_or_set():
    from aht_bench.leaderboard.board import retired_groups

    record = load_record()
    entries = [
        _entry(record, "a", version="v1"),
        _entry(record, "b", version="v2"),
        _entry(record, "c", version="v1", task_id="overcooked-cramped_room-v1"),
        _entry(record, "d", version="human-proxy-v2", task_id="overcooked-cramped_room-v2"),
        _entry(record, "e", version="human-proxy-v3", task_id="overcooked-cramped_room-v2"),
        _entry(record, "f", version="v2", task_id="overcooked-cramped_room-v2"),
    ]
    assert retired_groups(entries) == {
        ("lbf-v1", "v1"): "heldout v1, superseded by heldout v2",
        ("overcooked-cramped_room-v1", "v1"): (
            "the overcooked-cramped_room-v1 game, superseded by overcooked-cramped_room-v2 "
            "(docs/overcooked.md)"
        ),
        ("overcooked-cramped_room-v2", "human-proxy-v2"): (
            "heldout human-proxy-v2, superseded by heldout human-proxy-v3"
        ),
    }


def test_render_writes_the_overview_figure_and_check_compares_it(tmp_path):
    record = load_record()
    for name in ("x", "y"):
        slug, entry = _entry(record, name)
        write_entry(tmp_path / "entries" / f"{slug}.json", entry)
    assert run(tmp_path, "render").exit_code == 0
    figure = tmp_path / render.OVERVIEW_FIGURE
    assert figure.is_file() and figure.read_text().startswith("<svg")
    figure.write_text("<svg/>")
    result = run(tmp_path, "render", "--check")
    assert result.exit_code != 0 and render.OVERVIEW_FIGURE in result.output
    assert (
        run(tmp_path, "render").exit_code == 0 and run(tmp_path, "render", "--check").exit_code == 0
    )
