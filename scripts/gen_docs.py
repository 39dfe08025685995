"""Regenerate the reference pages in docs/reference/ (task catalog, CLI, Python API) from the code.

    python scripts/gen_docs.py           # write them
    python scripts/gen_docs.py --check   # exit 1, naming the stale pages, when the checked-in ones differ
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a checked-in page is stale")
    p.add_argument("--out", type=Path, default=REPO / "docs" / "reference", help="the folder of the pages")
    args = p.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from evalkit import reference
    if args.check:
        bad = reference.stale(args.out)
        for name in bad:
            print(f"{args.out / name}: stale; run `{reference.FIX}`", file=sys.stderr)
        return 1 if bad else 0
    for path in reference.write(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
