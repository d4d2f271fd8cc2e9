"""Training configs: frozen, typed dataclasses, validated at construction.

`PPOConfig` holds the PPO hyperparameters every learner shares (the rows of the paper's tables in
App. "Hyperparameters"); `IPPOConfig`, `EgoConfig` and `BRConfig` add what one algorithm run
needs (task, budget, parallel envs, network). Derived numbers (`batch_size`, `num_updates`, ...)
are properties, never stored. Configs are hashable, so they are static arguments of jitted
functions: two equal configs share one compiled update. Presets live in
`aht_bench.training.presets`.

A "timestep" is one joint environment step (all seats act once), as in the paper's tables.

May import the standard library and aht_bench.envs only.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def require(ok: bool, field: str, got: Any, fix: str) -> None:
    """Raise `ValueError("<field>=<got> is invalid: <fix>")` unless `ok`."""
    if not ok:
        raise ValueError(f"{field}={got!r} is invalid: {fix}")


def check_hidden(config: Any, *names: str) -> None:
    """Turn the hidden-size fields `names` of a frozen `config` (MLP layer sizes) into tuples of
    ints and check that each has at least one layer, every size >= 1."""
    for name in names:
        sizes = tuple(int(h) for h in getattr(config, name))
        object.__setattr__(config, name, sizes)
        require(
            len(sizes) >= 1 and min(sizes) >= 1, name, sizes, "give at least one layer size >= 1"
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class PPOConfig:
    """PPO hyperparameters of one learner (paper App. "Hyperparameters"; Adam, as in the paper)."""

    learning_rate: float = 1e-4
    """Adam step size (tables: LR)."""
    anneal_lr: bool = True
    """Decay the step size linearly to 0 over the run, once per update (tables: Anneal LR)."""
    num_epochs: int = 15
    """Passes over each update's data (tables: Epochs)."""
    num_minibatches: int = 4
    """Minibatches per epoch (tables: Minibatches); must divide the batch (see the run configs)."""
    clip_eps: float = 0.2
    """PPO ratio clip epsilon of Eq. (ppo_clip_loss) (tables: Clip-Eps)."""
    ent_coef: float = 0.01
    """Weight of the entropy loss, Eq. (ent_loss) (tables: Ent-Coef)."""
    vf_coef: float = 0.5
    """Weight of the value loss, Eq. (val_loss) (not in the paper; PureJaxRL's value)."""
    max_grad_norm: float = 0.5
    """Clip the global gradient norm to this (not in the paper; PureJaxRL's value)."""
    gamma: float = 0.99
    """Discount factor (paper: 0.99 for all experiments)."""
    gae_lambda: float = 0.95
    """GAE lambda (paper: 0.95 for all experiments)."""
    normalize_advantages: bool = True
    """Standardise each stream's advantages per minibatch before weights and signs apply."""

    def __post_init__(self) -> None:
        require(self.learning_rate > 0, "learning_rate", self.learning_rate, "use a value > 0")
        require(self.num_epochs >= 1, "num_epochs", self.num_epochs, "use at least 1")
        require(
            self.num_minibatches >= 1, "num_minibatches", self.num_minibatches, "use at least 1"
        )
        require(self.clip_eps > 0, "clip_eps", self.clip_eps, "use a value > 0 (e.g. 0.2)")
        require(self.ent_coef >= 0, "ent_coef", self.ent_coef, "use a value >= 0")
        require(self.vf_coef >= 0, "vf_coef", self.vf_coef, "use a value >= 0")
        require(
            self.max_grad_norm > 0,
            "max_grad_norm",
            self.max_grad_norm,
            "use a value > 0 (e.g. 0.5)",
        )
        require(0.0 <= self.gamma <= 1.0, "gamma", self.gamma, "use a value in [0, 1]")
        require(
            0.0 <= self.gae_lambda <= 1.0, "gae_lambda", self.gae_lambda, "use a value in [0, 1]"
        )


def resolve_task_id(task_id: str) -> str:
    """The registered id that `task_id` (an id or an alias) names, or a ValueError that names
    the field and suggests ids. Configs store this id, so an alias is resolved once, when the
    config is built, and a saved config names the version it ran on."""
    from aht_bench.envs import registry

    try:
        return registry.resolve(task_id)
    except registry.UnknownTaskError as e:
        raise ValueError(f"task_id={task_id!r} is invalid: {e}") from None


def normalise_shaping(task_id: str, shaping: Any) -> tuple[tuple[str, float], ...]:
    """`shaping` as ((name, float), ...) pairs (a repeated name: its last value), or a
    ValueError naming the fix: names of `aht_bench.envs.overcooked.PAPER_SHAPING`, on an
    Overcooked task only."""
    from aht_bench.envs import registry
    from aht_bench.envs.overcooked import PAPER_SHAPING

    pairs = tuple((str(k), float(v)) for k, v in dict(shaping).items())
    if pairs:
        require(
            registry.resolve(task_id).startswith("overcooked-"),
            "shaping",
            pairs,
            "shaped-reward coefficients exist only on the Overcooked tasks; use ()",
        )
        unknown = sorted({k for k, _ in pairs} - set(PAPER_SHAPING))
        require(
            not unknown,
            "shaping",
            pairs,
            f"unknown coefficients {unknown}; choose from {sorted(PAPER_SHAPING)}",
        )
    return pairs


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunConfig:
    """What every PPO run has: a task, a budget, parallel envs and the PPO hyperparameters."""

    task_id: str
    """Registered task id or alias (`aht_bench.envs.registered_ids()`); the config stores the
    id an alias names."""
    total_timesteps: int
    """Budget in joint env steps; the run does `num_updates` full updates within it."""
    num_envs: int
    """Parallel environments per seed (tables: Num Envs)."""
    rollout_length: int
    """Env steps per env between two updates (not in the paper's tables)."""
    ppo: PPOConfig = PPOConfig()
    """PPO hyperparameters of the learner(s)."""
    shaped_reward_coef: float = 1.0
    """Training reward is `base + shaped_reward_coef * shaped` (paper: shaped reward on)."""
    checkpoint_updates: tuple[int, ...] = ()
    """Keep the learners' params after these update numbers (1-based), e.g. for a pool of
    snapshots."""
    updates_per_call: int = 1
    """PPO updates per jitted call (fewer host round trips); must divide `num_updates`."""
    shaping: tuple[tuple[str, float], ...] = ()
    """Overcooked only: shaped-reward coefficients that replace the paper's, as (name, value)
    pairs of `aht_bench.envs.overcooked.ShapingParams` (e.g. (("onion_on_counter", 0.5),) for
    the heldout `ippo_mlp_pass` teammates, (("counter_pickup", 0.0),) for the heldout
    forced_coord set); () keeps the paper's."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_id", resolve_task_id(self.task_id))
        object.__setattr__(self, "shaping", normalise_shaping(self.task_id, self.shaping))
        require(self.num_envs >= 1, "num_envs", self.num_envs, "use at least 1")
        require(self.rollout_length >= 1, "rollout_length", self.rollout_length, "use at least 1")
        require(
            self.total_timesteps >= self.batch_size,
            "total_timesteps",
            self.total_timesteps,
            f"one update needs num_envs * rollout_length = {self.batch_size} timesteps; "
            "raise the budget or lower num_envs/rollout_length",
        )
        require(
            self.shaped_reward_coef >= 0,
            "shaped_reward_coef",
            self.shaped_reward_coef,
            "use a value >= 0",
        )
        require(
            self.updates_per_call >= 1, "updates_per_call", self.updates_per_call, "use at least 1"
        )
        require(
            self.num_updates % self.updates_per_call == 0,
            "updates_per_call",
            self.updates_per_call,
            f"it must divide num_updates = {self.num_updates}",
        )
        object.__setattr__(self, "checkpoint_updates", tuple(self.checkpoint_updates))
        for k in self.checkpoint_updates:
            require(
                1 <= k <= self.num_updates,
                "checkpoint_updates",
                self.checkpoint_updates,
                f"update numbers run from 1 to num_updates = {self.num_updates}",
            )
            require(
                k % self.updates_per_call == 0,
                "checkpoint_updates",
                self.checkpoint_updates,
                f"each must be a multiple of updates_per_call = {self.updates_per_call}",
            )
        require(
            self.minibatch_units % self.ppo.num_minibatches == 0,
            "ppo.num_minibatches",
            self.ppo.num_minibatches,
            f"it must divide the {self.minibatch_units} {self._minibatch_unit_name} of "
            "a batch; change num_minibatches, num_envs or rollout_length",
        )

    @property
    def batch_size(self) -> int:
        """Joint env steps per update: `num_envs * rollout_length`."""
        return self.num_envs * self.rollout_length

    @property
    def num_updates(self) -> int:
        """PPO updates in the run: `total_timesteps // batch_size`."""
        return self.total_timesteps // self.batch_size

    @property
    def num_calls(self) -> int:
        """Jitted update calls in the run: `num_updates // updates_per_call`."""
        return self.num_updates // self.updates_per_call

    @property
    def minibatch_units(self) -> int:
        """What minibatches split: transitions for feed-forward learners."""
        return self.batch_size

    @property
    def _minibatch_unit_name(self) -> str:
        return "transitions (num_envs * rollout_length)"

    @property
    def minibatch_size(self) -> int:
        """Transitions per minibatch per learner."""
        return self.batch_size // self.ppo.num_minibatches


@dataclasses.dataclass(frozen=True, kw_only=True)
class IPPOConfig(RunConfig):
    """Independent PPO in self-play: one MLP actor-critic per seat, no parameter sharing."""

    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of each agent's actor and critic MLPs."""
    shaped_reward_anneal_steps: int | None = None
    """Anneal `shaped_reward_coef` linearly to 0 over this many env steps (then train on the base
    reward alone), as JaxMARL's and Carroll et al.'s Overcooked PPO do; None keeps it constant
    (the paper's tables)."""

    def __post_init__(self) -> None:
        check_hidden(self, "hidden")
        super().__post_init__()
        if self.shaped_reward_anneal_steps is not None:
            require(
                self.shaped_reward_anneal_steps >= 1,
                "shaped_reward_anneal_steps",
                self.shaped_reward_anneal_steps,
                "use a positive number of env steps, or None for a constant coefficient",
            )
            object.__setattr__(
                self, "shaped_reward_anneal_steps", int(self.shaped_reward_anneal_steps)
            )


@dataclasses.dataclass(frozen=True, kw_only=True)
class BRConfig(RunConfig):
    """PPO best response: one MLP learner against fixed teammates (paper: state-based BRs)."""

    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the learner's actor and critic MLPs."""
    learner_seat: int = 0
    """The seat the learner plays; the teammate plays the other seat(s)."""

    def __post_init__(self) -> None:
        check_hidden(self, "hidden")
        require(self.learner_seat >= 0, "learner_seat", self.learner_seat, "use a seat >= 0")
        super().__post_init__()


@dataclasses.dataclass(frozen=True, kw_only=True)
class EgoConfig(RunConfig):
    """PPO for the recurrent ego agent against teammates drawn uniformly from a population.

    Minibatches split whole env sequences (the GRU is re-run from each sequence's stored
    start carry), so `ppo.num_minibatches` must divide `num_envs`.
    """

    hidden: int = 64
    """GRU state size of the ego agent (the paper's S5 replaced by a GRU)."""
    learner_seat: int = 0
    """The seat the ego agent plays; the teammate plays the other seat(s)."""

    def __post_init__(self) -> None:
        require(self.hidden >= 1, "hidden", self.hidden, "use a GRU size >= 1")
        require(self.learner_seat >= 0, "learner_seat", self.learner_seat, "use a seat >= 0")
        super().__post_init__()

    @property
    def minibatch_units(self) -> int:
        """Recurrent minibatches split the env axis."""
        return self.num_envs

    @property
    def _minibatch_unit_name(self) -> str:
        return "env sequences (num_envs)"

    @property
    def minibatch_size(self) -> int:
        """Transitions per minibatch: whole sequences of `num_envs // num_minibatches` envs."""
        return self.rollout_length * (self.num_envs // self.ppo.num_minibatches)


EGO_STAGE_FIELDS = {
    "total_timesteps": "ego_timesteps",
    "num_envs": "ego_num_envs",
    "rollout_length": "ego_rollout_length",
    "ppo": "ego_ppo",
    "hidden": "ego_hidden",
    "learner_seat": "ego_seat",
}
"""`EgoConfig` field -> the flat field a method's config holds it in (a method that holds its
ego stage as `ego_*` fields; its `ego_config` builds the
`EgoConfig`; a method whose rollouts are shared by both stages has no `ego_num_envs` or
`ego_rollout_length`). The task fields come from the method's own config."""
