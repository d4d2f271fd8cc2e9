"""An agent file's bundle: the files its sandbox shows it, and their one hash.

    bundle = agent_bundle(Path("agents/mine/agent.py"))
    bundle.files                 # {"agent.py": Path(...), "weights.safetensors": Path(...)}
    bundle.sha256()              # of every file's name and contents; what an entry pins
    bundle.how                   # why these files, in words

The sandbox (`sandbox.Sandbox`) shows an agent its bundle at the folder the files are in, and
nothing else of that folder. Which files (docs/agent_files.md):

- declared: a module-level `BUNDLE = ["weights.safetensors", "helpers/"]` in the agent file (a
  literal list or tuple of paths relative to its folder; a folder means every file under it)
  makes the bundle the agent file and those, exactly. Read with `ast`, never run.
- else the agent file's whole folder, every file under it, when the folder is the agent's own,
  but for its `results/` folder (`OUTPUTS`: where `aht-bench evaluate` writes its records by
  default, so evaluating from the agent's folder does not change the agent's bundle);
- else, when the folder is a checkout root (it holds `.git`), the home folder, the temp folder
  or `/`, the agent file alone: such a folder holds other people's files.

Never in a bundle: names starting with "." (`.git`, `.venv`, ...) at any depth, `__pycache__`
and `.pyc` files, the folders `hidden` (the heldout sets and the leaderboard), a symbolic link
to a file outside the agent's folder and symbolic links to folders. A folder of more than
`MAX_FILES` files or `MAX_BYTES` bytes is refused (the error says to declare `BUNDLE` or to give
the agent a folder of its own). A saved policy file (`.safetensors`) bundles itself and its card.

May import the standard library.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

MAX_FILES = 1000
MAX_BYTES = 4 * 1024**3
DECLARATION = "BUNDLE"
OUTPUTS = "results"  # evaluate's default output folder (cli: results/<agent>/<task_id>.json)
POLICY_SUFFIX = ".safetensors"  # agent_file.POLICY_SUFFIX (that module imports numpy)
_CHUNK = 1 << 20


class BundleError(ValueError):
    """An agent file's bundle cannot be made; the message names the file and the fix."""


@dataclasses.dataclass(frozen=True)
class Bundle:
    folder: Path
    """The agent file's folder (resolved): where the files show in the sandbox."""
    files: dict[str, Path]
    """Path relative to `folder` (POSIX form) -> the file whose contents show there."""
    how: str
    """Which rule chose the files, in words."""

    def sha256(self) -> str:
        """The sha256 of every file's relative path and contents' sha256, in path order."""
        digest = hashlib.sha256()
        for rel in sorted(self.files):
            digest.update(f"{rel}\0{file_sha256(self.files[rel])}\n".encode())
        return digest.hexdigest()

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.files.values())

    def summary(self) -> dict[str, object]:
        """What a result record keeps of the bundle: {"sha256", "files"}."""
        return {"sha256": self.sha256(), "files": len(self.files)}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def shared_folder(folder: Path) -> str | None:
    """Why `folder` (resolved) is not an agent's own (a checkout root, home, temp, /), or None."""
    if folder == Path(folder.anchor):
        return "the root folder"
    if (folder / ".git").exists():
        return "a checkout root (it holds .git)"
    if folder == Path.home().resolve():
        return "the home folder"
    temps = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}
    if folder in {Path(t).resolve() for t in temps}:
        return "the temp folder"
    return None


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _declared(path: Path) -> list[str] | None:
    """The paths of a module-level `BUNDLE = [...]` in the agent file, or None without one."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return None  # the load reports the file's error
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == DECLARATION for t in targets):
            continue
        try:
            paths = ast.literal_eval(value) if value is not None else None
        except ValueError:
            paths = None
        if not isinstance(paths, (list, tuple)) or not all(isinstance(p, str) for p in paths):
            raise BundleError(
                f"agent file {path}: {DECLARATION} (line {node.lineno}) must be a literal list "
                f"of paths relative to the file's folder, e.g. {DECLARATION} = "
                '["weights.safetensors", "helpers/"]'
            )
        return list(paths)
    return None


class _Collector:
    def __init__(self, folder: Path, hidden: tuple[Path, ...], agent: Path) -> None:
        self.folder = folder
        self.hidden = hidden
        self.agent = agent
        self.files: dict[str, Path] = {}

    def visible(self, path: Path) -> bool:
        return not any(_is_within(path, h) for h in self.hidden)

    def add_file(self, path: Path) -> None:
        """`path` (in the folder, maybe a link) if it may be shown."""
        if path.name.startswith(".") or path.suffix == ".pyc":
            return
        target = path.resolve()
        if not target.is_file() or not _is_within(target, self.folder):
            return
        if self.visible(path) and self.visible(target):
            self.files[path.relative_to(self.folder).as_posix()] = target
            self.check_size()

    def add_tree(self, top: Path, skip: tuple[Path, ...] = ()) -> None:
        for here, dirs, names in os.walk(top):
            base = Path(here)
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".")
                and d != "__pycache__"
                and not (base / d).is_symlink()
                and self.visible(base / d)
                and base / d not in skip
            )
            for name in sorted(names):
                self.add_file(base / name)

    def check_size(self) -> None:
        if len(self.files) > MAX_FILES:
            raise BundleError(
                f"the folder of agent file {self.agent} holds more than {MAX_FILES} files, all "
                f"of which its sandbox would show: give the agent a folder of its own with the "
                f"files it needs, or list them in {DECLARATION} = [...] in the file"
            )


def agent_bundle(path: Path, hidden: Iterable[Path] = ()) -> Bundle:
    """The bundle of the agent file `path` (see the module docstring); `hidden`: folders never
    shown. Raises `BundleError`."""
    agent = Path(path).resolve()
    folder = agent.parent
    box = _Collector(folder, tuple(Path(h).resolve() for h in hidden), agent)
    box.files[agent.name] = agent
    if agent.suffix == POLICY_SUFFIX:
        card = agent.with_name(agent.name + ".json")
        if card.is_file():
            box.files[card.name] = card.resolve()
        return Bundle(folder, box.files, "the policy file and its card")
    declared = _declared(agent)
    if declared is not None:
        for rel in declared:
            _add_declared(box, rel)
        how = f"the file and the {len(declared)} paths its {DECLARATION} declares"
    elif (why := shared_folder(folder)) is not None:
        how = f"the file alone: its folder is {why} (declare {DECLARATION} to add files)"
    else:
        box.add_tree(folder, skip=(folder / OUTPUTS,))
        how = f"the file's folder (but {OUTPUTS}/)"
    size = sum(p.stat().st_size for p in box.files.values())
    if size > MAX_BYTES:
        raise BundleError(
            f"the bundle of agent file {agent} holds {size / 1024**3:.1f} GiB (more than "
            f"{MAX_BYTES / 1024**3:g} GiB): give the agent a folder of its own with only the "
            f"files it needs, or list them in {DECLARATION} = [...] in the file"
        )
    return Bundle(folder, dict(sorted(box.files.items())), how)


def _add_declared(box: _Collector, rel: str) -> None:
    parts = Path(rel).parts
    bad = (
        not rel
        or Path(rel).is_absolute()
        or ".." in parts
        or any(p.startswith(".") and p not in (".",) for p in parts)
    )
    where = box.folder / rel
    if bad or not _is_within(where.resolve(), box.folder):
        raise BundleError(
            f"agent file {box.agent}: {DECLARATION} entry {rel!r} is not a path inside the "
            "file's folder (relative, no '..', no names starting with '.')"
        )
    if where.is_dir() and not where.is_symlink():
        box.add_tree(where)
    elif where.is_file():
        before = len(box.files)
        box.add_file(where)
        if len(box.files) == before and where.resolve() != box.agent:
            raise BundleError(
                f"agent file {box.agent}: {DECLARATION} entry {rel!r} cannot be shown to the "
                "agent (a heldout or leaderboard file, or a link out of the folder)"
            )
    else:
        raise BundleError(
            f"agent file {box.agent}: {DECLARATION} entry {rel!r} does not exist in "
            f"{box.folder}; fix the path or remove it"
        )


__all__ = [
    "Bundle",
    "BundleError",
    "DECLARATION",
    "MAX_BYTES",
    "MAX_FILES",
    "OUTPUTS",
    "agent_bundle",
    "file_sha256",
    "shared_folder",
]
