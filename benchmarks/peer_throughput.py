"""Training env steps/s of JaxAHT (the paper's public code) and of aht-bench, side by side.

One run trains IPPO on lbf and cramped_room and ROTATE on lbf with both codebases, with the same
per-step settings, and writes each benchmark's median env steps/s on both sides and the ratio
ours/peer. The machine may be shared, so the absolute rates are noisy; the ratio, measured in
the same run with the sides interleaved, is what is comparable.

    python benchmarks/peer_throughput.py [--repeats 4] [--benchmarks ippo/lbf-v1,...]
        [--peer-source PATH_OR_URL] [--peer-cache DIR] [--out results.json]

The peer is JaxAHT (github.com/LARG/jax-aht) at the commit `PEER_COMMIT`. The first run clones
that commit from `--peer-source` (a git repository: a path or a URL; default the mirror on this
machine) into `--peer-cache` (default ~/.cache/aht-bench/peer/jax-aht-<commit>) and makes a venv
there with the peer's own pins (its requirements.txt, with the CUDA extra of jax dropped: this
benchmark runs on CPU); later runs reuse both. None of the peer's code is copied here: this file,
started with `--peer-driver` by the peer's venv, imports the peer's training functions from the
clone and times them (it imports nothing from aht_bench in that mode).

Shared settings (our `quick` IPPO preset's per-step settings, set on the peer by hydra
overrides): 64 parallel envs, 128-step rollouts, 4 PPO epochs x 4 minibatches, MLP 64-64, one
seed; the remaining PPO numbers (lr 1e-3 annealed, clip 0.2, entropy 0.01, value weight 0.5,
gradient clip 0.5, gamma 0.99, GAE lambda 0.95) as well. ROTATE runs `--rotate-iterations`
iterations of `--rotate-teammate-updates` teammate updates and `--rotate-ego-updates` ego updates
on both sides, the ego with our `quick` preset's ego PPO settings (lr 5e-4 constant).

What is timed: one whole training run, called again after a first call that compiled it; the
rate is the run's env steps over its wall time, the median of `--repeats` runs. The peer's run is
its jitted `train` (its init, a few ms, inside); ours is `Method.run` from a fresh state made
once (our init is eager host code whose time swings with the machine's load). Env steps are
joint steps of one 2-player env, counted from the update counts each side ran: IPPO `updates x
num_envs x rollout_length`; ROTATE per iteration `teammate updates x 4 rollouts (SP, XP, SXP,
XSP) x num_envs x rollout_length + ego updates x num_envs x rollout_length`. Rounds alternate
which side goes first. Evaluation episodes the peer's ROTATE plays inside its training (at
checkpoints) are not counted and are cut to one episode.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

PEER_COMMIT = "8c93ac437874e6ba675ced8ce5e4b28ee838ae61"
"""JaxAHT's commit that is measured (LARG/jax-aht main, cloned once into the cache)."""
DEFAULT_PEER_SOURCE = "/work/.mirror/LARG+jax-aht/repo"
DEFAULT_CACHE = Path("~/.cache/aht-bench/peer").expanduser()

NUM_ENVS = 64
ROLLOUT_LENGTH = 128
EPOCHS = 4
MINIBATCHES = 4
HIDDEN = 64

BENCHMARKS = (
    # name, our task id, the peer's task config, the peer's algorithm config
    ("ippo", "lbf-v1", "lbf/lbf_7x7_nolevels", "ippo/lbf/lbf_7x7_nolevels"),
    (
        "ippo",
        "overcooked-cramped_room-v2",
        "overcooked-v1/cramped_room",
        "ippo/overcooked-v1/cramped_room",
    ),
    ("rotate", "lbf-v1", "lbf/lbf_7x7_nolevels", "rotate/lbf/lbf_7x7_nolevels"),
)


SHAPING_NAMES = {
    "onion_pickup": "ONION_PICKUP_REWARD",
    "onion_in_pot": "PLACEMENT_IN_POT_REW",
    "plate_pickup": "PLATE_PICKUP_REWARD",
    "soup_pickup": "SOUP_PICKUP_REWARD",
    "counter_pickup": "COUNTER_PICKUP_REWARD",  # ours a factor on pile rewards, theirs a reward
    "onion_on_counter": "COUNTER_DROP_REWARD",
}
"""Our Overcooked shaped-reward coefficient -> the peer's `reward_shaping_params` key."""


class PeerSetupError(RuntimeError):
    """The peer's clone, venv or driver could not be made or started; the message says how to
    fix it."""


def _run(cmd: list[str], log: Path | None = None, **kwargs: Any) -> subprocess.CompletedProcess:
    if log is None:
        return subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    with log.open("a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, **kwargs)


def _tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def peer_checkout(source: str, commit: str, cache: Path) -> Path:
    """The peer's source at `commit` in `cache/src`, cloned from `source` on the first call."""
    src = cache / "src"
    if (src / ".git").is_dir():
        head = _run(["git", "-C", str(src), "rev-parse", "HEAD"]).stdout.strip()
        if head == commit:
            return src
        raise PeerSetupError(
            f"{src} holds commit {head or '(none)'}, not {commit}; delete {src} to clone again"
        )
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / "src.partial"
    shutil.rmtree(partial, ignore_errors=True)
    clone = _run(["git", "clone", "--quiet", "--no-checkout", source, str(partial)])
    if clone.returncode != 0:
        raise PeerSetupError(
            f"could not clone the peer from {source}: {clone.stderr.strip()}\n"
            "pass --peer-source a path or URL of a git repository of LARG/jax-aht"
        )
    checkout = _run(["git", "-C", str(partial), "checkout", "--quiet", "--detach", commit])
    if checkout.returncode != 0:
        raise PeerSetupError(
            f"{source} has no commit {commit}: {checkout.stderr.strip()}\n"
            "pass --peer-source a clone of LARG/jax-aht that contains it"
        )
    partial.rename(src)
    return src


def peer_pins(src: Path) -> list[str]:
    """The peer's requirements.txt lines, with jax's CUDA extra dropped (`jax[cuda12]==v` ->
    `jax==v`, same version and marker): this benchmark runs on CPU."""
    pins = []
    for line in (src / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("jax[cuda"):
            line = "jax" + line[line.index("]") + 1 :]
        pins.append(line)
    return pins


def peer_venv(src: Path, cache: Path, python: str) -> Path:
    """The python of a venv in `cache/venv` with the peer's pins (`peer_pins`), made once: a
    venv whose marker names other pins is made again."""
    venv = cache / "venv"
    pins = peer_pins(src)
    stamp = hashlib.sha256("\n".join(pins).encode()).hexdigest()
    marker = venv / ".aht-bench-ready"
    peer_python = venv / "bin" / "python"
    if marker.is_file() and marker.read_text().strip() == stamp and peer_python.exists():
        return peer_python
    shutil.rmtree(venv, ignore_errors=True)
    log = cache / "venv-install.log"
    log.write_text("")
    made = _run([python, "-m", "venv", str(venv)], log)
    if made.returncode != 0:
        raise PeerSetupError(
            f"`{python} -m venv {venv}` failed (log: {log}):\n{_tail(log)}\n"
            "install the venv module (Debian: apt-get install python3-venv) or pass "
            "--peer-python an interpreter that has it"
        )
    requirements = cache / "requirements-cpu.txt"
    requirements.write_text("\n".join(pins) + "\n")
    pip = [str(peer_python), "-m", "pip", "install", "--disable-pip-version-check"]
    installed = _run([*pip, "-r", str(requirements)], log)
    if installed.returncode != 0:
        raise PeerSetupError(
            f"pip could not install the peer's pins from {requirements} (log: {log}):\n"
            f"{_tail(log)}\n"
            "check that the package index is reachable (pip config, proxy), then run again; "
            f"the half-made venv {venv} is rebuilt on the next run"
        )
    marker.write_text(stamp + "\n")
    return peer_python


# The peer's side, run by the peer's venv (`--peer-driver SRC`): imports jax, hydra and the
# peer's modules only.


class _NullLogger:
    """Stands in for the peer's wandb `Logger`, which its IPPO calls back every update."""

    def log_item(self, *args: Any, **kwargs: Any) -> None:
        pass

    def commit(self) -> None:
        pass


def peer_overrides(bench: str, task_cfg: str, alg_cfg: str, seed: int, size: dict) -> list[str]:
    """The hydra overrides that give the peer's run the shared settings (module docstring)."""
    common = [
        f"task={task_cfg}",
        f"algorithm={alg_cfg}",
        f"task.ROLLOUT_LENGTH={ROLLOUT_LENGTH}",
        "algorithm.NUM_SEEDS=1",
        f"algorithm.TRAIN_SEED={seed}",
        f"algorithm.NUM_ENVS={NUM_ENVS}",
        f"algorithm.UPDATE_EPOCHS={EPOCHS}",
        f"algorithm.NUM_MINIBATCHES={MINIBATCHES}",
        "algorithm.LR=0.001",
        "algorithm.ANNEAL_LR=true",
        "algorithm.CLIP_EPS=0.2",
        "algorithm.ENT_COEF=0.01",
        "algorithm.VF_COEF=0.5",
        "algorithm.MAX_GRAD_NORM=0.5",
        "algorithm.GAMMA=0.99",
        "algorithm.GAE_LAMBDA=0.95",
        f"++algorithm.FC_HIDDEN_DIM={HIDDEN}",
        "logger.mode=disabled",
    ]
    if bench == "ippo":
        return [
            *common,
            f"algorithm.TOTAL_TIMESTEPS={size['updates'] * NUM_ENVS * ROLLOUT_LENGTH}",
            "algorithm.ACTOR_TYPE=mlp",
        ]
    per_update = 4 * NUM_ENVS * ROLLOUT_LENGTH
    return [
        *common,
        f"algorithm.NUM_OPEN_ENDED_ITERS={size['iterations']}",
        f"algorithm.TIMESTEPS_PER_ITER_PARTNER={size['teammate_updates'] * per_update}",
        f"algorithm.TIMESTEPS_PER_ITER_EGO={size['ego_updates'] * NUM_ENVS * ROLLOUT_LENGTH}",
        "algorithm.NUM_EVAL_EPISODES=1",
        "run_heldout_eval=false",
        f"algorithm.EGO_ARGS.UPDATE_EPOCHS={EPOCHS}",
        f"++algorithm.EGO_ARGS.NUM_MINIBATCHES={MINIBATCHES}",
        "algorithm.EGO_ARGS.LR=0.0005",
        "algorithm.EGO_ARGS.ANNEAL_LR=false",
        "algorithm.EGO_ARGS.ENT_COEF=0.01",
        "algorithm.EGO_ARGS.CLIP_EPS=0.2",
        # The peer's ego is an S5 network (ours a GRU): widths as ours, one S5 layer and one
        # hidden layer per head, as our GRU ego has one recurrent layer and one per head.
        f"algorithm.EGO_ARGS.S5_D_MODEL={HIDDEN}",
        f"algorithm.EGO_ARGS.S5_SSM_SIZE={HIDDEN}",
        f"algorithm.EGO_ARGS.S5_ACTOR_CRITIC_HIDDEN_DIM={HIDDEN}",
        "algorithm.EGO_ARGS.FC_N_LAYERS=1",
        "++algorithm.EGO_ARGS.S5_N_LAYERS=1",
    ]


class _PeerBenchmark:
    """One of the peer's training runs: built from its hydra config, jitted as its own entry
    point jits it (`jit(vmap(train))` over one seed), and timed."""

    def __init__(self, src: Path, bench: str, task_cfg: str, alg_cfg: str, seed: int, size: dict):
        import jax
        from hydra import compose, initialize_config_dir  # pyright: ignore[reportMissingImports]
        from omegaconf import OmegaConf  # pyright: ignore[reportMissingImports]

        self.overrides = peer_overrides(bench, task_cfg, alg_cfg, seed, size)
        folder = "marl" if bench == "ippo" else "open_ended_training"
        primary = "base_config_marl" if bench == "ippo" else "base_config_oel"
        with initialize_config_dir(config_dir=str(src / folder / "configs"), version_base=None):
            cfg = compose(primary, overrides=self.overrides)
        self.config = OmegaConf.to_container(cfg.algorithm, resolve=True)
        algorithm = self.algorithm = dict(cfg.algorithm)
        self.ego: dict | None = None
        from envs import make_env  # pyright: ignore[reportMissingImports]
        from envs.log_wrapper import LogWrapper  # pyright: ignore[reportMissingImports]

        self.env = LogWrapper(make_env(algorithm["ENV_NAME"], algorithm["ENV_KWARGS"]))
        rngs = jax.random.split(jax.random.PRNGKey(algorithm["TRAIN_SEED"]), 1)
        if bench == "ippo":
            from marl.ippo import make_train  # pyright: ignore[reportMissingImports]

            train = make_train(algorithm, self.env, _NullLogger())
            self.fn = jax.jit(jax.vmap(train))
            self.args = (rngs,)
            self.env_steps = algorithm["NUM_UPDATES"] * NUM_ENVS * algorithm["ROLLOUT_LENGTH"]
            self._count = lambda out: out["metrics"]["update_steps"].shape[-1]
            self.updates = algorithm["NUM_UPDATES"]
        else:
            from functools import partial

            from open_ended_training.rotate import train_persistent  # pyright: ignore[reportMissingImports]

            # As the peer's run_rotate builds its ego config.
            ego = copy.deepcopy(algorithm)
            ego["TOTAL_TIMESTEPS"] = algorithm["TIMESTEPS_PER_ITER_EGO"]
            ego.update(algorithm.get("EGO_ARGS", {}))
            self.ego = ego
            fn = partial(train_persistent, env=self.env, algorithm_config=algorithm,
                         ego_config=ego)  # fmt: skip
            self.fn = jax.jit(jax.vmap(fn))
            rng = jax.random.split(jax.random.PRNGKey(algorithm["TRAIN_SEED"]))[0]
            self.args = (jax.random.split(rng, 1),)
            rollout = algorithm["ROLLOUT_LENGTH"]
            tm = algorithm["TIMESTEPS_PER_ITER_PARTNER"] // (rollout * 4 * NUM_ENVS)
            eg = int(ego["TOTAL_TIMESTEPS"]) // rollout // NUM_ENVS
            iters = algorithm["NUM_OPEN_ENDED_ITERS"]
            self.updates = {"iterations": iters, "teammate": int(tm), "ego": eg}
            self.env_steps = int(iters * (tm * 4 + eg) * NUM_ENVS * rollout)
            self._count = lambda out: (
                out[0]["metrics"]["update_steps"].shape[-1],
                out[1]["metrics"]["update_steps"].shape[-1],
            )
        self.facts = _peer_env_facts(self.env, algorithm)

    def settings(self) -> dict:
        """The resolved hydra config, plus the numbers the peer's training derives from it as
        it traces (NUM_UPDATES, MINIBATCH_SIZE, ...; the ego's under "ego (as run)")."""
        plain = (bool, int, float, str)
        out = dict(self.config)  # type: ignore[arg-type]
        out |= {k: v for k, v in self.algorithm.items() if k not in out and isinstance(v, plain)}
        if self.ego is not None:
            out["ego (as run)"] = {k: v for k, v in self.ego.items() if isinstance(v, plain)}
        return out

    def run(self) -> float:
        import jax

        start = time.perf_counter()
        out = jax.block_until_ready(self.fn(*self.args))
        seconds = time.perf_counter() - start
        counted = self._count(out)
        expected = (
            self.updates
            if isinstance(self.updates, int)
            else (self.updates["teammate"], self.updates["ego"])
        )
        if counted != expected:
            raise RuntimeError(f"the peer ran {counted} updates, expected {expected}")
        return seconds


def _peer_env_facts(env: Any, algorithm: dict) -> dict:
    """What fixes the peer's game, read from its env objects (compared with ours by
    `env_differences`)."""
    inner = env._env
    facts: dict[str, Any] = {
        "num_agents": int(inner.num_agents),
        "obs_dim": int(inner.observation_space(inner.agents[0]).shape[0]),
        "num_actions": int(inner.action_space(inner.agents[0]).n),
    }
    if algorithm["ENV_NAME"] == "lbf":
        lbf = inner.env
        generator = lbf._generator
        facts |= {
            "grid_size": int(generator.grid_size),
            "view": int(generator.fov),
            "num_food": int(generator.num_food),
            "max_agent_level": int(generator.max_agent_level),
            "force_coop": bool(generator.force_coop),
            "horizon": int(lbf.time_limit),
            "shared_reward": bool(inner.share_rewards),
        }
    else:
        game = inner.env
        layout = game.layout
        facts |= {
            "layout": _layout_picture(
                int(layout["height"]),
                int(layout["width"]),
                {
                    "W": layout["wall_idx"],
                    "O": layout["onion_pile_idx"],
                    "B": layout["plate_pile_idx"],
                    "P": layout["pot_idx"],
                    "X": layout["goal_idx"],
                },
            ),
            "horizon": int(game.max_steps),
            "random_spawns": bool(game.random_reset),
            "random_object_state": bool(game.random_obj_state),
            "shaping": {
                ours: _one_value(algorithm["ENV_KWARGS"]["reward_shaping_params"][theirs])
                for ours, theirs in SHAPING_NAMES.items()
            },
        }
    return facts


def _one_value(per_seat: Any) -> float | list[float]:
    """A shaping coefficient the peer gives per seat, as one number where the seats agree."""
    values = [float(x) for x in per_seat]
    return values[0] if len(set(values)) == 1 else values


def _layout_picture(height: int, width: int, cells: dict[str, Any]) -> list[str]:
    """Rows of a layout, one character per cell: ' ' floor, W counter, O onion pile, B plate
    (bowl) pile, P pot, X delivery; later kinds overwrite earlier ones (piles sit on walls)."""
    grid = [[" "] * width for _ in range(height)]
    for char, idx in cells.items():
        for i in [int(i) for i in list(idx)]:
            grid[i // width][i % width] = char
    return ["".join(row) for row in grid]


def _peer_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    names = ("jax", "jaxlib", "flax", "optax", "chex", "jaxmarl", "jumanji", "hydra-core")
    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


def serve_peer(src: Path) -> int:
    """The peer driver: JSON requests on stdin, one JSON reply per line on stdout.

    {"op": "prepare", "id", "bench", "task_cfg", "alg_cfg", "seed", "size"}: build and compile
    (one first call) -> {"first_call_s", "env_steps", "settings", "overrides", "facts"};
    {"op": "run", "id"}: one timed run -> {"seconds"}; {"op": "about"} -> versions and the
    commit; end of input stops it.
    """
    sys.path.insert(0, str(src))
    os.chdir(src)
    reply_to = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the peer's prints (tqdm, logging) go to stderr; stdout carries replies
    benchmarks: dict[str, _PeerBenchmark] = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "about":
                import jax

                head = _run(["git", "-C", str(src), "rev-parse", "HEAD"]).stdout.strip()
                reply = {
                    "versions": _peer_versions(),
                    "commit": head,
                    "python": sys.version.split()[0],
                    "backend": jax.default_backend(),
                }
            elif request["op"] == "prepare":
                b = _PeerBenchmark(
                    src,
                    request["bench"],
                    request["task_cfg"],
                    request["alg_cfg"],
                    request["seed"],
                    request["size"],
                )
                first = b.run()
                benchmarks[request["id"]] = b
                reply = {
                    "first_call_s": first,
                    "env_steps": b.env_steps,
                    "updates": b.updates,
                    "settings": b.settings(),
                    "overrides": b.overrides,
                    "facts": b.facts,
                }
            else:
                reply = {"seconds": benchmarks[request["id"]].run()}
        except Exception as e:  # the main process reports it, naming the benchmark
            import traceback

            reply = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        reply_to.write(json.dumps(reply) + "\n")
        reply_to.flush()
    return 0


# Our side, run by this process (aht-bench's venv).


class _OurBenchmark:
    """One of our training runs, built from the `quick` preset with the shared settings; `run`
    times `Method.run` from one fresh state (made once: its eager setup is not training)."""

    def __init__(self, bench: str, task: str, seed: int, size: dict):
        import dataclasses

        import jax

        from aht_bench.algorithms import ippo, rotate
        from aht_bench.training import presets

        if bench == "ippo":
            config: Any = presets.get(
                "ippo",
                "quick",
                task,
                num_envs=NUM_ENVS,
                rollout_length=ROLLOUT_LENGTH,
                total_timesteps=size["updates"] * NUM_ENVS * ROLLOUT_LENGTH,
            )
            shared = (config.ppo.num_epochs, config.ppo.num_minibatches, tuple(config.hidden))
            if shared != (EPOCHS, MINIBATCHES, (HIDDEN, HIDDEN)):
                raise RuntimeError(
                    f"our quick IPPO preset on {task} has (epochs, minibatches, hidden) "
                    f"{shared}; set EPOCHS, MINIBATCHES and HIDDEN in this script to match"
                )
            method: Any = ippo.METHOD
            self.updates: Any = config.num_updates
            self.env_steps = config.num_updates * config.batch_size
            self._loop = config.num_updates  # Method.run's steps: updates
        else:
            base = rotate.preset("quick", task)
            shared = (
                base.teammate_ppo.num_epochs,
                base.teammate_ppo.num_minibatches,
                base.ego_ppo.num_epochs,
                base.ego_ppo.num_minibatches,
                tuple(base.teammate_hidden),
                base.ego_hidden,
                base.rollouts_per_update,
            )
            expected = (EPOCHS, MINIBATCHES, EPOCHS, MINIBATCHES, (HIDDEN, HIDDEN), HIDDEN, 4)
            if shared != expected:
                raise RuntimeError(
                    f"our quick ROTATE preset on {task} has (epochs, minibatches) of teammate "
                    f"and ego, widths and rollouts per teammate update {shared}, not {expected}"
                    "; update this script's shared settings and the peer's overrides"
                )
            config = dataclasses.replace(
                base,
                num_envs=NUM_ENVS,
                rollout_length=ROLLOUT_LENGTH,
                iterations=size["iterations"],
                teammate_timesteps=size["teammate_updates"] * 4 * NUM_ENVS * ROLLOUT_LENGTH,
                ego_timesteps=size["ego_updates"] * NUM_ENVS * ROLLOUT_LENGTH,
            )
            method = rotate.METHOD
            self.updates = {
                "iterations": config.iterations,
                "teammate": config.teammate_updates,
                "ego": config.ego_updates,
            }
            self.env_steps = config.iterations * config.env_steps_per_iteration
            self._loop = config.iterations  # Method.run's steps: iterations
        self.config = config
        self._setup = method.setup_of(config)
        self._method = method
        self.state = jax.block_until_ready(
            method.init_seeds(jax.random.PRNGKey(seed), self._setup, 1)
        )
        self.facts = our_env_facts(task)

    def run(self) -> float:
        import jax

        start = time.perf_counter()
        result = self._method.run(self.state, self._setup)
        jax.block_until_ready(result.state)
        seconds = time.perf_counter() - start
        counted = next(iter(result.metrics.values())).shape[-1]
        if counted != self._loop:
            raise RuntimeError(f"our run did {counted} steps of its loop, expected {self._loop}")
        return seconds


def our_env_facts(task: str) -> dict:
    """What fixes our game `task`, as `_peer_env_facts` reads the peer's."""
    from aht_bench.training.rollout import make_env

    env = make_env(task)
    game: Any = getattr(env, "env", env)
    facts: dict[str, Any] = {
        "num_agents": int(game.num_agents),
        "obs_dim": int(game.obs_dim),
        "num_actions": int(game.num_actions),
    }
    if task.startswith("lbf"):
        generator = game.generator
        facts |= {
            "grid_size": int(generator.grid_size),
            "view": int(game.fov),
            "num_food": int(generator.num_food),
            "max_agent_level": int(generator.max_agent_level),
            "force_coop": bool(generator.force_coop),
            "horizon": int(game.horizon),
            "shared_reward": True,  # every player gets the team reward (aht_bench.envs.lbf)
        }
    else:
        from aht_bench.envs import overcooked

        chars = " WOBPX"  # overcooked.FLOOR, COUNTER, CELL_ONION_PILE, ... CELL_GOAL
        params = game.params
        facts |= {
            "layout": ["".join(chars[int(k)] for k in row) for row in np.asarray(game.kinds)],
            "horizon": int(game.horizon),
            "random_spawns": True,  # every task of aht_bench.envs.overcooked
            "random_object_state": isinstance(game, overcooked.OvercookedV2),
            "shaping": {name: round(float(getattr(params, name)), 6) for name in SHAPING_NAMES},
        }
    return facts


# Comparing the two sides and writing the results.

KNOWN_DIFFERENCES = {
    "common": [
        "IPPO: the peer shares one network between both players (one PPO update on both "
        "players' data, 2 x 64 actors); ours trains one network per player (two PPO updates, "
        "each on its player's data): the same transitions and gradient samples per update",
        "the peer computes action masks every step and masks its logits (Overcooked: all "
        "ones); ours samples from unmasked logits",
        "the peer calls back to the host once per IPPO update (jax io_callback, its wandb "
        "logging; a no-op logger here); ours returns to the host after every update "
        "(updates_per_call=1, metrics fetched)",
        "ROTATE ego: the peer's is an S5 network (widths set to 64, one S5 layer, one hidden "
        "layer per head), ours a GRU of 64 (embedding 64, one hidden layer per head)",
        "ROTATE: the peer's teammate objective is its 'sreg-xp_sreg-sp_ret-sxp' (each stream "
        "standardised on its own); ours is the quick preset's 'transition_mean'; same four "
        "rollouts (SP, XP, SXP, XSP) per teammate update",
        "ROTATE: the peer resets every ego env at the start of each ego update and plays "
        "evaluation episodes at its checkpoints (cut to 1 episode, NUM_CHECKPOINTS 2); ours "
        "keeps its ego envs running across updates and plays no evaluation episodes",
        "ROTATE: the peer jits the whole run (all iterations) as one call; ours jits each "
        "phase and loops over iterations on the host",
    ],
    "lbf-v1": [
        "observation: ours appends step_count/100 to Jumanji's vector view (16 numbers), the "
        "peer passes Jumanji's view (15)",
        "spawns: ours draws agent cells uniformly off the food; the peer keeps Jumanji 1.1.0's "
        "generator (agents biased to rows 0 and 6)",
        "reward: ours gives each player 0.5 x the sum of Jumanji's rewards (episode max 0.5); "
        "the peer gives each player their mean",
    ],
    "overcooked-cramped_room-v2": [
        "the peer's Overcooked is its own OvercookedV1 over jaxmarl 0.0.7; ours wraps jaxmarl "
        "0.2.0's (FACTS.md: the v2 task is the peer's game as its code runs it)",
    ],
}


def env_differences(ours: dict, peer: dict) -> list[str]:
    """Each fact (`our_env_facts`, `_peer_env_facts`) whose values differ, or that one side
    lacks."""
    out = []
    for key in sorted(set(ours) | set(peer)):
        if key not in peer:
            out.append(f"{key}: ours {ours[key]!r}, the peer does not say")
        elif key not in ours:
            out.append(f"{key}: the peer {peer[key]!r}, ours does not say")
        elif ours[key] != peer[key]:
            out.append(f"{key}: ours {ours[key]!r}, peer {peer[key]!r}")
    return out


class PeerDriver:
    """The peer's venv running this file with `--peer-driver`; requests and replies are JSON
    lines (`serve_peer`)."""

    def __init__(self, python: Path, src: Path, log: Path):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env |= {"JAX_PLATFORMS": "cpu", "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "1"}
        self.log = log
        self._stderr = log.open("w")
        self.proc = subprocess.Popen(
            [str(python), str(Path(__file__).resolve()), "--peer-driver", str(src)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
        )

    def ask(self, request: dict) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self.proc.stdout.readline()
        if not line:
            self._stderr.flush()
            raise PeerSetupError(
                f"the peer driver stopped (exit {self.proc.wait()}; log {self.log}):\n"
                f"{_tail(self.log)}\ndelete the venv in the cache folder if an import failed"
            )
        return json.loads(line)

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:  # the driver already stopped
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._stderr.close()


def _git_head(repo: Path) -> str:
    head = _run(["git", "-C", str(repo), "rev-parse", "HEAD"]).stdout.strip()
    dirty = _run(["git", "-C", str(repo), "status", "--porcelain"]).stdout.strip()
    return head + (" (plus uncommitted changes in the tree)" if dirty else "")


def _cpu() -> dict:
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "model": model,
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "platform": platform.platform(),
        "machine": platform.machine(),
    }


def _our_versions() -> dict[str, str]:
    from importlib.metadata import version

    import aht_bench

    names = ("jax", "jaxlib", "flax", "optax", "jaxmarl", "jumanji")
    return {"aht_bench": aht_bench.__version__, **{n: version(n) for n in names}}


def _settings_of(config: Any) -> dict:
    import dataclasses

    return json.loads(json.dumps(dataclasses.asdict(config), default=str))


def measure(args: argparse.Namespace, peer: PeerDriver | None, peer_error: str | None) -> dict:
    """Prepare every benchmark on both sides, then `args.repeats` interleaved rounds."""
    sizes = {
        ("ippo", "lbf-v1"): {"updates": args.ippo_lbf_updates},
        ("ippo", "overcooked-cramped_room-v2"): {"updates": args.ippo_overcooked_updates},
        ("rotate", "lbf-v1"): {
            "iterations": args.rotate_iterations,
            "teammate_updates": args.rotate_teammate_updates,
            "ego_updates": args.rotate_ego_updates,
        },
    }
    rows: list[dict] = []
    ours: dict[str, _OurBenchmark] = {}
    for bench, task, task_cfg, alg_cfg in BENCHMARKS:
        name = f"{bench}/{task}"
        if name not in args.benchmarks:
            continue
        size = sizes[(bench, task)]
        print(f"[{name}] compiling ours ...", file=sys.stderr, flush=True)
        mine = _OurBenchmark(bench, task, args.seed, size)
        first = mine.run()
        ours[name] = mine
        row: dict[str, Any] = {
            "benchmark": bench,
            "task": task,
            "size": size,
            "ours": {
                "first_call_s": round(first, 2),
                "env_steps": mine.env_steps,
                "updates": mine.updates,
                "settings": _settings_of(mine.config),
                "env": mine.facts,
                "seconds": [],
            },
            "peer": {"task_config": task_cfg, "algorithm_config": alg_cfg, "seconds": []},
        }
        if peer is not None:
            print(f"[{name}] compiling the peer's ...", file=sys.stderr, flush=True)
            request = {"op": "prepare", "id": name, "bench": bench, "task_cfg": task_cfg}
            reply = peer.ask(request | {"alg_cfg": alg_cfg, "seed": args.seed, "size": size})
            if "error" in reply:
                row["peer"]["error"] = reply["error"]
                print(reply["traceback"], file=sys.stderr)
            else:
                row["peer"] |= {
                    "first_call_s": round(reply["first_call_s"], 2),
                    "env_steps": reply["env_steps"],
                    "updates": reply["updates"],
                    "overrides": reply["overrides"],
                    "settings": reply["settings"],
                    "env": reply["facts"],
                }
                row["env_differences"] = env_differences(mine.facts, reply["facts"])
        else:
            row["peer"]["error"] = peer_error
        rows.append(row)

    for r in range(args.repeats):
        for row in rows:
            name = f"{row['benchmark']}/{row['task']}"
            sides = ("ours", "peer") if r % 2 == 0 else ("peer", "ours")
            for side in sides:
                if side == "ours":
                    row["ours"]["seconds"].append(round(ours[name].run(), 3))
                elif peer is not None and "error" not in row["peer"]:
                    reply = peer.ask({"op": "run", "id": name})
                    if "error" in reply:
                        row["peer"]["error"] = reply["error"]
                    else:
                        row["peer"]["seconds"].append(round(reply["seconds"], 3))
            print(f"[{name}] round {r + 1}/{args.repeats} done", file=sys.stderr, flush=True)

    for row in rows:
        for side in ("ours", "peer"):
            s = row[side]
            if s["seconds"]:
                median = statistics.median(s["seconds"])
                s["median_s"] = round(median, 3)
                s["steps_per_s"] = round(s["env_steps"] / median)
                s["steps_per_s_each"] = [round(s["env_steps"] / t) for t in s["seconds"]]
                s["compile_s_estimate"] = round(s["first_call_s"] - median, 1)
        if "steps_per_s" in row["ours"] and "steps_per_s" in row["peer"]:
            row["ratio_ours_over_peer"] = round(
                row["ours"]["steps_per_s"] / row["peer"]["steps_per_s"], 2
            )
    return {"rows": rows}


def _table(rows: list[dict]) -> list[str]:
    head = (
        f"{'benchmark':<9} {'task':<27} {'our steps/s':>11} {'peer steps/s':>12} {'ours/peer':>9}"
    )
    lines = [head]
    for row in rows:
        o, p = row["ours"], row["peer"]
        ours = f"{o['steps_per_s']:,}" if "steps_per_s" in o else "-"
        theirs = f"{p['steps_per_s']:,}" if "steps_per_s" in p else "failed"
        ratio = f"{row['ratio_ours_over_peer']:.2f}x" if "ratio_ours_over_peer" in row else "-"
        lines.append(f"{row['benchmark']:<9} {row['task']:<27} {ours:>11} {theirs:>12} {ratio:>9}")
    return lines


def report(record: dict) -> str:
    """The text file: the table, then how it was measured, both sides' settings and facts,
    the command and the date."""
    rows = record["rows"]
    lines = [
        "Training env steps/s, aht-bench (ours) vs JaxAHT (peer), same per-step settings, "
        "median of the timed runs.",
        "The machine may be shared (load averages below): the absolute rates are noisy and "
        "machine-bound; the ratio ours/peer, measured in one run with the sides interleaved, "
        "is what is comparable.",
        "",
        *_table(rows),
        "",
        "Per run (env steps/s; first call = compile + one run, in s):",
    ]
    for row in rows:
        for side in ("ours", "peer"):
            s = row[side]
            if "error" in s:
                lines.append(f"  {row['benchmark']}/{row['task']} {side}: FAILED: {s['error']}")
                continue
            each = ", ".join(f"{x:,}" for x in s.get("steps_per_s_each", []))
            u = s["updates"]
            updates = (
                f"{u} updates"
                if isinstance(u, int)
                else f"{u['iterations']} iterations x ({u['teammate']} teammate + {u['ego']} "
                "ego updates)"
            )
            lines.append(
                f"  {row['benchmark']}/{row['task']} {side}: {each}; {s['env_steps']:,} env "
                f"steps per run ({updates}); first call {s['first_call_s']} s"
            )
    lines += ["", "How it was measured:", *_wrapped((__doc__ or "").split("\n\n")[-1])]
    m = record["machine"]
    lines += [
        "",
        f"CPU: {m['model']}, {m['cpus']} CPUs ({m['cpus_usable']} usable); {m['platform']}; "
        f"load average {record['load_average_start']} at the start, "
        f"{record['load_average_end']} at the end",
        f"ours: aht-bench commit {record['ours']['commit']}; "
        + ", ".join(f"{k} {v}" for k, v in record["ours"]["versions"].items())
        + f"; python {record['ours']['python']}",
    ]
    peer = record["peer"]
    if "versions" in peer:
        lines.append(
            f"peer: JaxAHT commit {peer['commit']} from {peer['source']}; "
            + ", ".join(f"{k} {v}" for k, v in peer["versions"].items())
            + f"; python {peer['python']}"
        )
    else:
        lines.append(f"peer: could not be run: {peer.get('error')}")
    lines += ["", "Settings, per benchmark:"]
    for row in rows:
        name = f"{row['benchmark']}/{row['task']}"
        lines.append(f"  {name} ours: {json.dumps(row['ours']['settings'])}")
        if "overrides" in row["peer"]:
            lines.append(
                f"  {name} peer: task={row['peer']['task_config']} "
                f"algorithm={row['peer']['algorithm_config']}, hydra overrides: "
                f"{' '.join(row['peer']['overrides'])}"
            )
            lines.append(f"  {name} peer (resolved): {json.dumps(row['peer']['settings'])}")
    lines += ["", "Games (facts read from each side's env objects):"]
    seen = set()
    for row in rows:
        if row["task"] in seen or "env" not in row["peer"]:
            continue
        seen.add(row["task"])
        diffs = row.get("env_differences", [])
        same = sorted(set(row["ours"]["env"]) & set(row["peer"]["env"]))
        same = [k for k in same if row["ours"]["env"][k] == row["peer"]["env"][k]]
        lines.append(f"  {row['task']} vs {row['peer']['task_config']}: same {', '.join(same)}")
        lines += [f"    differs: {d}" for d in diffs]
        lines += [f"    known: {d}" for d in KNOWN_DIFFERENCES.get(row["task"], [])]
    lines += ["", "Differences between the sides that no setting removes:"]
    lines += [f"  - {d}" for d in KNOWN_DIFFERENCES["common"]]
    lines += ["", f"command: {record['command']}", f"date: {record['date']}"]
    lines.append(f"wall time of the whole run: {record['wall_s']:.0f} s")
    return "\n".join(lines) + "\n"


def _wrapped(text: str, width: int = 98) -> list[str]:
    import textwrap

    return ["  " + line for line in textwrap.wrap(" ".join(text.split()), width)]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=_positive, default=4, help="timed runs per side")
    parser.add_argument("--seed", type=int, default=0)
    names = [f"{b}/{t}" for b, t, _, _ in BENCHMARKS]
    parser.add_argument(
        "--benchmarks",
        type=lambda text: [n.strip() for n in text.split(",") if n.strip()],
        default=names,
        help=f"comma-separated, of {','.join(names)} (default: all)",
    )
    parser.add_argument("--ippo-lbf-updates", type=_positive, default=32)
    parser.add_argument("--ippo-overcooked-updates", type=_positive, default=12)
    parser.add_argument("--rotate-iterations", type=_positive, default=2)
    parser.add_argument("--rotate-teammate-updates", type=_positive, default=8)
    parser.add_argument("--rotate-ego-updates", type=_positive, default=8)
    parser.add_argument("--peer-source", default=DEFAULT_PEER_SOURCE, help="git path or URL")
    parser.add_argument(
        "--peer-cache",
        type=Path,
        help=f"default {DEFAULT_CACHE}/jax-aht-<commit> (the clone, the venv, logs)",
    )
    parser.add_argument(
        "--peer-python", default=sys.executable, help="interpreter the peer's venv is made from"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "peer_throughput.json",
        help="the JSON; the text table goes next to it (.txt)",
    )
    parser.add_argument("--peer-driver", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer_driver is not None:
        return serve_peer(args.peer_driver)
    unknown = sorted(set(args.benchmarks) - set(names))
    if unknown:
        parser.error(f"--benchmarks: unknown {', '.join(unknown)}; choose from {', '.join(names)}")

    started = time.perf_counter()
    load_start = [round(x, 2) for x in os.getloadavg()]
    cache = args.peer_cache or DEFAULT_CACHE / f"jax-aht-{PEER_COMMIT}"
    peer_info: dict[str, Any] = {"source": args.peer_source, "cache": str(cache)}
    peer: PeerDriver | None = None
    try:
        src = peer_checkout(args.peer_source, PEER_COMMIT, cache)
        python = peer_venv(src, cache, args.peer_python)
        peer = PeerDriver(python, src, cache / "driver.log")
        peer_info |= peer.ask({"op": "about"})
    except PeerSetupError as e:
        print(f"peer_throughput: {e}", file=sys.stderr)
        return 2

    import jax

    try:
        record = measure(args, peer, None)
    except PeerSetupError as e:
        print(f"peer_throughput: {e}", file=sys.stderr)
        return 2
    finally:
        peer.close()
    record |= {
        "command": " ".join(
            ["python benchmarks/peer_throughput.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "wall_s": round(time.perf_counter() - started, 1),
        "load_average_start": load_start,
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "machine": _cpu(),
        "ours": {
            "commit": _git_head(Path(__file__).resolve().parents[1]),
            "versions": _our_versions(),
            "python": sys.version.split()[0],
            "backend": jax.default_backend(),
        },
        "peer": peer_info,
    }
    text = report(record)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    args.out.with_suffix(".txt").write_text(text)
    failed = [r for r in record["rows"] if "error" in r["peer"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
