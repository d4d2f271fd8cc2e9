"""Adversarial agent files against the sandbox (issue 28): what each tries, and that it fails.

Each agent is written into its own temporary folder and evaluated through the command line on
a one-member LBF set, as a submitter's agent would be. The sandbox is bubblewrap
(`aht_bench.policies.sandbox`); these tests need `bwrap`, which `make install` installs.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from corpus_cases import write_one_member_lbf_set

from aht_bench.cli import EXIT_AGENT_LOAD, EXIT_AGENT_RUNTIME, EXIT_OK, main
from aht_bench.policies import sandbox

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the bubblewrap sandbox is Linux-only"
)


@pytest.fixture(scope="module")
def lbf_set(tmp_path_factory) -> Path:
    return write_one_member_lbf_set(tmp_path_factory.mktemp("lbf_set"), "lbf-v1/sandbox-test")


def _agent(tmp_path: Path, name: str, body: str) -> Path:
    folder = tmp_path / f"agent-{name}"
    folder.mkdir()
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


def _evaluate_args(agent: Path, lbf_set: Path, out: Path, *extra: str) -> list[str]:
    return [
        "evaluate", str(agent), "--task", "lbf-v1", "--teammates", str(lbf_set),
        "--episodes", "2", "--reps", "100", "--out", str(out), "--no-plot", "--no-progress",
        *extra,
    ]  # fmt: skip


def _returns(out: Path) -> list[float]:
    """Every episode's return in the record `out`, member by member, seating by seating."""
    members = json.loads(out.read_text())["payload"]["members"]
    return [r for m in members for seating in sorted(m["returns"]) for r in m["returns"][seating]]


def _processes_mentioning(marker: str) -> list[int]:
    """Live processes whose command line or environment holds `marker`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            text = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in text:
            found.append(int(d.name))
    return found


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


ZERO = """
def act(obs):
    return 0
"""


def test_bwrap_is_available_here():
    """Every other test here needs it; CI installs it (Makefile)."""
    assert sandbox.bwrap_path()


def test_an_agent_that_patches_the_evaluator_does_not_change_its_score(tmp_path, lbf_set):
    """The forgery: at import, replace the runners by ones that return the upper bound."""
    patch = _agent(
        tmp_path,
        "patcher",
        """
        import numpy as np
        import aht_bench.evaluation.evaluate as ev
        import aht_bench.evaluation.gym_runner as gr
        def forged(make_agent, eval_set, num_episodes, *args, **kwargs):
            return np.full((eval_set.teammates.size, len(eval_set.seatings), num_episodes), 0.5)
        ev.play_python = gr.play_python = forged
        ev._play_jax = lambda *a, **k: forged(None, a[2], a[3], None)
        def act(obs):
            return 0
        """,
    )
    zero = _agent(tmp_path, "zero", ZERO)
    runner = CliRunner()
    for agent in (patch, zero):
        out = tmp_path / f"{agent.stem}.json"
        result = runner.invoke(main, _evaluate_args(agent, lbf_set, out), catch_exceptions=False)
        assert result.exit_code == EXIT_OK, result.output
    assert _returns(tmp_path / "patcher.json") == _returns(tmp_path / "zero.json")
    assert max(_returns(tmp_path / "patcher.json")) < 0.5
    record = json.loads((tmp_path / "patcher.json").read_text())
    assert record["payload"]["agent"]["isolation"] == "sandbox"


def test_in_process_the_same_patch_forges_the_score_and_the_record_says_in_process(
    tmp_path, lbf_set
):
    """Why in-process is for trusted code only: the forgery works there, and the record
    carries the mark the leaderboard refuses. A child process, so the patch dies with it."""
    patch = _agent(
        tmp_path,
        "patcher",
        """
        import numpy as np
        import aht_bench.evaluation.evaluate as ev
        def forged(make_agent, eval_set, num_episodes, *args, **kwargs):
            return np.full((eval_set.teammates.size, len(eval_set.seatings), num_episodes), 0.5)
        ev.play_python = forged
        def act(obs):
            return 0
        """,
    )
    out = tmp_path / "forged.json"
    args = _evaluate_args(patch, lbf_set, out, "--in-process")
    done = subprocess.run(
        [sys.executable, "-m", "aht_bench.cli", *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == EXIT_OK, done.stderr
    assert set(_returns(out)) == {0.5}
    assert json.loads(out.read_text())["payload"]["agent"]["isolation"] == "in-process"


def test_a_detached_daemon_dies_with_the_agent_and_cannot_write(tmp_path, lbf_set):
    target = tmp_path / "owned-by-the-daemon"
    daemon = _agent(
        tmp_path,
        "daemon",
        f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                for _ in range(600):
                    try:
                        open({str(target)!r}, "w").write("written by a daemon")
                    except OSError:
                        pass
                    try:  # the forgery: rewrite the evaluator's --out, found in its argv
                        parent = open(f"/proc/{{os.getppid()}}/cmdline").read()
                    except OSError:
                        pass
                    time.sleep(0.1)
                os._exit(0)
            os._exit(0)
        def act(obs):
            return 0
        """,
    )
    out = tmp_path / "daemon.json"
    result = CliRunner().invoke(main, _evaluate_args(daemon, lbf_set, out), catch_exceptions=False)
    assert result.exit_code == EXIT_OK, result.output
    written = out.read_bytes()
    time.sleep(1.0)
    assert _processes_mentioning(str(daemon)) == []
    assert not target.exists()
    assert out.read_bytes() == written


def test_an_agent_that_ignores_sigterm_and_hangs_is_stopped_and_reaped(tmp_path, lbf_set):
    stubborn = _agent(
        tmp_path,
        "stubborn",
        """
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        def act(obs):
            while True:
                pass
        """,
    )
    out = tmp_path / "stubborn.json"
    args = _evaluate_args(stubborn, lbf_set, out, "--step-timeout", "1")
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == EXIT_AGENT_RUNTIME, result.output
    assert "step timeout" in result.stderr
    assert not out.exists()
    assert _processes_mentioning(str(stubborn)) == []


def test_an_agent_that_floods_its_output_is_cut_at_the_output_bound(tmp_path, lbf_set):
    flood = _agent(
        tmp_path,
        "flood",
        """
        import sys
        line = "x" * 1023 + "\\n"
        def act(obs):
            for _ in range(4096):  # 4 MiB per step
                sys.stdout.write(line)
            return 0
        """,
    )
    out = tmp_path / "flood.json"
    args = _evaluate_args(flood, lbf_set, out, "--agent-output", "--episodes", "1")
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == EXIT_OK, result.output[-2000:]
    assert "agent output past 1048576 bytes not shown" in result.stderr
    assert len(result.stderr) < 1_100_000
    quiet = CliRunner().invoke(
        main, _evaluate_args(flood, lbf_set, tmp_path / "quiet.json", "--episodes", "1")
    )
    assert quiet.exit_code == EXIT_OK and "xxxx" not in quiet.output


def test_an_agent_sees_no_heldout_set_no_leaderboard_and_cannot_write_or_connect(tmp_path, lbf_set):
    heldout, board = REPO / "heldout", REPO / "leaderboard"
    before = (_tree_digest(heldout), _tree_digest(board))
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    snoop = _agent(
        tmp_path,
        "snoop",
        f"""
        import os, socket, sys
        seen = {{}}
        for root in ({str(heldout)!r}, {str(board)!r}, {str(REPO)!r}, os.path.expanduser("~")):
            try:
                seen[root] = sorted(os.listdir(root))
            except OSError as e:
                seen[root] = type(e).__name__
        wrote = []
        for target in ({str(heldout / "pwned")!r}, {str(board / "pwned")!r}):
            try:
                open(target, "w").write("x")
                wrote.append(target)
            except OSError:
                pass
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
            connected = True
        except OSError:
            connected = False
        print("SNOOP", repr(seen), "WROTE", wrote, "CONNECTED", connected, file=sys.stderr)
        def act(obs):
            return 0
        """,
    )
    out = tmp_path / "snoop.json"
    args = _evaluate_args(snoop, lbf_set, out, "--agent-output", "--episodes", "1")
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    server.close()
    assert result.exit_code == EXIT_OK, result.output
    line = next(x for x in result.stderr.splitlines() if x.startswith("SNOOP"))
    seen = eval(line.split("SNOOP ", 1)[1].split(" WROTE")[0])  # noqa: S307 - our own repr
    # not there at all (the agent's folder is outside the checkout) or masked empty
    assert seen[str(heldout)] in ([], "FileNotFoundError")
    assert seen[str(board)] in ([], "FileNotFoundError")
    assert seen[str(REPO)] in (["aht_bench"], [".venv", "aht_bench"])
    assert "WROTE [] CONNECTED False" in line
    assert (_tree_digest(heldout), _tree_digest(board)) == before


LOOK_AROUND = """
import os, sys
here = os.path.dirname(os.path.abspath(__file__))
seen = {}
for what, where in (("HERE", here), ("GIT", os.path.join(here, ".git")),
                    ("HELDOUT", os.path.join(here, "heldout")), ("SECRET", SECRET)):
    try:
        seen[what] = sorted(os.listdir(where)) if os.path.isdir(where) else open(where).read()
    except OSError as e:
        seen[what] = type(e).__name__
print("SEEN", repr(seen), file=sys.stderr)
def act(obs):
    return 0
"""


def _look_around(agent: Path, secret: Path) -> dict:
    """What the agent file `agent` (written with LOOK_AROUND) saw of its folder, through
    check-agent."""
    agent.write_text(f"SECRET = {str(secret)!r}\n" + LOOK_AROUND)
    args = ["check-agent", str(agent), "--task", "lbf-v1", "--agent-output", "--steps", "3"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == EXIT_OK, result.output
    line = next(x for x in result.stderr.splitlines() if x.startswith("SEEN"))
    return eval(line.split("SEEN ", 1)[1])  # noqa: S307 - our own repr


def test_an_agent_at_the_checkout_root_sees_no_git_no_heldout_and_no_other_file():
    """Issue 52, attack 5: an agent file at the checkout root read every heldout weight through
    .git (`git show HEAD:heldout/...`). Its bundle is the file alone; the package and the
    environment it runs on show beside it (read-only), nothing else of the checkout."""
    agent = REPO / f"snoop_agent_{os.getpid()}.py"
    try:
        seen = _look_around(agent, REPO / "README.md")
    finally:
        agent.unlink()
    assert set(seen["HERE"]) <= {agent.name, "aht_bench", ".venv"}, seen["HERE"]
    assert agent.name in seen["HERE"]
    assert seen["GIT"] == seen["HELDOUT"] == seen["SECRET"] == "FileNotFoundError"


def test_an_agent_in_the_home_folder_sees_no_other_file_of_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    secret = home / "other_users_notes.txt"
    secret.write_text("private")
    monkeypatch.setenv("HOME", str(home))
    seen = _look_around(home / "snoop.py", secret)
    assert seen["HERE"] == ["snoop.py"]
    assert seen["GIT"] == seen["SECRET"] == "FileNotFoundError"


def test_an_agent_in_the_temp_folder_sees_no_other_file_of_it():
    import tempfile

    temp = Path(tempfile.gettempdir())
    secret = temp / f"someone_elses_{os.getpid()}.txt"
    agent = temp / f"snoop_agent_{os.getpid()}.py"
    secret.write_text("private")
    try:
        seen = _look_around(agent, secret)
    finally:
        agent.unlink(missing_ok=True)
        secret.unlink()
    # The package and the Python environment the agent runs on show read-only at their own
    # paths, as beside an agent at the checkout root: a checkout under the temp folder (a clone
    # in /tmp) shows its top folder, holding those two and nothing else of the checkout.
    bound = sandbox.Sandbox.default(REPO / "agents" / "examples" / "random_agent.py").read_only
    real_temp = temp.resolve()
    runs_on = {d.relative_to(real_temp).parts[0] for d in bound if d.is_relative_to(real_temp)}
    assert set(seen["HERE"]) <= {agent.name, *runs_on}, seen["HERE"]
    assert agent.name in seen["HERE"]
    assert seen["SECRET"] == "FileNotFoundError"


def test_an_agent_in_its_own_folder_sees_its_files_but_no_dot_files_and_no_results(tmp_path):
    """results/ is where `evaluate` writes records by default: evaluating from the agent's
    folder does not change its bundle."""
    folder = tmp_path / "mine"
    (folder / "helpers").mkdir(parents=True)
    (folder / "helpers" / "table.txt").write_text("1 2 3")
    (folder / "results" / "snoop").mkdir(parents=True)
    (folder / "results" / "snoop" / "lbf-v1.json").write_text("{}")
    (folder / ".cache").mkdir()
    (folder / ".cache" / "key").write_text("x")
    (folder / ".env").write_text("TOKEN=x")
    seen = _look_around(folder / "snoop.py", folder / ".env")
    assert seen["HERE"] == ["helpers", "snoop.py"]
    assert seen["SECRET"] == "FileNotFoundError"


def test_a_declared_bundle_is_exactly_what_the_agent_sees(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"w")
    (folder / "unrelated.bin").write_bytes(b"u")
    agent = folder / "snoop.py"
    agent.write_text(f"BUNDLE = ['weights.bin']\nSECRET = {str(folder / 'unrelated.bin')!r}\n")
    agent.write_text(agent.read_text() + LOOK_AROUND)
    args = ["check-agent", str(agent), "--task", "lbf-v1", "--agent-output", "--steps", "3"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == EXIT_OK, result.output
    line = next(x for x in result.stderr.splitlines() if x.startswith("SEEN"))
    seen = eval(line.split("SEEN ", 1)[1])  # noqa: S307 - our own repr
    assert seen["HERE"] == ["snoop.py", "weights.bin"] and seen["SECRET"] == "FileNotFoundError"


def test_a_bundle_that_cannot_be_made_stops_evaluate_naming_the_fix(tmp_path, lbf_set):
    agent = _agent(tmp_path, "declares", "BUNDLE = ['missing.bin']\n" + ZERO)
    out = tmp_path / "declares.json"
    result = CliRunner().invoke(main, _evaluate_args(agent, lbf_set, out))
    assert result.exit_code == EXIT_AGENT_LOAD, result.output
    assert "BUNDLE entry 'missing.bin' does not exist" in result.output
    assert not out.exists()


def test_the_record_pins_the_bundle_the_sandbox_showed(tmp_path, lbf_set):
    agent = _agent(tmp_path, "zero", ZERO)
    (agent.parent / "weights.bin").write_bytes(b"w")
    out = tmp_path / "zero.json"
    result = CliRunner().invoke(main, _evaluate_args(agent, lbf_set, out))
    assert result.exit_code == EXIT_OK, result.output
    bundle = json.loads(out.read_text())["payload"]["agent"]["bundle"]
    assert bundle == sandbox.shown_bundle(agent).summary() and bundle["files"] == 2
    (agent.parent / "weights.bin").write_bytes(b"x")
    assert sandbox.shown_bundle(agent).sha256() != bundle["sha256"]


def test_check_agent_runs_the_agent_in_the_sandbox(tmp_path):
    snoop = _agent(
        tmp_path,
        "snoop",
        f"""
        import os, sys
        print("HELDOUT", os.path.exists({str(REPO / "heldout")!r}), file=sys.stderr)
        def act(obs):
            return 0
        """,
    )
    args = ["check-agent", str(snoop), "--task", "lbf-v1", "--agent-output", "--steps", "3"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == EXIT_OK, result.output
    assert "HELDOUT False" in result.stderr and "sandboxed in process" in result.stdout


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_evaluate_leaves_no_agent_process(tmp_path, lbf_set, sig):
    slow = _agent(
        tmp_path,
        "slow",
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(600)
            os._exit(0)
        def act(obs):
            time.sleep(0.2)
            return 0
        """,
    )
    out = tmp_path / "slow.json"
    args = _evaluate_args(slow, lbf_set, out, "--step-timeout", "30", "--episodes", "4")
    proc = subprocess.Popen(
        [sys.executable, "-m", "aht_bench.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    while not _processes_mentioning(str(slow)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _processes_mentioning(str(slow)), "the agent never started"
    time.sleep(2.0)  # the agent is loaded and playing
    proc.send_signal(sig)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 10
    while _processes_mentioning(str(slow)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_mentioning(str(slow)) == []
    assert not out.exists()


def test_without_bwrap_evaluate_stops_with_exit_2_naming_the_fix(tmp_path, lbf_set, monkeypatch):
    zero = _agent(tmp_path, "zero", ZERO)
    out = tmp_path / "zero.json"
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    sandbox.bwrap_path.cache_clear()
    try:
        result = CliRunner().invoke(main, _evaluate_args(zero, lbf_set, out))
    finally:
        sandbox.bwrap_path.cache_clear()
    assert result.exit_code == 2, result.output
    assert "bubblewrap (bwrap), which is not on PATH" in result.stderr
    assert "apt-get install bubblewrap" in result.stderr and "--no-sandbox" in result.stderr
    assert not out.exists()
