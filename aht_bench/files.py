"""Safe file writing and checking, shared by everything that saves data (states, policies,
GIFs, and later checkpoints and result records).

May import the standard library only.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that a crash leaves either the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_sha256(path: Path, blob: bytes, expected: object, error: type[Exception]) -> None:
    """Raise `error` unless `blob` (the bytes of `path`) hashes to the card's `expected` sha256."""
    digest = hashlib.sha256(blob).hexdigest()
    if digest != expected:
        raise error(
            f"{path} does not match the sha256 in its card (file {digest[:12]}..., "
            f"card {str(expected)[:12]}...): the file is corrupted or was edited"
        )


def unwritable_reason(path: Path) -> str | None:
    """Why the file `path` could not be written (None when it could): its folder must exist or
    be creatable, and be writable. Checked by creating and removing one temporary file in the
    nearest folder that exists, so nothing is left behind (no folder is created)."""
    folder = path.parent
    while not folder.exists():
        if folder.parent == folder:
            return f"none of the folders above {path} exists"
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".aht-bench-write-check-"):
            pass
    except OSError as e:
        return f"{folder} is not writable ({e.strerror or e})"
    return None
