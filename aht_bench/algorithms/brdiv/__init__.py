"""BRDiv (Rahman et al. 2023; paper App. "Baselines Overview", Table brdiv_hyperparams) over the
shared PPO core: a population of confederate/best-response pairs trained on the whole cross-play
matrix, then the PPO ego agent against the confederates.

**Teammate generation.** `n = population_size` confederates and `n` best responses (BRs), all
`MLPActorCritic`s with `n` value heads. The paper's teammates "use a critic that conditions on
the agent ID of a candidate partner agent ... implementing the n-1 critics via parameter
sharing"; here that critic is `n` heads on one shared critic trunk: confederate `i`'s head `j`
estimates its return with BR `j`, and BR `j`'s head `i` its return with confederate `i` (a
one-hot partner id fed to the critic's input would be the other reading; the heads need no
change to the network and train exactly as ROTATE's two-head teammate does). Every update
collects one rollout of each of the `n x n` pairs (confederate `i` in the teammate seat, BR `j`
in `ego_seat`, the ego's seat), all from p0, in envs that persist across updates, and
gives each agent one PPO update over the `n` rollouts it played in:

    confederate i:  (D_ij, 1 + 2 xp_coef, +1, head j) for j = i      SP, maximised
                    (D_ij,     xp_coef,   -1, head j) for j != i     XP, minimised
    best response j: the same over confederates i: (D_ij, ..., head i)

(`confederate_loss_terms`, `best_response_loss_terms`: `training.streams.LossTerm`s, no timestep
weighting; each stream's clip loss is a mean over its own transitions, the entropy loss is once
over all of a learner's data, each head trains on its pair's data: `ppo_update`). So each agent
maximises `(1 + 2 w) J(i, i) - w sum_{j != i} J(i, j)`, the paper's "coefficient on the SP return
is always 1 + 2 * xp_weight". The `2n` PPO updates of an update run as two vmapped
`ppo_update`s (confederates, BRs), the `n x n` rollouts as one vmapped rollout; one update of
all pairs costs `n^2 x num_envs x rollout_length` env steps (the paper's O(n^2 T)), and the
table's Timesteps count all of them. (Vmapping the agents' updates measured the same run time
as unrolling them and a smaller compile: docs/baselines/brdiv.md.)

**Ego stage.** `two_stage`: the recurrent PPO ego (`ego.py`, Table ppo_ego_tm_hyperparams,
`presets.get("ego", ...)`) against the `n` confederates, drawn uniformly per episode.

A run is `generation_iterations` iterations of the generation (each a chunk of the joint
updates; the confederates', BRs' and Adam states and the pairs' envs carry over) and then
`ego_iterations` ego iterations (`aht_bench.runs.MethodLoop`: a checkpoint after each, exact
resume).

What the paper leaves open, and what is chosen here:

- Epochs, minibatches and LR annealing of the generation stage are not in Table
  brdiv_hyperparams: the IPPO table's (the base algorithm of every method): 15 epochs, 4
  minibatches on LBF and 16 on Overcooked, annealed LR (annealing over the whole generation).
- "Num Envs" is read as envs per pair rollout; rollout length as everywhere (128 on LBF, one
  400-step episode on Overcooked).
- The BRs sit in the ego's seat (they are its stand-ins), the confederates in the other; BRs
  minimise their XP returns too (the objective is one function of the whole matrix).
- The table's Timesteps (3.3e8 on LBF) plus the ego table's (6e7) exceed the paper's stated
  per-task budget (360M); both tables are followed as printed.

    config = brdiv.preset("quick", "lbf")
    state = brdiv.init_seeds(jax.random.PRNGKey(0), config, num_seeds=1)
    for _ in range(config.iterations):
        state, metrics = brdiv.iterate(state, config)      # metrics["xp_return"]: (num_seeds,)
    brdiv.population(state, config, seed=0)                # the confederates (a Population)
    brdiv.best_responses(state, config, seed=0)            # their best responses

`setup(config)` is what a run derives from its config (env, networks, pairing, optimiser); the
functions above take it in place of the config, to build it once (`train` and `run` do).

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

from aht_bench.algorithms.api import Method, MethodSetup
from aht_bench.algorithms.brdiv import core
from aht_bench.algorithms.brdiv.config import (
    BRDivConfig,
    best_response_loss_terms,
    confederate_loss_terms,
)
from aht_bench.algorithms.brdiv.core import REPORT, BRDivState, init, setup
from aht_bench.algorithms.brdiv.presets import PRESETS
from aht_bench.algorithms.two_stage import ego_of
from aht_bench.policies.population import Population

__all__ = [  # what the package re-exports besides what METHOD is built from
    "best_response_loss_terms",
    "best_responses",
    "confederate_loss_terms",
]

_EXHAUSTED = "raise ego_iterations or generation_iterations only in a new run"
"""What to do once a run has done all its iterations."""

METHOD: Method[BRDivConfig, BRDivState] = Method(
    name="BRDiv",
    presets=PRESETS,
    setup=setup,
    init=init,
    step=core.step,
    population=core.population,
    report=REPORT,
    exhausted=_EXHAUSTED,
    ego=ego_of,
)
"""BRDiv as a `Method`: what `aht-bench train brdiv` drives."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()


def best_responses(
    state: BRDivState, config: BRDivConfig | MethodSetup, seed: int | None = 0
) -> Population:
    """The best responses of one seed as a `Population` (host arrays), BR j paired with
    confederate j (`seed=None`: an unbatched state); of a config or a setup."""
    return core.best_responses(state, METHOD.setup_of(config), seed)


SMOKE = (
    "population_size=2",
    "generation_timesteps=1024",
    "num_envs=8",
    "rollout_length=16",
    "generation_iterations=1",
    "ego_iterations=1",
    "ego_timesteps=256",
    "ego_num_envs=8",
    "ego_rollout_length=16",
    "generation_ppo.num_epochs=1",
    "generation_ppo.num_minibatches=2",
)
"""The smoke run (`aht_bench.runs.smoke`): overrides of the quick preset (as `aht-bench train
--set` takes them) for a whole run of a few PPO updates per stage on LBF."""
