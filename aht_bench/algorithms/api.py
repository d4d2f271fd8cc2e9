"""The method contract: what a training method is, as data, and its loop written once over it.
Every method `aht-bench train` runs is one `Method`: ROTATE and the paper's baselines, whose step
is one open-ended iteration (paper Alg. 1, `schedule=ITERATIONS`, the default), and the PPO
stages ippo, br and ego, whose step is `updates_per_call` PPO updates (`schedule=UPDATES`;
`aht_bench.algorithms.fixed_partner`).

A method module declares its config type (a frozen dataclass with `TaskConfig`'s fields and
properties), its setup (a `MethodSetup`: the env, networks, pairings and optimiser a run derives
from its config), its presets, and one `Method`:

    METHOD = Method(
        name="ROTATE",        # in messages
        presets=PRESETS,      # preset name -> task id -> config
        setup=setup,          # config -> the run's setup, `.networks.ego` among its parts
        init=init,            # (key, setup) -> the state of one seed
        step=step,            # (state, setup, done) -> (state, metrics): iteration done + 1 of
                              #   every seed (leading seed axis)
        population=population,  # (state, setup, seed) -> the population it publishes
        report=REPORT,        # the curves and progress metrics of a run
        exhausted="raise iterations= ...",  # how to go on once every iteration is done
    )
    init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()

`Method.iterate` is one open-ended iteration for every seed: the check that the run has an
iteration left, the method's `step`, and the metrics every method reports (`iteration`,
`population_size` where the state has a buffer, cumulative `env_steps`), on host.
`init_seeds`, `run`, `train`, `preset`, `ego_params`, `networks` and `population` are the same
for every method; the module binds them to its own names (`Method.bound`). They take a config,
or the run's setup (`Method.setup`, a `MethodSetup`) to use one built before: `run` and `train`
build the setup once for all their iterations, and the run driver (`aht_bench.runs`,
`aht-bench train`) once per run. The driver drives a `Method` and nothing else of the module.

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

import jax
import numpy as np

from aht_bench.algorithms.common import (
    iterations_done,
    require_at_least,
    stack_seeds,
    stack_trees,
)
from aht_bench.envs import Task
from aht_bench.envs.wrappers import AutoReset
from aht_bench.policies.core import Params
from aht_bench.policies.population import Population
from aht_bench.training.config import (
    EgoConfig,
    check_hidden,
    normalise_shaping,
    require,
    resolve_task_id,
)
from aht_bench.training.driver import updates_done
from aht_bench.training.presets import lookup
from aht_bench.training.report import Report
from aht_bench.training.rollout import init_params
from aht_bench.training.setup import Setup

C = TypeVar("C")
S = TypeVar("S")
Metrics = dict[str, np.ndarray]
"""name -> (num_seeds,) host array: what one iteration reports."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskConfig:
    """The fields every iteration-based method's config shares, checked once; a config adds its
    own fields and its number of `iterations` (a field or a property)."""

    task_id: str
    """Registered task id or alias of a two-player task; the config stores the id an alias
    names."""
    shaped_reward_coef: float = 1.0
    """Training reward is `base + shaped_reward_coef * shaped` for every learner."""
    shaping: tuple[tuple[str, float], ...] = ()
    """Overcooked only: shaped-reward coefficients that replace the paper's for every learner
    (as `RunConfig.shaping`, e.g. (("counter_pickup", 0.0),)); () keeps the paper's."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_id", resolve_task_id(self.task_id))
        object.__setattr__(self, "shaping", normalise_shaping(self.task_id, self.shaping))
        coef = self.shaped_reward_coef
        require(coef >= 0, "shaped_reward_coef", coef, "use a value >= 0")

    @property
    def task_fields(self) -> dict[str, Any]:
        """The task fields (task id, shaping) that every stage config of the run shares."""
        fields = ("task_id", "shaped_reward_coef", "shaping")
        return {name: getattr(self, name) for name in fields}

    def ego_stage(self, num_envs: int, rollout_length: int, seat: int) -> EgoConfig:
        """The ego stage of a config that holds it as flat `ego_timesteps`, `ego_ppo` and
        `ego_hidden` fields, with `num_envs` x `rollout_length` rollouts, the ego in `seat`."""
        return EgoConfig(
            total_timesteps=self.ego_timesteps,  # type: ignore[attr-defined]
            ppo=self.ego_ppo,  # type: ignore[attr-defined]
            hidden=self.ego_hidden,  # type: ignore[attr-defined]
            num_envs=num_envs,
            rollout_length=rollout_length,
            learner_seat=seat,
            **self.task_fields,
        )

    @property
    def env_steps_per_iteration(self) -> int:
        """Joint env steps of one iteration (a config whose iterations differ in size, a
        two-stage method's, gives its largest)."""
        raise NotImplementedError

    def env_steps_after(self, done: int) -> int:
        """Joint env steps per seed after `done` iterations (every iteration the same size
        unless a config says otherwise)."""
        return done * self.env_steps_per_iteration


BR_HEAD = 0
"""The teammate's value head for returns with its best response, in every method of a
`TeammateBRConfig` (ROTATE's `sigma^{-i,BR}`; CoMeDi's SP and MP)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class TeammateBRConfig(TaskConfig):
    """`TaskConfig` plus the architectures of a method that trains each teammate beside its best
    response, for a recurrent ego (`common.teammate_networks`: ROTATE, CoMeDi, PAIRED), checked
    once."""

    teammate_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the teammates' actor and critic MLPs."""
    best_response_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the best responses' actor and critic MLPs."""
    ego_hidden: int = 64
    """GRU state size of the ego agent."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_hidden(self, "teammate_hidden", "best_response_hidden")
        require_at_least(self, 1, "ego_hidden")


@dataclasses.dataclass(frozen=True, eq=False)
class MethodSetup(Setup):
    """What an iteration-based method derives from its config once, by its `setup(config)`,
    and passes to every phase (a `Setup`: it compares and hashes as the config). A method with
    more parts derives from it (PAIRED's ego optimiser)."""

    env: AutoReset
    """The task under the config's shaping, p0 starts (`make_env`)."""
    networks: Any
    """The method's architectures; `.ego` is the ego agent's."""
    pairings: Any = None
    """Who plays the method's rollouts: a `Pairing`, or a NamedTuple of them."""
    param_shapes: Any = None
    """The params the method keeps per buffer slot, as ShapeDtypeStructs."""
    optimizer: Any = None
    """The optax optimiser its teammate-generation learners train with."""


class Result(NamedTuple, Generic[S]):
    """What `Method.train` and `Method.run` return."""

    state: S
    """The final state, every leaf with a leading (num_seeds,) axis."""
    metrics: dict[str, np.ndarray]
    """name -> (num_seeds, steps run: iterations, or PPO updates); NaN in steps that do not
    report it (a two-stage method's stages report different metrics)."""
    kept: dict[int, Any] = {}
    """step -> the trained params (`Method.ego`, leading seed axis, on host) after the steps
    the method keeps (`Method.keeps`: IPPO's `checkpoint_updates`, FCP's pool)."""


class Schedule(NamedTuple):
    """How a run of a method counts its steps: what one metrics line, checkpoint and progress
    bar tick is (`unit`), how many a state has done and a run has, how many one `iterate`
    advances, the env steps after a number of them, and how often the run driver checkpoints.
    Two exist: `ITERATIONS` (one outer-loop iteration per call: ROTATE and the baselines) and
    `UPDATES` (`updates_per_call` PPO updates per call: ippo, br, ego)."""

    unit: str
    """"iteration" or "update": metrics lines, checkpoint names, messages."""
    bar_unit: str
    """The progress bar's unit."""
    checkpoint_every_call: bool
    """A checkpoint after every call (else on the run driver's time schedule)."""
    done: Callable[[Any], int]
    """Steps a (seed-stacked) state has done."""
    total: Callable[[Any], int]
    """Steps of a whole run of a config."""
    per_call: Callable[[Any], int]
    """Steps one `Method.iterate` advances, under a config."""
    env_steps: Callable[[Any, int], int]
    """Joint env steps per seed after a number of steps, under a config."""
    plan: Callable[[Any], dict[str, int]]
    """A run's size under a config, for its run.json."""


def _iteration_env_steps(config: Any, done: int) -> int:
    # a config whose iterations differ in size (a two-stage method) says how many
    if hasattr(config, "env_steps_after"):
        return int(config.env_steps_after(done))
    return done * config.env_steps_per_iteration


ITERATIONS = Schedule(
    unit="iteration",
    bar_unit="it",
    checkpoint_every_call=True,
    done=iterations_done,
    total=lambda config: int(config.iterations),
    per_call=lambda config: 1,
    env_steps=_iteration_env_steps,
    plan=lambda config: {
        "num_iterations": config.iterations,
        "env_steps_per_iteration": config.env_steps_per_iteration,
    },
)
"""One open-ended iteration per call (Alg. 1's loop body); every iteration checkpointed."""

UPDATES = Schedule(
    unit="update",
    bar_unit="upd",
    checkpoint_every_call=False,
    done=updates_done,
    total=lambda config: int(config.num_updates),
    per_call=lambda config: int(config.updates_per_call),
    env_steps=lambda config, done: done * config.batch_size,
    plan=lambda config: {"num_updates": config.num_updates, "batch_size": config.batch_size},
)
"""`updates_per_call` PPO updates per call (one jitted call of
`aht_bench.training.driver.update_seeds`); checkpoints on the run driver's time schedule."""


def seed_of(tree: Any, seed: int | None) -> Any:
    """`tree` on host as numpy arrays, seed `seed` of its leading seed axis (`None`: an
    unbatched tree, all of it)."""
    host = jax.device_get(tree)
    return jax.tree.map(lambda x: np.asarray(x if seed is None else x[seed]), host)


def fresh_params(network: Any, keys: jax.Array) -> Params:
    """`network`'s initial params for each key of `keys`, stacked on a leading seed axis.

    Built one seed at a time outside jit: a vmapped `MLPActorCritic.init` never returns on CPU
    (see `aht_bench.training.rollout.init_params`)."""
    return stack_trees([init_params(network, k) for k in keys])


def buffer_population(
    buffer: Any, members: str, network: Any, seed: int | None, name: str = "population"
) -> Population:
    """The filled slots (`buffer.count` of them, oldest first) of `buffer.<members>` of one
    seed as a `Population` of `network` (host arrays), ready for `save_population`; a
    ValueError that names the buffer (`name`) if no slot is filled yet."""
    host = jax.device_get(buffer)
    if seed is not None:
        host = jax.tree.map(lambda x: x[seed], host)
    count = int(host.count)
    if count == 0:
        raise ValueError(f"the {name} is empty: run at least one iteration first")
    filled = jax.tree.map(lambda x: np.asarray(x[:count]), getattr(host, members))
    return Population(network, filled)


def _ego_of(state: Any) -> Params:
    return state.ego


def _ego_and_teammates(method: Method[Any, Any], state: Any) -> dict[str, Any]:
    return {"the ego's": method.ego(state), "the generated teammates'": state.buffer}


def _ego_and_population(
    method: Method[Any, Any], state: Any, setup: Any, seed: int, kept: bool
) -> list[tuple[str, Any]]:
    """The files of an iteration method's seed: its ego and (at the end, not in a snapshot
    during the run: a population of every iteration would grow quadratically) the population
    it publishes."""
    files: list[tuple[str, Any]] = [("ego", (setup.networks.ego, method.ego_params(state, seed)))]
    if not kept:
        files.append(("population", method.population(state, setup, seed)))
    return files


def _keeps_nothing(config: Any, done: int) -> bool:
    return False


def _concatenate(history: list[Metrics]) -> Metrics:
    """Each metric of the calls `history` ((num_seeds, steps) each) side by side: (num_seeds,
    steps run), NaN in the calls that do not report it."""
    names = list(dict.fromkeys(k for m in history for k in m))
    blanks = [np.full(next(iter(m.values())).shape, np.nan) for m in history]
    return {
        k: np.concatenate([m.get(k, b) for m, b in zip(history, blanks, strict=True)], axis=1)
        for k in names
    }


class Bound(NamedTuple):
    """A method's functions by name, as its module binds them (`Method.bound`); the same
    fields in the same order as the module's line `init_seeds, iterate, ... = METHOD.bound()`."""

    init_seeds: Callable[..., Any]
    iterate: Callable[..., tuple[Any, Metrics]]
    run: Callable[..., Result[Any]]
    train: Callable[..., Result[Any]]
    ego_params: Callable[..., Params]
    preset: Callable[..., Any]
    networks: Callable[..., Any]
    population: Callable[..., Population]


@dataclasses.dataclass(frozen=True)
class Method(Generic[C, S]):
    """A training method (module docstring): the fields up to `exhausted` every method gives;
    the rest default to an iteration method's (ROTATE's and the baselines')."""

    name: str
    """The method's name in messages ("ROTATE")."""
    presets: Mapping[str, Mapping[str, C]]
    """preset name -> task id -> config."""
    setup: Callable[[C], MethodSetup]
    """The run's setup (its `networks.ego` is the ego's architecture), built from its
    config."""
    init: Callable[..., S]
    """A fresh state of one seed, given its key, the setup and the run's inputs, if any (br's
    and ego's teammates). An iteration method's state has `iteration` (() int32, iterations
    done) and `ego`."""
    step: Callable[[S, Any, int], tuple[S, Mapping[str, Any]]]
    """Iteration `done + 1` of every seed (leading seed axis), given the setup and `done`, the
    iterations done: the new state (its `iteration` advanced) and the method's own metrics,
    (num_seeds,) arrays."""
    population: Callable[[S, Any, int | None], Population]
    """The population the method publishes of one seed (its generated teammates; ippo: the
    team), given the setup (docs/training.md "Words")."""
    report: Report
    """How `aht-bench train` shows a run."""
    exhausted: str
    """What to do once every iteration is done (appended to the error `iterate` raises)."""
    ego: Callable[[S], Params] = _ego_of
    """Where the params the run trains are in a state: the ego's (`state.ego` unless said
    otherwise); ippo's, br's and ego's learners."""
    schedule: Schedule = ITERATIONS
    """How a run counts its steps: outer-loop iterations, or PPO updates (ippo, br, ego)."""
    checked: Callable[[Method[Any, Any], S], dict[str, Any]] = _ego_and_teammates
    """(method, state) -> whose params (a phrase) -> the params that must stay finite."""
    files: Callable[[Method[Any, Any], S, Any, int, bool], list[tuple[str, Any]]] = (
        _ego_and_population
    )
    """(method, state, setup, seed, kept) -> the policy files of one seed: (name, a
    `Population` or (network, params)), written as `seed<seed>-<name>.safetensors` (a name ""
    writes `seed<seed>.safetensors`); `kept`: a snapshot during the run."""
    keeps: Callable[[C, int], bool] = _keeps_nothing
    """(config, steps done) -> whether the run keeps the trained params after that step
    besides the end (`Result.kept`, the run driver's `policies/<unit>-NNNNNN/`)."""

    def preset(self, name: str, task: str | Task, **overrides: Any) -> C:
        """The `name` config of the method on `task` (a `Task`, or an id or alias); keyword
        `overrides` replace fields, and the result is validated like any config."""
        return lookup(self.name, self.presets, name, task, **overrides)

    def setup_of(self, config: C | MethodSetup) -> MethodSetup:
        """`config`'s setup, built now; a setup is returned as it is."""
        return config if isinstance(config, MethodSetup) else self.setup(config)

    def networks(self, config: C | MethodSetup) -> Any:
        """The architectures of a run (`.ego` is the ego agent's)."""
        return self.setup_of(config).networks

    def published(self, state: S, config: C | MethodSetup, seed: int | None = 0) -> Population:
        """The population the method publishes of one seed (`seed=None`: an unbatched state),
        as host arrays ready for `aht_bench.policies.save_population`."""
        return self.population(state, self.setup_of(config), seed)

    def init_seeds(
        self, key: jax.Array, config: C | MethodSetup, num_seeds: int = 1, inputs: tuple = ()
    ) -> S:
        """`init` for seeds `split(key, num_seeds)`, stacked on a leading seed axis; `inputs`
        follow the setup in every `init` call (br's and ego's teammates)."""
        return stack_seeds(self.init, key, self.setup_of(config), num_seeds, *inputs)

    def iterate(self, state: S, config: C | MethodSetup) -> tuple[S, Metrics]:
        """One call of every seed: the method's `step`, on host. An iteration method's call is
        one open-ended iteration (Alg. 1's loop body), its metrics (num_seeds,) arrays with
        `iteration`, `population_size` (where the state has a buffer with a count) and
        `env_steps` (cumulative, per seed) added; an update method's is `updates_per_call` PPO
        updates, its metrics (num_seeds, updates_per_call)."""
        setup = self.setup_of(config)
        config = setup.config
        done = self.schedule.done(state)
        total = self.schedule.total(config)
        if done >= total:
            unit = self.schedule.unit
            raise ValueError(f"the run has done all {total} {unit}s; {self.exhausted}")
        state, metrics = self.step(state, setup, done)
        out = {k: np.asarray(v) for k, v in jax.device_get(dict(metrics)).items()}
        if self.schedule is not ITERATIONS:
            return state, out
        iteration = np.asarray(jax.device_get(state.iteration))  # type: ignore[attr-defined]
        out["iteration"] = iteration
        buffer = getattr(state, "buffer", None)
        if "count" in getattr(buffer, "_fields", ()):
            out["population_size"] = np.asarray(jax.device_get(buffer.count))  # type: ignore[union-attr]
        env_steps = config.env_steps_after(done + 1)  # type: ignore[attr-defined]
        out["env_steps"] = np.full_like(iteration, env_steps, dtype=np.int64)
        return state, out

    def run(
        self,
        state: S,
        config: C | MethodSetup,
        iterations: int | None = None,
        on_iteration: Callable[[int, S, Metrics], None] | None = None,
    ) -> Result[S]:
        """`iterations` calls of `iterate` (default: the rest of the run) from `state`, in
        memory; `on_iteration(steps done, state, metrics)` after each (continuing from any state
        it saw is bit-identical to not stopping); the trained params after each step the method
        `keeps`."""
        setup = self.setup_of(config)
        history: list[Metrics] = []
        kept: dict[int, Any] = {}
        for done, new_state, metrics in self.calls(state, setup, iterations):
            state = new_state
            history.append(self.per_step(metrics))
            if self.keeps(setup.config, done):
                kept[done] = jax.device_get(self.ego(state))
            if on_iteration is not None:
                on_iteration(done, state, metrics)
        return Result(state, _concatenate(history), kept)

    def calls(
        self, state: S, config: C | MethodSetup, iterations: int | None = None
    ) -> Iterator[tuple[int, S, Metrics]]:
        """The one loop over a run's calls: `iterations` calls of `iterate` (default: the rest
        of the run) from `state`, yielding `(steps done, state, metrics)` after each. `run`
        consumes it in memory, the run driver (`aht_bench.runs`) on disk."""
        setup = self.setup_of(config)
        schedule, run_config = self.schedule, setup.config
        done, per_call = schedule.done(state), schedule.per_call(run_config)
        if iterations is None:
            left = schedule.total(run_config) - done
            if left % per_call:
                unit = schedule.unit
                raise ValueError(f"{left} {unit}s left is not a multiple of one call's {per_call}")
            iterations = left // per_call
        for _ in range(int(iterations)):
            state, metrics = self.iterate(state, setup)
            done += per_call
            yield done, state, metrics

    def train(
        self,
        key: jax.Array,
        config: C | MethodSetup,
        num_seeds: int = 1,
        on_iteration: Callable[[int, S, Metrics], None] | None = None,
        inputs: tuple = (),
    ) -> Result[S]:
        """A whole run for `num_seeds` seeds at once (seed i from `split(key, num_seeds)[i]`;
        `inputs`: what `init` takes after the setup, br's and ego's teammates)."""
        setup = self.setup_of(config)
        state = self.init_seeds(key, setup, num_seeds, inputs)
        return self.run(state, setup, on_iteration=on_iteration)

    def per_step(self, metrics: Metrics) -> Metrics:
        """One call's metrics as (num_seeds, steps of the call, ...): an iteration method's
        call is one step."""
        if self.schedule is ITERATIONS:
            return {k: np.expand_dims(v, 1) for k, v in metrics.items()}
        return metrics

    def bound(self) -> Bound:
        """`init_seeds`, `iterate`, `run`, `train`, `ego_params`, `preset`, `networks` and
        `published` (as `population`), named (`Bound`), for the method's module to bind to
        those names (`rotate.train(key, config)`)."""
        return Bound(
            init_seeds=self.init_seeds,
            iterate=self.iterate,
            run=self.run,
            train=self.train,
            ego_params=self.ego_params,
            preset=self.preset,
            networks=self.networks,
            population=self.published,
        )

    def ego_params(self, state: S, seed: int | None = 0) -> Params:
        """The ego's params of one seed (host arrays; `seed=None` for an unbatched state); the
        network is `setup(config).networks.ego`."""
        return seed_of(self.ego(state), seed)
