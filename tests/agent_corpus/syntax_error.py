"""Bad: a syntax error on line 4 (a def without its colon)."""


def act(obs)
    return 0
