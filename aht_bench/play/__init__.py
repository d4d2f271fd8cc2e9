"""Playing with a teammate in the browser: `aht-bench play`.

    aht-bench play --task cramped_room --teammate heldout:v2:ippo_mlp_0 [--record human_data/]

A local web server (aiohttp) serves one page; each player's browser opens a WebSocket, and the
server runs that player's episode in real time: the task's environment behind the Gymnasium
shell (`aht_bench.adapters.gym.EgoEnv`, the teammate folded in), one step per tick with the
player's last key (or no-op), the frame drawn by the task's renderer sent back. The episode ends
with its score and, for a heldout member, its BRProx against the member's bounds. With
`--record DIR` (opt-in) each finished episode is saved as a replay (`aht_bench.evaluation.
replay`: the joint actions and the seed, enough to replay it exactly) in DIR.

The server lives in `aht_bench.play.server` (`PlayConfig`, `make_app`, `serving`); it is not
imported here, so that `aht-bench` without the play extra (no aiohttp) still loads.

May import aiohttp, numpy, jax, PIL, the standard library and aht_bench (envs, adapters,
evaluation, files).
"""
