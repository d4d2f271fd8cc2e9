"""Configs refuse bad values at construction, naming the field and the fix; derived numbers."""

import dataclasses

import pytest

from aht_bench.training import BRConfig, EgoConfig, IPPOConfig, PPOConfig


def _ippo(**kw):
    base = {"task_id": "lbf-v1", "total_timesteps": 10_000, "num_envs": 8, "rollout_length": 128}
    return IPPOConfig(**(base | kw))


def test_derived_numbers_are_properties():
    cfg = _ippo(ppo=PPOConfig(num_minibatches=4))
    assert cfg.batch_size == 1024
    assert cfg.num_updates == 9  # 10_000 // 1024
    assert cfg.minibatch_size == 256
    assert cfg.num_calls == 9
    assert cfg.task_id == "lbf-v1"
    assert _ippo(task_id="lbf").task_id == "lbf-v1"
    ego = EgoConfig(
        task_id="lbf-v1",
        total_timesteps=10_000,
        num_envs=8,
        rollout_length=128,
        ppo=PPOConfig(num_minibatches=4),
    )
    assert ego.minibatch_size == 128 * 2  # whole sequences of 2 envs
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.num_envs = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "field,value",
    [
        ("learning_rate", 0.0),
        ("num_epochs", 0),
        ("num_minibatches", 0),
        ("clip_eps", 0.0),
        ("clip_eps", -0.1),
        ("ent_coef", -1.0),
        ("vf_coef", -1.0),
        ("max_grad_norm", 0.0),
        ("gamma", 1.5),
        ("gamma", -0.1),
        ("gae_lambda", 1.01),
    ],
)
def test_ppo_config_refuses(field, value):
    with pytest.raises(ValueError, match=f"^{field}="):
        PPOConfig(**{field: value})


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"total_timesteps": -5}, "total_timesteps"),
        ({"total_timesteps": 100}, "total_timesteps"),  # less than one batch
        ({"num_envs": 0}, "num_envs"),
        ({"rollout_length": 0}, "rollout_length"),
        ({"ppo": PPOConfig(num_minibatches=3)}, "ppo.num_minibatches"),  # 1024 % 3
        ({"updates_per_call": 2}, "updates_per_call"),  # 9 updates
        ({"checkpoint_updates": (0,)}, "checkpoint_updates"),
        ({"checkpoint_updates": (10,)}, "checkpoint_updates"),
        ({"shaped_reward_coef": -1.0}, "shaped_reward_coef"),
        ({"shaped_reward_anneal_steps": 0}, "shaped_reward_anneal_steps"),
        ({"hidden": ()}, "hidden"),
        ({"task_id": "lbf_v1"}, "task_id"),
    ],
)
def test_run_config_refuses(kw, field):
    with pytest.raises(ValueError, match=f"^{field}=") as e:
        _ippo(**kw)
    assert len(str(e.value)) > len(field) + 20  # says what to do, not just the name


def test_unknown_task_suggests_a_name():
    with pytest.raises(ValueError, match="Did you mean"):
        _ippo(task_id="cramped_rom")


def test_recurrent_minibatches_split_envs():
    kw = {"task_id": "lbf-v1", "total_timesteps": 10_000, "num_envs": 6, "rollout_length": 128}
    with pytest.raises(ValueError, match="env sequences"):
        EgoConfig(**kw, ppo=PPOConfig(num_minibatches=4))
    EgoConfig(**kw, ppo=PPOConfig(num_minibatches=3))
    BRConfig(**kw, ppo=PPOConfig(num_minibatches=4))  # 768 transitions split fine
    with pytest.raises(ValueError, match="learner_seat"):
        BRConfig(**kw, learner_seat=-1)


def test_configs_are_hashable_static_arguments():
    assert hash(_ippo()) == hash(_ippo())
    assert _ippo() == _ippo()
    assert _ippo() != _ippo(num_envs=16)
