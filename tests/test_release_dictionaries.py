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
    """Two people of "vaduz" (the only city of its group "Alps") and one with "plague": values whose
    classes fail k at many nodes, so that only suppressed rows have them there."""
    rng = random.Random(seed)
    city = [None if rng.random() < 0.05 else rng.choice(["zell", "aarau", "mels", "bern", "chur"])
            for _ in range(rows - 2)] + ["vaduz", "vaduz"]
    disease = [rng.choice(["ulcer", "flu", "gastritis", "cancer"]) for _ in range(rows - 1)] + ["plague"]
    return pa.table({
        "city": pa.array(city, pa.string()),
        "age": pa.array([rng.randint(20, 69) for _ in range(rows)], pa.int32()),
        "job": pa.array([rng.choice(["tailor", "baker", "smith", "Zoologist"]) for _ in range(rows)], pa.string()),
        "disease": pa.array(disease),
    })


def spec() -> dict:
    return {
        "k": 4, "suppression": 0.1, "search": {"explore": "lattice"},
        # Labels out of text order: "West" before "East", "upper" before "lower".
        "quasi_identifiers": {
            # "North" and "kiruna" are in the hierarchy, not in the data.
            "city": {"tree": {"*": {"West": ["zell", "mels", "none"], "East": ["aarau", "bern", "chur"],
                                    "Alps": ["vaduz"], "North": ["kiruna"]}},
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


@pytest.mark.parametrize("bound", [("MAX_DICTIONARY", 0), ("ROWS_PER_VALUE", ROWS + 1)])
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


def _released(table: pa.Table) -> dict[str, set]:
    return {name: {v for v in table.column(name).to_pylist() if v is not None} for name in table.column_names}


@pytest.mark.parametrize("way", ["from counts", "from the source's rows"])
def test_a_dictionary_holds_the_values_the_release_holds_and_nothing_else(way: str) -> None:
    """A Parquet writer may write a type's every member into the file: a label of a suppressed class,
    a value only suppressed rows have, or a label no row has, must not be a member. The oracle: the
    distinct values of each column of the VARCHAR release."""
    hidden_seen = set()
    with sqlclose.anonymize(people(), spec()) as release:
        for node in [node for node, e in release.search.evaluated.items() if e.satisfied]:
            at = release.at(node)
            if way != "from counts":
                at._counted_columns = lambda: None  # type: ignore[method-assign]
            engine = at.problem.engine
            types = release_query.released_dictionaries(at.problem, at.search.optimum, at._suppressed(),
                                                        at._counted_columns())
            released = _released(at.to_arrow())
            for name, kind in types.items():
                assert set(_members(engine, kind)) == released[name], (node, name)
            hidden_seen |= {v for name in ("city", "disease") for v in ("Alps", "North", "plague")
                            if name in types} - released["city"] - released["disease"]
    assert {"Alps", "North"} <= hidden_seen  # labels of suppressed classes and of no row were left out
    if way == "from counts":
        assert "plague" in hidden_seen  # a sensitive value only suppressed rows have, left out


def test_with_nothing_suppressed_the_members_are_read_from_the_values_the_rows_hold(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no class is suppressed and no row was dropped, the members come from the column values
    (``Problem.values``), the base histogram not grouped again for them; still only what the release
    holds: "North" (a label only the hierarchy has) is no member. At k = 2 without suppression, and
    with a t every class meets, the city's labels are released. The oracle: the distinct values of
    each column of the VARCHAR release."""
    def no_grouping(*args, **kwargs):
        raise AssertionError("the base histogram was grouped for the members")

    seen: set[str] = set()
    at_two = {**spec(), "k": 2, "suppression": 0.0, "sensitive": {"disease": {"distance": "equal", "t": 1.0}}}
    with sqlclose.anonymize(people(), at_two) as release:
        for node in [node for node, e in release.search.evaluated.items() if e.satisfied]:
            at = release.at(node)
            assert at._suppressed() is None
            with monkeypatch.context() as m:
                m.setattr(release_query, "released_classes", no_grouping)
                types = release_query.released_dictionaries(at.problem, at.search.optimum, None,
                                                            at._counted_columns())
            released = _released(at.to_arrow())
            for name, kind in types.items():
                members = _members(at.problem.engine, kind)
                assert set(members) == released[name], (node, name)
                seen |= set(members)
    assert {"Alps", "West"} <= seen  # the city's labels were at stake
    assert "North" not in seen


def test_the_written_file_holds_only_released_values(tmp_path: Path) -> None:
    """Every row group's dictionary and statistics, read from the Parquet file itself."""
    with sqlclose.anonymize(people(), spec()) as release:
        checked = 0
        for i, node in enumerate(node for node, e in release.search.evaluated.items() if e.satisfied):
            at = release.at(node)
            path = tmp_path / f"{i}.parquet"
            released = _released(written(at, path))
            metadata = pq.ParquetFile(path).metadata
            dictionaries = pq.read_table(path, read_dictionary=[n for n in released if n != "age"])
            for name in [n for n in released if n != "age"]:
                for chunk in dictionaries.column(name).chunks:
                    # DuckDB's ENUM writer puts an empty text in each dictionary page; no row holds it.
                    assert set(chunk.dictionary.to_pylist()) - {""} <= released[name], (node, name)
                    checked += 1
                column = metadata.schema.names.index(name)
                for g in range(metadata.num_row_groups):
                    stats = metadata.row_group(g).column(column).statistics
                    if stats is not None and stats.has_min_max:
                        assert {stats.min, stats.max} <= released[name], (node, name)
            data = path.read_bytes()
            for hidden in {"Alps", "North", "kiruna", "plague"} - set().union(*released.values()):
                assert hidden.encode() not in data, (node, hidden)
    assert checked
