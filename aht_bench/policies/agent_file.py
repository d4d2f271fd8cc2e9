"""Loading a user's agent file (`aht-bench evaluate my_agent.py`) in this process.

An agent file is a Python module that provides (see docs/agent_files.md):

- plain Python on NumPy: `act(obs) -> int` and optional `reset()` at module level, or
  `make_agent(task_id, seat)` returning an object with `act(obs)` and optional `reset()`;
- and/or the JAX fast path: module-level `policy` (the protocol of `aht_bench.policies.core`)
  and `params`, or `jax_policy(task_id) -> (policy, params)`;
- optionally `TASKS = ("lbf-v1", ...)`, the task ids (or aliases) it supports.

A saved policy file (`.safetensors` with the JSON card that `save_policy` and `aht-bench train`
write) is an agent too: the JAX fast path, loaded with `load_policy` (sha256-checked).

    agent = load_agent_file("my_agent.py", "lbf-v1", seat=0)
    agent.reset()                    # at every episode start
    action = agent.act(obs)          # obs float32 (obs_dim,) -> int in [0, num_actions)
    agent.jax                        # (policy, params) or None

Everything a user can get wrong raises an `AgentFileError` that names the file, the function
and the fix: `AgentLoadError` while loading, `AgentRuntimeError` while acting. This runs the
agent's code in the caller's process, so a file that crashes the interpreter (`os._exit`, a
segfault) or hangs takes the caller with it: `aht_bench.policies.isolated.IsolatedAgent` runs
the same loader in a child process and is what the command line uses by default.

The loader needs only a `TaskSpec` (sizes of the task and one sample observation), not the
task itself, so the worker process of `isolated` never builds an environment. `probe_agent_file`
needs less (a `probe_spec`: the task's names), so a broken file is caught before anything
expensive starts (the task built, the teammates loaded).

May import numpy, the standard library and (lazily, for the JAX path, `task_spec` and
`probe_spec`) jax, aht_bench.envs and aht_bench.policies.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import inspect
import itertools
import math
import numbers
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from aht_bench.envs import Task

EXAMPLES = "agents/examples/"
_PLAIN_EXAMPLE = EXAMPLES + "random_agent.py"
_STATE_EXAMPLE = EXAMPLES + "scripted_agent.py"
_JAX_EXAMPLE = EXAMPLES + "jax_mlp_agent.py"
_COUNTER = itertools.count()
POLICY_SUFFIX = ".safetensors"


class AgentFileError(Exception):
    """An agent file that cannot be used; the message names the file and the fix.

    `details` is the agent's own traceback (or the worker's stderr) when there is one: the
    command line shows it with --debug.
    """

    def __init__(self, message: str, details: str | None = None) -> None:
        super().__init__(with_examples_note(message))
        self.details = details


EXAMPLES_NOTE = f"`aht-bench examples` copies the example agents to ./{EXAMPLES}"


def with_examples_note(message: str) -> str:
    """`message`, and where to get the example agents when it cites them (an installed
    aht-bench has no agents/ folder until `aht-bench examples` copies it)."""
    if EXAMPLES not in message or EXAMPLES_NOTE in message:
        return message
    return f"{message} ({EXAMPLES_NOTE})"


class AgentLoadError(AgentFileError):
    """The agent file could not be loaded: missing, not Python, raising, or not an agent."""


class AgentRuntimeError(AgentFileError):
    """The agent failed while playing: `act`/`reset` raised or returned something invalid."""


class AgentTimeoutError(AgentFileError):
    """The agent ran past a time limit (only raised by `IsolatedAgent`)."""


class AgentLoadTimeoutError(AgentTimeoutError, AgentLoadError):
    """Loading the agent file took longer than the load (or total) limit."""


class AgentStepTimeoutError(AgentTimeoutError, AgentRuntimeError):
    """`act`/`reset` took longer than the step (or total) limit."""


class TaskSpec(NamedTuple):
    """What the loader needs to know about the task an agent will play."""

    task_id: str  # the registered id, e.g. "lbf-v1"
    names: tuple[str, ...]  # task_id and its aliases: TASKS may list any of them
    known: tuple[str, ...]  # every registered id and alias, to catch typos in TASKS
    obs_dim: int
    num_actions: int
    sample_obs: np.ndarray  # float32 (obs_dim,): the agent's observation at a reset

    def to_json(self) -> dict[str, Any]:
        d = self._asdict()
        d["sample_obs"] = [float(x) for x in self.sample_obs]
        d["names"], d["known"] = list(self.names), list(self.known)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TaskSpec:
        return cls(
            task_id=str(d["task_id"]),
            names=tuple(d["names"]),
            known=tuple(d["known"]),
            obs_dim=int(d["obs_dim"]),
            num_actions=int(d["num_actions"]),
            sample_obs=np.asarray(d["sample_obs"], np.float32),
        )


def task_spec(task: str | Task, seat: int = 0, sample_obs: np.ndarray | None = None) -> TaskSpec:
    """The `TaskSpec` of a task (a `Task`, or an id or alias, resolved here); resets it once
    unless given an obs."""
    from aht_bench import envs

    task = envs.task(task)
    task_id = task.id
    compiled = task.compiled  # shared with every EgoEnv of this task: compiled once
    env = compiled.env
    if sample_obs is None:
        _, _, timestep = compiled.reset(np.uint32(0))
        sample_obs = np.asarray(timestep.obs[seat], np.float32)
    aliases = envs.aliases()
    return TaskSpec(
        task_id=task_id,
        names=(task_id, *sorted(a for a, t in aliases.items() if t == task_id)),
        known=tuple(envs.registered_ids()) + tuple(sorted(aliases)),
        obs_dim=int(env.obs_dim),
        num_actions=int(env.num_actions),
        sample_obs=np.asarray(sample_obs, np.float32).reshape(int(env.obs_dim)),
    )


def _where(path: Path, exc: BaseException) -> str:
    """' (my_agent.py line 12: `code`)' for the innermost frame of `exc` inside `path`."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename) == path:
        return f" ({path.name} line {exc.lineno})"
    if not frames:
        return ""
    f = frames[-1]
    code = f" `{f.line.strip()}`" if f.line else ""
    return f" ({path.name} line {f.lineno}:{code})"


def _traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    msg = str(exc)
    return f"raised {type(exc).__name__}: {msg}" if msg else f"raised {type(exc).__name__}"


def _import_module(path: Path) -> Any:
    """Execute the file as a fresh module; sys.modules and sys.path are restored afterwards.

    The module is compiled and executed directly (not `exec_module`), so no `__pycache__` is
    written next to the user's file. Its folder is on sys.path during the import, so the file
    can import helper modules that sit next to it.
    """
    name = f"_aht_agent_{next(_COUNTER)}_{path.stem if path.stem.isidentifier() else 'file'}"
    try:
        source = path.read_bytes()
    except OSError as e:
        raise AgentLoadError(f"cannot read agent file {path}: {e.strerror or e}") from e
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as e:
        text = f"\n    {e.text.rstrip()}" if e.text else ""
        raise AgentLoadError(
            f"agent file {path.name} has a syntax error at line {e.lineno}: {e.msg}{text}\n"
            f"fix line {e.lineno} of {path} (`python -m py_compile` on it shows the same error)"
        ) from None
    except ValueError as e:  # null bytes
        raise AgentLoadError(f"agent file {path.name} is not Python source: {e}") from None
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise AgentLoadError(f"cannot import agent file {path}")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.parent)
    sys.modules[name] = module  # dataclasses and typing look the module up while it runs
    sys.path.insert(0, folder)
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as e:
        raise AgentLoadError(
            f"agent file {path.name} {_describe(e)} while being imported{_where(path, e)}; "
            + (
                "install the missing package or fix the import"
                if isinstance(e, ImportError)
                else "fix the file so that importing it succeeds"
            ),
            details=_traceback(e),
        ) from e
    finally:
        sys.modules.pop(name, None)
        try:
            sys.path.remove(folder)
        except ValueError:
            pass
    return module


def _check_signature(fn: Any, args: tuple[Any, ...], what: str, path: Path, example: str) -> None:
    if not callable(fn):
        raise AgentLoadError(
            f"agent file {path.name}: {what} is a {type(fn).__name__}, not a function; "
            f"define def {what}: ... (see {example})"
        )
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # builtins and C functions: nothing to check
    try:
        sig.bind(*args)
    except TypeError:
        raise AgentLoadError(
            f"agent file {path.name}: {what} has the wrong signature {fn.__name__}{sig}; "
            f"it must accept exactly the arguments {what} (see {example})"
            if hasattr(fn, "__name__")
            else f"agent file {path.name}: {what} has the wrong signature {sig} (see {example})"
        ) from None


def _check_tasks(module: Any, path: Path, spec: TaskSpec) -> None:
    tasks = getattr(module, "TASKS", None)
    if tasks is None:
        return
    if isinstance(tasks, str) or not isinstance(tasks, tuple | list | set | frozenset):
        raise AgentLoadError(
            f"agent file {path.name}: TASKS must be a tuple of task ids such as "
            f'TASKS = ("lbf-v1",), got {tasks!r}'
        )
    for t in tasks:
        if not isinstance(t, str) or t not in spec.known:
            close = difflib.get_close_matches(str(t), spec.known, n=2, cutoff=0.5)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            raise AgentLoadError(
                f"agent file {path.name}: TASKS lists {t!r}, which is not a task{hint}; "
                "`aht-bench tasks` lists the task ids"
            )
    if not set(tasks) & set(spec.names):
        raise AgentLoadError(
            f"agent file {path.name} supports only the tasks {tuple(tasks)} (its TASKS), not "
            f"{spec.task_id}; run it on one of those, or add {spec.task_id!r} to TASKS if it "
            "can play this task"
        )


def literal_tasks(path: Path) -> tuple[str, ...] | None:
    """The agent file's `TASKS`, read without importing it (None when absent or not literal):
    what `aht-bench evaluate --task all` may pick from before any agent code runs."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "TASKS" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if isinstance(value, tuple | list | set | frozenset):
                return tuple(str(v) for v in value)
    return None


def check_action(value: Any, num_actions: int, path: Path, fn: str, task_id: str) -> int:
    """`value` as a Python int in [0, num_actions), or an `AgentRuntimeError` naming the fix."""
    where = f"{fn} in agent file {path.name} returned"
    fix = f"return one int action in [0, {num_actions}) for {task_id}"
    if isinstance(value, np.ndarray | np.generic) or hasattr(value, "__array__"):
        try:
            arr = np.asarray(value)
        except Exception:  # an object that claims to be an array but is not
            arr = np.asarray(None, dtype=object)
        if arr.size != 1:
            raise AgentRuntimeError(
                f"{where} an array of shape {arr.shape}; {fix} (one agent, one action: obs "
                "is a single agent's observation, not a batch)"
            )
        if arr.dtype.kind in "biufUS":
            value = arr.reshape(()).item()  # the Python scalar, checked below
    if isinstance(value, bool):
        raise AgentRuntimeError(f"{where} a bool ({value!r}); {fix}")
    if isinstance(value, numbers.Integral):
        a = int(value)
        if 0 <= a < num_actions:
            return a
        raise AgentRuntimeError(f"{where} {a}, outside the action range; {fix}")
    if value is None:
        raise AgentRuntimeError(f"{where} None (a missing `return`?); {fix}")
    if isinstance(value, str | bytes):
        raise AgentRuntimeError(
            f"{where} a {type(value).__name__} ({value!r:.40}); {fix} (the action's index, "
            "not its name)"
        )
    if isinstance(value, numbers.Real):
        if math.isnan(float(value)):
            raise AgentRuntimeError(f"{where} NaN (does the network produce NaN?); {fix}")
        raise AgentRuntimeError(f"{where} a float ({value!r}); {fix} (e.g. int(np.argmax(logits)))")
    if isinstance(value, list | tuple):
        raise AgentRuntimeError(f"{where} a {type(value).__name__} of length {len(value)}; {fix}")
    raise AgentRuntimeError(
        f"{where} a value of type {type(value).__name__} ({value!r:.40}); {fix}"
    )


def _call(fn: Callable[..., Any], args: tuple[Any, ...], path: Path, what: str, error: type) -> Any:
    try:
        return fn(*args)
    except (Exception, SystemExit) as e:
        raise error(
            f"{what} in agent file {path.name} {_describe(e)}{_where(path, e)}; fix the agent "
            "(`aht-bench check-agent --debug` shows the traceback)",
            details=_traceback(e),
        ) from e


def _validate_jax(policy: Any, params: Any, path: Path, spec: TaskSpec, source: str) -> None:
    """Check the JAX fast path once on `spec.sample_obs`; raise `AgentLoadError`."""
    import jax

    from aht_bench.policies.runner import _jitted_act

    if not (
        callable(getattr(policy, "init_carry", None)) and callable(getattr(policy, "act", None))
    ):
        raise AgentLoadError(
            f"agent file {path.name}: {source} gives a policy {type(policy).__name__} without "
            f"init_carry(batch_shape) and act(params, carry, obs, key) (see {_JAX_EXAMPLE})"
        )
    obs_dim = getattr(policy, "obs_dim", None)
    num_actions = getattr(policy, "num_actions", None)
    if isinstance(obs_dim, int) and obs_dim != spec.obs_dim:
        raise AgentLoadError(
            f"agent file {path.name}: {source} gives a policy for observations of size "
            f"{obs_dim}, but {spec.task_id} has obs_dim {spec.obs_dim}; build the policy for "
            "this task (or list its task in TASKS)"
        )
    if isinstance(num_actions, int) and num_actions != spec.num_actions:
        raise AgentLoadError(
            f"agent file {path.name}: {source} gives a policy with {num_actions} actions, but "
            f"{spec.task_id} has {spec.num_actions}"
        )
    for kp, leaf in jax.tree_util.tree_leaves_with_path(params):
        arr = np.asarray(leaf)
        if arr.dtype.kind not in "biuf":
            raise AgentLoadError(
                f"agent file {path.name}: params leaf {jax.tree_util.keystr(kp)} has dtype "
                f"{arr.dtype}; params must be a pytree of numeric arrays"
            )
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
            raise AgentLoadError(
                f"agent file {path.name}: params leaf {jax.tree_util.keystr(kp)} has {bad} "
                "NaN or inf values; the weights are corrupted or training diverged"
            )
    try:
        carry = policy.init_carry(())
        action, _, _ = _jitted_act(policy)(
            params, carry, jax.numpy.asarray(spec.sample_obs), jax.random.PRNGKey(0)
        )
        action = np.asarray(action)
    except (Exception, SystemExit) as e:
        raise AgentLoadError(
            f"agent file {path.name}: the JAX policy from {source} failed on one observation "
            f"of {spec.task_id} ({spec.obs_dim} floats): {_describe(e)}{_where(path, e)}",
            details=_traceback(e),
        ) from e
    if action.shape != () or not np.issubdtype(action.dtype, np.integer):
        raise AgentLoadError(
            f"agent file {path.name}: the JAX policy's act returned an action of shape "
            f"{action.shape} and dtype {action.dtype}; it must return one integer action of "
            "shape () (e.g. jax.random.categorical(key, logits))"
        )
    if not 0 <= int(action) < spec.num_actions:
        raise AgentLoadError(
            f"agent file {path.name}: the JAX policy's act returned action {int(action)}, "
            f"outside [0, {spec.num_actions}) of {spec.task_id}"
        )


class LoadedAgent:
    """An agent file loaded in this process; see the module docstring."""

    def __init__(
        self,
        path: Path,
        spec: TaskSpec,
        seat: int,
        act: Callable[[np.ndarray], Any],
        reset: Callable[[], Any] | None,
        kind: str,
        jax: tuple[Any, Any] | None,
        act_name: str,
    ) -> None:
        self.path = path
        self.spec = spec
        self.seat = seat
        self.kind = kind  # "act", "make_agent" or "jax"
        self.jax = jax  # (policy, params) of the fast path, or None
        self._act = act
        self._reset = reset
        self._act_name = act_name

    @property
    def task_id(self) -> str:
        return self.spec.task_id

    def reset(self) -> None:
        """Start an episode: calls the agent's reset(), if it has one."""
        if self._reset is not None:
            name = "reset()" if self.kind != "make_agent" else "the agent's reset()"
            _call(self._reset, (), self.path, name, AgentRuntimeError)

    def act(self, obs: np.ndarray) -> int:
        """The agent's action for one observation float32 (obs_dim,), checked."""
        obs = np.array(obs, dtype=np.float32, copy=True)  # the agent may keep or edit it
        out = _call(self._act, (obs,), self.path, self._act_name, AgentRuntimeError)
        return check_action(out, self.spec.num_actions, self.path, self._act_name, self.task_id)


def check_agent_path(path: str | os.PathLike[str]) -> Path:
    """`path` resolved, or an `AgentLoadError` if it is not an existing .py file."""
    p = Path(path)
    if not p.exists():
        raise AgentLoadError(f"agent file {p} does not exist")
    if not p.is_file():
        raise AgentLoadError(
            f"agent file {p} is not a file; pass a .py file such as {_PLAIN_EXAMPLE}"
        )
    if p.suffix not in (".py", POLICY_SUFFIX):
        raise AgentLoadError(
            f"agent file {p} is neither a Python file (.py) nor a policy file "
            f"({POLICY_SUFFIX} with its JSON card, as save_policy and `aht-bench train` write "
            f"them); an agent is a module with act(obs) (see {_PLAIN_EXAMPLE})"
        )
    return p.resolve()


def _load_policy_file(p: Path, spec: TaskSpec, seat: int, seed: int) -> LoadedAgent:
    """A saved policy (`save_policy`: safetensors + JSON card, sha256-verified) as an agent:
    the JAX fast path, and `act(obs)` through a `PolicyRunner`."""
    from aht_bench.policies.io import PolicyFileError, load_policy, read_card
    from aht_bench.policies.runner import PolicyRunner

    try:
        policy, params = load_policy(p)
        card = read_card(p)
    except PolicyFileError as e:
        raise AgentLoadError(f"policy file {p.name}: {e}") from None
    trained_on = card.get("task_id")
    if isinstance(trained_on, str):
        from aht_bench import envs

        try:
            trained_on = envs.task(trained_on).id
        except envs.UnknownTaskError:
            raise AgentLoadError(
                f"policy file {p.name}: its card names task {trained_on!r}, which this version "
                "of aht-bench does not know"
            ) from None
        if trained_on != spec.task_id:
            raise AgentLoadError(
                f"policy file {p.name} was trained on {trained_on}, not {spec.task_id}; "
                f"evaluate it with --task {trained_on}"
            )
    _validate_jax(policy, params, p, spec, "the policy file")
    runner = PolicyRunner(policy, params, seed=seed)
    return LoadedAgent(
        p, spec, seat, runner.act, runner.reset, "jax", (policy, params), "the policy's act"
    )


def load_agent_file(
    path: str | os.PathLike[str],
    task: str | Task,
    seat: int = 0,
    *,
    seed: int = 0,
    spec: TaskSpec | None = None,
) -> LoadedAgent:
    """Load the agent file `path` to play `task` (a `Task`, or an id or alias) in `seat`; see
    the module docstring.

    `seed` seeds the key stream of a JAX-only agent (run through `PolicyRunner`). `spec` is the
    task's `TaskSpec` (built from `task` when None).
    """
    p = check_agent_path(path)
    if spec is None:
        spec = task_spec(task, seat)
    if p.suffix == POLICY_SUFFIX:
        return _load_policy_file(p, spec, seat, seed)
    module = _import_module(p)
    _check_tasks(module, p, spec)

    plain_act = getattr(module, "act", None)
    make_agent = getattr(module, "make_agent", None)
    jax_fn = getattr(module, "jax_policy", None)
    has_policy = hasattr(module, "policy")

    jax_pair: tuple[Any, Any] | None = None
    if jax_fn is not None:
        _check_signature(jax_fn, (spec.task_id,), "jax_policy(task_id)", p, _JAX_EXAMPLE)
        out = _call(jax_fn, (spec.task_id,), p, "jax_policy(task_id)", AgentLoadError)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise AgentLoadError(
                f"agent file {p.name}: jax_policy(task_id) returned {type(out).__name__}; it "
                f"must return the pair (policy, params) (see {_JAX_EXAMPLE})"
            )
        _validate_jax(out[0], out[1], p, spec, "jax_policy(task_id)")
        jax_pair = (out[0], out[1])
    elif has_policy:
        if not hasattr(module, "params"):
            raise _policy_without_params(p)
        _validate_jax(module.policy, module.params, p, spec, "`policy`/`params`")
        jax_pair = (module.policy, module.params)

    if make_agent is not None:
        _check_signature(
            make_agent, (spec.task_id, seat), "make_agent(task_id, seat)", p, _STATE_EXAMPLE
        )
        agent = _call(
            make_agent, (spec.task_id, seat), p, "make_agent(task_id, seat)", AgentLoadError
        )
        agent_act = getattr(agent, "act", None)
        if agent_act is None:
            raise AgentLoadError(
                f"agent file {p.name}: make_agent(task_id, seat) returned a "
                f"{type(agent).__name__} without an act(obs) method (see {_STATE_EXAMPLE})"
            )
        _check_signature(agent_act, (spec.sample_obs,), "act(obs)", p, _STATE_EXAMPLE)
        agent_reset = getattr(agent, "reset", None)
        if agent_reset is not None:
            _check_signature(agent_reset, (), "reset()", p, _STATE_EXAMPLE)
        return LoadedAgent(
            p, spec, seat, agent_act, agent_reset, "make_agent", jax_pair, "the agent's act(obs)"
        )
    if plain_act is not None:
        _check_signature(plain_act, (spec.sample_obs,), "act(obs)", p, _PLAIN_EXAMPLE)
        reset = getattr(module, "reset", None)
        if reset is not None:
            _check_signature(reset, (), "reset()", p, _PLAIN_EXAMPLE)
        return LoadedAgent(p, spec, seat, plain_act, reset, "act", jax_pair, "act(obs)")
    if jax_pair is not None:
        from aht_bench.policies.runner import PolicyRunner

        runner = PolicyRunner(jax_pair[0], jax_pair[1], seed=seed)
        return LoadedAgent(
            p, spec, seat, runner.act, runner.reset, "jax", jax_pair, "the JAX policy's act"
        )
    raise _no_agent(p)


def _policy_without_params(p: Path) -> AgentLoadError:
    return AgentLoadError(
        f"agent file {p.name} defines `policy` but no `params`; the JAX fast path "
        f"needs both at module level (params = None for a policy without weights; see "
        f"{_JAX_EXAMPLE})"
    )


def _no_agent(p: Path) -> AgentLoadError:
    return AgentLoadError(
        f"agent file {p.name} defines no act(obs); define act(obs) -> int (see "
        f"{_PLAIN_EXAMPLE}), make_agent(task_id, seat) (see {_STATE_EXAMPLE}), or the JAX "
        f"policy/params or jax_policy(task_id) (see {_JAX_EXAMPLE})"
    )


def probe_spec(task: str | Task) -> TaskSpec:
    """A `TaskSpec` for `probe_agent_file`: the task's id and names, no sizes (0) and no sample
    observation, so it is built without building the environment."""
    from aht_bench import envs

    task_id = envs.task(task).id
    aliases = envs.aliases()
    return TaskSpec(
        task_id=task_id,
        names=(task_id, *sorted(a for a, t in aliases.items() if t == task_id)),
        known=tuple(envs.registered_ids()) + tuple(sorted(aliases)),
        obs_dim=0,
        num_actions=0,
        sample_obs=np.zeros(0, np.float32),
    )


def probe_agent_file(path: str | os.PathLike[str], spec: TaskSpec, seat: int = 0) -> str:
    """Import the agent file `path` and check what needs no environment, so that a broken file
    fails in seconds, before anything expensive starts: the file compiles and imports, its
    TASKS lists `spec`'s task, it defines an agent (act, make_agent, policy/params or
    jax_policy) and its functions take the arguments they will be called with. Calls none of
    them; `load_agent_file` does the rest. Returns how the file defines its agent ("act",
    "make_agent" or "jax"); an `AgentLoadError` as `load_agent_file` raises it."""
    p = check_agent_path(path)
    if p.suffix == POLICY_SUFFIX:
        return "jax"  # ours to load, and loading it is the check (`_load_policy_file`)
    module = _import_module(p)
    _check_tasks(module, p, spec)
    obs = object()  # only bound, never passed: no sample observation is known here
    if getattr(module, "jax_policy", None) is not None:
        _check_signature(module.jax_policy, (spec.task_id,), "jax_policy(task_id)", p, _JAX_EXAMPLE)
    elif hasattr(module, "policy") and not hasattr(module, "params"):
        raise _policy_without_params(p)
    if getattr(module, "make_agent", None) is not None:
        _check_signature(
            module.make_agent, (spec.task_id, seat), "make_agent(task_id, seat)", p, _STATE_EXAMPLE
        )
        return "make_agent"
    if getattr(module, "act", None) is not None:
        _check_signature(module.act, (obs,), "act(obs)", p, _PLAIN_EXAMPLE)
        if getattr(module, "reset", None) is not None:
            _check_signature(module.reset, (), "reset()", p, _PLAIN_EXAMPLE)
        return "act"
    if getattr(module, "jax_policy", None) is not None or hasattr(module, "policy"):
        return "jax"
    raise _no_agent(p)
