"""The published heldout sets, pinned in the package: one sha256 per set lock.

A published set is `heldout/<task_id>/<version>/` with its lock `heldout/<task_id>/<version>.sha256`
(every file's sha256). The lock itself can be rewritten along with the files it lists, so its
digest is pinned here, in code a submitter does not ship: `load_set`, `aht-bench heldout
verify` and the leaderboard accept a set as published only when its lock's digest is the one
below, and treat any other folder (an unpinned `vN`, a consistently re-hashed set) as a
development set or refuse it. Publishing a set adds one line; a line never changes.

The digest is over the lock's entries, not its bytes (`lock_digest`), so comments and line
endings (a checkout on Windows) do not change it.

May import the standard library only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PINNED: dict[str, str] = {
    # "<task_id>/<version>": sha256 of the lock's entries (lock_digest)
    "lbf-v1/v1": "a1526be6faacad5f85c7bc6bdd77d24c6a4fcd3238163c41e8d1b80b2047f1d5",
    "lbf-v1/v2": "8e112ebf2578ba9a57bff874970cd5bd945d3ece4be8ba785e0246566321dcf8",
    "overcooked-asymm_advantages-v1/human-proxy-v1": (
        "73d8828430966cc5e332309e0c9e20c2178df7ebe276b6b76e4926e9838aa6ac"
    ),
    "overcooked-asymm_advantages-v1/v1": (
        "10903c35b77145796d11ddb5d0bc456eb353fd59c7e341a25eef09395ed4d706"
    ),
    "overcooked-asymm_advantages-v2/v2": (
        "60a1313e1bc427fa0e49b2b468683fbcb97848388bd6a63c19e7dcb38f704e1b"
    ),
    "overcooked-asymm_advantages-v2/human-proxy-v2": (
        "c6278ba4308cd29241da1dd7c17173544d87f7c35781371bd8cd0543426b863c"
    ),
    "overcooked-asymm_advantages-v2/human-proxy-v3": (
        "eb94463f6d07e94be26122192e71a30c9814f499b7d61cd0e03e8c4f4d57ac10"
    ),
    "overcooked-coord_ring-v1/human-proxy-v1": (
        "04c02244828da33e992312c1f1a05c1c12a691ab2fc48384de727bea31c88752"
    ),
    "overcooked-coord_ring-v1/v1": (
        "d366115d05e61f62a12da4d0770e043147b60523f8734b7157d3c9a11b7eb5a9"
    ),
    "overcooked-coord_ring-v2/v2": (
        "fb55a49aa7ba4ac4200d8b9f297099c988fbbb35e066bbe6bdde08390bbedd70"
    ),
    "overcooked-coord_ring-v2/human-proxy-v2": (
        "e0cdedf68eae2c12e436fd4f281c6b2bdbe517991a6bf71cb9a6f9df9ab404d5"
    ),
    "overcooked-coord_ring-v2/human-proxy-v3": (
        "b3fa0134c2451010ae2f3679a52d5b2d2396f4dc16546d933a07a21d4890b695"
    ),
    "overcooked-counter_circuit-v1/human-proxy-v1": (
        "7347923e3e671eb3cbfddfc1f722aa7e8633d35fc38cf9c601d23e42fb4ff289"
    ),
    "overcooked-counter_circuit-v1/v1": (
        "b781eeeeb5787ed1adc0ca17e13d728a26d75caf0d3d2596bc5a79be5a3ac4e4"
    ),
    "overcooked-counter_circuit-v2/v2": (
        "8b844b4f630cafa15f3f4db0f06fd115d8f8675a81712412d9417d3e173301df"
    ),
    "overcooked-counter_circuit-v2/human-proxy-v2": (
        "a078a4b654e98d868f1906c62ecf6a79fc3e51a26872fedb7e5c08713236887f"
    ),
    "overcooked-counter_circuit-v2/human-proxy-v3": (
        "77f9208a800b7815008b0e291b4e3477d0d5cc4a081bec42af6952dbe6dabb34"
    ),
    "overcooked-cramped_room-v1/human-proxy-v1": (
        "4f56f9aeeb660111c2722af291f6f7c4cb4f7f4b16344655b6fe41cf798c442f"
    ),
    "overcooked-cramped_room-v1/v1": (
        "25eb22cfa4538373c8b23daf466c154f6ddead059650dd5d696ae4312ca14cb2"
    ),
    "overcooked-cramped_room-v2/v2": (
        "54545a07488d13cdb763fe130cf689c195b4b9ca10304bb0158da6af2c9e5af1"
    ),
    "overcooked-cramped_room-v2/human-proxy-v2": (
        "7064c9c9292a837ad46c176e2e886052a017eee93f42943d5394d63165428f22"
    ),
    "overcooked-cramped_room-v2/human-proxy-v3": (
        "0b6c24a87c094f4617237ec0ca0acf4e055f647390ae2bb9255634f80770817c"
    ),
    "overcooked-forced_coord-v1/human-proxy-v1": (
        "8ab760c8df2fa4400e7d8dfb8e78480d4d9b11174be6bba77524d872c37d670d"
    ),
    "overcooked-forced_coord-v1/v1": (
        "690fe6f1b2a06c4e7639a5718bdb780cb5a3e9863c7e9265c958999379cf86a8"
    ),
    "overcooked-forced_coord-v2/v2": (
        "407cb0895c77eebc72228c1acb563e3ee78a2f0da27d90cbdaa3e967a0684184"
    ),
    "overcooked-forced_coord-v2/v3": (
        "39d6565006cdf8425a9da6bc526f03dbfa63a60a0d550e951d8771c9afec91b7"
    ),
    "overcooked-forced_coord-v2/human-proxy-v2": (
        "40919c62b9c906e7fbc36aa471dc0d1c5d37f8731c1902ca0af40933a381cd81"
    ),
    "overcooked-forced_coord-v2/human-proxy-v3": (
        "181ba78eae4be73b13f4bceeac34fb4dc20fcdeeb6e6124acc13c64dd227ef02"
    ),
}
"""`<task_id>/<version>` -> `lock_digest` of the published set's lock."""


class LockFormatError(ValueError):
    """A lock file with a line that is not `<sha256>  <path>`."""


def read_lock_file(path: Path) -> dict[str, str]:
    """path (relative to heldout/) -> sha256, from one set lock."""
    return parse_lock(path.read_text(), str(path))


def parse_lock(text: str, where: str) -> dict[str, str]:
    """path (relative to heldout/) -> sha256, from the text of one set lock (`where` names it
    in a `LockFormatError`)."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) != 2 or len(parts[0]) != 64:
            raise LockFormatError(f"{where}:{n} is not a 'sha256  path' line")
        out[parts[1].strip()] = parts[0]
    return out


def lock_digest(entries: dict[str, str]) -> str:
    """The pinned digest of a lock's entries: sha256 of its sorted `sha256  path` lines."""
    text = "".join(f"{d}  {p}\n" for p, d in sorted(entries.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def pin_key(task_id: str, version: str) -> str:
    return f"{task_id}/{version}"


def pin_line(task_id: str, version: str, entries: dict[str, str]) -> str:
    """The line publishing a set adds to `PINNED`."""
    return f'    "{pin_key(task_id, version)}": "{lock_digest(entries)}",'


__all__ = [
    "PINNED",
    "LockFormatError",
    "lock_digest",
    "parse_lock",
    "pin_key",
    "pin_line",
    "read_lock_file",
]
