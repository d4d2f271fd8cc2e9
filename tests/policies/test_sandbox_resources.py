"""Resources per sandbox, not per process (issue 52, item 3): memory in /dev/shm, /tmp and child
processes counted together, a fork loop stopped at the task limit, CPU bounded.

Each attack is an agent file evaluated through the command line, as a submitter's would be. What
the agent managed to hold it measures itself and prints (`--agent-output`). These need a kernel
that lets the evaluator make cgroups (CI runs as root); elsewhere they are skipped, and
`test_without_cgroups_the_limits_are_per_process_and_say_so` checks the fallback.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from corpus_cases import write_one_member_lbf_set

from aht_bench.cli import EXIT_OK, main
from aht_bench.policies import cgroups
from aht_bench.policies.isolated import IsolatedAgent

MiB = 1024**2


def _cgroups_here() -> bool:
    group = cgroups.AgentCgroup.create(64 * MiB)
    if group is None:
        return False
    group.close()
    return True


needs_cgroups = pytest.mark.skipif(
    sys.platform != "linux" or not _cgroups_here(),
    reason=f"cgroups cannot be made here ({cgroups.unavailable_reason()})",
)


@pytest.fixture(scope="module")
def lbf_set(tmp_path_factory) -> Path:
    return write_one_member_lbf_set(tmp_path_factory.mktemp("lbf_set"), "lbf-v1/resources-test")


def _agent(tmp_path: Path, name: str, body: str) -> Path:
    folder = tmp_path / f"agent-{name}"
    folder.mkdir()
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


def _evaluate(agent: Path, lbf_set: Path, out: Path, *extra: str):
    args = [
        "evaluate", str(agent), "--task", "lbf-v1", "--teammates", str(lbf_set),
        "--episodes", "1", "--reps", "100", "--out", str(out), "--no-plot", "--no-progress",
        "--agent-output", *extra,
    ]  # fmt: skip
    return CliRunner().invoke(main, args, catch_exceptions=False)


HOARD = """
import os, sys, time

CHUNK = 8 * 1024 * 1024
held = {"shm": 0, "tmp": 0}
for where, folder in (("shm", "/dev/shm"), ("tmp", "/tmp")):
    try:
        with open(os.path.join(folder, "hoard"), "wb") as f:
            for _ in range(600 * 1024 * 1024 // CHUNK):
                f.write(b"x" * CHUNK)
                f.flush()
                held[where] += CHUNK
    except OSError:
        pass

kids = []
for _ in range(4):  # each child holds 400 MB of private memory, under the per-process limit
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            block = bytearray(400 * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            os.write(w, b"1")
        except MemoryError:
            os.write(w, b"0")
        time.sleep(600)
        os._exit(0)
    os.close(w)
    kids.append((pid, r))
allocated = [os.read(r, 1) == b"1" for pid, r in kids]
time.sleep(1.0)
alive = [ok and os.waitpid(pid, os.WNOHANG) == (0, 0) for (pid, r), ok in zip(kids, allocated)]
total = held["shm"] + held["tmp"] + 400 * 1024 * 1024 * sum(alive)
print(f"HOARD shm={held['shm']} tmp={held['tmp']} kids_alive={sum(alive)} total={total}",
      file=sys.stderr, flush=True)
for pid, _ in kids:
    try:
        os.kill(pid, 9)
    except OSError:
        pass

def act(obs):
    return 0
"""


@needs_cgroups
def test_shm_tmp_and_children_together_stay_under_the_memory_limit(tmp_path, lbf_set):
    """Before: 600 MB in /dev/shm (a tmpfs of half the host) and 1.6 GB in four children under
    --memory-limit 0.5. Now the sandbox's cgroup counts them all: the agent holds at most 0.5 GiB
    at once, or is killed for memory with a message that says so."""
    out = tmp_path / "hoard.json"
    result = _evaluate(_agent(tmp_path, "hoard", HOARD), lbf_set, out, "--memory-limit", "0.5")
    line = re.search(r"HOARD shm=(\d+) tmp=(\d+) kids_alive=(\d+) total=(\d+)", result.stderr)
    if result.exit_code == EXIT_OK:
        assert line is not None, result.stderr[-2000:]
        shm, tmp, _, total = map(int, line.groups())
        assert shm <= 64 * MiB  # the sandbox's /dev/shm is sized
        assert total <= 512 * MiB, line.group(0)
    else:  # the OOM killer ended the worker: named, with the fix
        assert "memory limit of 0.5 GiB" in result.stderr, result.stderr[-2000:]
        assert not out.exists()


FORK_LOOP = """
import os, sys, time
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
"""


@needs_cgroups
def test_a_fork_loop_stops_at_the_task_limit_and_the_evaluation_goes_on(tmp_path, lbf_set):
    """Before: as root RLIMIT_NPROC does not apply and the loop forked thousands. Now the pids
    controller stops it at the sandbox's task limit (threads included), and nothing is left."""
    out = tmp_path / "forks.json"
    result = _evaluate(_agent(tmp_path, "forks", FORK_LOOP), lbf_set, out)
    assert result.exit_code == EXIT_OK, result.output[-2000:]
    forks = re.search(r"FORKS (\d+) (stopped|not stopped)", result.stderr)
    assert forks is not None and forks.group(2) == "stopped", result.stderr[-2000:]
    assert int(forks.group(1)) < cgroups.DEFAULT_MAX_TASKS
    assert not list(_own_cgroups())


def _own_cgroups() -> list[Path]:
    """cgroups the evaluators of this test process made and left behind."""
    import os

    pattern = f"{cgroups._PREFIX}{os.getpid()}-*"
    return [p for mount in Path("/sys/fs/cgroup").iterdir() for p in mount.rglob(pattern)]


SPIN = """
import os, sys, threading, time

def spin(stop):
    while time.monotonic() < stop:
        pass

t0, c0 = time.monotonic(), time.process_time()
stop = t0 + 2.0
threads = [threading.Thread(target=spin, args=(stop,)) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
cpu = time.process_time() - c0
print(f"SPIN cpu={cpu:.2f} wall={time.monotonic() - t0:.2f}", file=sys.stderr, flush=True)

def act(obs):
    return 0
"""


@needs_cgroups
def test_cpu_is_bounded_for_the_sandbox(tmp_path):
    """Four busy threads for 2 s of wall time get at most about `cpus` cores' worth (the CFS
    quota), not every core of the machine."""
    agent = _agent(tmp_path, "spin", SPIN)
    with IsolatedAgent(agent, "lbf-v1", cpus=0.5, echo_output=False) as worker:
        worker.close()
        text = worker.stderr_tail()
    match = re.search(r"SPIN cpu=([\d.]+) wall=([\d.]+)", text)
    assert match is not None, text
    cpu, wall = map(float, match.groups())
    assert cpu <= 0.5 * wall + 0.3, match.group(0)


def test_without_cgroups_the_limits_are_per_process_and_say_so(tmp_path, monkeypatch):
    """Where no cgroup can be made, the agent still runs, bounded per process (RLIMIT_DATA,
    RLIMIT_NPROC), and `limits` says so with the reason."""
    monkeypatch.setattr(cgroups.AgentCgroup, "create", classmethod(lambda cls, *a, **k: None))
    monkeypatch.setattr(cgroups, "_reason", "no cgroupfs in this test")
    agent = _agent(tmp_path, "zero", "def act(obs):\n    return 0\n")
    with IsolatedAgent(agent, "lbf-v1") as worker:
        assert worker.act(worker_obs(worker)) == 0
        assert worker.limits == "per process (no cgroupfs in this test)"


def worker_obs(worker: IsolatedAgent):
    import numpy as np

    return np.zeros(worker.spec.obs_dim, np.float32)


def test_cgroup_v2_limits_are_written_where_the_parent_delegates(tmp_path):
    """The v2 path against a fake cgroupfs (this CI machine has v1): the folder gets memory.max,
    no swap, pids.max and cpu.max, and is removed on close."""
    root = tmp_path / "unified"
    own = root / "user.slice"
    own.mkdir(parents=True)
    (own / "cgroup.subtree_control").write_text("memory pids cpu\n")
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text("0::/user.slice\n")
    (proc / "mountinfo").write_text(
        f"30 25 0:26 / {root} rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
    )

    real_mkdir = Path.mkdir

    def mkdir_with_files(self, *a, **k):  # the kernel creates a cgroup's files with it
        real_mkdir(self, *a, **k)
        for name in ("memory.max", "memory.swap.max", "pids.max", "cpu.max", "cgroup.procs"):
            (self / name).write_text("max\n")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "mkdir", mkdir_with_files)
        group = cgroups.AgentCgroup.create(256 * MiB, 100, 1.5, proc=proc)
    assert group is not None and group.version == 2, cgroups.unavailable_reason()
    folder = group.folders["memory"]
    assert folder.parent == own
    assert (folder / "memory.max").read_text() == str(256 * MiB)
    assert (folder / "memory.swap.max").read_text() == "0"
    assert (folder / "pids.max").read_text() == "100"
    assert (folder / "cpu.max").read_text() == "150000 100000"
    assert group.enter(["true"])[-2:] == ["--", "true"]
    for name in ("memory.max", "memory.swap.max", "pids.max", "cpu.max", "cgroup.procs"):
        (folder / name).unlink()  # rmdir of a real cgroup ignores its files
    group.close()
    assert not folder.exists()


def test_cgroup_v2_without_delegation_is_unavailable_with_the_reason(tmp_path):
    root = tmp_path / "unified"
    own = root / "app.slice"
    own.mkdir(parents=True)
    control = own / "cgroup.subtree_control"
    control.write_text("")
    control.chmod(0o444)
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text("0::/app.slice\n")
    (proc / "mountinfo").write_text(f"30 25 0:26 / {root} rw - cgroup2 cgroup2 rw\n")
    import os

    if os.geteuid() == 0:  # root writes a read-only file: make the write fail as the kernel would
        control.chmod(0o644)
        control.unlink()
        control.mkdir()  # writing to a folder fails with IsADirectoryError (an OSError)
    assert cgroups.AgentCgroup.create(256 * MiB, proc=proc) is None
    assert "does not delegate memory, pids, cpu" in cgroups.unavailable_reason()
