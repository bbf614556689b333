"""Benchmark: the ways a release is written, side by side (docs/performance.md, twenty-third round).

- *every QI looked up*: read from the source's rows, each row joined to every quasi-identifier's
  lookup and sorted by every released column (``queries.release`` before that round);
- *QIs at their top as constants*: the same, but a QI generalized to its hierarchy's top is its
  one label, joined to no lookup and sorted by nothing;
- *rebuilt from counts*: the base histogram grouped to the node, each class row repeated
  (``sql/release_counts.py``), when every released column is a QI or a sensitive column
  (``--others drop``).

One search, then the release written (COPY to Parquet) and re-checked from the file again and
again, the ways alternated, into a scratch folder; medians of the write and of the whole
write + re-check:

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
from sqlclose.prepare.release_query import top_label
from sqlclose.sql import queries as q


def _digest(path: Path) -> tuple:
    """Rows and an order-dependent hash of the file's rows (row number mixed into each row's hash)."""
    return duckdb.sql("SELECT COUNT(*), SUM(h) FROM (SELECT HASH(t, ROW_NUMBER() OVER ()) % 1000000007 AS h "
                      "FROM read_parquet($1) AS t)", params=[str(path)]).fetchall()[0]


def _ways(release: sqlclose.Release) -> dict[str, Callable]:
    """Per way: the release query it writes (``Release._query``'s shape: query and parameters)."""
    problem, node = release.problem, release.search.optimum

    def from_source(constants: bool) -> Callable:
        def query() -> tuple:
            params = q.Params()
            released = [q.ReleasedQI(qi.coded, level, qi.hierarchy.divisors[level], top_label(qi, level) if constants
                                     else None) for qi, level in zip(problem.qis, node)]
            built = q.release(problem.source, problem.released, released, release._suppressed(), params)
            return built, params.values
        return query

    ways = {"read from the source's rows, every QI looked up (before)": from_source(False),
            "read from the source's rows, QIs at their top as constants": from_source(True)}
    if release._counted_columns() is not None:
        ways["rebuilt from counts"] = release._query
    return ways


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
        digests = {}
        for i in range(args.repeats):
            for name, query in ways.items():
                release._query = query
                path = Path(scratch) / f"{i}_{len(digests)}.parquet"
                began = time.perf_counter()
                release.write(path)
                whole[name].append(time.perf_counter() - began)
                write[name].append(release.timings["write_seconds"])
                digests[name] = _digest(path)
                path.unlink()
                path.with_name(path.name + ".report.json").unlink()
        if len(set(digests.values())) != 1:
            raise SystemExit(f"the ways wrote different files: {digests}")
    print(f"\n{digests[name][0]:,} rows released, same content and order every way\n")
    print("| way | write (median) | write + re-check (median) | runs |")
    print("|---|---|---|---|")
    for name in ways:
        print(f"| {name} | {statistics.median(write[name]):.2f} s | {statistics.median(whole[name]):.2f} s | "
              f"{', '.join(f'{s:.2f}' for s in whole[name])} |")


if __name__ == "__main__":
    main()
