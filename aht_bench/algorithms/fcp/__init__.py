"""Fictitious Co-Play (FCP; paper App. "Baselines Overview", Table fcp-tg-hyperparams) over the
shared PPO core: a two-stage method.

1. **Teammate generation.** `num_ippo_seeds` independent IPPO runs (`aht_bench.algorithms.ippo`,
   its own `init` and `update`: nothing of IPPO is re-implemented here), each from its own seed,
   each `teammate_timesteps` joint env steps long (tables: Timesteps Per Agent). Each run keeps
   `num_checkpoints` snapshots evenly spaced over its PPO updates, from the initial params
   (update 0) to the final ones (`checkpoint_updates`: update `i * U // (C - 1)` for
   `i = 0..C-1`, U updates, C checkpoints), as FCP keeps "initial, intermediate, final"
   partners of varying skill. The pool member of a snapshot is the agent of the *teammate's*
   seat (`1 - ego_seat`); the other seat's agent is dropped. So the pool has `num_ippo_seeds x
   num_checkpoints` members (paper: 23 x 5 = 115 on LBF, CR, AA and 22 x 5 = 110 on CC, CoR,
   FC: the "~110 agents per task" of App. "Training Compute"), each playing the seat it was
   trained in. Members are stored team by team, oldest checkpoint first.
2. **Ego training** (`two_stage`): the recurrent PPO ego agent (Table ppo_ego_tm_hyperparams,
   `presets.get("ego", ...)`) trains in `ego_seat` against a teammate drawn uniformly from the
   whole pool at every episode start.

Run loop (`aht_bench.runs.MethodLoop`): iterations `1..generation_iterations` each train
`teams_per_iteration` whole IPPO runs in one jitted call (all PPO updates in one `lax.scan`,
snapshots recorded inside it); the last of them hands the pool to the ego (uniform weights) and
resets the ego's envs; iterations after that each run one chunk of the ego's PPO updates
(`two_stage.chunk_sizes`). Every iteration is checkpointed, and a run stopped after any of
them resumes bit-identically: an IPPO run lives inside one iteration, its seed key is fixed at
`init` (`FCPBuffer.team_keys`), and the ego's whole learner state is in the run state from the
start.

Metrics per iteration: generation iterations report `sp_return` (the IPPO team's base return
in self-play over the last quarter of its updates; mean over the iteration's teams) and the
teams' PPO diagnostics (`ippo_*`); ego iterations report `ego_return` (the ego's base return
with pool members over the last quarter of the chunk) and `ego_*`. Every iteration reports
`population_size`, `iteration` and `env_steps` (cumulative: every IPPO run's joint env steps,
then the ego's).

What the paper leaves open, and what is chosen here:

- Snapshot spacing: evenly spaced over updates, the first the untrained initial params (the
  table gives only Num Checkpoints = 5). Pool members: the teammate seat's agent only (the
  paper's pool sizes count one agent per snapshot).
- "Timesteps Per Agent" is read as the joint env steps of one IPPO run (each agent of the team
  acts at every joint step).
- IPPO's PPO settings not in the table (rollout length 128 on LBF / one 400-step episode on
  Overcooked, gamma, GAE lambda, value weight, gradient clip, MLP 64-64, shaped reward) are
  those of `presets` for IPPO; the ego stage is `presets.get("ego", "paper", task)` exactly.
- The ego stage is split into `ego_iterations` chunks for checkpoints and curves (paper preset:
  about 2M env steps each, the granularity of ROTATE's ego updates); chunking changes nothing
  in the ego's training.
- FCP is not held to the shared env-step budget of the other methods (App. "Training
  Compute"); neither is it here.

    config = fcp.preset("quick", "lbf")
    state = fcp.init_seeds(jax.random.PRNGKey(0), config, num_seeds=1)
    for _ in range(config.iterations):
        state, metrics = fcp.iterate(state, config)
    save_population("pool.safetensors", fcp.population(state, config, seed=0))

`setup(config)` is what a run derives from its config (networks, pool member shapes, ego
chunks); the functions above take it in place of the config, to build it once (`train` and
`run` do).

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

from aht_bench.algorithms.api import Method
from aht_bench.algorithms.fcp import core
from aht_bench.algorithms.fcp.config import FCPConfig
from aht_bench.algorithms.fcp.core import REPORT, FCPState, init, setup
from aht_bench.algorithms.fcp.presets import PRESETS
from aht_bench.algorithms.two_stage import ego_of

_EXHAUSTED = "raise ego_iterations or ego_timesteps in a new run to train longer"
"""What to do once a run has done all its iterations."""

METHOD: Method[FCPConfig, FCPState] = Method(
    name="FCP",
    presets=PRESETS,
    setup=setup,
    init=init,
    step=core.step,
    population=core.population,
    report=REPORT,
    exhausted=_EXHAUSTED,
    ego=ego_of,
)
"""FCP as a `Method`: what `aht-bench train fcp` drives."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()


SMOKE = (
    "num_ippo_seeds=2",
    "num_checkpoints=2",
    "teammate_timesteps=512",
    "teammate_num_envs=8",
    "teammate_rollout_length=16",
    "ego_timesteps=256",
    "ego_num_envs=8",
    "ego_rollout_length=16",
    "ego_iterations=1",
    "teammate_ppo.num_epochs=1",
    "teammate_ppo.num_minibatches=2",
    "ego_ppo.num_epochs=1",
    "ego_ppo.num_minibatches=2",
)
"""The smoke run (`aht_bench.runs.smoke`): overrides of the quick preset (as `aht-bench train
--set` takes them) for a whole run of a few PPO updates per stage on LBF."""
