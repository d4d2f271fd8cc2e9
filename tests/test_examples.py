"""The example agent files in agents/examples: each loads and plays through `check-agent`, and the
Stable-Baselines3 example trains, exports, and runs in NumPy exactly as SB3 does.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from click.testing import CliRunner

from aht_bench.cli import EXIT_AGENT_LOAD, EXIT_OK, main
from aht_bench.policies.agent_file import load_agent_file
from aht_bench.policies.io import read_card

EXAMPLES = Path(__file__).resolve().parents[1] / "agents" / "examples"
AGENT_FILES = [
    "random_agent.py",
    "random_jax_agent.py",
    "scripted_agent.py",
    "jax_mlp_agent.py",
    "sb3_ppo/agent.py",
]


def _import(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", AGENT_FILES)
def test_example_plays_an_episode_through_check_agent(name):
    result = CliRunner().invoke(
        main,
        ["check-agent", str(EXAMPLES / name), "--task", "lbf-v1", "--teammate", "lexi"],
        catch_exceptions=False,
    )
    assert result.exit_code == EXIT_OK, result.output
    assert "episode 1 (seed 0): base return" in result.output
    assert f"agent OK: {Path(name).name}" in result.output


def test_examples_refuse_tasks_they_do_not_support():
    result = CliRunner().invoke(
        main, ["check-agent", str(EXAMPLES / "scripted_agent.py"), "--task", "sabotage"]
    )
    assert result.exit_code == EXIT_AGENT_LOAD
    assert "supports only the tasks ('lbf-v1', 'lbf-4p-v1')" in result.stderr


def test_the_jitted_random_example_plays_uniformly_on_the_fast_path():
    import jax

    agent = load_agent_file(EXAMPLES / "random_jax_agent.py", "overcooked-cramped_room-v2")
    assert agent.jax is not None
    policy, params = agent.jax
    keys = jax.random.split(jax.random.PRNGKey(1), 600)
    actions = [int(policy.act(params, (), None, k)[0]) for k in keys[:300]]
    counts = np.bincount(actions, minlength=6)
    assert counts.min() > 30 and counts.max() < 70, counts  # 50 expected each


def test_jax_example_exposes_the_fast_path_and_says_it_is_untrained():
    agent = load_agent_file(EXAMPLES / "jax_mlp_agent.py", "lbf-v1")
    assert agent.kind == "act" and agent.jax is not None
    policy, _ = agent.jax
    assert type(policy).__name__ == "MLPActorCritic"
    card = read_card(EXAMPLES / "jax_mlp_lbf.safetensors")
    assert card["provenance"]["trained"] is False and card["task_id"] == "lbf-v1"
    assert "UNTRAINED" in (EXAMPLES / "jax_mlp_agent.py").read_text()


def test_sb3_example_ships_no_pickle_and_refuses_corrupted_weights(tmp_path):
    shipped = sorted(p.name for p in (EXAMPLES / "sb3_ppo").iterdir() if p.is_file())
    assert not [p for p in shipped if p.endswith((".zip", ".pkl", ".pt", ".pth"))], shipped
    agent = _import(EXAMPLES / "sb3_ppo" / "agent.py", "sb3_example_agent")
    assert "torch" not in agent.__dict__ and agent.TASKS == ("lbf-v1",)
    blob = bytearray((EXAMPLES / "sb3_ppo" / "ppo_lbf.safetensors").read_bytes())
    blob[-5] ^= 0x01
    (tmp_path / "w.safetensors").write_bytes(bytes(blob))
    shutil.copy(EXAMPLES / "sb3_ppo" / "ppo_lbf.safetensors.json", tmp_path / "w.safetensors.json")
    with pytest.raises(ValueError, match="does not match the sha256"):
        agent.load_actor(tmp_path / "w.safetensors")


def test_sb3_example_trains_exports_and_matches_sb3(tmp_path):
    pytest.importorskip("stable_baselines3", reason="install the sb3 extra: pip install -e .[sb3]")
    import torch

    from aht_bench.adapters.gym import EgoEnv

    train = _import(EXAMPLES / "sb3_ppo" / "train.py", "sb3_example_train")
    model = train.train("lbf-v1", timesteps=2048, seed=0, n_envs=8)
    out = tmp_path / "ppo_lbf.safetensors"
    card_path = train.export(model, out, "lbf-v1", {"timesteps": 2048, "seed": 0})
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name, card_path.name]
    assert json.loads(card_path.read_text())["sha256"]

    env = EgoEnv("lbf-v1")
    obs_batch = []
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        for _ in range(60):
            obs_batch.append(obs)
            obs, *_ = env.step(env.action_space.sample())
    obs_batch = np.stack(obs_batch)  # (180, 16)

    agent = _import(EXAMPLES / "sb3_ppo" / "agent.py", "sb3_example_agent_2")
    _, layers = agent.load_actor(out)
    ours = np.argmax(agent.logits(layers, obs_batch), axis=-1)
    theirs, _ = model.predict(obs_batch, deterministic=True)
    np.testing.assert_array_equal(ours, theirs)
    with torch.no_grad():
        dist = model.policy.get_distribution(torch.as_tensor(obs_batch))
        probs = dist.distribution.probs.numpy()
    np.testing.assert_allclose(agent.probabilities(layers, obs_batch), probs, atol=1e-6)

    # the exported files next to a copy of agent.py make a working agent file
    shutil.copy(EXAMPLES / "sb3_ppo" / "agent.py", tmp_path / "agent.py")
    result = CliRunner().invoke(
        main,
        ["check-agent", str(tmp_path / "agent.py"), "--task", "lbf-v1", "--no-isolate"],
        catch_exceptions=False,
    )
    assert result.exit_code == EXIT_OK, result.output


def test_heuristic_example_is_the_jax_path_of_a_builtin_heuristic_on_forced_coord():
    agent = load_agent_file(EXAMPLES / "heuristic_agent.py", "forced_coord")
    assert agent.kind == "jax" and agent.jax is not None
    policy, params = agent.jax
    assert type(policy).__name__ == "OvercookedHeuristic" and params is None
    result = CliRunner().invoke(
        main,
        [
            "check-agent",
            str(EXAMPLES / "heuristic_agent.py"),
            "--task",
            "forced_coord",
            "--teammate",
            "independent_agent_0.6",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == EXIT_OK, result.output
    assert "agent OK: heuristic_agent.py" in result.output
