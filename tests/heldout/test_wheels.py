"""The heldout data apart from the code (issue 53): which distribution carries which file, the
extras that install them, reproducible data wheels, and `heldout verify` on installed data that
lacks a distribution (the best responses). The wheels themselves are built and installed into
a fresh venv by tests/test_install.py."""

from __future__ import annotations

import base64
import hashlib
import shutil
import tomllib
import zipfile
from pathlib import Path

import pytest

from aht_bench import __version__
from aht_bench import heldout as ho
from aht_bench.evaluation import data, sets
from aht_bench.evaluation.pins import PINNED
from aht_bench.heldout import wheels

REPO = Path(__file__).resolve().parents[2]
HELDOUT = REPO / "heldout"


def test_each_file_goes_to_its_versions_distribution_and_best_responses_apart():
    assert data.distribution_of("lbf-v1/v1/manifest.json") == "aht-bench-heldout-v1"
    assert data.distribution_of("lbf-v1/v1/members/ippo_mlp_0.safetensors") == (
        "aht-bench-heldout-v1"
    )
    assert data.distribution_of("lbf-v1/v1.sha256") == "aht-bench-heldout-v1"
    assert data.distribution_of("lbf-v1/v2/br/x-seat0.safetensors") == "aht-bench-heldout-v2-br"
    # the development sets keep their best responses; human proxies are one version each
    assert data.distribution_of("lbf-v1/dev/br/x.safetensors") == "aht-bench-heldout-dev"
    assert data.distribution_of(
        "overcooked-cramped_room-v2/human-proxy-v3/human_proxy.safetensors"
    ) == ("aht-bench-heldout-human-proxy-v3")
    # not published (not pinned), not a set, or junk: no distribution ships it
    assert data.distribution_of("lbf-v1/v9/manifest.json") is None
    assert data.distribution_of("lbf-v1/v9.sha256") is None
    assert data.distribution_of("README.md") is None
    assert data.distribution_of("lbf-v1/v1/__pycache__/x.pyc") is None


def test_the_plan_of_the_checkout_ships_every_locked_file_once():
    groups, skipped = wheels.plan(HELDOUT)
    assert skipped == ["README.md"]
    assert sorted(groups) == sorted(data.all_distributions())
    shipped = [f for files in groups.values() for f in files]
    assert len(shipped) == len(set(shipped))
    locked = ho.read_lock(HELDOUT)
    assert set(locked) <= set(shipped)  # every published file, best responses included
    for name, files in groups.items():
        assert files, name
        assert all(("/br/" in f) == name.endswith("-br") for f in files if "/dev/" not in f)


def test_the_best_response_versions_are_the_ones_with_best_responses():
    with_br = {
        key.split("/")[1] for key in PINNED if (HELDOUT / key / data.BEST_RESPONSES).is_dir()
    }
    assert set(data.BR_VERSIONS) == with_br


def test_pyproject_extras_list_exactly_the_data_distributions():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert extras[data.EXTRA] == data.extra_requirements(False)
    assert extras[data.EXTRA_BR] == data.extra_requirements(True)
    # published versions never change; the development sets follow the code
    assert f"aht-bench-heldout-dev=={__version__}" in extras[data.EXTRA]
    assert "aht-bench-heldout-v1==1.0.0" in extras[data.EXTRA]


def _fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "heldout"
    shutil.copytree(HELDOUT / "lbf-v1" / "dev", root / "lbf-v1" / "dev")
    (root / "README.md").write_text("not shipped\n")
    return root


def test_a_data_wheel_is_reproducible_and_its_record_matches(tmp_path):
    root = _fake_root(tmp_path)
    (built,), skipped = wheels.build_wheels(root, tmp_path / "a")
    (again,), _ = wheels.build_wheels(root, tmp_path / "b")
    assert skipped == ["README.md"]
    assert built.name == "aht-bench-heldout-dev"
    assert built.path.name == f"aht_bench_heldout_dev-{__version__}-py3-none-any.whl"
    assert built.path.read_bytes() == again.path.read_bytes()
    with zipfile.ZipFile(built.path) as zf:
        names = zf.namelist()
        info = f"aht_bench_heldout_dev-{__version__}.dist-info"
        metadata = zf.read(f"{info}/METADATA").decode()
        assert "Name: aht-bench-heldout-dev\n" in metadata
        assert f"Version: {__version__}\n" in metadata
        record = zf.read(f"{info}/RECORD").decode().splitlines()
        for line in record:
            path, digest, size = line.rsplit(",", 2)
            if path.endswith("RECORD"):
                assert digest == size == ""
                continue
            blob = zf.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(blob).digest()).rstrip(b"=")
            assert digest == f"sha256={want.decode()}" and int(size) == len(blob)
        data_files = [n for n in names if not n.startswith(info)]
        assert data_files == sorted(data_files)
        assert all(n.startswith("aht_bench_heldout/lbf-v1/dev/") for n in data_files)
        assert len(data_files) == built.files == len(list((root / "lbf-v1/dev").rglob("*.*")))


def test_a_changed_published_file_builds_no_wheel(tmp_path):
    root = tmp_path / "heldout"
    shutil.copytree(HELDOUT / "lbf-v1" / "v2", root / "lbf-v1" / "v2")
    shutil.copy(HELDOUT / "lbf-v1" / "v2.sha256", root / "lbf-v1" / "v2.sha256")
    manifest = root / "lbf-v1" / "v2" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes() + b" ")
    with pytest.raises(wheels.WheelBuildError, match="do not match their locks"):
        wheels.build_wheels(root, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_verify_skips_what_an_uninstalled_distribution_carries(monkeypatch, tmp_path):
    # installed data with aht-bench-heldout-v2 but not aht-bench-heldout-v2-br: the v2 set
    # verifies and loads, its best responses are named as not installed, not as missing
    root = tmp_path / "aht_bench_heldout"
    src = HELDOUT / "lbf-v1" / "v2"
    shutil.copytree(src, root / "lbf-v1" / "v2", ignore=shutil.ignore_patterns("br"))
    shutil.copy(HELDOUT / "lbf-v1" / "v2.sha256", root / "lbf-v1" / "v2.sha256")
    monkeypatch.setenv(sets.HELDOUT_ENV, str(root))
    problems = ho.verify(root)
    assert problems and all("/br/" in p and "missing" in p for p in problems)
    monkeypatch.setattr(ho, "installed_heldout_folders", lambda: [root])
    monkeypatch.setattr(data, "installed", lambda: {"aht-bench-heldout-v2": "1.0.0"})
    assert "aht-bench-heldout-v2-br" in ho.not_installed(root)
    assert "aht-bench-heldout-v2" not in ho.not_installed(root)
    assert ho.verify(root) == []
    # a distribution that is installed must be whole
    (root / "lbf-v1" / "v2" / "members").rename(root / "lbf-v1" / "v2" / "gone")
    assert any("members/" in p and "missing" in p for p in ho.verify(root, load_members=False))


def test_the_checkout_lacks_nothing_and_names_the_package_to_install(monkeypatch, tmp_path):
    assert ho.not_installed(HELDOUT) == []
    monkeypatch.setenv(sets.HELDOUT_ENV, str(tmp_path))
    with pytest.raises(sets.TeammateSetError) as e:
        sets.resolve_set_folder("lbf-v1", "v2")
    assert data.INSTALL in str(e.value) and "aht-bench-heldout-v2" in str(e.value)
