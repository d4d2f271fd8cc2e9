"""Presets are data: they construct, match the paper's tables, and fail helpfully."""

import pytest

from aht_bench.training import BRConfig, EgoConfig, IPPOConfig, presets


def test_every_preset_constructs():
    found = presets.names()
    assert ("ippo", "paper", "overcooked-forced_coord-v1") in found
    for algorithm, preset, task in found:
        cfg = presets.get(algorithm, preset, task)
        assert cfg.canonical_task_id == task
        assert cfg.num_updates >= 1


def test_paper_ippo_rows():
    # Table ippo_hyperparams (bold values)
    lbf = presets.get("ippo", "paper", "lbf")
    assert isinstance(lbf, IPPOConfig)
    assert (lbf.total_timesteps, lbf.num_envs) == (500_000, 8)
    assert (lbf.ppo.num_epochs, lbf.ppo.num_minibatches, lbf.ppo.clip_eps) == (15, 4, 0.03)
    assert (lbf.ppo.ent_coef, lbf.ppo.learning_rate, lbf.ppo.anneal_lr) == (0.01, 1e-4, True)
    cr = presets.get("ippo", "paper", "cramped_room")
    assert (cr.total_timesteps, cr.ppo.num_minibatches, cr.ppo.clip_eps) == (1_000_000, 16, 0.2)
    fc = presets.get("ippo", "paper", "forced_coord")
    assert (fc.total_timesteps, fc.ppo.ent_coef, fc.ppo.learning_rate) == (3_000_000, 0.05, 1e-3)
    assert all(presets.get("ippo", "paper", t).ppo.gamma == 0.99 for t in presets.PAPER_TASKS)
    assert isinstance(presets.get("br", "paper", "lbf"), BRConfig)


def test_paper_ego_rows():
    # Table ppo_ego_tm_hyperparams
    lbf = presets.get("ego", "paper", "lbf")
    assert isinstance(lbf, EgoConfig)
    assert (lbf.total_timesteps, lbf.num_envs, lbf.ppo.learning_rate) == (60_000_000, 8, 5e-5)
    assert (lbf.ppo.num_epochs, lbf.ppo.num_minibatches, lbf.ppo.ent_coef) == (10, 4, 1e-4)
    assert (lbf.ppo.clip_eps, lbf.ppo.anneal_lr) == (0.1, False)
    fc = presets.get("ego", "paper", "forced_coord")
    assert (fc.total_timesteps, fc.ppo.learning_rate, fc.ppo.num_epochs) == (120_000_000, 1e-5, 5)
    cor = presets.get("ego", "paper", "coord_ring")
    assert cor.ppo.learning_rate == 3e-5


def test_get_overrides_and_errors():
    cfg = presets.get("ippo", "quick", "lbf", total_timesteps=64 * 128 * 2)
    assert cfg.num_updates == 2
    with pytest.raises(KeyError, match="Did you mean 'ippo'"):
        presets.get("ipo", "quick", "lbf")
    with pytest.raises(KeyError, match="Did you mean 'paper'"):
        presets.get("ippo", "papr", "lbf")
    with pytest.raises(KeyError, match="covers"):
        presets.get("ippo", "paper", "sabotage")
    with pytest.raises(ValueError, match="num_envs"):
        presets.get("ippo", "quick", "lbf", num_envs=0)
