"""The child process of `aht_bench.policies.isolated.IsolatedAgent`: runs one agent file.

    python -m aht_bench.policies._agent_worker AGENT_PATH    (started by IsolatedAgent only)

AGENT_PATH is there for `ps` to show; what to load comes over the protocol.

Protocol (the parent's side is in `isolated`): frames of a 4-byte little-endian length and a
body whose first byte is the opcode. The worker keeps the pipes it was started with (fd 0 and
fd 1) for the protocol only: before it imports the agent it moves them to new descriptors,
points fd 0 at /dev/null and fd 1 at stderr, so whatever the agent prints (or writes to fd 1
from native code) lands on stderr and never corrupts a frame.

    worker -> parent  B                      booted (imports done), ready for L
    parent -> worker  L + JSON {path, task_id, seat, seed, spec[, probe]}
    worker -> parent  K + JSON {kind, has_jax}  |  E + JSON error
                      (with "probe": true the worker only imports and checks the file,
                      `agent_file.probe_agent_file`, answers K or E and exits)
    parent -> worker  A + float32 obs bytes  ->  a + int32 action  |  E + JSON error
    parent -> worker  R                      ->  r                 |  E + JSON error
    parent -> worker  X + JSON {platform}    ->  x + 4-byte length + JSON info + module
                                                 + safetensors params  |  E + JSON error
    EOF on the protocol input                ->  the worker exits 0

An error is {"kind": "load" | "runtime", "message": ..., "details": traceback or null}. The
worker exits by itself when its parent dies (a watchdog thread polls the parent pid). `X`
exports the agent's JAX policy (`aht_bench.policies.exported`) so the evaluator can run it
jitted without running the agent's Python. The L request's "memory_limit" (bytes or null)
bounds the worker's memory before the agent is imported (`sandbox.apply_limits`), and its
"nproc_limit" (or null) the user's processes where no cgroup bounds the sandbox's tasks.

May import the standard library, numpy, safetensors and aht_bench.policies (agent_file,
exported, sandbox).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
import time
import traceback
from typing import Any

_HEADER = struct.Struct("<I")
_ACTION = struct.Struct("<i")


def _read_exact(fd: int, n: int) -> bytes | None:
    """`n` bytes from `fd`, or None at end of file."""
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _send(fd: int, body: bytes) -> None:
    _write_all(fd, _HEADER.pack(len(body)) + body)


def _send_error(fd: int, kind: str, message: str, details: str | None = None) -> None:
    _send(fd, b"E" + json.dumps({"kind": kind, "message": message, "details": details}).encode())


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(70)  # orphaned: the parent died without closing us


def _export(agent: Any, req: dict[str, Any]) -> bytes:
    """The `x` reply body of the agent's JAX policy (see the protocol)."""
    from safetensors.numpy import save

    from aht_bench.policies.agent_file import AgentRuntimeError
    from aht_bench.policies.exported import ExportError, export_policy

    if agent.jax is None:
        raise AgentRuntimeError(f"agent file {agent.path.name} has no JAX policy to export")
    import jax

    jax.config.update("jax_threefry_partitionable", bool(req["threefry_partitionable"]))
    policy, params = agent.jax
    try:
        blob, tensors, info = export_policy(policy, params, agent.spec.obs_dim, req["platform"])
    except ExportError as e:
        raise AgentRuntimeError(f"agent file {agent.path.name}: {e}") from None
    head = json.dumps(info | {"module_bytes": len(blob)}).encode()
    return _HEADER.pack(len(head)) + head + blob + save(tensors)


def main() -> int:
    # Take the protocol pipes away from fds 0 and 1 before anything else can print.
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull)  # lives as long as the process
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)  # line-buffered, to stderr
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()

    import numpy as np

    from aht_bench.policies.agent_file import (
        AgentFileError,
        AgentLoadError,
        TaskSpec,
        load_agent_file,
        probe_agent_file,
    )

    _send(proto_out, b"B")
    header = _read_exact(proto_in, _HEADER.size)
    if header is None:
        return 0
    body = _read_exact(proto_in, _HEADER.unpack(header)[0])
    if body is None or body[:1] != b"L":
        _send_error(proto_out, "load", "agent worker: expected a load command")
        return 2
    req = json.loads(body[1:])
    from aht_bench.policies.sandbox import apply_limits

    # no core files next to the user's work; memory bounded before the agent's code runs
    apply_limits(req.get("memory_limit"), processes=req.get("nproc_limit"))
    try:
        spec = TaskSpec.from_json(req["spec"])
        if req.get("probe"):  # import and check only (`probe_agent_file`), then end
            kind = probe_agent_file(req["path"], spec, req["seat"])
            _send(proto_out, b"K" + json.dumps({"kind": kind, "has_jax": None}).encode())
            return 0
        agent = load_agent_file(req["path"], spec.task_id, req["seat"], seed=req["seed"], spec=spec)
    except AgentLoadError as e:
        _send_error(proto_out, "load", str(e), e.details)
        return 0
    except BaseException as e:  # the agent raised something we do not wrap (KeyboardInterrupt)
        _send_error(
            proto_out,
            "load",
            f"loading agent file {os.path.basename(req['path'])} failed: {type(e).__name__}: {e}",
            "".join(traceback.format_exception(e)),
        )
        return 0
    info = {"kind": agent.kind, "has_jax": agent.jax is not None}
    _send(proto_out, b"K" + json.dumps(info).encode())

    while True:
        header = _read_exact(proto_in, _HEADER.size)
        if header is None:
            return 0
        body = _read_exact(proto_in, _HEADER.unpack(header)[0])
        if body is None:
            return 0
        op = body[:1]
        try:
            if op == b"A":
                obs = np.frombuffer(body, dtype=np.float32, offset=1)
                _send(proto_out, b"a" + _ACTION.pack(agent.act(obs)))
            elif op == b"R":
                agent.reset()
                _send(proto_out, b"r")
            elif op == b"X":
                _send(proto_out, b"x" + _export(agent, json.loads(body[1:])))
            else:
                _send_error(proto_out, "runtime", f"agent worker: unknown command {op!r}")
        except AgentFileError as e:
            _send_error(proto_out, "runtime", str(e), e.details)
        except BaseException as e:  # KeyboardInterrupt raised by the agent, or a bug here
            _send_error(
                proto_out,
                "runtime",
                f"agent file {agent.path.name} failed: {type(e).__name__}: {e}",
                "".join(traceback.format_exception(e)),
            )


if __name__ == "__main__":
    sys.exit(main())
