"""Write the weights of `jax_mlp_agent.py`: an UNTRAINED, seeded MLPActorCritic for lbf-v1.

    python agents/examples/make_jax_mlp.py

The network is `MLPActorCritic(obs_dim, num_actions)` initialised with `PRNGKey(0)` and saved
with `aht_bench.policies.io.save_policy` (safetensors + a JSON card with its sha256). It has
never been trained: it plays about as well as a random agent and exists only to show the JAX
fast path of the agent-file interface. Trained networks are saved the same way.
"""

from pathlib import Path

import jax

from aht_bench import envs
from aht_bench.policies.io import save_policy
from aht_bench.policies.networks import MLPActorCritic

TASK_ID = "lbf-v1"
OUT = Path(__file__).resolve().with_name("jax_mlp_lbf.safetensors")


def main() -> None:
    env = envs.make(TASK_ID)
    policy = MLPActorCritic(obs_dim=env.obs_dim, num_actions=env.num_actions)
    params = policy.init(jax.random.PRNGKey(0))
    card = save_policy(
        OUT,
        policy,
        params,
        {
            "task_id": TASK_ID,
            "provenance": {
                "trained": False,
                "init": "MLPActorCritic.init(jax.random.PRNGKey(0))",
                "note": "untrained seeded init; exists to show the agent-file interface",
                "script": "agents/examples/make_jax_mlp.py",
            },
        },
    )
    print(f"wrote {OUT} and {card}")


if __name__ == "__main__":
    main()
