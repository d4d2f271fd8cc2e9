"""The replay viewer's frames (`aht_bench.evaluation.viewer.Atlas`): every frame cut into the
task's grid cells, each distinct cell picture stored once, each step as the cells that changed;
decoding gives back every rendered pixel."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from aht_bench.envs.registry import make
from aht_bench.envs.render import record_episode, render_frame
from aht_bench.evaluation.viewer import Atlas, _deltas, page_stamp, stamp


def _atlas_image(atlas: Atlas) -> np.ndarray:
    uri = atlas.data()["png"]
    raw = base64.b64decode(uri.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"))


def _decoded(atlas: Atlas, grid: tuple[int, int], tiles: list[int]) -> np.ndarray:
    """What the page draws: each cell's tile copied out of the atlas PNG."""
    image, (th, tw), per_row = _atlas_image(atlas), atlas.tile, atlas.data()["per_row"]
    rows, cols = grid
    out = np.zeros((rows * th, cols * tw, 3), np.uint8)
    for i, k in enumerate(tiles):
        r, c = divmod(k, per_row)
        y, x = divmod(i, cols)
        out[y * th : (y + 1) * th, x * tw : (x + 1) * tw] = image[
            r * th : (r + 1) * th, c * tw : (c + 1) * tw
        ]
    return out


@pytest.mark.parametrize("task", ["overcooked-cramped_room-v2", "lbf-v1"])
def test_frames_decode_to_the_rendered_pixels_and_store_each_cell_picture_once(task):
    env = make(task)
    episode = record_episode(env, seed=3)
    frames = [render_frame(env, s) for s in episode.states[:60]]
    atlas = Atlas()
    tiled = [atlas.add(f, env.render_cell) for f in frames]
    assert atlas.tile == (env.render_cell, env.render_cell)
    cells = sum(len(t) for _, t in tiled)
    assert len(atlas.tiles) < cells / 10  # most cells repeat: floor, counters, walls
    for frame, (grid, tiles) in zip(frames, tiled, strict=True):
        assert np.array_equal(_decoded(atlas, grid, tiles), frame)
    # the steps as changes: applying them to the first frame gives every frame back
    grids = [t for _, t in tiled]
    current = list(grids[0])
    for changes, want in zip(_deltas(grids), grids[1:], strict=True):
        for i in range(0, len(changes), 2):
            current[changes[i]] = changes[i + 1]
        assert current == want
    assert any(_deltas(grids))  # the random agents moved: the check is not of still frames


def test_frames_the_cell_does_not_divide_are_one_tile_and_tile_sizes_cannot_mix():
    atlas = Atlas()
    frame = np.arange(50 * 70 * 3, dtype=np.uint8).reshape(50, 70, 3)
    grid, tiles = atlas.add(frame, 48)
    assert grid == (1, 1) and tiles == [0] and atlas.tile == (50, 70)
    assert atlas.add(frame.copy(), 48) == ((1, 1), [0])  # the same frame again: no new tile
    assert np.array_equal(_decoded(atlas, grid, tiles), frame)
    with pytest.raises(ValueError, match="tiles of 48x48 pixels on a page of"):
        atlas.add(np.zeros((96, 96, 3), np.uint8), 48)


def test_a_page_is_stamped_with_the_viewer_version_and_its_source(tmp_path):
    path = tmp_path / "page.html"
    assert page_stamp(path) is None
    path.write_text('<html><head><meta name="aht-bench-viewer" content="viewer 1; sha256:ab">')
    assert page_stamp(path) == "viewer 1; sha256:ab" != stamp("sha256:ab")
