"""What a GROUP BY of packed keys costs DuckDB per row read and per group written.

The floors' greedy choice (``search/floors._floor_gain``) weighs a floor by this model:
a row read into g groups costs 1 + 0.66·log2(1 + g/65,536) reads into few groups, a group written
22 of them. This script measures the points the model was fitted on: a generated table's QI and
sensitive columns packed into one BIGINT per distinct row (as the search's keyed base), grouped
into coarser keys (bits cleared) from the base and from floors of it.

    python benchmarks/make_table.py --rows 10000000 --out benchmarks/data/rows_10000000
    python benchmarks/bench_group_cost.py benchmarks/data/rows_10000000/table.parquet

Prints a Markdown table: target, source, source rows, groups, median seconds, ns per row read.
"""

from __future__ import annotations

import argparse
import statistics
import time

import duckdb

# Bits per QI (age, zip, sex, race, marital status, education, workclass) and for the sensitive value.
BITS = [7, 17, 1, 3, 3, 6, 4]
SENSITIVE_BITS = 4
# Low bits cleared per QI: the sources (floors of the base) and the targets grouped from them.
SOURCES = {"base": None, "zip-1": [0, 4, 0, 0, 0, 0, 0], "zip-2": [0, 7, 0, 0, 0, 0, 0],
           "zip-3": [0, 10, 0, 0, 0, 0, 0]}
TARGETS = {"zip-2": [0, 7, 0, 0, 0, 0, 0], "zip-2 education": [0, 7, 0, 0, 0, 6, 0],
           "zip-3": [0, 10, 0, 0, 0, 0, 0], "zip-3 coarser": [3, 10, 0, 1, 1, 2, 2],
           "zip-4 all coarse": [3, 14, 0, 3, 3, 6, 4], "coarse": [7, 17, 1, 3, 3, 6, 0]}


def offsets() -> list[int]:
    out, at = [], SENSITIVE_BITS
    for bits in reversed(BITS):
        out.append(at)
        at += bits
    return list(reversed(out))


def mask(cleared: list[int]) -> int:
    m = (1 << 62) - 1
    for off, c in zip(offsets(), cleared):
        m &= ~(((1 << c) - 1) << off)
    return m


def keyed_base(con: duckdb.DuckDBPyConnection, parquet: str) -> None:
    codes = ["CAST(age AS BIGINT)", "CAST(zip AS BIGINT)", "CAST(sex = 'Female' AS BIGINT)"] + [
        f"CAST(hash({c}) % {1 << b} AS BIGINT)" for c, b in
        zip(["race", "marital_status", "education", "workclass"], BITS[3:])]
    key = " + ".join(f"({c} << {o})" for c, o in zip(codes, offsets()))
    con.execute(f"CREATE TABLE base AS SELECT {key} + CAST(hash(occupation) % {1 << SENSITIVE_BITS} AS BIGINT) AS key, "
                "CAST(COUNT(*) AS DOUBLE) AS n FROM read_parquet($1) GROUP BY ALL", [parquet])


def timed(con: duckdb.DuckDBPyConnection, source: str, target: list[int], runs: int) -> float:
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        con.execute(f"CREATE OR REPLACE TEMP TABLE out AS SELECT key & {mask(target)} AS key, SUM(n) AS n "
                    f"FROM {source} GROUP BY 1")
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("parquet", help="a table written by benchmarks/make_table.py")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"SET threads = {int(args.threads)}")
    keyed_base(con, args.parquet)
    rows = {}
    for name, cleared in SOURCES.items():
        table = "base" if cleared is None else f'"floor {name}"'
        if cleared is not None:
            con.execute(f"CREATE TABLE {table} AS SELECT key & {mask(cleared)} AS key, SUM(n) AS n "
                        "FROM base GROUP BY 1")
        rows[name] = (table, con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    print("| target | from | rows read | groups | seconds (median) | ns per row read |")
    print("|---|---|---|---|---|---|")
    for target, cleared in TARGETS.items():
        for name, (table, count) in rows.items():
            source = SOURCES[name]
            if source is not None and any(a > b for a, b in zip(source, cleared)):
                continue  # the floor is coarser than the target on some QI
            seconds = timed(con, table, cleared, args.runs)
            groups = con.execute("SELECT COUNT(*) FROM out").fetchone()[0]
            print(f"| {target} | {name} | {count:,} | {groups:,} | {seconds:.3f} | {seconds / count * 1e9:.1f} |")


if __name__ == "__main__":
    main()
