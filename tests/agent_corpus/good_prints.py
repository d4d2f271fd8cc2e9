"""Good: an agent that prints to stdout (and stderr) in act; the protocol must not care."""

import sys

import numpy as np

print("loading good_prints: some chatter on stdout at import")


def act(obs):
    print("act sees", obs[:3], "and prints a\nmulti-line\x00 message with a NUL")
    sys.stdout.write("\x00\x01\x02\xff garbage without a newline")
    print("stderr chatter", file=sys.stderr)
    return int(np.argmax(obs[:6]) % 6)
