"""What grouping the base histogram costs when nearly every row is its own combination.

Preparation keeps a large source's rows as they stand in the base histogram (no GROUP BY) when one
HyperLogLog pass estimates its combinations at 90 % of its rows or more
(``prepare/problem._groups_base``). This script measures what that choice weighs: the base's
statement over a generated table (every column joined to a lookup of its text values, codes
stored narrow) grouped or not, sorted or not, and the estimate itself, by hash and by row.

    python benchmarks/make_table.py --rows 10000000 --out benchmarks/data/rows_10000000
    python benchmarks/bench_base_grouping.py benchmarks/data/rows_10000000/table.parquet

Prints a Markdown table: variant, rows stored (or the estimate), seconds per repeat.
"""

from __future__ import annotations

import argparse
import time

import duckdb

COLUMNS = ["age", "zip", "sex", "race", "marital_status", "education", "workclass", "occupation"]
ORDER = "ORDER BY c7, c1, c0, c5, c6, c3, c4, c2"  # as preparation sorts: the sensitive codes, the widest QI first


def _connect(path: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.read_parquet(path).create_view("src")
    for i, c in enumerate(COLUMNS):  # a lookup per column: its text values numbered
        con.execute(f"CREATE TEMP TABLE lk{i} AS SELECT v AS value, CAST(ROW_NUMBER() OVER (ORDER BY v) - 1 AS INT) "
                    f"AS code FROM (SELECT DISTINCT CAST({c} AS TEXT) AS v FROM src)")
    return con


def _variants() -> dict[str, str]:
    types = ["INT" if c == "zip" else "TINYINT" for c in COLUMNS]
    codes = ", ".join(f"CAST(lk{i}.code AS {t}) AS c{i}" for i, t in enumerate(types))
    joins = " ".join(f"JOIN lk{i} ON lk{i}.value = CAST(src.{c} AS TEXT)" for i, c in enumerate(COLUMNS))
    keys = ", ".join(f"lk{i}.code" for i in range(len(COLUMNS)))
    grouped = f"SELECT {codes}, COUNT(*) AS n FROM src {joins} GROUP BY {keys}"
    rows = f"SELECT {codes}, CAST(1 AS BIGINT) AS n FROM src {joins}"
    return {"grouped, sorted (before)": f"{grouped} {ORDER}", "one row per row, sorted (now)": f"{rows} {ORDER}",
            "grouped, unsorted": grouped, "one row per row, unsorted": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("table", help="a Parquet file written by make_table.py")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    con = _connect(args.table)
    row = ", ".join(COLUMNS)
    estimates = {"estimate by hash": f"SELECT APPROX_COUNT_DISTINCT(HASH({row})) FROM src",
                 "estimate by row (as preparation)": f"SELECT APPROX_COUNT_DISTINCT(({row})) FROM src"}
    print("| variant | rows (or estimate) | seconds |\n|---|---|---|")
    for name, query in _variants().items():
        times = []
        for _ in range(args.repeats):
            con.execute("DROP TABLE IF EXISTS b")
            started = time.perf_counter()
            con.execute(f"CREATE TEMP TABLE b AS {query}")
            times.append(time.perf_counter() - started)
        stored = con.execute("SELECT COUNT(*) FROM b").fetchone()[0]
        print(f"| {name} | {stored:,} | {', '.join(f'{t:.2f}' for t in times)} |")
    for name, query in estimates.items():
        times, found = [], 0
        for _ in range(args.repeats):
            started = time.perf_counter()
            found = con.execute(query).fetchone()[0]
            times.append(time.perf_counter() - started)
        print(f"| {name} | {found:,} | {', '.join(f'{t:.2f}' for t in times)} |")


if __name__ == "__main__":
    main()
