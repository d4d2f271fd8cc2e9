"""aht-bench from another project: the wheel built from this checkout, installed into a fresh
venv outside it, evaluates, loads and verifies heldout sets, dry-runs the packaged sweeps,
refuses the leaderboard and is typed (issue 30).

The wheel is built and installed by pip with nothing fetched (`--no-build-isolation`,
`--no-index`). Its dependencies are not downloaded either: the distributions aht-bench requires
(the closure of its `Requires-Dist`, as installed in this environment) are linked into the fresh
venv's site-packages file by file from their RECORDs, so the venv holds exactly aht-bench and
what it needs, and nothing of the checkout. Every command runs from a folder outside the
checkout with no AHT_BENCH_* variable set.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


def _closure(name: str) -> list[md.Distribution]:
    """The installed distributions `name` requires, transitively (extras left out)."""

    def norm(n: str) -> str:
        return re.sub(r"[-_.]+", "-", n).lower()

    seen: dict[str, md.Distribution] = {}
    todo = [name]
    while todo:
        key = norm(todo.pop())
        if key in seen:
            continue
        dist = md.distribution(key)
        seen[key] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return [d for k, d in seen.items() if k != norm(name)]


def _place(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:  # another file system: copy
        shutil.copy2(src, dst)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("outside")
    assert REPO not in tmp.parents
    wheels = tmp / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(wheels), str(REPO)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    (wheel,) = wheels.glob("aht_bench-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    here = Path(sysconfig.get_paths()["purelib"]).resolve()
    for dist in _closure("aht-bench"):
        for f in dist.files or []:
            src = Path(str(dist.locate_file(f))).resolve()
            if here in src.parents and src.is_file():
                _place(src, site / src.relative_to(here))
    project = tmp / "project"
    project.mkdir()
    shutil.copy(REPO / "agents" / "examples" / "random_agent.py", project / "my_agent.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AHT_BENCH_")}
    env.pop("PYTHONPATH", None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["JAX_PLATFORMS"] = "cpu"
    return {"tmp": tmp, "wheel": wheel, "venv": venv, "site": site, "project": project,
            "env": env}  # fmt: skip


def _run(ctx: dict[str, object], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        cwd=ctx["project"],  # type: ignore[arg-type]
        env=ctx["env"],  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_installed_package_is_the_wheels_and_carries_the_heldout_sets(installed):
    r = _run(installed, "python", "-c",
             "import aht_bench, aht_bench_heldout; print(aht_bench.__file__); "
             "print(aht_bench_heldout.__path__[0])")  # fmt: skip
    assert r.returncode == 0, r.stderr
    pkg, data = r.stdout.split()
    site = str(installed["site"])
    assert pkg.startswith(site) and data.startswith(site)
    assert str(REPO) not in r.stdout
    where = _run(installed, "aht-bench", "heldout", "where")
    assert where.returncode == 0, where.stderr
    assert "the checkout's heldout/: none" in where.stdout
    assert f"{data} (" in where.stdout and "<- used" in where.stdout
    version = _run(installed, "aht-bench", "--version")
    assert version.returncode == 0 and "lbf-v1 v1,v2" in version.stdout, version.stdout
    size = Path(installed["wheel"]).stat().st_size  # type: ignore[arg-type]
    print(f"wheel {Path(installed['wheel']).name}: {size / 1e6:.1f} MB")  # type: ignore[arg-type]


def test_evaluate_load_and_verify_work_outside_the_checkout(installed):
    r = _run(installed, "aht-bench", "evaluate", "my_agent.py", "--task", "forced_coord",
             "--episodes", "2", "--out", "result.json")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert (Path(installed["project"]) / "result.json").is_file()  # type: ignore[arg-type]
    r = _run(installed, "python", "-c",
             "from aht_bench import heldout; s = heldout.load('cramped_room'); "
             "print(len(s.names), *s.names)")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[0]) >= 1 and "ippo_mlp_0" in r.stdout.split()
    r = _run(installed, "aht-bench", "heldout", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("verified ") or "\nverified " in r.stdout


def test_the_paper_sweeps_and_their_measured_rates_ship_in_the_wheel(installed):
    r = _run(installed, "aht-bench", "sweep", "rq4", "--dry-run", "--preset", "quick")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "36 runs (quick preset)" in r.stdout
    assert "agents/rotate/lbf/card.json" in r.stdout  # the packaged rate's source, not a guess


def test_the_leaderboard_refuses_and_writes_nothing_outside_a_checkout(installed):
    site = Path(installed["site"])  # type: ignore[arg-type]
    before = sorted(p.name for p in site.iterdir())
    r = _run(installed, "aht-bench", "leaderboard", "submit", "result.json", "--name", "x")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "outside a checkout" in r.stderr and "pull request" in r.stderr
    r = _run(installed, "aht-bench", "leaderboard", "render")
    assert r.returncode == 2
    assert sorted(p.name for p in site.iterdir()) == before
    assert not (site / "leaderboard").exists()


def test_mypy_finds_the_installed_package_typed(installed):
    project = Path(installed["project"])  # type: ignore[arg-type]
    (project / "uses.py").write_text(
        "import aht_bench\n\nok: str = aht_bench.__version__\nwrong: int = aht_bench.__version__\n"
    )
    python = Path(installed["venv"]) / "bin" / "python"  # type: ignore[arg-type]
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-executable", str(python),
         "--follow-imports=silent", "--no-incremental", "uses.py"],
        cwd=project, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "py.typed" not in r.stdout and "import-untyped" not in r.stdout, r.stdout
    # the types are read: the one wrong line, and only it, is an error
    assert 'uses.py:4: error: Incompatible types in assignment (expression has type "str", ' in (
        r.stdout
    ), r.stdout
    assert r.stdout.count("error:") == 1, r.stdout
