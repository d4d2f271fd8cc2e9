"""Minimax Return (paper App. "Baselines Overview": the minimax-return baseline of PAIRED,
Dennis et al. 2020, after Morimoto & Doya 2005) over the shared PPO core: ROTATE's open-ended
framework whose teammates minimise the current ego agent's *return* instead of maximising its
regret.

Each iteration of the open-ended loop (paper Alg. OpenEndedFramework) runs two phases, each one
jitted call (seeds vmapped, every PPO update of the phase in one `lax.scan`):

1. **Teammate generation**, the ego fixed: a fresh teammate (`MLPActorCritic` with ONE value
   head: "for methods in which the teammate only interacts ... with the ego agent (Minimax
   Return), a standard actor-critic architecture is used", App. "Agent Architectures") plays
   the ego. Every update collects an XP rollout (teammate x ego) from p0 in envs that persist
   across the phase's updates, then one PPO update of the teammate on the single stream

   | data | weight w_t | sign | teammate value head |
   |------|------------|------|---------------------|
   | D_XP | 1          | -1   | 0 (its only one)    |

   i.e. it minimises the ego's expected return from p0 (Eq. traj_regret_obj without the SP
   term). No self-play, no best response. The teammate joins the population buffer.
2. **Ego update**: ROTATE's, unchanged (Alg. rotate_ego_update): the recurrent ego
   (`RecurrentEgo`) trains by PPO against teammates drawn uniformly from the buffer, one per
   episode, its critic head re-initialised and a fresh Adam state at each ego update.

The loop is ROTATE's own (`rotate.iterate` with `RotateConfig(variant="minimax")`): this
module holds the method's config, presets and registry entry and delegates; the run state is
a `rotate.RotateState` (its buffer keeps no best responses).

What the paper leaves open, and what is chosen here:

- Table minimax_hyperparams marks only the teammate-specific rows "(T)", and only the
  timesteps row is marked: the unmarked LR, Epochs, Minibatches, Ent-Coef, Eps-Clip and Anneal
  LR rows therefore apply to the teammate AND the ego (`teammate_ppo == ego_ppo` in the
  `paper` preset). (The other reading, the ego on ROTATE's or the shared ego table's values,
  is one `--set ego_ppo.*` away.) LBF's Eps-Clip 0.03 lies outside the table's own search
  grid (0.05-0.5); it is taken as printed.
- Unit weights on XP (no `t + 1` timestep weighting): the objective is the return from p0,
  whose gradient is the plain policy gradient; the `t + 1` weights are ROTATE's device for
  per-state regret, which Minimax Return does not use.
- Not in the table, as in ROTATE's presets: rollout length (128 on LBF, 400 = one episode on
  Overcooked), gamma 0.99, GAE lambda 0.95, value-loss weight 0.5, gradient clip 0.5, MLP
  64-64, GRU 64, shaped reward on. Seats: the ego in `ego_seat` (0), the teammate in the other.

Budgets: `teammate_timesteps` counts the XP steps of a teammate phase (one rollout per update),
`ego_timesteps` those of an ego phase, so the paper's totals are ROTATE's (App. "Training
Compute": 360M steps on LBF = 30 x (1e7 + 2e6)).

Metrics per iteration ((num_seeds,) each): `xp_return` (the new teammate with the ego over the
last quarter of its phase: what it minimised), the teammate's PPO diagnostics (`teammate_*`),
`ego_return` (the ego with the buffer, last quarter of the ego phase) and its diagnostics
(`ego_*`), `population_size`, `iteration`, `env_steps` (cumulative).

    config = minimax.preset("quick", "lbf")
    state = minimax.init_seeds(jax.random.PRNGKey(0), config, num_seeds=1)
    state, metrics = minimax.iterate(state, config)      # one iteration

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from aht_bench.algorithms import rotate
from aht_bench.algorithms.api import Method, MethodSetup, TaskConfig
from aht_bench.algorithms.rotate import RotateState
from aht_bench.training import presets
from aht_bench.training.config import PPOConfig, check_hidden
from aht_bench.training.paper_tables import OpenEndedRow, PPORow, with_v2
from aht_bench.training.report import Curve, Report


@dataclasses.dataclass(frozen=True, kw_only=True)
class MinimaxConfig(TaskConfig):
    """A Minimax Return run (paper Table minimax_hyperparams; "(T)" rows are the teammate's)."""

    iterations: int
    """Open-ended iterations, one teammate each (table: OEL Iterations)."""
    teammate_timesteps: int
    """Joint env steps (XP) of one teammate-generation phase (table: Timesteps Per Iter (T))."""
    ego_timesteps: int
    """Joint env steps of one ego-update phase (table: Timesteps Per Iter (Ego))."""
    num_envs: int
    """Parallel envs of every rollout (table: Num Envs)."""
    rollout_length: int
    """Env steps per env and rollout between two PPO updates (not in the table)."""
    teammate_ppo: PPOConfig
    """PPO hyperparameters of the teammate (table: LR, Epochs, Minibatches, ...)."""
    ego_ppo: PPOConfig
    """PPO hyperparameters of the ego agent (the same table rows in the `paper` preset)."""
    teammate_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the teammate's actor and critic MLPs."""
    ego_hidden: int = 64
    """GRU state size of the ego agent."""
    ego_seat: int = 0
    """The ego agent's seat; the teammate plays the other."""
    reset_ego_critic: bool = True
    """Re-initialise the ego's critic head at each ego update (ROTATE's Alg. rotate_ego_update)."""

    def __post_init__(self) -> None:
        super().__post_init__()  # task_id, shaping, shaped_reward_coef
        check_hidden(self, "teammate_hidden")
        self.rotate_config  # noqa: B018  (validates every field, naming it)

    @property
    def rotate_config(self) -> rotate.RotateConfig:
        """The same run as ROTATE's loop runs it (`variant="minimax"`)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return rotate.RotateConfig(**fields, variant="minimax")  # every field is ROTATE's too

    @property
    def teammate_updates(self) -> int:
        """PPO updates of the teammate per iteration (one XP rollout each)."""
        return self.rotate_config.teammate_updates

    @property
    def ego_updates(self) -> int:
        """PPO updates of the ego per iteration."""
        return self.rotate_config.ego_updates

    @property
    def env_steps_per_iteration(self) -> int:
        """Joint env steps one iteration takes (both phases, whole updates only)."""
        return self.rotate_config.env_steps_per_iteration


def setup(config: MinimaxConfig) -> MethodSetup:
    """ROTATE's setup of the same run (`MinimaxConfig.rotate_config`): the teammate has one
    value head, the ego is ROTATE's (`best_response` is built but never used)."""
    return rotate.setup(config.rotate_config)


REPORT = Report(
    generation_curves=(
        Curve("xp_return", "XP return (new teammate x ego), minimised", "C1", progress="xp"),
    ),
)
"""How `aht-bench train minimax` runs it: one step = one open-ended iteration."""


# -------------------------------------------------------------------------------------- presets


class MinimaxRow(NamedTuple):
    """A row of Table minimax_hyperparams: one set of PPO columns for the teammate and the ego."""

    iterations: int
    envs: int
    ego_timesteps: float
    teammate_timesteps: float
    ppo: PPORow

    @property
    def open_ended(self) -> OpenEndedRow:
        ppo = self.ppo
        return OpenEndedRow(
            self.iterations, self.envs, self.teammate_timesteps, ppo, self.ego_timesteps, ppo
        )


# Table minimax_hyperparams (bold values where the table searched)
MINIMAX = with_v2(
    {
        "lbf-v1": MinimaxRow(30, 16, 2e6, 1e7, PPORow(1e-3, 15, 4, 0.03, 0.03, False)),
        "overcooked-cramped_room-v1": MinimaxRow(
            30, 16, 2e6, 6e6, PPORow(1e-4, 15, 8, 0.1, 0.1, True)
        ),
        "overcooked-asymm_advantages-v1": MinimaxRow(
            30, 16, 2e6, 6e6, PPORow(1e-5, 15, 8, 0.05, 0.2, False)
        ),
        "overcooked-counter_circuit-v1": MinimaxRow(
            20, 16, 6e6, 1.6e7, PPORow(1e-5, 15, 8, 0.005, 0.05, False)
        ),
        "overcooked-coord_ring-v1": MinimaxRow(
            20, 16, 6e6, 1.6e7, PPORow(1e-4, 15, 8, 0.005, 0.1, False)
        ),
        "overcooked-forced_coord-v1": MinimaxRow(
            20, 16, 6e6, 1.6e7, PPORow(5e-5, 15, 8, 0.01, 0.05, False)
        ),
    }
)


PAPER_TASKS = presets.PAPER_TASKS


def _paper(task_id: str) -> MinimaxConfig:
    # the table's unmarked rows serve the teammate and the ego alike (module docstring)
    row = MINIMAX[task_id].open_ended
    return MinimaxConfig(**presets.paper_open_ended(task_id, row))


# quick: two CPU cores, one seed: 4-5 CPU-minutes a task, measured (under load) on LBF and
# cramped_room (docs/baselines/minimax.md). ROTATE's quick PPO settings; 4 iterations, every
# update 64 envs x 128 steps; per iteration 64 teammate and 64 ego updates on LBF (4.2M steps in
# all), 32 and 48 on the Overcooked layouts, whose steps cost about three times as much (2.6M).


def _quick(task_id: str) -> MinimaxConfig:
    teammate_updates, ego_updates = (64, 64) if task_id == "lbf-v1" else (32, 48)
    return MinimaxConfig(
        iterations=4,
        teammate_timesteps=teammate_updates * 64 * 128,
        ego_timesteps=ego_updates * 64 * 128,
        **presets.quick_open_ended(task_id),
    )


def _medium(task_id: str) -> MinimaxConfig:
    """The paper's iterations with a tenth of its teammate and ego steps each (`presets.
    medium_units`: that is more than quick's iteration), quick's per-step settings; whole
    updates of 64 x 128 steps."""
    quick = _quick(task_id)
    row = MINIMAX[task_id]
    iterations, _ = presets.medium_units(
        row.iterations,
        row.teammate_timesteps + row.ego_timesteps,
        quick.teammate_timesteps + quick.ego_timesteps,
    )
    share = presets.MEDIUM_FRACTION * row.iterations / iterations  # of each paper iteration
    batch = quick.num_envs * quick.rollout_length
    return dataclasses.replace(
        quick,
        iterations=iterations,
        teammate_timesteps=presets.whole(share * row.teammate_timesteps, batch),
        ego_timesteps=presets.whole(share * row.ego_timesteps, batch),
    )


PRESETS: dict[str, dict[str, MinimaxConfig]] = presets.per_task(
    {"paper": _paper, "quick": _quick, "medium": _medium}
)
"""preset name -> task id -> config."""

SMOKE = (
    "iterations=2",
    "teammate_timesteps=512",
    "ego_timesteps=256",
    "num_envs=8",
    "rollout_length=16",
    "teammate_ppo.num_epochs=1",
    "teammate_ppo.num_minibatches=2",
    "ego_ppo.num_epochs=1",
    "ego_ppo.num_minibatches=2",
)
"""The smoke run (`aht_bench.runs.smoke`): overrides of the quick preset (as `aht-bench train
--set` takes them) for a whole run of a few PPO updates per stage on LBF."""


_EXHAUSTED = "raise iterations= in the config to go on (the buffer has one slot per iteration)"
"""What to do once a run has done all its iterations."""

METHOD: Method[MinimaxConfig, RotateState] = Method(
    name="Minimax",
    presets=PRESETS,
    setup=setup,
    init=rotate.init,
    step=rotate.core.step,
    population=rotate.core.population,
    report=REPORT,
    exhausted=_EXHAUSTED,
)
"""Minimax Return as a `Method`: what `aht-bench train minimax` drives; one step is ROTATE's
(`rotate.core.step` on `setup(config)`): a teammate minimising the current ego's return joins
the buffer, then the ego trains on the buffer."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()
