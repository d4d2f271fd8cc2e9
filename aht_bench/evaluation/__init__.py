"""Evaluation: scoring an agent against a teammate set (paper Sec. 6.1, BRProx).

- `sets`: teammate sets with bounds and seatings, loaded from `heldout/<task>/<version>/`
  with their sha256 verified (`load_set`); `EvaluationSet` for sets built in memory.
- `rollout`: the jitted runner (vmap over seatings and episodes, scan over time, the member a
  traced index); `gym_runner`: the step-by-step runner through the Gymnasium shell.
- `scores`: BRProx normalisation, aggregates (mean, IQM, median, worst case) with stratified
  bootstrap CIs and the probability of improvement (rliable).
- `evaluate`: `evaluate_agent_file`, `evaluate_agent_files` (the training seeds of one agent:
  CIs over seeds), `evaluate_policy`, `cross_play`; `record`: result records (JSON with a
  payload hash); `compare`: tables and plots of several records; `plots`: PNGs.
- `replay`: exact replays of evaluated episodes (`evaluate --replays`, the play page's saved
  episodes); `viewer`: a self-contained HTML page that plays them.
Building teammate sets (the development sets too, `aht_bench.heldout.devset`) trains agents
and lives in `aht_bench.heldout`; evaluation only loads and plays them.

May import numpy, jax, rliable, matplotlib, the standard library and aht_bench (envs,
policies, files).
"""

from aht_bench.evaluation.evaluate import (
    DEFAULT_EPISODES,
    cross_play,
    evaluate_agent_file,
    evaluate_agent_files,
    evaluate_policy,
)
from aht_bench.evaluation.record import ResultFileError, read_record, write_record
from aht_bench.evaluation.scores import (
    AGGREGATES,
    interval_estimates,
    normalize,
    probability_of_improvement,
    score_matrix,
)
from aht_bench.evaluation.sets import (
    EvaluationSet,
    TeammateSetError,
    TeammateSetIntegrityError,
    available_sets,
    default_seatings,
    load_set,
)

__all__ = [
    "AGGREGATES",
    "DEFAULT_EPISODES",
    "EvaluationSet",
    "ResultFileError",
    "TeammateSetError",
    "TeammateSetIntegrityError",
    "available_sets",
    "cross_play",
    "default_seatings",
    "evaluate_agent_file",
    "evaluate_agent_files",
    "evaluate_policy",
    "interval_estimates",
    "load_set",
    "normalize",
    "probability_of_improvement",
    "read_record",
    "score_matrix",
    "write_record",
]
