"""The shipped development sets: verified, labelled, members from the paper, bounds that follow
the paper's procedure (upper = the best of the best response and every evaluated partner), the
best responses' files intact; `devset show`; and (slow) a rebuild with a tiny budget."""

from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from aht_bench.cli import EXIT_OK, EXIT_TEAMMATE_INTEGRITY, main
from aht_bench.evaluation import load_set, sets
from aht_bench.heldout import devset
from aht_bench.policies.heuristics import PAPER_HEURISTICS
from aht_bench.policies.io import load_policy

SHIPPED = ("overcooked-forced_coord-v1", "overcooked-cramped_room-v1", "lbf-v1")


@pytest.mark.parametrize("task_id", SHIPPED)
def test_shipped_dev_set_is_verified_labelled_and_bounded_by_its_best_partner(task_id):
    assert "dev" in sets.available_sets(task_id)
    eval_set = load_set(task_id, "dev")
    manifest = eval_set.manifest
    assert manifest is not None and eval_set.is_development
    assert manifest["set_id"] == f"{task_id}/dev" and "DEVELOPMENT SET" in manifest["status"]
    assert manifest["env_id"] == task_id and manifest["package_version"]
    assert eval_set.names == PAPER_HEURISTICS[task_id]
    assert eval_set.seatings == ((0,), (1,))
    np.testing.assert_array_equal(eval_set.lower, 0.0)
    for member, upper in zip(manifest["members"], eval_set.upper, strict=True):
        bounds = member["bounds"]
        returns = {p["partner"]: p["return"] for p in bounds["partners"]}
        assert upper == max(returns.values()) > 0
        assert returns[bounds["upper_set_by"]] == upper
        assert bounds["raised_by"] == pytest.approx(upper - bounds["best_response_return"])
    recipe = manifest["recipe"]
    assert recipe["br_timesteps"] > 0 and recipe["command"].startswith("aht-bench devset build")
    for provenance in manifest["best_responses"].values():
        path = sets.heldout_root() / task_id / "dev" / provenance["file"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == provenance["sha256"]
        load_policy(path)  # card, sha256, shapes and finiteness checked


def test_devset_show_verifies_and_a_tampered_copy_exits_5(tmp_path, monkeypatch):
    result = CliRunner().invoke(
        main,
        [
            "devset",
            "show",
            "--task",
            "overcooked-forced_coord-v1",
            "--plot",
            str(tmp_path / "xp.png"),
        ],
    )
    assert result.exit_code == EXIT_OK, result.output
    assert "verified" in result.output and "independent_agent_0.6" in result.output
    assert (tmp_path / "xp.png").read_bytes()[:4] == b"\x89PNG"

    root = tmp_path / "heldout"
    src = sets.heldout_root() / "overcooked-forced_coord-v1" / "dev"
    shutil.copytree(src, root / "overcooked-forced_coord-v1" / "dev")
    manifest = root / "overcooked-forced_coord-v1" / "dev" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes().replace(b'"lower": 0.0', b'"lower": 1.0', 1))
    monkeypatch.setenv(sets.HELDOUT_ENV, str(root))
    result = CliRunner().invoke(main, ["devset", "show", "--task", "overcooked-forced_coord-v1"])
    assert result.exit_code == EXIT_TEAMMATE_INTEGRITY
    assert "does not match its recorded sha256" in result.output


def test_recipes_cover_the_shipped_sets_with_the_paper_heuristics():
    for task_id in SHIPPED:
        assert devset.recipe(task_id).members == PAPER_HEURISTICS[task_id]
    with pytest.raises(ValueError, match="recipes exist for"):
        devset.recipe("coord_ring")


@pytest.mark.slow
def test_a_tiny_rebuild_writes_a_verified_set(tmp_path):
    out = tmp_path / "dev"
    devset.build(
        "lbf", out, br_timesteps=8192, member_names=("seq_agent_lexi",), log=lambda _: None
    )
    eval_set = load_set("lbf", out)
    assert eval_set.names == ("seq_agent_lexi",)
    # a copy following the same food order eats everything: 0.5 per agent
    assert eval_set.upper[0] == pytest.approx(0.5)
    assert not list(tmp_path.glob(".dev-build-*"))  # the temporary folder is gone
