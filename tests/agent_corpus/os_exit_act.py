"""Bad: act(obs) ends the process with os._exit(7) (a crash)."""

import os


def act(obs):
    print("about to os._exit")
    os._exit(7)
