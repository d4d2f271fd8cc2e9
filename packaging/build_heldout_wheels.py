"""Build the heldout data wheels from the checkout's heldout/ (or --heldout DIR) into --out.

    python packaging/build_heldout_wheels.py --out dist/

One wheel per distribution of `aht_bench.evaluation.data` (one per published set version,
its best responses apart, and the development sets), each file checked against its lock
first (`aht_bench.heldout.wheels`). Prints each wheel's size; the code wheel is built
separately (`pip wheel --no-deps .`). packaging/README.md says how a release goes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the wheels")
    parser.add_argument("--heldout", type=Path, default=REPO / "heldout", help="heldout/ folder")
    parser.add_argument("--json", action="store_true", help="print the wheels as JSON")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from aht_bench.heldout.wheels import WheelBuildError, build_wheels

    try:
        built, skipped = build_wheels(args.heldout, args.out)
    except WheelBuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows = [
        {"distribution": w.name, "wheel": w.path.name, "mb": round(w.size / 1e6, 2),
         "files": w.files, "data_mb": round(w.data_bytes / 1e6, 2)}
        for w in built
    ]  # fmt: skip
    if args.json:
        print(json.dumps({"wheels": rows, "skipped": skipped}, indent=1))
        return 0
    for r in rows:
        print(f"{r['wheel']:58s} {r['mb']:7.2f} MB  ({r['files']} files, {r['data_mb']} MB data)")
    print(f"{len(rows)} wheels, {sum(w.size for w in built) / 1e6:.1f} MB in all, in {args.out}")
    if skipped:
        print(f"not shipped ({len(skipped)} files, no distribution takes them): "
              + ", ".join(skipped[:8]) + (" ..." if len(skipped) > 8 else ""))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
