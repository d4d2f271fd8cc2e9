"""One vocabulary across the shells (issue 53): a teammate named by the same string in
Gymnasium and PettingZoo, every alias a Gymnasium id, and `tasks --json` with what a script
needs, agreeing with the shells it describes."""

from __future__ import annotations

import json
import warnings

import gymnasium
import numpy as np
import pytest
from click.testing import CliRunner

import aht_bench.adapters.gym as gym_shell
from aht_bench import envs
from aht_bench.adapters.pz import ParallelEnv
from aht_bench.cli import main


def test_parallel_env_takes_teammate_names_as_egoenv_does():
    env = ParallelEnv("lbf", teammates={"agent_1": "lexi"})
    ego = gymnasium.make("aht_bench/lbf-v1", teammate="lexi").unwrapped
    assert env.possible_agents == ["agent_0"]
    # the same heuristic on both shells: the same teammate actions for the same observations
    pz_policy = env._folded.teammates[1][0]
    gym_policy = ego._folded.teammates[1][0]
    assert type(pz_policy) is type(gym_policy) and repr(pz_policy) == repr(gym_policy)
    assert repr(pz_policy) == "SequentialAgent('lexi', num_agents=2, order_from='self', partner=0)"
    obs, _ = env.reset(seed=3)
    assert obs["agent_0"].shape == (envs.task("lbf").env.obs_dim,)
    random_seat = ParallelEnv("lbf", teammates={"agent_1": "random"})
    assert random_seat._folded.teammates[1] == (None, None)  # drawn uniformly by the shell


def test_parallel_env_plays_a_heldout_member_named_by_its_string():
    env = ParallelEnv("cramped_room", teammates={"agent_1": "heldout:v2:ippo_mlp_0"})
    obs, _ = env.reset(seed=0)
    total = 0.0
    for _ in range(5):
        obs, rewards, *_ = env.step({"agent_0": 0})
        total += rewards["agent_0"]
    assert list(obs) == ["agent_0"] and np.isfinite(total)
    policy, params = env._folded.teammates[1]
    assert params is not None and callable(getattr(policy, "act", None))


def test_a_bad_teammate_name_names_the_seat_and_the_choices():
    with pytest.raises(ValueError, match=r"teammates\['agent_1'\]: .*no member 'nope'.*ippo_mlp_0"):
        ParallelEnv("cramped_room", teammates={"agent_1": "heldout:v2:nope"})
    with pytest.raises(ValueError, match=r"teammates\['agent_1'\]: .*heldout:<version>:<member>"):
        ParallelEnv("lbf", teammates={"agent_1": "lexy"})


@pytest.mark.parametrize("alias", sorted(envs.aliases()))
def test_every_alias_is_a_gymnasium_id_of_the_task_it_names(alias):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbf, sabotage: Gymnasium's "latest version" warning
        env = gymnasium.make(f"aht_bench/{alias}")
    assert env.unwrapped.task_id == envs.task(alias).id
    assert env.spec is not None and env.spec.max_episode_steps == envs.task(alias).horizon
    env.close()


def test_an_unknown_gymnasium_id_is_an_error_that_names_it():
    with pytest.raises(gymnasium.error.NameNotFound, match="forced_cord"):
        gymnasium.make("aht_bench/forced_cord")


def test_a_tasks_json_row_has_what_a_script_needs():
    from aht_bench.cli.tasks import task_row

    cramped = task_row("overcooked-cramped_room-v2")
    assert cramped["agents"] == 2 and cramped["horizon"] == 400 and cramped["num_actions"] == 6
    assert cramped["obs_dim"] == envs.task("cramped_room").env.obs_dim
    assert cramped["gymnasium_id"] == "aht_bench/overcooked-cramped_room-v2"
    assert cramped["gymnasium_alias_ids"] == ["aht_bench/cramped_room"]
    assert cramped["aliases"] == ["cramped_room"] and cramped["alias"] == "cramped_room"
    assert cramped["heldout_sets"] == ["v2", "human-proxy-v2", "human-proxy-v3"]
    assert cramped["default_set"] == "v2" and "dev" not in cramped["heldout_sets"]
    sabotage = task_row("sabotage-v1")
    assert sabotage["heldout_sets"] == [] and sabotage["default_set"] is None
    assert sabotage["gymnasium_alias_ids"] == []  # Gymnasium resolves aht_bench/sabotage itself


@pytest.mark.slow  # builds every task (JaxMARL's maps for every layout) and its EgoEnv
def test_tasks_json_has_every_task_and_agrees_with_the_shells():
    r = CliRunner().invoke(main, ["tasks", "--json"])
    assert r.exit_code == 0, r.output
    rows = {row["task_id"]: row for row in json.loads(r.output)}
    assert sorted(rows) == envs.registered_ids()
    cramped = rows["overcooked-cramped_room-v2"]
    assert cramped["agents"] == 2 and cramped["horizon"] == 400 and cramped["num_actions"] == 6
    assert cramped["gymnasium_id"] == "aht_bench/overcooked-cramped_room-v2"
    assert cramped["gymnasium_alias_ids"] == ["aht_bench/cramped_room"]
    assert "v2" in cramped["heldout_sets"] and cramped["default_set"] == "v2"
    assert rows["sabotage-v1"]["heldout_sets"] == [] and rows["sabotage-v1"]["default_set"] is None
    for task_id, row in rows.items():
        space = gymnasium.spec(row["gymnasium_id"])
        assert space.kwargs["task"] == task_id
        env = gym_shell.EgoEnv(task_id)
        assert env.observation_space.shape == (row["obs_dim"],)
        assert env.action_space.n == row["num_actions"]
        assert row["agents"] == envs.task(task_id).env.num_agents
