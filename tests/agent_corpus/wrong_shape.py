"""Bad: act(obs) returns an array of 2 actions instead of one."""

import numpy as np


def act(obs):
    return np.array([1, 2])
