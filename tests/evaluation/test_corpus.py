"""Every file of the bad-agent corpus (tests/agent_corpus) through `aht-bench evaluate`: its own
message and exit code, no traceback, no result file, no worker process left behind.

Isolated (`--isolate`) for every file; in this process (the default) for the files that cannot
take the test process down. The teammate set is a one-member LBF set written to a temporary
folder, so the test does not depend on the shipped development sets.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from corpus_cases import CORPUS, FAILURES, UNSAFE_IN_PROCESS, WORKER, write_one_member_lbf_set

from aht_bench.cli import EXIT_OK, main

CASES = FAILURES | {"good_prints.py": (EXIT_OK, ["aggregate over 1 member x", "wrote"])}


@pytest.fixture(scope="module")
def lbf_set(tmp_path_factory) -> Path:
    return write_one_member_lbf_set(tmp_path_factory.mktemp("lbf_set"), "lbf-v1/corpus-test")


def _worker_pids(agent_file: Path) -> list[int]:
    """Live processes running a worker for `agent_file` (its path is in the worker's argv)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if WORKER in argv and str(agent_file).encode() in argv:
            pids.append(int(d.name))
    return pids


def _zombie_children() -> list[int]:
    me, found = os.getpid(), []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z" and int(fields[1]) == me:
            found.append(int(d.name))
    return found


def test_the_cases_cover_the_whole_corpus():
    assert sorted(p.name for p in CORPUS.glob("*.py")) == sorted(CASES)


def _evaluate(name: str, lbf_set: Path, out: Path, *extra: str):
    args = [
        "evaluate", str(CORPUS / name), "--task", "lbf-v1", "--teammates", str(lbf_set),
        "--episodes", "1", "--reps", "100", "--out", str(out), "--no-plot", "--no-progress",
        *extra,
    ]  # fmt: skip
    return CliRunner().invoke(main, args, catch_exceptions=False)


def _check(result, code: int, needles: list[str], name: str, out: Path) -> None:
    assert result.exit_code == code, result.output
    text = result.stdout if code == EXIT_OK else result.stderr
    for needle in needles:
        assert needle in text, (needle, result.output)
    assert "Traceback" not in result.output
    if code != EXIT_OK:
        assert result.stderr.startswith("error: ") and name in result.stderr
        assert not out.exists()
    else:
        assert out.exists()


@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_file_through_evaluate_isolated(name, lbf_set, tmp_path):
    code, needles = CASES[name]
    out = tmp_path / "r.json"
    load_timeout = "3" if name == "hang_import.py" else "20"
    result = _evaluate(
        name, lbf_set, out, "--isolate", "--load-timeout", load_timeout, "--step-timeout", "1"
    )
    _check(result, code, needles, name, out)
    assert _worker_pids(CORPUS / name) == [] and _zombie_children() == []


@pytest.mark.parametrize("name", sorted(set(CASES) - UNSAFE_IN_PROCESS))
def test_corpus_file_through_evaluate_in_process(name, lbf_set, tmp_path):
    code, needles = CASES[name]
    out = tmp_path / "r.json"
    _check(_evaluate(name, lbf_set, out), code, needles, name, out)
