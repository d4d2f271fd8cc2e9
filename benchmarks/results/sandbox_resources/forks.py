import os
import sys
import time

n = 0
try:
    while n < 5000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print(f"FORKS {n} stopped: {e}", file=sys.stderr, flush=True)
else:
    print(f"FORKS {n} not stopped", file=sys.stderr, flush=True)


def act(obs):
    return 0
