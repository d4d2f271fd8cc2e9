"""Bad: imports a module that is not installed."""

import aht_bench_no_such_module  # noqa: F401
import numpy as np


def act(obs):
    return int(np.argmax(obs[:6]))
