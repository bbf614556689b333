"""Benchmark: Adult on the Spark engine (local mode) against DuckDB, one run each.

Adult, 7 QIs, occupation sensitive (k = 5, t = 0.2 hierarchical), 0 % and 5 % suppression. Per
engine and suppression level: preparation (the scan, lookups, base histogram), search, the
release rows (``to_arrow``), the whole job, and the number of queries; the Spark session start
is timed on its own. Both engines read the same Parquet copy of adult.csv (the CSV readers infer
types differently, which is not what is measured here).

    python benchmarks/bench_engines.py          # Markdown table; --json for machines

A generated table (benchmarks/make_table.py) instead, the whole job per engine — scan
(preparation), search, write (a Parquet folder, verified from disk, with its report):

    python benchmarks/make_table.py --rows 10000000 --out benchmarks/data/10m
    python benchmarks/bench_engines.py --table benchmarks/data/10m/table.toml [--engines duckdb,spark,spark-remote]

``--rows-per-part N`` sets Spark's rows per part file of the release folder (``SparkEngine.rows_per_part``;
a number above the release's rows writes one part file), to compare the parallel write with one.

``spark`` runs the search locally over the collected base histogram (the hybrid rule);
``spark-remote`` keeps the search's queries on Spark (``local_search=False``), to find the crossover.

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


def _table_spec(spec_path: Path, without: list[str]) -> sqlclose.Spec:
    """The generated table's spec, optionally without some QIs (released unchanged instead): with
    ZIP codes as a QI, 10 M rows have ~10 M distinct combinations and the search alone takes hours."""
    spec = sqlclose.load_spec(spec_path)
    if not without:
        return spec
    qis = {k: v for k, v in spec.quasi_identifiers.items() if k not in without}
    return spec.model_copy(update={"quasi_identifiers": qis, "others": "keep"})


def _job(engine, spec: sqlclose.Spec, out: Path) -> dict:
    """Scan, search, write + verify of a generated table's spec: a Parquet folder release."""
    started = time.perf_counter()
    with sqlclose.anonymize(None, spec, engine=engine) as release:
        scanned = time.perf_counter()
        write_started = time.perf_counter()
        doc = release.write_parquet_folder(out, overwrite=True)
        written = time.perf_counter()
        return {"scan_s": release.timings["prepare_seconds"], "search_s": release.timings["search_seconds"],
                "write_s": doc["timings"].get("write_seconds"), "verify_s": doc["timings"].get("verify_seconds"),
                "write_verify_report_s": written - write_started, "whole_s": written - started,
                "anonymize_s": scanned - started, "base_rows": release.problem.base_rows,
                "rows": release.problem.rows, "queries": release.search.queries, "node": release.node,
                "released_rows": doc["output"]["rows"]}


def _engine(name: str, rows_per_part: int | None = None):
    if name == "duckdb":
        return DuckDBEngine()
    engine = SparkEngine(local_search=name == "spark", conf={"spark.driver.memory": "4g"})
    engine.spark.sparkContext.setLogLevel("ERROR")
    if rows_per_part:
        engine.rows_per_part = rows_per_part
    return engine


def table_main(args: argparse.Namespace) -> None:
    results = {}
    out = Path(args.table).parent / "out"
    for name in args.engines.split(","):
        started = time.perf_counter()
        engine = _engine(name, args.rows_per_part)
        start_s = time.perf_counter() - started
        try:
            spec = _table_spec(Path(args.table), args.without.split(",") if args.without else [])
            results[name] = {"engine_start_s": start_s, **_job(engine, spec, out / f"{name}-release")}
        finally:
            engine.close()
        print(name, json.dumps(results[name]), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| engine | start (s) | scan (s) | search (s) | write (s) | verify (s) | whole job (s) | base rows "
          "| queries |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['engine_start_s']:.1f} | {r['scan_s']:.1f} | {r['search_s']:.1f} | {r['write_s']:.1f} | "
              f"{r['verify_s']:.1f} | {r['whole_s']:.1f} | {r['base_rows']:,} | {r['queries']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--table", help="a generated table's spec (make_table.py) instead of Adult")
    parser.add_argument("--engines", default="duckdb,spark", help="duckdb, spark (hybrid search), spark-remote")
    parser.add_argument("--without", help="QIs to leave out of the generated table's spec (comma-separated)")
    parser.add_argument("--rows-per-part", type=int, help="Spark: rows per part file of the release folder")
    args = parser.parse_args()
    if args.table:
        table_main(args)
        return
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
