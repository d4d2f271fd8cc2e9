"""Run a user's agent file in a child process, sandboxed, with time, memory and output limits.

    with IsolatedAgent("my_agent.py", "lbf-v1", seat=0, step_timeout=5.0) as agent:
        agent.reset()
        action = agent.act(obs)      # obs float32 (obs_dim,) -> int in [0, num_actions)
        policy, params = agent.export_jax()   # a JAX agent's policy, to run jitted here

Same API and errors as `aht_bench.policies.agent_file.load_agent_file`, but the agent runs in
`python -m aht_bench.policies._agent_worker` (protocol in that module), so an agent that hangs,
calls `os._exit`, aborts or segfaults becomes an `AgentFileError` here instead of taking the
caller down:

- `AgentLoadError` / `AgentRuntimeError` carry the worker's message (and its traceback in
  `.details`); a worker that dies becomes one of them, naming its exit code or signal, with
  the tail of its stderr (where the agent's prints also go).
- `AgentLoadTimeoutError` / `AgentStepTimeoutError` (both `AgentTimeoutError`) name the limit
  that was hit and how to raise it. Limits: `boot_timeout` for the worker's own imports (JAX),
  `load_timeout` for importing the agent file and building the agent, `step_timeout` for each
  `act`/`reset`, and `total_timeout` (None: no limit) for the worker's whole life, counted from
  `total_since` (a `time.monotonic()`; default: the start), so that the workers of one
  evaluation's seatings share one total.

The worker is the leader of its own process group (`start_new_session=True`). `close()`, the
context manager, `__del__` and an atexit hook kill the whole group with SIGKILL and reap the
worker, and every error that ends the worker (timeout, crash) closes it first, so no process
is left behind. After an error the agent stays closed and raises on every call.

With `sandbox=True` (the default) the worker runs inside bubblewrap (`aht_bench.policies.sandbox`):
no network, its own PID namespace (nothing it forks outlives it), a read-only view of only the
files it needs with the heldout sets and the leaderboard masked, a private /tmp, and bounded
memory (`memory_limit`). What the agent prints is kept to the last 64 KiB and echoed (with
`echo_output`) up to `max_output` bytes. With `sandbox=False` the worker is only a separate
process: protection from crashes and hangs, not from malicious code (it runs with the caller's
user, files and network). Memory, tasks and CPU are bounded for the sandbox as a whole by a
cgroup of its own (`cgroups`) where the kernel allows it; `limits` says what held.

`export_jax()` carries a JAX agent's policy out as compiled code (`exported`), so a JAX agent
runs jitted in the evaluator while its Python runs only in the sandbox.

May import the standard library, numpy, aht_bench.policies (agent_file, bundle, cgroups,
exported, sandbox) and (for types only) aht_bench.envs.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from aht_bench.policies.agent_file import (
    AgentFileError,
    AgentLoadError,
    AgentLoadTimeoutError,
    AgentRuntimeError,
    AgentStepTimeoutError,
    TaskSpec,
    check_agent_path,
    task_spec,
)
from aht_bench.policies.bundle import BundleError
from aht_bench.policies.cgroups import (
    DEFAULT_CPUS,
    DEFAULT_MAX_TASKS,
    ENTER_FAILED,
    AgentCgroup,
    unavailable_reason,
)
from aht_bench.policies.sandbox import DEFAULT_MEMORY_LIMIT, Sandbox

if TYPE_CHECKING:
    from aht_bench.envs import Task

DEFAULT_BOOT_TIMEOUT = 120.0  # the worker imports numpy and JAX before it reads the agent
DEFAULT_LOAD_TIMEOUT = 60.0
DEFAULT_STEP_TIMEOUT = 5.0
DEFAULT_MAX_OUTPUT = 1024 * 1024  # bytes of the agent's output echoed with echo_output
STDERR_TAIL_BYTES = 64 * 1024  # kept of the worker's stderr, for crash messages
_HEADER = struct.Struct("<I")
_ACTION = struct.Struct("<i")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])

_LIVE: weakref.WeakSet[IsolatedAgent] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for agent in list(_LIVE):
        agent.close()


def _describe_exit(rc: int | None) -> str:
    if rc is None:
        return "stopped answering"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        why = {
            "SIGABRT": " (os.abort() or a failed assertion in native code)",
            "SIGSEGV": " (a segmentation fault in native code)",
            "SIGKILL": " (killed from outside, e.g. by the out-of-memory killer)",
        }.get(name, "")
        return f"was killed by {name}{why}"
    if rc == 0:
        return "exited with code 0 (the agent ended the process, e.g. with os._exit(0))"
    return f"exited with code {rc} (the agent ended the process, e.g. with os._exit or sys.exit)"


class OutputBudget:
    """Bytes of agent output that may still be echoed; one budget can serve several workers
    (the seatings of one evaluation), so the bound holds for the whole evaluation."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_OUTPUT) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self._lock = threading.Lock()

    def take(self, chunk: bytes) -> tuple[bytes, bool]:
        """(the part of `chunk` to echo, whether this take used up the budget)."""
        with self._lock:
            if self.used >= self.max_bytes:
                return b"", False
            part = chunk[: self.max_bytes - self.used]
            self.used += len(part)
            return part, self.used >= self.max_bytes


class _Tail:
    """The last `STDERR_TAIL_BYTES` of the worker's stderr, read by a daemon thread."""

    def __init__(self, echo: bool, budget: OutputBudget) -> None:
        self.echo = echo
        self.budget = budget
        self._buf = bytearray()
        self._lock = threading.Lock()

    def drain(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._buf += chunk
                del self._buf[:-STDERR_TAIL_BYTES]
            if self.echo:
                part, used_up = self.budget.take(chunk)
                if not part:
                    continue
                note = ""
                if used_up:
                    note = f"\n[agent output past {self.budget.max_bytes} bytes not shown]\n"
                try:
                    sys.stderr.write(part.decode(errors="replace") + note)
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass

    def text(self) -> str:
        with self._lock:
            return bytes(self._buf).decode(errors="replace")


def _check_limits(**limits: float | None) -> None:
    """A ValueError for a time limit that is not a positive number of seconds."""
    for name, limit in limits.items():
        if limit is not None and not limit > 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {limit!r}")


class IsolatedAgent:
    """An agent file running in a child process; see the module docstring."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        task: str | Task,
        seat: int = 0,
        *,
        seed: int = 0,
        load_timeout: float = DEFAULT_LOAD_TIMEOUT,
        step_timeout: float = DEFAULT_STEP_TIMEOUT,
        total_timeout: float | None = None,
        total_since: float | None = None,
        boot_timeout: float = DEFAULT_BOOT_TIMEOUT,
        spec: TaskSpec | None = None,
        echo_output: bool = False,
        max_output: int | OutputBudget = DEFAULT_MAX_OUTPUT,
        sandbox: bool = True,
        memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
        max_tasks: int | None = DEFAULT_MAX_TASKS,
        cpus: float | None = DEFAULT_CPUS,
        hidden: Iterable[str | os.PathLike[str]] = (),
        probe: bool = False,
    ) -> None:
        """Start the worker and load `path` in it; raises `AgentLoadError` (or its timeout),
        and `SandboxUnavailableError` when `sandbox` and bubblewrap cannot run here.

        `task`: a `Task`, or an id or alias. `spec` is the task's `TaskSpec` (built from
        `task` when None). With `echo_output`, whatever the agent prints is copied to this
        process's stderr (at most `max_output` bytes, or what is left of a budget shared with
        other workers). In the sandbox, `memory_limit` (bytes), `max_tasks` (processes and
        threads) and `cpus` (cores' worth of CPU time per second) bound the whole sandbox through
        a cgroup of its own where one can be made (`cgroups`; `limits` says which held); else
        `memory_limit` bounds each process's private memory and `max_tasks` the user's
        processes. Without the sandbox only `memory_limit` holds, per process. None: no
        limit. `hidden`: folders masked in the sandbox besides the heldout sets and the
        leaderboard. `probe`: only import and check the file (`agent_file.probe_agent_file`),
        then end: use `probe_isolated` for that. `total_since`: the `time.monotonic()` the
        total limit counts from (default: now).
        """
        self._proc: subprocess.Popen[bytes] | None = None  # first: __del__ may run on errors
        self._cgroup: AgentCgroup | None = None
        self._memory_exceeded = False
        self.limits = "per process (no sandbox)"
        """What bounds the agent's memory, tasks and CPU: its cgroup, or per process (why)."""
        _check_limits(
            load_timeout=load_timeout,
            step_timeout=step_timeout,
            boot_timeout=boot_timeout,
            total_timeout=total_timeout,
        )
        self.path = check_agent_path(path)
        self.spec = spec if spec is not None else task_spec(task, seat)
        self.seat = seat
        self.load_timeout = float(load_timeout)
        self.step_timeout = float(step_timeout)
        self.total_timeout = None if total_timeout is None else float(total_timeout)
        self.boot_timeout = float(boot_timeout)
        self.echo_output = echo_output
        self.sandboxed = sandbox
        self.info: dict[str, Any] = {}
        self.returncode: int | None = None
        self._closed_why = "it was closed"
        self._buf = bytearray()
        budget = max_output if isinstance(max_output, OutputBudget) else OutputBudget(max_output)
        self._stderr = _Tail(echo_output, budget)
        self._drain: threading.Thread | None = None

        self.memory_limit = memory_limit
        argv, env, nproc_limit = self._command(sandbox, hidden, max_tasks, cpus)
        self._started = time.monotonic() if total_since is None else float(total_since)
        self._spawn(argv, env)
        try:
            request = {"path": str(self.path), "seat": seat, "seed": seed, "probe": probe,
                       "memory_limit": memory_limit, "nproc_limit": nproc_limit,
                       "spec": self.spec.to_json()}  # fmt: skip
            self._send(b"L" + json.dumps(request).encode(), "boot")
            self._expect(b"B", "boot")
            self.info = json.loads(self._expect(b"K", "load"))
        except BaseException:
            self.close()
            raise

    def _spawn(self, argv: list[str], env: dict[str, str] | None) -> None:
        """Start the worker process and the thread draining its stderr."""
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                env=env,
            )
        except BaseException:
            if self._cgroup is not None:
                self._cgroup.close()
            raise
        self.pid = self._proc.pid
        _LIVE.add(self)
        try:
            assert self._proc.stdin and self._proc.stdout and self._proc.stderr
            self._wfd = self._proc.stdin.fileno()
            self._rfd = self._proc.stdout.fileno()
            os.set_blocking(self._wfd, False)
            # the thread holds the tail, not self, so dropping the agent still runs __del__
            self._drain = threading.Thread(
                target=self._stderr.drain, args=(self._proc.stderr.fileno(),), daemon=True
            )
            self._drain.start()
        except BaseException:
            self.close()
            raise

    def _command(
        self,
        sandbox: bool,
        hidden: Iterable[str | os.PathLike[str]],
        max_tasks: int | None,
        cpus: float | None,
    ) -> tuple[list[str], dict[str, str] | None, int | None]:
        """The worker's argv and environment (None: the sandbox's own), and the process limit
        the worker sets itself where no cgroup holds; makes the agent's cgroup."""
        # the path is only for `ps`: the worker reads what to load from the protocol
        argv = [sys.executable, "-m", "aht_bench.policies._agent_worker", str(self.path)]
        if not sandbox:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p
            )
            env.setdefault("PYTHONUNBUFFERED", "1")  # prints reach the stderr tail before a crash
            return argv, env, None
        try:
            box = Sandbox.default(self.path, hidden=[Path(h) for h in hidden])
        except BundleError as e:
            raise AgentLoadError(str(e)) from None
        argv = box.wrap(argv, {"PYTHONUNBUFFERED": "1"})
        self._cgroup = AgentCgroup.create(self.memory_limit, max_tasks, cpus)
        if self._cgroup is not None:
            self.limits = self._cgroup.describe()
            return self._cgroup.enter(argv), None, None
        self.limits = f"per process ({unavailable_reason()})"
        return argv, None, None if max_tasks is None else _user_processes() + max_tasks

    # ---- public API -------------------------------------------------------------------------

    @property
    def task_id(self) -> str:
        return self.spec.task_id

    @property
    def kind(self) -> str | None:
        """How the file defines its agent: "act", "make_agent" or "jax"."""
        return self.info.get("kind")

    @property
    def jax(self) -> None:
        """Always None: the JAX fast path cannot cross processes (load in-process for it)."""
        return None

    @property
    def closed(self) -> bool:
        return self._proc is None

    def reset(self) -> None:
        """Start an episode: the agent's reset(), if it has one."""
        self._roundtrip(b"R", b"r")

    def act(self, obs: np.ndarray) -> int:
        """The agent's action for one observation float32 (obs_dim,), checked by the worker."""
        self._check_open()
        x = np.ascontiguousarray(obs, dtype=np.float32)
        if x.shape != (self.spec.obs_dim,):
            raise ValueError(
                f"IsolatedAgent.act takes one observation of shape ({self.spec.obs_dim},) for "
                f"{self.spec.task_id}, got {np.shape(obs)}"
            )
        return _ACTION.unpack(self._roundtrip(b"A" + x.tobytes(), b"a"))[0]

    def export_jax(self) -> tuple[Any, Any]:
        """(policy, params) of the agent's JAX policy, exported in the worker and checked here
        (`exported.load_exported`); the policy runs jitted in this process without the agent's
        Python. Raises `AgentRuntimeError` when the agent has none or it cannot be exported."""
        import jax
        from safetensors.numpy import load

        from aht_bench.policies.exported import ExportError, load_exported

        request = {
            "platform": jax.default_backend(),
            "threefry_partitionable": bool(jax.config.values["jax_threefry_partitionable"]),
        }
        body = self._roundtrip(b"X" + json.dumps(request).encode(), b"x", "load")
        try:
            n = _HEADER.unpack_from(body)[0]
            info = json.loads(body[_HEADER.size : _HEADER.size + n])
            start = _HEADER.size + n
            blob = body[start : start + int(info["module_bytes"])]
            tensors = load(body[start + int(info["module_bytes"]) :])
            return load_exported(blob, tensors, info)
        except ExportError as e:
            raise AgentRuntimeError(f"agent file {self.path.name}: {e}") from None
        except Exception as e:  # a malformed reply: the worker is the agent's process
            raise AgentRuntimeError(
                f"agent file {self.path.name}: its exported JAX policy cannot be read "
                f"({type(e).__name__}: {e})"
            ) from None

    def close(self) -> None:
        """Kill the worker's process group and reap the worker (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _LIVE.discard(self)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the zombie leader keeps the group id ours
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL'd, stuck in the kernel
            pass
        draining = False
        if self._drain is not None:
            self._drain.join(timeout=2)
            draining = self._drain.is_alive()
        # A grandchild that left the group may still hold stderr open: then the drain thread
        # still reads it, and closing the fd under it could hand its number to another file.
        streams = (proc.stdin, proc.stdout) + (() if draining else (proc.stderr,))
        for stream in streams:
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.returncode = self._exit_status(proc.returncode)
        if self._cgroup is not None:  # kills anything left (nothing: bwrap's init is gone)
            self._memory_exceeded = self._cgroup.memory_exceeded()
            self._cgroup.close()
            self._cgroup = None

    def _exit_status(self, rc: int | None) -> int | None:
        """The worker's exit status as Popen gives it (-N: killed by signal N). In the sandbox
        bwrap's init reports a worker killed by signal N as exit code 128 + N."""
        if self.sandboxed and rc is not None and rc > 128:
            return 128 - rc
        return rc

    def stderr_tail(self, max_lines: int = 20) -> str:
        """The last lines the worker (and the agent's prints) wrote to stderr."""
        text = self._stderr.text()
        return "\n".join(text.rstrip("\n").splitlines()[-max_lines:])

    def __enter__(self) -> IsolatedAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"pid {self.pid}"
        return f"IsolatedAgent({self.path.name!r}, {self.spec.task_id!r}, {state})"

    # ---- plumbing ---------------------------------------------------------------------------

    def _roundtrip(self, body: bytes, op: bytes, phase: str = "step") -> bytes:
        self._check_open()
        try:
            self._send(body, phase)
            reply = self._expect(op, phase)
            if self._proc is not None and self._proc.poll() is not None:
                # the process we started (the sandbox's root) is gone, e.g. killed from
                # outside: a reply that raced the worker's own death does not count
                self._died(phase)
            return reply
        except AgentFileError:
            raise
        except BaseException:  # e.g. Ctrl-C while waiting: the reply would come out of step
            self._closed_why = "it was interrupted in the middle of a step"
            self.close()
            raise

    def _check_open(self) -> None:
        if self._proc is None:
            raise AgentRuntimeError(
                f"agent file {self.path.name} is no longer running ({self._closed_why}); "
                "start a new IsolatedAgent"
            )

    def _deadline(self, phase: str) -> tuple[float, str]:
        """(deadline, limit name) for a phase: the tighter of the phase limit and the total."""
        now = time.monotonic()
        limit = {"boot": self.boot_timeout, "load": self.load_timeout}.get(phase, self.step_timeout)
        deadline, which = now + limit, phase
        if self.total_timeout is not None and self._started + self.total_timeout < deadline:
            deadline, which = self._started + self.total_timeout, "total"
        return deadline, which

    def _send(self, body: bytes, phase: str) -> None:
        data = memoryview(_HEADER.pack(len(body)) + body)
        deadline, which = self._deadline(phase)
        while data:
            try:
                n = os.write(self._wfd, data)
                data = data[n:]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, ValueError, OSError):
                self._died(phase)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._timed_out(phase, which)
            select.select([], [self._wfd], [], remaining)

    def _expect(self, op: bytes, phase: str) -> bytes:
        """The body (after the opcode) of the next frame, which must be `op` or an error."""
        deadline, which = self._deadline(phase)
        while True:
            if len(self._buf) >= _HEADER.size:
                n = _HEADER.unpack_from(self._buf)[0]
                if len(self._buf) >= _HEADER.size + n:
                    body = bytes(self._buf[_HEADER.size : _HEADER.size + n])
                    del self._buf[: _HEADER.size + n]
                    break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._timed_out(phase, which)
            ready, _, _ = select.select([self._rfd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._rfd, 1 << 20)
            if not chunk:
                self._died(phase)
            self._buf += chunk
        if body[:1] == op:
            return body[1:]
        if body[:1] == b"E":
            err = json.loads(body[1:])
            cls = AgentLoadError if err.get("kind") == "load" else AgentRuntimeError
            if cls is AgentLoadError:
                self._closed_why = "it failed to load"
                self.close()
            raise cls(err["message"], details=err.get("details"))
        self.close()
        raise AgentRuntimeError(f"agent worker sent an unexpected frame {body[:1]!r}")

    def _timed_out(self, phase: str, which: str) -> None:
        elapsed = time.monotonic() - self._started
        self._closed_why = f"it timed out after {elapsed:.1f}s"
        self.close()
        name = self.path.name
        if which == "total":
            raise (AgentLoadTimeoutError if phase in ("boot", "load") else AgentStepTimeoutError)(
                f"agent file {name} used up its total time limit of {self.total_timeout:g}s "
                f"(during {'loading' if phase in ('boot', 'load') else 'play'}); raise it with "
                "--total-timeout (IsolatedAgent(total_timeout=...))"
            )
        if phase == "boot":
            tail = self.stderr_tail()
            raise AgentLoadTimeoutError(
                f"the agent worker for {name} did not start within {self.boot_timeout:g}s "
                "(importing numpy and JAX; is the machine overloaded?); raise the limit with "
                "IsolatedAgent(boot_timeout=...)" + (f"\nworker output:\n{tail}" if tail else "")
            )
        if phase == "load":
            raise AgentLoadTimeoutError(
                f"agent file {name} did not finish loading within the load timeout of "
                f"{self.load_timeout:g}s (does it hang at import, or load something slow?); "
                "raise the limit with --load-timeout (IsolatedAgent(load_timeout=...))"
            )
        raise AgentStepTimeoutError(
            f"agent file {name} did not answer act(obs)/reset() within the step timeout of "
            f"{self.step_timeout:g}s; make it faster or raise the limit with --step-timeout "
            "(IsolatedAgent(step_timeout=...))"
        )

    def _died(self, phase: str) -> None:
        proc = self._proc
        rc = None
        if proc is not None:
            try:
                rc = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                rc = None
        rc = self._exit_status(rc)
        in_cgroup = self._cgroup is not None
        self._closed_why = "its process died"
        self.close()
        tail = self.stderr_tail()
        during = {"boot": "while starting", "load": "while loading the agent"}.get(
            phase, "during act(obs)/reset()"
        )
        fix = ""
        if self._memory_exceeded:
            why = (
                f"was killed for going over its sandbox's memory limit of "
                f"{(self.memory_limit or 0) / 1024**3:g} GiB (all its processes, /tmp and "
                "/dev/shm together)"
            )
            fix = "; use less memory or raise --memory-limit"
        elif in_cgroup and rc == ENTER_FAILED and phase == "boot":
            why = "could not join the sandbox's cgroup (exit code 125)"
        else:
            why = _describe_exit(rc)
        msg = f"the worker process running agent file {self.path.name} {why} {during}{fix}" + (
            f"; its last output:\n{tail}" if tail else ""
        )
        cls = AgentLoadError if phase in ("boot", "load") else AgentRuntimeError
        raise cls(msg)


def _user_processes() -> int:
    """How many processes this process's user has now (RLIMIT_NPROC counts them all)."""
    uid, n = os.getuid(), 0
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and d.stat().st_uid == uid:
                n += 1
        except OSError:
            continue
    return n


__all__ = ["AgentFileError", "IsolatedAgent", "OutputBudget", "probe_isolated"]


def probe_isolated(
    path: str | os.PathLike[str], task: str | Task, seat: int = 0, **options: Any
) -> str:
    """Import and check the agent file `path` in a worker of its own (sandboxed by default),
    without building the task: what fails there fails in seconds, before an evaluation loads
    its teammates and compiles the task (`agent_file.probe_agent_file`). `options` are
    `IsolatedAgent`'s (sandbox, load_timeout, memory_limit, ...). Returns how the file defines
    its agent; raises `AgentLoadError` (or its timeout) and `SandboxUnavailableError` as
    `IsolatedAgent` does."""
    from aht_bench.policies.agent_file import probe_spec

    agent = IsolatedAgent(path, task, seat, spec=probe_spec(task), probe=True, **options)
    try:
        return str(agent.kind)
    finally:
        agent.close()
