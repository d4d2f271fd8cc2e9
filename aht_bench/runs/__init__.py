"""Long training runs on disk: checkpoints, exact resume, metrics, curves, signals, divergence.

    from aht_bench import runs
    spec = runs.RunSpec("ippo", "overcooked-cramped_room-v1", preset="quick", num_seeds=3)
    outcome = runs.train(runs.get("ippo"), spec, Path("runs/ippo-cr"))  # resume=True continues

This package sits above the methods (`aht_bench.algorithms`): it imports them, they never
import it. One driver (`driver.train`) runs every method through one loop (`loops.MethodLoop`
over the method's `Method`, `aht_bench.algorithms.api`); the method's `schedule` says what one
*step* is: one PPO update for ippo, br and ego, one whole outer-loop iteration for ROTATE and
the baselines, and its `report` (`aht_bench.training.report`) what the run shows. A run lives in
one folder (`folder.RunDir`):

    run.json                 what runs (RunSpec), the resolved config, teammates (+ sha256),
                             the backend and whether its runs repeat (`folder.repeatable`)
    metrics.jsonl            one JSON line per step: update (or iteration), env_steps, time_s,
                             and every metric as a list over seeds (NaN written as null)
    checkpoints/latest.json  the current checkpoint (written last, atomically)
    checkpoints/update-NNNNNN.safetensors(+.json)   whole train states (the last two kept;
                             iteration-NNNNNN for iteration methods, one after every iteration)
    curve.png                the learning curve (base return vs env steps, per seed and mean);
                             iteration methods: what they generated, and the ego's return, per
                             iteration (`curves`)
    policies/final/…         the trained learners as policy files (`load_policy`); iteration
                             methods: per seed the ego and the generated population
                             (`load_population`)
    policies/update-NNNNNN/… the learners after `config.checkpoint_updates` (FCP pools)

Checkpoints hold the whole train state (params, optimiser states, env states, carries, PRNG
keys, step counter), so a run killed at any moment (even SIGKILL) and resumed from its last
checkpoint ends bit-identical to one never stopped. SIGINT (Ctrl-C) and SIGTERM stop the run at
the next step boundary after a checkpoint (`TrainingInterrupted`; the CLI exits 130/143); a
second Ctrl-C aborts at once. Non-finite losses or parameters stop the run before anything of
that step is saved (`TrainingDiverged`, naming the step, seed and metric).

Modules: `spec` (RunSpec, overrides, teammates), `folder` (the run folder, run.json,
metrics.jsonl), `curves` (curve.png), `loops` (what a step is), `driver` (`train`), `registry`
(name -> method), `smoke` (per method, the overrides of a run of a few updates: the method
contract test and `benchmarks/method_fingerprints.py` run them).

May import jax, numpy, matplotlib, tqdm, the standard library, aht_bench.files, aht_bench.envs,
aht_bench.policies, aht_bench.training and aht_bench.algorithms.
"""

from aht_bench.runs.driver import (
    KEEP_CHECKPOINTS,
    TrainingDiverged,
    TrainingInterrupted,
    check_teammates,
    train,
)
from aht_bench.runs.folder import (
    CURVE_METRIC,
    RUN_FORMAT,
    RUN_FORMAT_VERSION,
    RunDir,
    RunDirError,
    RunOutcome,
    final_returns,
    read_metrics,
    read_spec,
)
from aht_bench.runs.loops import Algorithm, MethodLoop
from aht_bench.runs.registry import ALGORITHMS, get
from aht_bench.runs.spec import RunSpec, apply_overrides, resolve_teammates

__all__ = [
    "ALGORITHMS",
    "CURVE_METRIC",
    "KEEP_CHECKPOINTS",
    "RUN_FORMAT",
    "RUN_FORMAT_VERSION",
    "Algorithm",
    "MethodLoop",
    "RunDir",
    "RunDirError",
    "RunOutcome",
    "RunSpec",
    "TrainingDiverged",
    "TrainingInterrupted",
    "apply_overrides",
    "check_teammates",
    "final_returns",
    "get",
    "read_metrics",
    "read_spec",
    "resolve_teammates",
    "train",
]
