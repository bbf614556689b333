"""Benchmark: GAA as a release algorithm on Adult — the whole job (prepare, GAA, write, verify
from the file, report), per strategy.

    python benchmarks/bench_gaa_release.py                      # 9 QIs, k = 5, S1
    python benchmarks/bench_gaa_release.py --sensitive occupation --strategies S1,S2,S3,S4,S5,S6,S7,ldiv,tclo

With ``--sensitive``, that column is sensitive (entropy_l = 1: it never binds, so the strategies
alone differ) and the other eight attributes are QIs. Not a test: figures go to docs/utility.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import sqlclose

REPO = Path(__file__).resolve().parents[1]
ADULT = Path(os.environ.get("SQLCLOSE_ADULT_DIR", REPO.parent / "shared" / "datasets" / "adult"))
HIERARCHIES = REPO / "datasets" / "adult" / "hierarchies"
NINE = ("age", "workclass", "education", "native-country", "marital-status", "race", "sex", "occupation",
        "salary-class")


def spec(k: int, strategy: str, sensitive: str | None) -> dict:
    qis = {name: {"bands": [5, 10, 20]} if name == "age" else {"file": str(HIERARCHIES / f"{name}.csv")}
           for name in NINE if name != sensitive}
    out = {"quasi_identifiers": qis, "privacy": {"k": k}, "search": {"algorithm": "gaa", "strategy": strategy}}
    if sensitive:
        out["sensitive"] = {sensitive: {"entropy_l": 1}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--strategies", default="S1")
    parser.add_argument("--sensitive")
    args = parser.parse_args()
    print("| strategy | classes | merges | GAA s | whole job s | NLLM alteration | mean alteration | % gen | % root |")
    print("|---|---|---|---|---|---|---|---|---|")
    for strategy in args.strategies.split(","):
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            with sqlclose.anonymize(ADULT / "adult.csv", spec(args.k, strategy, args.sensitive)) as release:
                doc = release.write_parquet(Path(tmp) / "r.parquet")
                merges = release.gaa_run.result.merges  # the run's own count: the report leaves it out (leaks)
                u = release.summary["utility"]  # the operator's: the report withholds NLLM (age is banded by rule)
        total = time.perf_counter() - started
        g = doc["gaa"]
        print(f"| {strategy} | {doc['classes']} | {merges} | {g['seconds']:.1f} | {total:.1f} | "
              f"{u['alteration']['nllm']:.2f} | {u['mean_alteration']:.2f} | {u['generalized_percent']:.1f} | "
              f"{u['root_percent']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
