"""Issue 51: the self-play return of the teammates the medium ROTATE runs generated (teammate x
its best response) against quick IPPO's self-play return (3 seeds), both base returns.

    aht-bench train ippo --task overcooked-cramped_room-v2 --preset quick --seeds 3 \
        --out RUNS/ippo-quick-cr-v2
    aht-bench train ippo --task lbf-v1 --preset quick --seeds 3 --out RUNS/ippo-quick-lbf
    python benchmarks/teammate_sp_vs_ippo.py RUNS

The ROTATE side is read from the bundles (agents/rotate/<task>/v2/metrics.jsonl)."""

import json
import statistics as st
import sys

for task, bundle, ippo_dir in (
    ("overcooked-cramped_room-v2", "agents/rotate/cramped_room/v2", "ippo-quick-cr-v2"),
    ("lbf-v1", "agents/rotate/lbf/v2", "ippo-quick-lbf"),
):
    log = f"{sys.argv[1]}/{ippo_dir}/metrics.jsonl"
    try:
        rows = [json.loads(line) for line in open(log)]
    except FileNotFoundError:
        print(f"{task}: no IPPO run yet")
        continue
    n = len(rows)
    tail = rows[n - max(1, n // 10) :]
    per_seed = []
    for s in range(3):
        vals = [r["episode_return"][s] for r in tail if r["episode_return"][s] is not None]
        per_seed.append(st.mean(vals))
    ippo = st.mean(per_seed)
    rot = [json.loads(line) for line in open(f"{bundle}/metrics.jsonl")]
    sp = [x for r in rot for x in r["sp_return"]]
    last = rot[-1]["sp_return"]
    half = ippo / 2
    print(f"## {task}")
    print(
        "quick IPPO self-play (base return, mean over the last 10% of updates; "
        f"{n} updates), per seed: "
        + ", ".join(f"{x:.4g}" for x in per_seed)
        + f"; mean {ippo:.4g}; half {half:.4g}"
    )
    print(
        f"ROTATE medium teammates' SP return (teammate x its BR, base return), {len(sp)} teammates "
        f"({len(rot)} iterations x 3 seeds): mean {st.mean(sp):.4g}, "
        f"min {min(sp):.4g}, max {max(sp):.4g}; "
        f"{sum(x < half for x in sp)} of {len(sp)} below half of IPPO's"
    )
    print(
        "  last iteration's teammates: "
        + ", ".join(f"{x:.4g}" for x in last)
        + f" (mean {st.mean(last):.4g})"
    )
    print(
        f"  mean >= half of IPPO's: {st.mean(sp) >= half}; "
        f"last iteration's mean >= half: {st.mean(last) >= half}"
    )
    print()
