"""The config of ROTATE (`aht_bench.algorithms.rotate`): its fields, their checks and the loss
terms they set.

May import jax, numpy, optax, aht_bench.envs, aht_bench.policies, aht_bench.training and
aht_bench.algorithms only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aht_bench.algorithms.api import BR_HEAD, TeammateBRConfig
from aht_bench.algorithms.common import (
    check_choice,
    require_at_least,
    require_one_update,
    require_seat,
    require_teammate_and_ego_minibatches,
)
from aht_bench.training.config import EgoConfig, PPOConfig
from aht_bench.training.streams import LossTerm

VARIANTS = ("rotate", "per_trajectory", "no_buffer", "mixed_play", "minimax")
TEAMMATE_OBJECTIVES = ("eq7", "transition_mean", "public_code")
"""How L_REG weights its streams (`regret_loss_terms`); the first is `RotateConfig`'s default."""
V1_TEAMMATE_OBJECTIVE = "transition_mean"
"""The objective every ROTATE preset of a v1 task pins: what those presets trained before Eq. 7
became the default (the bundled agents in agents/rotate/), so a published preset keeps its
meaning. Presets of later task versions leave the default."""
LEGACY_FIELDS = {"branch_weights": "teammate_objective"}
"""Config field names older aht-bench wrote -> today's (`RotateConfig.upgrade_legacy`)."""
LEGACY_OBJECTIVES = {"unit": "transition_mean", "per_start_state": "eq7"}
"""`branch_weights` values older aht-bench wrote -> today's `teammate_objective` values."""
EGO_HEAD = 1
"""The teammate's value head for returns with the ego agent (`sigma^{-i,ego}`)."""


# --------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True, kw_only=True)
class RotateConfig(TeammateBRConfig):
    """A ROTATE run (paper Table rotate_hyperparams; "(T)" rows are `teammate_ppo`)."""

    iterations: int
    """Open-ended iterations T^iter of Alg. 1 (tables: OEL Iterations); one teammate each."""
    teammate_timesteps: int
    """Joint env steps of one teammate-generation phase, all rollouts counted (tables:
    Timesteps per Iter (T))."""
    ego_timesteps: int
    """Joint env steps of one ego-update phase (tables: Timesteps per Iter (Ego))."""
    num_envs: int
    """Parallel envs of every rollout (tables: Num Envs)."""
    rollout_length: int
    """Env steps per env and rollout between two PPO updates (not in the paper's tables)."""
    teammate_ppo: PPOConfig
    """PPO hyperparameters of the teammate and its best response (tables: the (T) rows)."""
    ego_ppo: PPOConfig
    """PPO hyperparameters of the ego agent (tables: the (Ego) rows)."""
    competence_weight_xp: float = 0.0
    """lambda_1 of Eq. constrained_state_based_regret_obj: teammate-BR return from XP states."""
    competence_weight_sp: float = 0.0
    """lambda_2 of Eq. constrained_state_based_regret_obj: teammate-BR return from SP states."""
    variant: str = "rotate"
    """One of `VARIANTS` (module docstring)."""
    competence_weight_p0: float = 0.0
    """lambda of Eq. traj_regret_obj_lambda (variant `per_trajectory` only)."""
    mixed_play_xp_coef: float = 1.0
    """alpha of CoMeDi: weight of the XP term (variant `mixed_play` only)."""
    mixed_play_coef: float = 1.0
    """beta of CoMeDi: weight of the mixed-play return term (variant `mixed_play` only)."""
    ego_seat: int = 0
    """The seat of the ego agent and of the best response; the teammate plays the other."""
    reset_ego_critic: bool = True
    """Re-initialise the ego's critic head at each ego update (Alg. rotate_ego_update line 3)."""
    teammate_objective: str = "eq7"
    """How the teammate's loss weights its streams, one of `TEAMMATE_OBJECTIVES` (variants
    `rotate`, `no_buffer`; `regret_loss_terms`). The old values `unit` and `per_start_state` are
    read as `transition_mean` and `eq7`."""

    def __post_init__(self) -> None:
        super().__post_init__()  # task fields, architectures
        check_choice("variant", self.variant, VARIANTS)
        objective = LEGACY_OBJECTIVES.get(self.teammate_objective, self.teammate_objective)
        object.__setattr__(self, "teammate_objective", objective)
        check_choice("teammate_objective", objective, TEAMMATE_OBJECTIVES)
        require_at_least(self, 1, "iterations", "num_envs", "rollout_length")
        require_seat("ego_seat", self.ego_seat)
        weights = ("competence_weight_xp", "competence_weight_sp", "competence_weight_p0")
        require_at_least(self, 0, *weights, "mixed_play_xp_coef", "mixed_play_coef")
        transitions = self.num_envs * self.rollout_length
        require_one_update(
            "teammate_timesteps",
            self.teammate_timesteps,
            self.teammate_batch_size,
            f"one teammate update takes {self.rollouts_per_update} rollouts x num_envs x "
            "rollout_length",
        )
        update = "one ego update takes num_envs x rollout_length"
        require_one_update("ego_timesteps", self.ego_timesteps, transitions, update)
        require_teammate_and_ego_minibatches(self, "each teammate stream", "num_envs")

    @staticmethod
    def upgrade_legacy(fields: dict[str, Any]) -> dict[str, Any]:
        """`fields` (field name -> value: a card's or run's config, `--set` overrides as
        strings) in today's names: `LEGACY_FIELDS` renamed, `LEGACY_OBJECTIVES` values
        replaced (`branch_weights="unit"` -> `teammate_objective="transition_mean"`). The one
        place old names are read; anything else is returned as it is."""
        out = {LEGACY_FIELDS.get(k, k): v for k, v in fields.items()}
        objective = out.get("teammate_objective")
        if isinstance(objective, str):
            out["teammate_objective"] = LEGACY_OBJECTIVES.get(objective, objective)
        return out

    @property
    def rollouts_per_update(self) -> int:
        """Rollouts per teammate update: SP, XP, SXP, XSP (or SP, XP, mixed, MP); SP, XP for
        `per_trajectory`; XP for `minimax`."""
        return {"per_trajectory": 2, "minimax": 1}.get(self.variant, 4)

    @property
    def teammate_batch_size(self) -> int:
        """Joint env steps of one teammate update, all rollouts counted."""
        return self.rollouts_per_update * self.num_envs * self.rollout_length

    @property
    def teammate_updates(self) -> int:
        """PPO updates of the teammate (and BR) per iteration."""
        return self.teammate_timesteps // self.teammate_batch_size

    @property
    def ego_updates(self) -> int:
        """PPO updates of the ego per iteration."""
        return self.ego_timesteps // (self.num_envs * self.rollout_length)

    @property
    def env_steps_per_iteration(self) -> int:
        """Joint env steps one iteration takes (both phases, whole updates only)."""
        return (
            self.teammate_updates * self.teammate_batch_size
            + self.ego_updates * self.num_envs * self.rollout_length
        )

    @property
    def ego_config(self) -> EgoConfig:
        """The ego phase as an `EgoConfig` (one phase's budget; drives `fixed_partner`)."""
        return self.ego_stage(self.num_envs, self.rollout_length, self.ego_seat)


def regret_loss_terms(objective: str, lambda_1: float, lambda_2: float) -> tuple[LossTerm, ...]:
    """The streams of the teammate's loss L_REG (Eq. regret_pol_loss, Table regret_loss_terms,
    the SP and SXP copies collected as the paper remarks) under `objective`, one of
    `TEAMMATE_OBJECTIVES`. Weight w_t of each stream's clip loss, a mean over the stream's
    transitions (N of them, in E episodes; advantages standardised per stream first):

        stream  sign head  eq7                  transition_mean    public_code
        D_SP     +1  BR    (1 + l_2)(t + 1)     (1 + l_2)(t + 1)   1
        D_SXP    +1  BR    (1 + l_1) N / E      1 + l_1            1
        D_XP     -1  ego   t + 1                t + 1              1
        D_XSP    -1  ego   N / E                1                  0

    `eq7`: Eq. constrained_state_based_regret_obj,
    `E_U(pXP,pSP)[V(s|BR) - V(s|ego)] + l_1 E_pXP[V(s|BR)] + l_2 E_pSP[V(s|BR)]`, with one unit
    of weight per sampled start state on every stream: on D_SP/D_XP each visited state is a
    start state and `t + 1` collects its copies (Eq. tsw_grad), on D_SXP/D_XSP each episode is
    one, and `N / E` turns the mean over transitions into the mean over episodes.
    `transition_mean`: Eq. regret_pol_loss read with every `ell` a mean over transitions: the
    branch streams then count `E / N` (one over their mean episode length) of Eq. 7's weight.
    `public_code`: the paper's public code (carolinewang01/rotate, CONF_OBJ_TYPE
    `sreg-xp_sreg-sp_ret-sxp`) standardises each stream's objective, weights included, on its
    own, so the weights and l_1, l_2 drop out; it has no `t + 1` and no policy-gradient term on
    XSP (whose data still trains the ego head). Left out here: the terms `c V(s|BR) - V(s|ego)`
    it adds to the XP and SP objectives before standardising, which depend on the state alone
    (zero expected policy gradient).
    """
    check_choice("teammate_objective", objective, TEAMMATE_OBJECTIVES)
    if objective == "public_code":
        return (
            LossTerm("sp", 1.0, False, 1.0, BR_HEAD),
            LossTerm("sxp", 1.0, False, 1.0, BR_HEAD),
            LossTerm("xp", 1.0, False, -1.0, EGO_HEAD),
            LossTerm("xsp", 0.0, False, -1.0, EGO_HEAD),
        )
    per_start_state = objective == "eq7"
    return (
        LossTerm("sp", 1.0 + lambda_2, True, 1.0, BR_HEAD),
        LossTerm("sxp", 1.0 + lambda_1, False, 1.0, BR_HEAD, per_start_state),
        LossTerm("xp", 1.0, True, -1.0, EGO_HEAD),
        LossTerm("xsp", 1.0, False, -1.0, EGO_HEAD, per_start_state),
    )


def teammate_loss_terms(config: RotateConfig) -> tuple[LossTerm, ...]:
    """The streams of the teammate's loss for `config.variant`.

    `rotate`/`no_buffer`: L_REG under `config.teammate_objective` (`regret_loss_terms`).
    `per_trajectory`: Eq. traj_regret_obj_lambda from p0. `mixed_play`: Eq. mp_regret_obj
    with CoMeDi's weights alpha (XP) and beta (MP). `minimax`: minus the ego's return, from p0,
    on the teammate's only value head.
    """
    if config.variant == "minimax":
        return (LossTerm("xp", 1.0, False, -1.0, 0),)
    if config.variant in ("rotate", "no_buffer"):
        return regret_loss_terms(
            config.teammate_objective, config.competence_weight_xp, config.competence_weight_sp
        )
    if config.variant == "per_trajectory":
        return (
            LossTerm("sp", 1.0 + config.competence_weight_p0, False, 1.0, BR_HEAD),
            LossTerm("xp", 1.0, False, -1.0, EGO_HEAD),
        )
    return (
        LossTerm("sp", 1.0, False, 1.0, BR_HEAD),
        LossTerm("xp", config.mixed_play_xp_coef, False, -1.0, EGO_HEAD),
        LossTerm("mp", config.mixed_play_coef, False, 1.0, BR_HEAD),
    )


def best_response_loss_terms(config: RotateConfig) -> tuple[LossTerm, ...]:
    """The streams of the best response's loss: L_BR of Eq. br_loss (SP + SXP, unit weights);
    SP alone for `per_trajectory`, SP + MP for `mixed_play`; none for `minimax` (no BR)."""
    if config.variant == "minimax":
        return ()
    second = {"per_trajectory": (), "mixed_play": ("mp",)}.get(config.variant, ("sxp",))
    return tuple(LossTerm(d, 1.0, False, 1.0, 0) for d in ("sp", *second))
