"""The reference agents in agents/<method>/<task>/ (agents/reference.py): every bundled file
matches its card's sha256 and loads as a verified policy of its task; `bundle` turns a finished
run folder into such a bundle and leaves unfinished runs alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import pytest

from aht_bench import envs
from aht_bench.policies import load_policy, read_card, save_policy
from aht_bench.policies.networks import RecurrentEgo
from aht_bench.runs import RunSpec

AGENTS = Path(__file__).resolve().parents[1] / "agents"


def _import_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference", AGENTS / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _import_reference()
BUNDLES = sorted(p.parent for p in AGENTS.glob("*/*/card.json"))


@pytest.mark.parametrize("folder", BUNDLES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_bundled_reference_agent_matches_its_card(folder: Path):
    card = json.loads((folder / "card.json").read_text())
    assert card["format"] == reference.CARD_FORMAT
    assert (
        card["algorithm"] == folder.parent.name
        and card["method"] == reference.METHODS[folder.parent.name]
    )
    assert card["task_id"] == reference.TASKS[folder.name]
    assert card["num_seeds"] >= 3 and card["env_steps_per_seed"] > 0 and card["wall_seconds"] > 0
    for name, sha in card["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha, name
    for s in range(card["num_seeds"]):
        path = folder / f"seed{s}-ego.safetensors"
        load_policy(path)  # verifies the weights against the policy card's sha256
        assert read_card(path)["task_id"] == card["task_id"]


@pytest.mark.parametrize("folder", BUNDLES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_bundled_reference_agent_is_on_the_leaderboard(folder: Path):
    card = json.loads((folder / "card.json").read_text())
    rel = folder.relative_to(AGENTS.parent).as_posix()
    seeds = [f"{rel}/seed{s}-ego.safetensors" for s in range(card["num_seeds"])]
    entries = [
        e
        for p in (AGENTS.parent / "leaderboard" / "entries").glob("*.json")
        if (e := json.loads(p.read_text()))["leaderboard"].get("agent_paths") == seeds
    ]
    assert len(entries) == 1, f"{rel}: run `python agents/reference.py score` and commit the entry"
    (entry,) = entries
    assert entry["leaderboard"]["name"] == f"{card['method']} ({card['preset']})"
    assert entry["payload"]["teammate_set"]["version"] == "v1"
    assert entry["payload"]["task_id"] == card["task_id"]


def _config_mismatches(card: object, now: object, where: str = "config") -> list[str]:
    """Where the config a card records differs from the dataclass config `now`. A field the card
    lacks was added to the config after the bundle was trained: it matches when its value now
    is the field's default (what the code did before the field existed)."""
    if not dataclasses.is_dataclass(now):
        now_json = json.loads(json.dumps(now, default=list))
        return [] if card == now_json else [f"{where}: card {card!r}, preset now {now_json!r}"]
    assert isinstance(card, dict), where
    out = []
    for field in dataclasses.fields(now):
        value = getattr(now, field.name)
        if field.name in card:
            out += _config_mismatches(card[field.name], value, f"{where}.{field.name}")
        elif field.default is dataclasses.MISSING or value != field.default:
            out.append(f"{where}.{field.name}: not in the card, preset now {value!r}")
    out += [f"{where}.{k}: in the card, not in the preset now" for k in card if k not in
            {f.name for f in dataclasses.fields(now)}]  # fmt: skip
    return out


@pytest.mark.parametrize("folder", BUNDLES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_bundled_reference_agent_is_what_its_command_trains_today(folder: Path):
    """The card's command (`aht-bench train METHOD --preset quick ...`) must still train what is
    bundled: a preset changed since (e.g. its shaping) makes the bundle stale; retrain it with
    `python agents/reference.py all --runs RUNS --methods M --tasks T`."""
    card = json.loads((folder / "card.json").read_text())
    spec = RunSpec(card["algorithm"], card["task_id"], card["preset"], card["num_seeds"])
    now = spec.config()
    assert _config_mismatches(_recorded(card, now), now) == []


def _recorded(card: dict[str, Any], now: Any) -> dict[str, Any]:
    """The card's config with the field names and values older versions wrote read as today's
    (ROTATE's `branch_weights`, BRDiv's nested `ego`)."""
    upgrade = getattr(type(now), "upgrade_legacy", None)
    return card["config"] if upgrade is None else upgrade(card["config"])


def test_a_changed_preset_field_is_named():
    card = json.loads((BUNDLES[0] / "card.json").read_text())
    spec = RunSpec(card["algorithm"], card["task_id"], card["preset"], card["num_seeds"])
    now = spec.config()
    recorded = _recorded(card, now)
    edited = recorded | {"task_id": "lbf-v1"}
    assert _config_mismatches(edited, now) == [
        f"config.task_id: card 'lbf-v1', preset now {now.task_id!r}"
    ]
    missing = {k: v for k, v in recorded.items() if k != "task_id"}
    assert _config_mismatches(missing, now) == [
        f"config.task_id: not in the card, preset now {now.task_id!r}"
    ]


def _fake_run(root: Path, finished: bool) -> None:
    """A run folder as `aht-bench train` leaves it, with tiny untrained egos."""
    env = envs.make("lbf-v1")
    root.mkdir(parents=True)
    spec = {"algorithm": "fcp", "task_id": "lbf-v1", "preset": "quick", "num_seeds": 3, "seed": 0}
    run = {"package_version": "0.1.0", "jax_version": jax.__version__, "spec": spec}
    (root / "run.json").write_text(json.dumps(run | {"config": {"total": 10}}))
    lines = [{"update": i, "env_steps": 100 * i, "time_s": 1.5 * i} for i in (1, 2)]
    (root / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"upd')
    (root / "curve.png").write_bytes(b"png")
    if not finished:
        return
    final = root / "policies" / "final"
    final.mkdir(parents=True)
    ego = RecurrentEgo(env.obs_dim, env.num_actions, hidden=4)
    for s in range(3):
        params = ego.init(jax.random.PRNGKey(s))
        save_policy(final / f"seed{s}-ego.safetensors", ego, params, {"task_id": "lbf-v1"})


def test_bundle_copies_finished_runs_and_skips_unfinished(tmp_path: Path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    _fake_run(runs / "fcp-lbf", finished=True)
    _fake_run(runs / "brdiv-lbf", finished=False)
    agents = tmp_path / "agents"
    monkeypatch.setattr(reference, "AGENTS", agents)
    monkeypatch.setattr(reference, "REPO", tmp_path)
    assert reference.main(["bundle", "--runs", str(runs), "--tasks", "lbf"]) == 0
    out = capsys.readouterr().out
    assert "bundled fcp on lbf" in out and "skip brdiv on lbf" in out
    assert not (agents / "brdiv").exists()
    card = json.loads((agents / "fcp" / "lbf" / "card.json").read_text())
    # The last complete metrics line (the torn one from a kill is skipped).
    assert card["env_steps_per_seed"] == 200 and card["wall_seconds"] == 3.0
    assert card["method"] == "FCP" and card["preset"] == "quick" and card["num_seeds"] == 3
    assert card["command"] == (
        "aht-bench train fcp --task lbf --preset quick --seeds 3 --seed 0 --out runs/fcp-lbf"
    )
    assert card["config"] == {"total": 10}
    assert set(card["files"]) == {
        *(f"seed{s}-ego.safetensors{x}" for s in range(3) for x in ("", ".json")),
        "curve.png",
        "metrics.jsonl",
    }
    for s in range(3):
        load_policy(agents / "fcp" / "lbf" / f"seed{s}-ego.safetensors")
    # Bundling again replaces the bundle whole (no stale files, no temp folder left).
    (agents / "fcp" / "lbf" / "stale.txt").write_text("x")
    assert (
        reference.main(["bundle", "--runs", str(runs), "--tasks", "lbf", "--methods", "fcp"]) == 0
    )
    assert not (agents / "fcp" / "lbf" / "stale.txt").exists()
    assert [p.name for p in (agents / "fcp").iterdir()] == ["lbf"]


def test_unknown_method_or_task_is_refused(tmp_path: Path):
    with pytest.raises(SystemExit, match="unknown method rotat; known: rotate"):
        reference.main(["status", "--runs", str(tmp_path), "--methods", "rotat"])
    with pytest.raises(SystemExit, match="unknown task cramped; known: lbf"):
        reference.main(["status", "--runs", str(tmp_path), "--tasks", "cramped"])


def test_paper_comparison_reports_percent_eaten_over_seeds(tmp_path: Path):
    """The comparison's LBF number is the mean raw return x 200 (percent of food eaten), worked
    from the record's per-episode returns here; its CI is over the seeds."""
    spec = importlib.util.spec_from_file_location(
        "paper_comparison", AGENTS.parent / "benchmarks" / "paper_comparison.py"
    )
    assert spec is not None and spec.loader is not None
    comparison = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(comparison)
    scored = [f for f in BUNDLES if (f / "result-v1.json").is_file()]
    if not scored:
        pytest.skip("no scored reference agent")
    folder = scored[0]
    record = json.loads((folder / "result-v1.json").read_text())
    members = record["payload"]["members"]
    per_seed = [
        sum(sum(sum(r) / len(r) for r in m.values()) / len(m) for m in one_seed) / len(one_seed)
        for one_seed in zip(*(m["returns_per_seed"] for m in members), strict=True)
    ]  # each seed's mean over members of its mean over seatings of its mean over episodes
    expected = sum(per_seed) / len(per_seed) * (200.0 if folder.name == "lbf" else 1.0)
    got = comparison.ours(folder.parent.name, folder.name)
    assert got is not None and got[0] == pytest.approx(expected)
    assert got[1] <= got[0] <= got[2] and got[3] == len(per_seed)
    out = tmp_path / "table.md"
    assert comparison.main(["--out", str(out)]) == 0
    assert f"{got[0]:.1f} [{got[1]:.1f}, {got[2]:.1f}]" in out.read_text()


def _import(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, AGENTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference_v2 = _import("reference_v2")
BUNDLES_V2 = sorted(p.parent for p in AGENTS.glob("*/*/v2/card.json"))


@pytest.mark.parametrize("folder", BUNDLES_V2, ids=lambda p: f"{p.parents[1].name}-{p.parent.name}")
def test_v2_bundle_matches_its_card_and_is_what_its_preset_trains_today(folder: Path):
    card = json.loads((folder / "card.json").read_text())
    method, task = folder.parents[1].name, folder.parent.name
    assert card["protocol"] == "v2" and card["algorithm"] == method
    assert card["task_id"] == reference_v2.TASKS[task] and card["num_seeds"] >= 3
    for name, sha in card["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha, name
    egos = [card["files"][f"seed{s}-ego.safetensors"] for s in range(card["num_seeds"])]
    record = json.loads((folder / "result-v2.json").read_text())["payload"]
    assert [f["sha256"] for f in record["agent"]["files"]] == egos
    # a rescore record (`reference_v2.py rescore --heldout vN`) scores the very same egos on
    # the version its name says, of the card's task
    for path in sorted(folder.glob("result-heldout-*.json")):
        payload = json.loads(path.read_text())["payload"]
        version = path.stem.removeprefix("result-heldout-")
        assert payload["teammate_set"]["id"] == f"{card['task_id']}/{version}", path.name
        assert [f["sha256"] for f in payload["agent"]["files"]] == egos, path.name
    spec = RunSpec(method, card["task_id"], card["preset"], card["num_seeds"])
    now = spec.config()
    assert _config_mismatches(_recorded(card, now), now) == []
    assert 0 < card["fraction_of_paper_env_steps"] <= 1


def _fake_sweep(root: Path) -> dict:
    """A references_v2 sweep folder whose run of ROTATE (medium) on LBF has trained three
    tiny egos and has a record that scores exactly those files."""
    from aht_bench import sweeps
    from aht_bench.evaluation.record import make_record, write_record

    grid = sweeps.load("references_v2")
    sweeps.start_folder(root, grid)
    (run,) = [r for r in grid.runs if (r.method, r.task_id) == ("rotate", "lbf-v1")]
    assert run.preset == "medium"
    folder = root / run.name
    config = RunSpec("rotate", "lbf-v1", "medium", 3).config()
    spec = {"algorithm": "rotate", "task_id": "lbf-v1", "preset": "medium", "num_seeds": 3,
            "seed": 0, "teammates": [], "overrides": []}  # fmt: skip
    final = folder / "policies" / "final"
    final.mkdir(parents=True)
    held = {"package_version": "0.1.0", "jax_version": jax.__version__, "spec": spec}
    (folder / "run.json").write_text(json.dumps(held | {"config": json.loads(
        json.dumps(dataclasses.asdict(config), default=list))}))  # fmt: skip
    rows = [{"iteration": i, "env_steps": 5_000_000 * i, "time_s": 60.0 * i,
             "ego_return": [0.1 * i] * 3, "sp_return": [0.2] * 3} for i in (1, 2, 3)]  # fmt: skip
    (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    (folder / "curve.png").write_bytes(b"png")
    env = envs.make("lbf-v1")
    ego = RecurrentEgo(env.obs_dim, env.num_actions, hidden=4)
    for s in range(3):
        save_policy(final / f"seed{s}-ego.safetensors", ego, ego.init(jax.random.PRNGKey(s)),
                    {"task_id": "lbf-v1"})  # fmt: skip
    template = json.loads((AGENTS / "rotate" / "lbf" / "result-v1.json").read_text())
    payload = template["payload"]
    for s, entry in enumerate(payload["agent"]["files"]):
        entry["sha256"] = hashlib.sha256(
            (final / f"seed{s}-ego.safetensors").read_bytes()
        ).hexdigest()
    write_record(folder / "result.json", make_record(payload, {}))
    return {"run": run, "folder": folder}


def test_v2_bundle_copies_a_swept_run_with_its_record_diagnostics_and_budget(
    tmp_path: Path, monkeypatch, capsys
):
    sweep = tmp_path / "sweep"
    made = _fake_sweep(sweep)
    agents = tmp_path / "agents"
    monkeypatch.setattr(reference_v2, "AGENTS", agents)
    monkeypatch.setattr(reference_v2, "PROGRESS", tmp_path / "progress.md")
    args = ["--sweep", str(sweep), "--tasks", "lbf"]
    assert reference_v2.main(["bundle", *args]) == 0
    out = capsys.readouterr().out
    assert "bundled rotate on lbf (medium)" in out and "skip fcp on lbf" in out
    folder = agents / "rotate" / "lbf" / "v2"
    card = json.loads((folder / "card.json").read_text())
    paper = reference_v2._paper_env_steps("rotate", "lbf-v1")
    assert card["env_steps_per_seed"] == 15_000_000 and card["paper_env_steps_per_seed"] == paper
    assert card["fraction_of_paper_env_steps"] == round(15_000_000 / paper, 4)
    assert card["still_rising"] is True and card["still_rising_from"] == "training return"
    assert card["preset"] == "medium" and card["wall_seconds"] == 180.0
    assert "--preset medium --seeds 3 --seed 0" in card["command"]
    assert {"result-v2.json", "diagnostics.png", "diagnostics.json", "card.json"} <= {
        p.name for p in folder.iterdir()
    }
    assert (folder / "result-v2.json").read_bytes() == (made["folder"] / "result.json").read_bytes()
    for s in range(3):
        load_policy(folder / f"seed{s}-ego.safetensors")
    assert reference_v2.main(["status", *args]) == 0
    progress = (tmp_path / "progress.md").read_text()
    assert "- runs done: 1 of 42" in progress
    assert f"| {made['run'].name} | medium | done | 0.05 |" in progress
    assert card["sweep_run"] == made["run"].name and "run.json" in card["files"]


def test_restore_rebuilds_finished_runs_from_bundles_and_refuses_a_changed_one(
    tmp_path: Path, monkeypatch, capsys
):
    """A new checkout has no sweep folder: `restore` rebuilds a bundled run there, so the
    resumed sweep skips it; a bundle whose files no longer match its card restores nothing."""
    from aht_bench import sweeps
    from aht_bench.sweeps.execute import pending

    made = _fake_sweep(tmp_path / "sweep")
    agents = tmp_path / "agents"
    monkeypatch.setattr(reference_v2, "AGENTS", agents)
    assert reference_v2.main(["bundle", "--sweep", str(tmp_path / "sweep"), "--tasks", "lbf"]) == 0
    fresh = tmp_path / "fresh"
    assert reference_v2.main(["restore", "--sweep", str(fresh)]) == 0
    assert f"restored {made['run'].name}" in capsys.readouterr().out
    grid = sweeps.load("references_v2")
    done, todo = pending(grid, fresh)
    assert done == {made["run"].name: "skipped"} and len(todo) == 41
    restored = fresh / made["run"].name
    for name in ("result.json", "run.json", "metrics.jsonl"):
        assert (restored / name).read_bytes() == (made["folder"] / name).read_bytes(), name
    for s in range(3):
        load_policy(restored / "policies" / "final" / f"seed{s}-ego.safetensors")
    # a second restore keeps what is there
    assert reference_v2.main(["restore", "--sweep", str(fresh)]) == 0
    assert f"kept {made['run'].name}" in capsys.readouterr().out
    # a tampered bundle is refused and nothing is restored from it
    bundle = agents / "rotate" / "lbf" / "v2"
    (bundle / "metrics.jsonl").write_text("{}\n")
    other = tmp_path / "other"
    assert reference_v2.main(["restore", "--sweep", str(other)]) == 1
    assert "does not match its card" in capsys.readouterr().err
    assert not (other / made["run"].name / "result.json").exists()
