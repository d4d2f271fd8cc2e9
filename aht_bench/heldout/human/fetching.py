"""Fetching the Carroll data: the pinned sdist, the two pickles read out of it by name and
unpickled through an allow-list, converted once to the safe format (`fetch`).

May import jax, optax, numpy, pandas (to read the pickles only), the standard library and
aht_bench.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pickle
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from aht_bench.heldout.human.data import _npz_name, convert, data_folder, save_data
from aht_bench.heldout.human.versions import (
    _COLUMNS,
    ALLOWED_GLOBALS,
    OVERCOOKED_AI_VERSION,
    PICKLES,
    SDIST_FILENAME,
    SDIST_SHA256,
    SPLITS,
    HumanDataError,
    Log,
)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256(path: Path, expected: str, what: str) -> None:
    """Raise `HumanDataError` unless the file at `path` hashes to `expected`."""
    digest = sha256_file(path)
    if digest != expected:
        raise HumanDataError(
            f"{path} ({what}) has sha256 {digest}, expected {expected}: the file is corrupted "
            f"or not the pinned overcooked-ai {OVERCOOKED_AI_VERSION} release; delete it and "
            "run fetch again"
        )


def _download_sdist(folder: Path, log: Log) -> Path:
    """The pinned sdist in `folder`, downloaded with pip if it is not there yet."""
    path = folder / SDIST_FILENAME
    if path.is_file():
        check_sha256(path, SDIST_SHA256, "overcooked-ai sdist")
        return path
    log(f"downloading overcooked-ai=={OVERCOOKED_AI_VERSION} (sdist) with pip into {folder}")
    with tempfile.TemporaryDirectory(dir=folder, prefix=".pip-") as tmp:
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text(
            f"overcooked-ai=={OVERCOOKED_AI_VERSION} --hash=sha256:{SDIST_SHA256}\n"
        )
        target = Path(tmp) / "dl"
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--require-hashes",
            "-r",
            str(requirements),
            "-d",
            str(target),
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise HumanDataError(
                f"`pip download overcooked-ai=={OVERCOOKED_AI_VERSION}` failed (exit "
                f"{done.returncode}): {' | '.join(tail)}; check the network, or put "
                f"{SDIST_FILENAME} (sha256 {SDIST_SHA256}) into {folder} yourself"
            )
        got = target / SDIST_FILENAME
        if not got.is_file():
            raise HumanDataError(f"pip did not save {SDIST_FILENAME} (got {os.listdir(target)})")
        check_sha256(got, SDIST_SHA256, "overcooked-ai sdist")
        os.replace(got, path)
    return path


def extract_member(tar_path: Path, member: str, dest: Path) -> Path:
    """Copy one regular-file member of a tarball to `dest` (never `extractall`)."""
    with tarfile.open(tar_path, "r:gz") as archive:
        try:
            info = archive.getmember(member)
        except KeyError:
            raise HumanDataError(f"{tar_path} has no member {member}") from None
        if not info.isfile():
            raise HumanDataError(f"{member} in {tar_path} is not a regular file")
        source = archive.extractfile(info)
        if source is None:
            raise HumanDataError(f"cannot read {member} from {tar_path}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.tmp")
        with source, open(tmp, "wb") as out:
            shutil.copyfileobj(source, out)
        os.replace(tmp, dest)
    return dest


class AllowListUnpickler(pickle.Unpickler):
    """Unpickles only objects built from the (module, name) pairs of `ALLOWED_GLOBALS`.

    Every other global (functions such as `os.system`, any class) is refused with a
    `HumanDataError` before it is imported, so loading cannot run code outside pandas' and
    numpy's constructors of frames, indexes and arrays.
    """

    def __init__(self, file: Any, source: str = "pickle") -> None:
        super().__init__(file)
        self.source = source

    def find_class(self, module: str, name: str) -> Any:
        target = ALLOWED_GLOBALS.get((module, name))
        if target is None:
            allowed = ", ".join(f"{m}.{n}" for m, n in ALLOWED_GLOBALS)
            raise HumanDataError(
                f"{self.source} names the global {module}.{name}, which is not on the "
                f"allow-list of pandas/numpy names the human data needs ({allowed}); refusing "
                "to load it: it is not the Carroll et al. data file (or it was tampered with)"
            )
        return getattr(importlib.import_module(target[0]), target[1])

    def persistent_load(self, pid: Any) -> Any:
        raise HumanDataError(f"{self.source} uses persistent ids; the human data does not")


def load_pickle(path: Path, expected_sha256: str | None = None) -> Any:
    """The pandas DataFrame in `path`, read with `AllowListUnpickler` (sha256 checked first)."""
    import pandas as pd

    if expected_sha256 is not None:
        check_sha256(path, expected_sha256, "human data pickle")
    with open(path, "rb") as f:
        frame = AllowListUnpickler(f, source=str(path)).load()
    if not isinstance(frame, pd.DataFrame):
        raise HumanDataError(f"{path} holds a {type(frame).__name__}, not a pandas DataFrame")
    missing = [c for c in _COLUMNS if c not in frame.columns]
    if missing:
        raise HumanDataError(f"{path}: the frame lacks the columns {missing}")
    return frame


def fetch(data_dir: str | os.PathLike[str] | None = None, log: Log = print) -> Path:
    """Download, verify and convert the human data once; returns the cache folder.

    The folder then holds the sdist and `clean_{train,test}_trials.npz` (the safe format). A
    folder that already holds both `.npz` files is returned as it is.
    """
    folder = data_folder(data_dir)
    if all((folder / _npz_name(s)).is_file() for s in SPLITS):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    sdist = _download_sdist(folder, log)
    for split in SPLITS:
        if (folder / _npz_name(split)).is_file():
            continue
        member, digest = PICKLES[split]
        raw = folder / f".{Path(member).name}"
        try:
            extract_member(sdist, member, raw)
            check_sha256(raw, digest, f"{split} split pickle")
            start = time.perf_counter()
            frame = load_pickle(raw)
            data = convert(frame)
            save_data(folder / _npz_name(split), data)
        finally:
            raw.unlink(missing_ok=True)
        log(
            f"converted the {split} split: {data.num_trials} trials, "
            f"{len(data.reward)} joint steps ({time.perf_counter() - start:.0f}s)"
        )
    return folder
