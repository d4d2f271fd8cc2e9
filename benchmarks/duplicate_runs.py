"""The shared runs of `aht_bench/algorithms/` that are code (issue 31: "no two files in
aht_bench/algorithms/ share a run of six or more identical or same-shape lines beyond docstrings
and import blocks").

    python benchmarks/duplicate_runs.py [--repo aht_bench/algorithms]

Runs the workplace's `duplicates` command (every pair of places sharing six or more identical
or same-shape lines; it skips blank lines, comments and lone punctuation) twice: over the folder
as it is, and over a copy of it with every docstring (module, class, function) and every import
statement blanked out, line numbers kept. The second list is what the issue counts; each of its
pairs is marked `same file` or `two files`.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROW = re.compile(r"(D\d+) (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)(.*)")


def docstring_and_import_lines(source: str) -> set[int]:
    """The line numbers of `source` that are docstrings or import statements."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
        if isinstance(node, ast.Import | ast.ImportFrom):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def stripped_copy(root: Path, into: Path) -> None:
    """Every .py file under `root`, copied under `into` with docstrings and imports blanked."""
    for path in root.rglob("*.py"):
        source = path.read_text()
        drop = docstring_and_import_lines(source)
        lines = ["" if i in drop else line for i, line in enumerate(source.splitlines(), 1)]
        target = into / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n")


def duplicates(folder: Path) -> list[str]:
    """The `duplicates` output lines for `folder`."""
    command = ["duplicates", "--repo", str(folder), "--most", "200", "--seconds", "120"]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=folder, check=True
    ).stdout.splitlines()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=Path("aht_bench/algorithms"))
    args = parser.parse_args(argv)
    if shutil.which("duplicates") is None:
        raise SystemExit("needs the `duplicates` command of the workplace's tool library on PATH")
    root = args.repo.resolve()
    print(f"## {args.repo} as it is")
    print(duplicates(root)[0])
    print(f"## {args.repo} without docstrings and imports")
    with tempfile.TemporaryDirectory(prefix="aht-dups-") as tmp:
        copy = Path(tmp) / root.name
        stripped_copy(root, copy)
        rows = duplicates(copy)
    two_files = 0
    for row in rows:
        match = ROW.match(row)
        if not match:
            print(row)
            continue
        same = match.group(2) == match.group(5)
        two_files += not same
        print(f"{'same file' if same else 'two files'}  {row}")
    print(f"pairs across two files: {two_files}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
