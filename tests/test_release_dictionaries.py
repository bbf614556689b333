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

import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp
from statement_log import recorded_each

import sqlclose
import sqlclose.prepare.release_query as release_query
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.errors import InputError
from sqlclose.release import files
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


def _in_types(query: exp.Expression) -> bool:
    """The query casts to a dictionary type, or joins a lookup kept in one."""
    sql = query.sql("duckdb")
    return "__sqlclose_dictionary" in sql or "__sqlclose_typed_lookup" in sql


def written(release: Release, path: Path) -> pa.Table:
    release.write(path)
    return pq.read_table(path)


@dataclass
class NodeFile:
    """One satisfying node's release written to Parquet, with the oracles computed beside it."""
    node: tuple
    path: Path
    expected: pa.Table  # the VARCHAR query's rows
    text_schema: pa.Schema  # the VARCHAR query written by the same COPY
    in_types: bool  # the write's query had labels in dictionary types
    objects: Watched  # the engine's types, lookups and temporary objects around the write


@dataclass
class Watched:
    """What the engine held around one write: its dictionary types and lookups at the write's COPY
    (``during``) and after it (``after``), its temporary objects before and after it."""
    during: list[tuple[int, int]]
    after: tuple[int, int]
    temp_before: list
    temp_after: list


@contextlib.contextmanager
def _copies_watched(engine: DuckDBEngine) -> Iterator[list[tuple[tuple[int, int], exp.Expression]]]:
    """Each COPY the engine runs in the block: its query, and the types and lookups held as it ran."""
    seen: list[tuple[tuple[int, int], exp.Expression]] = []
    copy = engine.copy_to_parquet

    def watched(query: exp.Expression, *args, **kwargs) -> None:
        seen.append((_write_objects(engine), query))
        copy(query, *args, **kwargs)

    engine.copy_to_parquet = watched  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del engine.copy_to_parquet


def _watched_write(at: Release, path: Path) -> tuple[Watched, list[exp.Expression]]:
    """``at`` written to ``path``, the engine watched around it; with the queries its COPYs ran."""
    engine = at.problem.engine
    at._own_tables()  # kept by the release for all its queries, made before the write
    before = list(engine._temp)
    with _copies_watched(engine) as seen:
        at.write(path)
    return (Watched([objects for objects, _ in seen], _write_objects(engine), before, list(engine._temp)),
            [query for _, query in seen])


def _write_each_node(release: Release, folder: Path, way: str) -> list[NodeFile]:
    """Every satisfying node's release written once, from counts or from the source's rows."""
    node_files = []
    for i, node in enumerate(node for node, e in release.search.evaluated.items() if e.satisfied):
        at = release.at(node)
        if way != "from counts":
            at._counted_columns = lambda: None  # type: ignore[method-assign]
        assert (at._counted_columns() is not None) == (way == "from counts")
        expected = at.to_arrow()  # the oracle: the VARCHAR query
        objects, queries = _watched_write(at, folder / f"{i}.parquet")
        text_query, params = at.query()
        at.problem.engine.copy_to_parquet(text_query, folder / f"{i}.text.parquet", params)
        node_files.append(NodeFile(node, folder / f"{i}.parquet", expected,
                                   pq.read_schema(folder / f"{i}.text.parquet"),
                                   len(queries) == 1 and _in_types(queries[0]), objects))
    return node_files


@pytest.fixture(scope="module")
def people_release() -> Iterator[Release]:
    """people()'s release, open for the module's tests that write it node after node."""
    with sqlclose.anonymize(people(), spec()) as release:
        yield release


@pytest.fixture(scope="module")
def from_counts_files(people_release: Release, tmp_path_factory: pytest.TempPathFactory) -> list[NodeFile]:
    """people()'s release written from counts at each satisfying node, once for the tests below
    that judge those files or the engine around their writes (each write and re-check costs ~0.14 s)."""
    return _write_each_node(people_release, tmp_path_factory.mktemp("from_counts"), "from counts")


@pytest.mark.parametrize("way", ["from counts", "from the source's rows"])
def test_a_parquet_release_in_dictionary_types_is_the_text_release(request: pytest.FixtureRequest, tmp_path: Path,
                                                                    way: str) -> None:
    if way == "from counts":
        node_files = request.getfixturevalue("from_counts_files")
    else:
        with sqlclose.anonymize(people(), spec()) as release:
            node_files = _write_each_node(release, tmp_path, way)
    for node_file in node_files:
        got = pq.read_table(node_file.path)
        assert got.schema.types == node_file.expected.schema.types
        assert got.to_pylist() == node_file.expected.to_pylist()  # same rows, same order
        # Each column as required or optional as the VARCHAR query written by the same COPY.
        assert pq.read_schema(node_file.path) == node_file.text_schema
    assert len(node_files) >= 10
    assert all(node_file.in_types for node_file in node_files)  # every node's write had labels in dictionary types


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
        assert not _in_types(query)
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


def test_a_connection_that_sets_a_default_collation_is_refused(tmp_path: Path) -> None:
    """Under a default collation DuckDB folds text wherever no column says otherwise (the lookups,
    the file read back): a caller's connection setting one is refused with what to do, before
    anything is read or written, and is left as it was."""
    con = duckdb.connect()
    con.execute("SET default_collation = 'nocase'")
    con.register("staff_arrow", staff())
    con.execute("CREATE TABLE staff AS SELECT * FROM staff_arrow")
    with pytest.raises(InputError, match="default_collation = 'nocase'.*SET default_collation = ''"):
        DuckDBEngine(connection=con)
    with pytest.raises(InputError, match="default_collation"):
        sqlclose.anonymize((con, "staff"), staff_spec())
    assert con.sql("SELECT current_setting('default_collation'), COUNT(*) FROM staff").fetchall() == [("nocase", 400)]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["release.parquet", "release.csv", "release.duckdb"])
def test_a_default_collation_set_after_the_search_is_refused_before_the_write(tmp_path: Path, name: str) -> None:
    """A caller may set one on its connection after the release was searched: the write says so,
    before anything is written (its re-check used to refuse the file as "altered", a value's
    case folded in the joins), and writes once the setting is gone. The oracle for that write:
    the source's rows, grouped by a plain GROUP BY, against the file's."""
    con = duckdb.connect()
    con.register("staff_arrow", staff())
    con.execute("CREATE TABLE staff AS SELECT * FROM staff_arrow")
    path = tmp_path / name
    table = {"table": "release"} if name.endswith(".duckdb") else {}
    with sqlclose.anonymize((con, "staff"), staff_spec()) as release:
        con.execute("SET default_collation = 'nocase'")
        with pytest.raises(InputError, match="default_collation = 'nocase'.*SET default_collation = ''"):
            release.write(path, **table)
        assert not list(tmp_path.iterdir())
        con.execute("SET default_collation = ''")
        doc = release.write(path, **table)
    assert doc["verified"] is True
    reader = duckdb.connect()
    if name.endswith(".duckdb"):
        reader.execute(f"ATTACH '{path}' AS out (READ_ONLY)")
        written = "out.main.release"
    else:
        written = f"'{path}'"
    teams = reader.sql(f"SELECT team, COUNT(*) FROM {written} GROUP BY team ORDER BY team").fetchall()
    assert teams == con.sql("SELECT team, COUNT(*) FROM staff GROUP BY team ORDER BY team").fetchall()


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


def _kiruna_dropped(table: pa.Table) -> pa.Table:
    """people() with three rows of "kiruna" (group "North", in no row of people()) whose job is NULL:
    under nulls = "drop" for job they are dropped, and "North" is a label of the input only."""
    extra = pa.table({"city": ["kiruna"] * 3, "age": pa.array([30, 40, 50], pa.int32()),
                      "job": pa.array([None] * 3, pa.string()), "disease": ["flu"] * 3})
    return pa.concat_tables([table, extra])


@pytest.mark.parametrize("dropped", [False, True], ids=["no row dropped", "rows dropped for a NULL"])
def test_with_nothing_suppressed_a_qis_members_are_the_labels_its_leaf_counts_find(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dropped: bool) -> None:
    """Where no class is suppressed, a QI's labels are its dictionary's members, known from the leaf
    counts preparation read (``Problem.leaf_counts``): no statement reads the column values for
    them, or counts them. Only the labels of leaves a kept row holds: "North" (a label of the
    hierarchy whose leaf no row holds, or only rows dropped for a NULL job) is no member. The
    release is read from the source's rows (a column passed through). The oracle: a plain SELECT
    DISTINCT of each column over the written file, in DuckDB's text order."""
    sent = recorded_each(monkeypatch, DuckDBEngine, ("_run", "_run_small", "_execute"))
    made: list[tuple[list[str], dict[str, list[str]]]] = []  # per write: its statements, each type's members
    real_dictionaries = release_query.released_dictionaries

    def watched(problem, node, suppressed, counted):
        before = len(sent)
        types = real_dictionaries(problem, node, suppressed, counted)
        made.append((sent[before:], {name: _members(problem.engine, kind) for name, kind in types.items()}))
        return types

    monkeypatch.setattr(release_query, "released_dictionaries", watched)
    table = people().append_column("shift", pa.array([i % 3 for i in range(ROWS)], pa.int64()))
    qis = spec()["quasi_identifiers"]
    if dropped:
        table = _kiruna_dropped(people()).append_column("shift", pa.array([i % 3 for i in range(ROWS + 3)]))
        qis = {**qis, "job": {**qis["job"], "nulls": "drop"}}
    at_two = {**spec(), "k": 2, "suppression": 0.0, "others": "keep", "quasi_identifiers": qis,
              "sensitive": {"disease": {"distance": "equal", "t": 1.0}}}
    seen: set[str] = set()
    reader = duckdb.connect()
    with sqlclose.anonymize(table, at_two) as release:
        values = release.problem.values.name
        nodes = [node for node, e in release.search.evaluated.items() if e.satisfied and node[0] == 1]
        for i, node in enumerate(nodes[:3]):
            at = release.at(node)
            assert at._suppressed() is None and at._counted_columns() is None
            path = tmp_path / f"{i}.parquet"
            at.write(path)
            statements, types = made[-1]
            assert "city" in types
            assert len(statements) == len(types)  # one CREATE TYPE each, nothing counted
            assert not any(values in sql for sql in statements)
            for name, members in types.items():
                distinct = [r[0] for r in reader.execute(
                    f'SELECT DISTINCT "{name}" FROM read_parquet(?) WHERE "{name}" IS NOT NULL ORDER BY 1',
                    [str(path)]).fetchall()]
                assert members == distinct, (node, name)
                seen |= set(members)
    assert nodes and {"Alps", "West", "East"} <= seen
    assert "North" not in seen


def test_the_written_file_holds_only_released_values(from_counts_files: list[NodeFile]) -> None:
    """Every row group's dictionary and statistics, read from the Parquet file itself. DuckDB's ENUM
    writer puts each member of the type in every dictionary page; DuckDB 2.0.1 puts a member no row
    of the row group holds as an empty text. A member the release does not hold ("North", "plague")
    then leaves no bytes of its own in the file, but an entry of its own, which tells that the
    hierarchy or the suppressed rows hold values the release does not: no entry may be empty (no
    released value is)."""
    checked = 0
    for node_file in from_counts_files:
        node, path = node_file.node, node_file.path
        released = _released(pq.read_table(path))
        metadata = pq.ParquetFile(path).metadata
        dictionaries = pq.read_table(path, read_dictionary=[n for n in released if n != "age"])
        for name in [n for n in released if n != "age"]:
            assert "" not in released[name]
            for chunk in dictionaries.column(name).chunks:
                assert set(chunk.dictionary.to_pylist()) <= released[name], (node, name)
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


# ---- columns passed through as they are (a release read from the source's rows) -----------------------
@pytest.fixture
def passing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release of any size gives its text columns dictionary types (the tables here have 400 rows)."""
    monkeypatch.setattr(release_query, "PASSED_MIN_ROWS", 0)


def staff(rows: int = 400, seed: int = 5) -> pa.Table:
    """QIs city and age, a sensitive disease, and columns passed through as they are: "team" (text,
    no NULL), "note" (text with NULLs, one value held by one row only), "score" (numbers)."""
    rng = random.Random(seed)
    return pa.table({
        "city": pa.array([rng.choice(["zell", "aarau", "mels", "bern", "chur"]) for _ in range(rows)]),
        "age": pa.array([rng.randint(20, 69) for _ in range(rows)], pa.int32()),
        "disease": pa.array([rng.choice(["ulcer", "flu", "gastritis", "cancer"]) for _ in range(rows)]),
        "team": pa.array([rng.choice(["Zeta", "alpha", "Beta", "émile"]) for _ in range(rows)]),
        "note": pa.array([None if rng.random() < 0.2 else rng.choice(["late", "Early", "ok"]) for _ in range(rows - 1)]
                         + ["once"]),
        "score": pa.array([rng.randint(0, 9) for _ in range(rows)], pa.int32()),
    })


def staff_spec(**privacy) -> dict:
    return {
        "k": 2, "suppression": 0.0, "others": "keep", "search": {"explore": "lattice"}, **privacy,
        "quasi_identifiers": {
            "city": {"tree": {"*": {"West": ["zell", "mels"], "East": ["aarau", "bern", "chur"]}}},
            "age": {"bands": [10, 20]},
        },
        "sensitive": {"disease": {"distance": "equal", "t": 1.0}},
    }


def _text_schema(release: Release, path: Path) -> pa.Schema:
    """The oracle: the Parquet schema of the VARCHAR release written by the same COPY."""
    query, params = release.query()
    release.problem.engine.copy_to_parquet(query, path, params)
    return pq.read_schema(path)


def _schema_as_text(path: Path, text: pa.Schema) -> None:
    """The file's Parquet schema is the text release's: the same types and repetition."""
    assert pq.read_schema(path) == text


def test_passed_through_text_columns_in_dictionary_types_are_the_text_release(tmp_path: Path, passing: None) -> None:
    """At every satisfying node (nothing suppressed at k = 2 without suppression), read from the
    source's rows: the text columns given as they are (a QI at level 0 too) get dictionary types,
    and the file holds the text release's rows, order and Parquet schema."""
    passed_seen: set[str] = set()
    with sqlclose.anonymize(staff(), staff_spec()) as release:
        nodes = [node for node, e in release.search.evaluated.items() if e.satisfied]
        for i, node in enumerate(nodes):
            at = release.at(node)
            at._counted_columns = lambda: None  # type: ignore[method-assign]
            assert at._suppressed() is None
            passed = release_query.passed_through_dictionaries(at.problem, at.search.optimum, None)
            level_zero = {qi.name for qi, level in zip(at.problem.qis, node) if level == 0}
            assert set(passed) == {"disease", "team", "note"} | (level_zero & {"city"})  # text, given as it is
            expected = at.to_arrow()
            released = _released(expected)
            for name, column in passed.items():  # the members: the values the release holds
                assert set(_members(at.problem.engine, _kind(at, column))) == released[name], (node, name)
            got = written(at, tmp_path / f"{i}.parquet")
            assert got.to_pylist() == expected.to_pylist()  # same rows, same order
            _schema_as_text(tmp_path / f"{i}.parquet", _text_schema(at, tmp_path / f"t{i}.parquet"))
            passed_seen |= set(passed)
    assert len(nodes) >= 3 and "city" in passed_seen


def _repetition(path: Path) -> dict[str, bool]:
    return {f.name: f.nullable for f in pq.read_schema(path)}


def _each_kind_once(nodes: list[tuple]) -> list[tuple]:
    """Enough of ``nodes`` to hold each QI at each of its levels (given as it is, labels, the top's
    one label: each written its own way) and each set of generalized QIs (which decides the
    schema), chosen greedily: 4 of staff_spec()'s 10 satisfying nodes, whose every write costs
    ~0.5 s."""
    def kinds(node: tuple) -> set:
        generalized = frozenset(qi for qi, level in enumerate(node) if level)
        return {(qi, level) for qi, level in enumerate(node)} | {generalized}

    wanted, chosen = set().union(*map(kinds, nodes)), []
    while wanted:
        best = max(nodes, key=lambda node: len(kinds(node) & wanted))  # the first such node: the same every run
        chosen.append(best)
        wanted -= kinds(best)
    return sorted(chosen)


@pytest.mark.parametrize("way", ["from the source's rows", "from counts"])
def test_a_columns_repetition_follows_its_role_never_the_rows(tmp_path: Path, passing: None, way: str) -> None:
    """A generalized column is required (a label is never NULL); a column given as it is is optional
    whatever the rows hold: a source that declares its columns NOT NULL, one without a NULL and
    one with NULLs give files of one schema, in dictionary types or as text. Before, DuckDB's writer
    read the planner's statistics: the schema told whether the input held a NULL, suppressed rows
    included, and changed with the night's data. Written at the satisfying nodes that hold each
    QI's every level and each set of generalized QIs (``_each_kind_once``)."""
    table = staff() if way == "from the source's rows" else staff().select(["city", "age", "disease"])
    sources = {
        "declared": table.cast(pa.schema([pa.field(f.name, f.type, nullable=f.name == "note") for f in table.schema])),
        "no null": table,
        "nulls": table.set_column(table.schema.get_field_index("disease"), "disease",
                                  pa.array([None if i % 50 == 0 else v for i, v in
                                            enumerate(table.column("disease").to_pylist())])),
    }
    schemas = set()
    for name, data in sources.items():
        pq.write_table(data, tmp_path / f"{name}.parquet")
        requirement = staff_spec()
        if name == "nulls":
            requirement["sensitive"]["disease"].update({"nulls": "value", "null_value": "unknown"})
        with sqlclose.anonymize(tmp_path / f"{name}.parquet", requirement) as release:
            nodes = _each_kind_once([node for node, e in release.search.evaluated.items() if e.satisfied])
            assert len(nodes) == 4
            for i, node in enumerate(nodes):
                at = release.at(node)
                assert (at._counted_columns() is not None) == (way == "from counts" and name != "nulls")
                out = tmp_path / f"{name}_{i}.parquet"
                written(at, out)
                generalized = {qi.name for qi, level in zip(at.problem.qis, node) if level > 0}
                assert _repetition(out) == {c: c not in generalized for c in at.columns}, (name, node)
                _schema_as_text(out, _text_schema(at, tmp_path / f"{name}_{i}.text.parquet"))
                schemas.add((node, pq.read_schema(out)))
    assert len({node for node, _ in schemas}) == len(schemas) == 4  # one schema per node, whatever the source


def test_with_a_class_suppressed_passed_through_members_are_the_kept_rows_values(tmp_path: Path,
                                                                               passing: None) -> None:
    """A value only a suppressed class's rows hold must be no member: with a class suppressed, a
    column given as it is takes its members from the rows the release keeps (``kept_values``). At
    every satisfying node with a class suppressed, read from the source's rows, each member set is
    the distinct values of that column of the VARCHAR release (the oracle), the file is that
    release, and a value only suppressed rows hold ("plague", "vaduz") is nowhere in the file's
    bytes. people()'s "vaduz" rows fail k = 4 at many nodes, and the one "plague" row with them."""
    checked, hidden_seen = 0, set()
    with sqlclose.anonymize(people(), spec()) as release:
        for i, node in enumerate([node for node, e in release.search.evaluated.items() if e.satisfied]):
            at = release.at(node)
            at._counted_columns = lambda: None  # type: ignore[method-assign]
            if at._suppressed() is None:
                continue
            passed = release_query.passed_through_dictionaries(at.problem, at.search.optimum, at._suppressed())
            level_zero = {qi.name for qi, level in zip(at.problem.qis, node) if level == 0}
            assert set(passed) == {"disease"} | (level_zero & {"city", "job"}), node
            expected = at.to_arrow()
            released = _released(expected)
            for name, lookup in passed.items():
                assert set(_members(at.problem.engine, _kind(at, lookup))) == released[name], (node, name)
            got = written(at, tmp_path / f"{i}.parquet")
            assert got.to_pylist() == expected.to_pylist()  # same rows, same order
            hidden = {"plague", "vaduz"} - released["disease"] - released["city"]
            data = (tmp_path / f"{i}.parquet").read_bytes()
            assert not [v for v in hidden if v.encode() in data], node
            hidden_seen |= hidden
            checked += 1
    assert checked >= 3 and hidden_seen == {"plague", "vaduz"}


def _with_suppressed_values(disease: list[str], note: list[str]) -> pa.Table:
    """people() with a column "note" (a, b, c, d) and the two "vaduz" rows' disease and note set."""
    table = people()
    rows = table.num_rows
    vaduz = [i for i, city in enumerate(table.column("city").to_pylist()) if city == "vaduz"]
    diseases, notes = table.column("disease").to_pylist(), ["abcd"[i % 4] for i in range(rows)]
    for i, d, n in zip(vaduz, disease, note):
        diseases[i], notes[i] = d, n
    return table.set_column(3, "disease", pa.array(diseases)).append_column("note", pa.array(notes))


@pytest.mark.parametrize("note", [True, False], ids=["with an estimated column", "counted columns alone"])
def test_whether_a_column_is_a_dictionary_does_not_depend_on_suppressed_rows_values(
        tmp_path: Path, passing: None, monkeypatch: pytest.MonkeyPatch, note: bool) -> None:
    """Whether a column given as it is gets a dictionary type must be decided by the kept rows
    alone (docs/what-a-release-reveals.md). The kept rows hold 4 diseases and 4 notes, the most a
    dictionary may have here (``PASSED_MAX_VALUES`` = 4); the two suppressed "vaduz" rows hold
    values kept rows hold too (A) or two new ones each (B: "plague", "pest"; "x", "y"). Judged by
    k alone (t = 1), A and B suppress the same classes: at every satisfying node where the
    "vaduz" rows are suppressed (A and B then release the same rows), both columns are written
    as dictionaries and the two files are one, byte for byte. Counted over every row, B's diseases
    (a counted column) and notes (an estimated one) were past the bound, and B was written as text.
    Without the notes, the rows suppressed are the release's own count: no pass over the rows.
    The lattice is city's and age's, job left out: its 12 nodes are 10 satisfying, 6 of them
    checked, where spec()'s 36 with job's levels made 17 to check, two writes each (~1 s with their
    re-checks), and found nothing more: every node checked tells a B decided by the suppressed rows
    apart."""
    monkeypatch.setattr(release_query, "PASSED_MAX_VALUES", 4)
    lax = {**spec(), "others": "keep", "sensitive": {"disease": {"distance": "equal", "t": 1.0}}}
    lax["quasi_identifiers"] = {name: qi for name, qi in lax["quasi_identifiers"].items() if name != "job"}
    a = _with_suppressed_values(["flu", "flu"], ["a", "b"])
    b = _with_suppressed_values(["plague", "pest"], ["x", "y"])
    a, b = a.drop_columns(["job"]), b.drop_columns(["job"])
    if not note:
        a, b = a.drop_columns(["note"]), b.drop_columns(["note"])
        monkeypatch.setattr(release_query.q, "kept_rows", lambda *a, **k: pytest.fail("a pass to count the kept rows"))
    checked = 0
    with sqlclose.anonymize(a, lax) as release_a, sqlclose.anonymize(b, lax) as release_b:
        for i, node in enumerate([node for node, e in release_a.search.evaluated.items() if e.satisfied]):
            at_a, at_b = release_a.at(node), release_b.at(node)
            for at in (at_a, at_b):
                at._counted_columns = lambda: None  # type: ignore[method-assign]  # read from the source's rows
            expected = at_a.to_arrow()
            if at_a._suppressed() is None or expected.to_pylist() != at_b.to_arrow().to_pylist():
                continue  # nothing suppressed, or the "vaduz" rows kept: their values are released
            passed = release_query.passed_through_dictionaries(at_b.problem, node, at_b._suppressed(),
                                                               at_b.problem.rows - at_b.released_rows)
            assert {"disease", "note"} & set(at_b.columns) <= set(passed), node
            assert written(at_a, tmp_path / f"a{i}.parquet").to_pylist() == expected.to_pylist()
            written(at_b, tmp_path / f"b{i}.parquet")
            assert (tmp_path / f"a{i}.parquet").read_bytes() == (tmp_path / f"b{i}.parquet").read_bytes(), node
            checked += 1
    assert checked >= 3


def test_a_value_only_dropped_rows_hold_is_no_member(tmp_path: Path, passing: None) -> None:
    """Rows dropped for a NULL (nulls = "drop") are not released: a value only they hold ("secret")
    is in no dictionary and nowhere in the written file."""
    table = staff()
    city = table.column("city").to_pylist()
    note = table.column("note").to_pylist()
    city[0], note[0] = None, "secret"
    table = table.set_column(0, "city", pa.array(city)).set_column(4, "note", pa.array(note))
    drop = staff_spec()
    drop["quasi_identifiers"]["city"]["nulls"] = "drop"
    with sqlclose.anonymize(table, drop) as release:
        release._counted_columns = lambda: None  # type: ignore[method-assign]
        passed = release_query.passed_through_dictionaries(release.problem, release.search.optimum, None)
        assert "note" in passed
        assert "secret" not in _members(release.problem.engine, _kind(release, passed["note"]))
        written(release, tmp_path / "out.parquet")
    assert b"secret" not in (tmp_path / "out.parquet").read_bytes()


def _kind(release: Release, lookup: exp.Table) -> exp.DataType:
    """The dictionary type of a passed-through column, read from its lookup's code column."""
    described = release.problem.engine.con.sql(f"DESCRIBE {lookup.sql('duckdb')}").fetchall()
    return exp.DataType.build(dict((r[0], r[1]) for r in described)["code"], dialect="duckdb", udt=True)


@pytest.mark.parametrize("spellings", [["Ann", "ann", "Bob"], ["ann", "Bob", "cy"]])
def test_a_collated_column_is_released_in_every_spelling(spellings: list[str], passing: None, tmp_path: Path) -> None:
    """A DuckDB table's column under COLLATE NOCASE is read byte by byte (``compared_as_bytes``):
    "Ann" and "ann" are two values, each a member of the column's dictionary type, and the file
    holds each as the rows do, sorted as the text release is, and passes the re-check. The oracle:
    a plain GROUP BY of the table's own bytes, and the text release."""
    con = duckdb.connect()
    con.register("staff_arrow", staff())
    con.execute("CREATE TABLE staff AS SELECT * EXCLUDE (note) FROM staff_arrow")
    con.execute("ALTER TABLE staff ADD COLUMN nick VARCHAR COLLATE NOCASE")
    con.execute(f"UPDATE staff SET nick = ['{spellings[0]}', '{spellings[1]}', '{spellings[2]}'][1 + rowid % 3]")
    expected = dict(con.sql('SELECT nick COLLATE "binary", COUNT(*) FROM staff GROUP BY 1').fetchall())
    assert len(expected) == 3
    with sqlclose.anonymize((con, "staff"), staff_spec()) as release:
        release._counted_columns = lambda: None  # type: ignore[method-assign]
        passed = release_query.passed_through_dictionaries(release.problem, release.search.optimum, None)
        assert "nick" in passed
        got = release.problem.engine.fetch(*release.query(dictionaries=True))
        assert got.to_pylist() == release.to_arrow().to_pylist()
        assert release.write(tmp_path / "out.parquet")["verified"]
    written = duckdb.sql(f"SELECT nick, COUNT(*) FROM '{tmp_path / 'out.parquet'}' GROUP BY nick").fetchall()
    assert dict(written) == expected


def test_a_column_estimated_to_have_too_many_values_is_not_grouped(monkeypatch: pytest.MonkeyPatch,
                                                                   passing: None) -> None:
    """Another column's values are estimated before it is grouped: with a bound below its estimate,
    "team" (4 values) is neither grouped nor given a type, while the QI and the sensitive column,
    bounded by their leaves and domain, still are."""
    grouped: list[str] = []
    original = release_query._passed_through

    def recorded(problem, values, names, params=None):
        grouped.extend(names)
        return original(problem, values, names, params)

    monkeypatch.setattr(release_query, "_passed_through", recorded)
    monkeypatch.setattr(release_query, "ESTIMATE_ERROR", 0.001)  # every estimate a thousand times higher
    with sqlclose.anonymize(staff(), staff_spec()) as release:
        release._counted_columns = lambda: None  # type: ignore[method-assign]
        passed = release_query.passed_through_dictionaries(release.problem, release.search.optimum, None)
        assert "team" not in grouped and "note" not in grouped
        assert "disease" in passed and "team" not in passed
        got = release.problem.engine.fetch(*release.query(dictionaries=True))
        assert got.to_pylist() == release.to_arrow().to_pylist()


def test_a_small_release_or_a_column_of_many_values_stays_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Grouping a column's values costs a pass over the source's rows: below ``PASSED_MIN_ROWS`` rows
    (the default here) nothing is passed through; past ``PASSED_MAX_VALUES`` values a column is not."""
    with sqlclose.anonymize(staff(), staff_spec()) as release:
        release._counted_columns = lambda: None  # type: ignore[method-assign]
        assert release_query.passed_through_dictionaries(release.problem, release.search.optimum, None) == {}
        monkeypatch.setattr(release_query, "PASSED_MIN_ROWS", 0)
        monkeypatch.setattr(release_query, "PASSED_MAX_VALUES", 3)  # team has 4 values, note 4, disease 4
        assert release_query.passed_through_dictionaries(release.problem, release.search.optimum, None) == {}
        monkeypatch.setattr(release_query, "PASSED_MAX_VALUES", 4)
        assert set(release_query.passed_through_dictionaries(release.problem, release.search.optimum, None)) \
            >= {"team", "disease"}


def test_a_release_with_passed_through_dictionaries_does_not_follow_the_input_order(tmp_path: Path,
                                                                                    passing: None) -> None:
    """The input and shuffled copies give byte-identical files, dictionary types and all."""
    table, digests = staff(), []
    for i, seed in enumerate([None, 1, 2]):
        shuffled = table if seed is None else table.take(np.random.default_rng(seed).permutation(table.num_rows))
        with sqlclose.anonymize(shuffled, staff_spec()) as release:
            release._counted_columns = lambda: None  # type: ignore[method-assign]
            assert release_query.passed_through_dictionaries(release.problem, release.search.optimum, None)
            written(release, tmp_path / f"r{i}.parquet")
        digests.append(files.sha256(tmp_path / f"r{i}.parquet"))
    assert len(set(digests)) == 1


def test_json_and_uuid_columns_stay_text(passing: None) -> None:
    """A DuckDB table's JSON and UUID columns reach Arrow as text but are no plain text: no ENUM
    holds them, so they are not passed through, and the write is the text release's."""
    con = duckdb.connect()
    con.register("staff_arrow", staff())
    con.execute("CREATE TABLE staff AS SELECT *, uuid() AS badge, CAST('{\"a\": ' || score || '}' AS JSON) AS doc "
                "FROM staff_arrow")
    with sqlclose.anonymize((con, "staff"), staff_spec()) as release:
        release._counted_columns = lambda: None  # type: ignore[method-assign]
        passed = release_query.passed_through_dictionaries(release.problem, release.search.optimum, None)
        assert "team" in passed and not {"badge", "doc"} & set(passed)
        got = release.problem.engine.fetch(*release.query(dictionaries=True))
        assert got.to_pylist() == release.to_arrow().to_pylist()


def _write_objects(engine: DuckDBEngine) -> tuple[int, int]:
    """The dictionary types the engine holds now, and the lookups made for them."""
    types = engine.con.sql("SELECT COUNT(*) FROM duckdb_types() "
                           "WHERE starts_with(type_name, '__sqlclose_dictionary')").fetchall()[0][0]
    tables = engine.con.sql("SELECT COUNT(*) FROM duckdb_tables() WHERE starts_with(table_name, "
                            "'__sqlclose_typed_lookup') OR starts_with(table_name, '__sqlclose_passed_lookup')"
                            ).fetchall()[0][0]
    return int(types), int(tables)


@pytest.mark.parametrize("way", ["labels", "passed through"])
def test_each_write_drops_the_types_and_lookups_it_made(request: pytest.FixtureRequest, tmp_path: Path,
                                                        passing: None, way: str) -> None:
    """A write makes its own dictionary types and lookups and drops them once it is done, written
    or not: the many writes of one session (a sweep's, ``at`` node after node) keep none of them.
    The release is written again afterwards, whole. The labels' writes are the module's
    ``from_counts_files``, watched as they were written (``_watched_write``)."""
    with contextlib.ExitStack() as stack:
        if way == "labels":
            release = request.getfixturevalue("people_release")
            watched = [node_file.objects for node_file in request.getfixturevalue("from_counts_files")]
        else:
            release = stack.enter_context(sqlclose.anonymize(staff(), staff_spec()))
            watched = [_watched_write(release.at(node), tmp_path / f"{i}.parquet")[0]
                       for i, node in enumerate(node for node, e in release.search.evaluated.items() if e.satisfied)]
        engine = release.problem.engine
        nodes = [node for node, e in release.search.evaluated.items() if e.satisfied]
        assert len(watched) == len(nodes)
        for objects in watched:
            assert objects.after == (0, 0) and objects.temp_after == objects.temp_before  # the read-back view too
            assert objects.during and all(types and tables for types, tables in objects.during)  # every write had some
        failing = release.at(nodes[0])

        def fails(written: exp.Expression) -> dict:
            raise RuntimeError("the re-check stopped")

        failing.verified_summary = fails  # type: ignore[method-assign]
        with _copies_watched(engine) as seen, pytest.raises(RuntimeError, match="re-check stopped"):
            failing.write(tmp_path / "failed.parquet")
        assert not (tmp_path / "failed.parquet").exists() and _write_objects(engine) == (0, 0)
        with _copies_watched(engine) as again:
            first = release.write(tmp_path / "again.parquet")
        assert pq.read_table(tmp_path / "again.parquet").to_pylist() == release.to_arrow().to_pylist()
        assert first["verified"] and _write_objects(engine) == (0, 0)
        assert seen and again and all(types and tables for (types, tables), _ in seen + again)  # they had some


def test_a_gaa_release_has_the_same_repetition(tmp_path: Path) -> None:
    """Multidimensional recoding (its labels at several levels per column, from a per-run mapping):
    generalized columns required, those given as they are optional, as a full-domain release's."""
    requirement = staff_spec()
    requirement["search"] = {"algorithm": "gaa"}
    with sqlclose.anonymize(staff(), requirement) as release:
        release.write(tmp_path / "gaa.parquet")
        generalized = {qi.name for qi in release.problem.qis}
        assert _repetition(tmp_path / "gaa.parquet") == {c: c not in generalized for c in release.columns}


def test_a_value_only_a_dropped_row_holds_does_not_decide_a_dictionary(tmp_path: Path, passing: None) -> None:
    """A QI built by a rule and released as it is gets a dictionary type when its values are few for
    the rows (``ROWS_PER_VALUE``). Counted over every row, a dropped row's own ZIP tipped that
    count: the file's type told whether the row's ZIP was one the release holds. The oracle: the
    file of the table with that row removed, byte for byte."""
    rng = random.Random(3)
    zips = [z for z in ("47601", "47602", "47603", "47604", "47605") for _ in range(release_query.ROWS_PER_VALUE)]
    kept = pa.table({"zip": zips, "disease": [rng.choice(["flu", "ulcer", "cancer"]) for _ in zips]})
    spec = {"k": 2, "suppression": 0.0, "search": {"explore": "lattice"},
            "quasi_identifiers": {"zip": {"mask": True, "length": 5}},
            "sensitive": {"disease": {"distance": "equal", "t": 1.0, "nulls": "drop"}}}
    written_files = {}
    for name, extra in (("none", None), ("held", "47601"), ("own", "47699")):
        table = kept if extra is None else pa.concat_tables([kept, pa.table({"zip": [extra], "disease": [None]},
                                                                            schema=kept.schema)])
        with sqlclose.anonymize(table, spec) as release:
            assert release.node == {"zip": 0} and release.problem.rows == kept.num_rows
            release.write(tmp_path / f"{name}.parquet")
        written_files[name] = (tmp_path / f"{name}.parquet").read_bytes()
    assert written_files["held"] == written_files["none"]
    assert written_files["own"] == written_files["none"]


def test_values_only_suppressed_rows_hold_do_not_decide_a_dictionary(tmp_path: Path) -> None:
    """Two people with the plague fail t wherever they are, and are suppressed: whether they share
    a ZIP or not, the release is the same, and so must its file be. Decided by the size of the ZIP
    rule's leaves and of the disease domain (which hold the suppressed rows' values), the type of
    the released columns told the two apart. (The release is rebuilt from counts; read from the
    rows: ``test_whether_a_column_is_a_dictionary_does_not_depend_on_suppressed_rows_values``.)"""
    zips = [z for z in ("47601", "47602", "47603", "47604") for _ in range(10)]
    diseases = (["flu"] * 4 + ["ulcer"] * 3 + ["cancer"] * 3) * 4
    spec = {"k": 2, "suppression": 0.05, "search": {"explore": "lattice"},
            "quasi_identifiers": {"zip": {"mask": True, "length": 5}},
            "sensitive": {"disease": {"distance": "equal", "t": 0.3}}}
    written_files = []
    for hidden in (["47698", "47698"], ["47698", "47699"]):
        table = pa.table({"zip": zips + hidden, "disease": diseases + ["plague", "plague"]})
        with sqlclose.anonymize(table, spec) as release:
            assert release.node == {"zip": 0} and release.summary["suppressed_rows"] == 2
            release.write(tmp_path / "out.parquet", overwrite=True)
        written_files.append((tmp_path / "out.parquet").read_bytes())
    released = pq.read_table(tmp_path / "out.parquet")
    assert released.num_rows == 40 and b"plague" not in written_files[1]
    assert written_files[0] == written_files[1]
