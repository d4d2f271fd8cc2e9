"""Presets are data: they construct, match the paper's tables, and fail helpfully."""

import pytest

from aht_bench.training import BRConfig, EgoConfig, IPPOConfig, presets


def test_every_preset_constructs():
    found = presets.names()
    assert ("ippo", "paper", "overcooked-forced_coord-v1") in found
    for algorithm, preset, task in found:
        cfg = presets.get(algorithm, preset, task)
        assert cfg.task_id == task
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


def _layout_config(config: object) -> object:
    """A preset config as nested dicts, with task ids written as their v1 form and the fields
    that v2 sets on purpose (shaping, ROTATE's teammate objective) left out."""
    import dataclasses

    def walk(x: object) -> object:
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            return {
                f.name: walk(getattr(x, f.name))
                for f in dataclasses.fields(x)
                if f.name not in ("shaping", "teammate_objective")
            }
        if isinstance(x, str):
            return x.replace("-v2", "-v1")
        if isinstance(x, tuple | list):
            return [walk(v) for v in x]
        return x

    return walk(config)


def test_v2_presets_are_their_v1_layouts_rows_on_the_v2_task():
    """Every preset of every method covers the v2 Overcooked tasks with its v1 layout's
    hyperparameters (the paper's tables are per layout), no shaping override (v2 pays no
    counter pickup itself) and, for ROTATE, the Eq. 7 objective."""
    from aht_bench.algorithms import brdiv, cole, comedi, fcp, minimax, paired, rotate

    assert len(presets.PAPER_TASKS_V2) == 6 and presets.PAPER_TASKS_V2[0] == "lbf-v1"
    tables = [(("ppo",) + key, table) for key, table in presets.PRESETS.items()]
    for module in (brdiv, cole, comedi, fcp, minimax, paired, rotate):
        tables += [((module.__name__, name), t) for name, t in module.PRESETS.items()]
    checked = 0
    for where, table in tables:
        for v2 in presets.PAPER_TASKS_V2[1:]:
            v1 = v2.replace("-v2", "-v1")
            if v1 not in table:
                continue
            assert v2 in table, (where, v2)
            new, old = table[v2], table[v1]
            assert new.task_id == v2, where
            assert _layout_config(new) == _layout_config(old), (where, v2)
            assert getattr(new, "shaping", ()) == (), (where, v2)
            if hasattr(new, "teammate_objective"):
                assert new.teammate_objective == "eq7", (where, v2)
            checked += 1
    assert checked >= 5 * (len(tables) - 1)


def test_medium_units_keeps_the_papers_count_or_quicks_unit():
    # a tenth of the paper's 10 units of 8 steps is 0.8 per unit: above quick's 0.5, kept
    assert presets.medium_units(10, 8.0, 0.5) == (10, 0.8)
    # below quick's 2.0: as many 2.0-step units as a tenth of 10 x 8 = 8 steps buys
    assert presets.medium_units(10, 8.0, 2.0) == (4, 2.0)
    assert presets.medium_units(1, 1.0, 5.0) == (1, 5.0)  # at least one unit
    assert presets.whole(10_000, 4096) == 8192 and presets.whole(1, 4096) == 4096


def test_every_methods_medium_preset_is_a_tenth_of_its_paper_budget_at_quick_settings():
    from aht_bench.runs import RunSpec, get

    methods = ("rotate", "fcp", "brdiv", "comedi", "paired", "minimax", "cole")
    for method in methods:
        algo = get(method)
        assert "medium" in algo.presets
        for task_id in presets.PAPER_TASKS_V2:
            steps = {}
            for name in ("quick", "medium", "paper"):
                config = algo.config(RunSpec(method, task_id, name))
                steps[name] = algo.loop.env_steps_done(config, algo.loop.total(config))
                if name == "quick":
                    quick = config
                if name == "medium":
                    medium = config
            fraction = steps["medium"] / steps["paper"]
            assert 0.09 <= fraction <= 0.11, (method, task_id, fraction)
            assert steps["medium"] > steps["quick"], (method, task_id)
            # quick's per-step settings: its envs and rollout length
            for field in ("num_envs", "rollout_length"):
                if hasattr(quick, field):
                    assert getattr(medium, field) == getattr(quick, field), (method, field)
    rotate = get("rotate").config(RunSpec("rotate", "lbf", "medium"))
    assert rotate.teammate_objective == "eq7" and rotate.iterations == 7
    assert rotate.ego_ppo.anneal_lr is False
    fcp = get("fcp").config(RunSpec("fcp", "cramped_room", "medium"))
    assert fcp.ego_ppo == presets.QUICK_EGO_PPO and fcp.num_ippo_seeds == 6
