"""The command line: exit codes, messages and files written."""

from __future__ import annotations

import subprocess
import sys

import click
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


def test_exit_codes_are_the_documented_numbers():
    from aht_bench import cli

    codes = (
        cli.EXIT_OK,
        cli.EXIT_INTERNAL,
        cli.EXIT_USAGE,
        cli.EXIT_AGENT_LOAD,
        cli.EXIT_AGENT_RUNTIME,
        cli.EXIT_TEAMMATE_INTEGRITY,
    )
    assert codes == (0, 1, 2, 3, 4, 5)
    for code in codes:
        assert f"  {code}  " in cli.EXIT_CODES_HELP and f"    {code}  " in cli.__doc__


def test_check_agent_plays_an_agent_file_in_process(tmp_path):
    agent = tmp_path / "first_action.py"
    agent.write_text("def act(obs):\n    return 0\n")
    result = CliRunner().invoke(
        main, ["check-agent", str(agent), "--task", "sabotage", "--no-isolate", "--episodes", "2"]
    )
    assert result.exit_code == 0, result.output
    assert "episode 2 (seed 1): base return" in result.output
    assert "agent OK: first_action.py" in result.output
    assert "check-agent" in CliRunner().invoke(main, ["--help"]).output


def test_train_lists_every_registered_algorithm_and_preset():
    # both read the catalogue: its order is --help's, its preset names the --preset choices
    from aht_bench import catalog, cli
    from aht_bench.runs import ALGORITHMS

    assert cli.TRAINABLE == tuple(ALGORITHMS) == catalog.names()
    assert set(catalog.preset_names()) == {p for a in ALGORITHMS.values() for p in a.presets}
    assert catalog.preset_names() == ("quick", "medium", "paper", "sabotage")
    train = main.get_command(click.Context(main), "train")
    assert train is not None
    choices = {p.name: getattr(p.type, "choices", None) for p in train.params}
    assert tuple(choices["algorithm"]) == cli.TRAINABLE
    assert tuple(choices["preset"]) == catalog.preset_names()


def test_the_catalogue_imports_no_method_and_no_jax():
    # what `aht-bench train --help` needs of it comes without a method module or JAX
    code = (
        "import sys, aht_bench.catalog as c; c.names(); c.preset_names(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'aht_bench')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['aht_bench', 'aht_bench.catalog']"


def test_check_agent_takes_the_memory_limit_the_readme_shows(tmp_path):
    """README.md's check-agent paragraph lists `--memory-limit 8`: the option exists."""
    agent = tmp_path / "zero.py"
    agent.write_text("def act(obs):\n    return 0\n")
    args = ["check-agent", str(agent), "--task", "sabotage", "--no-isolate", "--memory-limit", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "--memory-limit" in CliRunner().invoke(main, ["check-agent", "--help"]).output
