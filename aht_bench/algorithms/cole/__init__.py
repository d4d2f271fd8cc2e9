"""COLE, Cooperative Open-ended LEarning (Li et al. 2023; paper App. "Baselines Overview",
Table cole_hyperparams) over the shared PPO core.

COLE grows a population one member per iteration. Each new member is a fresh `MLPActorCritic`
(one value head) trained by PPO to maximise its return with partners drawn, one per episode,
from the current population, with a distribution that favours the members that are hardest to
coordinate with (cooperative incompatibility, from Shapley values of the population's cross-play
game) plus a UCB exploration bonus. After training, the new member plays every member
(itself included) to extend the cross-play matrix, then joins the population. The final ego
agent is the member with the highest mean cross-play return with the rest of the population.

One iteration (`iterate`), for every seed:

1. **Partner distribution** (host, numpy; the definitions below). Iteration 0 has no
   population: the first member trains with a copy of itself (self-play, as COLE starts).
2. **Training** (one jitted call, seeds vmapped, all PPO updates in one `lax.scan`): each update
   runs two rollouts of `num_envs` envs x `rollout_length` steps, the learner in seat 0 and a
   `SampledTeammate` over the population (weights = the distribution; zero for empty slots) in
   seat 1, then the same with the seats swapped, so the member can partner in either seat.
   The two are two streams (`LossTerm("seat0"/"seat1", 1, unweighted, +1, head 0)`) of one
   `ppo_update`. In self-play the pool's slot 0 holds the learner's current params, refreshed
   every update (the partner is the learner as it is now; only the learner-side transitions
   train, so self-play uses the same compiled update as every later iteration). Fresh params,
   a fresh Adam state and fresh envs per member.
3. **Cross-play**: the new member k plays each member j <= k for `eval_envs` episodes from p0
   in each seat order (one `horizon`-step rollout per order, the first episode of every env
   counted; a host loop over the 2(k + 1) rollouts, one compiled function); `M[k, j] = M[j, k]`
   = the mean base return over both orders (`M[k, k]`: its self-play return). The ego
   (`state.ego`) becomes the member with the highest mean cross-play return
   (`mean_cross_play`).

Definitions (our reading: the paper names the ingredients, Shapley-value cooperative
incompatibility, UCB-style sampling with alpha and c_UCT, but not the formulas; COLE's
"graphic Shapley value" of Li et al. is a Shapley value of the cross-play graph, which is what
these make exact):

- Cross-play game over the n members generated so far: payoff matrix `M` (n, n) as above;
  coalition value `v(C) = (1 / |C|^2) sum_{i in C} sum_{j in C} M[i, j]` (the mean return of
  partners drawn from C, self-play included), `v({}) = 0`.
- Shapley values, exact by enumeration of the 2^n coalitions (`shapley_values`; n <= 20):
  `phi_i = sum_{S subset N \\ {i}} |S|! (n - |S| - 1)! / n! * (v(S + {i}) - v(S))`;
  `sum_i phi_i = v(N)`. A low `phi_i` means member i lowers the population's mean cross-play:
  it is incompatible with the others.
- Incompatibility `u_i = (max phi - phi_i) / (max phi - min phi)` in [0, 1] (1 for the least
  compatible; all 1 when the phi are equal).
- Priority (alpha): `q_i = exp(alpha * u_i) / sum_j exp(alpha * u_j)`, a softmax with alpha as
  inverse temperature: alpha = 0 is uniform, larger alpha puts more weight on incompatible
  members (the least compatible gets e^alpha times the weight of the most compatible).
- UCB bonus (c_UCT): `b_i = c_UCT * sqrt(ln(1 + N) / (1 + n_i))`, `n_i` the times member i was
  sampled, counted as the probability mass it got in past iterations (`partner_counts`: after
  an iteration with distribution p, `n_i += p_i`; members start at 0), `N = sum_i n_i`
  (ln(1 + N) so that the first draws, N = 0, give no bonus rather than ln 0).
- Partner distribution `p_i = (q_i + b_i) / sum_j (q_j + b_j)` (`partner_distribution`).
- Final ego: `argmax_i (1 / (n - 1)) sum_{j != i} M[i, j]` (self-play excluded; `M[0, 0]` for a
  population of one), the first on ties (`mean_cross_play`).

Other choices the paper leaves open: the population size is the number of iterations (the
table's Population Size; 20 x 1.8e7 = 360M steps on LBF, the paper's budget); Timesteps Per
Iteration counts the training rollouts of both seats (whole updates); the cross-play rollouts
come on top (counted in `env_steps`, `env_steps_after`); Num Envs is per rollout; members
after the first train against the population only (the paper's description; no self-play term
mixed in); rollout length 128 (LBF) / 400 (Overcooked) and `eval_envs` = 64 are ours; members
train on the shaped reward, cross-play uses the base return.

    config = cole.preset("quick", "lbf")
    result = cole.train(jax.random.PRNGKey(0), config, num_seeds=1)
    result.metrics["ego_return"]                      # (num_seeds, population_size)
    save_population("pop.safetensors", cole.population(result.state, config, seed=0))

`setup(config)` is what a run derives from its config (env, networks, pairings, the members'
optimiser); the functions above take it in place of the config, to build it once (`train` and
`run` do).

May import jax, numpy, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

from aht_bench.algorithms.api import Method
from aht_bench.algorithms.cole import core
from aht_bench.algorithms.cole.config import ColeConfig
from aht_bench.algorithms.cole.core import REPORT, ColeState, init, setup
from aht_bench.algorithms.cole.presets import PRESETS

_EXHAUSTED = (
    "raise population_size= in the config to go on (the population has one slot per iteration)"
)
"""What to do once a run has done all its iterations."""

METHOD: Method[ColeConfig, ColeState] = Method(
    name="COLE",
    presets=PRESETS,
    setup=setup,
    init=init,
    step=core.step,
    population=core.population,
    report=REPORT,
    exhausted=_EXHAUSTED,
)
"""COLE as a `Method`: what `aht-bench train cole` drives."""
init_seeds, iterate, run, train, ego_params, preset, networks, population = METHOD.bound()


SMOKE = (
    "population_size=2",
    "timesteps_per_iteration=256",
    "num_envs=8",
    "rollout_length=16",
    "eval_envs=4",
    "ppo.num_epochs=1",
    "ppo.num_minibatches=2",
)
"""The smoke run (`aht_bench.runs.smoke`): overrides of the quick preset (as `aht-bench train
--set` takes them) for a whole run of a few PPO updates per stage on LBF."""
