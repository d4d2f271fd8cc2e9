"""Evaluating an agent against a teammate set: the library behind `aht-bench evaluate`.

    record = evaluate_agent_file("my_agent.py", load_set("forced_coord", "dev"))
    record = evaluate_agent_files(["seed0.safetensors", "seed1.safetensors"], eval_set)  # seeds
    record = evaluate_policy(policy, params, eval_set, name="my policy")     # a JAX policy
    matrix = cross_play(task, rows, cols, seatings, num_episodes=64, seed=0)

An agent file's Python runs where `isolation` says: "sandbox" (the default: a child process
inside bubblewrap, `aht_bench.policies.sandbox`, with time, memory and output limits), "process"
(a child process with those limits, no sandbox) or "in-process" (this process: trusted code
only; records say so and the leaderboard refuses them). A record's `agent.isolation` says which
("policy-file" for a saved policy, which runs no user code). Nothing the agent returns is trusted
but its actions: an agent with a JAX policy (`policy` + `params` or `jax_policy(task_id)`)
hands it over as compiled code (`IsolatedAgent.export_jax`), which runs on the jitted path
here (`rollout.play`); any other plays on the step-by-step Gymnasium path
(`gym_runner.play_python`), one `act` per step across the process boundary; with
`isolate=True` even a JAX policy plays step by step. A saved policy file (.safetensors + card)
runs no user code and loads here. Every member plays `num_episodes` episodes in each seating
of the set. The returns are BRProx
normalised with the set's bounds and aggregated with stratified bootstrap CIs (`scores`), and
the result comes back as a result record (`record`).

Several agent files are the independently trained seeds of one agent (`evaluate_agent_files`):
each plays exactly what one file would (same episodes, seed and seatings), and the score matrix
is (seeds, members), each entry a seed's normalised return averaged over its episodes and
seatings: the CIs are over training seeds, as in the paper (Sec. 6.1).

Time: `limits["total_timeout"]` bounds the whole evaluation of one agent file (loading, every
seating's worker, and its exported JAX policy's play), counted from the start of that file's
evaluation. The compiled policy runs in this process, where nothing can interrupt XLA: under a
`watchdog.Watchdog` that, at the deadline, prints an error naming the file and the limit and
ends the process with `DEADLINE_EXIT_CODE` (nothing of the evaluation is written).

Errors: `AgentLoadError` / `AgentRuntimeError` (and their timeout subclasses) for the agent,
`TeammateSetError` / `TeammateSetIntegrityError` for the set, `SeedFilesError` for seed files
that cannot be one agent (a file twice, two equal files, different runners); each message names
the file and the fix.

May import numpy, jax, the standard library, aht_bench.envs, aht_bench.policies and
aht_bench.evaluation.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aht_bench import envs
from aht_bench.envs import Task
from aht_bench.evaluation import rollout, scores
from aht_bench.evaluation.gym_runner import play_python
from aht_bench.evaluation.record import (
    RUNS_SEEDS,
    library_versions,
    make_record,
    member_entries,
    seed_member_entries,
)
from aht_bench.evaluation.replay import ReplaySink
from aht_bench.evaluation.sets import EvaluationSet
from aht_bench.policies.agent_file import (
    POLICY_SUFFIX,
    AgentLoadError,
    AgentRuntimeError,
    AgentStepTimeoutError,
    check_agent_path,
    load_agent_file,
    task_spec,
)
from aht_bench.policies.teammate_set import TeammateSet
from aht_bench.policies.watchdog import Watchdog

DEFAULT_EPISODES = 64
DEADLINE_EXIT_CODE = 4
"""The exit code of a process ended at an agent file's total time limit while its compiled JAX
policy ran: `aht-bench`'s "the agent failed while playing" (`aht_bench.cli.EXIT_AGENT_RUNTIME`)."""
ISOLATIONS = ("sandbox", "process", "in-process")
"""Where an agent file's Python runs; see the module docstring."""
# progress(done, total, label): `done` units of `total` finished (units: episode steps on the
# step-by-step path, members on the jitted path).
Progress = Callable[[int, int, str], None]

SCORE_DEFINITION = (
    "BRProx: per member (R - lower) / (upper - lower) of the agent's base episode return; "
    "per episode averaged over seatings; aggregates over (episodes x members) with rliable "
    "stratified bootstrap (runs = episodes, tasks = members)"
)
SCORE_DEFINITION_SEEDS = (
    "BRProx: per member (R - lower) / (upper - lower) of the agent's base episode return; "
    "per training seed (agent file) averaged over its episodes and seatings; aggregates over "
    "(seeds x members) with rliable stratified bootstrap (runs = training seeds, tasks = "
    "members)"
)


BYTES_PER_EPISODE_STEP = 16
"""Estimated bytes the jitted runner holds per step of one episode while it plays: the step's
key and a recorded joint action (rounded up)."""
BYTES_PER_EPISODE_FLOAT = 64
"""Estimated bytes per float of one episode's state and observations (float32, copied a few
times by XLA under vmap and scan)."""
BYTES_PER_RETURN = 128
"""Estimated bytes per episode return kept for the scores: float64 returns, normalised returns
and score matrix, the bootstrap's resample, the record's JSON text (rounded up)."""


def memory_estimate(env: Any, members: int, seatings: int, episodes: int) -> int:
    """Bytes an evaluation of `episodes` per member and seating needs at once, estimated: the
    jitted runner plays every seating's episodes of one member in one batch, each episode
    holding its steps' keys and actions (`BYTES_PER_EPISODE_STEP` per step of the horizon) and
    its state and observations (`BYTES_PER_EPISODE_FLOAT` per float of every seat's
    observation); the scores keep every return of every member (`BYTES_PER_RETURN`). A rule
    of thumb to refuse what cannot fit, not a measurement."""
    per_episode = BYTES_PER_EPISODE_STEP * int(env.horizon) + BYTES_PER_EPISODE_FLOAT * int(
        env.num_agents
    ) * int(env.obs_dim)
    return seatings * episodes * (per_episode + members * BYTES_PER_RETURN)


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation here (Linux: MemAvailable of
    /proc/meminfo; elsewhere the free physical pages), or None when unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


class SeedFilesError(ValueError):
    """Agent files given as the seeds of one agent that cannot be: the same file twice, two
    files with equal contents, or files that run on different runners."""


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _play_jax(
    policy: Any,
    params: Any,
    eval_set: EvaluationSet,
    num_episodes: int,
    seed: int,
    who: str,
    progress: Progress | None,
    sink: ReplaySink | None = None,
) -> np.ndarray:
    """(members, seatings, episodes) returns of a JAX policy; out-of-range actions raise.
    `sink` receives the joint actions of its first episodes (replays)."""
    env = eval_set.task.env
    try:
        rollout.check_policy_traces(policy, params, env.obs_dim)
    except Exception as e:  # the user's policy fails when vmapped: say so, no JAX traceback
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise AgentLoadError(
            f"{who}: the JAX policy cannot be vmapped over a batch of observations "
            f"({type(e).__name__}: {first}); act must work on one observation (obs_dim,) and "
            "be vmappable (no Python control flow on array values), or run the plain act "
            "with --isolate"
        ) from None
    agent = rollout.hashable_set(["agent"], [(policy, params)])
    mates = eval_set.teammates
    out = np.zeros((mates.size, len(eval_set.seatings), num_episodes))
    for m in range(mates.size):
        if progress is not None:
            label = "compiling and playing" if m == 0 else "playing"
            progress(m, mates.size, f"{label} {mates.names[m]}")
        played = rollout.play(
            eval_set.task,
            agent,
            0,
            mates,
            m,
            eval_set.seatings,
            num_episodes,
            seed,
            record=sink is not None,
        )
        bad = np.argwhere(played.bad_action >= 0)
        if bad.size:
            s, e = bad[0]
            raise AgentRuntimeError(
                f"{who}: the JAX policy's act returned action {int(played.bad_action[s, e])}, "
                f"outside [0, {env.num_actions}) of {eval_set.task_id} (teammate "
                f"{mates.names[m]}, seats {eval_set.seatings[s]}, episode {e}); return one "
                "int action in range, e.g. jax.random.categorical(key, logits)"
            )
        out[m] = played.returns
        if sink is not None and played.actions is not None:
            for s in range(len(eval_set.seatings)):
                for e in range(min(sink.episodes, num_episodes)):
                    start = {"runner": "jax", "seed": seed, "seating_index": s}
                    sink.add(m, s, e, start, played.actions[s, e], played.returns[s, e])
    if progress is not None:
        progress(mates.size, mates.size, "done")
    return out


def score_returns(
    returns: np.ndarray, eval_set: EvaluationSet, reps: int, seed: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """(normalised returns (members, seatings, episodes), interval estimates)."""
    normalized = scores.normalize(returns, eval_set.lower, eval_set.upper)
    estimates = scores.interval_estimates(scores.score_matrix(normalized), reps=reps, seed=seed)
    return normalized, estimates


def _set_block(eval_set: EvaluationSet) -> dict[str, Any]:
    manifest = eval_set.manifest or {}
    return {
        "id": eval_set.set_id,
        "version": manifest.get("version"),
        "manifest_sha256": eval_set.manifest_sha256,
        "development_set": eval_set.is_development,
    }


def _bootstrap_block(estimates: dict[str, Any]) -> dict[str, Any]:
    return {
        "reps": estimates["reps"],
        "confidence": estimates["confidence"],
        "seed": estimates["bootstrap_seed"],
        "method": "percentile",
    }


def build_record(
    *,
    agent: dict[str, Any],
    eval_set: EvaluationSet,
    returns: np.ndarray,
    num_episodes: int,
    seed: int,
    reps: int,
    meta: dict[str, Any],
) -> dict[str, Any]:
    """The result record (see `record`) of `returns` (members, seatings, episodes)."""
    from aht_bench import __version__

    normalized, estimates = score_returns(returns, eval_set, reps, seed)
    payload = {
        "package_version": __version__,
        "libraries": library_versions(),
        "task_id": eval_set.task_id,
        "agent": agent,
        "teammate_set": _set_block(eval_set),
        "protocol": {
            "episodes": num_episodes,
            "seed": seed,
            "seatings": [list(s) for s in eval_set.seatings],
            "score": SCORE_DEFINITION,
            "bootstrap": _bootstrap_block(estimates),
        },
        "members": member_entries(
            eval_set.names,
            eval_set.lower,
            eval_set.upper,
            returns,
            normalized,
            estimates["members"],
            eval_set.seatings,
        ),
        "aggregates": estimates["aggregates"],
    }
    return make_record(payload, meta)


def build_seeds_record(
    *,
    files: list[dict[str, Any]],
    runner: str,
    eval_set: EvaluationSet,
    isolation: str | None = None,
    returns: np.ndarray,
    num_episodes: int,
    seed: int,
    reps: int,
    meta: dict[str, Any],
) -> dict[str, Any]:
    """The multi-seed result record (see `record`) of `returns` (seeds, members, seatings,
    episodes) of the agent files `files` ([{"file", "sha256", "kind"}], in seed order)."""
    from aht_bench import __version__

    if returns.ndim != 4 or returns.shape[0] != len(files) or len(files) < 2:
        raise ValueError(
            f"returns of shape {returns.shape} do not match {len(files)} seed files (at least 2)"
        )
    normalized = np.stack([scores.normalize(r, eval_set.lower, eval_set.upper) for r in returns])
    matrix = scores.seed_score_matrix(normalized)
    estimates = scores.interval_estimates(matrix, reps=reps, seed=seed)
    payload = {
        "package_version": __version__,
        "libraries": library_versions(),
        "task_id": eval_set.task_id,
        "agent": {"files": files, "runner": runner}
        | ({} if isolation is None else {"isolation": isolation}),
        "teammate_set": _set_block(eval_set),
        "protocol": {
            "runs": RUNS_SEEDS,
            "episodes": num_episodes,
            "seed": seed,
            "seatings": [list(s) for s in eval_set.seatings],
            "score": SCORE_DEFINITION_SEEDS,
            "bootstrap": _bootstrap_block(estimates),
        },
        "members": seed_member_entries(
            eval_set.names,
            eval_set.lower,
            eval_set.upper,
            returns,
            normalized,
            matrix,
            estimates["members"],
            eval_set.seatings,
        ),
        "aggregates": estimates["aggregates"],
    }
    return make_record(payload, meta)


def evaluate_policy(
    policy: Any,
    params: Any,
    eval_set: EvaluationSet,
    *,
    name: str = "policy",
    num_episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
    reps: int = scores.DEFAULT_REPS,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The result record of a JAX policy (the `aht_bench.policies` protocol) on the jitted path."""
    start = time.perf_counter()
    returns = _play_jax(policy, params, eval_set, num_episodes, seed, name, progress)
    agent = {"file": name, "sha256": None, "kind": "jax", "runner": "jax"}
    meta = _meta(start, None)
    return build_record(
        agent=agent,
        eval_set=eval_set,
        returns=returns,
        num_episodes=num_episodes,
        seed=seed,
        reps=reps,
        meta=meta,
    )


def _meta(start: float, path: Path | None) -> dict[str, Any]:
    return {
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_seconds": round(time.perf_counter() - start, 2),
        "agent_path": None if path is None else str(path),
    }


def evaluate_agent_file(
    path: str | os.PathLike[str],
    eval_set: EvaluationSet,
    *,
    num_episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
    isolate: bool = False,
    isolation: str = "sandbox",
    limits: dict[str, Any] | None = None,
    reps: int = scores.DEFAULT_REPS,
    progress: Progress | None = None,
    on_loaded: Callable[[str, str], None] | None = None,
    replays: ReplaySink | None = None,
) -> dict[str, Any]:
    """The result record of the agent file `path` against `eval_set`; see the module docstring.

    `limits` are `IsolatedAgent` keyword arguments (load/step/total/boot timeouts,
    echo_output, memory_limit) used unless `isolation` is "in-process". `on_loaded(kind,
    runner)` is called once the agent is loaded (before the episodes). `replays` collects the
    joint actions of its first episodes (`ReplaySink.replays(record)` makes the replays); the
    record is the same with or without it.
    """
    start = time.perf_counter()
    _check_isolation(isolation, isolate)
    p = check_agent_path(path)
    sha = file_sha256(p)
    bundle = bundle_block(p)
    returns, agent_info = _play_agent_file(
        p, eval_set, num_episodes, seed, isolate, isolation, limits, progress, on_loaded, replays
    )
    agent = {"file": p.name, "sha256": sha, "bundle": bundle} | agent_info
    return build_record(
        agent=agent,
        eval_set=eval_set,
        returns=returns,
        num_episodes=num_episodes,
        seed=seed,
        reps=reps,
        meta=_meta(start, p),
    )


def _check_isolation(isolation: str, isolate: bool) -> None:
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATIONS)}, got {isolation!r}")
    if isolate and isolation == "in-process":
        raise ValueError("isolate=True (step by step in a worker) needs a worker: not in-process")


def bundle_block(path: Path) -> dict[str, Any]:
    """What a record keeps of the agent file's bundle, the files its sandbox shows it
    (`policies.bundle`): {"sha256", "files"}. Raises `AgentLoadError` naming the fix when the
    bundle cannot be made."""
    from aht_bench.policies.bundle import BundleError
    from aht_bench.policies.sandbox import shown_bundle

    try:
        return shown_bundle(path).summary()
    except BundleError as e:
        raise AgentLoadError(str(e)) from None


def check_seed_files(paths: list[Path]) -> None:
    """A `SeedFilesError` when two of the (resolved) seed files are one file or have equal
    contents: either would count one trained agent twice and narrow the CIs."""
    digests: dict[str, Path] = {}
    for i, p in enumerate(paths):
        if p in paths[:i]:
            raise SeedFilesError(
                f"agent file {p} is given twice; pass each training seed's file once"
            )
        digest = file_sha256(p)
        if digest in digests:
            raise SeedFilesError(
                f"agent files {digests[digest]} and {p} have the same contents (sha256 "
                f"{digest[:16]}...): they are one trained agent, not two seeds; pass each "
                "training seed's file once"
            )
        digests[digest] = p


def probe_agent_files(
    paths: Sequence[Path], task: Task, isolation: str, limits: dict[str, Any]
) -> None:
    """Import and check every agent file (.py) of `paths` where it will run (`isolation`:
    sandbox, process or this process), before the task is built and the teammates are loaded:
    a broken file fails in seconds, not after them (`agent_file.probe_agent_file`). `limits`
    as `evaluate_agent_files` takes them (load_timeout, echo_output, memory_limit are used).
    Raises what loading raises (`AgentLoadError`, `SandboxUnavailableError`)."""
    from aht_bench.policies.agent_file import probe_agent_file, probe_spec
    from aht_bench.policies.isolated import probe_isolated

    for path in paths:
        if path.suffix != ".py":
            continue  # a policy file runs no user code; loading it is its check
        if isolation == "in-process":
            probe_agent_file(path, probe_spec(task))
            continue
        memory = {"memory_limit": limits["memory_limit"]} if "memory_limit" in limits else {}
        probe_isolated(
            path,
            task,
            sandbox=isolation == "sandbox",
            load_timeout=limits["load_timeout"],
            echo_output=limits["echo_output"],
            **memory,
        )


def evaluate_agent_files(
    paths: Sequence[str | os.PathLike[str]],
    eval_set: EvaluationSet,
    *,
    num_episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
    isolate: bool = False,
    isolation: str = "sandbox",
    limits: dict[str, Any] | None = None,
    reps: int = scores.DEFAULT_REPS,
    progress: Progress | None = None,
    on_loaded: Callable[[int, str, str], None] | None = None,
    replays: ReplaySink | None = None,
) -> dict[str, Any]:
    """The result record of the agent files `paths`, the independently trained seeds of one
    agent, in seed order; with one path, exactly `evaluate_agent_file`'s record. `replays`
    collects the first file's episodes (see `evaluate_agent_file`).

    Every file plays the protocol one file would (`num_episodes`, `seed`, the set's seatings);
    the (seeds, members) score matrix gives the CIs (the multi-seed form of `record`).
    `on_loaded(index, kind, runner)` is called as each file is loaded; `progress` counts over
    all files. Raises `SeedFilesError` for a file given twice, two files with equal contents or
    files that would run on different runners (checked as each loads, before it plays).
    """
    files = [check_agent_path(p) for p in paths]
    if len(files) == 1:
        single = None if on_loaded is None else (lambda k, r: on_loaded(0, k, r))
        return evaluate_agent_file(
            files[0],
            eval_set,
            num_episodes=num_episodes,
            seed=seed,
            isolate=isolate,
            isolation=isolation,
            limits=limits,
            reps=reps,
            progress=progress,
            on_loaded=single,
            replays=replays,
        )
    start = time.perf_counter()
    _check_isolation(isolation, isolate)
    check_seed_files(files)
    bundles = [bundle_block(p) for p in files]
    runners: list[str] = []
    isolations: list[str] = []
    entries: list[dict[str, Any]] = []
    returns = []
    for i, p in enumerate(files):

        def loaded(kind: str, runner: str, i: int = i, p: Path = p) -> None:
            if runners and runner != runners[0]:
                raise SeedFilesError(
                    f"agent file {p.name} runs on the {runner} runner but {files[0].name} on "
                    f"the {runners[0]} runner: the seeds of one agent must run the same way "
                    "(the runners draw different start states); pass files of one kind, or "
                    "--isolate to run every file step by step"
                )
            if on_loaded is not None:
                on_loaded(i, kind, runner)

        played, info = _play_agent_file(
            p,
            eval_set,
            num_episodes,
            seed,
            isolate,
            isolation,
            limits,
            _seed_progress(progress, i, len(files)),
            loaded,
            replays if i == 0 else None,
        )
        runners.append(info["runner"])
        isolations.append(info["isolation"])
        entries.append(
            {"file": p.name, "sha256": file_sha256(p), "bundle": bundles[i], "kind": info["kind"]}
        )
        returns.append(played)
    return build_seeds_record(
        files=entries,
        runner=runners[0],
        # "policy-file" only if every file is one; else what the .py files ran in
        isolation=next((i for i in isolations if i != "policy-file"), isolations[0]),
        eval_set=eval_set,
        returns=np.stack(returns),
        num_episodes=num_episodes,
        seed=seed,
        reps=reps,
        meta=_meta_seeds(start, files),
    )


def _seed_progress(progress: Progress | None, index: int, count: int) -> Progress | None:
    """Progress of seed file `index` of `count`, as a share of all files (every file plays the
    same protocol on the same runner, so each reports the same total)."""
    if progress is None:
        return None

    def update(done: int, total: int, label: str) -> None:
        progress(index * total + done, count * total, f"seed {index}: {label}")

    return update


def _meta_seeds(start: float, paths: list[Path]) -> dict[str, Any]:
    return {
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_seconds": round(time.perf_counter() - start, 2),
        "agent_paths": [str(p) for p in paths],
    }


def _play_agent_file(
    p: Path,
    eval_set: EvaluationSet,
    num_episodes: int,
    seed: int,
    isolate: bool,
    isolation: str,
    limits: dict[str, Any] | None,
    progress: Progress | None,
    on_loaded: Callable[[str, str], None] | None,
    sink: ReplaySink | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """(returns (members, seatings, episodes), {"kind", "runner", "isolation"}) of the agent
    file `p`; see the module docstring."""
    task = eval_set.task
    first_seat = eval_set.seatings[0][0]
    specs: dict[int, Any] = {}

    def spec(seat: int) -> Any:
        if seat not in specs:
            specs[seat] = task_spec(task, seat)
        return specs[seat]

    total_steps = _total_steps(eval_set, num_episodes)
    who = f"agent file {p.name}"
    if p.suffix == POLICY_SUFFIX or isolation == "in-process":
        # a policy file runs none of the user's code: its loader is ours (safetensors + card)
        where = "policy-file" if p.suffix == POLICY_SUFFIX else "in-process"
        loaded = load_agent_file(p, task, first_seat, seed=seed, spec=spec(first_seat))
        if loaded.jax is not None and not isolate:
            if on_loaded is not None:
                on_loaded(loaded.kind, "jax")
            policy, params = loaded.jax
            returns = _play_jax(policy, params, eval_set, num_episodes, seed, who, progress, sink)
            return returns, {"kind": loaded.kind, "runner": "jax", "isolation": where}
        if on_loaded is not None:
            on_loaded(loaded.kind, "python")

        def make_in_process(seat: int) -> Any:
            if seat == first_seat:
                return loaded
            return load_agent_file(p, task, seat, seed=seed, spec=spec(seat))

        returns = play_python(
            make_in_process,
            eval_set,
            num_episodes,
            seed,
            _steps_progress(progress, total_steps),
            sink,
        )
        return returns, {"kind": loaded.kind, "runner": "python", "isolation": where}

    from aht_bench.policies.isolated import DEFAULT_MAX_OUTPUT, IsolatedAgent, OutputBudget

    options: dict[str, Any] = dict(limits or {}) | {"sandbox": isolation == "sandbox"}
    options["total_since"] = time.monotonic()  # one total for every worker of this file
    # one output bound for the whole evaluation, not one per seating's worker
    options["max_output"] = OutputBudget(options.get("max_output", DEFAULT_MAX_OUTPUT))
    first = IsolatedAgent(p, task, first_seat, seed=seed, spec=spec(first_seat), **options)
    kind = str(first.kind)
    if first.info.get("has_jax") and not isolate:
        try:
            policy, params = first.export_jax()
        finally:
            first.close()
        if on_loaded is not None:
            on_loaded(kind, "jax")
        with _compiled_deadline(p, options.get("total_timeout"), options["total_since"]):
            returns = _play_jax(policy, params, eval_set, num_episodes, seed, who, progress, sink)
        return returns, {"kind": kind, "runner": "jax", "isolation": isolation}
    if on_loaded is not None:
        on_loaded(kind, "python-isolated")
    pending = [first]

    def make_isolated(seat: int) -> Any:
        if pending and seat == first_seat:
            return pending.pop()
        return IsolatedAgent(p, task, seat, seed=seed, spec=spec(seat), **options)

    try:
        returns = play_python(
            make_isolated,
            eval_set,
            num_episodes,
            seed,
            _steps_progress(progress, total_steps),
            sink,
        )
    finally:
        first.close()
    return returns, {"kind": kind, "runner": "python-isolated", "isolation": isolation}


def _compiled_deadline(
    path: Path, total_timeout: float | None, since: float
) -> contextlib.AbstractContextManager[Any]:
    """What bounds the play of agent file `path`'s exported policy: the rest of its total time
    limit (counted from `since`), held by a `Watchdog`; no limit when `total_timeout` is None.
    Raises `AgentStepTimeoutError` when the limit is used up already."""
    if total_timeout is None:
        return contextlib.nullcontext()
    how = (
        "raise it with --total-timeout, or make the policy's loops end on every key and "
        "observation (a lax.while_loop that never ends hangs its compiled play)"
    )
    remaining = since + total_timeout - time.monotonic()
    if remaining <= 0:
        raise AgentStepTimeoutError(
            f"agent file {path.name} used up its total time limit of {total_timeout:g}s before "
            f"its JAX policy played; {how}"
        )
    return Watchdog(
        remaining,
        f"agent file {path.name} used up its total time limit of {total_timeout:g}s while its "
        f"compiled JAX policy played (compiled code cannot be interrupted, so the evaluation "
        f"was ended and nothing was written); {how}",
        DEADLINE_EXIT_CODE,
    )


def _total_steps(eval_set: EvaluationSet, num_episodes: int) -> int:
    env = eval_set.task.env
    return eval_set.teammates.size * len(eval_set.seatings) * num_episodes * env.horizon


def _steps_progress(progress: Progress | None, total: int) -> Any:
    """Adapt step counts of the step-by-step runner to `progress(done, total, label)`."""
    if progress is None:
        return None
    done = [0]

    def update(steps: int, label: str) -> None:
        done[0] += steps
        progress(done[0], total, label)

    return update


def cross_play(
    task: str | Task,
    rows: TeammateSet,
    cols: TeammateSet,
    seatings: tuple[tuple[int, ...], ...],
    num_episodes: int = DEFAULT_EPISODES,
    seed: int = 0,
    progress: Progress | None = None,
) -> np.ndarray:
    """Returns of every row policy (in the agent's seats) with every column policy: float64
    (rows, cols, seatings, episodes). One compile serves the whole matrix (both sides are
    traced member indices). `task`: a `Task`, or an id or alias (resolved here)."""
    task = envs.task(task)
    rows = rollout.hashable_set(rows.names, list(zip(rows.policies, rows.params, strict=True)))
    cols = rollout.hashable_set(cols.names, list(zip(cols.policies, cols.params, strict=True)))
    out = np.zeros((rows.size, cols.size, len(seatings), num_episodes))
    total = rows.size * cols.size
    for i in range(rows.size):
        for j in range(cols.size):
            if progress is not None:
                progress(i * cols.size + j, total, f"{rows.names[i]} with {cols.names[j]}")
            out[i, j] = rollout.play(task, rows, i, cols, j, seatings, num_episodes, seed).returns
    if progress is not None:
        progress(total, total, "done")
    return out
