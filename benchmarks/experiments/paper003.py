"""Mauger et al. (2023) reproduced in one command: Table 3 (section 3.3) and Table 4 with the
simulated sensitive columns (section 4.3) on Adult.

    python benchmarks/experiments/paper003.py [--out DIR] [--simulated 5,50,500|all|none]

Writes DIR/paper003_table3/ and DIR/paper003_table4/ (default DIR: benchmarks/data/experiments).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import paper003_table3  # noqa: E402
import paper003_table4  # noqa: E402
from common import DEFAULT_OUT  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--simulated", default="5,50,500", help="sizes of the simulated columns, 'all' or 'none'")
    args = parser.parse_args()
    started = time.perf_counter()
    paper003_table3.main(["--out", str(Path(args.out) / "paper003_table3")])
    paper003_table4.main(["--out", str(Path(args.out) / "paper003_table4"), "--simulated", args.simulated])
    print(f"paper 003 reproduced in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
