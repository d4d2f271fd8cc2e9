"""A Stable-Baselines3 PPO agent, run in pure NumPy: no torch and no SB3 at evaluation.

    aht-bench check-agent agents/examples/sb3_ppo/agent.py --task lbf-v1 --teammate lexi

`train.py` (next to this file) trains SB3 PPO with `MlpPolicy` and exports its actor: the
layers as `ppo_lbf.safetensors` and a JSON card `ppo_lbf.safetensors.json` listing the layers,
their activations, the task and the sha256 of the weights. This file checks the card and the
sha256 before it uses a single weight, then computes the logits with NumPy.

It plays like SB3's `model.predict(obs, deterministic=False)`: an action sampled from the
softmax of the logits (each agent from `make_agent` has its own NumPy generator, seeded by
its seat). `greedy_action(obs)` is `predict(obs, deterministic=True)`, the argmax; the shipped
model plays much worse that way against `lexi` (it stands still in a loop it relies on
randomness to leave), which is common for PPO policies in LBF.

SB3 saves models as zip files holding pickles, which can run code when loaded; this is why
the weights travel as safetensors and the card, and why no zip is shipped or loaded here.
"""

import hashlib
import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load as st_load

WEIGHTS = Path(__file__).resolve().with_name("ppo_lbf.safetensors")
CARD_FORMAT = "aht-bench-sb3-mlp"
ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0), "none": lambda x: x}


def load_actor(path: Path) -> tuple[dict, list]:
    """(card, [(weight, bias, activation), ...]) of an exported actor, verified."""
    card_path = Path(str(path) + ".json")
    card = json.loads(card_path.read_text())
    if card.get("format") != CARD_FORMAT or card.get("format_version") != 1:
        raise ValueError(f"{card_path} is not a {CARD_FORMAT} v1 card; export with train.py")
    blob = Path(path).read_bytes()
    digest = hashlib.sha256(blob).hexdigest()
    if digest != card.get("sha256"):
        raise ValueError(
            f"{path} does not match the sha256 in {card_path.name} ({digest[:12]}... vs "
            f"{str(card.get('sha256'))[:12]}...): the file is corrupted or was edited"
        )
    tensors = st_load(blob)
    layers, width = [], card["obs_dim"]
    for layer in card["layers"]:
        w, b = tensors[layer["weight"]], tensors[layer["bias"]]
        if w.ndim != 2 or w.shape[1] != width or b.shape != (w.shape[0],):
            raise ValueError(f"{path}: layer {layer['weight']} has shape {w.shape}, {b.shape}")
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(b))):
            raise ValueError(f"{path}: layer {layer['weight']} has NaN or inf weights")
        layers.append((w, b, ACTIVATIONS[layer["activation"]]))
        width = w.shape[0]
    if width != card["num_actions"]:
        raise ValueError(f"{path}: the last layer has {width} outputs, not num_actions")
    return card, layers


def logits(layers: list, obs: np.ndarray) -> np.ndarray:
    """Action logits (..., num_actions) for observations (..., obs_dim), float32."""
    x = np.asarray(obs, np.float32)
    for w, b, activation in layers:
        x = activation(x @ w.T + b)
    return x


def probabilities(layers: list, obs: np.ndarray) -> np.ndarray:
    """Softmax of the logits: the policy SB3 samples from."""
    z = logits(layers, obs)
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


CARD, LAYERS = load_actor(WEIGHTS)
TASKS = (CARD["task_id"],)


def greedy_action(obs: np.ndarray) -> int:
    return int(np.argmax(logits(LAYERS, obs)))


class SampledAgent:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray) -> int:
        p = probabilities(LAYERS, obs).astype(np.float64)
        return int(self.rng.choice(len(p), p=p / p.sum()))


def make_agent(task_id: str, seat: int) -> SampledAgent:
    return SampledAgent(seed=seat)
