"""A Parquet write's text in dictionary types (Engine.dictionary_type, prepare/release_query.py).

On DuckDB a release written to Parquet gives its labels (and, rebuilt from counts, its text
values) the type of an ENUM whose members are created in text order, so that the file is
written and sorted by small codes. The oracle is the release as text (``Release.to_arrow``, the
VARCHAR query): at every satisfying node, written both ways from the source's rows and from the
counts, the file holds the same columns, types, rows and order. The labels of the table's
hierarchies are listed out of text order, so that members created in any other order (the codes',
the lookup's) sort the file otherwise.
"""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp

import sqlclose
import sqlclose.prepare.release_query as release_query
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.release.release import Release

ROWS = 500


def people(rows: int = ROWS, seed: int = 11) -> pa.Table:
    rng = random.Random(seed)
    return pa.table({
        "city": pa.array([None if rng.random() < 0.05 else rng.choice(["zell", "aarau", "mels", "bern", "chur"])
                          for _ in range(rows)], pa.string()),
        "age": pa.array([rng.randint(20, 69) for _ in range(rows)], pa.int32()),
        "job": pa.array([rng.choice(["tailor", "baker", "smith", "Zoologist"]) for _ in range(rows)], pa.string()),
        "disease": pa.array([rng.choice(["ulcer", "flu", "gastritis", "cancer"]) for _ in range(rows)]),
    })


def spec() -> dict:
    return {
        "k": 4, "suppression": 0.1, "search": {"explore": "lattice"},
        # Labels out of text order: "West" before "East", "upper" before "lower".
        "quasi_identifiers": {
            "city": {"tree": {"*": {"West": ["zell", "mels", "none"], "East": ["aarau", "bern", "chur"]}},
                     "nulls": "value", "null_value": "none"},
            "age": {"bands": [10, 20]},
            "job": {"tree": {"*": {"upper": ["tailor", "Zoologist"], "lower": ["smith", "baker"]}}},
        },
        "sensitive": {"disease": {"distance": "equal", "t": 0.6}},
    }


def written(release: Release, path: Path) -> pa.Table:
    release.write(path)
    return pq.read_table(path)


@pytest.mark.parametrize("way", ["from counts", "from the source's rows"])
def test_a_parquet_release_in_dictionary_types_is_the_text_release(tmp_path: Path, way: str) -> None:
    with sqlclose.anonymize(people(), spec()) as release:
        nodes = [node for node, e in release.search.evaluated.items() if e.satisfied]
        types_seen = 0
        for i, node in enumerate(nodes):
            at = release.at(node)
            if way != "from counts":
                at._counted_columns = lambda: None  # type: ignore[method-assign]
            assert (at._counted_columns() is not None) == (way == "from counts")
            query, _ = at.query(dictionaries=True)
            types_seen += "__sqlclose_dictionary" in query.sql("duckdb")
            expected = at.to_arrow()  # the oracle: the VARCHAR query
            got = written(at, tmp_path / f"{i}.parquet")
            assert got.schema.types == expected.schema.types
            assert got.to_pylist() == expected.to_pylist()  # same rows, same order
    assert len(nodes) >= 10
    assert types_seen == len(nodes)  # every node's write had labels in dictionary types


def test_the_file_is_the_one_written_as_text(tmp_path: Path) -> None:
    """Same Parquet schema (types and nullability) as the text query written by the same COPY."""
    with sqlclose.anonymize(people(), spec()) as release:
        got = written(release, tmp_path / "dictionaries.parquet")
        query, params = release.query()
        release.problem.engine.copy_to_parquet(query, tmp_path / "text.parquet", params)
        text = pq.read_table(tmp_path / "text.parquet")
        assert pq.read_schema(tmp_path / "dictionaries.parquet") == pq.read_schema(tmp_path / "text.parquet")
        assert got.equals(text)


@pytest.mark.parametrize("bound", [("MAX_DICTIONARY", 1), ("ROWS_PER_VALUE", ROWS)])
def test_a_column_with_too_many_values_for_a_dictionary_stays_text(monkeypatch: pytest.MonkeyPatch, bound) -> None:
    """More values than a dictionary holds, or too few rows per value to pay for making one."""
    monkeypatch.setattr(release_query, *bound)
    with sqlclose.anonymize(people(), spec()) as release:
        query, _ = release.query(dictionaries=True)
        assert "__sqlclose_dictionary" not in query.sql("duckdb")
        assert release.problem.engine.fetch(*release.query(dictionaries=True)).equals(release.to_arrow())


def _members(engine: DuckDBEngine, kind: exp.DataType) -> list[str]:
    return engine.con.sql(f"SELECT enum_range(NULL::{kind.sql('duckdb')})").fetchall()[0][0]


def test_dictionary_members_are_the_distinct_values_in_text_order_without_null() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE words AS SELECT * FROM (VALUES ('pear'), ('Apple'), (NULL), ('fig'), ('pear'), ('é')) "
                "AS t(w)")
    engine = DuckDBEngine(connection=con)
    kind = engine.dictionary_type(exp.select("w").from_("words"))
    assert kind is not None
    expected = [r[0] for r in con.sql("SELECT DISTINCT w FROM words WHERE w IS NOT NULL ORDER BY w").fetchall()]
    assert _members(engine, kind) == expected == ["Apple", "fig", "pear", "é"]
    engine.close()  # the caller's connection: the type is dropped, the connection left open
    assert con.sql("SELECT COUNT(*) FROM duckdb_types() WHERE type_name LIKE '__sqlclose_%'").fetchall() == [(0,)]


def test_a_connection_that_sorts_text_by_a_collation_keeps_text() -> None:
    con = duckdb.connect()
    con.execute("SET default_collation = 'nocase'")
    con.execute("CREATE TABLE words AS SELECT * FROM (VALUES ('b'), ('B'), ('a')) AS t(w)")
    assert DuckDBEngine(connection=con).dictionary_type(exp.select("w").from_("words")) is None
