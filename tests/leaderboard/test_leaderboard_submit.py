"""`aht-bench leaderboard submit` and the CI check (`verify --no-rerun`): a real record goes
in; each kind of tampering is rejected by both with its own message; nothing is half-written;
usage errors exit 2."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from lb_helpers import (
    RECORD,
    REPO,
    TAMPERS,
    ci_check,
    load_record,
    messages,
    rescore,
    returns_of,
    run,
    submit_cli,
    tamper,
    write_json,
)

from aht_bench.leaderboard import Rejected, submit
from aht_bench.leaderboard.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from aht_bench.leaderboard.entries import entry_paths

ENTRY = "random-example--lbf-v1--v1"


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_submit_writes_the_record_unchanged_plus_name_description_and_agent_path(tmp_path):
    result = submit_cli(tmp_path, RECORD)
    assert result.exit_code == EXIT_OK, result.output
    assert "ok: agent file agents/examples/random_agent.py: sha256 matches" in result.output
    path = tmp_path / "entries" / f"{ENTRY}.json"
    entry = json.loads(path.read_text())
    assert entry["leaderboard"] == {
        "name": "random (example)",
        "description": "uniform random",
        "agent_path": "agents/examples/random_agent.py",  # found from the record's meta
    }
    record = load_record()
    assert {k: v for k, v in entry.items() if k != "leaderboard"} == record
    assert _files(tmp_path) == [f"entries/{ENTRY}.json"]
    assert ci_check(path).ok


@pytest.mark.parametrize("kind", sorted(TAMPERS))
def test_submit_rejects_each_tampering_with_its_own_message(tmp_path, kind):
    bad = write_json(tmp_path / "in" / "result.json", tamper(load_record(), kind))
    root = tmp_path / "board"
    result = submit_cli(root, bad)
    assert result.exit_code == EXIT_FAILED, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, errors  # only the targeted check fires (the payload was rehashed)
    assert re.search(TAMPERS[kind], errors[0]), errors[0]
    assert "nothing was written" in result.stderr
    assert not root.exists() or _files(root) == []
    with pytest.raises(Rejected) as caught:
        submit(bad, "x", "y", root=root)
    assert caught.value.report.kinds() == [kind]


@pytest.mark.parametrize("kind", sorted(TAMPERS))
def test_the_ci_check_rejects_each_tampered_entry_with_its_own_message(tmp_path, kind):
    assert submit_cli(tmp_path, RECORD).exit_code == EXIT_OK
    path = tmp_path / "entries" / f"{ENTRY}.json"
    write_json(path, tamper(json.loads(path.read_text()), kind))
    verification = ci_check(path)
    assert verification.report.kinds() == [kind]
    assert re.search(TAMPERS[kind], messages(verification)[0])
    result = run(tmp_path, "verify", "--all", "--no-rerun")
    assert result.exit_code == EXIT_FAILED
    assert re.search(TAMPERS[kind], result.stderr), result.stderr
    assert "verification failed for 1 of 1 entries" in result.stderr


def test_an_edit_without_rehashing_is_also_named_as_a_payload_edit(tmp_path):
    bad = write_json(tmp_path / "result.json", tamper(load_record(), "score", rehash=False))
    with pytest.raises(Rejected) as caught:
        submit(bad, "x", "y", root=tmp_path / "board")
    assert caught.value.report.kinds() == ["score", "payload_hash"]
    assert "payload_sha256 does not match the payload" in str(caught.value)


def test_consistently_forged_bounds_are_caught_against_the_shipped_set(tmp_path):
    record = load_record()
    upper = np.array([m["upper"] for m in record["payload"]["members"]]) * 0.5
    forged = rescore(record, returns_of(record), upper=upper)  # scores double, all consistent
    bad = write_json(tmp_path / "result.json", forged)
    with pytest.raises(Rejected) as caught:
        submit(bad, "x", "y", root=tmp_path / "board")
    assert caught.value.report.kinds() == ["heldout_set"]
    assert "member ippo_mlp_0 has bounds [0.0, 0.236" in str(caught.value)


def test_a_development_set_record_is_refused(tmp_path):
    record = load_record()
    record["payload"]["teammate_set"] |= {"version": "dev", "development_set": True}
    bad = write_json(tmp_path / "result.json", record)
    result = submit_cli(tmp_path / "board", bad)
    assert result.exit_code == EXIT_FAILED
    assert "takes published heldout sets only (v1, v2)" in result.stderr


def test_a_schema_error_names_the_field(tmp_path):
    record = load_record()
    record["payload"]["members"][1]["returns"]["0"] = [0.0]
    del record["payload"]["aggregates"]["iqm"]
    bad = write_json(tmp_path / "result.json", record)
    result = submit_cli(tmp_path / "board", bad)
    assert result.exit_code == EXIT_FAILED
    assert "payload.aggregates.iqm is missing" in result.stderr
    assert "payload.members[1].returns['0'] should be 2 numbers (protocol.episodes)" in (
        result.stderr
    )


def test_an_existing_entry_is_replaced_only_with_replace(tmp_path):
    assert submit_cli(tmp_path, RECORD).exit_code == EXIT_OK
    again = submit_cli(tmp_path, RECORD, "Random (Example)")  # the same slug
    assert again.exit_code == EXIT_USAGE
    assert "already exists" in again.output and "--replace" in again.output
    replaced = submit_cli(tmp_path, RECORD, "Random (Example)", "--replace")
    assert replaced.exit_code == EXIT_OK, replaced.output
    [path] = entry_paths(tmp_path)
    assert json.loads(path.read_text())["leaderboard"]["name"] == "Random (Example)"


def test_an_agent_outside_the_repository_gets_the_checks_only(tmp_path):
    agent = tmp_path / "random_agent.py"
    shutil.copy(REPO / "agents/examples/random_agent.py", agent)
    result = submit_cli(tmp_path / "board", RECORD, "random (example)", "--agent", str(agent))
    assert result.exit_code == EXIT_OK, result.output
    assert "is not in this repository: schema, score and hash checks only" in result.output
    verify = run(tmp_path / "board", "verify", ENTRY)
    assert verify.exit_code == EXIT_OK, verify.output
    assert "not re-run: the agent file random_agent.py is not in this repository" in verify.output

    agent.write_text(agent.read_text() + "# changed\n")
    result = submit_cli(tmp_path / "other", RECORD, "x", "--agent", str(agent))
    assert result.exit_code == EXIT_FAILED
    assert "agent hash mismatch" in result.stderr and "is not the file" in result.stderr


def test_usage_errors_exit_2(tmp_path):
    not_json = tmp_path / "x.json"
    not_json.write_text("{")
    result = submit_cli(tmp_path, not_json)
    assert result.exit_code == EXIT_USAGE and "is not valid JSON" in result.output
    other = write_json(tmp_path / "y.json", {"format": "something else"})
    result = submit_cli(tmp_path, other)
    assert result.exit_code == EXIT_USAGE and "is not an aht-bench result record" in result.output
    result = submit_cli(tmp_path, RECORD, "  ")
    assert result.exit_code == EXIT_USAGE and "--name" in result.output
    result = submit_cli(tmp_path, RECORD, "!!!")
    assert result.exit_code == EXIT_USAGE and "has no letter or digit" in result.output
    result = run(tmp_path, "verify", "no-such-entry")
    assert (
        result.exit_code == EXIT_USAGE and "no leaderboard entry 'no-such-entry'" in result.output
    )
    assert run(tmp_path, "verify").exit_code == EXIT_USAGE
    result = run(tmp_path, "verify", "--all", "--episodes", "0")
    assert result.exit_code == EXIT_USAGE and "--episodes" in result.output
    assert _files(tmp_path) == ["x.json", "y.json"]


def test_verify_refuses_a_plain_result_record(tmp_path):
    result = run(tmp_path, "verify", "--no-rerun", str(RECORD))
    assert result.exit_code == EXIT_FAILED
    assert "leaderboard is missing" in result.stderr
    assert "submit the result record again with `aht-bench leaderboard submit`" in result.stderr


def test_an_entry_is_still_a_result_record_for_compare(tmp_path):
    assert submit_cli(tmp_path, RECORD).exit_code == EXIT_OK
    from click.testing import CliRunner

    from aht_bench.cli import main

    path = tmp_path / "entries" / f"{ENTRY}.json"
    result = CliRunner().invoke(main, ["compare", str(path), "--no-plot"])
    assert result.exit_code == 0, result.output
    assert "random_agent.py" in result.output


def test_an_agent_path_of_another_checkout_on_this_machine_matches_by_its_tail(tmp_path):
    from aht_bench.leaderboard.entries import locate_agent, repo_root

    other = tmp_path / "other-checkout" / "agents" / "examples" / "random_agent.py"
    other.parent.mkdir(parents=True)
    other.write_text("# another checkout's copy\n")
    assert locate_agent(str(other), repo_root()) == "agents/examples/random_agent.py"
    assert locate_agent(str(tmp_path / "other-checkout" / "nothing.py"), repo_root()) is None


def _git_repo(folder, ignore):
    import subprocess

    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / ".gitignore").write_text(ignore)
    return folder


def test_an_agent_file_in_a_folder_git_ignores_is_refused(tmp_path):
    """A clean clone has no sweeps/ or runs/: an entry pointing there could not be re-run by CI
    (twelve v2 reference entries once named their sweep's copies and failed CI's render check)."""
    repo = _git_repo(tmp_path / "repo", "/sweeps/\n")
    for folder in ("sweeps/run", "agents/mine"):
        (repo / folder).mkdir(parents=True)
        shutil.copy(REPO / "agents/examples/random_agent.py", repo / folder / "random_agent.py")
    with pytest.raises(Rejected) as refused:
        submit(RECORD, "random (example)", "x", agent=repo / "sweeps/run/random_agent.py",
               root=tmp_path / "board", repo=repo)  # fmt: skip
    text = "\n".join(p.message for p in refused.value.report.problems)
    assert "sweeps/run/random_agent.py is in a folder git ignores" in text
    assert "agents/<name>/" in text
    assert not (tmp_path / "board").exists() or not list((tmp_path / "board").rglob("*.json"))

    path, entry, _ = submit(RECORD, "random (example)", "x",
                            agent=repo / "agents/mine/random_agent.py",
                            root=tmp_path / "board", repo=repo)  # fmt: skip
    assert entry["leaderboard"]["agent_path"] == "agents/mine/random_agent.py"
    assert path.is_file()


def test_git_ignored_names_only_ignored_paths_and_nothing_outside_a_checkout(tmp_path):
    from aht_bench.leaderboard.entries import git_ignored

    repo = _git_repo(tmp_path / "repo", "/sweeps/\n*.tmp\n")
    names = ["sweeps/a/b.safetensors", "agents/a.py", "agents/x.tmp"]
    assert git_ignored(names, repo) == ["sweeps/a/b.safetensors", "agents/x.tmp"]
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".gitignore").write_text("/sweeps/\n")
    assert git_ignored(names, plain) == []
