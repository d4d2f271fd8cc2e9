"""`aht-bench sweep`: a spec expands into checked runs, the dry run prints their cost, and the
local backend brings every run to "done" once, skipping finished runs and resuming started ones.

The orchestration tests run a stand-in for the `aht-bench` command (`FAKE_CLI`: it writes what
`train` and `evaluate` leave and logs its calls) so that they check the sweep's own logic in
seconds; the slow test runs the real commands and compares the parameters with a run started
by hand."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import load_file

from aht_bench import sweeps
from aht_bench.cli import main
from aht_bench.runs import RunSpec, get, smoke
from aht_bench.sweeps import cost

# ----------------------------------------------------------------------------------- the spec


def _write(tmp_path: Path, text: str, name: str = "grid.toml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


TINY = """
    name = "tiny"
    methods = ["fcp", "brdiv"]
    tasks = ["lbf"]
    seeds = 2
    preset = "quick"
    episodes = 2

    [set]
    fcp = {fcp}
    brdiv = {brdiv}
"""


def _tiny_spec(tmp_path: Path) -> str:
    def smoke_list(method: str) -> str:
        return json.dumps(list(smoke.OVERRIDES[method]))

    return _write(tmp_path, TINY.format(fcp=smoke_list("fcp"), brdiv=smoke_list("brdiv")))


def test_the_paper_experiments_load_with_every_run_checked():
    rq1 = sweeps.load("rq1")
    assert len(rq1.runs) == 7 * 6 * 3
    assert {r.preset for r in rq1.runs} == {"paper"}
    assert len({r.name for r in rq1.runs}) == len(rq1.runs)
    first = rq1.runs[0]
    config = get(first.method).config(RunSpec(first.method, first.task_id, "paper"))
    loop = get(first.method).loop
    assert first.env_steps == loop.env_steps_done(config, loop.total(config)) > 0
    rq4 = sweeps.load("rq4", preset="quick", seeds=1)
    assert {r.variant for r in rq4.runs} == {"variant=rotate", "variant=no_buffer"}
    assert len(rq4.runs) == 2 * 6 and {r.preset for r in rq4.runs} == {"quick"}
    rq3 = sweeps.load("rq3")
    assert len(rq3.runs) == 4 * 4 * 2 * 3
    tuned = [r for r in rq3.runs if r.task_id == "overcooked-counter_circuit-v2" and r.seed == 0]
    assert ("competence_weight_xp=2,competence_weight_sp=4") in {r.variant for r in tuned}
    assert set(sweeps.builtin_specs()) >= {"rq1", "rq3", "rq4"}


def test_a_run_is_one_seed_with_the_method_overrides_then_the_variant(tmp_path):
    spec = _write(
        tmp_path,
        """
        methods = ["rotate"]
        tasks = ["lbf"]
        seeds = [0, 4]
        [set]
        rotate = ["iterations=3"]
        [grid.rotate]
        competence_weight_xp = [0.0, 1.5]
        """,
    )
    grid = sweeps.load(spec)
    assert grid.name == "grid" and grid.heldout == "newest" and grid.episodes == 64
    assert [(r.seed, r.variant) for r in grid.runs] == [
        (0, "competence_weight_xp=0.0"),
        (4, "competence_weight_xp=0.0"),
        (0, "competence_weight_xp=1.5"),
        (4, "competence_weight_xp=1.5"),
    ]
    run = grid.runs[3]
    assert run.overrides == (("iterations", "3"), ("competence_weight_xp", "1.5"))
    assert run.name == "rotate/lbf-v1/competence_weight_xp=1.5/seed4"
    assert run.train_args() == [
        *("rotate", "--task", "lbf-v1", "--preset", "quick", "--seeds", "1", "--seed", "4"),
        *("--set", "iterations=3", "--set", "competence_weight_xp=1.5"),
    ]


PARTS = """
    name = "refs"
    methods = ["rotate", "fcp"]
    seeds = 3
    seeds_per_run = 3
    keep_every = 2
    episodes = 2

    [[part]]
    tasks = ["lbf"]
    preset = "quick"
    [part.set]
    rotate = ["iterations=2"]

    [[part]]
    methods = ["rotate"]
    tasks = ["lbf"]
    preset = "paper"
"""


def test_parts_give_tasks_their_presets_and_a_run_trains_its_seeds_vmapped(tmp_path):
    grid = sweeps.load(_write(tmp_path, PARTS))
    assert [r.name for r in grid.runs] == [
        "rotate/lbf-v1/quick/seed0x3",
        "fcp/lbf-v1/quick/seed0x3",
        "rotate/lbf-v1/paper/seed0x3",
    ]
    rotate = grid.runs[0]
    assert (rotate.preset, rotate.variant, rotate.num_seeds, rotate.seeds) == (
        "quick",
        "quick",
        3,
        (0, 1, 2),
    )
    assert rotate.train_args() == [
        *("rotate", "--task", "lbf-v1", "--preset", "quick", "--seeds", "3", "--seed", "0"),
        *("--set", "iterations=2", "--keep-every", "2"),
    ]
    assert grid.runs[2].overrides == () and grid.runs[2].preset == "paper"
    # per-seed env steps: the config's budget, whatever the seed count
    config = get("rotate").config(RunSpec("rotate", "lbf", "quick", 1, 0, (), rotate.overrides))
    assert rotate.env_steps == get("rotate").loop.env_steps_done(config, 2)
    six = sweeps.load(_write(tmp_path, PARTS.replace("seeds = 3", "seeds = 6")))
    assert [r.name for r in six.runs[:2]] == [
        "rotate/lbf-v1/quick/seed0x3",
        "rotate/lbf-v1/quick/seed3x3",
    ]


@pytest.mark.parametrize(
    "change,message",
    [
        (("seeds = 3", "seeds = 4"), "seeds_per_run: use a count of seeds that 3 divides"),
        (("seeds = 3", "seeds = [0, 1, 5]"), "seeds_per_run: use a count"),
        (("keep_every = 2", "keep_every = 0"), "keep_every: use a whole number"),
        (('preset = "paper"', 'preset = "quick"'), "two parts both run rotate/lbf-v1/quick"),
        (('preset = "paper"', 'preset = "paper"\nseeds = 2'), "part 2: seeds: not a part key"),
    ],
)
def test_a_bad_part_or_seed_grouping_is_refused_naming_the_key(tmp_path, change, message):
    with pytest.raises(sweeps.SweepSpecError, match=message):
        sweeps.load(_write(tmp_path, PARTS.replace(*change)))


def test_a_run_of_vmapped_seeds_is_scored_with_all_its_egos_and_a_spec_may_grow(tmp_path):
    first = """
        name = "refs"
        methods = ["fcp"]
        seeds = 3
        seeds_per_run = 3
        keep_every = 2
        episodes = 2

        [[part]]
        tasks = ["lbf"]
        preset = "quick"
    """
    grid = sweeps.load(_write(tmp_path, first, "first.toml"))
    command, root = _fake(tmp_path), tmp_path / "sweep"
    assert _run(grid, root, command) == {"fcp/lbf-v1/quick/seed0x3": "trained"}
    train, evaluate = _calls(tmp_path)
    assert train[train.index("--seeds") + 1] == "3" and "--keep-every" in train
    folder = root / "fcp/lbf-v1/quick/seed0x3"
    assert evaluate[1:4] == [
        str(folder / f"policies/final/seed{k}-ego.safetensors") for k in range(3)
    ]
    assert evaluate[4:6] == ["--task", "lbf-v1"]
    # the whole spec adds runs: only they run, and sweep.json lists every run
    grown = sweeps.load(
        _write(
            tmp_path, PARTS.replace('methods = ["rotate", "fcp"]', 'methods = ["fcp", "rotate"]')
        )
    )
    done = _run(grown, root, command, workers=1)
    assert done == {
        "fcp/lbf-v1/quick/seed0x3": "skipped",
        "rotate/lbf-v1/quick/seed0x3": "trained",
        "rotate/lbf-v1/paper/seed0x3": "trained",
    }
    held = json.loads((root / "sweep.json").read_text())["runs"]
    assert [r["name"] for r in held] == [r.name for r in grown.runs]
    assert held[0]["num_seeds"] == 3 and held[0]["keep_every"] == 2
    # growing back to the first spec would drop runs: refused
    with pytest.raises(sweeps.SweepError, match="holds another sweep"):
        _run(grid, root, command)


@pytest.mark.parametrize(
    "body,message",
    [
        ('methods = ["fcp"]\ntasks = ["lbf"]\nseed = 3', "seed: not a sweep key"),
        ('methods = ["ippo"]\ntasks = ["lbf"]', "ippo trains no ego agent"),
        ('methods = ["rotat"]\ntasks = ["lbf"]', "unknown algorithm 'rotat'"),
        ('methods = ["fcp"]\ntasks = ["lbff"]', "tasks: "),
        ('methods = []\ntasks = ["lbf"]', "methods: use a non-empty list"),
        ('methods = ["fcp", "fcp"]\ntasks = ["lbf"]', "listed twice"),
        ('methods = ["fcp"]\ntasks = ["lbf"]\nseeds = 0', "seeds: use a count"),
        ('methods = ["fcp"]\ntasks = ["lbf"]\nheldout = "latest"', "heldout: use"),
        ('methods = ["fcp"]\ntasks = ["lbf"]\nepisodes = 0', "episodes: use"),
        ('methods = ["fcp"]\ntasks = ["lbf"]\n[set]\nrotate = ["iterations=2"]', "set.rotate"),
        ('methods = ["fcp"]\ntasks = ["lbf"]\n[set]\nfcp = ["num_ippo_seeds"]', "field=value"),
        (
            'methods = ["fcp"]\ntasks = ["lbf"]\n[set]\nfcp = ["num_ippo_seeds=0"]',
            "fcp on lbf-v1 (base): num_ippo_seeds=0 is invalid",
        ),
        ('methods = ["fcp"]\ntasks = ["lbf"]\n[grid.fcp]\nego_hidden = []', "grid.fcp.ego_hidden"),
        ('methods = ["fcp"\ntasks = ["lbf"]', "is not valid TOML"),
    ],
)
def test_a_bad_spec_is_refused_naming_the_key(tmp_path, body, message):
    with pytest.raises(sweeps.SweepSpecError, match="grid.toml") as e:
        sweeps.load(_write(tmp_path, body))
    assert message in str(e.value)


def test_an_unknown_spec_name_lists_the_packaged_ones():
    with pytest.raises(sweeps.SweepSpecError, match="rq1"):
        sweeps.load("rq9")


# ---------------------------------------------------------------------------------- dry run


def test_the_dry_run_gives_each_row_its_env_steps_and_measured_estimate(tmp_path):
    grid = sweeps.load(_tiny_spec(tmp_path))
    lines = cost.dry_run_lines(grid, workers=2)
    fcp = next(line for line in lines if line.startswith("fcp"))
    run = grid.runs[0]
    rate, source = cost.rate_of("fcp", "lbf-v1") or (0.0, "")
    assert source == "agents/fcp/lbf/card.json" and rate > 0
    assert f"{run.env_steps:,}" in fcp and "0,1" in fcp and source in fcp
    assert cost.estimate(run) == pytest.approx(run.env_steps / rate)
    assert lines[-2].startswith(
        f"4 runs (quick preset), {2 * sum(r.env_steps for r in grid.runs[::2]):,}"
    )
    # a task without a measured rate gets no estimate, not a guess
    sabotage = sweeps.parse({"methods": ["rotate"], "tasks": ["sabotage"], "preset": "sabotage"})
    assert cost.estimate(sabotage.runs[0]) is None
    assert "1 runs have no measured rate" in cost.dry_run_lines(sabotage, 1)[-1]


def test_each_preset_is_estimated_at_its_own_measured_rate(tmp_path, monkeypatch):
    quick = sweeps.parse({"methods": ["rotate"], "tasks": ["cramped_room"]}).runs[0]
    medium = sweeps.parse(
        {"methods": ["rotate"], "tasks": ["cramped_room"], "preset": "medium"}
    ).runs[0]
    paper = sweeps.parse({"methods": ["rotate"], "tasks": ["lbf"], "preset": "paper"}).runs[0]
    card_rate, card = cost.rate_of("rotate", "overcooked-cramped_room-v2") or (0.0, "")
    # medium runs at quick's per-step settings: the bundled quick run's rate, said so
    assert cost.rate_of("rotate", medium.task_id, "medium") == (
        card_rate,
        card + " (quick's per-step settings)",
    )
    assert cost.estimate(medium) == pytest.approx(medium.env_steps / card_rate)
    assert cost.estimate(quick) == pytest.approx(quick.env_steps / card_rate)
    # paper: only a rate measured at the paper's settings counts, never quick's
    table = {"rates": cost.rates(), "measured": {}}
    monkeypatch.setattr(cost, "_throughput", lambda: table)
    assert cost.estimate(paper) is None
    table["measured"]["rotate/lbf/paper"] = {"env_steps_per_second_per_seed": 1000.0}
    assert cost.rate_of("rotate", "lbf-v1", "paper") == (
        1000.0,
        "paper measured on lbf (sweep_throughput.py --measure paper)",
    )
    assert cost.estimate(paper) == pytest.approx(paper.env_steps / 1000.0)
    paper_grid = sweeps.parse({"methods": ["rotate"], "tasks": ["lbf"], "preset": "paper"})
    line = next(x for x in cost.dry_run_lines(paper_grid, 1) if x.startswith("rotate"))
    assert "paper measured on lbf" in line


def test_the_dry_run_command_prints_the_grid_and_runs_nothing(tmp_path):
    result = CliRunner().invoke(main, ["sweep", "rq4", "--dry-run", "--preset", "quick"])
    assert result.exit_code == 0, result.output
    assert "variant=no_buffer" in result.output and "36 runs (quick preset)" in result.output
    assert not Path("sweeps").exists() or not any(Path("sweeps").glob("rq4*"))
    bad = CliRunner().invoke(main, ["sweep", str(tmp_path / "missing.toml")])
    assert bad.exit_code == 2 and "cannot read the sweep spec" in bad.output


# ----------------------------------------------------------------------- the local backend

FAKE_CLI = """
import json, sys
from pathlib import Path
args = sys.argv[1:]
calls = Path(sys.argv[0]).with_name("calls.jsonl")
with calls.open("a") as f:
    f.write(json.dumps(args) + "\\n")
out = Path(args[args.index("--out") + 1])
fail = Path(sys.argv[0]).with_name("fail")
if fail.exists() and fail.read_text() in " ".join(args):
    sys.exit(3)
if args[0] == "train":
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text("{}")
    stop = Path(sys.argv[0]).with_name("stop")
    if stop.exists() and stop.read_text() in " ".join(args) and "--resume" not in args:
        sys.exit(130)
    (out / "policies" / "final").mkdir(parents=True, exist_ok=True)
    for k in range(int(args[args.index("--seeds") + 1])):
        (out / "policies" / "final" / f"seed{k}-ego.safetensors").write_text("ego")
else:
    out.write_text(json.dumps({"agent": args[1]}))
"""


def _fake(tmp_path: Path) -> list[str]:
    script = tmp_path / "bin" / "fake_cli.py"
    script.parent.mkdir()
    script.write_text(FAKE_CLI)
    return [sys.executable, str(script)]


def _calls(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "bin" / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _run(grid, root, command, workers=2):
    return sweeps.run_local(grid, root, workers, echo=lambda _: None, command=command)


def test_every_run_trains_then_is_scored_once_and_a_second_sweep_skips_them(tmp_path):
    grid = sweeps.load(_tiny_spec(tmp_path))
    command, root = _fake(tmp_path), tmp_path / "sweep"
    done = _run(grid, root, command)
    assert done == {r.name: "trained" for r in grid.runs}
    calls = _calls(tmp_path)
    assert sorted(c[0] for c in calls) == ["evaluate"] * 4 + ["train"] * 4
    train = next(
        c for c in calls if c[0] == "train" and "brdiv" in c and "1" == c[c.index("--seed") + 1]
    )
    assert train[1:] == [
        *grid.runs[3].train_args(),
        "--out",
        str(root / grid.runs[3].name),
        "--no-progress",
    ]
    evaluate = next(c for c in calls if c[0] == "evaluate" and "brdiv/lbf-v1/base/seed1" in c[1])
    assert evaluate[2:] == [
        "--task", "lbf-v1", "--episodes", "2", "--out",
        str(root / "brdiv/lbf-v1/base/seed1/result.json"), "--force", "--no-plot",
        "--no-progress",
    ]  # fmt: skip
    assert all(sweeps.state_of(root, r) == "done" for r in grid.runs)
    assert json.loads((root / "sweep.json").read_text())["runs"][0]["name"] == grid.runs[0].name
    assert _run(grid, root, command) == {r.name: "skipped" for r in grid.runs}
    assert len(_calls(tmp_path)) == 8  # nothing ran again


def test_an_interrupted_sweep_resumes_the_started_run_and_runs_only_the_missing(tmp_path):
    grid = sweeps.load(_tiny_spec(tmp_path))
    command, root = _fake(tmp_path), tmp_path / "sweep"
    (tmp_path / "bin" / "stop").write_text("brdiv/lbf-v1/base/seed0")
    with pytest.raises(
        sweeps.SweepError,
        match=r"brdiv/lbf-v1/base/seed0: training exited with 130; see .*-base-seed0.log",
    ):
        _run(grid, root, command, workers=1)
    states = {r.name: sweeps.state_of(root, r) for r in grid.runs}
    assert states["brdiv/lbf-v1/base/seed0"] == "started"
    assert list(states.values()).count("done") == 3  # a failed run does not stop the others
    before = len(_calls(tmp_path))
    done = _run(grid, root, command)
    assert done["brdiv/lbf-v1/base/seed0"] == "resumed"
    assert all(done[n] == "skipped" for n, s in states.items() if s == "done")
    again = _calls(tmp_path)[before:]
    assert [c[0] for c in again] == ["train", "evaluate"]
    assert "--resume" in next(c for c in again if "brdiv/lbf-v1/base/seed0" in " ".join(c))


def test_a_failed_evaluation_names_the_run_and_a_changed_spec_is_refused(tmp_path):
    grid = sweeps.load(_tiny_spec(tmp_path))
    command, root = _fake(tmp_path), tmp_path / "sweep"
    (tmp_path / "bin" / "fail").write_text("fcp/lbf-v1/base/seed1/result.json")
    with pytest.raises(sweeps.SweepError, match="fcp/lbf-v1/base/seed1: evaluation exited with 3"):
        _run(grid, root, command, workers=1)
    run = next(r for r in grid.runs if r.name == "fcp/lbf-v1/base/seed1")
    assert sweeps.state_of(root, run) == "trained"  # evaluated again next time, not retrained
    other = sweeps.load(_tiny_spec(tmp_path), seeds=1)  # drops the seed-1 runs
    with pytest.raises(sweeps.SweepError, match="holds another sweep"):
        _run(other, root, command)
    changed = dataclasses.replace(grid, heldout="v1")
    with pytest.raises(sweeps.SweepError, match="holds another sweep"):
        _run(changed, root, command)  # another heldout set
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x").write_text("")
    with pytest.raises(sweeps.SweepError, match="not empty and holds no sweep"):
        _run(grid, tmp_path / "junk", command)


def _egos(root: Path, runs) -> dict[str, dict]:
    ego = "policies/final/seed0-ego.safetensors"
    return {r.name: load_file(str(root / r.name / ego)) for r in runs}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)


def _training_of(folder: Path) -> tuple[int, int] | None:
    """(pid, parent pid) of the `aht-bench train` process writing `folder`, if one runs."""
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"train" in argv and str(folder).encode() in argv:
                stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                return int(proc.name), int(stat[1])
        except (OSError, ValueError, IndexError):
            continue
    return None


@pytest.mark.slow  # 12 tiny trainings (about 20 minutes on two CPU cores)
def test_a_swept_run_is_the_run_by_hand_on_either_backend_even_after_a_lost_worker(tmp_path):
    """The done-when of issue 32: the 2 methods x 1 task x 2 seeds grid at a tiny budget on the
    local backend and on a local Ray cluster (2 CPUs) whose worker training one run is killed
    (SIGKILL) after its first checkpoint: every run's ego is bit-identical on both backends to
    its `aht-bench train` command run by hand, and every run is scored."""
    pytest.importorskip("ray")
    from aht_bench.sweeps.ray_backend import run_ray

    grid = sweeps.load(_tiny_spec(tmp_path))
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    assert set(sweeps.run_local(grid, local, 2, echo=lambda _: None).values()) == {"trained"}

    victim = on_ray / "brdiv/lbf-v1/base/seed0"  # 2 iterations: killed after the first
    killed: list[int] = []

    def kill_the_worker() -> None:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and not killed:
            found = _training_of(victim)
            if found and (victim / "checkpoints" / "latest.json").exists():
                killed.append(found[0])
                os.kill(found[1], signal.SIGKILL)  # the Ray worker running the run
            time.sleep(0.1)

    killer = threading.Thread(target=kill_the_worker, daemon=True)
    killer.start()
    init = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False}
    done = run_ray(grid, on_ray, echo=lambda _: None, init=init)
    killer.join(5)
    assert killed, "the run ended before its worker could be killed"
    assert done[victim.relative_to(on_ray).as_posix()] == "resumed"
    log = (on_ray / "logs" / "brdiv-lbf-v1-base-seed0.log").read_text()
    assert "resuming" in log and "from iteration 1" in log

    by_hand = tmp_path / "by_hand"
    cli = [sys.executable, "-m", "aht_bench.cli"]
    for run in grid.runs:  # each run one by one, as its own command
        args = [*cli, "train", *run.train_args(), "--out", str(by_hand / run.name)]
        subprocess.run([*args, "--no-progress"], check=True, capture_output=True)

    swept_local, swept_ray = _egos(local, grid.runs), _egos(on_ray, grid.runs)
    hand = _egos(by_hand, grid.runs)
    for run in grid.runs:
        assert _same(swept_local[run.name], hand[run.name]), run.name
        assert _same(swept_ray[run.name], hand[run.name]), run.name
        _assert_scored(local / run.name)
        _assert_scored(on_ray / run.name)
    _assert_reported(local, on_ray, grid)


def _assert_reported(local: Path, on_ray: Path, grid: sweeps.Sweep) -> None:
    """`aht-bench sweep report` of both folders: the same cells (same egos, same records), each
    the mean of its records' per-member scores."""
    from aht_bench.sweeps import report

    made = [report.build_report(root, reps=200) for root in (local, on_ray)]
    est = [report.estimates(m) for m in made]
    assert est[0] == est[1] and not made[0].missing
    for method in ("fcp", "brdiv"):
        records = [
            json.loads((local / r.name / "result.json").read_text())["payload"]
            for r in grid.runs
            if r.method == method
        ]
        by_hand = np.mean([[m["normalized"]["value"] for m in p["members"]] for p in records])
        assert est[0][(method, "lbf-v1")]["normalized"]["value"] == pytest.approx(by_hand)


def _assert_scored(folder: Path) -> None:
    """The run's record is `aht-bench evaluate`'s of its own ego on the run's task."""
    payload = json.loads((folder / "result.json").read_text())["payload"]
    ego = folder / "policies/final/seed0-ego.safetensors"
    assert payload["task_id"] == "lbf-v1"
    assert payload["agent"]["sha256"] == hashlib.sha256(ego.read_bytes()).hexdigest()


# ------------------------------------------------------------------------ the Ray backend

HOLDING_CLI = """
import json, os, sys, time
from pathlib import Path
args = sys.argv[1:]
here = Path(sys.argv[0]).parent
with (here / "calls.jsonl").open("a") as f:
    f.write(json.dumps(args) + "\\n")
out = Path(args[args.index("--out") + 1])
if args[0] == "train":
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text("{}")
    if (here / "hold").read_text() in " ".join(args) and "--resume" not in args:
        (here / "held.json").write_text(json.dumps([os.getpid(), os.getppid()]))
        time.sleep(120)  # until its Ray worker is killed (and it with it)
        sys.exit(1)
    (out / "policies" / "final").mkdir(parents=True, exist_ok=True)
    for k in range(int(args[args.index("--seeds") + 1])):
        (out / "policies" / "final" / f"seed{k}-ego.safetensors").write_text("ego")
else:
    out.write_text("{}")
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def test_on_ray_a_run_whose_worker_is_killed_is_retried_and_resumes(tmp_path):
    """A local Ray instance (2 CPUs); one run's training holds until the test SIGKILLs the Ray
    worker running it: Ray retries the task, the retry resumes the run (--resume), the killed
    worker's training died with it, and every other run is done once."""
    pytest.importorskip("ray")
    from aht_bench.sweeps.ray_backend import run_ray

    grid = sweeps.load(_tiny_spec(tmp_path))
    script = tmp_path / "bin" / "fake_cli.py"
    script.parent.mkdir()
    script.write_text(HOLDING_CLI)
    (tmp_path / "bin" / "hold").write_text("fcp/lbf-v1/base/seed1")
    held = tmp_path / "bin" / "held.json"
    killed: list[int] = []

    def kill_the_worker() -> None:
        deadline = time.monotonic() + 120
        while not held.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        training, worker = json.loads(held.read_text())
        killed.append(training)
        os.kill(worker, signal.SIGKILL)

    killer = threading.Thread(target=kill_the_worker, daemon=True)
    killer.start()
    command = [sys.executable, str(script)]
    init = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False}
    sigterm = signal.getsignal(signal.SIGTERM)
    done = run_ray(grid, tmp_path / "sweep", echo=lambda _: None, command=command, init=init)
    assert signal.getsignal(signal.SIGTERM) is sigterm  # Ray's handler not left behind
    killer.join(5)
    assert done == {
        r.name: "resumed" if r.name == "fcp/lbf-v1/base/seed1" else "trained" for r in grid.runs
    }
    deadline = time.monotonic() + 10
    while killed and _alive(killed[0]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert killed and not _alive(killed[0])  # no training left behind by the lost worker
    trains = [c for c in _calls(tmp_path) if c[0] == "train"]
    assert len(trains) == 5 and sum("--resume" in c for c in trains) == 1
    assert all(sweeps.state_of(tmp_path / "sweep", r) == "done" for r in grid.runs)


def test_the_ray_backend_without_ray_says_how_to_install_it(tmp_path, monkeypatch):
    from aht_bench.sweeps import ray_backend

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(sweeps.SweepError, match=r"pip install 'aht-bench\[ray\]'"):
        ray_backend.run_ray(sweeps.load(_tiny_spec(tmp_path)), tmp_path / "sweep")
    assert not (tmp_path / "sweep").exists()  # nothing written
