"""`aht-bench evaluate FILE FILE ...`: several agent files are the training seeds of one agent,
each playing the one-file protocol, the CIs over seeds (paper Sec. 6.1: "the bootstrap samples
over training seeds within each evaluation task"); one file is scored as before; usage errors
exit 2; `compare` reads multi-seed records."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from click.testing import CliRunner
from eval_helpers import JAX_AGENT, PLAIN_AGENT, load_json

from aht_bench.cli import EXIT_OK, EXIT_USAGE, main
from aht_bench.evaluation import evaluate_agent_file, evaluate_agent_files, scores, sets
from aht_bench.evaluation.record import score_matrix_of
from aht_bench.policies.sandbox import shown_bundle

# Three plain "seeds" of a sabotage agent: the parity of the observation sum, modulo 2, 3 or 5
# (0 and 1 are H and T, 2 ends the game).
SEEDS = {f"seed{i}.py": PLAIN_AGENT.replace("% 2", f"% {m}") for i, m in enumerate((2, 3, 5))}
UPPER = 5.0  # the sabotage set's bounds are [0, 5] for both members


def _run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _evaluate(agents, set_folder, *extra: str):
    return _run(
        "evaluate", *map(str, agents), "--task", "sabotage", "--teammates", str(set_folder),
        "--episodes", "4", "--reps", "200", "--no-progress", "--no-plot", *extra,
    )  # fmt: skip


@pytest.fixture
def seed_files(tmp_path):
    out = []
    (tmp_path / "agents").mkdir()
    for name, text in SEEDS.items():
        out.append(tmp_path / "agents" / name)
        out[-1].write_text(text)
    return out


def test_several_files_are_scored_over_seeds(sabotage_set, seed_files, tmp_path):
    out = tmp_path / "seeds.json"
    result = _evaluate(seed_files, sabotage_set, "--out", str(out))
    assert result.exit_code == EXIT_OK, result.output
    assert "3 seeds of one agent (seed0.py, seed1.py, seed2.py)" in result.output
    assert "normalised [95% CI over 3 seeds]" in result.output
    assert "stratified bootstrap 95% CI over the 3 seeds:" in result.output
    record = load_json(out)
    payload = record["payload"]
    assert payload["protocol"]["runs"] == "seeds"
    assert payload["agent"] == {
        "files": [
            {
                "file": p.name,
                "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
                "bundle": shown_bundle(p).summary(),  # the three files of their folder
                "kind": "act",
            }
            for p in seed_files
        ],
        "runner": "python-isolated",  # step by step, each file in its sandboxed worker
        "isolation": "sandbox",
    }
    assert record["meta"]["agent_paths"] == [str(p.resolve()) for p in seed_files]

    # each seed played exactly what it plays alone
    alone = [load_json(_alone(p, sabotage_set, tmp_path)) for p in seed_files]
    for i, single in enumerate(alone):
        for seeded, member in zip(payload["members"], single["payload"]["members"], strict=True):
            assert seeded["returns_per_seed"][i] == member["returns"]

    # the (seeds, members) matrix by hand: a seed's mean normalised return over episodes and
    # seatings, with bounds [0, 5]
    hand = [
        [
            sum(sum(r) for r in m["returns_per_seed"][f].values()) / (2 * 4) / UPPER
            for m in payload["members"]
        ]
        for f in range(3)
    ]
    np.testing.assert_allclose(score_matrix_of(record), hand, rtol=0, atol=1e-12)
    for j, member in enumerate(payload["members"]):
        column = [row[j] for row in hand]
        assert member["normalized_per_seed"] == pytest.approx(column, abs=1e-12)
        assert member["normalized"]["value"] == pytest.approx(sum(column) / 3, abs=1e-12)
    assert len({tuple(row) for row in hand}) > 1  # the seeds differ: the CIs are not trivial
    expected = scores.interval_estimates(hand, reps=200, seed=0)
    for name in scores.AGGREGATES:
        assert payload["aggregates"][name]["ci"] == pytest.approx(
            expected["aggregates"][name]["ci"], abs=1e-12
        )


def _alone(agent, set_folder, tmp_path):
    out = tmp_path / f"{agent.stem}-alone.json"
    assert _evaluate([agent], set_folder, "--out", str(out)).exit_code == EXIT_OK
    return out


def test_one_file_gives_the_one_file_record(sabotage_set, seed_files):
    """evaluate_agent_files with one path is evaluate_agent_file: same payload hash, no seeds."""
    eval_set = sets.load_set("sabotage-v1", str(sabotage_set))
    a = evaluate_agent_file(seed_files[0], eval_set, num_episodes=2, reps=200)
    b = evaluate_agent_files([seed_files[0]], eval_set, num_episodes=2, reps=200)
    assert a["payload_sha256"] == b["payload_sha256"]
    assert "runs" not in b["payload"]["protocol"] and "agent_path" in b["meta"]


def test_the_default_result_path_names_the_seed_count(sabotage_set, seed_files, monkeypatch):
    monkeypatch.chdir(seed_files[0].parent)
    assert _evaluate(seed_files[:2], sabotage_set).exit_code == EXIT_OK
    assert load_json(seed_files[0].parent / "results/seed0/sabotage-v1-2seeds.json")


def test_seed_file_usage_errors_exit_2(sabotage_set, seed_files, tmp_path):
    copy = tmp_path / "copy_of_seed0.py"
    copy.write_text(seed_files[0].read_text())
    jax_agent = tmp_path / "jax_agent.py"
    jax_agent.write_text(JAX_AGENT)
    twice = (
        tmp_path / "agents" / "sub" / ".." / seed_files[1].name
    )  # the same file, spelt otherwise
    (tmp_path / "agents" / "sub").mkdir()
    first, second = seed_files[:2]
    cases = [
        ([first, second, first], f"agent file {first} is given twice"),
        ([second, twice], f"agent file {second} is given twice"),
        ([first, copy], "have the same contents (sha256"),
        ([first, jax_agent], "jax_agent.py runs on the jax runner but seed0.py on the python"),
    ]
    for agents, needle in cases:
        result = _evaluate(agents, sabotage_set, "--out", str(tmp_path / "r.json"))
        assert result.exit_code == EXIT_USAGE, (agents, result.output)
        assert needle in " ".join(result.output.split()), (agents, result.output)
    assert not (tmp_path / "r.json").exists()
    result = _run("evaluate", *map(str, seed_files), "--task", "all")
    assert result.exit_code == EXIT_USAGE
    assert "--task all takes one agent file, not 3" in result.output


def test_compare_gives_the_probability_of_improvement_over_seeds(
    sabotage_set, seed_files, tmp_path
):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert _evaluate(seed_files, sabotage_set, "--out", str(a)).exit_code == EXIT_OK
    assert _evaluate(seed_files[::-1][:2], sabotage_set, "--out", str(b)).exit_code == EXIT_OK
    result = _run("compare", str(a), str(b), "--no-plot", "--reps", "200")
    assert result.exit_code == EXIT_OK, result.output
    assert "P(X > Y) [95% CI] (runs = training seeds):" in result.output
    assert "P(seed0.py (3 seeds) > seed2.py (2 seeds)) = " in result.output
