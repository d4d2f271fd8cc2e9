"""The sandbox an untrusted agent file runs in: bubblewrap (`bwrap`) around the agent worker.

    box = Sandbox.default(agent_path)          # raises SandboxUnavailableError without bwrap
    argv = box.wrap([sys.executable, "-m", "aht_bench.policies._agent_worker", str(agent_path)])

Why bubblewrap: it is the unprivileged sandbox that Flatpak and GNOME build on, packaged by every
major distribution (Debian: `bubblewrap`), a single small setuid-free binary over the kernel's
namespaces; it needs no daemon, no image and no root. What the agent gets:

- its own PID, network, IPC, UTS and cgroup namespaces (`--unshare-all`): it sees only its own
  processes, has no network but a private loopback, and cannot signal or trace the evaluator.
  When the worker exits, the namespace's init ends and the kernel kills every process left in
  it (a double-forked `setsid` daemon included); `--die-with-parent` ends it when the evaluator
  dies, even by SIGKILL.
- a read-only view of only what it needs: the system's /usr, /lib*, /bin, /etc; the Python
  installation and the environment (venv) running aht-bench; the `aht_bench` package; the
  agent file's bundle (`bundle`: the file and the files it declares or that sit in its own
  folder; never `.git`), each file bound at its own path in an otherwise empty, read-only
  folder. The heldout sets (the checkout's, $AHT_BENCH_HELDOUT and the installed data
  distributions') and the leaderboard are masked by empty folders wherever they would be
  visible, and nothing else of the user's files is.
- a private, size-bounded /tmp and /dev/shm (its only writable places, gone when it ends;
  bwrap's own /dev/shm would be a tmpfs of half the host's memory), a clean
  environment (no tokens or paths of the caller leak in), and `--new-session` (no terminal to
  inject keystrokes into).

Memory, tasks and CPU are bounded for the whole sandbox by a cgroup of its own where the kernel
lets us make one (`cgroups`, joined before bwrap starts: tmpfs pages and child processes count);
inside the worker, `apply_limits` also bounds each process's private memory (RLIMIT_DATA), the
size of a file, core dumps and, without a cgroup, the user's processes (RLIMIT_NPROC). Time
limits and the output cap are the caller's (`isolated`).

May import the standard library and aht_bench.policies.bundle.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from aht_bench.policies.bundle import Bundle, agent_bundle

DEFAULT_MEMORY_LIMIT = 8 * 1024**3  # bytes of private memory (RLIMIT_DATA) the agent may use
DEFAULT_SCRATCH_SIZE = 256 * 1024**2  # bytes of the agent's private /tmp
DEFAULT_SHM_SIZE = 64 * 1024**2  # bytes of the agent's private /dev/shm
_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # .../aht_bench
_CHECKOUT = _PACKAGE_DIR.parent
_SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc")
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "JAX_PLATFORMS", "JAX_ENABLE_X64", "XLA_FLAGS")
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap; `make install` does it where it can), or run code you trust without the "
    "sandbox: --no-sandbox (a separate process) or --in-process (records made so are marked "
    "and the leaderboard refuses them)"
)


class SandboxUnavailableError(RuntimeError):
    """bubblewrap is missing or cannot create namespaces here; the message says what to do."""


@functools.cache
def bwrap_path() -> str:
    """The bwrap executable, checked once to work here; raises `SandboxUnavailableError`."""
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailableError(
            f"the agent sandbox needs bubblewrap (bwrap), which is not on PATH; {INSTALL_HINT}"
        )
    probe = [path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxUnavailableError(f"{path} could not be run ({e}); {INSTALL_HINT}") from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise SandboxUnavailableError(
            f"{path} cannot create the sandbox's namespaces on this machine "
            f"({why[-1] if why else f'exit code {done.returncode}'}; in a container, allow "
            f"unprivileged user namespaces); {INSTALL_HINT}"
        )
    return path


def default_hidden() -> tuple[Path, ...]:
    """Folders no agent may see: the checkout's heldout/ and leaderboard/, the heldout folder
    named by $AHT_BENCH_HELDOUT and the installed heldout data (`aht_bench_heldout`, in the
    environment the sandbox shows)."""
    hidden = [_CHECKOUT / "heldout", _CHECKOUT / "leaderboard", *_installed_heldout()]
    override = os.environ.get("AHT_BENCH_HELDOUT")
    if override:
        hidden.append(Path(override))
    return tuple(dict.fromkeys(p.resolve() for p in hidden))


def shown_bundle(agent_path: Path) -> Bundle:
    """The bundle the sandbox shows the agent file `agent_path` (`bundle.agent_bundle`, the
    `default_hidden()` folders left out): what a record's and an entry's bundle hash is of.
    Raises `bundle.BundleError`."""
    return agent_bundle(agent_path, default_hidden())


def _installed_heldout() -> list[Path]:
    """The folders of the installed data distributions (`evaluation.data.DATA_PACKAGE`)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("aht_bench_heldout")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def _python_dirs() -> list[Path]:
    """The Python installation and environment running this process (not its sys.path, which
    can hold a checkout or the current folder)."""
    dirs = {Path(p).resolve() for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)}
    return sorted(dirs)


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclasses.dataclass(frozen=True)
class Sandbox:
    """A bwrap command line for one agent; see the module docstring."""

    bwrap: str
    read_only: tuple[Path, ...]
    """Host folders visible read-only at the same path (besides the system folders)."""
    hidden: tuple[Path, ...]
    """Folders masked by an empty one wherever they would be visible."""
    pythonpath: str
    """PYTHONPATH inside (the folder holding the `aht_bench` package)."""
    bundle: Bundle | None = None
    """The agent's files, shown at their folder in an otherwise empty one."""
    scratch_size: int = DEFAULT_SCRATCH_SIZE
    shm_size: int = DEFAULT_SHM_SIZE

    @classmethod
    def default(cls, agent_path: Path, hidden: Iterable[Path] = ()) -> Sandbox:
        """The sandbox for the agent file `agent_path`: its bundle (`bundle.agent_bundle`;
        raises its `BundleError`), the Python environment and the package read-only;
        `default_hidden()` and `hidden` masked."""
        masked = tuple(dict.fromkeys([*default_hidden(), *(Path(h).resolve() for h in hidden)]))
        return cls(
            bwrap=bwrap_path(),
            read_only=tuple(dict.fromkeys([*_python_dirs(), _PACKAGE_DIR])),
            hidden=masked,
            pythonpath=str(_PACKAGE_DIR.parent),
            bundle=agent_bundle(agent_path, masked),
        )

    def _bundle_folder(self) -> Path | None:
        """The folder to empty (a fresh tmpfs) before the bundle's files are bound into it:
        the agent's, unless it is / or /tmp (fresh already)."""
        if self.bundle is None:
            return None
        folder = self.bundle.folder
        if folder == Path(folder.anchor) or folder == Path("/tmp"):
            return None
        if any(_is_within(Path(d), folder) or _is_within(folder, Path(d)) for d in _SYSTEM_DIRS):
            raise SandboxUnavailableError(
                f"agent file {folder / next(iter(self.bundle.files))} is in a system folder "
                f"({folder}), which the sandbox cannot empty; move it to a folder of its own"
            )
        return folder

    def wrap(self, argv: Sequence[str], env: dict[str, str] | None = None) -> list[str]:
        """`argv` run inside the sandbox, with `env` (merged over the passed-through variables)
        as its whole environment."""
        args = [
            self.bwrap,
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(self.scratch_size),
            "--tmpfs",
            "/tmp",
            "--size",
            str(self.shm_size),
            "--tmpfs",
            "/dev/shm",
        ]
        folder = self._bundle_folder()
        if folder is not None:  # first: the binds below may lie inside it
            args += ["--tmpfs", str(folder)]
        for d in _SYSTEM_DIRS:
            args += ["--ro-bind-try", d, d]
        for d in self.read_only:
            args += ["--ro-bind", str(d), str(d)]
        if self.bundle is not None:
            for rel, source in self.bundle.files.items():
                args += ["--ro-bind", str(source), str(self.bundle.folder / rel)]
        if folder is not None:
            args += ["--remount-ro", str(folder)]
        # /tmp is a fresh tmpfs, so a host folder under it is visible only through a bind
        # above: masking one that is not would create it (empty) where there was nothing.
        visible = [*self.read_only, *(Path(d) for d in _SYSTEM_DIRS)]
        for h in self.hidden:
            if h.is_dir() and any(_is_within(h, v) for v in visible):
                args += ["--tmpfs", str(h), "--remount-ro", str(h)]
        merged = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
        merged |= {"HOME": "/tmp", "TMPDIR": "/tmp", "PYTHONPATH": self.pythonpath}
        merged |= env or {}
        for key, value in merged.items():
            args += ["--setenv", key, value]
        return [*args, "--chdir", "/tmp", "--", *argv]


def apply_limits(
    memory_bytes: int | None,
    file_bytes: int | None = DEFAULT_SCRATCH_SIZE,
    processes: int | None = None,
) -> None:
    """Bound this process's private memory (RLIMIT_DATA: a MemoryError past it), the size of
    any file it writes (RLIMIT_FSIZE), its core dumps (none) and, with `processes`, the number
    of processes its user may have (RLIMIT_NPROC; the fallback where no cgroup bounds the
    sandbox's tasks). Called by the worker before it imports the agent."""
    import resource

    limits = [(resource.RLIMIT_CORE, 0)]
    if memory_bytes is not None:
        limits.append((resource.RLIMIT_DATA, int(memory_bytes)))
    if processes is not None:
        limits.append((resource.RLIMIT_NPROC, int(processes)))
    if file_bytes is not None:
        limits.append((resource.RLIMIT_FSIZE, int(file_bytes)))
    for which, value in limits:
        try:
            _, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):  # pragma: no cover - a platform without the limit
            pass


__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_SHM_SIZE",
    "Sandbox",
    "SandboxUnavailableError",
    "apply_limits",
    "bwrap_path",
    "default_hidden",
    "shown_bundle",
]
