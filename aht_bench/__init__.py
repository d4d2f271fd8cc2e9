"""aht-bench: a benchmark suite for ad hoc teamwork (AHT), built around the ROTATE paper.

Subpackages: `envs` (functional JAX environments, registry, wrappers, shells, rendering).
The library never imports from the data folders `agents/`, `heldout/` or `leaderboard/`.
"""

__version__ = "0.1.0"
