"""Bad: act(obs) returns a bool."""


def act(obs):
    return True
