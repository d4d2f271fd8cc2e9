"""Base returns of pairs of Overcooked heuristic teammates, per layout.

Every pairing plays `--episodes` full 400-step episodes from `env.reset` (random spawns), keys
split from `jax.random.key(--seed)`. The table gives the mean base return (+20 per soup, both
seats) and the percentage of episodes with at least one soup. All pairings of a layout run in
one jitted, vmapped scan: the heuristics' role and p are pytree leaves, so a stack of them
compiles once per layout (`play`; tests/policies/test_overcooked_heuristics.py uses it too).

    python benchmarks/overcooked_heuristics.py [--layouts cramped_room,forced_coord]

The table is printed, and written to benchmarks/results/overcooked_heuristics.txt when
AHT_BENCH_WRITE_RESULTS=1 (so that ordinary runs leave the checkout untouched).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench import envs
from aht_bench.envs.tasks import OVERCOOKED_LAYOUTS
from aht_bench.policies.heuristics import OvercookedHeuristic, make_heuristic

RESULTS = Path(__file__).resolve().parent / "results" / "overcooked_heuristics.txt"
COMMAND = "AHT_BENCH_WRITE_RESULTS=1 .venv/bin/python benchmarks/overcooked_heuristics.py"

# Per layout, the p values of the paper's teammates plus a few more; each p gives the pairings
# onion+plate, plate+onion (seats swapped), independent+independent, independent+onion and
# independent+plate (seat 0 first).
P_VALUES = {
    "cramped_room": (0.0, 0.1, 0.4),
    "asymm_advantages": (0.0, 0.1),
    "counter_circuit": (0.0, 0.1, 0.9),
    "coord_ring": (0.0, 0.1),
    "forced_coord": (0.0, 0.1, 0.6, 0.9),
}
ROLE_PAIRS = (
    ("onion", "plate"),
    ("plate", "onion"),
    ("independent", "independent"),
    ("independent", "onion"),
    ("independent", "plate"),
)


def pairings(layout: str) -> list[tuple[str, str]]:
    """The (seat 0, seat 1) heuristic names benchmarked on `layout`."""
    return [
        (f"{a}_agent_{p:g}", f"{b}_agent_{p:g}") for p in P_VALUES[layout] for a, b in ROLE_PAIRS
    ]


def stack(policies: list[Any]) -> Any:
    """`OvercookedHeuristic`s of one layout stacked into one (leaves get a leading axis)."""
    if not all(isinstance(p, OvercookedHeuristic) for p in policies):
        raise TypeError("only onion/plate/independent heuristics stack; random/static do not")
    return jax.tree.map(lambda *leaves: jnp.asarray(leaves), *policies)


def play(
    layout: str,
    teams: list[tuple[str, str]],
    episodes: int,
    seed: int = 0,
    compiler_options: dict[str, Any] | None = None,
) -> np.ndarray:
    """Base return, float32 (len(teams), episodes), of each (seat 0, seat 1) team of heuristic
    names on `layout`, over `episodes` episodes of the full horizon from `env.reset`.

    One jit for all teams: seats and teams are vmapped over a stack of the heuristics. The
    same episode keys are used for every team (so spawns are paired across teams).
    """
    env = envs.make(layout)
    team_stack = stack([stack([make_heuristic(layout, n) for n in team]) for team in teams])
    template = make_heuristic(layout, teams[0][0])
    assert isinstance(template, OvercookedHeuristic)

    def seats_act(team, carry, obs, keys):
        return jax.vmap(lambda pol, c, o, k: pol.act(None, c, o, k))(team, carry, obs, keys)

    def episode(team, key):
        state, ts = env.reset(key)
        carry = template.init_carry((env.num_agents,))

        def _env_step(loop, step_key):
            state, ts, carry = loop
            key_act, key_env = jax.random.split(step_key)
            keys = jax.random.split(key_act, env.num_agents)
            actions, carry, _ = seats_act(team, carry, ts.obs, keys)
            state, ts = env.step(key_env, state, actions)
            return (state, ts, carry), ts.reward[0]

        keys = jax.random.split(key, env.horizon)
        _, rewards = jax.lax.scan(_env_step, (state, ts, carry), keys)
        return rewards.sum()

    run = jax.jit(
        jax.vmap(jax.vmap(episode, (None, 0)), (0, None)), compiler_options=compiler_options
    )
    keys = jax.random.split(jax.random.key(seed), episodes)
    return np.asarray(run(team_stack, keys))


def table(layouts: list[str], episodes: int, seed: int) -> str:
    """The results table as text (one block per layout)."""
    lines = [
        f"# Overcooked heuristic pairs: mean base return and % of episodes with >= 1 soup over "
        f"{episodes} episodes x 400 steps, random spawns, keys split from jax.random.key({seed})",
        f"# produced by: {COMMAND}",
        f"{'layout':18s}{'seat 0':24s}{'seat 1':24s}{'mean return':>12s}{'soup %':>8s}",
    ]
    for layout in layouts:
        teams = pairings(layout)
        returns = play(layout, teams, episodes, seed)
        for (a, b), ret in zip(teams, returns, strict=True):
            soup = float(np.mean(ret > 0) * 100.0)
            lines.append(f"{layout:18s}{a:24s}{b:24s}{float(ret.mean()):12.1f}{soup:8.1f}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", default="all", help="comma-separated layouts, or 'all'")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be positive")
    layouts = (
        list(OVERCOOKED_LAYOUTS)
        if args.layouts == "all"
        else [s.strip() for s in args.layouts.split(",")]
    )
    unknown = [layout for layout in layouts if layout not in P_VALUES]
    if unknown:
        parser.error(f"unknown layouts {unknown}; choose from {', '.join(OVERCOOKED_LAYOUTS)}")
    start = time.perf_counter()
    text = table(layouts, args.episodes, args.seed)
    print(text, end="")
    print(f"# {time.perf_counter() - start:.0f} s", file=sys.stderr)
    if os.environ.get("AHT_BENCH_WRITE_RESULTS") == "1":
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
