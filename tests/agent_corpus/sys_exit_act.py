"""Bad: act(obs) calls sys.exit(3)."""

import sys


def act(obs):
    sys.exit(3)
