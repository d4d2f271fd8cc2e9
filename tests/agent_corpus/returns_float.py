"""Bad: act(obs) returns a float."""


def act(obs):
    return 2.0
