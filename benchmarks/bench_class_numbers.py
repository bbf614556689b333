"""Benchmark: the re-check's class numbering on Spark, ranked over the whole relation against
ranked within hash buckets (``Engine.class_numbers``), over a table's (QI, value) groups.

The re-check groups the written file by (QI values, sensitive value) and numbers each class
(``sql/templates/verify_counts.sql``). A DENSE_RANK over the whole relation is one partition on
Spark: every group goes to one task. This times that statement both ways, alternated, over the
same table, forcing every number (``COUNT(DISTINCT cls)``):

    python benchmarks/make_table.py --rows 10000000 --out benchmarks/data/rows_10000000
    python benchmarks/bench_class_numbers.py --table benchmarks/data/rows_10000000/table.parquet

A raw table stands in for a release whose classes are as fine as its rows: its groups are
(nearly) its rows. Not a test: figures go to docs/performance.md with the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from sqlglot import exp

from sqlclose.engine import SparkEngine
from sqlclose.engine.base import FileRead, dense_rank
from sqlclose.sql.templates import template

QIS = "age,zip,sex,race,marital_status,education,workclass"


def _timed(engine: SparkEngine, numbered: exp.Expression) -> tuple[float, tuple]:
    query = exp.select(exp.Count(this=exp.Distinct(expressions=[exp.column("cls")])).as_("classes"),
                       exp.Sum(this=exp.column("n")).as_("rows")).from_(numbered.subquery("counts"))
    started = time.perf_counter()
    row = engine.fetch(query).to_pylist()[0]
    return time.perf_counter() - started, (row["classes"], row["rows"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=Path, required=True, help="a Parquet file (make_table.py's table.parquet)")
    parser.add_argument("--qis", default=QIS, help=f"comma-separated QI columns (default: {QIS})")
    parser.add_argument("--value", default="occupation", help="the sensitive column")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()

    engine = SparkEngine(master=args.master, conf={"spark.driver.memory": "8g"})
    engine.spark.sparkContext.setLogLevel("ERROR")
    source = engine.source_relation(FileRead(kind="parquet", path=args.table.resolve()))
    keys = [exp.column(exp.to_identifier(c, quoted=True)) for c in args.qis.split(",")]
    value = exp.Cast(this=exp.column(exp.to_identifier(args.value, quoted=True)), to=exp.DataType.build("TEXT"))
    ways = {"whole relation (before)": dense_rank(keys), "hash buckets (now)": engine.class_numbers(keys)}
    counts = {name: template("verify_counts", release=source, qi=keys, value=value, number=number)
              for name, number in ways.items()}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    answers = set()
    for _ in range(args.repeats):
        for name, query in counts.items():
            took, answer = _timed(engine, query)
            seconds[name].append(took)
            answers.add(answer)
    engine.close()
    assert len(answers) == 1, f"the two numberings disagree: {answers}"
    classes, rows = answers.pop()
    print(f"{args.table}: {rows:,} rows, {classes:,} classes; Spark {args.master}, repeats {args.repeats}\n")
    print("| class numbers | median | min | max |")
    print("|---|---|---|---|")
    for name, times in seconds.items():
        print(f"| {name} | {statistics.median(times):.1f} s | {min(times):.1f} s | {max(times):.1f} s |")


if __name__ == "__main__":
    main()
