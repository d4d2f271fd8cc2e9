"""ROTATE (paper Alg. OpenEndedFramework, rotate_teamgen_alg, rotate_ego_update) over the shared
PPO core.

Each iteration of the open-ended loop (Alg. 1) runs two phases, each one jitted call (seeds
vmapped, all PPO updates of the phase in one `lax.scan`), looped over on the host:

1. **Teammate generation** (Alg. 2), the ego fixed: a fresh teammate (`MLPActorCritic` with two
   value heads: head 0 = `sigma^{-i,BR}`, head 1 = `sigma^{-i,ego}`) and a fresh best response
   (`MLPActorCritic`, its own critic). Every update collects SP (teammate x BR) and XP
   (teammate x ego) rollouts from p0, recording the states they visit, then SXP (teammate x BR)
   and XSP (teammate x ego) rollouts that start from states drawn uniformly from this update's
   XP and SP states (`StoredStates`). The BR trains on SP + SXP (Eq. br_loss); the teammate on
   the four streams of L_REG (Eq. regret_pol_loss, Table regret_loss_terms):

   | data  | weight w_t                  | sign | teammate value head |
   |-------|-----------------------------|------|---------------------|
   | D_SP  | (1 + lambda_2) (t + 1)      | +1   | 0 (BR)              |
   | D_SXP | 1 + lambda_1                | +1   | 0 (BR)              |
   | D_XP  | t + 1                       | -1   | 1 (ego)             |
   | D_XSP | 1                           | -1   | 1 (ego)             |

   with the entropy loss once over all four datasets (what `ppo_update` does for any list of
   streams). The teammate joins the population buffer.
2. **Ego update** (Alg. 3): the recurrent ego (`RecurrentEgo`, a GRU in place of the paper's
   S5) trains by PPO against teammates drawn uniformly from the buffer, one per episode
   (`SampledTeammate` over a fixed-size `TeammatePool`; empty slots have weight 0, so the buffer
   grows without recompiling). As in Alg. 3 the ego's critic head is re-initialised at each
   ego update (`reset_ego_critic`) and each phase starts a fresh Adam state.

Variants (`RotateConfig.variant`, configuration rather than copies, paper App.
"Ablations of Teammate Generation Objective" and Sec. 6 RQ2/RQ4):

- `rotate`: competence-bounded per-state regret (Eq. constrained_state_based_regret_obj).
- `per_trajectory`: competence-bounded per-trajectory regret (Eq. traj_regret_obj_lambda),
  SP and XP from p0 only: streams (D_SP, 1 + lambda, +1, BR head), (D_XP, 1, -1, ego head); the
  BR trains on D_SP. `competence_weight_p0 = 0` is plain per-trajectory regret (Eq.
  traj_regret_obj).
- `no_buffer`: the ROTATE teammate generator, but the ego trains only against the latest
  teammate (RQ4).
- `mixed_play`: CoMeDi's mixed-play objective inside the ROTATE loop (Eq. mp_regret_obj, with
  `pi^comp` replaced by the ego): start states from rollouts of the teammate with a partner that
  plays the ego's or the BR's action with probability 1/2 each step (Eq. mixed_play_start), MP
  rollouts of teammate x BR from those states (Eq. mixed_play_data); streams
  (D_SP, 1, +1, BR), (D_XP, alpha, -1, ego), (D_MP, beta, +1, BR); the BR trains on SP + MP.
- `minimax`: the Minimax Return baseline (`aht_bench.algorithms.minimax`): XP rollouts from p0
  only and one stream (D_XP, 1, -1) on the teammate's single value head; no SP, no BR (the
  buffer keeps no best responses).

Teammate objectives (`RotateConfig.teammate_objective`, variants `rotate` and `no_buffer`;
`regret_loss_terms` gives each as streams, docs/rotate.md compares them on the sabotage game):

- `eq7` (the default): Eq. constrained_state_based_regret_obj as written, one unit of weight
  per sampled start state on every stream: the table above, with the SXP and XSP weights also
  times the branch batch's transitions per episode.
- `transition_mean`: the table above as printed, each `ell` of Eq. regret_pol_loss a mean over
  transitions; SXP/XSP then count 1/L of Eq. 7's weight (L: their mean episode length). Every
  preset of a v1 task pins it (`V1_TEAMMATE_OBJECTIVE`): the bundled ROTATE agents were
  trained with it.
- `public_code`: the paper's public code (carolinewang01/rotate): each stream's objective
  standardised on its own, no timestep weights, no policy-gradient term on XSP.

Seats: the ego and the BR (the ego's stand-in) sit in `ego_seat`, the teammate in the other
seat, in every rollout. The paper names no seat; this follows its pseudocode, which always lists
the BR/ego first.

Budgets: `teammate_timesteps` counts every joint env step of the teammate phase (all four
rollouts of an update), `ego_timesteps` those of the ego phase, so the paper's per-task totals
(App. "Training Compute": 360M steps on LBF = 30 x (1e7 + 2e6)) come out right.

    config = rotate.preset("quick", "lbf")
    result = rotate.train(jax.random.PRNGKey(0), config, num_seeds=1)
    result.metrics["regret"]                    # (num_seeds, iterations)
    save_population("pop.safetensors", rotate.population(result.state, config, seed=0))

`setup(config)` is what a run derives from its config (env, networks, pairings); the functions
above take it in place of the config, to build it once (`train` and `run` do).

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

from aht_bench.algorithms.api import Method
from aht_bench.algorithms.rotate import core
from aht_bench.algorithms.rotate.config import (
    EGO_HEAD,
    LEGACY_FIELDS,
    LEGACY_OBJECTIVES,
    TEAMMATE_OBJECTIVES,
    V1_TEAMMATE_OBJECTIVE,
    RotateConfig,
    best_response_loss_terms,
    regret_loss_terms,
    teammate_loss_terms,
)
from aht_bench.algorithms.rotate.core import REPORT, Networks, RotateState, init, setup
from aht_bench.algorithms.rotate.presets import PRESETS

__all__ = [  # what the package re-exports besides what METHOD is built from
    "EGO_HEAD",
    "LEGACY_FIELDS",
    "LEGACY_OBJECTIVES",
    "Networks",
    "TEAMMATE_OBJECTIVES",
    "V1_TEAMMATE_OBJECTIVE",
    "best_response_loss_terms",
    "regret_loss_terms",
    "teammate_loss_terms",
]

_EXHAUSTED = "raise iterations= in the config to go on (the buffer has one slot per iteration)"
"""What to do once a run has done all its iterations."""

METHOD: Method[RotateConfig, RotateState] = Method(
    name="ROTATE",
    presets=PRESETS,
    setup=setup,
    init=init,
    step=core.step,
    population=core.population,
    report=REPORT,
    exhausted=_EXHAUSTED,
)
"""ROTATE as a `Method`: what `aht-bench train rotate` drives."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()


SMOKE = (
    "iterations=2",
    "teammate_timesteps=1024",
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
