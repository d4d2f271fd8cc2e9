"""Bad: act takes (obs, key) instead of (obs)."""


def act(obs, key):
    return 0
