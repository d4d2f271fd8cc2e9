"""User agent files: the loader, the isolated worker and `aht-bench check-agent`.

Every file of the bad-agent corpus (tests/agent_corpus) goes through the command line, isolated
(the default) and in-process where that cannot kill the test, and must give its own message
and exit code, no traceback, and leave no worker process behind.
"""

from __future__ import annotations

import ast
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from corpus_cases import CORPUS, FAILURES, UNSAFE_IN_PROCESS, WORKER

from aht_bench.cli import (
    EXIT_AGENT_LOAD,
    EXIT_AGENT_RUNTIME,
    EXIT_OK,
    EXIT_USAGE,
    main,
)
from aht_bench.policies.agent_file import (
    AgentLoadError,
    AgentLoadTimeoutError,
    AgentRuntimeError,
    AgentStepTimeoutError,
    AgentTimeoutError,
    check_action,
    load_agent_file,
    task_spec,
)
from aht_bench.policies.isolated import IsolatedAgent

TASK = "lbf-v1"
# Small limits: the load timeout counts from when the worker has imported JAX, so a few
# seconds are plenty for every corpus file (the JAX ones build a small network).
LOAD_TIMEOUT, STEP_TIMEOUT = "20", "1"

CASES = FAILURES | {"good_prints.py": (EXIT_OK, ["agent OK: good_prints.py"])}


def _worker_pids(agent_file: Path) -> list[int]:
    """Live processes running a worker for `agent_file` (its path is in the worker's argv)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if WORKER in argv and str(agent_file).encode() in argv:
            pids.append(int(d.name))
    return pids


def _zombie_children() -> list[int]:
    """Children of this process that exited but were never reaped."""
    me, found = os.getpid(), []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        if fields[0] == "Z" and int(fields[1]) == me:
            found.append(int(d.name))
    return found


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def _check_agent(*args: str):
    return CliRunner().invoke(main, ["check-agent", *args], catch_exceptions=False)


def test_the_corpus_covers_every_file_and_each_says_what_it_breaks():
    files = sorted(p.name for p in CORPUS.glob("*.py"))
    assert files == sorted(CASES)
    assert len([f for f, (code, _) in CASES.items() if code != EXIT_OK]) >= 14
    for name in files:
        text = (CORPUS / name).read_text()
        first = text.splitlines()[0]
        assert first.startswith('"""') and first.endswith('"""') and len(first) > 12, name
        if name != "syntax_error.py":
            assert ast.get_docstring(ast.parse(text)), name


@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_file_through_check_agent_isolated(name):
    code, needles = CASES[name]
    path = CORPUS / name
    load_timeout = "3" if name == "hang_import.py" else LOAD_TIMEOUT
    steps = [] if name == "good_prints.py" else ["--steps", "5"]  # a full episode of chatter
    result = _check_agent(
        str(path), "--task", TASK, "--load-timeout", load_timeout,
        "--step-timeout", STEP_TIMEOUT, *steps,
    )  # fmt: skip
    text = result.stdout if code == EXIT_OK else result.stderr
    assert result.exit_code == code, result.output
    for needle in needles:
        assert needle in text, (needle, result.output)
    assert "Traceback" not in result.output
    if code != EXIT_OK:
        assert result.stderr.startswith("error: ") and name in result.stderr
    assert _worker_pids(path) == [] and _zombie_children() == []


@pytest.mark.parametrize("name", sorted(set(CASES) - UNSAFE_IN_PROCESS))
def test_corpus_file_through_check_agent_in_process(name):
    code, needles = CASES[name]
    result = _check_agent(str(CORPUS / name), "--task", TASK, "--no-isolate", "--steps", "5")
    assert result.exit_code == code, result.output
    text = result.stdout if code == EXIT_OK else result.stderr
    for needle in needles:
        assert needle in text, (needle, result.output)
    assert "Traceback" not in result.output


def test_debug_shows_the_agents_traceback_from_the_worker():
    result = _check_agent(str(CORPUS / "act_raises.py"), "--task", TASK, "--steps", "2", "--debug")
    assert result.exit_code == EXIT_AGENT_RUNTIME
    assert "Traceback" in result.stderr and 'raise ValueError("no plan' in result.stderr


def test_usage_errors_exit_2():
    good = str(CORPUS / "good_prints.py")
    cases = [
        ([str(CORPUS / "missing.py"), "--task", TASK], "does not exist"),
        ([str(CORPUS), "--task", TASK], "is not a file"),
        ([good, "--task", "lbff"], "Did you mean"),
        ([good, "--task", TASK, "--seat", "2"], "pass --seat in [0, 2)"),
        ([good, "--task", TASK, "--teammate", "lexx"], "unknown heuristic 'lexx'"),
        ([good, "--task", "sabotage", "--teammate", "lexi"], "no heuristic teammates for sabo"),
        ([good, "--task", TASK, "--step-timeout", "0"], "--step-timeout"),
    ]
    for args, needle in cases:
        result = _check_agent(*args)
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        assert needle in result.output, (args, result.output)


def test_a_file_that_is_not_python_is_a_usage_error(tmp_path):
    weights = tmp_path / "model.zip"
    weights.write_bytes(b"PK\x03\x04")
    result = _check_agent(str(weights), "--task", TASK)
    assert result.exit_code == EXIT_USAGE
    assert "neither a Python file (.py) nor a policy file (.safetensors" in result.output


def test_help_documents_the_exit_codes():
    result = CliRunner().invoke(main, ["check-agent", "--help"])
    assert result.exit_code == 0
    for line in ["0  ok", "2  usage error", "3  the agent failed to load", "4  the agent failed"]:
        assert line in result.output


@pytest.mark.parametrize(
    "name, code, extra",
    [
        ("abort_act.py", EXIT_AGENT_RUNTIME, []),
        pytest.param("no_act.py", EXIT_AGENT_LOAD, [], marks=pytest.mark.slow),
        pytest.param(
            "hang_act.py", EXIT_AGENT_RUNTIME, ["--step-timeout", "1"], marks=pytest.mark.slow
        ),
    ],
)
def test_real_process_gives_the_message_and_exit_code(name, code, extra):
    """The command line in a real process: exit code, one message, no traceback."""
    path = CORPUS / name
    proc = subprocess.run(
        [sys.executable, "-m", "aht_bench.cli", "check-agent", str(path), "--task", TASK,
         "--steps", "3", *extra],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    assert _worker_pids(path) == []


def test_a_killed_caller_leaves_no_worker_behind():
    """SIGKILL of the command line (no cleanup runs at all): the sandbox and the worker in it
    end (bwrap --die-with-parent)."""
    path = CORPUS / "hang_act.py"
    proc = subprocess.Popen(
        [sys.executable, "-m", "aht_bench.cli", "check-agent", str(path), "--task", TASK,
         "--step-timeout", "600"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "loaded hang_act.py ... sandboxed in process N ..."
        assert b"sandboxed in process" in line, line
        sandbox = int(line.split(b"sandboxed in process ")[1].split()[0])
        running = _worker_pids(path)  # bwrap, its init in the namespace and the worker
        assert sandbox in running and len(running) >= 2, running
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not all(_gone(p) for p in running) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_gone(p) for p in running)
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


# ---- IsolatedAgent -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def spec():
    return task_spec(TASK)


def test_isolated_agent_acts_like_the_in_process_loader_and_closes(spec):
    path = CORPUS / "good_prints.py"
    local = load_agent_file(path, TASK, spec=spec)
    rng = np.random.default_rng(0)
    with IsolatedAgent(path, TASK, spec=spec, load_timeout=20) as agent:
        assert agent.kind == "act" and agent.jax is None and not agent.closed
        agent.reset()
        for _ in range(50):
            obs = rng.uniform(-1, 7, spec.obs_dim).astype(np.float32)
            assert agent.act(obs) == local.act(obs)
        assert "garbage without a newline" in agent.stderr_tail()
        pid = agent.pid
    assert agent.closed and _gone(pid)
    with pytest.raises(AgentRuntimeError, match="no longer running"):
        agent.act(spec.sample_obs)


def test_isolated_agent_step_overhead_is_small(spec):
    """One act round trip through the pipes: well under a millisecond (measured 55-95 us)."""
    path = Path(__file__).resolve().parents[2] / "agents" / "examples" / "random_agent.py"
    with IsolatedAgent(path, TASK, spec=spec, load_timeout=20) as agent:
        for _ in range(50):
            agent.act(spec.sample_obs)
        n, start = 500, time.perf_counter()
        for _ in range(n):
            agent.act(spec.sample_obs)
        per_step = (time.perf_counter() - start) / n
    assert per_step < 5e-3  # generous: two shared cores under load


def test_timeouts_kill_the_worker_and_name_the_limit(spec):
    agent = IsolatedAgent(
        CORPUS / "hang_act.py", TASK, spec=spec, load_timeout=20, step_timeout=0.5
    )
    pid = agent.pid
    with pytest.raises(AgentStepTimeoutError, match="step timeout of 0.5s") as e:
        agent.act(spec.sample_obs)
    assert isinstance(e.value, AgentTimeoutError) and isinstance(e.value, AgentRuntimeError)
    assert agent.closed and _gone(pid)

    agent = IsolatedAgent(
        CORPUS / "hang_act.py", TASK, spec=spec, total_timeout=30, step_timeout=60
    )
    time.sleep(0.1)
    agent.total_timeout = time.monotonic() - agent._started + 0.5  # expire soon after load
    with pytest.raises(AgentStepTimeoutError, match="total time limit"):
        agent.act(spec.sample_obs)
    assert _gone(agent.pid)

    with pytest.raises(AgentLoadTimeoutError, match="load timeout of 2s") as e:
        IsolatedAgent(CORPUS / "hang_import.py", TASK, spec=spec, load_timeout=2)
    assert isinstance(e.value, AgentLoadError)
    assert _worker_pids(CORPUS / "hang_import.py") == [] and _zombie_children() == []


def test_a_crash_names_the_signal_and_reaps_the_worker(spec):
    agent = IsolatedAgent(CORPUS / "abort_act.py", TASK, spec=spec, load_timeout=20)
    with pytest.raises(AgentRuntimeError, match="killed by SIGABRT"):
        agent.act(spec.sample_obs)
    assert agent.closed and _gone(agent.pid) and agent.returncode == -signal.SIGABRT


def test_a_worker_killed_from_outside_is_a_clear_error(spec):
    agent = IsolatedAgent(CORPUS / "good_prints.py", TASK, spec=spec, load_timeout=20)
    try:
        os.kill(agent.pid, signal.SIGKILL)
        # In the sandbox agent.pid is bwrap's, and the agent's own process dies a moment later,
        # as its parent does (under load it could still answer a request sent at once): wait
        # until nothing holds the other end of its stdout, then the next call must fail.
        assert agent._proc is not None and agent._proc.stdout is not None
        readable, _, _ = select.select([agent._proc.stdout], [], [], 30)
        assert readable, "the killed worker's stdout stayed open for 30 s"
        with pytest.raises(AgentRuntimeError, match="killed by SIGKILL"):
            agent.act(spec.sample_obs)
    finally:
        agent.close()  # a failure here must not leave a zombie for the next test to find
    assert _gone(agent.pid)


def test_dropping_the_last_reference_kills_the_worker(spec):
    agent = IsolatedAgent(CORPUS / "hang_act.py", TASK, spec=spec, load_timeout=20)
    pid = agent.pid
    del agent  # __del__ is the backstop for callers that forget close()
    assert _gone(pid)


def test_load_errors_keep_the_workers_message(spec):
    with pytest.raises(AgentLoadError, match="defines no act"):
        IsolatedAgent(CORPUS / "no_act.py", TASK, spec=spec, load_timeout=20)
    with pytest.raises(AgentLoadError, match="does not exist"):
        IsolatedAgent(CORPUS / "nope.py", TASK, spec=spec)
    assert _zombie_children() == []


# ---- the in-process loader ---------------------------------------------------------------


def test_check_action_accepts_integers_and_names_every_mistake():
    path = Path("my_agent.py")
    ok = [3, np.int64(3), np.int32(0), np.array(5), np.array([2]), np.uint8(1)]
    for value in ok:
        assert check_action(value, 6, path, "act(obs)", TASK) == int(np.asarray(value).item())
    bad = [
        (True, "a bool"),
        (np.bool_(False), "a bool"),
        (2.0, "a float"),
        (np.float32(1.0), "a float"),
        (float("nan"), "NaN"),
        ("1", "a str"),
        (None, "None"),
        (-1, "-1, outside"),
        (6, "6, outside"),
        (np.array([1, 2]), "shape (2,)"),
        (np.zeros((0,)), "shape (0,)"),
        (np.array([1.5]), "a float"),
        ((1,), "a tuple"),
        (object(), "a value of type object"),
    ]
    for value, needle in bad:
        with pytest.raises(AgentRuntimeError, match="act.obs. in agent file my_agent.py") as e:
            check_action(value, 6, path, "act(obs)", TASK)
        assert needle in str(e.value), (value, str(e.value))


def test_loader_restores_sys_modules_and_sys_path(spec):
    before_modules, before_path = set(sys.modules), list(sys.path)
    agent = load_agent_file(CORPUS / "good_prints.py", TASK, spec=spec)
    assert agent.act(spec.sample_obs) in range(6)
    assert not [m for m in set(sys.modules) - before_modules if m.startswith("_aht_agent_")]
    assert sys.path == before_path
    assert not (CORPUS / "__pycache__").exists()


def test_make_agent_gives_independent_agents(tmp_path, spec):
    f = tmp_path / "counter.py"
    f.write_text(
        "class A:\n"
        "    def __init__(self, seat):\n        self.n = seat * 100\n"
        "    def reset(self):\n        self.n = 0\n"
        "    def act(self, obs):\n        self.n += 1\n        return self.n % 6\n"
        "def make_agent(task_id, seat):\n    assert task_id == 'lbf-v1'\n    return A(seat)\n"
    )
    a, b = (
        load_agent_file(f, "lbf", seat=0, spec=spec),
        load_agent_file(f, "lbf", seat=1, spec=spec),
    )
    assert [a.act(spec.sample_obs) for _ in range(3)] == [1, 2, 3]
    assert b.act(spec.sample_obs) == 101 % 6
    a.reset()
    assert a.act(spec.sample_obs) == 1 and a.kind == "make_agent"


def test_tasks_with_aliases_and_typos(tmp_path, spec):
    f = tmp_path / "aliased.py"
    f.write_text("TASKS = ('lbf',)\ndef act(obs):\n    return 0\n")
    assert load_agent_file(f, TASK, spec=spec).act(spec.sample_obs) == 0
    f.write_text("TASKS = ('lbf-v2',)\ndef act(obs):\n    return 0\n")
    with pytest.raises(AgentLoadError, match="did you mean 'lbf-v1'"):
        load_agent_file(f, TASK, spec=spec)
    f.write_text("TASKS = 'lbf-v1'\ndef act(obs):\n    return 0\n")
    with pytest.raises(AgentLoadError, match="must be a tuple"):
        load_agent_file(f, TASK, spec=spec)


def test_jax_fast_path_is_exposed_and_validated(tmp_path, spec):
    f = tmp_path / "jax_ok.py"
    f.write_text(
        "import jax.numpy as jnp\n"
        "class Argmax:\n"
        "    def init_carry(self, batch_shape):\n        return ()\n"
        "    def act(self, params, carry, obs, key):\n"
        "        return jnp.argmax(obs[:6] * params).astype(jnp.int32), carry, {}\n"
        "policy = Argmax()\nparams = jnp.ones(6)\n"
    )
    agent = load_agent_file(f, TASK, spec=spec)
    assert agent.kind == "jax" and agent.jax is not None
    assert agent.act(spec.sample_obs) == int(np.argmax(spec.sample_obs[:6]))
    f.write_text(f.read_text().replace("params = jnp.ones(6)\n", ""))
    with pytest.raises(AgentLoadError, match="defines `policy` but no `params`"):
        load_agent_file(f, TASK, spec=spec)


def test_a_saved_policy_file_is_an_agent_and_its_card_is_checked(tmp_path, spec):
    import jax

    from aht_bench.policies.io import save_policy
    from aht_bench.policies.networks import MLPActorCritic

    net = MLPActorCritic(spec.obs_dim, spec.num_actions)
    params = net.init(jax.random.PRNGKey(0))
    path = tmp_path / "ego.safetensors"
    save_policy(path, net, params, {"task_id": TASK})
    agent = load_agent_file(path, TASK, spec=spec)
    assert agent.kind == "jax" and agent.jax is not None
    assert agent.jax[0] == net
    assert 0 <= agent.act(spec.sample_obs) < spec.num_actions
    result = _check_agent(str(path), "--task", TASK)
    assert result.exit_code == EXIT_OK, result.output

    # trained on another task: refused, naming the task to use
    save_policy(tmp_path / "other.safetensors", net, params, {"task_id": "sabotage-v1"})
    with pytest.raises(AgentLoadError, match="trained on sabotage-v1.*--task sabotage-v1"):
        load_agent_file(tmp_path / "other.safetensors", TASK, spec=spec)
    # tampered weights: the sha256 check refuses them
    blob = bytearray(path.read_bytes())
    blob[-1] ^= 1
    path.write_bytes(bytes(blob))
    with pytest.raises(AgentLoadError, match="policy file ego.safetensors"):
        load_agent_file(path, TASK, spec=spec)


def test_literal_tasks_reads_tasks_without_importing_the_file(tmp_path):
    """`evaluate --task all` picks the tasks an agent declares before any of its code runs."""
    from aht_bench.policies.agent_file import literal_tasks

    agent = tmp_path / "agent.py"
    agent.write_text('raise SystemExit("imported")\nTASKS = ("lbf", "sabotage-v1")\n')
    assert literal_tasks(agent) == ("lbf", "sabotage-v1")
    agent.write_text("TASKS = tuple(['lbf'])\n")  # not a literal: unknown without importing
    assert literal_tasks(agent) is None
    agent.write_text("def act(obs):\n    return 0\n")
    assert literal_tasks(agent) is None
    assert literal_tasks(tmp_path / "missing.py") is None
