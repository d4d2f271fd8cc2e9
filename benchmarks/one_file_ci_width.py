"""Width of one-file (runs = episodes) 95% CIs of the mean: the evaluator's stratified bootstrap
(each member's episodes resampled on their own) against a bootstrap over whole episodes, for
every seed file of the committed reference entries (each file scored as a one-file record).

    python benchmarks/one_file_ci_width.py > benchmarks/results/one_file_ci_width.txt
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, "benchmarks")
from verify_false_alarms import clustered_mean, independent_mean  # noqa: E402

from aht_bench.evaluation.record import episode_score_matrices  # noqa: E402
from aht_bench.leaderboard.entries import entry_paths, read_json  # noqa: E402

for task in (
    "lbf-v1",
    "overcooked-cramped-room-v1",
    "overcooked-coord-ring-v2",
    "overcooked-forced-coord-v2",
):
    ratios = []
    for path in entry_paths(Path("leaderboard")):
        if f"--{task}--" not in path.name or path.name.startswith("random"):  # a floor row
            continue
        for m in episode_score_matrices(read_json(path)):
            a, b = independent_mean(m, 2000, 0, 0.95), clustered_mean(m, 2000, 0, 0.95)
            ratios.append((b["ci"][1] - b["ci"][0]) / (a["ci"][1] - a["ci"][0]))
    print(
        f"{task}: whole-episode CI width / stratified CI width over {len(ratios)} files: "
        f"median {np.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}"
    )
