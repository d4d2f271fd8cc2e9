"""aht-bench from another project: the code wheel and the heldout data wheels built from this
checkout, installed into a fresh venv outside it with `pip install 'aht_bench-*.whl[heldout]'`,
run from an empty folder: the examples copied, evaluate, the heldout sets from Python, Gymnasium
and PettingZoo with a heldout teammate named by its string, verify, the packaged sweeps, the
docs, the leaderboard's refusal, and types (issues 30 and 53).

The code wheel is built by pip from a copy of the checkout's files (those git tracks or would:
no stale build/ folder) with nothing fetched (`--no-build-isolation`, `--no-index`), the data
wheels by packaging/build_heldout_wheels.py. The dependencies are not downloaded either: the
distributions aht-bench requires (the closure of its `Requires-Dist`, as installed in this
environment) are linked into the fresh venv's site-packages file by file from their RECORDs, so
the venv holds exactly aht-bench, its data and what it needs, and nothing of the checkout; pip
then installs the code wheel with its `heldout` extra from the built wheels alone. Every command
runs from a folder outside the checkout with no AHT_BENCH_* variable set.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


def _installed(name: str) -> md.Distribution:
    """The distribution `name` as installed in this environment's site-packages. Not
    `md.distribution(name)`: that searches sys.path, where an imported package may have put
    its vendored copies first (importing ray puts ray/thirdparty_files, with its own psutil,
    at sys.path[0]), and a vendored copy's files would land in the fresh venv under ray/."""
    site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    found = next(iter(md.distributions(name=name, path=site)), None)
    if found is None:
        raise md.PackageNotFoundError(f"{name} is not installed in {site}")
    return found


def _closure(name: str) -> list[md.Distribution]:
    """The installed distributions `name` requires, transitively, with the extras each
    requirement asks for (`etils[epath]`) followed, as pip resolves them; `name`'s own
    extras left out."""

    def norm(n: str) -> str:
        return re.sub(r"[-_.]+", "-", n).lower()

    seen: dict[str, md.Distribution] = {}
    done: set[tuple[str, str]] = set()
    todo = [(name, "")]
    while todo:
        raw, extra = todo.pop()
        key = norm(raw)
        if (key, extra) in done:
            continue
        done.add((key, extra))
        dist = seen.setdefault(key, _installed(key))
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": extra}):
                todo += [(req.name, "")] + [(req.name, e) for e in req.extras]
    return [d for k, d in seen.items() if k != norm(name)]


def _place(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:  # another file system: copy
        shutil.copy2(src, dst)


CODE_LIMIT = 1_000_000  # bytes: the code wheel
DATA_LIMIT = 60_000_000  # bytes: each data wheel (the index's limit is 100 MB)


def _copy_tree(dst: Path) -> None:
    """The checkout's files as a fresh clone would have them, hard-linked into `dst`."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, files):
        if (REPO / rel).is_file():
            _place(REPO / rel, dst / rel)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("outside")
    assert REPO not in tmp.parents
    src, wheels = tmp / "src", tmp / "wheels"
    _copy_tree(src)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(wheels), str(src)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    r = subprocess.run(
        [sys.executable, str(REPO / "packaging" / "build_heldout_wheels.py"), "--out",
         str(wheels), "--json"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    (code,) = wheels.glob("aht_bench-*.whl")
    return {"tmp": tmp, "wheels": wheels, "code": code, "data": json.loads(r.stdout)}


@pytest.fixture(scope="module")
def installed(built: dict[str, object]) -> dict[str, object]:
    tmp = Path(built["tmp"])  # type: ignore[arg-type]
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
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
    start = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index",
         "--find-links", str(built["wheels"]), f"{built['code']}[heldout]"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    print(f"pip install 'aht_bench-*.whl[heldout]' (dependencies present): "
          f"{time.perf_counter() - start:.1f} s")  # fmt: skip
    project = tmp / "project"
    project.mkdir()  # empty: the examples come from `aht-bench examples`
    env = {k: v for k, v in os.environ.items() if not k.startswith("AHT_BENCH_")}
    env.pop("PYTHONPATH", None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["JAX_PLATFORMS"] = "cpu"
    return {**built, "venv": venv, "site": site, "project": project, "env": env}


def _run(ctx: dict[str, object], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        cwd=ctx["project"],  # type: ignore[arg-type]
        env=ctx["env"],  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_code_wheel_is_small_and_the_data_wheels_are_apart(built):
    from aht_bench.evaluation import data

    code = Path(built["code"])  # type: ignore[arg-type]
    size = code.stat().st_size
    print(f"code wheel {code.name}: {size / 1e6:.2f} MB")
    with zipfile.ZipFile(code) as zf:
        names = zf.namelist()
    assert size < CODE_LIMIT
    assert not [n for n in names if n.startswith(data.DATA_PACKAGE)]
    assert "aht_bench/_shipped/examples/random_agent.py" in names
    assert "aht_bench/_shipped/docs/evaluation.md" in names
    rows = built["data"]["wheels"]  # type: ignore[index]
    for row in rows:
        path = Path(built["wheels"]) / row["wheel"]  # type: ignore[arg-type]
        print(f"data wheel {row['wheel']}: {path.stat().st_size / 1e6:.2f} MB ({row['files']} "
              "files)")  # fmt: skip
        assert path.stat().st_size < DATA_LIMIT
    assert sorted(r["distribution"] for r in rows) == sorted(data.all_distributions())
    assert built["data"]["skipped"] == ["README.md"]  # type: ignore[index]


def test_the_heldout_extra_installs_the_sets_and_where_says_what_is_missing(installed):
    r = _run(installed, "python", "-c",
             "import aht_bench, aht_bench_heldout; print(aht_bench.__file__); "
             "print(*aht_bench_heldout.__path__)")  # fmt: skip
    assert r.returncode == 0, r.stderr
    pkg, data = r.stdout.split()  # one folder: every data distribution adds to it
    site = str(installed["site"])
    assert pkg.startswith(site) and data.startswith(site)
    assert str(REPO) not in r.stdout
    where = _run(installed, "aht-bench", "heldout", "where")
    assert where.returncode == 0, where.stderr
    assert "the checkout's heldout/: none" in where.stdout
    assert f"{data} (" in where.stdout and "<- used" in where.stdout
    assert "aht-bench-heldout-v2==1.0.0" in where.stdout
    assert "not installed: aht-bench-heldout-v1-br, aht-bench-heldout-v2-br" in where.stdout
    as_json = json.loads(_run(installed, "aht-bench", "heldout", "where", "--json").stdout)
    assert "aht-bench-heldout-dev" in as_json["installed"]
    version = _run(installed, "aht-bench", "--version")
    assert version.returncode == 0 and "lbf-v1 v1,v2" in version.stdout, version.stdout


def test_from_an_empty_folder_the_examples_evaluate(installed):
    project = Path(installed["project"])  # type: ignore[arg-type]
    r = _run(installed, "aht-bench", "examples")
    assert r.returncode == 0, r.stdout + r.stderr
    agent = project / "agents" / "examples" / "random_agent.py"
    assert agent.is_file() and (project / "agents/examples/sb3_ppo/agent.py").is_file()
    r = _run(installed, "aht-bench", "evaluate", "agents/examples/random_agent.py", "--task",
             "forced_coord", "--episodes", "2", "--out", "result.json")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert (project / "result.json").is_file()
    assert "overcooked-forced_coord-v2/v3" in r.stdout  # its newest set


def test_heldout_sets_in_python_gymnasium_and_pettingzoo(installed):
    script = (
        "import gymnasium, warnings\n"
        "from aht_bench import heldout\n"
        "import aht_bench.adapters.gym\n"
        "from aht_bench.adapters.pz import ParallelEnv\n"
        "s = heldout.load('cramped_room')\n"
        "print('load', len(s.names), *s.names)\n"
        "env = gymnasium.make('aht_bench/cramped_room', teammate='heldout:v2:ippo_mlp_0')\n"
        "obs, _ = env.reset(seed=0)\n"
        "print('gym', env.unwrapped.task_id, obs.shape, env.step(0)[1])\n"
        "pz = ParallelEnv('cramped_room', teammates={'agent_1': 'heldout:v2:ippo_mlp_0'})\n"
        "obs, _ = pz.reset(seed=0)\n"
        "print('pz', pz.agents, obs['agent_0'].shape, pz.step({'agent_0': 0})[1])\n"
    )
    r = _run(installed, "python", "-c", script)
    assert r.returncode == 0, r.stderr
    lines = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()}
    assert int(lines["load"][0]) >= 1 and "ippo_mlp_0" in lines["load"]
    assert lines["gym"][:2] == ["overcooked-cramped_room-v2", "(520,)"]
    assert lines["pz"][:2] == ["['agent_0']", "(520,)"]


def test_verify_checks_what_is_installed_and_names_what_is_not(installed):
    r = _run(installed, "aht-bench", "heldout", "verify", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "note: not installed, so not verified: aht-bench-heldout-v1-br, " in r.stdout
    from aht_bench.evaluation.pins import PINNED

    assert f"\nverified {len(PINNED)} published sets (" in "\n" + r.stdout  # every pinned set


def test_the_docs_ship_in_the_package(installed):
    r = _run(installed, "aht-bench", "docs", "evaluation", "--path")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith(str(installed["site"]))
    r = _run(installed, "aht-bench", "docs", "agent_files")
    assert r.returncode == 0 and r.stdout == (REPO / "docs" / "agent_files.md").read_text()


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
    assert "aht-bench leaderboard --board DIR submit result.json" in r.stderr
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


def test_an_editable_install_of_a_checkout_uses_its_own_folders(built):
    # `make install` (pip install -e '.[dev]'): no data distribution; the checkout's heldout/,
    # agents/examples/ and docs/ are used where they are
    tmp, src = Path(built["tmp"]), Path(built["tmp"]) / "src"  # type: ignore[arg-type]
    venv = tmp / "venv-editable"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    here = Path(sysconfig.get_paths()["purelib"]).resolve()
    builders = [md.distribution("setuptools"), md.distribution("wheel")]  # the build backend
    for dist in [*_closure("aht-bench"), *builders]:
        for f in dist.files or []:
            path = Path(str(dist.locate_file(f))).resolve()
            if here in path.parents and path.is_file():
                _place(path, site / path.relative_to(here))
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-build-isolation", "--no-index", "-e", str(src)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("AHT_BENCH_")}
    env.pop("PYTHONPATH", None)
    r = subprocess.run(
        [str(python), "-c",
         "from aht_bench import shipped; from aht_bench.evaluation import sets; "
         "import importlib.util as u; print(sets.heldout_root()); print(shipped.examples_root()); "
         "print(shipped.docs_root()); print(u.find_spec('aht_bench_heldout'))"],
        cwd=tmp, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(src / "heldout"), str(src / "agents" / "examples"),
                                str(src / "docs"), "None"]  # fmt: skip


def test_the_lock_pins_what_the_index_serves_and_every_sb3_line_names_the_cpu_index():
    # issue 53: torch==2.13.0+cpu is served by PyTorch's CPU wheel index only, so `[sb3]` with
    # the lock did not install from the package index
    lock = (REPO / "requirements.lock").read_text().splitlines()
    local = [line for line in lock if "+" in line.split("==", 1)[-1]]
    assert local == [], "local version labels (+cpu) are not on the package index"
    pins = dict(line.split("==", 1) for line in lock if "==" in line)
    assert pins["torch"] == "2.13.0" and pins["stable_baselines3"] == "2.9.2"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["sb3"] == ["stable-baselines3==2.9.2", "torch==2.13.0"]
    cpu = "--extra-index-url https://download.pytorch.org/whl/cpu"
    files = [
        REPO / "README.md",
        REPO / "agents" / "README.md",
        REPO / "agents" / "examples" / "sb3_ppo" / "train.py",
        *(REPO / "docs").rglob("*.md"),
    ]
    for path in files:
        text = " ".join(path.read_text().split())  # lines joined: a command may wrap
        for match in re.finditer(r"pip install[^`\n]*\[sb3\][^`\n]*", text):
            assert cpu in match.group(0), (path, match.group(0))


@pytest.mark.slow  # a fresh venv resolving from the package index (network; minutes)
def test_sb3_resolves_from_the_index_with_the_documented_command(built, tmp_path):
    import urllib.request

    try:
        urllib.request.urlopen("https://pypi.org/simple/stable-baselines3/", timeout=10)
    except OSError:
        pytest.skip("the package index is not reachable from here")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    report = tmp_path / "report.json"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--dry-run", "--ignore-installed", "-q", "--report", str(report),
         "-c", str(REPO / "requirements.lock"), f"{built['code']}[sb3]",
         "--extra-index-url", "https://download.pytorch.org/whl/cpu", "--timeout", "10",
         "--retries", "1"],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    chosen = {re.sub(r"[-_.]+", "-", i["metadata"]["name"]).lower(): i["metadata"]["version"]
              for i in json.loads(report.read_text())["install"]}  # fmt: skip
    assert chosen["stable-baselines3"] == "2.9.2"
    assert chosen["torch"].split("+")[0] == "2.13.0"
    print(f"[sb3] resolves: torch {chosen['torch']}, stable-baselines3 2.9.2, "
          f"{len(chosen)} distributions")  # fmt: skip
