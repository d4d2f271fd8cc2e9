"""Bad: act(obs) returns NaN (a float32 NumPy scalar)."""

import numpy as np


def act(obs):
    return np.float32("nan")
