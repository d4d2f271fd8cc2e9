"""A wall-clock limit that holds while agent code never returns to Python.

    with Watchdog(remaining, message, exit_code=4):
        returns = play_compiled_policy(...)   # past `remaining` seconds: message, exit 4

An exported JAX policy (`exported`) runs as compiled XLA in the evaluator's own process, and a
`lax.while_loop` in it may never end: no Python runs until it returns, so no exception or
signal handler can stop it (a SIGALRM handler runs in the main thread between bytecodes, never
inside XLA), and XLA has no way to cancel a running computation. XLA releases the GIL while it
runs, so a thread still runs: at the deadline the watchdog's thread prints the message to
stderr and ends the process with `os._exit(exit_code)`, which is the one thing that holds
whatever the compiled code does.

Nothing half-done is written: `disarm` (the end of the `with`) and the expiry share a lock, so
once `disarm` returns the process will not be ended, and once the expiry has begun `disarm`
blocks until the process is gone; callers write their results after the `with`.

May import the standard library only.
"""

from __future__ import annotations

import os
import sys
import threading


class Watchdog:
    """Ends this process with `exit_code`, printing `message`, if still armed after `seconds`."""

    def __init__(self, seconds: float, message: str, exit_code: int) -> None:
        if not seconds > 0:
            raise ValueError(f"a watchdog needs a positive number of seconds, got {seconds!r}")
        self.seconds = float(seconds)
        self.message = message
        self.exit_code = exit_code
        self._disarmed = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._watch, name="aht-bench-watchdog", daemon=True)

    def arm(self) -> Watchdog:
        self._thread.start()
        return self

    def disarm(self) -> None:
        with self._lock:
            self._disarmed.set()

    def _watch(self) -> None:
        if self._disarmed.wait(self.seconds):
            return
        with self._lock:
            if self._disarmed.is_set():
                return
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            try:
                os.write(2, f"\nerror: {self.message}\n".encode(errors="replace"))
            finally:
                os._exit(self.exit_code)

    def __enter__(self) -> Watchdog:
        return self.arm()

    def __exit__(self, *exc: object) -> None:
        self.disarm()


__all__ = ["Watchdog"]
