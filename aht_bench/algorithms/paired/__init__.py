"""PAIRED (Dennis et al. 2020) for ad hoc teamwork (paper App. "Baselines Overview") over the
shared PPO core: a teammate, its best response and the ego agent trained jointly, in lockstep.

PAIRED's three roles become: the adversary -> the teammate generator (`MLPActorCritic` with a
critic per partner type, as ROTATE's: head 0 = `sigma^{-i,BR}`, head 1 = `sigma^{-i,ego}`);
the antagonist -> the teammate's best response (`MLPActorCritic`, its own critic); the
protagonist -> the ego agent (`RecurrentEgo`, a GRU in place of the paper's S5).

Every lockstep update (one seed) collects an SP rollout (teammate x BR) and an XP rollout
(teammate x ego), both from p0 in envs that persist from update to update (and from
iteration to iteration), then runs one PPO update of each learner on that data:

| learner  | streams (data, weight w_t, sign, value head)                              |
|----------|---------------------------------------------------------------------------|
| teammate | (D_SP, 1, +1, BR head 0), (D_XP, 1, -1, ego head 1): per-trajectory regret |
| BR       | (D_SP, 1, +1, 0): standard PPO                                             |
| ego      | (D_XP, 1, +1, 0): standard PPO of the recurrent ego                        |

The teammate's streams are the paper's per-trajectory regret (Eq. traj_regret_obj, ROTATE's
`per_trajectory` variant with lambda = 0): "the teammate is optimized to maximize the
per-trajectory regret of the ego agent". There is no population buffer: "the ego agent
trains only against the most recently generated teammate", which in lockstep is the teammate
being trained, the one that collected this update's XP data.

Iterations: the run's updates are split into `iterations` equal chunks (the table's Num
Checkpoints, 10), each one jitted call (all the chunk's updates in one `lax.scan`, seeds
vmapped), after which the run loop (`aht_bench.runs.MethodLoop`) checkpoints. The state carries
all
three learners' params and Adam states, both rollouts' env states and the key, so nothing
restarts between iterations and a resumed run is bit-identical to an unstopped one; a learning
rate schedule (`anneal_lr`) runs over the whole run. After each iteration the teammate is
snapshotted: `population()` is these checkpoints of the teammate (saved as the run's
population file; never trained against), `ego_params()` the ego.

What the paper leaves open, and what is chosen here:

- Table paired_hyperparams gives one set of PPO hyperparameters; all three learners use it
  (`teammate_ppo` for the teammate and the BR, `ego_ppo` for the ego, equal in the `paper`
  preset). Its Num Seeds (3) is the number of training seeds: `aht-bench train paired
  --seeds 3`.
- Timesteps count both rollouts (SP and XP) of every update, the budget of App. "Training
  Compute" (360M on LBF). Updates per iteration are `total_timesteps // (iterations x 2 x
  num_envs x rollout_length)`, whole updates only (the paper's LBF run does 10 x 8789 updates
  of 4096 steps: 359,997,440 steps).
- Unit weights and no competence term in the teammate's regret (the paper's description is
  plain per-trajectory regret); the regret metric is the mean SP return minus the mean XP
  return of the iteration's last quarter of updates (PAIRED's original uses the antagonist's
  best return over a few episodes; the means are the estimate the teammate's loss uses).
- No critic reset or fresh Adam state for the ego: it trains continuously (no phases).
- Not in the table, as in ROTATE's presets: rollout length (128 on LBF, 400 = one episode on
  Overcooked), gamma 0.99, GAE lambda 0.95, value-loss weight 0.5, gradient clip 0.5, MLP
  64-64, GRU 64, shaped reward on. Seats: the ego and the BR in `ego_seat` (0), the teammate
  in the other.

Metrics per iteration ((num_seeds,) each, over the last quarter of its updates): `sp_return`,
`xp_return`, `regret` (= SP - XP), `ego_return` (= `xp_return`: the ego with its only
partner), the PPO diagnostics of the three learners (`teammate_*`, `best_response_*`,
`ego_*`), `iteration` and `env_steps` (cumulative).

    config = paired.preset("quick", "lbf")
    state = paired.init_seeds(jax.random.PRNGKey(0), config, num_seeds=1)
    state, metrics = paired.iterate(state, config)        # one iteration (chunk of updates)

`setup(config)` is what a run derives from its config (env, networks, pairings, optimisers);
the functions above take it in place of the config, to build it once (`train` and `run` do).

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

from aht_bench.algorithms.api import Method
from aht_bench.algorithms.paired import core
from aht_bench.algorithms.paired.config import (
    PairedConfig,
    teammate_loss_terms,
)
from aht_bench.algorithms.paired.core import REPORT, PairedState, ego_of, init, setup
from aht_bench.algorithms.paired.presets import PRESETS

__all__ = [  # what the package re-exports besides what METHOD is built from
    "teammate_loss_terms",
]

_EXHAUSTED = "raise iterations= (and total_timesteps=) in the config for a longer run"
"""What to do once a run has done all its iterations."""

METHOD: Method[PairedConfig, PairedState] = Method(
    name="PAIRED",
    presets=PRESETS,
    setup=setup,
    init=init,
    step=core.step,
    population=core.population,
    report=REPORT,
    exhausted=_EXHAUSTED,
    ego=ego_of,
)
"""PAIRED as a `Method`: what `aht-bench train paired` drives."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()


SMOKE = (
    "iterations=2",
    "total_timesteps=512",
    "num_envs=8",
    "rollout_length=16",
    "teammate_ppo.num_epochs=1",
    "teammate_ppo.num_minibatches=2",
    "ego_ppo.num_epochs=1",
    "ego_ppo.num_minibatches=2",
)
"""The smoke run (`aht_bench.runs.smoke`): overrides of the quick preset (as `aht-bench train
--set` takes them) for a whole run of a few PPO updates per stage on LBF."""
