"""What trained Overcooked self-play teams do: per-seat counts of the shaped-reward events.

For each seed of an `aht-bench train ippo` run folder (its `policies/final/seed<k>-*` files, one
per seat), plays `--episodes` full episodes from `env.reset` in self-play and prints, per seat
and episode: onions taken from a pile, onions taken off a counter, onions put on a counter,
onions put in a pot, plates taken, soups taken from a pot, and the base return. A team that
drops an onion on a counter and picks it up again shows many counter placements and counter
pickups and no soups; a team that passes shows counter placements by one seat and counter
pickups by the other. `onion_passed` counts onions a seat took off a counter that its partner
had put there, and `passed_in_pot` those of them it put in a pot (the `onion_pass` reward's
event; tracked by `PassShapedOvercooked`, whatever the run's shaping).

    python benchmarks/overcooked_events.py RUN_DIR [--episodes 16] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from aht_bench import envs
from aht_bench.envs.overcooked import DISH, EMPTY, ONION, PLATE, with_shaping
from aht_bench.policies.io import load_policy

EVENTS = (
    "onion_from_pile",
    "onion_off_counter",
    "onion_on_counter",
    "onion_in_pot",
    "plate_taken",
    "soup_taken",
    "onion_passed",
    "passed_in_pot",
)


def count_events(env, before_pass, after_pass) -> jax.Array:
    """(2, len(EVENTS)) int32: which event each seat's step was, from two `PassInner` states
    (the rule of `Overcooked._shaped_reward`: an interacting seat does not move, so it faced
    `agent_pos + agent_dir` before the step)."""
    before, after = before_pass.base, after_pass.base
    held, now = before.agent_inv, after.agent_inv
    faced = before.agent_pos.astype(jnp.int32) + before.agent_dir.astype(jnp.int32)
    counter = env._counter_mask[faced[:, 1], faced[:, 0]]
    pot = env._pot_mask[faced[:, 1], faced[:, 0]]
    took_onion = (held == EMPTY) & (now == ONION)
    put_onion = (held == ONION) & (now == EMPTY)
    by_partner = before_pass.placed_by[faced[:, 1], faced[:, 0]] == 1 - jnp.arange(2)
    return jnp.stack(
        [
            took_onion & ~counter,
            took_onion & counter,
            put_onion & counter,
            put_onion & pot,
            (held == EMPTY) & (now == PLATE),
            (held == PLATE) & (now == DISH),
            took_onion & counter & by_partner,
            put_onion & pot & before_pass.passed,
        ],
        axis=1,
    ).astype(jnp.int32)


def play(task_id: str, seats: list[tuple], episodes: int, seed: int) -> tuple[np.ndarray, ...]:
    """(events (episodes, 2, len(EVENTS)), base return (episodes,)) of one self-play team."""
    env = with_shaping(envs.make(task_id), onion_pass=0.0)  # tracks passes; same game

    def episode(key):
        state, ts = env.reset(key)
        carries = [pol.init_carry(()) for pol, _ in seats]

        def _step(loop, step_key):
            state, ts, carries = loop
            keys = jax.random.split(step_key, len(seats) + 1)
            actions, new = [], []
            for i, (pol, params) in enumerate(seats):
                a, c, _ = pol.act(params, carries[i], ts.obs[i], keys[i])
                actions.append(a)
                new.append(c)
            after, ts = env.step(keys[-1], state, jnp.stack(actions))
            return (after, ts, new), (count_events(env, state.inner, after.inner), ts.reward[0])

        _, (events, rewards) = jax.lax.scan(
            _step, (state, ts, carries), jax.random.split(key, env.horizon)
        )
        return events.sum(0), rewards.sum()

    events, returns = jax.jit(jax.vmap(episode))(
        jax.random.split(jax.random.PRNGKey(seed), episodes)
    )
    return np.asarray(events), np.asarray(returns)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("run", type=Path, help="an `aht-bench train ippo` run folder")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the table as JSON here")
    args = parser.parse_args(argv)
    final = args.run / "policies" / "final"
    run = json.loads((args.run / "run.json").read_text())
    task_id = run["config"]["task_id"]
    files = sorted(final.glob("seed*-*.safetensors"))
    if not files:
        parser.error(f"{final} holds no seed<k>-*.safetensors policy files; is the run finished?")
    by_seed: dict[str, list[Path]] = {}
    for f in files:
        by_seed.setdefault(f.name.split("-")[0], []).append(f)
    out = {"run": str(args.run), "overrides": run["spec"]["overrides"], "seeds": {}}
    print(f"{task_id}, {args.episodes} episodes per team; mean per episode and seat")
    print(f"{'team':8s}{'seat':>5s}" + "".join(f"{e:>18s}" for e in EVENTS) + f"{'return':>9s}")
    for name, paths in sorted(by_seed.items(), key=lambda kv: int(kv[0][4:])):
        seats = [load_policy(p) for p in sorted(paths)]
        events, returns = play(task_id, seats, args.episodes, args.seed)
        mean = events.mean(0)
        out["seeds"][name] = {
            "events_per_seat": {e: mean[:, j].round(2).tolist() for j, e in enumerate(EVENTS)},
            "base_return": float(returns.mean()),
        }
        for s in range(mean.shape[0]):
            ret = f"{returns.mean():9.1f}" if s == 0 else ""
            print(f"{name:8s}{s:5d}" + "".join(f"{v:18.1f}" for v in mean[s]) + ret)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
