"""Bad: act(obs) raises a ValueError."""


def act(obs):
    raise ValueError("no plan for this observation")
