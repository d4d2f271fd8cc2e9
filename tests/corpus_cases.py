"""The bad-agent corpus (tests/agent_corpus/) and what each file must produce, shared by the
agent-file tests (`check-agent`) and the evaluator tests (`evaluate`)."""

from pathlib import Path

from aht_bench.cli import EXIT_AGENT_LOAD, EXIT_AGENT_RUNTIME
from aht_bench.evaluation import sets

CORPUS = Path(__file__).resolve().parent / "agent_corpus"
WORKER = b"aht_bench.policies._agent_worker"

# bad file -> (exit code, what the message must say); each runs in a fresh worker.
FAILURES = {
    "syntax_error.py": (EXIT_AGENT_LOAD, ["syntax error at line 4", "def act(obs)"]),
    "no_act.py": (EXIT_AGENT_LOAD, ["no_act.py defines no act(obs)", "random_agent.py"]),
    "wrong_signature.py": (EXIT_AGENT_LOAD, ["wrong signature act(obs, key)"]),
    "import_error.py": (
        EXIT_AGENT_LOAD,
        ["ModuleNotFoundError: No module named 'aht_bench_no_such_module'", "line 3"],
    ),
    "hang_import.py": (EXIT_AGENT_LOAD, ["did not finish loading within the load timeout of 3s"]),
    "wrong_task.py": (EXIT_AGENT_LOAD, ["supports only the tasks ('sabotage-v1',)", "not lbf-v1"]),
    "jax_out_of_range.py": (
        EXIT_AGENT_LOAD,
        ["JAX policy's act returned action 9, outside [0, 6)"],
    ),
    "jax_nan_params.py": (EXIT_AGENT_LOAD, ["NaN or inf values"]),
    "act_raises.py": (
        EXIT_AGENT_RUNTIME,
        ["act(obs) in agent file act_raises.py raised ValueError: no plan", "line 5"],
    ),
    "returns_str.py": (EXIT_AGENT_RUNTIME, ["returned a str ('up')", "int action in [0, 6)"]),
    "returns_none.py": (EXIT_AGENT_RUNTIME, ["returned None (a missing `return`?)"]),
    "returns_float.py": (EXIT_AGENT_RUNTIME, ["returned a float (2.0)", "np.argmax"]),
    "returns_bool.py": (EXIT_AGENT_RUNTIME, ["returned a bool (True)"]),
    "out_of_range.py": (EXIT_AGENT_RUNTIME, ["returned 7, outside the action range"]),
    "returns_nan.py": (EXIT_AGENT_RUNTIME, ["returned NaN"]),
    "wrong_shape.py": (EXIT_AGENT_RUNTIME, ["returned an array of shape (2,)"]),
    "sys_exit_act.py": (EXIT_AGENT_RUNTIME, ["called sys.exit(3)"]),
    "hang_act.py": (
        EXIT_AGENT_RUNTIME,
        ["did not answer act(obs)/reset() within the step timeout"],
    ),
    "os_exit_act.py": (EXIT_AGENT_RUNTIME, ["exited with code 7", "about to os._exit"]),
    "abort_act.py": (EXIT_AGENT_RUNTIME, ["was killed by SIGABRT"]),
}
# Issue 52, attack 3: a `jax_policy` whose `lax.while_loop` ends for the load check's key
# (PRNGKey(0)) and on no other, so its compiled play never returns.
ARMED = """
import jax
import jax.numpy as jnp


class Armed:
    \"\"\"Passes the load check (one act on PRNGKey(0)); on any other key its loop never ends.\"\"\"

    def init_carry(self, batch_shape):
        return ()

    def act(self, params, carry, obs, key):
        data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
        armed = jnp.any(data != 0)
        n = jax.lax.while_loop(lambda n: armed | (n < 0), lambda n: n + 1, jnp.int32(0))
        return (n % 2).astype(jnp.int32), carry, {}


def jax_policy(task_id):
    return Armed(), None
"""

# What would take the test process down (or hang it) when run in-process.
UNSAFE_IN_PROCESS = {"hang_import.py", "hang_act.py", "os_exit_act.py", "abort_act.py"}


def write_one_member_lbf_set(folder: Path, set_id: str) -> Path:
    """A one-member LBF teammate set (the lexicographic heuristic, bounds [0, 0.5]) in `folder`:
    quick to play, and independent of the shipped sets."""
    manifest = {
        "format": sets.FORMAT,
        "format_version": sets.FORMAT_VERSION,
        "set_id": set_id,
        "version": "test",
        "task_id": "lbf-v1",
        "members": [
            {
                "name": "seq_agent_lexi",
                "kind": "heuristic",
                "heuristic": "seq_agent_lexi",
                "bounds": {"lower": 0.0, "upper": 0.5},  # all food eaten
            }
        ],
    }
    sets.write_manifest(folder, manifest)
    return folder
