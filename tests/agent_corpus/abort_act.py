"""Bad: act(obs) aborts the process with os.abort() (SIGABRT, like a native crash)."""

import os


def act(obs):
    os.abort()
