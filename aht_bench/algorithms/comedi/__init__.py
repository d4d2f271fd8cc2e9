"""CoMeDi (Sarkar et al. 2023; paper App. "Baselines Overview", "Relationship To CoMeDi and
Mixed Play", Table comedi-tg-hyperparams) over the shared PPO core: a two-stage method.

**Stage 1, teammate generation** trains `population_size` teammates one at a time, one per
iteration of the run loop. Teammate n (`MLPActorCritic`, seat 1) trains together with its own
best response (`MLPActorCritic`, seat 0, the "self-play" partner as in ROTATE's framing) and
maximises (paper Eq. mp_regret_obj with CoMeDi's weights alpha and beta)

    J_SP(pi^n, BR) - alpha J_XP(pi^n, pi^comp) + beta J_MP(pi^n, BR)

Every PPO update collects four rollouts of `num_envs` x `rollout_length` steps:

- SP: teammate x BR from p0;
- XP: teammate x the earlier teammates from p0, the envs split among them (env e plays earlier
  teammate `e mod (n - 1)`, `EarlierTeammates`). Each earlier teammate's compatibility, the
  paper's E_{s0~p0}[V(s0 | pi^n, pi^j)], is estimated from its envs as the teammate's mean
  training reward per step in this rollout, and pi^comp is the argmax (ties: the earliest).
  The paper's complexity section ("evaluation rollouts of the currently trained agent against
  all previously generated teammates at each RL update step") is met at the cost of one
  rollout: the XP stream of the loss is this same rollout masked to pi^comp's envs. Splitting
  the envs rather than running one rollout per earlier teammate keeps the cost of an update
  flat in the population size; each estimate then rests on `num_envs / (n - 1)` envs (5 or 6
  with the paper's 48 envs and 9 earlier teammates);
- mixed: teammate x a partner that plays pi^comp's or the BR's action with probability 1/2
  each step (`MixedPartner`, Eq. mixed_play_start); only its visited states are kept (p_MSTART);
- MP: teammate x BR from start states drawn uniformly from the mixed rollout's states
  (Eq. mixed_play_data, `StoredStates`).

The teammate's loss is three streams (`teammate_loss_terms`, `training.streams.LossTerm`,
`ppo_update`), the entropy term once over all three:

| data | weight | sign | teammate value head |
|------|--------|------|---------------------|
| SP   | 1      | +1   | 0 (with its BR)     |
| XP, pi^comp's envs only | alpha | -1 | 1 + comp (with earlier teammate comp) |
| MP   | beta   | +1   | 0 (with its BR)     |

The BR trains on SP + MP (unit weights, its own critic). The paper's CoMeDi teammates use "a
critic that conditions on the agent ID of a candidate partner"; here that is one value head per
earlier teammate (`population_size` heads: head 0 for the BR, head 1 + j for teammate j), the
same parameter sharing over a shared torso. The first teammate has no earlier one: its
iteration trains SP only (teammate and BR on SP, plain self-play), with the same number of PPO
updates as the others and a quarter of their env steps.

**Stage 2, the ego** (`two_stage`, Table ppo_ego_tm_hyperparams): the recurrent PPO ego (seat 0)
trains against the population, a member drawn uniformly per episode, in `ego_iterations`
chunks, each one iteration of the run loop (checkpointed; exact resume).

Open in the paper and chosen here:
- Seats: the teammate plays seat 1 (as in ROTATE); its BR, the earlier teammates (in XP) and the
  mixed partner play seat 0; the ego plays seat 0 against the teammates in the seat they were
  trained in. An earlier teammate in XP thus plays the seat it was not trained in (observations
  are agent-centric in LBF, Overcooked and the matrix games).
- pi^comp is re-chosen at every update, from the rewards (training reward, shaping included) of
  that update's XP rollout; "Timesteps Per Iteration" counts all four rollouts, so the table's
  3.3e7 (LBF) per teammate is 3.3e7 // (4 x 48 x 128) = 1342 updates.
- The table's totals (10 x 3.3e7 + 6e7 = 3.9e8 on LBF) exceed the 3.6e8 budget of App.
  "Training Compute"; the table is followed.
- The rollout length (128 on LBF, 400 on Overcooked), networks (MLP 64-64, GRU 64), gamma, GAE
  lambda and the shaped reward follow `aht_bench.training.presets`; the paper's ego is S5, ours a
  GRU (`RecurrentEgo`). The paper preset's ego stage runs in 10 checkpointed chunks.

    config = comedi.preset("quick", "lbf")
    result = comedi.train(jax.random.PRNGKey(0), config, num_seeds=1)
    result.metrics["sp_return"]          # (num_seeds, iterations); NaN in the ego iterations
    save_population("pop.safetensors", comedi.population(result.state, config, seed=0))

`setup(config)` is what a run derives from its config (env, networks, pairings); the functions
above take it in place of the config, to build it once (`train` and `run` do).

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

from aht_bench.algorithms.api import Method
from aht_bench.algorithms.comedi import core
from aht_bench.algorithms.comedi.config import CoMeDiConfig
from aht_bench.algorithms.comedi.core import CoMeDiState, init, setup
from aht_bench.algorithms.comedi.presets import (
    PRESETS,
    REPORT,
)
from aht_bench.algorithms.two_stage import ego_of

_EXHAUSTED = "raise ego_iterations or population_size in a new run to go on"
"""What to do once a run has done all its iterations."""

METHOD: Method[CoMeDiConfig, CoMeDiState] = Method(
    name="CoMeDi",
    presets=PRESETS,
    setup=setup,
    init=init,
    step=core.step,
    population=core.population,
    report=REPORT,
    exhausted=_EXHAUSTED,
    ego=ego_of,
)
"""CoMeDi as a `Method`: what `aht-bench train comedi` drives."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()


SMOKE = (
    "population_size=2",
    "teammate_timesteps=512",
    "num_envs=8",
    "rollout_length=16",
    "ego_timesteps=256",
    "ego_num_envs=8",
    "ego_iterations=1",
    "teammate_ppo.num_epochs=1",
    "teammate_ppo.num_minibatches=2",
    "ego_ppo.num_epochs=1",
    "ego_ppo.num_minibatches=2",
)
"""The smoke run (`aht_bench.runs.smoke`): overrides of the quick preset (as `aht-bench train
--set` takes them) for a whole run of a few PPO updates per stage on LBF."""
