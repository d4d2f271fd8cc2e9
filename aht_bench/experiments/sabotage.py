"""The sabotage-game experiment: paper Sec. 6 RQ2 (Fig. `sabotage_example_histogram`) and App.
`sabotage_game_extended` (Fig. `sabotage_heatmap_mean`).

    sabotage.run(Path("results/sabotage"))                      # 10 seeds, ~20 min on 2 cores
    sabotage.run(out, sweep=True, weights=range(6))             # + the competence-weight sweep
    sabotage.run(out, seeds=2, iterations=1, num_envs=4, ...)   # `RotateConfig` overrides

Trains the teammate generator on `sabotage-v1` (`sabotage_analysis.sabotage_experiment`, preset
`sabotage`) with ROTATE's competence-bounded per-state regret at the preset's weights
(lambda_1 = 3, lambda_2 = 0) under each of its three teammate objectives
(`rotate.TEAMMATE_OBJECTIVES`: Eq. 7, the transition-mean reading of Eq. regret_pol_loss, the
paper's public code's) and with plain per-trajectory regret (lambda = 0, Eq.
`traj_regret_obj`: RQ2 compares ROTATE with "per-trajectory regret"; the competence-bounded
version is the appendix's sweep), `seeds` seeds each (vmapped: one call per method). It reads
the last generated teammate's action probabilities at each of the 341 non-terminal states and
writes into `out_dir`:

    sabotage.csv           one row per method x seed x state (`STATE_COLUMNS`)
    sabotage_summary.json  per method and seed: the `sabotage_analysis.sabotage_summary` fractions
                           and the
                           runs' returns per iteration; the configs, overrides and versions
    sabotage_hist.png      histogram of P(S) over the 341 states, one panel per method
    sabotage_table.md      the per-method table of the summary (`markdown_table`), as
                           docs/rotate.md shows it (`write_docs_table` puts it there)

With `sweep=True`, also every (lambda_1, lambda_2) in weights x weights for ROTATE (the default
objective, Eq. 7) and every lambda in weights for per-trajectory regret, one call per cell
(seeds vmapped; a cell whose config equals one already run is reused):

    sabotage_sweep.csv     one row per cell x seed (`SWEEP_COLUMNS`)
    sabotage_sweep.png     mean P(S) over lambda_1 x lambda_2 (ROTATE) and over lambda

Every file is written whole (temp file + rename) once its runs are done, the main four before
the sweep starts: an interrupted run leaves finished files or none, never half a file.
`plan` checks everything (overrides, weights, seeds, the folder) before any work or writing;
`execute` runs a plan; `run` is both.

May import jax, numpy, matplotlib, tqdm, the standard library and aht_bench (algorithms, envs,
training, files).
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import io
import json
import math
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from aht_bench import hostinfo
from aht_bench.algorithms import rotate
from aht_bench.envs.matrix import sabotage_game
from aht_bench.experiments import sabotage_analysis
from aht_bench.experiments.sabotage_analysis import SabotageResult
from aht_bench.files import atomic_write_bytes

TASK_ID = "sabotage-v1"
OBJECTIVES = rotate.TEAMMATE_OBJECTIVES
"""ROTATE's teammate objectives compared, as `RotateConfig.teammate_objective` values."""
SWEEP_OBJECTIVE = OBJECTIVES[0]
"""The objective of the sweep's ROTATE cells: `RotateConfig`'s default, Eq. 7."""
METHODS = tuple(f"rotate-{o}" for o in OBJECTIVES) + ("per_trajectory",)
"""The main runs, by key (`Cell.key`): ROTATE under each objective, then per-trajectory regret."""
METHOD_LABELS = {
    "rotate-eq7": "ROTATE, Eq. 7 (one unit per start state)",
    "rotate-transition_mean": "ROTATE, L_REG as transition means",
    "rotate-public_code": "ROTATE, the paper's public code's loss",
    "per_trajectory": "per-trajectory regret",
}
STREAM_WEIGHTS = {
    "rotate-eq7": "SP (1+l2)(t+1), SXP (1+l1) N/E, XP t+1, XSP N/E",
    "rotate-transition_mean": "SP (1+l2)(t+1), SXP 1+l1, XP t+1, XSP 1",
    "rotate-public_code": "SP 1, SXP 1, XP 1, XSP 0 (l1, l2 drop out)",
    "per_trajectory": "SP 1+l, XP 1 (from p0 only)",
}
"""The weight w_t of each stream of the teammate's clip loss (signs + on SP/SXP, - on XP/XSP;
N/E: the branch batch's transitions per episode; `rotate.regret_loss_terms`)."""
LOW, HIGH, REACHED = 0.05, 0.9, 0.01
"""Thresholds of `sabotage_analysis.sabotage_summary`: P(S) < LOW, P(S) > HIGH, own reach >=
REACHED."""
FIXED_FIELDS = (
    "task_id",
    "variant",
    "teammate_objective",
    "competence_weight_xp",
    "competence_weight_sp",
    "competence_weight_p0",
)
"""Config fields the experiment sets itself (the competence weights: `sweep` and `weights`)."""
PPO_FIELDS = ("teammate_ppo", "ego_ppo")
"""Config fields overridden field by field (`teammate_ppo.learning_rate=...`)."""
STATE_COLUMNS = (
    "method",  # "rotate" or "per_trajectory"
    "objective",  # the teammate objective (rotate; empty for per_trajectory)
    "lambda_1",  # competence_weight_xp (rotate; empty for per_trajectory)
    "lambda_2",  # competence_weight_sp (rotate; empty for per_trajectory)
    "lambda",  # competence_weight_p0 (per_trajectory; empty for rotate)
    "seed",  # index of the vmapped seed
    "state",  # index in `enumerate_nonterminal_states` order
    "history",  # joint actions so far, seat 0 first: "HT,HH"; "-" at the start
    "p_H",
    "p_T",
    "p_S",  # the last teammate's action probabilities at the state
    "own_reach",  # P(the teammate plays its own actions of the history)
    "sp_reach",  # P(an episode with its best response passes the state)
    "xp_reach",  # P(an episode with the ego it was trained against passes the state)
)
SWEEP_COLUMNS = (
    "cell",  # index of the grid cell: ROTATE's lambda_1-major, then per_trajectory's
    "method",
    "objective",  # SWEEP_OBJECTIVE (rotate; empty for per_trajectory)
    "lambda_1",
    "lambda_2",
    "lambda",
    "seed",
    "mean_p_s",  # mean P(S) over the 341 states
    "frac_low",  # fraction of states with P(S) < LOW
    "frac_high",  # fraction with P(S) > HIGH
    "trained_states",  # states its SP or XP episodes pass with probability >= REACHED
    "trained_frac_low",
    "trained_frac_high",
    "p_sabotage_xp",  # P(it plays S in an episode with the ego)
    "reached_states",  # states the teammate's own actions reach with probability >= REACHED
    "reached_frac_low",
    "reached_frac_high",
    "train_seconds",  # wall time of the cell's training call (all seeds)
)
MAIN_FILES = ("sabotage.csv", "sabotage_summary.json", "sabotage_hist.png", "sabotage_table.md")
SWEEP_FILES = ("sabotage_sweep.csv", "sabotage_sweep.png")
_RETURN_METRICS = ("sp_return", "xp_return", "regret", "ego_return")


class Cell(NamedTuple):
    """One training call: an objective and its whole config (competence weights included)."""

    method: str  # `RotateConfig.variant`: "rotate" or "per_trajectory"
    config: rotate.RotateConfig

    @property
    def objective(self) -> str | None:
        """ROTATE's teammate objective; None for per-trajectory regret (it has its own)."""
        return self.config.teammate_objective if self.method == "rotate" else None

    @property
    def key(self) -> str:
        """`rotate-<objective>` or `per_trajectory`: the entry in `METHODS` and the summary."""
        return f"rotate-{self.objective}" if self.method == "rotate" else self.method

    @property
    def weights(self) -> dict[str, float | None]:
        """lambda_1, lambda_2 (ROTATE) or lambda (per-trajectory); None where not used."""
        c = self.config
        rot = self.method == "rotate"
        return {
            "lambda_1": c.competence_weight_xp if rot else None,
            "lambda_2": c.competence_weight_sp if rot else None,
            "lambda": None if rot else c.competence_weight_p0,
        }

    @property
    def name(self) -> str:
        """E.g. "rotate eq7 l1=3 l2=0", "per_trajectory l=0"."""
        w = self.weights
        if self.method == "rotate":
            return f"rotate {self.objective} l1={w['lambda_1']:g} l2={w['lambda_2']:g}"
        return f"per_trajectory l={w['lambda']:g}"


@dataclasses.dataclass(frozen=True)
class Plan:
    """What `execute` runs: checked by `plan`, nothing run or written yet."""

    out_dir: Path
    seeds: int
    main: tuple[Cell, ...]  # ROTATE at the preset's weights per objective, per-trajectory at 0
    sweep: tuple[Cell, ...]  # empty unless sweeping: ROTATE's grid (Eq. 7), per_trajectory's row
    weights: tuple[float, ...]  # the sweep's competence weights (empty unless sweeping)
    overrides: Mapping[str, Any]  # RotateConfig field -> value, applied to every cell

    @property
    def cells(self) -> tuple[Cell, ...]:
        """Every distinct training call, main ones first."""
        return tuple(dict.fromkeys(self.main + self.sweep))


class SabotageRun(NamedTuple):
    """What `execute` returns."""

    plan: Plan
    results: dict[Cell, SabotageResult]  # per cell run (main and sweep)
    train_seconds: dict[Cell, float]  # wall time of each cell's training call
    summary: dict[str, Any]  # the contents of sabotage_summary.json
    files: tuple[Path, ...]  # the files written


# ------------------------------------------------------------------------------------ overrides


def _close_hint(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _overridable() -> list[str]:
    names = [f.name for f in dataclasses.fields(rotate.RotateConfig)]
    return [n for n in names if n not in FIXED_FIELDS]


def _check_field(name: str) -> None:
    if rotate.LEGACY_FIELDS.get(name, name) in FIXED_FIELDS:
        raise ValueError(
            f"override {name!r} is set by the experiment (ROTATE under each teammate objective "
            "at the preset's weights, per-trajectory regret at 0); sweep the competence weights "
            "with --sweep --weights"
        )
    known = _overridable()
    if name not in known:
        raise ValueError(
            f"unknown override {name!r}{_close_hint(name, known)}; fields: "
            f"{', '.join(known)} (PPO fields as teammate_ppo.<field>, ego_ppo.<field>)"
        )


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """`FIELD=VALUE` strings (as typed after `--set`) -> `RotateConfig` field -> value.

    PPO hyperparameters are set one at a time, `teammate_ppo.num_epochs=1`, on top of the
    `sabotage` preset's. Typed and validated as `aht-bench train --set` does
    (`runs.apply_overrides`); raises ValueError naming the bad item (unknown or fixed field,
    bad value).
    """
    from aht_bench.runs import apply_overrides

    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise ValueError(f"{item!r} is not FIELD=VALUE")
        head = name.partition(".")[0]
        if head in PPO_FIELDS and "." not in name:
            raise ValueError(f"override {name!r} takes subfields: {name}.<field>=VALUE")
        if head not in PPO_FIELDS:
            _check_field(name)
        pairs.append((name, value))
    config = apply_overrides(rotate.preset("sabotage", TASK_ID), tuple(pairs))
    return {head: getattr(config, head) for head in {n.partition(".")[0] for n, _ in pairs}}


# ----------------------------------------------------------------------------------------- plan


def _weights(values: Iterable[float]) -> tuple[float, ...]:
    out = tuple(float(w) for w in values)
    if not out:
        raise ValueError("weights is empty: give at least one competence weight, e.g. 0,1,2")
    bad = [w for w in out if not math.isfinite(w) or w < 0]
    if bad:
        raise ValueError(f"weights {bad} are invalid: competence weights are finite and >= 0")
    if len(set(out)) != len(out):
        raise ValueError(f"weights {list(out)} repeat a value: give each weight once")
    return out


def _cell(method: str, overrides: Mapping[str, Any], **fields: Any) -> Cell:
    config = rotate.preset("sabotage", TASK_ID, variant=method, **fields, **overrides)
    return Cell(method, config)


DEFAULT_SEEDS = 10
"""Trials per method: enough for a 95% CI over seeds in each cell of the table (with 3, the
seed-to-seed and host-to-host spread was larger than the differences the table showed)."""
CI_REPS = 2000
"""Bootstrap resamples of the seeds behind each CI of the table (`mean_ci`)."""


def mean_ci(
    values: Sequence[float], reps: int = CI_REPS, seed: int = 0
) -> tuple[float, float, float]:
    """(mean, low, high): the mean over seeds of `values` with a 95% percentile bootstrap CI
    (the seeds resampled with replacement `reps` times, numpy's generator seeded with `seed`,
    so a summary always renders the same CI). One value: a zero-width interval."""
    x = np.asarray(values, np.float64)
    if x.size == 1:
        return float(x[0]), float(x[0]), float(x[0])
    draws = np.random.default_rng(seed).integers(0, x.size, size=(reps, x.size))
    means = x[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(x.mean()), float(low), float(high)


def host() -> dict[str, Any]:
    """The machine a summary was measured on (`aht_bench.hostinfo.cpu`, with its model name as
    `cpu`): the numbers are bit-identical only on one host, and two hosts of one CPU name can
    differ (benchmarks/results/cross_host.md)."""
    info = hostinfo.cpu()
    return {"cpu": info.pop("model"), **info}


def plan(
    out_dir: Path | str,
    seeds: int = DEFAULT_SEEDS,
    sweep: bool = False,
    weights: Iterable[float] = range(6),
    **config_overrides: Any,
) -> Plan:
    """Check everything and build every cell's config; run nothing, write nothing.

    `config_overrides`: `RotateConfig` fields (not `FIXED_FIELDS`) applied to every cell, e.g.
    `iterations=1`. Raises ValueError naming the bad argument.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {out} is a file; give a folder (new or existing)")
    if isinstance(seeds, bool) or not isinstance(seeds, int | np.integer) or seeds < 1:
        raise ValueError(f"seeds={seeds!r} is invalid: use a whole number >= 1")
    for name in config_overrides:
        _check_field(name)
    overrides = dict(config_overrides)
    try:
        main = tuple(  # the preset's lambda_1, lambda_2
            _cell("rotate", overrides, teammate_objective=o) for o in OBJECTIVES
        ) + (_cell("per_trajectory", overrides, competence_weight_p0=0.0),)
        grid: tuple[Cell, ...] = ()
        sweep_weights: tuple[float, ...] = ()
        if sweep:
            sweep_weights = _weights(weights)
            grid = tuple(
                _cell(
                    "rotate",
                    overrides,
                    teammate_objective=SWEEP_OBJECTIVE,
                    competence_weight_xp=w1,
                    competence_weight_sp=w2,
                )
                for w1 in sweep_weights
                for w2 in sweep_weights
            ) + tuple(
                _cell("per_trajectory", overrides, competence_weight_p0=w) for w in sweep_weights
            )
    except TypeError as e:  # a wrongly typed override value reaching the config's checks
        raise ValueError(f"an override has the wrong type: {e}") from None
    return Plan(out, int(seeds), main, grid, sweep_weights, overrides)


# ------------------------------------------------------------------------------------- execute


def _train(cell: Cell, seeds: int, overrides: Mapping[str, Any]) -> SabotageResult:
    c = cell.config
    result = sabotage_analysis.sabotage_experiment(
        c.variant,
        seeds,
        c.competence_weight_xp,
        c.competence_weight_sp,
        c.competence_weight_p0,
        teammate_objective=c.teammate_objective,
        **overrides,
    )
    if result.config != c:
        raise RuntimeError(f"{cell.name}: sabotage_experiment ran {result.config}, not {c}")
    return result


def histories(result: SabotageResult) -> list[str]:
    """Each state's history as text, seat 0's action first at each step: "HT,HH"; "-" = start."""
    names = sabotage_game().action_names
    out = []
    for h in np.asarray(result.states.inner.history):
        played = h[h[:, 0] >= 0]
        out.append(",".join(names[a] + names[b] for a, b in played) or "-")
    return out


def _summary_rows(result: SabotageResult) -> list[dict[str, Any]]:
    s = sabotage_analysis.sabotage_summary(result, low=LOW, high=HIGH, reached=REACHED)
    rows = []
    for seed in range(result.p_sabotage.shape[0]):
        row: dict[str, Any] = {"seed": seed}
        for k, v in s.items():
            row[k] = int(v[seed]) if k.endswith("_states") else float(v[seed])
        rows.append(row)
    return rows


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    return value


def _csv_bytes(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue().encode()


def _versions() -> dict[str, str]:
    import jax

    from aht_bench import __version__

    return {"aht_bench": __version__, "jax": jax.__version__, "numpy": np.__version__}


def _write_main(run: SabotageRun) -> list[Path]:
    p = run.plan
    rows = []
    for cell in p.main:
        r = run.results[cell]
        w = cell.weights
        text = histories(r)
        for seed in range(p.seeds):
            for i, h in enumerate(text):
                probs = r.p_actions[seed, i]
                rows.append(
                    (cell.method, cell.objective, w["lambda_1"], w["lambda_2"], w["lambda"])
                    + (seed, i, h)
                    + tuple(float(x) for x in probs)
                    + (float(r.own_reach[seed, i]),)
                    + (float(r.sp_reach[seed, i]), float(r.xp_reach[seed, i]))
                )
    paths = [p.out_dir / name for name in MAIN_FILES]
    atomic_write_bytes(paths[0], _csv_bytes(STATE_COLUMNS, rows))
    atomic_write_bytes(paths[1], (json.dumps(run.summary, indent=2) + "\n").encode())
    plot_histogram(
        {cell.key: run.results[cell].p_sabotage for cell in p.main},
        {cell.key: f"{METHOD_LABELS[cell.key]}, {_weight_text(cell)}" for cell in p.main},
        paths[2],
    )
    atomic_write_bytes(paths[3], markdown_table(run.summary).encode())
    return paths


def _weight_text(cell: Cell) -> str:
    w = cell.weights
    if cell.method == "rotate":
        return f"$\\lambda_1$={w['lambda_1']:g}, $\\lambda_2$={w['lambda_2']:g}"
    return f"$\\lambda$={w['lambda']:g}"


def _summary(
    plan: Plan, results: Mapping[Cell, SabotageResult], seconds: Mapping[Cell, float]
) -> dict[str, Any]:
    methods = {}
    for cell in plan.main:
        r = results[cell]
        per_seed = _summary_rows(r)
        for row in per_seed:
            for k in _RETURN_METRICS:
                if k in r.metrics:
                    row[k] = np.asarray(r.metrics[k])[row["seed"]].tolist()
        methods[cell.key] = {
            "label": METHOD_LABELS[cell.key],
            "variant": cell.method,
            "objective": cell.objective,
            "stream_weights": STREAM_WEIGHTS[cell.key],
            **cell.weights,
            "train_seconds": round(seconds[cell], 1),
            "seeds": per_seed,
            "config": _jsonable(cell.config),
        }
    return {
        "experiment": "sabotage",
        "paper": "ROTATE Sec. 6 RQ2, Fig. sabotage_example_histogram",
        "task_id": TASK_ID,
        "versions": _versions(),
        "host": host(),
        "num_seeds": plan.seeds,
        "key": "jax.random.PRNGKey(0) (sabotage_experiment's default), split over seeds",
        "thresholds": {"low": LOW, "high": HIGH, "reached": REACHED},
        "overrides": _jsonable(plan.overrides),
        "sweep_weights": list(plan.weights),
        "methods": methods,
    }


def _write_sweep(run: SabotageRun) -> list[Path]:
    p = run.plan
    rows = []
    for index, cell in enumerate(p.sweep):
        w = cell.weights
        for row in _summary_rows(run.results[cell]):
            rows.append(
                (index, cell.method, cell.objective, w["lambda_1"], w["lambda_2"], w["lambda"])
                + (row["seed"],)
                + tuple(row[k] for k in ("mean", "frac_low", "frac_high"))
                + tuple(row[k] for k in ("trained_states", "trained_frac_low"))
                + tuple(row[k] for k in ("trained_frac_high", "p_sabotage_xp"))
                + tuple(row[k] for k in ("reached_states", "reached_frac_low"))
                + (row["reached_frac_high"],)
                + (round(run.train_seconds[cell], 1),)
            )
    paths = [p.out_dir / name for name in SWEEP_FILES]
    atomic_write_bytes(paths[0], _csv_bytes(SWEEP_COLUMNS, rows))
    n = len(p.weights)
    means = np.array([run.results[c].p_sabotage.mean() for c in p.sweep])
    plot_sweep(p.weights, means[: n * n].reshape(n, n), means[n * n :], p.seeds, paths[1])
    return paths


def execute(plan: Plan, progress: bool = True) -> SabotageRun:
    """Run `plan`'s cells (a progress bar over them on stderr) and write its files."""
    from tqdm import tqdm

    results: dict[Cell, SabotageResult] = {}
    seconds: dict[Cell, float] = {}
    files: list[Path] = []
    run = SabotageRun(plan, results, seconds, {}, ())
    bar = tqdm(
        total=len(plan.cells),
        unit="run",
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    with bar:
        for cell in plan.cells:
            bar.set_postfix_str(f"{cell.name}, {plan.seeds} seeds")
            start = time.perf_counter()
            results[cell] = _train(cell, plan.seeds, plan.overrides)
            seconds[cell] = time.perf_counter() - start
            bar.update()
            if not files and all(c in results for c in plan.main):
                run = run._replace(summary=_summary(plan, results, seconds))
                files += _write_main(run)
    if plan.sweep:
        files += _write_sweep(run)
    return run._replace(files=tuple(files))


def run(
    out_dir: Path | str,
    seeds: int = DEFAULT_SEEDS,
    sweep: bool = False,
    weights: Iterable[float] = range(6),
    progress: bool = True,
    **config_overrides: Any,
) -> SabotageRun:
    """`plan` then `execute`: train, measure and write the files into `out_dir` (module
    docstring). ValueError (before any work) for bad arguments."""
    return execute(plan(out_dir, seeds, sweep, weights, **config_overrides), progress)


# ------------------------------------------------------------------------------- the docs table

DOCS_BEGIN = "<!-- sabotage-table: written by aht-bench experiment sabotage-table; do not edit -->"
DOCS_END = "<!-- /sabotage-table -->"
"""The markers of the block `write_docs_table` replaces (docs/rotate.md)."""


def _cell_ci(values: Iterable[float], digits: int = 3) -> str:
    mean, low, high = mean_ci(list(values))
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def direction_claims(summary: Mapping[str, Any]) -> dict[str, bool]:
    """The table's direction claims, each True when the 95% CIs over seeds are apart:
    per-trajectory regret's teammate plays S with the ego more than ROTATE's with Eq. 7
    (`p_sabotage_xp`), and has a larger share of its visited states with P(S) above the
    threshold (`trained_frac_high`)."""
    methods = summary["methods"]
    out = {}
    for metric in ("p_sabotage_xp", "trained_frac_high"):
        _, _, eq7_high = mean_ci([r[metric] for r in methods["rotate-eq7"]["seeds"]])
        _, traj_low, _ = mean_ci([r[metric] for r in methods["per_trajectory"]["seeds"]])
        out[f"per-trajectory above Eq. 7: {metric}"] = traj_low > eq7_high
    return out


def markdown_table(summary: Mapping[str, Any], source: str | None = None) -> str:
    """The main runs of a `sabotage_summary.json` (its contents, `summary`), one row per
    method with the per-seed values side by side, as markdown; `source` (the JSON's path) is
    named in the caption. Only `summary` is read, so a committed JSON renders the same table
    whenever it is rendered."""
    t = summary["thresholds"]
    seeds = summary["num_seeds"]
    versions = ", ".join(f"{k} {v}" for k, v in summary["versions"].items())
    where = f" from `{source}`" if source else ""
    machine = summary.get("host")
    if not machine:
        measured = "host not recorded"
    elif machine.get("family") is None:  # summaries written before the CPU's ids were kept
        measured = f"measured on {machine['cpu']} ({machine['cores']} cores)"
    else:
        measured = f"measured on {hostinfo.describe(machine)}"
    lines = [
        f"`{summary.get('task_id', TASK_ID)}`, {seeds} seeds per method (key: {summary['key']}); "
        "P(S): the last generated teammate's probability of S at each of the 341 non-terminal "
        "states; visited: the states its training episodes pass (with its best response or "
        f"with the ego it was trained against) with probability >= {t['reached']:g}, exact over "
        "the game tree; P(plays S): the probability that it plays S in an episode with that "
        "ego / with its best response; own reach: the states its own actions reach with "
        f"probability >= {t['reached']:g} whatever the partner plays; each cell: the mean over "
        f"the {seeds} seeds [95% bootstrap CI over seeds, {CI_REPS} resamples]{where} "
        f"({versions}; {measured}). Bit-identical repeats hold on one host only; on another "
        "CPU the per-seed values differ, the CIs are what carries over.",
        "",
        f"| method | stream weights w_t | lambda | P(S) > {t['high']:g} at the visited states "
        "| visited states | P(plays S) with the ego | P(plays S) with its BR "
        f"| P(S) > {t['high']:g} at own-reach states | own-reach states "
        f"| P(S) > {t['high']:g}, all 341 | P(S) < {t['low']:g}, all 341 | mean P(S), all 341 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in summary["methods"].values():
        if m["lambda"] is None:
            weights = f"l1 = {m['lambda_1']:g}, l2 = {m['lambda_2']:g}"
        else:
            weights = f"l = {m['lambda']:g}"
        rows = m["seeds"]
        lines.append(
            f"| {m['label']} | {m['stream_weights']} | {weights} "
            f"| {_cell_ci(r['trained_frac_high'] for r in rows)} "
            f"| {_cell_ci((r['trained_states'] for r in rows), 1)} "
            f"| {_cell_ci(r['p_sabotage_xp'] for r in rows)} "
            f"| {_cell_ci(r['p_sabotage_sp'] for r in rows)} "
            f"| {_cell_ci(r['reached_frac_high'] for r in rows)} "
            f"| {_cell_ci((r['reached_states'] for r in rows), 1)} "
            f"| {_cell_ci(r['frac_high'] for r in rows)} "
            f"| {_cell_ci(r['frac_low'] for r in rows)} "
            f"| {_cell_ci(r['mean'] for r in rows)} |"
        )
    claims = (
        direction_claims(summary)
        if {"rotate-eq7", "per_trajectory"} <= set(summary["methods"])
        else {}
    )
    if claims:
        lines += ["", "Direction claims (95% CIs apart): " + "; ".join(
            f"{name}: {'holds' if held else 'CIs overlap'}" for name, held in claims.items()
        ) + "."]  # fmt: skip
    return "\n".join(lines) + "\n"


def docs_table(text: str) -> str | None:
    """The table between `DOCS_BEGIN` and `DOCS_END` in `text` (a markdown file's), or None
    when it has no such block."""
    begin, end = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if begin < 0 or end < begin:
        return None
    return text[begin + len(DOCS_BEGIN) : end].strip("\n") + "\n"


def write_docs_table(summary_path: Path | str, docs_path: Path | str) -> str:
    """Replace the block between the markers of `docs_path` with `markdown_table` of the JSON
    at `summary_path` (named by the path as given); returns the table. ValueError if the file
    has no block."""
    summary_path, docs_path = Path(summary_path), Path(docs_path)
    table = markdown_table(json.loads(summary_path.read_text()), summary_path.as_posix())
    text = docs_path.read_text()
    if docs_table(text) is None:
        raise ValueError(
            f"{docs_path} has no table block: put the lines {DOCS_BEGIN!r} and {DOCS_END!r} "
            "where the table goes"
        )
    head, _, rest = text.partition(DOCS_BEGIN)
    _, _, tail = rest.partition(DOCS_END)
    atomic_write_bytes(docs_path, f"{head}{DOCS_BEGIN}\n{table}{DOCS_END}{tail}".encode())
    return table


# ------------------------------------------------------------------------------------- figures


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


_COLORS = {
    "rotate-eq7": "#4c72b0",
    "rotate-transition_mean": "#55a868",
    "rotate-public_code": "#8172b2",
    "per_trajectory": "#c44e52",
}


def plot_histogram(
    p_sabotage: Mapping[str, np.ndarray], titles: Mapping[str, str], path: Path
) -> None:
    """One panel per method: P(S) over the states, (seeds, states) arrays; bars = the mean
    count per seed, outlines = each seed."""
    plt = _pyplot()
    bins = np.linspace(0.0, 1.0, 21)
    fig, axes = plt.subplots(
        1, len(p_sabotage), figsize=(4.6 * len(p_sabotage), 3.9), sharey=True, squeeze=False
    )
    styles = ("-", "--", ":", "-.")
    for ax, (method, p) in zip(axes[0], p_sabotage.items(), strict=True):
        color = _COLORS.get(method, "#555555")
        pooled, _ = np.histogram(p.ravel(), bins)
        ax.bar(
            bins[:-1],
            pooled / len(p),
            width=np.diff(bins),
            align="edge",
            color=color,
            alpha=0.45,
            label=f"mean of {len(p)} seeds",
        )
        for seed, ps in enumerate(p):
            counts, _ = np.histogram(ps, bins)
            ax.stairs(counts, bins, color=color, lw=1.1, ls=styles[seed % 4], label=f"seed {seed}")
        high = ", ".join(f"{x:.2f}" for x in (p > HIGH).mean(axis=1))
        low = ", ".join(f"{x:.2f}" for x in (p < LOW).mean(axis=1))
        ax.set_title(
            f"{titles[method]}\nper seed: P(S) > {HIGH:g} at {high}; < {LOW:g} at {low}",
            fontsize=8.5,
        )
        ax.set_xlim(0.0, 1.0)
        ax.set_xlabel("P(S) of the last generated teammate")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center")
    states = next(iter(p_sabotage.values())).shape[1]
    axes[0, 0].set_ylabel(f"states (of {states})")
    fig.suptitle("Sabotage game: probability of the sabotage action at every non-terminal state")
    fig.tight_layout()
    _save(fig, path)


def plot_sweep(
    weights: Sequence[float],
    rotate_means: np.ndarray,
    per_trajectory_means: np.ndarray,
    seeds: int,
    path: Path,
) -> None:
    """Mean P(S) heatmaps: `rotate_means[i, j]` at lambda_1 = weights[i], lambda_2 =
    weights[j]; `per_trajectory_means[k]` at lambda = weights[k]."""
    plt = _pyplot()
    n = len(weights)
    labels = [f"{w:g}" for w in weights]
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(max(8.0, 2.6 + 1.1 * n), max(3.8, 1.2 + 0.55 * n)), layout="constrained"
    )
    style = {"cmap": "Reds", "vmin": 0.0, "vmax": 1.0}

    def annotate(ax: Any, grid: np.ndarray) -> None:
        for (row, col), v in np.ndenumerate(grid):
            color = "white" if v > 0.6 else "black"
            ax.text(col, row, f"{v:.2f}", ha="center", va="center", fontsize=8, color=color)

    grid = rotate_means.T  # rows: lambda_2, columns: lambda_1
    image = left.imshow(grid, origin="lower", **style)
    annotate(left, grid)
    left.set_xticks(range(n), labels)
    left.set_yticks(range(n), labels)
    left.set_xlabel("$\\lambda_1$ (competence from XP states)")
    left.set_ylabel("$\\lambda_2$ (competence from SP states)")
    left.set_title(f"ROTATE, per-state regret ({SWEEP_OBJECTIVE})", fontsize=10)
    row = per_trajectory_means[None, :]
    right.imshow(row, origin="lower", **style)
    annotate(right, row)
    right.set_xticks(range(n), labels)
    right.set_yticks([])
    right.set_xlabel("$\\lambda$ (competence from $p_0$)")
    right.set_title("per-trajectory regret", fontsize=10)
    fig.colorbar(image, ax=[left, right], shrink=0.8, label="mean P(S) (states, seeds)")
    fig.suptitle(f"Sabotage game: mean P(S) of the last teammate at the 341 states ({seeds} seeds)")
    _save(fig, path)
