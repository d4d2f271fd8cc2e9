"""A JAX policy carried out of the sandbox as compiled code (`aht_bench.policies.exported`)."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import load, save

from aht_bench.cli import EXIT_AGENT_RUNTIME, EXIT_OK, main
from aht_bench.policies.exported import ExportError, export_policy, load_exported

REPO = Path(__file__).resolve().parents[2]


class _Recurrent:
    """A policy with a carry (a step counter) and params, sampling from its logits."""

    def init_carry(self, batch_shape):
        return {"t": jnp.zeros(batch_shape, jnp.int32)}

    def act(self, params, carry, obs, key):
        logits = obs @ params["w"] + carry["t"].astype(jnp.float32) * params["b"]
        return jax.random.categorical(key, logits), {"t": carry["t"] + 1}, {"logits": logits}


def _roundtrip(policy, params, obs_dim):
    blob, tensors, info = export_policy(policy, params, obs_dim, jax.default_backend())
    info = json.loads(json.dumps(info))  # as it crosses the process boundary
    return load_exported(blob, load(save(tensors)), info)


def test_the_exported_policy_acts_as_the_original_under_nested_vmap_scan_and_switch():
    policy = _Recurrent()
    params = {"w": jnp.arange(15.0).reshape(5, 3) / 7, "b": jnp.array([0.3, -0.2, 0.1])}
    exported, leaves = _roundtrip(policy, params, 5)
    keys = jax.random.split(jax.random.PRNGKey(0), 3 * 4 * 6).reshape(3, 4, 6, 2)
    obs = jax.random.normal(jax.random.PRNGKey(1), (3, 4, 5))

    def episode(pol, p):
        def one(obs, keys):
            def body(carry, key):
                action, carry, _ = jax.lax.switch(0, [pol.act], p, carry, obs, key)
                return carry, action

            return jax.lax.scan(body, pol.init_carry(()), keys)[1]

        return jax.jit(jax.vmap(jax.vmap(one)))(obs, keys)

    want = episode(policy, params)
    got = episode(exported, leaves)
    assert want.shape == got.shape == (3, 4, 6)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert len(set(np.asarray(want).ravel().tolist())) > 1  # the test sees different actions


def test_a_carry_that_does_not_broadcast_is_refused():
    class Odd(_Recurrent):
        def init_carry(self, batch_shape):
            return {"t": jnp.arange(int(np.prod(batch_shape, dtype=int))).reshape(batch_shape)}

    with pytest.raises(ExportError, match="same start carry"):
        export_policy(Odd(), {"w": jnp.ones((5, 3)), "b": jnp.ones(3)}, 5, "cpu")


def test_a_module_with_a_custom_call_is_refused_here():
    """The worker is the agent's process, so the evaluator checks every module it receives
    (`check_module`): only JAX's shape assertions may appear as custom calls. JAX itself
    refuses to export host callbacks; a native kernel (here LAPACK's eigh on the CPU) stands
    for any other target a forged module could name."""

    class Eigh(_Recurrent):
        def init_carry(self, batch_shape):
            return ()

        def act(self, params, carry, obs, key):
            m = jnp.outer(obs, obs)
            return jnp.argmax(jnp.linalg.eigh(m)[0]).astype(jnp.int32), carry, {}

    blob, tensors, info = export_policy(Eigh(), None, 5, "cpu")
    with pytest.raises(ExportError, match="custom calls"):
        load_exported(blob, tensors, info)


def test_a_jax_agent_file_scores_the_same_sandboxed_as_in_process(tmp_path):
    """The demo's JAX agent: compiled in the sandbox, run jitted here; the same returns as the
    in-process fast path, episode by episode."""
    records = {}
    for mode in ("sandbox", "in-process"):
        out = tmp_path / f"{mode}.json"
        args = [
            "evaluate", str(REPO / "agents/examples/jax_mlp_agent.py"), "--task", "lbf",
            "--teammates", "v1", "--episodes", "2", "--reps", "100", "--out", str(out),
            "--no-plot", "--no-progress",
        ] + (["--in-process"] if mode == "in-process" else [])  # fmt: skip
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == EXIT_OK, result.output
        records[mode] = json.loads(out.read_text())["payload"]
    assert records["sandbox"]["agent"]["runner"] == "jax"
    assert records["sandbox"]["agent"]["isolation"] == "sandbox"
    assert [m["returns"] for m in records["sandbox"]["members"]] == [
        m["returns"] for m in records["in-process"]["members"]
    ]


def test_an_agent_file_whose_policy_prints_gets_a_clear_error(tmp_path):
    agent = tmp_path / "printing.py"
    agent.write_text(
        "import jax, jax.numpy as jnp\n"
        "class P:\n"
        "    def init_carry(self, batch_shape):\n"
        "        return ()\n"
        "    def act(self, params, carry, obs, key):\n"
        "        jax.debug.print('obs {o}', o=obs[0])\n"
        "        return jnp.argmax(obs[:6]).astype(jnp.int32), carry, {}\n"
        "policy, params = P(), None\n"
    )
    out = tmp_path / "printing.json"
    args = [
        "evaluate", str(agent), "--task", "lbf-v1", "--teammates", "v1", "--episodes", "1",
        "--out", str(out), "--no-plot", "--no-progress",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == EXIT_AGENT_RUNTIME, result.output
    assert "printing.py" in result.stderr and "callback" in result.stderr
    assert not out.exists()
