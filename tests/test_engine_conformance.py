"""What every engine must do, run against each registered engine (Spark when pyspark is installed).

A third engine passes this file before anything else: fetch, bound parameters, temp tables,
registered Arrow tables, schema, Parquet round trip, CSV sources, the row hash and close. The
expected values are written out by hand.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import random
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from sqlglot import exp

from sqlclose.audit import tables
from sqlclose.engine import Engine, engine_for, registered_engines
from sqlclose.engine.base import FileRead
from sqlclose.errors import EngineError, InputError
from sqlclose.sql import queries as q

TABLE = pa.table({"id": [1, 2, 3], 'a"b': ["x", "y", None], "v": [0.5, 1.5, 2.5]})


def _select(*columns: exp.Expression, source: exp.Expression | None = None) -> exp.Select:
    query = exp.select(*columns)
    return query.from_(source.copy()) if source is not None else query


def _row_keys(engine: Engine, values: list[exp.Expression],
              as_is: list[bool] | None = None) -> tuple[exp.Expression, exp.Expression]:
    """The truth test's keys of a row hashed value by value, as the verifier composes them:
    each value's ``value_hash`` (as text unless ``as_is``), then ``keys_of_hashes``."""
    kept = as_is or [False] * len(values)
    return engine.keys_of_hashes([engine.value_hash(v, keep) for v, keep in zip(values, kept, strict=True)])


@pytest.fixture(params=[pytest.param(name, marks=[pytest.mark.spark] if name == "spark" else [])
                        for name in registered_engines()])
def make_engine(request) -> Callable[[], Engine]:
    """Engines on one shared connection / session, so one can see what another left behind."""
    if request.param == "duckdb":
        import duckdb

        con = duckdb.connect()
        request.addfinalizer(con.close)
        handle = {"connection": con}
    elif request.param == "spark":
        handle = {"session": request.getfixturevalue("spark_session")}
    else:
        pytest.fail(f"no conformance set-up for engine {request.param!r}: add one here")
    made: list[Engine] = []

    def make() -> Engine:
        made.append(engine_for(request.param, **handle))
        return made[-1]

    yield make
    for engine in made:
        engine.close()


@pytest.fixture
def engine(make_engine) -> Engine:
    return make_engine()


def _rows(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=lambda r: [(v is None, str(v)) for v in r])


def _keys_by_row(result: pa.Table) -> list[tuple]:
    """(k0, k1) of each row in the order of its number i: a scan's row order is not defined (Spark)."""
    return [(r["k0"], r["k1"]) for r in sorted(result.to_pylist(), key=lambda r: r["i"])]


def test_declares_its_name_and_dialect(engine: Engine) -> None:
    assert engine.name in registered_engines()
    assert isinstance(engine.dialect, str) and engine.dialect


def test_fetch_returns_arrow_and_divides_integers(engine: Engine) -> None:
    query = _select(exp.IntDiv(this=exp.Literal.number(7), expression=exp.Literal.number(2)).as_("d"),
                    exp.Mod(this=exp.Literal.number(7), expression=exp.Literal.number(3)).as_("m"))
    result = engine.fetch(query)
    assert isinstance(result, pa.Table)
    assert result.to_pylist() == [{"d": 3, "m": 1}]


def test_params_bind_by_number_repeated_and_out_of_order(engine: Engine) -> None:
    # $2 appears before $1, and $1 twice: a driver binding by position of appearance would fail.
    p1, p2 = exp.Placeholder(this="1"), exp.Placeholder(this="2")
    query = _select(p2.as_("second"), p1.as_("first"), exp.Add(this=p1.copy(), expression=exp.Literal.number(1))
                    .as_("plus"))
    assert engine.fetch(query, [41, "x; DROP TABLE t; --'\""]).to_pylist() == \
        [{"second": "x; DROP TABLE t; --'\"", "first": 41, "plus": 42}]


def test_fetch_row_is_the_first_row_of_fetch_and_warns_of_nothing(engine: Engine) -> None:
    """``fetch_row``, each job's counts and checks: the row ``fetch`` gives, by column name, its
    parameters bound and its errors wrapped as ``fetch``'s; DuckDB's path for it (a DB-API result)
    warns of its copy of large results, which must not reach a user's job."""
    import warnings

    p1 = exp.Placeholder(this="1")
    query = _select(exp.Add(this=p1, expression=exp.Literal.number(1)).as_("n"),
                    exp.Cast(this=exp.Literal.string("1.25"), to=exp.DataType.build("DECIMAL(12, 2)")).as_("m"),
                    exp.Null().as_("nothing"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        row = engine.fetch_row(query, [41])
    assert row == engine.fetch(query, [41]).to_pylist()[0]
    assert row["n"] == 42 and str(row["m"]) == "1.25" and row["nothing"] is None
    with pytest.raises(EngineError) as info:
        engine.fetch_row(_select(exp.Star(), source=q.table(engine.temp_name("absent"))))
    assert "absent" in info.value.sql


def test_duckdbs_path_for_one_row_types_it_as_its_path_for_many() -> None:
    """DuckDB's ``_run_small`` (a DB-API result) against ``_run`` (a relation, the path of every
    large result), the oracle: the same Arrow types and values, over the types a count, a check or
    a schema meets (huge integers, decimals, an ENUM, time zones, nested values, UUID, blob)."""
    from sqlclose.engine import DuckDBEngine

    sql = ("SELECT 170141183460469231731687303715884105727::HUGEINT AS h, 1.25::DECIMAL(38, 2) AS m, "
           "'b'::ENUM('a', 'b') AS e, TIMESTAMPTZ '2020-01-02 03:04:05+02' AS tz, DATE '2020-01-02' AS d, "
           "[1, NULL] AS l, {'x': 1, 'y': 'z'} AS st, MAP {'k': 1.5} AS mp, uuid() IS NULL AS u_null, "
           "'00000000-0000-0000-0000-000000000001'::UUID AS u, '\\x00\\xff'::BLOB AS b, NULL AS n, "
           "1e308 * 10 AS inf, $1::VARCHAR AS p")
    engine = DuckDBEngine()
    try:
        for query in (sql, f"SELECT * FROM ({sql}) LIMIT 0"):
            small, large = engine._run_small(query, ["x"]), engine._run(query, ["x"])
            assert small.schema == large.schema and small.to_pylist() == large.to_pylist()
    finally:
        engine.close()


@pytest.mark.parametrize("codes", [["s0", "s1"], ["s1"], []], ids=["two-columns", "one-column", "none"])
def test_histogram_margins_are_the_size_and_the_sums_per_code(engine: Engine, codes: list[str]) -> None:
    """q.histogram_margins, the base histogram's size and each sensitive column's Q in one query
    (GROUPING SETS, GROUPING), against sums counted here over the same rows."""
    rng = random.Random(7)
    rows = [(rng.choice([0, 2, 3, 7]), rng.randrange(3), rng.randint(1, 50)) for _ in range(40)]
    name = engine.temp_name("margins")
    engine.register(name, pa.table({"q0": [1] * len(rows), "s0": [r[0] for r in rows], "s1": [r[1] for r in rows],
                                    "n": [r[2] for r in rows]}, pa.schema([("q0", pa.int64()), ("s0", pa.int8()),
                                                                           ("s1", pa.int16()), ("n", pa.int64())])))
    found = engine.fetch(q.histogram_margins(q.table(name), codes)).to_pylist()
    flags = [f"g{j}" for j in range(len(codes))]
    whole = [r for r in found if all(r[f] == 1 for f in flags)]
    assert [(r["base_rows"], r["rows"]) for r in whole] == [(40, sum(r[2] for r in rows))]
    for j, code in enumerate(codes):
        expected: collections.Counter = collections.Counter()
        for r in rows:
            expected[r[("s0", "s1").index(code)]] += r[2]
        margin = {r[code]: r["rows"] for r in found if r[f"g{j}"] == 0}
        assert margin == dict(expected)
    assert len(found) == 1 + sum(len({r[("s0", "s1").index(c)] for r in rows}) for c in codes)


def test_register_fetch_replace_unregister(engine: Engine) -> None:
    name = engine.temp_name("conf")
    engine.register(name, TABLE)
    assert _rows(engine.fetch(_select(exp.Star(), source=q.table(name)))) == \
        [(1, "x", 0.5), (2, "y", 1.5), (3, None, 2.5)]
    engine.register(name, TABLE.slice(0, 1))  # replaces
    assert engine.fetch(_select(exp.Count(this=exp.Star()).as_("n"), source=q.table(name))).to_pylist() == [{"n": 1}]
    engine.unregister(name)
    engine.unregister(name)  # unknown names are ignored
    with pytest.raises(EngineError) as info:
        engine.fetch(_select(exp.Star(), source=q.table(name)))
    assert name in info.value.sql  # the error carries the SQL


def test_load_holds_its_own_rows_replaces_and_unregisters(engine: Engine) -> None:
    name = engine.temp_name("conf")
    table = pa.table({"id": [1, 2, 3], 'a"b': ["x", "y", None], "v": [0.5, 1.5, 2.5]})
    engine.load(name, table)
    del table  # the engine holds a copy, not a view of Python memory
    assert _rows(engine.fetch(_select(exp.Star(), source=q.table(name)))) == \
        [(1, "x", 0.5), (2, "y", 1.5), (3, None, 2.5)]
    assert engine.schema(q.table(name)).names == ["id", 'a"b', "v"]
    engine.load(name, TABLE.slice(0, 1))  # replaces
    assert engine.fetch(_select(exp.Count(this=exp.Star()).as_("n"), source=q.table(name))).to_pylist() == [{"n": 1}]
    registered = engine.temp_name("conf")
    engine.register(registered, TABLE)
    engine.load(registered, TABLE.slice(0, 2))  # replaces a registered table too
    assert engine.fetch(_select(exp.Count(this=exp.Star()).as_("n"), source=q.table(registered))).to_pylist() == \
        [{"n": 2}]
    engine.unregister(registered)
    engine.unregister(name)
    with pytest.raises(EngineError):
        engine.fetch(_select(exp.Star(), source=q.table(name)))


def test_schema_without_rows(engine: Engine) -> None:
    name = engine.temp_name("conf")
    engine.register(name, TABLE)
    schema = engine.schema(q.table(name))
    assert schema.names == ["id", 'a"b', "v"]
    assert pa.types.is_integer(schema.field("id").type)
    assert pa.types.is_string(schema.field('a"b').type) or pa.types.is_large_string(schema.field('a"b').type)
    assert pa.types.is_floating(schema.field("v").type)


def test_temp_table_with_params(engine: Engine) -> None:
    name = engine.temp_name("conf")
    engine.register(name, TABLE)
    params = q.Params()
    query = _select(q.col("id"), source=q.table(name)).where(exp.GT(this=q.col("v"), expression=params.add(1.0)))
    temp = engine.create_temp_table(engine.temp_name("temp"), query, params.values)
    engine.unregister(name)  # the temp table holds its own rows
    assert _rows(engine.fetch(_select(exp.Star(), source=temp))) == [(2,), (3,)]


def test_fetch_and_keep(engine: Engine) -> None:
    name = engine.temp_name("conf")
    engine.register(name, TABLE)
    kept = engine.temp_name("kept")
    result = engine.fetch_and_keep(kept, _select(q.col("id"), source=q.table(name)))
    assert _rows(result) == [(1,), (2,), (3,)]
    assert _rows(engine.fetch(_select(exp.Star(), source=q.table(kept)))) == [(1,), (2,), (3,)]
    # keeping again under the same name replaces, also when the query reads the kept table
    query = _select(exp.Mul(this=q.col("id"), expression=exp.Literal.number(10)).as_("id"), source=q.table(kept))
    assert _rows(engine.fetch_and_keep(kept, query)) == [(10,), (20,), (30,)]
    assert _rows(engine.fetch(_select(exp.Star(), source=q.table(kept)))) == [(10,), (20,), (30,)]


def test_parquet_round_trip(engine: Engine, tmp_path: Path) -> None:
    name = engine.temp_name("conf")
    engine.register(name, TABLE)
    params = q.Params()
    query = _select(q.col("id"), q.col('a"b'), params.add("tag").as_("t"), source=q.table(name))
    out = tmp_path / "out.parquet"
    engine.copy_to_parquet(query, out, params.values)
    assert out.exists()
    for relation in (engine.read_parquet(out), engine.source_relation(FileRead("parquet", out))):
        assert _rows(engine.fetch(_select(exp.Star(), source=relation))) == \
            [(1, "x", "tag"), (2, "y", "tag"), (3, None, "tag")]


@pytest.mark.parametrize("partition_by", [(), ("p",)], ids=["plain", "partitioned"])
def test_parquet_folder_round_trip(engine: Engine, tmp_path: Path, partition_by: tuple) -> None:
    """A folder of data files only, deterministic names, the query's rows back (partition values
    as text, after the files' columns; NULL as NULL)."""
    import re

    name = engine.temp_name("conf")
    engine.register(name, TABLE)
    params = q.Params()
    query = _select(q.col("id"), q.col('a"b').as_("p"), params.add("tag").as_("t"), source=q.table(name)) \
        .order_by(q.col("id"))
    out = tmp_path / "folder"
    engine.copy_to_parquet_folder(query, out, params.values, partition_by)
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names and all(re.fullmatch(r"([^/]+=[^/]+/)*part-[0-9]+(-c[0-9]+)?(\.snappy)?\.parquet", n) for n in names)
    assert len({n.split("/")[0] for n in names}) == (3 if partition_by else 1)
    before = {n: (out / n).read_bytes() for n in names}
    # Each driver raises its own error (DuckDB: the folder is not empty; Spark: the path already exists),
    # and neither writes over the folder.
    with pytest.raises(Exception, match=r"(?i)exist|not empty"):
        engine.copy_to_parquet_folder(query, out, params.values, partition_by)
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    relation = engine.read_parquet(out)
    expected = [(1, "x", "tag"), (2, "y", "tag"), (3, None, "tag")]
    if partition_by:
        assert engine.schema(relation).names == ["id", "t", "p"]
        expected = [(i, t, v) for i, v, t in expected]
    assert _rows(engine.fetch(_select(exp.Star(), source=relation))) == expected


def test_csv_source(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("zip;age;note;v\n04767;29;;15\n47602;22;NA;2\n", encoding="utf-8")
    read = FileRead("csv", path, delimiter=";", nulls=("NA",), types={"age": "BIGINT"}, numeric=("v",),
                    header=("zip", "age", "note", "v"))  # sources.py reads the header line itself
    result = engine.fetch(_select(exp.Star(), source=engine.source_relation(read)))
    # text as written (leading zero kept, "" is a value), declared and numeric columns typed, NA is NULL
    assert _rows(result) == [("04767", 29, "", 15), ("47602", 22, None, 2)]
    # an undeclared numeric column holding a fraction is refused alike (its type must not follow its
    # values); declared, it is read as it is
    path.write_text("zip;age;note;v\n04767;29;;1.5\n47602;22;NA;2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"column 'v' holds 1 number that is not whole"):
        engine.source_relation(read)
    declared = dataclasses.replace(read, types={"age": "BIGINT", "v": "DOUBLE"})
    result = engine.fetch(_select(exp.Star(), source=engine.source_relation(declared)))
    assert _rows(result) == [("04767", 29, "", 1.5), ("47602", 22, None, 2.0)]


def test_keyed_row_hash_sees_every_cell_not_the_order(engine: Engine) -> None:
    prints = []
    for table in (TABLE, TABLE.take([2, 0, 1]), TABLE.set_column(2, "v", pa.array([0.5, 1.5, 2.0]))):
        name = engine.temp_name("conf")
        engine.register(name, table)
        for secret in ("one secret", "another"):
            params = q.Params()
            query = q.fingerprint(q.table(name), engine.row_hash(q.FINGERPRINT_ROW, params.add(secret)))
            prints.append(engine.fetch(query, params.values).column("fingerprint")[0].as_py())
    same_secret = prints[0::2]
    assert same_secret[0] == same_secret[1] != same_secret[2]  # order does not count, every cell does
    assert prints[0] != prints[1]  # keyed


def test_row_keys_tell_rows_apart_by_value_position_and_null(engine: Engine) -> None:
    # Rows the re-check's truth test must keep apart: a NULL moved to another column, a NULL and
    # an empty text, the same texts in another column order; and rows it must equate: an integer
    # and a text that reads the same (rows are compared as text, whatever the columns' types).
    # Each row carries its number i: the keys are read in i's order, whatever order the engine returns.
    rows = pa.table({"i": list(range(7)), "a": [None, "x", None, "", "x", "y", "5"],
                     "b": ["x", None, "", None, "y", "x", "7"]})
    typed = pa.table({"i": [7], "a": pa.array([5], pa.int64()), "b": pa.array([7], pa.int32())})
    keys = []
    for table in (rows, typed):
        name = engine.temp_name("conf")
        engine.register(name, table)
        key_0, key_1 = _row_keys(engine, [exp.column("a"), exp.column("b")])
        keys += _keys_by_row(engine.fetch(_select(exp.column("i"), key_0.as_("k0"), key_1.as_("k1"),
                                                  source=q.table(name))))
    assert len(set(keys[:7])) == 7
    assert keys[6] == keys[7]


def test_row_keys_of_columns_hashed_as_they_are_tell_values_null_and_position_apart(engine: Engine) -> None:
    # The truth test hashes columns of one exact type on both sides as they are (no cast to text):
    # the keys must still tell every value, a NULL and a swap of columns apart, and equal rows equal.
    day = datetime.date(2026, 11, 27)
    table = pa.table({"i": list(range(6)), "a": pa.array([5, 7, None, 5, 5, 0], pa.int64()),
                      "b": pa.array([7, 5, 5, None, 7, None], pa.int64()),
                      "d": pa.array([day, day, day, day, day, None], pa.date32())})
    name = engine.temp_name("conf")
    engine.register(name, table)
    key_0, key_1 = _row_keys(engine, [exp.column("a"), exp.column("b"), exp.column("d")], [True, True, True])
    keys = _keys_by_row(engine.fetch(_select(exp.column("i"), key_0.as_("k0"), key_1.as_("k1"),
                                             source=q.table(name))))
    assert keys[0] == keys[4]  # the same row twice
    assert len({keys[i] for i in (0, 1, 2, 3, 5)}) == 5  # swapped, NULL in a or b or d


@pytest.mark.parametrize(("written", "generalized", "as_is"), [
    (pa.int64(), pa.int64(), True), (pa.int32(), pa.int32(), True), (pa.string(), pa.string(), True),
    (pa.date32(), pa.date32(), True), (pa.bool_(), pa.bool_(), True),
    (pa.int64(), pa.int32(), False),  # another type: compared as text, as before
    (pa.string(), pa.int64(), False), (pa.float64(), pa.float64(), False),  # -0.0 = 0.0, texts differ
    (pa.timestamp("us", "UTC"), pa.timestamp("us", "UTC"), False), (pa.null(), pa.null(), False),
])
def test_only_one_exact_type_on_both_sides_is_hashed_as_it_is(written, generalized, as_is) -> None:
    assert Engine.hashed_as_is(written, generalized) is as_is


@pytest.mark.parametrize("buckets", [4096, 2], ids=["as-shipped", "two-buckets"])
def test_class_numbers_are_one_per_class_and_apart_between_classes(engine: Engine, buckets: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The re-check numbers classes by their QI values (Engine.class_numbers); on Spark within hash
    # buckets, so two buckets also put several classes in one bucket. The oracle: the classes are
    # the distinct (a, b) pairs of the rows, NULL a value of its own.
    if engine.name == "spark":
        monkeypatch.setattr(sys.modules["sqlclose.engine.spark"], "CLASS_BUCKETS", buckets)
    a = ["x", "x", None, "y", None, "", "x", "y", "z", None]
    b = [1, 1, 1, None, None, 1, 2, None, 3, 1]
    name = engine.temp_name("conf")
    engine.register(name, pa.table({"a": pa.array(a, pa.string()), "b": pa.array(b, pa.int64())}))
    keys = [exp.column("a"), exp.column("b")]
    result = engine.fetch(_select(engine.class_numbers(keys).as_("cls"), *keys, source=q.table(name)))
    number = {}
    for row in result.to_pylist():
        assert number.setdefault((row["a"], row["b"]), row["cls"]) == row["cls"]
    assert set(number) == set(zip(a, b))
    assert len(set(number.values())) == len(number)


def test_audit_classes_are_numbered_densely_in_the_order_of_their_qi_values(engine: Engine) -> None:
    # sqlclose check reads classes in runs of numbers and lists ties in number order, so the numbers
    # must be 0, 1, … in the order of the QI values, NULLs last, on every engine. The oracle: the
    # rows' distinct QI values sorted in Python.
    rng = random.Random(7)
    a = [rng.choice(["x", "y", "z", "", "w", None]) for _ in range(4000)]
    b = [rng.choice([1, 2, 3, 10, -5, None]) for _ in range(4000)]
    c = [rng.choice(["p", "q", None]) for _ in range(4000)]
    name = engine.temp_name("conf")
    engine.register(name, pa.table({"a": pa.array(a, pa.string()), "b": pa.array(b, pa.int64()),
                                    "c": pa.array(c, pa.string())}))
    expected = sorted(set(zip(a, b, c)), key=lambda row: [(v is None, v) for v in row])
    classes = tables.table_classes(engine, q.table(name), ["a", "b", "c"], [])
    rows = engine.fetch(q.labels_of_classes(classes.counted[0], 3, range(classes.classes))).to_pylist()
    numbered = sorted((r[q.AUDIT_CLASS], tuple(r[q.audit_qi_name(i)] for i in range(3))) for r in rows)
    assert numbered == list(enumerate(expected))


def test_close_drops_what_it_made_and_leaves_the_handle(make_engine) -> None:
    first, other = make_engine(), make_engine()
    registered, temp = first.temp_name("conf"), first.temp_name("temp")
    loaded = first.temp_name("loaded")
    first.register(registered, TABLE)
    first.load(loaded, TABLE)
    first.create_temp_table(temp, _select(exp.Literal.number(1).as_("one")))
    assert registered != other.temp_name("conf")  # two engines never pick the same names
    # Spark's engines share the session's temporary views; DuckDB's each run on a cursor of the caller's
    # connection (a result the caller is fetching stays as it was), whose temporary objects are its own.
    seeing = other if first.name == "spark" else first
    assert seeing.fetch(_select(exp.Star(), source=q.table(temp))).num_rows == 1
    first.close()
    first.close()  # idempotent
    for name in (registered, loaded, temp):
        with pytest.raises(EngineError):
            other.fetch(_select(exp.Star(), source=q.table(name)))
    assert other.fetch(_select(exp.Literal.number(1).as_("one"))).num_rows == 1  # the handle still works


# ---- the interface itself ---------------------------------------------------------------------------
def test_an_engine_without_name_or_dialect_is_refused_at_class_creation() -> None:
    with pytest.raises(TypeError, match="dialect"):
        type("NoDialect", (Engine,), {"name": "x"})
    with pytest.raises(TypeError, match="name"):
        type("NoName", (Engine,), {"dialect": "duckdb"})


def test_unknown_engine_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="duckdb, spark"):
        engine_for("oracle")


def test_importing_sqlclose_and_running_duckdb_never_imports_pyspark(repo_dir: Path) -> None:
    import subprocess
    import sys

    code = ("import sys, pyarrow as pa, sqlclose\n"
            "t = pa.table({'a': [1, 1, 2, 2], 's': ['x', 'y', 'x', 'y']})\n"
            "spec = {'quasi_identifiers': {'a': {'bands': [2]}}, 'sensitive': {'s': {'t': 0.5}}, 'k': 2}\n"
            "with sqlclose.anonymize(t, spec) as r: r.to_arrow()\n"
            "print('pyspark' in sys.modules, 'py4j' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo_dir, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_label_hashes_carried_from_lookups_give_the_rows_keys_hashed_per_row(engine: Engine) -> None:
    # The truth test hashes a generalized QI's labels once, in their lookup, and carries the hash
    # through the join (verify_sql._generalized); a QI at its top is its top label, a bound
    # constant. The keys it builds from them must be the keys of the labels hashed row by row
    # (_row_keys below) — a leaf missing from the hierarchy (no label) and a NULL included — or a
    # true file would read as untrue, and an untrue one as true.
    from sqlclose.model.hierarchy import Hierarchy
    from sqlclose.release.verify_sql import WrittenQI, _generalized

    zips = Hierarchy.from_rows([("47677", "4767*", "*"), ("47678", "4767*", "*"), ("10115", "1011*", "*")])
    sexes = Hierarchy.from_rows([("f", "person", "*"), ("m", "person", "*")])
    bands = Hierarchy.from_rows([("a", "any"), ("b", "any")])  # released at its top, "any"
    rows = pa.table({"zip": ["47677", "47678", "10115", "99999", None, "47677"],
                     "sex": ["f", "m", "x", "f", "m", None], "band": ["a", "b", "c", None, "a", "b"],
                     "n": pa.array([1, 1, 3, 4, 4, 6], pa.int64())})
    name = engine.temp_name("conf")
    engine.register(name, rows)
    registered: list[str] = []
    params: list = []
    columns = ["zip", "sex", "band", "n"]
    generalized, hashed = _generalized(engine, q.table(name), columns,
                                       [WrittenQI("zip", zips), WrittenQI("sex", sexes), WrittenQI("band", bands)],
                                       [1, 1, 1], params, registered)
    assert set(hashed) == {"zip", "sex", "band"}
    per_row = _row_keys(engine, [exp.column(c) for c in columns], [True] * len(columns))
    carried = engine.keys_of_hashes([exp.column(hashed["zip"]), exp.column(hashed["sex"]), exp.column(hashed["band"]),
                                     engine.value_hash(exp.column("n"), True)])
    keys = engine.fetch(_select(per_row[0].as_("p0"), per_row[1].as_("p1"), carried[0].as_("c0"),
                                carried[1].as_("c1"), exp.column("zip"), exp.column("sex"), exp.column("band"),
                                source=generalized.as_("g")), params).to_pylist()
    # the rows come through a join, in no defined order: compared as a multiset
    assert collections.Counter((r["zip"], r["sex"], r["band"]) for r in keys) == collections.Counter([
        ("4767*", "person", "any"), ("4767*", "person", "any"), ("1011*", None, "any"), (None, "person", "any"),
        (None, "person", "any"), ("4767*", None, "any")])
    assert all((r["p0"], r["p1"]) == (r["c0"], r["c1"]) for r in keys)
    assert len({(r["c0"], r["c1"]) for r in keys}) == 4  # rows 0 and 1 alike, 3 and 4 alike


# Rows of (g, x, n): x distinct, its numbers' text order not theirs (9 < 10 < 100 as numbers).
SORTED_SOURCE = pa.table({"g": ["b", "a", None, "b", "c", "a"], "x": [10, 9, -1, 100, 3, 25],
                          "n": [1, 4, 2, 3, 1, 1]})


def _sorted_queries(source: exp.Expression) -> dict[str, tuple[exp.Select, list[tuple]]]:
    """Sorted queries with their rows in order, worked out here from SORTED_SOURCE's columns."""
    g, x, n = (exp.column(c) for c in ("g", "x", "n"))
    rows = list(zip(*(SORTED_SOURCE[c].to_pylist() for c in ("g", "x", "n"))))
    sums: dict = collections.Counter()
    for gi, _, ni in rows:
        sums[gi] += ni
    by_sum = sorted(sums.items(), key=lambda kv: (-kv[1], kv[0] is None, kv[0] or ""))
    numbers = sorted(xi for _, xi, _ in rows)
    return {
        # keys named as the result's columns, n the sum's name over the input's n
        "result-columns": (_select(g.as_("v"), exp.Sum(this=n.copy()).as_("n"), source=source).group_by(g.copy())
                           .order_by(exp.Ordered(this=exp.column("n"), desc=True, nulls_first=False),
                                     exp.Ordered(this=exp.column("v"), nulls_first=False)), by_sum),
        # a key the result lacks: numbers in their order, given as text
        "key-not-in-result": (_select(exp.cast(x.copy(), "TEXT").as_("text"), source=source)
                              .order_by(exp.Ordered(this=x.copy(), nulls_first=False)),
                              [(str(v),) for v in numbers]),
        "distinct": (_select(g.copy(), source=source).distinct()
                     .order_by(exp.Ordered(this=exp.column("g"), desc=True, nulls_first=True)),
                     [(None,), ("c",), ("b",), ("a",)]),
        # a result column without a name (its engine names it): kept whole, sorted by the engine itself
        "unnamed-result-column": (_select(exp.Add(this=x.copy(), expression=exp.Literal.number(1)), source=source)
                                  .order_by(exp.Ordered(this=n.copy(), desc=True), exp.Ordered(this=x.copy())),
                                  [(xi + 1,) for _, xi, _ in sorted(rows, key=lambda r: (-r[2], r[1]))]),
        # a table's column as the key, and a bound parameter
        "qualified-key-and-param": (_select(exp.column("g", "s").as_("k"), source=exp.alias_(source.copy(), "s"))
                                    .where(exp.GT(this=exp.column("x", "s"), expression=exp.Placeholder(this="1")))
                                    .order_by(exp.Ordered(this=exp.column("x", "s"), desc=True)),
                                    [(gi,) for gi, xi, _ in sorted(rows, key=lambda r: -r[1]) if xi > 5]),
    }


@pytest.mark.parametrize("shape", ["result-columns", "key-not-in-result", "distinct", "unnamed-result-column",
                                   "qualified-key-and-param"])
def test_a_sorted_fetch_gives_its_rows_in_order(engine: Engine, shape: str) -> None:
    """Spark collects a sorted query sorted in one task by a query around it (``SparkEngine.fetch``):
    a key the result lacks is computed beside it and dropped. Oracle: the order worked out in
    Python from the source's values."""
    name = engine.temp_name("sorted")
    engine.register(name, SORTED_SOURCE)
    query, expected = _sorted_queries(q.table(name))[shape]
    got = engine.fetch(query, [5] if shape == "qualified-key-and-param" else None)
    assert [tuple(r.values()) for r in got.to_pylist()] == expected
    if shape != "unnamed-result-column":
        assert got.column_names == [s.alias_or_name for s in query.selects]


@pytest.mark.spark
def test_a_sorted_fetch_on_spark_runs_the_jobs_of_the_unsorted_one(spark_session) -> None:
    """Spark's own sort of a collected query sampled its ranges' bounds in a job of its own, which
    computed the query a first time. Oracle: Spark's status tracker, the same query unsorted."""
    engine = engine_for("spark", session=spark_session)
    try:
        name = engine.temp_name("sorted")
        engine.register(name, SORTED_SOURCE)
        query = _sorted_queries(q.table(name))["key-not-in-result"][0]
        unsorted = query.copy()
        unsorted.set("order", None)
        tracker = spark_session.sparkContext.statusTracker()
        jobs = []
        for each in (unsorted, query):
            before = len(tracker.getJobIdsForGroup(None))
            engine.fetch(each)
            jobs.append(len(tracker.getJobIdsForGroup(None)) - before)
        assert jobs[1] == jobs[0], jobs
    finally:
        engine.close()
