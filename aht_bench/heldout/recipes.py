"""How each heldout set version is built: its candidate members, budgets and seeds, as data.

The v1 recipes follow the paper's evaluation sets (App. "Evaluation Teammates", Table
normalization_bounds) as closely as two CPU cores allow:

- LBF: IPPO teammates (three final agents and two intermediate checkpoints of one of them), one
  BRDiv run's confederates, the six sequential-food heuristics.
- cramped_room, asymm_advantages, coord_ring, forced_coord: three IPPO teammates, one BRDiv run
  of three confederates, the onion/plate/independent heuristics with the paper's `p`.
- counter_circuit: three IPPO teammates, three IPPO teammates trained with an extra shaped
  reward for onions passed across a counter into a pot (`onion_pass`; the paper's
  `ippo_mlp_pass`), and independent/onion/plate heuristics with `p = 0` and `p = 0.9`.

Budgets are the `quick` presets' (IPPO on lbf, cramped_room and asymm_advantages; BRDiv's
generation stage) or the paper's IPPO hyperparameters for half its budget (IPPO on coord_ring,
forced_coord and counter_circuit), and short PPO best responses;
the paper trains for 10-100x longer on a GPU. Seeds are disjoint from any the reference methods
and the development sets use: IPPO 9100 + k, BRDiv 9200 + run, best responses 9300 + 10 *
candidate + seat (reference runs use small seeds from 0; development-set best responses 7000+).

A recipe, once a version is published from it, never changes: a changed recipe is a new version.

May import the standard library and aht_bench.envs.
"""

from __future__ import annotations

import dataclasses

from aht_bench.envs import Task

IPPO_SEED = 9100
BRDIV_SEED = 9200
BR_SEED = 9300


@dataclasses.dataclass(frozen=True)
class IPPOSource:
    """IPPO self-play teams trained as candidates."""

    seeds: int
    """Teams (seeds IPPO_SEED + offset + k)."""
    timesteps: int | None = None
    """Env steps per team (None: the `quick` IPPO preset's budget)."""
    checkpoints: tuple[float, ...] = ()
    """Fractions of the run whose intermediate params also become candidates."""
    checkpoint_team: int = 0
    """The team whose intermediate checkpoints are kept."""
    prefix: str = "ippo_mlp"
    """Member names are `<prefix>_<k>` (checkpoints `<prefix>_<k>_c<update>`)."""
    kind: str = "ippo"
    """Manifest kind of these members ("ippo" or "ippo-shaped")."""
    onion_on_counter_reward: float = 0.0
    """Extra shaped reward per onion placed on a counter (farmed: no recipe uses it now)."""
    shaping: tuple[tuple[str, float], ...] = ()
    """Shaped-reward coefficients for these teams only, on top of the recipe's `shaping` (the
    `ippo_mlp_pass` teammates: `onion_pass`); cached files carry a tag of them."""
    seed_offset: int = 0
    """Added to IPPO_SEED, so that two sources never share a seed."""
    preset: str = "quick"
    """The IPPO preset whose hyperparameters train the teams ("quick" or "paper"); `timesteps`
    replaces its budget."""
    tries: int | None = None
    """Teams trained at most (None: `seeds`). Teams are trained in seed order until `seeds` of
    them end with a self-play return above 0 (mean over the last 10% of updates) or `tries`
    teams have been trained; a team ending at 0 is not a candidate (recorded as pruned, with no
    best response trained). None keeps every team, as in the recipes published without it."""


@dataclasses.dataclass(frozen=True)
class BRDivSource:
    """BRDiv generation runs whose confederates become candidates."""

    runs: int
    """BRDiv runs (seeds BRDIV_SEED + run)."""
    population_size: int
    """Confederate/best-response pairs per run."""
    generation_updates: int
    """PPO updates of the generation stage (each rolls out all n x n pairs)."""
    num_envs: int = 32
    """Parallel envs per pair rollout."""
    rollout_length: int = 128
    """Env steps per env and pair rollout."""
    ppo: str = "quick"
    """The generation stage's PPO hyperparameters: "quick" (the BRDiv quick preset's) or
    "ippo-paper" (the paper's IPPO hyperparameters for the task: 15 epochs x 16 minibatches,
    lr 1e-3, clip 0.1, entropy 0.05; the paper's own BRDiv rows use lr 1e-5 for 380 M steps)."""


@dataclasses.dataclass(frozen=True)
class Plateau:
    """Best responses trained until their return stops rising (Bounds v2, docs/heldout.md).

    Training runs in chunks of `Recipe.br_timesteps` env steps, one run whose state carries over
    (the learning rate anneals over `max_timesteps`); after chunk k >= `min_chunks` it stops when
    the mean training return over chunk k rose by less than `tolerance` times chunk k-1's
    (`plateaued`), or when `max_timesteps` are spent."""

    max_timesteps: int
    """Env steps a best response may train at most (a whole number of chunks)."""
    tolerance: float = 0.02
    """Relative rise of the chunk mean below which the curve counts as flat."""
    min_chunks: int = 2
    """Chunks trained before the stop rule is applied."""


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Everything that builds one task's heldout set."""

    task_id: str
    version: str
    ippo: tuple[IPPOSource, ...]
    brdiv: BRDivSource | None
    heuristics: tuple[str, ...]
    extra_partners: tuple[str, ...] = ()
    """Heuristics that only partner candidates when the bounds are estimated."""
    br_timesteps: int = 500_000
    """Env steps of each PPO best response (one per candidate and seat); with `br_plateau`, of
    each chunk."""
    br_plateau: Plateau | None = None
    """Train best responses until their return stops rising (v2); None: for `br_timesteps`."""
    br_preset: str = "quick"
    """The BR preset whose hyperparameters train the best responses ("quick" or "paper")."""
    br_seats: tuple[int, ...] = (0,)
    """Seats a best response is trained in: (0,) on seat-symmetric tasks (it plays every seat),
    (0, 1) on divided layouts."""

    @property
    def task(self) -> Task:
        """The task the build plays, handed to the evaluator and heuristics as it is."""
        return Task(self.task_id)

    episodes: int = 64
    """Episodes per seating when partners are evaluated with candidates."""
    eval_seed: int = 0
    """Seed of those evaluation episodes."""
    min_competence: float = 0.2
    """A candidate is kept only if its best-response return is at least this fraction of the
    highest best-response return among the candidates (and above zero)."""
    min_gap: float = 0.1
    """A candidate is kept only if its own best response beats the other kept candidates' best
    responses with it by at least this fraction of its own best-response return."""
    shaping: tuple[tuple[str, float], ...] = ()
    """Shaped-reward coefficients that replace the paper's for every learner the recipe trains
    (IPPO teams, BRDiv, best responses), as `RunConfig.shaping`; () keeps the paper's. Cached
    files trained with it carry a tag of it (`-cp0` for counter_pickup 0)."""
    example_agents: tuple[str, ...] = ()
    """Agent files (paths from the repository root) that partner every candidate, in every
    seating, when the upper bounds are estimated; a file whose `TASKS` leaves the task out is
    skipped (v2: agents/examples/)."""
    task_maximum: float | None = None
    """The task's highest possible episode return, a candidate upper bound of every member (LBF:
    0.5, all food eaten); None where there is none (Overcooked)."""
    paper_bounds: tuple[tuple[str, float], ...] = ()
    """The paper's upper bounds (Table normalization_bounds) for its members of the same kinds,
    averaged over members of one kind, in our units (LBF: our return is half the fraction of
    food eaten, 0.5 = all; the paper's percent / 200); for the comparison table only."""
    seed_base: int = 0
    """Added to every seed the build draws (IPPO_SEED, BRDIV_SEED, BR_SEED): a development set
    built by a heldout recipe trains other learners than the heldout set's (`DEV_SEED_BASE`)."""


# coord_ring, forced_coord, counter_circuit: the paper's IPPO hyperparameters (8 envs x 400 steps,
# 15 epochs x 16 minibatches, entropy 0.05, lr 1e-3) for half its 3M steps, up to eight seeds for
# three teams that learned. On forced_coord the quick preset learned nothing (self-play return 0.0
# after 6M steps) and the paper's learned on 3 of 8 runs: the others drop an onion on a counter
# cell and pick it up again (+0.1 every second step) and never pass. With pickups off a counter
# unrewarded (counter_pickup=0; pile pickups still +0.1) all 8 of 8 seeds learned (45-100 after
# 256k steps), so everything forced_coord's recipe trains (IPPO, BRDiv, best responses) trains
# with that (benchmarks/results/forced_coord_ippo_presets.json).
_PAPER_IPPO = IPPOSource(seeds=3, preset="paper", timesteps=1_500_000, tries=8)

# coord_ring, forced_coord: BRDiv's generation stage with those IPPO hyperparameters (8 envs x
# 400 steps per pair, 150 updates: 480k env steps per pair, 4.3M in all). With the quick PPO
# (32 x 128, 120 updates) it learned nothing on coord_ring (SP and XP return 0, all three
# confederates pruned); with these, SP return 0 -> 28 within the first 1.7M steps
# (benchmarks/results/brdiv_coord_ring_ppo.json).
_PAPER_BRDIV = BRDivSource(
    runs=1,
    population_size=3,
    generation_updates=150,
    num_envs=8,
    rollout_length=400,
    ppo="ippo-paper",
)

_DIVIDED = (
    "overcooked-asymm_advantages-v1",
    "overcooked-forced_coord-v1",
    "overcooked-asymm_advantages-v2",
    "overcooked-forced_coord-v2",
)


def _overcooked(task_id: str, heuristics: tuple[str, ...], **kw: object) -> Recipe:
    fields: dict[str, object] = dict(
        task_id=task_id,
        version="v1",
        ippo=(IPPOSource(seeds=3),),
        brdiv=BRDivSource(runs=1, population_size=3, generation_updates=120),
        heuristics=heuristics,
        br_timesteps=750_000,
        br_seats=(0, 1) if task_id in _DIVIDED else (0,),
    )
    fields.update(kw)
    return Recipe(**fields)  # type: ignore[arg-type]


V1: dict[str, Recipe] = {
    "lbf-v1": Recipe(
        task_id="lbf-v1",
        version="v1",
        ippo=(IPPOSource(seeds=3, checkpoints=(0.25, 0.5), checkpoint_team=2),),
        brdiv=BRDivSource(runs=1, population_size=3, generation_updates=128),
        heuristics=(
            "seq_agent_lexi",
            "seq_agent_rlexi",
            "seq_agent_col",
            "seq_agent_rcol",
            "seq_agent_nearest",
            "seq_agent_farthest",
        ),
        extra_partners=("seq_agent_nearest_from_partner", "seq_agent_farthest_from_partner"),
        br_timesteps=500_000,
        paper_bounds=(
            ("ippo_mlp (0)", 0.5),
            ("ippo_mlp_s2c0 (checkpoint)", 0.482),
            ("brdiv-conf (5 members)", 0.4495),
            ("seq_agent_* (6)", 0.5),
        ),
    ),
    "overcooked-cramped_room-v1": _overcooked(
        "overcooked-cramped_room-v1",
        ("independent_agent_0.4", "independent_agent_0", "onion_agent_0.1", "plate_agent_0.1"),
        paper_bounds=(
            ("ippo_mlp (0, 1, 2)", 258.1),
            ("brdiv-conf (0, 1)", 231.5),
            ("independent_agent_0.4", 197.2),
            ("independent_agent_0", 202.2),
            ("onion_agent_0.1", 151.9),
            ("plate_agent_0.1", 191.2),
        ),
    ),
    "overcooked-asymm_advantages-v1": _overcooked(
        "overcooked-asymm_advantages-v1",
        ("independent_agent_0", "onion_agent_0", "plate_agent_0"),
        paper_bounds=(
            ("ippo_mlp (0, 1, 2)", 350.5),
            ("brdiv-conf (0, 1, 2)", 320.6),
            ("independent_agent_0", 308.1),
            ("onion_agent_0", 299.4),
            ("plate_agent_0", 284.7),
        ),
    ),
    "overcooked-coord_ring-v1": _overcooked(
        "overcooked-coord_ring-v1",
        ("independent_agent_0", "onion_agent_0", "plate_agent_0"),
        ippo=(_PAPER_IPPO,),
        brdiv=_PAPER_BRDIV,
        paper_bounds=(
            ("ippo_mlp (1, 2, 3)", 260.7),
            ("brdiv-conf (3 members)", 190.8),
            ("independent_agent_0", 221.6),
            ("onion_agent_0", 96.9),
            ("plate_agent_0", 141.2),
        ),
    ),
    "overcooked-forced_coord-v1": _overcooked(
        "overcooked-forced_coord-v1",
        ("independent_agent_0.6",),
        ippo=(_PAPER_IPPO,),
        brdiv=_PAPER_BRDIV,
        shaping=(("counter_pickup", 0.0),),
        extra_partners=("independent_agent_0.3", "independent_agent_0.9"),
        paper_bounds=(
            ("ippo_mlp (0, 1, 2)", 220.0),
            ("brdiv-conf (5 members)", 147.8),
            ("independent_agent_0.6", 81.2),
        ),
    ),
    # counter_circuit: pickups off a counter unpaid (counter_pickup=0) for every learner, as on
    # forced_coord: with the paper's shaping an IPPO team (paper preset, 1.5M steps, seed 9100)
    # ended at self-play return 0 (benchmarks/results/counter_circuit_ippo_shaping.json).
    # The pass teams: +2 to both seats per onion one seat put on a counter and the other took
    # off it and put in a pot (PassShapedOvercooked). Best responses use the paper's IPPO
    # hyperparameters: with the quick ones (750k steps) those to three of the six IPPO teams
    # (self-play returns 96-172) ended at 0, and one to ippo_mlp_2 still at 0.13 after 3M steps
    # (benchmarks/results/counter_circuit_best_responses.json).
    # Seed 9150 passed: one seat took 20.9 onions from the pile and put 23.8 on the counter, the
    # other took 19.4 of them and put 19.2 in a pot, self-play return 122.5; with counter pickups
    # paid it stayed at 0 (benchmarks/results/counter_circuit_onion_pass.json). The first pass
    # reward, +0.5 per onion put on a counter, was farmed by putting one down and taking it up
    # again (benchmarks/results/counter_circuit_pass_shaping.json).
    "overcooked-counter_circuit-v1": _overcooked(
        "overcooked-counter_circuit-v1",
        (
            "independent_agent_0",
            "onion_agent_0",
            "plate_agent_0",
            "onion_agent_0.9",
            "plate_agent_0.9",
        ),
        ippo=(
            _PAPER_IPPO,
            IPPOSource(
                seeds=3,
                preset="paper",
                timesteps=_PAPER_IPPO.timesteps,
                tries=_PAPER_IPPO.tries,
                prefix="ippo_mlp_pass",
                kind="ippo-shaped",
                shaping=(("onion_pass", 2.0),),
                seed_offset=50,
            ),
        ),
        brdiv=None,
        shaping=(("counter_pickup", 0.0),),
        br_preset="paper",
        paper_bounds=(
            ("ippo_mlp_cc (0, 1, 2)", 204.5),
            ("ippo_mlp_pass (0, 1, 2)", 140.8),
            ("independent_agent_0", 153.4),
            ("onion_agent_0", 95.0),
            ("plate_agent_0", 90.0),
            ("onion_agent_0.9", 91.9),
            ("plate_agent_0.9", 105.6),
        ),
    ),
}
"""task id -> the v1 recipe."""

EXAMPLE_AGENTS = (
    "agents/examples/heuristic_agent.py",
    "agents/examples/scripted_agent.py",
    "agents/examples/jax_mlp_agent.py",
    "agents/examples/random_agent.py",
)
"""The example agent files every v2 build plays with its candidates (those that list the task)."""

_V2_BOUNDS: dict[str, object] = dict(example_agents=EXAMPLE_AGENTS)


def _v2(v1: Recipe, task_id: str, **kw: object) -> Recipe:
    """The v2 recipe of a v1 one: the same members and budgets on `task_id`, best responses
    trained until they plateau (at most 8 chunks), bounds raised by the example agents."""
    fields: dict[str, object] = dict(
        task_id=task_id,
        version="v2",
        br_plateau=Plateau(max_timesteps=8 * v1.br_timesteps),
        **_V2_BOUNDS,
    )
    fields.update(kw)
    return dataclasses.replace(v1, **fields)  # type: ignore[arg-type]


def _overcooked_v2(layout: str) -> Recipe:
    """v1's recipe of `layout` on `overcooked-<layout>-v2`. Counter pickups are unpaid in the v2
    task itself, so v1's `counter_pickup=0` shaping (forced_coord, counter_circuit) is dropped.
    Best responses train in seat 0 only, on the divided layouts too: v2 draws the sides every
    episode, so a best response in seat 0 plays both sides and one in seat 1 would be the same
    learner with another seed (v1 trained one per seat because each seat had one side)."""
    v1 = V1[f"overcooked-{layout}-v1"]
    return _v2(
        v1,
        f"overcooked-{layout}-v2",
        shaping=tuple(kv for kv in v1.shaping if kv[0] != "counter_pickup"),
        br_seats=(0,),
    )


V2: dict[str, Recipe] = {
    # lbf-v1 v2: v1's IPPO teams and heuristics; BRDiv trained 2x longer in two runs (v1's one
    # run of 128 updates ended at SP return 0.09 and none of its three confederates survived
    # pruning: one incompetent, two that the other candidates' best responses played as well).
    "lbf-v1": _v2(
        V1["lbf-v1"],
        "lbf-v1",
        brdiv=BRDivSource(runs=2, population_size=3, generation_updates=256),
        task_maximum=0.5,
    ),
    **{
        f"overcooked-{layout}-v2": _overcooked_v2(layout)
        for layout in (
            "cramped_room",
            "asymm_advantages",
            "coord_ring",
            "forced_coord",
            "counter_circuit",
        )
    },
}
"""task id -> the v2 recipe (Bounds v2; lbf-v1 and the overcooked-<layout>-v2 tasks)."""

# forced_coord v3 (issue 55): v2 kept 4 of its 7 candidates, where the paper's set has 9 (three
# IPPO teams, five BRDiv confederates, independent_agent_0.6). Its BRDiv run (the paper's IPPO
# hyperparameters, 150 updates: 0.48 M env steps per pair) gave three confederates whose best
# responses reached 41.1-41.7, under the rule's threshold of 48.5 (0.2 x independent_agent_0.6's
# 242.3). Why (benchmarks/results/brdiv_forced_coord/): at quick's PPO settings BRDiv stays at
# 43-46 in every pair, matched or not, from 0.5 M to 1.1 M env steps per pair; with the
# paper's IPPO hyperparameters its pairs learn to pass once each has about the env steps an
# IPPO team needs (1.5 M). So v3 trains two BRDiv runs of two pairs for 1.5 M env steps per
# pair (472 updates), and five IPPO teams (v2's three by the same seeds, and two more).
_FORCED_COORD_V2 = V2["overcooked-forced_coord-v2"]
V3: dict[str, Recipe] = {
    "overcooked-forced_coord-v2": dataclasses.replace(
        _FORCED_COORD_V2,
        version="v3",
        ippo=(dataclasses.replace(_PAPER_IPPO, seeds=5, tries=12),),
        brdiv=dataclasses.replace(_PAPER_BRDIV, runs=2, population_size=2, generation_updates=472),
    ),
}
"""task id -> the v3 recipe (forced_coord only; Bounds v2 rules, more members, trained longer)."""

DEV = "dev"
"""The version of development sets: never published, never pinned (they may change)."""
DEV_SEED_BASE = -1000
"""`Recipe.seed_base` of the v2 development sets: IPPO 8100 + k, BRDiv 8200 + run, best
responses 8300 + 10 * candidate + seat; disjoint from the heldout sets' (9100+), the heuristic
development sets' best responses (7000+) and the reference runs' (small seeds from 0)."""

# The heuristics of each v2 development set: the kinds of the heldout set's, other parameters
# (the probability p of putting a held item on a counter; forced_coord needs p > 0 to pass).
_DEV_HEURISTICS = {
    "cramped_room": ("independent_agent_0.2", "onion_agent_0.3", "plate_agent_0.3"),
    "asymm_advantages": ("independent_agent_0.2", "onion_agent_0.2", "plate_agent_0.2"),
    "coord_ring": ("independent_agent_0.3", "onion_agent_0.3", "plate_agent_0.3"),
    "forced_coord": ("independent_agent_0.3", "independent_agent_0.9"),
    "counter_circuit": ("independent_agent_0.5", "onion_agent_0.5", "plate_agent_0.5"),
}


def _overcooked_dev(layout: str) -> Recipe:
    """The development set of `overcooked-<layout>-v2`: the v2 heldout recipe (the same kinds of
    member, training settings and Bounds v2 rules) with other seeds (`DEV_SEED_BASE`), other
    heuristic parameters (`_DEV_HEURISTICS`, no extra partners), and smaller, to cost less on
    two CPU cores: two IPPO teams and one BRDiv run of two confederates, best responses for at
    most 4 chunks. For choosing settings (issue 51's budget study); never for final numbers."""
    v2 = V2[f"overcooked-{layout}-v2"]
    ippo = tuple(dataclasses.replace(source, seeds=min(2, source.seeds)) for source in v2.ippo)
    brdiv = None if v2.brdiv is None else dataclasses.replace(v2.brdiv, population_size=2)
    plateau = v2.br_plateau
    assert plateau is not None
    return dataclasses.replace(
        v2,
        version=DEV,
        ippo=ippo,
        brdiv=brdiv,
        heuristics=_DEV_HEURISTICS[layout],
        extra_partners=(),
        br_plateau=dataclasses.replace(plateau, max_timesteps=4 * v2.br_timesteps),
        paper_bounds=(),
        seed_base=DEV_SEED_BASE,
    )


DEV_RECIPES: dict[str, Recipe] = {
    f"overcooked-{layout}-v2": _overcooked_dev(layout) for layout in _DEV_HEURISTICS
}
"""task id -> the recipe of its development set (`heldout/<task_id>/dev`)."""

RECIPES: dict[str, dict[str, Recipe]] = {"v1": V1, "v2": V2, "v3": V3, DEV: DEV_RECIPES}
"""version -> task id -> recipe (`DEV`: development sets, never a default)."""
