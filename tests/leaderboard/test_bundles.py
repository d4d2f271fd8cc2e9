"""An entry pins its agent's whole bundle (issue 52, item 4 and attack 6): the files the sandbox
shows the agent (`policies.bundle`), not just the agent file. A weight or helper file beside
the agent changed under an entry is refused by the checks (the record names the bundle) or
unranks the entry (the verifier's ledger line names the bundle its re-run ran)."""

from __future__ import annotations

import copy
import shutil

from lb_helpers import REPO, load_record

from aht_bench.evaluation.record import payload_sha256
from aht_bench.leaderboard.checks import check_entry
from aht_bench.leaderboard.entries import make_entry
from aht_bench.policies.sandbox import shown_bundle

AGENT = "agents/mine/random_agent.py"


def _repo_with_agent(tmp_path):
    """A repository holding a copy of the record's agent file and a weight file beside it."""
    repo = tmp_path / "repo"
    (repo / "agents" / "mine").mkdir(parents=True)
    shutil.copy(REPO / "agents" / "examples" / "random_agent.py", repo / AGENT)
    (repo / "agents" / "mine" / "weights.bin").write_bytes(b"trained")
    return repo


def _entry(record, repo):
    record = copy.deepcopy(record)
    record["payload"]["agent"]["bundle"] = shown_bundle(repo / AGENT).summary()
    record["payload_sha256"] = payload_sha256(record["payload"])
    return make_entry(record, "mine", "uniform random, with a weight file", AGENT)


def test_an_entry_whose_bundle_is_unchanged_passes(tmp_path):
    repo = _repo_with_agent(tmp_path)
    report = check_entry(_entry(load_record(), repo), repo=repo)
    assert report.ok, report.problems
    assert any("bundle of agents/mine/random_agent.py (2 files): sha256 matches" in p
               for p in report.passed)  # fmt: skip


def test_a_file_beside_the_agent_changed_under_an_entry_is_refused(tmp_path):
    repo = _repo_with_agent(tmp_path)
    entry = _entry(load_record(), repo)
    (repo / "agents" / "mine" / "weights.bin").write_bytes(b"swapped after the evaluation")
    report = check_entry(entry, repo=repo)
    assert [p.kind for p in report.problems] == ["agent_bundle"]
    assert "agent bundle mismatch: payload.agent.bundle.sha256" in report.problems[0].message
    assert "a file beside the agent was added, removed or changed" in report.problems[0].message


def test_a_file_added_beside_the_agent_is_refused(tmp_path):
    repo = _repo_with_agent(tmp_path)
    entry = _entry(load_record(), repo)
    (repo / "agents" / "mine" / "helper.py").write_text("SCORE = 1.0\n")
    assert [p.kind for p in check_entry(entry, repo=repo).problems] == ["agent_bundle"]


def test_a_record_from_before_bundles_pins_the_file_and_says_so(tmp_path):
    repo = _repo_with_agent(tmp_path)
    entry = make_entry(load_record(), "mine", "uniform random", AGENT)
    report = check_entry(entry, repo=repo)
    assert report.ok, report.problems
    assert any("pins the agent file only (made before bundles)" in n for n in report.notes)
