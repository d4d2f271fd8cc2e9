"""The training core shared by every method: one PPO over streams of rollout data.

- `rollout`: rollouts for any seat pairing (`Pairing`, `RolloutState`, `Trajectory`).
- `gae`: the one GAE (terminated vs truncated handled).
- `losses`: the paper's generalised clip loss, entropy and value losses.
- `ppo`: `Stream`, `make_stream`, `ppo_update` (epochs x minibatches over several streams).
- `partners`: `SampledTeammate`, a policy drawing a population member per episode.
- `config`: frozen, validated configs; `presets`: paper and quick configs of the shared stages
  (IPPO, best response, ego) from the paper's tables (`paper_tables`, transcribed once; each
  method's own table is in its package) and the quick settings.
- `driver`: the jitted calls of a PPO learner, seeds vmapped (`init_seeds`, `update_seeds`,
  `map_seeds`); the loops over them are the methods' (`aht_bench.algorithms.api.Method`).
- `checkpoint`: a whole train state to/from safetensors + a verified JSON card.
- `streams`: loss-stream tables (`LossTerm`, `loss_streams`), rollouts from stored start
  states (`branch_rollout`) and per-phase summaries (`phase_summary`) that methods share.
- `report`: what a method's run shows (`Report`), as data.

Algorithms (`aht_bench.algorithms`) are pairings, stream weights and an outer loop over these;
long runs on disk (`aht-bench train`) are `aht_bench.runs`. Both sit above this package, which
imports neither. See docs/training.md.

May import jax, optax, chex, numpy, aht_bench.envs and aht_bench.policies only.
"""

from aht_bench.training.config import BRConfig, EgoConfig, IPPOConfig, PPOConfig, RunConfig
from aht_bench.training.driver import init_seeds, update_seeds
from aht_bench.training.gae import gae
from aht_bench.training.losses import clip_loss, entropy_loss, value_loss
from aht_bench.training.partners import SampledTeammate, TeammatePool, teammate_pool
from aht_bench.training.ppo import (
    LearnerState,
    Stream,
    make_optimizer,
    make_stream,
    ppo_update,
    timestep_weights,
)
from aht_bench.training.rollout import (
    LearnerData,
    Pairing,
    RolloutState,
    Trajectory,
    episode_stats,
    init_rollout,
    rollout,
)

__all__ = [
    "BRConfig",
    "EgoConfig",
    "IPPOConfig",
    "LearnerData",
    "LearnerState",
    "PPOConfig",
    "Pairing",
    "RolloutState",
    "RunConfig",
    "SampledTeammate",
    "Stream",
    "TeammatePool",
    "Trajectory",
    "clip_loss",
    "entropy_loss",
    "episode_stats",
    "gae",
    "init_rollout",
    "init_seeds",
    "make_optimizer",
    "make_stream",
    "ppo_update",
    "rollout",
    "teammate_pool",
    "timestep_weights",
    "update_seeds",
    "value_loss",
]
