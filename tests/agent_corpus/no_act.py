"""Bad: defines no act(obs), make_agent or JAX policy."""


def choose(obs):
    return 0
