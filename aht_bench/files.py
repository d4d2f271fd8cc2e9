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
