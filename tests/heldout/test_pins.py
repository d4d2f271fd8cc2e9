"""Published sets pinned in the package (`aht_bench.evaluation.pins`, issue 28): a set whose
files and lock are rewritten together, an unpinned version folder and a flipped byte are each
caught by `load_set` / `evaluate`, `heldout verify` and the leaderboard."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from aht_bench import heldout
from aht_bench.cli import EXIT_TEAMMATE_INTEGRITY, main
from aht_bench.evaluation import pins, sets
from aht_bench.leaderboard import Rejected, submit

REPO = Path(__file__).resolve().parents[2]
LBF_V1 = REPO / "heldout" / "lbf-v1" / "v1"
RECORD = REPO / "tests" / "leaderboard" / "data" / "random_agent-lbf-2ep.json"  # lbf-v1/v1


def _root_with(tmp_path: Path, folder: Path, version: str | None = None) -> tuple[Path, Path]:
    """A heldout root holding a copy of `folder` (as `version`) and its lock."""
    root = tmp_path / "heldout"
    version = version or folder.name
    dst = root / folder.parent.name / version
    shutil.copytree(folder, dst)
    lock = heldout.lock_path(folder).read_text()
    heldout.lock_path(dst).write_text(lock.replace(f"/{folder.name}/", f"/{version}/"))
    return root, dst


def _rehash_consistently(root: Path, folder: Path, upper: float) -> None:
    """The forgery: every upper bound lowered (so every score rises), then the manifest's
    sha256 file and the set's lock recomputed, as a careful forger would."""
    manifest = json.loads((folder / sets.MANIFEST).read_text())
    for m in manifest["members"]:
        m["bounds"]["upper"] = upper
    sets.write_manifest(folder, manifest)
    heldout.lock_path(folder).unlink()
    heldout.lock_new(folder, root)


def _evaluate(root: Path, tmp_path: Path, teammates: str):
    out = tmp_path / "r.json"
    args = [
        "evaluate", str(REPO / "agents/examples/random_agent.py"), "--task", "lbf-v1",
        "--teammates", teammates, "--episodes", "1", "--reps", "100", "--out", str(out),
        "--no-plot", "--no-progress",
    ]  # fmt: skip
    return CliRunner().invoke(main, args, env={sets.HELDOUT_ENV: str(root)}), out


def test_every_shipped_lock_matches_its_pin_and_every_pin_has_its_set():
    locked = {
        pins.pin_key(f.parent.name, f.name): pins.lock_digest(
            pins.read_lock_file(heldout.lock_path(f))
        )
        for f in heldout.published_sets()
        if heldout.lock_path(f).is_file()
    }
    assert {k: v for k, v in locked.items() if k in pins.PINNED} == pins.PINNED


def test_an_untouched_copy_is_pinned_and_loads(tmp_path, monkeypatch):
    root, _ = _root_with(tmp_path, LBF_V1)
    monkeypatch.setenv(sets.HELDOUT_ENV, str(root))
    loaded = sets.load_set("lbf-v1", "v1")
    assert loaded.pinned and not loaded.is_development
    assert heldout.verify(root, load_members=False) == []


def test_a_consistently_rehashed_set_is_refused_everywhere(tmp_path, monkeypatch):
    root, folder = _root_with(tmp_path, LBF_V1)
    _rehash_consistently(root, folder, upper=0.05)
    # the set's own checks pass: manifest.sha256 and the lock agree with the files
    assert sets.read_manifest(folder)[0]["members"][0]["bounds"]["upper"] == 0.05
    problems = heldout.verify(root, load_members=False)
    assert problems == [
        "lbf-v1/v1.sha256: its entries do not match the digest pinned in "
        "aht_bench/evaluation/pins.py (files and lock were changed together); "
        "lbf-v1/v1/manifest.json, lbf-v1/v1/manifest.sha256 are not the published files "
        "(sha256 not the one the pinned lock lists)"
    ]
    monkeypatch.setenv(sets.HELDOUT_ENV, str(root))
    with pytest.raises(sets.TeammateSetIntegrityError, match="pinned in this aht-bench"):
        sets.load_set("lbf-v1", "v1")
    result, out = _evaluate(root, tmp_path, "v1")
    assert result.exit_code == EXIT_TEAMMATE_INTEGRITY, result.output
    assert "files and lock were changed together" in result.stderr and not out.exists()
    verify = CliRunner().invoke(main, ["heldout", "verify"], env={sets.HELDOUT_ENV: str(root)})
    assert verify.exit_code == EXIT_TEAMMATE_INTEGRITY and "lbf-v1/v1.sha256" in verify.stderr
    with pytest.raises(Rejected) as caught:
        submit(RECORD, "x", "y", root=tmp_path / "board")
    assert caught.value.report.kinds() == ["heldout_integrity"]


def test_a_tampered_weight_file_is_named_even_when_its_lock_was_rehashed(tmp_path, monkeypatch):
    """The forgery of issue 52: one member's weights changed, the manifest's sha256 of them,
    manifest.sha256 and the lock recomputed. Before, the refusal named only the lock."""
    root, folder = _root_with(tmp_path, LBF_V1)
    manifest = json.loads((folder / sets.MANIFEST).read_text())
    member = next(m for m in manifest["members"] if "file" in m)
    weights = folder / member["file"]
    blob = bytearray(weights.read_bytes())
    blob[-1] ^= 0x01
    weights.write_bytes(bytes(blob))
    member["sha256"] = hashlib.sha256(bytes(blob)).hexdigest()
    sets.write_manifest(folder, manifest)
    heldout.lock_path(folder).unlink()
    heldout.lock_new(folder, root)
    named = f"lbf-v1/v1/{member['file']}"
    result, out = _evaluate(root, tmp_path, "v1")
    assert result.exit_code == EXIT_TEAMMATE_INTEGRITY, result.output
    assert named in result.stderr and "not the published files" in result.stderr
    assert not out.exists()
    problems = heldout.verify(root, load_members=False)
    assert len(problems) == 1 and named in problems[0]


def test_without_a_pinned_copy_of_the_lock_the_refusal_says_how_to_find_the_file(monkeypatch):
    monkeypatch.setattr(sets, "pinned_lock_entries", lambda task_id, version: None)
    text = sets.changed_files_text("lbf-v1", "v1", {})
    assert "a file of lbf-v1/v1 was changed" in text and "git diff heldout/" in text


def test_an_unpinned_version_folder_is_a_development_set_and_not_shipped(tmp_path, monkeypatch):
    root, _ = _root_with(tmp_path, LBF_V1, version="v7")
    monkeypatch.setenv(sets.HELDOUT_ENV, str(root))
    assert sets.published_versions("lbf-v1") == []  # not a default for evaluate
    loaded = sets.load_set("lbf-v1", "v7")
    assert not loaded.pinned and loaded.is_development
    assert [k for k, _ in heldout.unpinned_sets(root)] == ["lbf-v1/v7"]
    result, out = _evaluate(root, tmp_path, "v7")
    assert result.exit_code == 0, result.output
    assert "DEVELOPMENT set" in result.output
    record = json.loads(out.read_text())
    assert record["payload"]["teammate_set"]["development_set"] is True
    with pytest.raises(Rejected) as caught:
        submit(out, "x", "y", root=tmp_path / "board")
    assert caught.value.report.kinds()[0] == "heldout_version"


def test_a_flipped_weight_byte_is_caught_by_verify_no_rerun(tmp_path, monkeypatch):
    """The leaderboard's check without a re-run hashes the set's files against the pinned
    lock: a flipped byte in a member's weights is a heldout_integrity problem."""
    root, folder = _root_with(tmp_path, LBF_V1)
    monkeypatch.setenv(sets.HELDOUT_ENV, str(root))
    weights = sorted((folder / "members").glob("*.safetensors"))[0]
    blob = bytearray(weights.read_bytes())
    blob[len(blob) // 2] ^= 0x01
    weights.write_bytes(bytes(blob))
    board = tmp_path / "board"
    with pytest.raises(Rejected) as caught:
        submit(RECORD, "x", "y", root=board)
    assert caught.value.report.kinds() == ["heldout_integrity"]
    assert weights.name in str(caught.value)
