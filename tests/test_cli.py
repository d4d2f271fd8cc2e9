"""The command line: exit codes, messages and files written."""

from __future__ import annotations

import numpy as np
from click.testing import CliRunner
from PIL import Image

from aht_bench.cli import main


def test_tasks_lists_every_id_with_aliases():
    result = CliRunner().invoke(main, ["tasks"])
    assert result.exit_code == 0
    assert (
        "overcooked-forced_coord-v1" in result.output and "(alias: forced_coord)" in result.output
    )
    assert "sabotage-v1" in result.output and "lbf-4p-v1" in result.output


def test_render_writes_a_gif_and_prints_the_return(tmp_path):
    out = tmp_path / "sub" / "episode.gif"
    result = CliRunner().invoke(
        main, ["render", "--task", "sabotage", "--seed", "1", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "base return per agent" in result.output
    with Image.open(out) as gif:
        assert gif.n_frames >= 2
        assert np.asarray(gif.convert("RGB")).ndim == 3


def test_render_unknown_task_is_a_usage_error_with_a_suggestion(tmp_path):
    out = tmp_path / "x.gif"
    result = CliRunner().invoke(main, ["render", "--task", "forced_cord", "--out", str(out)])
    assert result.exit_code == 2
    assert "Did you mean 'forced_coord'" in result.output
    assert not out.exists()


def test_render_refuses_a_non_gif_output(tmp_path):
    out = tmp_path / "x.png"
    result = CliRunner().invoke(main, ["render", "--task", "sabotage", "--out", str(out)])
    assert result.exit_code == 2
    assert "must end in .gif" in result.output
    assert not out.exists()
