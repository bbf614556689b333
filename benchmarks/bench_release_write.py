"""Benchmark: the ways a release is written, side by side (docs/performance.md, twenty-third and
twenty-fourth rounds).

- *every QI looked up*: read from the source's rows, each row joined to every quasi-identifier's
  lookup and sorted by every released column (``queries.release`` before the twenty-third round);
- *QIs at their top as constants*: the same, but a QI generalized to its hierarchy's top is its
  one label, joined to no lookup and sorted by nothing;
- *rebuilt from counts*: the base histogram grouped to the node, each class row repeated
  (``sql/release_counts.py``), when every released column is a QI or a sensitive column
  (``--others drop``);
- *… as text* or *… in dictionary types*: the labels (and, from counts, text values) as VARCHAR,
  or as the engine's dictionary types (``Engine.dictionary_type``: DuckDB's ENUM), as a Parquet
  write runs since the twenty-fourth round.

One search, then the release written (COPY to Parquet) and re-checked from the file again and
again, the ways alternated, into a scratch folder; medians of the write and of the whole
write + re-check, and the file's size:

    python benchmarks/make_table.py --rows 10000000 --out benchmarks/data/rows_10000000
    python benchmarks/bench_release_write.py benchmarks/data/rows_10000000/table.toml
    python benchmarks/bench_release_write.py benchmarks/data/rows_10000000/table.toml --others drop

Every way must write the same rows in the same order: the script compares their content digests
(an order-dependent hash of every row, in DuckDB) before it prints anything. Not a test: figures
go to docs/performance.md with the machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

import sqlclose
from sqlclose.model.spec import EngineSettings, load_spec
from sqlclose.prepare.release_query import Counted, release_query
from sqlclose.sql import queries as q


def _digest(path: Path) -> tuple:
    """Rows and an order-dependent hash of the file's rows (row number mixed into each row's hash)."""
    return duckdb.sql("SELECT COUNT(*), SUM(h) FROM (SELECT HASH(t, ROW_NUMBER() OVER ()) % 1000000007 AS h "
                      "FROM read_parquet($1) AS t)", params=[str(path)]).fetchall()[0]


def _ways(release: sqlclose.Release) -> dict[str, Callable]:
    """Per way: the release query it writes, as ``Release._query`` (query and parameters; its
    argument, whether a Parquet write asks for dictionary types, is the way's to decide)."""
    problem, node = release.problem, release.search.optimum

    def every_qi_looked_up(_: bool = False) -> tuple:
        params = q.Params()
        released = [q.ReleasedQI(qi.coded, level, qi.hierarchy.divisors[level]) for qi, level in zip(problem.qis, node)]
        return q.release(problem.source, problem.released, released, release._suppressed(), params), params.values

    def built(counted: Counted | None, dictionaries: bool) -> Callable:
        def query(_: bool = False) -> tuple:
            params = q.Params()
            return release_query(problem, node, release._suppressed(), params, counted, dictionaries), params.values
        return query

    ways = {"read from the source's rows, every QI looked up (before the twenty-third round)": every_qi_looked_up}
    for dictionaries, kind in ((False, "as text"), (True, "in dictionary types")):
        ways[f"read from the source's rows, QIs at their top as constants, {kind}"] = built(None, dictionaries)
    counted = release._counted_columns()
    if counted is not None:
        for dictionaries, kind in ((False, "as text"), (True, "in dictionary types")):
            ways[f"rebuilt from counts, {kind}"] = built(counted, dictionaries)
    return ways


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("--others", choices=["drop", "keep"], help="override the spec's others")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-limit", help="the job's memory limit, e.g. 4GB")
    args = parser.parse_args()

    spec = load_spec(args.spec)
    changes = {"others": args.others} if args.others else {}
    if args.memory_limit:
        changes["engine"] = (spec.engine or EngineSettings()).model_copy(update={"memory_limit": args.memory_limit})
    spec = spec.model_copy(update=changes)
    started = time.perf_counter()
    with sqlclose.anonymize(None, spec) as release, tempfile.TemporaryDirectory(dir=args.spec.parent) as scratch:
        print(f"prepared and searched in {time.perf_counter() - started:.1f} s; node {release.node}")
        ways = _ways(release)
        write: dict[str, list[float]] = {name: [] for name in ways}
        whole: dict[str, list[float]] = {name: [] for name in ways}
        digests, sizes = {}, {}
        for i in range(args.repeats):
            for name, query in ways.items():
                release._query = query
                path = Path(scratch) / f"{i}_{len(digests)}.parquet"
                began = time.perf_counter()
                release.write(path)
                whole[name].append(time.perf_counter() - began)
                write[name].append(release.timings["write_seconds"])
                digests[name], sizes[name] = _digest(path), path.stat().st_size
                path.unlink()
                path.with_name(path.name + ".report.json").unlink()
        if len(set(digests.values())) != 1:
            raise SystemExit(f"the ways wrote different files: {digests}")
    print(f"\n{digests[name][0]:,} rows released, same content and order every way\n")
    print("| way | write (median) | write + re-check (median) | runs | file |")
    print("|---|---|---|---|---|")
    for name in ways:
        print(f"| {name} | {statistics.median(write[name]):.2f} s | {statistics.median(whole[name]):.2f} s | "
              f"{', '.join(f'{s:.2f}' for s in whole[name])} | {sizes[name] / 1e6:.1f} MB |")


if __name__ == "__main__":
    main()
