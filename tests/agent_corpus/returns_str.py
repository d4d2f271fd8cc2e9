"""Bad: act(obs) returns a str instead of an int."""


def act(obs):
    return "up"
