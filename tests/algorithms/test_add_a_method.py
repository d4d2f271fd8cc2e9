"""Adding a method is what docs/write_your_own_method.md says, and nothing else: on a copy of the
`aht_bench` package, the page's method (its first Python block) saved as
`aht_bench/algorithms/self_play.py` and its catalogue line (the third block) added at the end of
`aht_bench.catalog.METHODS`, those two files the only change, make `aht-bench train --help` list
the method, the method contract test pass it and (slow) its smoke run train with
`aht-bench train`. Each check runs in a fresh interpreter with the copy first on its path."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "aht_bench"
DOC = ROOT / "docs" / "write_your_own_method.md"
CONTRACT = ROOT / "tests" / "algorithms" / "test_method_contract.py"
NEW = "algorithms/self_play.py"  # where the page saves the method


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def _files(package: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file of `package`, bytecode caches left out."""
    return {
        p.relative_to(package).as_posix(): p.read_bytes()
        for p in sorted(package.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A folder holding a copy of the package with the method added as the page says."""
    root = tmp_path_factory.mktemp("tree")
    package = root / "aht_bench"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / NEW).write_text(_blocks()[0])
    line = _blocks()[2]  # as the page shows it: "    Entry(...),\n"
    catalog = package / "catalog.py"
    text = catalog.read_text()
    start = text.index("METHODS: tuple[Entry, ...] = (\n")
    end = text.index("\n)\n", start) + 1  # the line that closes METHODS
    catalog.write_text(text[:end] + line + text[end:])
    return root


def _run(tree: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python *args` in a fresh interpreter that imports `aht_bench` from `tree`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env |= {"PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "JAX_PLATFORMS": "cpu"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=tree,  # `python -m` puts the working folder first on the path
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_only_the_new_module_and_the_catalogue_differ(tree):
    before, after = _files(PACKAGE), _files(tree / "aht_bench")
    assert set(after) - set(before) == {NEW} and set(before) <= set(after)
    changed = sorted(p for p in before if before[p] != after[p])
    assert changed == ["catalog.py"]


def test_help_lists_the_new_method(tree):
    code = "import aht_bench.catalog as c; print(c.__file__); print(c.names()[-1])"
    found = _run(tree, "-c", code)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [str(tree / "aht_bench" / "catalog.py"), "self_play"]
    result = _run(tree, "-m", "aht_bench.cli", "train", "--help")
    assert result.returncode == 0, result.stderr
    usage = re.sub(r"\s+", "", result.stdout.partition("Options:")[0])  # click wraps the usage
    assert "|minimax|cole|self_play}" in usage


def test_the_contract_test_passes_it(tree):
    # the contract test itself, parametrised over the copy's registry: every check it makes of
    # self_play (but the slow smoke run), and its checks over the whole catalogue
    selection = "self_play or every_method_has or catalogue_line"
    args = ("-m", "pytest", str(CONTRACT), "-v", "-k", selection, "-p", "no:cacheprovider")
    result = _run(tree, *args, f"--rootdir={ROOT}")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    passed = set(re.findall(r"::(\S+) PASSED", result.stdout))
    assert passed == {
        "test_every_method_has_its_smoke_overrides",
        "test_each_catalogue_line_names_its_module_and_presets",
        "test_the_module_exposes_what_its_loop_drives[self_play]",
        "test_every_preset_resolves_and_the_smoke_overrides_validate[self_play]",
        "test_bad_fields_are_refused_with_the_field_named[self_play]",
        "test_a_setup_is_its_config_to_jit[self_play]",
    }, result.stdout[-2000:]


@pytest.mark.slow  # compiles the method in a fresh interpreter: about a minute on two CPU cores
def test_its_smoke_run_trains_with_aht_bench_train(tree, tmp_path):
    # its SMOKE, as the smoke runs read it through the registry
    code = "import json; from aht_bench.runs import smoke; print(json.dumps(smoke.pairs(%r)))"
    smoke = _run(tree, "-c", code % "self_play")
    assert smoke.returncode == 0, smoke.stderr
    pairs = json.loads(smoke.stdout.strip().splitlines()[-1])
    sets = [a for field, value in pairs for a in ("--set", f"{field}={value}")]
    out = tmp_path / "run"
    args = ("-m", "aht_bench.cli", "train", "self_play", "--task", "lbf", *sets)
    result = _run(tree, *args, "--out", str(out), "--no-progress", timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "done: 2 iterations" in result.stdout
    final = sorted(p.name for p in (out / "policies" / "final").glob("*.safetensors"))
    assert final == ["seed0-ego.safetensors", "seed0-population.safetensors"]
