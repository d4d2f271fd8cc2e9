"""aht-bench: a benchmark suite for ad hoc teamwork (AHT), built around the ROTATE paper.

Subpackages, bottom to top (each imports only the ones below it; tests/test_layers.py):
`envs` (functional JAX environments, registry, wrappers, rendering), `policies`, `adapters`
(the Gymnasium and PettingZoo shells), `training` (the PPO core), `algorithms` (the methods),
`runs` (the run driver), `evaluation` (BRProx), `heldout` (the teammate sets), `leaderboard`,
`experiments`, and `cli`. The library never imports from the data folders `agents/`,
`heldout/` or `leaderboard/`.

May import nothing of the package: every module imports it (for `__version__`).
"""

__version__ = "0.1.0"
