"""Benchmark: Adult on the Spark engine (local mode) against DuckDB, one run each.

Adult, 7 QIs, occupation sensitive (k = 5, t = 0.2 hierarchical), 0 % and 5 % suppression. Per
engine and suppression level: preparation (the scan, lookups, base histogram), search, the
release rows (``to_arrow``), the whole job, and the number of queries; the Spark session start
is timed on its own. Both engines read the same Parquet copy of adult.csv (the CSV readers infer
types differently, which is not what is measured here).

    python benchmarks/bench_engines.py          # Markdown table; --json for machines

Not a test: figures go to docs/engines.md with the machine they were taken on.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import duckdb

import sqlclose
from sqlclose.engine import DuckDBEngine, SparkEngine

REPO = Path(__file__).resolve().parents[1]


def _spec(suppression: float) -> sqlclose.Spec:
    os.environ.setdefault("SQLCLOSE_ADULT_DIR", str(REPO.parent / "shared" / "datasets" / "adult"))
    spec = sqlclose.load_spec(REPO / "datasets" / "adult" / "adult.toml")
    return spec.model_copy(update={"privacy": spec.privacy.model_copy(update={"suppression": suppression})})


def _run(engine, source: Path, suppression: float) -> dict:
    started = time.perf_counter()
    release = sqlclose.anonymize(source, _spec(suppression), engine=engine)
    rows = release.to_arrow().num_rows
    whole = time.perf_counter() - started
    return {"prepare_s": release.timings["prepare_seconds"], "search_s": release.timings["search_seconds"],
            "whole_s": whole, "release_rows": rows, "node": release.node,
            "queries": release.search.queries}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "adult.parquet"
        csv = Path(os.environ.get("SQLCLOSE_ADULT_DIR", REPO.parent / "shared" / "datasets" / "adult")) / "adult.csv"
        duckdb.sql(f"COPY (SELECT * FROM read_csv('{csv}', delim=';', header=true)) TO '{source}' (FORMAT PARQUET)")
        started = time.perf_counter()
        spark = SparkEngine()
        spark.spark.sparkContext.setLogLevel("ERROR")
        results = {"spark_session_start_s": time.perf_counter() - started}
        for suppression in (0.0, 0.05):
            results[f"duckdb_{suppression}"] = _run(DuckDBEngine(), source, suppression)
            results[f"spark_{suppression}"] = _run(spark, source, suppression)
        spark.close()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"Spark session start: {results['spark_session_start_s']:.1f} s\n")
    print("| engine | suppression | prepare (s) | search (s) | whole job (s) | search queries | release rows |")
    print("|---|---|---|---|---|---|---|")
    for key, r in results.items():
        if isinstance(r, dict):
            name, suppression = key.split("_")
            print(f"| {name} | {float(suppression):.0%} | {r['prepare_s']:.2f} | {r['search_s']:.2f} | "
                  f"{r['whole_s']:.2f} | {r['queries']} | {r['release_rows']} |")


if __name__ == "__main__":
    main()
