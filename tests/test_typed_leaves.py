"""Leaves matched typed (``queries.typed_leaf``): for a column whose values' text casts back to
them (``Engine.exact_text_type``: integers, and dates on DuckDB), a lookup's leaf is cast to the
column's type instead of each row's value to text. The semantics stay the text's: a leaf matches
a value exactly when it is the value's text. The oracles: Python's own text of the integers and
dates, the engine's join on the text, and a release written with every column matched as text."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp
from statement_log import recorded

import sqlclose
from sqlclose.engine.base import Engine
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.sql import queries as q

BOUNDS = {"TINYINT": 2 ** 7, "SMALLINT": 2 ** 15, "INT": 2 ** 31, "BIGINT": 2 ** 63}
DATES = [dt.date(1, 1, 1), dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(9999, 12, 31)]
# Dates Python cannot hold, by their DuckDB text: BC, past the year 9999, and the infinities.
ODD_DATES = ["0001-12-31 (BC)", "5877642-06-25 (BC)", "10000-01-01", "5881580-07-10", "infinity", "-infinity"]


def _values(kind: str) -> tuple[str, list[str]]:
    """A VALUES list of the type's edge values (as SQL literals) and their texts by the oracle."""
    if kind == "DATE":
        literals = [f"DATE '{d.isoformat()}'" for d in DATES] + [f"DATE '{t}'" for t in ODD_DATES]
        return ", ".join(f"({v})" for v in literals), [d.isoformat() for d in DATES] + ODD_DATES
    bound = BOUNDS[kind]
    numbers = sorted({-bound, -bound + 1, -7, -1, 0, 1, 7, 10, 100, bound - 1})
    return ", ".join(f"(CAST({n} AS {kind}))" for n in numbers), [str(n) for n in numbers]


def _leaves(texts: list[str]) -> list[str]:
    """The values' texts and texts that are no value's: padded, signed, zero-led, in other forms."""
    odd = ["07", "+7", " 7", "7 ", "7.0", "1e2", "0x10", "-0", "", "x", "2020-1-1", "2020-01-01 ", "+2020-01-01",
           "1970-01-01T00:00:00", "0001-12-31 BC", "Infinity", "20240229"]
    return texts + [t for t in odd if t not in texts]


@pytest.mark.parametrize("kind", sorted(DuckDBEngine.exact_text_types.values()))
def test_a_typed_leaf_matches_exactly_the_values_whose_text_it_is(kind):
    values, texts = _values(kind)
    leaves = _leaves(texts)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE v AS SELECT * FROM (VALUES {values}) t(x)")
    con.execute("CREATE TABLE lk (value VARCHAR)")
    con.executemany("INSERT INTO lk VALUES (?)", [[t] for t in leaves])
    typed = q.typed_leaf(exp.column("value", "lk"), exp.DataType.build(kind)).sql("duckdb")
    by_type = set(con.execute(f"SELECT CAST(v.x AS TEXT), lk.value FROM v JOIN lk ON {typed} = v.x").fetchall())
    by_text = set(con.execute("SELECT CAST(v.x AS TEXT), lk.value FROM v JOIN lk ON lk.value = CAST(v.x AS TEXT)")
                  .fetchall())
    assert by_type == by_text == {(t, t) for t in texts}


@pytest.mark.parametrize("kind", sorted(Engine.exact_text_types.values()))
def test_a_typed_leaf_matches_the_same_on_spark(spark_session, kind):
    """Spark's integers (every engine's exact types): its own casts, its own text join."""
    values, texts = _values(kind)
    spark_session.sql(f"SELECT * FROM VALUES {values} AS t(x)").createOrReplaceTempView("typed_v")
    spark_session.createDataFrame([(t,) for t in _leaves(texts)], "value string").createOrReplaceTempView("typed_lk")
    typed = q.typed_leaf(exp.column("value", "lk"), exp.DataType.build(kind)).sql("spark")
    by_type = {tuple(r) for r in spark_session.sql(
        f"SELECT CAST(v.x AS STRING), lk.value FROM typed_v AS v JOIN typed_lk AS lk ON {typed} = v.x").collect()}
    by_text = {tuple(r) for r in spark_session.sql(
        "SELECT CAST(v.x AS STRING), lk.value FROM typed_v AS v JOIN typed_lk AS lk ON lk.value = CAST(v.x AS STRING)")
        .collect()}
    assert by_type == by_text == {(t, t) for t in texts}


@pytest.mark.parametrize("kind", sorted(set(DuckDBEngine.exact_text_types.values())))
def test_every_exact_type_casts_its_text_back(kind):
    """What ``typed_leaf``'s proof needs of a type: each value's text cast back is the value."""
    values, _ = _values(kind)
    con = duckdb.connect()
    rows = con.execute(f"SELECT COUNT(*), COUNT(*) FILTER (WHERE TRY_CAST(CAST(x AS TEXT) AS {kind}) = x) "
                       f"FROM (VALUES {values}) t(x)").fetchone()
    assert rows[0] > 5 and rows[1] == rows[0]


@pytest.mark.parametrize(("arrow_type", "duckdb_type", "base_type"), [
    (pa.int8(), "TINYINT", "TINYINT"), (pa.int16(), "SMALLINT", "SMALLINT"), (pa.int32(), "INT", "INT"),
    (pa.int64(), "BIGINT", "BIGINT"), (pa.date32(), "DATE", None), (pa.uint32(), None, None),
    (pa.float64(), None, None), (pa.string(), None, None), (pa.decimal128(10, 2), None, None),
    (pa.timestamp("us"), None, None), (pa.bool_(), None, None)])
def test_only_types_whose_text_casts_back_are_matched_typed(arrow_type, duckdb_type, base_type):
    assert Engine.exact_text_types.get(str(arrow_type)) == base_type  # Spark's: integers alone
    kind = DuckDBEngine().exact_text_type(arrow_type)
    assert (kind.sql("duckdb") if kind is not None else None) == (
        exp.DataType.build(duckdb_type).sql("duckdb") if duckdb_type else None)


@pytest.fixture(scope="module")
def people(tmp_path_factory) -> Path:
    """240 rows: an INTEGER age, a DATE of birth (one NULL, read as a stand-in), a BIGINT code, a
    SMALLINT sensitive column for ordered t, by hand-made arithmetic."""
    folder = tmp_path_factory.mktemp("typed")
    n = 240
    dob = [dt.date(1950, 1, 1) + dt.timedelta(days=(i * 7919) % 9000) for i in range(n)]
    pq.write_table(pa.table({
        "age": pa.array([20 + (i * 13) % 50 for i in range(n)], pa.int32()),
        "dob": pa.array(dob, pa.date32()),
        "born": pa.array([None if i == 5 else d for i, d in enumerate(dob)], pa.date32()),
        "code": pa.array([-(10 ** 12) + (i % 9) for i in range(n)], pa.int64()),
        "score": pa.array([(i * 7) % 11 for i in range(n)], pa.int16()),
    }), folder / "people.parquet")
    return folder


def _spec(folder: Path, out: str) -> dict:
    return {"others": "keep", "source": {"path": str(folder / "people.parquet")},
            "output": {"path": str(folder / out), "overwrite": True},
            "privacy": {"k": 4, "suppression": 0.05},
            "quasi_identifiers": {"age": {"bands": [10, 20], "domain": [0, 120]}, "dob": {"dates": True},
                                  "born": {"dates": ["year"], "nulls": "value", "null_value": "unknown"},
                                  "code": {"bands": [3]}},
            "sensitive": {"score": {"t": 0.4, "distance": "ordered"}}}


def _release(folder: Path, out: str) -> tuple[str, dict]:
    with sqlclose.anonymize(None, _spec(folder, out)) as release:
        release.write_parquet(folder / out)  # re-checked from the file before it is placed
    report = json.loads((folder / f"{out}.report.json").read_text())
    return hashlib.sha256((folder / out).read_bytes()).hexdigest(), report


def test_a_release_matched_typed_is_the_release_matched_as_text(people, monkeypatch):
    """The same file and the same report body (the search's counts, the node, the classes) as with
    every column matched by its text; and the typed joins did run (the base histogram's SQL)."""
    seen = recorded(monkeypatch, DuckDBEngine, "_execute")
    typed_file, typed_report = _release(people, "typed.parquet")
    base = [s for s in seen if "base_histogram" in s.split(" AS ", 1)[0]]
    assert base and base[0].count("TRY_CAST") == 2 * 4  # age, dob, code, score; not born (a stand-in)
    monkeypatch.setattr(DuckDBEngine, "exact_text_types", {})
    text_file, text_report = _release(people, "text.parquet")
    assert typed_file == text_file
    for key in ("node", "classes", "suppressed_rows", "privacy", "lattice", "utility"):
        assert _timeless(typed_report[key]) == _timeless(text_report[key]), key


def _timeless(part):
    """A report section without the time it took."""
    return {k: v for k, v in part.items() if k != "seconds"} if isinstance(part, dict) else part


@pytest.fixture(scope="module")
def odd_leaves(tmp_path_factory) -> Path:
    """An INTEGER age whose hierarchy file also lists leaves no integer's text is: '020' and '+21'
    (which cast to ages the table has), '07', ' 8', '8.0', 'n/a'. The typed match must skip them,
    on every engine, as the text match does (one row for each of the table's rows, not two)."""
    folder = tmp_path_factory.mktemp("odd")
    n = 120
    pq.write_table(pa.table({"age": pa.array([20 + (i * 7) % 40 for i in range(n)], pa.int32()),
                             "sick": [["flu", "cold", "ulcer"][(i * 5) % 3] for i in range(n)]}),
                   folder / "people.parquet")
    odd = ["020;20-29;*", "+21;20-29;*", "07;0-9;*", '" 8";0-9;*', "8.0;0-9;*", "n/a;unknown;*"]
    rows = [f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*" for a in range(121)] + odd
    (folder / "age.csv").write_text("\n".join(rows) + "\n")
    return folder


def _odd_spec(folder: Path) -> dict:
    return {"others": "keep", "source": {"path": str(folder / "people.parquet")},
            "privacy": {"k": 5, "suppression": 0.0},
            "quasi_identifiers": {"age": {"file": str(folder / "age.csv")}},
            "sensitive": {"sick": {"t": 0.5, "distance": "equal"}}}


def _grouped(path: Path) -> list[tuple]:
    """A written file's or folder's rows with their multiplicity, by a plain GROUP BY."""
    where = str(path / "**" / "*.parquet") if path.is_dir() else str(path)
    return duckdb.sql("SELECT CAST(age AS VARCHAR), sick, COUNT(*) FROM read_parquet($1) GROUP BY ALL ORDER BY ALL",
                      params=[where]).fetchall()


@pytest.mark.spark
def test_leaves_no_value_has_are_skipped_on_both_engines(odd_leaves, spark_session, monkeypatch, tmp_path):
    from sqlclose.engine import SparkEngine

    engine = SparkEngine(spark_session)
    try:
        with sqlclose.anonymize(None, _odd_spec(odd_leaves), engine=engine) as release:
            release.write_parquet_folder(tmp_path / "spark")
    finally:
        engine.close()
    with sqlclose.anonymize(None, _odd_spec(odd_leaves)) as release:
        release.write_parquet(tmp_path / "typed.parquet")
    monkeypatch.setattr(DuckDBEngine, "exact_text_types", {})
    with sqlclose.anonymize(None, _odd_spec(odd_leaves)) as release:
        release.write_parquet(tmp_path / "text.parquet")
    rows = _grouped(tmp_path / "text.parquet")
    assert sum(r[-1] for r in rows) == 120 and {r[0] for r in rows} <= {"20-29", "30-39", "40-49", "50-59", "*"}
    assert _grouped(tmp_path / "typed.parquet") == rows
    assert _grouped(tmp_path / "spark") == rows
