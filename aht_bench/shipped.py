"""The files an installed aht-bench carries beside its code: the example agents
(`agents/examples/`, which errors and docs cite) and the docs (`docs/`).

    copy_examples(Path("agents/examples"))   # what `aht-bench examples` does
    pages()                                  # [("evaluation", "Evaluation ..."), ...]
    page_path("evaluation")                  # docs/evaluation.md

In a checkout (the source tree, or an editable install) they are read where they are; the
wheel ships copies under `aht_bench/_shipped/` (setup.py), read when there is no checkout.

May import the standard library and aht_bench.files.
"""

from __future__ import annotations

import difflib
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent
DEFAULT_EXAMPLES_DIR = Path("agents") / "examples"  # what the errors cite, relative to the cwd


class ShippedFileError(ValueError):
    """A shipped file that is not there, or a copy that would overwrite files (a usage error)."""


def _root(in_checkout: str, shipped: str) -> Path:
    checkout = _CHECKOUT / in_checkout
    if (_CHECKOUT / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    return _PACKAGE / "_shipped" / shipped


def examples_root() -> Path:
    """The example agents: the checkout's agents/examples/, else the copy in the package."""
    return _root("agents/examples", "examples")


def docs_root() -> Path:
    """The docs: the checkout's docs/, else the copy in the package."""
    return _root("docs", "docs")


def _files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


def copy_examples(dest: Path, force: bool = False) -> list[Path]:
    """Copy every example agent file into `dest` (its subfolders kept); returns the files
    written. Without `force`, a file of `dest` that would be replaced is a `ShippedFileError`
    and nothing is written."""
    from aht_bench.files import atomic_write_bytes

    root = examples_root()
    files = _files(root)
    if not files:
        raise ShippedFileError(
            f"no example agents in {root}: this aht-bench was installed without them; "
            "reinstall it from its wheel (pip install --force-reinstall aht-bench)"
        )
    targets = [(src, dest / src.relative_to(root)) for src in files]
    if dest.resolve() == root.resolve():
        raise ShippedFileError(f"{dest} is where the examples come from; pass another folder")
    taken = [t for _, t in targets if t.exists()]
    if taken and not force:
        shown = ", ".join(str(t) for t in taken[:3]) + (" ..." if len(taken) > 3 else "")
        raise ShippedFileError(
            f"{len(taken)} of the {len(targets)} example files exist already ({shown}); pass "
            "--force to replace them, or another folder"
        )
    for src, target in targets:
        atomic_write_bytes(target, src.read_bytes())
    return [t for _, t in targets]


def pages() -> list[tuple[str, str]]:
    """(name, title) of every docs page: the name is its path under docs/ without `.md`
    ("evaluation", "baselines/brdiv"), the title its first `# ` heading."""
    root = docs_root()
    out = []
    for path in _files(root):
        if path.suffix != ".md":
            continue
        title = next(
            (line[2:].strip() for line in path.read_text().splitlines() if line.startswith("# ")),
            path.stem,
        )
        out.append((path.relative_to(root).with_suffix("").as_posix(), title))
    return out


def page_path(name: str) -> Path:
    """The file of docs page `name` ("evaluation", "evaluation.md", "baselines/brdiv");
    a `ShippedFileError` with a "did you mean" for another name."""
    names = [n for n, _ in pages()]
    key = name.removesuffix(".md").removeprefix("docs/")
    if key not in names:
        close = difflib.get_close_matches(key, names, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ShippedFileError(
            f"no docs page {name!r}.{hint} `aht-bench docs` lists the pages: "
            f"{', '.join(names) or 'none'}"
        )
    return docs_root() / f"{key}.md"
