"""`aht-bench experiment sabotage` (aht_bench/experiments): files, their agreement, the sweep
grid, the docs table and the usage errors.

The files, the grid and the docs table are checked with a stand-in for the training call (fast).
The real-run fixture trains the four objectives once with a tiny config (1 iteration, 4 envs,
small networks, a large learning rate so the probabilities move away from 1/3) in a subprocess
with XLA's backend optimisation off, which halves the compile time that dominates it (2-5
minutes on two shared cores: `slow`); the real tiny sweep is `slow` too.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from aht_bench.algorithms import rotate
from aht_bench.envs.matrix import enumerate_nonterminal_states, sabotage_game
from aht_bench.experiments import sabotage, sabotage_analysis
from aht_bench.experiments.cli import experiment, per_seed_table

SEEDS = 2
TINY = (
    "iterations=1",
    "num_envs=4",
    "rollout_length=5",
    "teammate_timesteps=1600",  # 20 ROTATE updates (4 x 4 x 5 steps each), 40 per-trajectory
    "ego_timesteps=20",
    "teammate_hidden=8",
    "best_response_hidden=8",
    "ego_hidden=8",
    "teammate_ppo.num_epochs=1",
    "teammate_ppo.num_minibatches=1",
    "teammate_ppo.learning_rate=0.05",
    "teammate_ppo.ent_coef=0",
    "ego_ppo.num_epochs=1",
    "ego_ppo.num_minibatches=1",
)
SET_ARGS = [a for item in TINY for a in ("--set", item)]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REPO = Path(__file__).resolve().parents[2]
RESULTS = "benchmarks/results/sabotage_objectives/sabotage_summary.json"
"""The committed measurement docs/rotate.md's sabotage table is rendered from."""
MAIN_WEIGHTS = {
    ("rotate", "eq7", "3.0", "0.0", ""),
    ("rotate", "transition_mean", "3.0", "0.0", ""),
    ("rotate", "public_code", "3.0", "0.0", ""),
    ("per_trajectory", "", "", "", "0.0"),
}
"""(method, objective, lambda_1, lambda_2, lambda) of the main runs: ROTATE under each
objective at the preset's (3, 0), per-trajectory regret at 0 (the paper's RQ2)."""


def _cli_subprocess(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XLA_FLAGS="--xla_backend_optimization_level=0", JAX_PLATFORMS="cpu")
    code = (
        "import sys; from aht_bench.experiments.cli import experiment; "
        "experiment(sys.argv[1:], prog_name='aht-bench experiment')"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=900
    )


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _assert_png(path: Path) -> None:
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        assert image.size[0] > 400 and image.size[1] > 200


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """The real tiny run (2-5 minutes: `slow` tests only)."""
    out = tmp_path_factory.mktemp("sabotage") / "results"
    done = _cli_subprocess(["sabotage", "--out", str(out), "--seeds", str(SEEDS), *SET_ARGS])
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done.stdout


def _check_csv(out: Path, seeds: int) -> None:
    rows = _read_csv(out / "sabotage.csv")
    assert tuple(rows[0]) == sabotage.STATE_COLUMNS
    assert len(rows) == 4 * seeds * 341
    assert Counter((r["method"], r["objective"], r["seed"]) for r in rows) == {
        (m, o, str(s)): 341
        for m, o in [("rotate", o) for o in rotate.TEAMMATE_OBJECTIVES] + [("per_trajectory", "")]
        for s in range(seeds)
    }
    p = np.array([[float(r[k]) for k in ("p_H", "p_T", "p_S")] for r in rows])
    assert np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    weights = {
        (r["method"], r["objective"], r["lambda_1"], r["lambda_2"], r["lambda"]) for r in rows
    }
    assert weights == MAIN_WEIGHTS
    # histories: all {H,T}^2 sequences of 0..4 steps once each, in the enumeration's order
    # (1 + 4 + 16 + 64 + 256 = 341); the start has own-reach 1, and own-reach is the product
    # of the teammate's (seat 1's) probabilities along its own past actions
    one = [r for r in rows if r["objective"] == "eq7" and r["seed"] == "0"]
    history = [r["history"] for r in one]
    assert history[:6] == ["-", "HH", "HT", "TH", "TT", "HH,HH"]
    assert len(set(history)) == 341
    assert Counter(0 if h == "-" else h.count(",") + 1 for h in history) == {
        0: 1,
        1: 4,
        2: 16,
        3: 64,
        4: 256,
    }
    index = {h: i for i, h in enumerate(history)}
    p_by_name = {"H": "p_H", "T": "p_T"}
    for i in (0, 7, 100, 340):
        steps = [] if history[i] == "-" else history[i].split(",")
        expected = 1.0
        for t, step in enumerate(steps):
            prefix = ",".join(steps[:t]) or "-"
            expected *= float(one[index[prefix]][p_by_name[step[1]]])
        assert float(one[i]["own_reach"]) == pytest.approx(expected, rel=1e-6)


def _check_summary(out: Path, seeds: int, iterations: int) -> list[float]:
    """The summary agrees with the CSV; returns every seed's mean P(S)."""
    rows = _read_csv(out / "sabotage.csv")
    summary = json.loads((out / "sabotage_summary.json").read_text())
    assert summary["versions"]["aht_bench"] == "0.1.0"
    assert summary["num_seeds"] == seeds
    assert tuple(summary["methods"]) == sabotage.METHODS
    means = []
    for key, entry in summary["methods"].items():
        assert entry["config"]["variant"] == entry["variant"]
        if entry["variant"] == "rotate":
            assert key == f"rotate-{entry['objective']}"
            assert entry["config"]["teammate_objective"] == entry["objective"]
        assert entry["config"]["iterations"] == iterations
        assert entry["stream_weights"] == sabotage.STREAM_WEIGHTS[key]
        assert [s["seed"] for s in entry["seeds"]] == list(range(seeds))
        for seed_entry in entry["seeds"]:
            mine = [
                r
                for r in rows
                if r["method"] == entry["variant"]
                and r["objective"] == (entry["objective"] or "")
                and r["seed"] == str(seed_entry["seed"])
            ]
            # float32 as the library holds them, so the thresholds compare the same way
            p_s = np.array([float(r["p_S"]) for r in mine], dtype=np.float32)
            on = np.array([float(r["own_reach"]) for r in mine]) >= 0.01
            assert seed_entry["frac_low"] == pytest.approx(np.mean(p_s < 0.05), abs=1e-12)
            assert seed_entry["frac_high"] == pytest.approx(np.mean(p_s > 0.9), abs=1e-12)
            assert seed_entry["mean"] == pytest.approx(float(p_s.mean()), rel=1e-5)
            assert seed_entry["reached_states"] == int(on.sum())
            assert seed_entry["reached_frac_low"] == pytest.approx(
                np.sum((p_s < 0.05) & on) / max(on.sum(), 1), abs=1e-12
            )
            assert seed_entry["reached_frac_high"] == pytest.approx(
                np.sum((p_s > 0.9) & on) / max(on.sum(), 1), abs=1e-12
            )
            sp = np.array([float(r["sp_reach"]) for r in mine])
            xp = np.array([float(r["xp_reach"]) for r in mine])
            trained = np.maximum(sp, xp) >= 0.01
            assert seed_entry["trained_states"] == int(trained.sum())
            assert seed_entry["trained_frac_high"] == pytest.approx(
                np.sum((p_s > 0.9) & trained) / max(trained.sum(), 1), abs=1e-12
            )
            assert seed_entry["p_sabotage_xp"] == pytest.approx(float(xp @ p_s), rel=1e-5)
            assert seed_entry["p_sabotage_sp"] == pytest.approx(float(sp @ p_s), rel=1e-5)
            assert len(seed_entry["xp_return"]) == iterations
            means.append(seed_entry["mean"])
    # the table file is the summary's markdown table
    assert (out / "sabotage_table.md").read_text() == sabotage.markdown_table(summary)
    return means


def _check_printed_table(out: Path, stdout: str) -> None:
    summary = json.loads((out / "sabotage_summary.json").read_text())
    lines = stdout.splitlines()
    for entry in summary["methods"].values():
        for s in entry["seeds"]:
            numbers = (
                f"{s['seed']:>4}  {s['frac_low']:>9.3f}  {s['frac_high']:>8.3f}  "
                f"{s['mean']:>9.3f}  {s['trained_states']:>7}  {s['trained_frac_high']:>16.3f}  "
                f"{s['p_sabotage_xp']:>13.3f}  {s['reached_states']:>9}  "
                f"{s['reached_frac_high']:>18.3f}"
            )
            assert any(line.startswith(entry["label"]) and numbers in line for line in lines)


@pytest.mark.slow
def test_real_run_files(real_run):
    out, stdout = real_run
    _check_csv(out, SEEDS)
    means = _check_summary(out, SEEDS, iterations=1)
    # the tiny runs trained: not every teammate still plays 1/3 everywhere
    assert max(abs(m - 1 / 3) for m in means) > 0.05
    _assert_png(out / "sabotage_hist.png")
    assert sorted(p.name for p in out.iterdir()) == sorted(sabotage.MAIN_FILES)
    _check_printed_table(out, stdout)


# ---------------------------------------------------------------------------- sweep (stand-in)


@pytest.fixture
def fake_training(monkeypatch):
    """Replaces the training call: random action probabilities (fixed per config), the real
    states and own-reach computation. Records each call's arguments."""
    calls = []
    game = sabotage_game()
    states = enumerate_nonterminal_states(game)

    def fake(
        variant,
        seeds,
        competence_weight_xp,
        competence_weight_sp,
        competence_weight_p0,
        **overrides,
    ):
        objective = overrides.get("teammate_objective")
        calls.append(
            (variant, objective, competence_weight_xp, competence_weight_sp, competence_weight_p0)
        )
        config = rotate.preset(
            "sabotage",
            "sabotage-v1",
            variant=variant,
            competence_weight_xp=competence_weight_xp,
            competence_weight_sp=competence_weight_sp,
            competence_weight_p0=competence_weight_p0,
            **overrides,
        )
        rng = np.random.default_rng(abs(hash(config)) % 2**32)
        probs = rng.dirichlet([0.3, 0.3, 0.3], size=(seeds, 341)).astype(np.float32)
        partners = rng.dirichlet([0.3, 0.3, 0.3], size=(2, seeds, 341)).astype(np.float32)
        return sabotage_analysis.SabotageResult(
            p_sabotage=probs[..., 2],
            p_actions=probs,
            own_reach=np.stack(
                [sabotage_analysis.own_reach_probabilities(p, config) for p in probs]
            ),
            sp_reach=np.stack(
                [
                    sabotage_analysis.joint_reach_probabilities(p, q, config)
                    for p, q in zip(probs, partners[0], strict=True)
                ]
            ),
            xp_reach=np.stack(
                [
                    sabotage_analysis.joint_reach_probabilities(p, q, config)
                    for p, q in zip(probs, partners[1], strict=True)
                ]
            ),
            states=states,
            metrics={"xp_return": np.zeros((seeds, config.iterations))},
            config=config,
        )

    monkeypatch.setattr(sabotage_analysis, "sabotage_experiment", fake)
    return calls


def test_main_files_agree_and_the_table_is_printed(tmp_path, fake_training):
    out = tmp_path / "main"
    args = ["--seeds", "3", "--no-progress", "--set", "iterations=2"]
    result = CliRunner().invoke(experiment, ["sabotage", "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    # one training call per main run: ROTATE under each objective at (3, 0), per-trajectory 0
    assert sorted(fake_training) == sorted(
        [("rotate", o, 3.0, 0.0, 0.0) for o in rotate.TEAMMATE_OBJECTIVES]
        + [("per_trajectory", "transition_mean", 3.0, 0.0, 0.0)]
    )
    _check_csv(out, 3)
    _check_summary(out, 3, iterations=2)
    _assert_png(out / "sabotage_hist.png")
    assert sorted(p.name for p in out.iterdir()) == sorted(sabotage.MAIN_FILES)
    _check_printed_table(out, result.output)


def test_sweep_trains_every_cell_once_and_writes_the_grid(tmp_path, fake_training):
    out = tmp_path / "sweep"
    args = ["--seeds", "3", "--sweep", "--weights", "0,1", "--no-progress"]
    result = CliRunner().invoke(experiment, ["sabotage", "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    # main: ROTATE (3, 0) under each objective, per-trajectory 0; sweep: the 4 ROTATE cells
    # with Eq. 7 and per-trajectory 1 (per-trajectory 0 is the main run's config: reused)
    assert sorted(fake_training) == sorted(
        [("rotate", o, 3.0, 0.0, 0.0) for o in rotate.TEAMMATE_OBJECTIVES]
        + [("per_trajectory", "transition_mean", 3.0, 0.0, 0.0)]
        + [("rotate", "eq7", w1, w2, 0.0) for w1 in (0.0, 1.0) for w2 in (0.0, 1.0)]
        + [("per_trajectory", "transition_mean", 3.0, 0.0, 1.0)]
    )
    rows = _read_csv(out / "sabotage_sweep.csv")
    assert tuple(rows[0]) == sabotage.SWEEP_COLUMNS
    cells = Counter(
        (r["method"], r["objective"], r["lambda_1"], r["lambda_2"], r["lambda"]) for r in rows
    )
    assert cells == {
        ("rotate", "eq7", "0.0", "0.0", ""): 3,
        ("rotate", "eq7", "0.0", "1.0", ""): 3,
        ("rotate", "eq7", "1.0", "0.0", ""): 3,
        ("rotate", "eq7", "1.0", "1.0", ""): 3,
        ("per_trajectory", "", "", "", "0.0"): 3,
        ("per_trajectory", "", "", "", "1.0"): 3,
    }
    assert sorted({int(r["cell"]) for r in rows}) == list(range(6))
    # each row's mean P(S) is that cell's seed's mean over the 341 states
    for r in rows:
        method = r["method"]
        if method == "rotate":
            weights = {
                "competence_weight_xp": float(r["lambda_1"]),
                "competence_weight_sp": float(r["lambda_2"]),
                "teammate_objective": "eq7",
            }
        else:
            weights = {"competence_weight_p0": float(r["lambda"])}
        config = rotate.preset("sabotage", "sabotage-v1", variant=method, **weights)
        fake = sabotage_analysis.sabotage_experiment(
            method,
            3,
            config.competence_weight_xp,
            config.competence_weight_sp,
            config.competence_weight_p0,
            teammate_objective=config.teammate_objective,
        )
        seed = int(r["seed"])
        assert float(r["mean_p_s"]) == pytest.approx(float(fake.p_sabotage[seed].mean()))
        assert float(r["frac_high"]) == pytest.approx(float((fake.p_sabotage[seed] > 0.9).mean()))
    _assert_png(out / "sabotage_sweep.png")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        sabotage.MAIN_FILES + sabotage.SWEEP_FILES
    )
    assert (
        "mean P(S), ROTATE" in result.output and "per-trajectory regret (lambda)" in result.output
    )


# ------------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    "args,message",
    [
        (["--set", "nonsense=1"], "nonsense"),
        (["--set", "iteratons=2"], "did you mean 'iterations'"),
        (["--set", "iterations=abc"], "iterations"),
        (["--set", "iterations=0"], "iterations"),
        (["--set", "teammate_ppo.bogus=1"], "teammate_ppo.bogus"),
        (["--set", "variant=per_trajectory"], "variant"),
        (["--set", "teammate_objective=eq7"], "set by the experiment"),
        (["--set", "branch_weights=unit"], "set by the experiment"),
        (["--set", "competence_weight_xp=1"], "competence_weight_xp"),
        (["--set", "no_equals_sign"], "FIELD=VALUE"),
        (["--sweep", "--weights", "0,-1"], "weights"),
        (["--sweep", "--weights", "0,x"], "--weights"),
        (["--weights", "0,1"], "--weights needs --sweep"),
        (["--seeds", "0"], "--seeds"),
    ],
)
def test_bad_input_is_a_usage_error_and_writes_nothing(tmp_path, fake_training, args, message):
    out = tmp_path / "never"
    result = CliRunner().invoke(experiment, ["sabotage", "--out", str(out), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not out.exists()
    assert fake_training == []  # nothing trained


def test_run_rejects_fixed_and_unknown_fields_before_any_work(tmp_path, fake_training):
    with pytest.raises(ValueError, match="variant"):
        sabotage.run(tmp_path / "a", variant="rotate")
    with pytest.raises(ValueError, match="did you mean 'num_envs'"):
        sabotage.run(tmp_path / "b", num_env=4)
    with pytest.raises(ValueError, match="seeds"):
        sabotage.run(tmp_path / "c", seeds=0)
    assert fake_training == [] and list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------ the docs table


def test_docs_table_is_the_committed_measurement_rendered():
    """docs/rotate.md's sabotage table is written by `aht-bench experiment sabotage-table` from
    the committed summary, never typed: it must be exactly what the formatter renders."""
    summary = json.loads((REPO / RESULTS).read_text())
    docs = (REPO / "docs" / "rotate.md").read_text()
    assert sabotage.docs_table(docs) == sabotage.markdown_table(summary, RESULTS)
    assert tuple(summary["methods"]) == sabotage.METHODS


def test_sabotage_table_command_writes_between_the_markers(tmp_path, fake_training):
    out = tmp_path / "main"
    CliRunner().invoke(experiment, ["sabotage", "--out", str(out), "--no-progress"])
    summary_path = out / "sabotage_summary.json"
    summary = json.loads(summary_path.read_text())
    docs = tmp_path / "doc.md"
    docs.write_text(
        f"# Title\n\n{sabotage.DOCS_BEGIN}\nstale typed table\n{sabotage.DOCS_END}\nafter\n"
    )
    result = CliRunner().invoke(
        experiment, ["sabotage-table", str(summary_path), "--docs", str(docs)]
    )
    assert result.exit_code == 0, result.output
    text = docs.read_text()
    table = sabotage.markdown_table(summary, str(summary_path))
    assert sabotage.docs_table(text) == table and "stale" not in text
    assert text.startswith("# Title\n\n") and text.endswith(f"{sabotage.DOCS_END}\nafter\n")
    # one row per method, each cell a mean [CI] over the seeds; printed without --docs
    assert sum(line.startswith("| ROTATE") for line in table.splitlines()) == 3
    printed = CliRunner().invoke(experiment, ["sabotage-table", str(summary_path)])
    assert printed.exit_code == 0 and printed.output == table
    # a file without the markers is a usage error and is left alone
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n")
    refused = CliRunner().invoke(
        experiment, ["sabotage-table", str(summary_path), "--docs", str(bare)]
    )
    assert refused.exit_code == 2 and "sabotage-table" in refused.output
    assert bare.read_text() == "no markers\n"
    assert per_seed_table(summary).count("\n") == 1 + 4 * summary["num_seeds"]
    assert summary["num_seeds"] == sabotage.DEFAULT_SEEDS == 10
    assert summary["host"]["cores"] >= 1 and summary["host"]["cpu"] in table


def test_each_table_cell_is_the_mean_over_seeds_with_a_bootstrap_ci():
    # two seeds 0 and 1: resamples have means 0, 0.5 or 1 (probabilities 1/4, 1/2, 1/4)
    mean, low, high = sabotage.mean_ci([0.0, 1.0])
    assert mean == 0.5 and low == 0.0 and high == 1.0
    assert sabotage.mean_ci([0.3]) == (0.3, 0.3, 0.3)
    assert sabotage.mean_ci([0.2] * 10) == pytest.approx((0.2, 0.2, 0.2))
    a = sabotage.mean_ci([0.1, 0.2, 0.3, 0.9])
    assert a == sabotage.mean_ci([0.1, 0.2, 0.3, 0.9])  # seeded: the same CI every time
    assert 0.1 <= a[1] < a[0] < a[2] <= 0.9
    summary = {"methods": {
        "rotate-eq7": {"seeds": [{"p_sabotage_xp": 0.01 * k, "trained_frac_high": 0.0}
                                 for k in range(10)]},
        "per_trajectory": {"seeds": [{"p_sabotage_xp": 0.9 + 0.01 * k,
                                      "trained_frac_high": 0.05 * (k % 2)} for k in range(10)]},
    }}  # fmt: skip
    claims = sabotage.direction_claims(summary)
    # 0.00-0.09 against 0.90-0.99; 0 against half 0.05: every resample's mean of the latter is
    # above 0 but those of ten zeros (probability 2^-10, far below 2.5%)
    assert claims == {
        "per-trajectory above Eq. 7: p_sabotage_xp": True,
        "per-trajectory above Eq. 7: trained_frac_high": True,
    }
    for row in summary["methods"]["rotate-eq7"]["seeds"]:
        row["p_sabotage_xp"] = 0.95  # the same level: the CIs overlap
    assert not sabotage.direction_claims(summary)["per-trajectory above Eq. 7: p_sabotage_xp"]


# ------------------------------------------------------------------------------- slow: real


@pytest.mark.slow
def test_a_reduced_run_holds_the_direction_claims(tmp_path):
    """Issue 55: the docs' claims are directions, not digits. The experiment as documented (10
    seeds, the sabotage preset, default XLA flags) with 2 generator iterations instead of 5:
    per-trajectory regret sabotages and Eq. 7 does not, with the 95% CIs over seeds apart
    (measured 2026-12-08: P(plays S) with the ego 1.000 against 0.017, P(S) > 0.9 at visited
    states 0.267 against 0.000; 509 s on two CPU cores beside a training run)."""
    out = tmp_path / "reduced"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    code = (
        "import sys; from aht_bench.experiments.cli import experiment; "
        "experiment(sys.argv[1:], prog_name='aht-bench experiment')"
    )
    args = ["sabotage", "--out", str(out), "--set", "iterations=2", "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=2400
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "sabotage_summary.json").read_text())
    assert summary["num_seeds"] == sabotage.DEFAULT_SEEDS == 10
    claims = sabotage.direction_claims(summary)
    assert claims and all(claims.values()), claims
    table = (out / "sabotage_table.md").read_text()
    assert table.count(": holds") == len(claims)


@pytest.mark.slow
def test_real_tiny_sweep(tmp_path):
    """The whole sweep path with real (tiny) training: 9 training calls, several minutes."""
    out = tmp_path / "sweep"
    args = ["--seeds", "2", "--sweep", "--weights", "0,1", "--no-progress", *SET_ARGS]
    done = _cli_subprocess(["sabotage", "--out", str(out), *args])
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _read_csv(out / "sabotage_sweep.csv")
    assert len(rows) == (4 + 2) * 2
    means = np.array([float(r["mean_p_s"]) for r in rows])
    assert np.all((means >= 0) & (means <= 1))
    _assert_png(out / "sabotage_sweep.png")
    assert len(_read_csv(out / "sabotage.csv")) == 4 * 2 * 341


# ------------------------------------------------------------- reach of the training episodes


def test_joint_reach_sums_to_the_probability_that_nobody_has_played_s():
    # at every depth t the states partition the histories of t steps without S, so their joint
    # reach sums to P(no S in the first t steps) = (1 - s_tm)^t (1 - s_partner)^t when both
    # play S with a fixed probability everywhere
    config = rotate.preset("sabotage", "sabotage-v1")
    tm = np.tile([0.5, 0.3, 0.2], (341, 1))
    partner = np.tile([0.1, 0.8, 0.1], (341, 1))
    reach = sabotage_analysis.joint_reach_probabilities(tm, partner, config)
    history = np.asarray(enumerate_nonterminal_states(sabotage_game()).inner.history)
    depth = (history[:, :, 0] >= 0).sum(axis=1)
    for t in range(5):
        assert reach[depth == t].sum() == pytest.approx((0.8 * 0.9) ** t, rel=1e-9)
    # with no partner probabilities it is the teammate's own reach
    np.testing.assert_array_equal(
        sabotage_analysis.joint_reach_probabilities(tm, None, config),
        sabotage_analysis.own_reach_probabilities(tm, config),
    )


def test_ego_probabilities_follow_each_history_through_the_gru():
    import jax

    config = rotate.preset("sabotage", "sabotage-v1")
    net = rotate.networks(config).ego
    params = net.init(jax.random.PRNGKey(1))
    got = sabotage_analysis.partner_action_probabilities(params, net, config)
    game = sabotage_game()
    states = enumerate_nonterminal_states(game)
    history = np.asarray(states.inner.history)
    obs = np.asarray(jax.vmap(game.observe)(states).obs[:, config.ego_seat])
    index = {tuple(map(tuple, h[h[:, 0] >= 0].tolist())): i for i, h in enumerate(history)}
    # a rollout step by step along three histories: evaluate, then tell the GRU its own action
    for i in (0, 9, 340):
        played = history[i][history[i][:, 0] >= 0]
        carry = net.init_carry(())
        for t in range(len(played) + 1):
            logits, _, carry = net.evaluate(
                params, carry, obs[index[tuple(map(tuple, played[:t].tolist()))]]
            )
            if t < len(played):
                carry = carry._replace(prev_action=np.int32(played[t, config.ego_seat]))
        np.testing.assert_allclose(got[i], np.asarray(jax.nn.softmax(logits)), rtol=1e-5, atol=1e-6)
    assert np.allclose(got.sum(axis=1), 1.0, atol=1e-5)
