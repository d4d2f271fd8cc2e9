"""Bad: act(obs) hangs (sleeps for ever)."""

import time


def act(obs):
    time.sleep(1e6)
    return 0
