"""Bad: hangs at import (a busy loop)."""

while True:
    pass


def act(obs):
    return 0
