"""Compare a rebuilt heldout set with the published one: weight files byte for byte, and the
manifest's evaluation numbers (partner returns, cross-play, members and bounds).

    aht-bench heldout build --task lbf --out /tmp/lbf-rebuild --work /tmp/empty-cache
    python benchmarks/heldout_compare.py heldout/lbf-v1/v1 /tmp/lbf-rebuild

Exits 1 if anything differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compare(published: Path, rebuilt: Path) -> list[str]:
    """Lines describing the comparison; the ones starting with "DIFFERS" are failures."""
    lines = []
    files_a = sorted(p.relative_to(published) for p in published.rglob("*.safetensors"))
    files_b = sorted(p.relative_to(rebuilt) for p in rebuilt.rglob("*.safetensors"))
    if files_a != files_b:
        lines.append(
            f"DIFFERS weight files: only published {sorted(set(files_a) - set(files_b))}, "
            f"only rebuilt {sorted(set(files_b) - set(files_a))}"
        )
    for rel in sorted(set(files_a) & set(files_b)):
        a, b = _sha(published / rel), _sha(rebuilt / rel)
        lines.append(f"{'same' if a == b else 'DIFFERS'} {rel} {a[:16]} {b[:16]}")
    ma = json.loads((published / "manifest.json").read_text())
    mb = json.loads((rebuilt / "manifest.json").read_text())
    for key, pick in [
        ("members", lambda m: [x["name"] for x in m["members"]]),
        ("bounds", lambda m: [x["bounds"] for x in m["members"]]),
        ("partner_returns", lambda m: m["partner_returns"]),
        ("cross_play", lambda m: m["cross_play"]),
        ("pruned", lambda m: m["pruned"]),
    ]:
        lines.append(f"{'same' if pick(ma) == pick(mb) else 'DIFFERS'} manifest {key}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("published", type=Path)
    parser.add_argument("rebuilt", type=Path)
    args = parser.parse_args()
    lines = compare(args.published, args.rebuilt)
    print("\n".join(lines))
    bad = sum(line.startswith("DIFFERS") for line in lines)
    print(f"{len(lines) - bad} same, {bad} differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
