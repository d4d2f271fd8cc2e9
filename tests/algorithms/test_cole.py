"""COLE: Shapley values of the cross-play game, the partner distribution (alpha, c_UCT) and the
final-ego choice, each against values worked by hand; configs and presets; one tiny run end to
end through `runs.train` (a subprocess: stopped by SIGTERM after an iteration and resumed
bit-identically, a member that learns to coordinate, the cross-play matrix and the ego; slow)."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file
from tiny_tasks import COORD_TASK

from aht_bench import runs
from aht_bench.algorithms import cole
from aht_bench.envs.matrix import RepeatedMatrixGame
from aht_bench.policies import MLPActorCritic, load_policy, load_population
from aht_bench.runs import ALGORITHMS
from aht_bench.training import PPOConfig, checkpoint

pytestmark = pytest.mark.usefixtures("tiny_tasks")

# A cross-play matrix of members A, B, C (symmetric, as COLE's is: both seat orders averaged).
# A plays well with B, not at all with C; B is the best partner overall; C the worst.
M = np.array([[4.0, 2.0, 0.0], [2.0, 6.0, 1.0], [0.0, 1.0, 2.0]])


def test_coalition_values_and_shapley_values_by_hand():
    # v(C) = mean of M over C x C:
    #   v(A) = 4, v(B) = 6, v(C) = 2
    #   v(AB) = (4 + 6 + 2 * 2) / 4 = 3.5, v(AC) = (4 + 2 + 0) / 4 = 1.5,
    #   v(BC) = (6 + 2 + 2 * 1) / 4 = 2.5, v(ABC) = (4 + 6 + 2 + 2 * (2 + 0 + 1)) / 9 = 2
    values = cole.core.coalition_values(M)  # indexed by bit mask: bit 0 = A, bit 1 = B, bit 2 = C
    np.testing.assert_allclose(values, [0, 4, 6, 3.5, 2, 1.5, 2.5, 2.0])
    # phi_i = 1/3 v(i) + 1/6 (v(ij) - v(j)) + 1/6 (v(ik) - v(k)) + 1/3 (v(ijk) - v(jk)):
    #   phi_A = 4/3 + (3.5 - 6)/6 + (1.5 - 2)/6 + (2 - 2.5)/3 = 2/3
    #   phi_B = 6/3 + (3.5 - 4)/6 + (2.5 - 2)/6 + (2 - 1.5)/3 = 13/6
    #   phi_C = 2/3 + (1.5 - 4)/6 + (2.5 - 6)/6 + (2 - 3.5)/3 = -5/6
    phi = cole.core.shapley_values(M)
    np.testing.assert_allclose(phi, [2 / 3, 13 / 6, -5 / 6], rtol=1e-12)
    assert math.isclose(phi.sum(), 2.0)  # efficiency: sum phi = v(ABC)


def _shapley_by_permutations(payoffs: np.ndarray) -> np.ndarray:
    """The definition: each member's marginal contribution averaged over all join orders."""
    n = len(payoffs)

    def v(members):
        if not members:
            return 0.0
        idx = list(members)
        return float(payoffs[np.ix_(idx, idx)].mean())

    phi = np.zeros(n)
    orders = list(itertools.permutations(range(n)))
    for order in orders:
        for pos, i in enumerate(order):
            phi[i] += v(order[: pos + 1]) - v(order[:pos])
    return phi / len(orders)


def test_shapley_values_match_the_permutation_definition():
    rng = np.random.default_rng(0)
    for n in (1, 2, 4, 6):
        payoffs = rng.uniform(0, 10, (n, n))  # not symmetric: the formula must not assume it
        np.testing.assert_allclose(
            cole.core.shapley_values(payoffs), _shapley_by_permutations(payoffs), rtol=1e-10
        )
    with pytest.raises(ValueError, match="square"):
        cole.core.shapley_values(np.zeros((2, 3)))


def test_partner_distribution_by_hand():
    phi = cole.core.shapley_values(M)  # 2/3, 13/6, -5/6
    # incompatibility u = (max phi - phi) / (max - min) = (13/6 - phi) / 3 = (0.5, 0, 1)
    # alpha = 1.5: q proportional to exp(1.5 u) = (e^0.75, 1, e^1.5)
    q = np.array([math.exp(0.75), 1.0, math.exp(1.5)])
    q /= q.sum()  # (0.27860, 0.13160, 0.58980)
    # counts n = (2, 1, 0), N = 3, c_UCT = 0.4: bonus 0.4 sqrt(ln 4 / (1 + n_i))
    bonus = 0.4 * np.sqrt(math.log(4.0) / np.array([3.0, 2.0, 1.0]))  # (0.27191, 0.33302, 0.47096)
    expected = (q + bonus) / (q + bonus).sum()
    counts = np.array([2.0, 1.0, 0.0])
    p = cole.core.partner_distribution(phi, counts, alpha=1.5, c_uct=0.4)
    np.testing.assert_allclose(p, expected, rtol=1e-12)
    np.testing.assert_allclose(p, [0.265192, 0.223818, 0.510990], atol=1e-6)
    # C, the least compatible, is drawn most; A (n = 2) less than its priority alone says
    # alpha = 0 and no bonus: uniform; no counts yet (N = 0): no bonus
    np.testing.assert_allclose(cole.core.partner_distribution(phi, counts, 0.0, 0.0), [1 / 3] * 3)
    np.testing.assert_allclose(cole.core.partner_distribution(phi, np.zeros(3), 1.5, 0.4), q)
    # equal Shapley values: every member equally incompatible
    np.testing.assert_allclose(
        cole.core.partner_distribution(np.ones(2), np.zeros(2), 1.5, 0.0), [0.5, 0.5]
    )


def test_partner_weights_of_a_buffer():
    config = _config(population_size=4, alpha=1.5, c_uct=0.4)
    padded = np.zeros((4, 4))
    padded[:3, :3] = M
    buffer = cole.core.ColeBuffer(
        members=None,
        cross_play=jnp.asarray(padded),
        partner_counts=jnp.array([2.0, 1.0, 0.0, 0.0]),
        count=jnp.int32(3),
    )
    weights = cole.core.partner_weights(buffer, config)
    np.testing.assert_allclose(weights, [0.265192, 0.223818, 0.510990, 0.0], atol=1e-6)
    # the first member: all weight on slot 0, where the learner itself sits (self-play)
    empty = buffer._replace(count=jnp.int32(0))
    np.testing.assert_array_equal(cole.core.partner_weights(empty, config), [1.0, 0.0, 0.0, 0.0])


def test_ego_is_the_member_with_the_highest_mean_cross_play():
    padded = np.zeros((4, 4))
    padded[:3, :3] = M
    # self-play excluded: A (2 + 0) / 2 = 1, B (2 + 1) / 2 = 1.5, C (0 + 1) / 2 = 0.5
    scores = np.asarray(cole.core.mean_cross_play(padded, 3))
    np.testing.assert_allclose(scores[:3], [1.0, 1.5, 0.5])
    assert scores[3] == -np.inf and int(np.argmax(scores)) == 1
    # A and B only: (2, 2), a tie, the first wins; a population of one: its self-play return
    np.testing.assert_allclose(np.asarray(cole.core.mean_cross_play(padded, 2))[:2], [2.0, 2.0])
    assert int(np.argmax(cole.core.mean_cross_play(padded, 2))) == 0
    assert float(cole.core.mean_cross_play(padded, 1)[0]) == 4.0


def test_member_trains_in_both_seats_with_the_standard_loss():
    config = _config()
    pairings = cole.setup(config).pairings
    assert (pairings.seat0.seats, pairings.seat1.seats) == ((0, 1), (1, 0))
    assert pairings.seat0.learners == pairings.seat1.learners == (0,)
    assert pairings.cross.learners == ()
    terms = [
        (t.data, t.coef, t.timestep_weighted, t.sign, t.value_head)
        for t in cole.core.MEMBER_LOSS_TERMS
    ]
    assert terms == [("seat0", 1.0, False, 1.0, 0), ("seat1", 1.0, False, 1.0, 0)]
    nets = cole.networks(config)
    assert isinstance(nets.ego, MLPActorCritic) and nets.ego == nets.member
    assert nets.member.num_value_heads == 1


# ----------------------------------------------------------------------------- configs, presets


def _config(**kw) -> cole.ColeConfig:
    fields: dict[str, Any] = dict(
        task_id=COORD_TASK,
        population_size=3,
        timesteps_per_iteration=20 * 2 * 8 * 6,
        num_envs=8,
        rollout_length=6,
        ppo=PPOConfig(learning_rate=1e-2, num_epochs=2, num_minibatches=2),
        alpha=1.0,
        c_uct=0.1,
        eval_envs=16,
        hidden=(8,),
    )
    return cole.ColeConfig(**(fields | kw))


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"population_size": 0}, "population_size"),
        ({"population_size": 22}, "population_size"),
        ({"timesteps_per_iteration": 10}, "timesteps_per_iteration"),
        ({"alpha": -1.0}, "alpha"),
        ({"c_uct": -0.1}, "c_uct"),
        ({"eval_envs": 0}, "eval_envs"),
        ({"hidden": ()}, "hidden"),
        ({"ppo": PPOConfig(num_minibatches=5)}, "ppo.num_minibatches"),
        ({"task_id": "lbff"}, "task_id"),
    ],
)
def test_config_refuses_with_the_field_name(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        _config(**kw)


def test_budget_counts_training_and_cross_play():
    config = _config()
    assert config.iterations == 3 and config.batch_size == 96
    assert config.updates_per_iteration == 20 and config.train_steps_per_iteration == 1920
    # cross-play: member k plays k + 1 members, 2 seat orders x 16 episodes x 1 step
    assert [config.eval_steps(k) for k in range(3)] == [32, 64, 96]
    assert [config.env_steps_after(d) for d in range(4)] == [0, 1952, 3936, 5952]
    assert config.env_steps_per_iteration == 5952 // 3
    assert hash(config) == hash(_config())  # a static jit argument


def test_paper_presets_follow_the_table():
    lbf = cole.preset("paper", "lbf")
    assert (lbf.population_size, lbf.timesteps_per_iteration, lbf.num_envs) == (20, 18_000_000, 64)
    assert (lbf.alpha, lbf.c_uct) == (1.5, 0.4)
    ppo = lbf.ppo
    assert (ppo.learning_rate, ppo.num_epochs, ppo.num_minibatches) == (1e-3, 15, 8)
    assert (ppo.ent_coef, ppo.clip_eps, ppo.anneal_lr) == (0.05, 0.05, False)
    rows = {  # task: (timesteps, size, ent, clip, alpha, c_UCT)
        "cramped_room": (18_500_000, 13, 0.05, 0.05, 0.1, 0.1),
        "asymm_advantages": (18_500_000, 13, 0.01, 0.3, 0.1, 0.3),
        "counter_circuit": (33_800_000, 13, 0.01, 0.01, 0.1, 0.3),
        "coord_ring": (33_800_000, 13, 0.01, 0.1, 0.1, 0.3),
        "forced_coord": (33_800_000, 13, 0.01, 0.05, 0.1, 0.3),
    }
    for task, row in rows.items():
        c = cole.preset("paper", task)
        got = (c.timesteps_per_iteration, c.population_size, c.ppo.ent_coef, c.ppo.clip_eps)
        assert got + (c.alpha, c.c_uct) == row, task
        assert (c.num_envs, c.ppo.learning_rate, c.ppo.num_epochs, c.ppo.num_minibatches) == (
            64,
            1e-3,
            15,
            8,
        )
        assert not c.ppo.anneal_lr and c.rollout_length == 400
    # the paper's budgets (App. "Training Compute"): population size x timesteps per iteration
    assert lbf.population_size * lbf.timesteps_per_iteration == 360_000_000
    cc = cole.preset("paper", "counter_circuit")
    assert abs(cc.population_size * cc.timesteps_per_iteration - 440_000_000) < 1_000_000
    for name, table in cole.PRESETS.items():
        assert sorted(table) == sorted(cole.presets.PAPER_TASKS), name
    with pytest.raises(KeyError, match="Did you mean 'quick'"):
        cole.preset("quik", "lbf")


def test_registered_for_aht_bench_train():
    algo = ALGORITHMS["cole"]
    assert algo.module is cole and algo.loop.report is cole.REPORT and not algo.needs_teammates
    assert set(algo.presets) == {"medium", "paper", "quick"}
    overrides = (("population_size", "3"), ("ppo.learning_rate", "3e-4"), ("alpha", "0.5"))
    config = runs.RunSpec("cole", "lbf", "quick", overrides=overrides).config()
    assert isinstance(config, cole.ColeConfig)
    assert (config.iterations, config.ppo.learning_rate, config.alpha) == (3, 3e-4, 0.5)


# --------------------------------------------------------------------- a tiny run, end to end

SEEDS = 2


def _three_runs(root: Path) -> None:
    """In a subprocess (its own XLA flags): an uninterrupted run, and one stopped by SIGTERM
    after its first iteration then resumed, of the tiny config on the one-step 2x2 game."""
    from aht_bench.envs import registry

    registry._REGISTRY[COORD_TASK] = lambda: RepeatedMatrixGame(
        COORD_TASK, ((2.0, 0.0), (0.0, 1.0)), ("A", "B"), steps=1
    )  # as tests/conftest.py registers it
    cole.PRESETS["tiny"] = {COORD_TASK: _config()}
    algo = runs.Algorithm("cole", cole, runs.MethodLoop(cole.METHOD))
    spec = runs.RunSpec("cole", COORD_TASK, "tiny", num_seeds=SEEDS, seed=1)
    runs.train(algo, spec, root / "reference", progress=False)

    def stop_after_the_first_iteration(message: str) -> None:
        if message.startswith("first call"):
            signal.raise_signal(signal.SIGTERM)

    try:
        runs.train(algo, spec, root / "resumed", progress=False, log=stop_after_the_first_iteration)
        raise AssertionError("SIGTERM did not stop the run")
    except runs.TrainingInterrupted as e:
        stopped = {
            "iteration": e.update,
            "files": sorted(p.name for p in (root / "resumed").rglob("*")),
        }
    (root / "stopped.json").write_text(json.dumps(stopped))
    runs.train(algo, spec, root / "resumed", resume=True, progress=False)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cole")
    tests = Path(__file__).resolve().parents[1]
    flags = os.environ.get("XLA_FLAGS", "")
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tests), os.environ.get("PYTHONPATH")])),
        # about halves the compile here; both runs use the same flags
        "XLA_FLAGS": f"{flags} --xla_backend_optimization_level=0".strip(),
    }
    done = subprocess.run(
        [sys.executable, __file__, str(root)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root


@pytest.mark.slow  # the subprocess compiles COLE's iteration (about 30 s on two CPU cores)
def test_tiny_run_stops_after_an_iteration_and_resumes_bit_identically(tiny_runs: Path):
    stopped = json.loads((tiny_runs / "stopped.json").read_text())
    assert stopped["iteration"] == 1 and "iteration-000001.safetensors" in stopped["files"]
    ref, res = runs.RunDir(tiny_runs / "reference"), runs.RunDir(tiny_runs / "resumed")
    for a, b in ((ref, res),):
        ra, rb = a.latest_checkpoint(), b.latest_checkpoint()
        assert ra is not None and rb is not None and ra.name == rb.name
        state_a, state_b = load_file(ra), load_file(rb)
        assert state_a.keys() == state_b.keys()
        for k in state_a:
            np.testing.assert_array_equal(state_a[k], state_b[k], err_msg=k)
    names = sorted(p.name for p in (ref.policies / "final").iterdir())
    assert names == sorted(p.name for p in (res.policies / "final").iterdir())
    assert {n for n in names if n.endswith(".safetensors")} == {
        f"seed{s}-{k}.safetensors" for s in range(SEEDS) for k in ("ego", "population")
    }
    for n in names:
        assert (ref.policies / "final" / n).read_bytes() == (
            res.policies / "final" / n
        ).read_bytes()
    strip = lambda r: {k: v for k, v in r.items() if k != "time_s"}  # noqa: E731
    rows_a, rows_b = runs.read_metrics(ref.metrics), runs.read_metrics(res.metrics)
    assert [strip(r) for r in rows_a] == [strip(r) for r in rows_b]
    assert res.curve.exists()


@pytest.mark.slow
def test_tiny_run_learns_and_keeps_the_cross_play_matrix_and_the_ego(tiny_runs: Path):
    config = _config()
    run = runs.RunDir(tiny_runs / "reference")
    rows = runs.read_metrics(run.metrics)
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    assert [r["env_steps"] for r in rows] == [config.env_steps_after(i) for i in (1, 2, 3)]
    latest = run.latest_checkpoint()
    assert latest is not None
    template = cole.init_seeds(jax.random.PRNGKey(0), config, SEEDS)
    state, _ = checkpoint.load_state(latest, template)
    xp = np.asarray(state.buffer.cross_play)
    for s in range(SEEDS):
        np.testing.assert_array_equal(xp[s], xp[s].T)
        # payoff [[2, 0], [0, 1]], one step: random play returns (2 + 1) / 4 = 0.75,
        # coordinating on B 1, on A 2. The first member learns A in self-play, the later ones
        # to coordinate with the earlier ones (measured: every entry 1.81-2.0).
        assert np.all(xp[s] >= 1.5), xp[s]
        np.testing.assert_allclose(
            [r["self_play_return"][s] for r in rows], np.diagonal(xp[s]), rtol=1e-6
        )
        np.testing.assert_allclose(rows[2]["xp_return"][s], xp[s, 2, :2].mean(), rtol=1e-6)
        # the ego: the argmax of the mean cross-play, and the saved ego policy is that member
        best = int(np.argmax(cole.core.mean_cross_play(xp[s], 3)))
        assert rows[-1]["ego_index"][s] == best
        _, ego = load_policy(run.policies / "final" / f"seed{s}-ego.safetensors")
        members = load_population(run.policies / "final" / f"seed{s}-population.safetensors")
        assert members.size == 3
        for a, b in zip(jax.tree.leaves(ego), jax.tree.leaves(members.get(best)), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        # iterations 2 and 3 each drew their partners with a distribution summing to 1
        counts = np.asarray(state.buffer.partner_counts[s])
        np.testing.assert_allclose(counts.sum(), 2.0, rtol=1e-6)
        assert counts[2] == 0.0 and counts[0] > counts[1] > 0


if __name__ == "__main__":
    _three_runs(Path(sys.argv[1]))
