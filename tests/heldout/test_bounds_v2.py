"""Bounds v2 (docs/heldout.md): the plateau stop rule, the upper bound as the highest of its
sources, the v2 recipes, and (slow) a tiny v2 build that resumes a best response mid-training
bit for bit. Expected values are worked by hand in the comments."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from aht_bench import envs
from aht_bench.cli import main
from aht_bench.heldout import build as hb
from aht_bench.heldout import recipes

# ------------------------------------------------------------------------- the stop rule


def _chunks_until_stop(curve: list[float], tolerance: float, max_chunks: int) -> int:
    """How many chunks the build trains when chunk k's mean return is curve[k-1]."""
    seen: list[float] = []
    while len(seen) < max_chunks and not hb.plateaued(seen, tolerance):
        seen.append(curve[len(seen)])
    return len(seen)


def test_plateau_rule_on_a_synthetic_curve():
    curve = [0.10, 0.20, 0.25, 0.252, 0.30, 0.40]
    # after 2 chunks: rise 0.10 >= 0.02 * 0.10 = 0.002, not flat
    assert not hb.plateaued(curve[:2], 0.02)
    # after 3: rise 0.05 >= 0.02 * 0.20 = 0.004, not flat
    assert not hb.plateaued(curve[:3], 0.02)
    # after 4: rise 0.002 < 0.02 * 0.25 = 0.005, flat: training stops after chunk 4
    assert hb.plateaued(curve[:4], 0.02)
    assert _chunks_until_stop(curve, 0.02, max_chunks=8) == 4
    # with a 0.5% tolerance 0.002 >= 0.005 * 0.25 = 0.00125: not flat; then rise 0.048 >=
    # 0.00126, 0.1 >= 0.0015: it runs into the budget of 6 chunks still rising
    assert _chunks_until_stop(curve, 0.005, max_chunks=6) == 6
    assert not hb.plateaued(curve, 0.005)
    # a budget below the plateau stops it first
    assert _chunks_until_stop(curve, 0.02, max_chunks=3) == 3


def test_plateau_rule_edge_cases():
    assert not hb.plateaued([], 0.02) and not hb.plateaued([0.4], 0.02)
    assert hb.plateaued([0.30, 0.29], 0.02)  # a fall is flat
    assert hb.plateaued([100.0, 101.9], 0.02)  # 1.9 < 2.0
    assert not hb.plateaued([100.0, 102.0], 0.02)  # 2.0 is not < 2.0
    assert not hb.plateaued([0.0, 0.0], 0.02)  # still at zero: keep training
    assert not hb.plateaued([0.1, float("nan")], 0.02)  # no episode ended in the chunk
    assert not hb.plateaued([0.3, 0.3], 0.02, min_chunks=3)
    assert hb.plateaued([0.2, 0.3, 0.3], 0.02, min_chunks=3)


# ------------------------------------------------------------------------- the upper bound


def test_upper_bound_is_the_highest_source_with_its_provenance():
    sources = [
        {"set_by": "br_m", "kind": "own best response", "value": 0.40},
        {"set_by": "br_other", "kind": "best_response", "value": 0.42},
        {"set_by": "agents/examples/scripted_agent.py", "kind": "example_agent", "value": 0.46},
        {"set_by": "seq_agent_lexi", "kind": "heuristic", "value": float("nan")},
    ]
    got = hb.upper_bound(sources)
    assert got == {
        "upper": 0.46,
        "upper_set_by": "agents/examples/scripted_agent.py",
        "kind": "example_agent",
    }
    with_max = [*sources, {"set_by": "task maximum", "kind": "task maximum", "value": 0.5}]
    assert hb.upper_bound(with_max)["upper"] == 0.5
    assert hb.upper_bound(with_max)["upper_set_by"] == "task maximum"
    # a tie goes to the first source listed (the own best response before any partner)
    tie = [
        {"set_by": "br_m", "kind": "own best response", "value": 0.3},
        {"set_by": "x", "kind": "heuristic", "value": 0.3},
    ]
    assert hb.upper_bound(tie)["upper_set_by"] == "br_m"
    with pytest.raises(hb.HeldoutBuildError):
        hb.upper_bound([{"set_by": "a", "kind": "b", "value": float("nan")}])


# ------------------------------------------------------- an example agent counts with its upper CI


def _evaluator_upper_ci(returns: np.ndarray, upper: np.ndarray, seed: int = 0) -> np.ndarray:
    """Each member's normalised upper CI as `aht-bench evaluate` computes it (lower bounds 0)."""
    from types import SimpleNamespace

    from aht_bench.evaluation.evaluate import score_returns

    bounds = SimpleNamespace(lower=np.zeros(len(upper)), upper=np.asarray(upper, np.float64))
    _, est = score_returns(returns, bounds, reps=2000, seed=seed)  # type: ignore[arg-type]
    return np.array([m["ci"][1] for m in est["members"]])


def test_example_upper_return_is_the_evaluators_upper_ci_by_hand():
    # member a: one seating's episodes return 0 and 4, the other's 0 and 0, so the two
    # episode scores (means over seatings) are 0 and 2. A resample of 2 episodes has mean 0, 1
    # or 2 with probability 1/4, 1/2, 1/4: the 97.5th percentile of 2000 resamples is 2.
    # Member b returns 3 in every episode: its CI is [3, 3].
    returns = np.array([[[0.0, 4.0], [0.0, 0.0]], [[3.0, 3.0], [3.0, 3.0]]])
    upper = hb.bounds._example_upper_returns(returns, seed=0)
    assert upper.tolist() == [2.0, 3.0]
    # with those bounds the example's normalised upper CI is exactly 1 for both members
    assert _evaluator_upper_ci(returns, upper).tolist() == [1.0, 1.0]
    # while its mean return (1 and 3) would have given member a an upper CI of 2
    assert _evaluator_upper_ci(returns, np.array([1.0, 3.0]))[0] == 2.0


def test_example_upper_return_on_noisy_returns_keeps_the_ci_at_most_one():
    rng = np.random.default_rng(3)
    returns = rng.integers(0, 20, size=(5, 2, 64)).astype(np.float64) * 20.0
    upper = hb.bounds._example_upper_returns(returns, seed=0)
    means = returns.mean(axis=(1, 2))
    assert np.all(upper > means)  # the CI's upper end lies above the mean
    fitted = hb.bounds._fit_example_bounds(upper, [returns], seed=0)
    # rounding moves a bound by a few units in the last place at most
    assert np.all(fitted >= upper) and np.all(fitted - upper <= 8 * np.spacing(upper))
    high = _evaluator_upper_ci(returns, fitted)
    assert np.all(high <= 1.0) and np.all(high > 1.0 - 1e-12)


def test_fit_example_bounds_settles_rounding_only():
    fit = hb.bounds._fit_example_bounds
    returns = np.array([[[0.0, 4.0], [0.0, 0.0]], [[3.0, 3.0], [3.0, 3.0]]])
    # exact bounds stay as they are
    assert fit(np.array([2.0, 3.0]), [returns], seed=0).tolist() == [2.0, 3.0]
    # a bound one float step short is raised by that step
    short = np.array([np.nextafter(2.0, 0.0), 3.0])
    assert fit(short, [returns], seed=0).tolist() == [2.0, 3.0]
    # a bound really below the example's upper CI is not papered over
    with pytest.raises(hb.HeldoutBuildError, match="float steps"):
        fit(np.array([1.9, 3.0]), [returns], seed=0)
    # bounds above it are left alone
    assert fit(np.array([5.0, 7.0]), [returns], seed=0).tolist() == [5.0, 7.0]


# ------------------------------------------------------------------------------ recipes


LAYOUTS = ["cramped_room", "asymm_advantages", "coord_ring", "forced_coord", "counter_circuit"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_overcooked_v2_recipes_keep_v1s_members_on_the_v2_task(layout):
    v1 = hb.recipe(f"overcooked-{layout}-v1", "v1")
    v2 = hb.recipe(f"overcooked-{layout}-v2", "v2")
    assert v2.task_id == f"overcooked-{layout}-v2" and envs.resolve(v2.task_id) == v2.task_id
    assert (v2.ippo, v2.brdiv, v2.heuristics) == (v1.ippo, v1.brdiv, v1.heuristics)
    # counter pickups are unpaid in the v2 task itself
    assert "counter_pickup" not in dict(v2.shaping)
    env: Any = envs.make(v2.task_id)
    assert float(env.params.counter_pickup) == 0.0
    assert v2.br_plateau is not None and v2.task_maximum is None
    assert v2.br_plateau.max_timesteps == 8 * v1.br_timesteps
    # v2 draws the sides every episode: a best response in seat 0 plays both (v1: one per seat)
    assert v2.br_seats == (0,)
    assert v1.br_seats == ((0, 1) if getattr(env, "divided", False) else (0,))


def test_v1_recipes_are_unchanged_by_v2():
    # the v1 recipes' data as published (manifest recipe.definition of heldout/lbf-v1/v1)
    published = json.loads(
        (Path(__file__).parents[2] / "heldout/lbf-v1/v1/manifest.json").read_text()
    )["recipe"]["definition"]
    now = json.loads(json.dumps(dataclasses.asdict(recipes.V1["lbf-v1"])))

    def published_part(x, like):  # fields added to the sources since v1 was published: dropped
        if isinstance(like, dict):
            return {k: published_part(x[k], like[k]) for k in like}
        if isinstance(like, list):
            return [published_part(a, b) for a, b in zip(x, like, strict=True)]
        return x

    assert published_part(now, published) == published
    assert {k: v for k, v in now.items() if k not in published} == {
        "br_preset": "quick",  # fields added after v1 was published, at their defaults
        "shaping": [],
        "br_plateau": None,
        "example_agents": [],
        "task_maximum": None,
        "seed_base": 0,
    }
    assert all(not hb.publish._bounds_v2(r) for r in recipes.V1.values())
    lbf = hb.recipe("lbf", "v2")
    assert lbf.task_maximum == 0.5 and lbf.example_agents == recipes.EXAMPLE_AGENTS
    assert lbf.brdiv is not None and lbf.brdiv.runs * lbf.brdiv.population_size == 6


def test_cli_build_of_an_overcooked_v2_set_starts_training_its_v2_task(tmp_path, monkeypatch):
    from aht_bench.algorithms import ippo

    seen = []

    def fake_train(key, config, seeds, on_iteration=None):
        seen.append(config)
        raise KeyboardInterrupt  # the CLI's clean stop: nothing published

    monkeypatch.setattr(ippo, "train", fake_train)
    result = CliRunner().invoke(
        main,
        ["heldout", "build", "--task", "overcooked-cramped_room-v2", "--version", "v2",
         "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work")],
    )  # fmt: skip
    assert "training IPPO team ippo_mlp_0" in result.output, result.output
    assert seen[0].task_id == "overcooked-cramped_room-v2" and seen[0].shaping == ()
    assert not (tmp_path / "out" / "manifest.json").exists()


# ------------------------------------------------------------------------- a tiny build


def _tiny_v2(monkeypatch, task_maximum: float | None = None) -> recipes.Recipe:
    r = recipes.V2["lbf-v1"]
    assert r.brdiv is not None
    tiny = dataclasses.replace(
        r,
        ippo=(),  # the BRDiv confederates and a heuristic are candidates enough
        brdiv=dataclasses.replace(r.brdiv, runs=1, population_size=2, generation_updates=4),
        heuristics=r.heuristics[:1],
        extra_partners=(),
        br_timesteps=64 * 128,
        br_plateau=recipes.Plateau(max_timesteps=3 * 64 * 128, tolerance=0.02),
        episodes=2,
        min_competence=0.0,
        min_gap=-1e9,
        task_maximum=task_maximum,
    )
    monkeypatch.setitem(recipes.V2, "lbf-v1", tiny)
    return tiny


@pytest.mark.slow
def test_a_tiny_v2_build_records_curves_and_bounds_and_resumes_bit_for_bit(tmp_path, monkeypatch):
    _tiny_v2(monkeypatch)
    logs: list[str] = []
    a = hb.build("lbf", "v2", out=tmp_path / "a", work=tmp_path / "wa", log=logs.append)
    ma = json.loads((a / "manifest.json").read_text())
    applied = {e["file"] for e in ma["example_agents"] if "skipped" not in e}
    skipped = {e["file"] for e in ma["example_agents"] if "skipped" in e}
    assert skipped == {"agents/examples/heuristic_agent.py"}  # Overcooked only
    assert applied == {f"agents/examples/{n}_agent.py" for n in ("scripted", "jax_mlp", "random")}
    table = np.asarray(ma["partner_returns"]["mean_return"])
    assert set(applied) <= set(ma["partner_returns"]["rows"])
    for m in ma["members"]:
        b = m["bounds"]
        values = [s["value"] for s in b["upper_candidates"]]
        j = ma["partner_returns"]["cols"].index(m["name"])
        assert b["upper"] == pytest.approx(max(values))
        assert b["upper"] == pytest.approx(table[:, j].max(), abs=1e-6)  # the table is rounded
        assert b["upper_set_by"] in [s["set_by"] for s in b["upper_candidates"]]
        for br in ma["best_responses"][m["name"]]:
            chunks = len(br["learning_curve"])
            assert 2 <= chunks <= 3 and br["total_timesteps"] == chunks * 64 * 128
            assert br["flat_at_end"] == hb.plateaued(br["learning_curve"], 0.02)
            assert br["stopped"] == ("plateau" if br["flat_at_end"] else "maximum budget")

    # the same build killed after the first chunk of its second best response resumes from
    # the saved chunk state and ends with the same weights
    from aht_bench.algorithms import br as br_method

    fresh = {"n": 0}  # chunk calls that start a best response (its update counter at 0)
    real_run = br_method.run

    def dying_run(state, *args, **kwargs):
        starts = int(np.asarray(state.update_step).reshape(-1)[0]) == 0
        fresh["n"] += starts
        if fresh["n"] == 2 and not starts:  # the second chunk of the second best response
            raise KeyboardInterrupt
        return real_run(state, *args, **kwargs)

    monkeypatch.setattr(br_method, "run", dying_run)
    with pytest.raises(KeyboardInterrupt):
        hb.build("lbf", "v2", out=tmp_path / "b", work=tmp_path / "wb", log=lambda _m: None)
    assert list((tmp_path / "wb").rglob("*.state.safetensors"))
    monkeypatch.setattr(br_method, "run", real_run)
    logs_b: list[str] = []
    b = hb.build("lbf", "v2", out=tmp_path / "b", work=tmp_path / "wb", log=logs_b.append)
    assert any("resuming the best response" in line for line in logs_b)
    assert not list((tmp_path / "wb").rglob("*.state.safetensors"))
    for f in sorted(a.rglob("*.safetensors")):
        assert f.read_bytes() == (b / f.relative_to(a)).read_bytes(), f
    mb = json.loads((b / "manifest.json").read_text())
    assert ma["partner_returns"] == mb["partner_returns"]


# ------------------------------------------------------------------------ build units


def test_units_name_every_ippo_team_a_source_may_try_and_every_brdiv_run():
    units = hb.units("overcooked-counter_circuit-v2", "v2")
    # two IPPO sources of up to 8 tries each, no BRDiv
    assert units == [f"ippo:{s}:{k}" for s in (0, 1) for k in range(8)]
    assert hb.units("lbf", "v2") == ["ippo:0:0", "ippo:0:1", "ippo:0:2", "brdiv:0", "brdiv:1"]
    runner = CliRunner()
    listed = runner.invoke(main, ["heldout", "build", "--task", "lbf", "--version", "v2",
                                  "--list-units"])  # fmt: skip
    assert listed.exit_code == 0 and listed.output.split() == hb.units("lbf", "v2")


@pytest.mark.parametrize(
    ("unit", "says"),
    [
        ("ippo:0:9", "no unit 'ippo:0:9'"),
        ("brdiv:2", "no unit 'brdiv:2'"),
        ("conf:1", "unknown unit 'conf:1'"),
        ("br:", "unknown unit 'br:'"),
    ],
)
def test_a_unit_the_recipe_lacks_is_refused_by_name(tmp_path, unit, says):
    result = CliRunner().invoke(
        main,
        ["heldout", "build", "--task", "lbf", "--version", "v2", "--unit", unit,
         "--work", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 2 and says in result.output, result.output
    assert not list(tmp_path.rglob("*.safetensors"))


def test_a_br_unit_trains_that_candidates_best_response_with_builds_seed_and_file(
    tmp_path, monkeypatch
):
    _tiny_v2(monkeypatch)
    monkeypatch.setattr(hb.unit_runs, "_ippo_candidates", lambda *a, **k: [])
    monkeypatch.setattr(hb.unit_runs, "_brdiv_candidates", lambda *a, **k: [])
    tiny = recipes.V2["lbf-v1"]
    monkeypatch.setitem(
        recipes.V2,
        "lbf-v1",
        dataclasses.replace(tiny, heuristics=("seq_agent_lexi", "seq_agent_col")),
    )
    seen = []

    def fake_train(rec, cand, seat, seed, partner, path, log):
        seen.append((cand.name, seat, seed, path.name))
        raise KeyboardInterrupt

    monkeypatch.setattr(hb.best_responses, "_train_br_until_plateau", fake_train)
    with pytest.raises(KeyboardInterrupt):
        hb.train_unit("lbf", "v2", "br:seq_agent_col", work=tmp_path, log=lambda _m: None)
    rec = recipes.V2["lbf-v1"]
    # candidate 1: seed 9300 + 10 * 1 + seat 0, the file build() looks for
    assert seen == [
        (
            "seq_agent_col",
            0,
            9310,
            hb.best_responses._br_file(rec, 1, "seq_agent_col", 0, tmp_path)[1].name,
        )
    ]
    assert seen[0][3] == "br-seq_agent_col-seat0-s9310-c8192-max24576-tol0.02.safetensors"
    with pytest.raises(hb.HeldoutBuildError, match="no candidate 'nobody'.*seq_agent_lexi"):
        hb.train_unit("lbf", "v2", "br:nobody", work=tmp_path, log=lambda _m: None)


@pytest.mark.slow
def test_units_trained_apart_give_the_build_its_weights_bit_for_bit(tmp_path, monkeypatch):
    _tiny_v2(monkeypatch)
    a = hb.build("lbf", "v2", out=tmp_path / "a", work=tmp_path / "wa", log=lambda _m: None)
    work = tmp_path / "wb"
    for unit in hb.units("lbf", "v2"):
        hb.train_unit("lbf", "v2", unit, work=work, log=lambda _m: None)
    names = json.loads((a / "manifest.json").read_text())["candidates"]["names"]
    for name in names:
        hb.train_unit("lbf", "v2", f"br:{name}", work=work, log=lambda _m: None)
    logs: list[str] = []
    b = hb.build("lbf", "v2", out=tmp_path / "b", work=work, log=logs.append)
    assert not any(line.startswith("training") for line in logs), logs  # all found cached
    for f in sorted(a.rglob("*.safetensors")):
        assert f.read_bytes() == (b / f.relative_to(a)).read_bytes(), f


# ---------------------------------------------------------------------- published v2 sets

ROOT = Path(__file__).parents[2] / "heldout"
V2_SETS = sorted(ROOT.glob("*/v2"))


@pytest.mark.parametrize("folder", V2_SETS, ids=[f.parent.name for f in V2_SETS])
def test_v2_sets_follow_bounds_v2(folder):
    from aht_bench.evaluation import sets

    manifest, _ = sets.read_manifest(folder)
    rec = hb.recipe(manifest["task_id"], "v2")
    xp = manifest["cross_play"]
    assert xp["diagonal_mean"] > xp["off_diagonal_mean"]
    table = manifest["partner_returns"]
    values = np.asarray(table["mean_return"])
    examples = [r for r, k in zip(table["rows"], table["kinds"], strict=True)
                if k == "example_agent"]  # fmt: skip
    assert examples
    for member in manifest["members"]:
        b = member["bounds"]
        j = table["cols"].index(member["name"])
        sources = b["upper_candidates"]
        # a bound an example agent's CI sets may be raised by a rounding step (docs/heldout.md)
        assert b["upper"] == max(s["value"] for s in sources) + b.get("rounding_raise", 0.0)
        assert b.get("rounding_raise", 0.0) <= 4 * np.spacing(b["upper"])
        # partner_returns is rounded to 6 decimals
        assert b["upper"] + 1e-6 >= values[:, j].max() and b["upper"] >= b["best_response_return"]
        if rec.task_maximum is not None:
            assert {"set_by": "task maximum", "kind": "task maximum",
                    "value": rec.task_maximum} in sources  # fmt: skip
        # no example agent's mean return with a member is above its bound (score <= 1)
        for row in examples:
            assert values[table["rows"].index(row), j] <= b["upper"] + 1e-6
        for br in manifest["best_responses"][member["name"]]:
            curve = br["learning_curve"]
            assert br["total_timesteps"] == len(curve) * br["chunk_timesteps"]
            assert br["total_timesteps"] <= br["max_timesteps"]
            assert br["flat_at_end"] == hb.plateaued(curve, br["plateau_tolerance"])
