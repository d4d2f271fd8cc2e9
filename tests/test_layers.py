"""The package's layers (`LAYERS` below, bottom to top): a module imports only from its
own layer or the layers below it, at module level or inside a function alike. In particular
`training/` imports no method and `algorithms/` never imports the run driver (`runs/`).

The imports are read from the source (`ast`), so a lazy import inside a function counts."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "aht_bench"
LAYERS = (
    "files",
    "hostinfo",
    "shipped",
    "envs",
    "policies",
    "adapters",
    "training",
    "algorithms",
    "catalog",
    "runs",
    "evaluation",
    "heldout",
    "leaderboard",
    "experiments",
    "sweeps",
    "play",
    "cli",
)
"""Bottom to top. `aht_bench` itself (`__version__`) is below all of them. `catalog` (the
training methods by name, standard library only) sits above the methods it names, so no method
reads the list of methods, and below the run driver and the CLI that read it."""

KNOWN_UPWARD = {
    ("adapters/gym.py", "aht_bench.evaluation.teammates"),
}
"""Upward imports allowed. One: `EgoEnv(task, teammate="heldout:v2:ippo_mlp_0")` resolves a
teammate's name (heldout members, heuristics, "random") through
`aht_bench.evaluation.teammates`, lazily, only when a name is given; the evaluator itself plays
through the shell, so the shell cannot sit above `evaluation`. This list may only shrink: an
entry that no longer occurs fails the test until it is deleted here."""


def _imports(path: Path) -> set[str]:
    """Every `aht_bench...` module `path` imports (absolute imports, any depth)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "aht_bench":  # from aht_bench import runs
                found |= {f"aht_bench.{a.name}" for a in node.names}
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            raise AssertionError(f"{path}: relative import; write it as `from aht_bench...`")
    return {m for m in found if m.split(".")[0] == "aht_bench"}


def _layer(module: str) -> str | None:
    """The layer of `aht_bench.<layer>...`, None for the package root (`aht_bench.__version__`)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _upward() -> set[tuple[str, str]]:
    out = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        own = rel.split("/")[0].removesuffix(".py")
        if own not in LAYERS:
            assert rel == "__init__.py", f"{rel} is in no layer: add its folder to LAYERS"
            continue
        for module in _imports(path):
            layer = _layer(module)
            if layer is not None and LAYERS.index(layer) > LAYERS.index(own):
                out.add((rel, module))
    return out


def test_every_top_level_folder_is_a_layer():
    folders = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()}
    assert folders - {"__init__", "__pycache__", "py.typed"} <= set(LAYERS)


def test_no_module_imports_from_a_layer_above_its_own():
    upward = _upward()
    new = sorted(upward - KNOWN_UPWARD)
    assert not new, "imports from a layer above the importer's: " + ", ".join(
        f"{f} -> {m}" for f, m in new
    )
    gone = sorted(KNOWN_UPWARD - upward)
    assert not gone, f"no longer imported (delete them from KNOWN_UPWARD): {gone}"


@pytest.mark.parametrize(
    "layer,forbidden", [("training", {"algorithms", "runs"}), ("algorithms", {"runs"})]
)
def test_the_core_and_the_methods_import_no_run_driver(layer, forbidden):
    # the circle of issue 31: training/runs.py looked algorithms up, algorithms imported it
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module in _imports(path):
            assert _layer(module) not in forbidden, f"{path.relative_to(PACKAGE)} imports {module}"


def test_the_checker_sees_a_lazy_upward_import(tmp_path):
    # the check itself: an import inside a function body is found
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from aht_bench.runs import train\n    return train\n")
    assert _imports(source) == {"aht_bench.runs"}
    assert _layer("aht_bench.runs.driver") == "runs" and _layer("aht_bench.__version__") is None


def _declared(path: Path) -> set[str] | None:
    """The `aht_bench...` modules the "May import ..." paragraph of `path`'s docstring names
    (`aht_bench` alone: all of the package), None if it has no such paragraph."""
    doc = ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""
    start = doc.lower().find("may import ")
    if start < 0:
        return None
    paragraph = doc[start:].split("\n\n")[0]
    return set(re.findall(r"\baht_bench(?:\.\w+)*", paragraph))


def _package(path: Path) -> str:
    """The dotted package `path` (a file under `PACKAGE`) belongs to."""
    return ".".join(("aht_bench", *path.relative_to(PACKAGE).parts[:-1]))


def _undeclared(path: Path, package: str) -> list[str]:
    """The `aht_bench` imports of `path` its "May import" paragraph does not cover. Always
    covered: the module's own `package` and `aht_bench` itself (`__version__`)."""
    declared = _declared(path)
    assert declared is not None, f"{path}: no 'May import ...' paragraph in its docstring"
    allowed = declared | {package}
    out = []
    for module in sorted(_imports(path)):
        if module in ("aht_bench", "aht_bench.__version__") or "aht_bench" in declared:
            continue
        if not any(module == d or module.startswith(d + ".") for d in allowed):
            out.append(module)
    return out


def test_every_module_imports_only_what_its_docstring_declares():
    # issue 31: each module's "May import" line is a contract the layering alone does not check
    # (a method module that reached into a sibling, a loader that trains)
    wrong = {
        path.relative_to(PACKAGE).as_posix(): modules
        for path in sorted(PACKAGE.rglob("*.py"))
        if (modules := _undeclared(path, _package(path)))
    }
    assert not wrong, f"imports their 'May import' line does not name: {wrong}"


def test_the_declared_imports_check_catches_an_undeclared_import(tmp_path):
    # the check itself, on a module placed inside the package tree's shape
    module = tmp_path / "m.py"
    module.write_text(
        '"""A module.\n\nMay import numpy and aht_bench.envs only.\n"""\n'
        "from aht_bench.envs import make\n"
        "def f():\n    from aht_bench.policies import core\n    return core, make\n"
    )
    assert _declared(module) == {"aht_bench.envs"}
    assert _undeclared(module, "aht_bench.training") == ["aht_bench.policies"]
    assert _undeclared(module, "aht_bench.policies") == []  # its own package
    module.write_text('"""No contract."""\nimport numpy\n')
    with pytest.raises(AssertionError, match="no 'May import"):
        _undeclared(module, "aht_bench.training")


def test_no_function_is_over_100_lines_and_no_method_file_over_500():
    """Issue 31's size limits: every function of the package fits on a screen or two, and a
    method's file stays a module, not a library."""
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > 100:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}: {lines}")
    assert long == []
    big = [
        f"{p.relative_to(PACKAGE)}: {n}"
        for p in sorted((PACKAGE / "algorithms").rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 500
    ]
    assert big == []


def _is_click_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Decorated `@<group>.command(...)` or `@<group>.group(...)` (click)."""
    return any(
        isinstance(d, ast.Call)
        and isinstance(d.func, ast.Attribute)
        and d.func.attr in ("command", "group")
        for d in node.decorator_list
    )


def test_no_file_is_over_800_lines_and_no_click_command_over_60():
    """Issue 54's limits: a command parses, calls the library and prints; a module is a room."""
    big = [
        f"{p.relative_to(PACKAGE)}: {n}"
        for p in sorted(PACKAGE.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 800
    ]
    assert big == []
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_click_command(node):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > 60:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}: {lines}")
    assert long == []


def test_the_training_core_names_no_method():
    """`training/` is the method-agnostic core (PPO and the shared stages ippo, br and ego use):
    no module of it names one of the other methods of the catalogue, in code or in words."""
    from aht_bench import catalog

    stages = {"ippo", "br", "ego"}
    names = [e.name for e in catalog.METHODS if e.name not in stages] + ["minimax return"]
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE)
    found = [
        f"{path.relative_to(PACKAGE)}:{i}: {line.strip()}"
        for path in sorted((PACKAGE / "training").rglob("*.py"))
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, "training/ names a method:\n" + "\n".join(found)


@pytest.mark.parametrize("layer", ["evaluation", "heldout"])
def test_sets_of_teammates_to_play_with_are_teammate_sets_not_populations(layer):
    """One word per idea (issue 54): a population is what a method generates and publishes
    (`policies/population.py`); a heldout or development set is a `TeammateSet`
    (`policies/teammate_set.py`). The evaluator and the set builders hold sets, never a
    `Population` (a method's published population is split into named members first)."""
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        names = {
            a.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
            for a in node.names
            if node.module.startswith("aht_bench.policies")
        }
        assert "aht_bench.policies.population" not in _imports(path), path
        assert "Population" not in names, f"{path.relative_to(PACKAGE)} imports Population"
