"""Programmed (heuristic) teammates from the paper's evaluation set (App. "Evaluation Teammates").

LBF: `lbf_heuristic(name)` builds one of the `LBF_HEURISTICS` sequential-food agents
(`seq_agent_lexi`, ...); see `aht_bench.policies.heuristics.lbf`.
"""

from aht_bench.policies.heuristics.lbf import (
    LBF_HEURISTICS,
    SeqCarry,
    SequentialAgent,
    food_order,
    lbf_heuristic,
)

__all__ = ["LBF_HEURISTICS", "SeqCarry", "SequentialAgent", "food_order", "lbf_heuristic"]
