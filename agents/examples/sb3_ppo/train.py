"""Train a Stable-Baselines3 PPO agent on an aht-bench task and export it for `agent.py`.

    pip install -c requirements.lock -e '.[sb3]' --extra-index-url https://download.pytorch.org/whl/cpu
                                   # stable-baselines3 and torch 2.13.0, pinned; the extra index
                                   # brings torch's CPU build (without it: the CUDA one, GBs)
    python agents/examples/sb3_ppo/train.py --task lbf-v1 --timesteps 200000 --seed 0

The ego agent trains in `EgoEnv(task, teammate=lbf_heuristic(TEAMMATE))` (the LBF heuristic
`lexi` by default) with SB3's `MlpPolicy` (separate 64-64 tanh actor and critic MLPs). After
training, only the actor is exported: its layers as a safetensors file (`--out`, default
`ppo_lbf.safetensors` next to this script) plus a JSON card next to it (`<out>.json`) holding the
layer layout, the task, the sha256 of the safetensors bytes and how it was trained. SB3's own
`model.zip` (a pickle inside a zip: loading it can run code) is never written, shipped or
loaded; `agent.py` runs the exported MLP in NumPy, without torch.

Training runs the Gymnasium shell one step at a time on the host: 200k steps took 634 s on two
shared CPU cores (about 300 env steps/s with the heuristic teammate and PPO's updates).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "ppo_lbf.safetensors"
CARD_FORMAT = "aht-bench-sb3-mlp"
CARD_FORMAT_VERSION = 1
TEAMMATE = "lexi"


def make_env(task_id: str, teammate: str, seat: int = 0) -> Any:
    """The ego seat of `task_id` with the LBF heuristic `teammate` as partner."""
    from aht_bench.adapters.gym import EgoEnv
    from aht_bench.envs.registry import resolve
    from aht_bench.policies.heuristics import lbf_heuristic

    task_id = resolve(task_id)
    if not task_id.startswith("lbf-") or task_id == "lbf-po-v1":
        raise SystemExit(
            f"train.py trains with an LBF heuristic teammate: use --task lbf-v1, got {task_id}"
        )
    num_agents = 4 if task_id == "lbf-4p-v1" else 2
    return EgoEnv(task_id, teammate=lbf_heuristic(teammate, num_agents=num_agents), seat=seat)


def train(
    task_id: str = "lbf-v1",
    timesteps: int = 200_000,
    seed: int = 0,
    n_envs: int = 8,
    teammate: str = TEAMMATE,
    verbose: int = 0,
) -> Any:
    """A trained SB3 PPO model (MlpPolicy) for the ego seat 0 of `task_id`."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    torch.set_num_threads(1)  # the env loop is the bottleneck; more threads only contend
    venv = VecMonitor(DummyVecEnv([lambda: make_env(task_id, teammate) for _ in range(n_envs)]))
    venv.seed(seed)
    model = PPO(
        "MlpPolicy",
        venv,
        n_steps=256,  # x n_envs = 2048 transitions per update
        batch_size=256,
        n_epochs=10,
        learning_rate=3e-4,
        gamma=0.99,
        gae_lambda=0.95,
        ent_coef=0.01,
        seed=seed,
        device="cpu",
        verbose=verbose,
    )
    model.learn(total_timesteps=timesteps)
    return model


def actor_layers(model: Any) -> tuple[dict[str, np.ndarray], list[dict[str, str]]]:
    """The actor of an SB3 `ActorCriticPolicy` as (tensors, layers).

    Each layer is {"weight", "bias", "activation"} with `y = activation(x @ weight.T + bias)`;
    the last layer (the action logits) has activation "none".
    """
    import torch

    policy = model.policy
    if type(policy.features_extractor).__name__ != "FlattenExtractor":
        raise SystemExit("export handles MlpPolicy's FlattenExtractor only")
    activations = {torch.nn.Tanh: "tanh", torch.nn.ReLU: "relu"}
    tensors: dict[str, np.ndarray] = {}
    layers: list[dict[str, str]] = []
    modules = list(policy.mlp_extractor.policy_net) + [policy.action_net]
    for i, module in enumerate(modules):
        if isinstance(module, torch.nn.Linear):
            name = "action_net" if module is policy.action_net else f"policy_net.{i}"
            tensors[f"{name}.weight"] = module.weight.detach().cpu().numpy().astype(np.float32)
            tensors[f"{name}.bias"] = module.bias.detach().cpu().numpy().astype(np.float32)
            layers.append(
                {"weight": f"{name}.weight", "bias": f"{name}.bias", "activation": "none"}
            )
        elif type(module) in activations and layers:
            layers[-1]["activation"] = activations[type(module)]
        else:
            raise SystemExit(f"export cannot handle the layer {module!r} of the actor")
    return tensors, layers


def export(model: Any, out: Path, task_id: str, provenance: dict[str, Any]) -> Path:
    """Write the actor of `model` to `out` (safetensors) and `out.json` (card); returns the card."""
    import stable_baselines3
    import torch
    from safetensors.numpy import save as st_save

    from aht_bench import __version__
    from aht_bench.files import atomic_write_bytes

    tensors, layers = actor_layers(model)
    for k, v in tensors.items():
        if not np.all(np.isfinite(v)):
            raise SystemExit(f"refusing to export: tensor {k} has NaN or inf values")
    blob = st_save(tensors)
    card = {
        "format": CARD_FORMAT,
        "format_version": CARD_FORMAT_VERSION,
        "task_id": task_id,
        "obs_dim": int(model.observation_space.shape[0]),
        "num_actions": int(model.action_space.n),
        "layers": layers,
        "action": "sample",  # softmax of the logits, like SB3's predict(deterministic=False)
        "sha256": hashlib.sha256(blob).hexdigest(),
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in tensors.items()},
        "provenance": {
            **provenance,
            "stable_baselines3": stable_baselines3.__version__,
            "torch": torch.__version__,
            "aht_bench": __version__,
        },
    }
    out = Path(out)
    atomic_write_bytes(out, blob)
    card_path = Path(str(out) + ".json")
    atomic_write_bytes(card_path, (json.dumps(card, indent=1, sort_keys=True) + "\n").encode())
    return card_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="lbf-v1", help="task id (an LBF task)")
    parser.add_argument("--timesteps", type=int, default=200_000, help="env steps to train")
    parser.add_argument("--seed", type=int, default=0, help="seed of SB3, torch and the envs")
    parser.add_argument("--n-envs", type=int, default=8, help="parallel envs (DummyVecEnv)")
    parser.add_argument("--teammate", default=TEAMMATE, help="LBF heuristic teammate")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="safetensors file to write")
    args = parser.parse_args(argv)

    from aht_bench.envs.registry import resolve

    task_id = resolve(args.task)
    start = time.perf_counter()
    model = train(task_id, args.timesteps, args.seed, args.n_envs, args.teammate, verbose=1)
    seconds = time.perf_counter() - start
    provenance = {
        "algorithm": "stable_baselines3.PPO MlpPolicy",
        "timesteps": args.timesteps,
        "seed": args.seed,
        "n_envs": args.n_envs,
        "teammate": args.teammate,
        "seat": 0,
        "train_seconds": round(seconds, 1),
        "command": "python agents/examples/sb3_ppo/train.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
    }
    card = export(model, args.out, task_id, provenance)
    print(f"trained {args.timesteps} steps in {seconds:.0f}s; wrote {args.out} and {card}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
