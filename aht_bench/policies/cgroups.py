"""One kernel cgroup per sandboxed agent: memory, number of tasks and CPU bounded for the whole
sandbox, not per process.

    group = AgentCgroup.create(memory_bytes=2**29, max_tasks=512, cpus=1.0)
    if group is None: ...                      # no usable cgroups here: `unavailable_reason()`
    argv = group.enter(argv)                   # /bin/sh joins the cgroup, then execs argv
    ...
    group.memory_exceeded()                    # True once the kernel killed a task for memory
    group.close()                              # kills what is left, removes the cgroup

What the cgroup bounds, summed over every process and thread the agent starts:

- memory: resident memory, the pages of the sandbox's tmpfs folders (its /tmp and /dev/shm) and
  swap, together at most `memory_bytes`; past it the kernel's OOM killer ends a task of the group
  (the worker, in practice), and `memory_exceeded()` says so.
- tasks: at most `max_tasks` processes and threads (the pids controller counts both); a fork past
  it fails with EAGAIN, so a fork loop stops there.
- CPU: at most `cpus` cores' worth of CPU time per second of wall time (a CFS quota), so an agent
  cannot starve the evaluator; with the caller's wall-clock limit this bounds its CPU time.

Both cgroup versions work: v1 (one hierarchy per controller, as on this project's CI machines)
and v2 (the unified hierarchy, where the caller's cgroup must delegate memory, pids and cpu).
Where neither can be written (no cgroupfs, no permission, no delegation) `create` returns None and
`unavailable_reason()` says why; the sandbox then bounds memory per process (RLIMIT_DATA), its
tmpfs folders by their size, and tasks by RLIMIT_NPROC (per user; root is exempt).

May import the standard library only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import signal
import time
from pathlib import Path

DEFAULT_MAX_TASKS = 512  # processes + threads of one sandbox (a JAX worker runs ~20-60 threads)
DEFAULT_CPUS = 1.0  # cores' worth of CPU time per second of wall time
_PREFIX = "aht-bench-agent-"
_PERIOD_US = 100_000
_CONTROLLERS = ("memory", "pids", "cpu")
ENTER_FAILED = 125  # exit status of the /bin/sh prefix when it cannot join the cgroup
# joins every cgroup named before "--" (its pid into each cgroup.procs), then execs the rest
_ENTER = (
    'while [ "$#" -gt 0 ] && [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; '
    'shift; exec "$@"'
)

_reason = "cgroups were not tried yet"


def unavailable_reason() -> str:
    """Why the last `AgentCgroup.create` returned None."""
    return _reason


@dataclasses.dataclass(frozen=True)
class _Hierarchy:
    version: int
    controllers: frozenset[str]
    mount: Path
    own: Path
    """This process's cgroup folder in the hierarchy."""


def _mounts(mountinfo: str) -> list[tuple[str, Path, str, frozenset[str]]]:
    """(fstype, mount point, root inside the fs, super options) of every cgroup mount."""
    found = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        found.append((tail[0], Path(fields[4]), fields[3], frozenset(tail[2].split(","))))
    return found


def _hierarchies(proc_cgroup: str, mountinfo: str) -> list[_Hierarchy]:
    """The cgroup hierarchies this process is in, with its own folder in each."""
    mounts = _mounts(mountinfo)
    found = []
    for line in proc_cgroup.splitlines():
        hid, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        if not hid:
            continue
        for fstype, point, root, options in mounts:
            if hid == "0" and fstype == "cgroup2":
                controllers = frozenset()
            elif hid != "0" and fstype == "cgroup" and set(names.split(",")) <= options:
                controllers = frozenset(names.split(",")) & frozenset(_CONTROLLERS)
            else:
                continue
            rel = path[len(root) :] if root != "/" and path.startswith(root) else path
            own = point / rel.lstrip("/")
            found.append(_Hierarchy(2 if hid == "0" else 1, controllers, point, own))
            break
    return found


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@dataclasses.dataclass
class AgentCgroup:
    """The cgroup folders of one sandbox (one per v1 hierarchy, or one v2 folder)."""

    version: int
    folders: dict[str, Path]
    """controller ("memory", "pids", "cpu") -> the folder that controls it."""
    memory_bytes: int | None
    max_tasks: int | None
    cpus: float | None

    @classmethod
    def create(
        cls,
        memory_bytes: int | None,
        max_tasks: int | None = DEFAULT_MAX_TASKS,
        cpus: float | None = DEFAULT_CPUS,
        *,
        proc: Path = Path("/proc/self"),
    ) -> AgentCgroup | None:
        """A fresh cgroup with these limits (None: that limit unset), or None when this
        machine's cgroups cannot be used (`unavailable_reason()` says why)."""
        global _reason
        try:
            found = _hierarchies(_read(proc / "cgroup"), _read(proc / "mountinfo"))
        except (OSError, ValueError) as e:  # pragma: no cover - an unreadable /proc
            _reason = f"/proc/self/cgroup could not be read ({e})"
            return None
        v1 = {c: h for h in found if h.version == 1 for c in h.controllers}
        name = f"{_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            if all(c in v1 for c in _CONTROLLERS):
                group = cls._create_v1(v1, name, memory_bytes, max_tasks, cpus)
            else:
                v2 = next((h for h in found if h.version == 2), None)
                if v2 is None:
                    _reason = (
                        "no cgroup hierarchy with the memory, pids and cpu controllers is "
                        "mounted (/sys/fs/cgroup)"
                    )
                    return None
                group = cls._create_v2(v2, name, memory_bytes, max_tasks, cpus)
        except OSError as e:
            _reason = (
                f"a cgroup could not be created or configured ({e.strerror or e}: {e.filename})"
            )
            return None
        except _NotDelegated as e:
            _reason = str(e)
            return None
        _reason = ""
        return group

    @classmethod
    def _create_v1(
        cls,
        v1: dict[str, _Hierarchy],
        name: str,
        memory_bytes: int | None,
        max_tasks: int | None,
        cpus: float | None,
    ) -> AgentCgroup:
        folders: dict[str, Path] = {}
        group = cls(1, folders, memory_bytes, max_tasks, cpus)
        try:
            for controller in _CONTROLLERS:
                parent = v1[controller].own
                _remove_stale(parent)
                folder = parent / name
                if folder not in folders.values():
                    folder.mkdir()
                folders[controller] = folder
            if memory_bytes is not None:
                mem = folders["memory"]
                _write(mem / "memory.limit_in_bytes", str(int(memory_bytes)))
                if (mem / "memory.memsw.limit_in_bytes").exists():  # swap counted too
                    _write(mem / "memory.memsw.limit_in_bytes", str(int(memory_bytes)))
            if max_tasks is not None:
                _write(folders["pids"] / "pids.max", str(int(max_tasks)))
            if cpus is not None:
                cpu = folders["cpu"]
                _write(cpu / "cpu.cfs_period_us", str(_PERIOD_US))
                _write(cpu / "cpu.cfs_quota_us", str(max(1000, int(cpus * _PERIOD_US))))
        except BaseException:
            group.close()
            raise
        return group

    @classmethod
    def _create_v2(
        cls,
        v2: _Hierarchy,
        name: str,
        memory_bytes: int | None,
        max_tasks: int | None,
        cpus: float | None,
    ) -> AgentCgroup:
        parent = v2.own
        enabled = set(_read(parent / "cgroup.subtree_control").split())
        missing = [c for c in _CONTROLLERS if c not in enabled]
        if missing:
            try:  # only possible where the parent holds no process (or is the root)
                _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))
            except OSError as e:
                raise _NotDelegated(
                    f"the cgroup v2 folder {parent} does not delegate {', '.join(missing)} to "
                    f"its children ({e.strerror or e}); run the evaluator in a cgroup that does "
                    "(e.g. systemd-run --user --scope -p Delegate=yes)"
                ) from None
        _remove_stale(parent)
        folder = parent / name
        folder.mkdir()
        group = cls(2, dict.fromkeys(_CONTROLLERS, folder), memory_bytes, max_tasks, cpus)
        try:
            if memory_bytes is not None:
                _write(folder / "memory.max", str(int(memory_bytes)))
                if (folder / "memory.swap.max").exists():
                    _write(folder / "memory.swap.max", "0")
            if max_tasks is not None:
                _write(folder / "pids.max", str(int(max_tasks)))
            if cpus is not None:
                _write(folder / "cpu.max", f"{max(1000, int(cpus * _PERIOD_US))} {_PERIOD_US}")
        except BaseException:
            group.close()
            raise
        return group

    # ---- use ----------------------------------------------------------------------------------

    def _distinct(self) -> list[Path]:
        return list(dict.fromkeys(self.folders.values()))

    def enter(self, argv: list[str]) -> list[str]:
        """`argv` prefixed by a /bin/sh that moves itself into this cgroup and then execs it, so
        that everything `argv` starts is inside from its first instruction (exit status
        `ENTER_FAILED` if it cannot join)."""
        procs = [str(f / "cgroup.procs") for f in self._distinct()]
        return ["/bin/sh", "-c", _ENTER, "aht-bench-cgroup", *procs, "--", *argv]

    def memory_exceeded(self) -> bool:
        """Whether the kernel has killed a task of this cgroup for going over its memory."""
        folder = self.folders["memory"]
        if self.version == 2:
            text = _read(folder / "memory.events")
        else:
            text = _read(folder / "memory.oom_control")
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value) > 0
        if self.version == 1:  # an older kernel without the oom_kill counter
            return _read(folder / "memory.failcnt").strip() not in ("", "0")
        return False

    def tasks(self) -> list[int]:
        """The processes in this cgroup now."""
        pids: set[int] = set()
        for folder in self._distinct():
            pids |= {int(p) for p in _read(folder / "cgroup.procs").split() if p.isdigit()}
        return sorted(pids)

    def describe(self) -> str:
        """The limits, for records and messages."""
        parts = []
        if self.memory_bytes is not None:
            parts.append(f"memory {self.memory_bytes / 1024**3:g} GiB")
        if self.max_tasks is not None:
            parts.append(f"{self.max_tasks} tasks")
        if self.cpus is not None:
            parts.append(f"{self.cpus:g} CPU")
        return f"cgroup v{self.version}: " + ", ".join(parts)

    def close(self) -> None:
        """Kill every process left in the cgroup and remove its folders (idempotent)."""
        for folder in reversed(self._distinct()):
            for _ in range(50):
                pids = {int(p) for p in _read(folder / "cgroup.procs").split() if p.isdigit()}
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
        self.folders = {}


class _NotDelegated(Exception):
    pass


def _remove_stale(parent: Path) -> None:
    """Remove the empty cgroups of evaluators that died without removing theirs."""
    try:
        entries = list(parent.glob(f"{_PREFIX}*"))
    except OSError:  # pragma: no cover
        return
    for folder in entries:
        owner = folder.name[len(_PREFIX) :].partition("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                folder.rmdir()


__all__ = [
    "DEFAULT_CPUS",
    "DEFAULT_MAX_TASKS",
    "ENTER_FAILED",
    "AgentCgroup",
    "unavailable_reason",
]
