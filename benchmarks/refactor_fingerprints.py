"""Before/after checks for refactors of the heldout builders and the Overcooked heuristics
(issue 31): run each with the old tree and the new one on `PYTHONPATH` and compare.

    PYTHONPATH=<old checkout> python benchmarks/refactor_fingerprints.py heuristics
    PYTHONPATH=<old checkout> python benchmarks/refactor_fingerprints.py devset DIR
    PYTHONPATH=<old checkout> python benchmarks/refactor_fingerprints.py heldout v1|v2 DIR
    PYTHONPATH=<old checkout> python benchmarks/refactor_fingerprints.py presets FILE

- `heuristics`: six teams of Overcooked heuristics (roles and p) on every layout, v1 and v2, 16
  episodes of 400 steps each, half of them with the env taking uniform random actions instead;
  prints a running sha256 of every action, sub-goal and carry field per layout and the final
  FINGERPRINT.
- `devset DIR`: a tiny development-set build (forced_coord v1, one member, 8,192-step best
  responses) into DIR/dev; writes DIR/dev.json, the manifest without its timings and weight
  hashes (which hold the timings on their cards).
- `heldout v1|v2 DIR`: the tiny LBF builds of the slow tests (tests/heldout/test_heldout.py,
  test_bounds_v2.py) into DIR/set; writes DIR/manifest.stripped.json, the manifest without
  timings and library versions.
- `presets FILE`: every preset config (each `paper` and `quick` preset of every iteration method
  of `aht_bench.runs.ALGORITHMS` on every task, and of `ippo`, `br`, `ego`), field by field in
  name order, as JSON into FILE; prints its sha256. Seconds, no training.

`cmp` the written files of the two trees. Results: benchmarks/results/refactor_checks_issue31.txt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

TIMINGS = ("build_seconds", "train_seconds", "seconds", "libraries", "wall_seconds")
NAMES = [
    "onion_agent_0",
    "plate_agent_0.5",
    "independent_agent_0",
    "independent_agent_0.6",
    "onion_agent_0.9",
    "plate_agent_1",
]


def heuristics() -> None:
    from aht_bench import envs
    from aht_bench.policies.heuristics import make_heuristic

    def stack(ps):
        return jax.tree.map(lambda *leaves: jnp.asarray(leaves), *ps)

    h = hashlib.sha256()
    for version in (1, 2):
        for layout in ("cramped_room", "asymm_advantages", "counter_circuit", "coord_ring",
                       "forced_coord"):  # fmt: skip
            env = envs.make(f"overcooked-{layout}-v{version}")
            teams = list(zip(NAMES, NAMES[1:] + NAMES[:1], strict=True))
            firsts = stack([make_heuristic(layout, a) for a, _ in teams])
            seconds = stack([make_heuristic(layout, b) for _, b in teams])
            template = make_heuristic(layout, NAMES[0])

            def lane(pa, pb, key, explore, env=env, template=template):
                state, ts = env.reset(key)
                carry = (template.init_carry(()), template.init_carry(()))

                def step(loop, k):
                    state, ts, carry = loop
                    k0, k1, kr, ke = jax.random.split(k, 4)
                    a0, c0, e0 = pa.act(None, carry[0], ts.obs[0], k0)
                    a1, c1, e1 = pb.act(None, carry[1], ts.obs[1], k1)
                    acts = jnp.stack([a0, a1])
                    taken = jnp.where(explore, jax.random.randint(kr, (2,), 0, 6), acts)
                    state, ts = env.step(ke, state, taken)
                    out = (acts, e0["subgoal"], e1["subgoal"], c0.own_items, c1.drop_intent)
                    return (state, ts, (c0, c1)), (*out, ts.reward)

                _, out = jax.lax.scan(step, (state, ts, carry), jax.random.split(key, 400))
                return out

            idx = np.repeat(np.arange(len(teams)), 16)
            pa = jax.tree.map(lambda x, idx=idx: x[idx], firsts)
            pb = jax.tree.map(lambda x, idx=idx: x[idx], seconds)
            keys = jax.random.split(jax.random.key(7), len(idx))
            out = jax.jit(jax.vmap(lane))(pa, pb, keys, jnp.arange(len(idx)) % 2 == 0)
            for x in jax.tree.leaves(out):
                h.update(np.asarray(x).tobytes())
            total = float(np.asarray(out[-1]).sum())
            print(version, layout, h.hexdigest()[:16], "return", total, flush=True)
    print("FINGERPRINT", h.hexdigest())


def devset(root: Path) -> None:
    try:  # aht_bench.heldout.devset since issue 31 moved it; aht_bench.evaluation.devset before
        from aht_bench.heldout import devset as ds
    except ImportError:
        from aht_bench.evaluation import devset as ds  # type: ignore[no-redef]

    out = root / "dev"
    ds.build("overcooked-forced_coord-v1", out, br_timesteps=8192,
             member_names=("independent_agent_0.6",), log=lambda _: None)  # fmt: skip
    m = json.loads((out / "manifest.json").read_text())
    m["recipe"].pop("build_seconds")
    for b in m["best_responses"].values():
        b.pop("train_seconds")
        b.pop("sha256")
    m.pop("libraries", None)
    (root / "dev.json").write_text(json.dumps(m, sort_keys=True, indent=1))
    print("wrote", root / "dev.json")


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in TIMINGS}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def heldout(version: str, root: Path) -> None:
    from aht_bench.heldout import build as hb
    from aht_bench.heldout import recipes

    if version == "v1":
        r = recipes.V1["lbf-v1"]
        assert r.brdiv is not None
        recipes.V1["lbf-v1"] = dataclasses.replace(
            r,
            ippo=(dataclasses.replace(r.ippo[0], seeds=2, timesteps=64 * 128 * 2, checkpoints=()),),
            brdiv=dataclasses.replace(r.brdiv, population_size=2, generation_updates=4),
            heuristics=r.heuristics[:2], extra_partners=(), br_timesteps=64 * 128, episodes=2,
            min_competence=0.0, min_gap=-1e9,
        )  # fmt: skip
    else:
        r = recipes.V2["lbf-v1"]
        assert r.brdiv is not None
        recipes.V2["lbf-v1"] = dataclasses.replace(
            r, ippo=(),
            brdiv=dataclasses.replace(r.brdiv, runs=1, population_size=2, generation_updates=4),
            heuristics=r.heuristics[:1], extra_partners=(), br_timesteps=64 * 128,
            br_plateau=recipes.Plateau(max_timesteps=3 * 64 * 128, tolerance=0.02), episodes=2,
            min_competence=0.0, min_gap=-1e9,
        )  # fmt: skip
    out = hb.build("lbf", version, out=root / "set", work=root / "work", log=lambda _m: None)
    m = json.loads((out / "manifest.json").read_text())
    (root / "manifest.stripped.json").write_text(json.dumps(_strip(m), indent=1, sort_keys=True))
    print("wrote", root / "manifest.stripped.json")


def _fields(config: object) -> dict[str, object]:
    return {f.name: repr(getattr(config, f.name)) for f in dataclasses.fields(config)}  # type: ignore[arg-type]


def presets(path: Path) -> None:
    import importlib

    from aht_bench.runs import ALGORITHMS
    from aht_bench.training import presets as stage_presets

    out: dict[str, object] = {}
    for name in sorted(ALGORITHMS):
        if name in ("ippo", "br", "ego"):
            for preset in ("paper", "quick"):
                for task in stage_presets.PAPER_TASKS:
                    config = stage_presets.get(name, preset, task)
                    out[f"{name}/{preset}/{task}"] = _fields(config)
            continue
        module = importlib.import_module(f"aht_bench.algorithms.{name}")
        for preset, tasks in module.PRESETS.items():
            for task, config in tasks.items():
                out[f"{name}/{preset}/{task}"] = _fields(config)
    text = json.dumps(out, indent=1, sort_keys=True)
    path.write_text(text)
    print(len(out), "preset configs; sha256", hashlib.sha256(text.encode()).hexdigest())


def main(argv: list[str]) -> int:
    if argv[:1] == ["heuristics"]:
        heuristics()
    elif argv[:1] == ["devset"] and len(argv) == 2:
        devset(Path(argv[1]))
    elif argv[:1] == ["heldout"] and len(argv) == 3 and argv[1] in ("v1", "v2"):
        heldout(argv[1], Path(argv[2]))
    elif argv[:1] == ["presets"] and len(argv) == 2:
        presets(Path(argv[1]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
