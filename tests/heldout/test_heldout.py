"""Heldout sets: the published sets against their lock, tamper detection by `heldout verify` and
`evaluate`, the lock's immutability, candidate selection, `SeatPair`, the pass-shaping term,
the loaders (JAX, Gymnasium, PettingZoo) and (slow) a tiny build reproduced bit for bit."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner

from aht_bench import envs, heldout
from aht_bench.cli import EXIT_OK, EXIT_TEAMMATE_INTEGRITY, main
from aht_bench.evaluation import sets
from aht_bench.heldout import build as hb
from aht_bench.heldout import recipes
from aht_bench.policies.io import save_policy
from aht_bench.policies.networks import MLPActorCritic
from aht_bench.policies.seated import SeatPair

ROOT = sets.heldout_root()
PUBLISHED = heldout.published_sets(ROOT)
V1 = [f for f in PUBLISHED if f.name == "v1"]


def _run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)


@dataclasses.dataclass(frozen=True)
class Constant:
    """A policy that always plays `action`."""

    action: int

    def init_carry(self, batch_shape):
        return ()

    def act(self, params, carry, obs, key):
        return jnp.asarray(self.action, jnp.int32), carry, {}


# ------------------------------------------------------------------------- published sets


def test_every_published_file_matches_the_lock():
    """Fails if any byte of a published set changes, a file goes missing or one is added."""
    assert PUBLISHED, "no published heldout set found"
    assert heldout.verify(ROOT) == []


def test_the_locks_list_every_file_of_every_published_set():
    lock = heldout.read_lock(ROOT)
    for folder in PUBLISHED:
        assert heldout.lock_path(folder).is_file()
        files = [p.relative_to(ROOT).as_posix() for p in folder.rglob("*") if p.is_file()]
        assert files and all(f in lock for f in files)


@pytest.mark.parametrize("folder", V1, ids=[f.parent.name for f in V1])
def test_v1_sets_are_diverse_and_their_bounds_follow_the_procedure(folder):
    manifest, _ = sets.read_manifest(folder)
    xp = manifest["cross_play"]
    matrix = np.asarray(xp["mean_return"])
    k = matrix.shape[0]
    assert k == len(manifest["members"]) >= 2
    assert np.isclose(xp["diagonal_mean"], np.diag(matrix).mean())
    assert np.isclose(xp["off_diagonal_mean"], matrix[~np.eye(k, dtype=bool)].mean())
    assert xp["diagonal_mean"] > xp["off_diagonal_mean"]
    partners = manifest["partner_returns"]
    table = np.asarray(partners["mean_return"])
    for member in manifest["members"]:
        b = member["bounds"]
        assert b["lower"] == 0.0 and b["upper"] > 0
        j = partners["cols"].index(member["name"])
        # the upper bound is the best of the BR and every evaluated partner, and says who
        assert b["upper"] == pytest.approx(max(table[:, j].max(), b["best_response_return"]))
        assert b["raised_by"] == pytest.approx(b["upper"] - b["best_response_return"])
        assert b["upper_set_by"] in partners["rows"]
    names = {m["name"] for m in manifest["members"]}
    assert names.isdisjoint(p["name"] for p in manifest["pruned"])
    # an IPPO team that never learned in self-play is pruned before any best response is
    # trained, so it has no row in the candidates' cross-play; every other pruned one has
    early = {p["name"] for p in manifest["pruned"] if "self_play_return" in p}
    late = {p["name"] for p in manifest["pruned"]} - early
    assert all(
        p["self_play_return"] <= p["threshold"] for p in manifest["pruned"] if p["name"] in early
    )
    assert set(manifest["candidates"]["names"]) == names | late
    assert early.isdisjoint(manifest["candidates"]["names"])


@pytest.mark.parametrize("folder", V1, ids=[f.parent.name for f in V1])
def test_v1_members_were_trained_with_seeds_no_reference_run_uses(folder):
    manifest, _ = sets.read_manifest(folder)
    for member in manifest["members"]:
        if member["kind"] != "heuristic":
            assert member["source"]["seed"] >= recipes.IPPO_SEED
        for br in manifest["best_responses"][member["name"]]:
            assert br["seed"] >= recipes.BR_SEED


# ---------------------------------------------------------------------------- tampering


def _copy_published(tmp_path: Path, folder: Path) -> tuple[Path, Path]:
    """A heldout root holding only `folder` (and its lock lines); (root, copied folder)."""
    root = tmp_path / "heldout"
    dst = root / folder.parent.name / folder.name
    shutil.copytree(folder, dst)
    shutil.copyfile(heldout.lock_path(folder), heldout.lock_path(dst))
    return root, dst


def _weight_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.safetensors"))


@pytest.mark.parametrize("folder", V1[:1], ids=[f.parent.name for f in V1[:1]])
def test_a_flipped_byte_in_any_weight_file_fails_verify_naming_it(tmp_path, folder):
    root, dst = _copy_published(tmp_path, folder)
    assert heldout.verify(root) == []
    for weights in _weight_files(dst):
        original = weights.read_bytes()
        blob = bytearray(original)
        blob[len(blob) // 2] ^= 0x01
        weights.write_bytes(bytes(blob))
        problems = heldout.verify(root, load_members=False)
        rel = weights.relative_to(root).as_posix()
        assert any(rel in p and "sha256 differs" in p for p in problems), (rel, problems)
        weights.write_bytes(original)
    assert heldout.verify(root) == []


@pytest.mark.parametrize("folder", V1, ids=[f.parent.name for f in V1])
def test_verify_and_evaluate_refuse_a_flipped_member_weight_with_exit_5(tmp_path, folder):
    root, dst = _copy_published(tmp_path, folder)
    members = sorted((dst / "members").glob("*.safetensors"))
    assert members
    weights = members[0]
    blob = bytearray(weights.read_bytes())
    blob[-1] ^= 0x01
    weights.write_bytes(bytes(blob))
    env = {sets.HELDOUT_ENV: str(root)}
    result = _run("heldout", "verify", env=env)
    assert result.exit_code == EXIT_TEAMMATE_INTEGRITY
    assert weights.relative_to(root).as_posix() in result.stderr
    task = folder.parent.name
    out = tmp_path / "r.json"
    result = _run(
        "evaluate", "agents/examples/random_agent.py", "--task", task, "--teammates", "v1",
        "--episodes", "1", "--out", str(out), "--no-progress", env=env,
    )  # fmt: skip
    assert result.exit_code == EXIT_TEAMMATE_INTEGRITY, result.output
    assert weights.name in result.stderr and "does not match the sha256" in result.stderr
    assert not out.exists()


def _tiny_set(folder: Path) -> Path:
    """A published-looking sabotage set with one network member."""
    env = envs.make("sabotage-v1")
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    save_policy(folder / "members" / "m.safetensors", net, net.init(jax.random.PRNGKey(0)), {})
    digest = hashlib.sha256((folder / "members" / "m.safetensors").read_bytes()).hexdigest()
    member = {"name": "m", "kind": "ippo", "file": "members/m.safetensors", "sha256": digest}
    member["bounds"] = {"lower": 0.0, "upper": 5.0}
    sets.write_manifest(
        folder,
        {
            "format": sets.FORMAT,
            "format_version": sets.FORMAT_VERSION,
            "set_id": "sabotage-v1/v9",
            "version": "v9",
            "task_id": "sabotage-v1",
            "seatings": [[0], [1]],
            "members": [member],
        },
    )
    return folder


def test_lock_new_locks_a_new_set_once_and_refuses_a_changed_published_file(tmp_path):
    root = tmp_path / "heldout"
    folder = _tiny_set(root / "sabotage-v1" / "v9")
    problems = heldout.verify(root)
    assert problems[0] == "sabotage-v1/v9.sha256 is missing: the published set cannot be verified"
    assert len(problems) == 1 + 4 and all("not in v9.sha256" in p for p in problems[1:])
    locked = heldout.lock_new(folder, root)
    assert locked == len([p for p in folder.rglob("*") if p.is_file()]) == 4
    assert heldout.lock_path(folder).is_file() and heldout.verify(root) == []
    before = heldout.lock_path(folder).read_bytes()
    assert heldout.lock_new(folder, root) == 0  # idempotent: the lock is not rewritten
    card = folder / "members" / "m.safetensors.json"
    card.write_text(card.read_text().replace('"hidden"', '"hidden" ', 1))
    with pytest.raises(heldout.TeammateSetIntegrityError, match="never changes"):
        heldout.lock_new(folder, root)
    assert heldout.lock_path(folder).read_bytes() == before
    problems = heldout.verify(root, load_members=False)
    assert problems == [
        "sabotage-v1/v9/members/m.safetensors.json: sha256 differs from its lock (the file "
        "was changed)"
    ]


def test_a_development_set_is_never_locked(tmp_path):
    root = tmp_path / "heldout"
    folder = _tiny_set(root / "sabotage-v1" / "dev")
    with pytest.raises(ValueError, match="development set: it is never locked"):
        heldout.lock_new(folder, root)
    assert not heldout.lock_path(folder).exists()


def test_the_checkout_has_no_lock_of_a_development_set():
    # a dev lock is shipped by no data wheel (tests/heldout/test_wheels.py) and would claim a
    # published set
    checkout = Path(__file__).resolve().parents[2] / "heldout"
    assert sorted(checkout.glob(f"*/{heldout.DEVELOPMENT}{heldout.LOCK_SUFFIX}")) == []


def test_verify_reports_unlisted_and_missing_files(tmp_path):
    root = tmp_path / "heldout"
    folder = _tiny_set(root / "sabotage-v1" / "v9")
    heldout.lock_new(folder, root)
    (folder / "extra.txt").write_text("x")
    (folder / "members" / "m.safetensors.json").unlink()
    problems = heldout.verify(root)
    assert any("extra.txt: not in v9.sha256" in p for p in problems)
    assert any("m.safetensors.json: missing" in p for p in problems)
    result = _run("heldout", "verify", env={sets.HELDOUT_ENV: str(root)})
    assert result.exit_code == EXIT_TEAMMATE_INTEGRITY and "extra.txt" in result.stderr


def test_a_development_set_is_not_published_and_needs_no_lock(tmp_path):
    root = tmp_path / "heldout"
    _tiny_set(root / "sabotage-v1" / "dev")
    assert heldout.published_sets(root) == []
    assert heldout.verify(root) == []


# ------------------------------------------------------------------------------ selection


def test_select_prunes_incompetent_then_least_diverse_candidates():
    # rows: best response of each candidate; columns: candidates
    xp = np.array(
        [
            [10.0, 1.0, 2.0, 0.0, 9.0],
            [1.0, 12.0, 2.0, 0.0, 9.0],
            [1.0, 1.0, 11.0, 0.0, 9.0],
            [0.0, 0.0, 0.0, 1.0, 0.0],  # weak: 1 < 0.2 * 12
            [3.0, 3.0, 3.0, 0.0, 9.5],  # bland: the others' BRs do almost as well with it
        ]
    )
    names = ["a", "b", "c", "weak", "bland"]
    kept, pruned = hb.select(xp, names, min_competence=0.2, min_gap=0.1)
    assert kept == [0, 1, 2]
    assert [p["name"] for p in pruned] == ["weak", "bland"]
    assert pruned[0]["reason"] == "not competent"
    assert pruned[0]["threshold"] == pytest.approx(2.4)
    assert pruned[1]["reason"] == "adds no diversity"
    assert pruned[1]["other_best_responses_return"] == pytest.approx(9.0)
    assert pruned[1]["gap_fraction"] == pytest.approx(0.5 / 9.5)


def test_select_keeps_everyone_when_every_own_best_response_is_best():
    xp = np.diag([5.0, 6.0, 7.0]) + 0.5
    kept, pruned = hb.select(xp, ["x", "y", "z"], 0.2, 0.1)
    assert kept == [0, 1, 2] and pruned == []


# ------------------------------------------------------------------------------ SeatPair


@pytest.mark.parametrize("task", ["overcooked-forced_coord-v1", "overcooked-asymm_advantages-v1"])
def test_seat_pair_plays_the_agent_of_the_side_it_stands_on(task):  # v1: seat 0 on the left
    env = envs.make(task)
    pair = SeatPair.for_env(env, (Constant(1), Constant(3)))
    for i in range(8):
        _, step = env.reset(jax.random.PRNGKey(i))
        for seat, want in ((0, 1), (1, 3)):
            action, _, _ = pair.act((None, None), (), step.obs[seat], jax.random.PRNGKey(0))
            assert int(action) == want


def test_seat_pair_refuses_an_undivided_layout():
    with pytest.raises(ValueError, match="no left and right regions"):
        SeatPair.for_env(envs.make("cramped_room"), (Constant(0), Constant(0)))


# ---------------------------------------------------------------------- pass-shaping term


def test_onion_on_counter_shaping_rewards_an_onion_placed_on_a_counter():
    from aht_bench.envs.overcooked import ONION, with_shaping

    env = envs.make("counter_circuit")
    # seat 0 stands below a counter, facing up, holding an onion; seat 1 elsewhere
    floor = np.argwhere(env.kinds == 0)  # (y, x) floor cells
    spot = next((y, x) for y, x in floor if env.kinds[y - 1, x] == 1)
    other = next((y, x) for y, x in floor if (y, x) != spot)
    inner = env.make_inner(
        agent_pos=[[spot[1], spot[0]], [other[1], other[0]]],
        agent_dir_idx=[0, 0],
        agent_inv=[ONION, 0],
    )
    actions = jnp.array([5, 4])  # interact, stay
    key = jax.random.PRNGKey(0)
    _, _, shaped_paper = env._step_inner(key, inner, actions)
    _, _, shaped_pass = with_shaping(env, onion_on_counter=0.5)._step_inner(key, inner, actions)
    assert shaped_paper.tolist() == [0.0, 0.0]
    assert shaped_pass.tolist() == [0.5, 0.0]


@pytest.mark.parametrize("algorithm", ["ippo", "br", "brdiv"])
def test_shaping_is_validated_and_reaches_the_training_env(algorithm):
    from aht_bench.algorithms import brdiv
    from aht_bench.training import presets
    from aht_bench.training.rollout import make_env

    def get(task, shaping):
        if algorithm == "brdiv":
            return brdiv.preset("quick", task, shaping=shaping)
        return presets.get(algorithm, "quick", task, shaping=shaping)

    with pytest.raises(ValueError, match="only on the Overcooked tasks"):
        get("lbf", (("onion_on_counter", 0.5),))
    with pytest.raises(ValueError, match="unknown coefficients"):
        get("cramped_room", (("onion_eaten", 1.0),))
    config = get("overcooked-cramped_room-v1", (("counter_pickup", 0),))  # v1 pays it by default
    assert config.shaping == (("counter_pickup", 0.0),)
    env = make_env(config.task_id, config.shaping).env
    assert float(env.params.counter_pickup) == 0.0
    assert float(env.params.onion_pickup) == pytest.approx(0.1)
    assert float(make_env(config.task_id).env.params.counter_pickup) == 1.0


# -------------------------------------------------------------------------------- loaders


def _first_v1() -> Path:
    if not V1:
        pytest.skip("no v1 set published")
    return V1[0]


def test_load_and_member_give_policies_usable_in_jax_gymnasium_and_pettingzoo():
    from aht_bench.adapters.gym import EgoEnv
    from aht_bench.adapters.pz import ParallelEnv

    task = _first_v1().parent.name
    mates = heldout.load(task)
    assert mates.size >= 2
    env = envs.make(task)
    _, step = env.reset(jax.random.PRNGKey(0))
    carry = mates.init_carry(())
    action, _, _ = jax.jit(mates.act)(1, carry, step.obs[1], jax.random.PRNGKey(1))
    assert 0 <= int(action) < env.num_actions

    name = mates.names[0]
    policy, params = heldout.member(task, name)
    gym_env = EgoEnv(task, teammate=policy, teammate_params=params, seat=0)
    obs, _ = gym_env.reset(seed=0)
    for _ in range(3):
        obs, _, terminated, truncated, _ = gym_env.step(gym_env.action_space.sample())
    assert obs.shape == gym_env.observation_space.shape
    pz = ParallelEnv(task, teammates={"agent_1": (policy, params)})
    observations, _ = pz.reset(seed=0)
    assert list(observations) == ["agent_0"]
    pz.step({"agent_0": 0})


def test_unknown_version_lists_the_shipped_ones():
    with pytest.raises(heldout.TeammateSetError, match="no teammate set 'v7'"):
        heldout.load("lbf", "v7")


def test_without_a_version_the_newest_published_set_is_loaded(monkeypatch):
    # lbf-v1 has v1 and v2: the default follows `aht-bench evaluate` (the newest), a named
    # version stays what it names
    assert sets.newest_version("lbf-v1") == "v2"
    assert heldout.load("lbf").names == sets.load_set("lbf-v1", "v2").names
    assert heldout.load("lbf", "v1").names == sets.load_set("lbf-v1", "v1").names
    assert heldout.load("lbf").names != heldout.load("lbf", "v1").names
    # the BC partner: the newest human-proxy set of the task's version
    loaded: list[str] = []
    monkeypatch.setattr(
        sets, "resolve_set_folder", lambda task_id, v: loaded.append(f"{task_id}/{v}") or 1 / 0
    )
    for task in ("cramped_room", "overcooked-cramped_room-v1"):
        with pytest.raises(ZeroDivisionError):
            heldout.bc_partner(task)
    assert loaded == [
        "overcooked-cramped_room-v2/human-proxy-v3",
        "overcooked-cramped_room-v1/human-proxy-v1",
    ]
    with pytest.raises(heldout.TeammateSetError, match="no published vN set for sabotage-v1"):
        heldout.load("sabotage")


def test_cli_list_show_xp_and_verify(tmp_path):
    result = _run("heldout", "verify")
    assert result.exit_code == EXIT_OK, result.output
    assert f"verified {len(PUBLISHED)} published sets" in result.output
    result = _run("heldout", "list")
    assert result.exit_code == EXIT_OK
    for folder in PUBLISHED:
        assert f"{folder.parent.name}/{folder.name}" in result.output
    task = _first_v1().parent.name
    result = _run("heldout", "show", "--task", task)
    assert result.exit_code == EXIT_OK and "verified" in result.output
    plot = tmp_path / "xp.png"
    result = _run("heldout", "xp", "--task", task, "--plot", str(plot))
    assert result.exit_code == EXIT_OK and "off-diagonal mean" in result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_show_and_xp_default_to_the_newest_published_set_as_evaluate_does(tmp_path):
    # the README's `heldout show --task cramped_room`: the alias names the v2 task, which has
    # no v1 set (the default was v1 before, and the command failed as written)
    for alias in ("cramped_room", "lbf"):
        task_id = envs.resolve(alias)
        newest = sets.newest_version(task_id)
        assert newest is not None
        result = _run("heldout", "show", "--task", alias)
        assert result.exit_code == EXIT_OK, result.output
        assert result.output.startswith(f"{task_id}/{newest} (manifest sha256 "), result.output
        result = _run("heldout", "xp", "--task", alias, "--plot", str(tmp_path / "xp.png"))
        assert result.exit_code == EXIT_OK and "off-diagonal mean" in result.output
    assert sets.newest_version("lbf-v1") != "v1"  # so a named v1 is not the default
    result = _run("heldout", "show", "--task", "lbf", "--version", "v1")
    assert result.exit_code == EXIT_OK and result.output.startswith("lbf-v1/v1 "), result.output


def test_build_refuses_an_existing_set_and_unknown_recipes(tmp_path):
    folder = _first_v1()
    with pytest.raises(hb.HeldoutBuildError, match="never overwritten"):
        hb.build(folder.parent.name, "v1")
    with pytest.raises(hb.HeldoutBuildError, match="no build recipe for version"):
        hb.recipe("lbf", "v7")
    result = _run("heldout", "build", "--task", "sabotage", "--version", "v1")
    assert result.exit_code == 2 and "no v1 recipe for sabotage-v1" in result.output


@pytest.mark.parametrize(
    ("task", "preset", "steps", "shaping"),
    [
        ("overcooked-cramped_room-v1", "quick", 2_500_000, ()),
        ("overcooked-coord_ring-v1", "paper", 1_500_000, ()),
        ("overcooked-forced_coord-v1", "paper", 1_500_000, (("counter_pickup", 0.0),)),
    ],
)
def test_an_ippo_source_trains_with_its_presets_hyperparameters(
    tmp_path, monkeypatch, task, preset, steps, shaping
):
    from aht_bench.algorithms import ippo
    from aht_bench.training import presets

    class Stop(Exception):
        pass

    seen = []

    def fake_train(key, config, seeds, on_iteration=None):
        seen.append(config)
        raise Stop

    monkeypatch.setattr(ippo, "train", fake_train)
    rec = hb.recipe(task)
    with pytest.raises(Stop):
        hb.candidates._ippo_candidates(rec, envs.make(rec.task_id), tmp_path, lambda _msg: None)
    expected = presets.get("ippo", preset, rec.task_id, total_timesteps=steps, shaping=shaping)
    assert seen[0] == expected
    assert seen[0] != presets.get(
        "ippo",
        "quick" if preset == "paper" else "paper",
        rec.task_id,
        total_timesteps=steps,
        shaping=shaping,
    )


@pytest.mark.parametrize("task_id", list(recipes.V1))
def test_recipe_sources_never_share_a_seed(task_id):
    rec = recipes.V1[task_id]
    seeds = [
        recipes.IPPO_SEED + s.seed_offset + k
        for s in rec.ippo
        for k in range(s.seeds if s.tries is None else s.tries)
    ]
    assert len(seeds) == len(set(seeds)) and max(seeds) < recipes.BRDIV_SEED


def test_a_source_with_tries_skips_teams_that_ended_at_zero_self_play(tmp_path):
    # trained teams read from the work folder: seeds 9100..9103 ended at 0, 5, None (no
    # episode finished) and 7; two teams are wanted from at most four tries
    rec = dataclasses.replace(
        hb.recipe("overcooked-cramped_room-v1"),
        ippo=(recipes.IPPOSource(seeds=2, tries=4, preset="paper", timesteps=3200),),
    )
    env = envs.make(rec.task_id)
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    for k, sp in enumerate([0.0, 5.0, None, 7.0, 9.0]):
        save_policy(
            tmp_path / f"ippo_mlp_{k}-s{9100 + k}-t3200-paper-seat1.safetensors",
            net,
            net.init(jax.random.PRNGKey(k)),
            {
                "task_id": rec.task_id,
                "provenance": {"final_self_play_return": sp, "seed": 9100 + k},
            },
        )
    rejected: list[dict] = []
    got = hb.candidates._ippo_candidates(rec, env, tmp_path, lambda _msg: None, rejected)
    assert [c.name for c in got] == ["ippo_mlp_1", "ippo_mlp_3"]
    assert [(r["name"], r["seed"], r["self_play_return"]) for r in rejected] == [
        ("ippo_mlp_0", 9100, 0.0),
        ("ippo_mlp_2", 9102, 0.0),
    ]
    # without tries every team is a candidate, whatever its return (the published recipes)
    keep_all = dataclasses.replace(rec, ippo=(dataclasses.replace(rec.ippo[0], tries=None),))
    rejected.clear()
    got = hb.candidates._ippo_candidates(keep_all, env, tmp_path, lambda _msg: None, rejected)
    assert [c.name for c in got] == ["ippo_mlp_0", "ippo_mlp_1"] and rejected == []


def test_a_recipes_shaping_reaches_every_learner_and_its_own_cache_files(tmp_path, monkeypatch):
    # a team trained with the paper's shaping is in the work folder under the same seed; a
    # recipe with counter_pickup 0 must not reuse it, and its IPPO teams, BRDiv run and best
    # responses all train with that shaping
    from aht_bench.algorithms import br, brdiv, ippo

    class Stop(Exception):
        pass

    seen = []

    def fake(*args, **kwargs):
        seen.append(next(a for a in args if hasattr(a, "shaping")))
        raise Stop

    for module, name in ((ippo, "train"), (brdiv, "setup"), (br, "train")):
        monkeypatch.setattr(module, name, fake)
    source = recipes.IPPOSource(seeds=1, preset="paper", timesteps=3200)
    rec = dataclasses.replace(hb.recipe("overcooked-forced_coord-v1"), ippo=(source,), shaping=())
    env = envs.make(rec.task_id)
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    for seat in (0, 1):
        save_policy(
            tmp_path / f"ippo_mlp_0-s9100-t3200-paper-seat{seat}.safetensors",
            net,
            net.init(jax.random.PRNGKey(seat)),
            {"task_id": rec.task_id, "provenance": {"final_self_play_return": 5.0}},
        )
    cands = hb.candidates._ippo_candidates(rec, env, tmp_path, lambda _msg: None)
    assert len(cands) == 1 and not seen
    shaped = dataclasses.replace(rec, shaping=(("counter_pickup", 0.0),))
    assert hb.recipe("overcooked-forced_coord-v1").shaping == shaped.shaping
    with pytest.raises(Stop):
        hb.candidates._ippo_candidates(shaped, env, tmp_path, lambda _msg: None)
    with pytest.raises(Stop):
        hb.candidates._brdiv_candidates(shaped, env, tmp_path, lambda _msg: None)
    with pytest.raises(Stop):
        hb.best_responses._best_responses(shaped, env, cands, tmp_path, lambda _msg: None)
    assert [c.shaping for c in seen] == [(("counter_pickup", 0.0),)] * 3


def test_a_sources_own_shaping_trains_its_teams_only_and_tags_their_files(tmp_path, monkeypatch):
    # counter_circuit's pass teams: onion_pass on top of the recipe's shaping, for that source
    from aht_bench.algorithms import ippo

    class Stop(Exception):
        pass

    seen = []

    def fake(key, config, *args, **kwargs):
        seen.append(config.shaping)
        raise Stop

    monkeypatch.setattr(ippo, "train", fake)
    plain = recipes.IPPOSource(seeds=1, preset="paper", timesteps=3200)
    passing = dataclasses.replace(plain, shaping=(("onion_pass", 2.0),))
    rec = dataclasses.replace(
        hb.recipe("overcooked-counter_circuit-v1"), ippo=(passing,), shaping=()
    )
    env = envs.make(rec.task_id)
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    for seat in (0, 1):  # a team of the same seed without the pass reward is not reused
        save_policy(
            tmp_path / f"ippo_mlp_0-s9100-t3200-paper-seat{seat}.safetensors",
            net,
            net.init(jax.random.PRNGKey(seat)),
            {"task_id": rec.task_id, "provenance": {"final_self_play_return": 5.0}},
        )
    with pytest.raises(Stop):
        hb.candidates._ippo_candidates(rec, env, tmp_path, lambda _msg: None)
    assert seen == [(("onion_pass", 2.0),)]
    for seat in (0, 1):  # ... one with it is
        (tmp_path / f"ippo_mlp_0-s9100-t3200-paper-seat{seat}.safetensors").rename(
            tmp_path / f"ippo_mlp_0-s9100-t3200-paper-op2-seat{seat}.safetensors"
        )
        src = tmp_path / f"ippo_mlp_0-s9100-t3200-paper-seat{seat}.safetensors.json"
        if src.exists():
            src.rename(tmp_path / f"ippo_mlp_0-s9100-t3200-paper-op2-seat{seat}.safetensors.json")
    assert len(hb.candidates._ippo_candidates(rec, env, tmp_path, lambda _msg: None)) == 1
    cc = hb.recipe("overcooked-counter_circuit-v1")
    assert dict(cc.shaping) == {"counter_pickup": 0.0}
    assert dict(cc.ippo[0].shaping) == {}
    assert dict(cc.ippo[1].shaping) == {"onion_pass": 2.0}


def test_a_brdiv_source_with_the_ippo_papers_ppo(tmp_path, monkeypatch):
    from aht_bench.algorithms import brdiv
    from aht_bench.training import presets

    class Stop(Exception):
        pass

    seen = []

    def fake(config):
        seen.append(config)
        raise Stop

    monkeypatch.setattr(brdiv, "setup", fake)  # a BRDiv run's first use of its config
    source = recipes.BRDivSource(
        runs=1,
        population_size=3,
        generation_updates=12,
        num_envs=8,
        rollout_length=400,
        ppo="ippo-paper",
    )
    rec = dataclasses.replace(hb.recipe("overcooked-coord_ring-v1"), brdiv=source)
    logged = []
    with pytest.raises(Stop):
        hb.candidates._brdiv_candidates(rec, envs.make(rec.task_id), tmp_path, logged.append)
    config = seen[0]
    assert config.generation_ppo == presets.get("ippo", "paper", rec.task_id).ppo
    assert (config.num_envs, config.rollout_length, config.generation_updates) == (8, 400, 12)
    assert config.generation_timesteps == 9 * 8 * 400 * 12
    quick = dataclasses.replace(rec, brdiv=recipes.BRDivSource(3, 3, 12))
    with pytest.raises(Stop):
        hb.candidates._brdiv_candidates(quick, envs.make(rec.task_id), tmp_path, logged.append)
    assert seen[1].generation_ppo == brdiv.preset("quick", rec.task_id).generation_ppo
    assert seen[1].generation_ppo != config.generation_ppo
    bad = dataclasses.replace(rec, brdiv=dataclasses.replace(source, ppo="fast"))
    with pytest.raises(ValueError, match="use 'quick' or 'ippo-paper'"):
        hb.candidates._brdiv_candidates(bad, envs.make(rec.task_id), tmp_path, logged.append)


def test_a_cached_best_response_to_another_candidate_of_the_same_name_is_retrained(
    tmp_path, monkeypatch
):
    # a changed recipe trains a new brdiv-conf1_0; the best response cached for the old one
    # (same file name) must not be reused
    import os

    from aht_bench.algorithms import br

    class Stop(Exception):
        pass

    calls = []

    def fake_train(*args, **kwargs):
        calls.append(1)
        raise Stop

    monkeypatch.setattr(br, "train", fake_train)
    rec = hb.recipe("overcooked-cramped_room-v1")
    env = envs.make(rec.task_id)
    net = MLPActorCritic(env.obs_dim, env.num_actions, hidden=(8,))
    member = tmp_path / "conf.safetensors"
    save_policy(member, net, net.init(jax.random.PRNGKey(0)), {"task_id": rec.task_id})
    cand = hb.candidates._make_candidate(
        env, "brdiv-conf1_0", "brdiv", [(net, None)], [(None, member)], {}
    )
    brfile = tmp_path / f"br-brdiv-conf1_0-seat0-s9300-t{rec.br_timesteps}.safetensors"

    def cache_br(partner):
        prov = {} if partner is None else {"partner_sha256": partner}
        save_policy(brfile, net, net.init(jax.random.PRNGKey(1)), {"provenance": prov})

    def run():
        calls.clear()
        try:
            hb.best_responses._best_responses(rec, env, [cand], tmp_path, lambda _msg: None)
        except Stop:
            pass
        return bool(calls)  # retrained

    cache_br(hb.best_responses._partner_digest(cand))
    assert not run()  # trained against this candidate: reused
    cache_br("0" * 64)
    assert run()  # trained against another one
    cache_br(None)  # a file from before partner_sha256: reused only if newer than the member
    assert not run()
    os.utime(member, (brfile.stat().st_mtime + 10,) * 2)
    assert run()


# ---------------------------------------------------------------------------- reproducible


def _tiny_recipe(monkeypatch) -> None:
    r = recipes.V1["lbf-v1"]
    tiny = dataclasses.replace(
        r,
        ippo=(dataclasses.replace(r.ippo[0], seeds=2, timesteps=64 * 128 * 2, checkpoints=()),),
        brdiv=dataclasses.replace(r.brdiv, population_size=2, generation_updates=4),
        heuristics=r.heuristics[:2],
        extra_partners=(),
        br_timesteps=64 * 128,
        episodes=2,
        min_competence=0.0,
        min_gap=-1e9,
    )
    monkeypatch.setitem(recipes.V1, "lbf-v1", tiny)


def test_heldout_compare_finds_a_changed_weight_file(tmp_path):
    import subprocess
    import sys

    folder = _first_v1()
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    script = [sys.executable, str(Path(__file__).parents[2] / "benchmarks" / "heldout_compare.py")]
    same = subprocess.run([*script, str(folder), str(copy)], capture_output=True, text=True)
    assert same.returncode == 0 and " 0 differ" in same.stdout
    victim = _weight_files(copy)[0]
    data = bytearray(victim.read_bytes())
    data[-1] ^= 1
    victim.write_bytes(bytes(data))
    changed = subprocess.run([*script, str(folder), str(copy)], capture_output=True, text=True)
    rel = victim.relative_to(copy)
    assert changed.returncode == 1 and f"DIFFERS {rel}" in changed.stdout


@pytest.mark.slow
def test_a_rebuild_from_scratch_reproduces_every_published_byte_of_weights(tmp_path, monkeypatch):
    _tiny_recipe(monkeypatch)
    quiet = lambda _msg: None  # noqa: E731
    a = hb.build("lbf", "v1", out=tmp_path / "a", work=tmp_path / "work_a", log=quiet)
    b = hb.build("lbf", "v1", out=tmp_path / "b", work=tmp_path / "work_b", log=quiet)
    files_a = sorted(p.relative_to(a) for p in a.rglob("*.safetensors"))
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*.safetensors"))
    assert any(f.parts[0] == "members" for f in files_a) and any(
        f.parts[0] == "br" for f in files_a
    )
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    ma, mb = (json.loads((x / "manifest.json").read_text()) for x in (a, b))
    assert ma["partner_returns"] == mb["partner_returns"]
    loaded = sets.load_set("lbf", a)
    assert loaded.names == tuple(m["name"] for m in ma["members"])


def test_a_built_set_says_whether_it_is_a_development_set():
    from aht_bench.heldout.build.publish import _status

    assert _status("lbf-v1", "dev").startswith("DEVELOPMENT SET of lbf-v1, not a heldout set")
    assert _status("lbf-v1", "v3").startswith("PUBLISHED heldout set v3: immutable")
    for folder in sorted((Path(__file__).resolve().parents[2] / "heldout").glob("*/dev")):
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["status"].startswith("DEVELOPMENT SET"), folder
