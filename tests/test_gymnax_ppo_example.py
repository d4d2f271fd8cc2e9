"""The one-file PPO example on the gymnax shell (agents/examples/gymnax_ppo/train.py): a few
updates write an agent file the evaluator loads and print commands that exist (fast); the
default run trains an ego that beats random_agent.py on cramped_room's heldout v2 set (slow)."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import shlex
import sys
import time
from pathlib import Path
from types import ModuleType

import jax
import numpy as np
import pytest
from test_readme_commands import problems_of

from aht_bench.evaluation import evaluate_policy, load_set, sets
from aht_bench.policies.agent_file import load_agent_file
from aht_bench.policies.io import load_policy, read_card

SCRIPT = Path(__file__).resolve().parents[1] / "agents" / "examples" / "gymnax_ppo" / "train.py"
RANDOM_AGENT_UPPER_CI = 0.201
"""random_agent.py's upper 95% CI of the mean BRProx on cramped_room's heldout v2 set with 16
episodes (benchmarks/results/example_agents_v2-overcooked-cramped_room-v2-random_agent.json)."""


@functools.cache
def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gymnax_ppo_train", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_gae_matches_a_python_loop():
    train = _example()
    rng = np.random.default_rng(0)
    rewards, values = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    dones = rng.random((5, 3)) < 0.3
    last = rng.normal(size=3)
    gamma, lam = 0.9, 0.8
    expected = np.zeros((5, 3))
    for n in range(3):  # CleanRL's loop, written out
        advantage = 0.0
        for t in reversed(range(5)):
            next_value = last[n] if t == 4 else values[t + 1, n]
            live = 1.0 - dones[t, n]
            delta = rewards[t, n] + gamma * next_value * live - values[t, n]
            advantage = delta + gamma * lam * live * advantage
            expected[t, n] = advantage
    adv, ret = train.gae(
        *(jax.numpy.asarray(x, jax.numpy.float32) for x in (rewards, values)),
        jax.numpy.asarray(dones),
        jax.numpy.asarray(last, jax.numpy.float32),
        gamma,
        lam,
    )
    np.testing.assert_allclose(adv, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, expected + values, rtol=1e-5, atol=1e-5)


def test_a_few_updates_write_an_agent_file_and_print_commands_that_exist(tmp_path, capsys):
    train = _example()
    out = tmp_path / "ego.safetensors"
    argv = ["--task", "sabotage-v1", "--teammates", "random", "--total-timesteps", "96"]
    argv += ["--num-envs", "4", "--num-steps", "8", "--out", str(out)]
    assert train.main(argv) == 0  # 3 updates of 32 steps
    printed = capsys.readouterr().out
    card = read_card(out)
    assert card["task_id"] == "sabotage-v1" and card["provenance"]["trained"] is True
    assert card["provenance"]["updates"] == 3 and card["provenance"]["env_steps"] == 96
    assert card["provenance"]["config"]["teammates"] == "random"
    policy, params = load_policy(out)
    assert type(policy).__name__ == "MLPActorCritic" and policy.num_actions == 3
    agent = load_agent_file(out, "sabotage-v1")  # what `aht-bench evaluate` loads
    assert agent.jax is not None
    commands = [line.strip() for line in printed.splitlines() if "aht-bench " in line]
    assert [c.split()[1] for c in commands] == ["evaluate", "leaderboard"]
    for command in commands:
        words = shlex.split(command.removeprefix("aht-bench "))
        assert not problems_of(shlex.join(words)), command
    assert f"aht-bench evaluate {out} --task sabotage-v1" in printed


def test_the_default_teammates_are_no_heldout_member():
    train = _example()
    folder = sets.resolve_set_folder("overcooked-cramped_room-v2", "v2")
    heldout_names = {m["name"] for m in sets.read_manifest(folder)[0]["members"]}
    assert len(heldout_names) == 10
    stand_in = set(train.Config().teammates.split(","))
    assert stand_in and not stand_in & heldout_names
    assert train.Config().task == "overcooked-cramped_room-v2"


@pytest.mark.slow  # the example as documented: about 8-10 minutes of training on 2 CPU cores
def test_the_default_run_beats_random_on_the_heldout_set_within_15_minutes(tmp_path):
    train = _example()
    config = train.Config()
    start = time.perf_counter()
    summary = train.run(config, tmp_path / "ego.safetensors", progress=False)
    assert time.perf_counter() - start < 15 * 60, summary
    policy, params = load_policy(tmp_path / "ego.safetensors")
    record = evaluate_policy(
        policy, params, load_set(config.task, "v2"), name="gymnax_ppo", num_episodes=16, seed=0
    )
    mean = record["payload"]["aggregates"]["mean"]
    assert mean["value"] > RANDOM_AGENT_UPPER_CI, mean
    assert dataclasses.asdict(config)["teammates"] == train.STAND_IN
