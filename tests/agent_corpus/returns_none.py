"""Bad: act(obs) forgets to return (returns None)."""


def act(obs):
    int(obs[0])
