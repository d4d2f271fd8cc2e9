"""Bad: act(obs) returns 7, outside the 6 actions of LBF."""


def act(obs):
    return 7
