"""Rows of failing classes left out of a release (``queries.without_suppressed``): an anti-join.

The oracle is a filter written in plain Python over the same small tables: a row stays exactly when
no row of the suppressed table holds its codes, compared equal (a NULL code matches nothing). The
cases: random tables with NULL codes, suppressed tables with repeated rows (the LEFT JOIN must not
repeat a kept row), any subset of the code columns, and none of them (every QI at its top: each row
is of the one class, so one failing class leaves out every row). Then why it is an anti-join:
DuckDB plans it as one, on the lookup, before the rows meet it, where NOT EXISTS was decorrelated
by grouping the rows by their codes (924 k groups for the 1 M release: docs/performance.md,
seventy-seventh round).
"""

from __future__ import annotations

import itertools
import random

import duckdb
import pytest
from sqlglot import exp

from sqlclose.sql import queries as q

CODES = ("a", "b", "c")


def _tables(rng: random.Random) -> tuple[list[tuple], list[tuple]]:
    """Rows (codes, then an id) over tiny domains, NULLs among them, and suppressed rows (codes alone),
    some repeated."""
    def code() -> int | None:
        return None if rng.random() < 0.1 else rng.randint(0, 2)
    rows = [(code(), code(), code(), i) for i in range(rng.randint(0, 40))]
    suppressed = [(code(), code(), code()) for _ in range(rng.randint(0, 6))]
    return rows, suppressed + rng.sample(suppressed, min(len(suppressed), rng.randint(0, 2)))


def _kept_by_python(rows: list[tuple], suppressed: list[tuple], names: tuple[str, ...]) -> list[int]:
    at = [CODES.index(n) for n in names]
    if not names:
        return [] if suppressed else sorted(r[3] for r in rows)
    failing = {tuple(s[i] for i in at) for s in suppressed}
    return sorted(r[3] for r in rows
                  if not any(all(r[i] is not None and r[i] == f[j] for j, i in enumerate(at)) for f in failing))


def _query(names: tuple[str, ...], dialect: str) -> str:
    select = exp.select(q.col("id", "t")).from_(exp.alias_(q.table("t"), "t", table=True))
    return q.without_suppressed(select, q.table("s"), [(n, q.col(n, "t")) for n in names]).sql(dialect)


def _load(con: duckdb.DuckDBPyConnection, rows: list[tuple], suppressed: list[tuple]) -> None:
    con.execute("CREATE OR REPLACE TABLE t (a INT, b INT, c INT, id INT)")
    con.execute("CREATE OR REPLACE TABLE s (a INT, b INT, c INT)")
    if rows:
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    if suppressed:
        con.executemany("INSERT INTO s VALUES (?, ?, ?)", suppressed)


SUBSETS = [names for k in range(len(CODES) + 1) for names in itertools.combinations(CODES, k)]


@pytest.mark.parametrize("seed", range(40))
def test_the_rows_kept_are_those_of_no_failing_class(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    for _ in range(5):
        rows, suppressed = _tables(rng)
        _load(con, rows, suppressed)
        for names in SUBSETS:
            kept = sorted(r[0] for r in con.execute(_query(names, "duckdb")).fetchall())
            assert kept == _kept_by_python(rows, suppressed, names), (names, rows, suppressed)


def test_a_repeated_failing_class_and_a_null_code_by_hand():
    con = duckdb.connect()
    rows = [(0, 1, 2, 1), (0, 1, 2, 2), (0, None, 2, 3), (1, 1, 2, 4)]
    _load(con, rows, [(0, 1, 9), (0, 1, 9), (None, None, None)])
    assert sorted(r[0] for r in con.execute(_query(("a", "b"), "duckdb")).fetchall()) == [3, 4]
    assert sorted(r[0] for r in con.execute(_query((), "duckdb")).fetchall()) == []
    con.execute("DELETE FROM s")
    assert sorted(r[0] for r in con.execute(_query((), "duckdb")).fetchall()) == [1, 2, 3, 4]


def test_duckdb_plans_it_as_a_join_not_a_decorrelated_subquery():
    """As in a release: the class codes are expressions of a lookup joined to the rows."""
    con = duckdb.connect()
    con.execute("CREATE TABLE src AS SELECT i % 1000 AS v, i AS id FROM range(100000) AS r(i)")
    con.execute("CREATE TABLE lk AS SELECT i AS value, i AS code FROM range(1000) AS r(i)")
    con.execute("CREATE TABLE s AS SELECT * FROM (VALUES (1, 3), (2, 4)) AS f(a, b)")
    rows = exp.select(q.col("id", "src")).from_(exp.alias_(q.table("src"), "src", table=True)).join(
        exp.alias_(q.table("lk"), "lk", table=True), on="lk.value = src.v")
    codes = [("a", exp.IntDiv(this=q.col("code", "lk"), expression=exp.Literal.number(10))),
             ("b", exp.Mod(this=q.col("code", "lk"), expression=exp.Literal.number(7)))]
    ours = q.without_suppressed(rows.copy(), q.table("s"), codes).sql("duckdb")
    correlated = rows.where(exp.Not(this=exp.Exists(this=exp.select("1").from_(
        exp.alias_(q.table("s"), "supp", table=True)).where(exp.and_(
            *[exp.EQ(this=q.col(n, "supp"), expression=c) for n, c in codes]))))).sql("duckdb")

    def plan(sql: str) -> str:
        return "\n".join(str(r[1]) for r in con.execute("EXPLAIN " + sql).fetchall())

    # DuckDB reads the LEFT JOIN … IS NULL as an ANTI join, and runs it on the lookup, before the rows
    assert "delim" not in plan(ours).lower() and "Join Type: ANTI" in plan(ours), plan(ours)
    assert "delim" in plan(correlated).lower()  # what it replaced: a CTE of the rows, __duckdb_delim_<n>
    kept = con.execute(f"SELECT COUNT(*), SUM(id) FROM ({ours})").fetchone()
    assert kept == con.execute(f"SELECT COUNT(*), SUM(id) FROM ({correlated})").fetchone()
    assert kept == con.execute("SELECT COUNT(*), SUM(id) FROM src WHERE NOT ((v // 10 = 1 AND v % 7 = 3) "
                               "OR (v // 10 = 2 AND v % 7 = 4))").fetchone()


@pytest.mark.spark
def test_spark_keeps_the_same_rows(spark_session):
    rng = random.Random(5)
    for _ in range(3):
        rows, suppressed = _tables(rng)
        spark_session.createDataFrame(rows or [(0, 0, 0, -1)], "a INT, b INT, c INT, id INT") \
            .where("id >= 0").createOrReplaceTempView("t")
        spark_session.createDataFrame(suppressed or [(0, 0, 0)], "a INT, b INT, c INT") \
            .where(f"{'true' if suppressed else 'false'}").createOrReplaceTempView("s")
        for names in SUBSETS:
            kept = sorted(r[0] for r in spark_session.sql(_query(names, "spark")).collect())
            assert kept == _kept_by_python(rows, suppressed, names), (names, rows, suppressed)
