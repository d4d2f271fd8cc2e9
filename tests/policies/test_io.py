"""save_policy / load_policy: bit-identical round trips and refusal of bad files."""

import hashlib
import json
import pickle  # only to *write* a pickle payload that load_policy must refuse; never loaded

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from aht_bench.policies import (
    MLPActorCritic,
    PolicyFileError,
    Population,
    RecurrentEgo,
    load_policy,
    load_population,
    read_card,
    save_policy,
    save_population,
)

OBS_DIM, NUM_ACTIONS = 5, 3


@pytest.fixture(scope="module")
def mlp_and_params():
    policy = MLPActorCritic(OBS_DIM, NUM_ACTIONS, num_value_heads=2, hidden=(8, 8))
    return policy, policy.init(jax.random.PRNGKey(0))


@pytest.fixture
def saved(tmp_path, mlp_and_params):
    policy, params = mlp_and_params
    path = tmp_path / "teammate.safetensors"
    save_policy(
        path,
        policy,
        params,
        {"task_id": "lbf-7x7-v1", "provenance": {"algorithm": "ippo", "seed": 3}},
    )
    return path


def _rewrite(path, tensors):
    """Write `tensors` to `path` and make the card's sha256 agree (a consistent but bad file)."""
    save_file(tensors, str(path))
    card_path = path.with_name(path.name + ".json")
    card = json.loads(card_path.read_text())
    card["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    card_path.write_text(json.dumps(card))


def test_card_contents(saved, mlp_and_params):
    policy, params = mlp_and_params
    card = json.loads(saved.with_name(saved.name + ".json").read_text())
    assert card == read_card(saved)
    assert card["format"] == "aht-bench-policy" and card["format_version"] == 1
    assert card["architecture"] == "MLPActorCritic"
    assert card["kwargs"] == {
        "obs_dim": 5,
        "num_actions": 3,
        "num_value_heads": 2,
        "hidden": [8, 8],
    }
    assert card["obs_dim"] == 5 and card["num_actions"] == 3
    assert card["task_id"] == "lbf-7x7-v1"
    assert card["provenance"] == {"algorithm": "ippo", "seed": 3}
    assert card["sha256"] == hashlib.sha256(saved.read_bytes()).hexdigest()
    assert card["tensors"]["params/actor_0/kernel"] == {"shape": [5, 8], "dtype": "float32"}
    assert card["tensors"]["params/critic_out/bias"] == {"shape": [2], "dtype": "float32"}
    assert len(card["tensors"]) == len(jax.tree.leaves(params))
    # atomic writes leave no temp files behind
    assert sorted(p.name for p in saved.parent.iterdir()) == [
        "teammate.safetensors",
        "teammate.safetensors.json",
    ]


@pytest.mark.parametrize("kind", ["mlp", "gru"])
def test_round_trip_gives_identical_actions(tmp_path, kind, mlp_and_params):
    if kind == "mlp":
        policy, params = mlp_and_params
    else:
        policy = RecurrentEgo(OBS_DIM, NUM_ACTIONS, hidden=8)
        params = policy.init(jax.random.PRNGKey(1))
    path = tmp_path / f"{kind}.safetensors"
    save_policy(path, policy, params)
    loaded_policy, loaded = load_policy(path)
    assert loaded_policy == policy
    assert jax.tree.structure(loaded) == jax.tree.structure(params)
    for a, b in zip(jax.tree.leaves(loaded), jax.tree.leaves(params), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    n = 64
    obs = jax.random.normal(jax.random.PRNGKey(2), (n, OBS_DIM))
    keys = jax.random.split(jax.random.PRNGKey(3), n)
    carry = policy.init_carry((n,))
    run = jax.jit(jax.vmap(policy.act, in_axes=(None, 0, 0, 0)))
    a1, _, e1 = run(params, carry, obs, keys)
    a2, _, e2 = run(loaded, carry, obs, keys)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(e1["logits"], e2["logits"])


def test_flipped_byte_is_refused(saved):
    blob = bytearray(saved.read_bytes())
    blob[len(blob) - 10] ^= 0x01  # one bit of one weight
    saved.write_bytes(bytes(blob))
    with pytest.raises(PolicyFileError, match="does not match the sha256") as e:
        load_policy(saved)
    assert str(saved) in str(e.value)


def test_changed_shape_is_refused(saved):
    tensors = load_file(str(saved))
    tensors["params/actor_out/bias"] = np.zeros(NUM_ACTIONS + 1, np.float32)
    _rewrite(saved, tensors)
    with pytest.raises(PolicyFileError, match=r"'params/actor_out/bias' has shape \(4,\)") as e:
        load_policy(saved)
    assert "expected shape (3,)" in str(e.value) and str(saved) in str(e.value)


def test_changed_dtype_is_refused(saved):
    tensors = load_file(str(saved))
    tensors["params/actor_out/bias"] = tensors["params/actor_out/bias"].astype(np.float64)
    _rewrite(saved, tensors)
    with pytest.raises(PolicyFileError, match="dtype float64"):
        load_policy(saved)


def test_nan_weights_are_refused(saved):
    tensors = load_file(str(saved))
    kernel = tensors["params/critic_0/kernel"].copy()
    kernel[0, 0] = np.nan
    kernel[1, 1] = np.inf
    tensors["params/critic_0/kernel"] = kernel
    _rewrite(saved, tensors)
    with pytest.raises(PolicyFileError, match=r"'params/critic_0/kernel' has 2 non-finite") as e:
        load_policy(saved)
    assert str(saved) in str(e.value)


@pytest.mark.parametrize("with_card", [True, False])
def test_pickle_payload_is_refused(saved, with_card, mlp_and_params):
    _, params = mlp_and_params
    payload = {k: np.asarray(v) for k, v in params["params"]["actor_0"].items()}
    saved.write_bytes(pickle.dumps(payload))  # a file that is really a pickle
    if not with_card:
        saved.with_name(saved.name + ".json").unlink()
    with pytest.raises(PolicyFileError, match="looks like a pickle") as e:
        load_policy(saved)
    assert str(saved) in str(e.value)


def test_zip_payload_is_refused(saved):
    saved.write_bytes(b"PK\x03\x04" + b"\x00" * 64)  # what torch.save / SB3 write
    with pytest.raises(PolicyFileError, match="zip archive"):
        load_policy(saved)


def test_missing_card_is_refused(saved):
    saved.with_name(saved.name + ".json").unlink()
    with pytest.raises(PolicyFileError, match="has no card teammate.safetensors.json") as e:
        load_policy(saved)
    assert str(saved) in str(e.value)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(PolicyFileError, match="does not exist"):
        load_policy(tmp_path / "nothing.safetensors")


def test_unknown_architecture_is_refused(saved):
    card_path = saved.with_name(saved.name + ".json")
    card = json.loads(card_path.read_text())
    card["architecture"] = "os.system"
    card_path.write_text(json.dumps(card))
    with pytest.raises(PolicyFileError, match="'os.system' is not one aht-bench loads"):
        load_policy(saved)


def test_bad_kwargs_are_refused(saved):
    card_path = saved.with_name(saved.name + ".json")
    card = json.loads(card_path.read_text())
    card["kwargs"]["hidden"] = "__import__('os')"
    card_path.write_text(json.dumps(card))
    with pytest.raises(PolicyFileError, match="kwarg hidden=.* must be a list of positive"):
        load_policy(saved)


def test_save_refuses_nan_and_wrong_params(tmp_path, mlp_and_params):
    policy, params = mlp_and_params
    bad = jax.tree.map(lambda x: x, params)
    bad["params"]["actor_0"]["bias"] = jnp.full((8,), jnp.nan)
    with pytest.raises(PolicyFileError, match="NaN or inf"):
        save_policy(tmp_path / "p.safetensors", policy, bad)
    other = MLPActorCritic(OBS_DIM, NUM_ACTIONS, hidden=(4,)).init(jax.random.PRNGKey(0))
    with pytest.raises(PolicyFileError, match="do not fit MLPActorCritic"):
        save_policy(tmp_path / "p.safetensors", policy, other)
    assert list(tmp_path.iterdir()) == []


def test_population_round_trip_gives_identical_actions(tmp_path):
    policy = MLPActorCritic(OBS_DIM, NUM_ACTIONS, num_value_heads=2)
    members = [policy.init(jax.random.PRNGKey(i)) for i in range(3)]
    population = Population.stack(policy, members)
    card_path = save_population(tmp_path / "pop.safetensors", population, {"task_id": "lbf-v1"})
    assert json.loads(card_path.read_text())["population_size"] == 3
    loaded = load_population(tmp_path / "pop.safetensors")
    assert loaded.policy == policy and loaded.size == 3
    obs = jax.random.normal(jax.random.PRNGKey(2), (OBS_DIM,))
    for i in range(3):
        a1, _, e1 = population.act(i, (), obs, jax.random.PRNGKey(i))
        a2, _, e2 = loaded.act(i, (), obs, jax.random.PRNGKey(i))
        np.testing.assert_array_equal(a1, a2)
        np.testing.assert_array_equal(e1["logits"], e2["logits"])
    # a population file is not a policy file and the other way round
    with pytest.raises(PolicyFileError, match="population of 3 members.*load_population"):
        load_policy(tmp_path / "pop.safetensors")
    save_policy(tmp_path / "one.safetensors", policy, members[0])
    with pytest.raises(PolicyFileError, match="one policy, not a population.*load_policy"):
        load_population(tmp_path / "one.safetensors")


def test_population_file_with_wrong_member_count_is_refused(tmp_path):
    policy = MLPActorCritic(OBS_DIM, NUM_ACTIONS)
    population = Population.stack(policy, [policy.init(jax.random.PRNGKey(i)) for i in range(2)])
    path = tmp_path / "pop.safetensors"
    card_path = save_population(path, population)
    card = json.loads(card_path.read_text())
    card["population_size"] = 3
    card_path.write_text(json.dumps(card))
    with pytest.raises(PolicyFileError, match=r"expected shape \(3, .* x 3 members"):
        load_population(path)
