"""A source's columns are released under the names the source gives them, or refused (review rv25).

DuckDB renames what it cannot tell apart when it stores a result: the second ``ssn`` of a query
or relation becomes ``ssn_1`` (``ssn, SSN``: ``SSN_1``), and ``others = "keep"`` released the copy,
an identifier's among them. Every other source (CSV header, Parquet, Arrow, pandas, Spark) was
already refused for a name given twice.

Oracles: the identifiers' values and the column names written by the tests themselves (plain
DuckDB and pyarrow over the input and the output), never sqlclose's output pasted back."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq
import pytest

import sqlclose
from sqlclose.errors import InputError

ZIPS = ["47677", "47602", "47678", "47905"]
N = 24
SSNS = {f"SSN-{1000 + i}" for i in range(N)}  # the identifier's values, by construction


def _spec(out, source=None, **top) -> dict:
    spec = {"others": "keep", "output": {"path": str(out)}, "privacy": {"k": 3, "suppression": 0.1},
            "quasi_identifiers": {"age": {"bands": [10, 20]}, "zip": {"mask": True, "length": 5}}, **top}
    if source is not None:
        spec["source"] = source
    return spec


def _release(source, spec: dict, out) -> None:
    with sqlclose.anonymize(source, spec) as release:
        release.write_parquet(out)


def _hr_database(path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE patients AS SELECT i AS id, 'SSN-' || (1000 + i) AS ssn, 20 + (i * 7) % 50 AS age, "
                f"{ZIPS}[1 + i % 4] AS zip FROM range({N}) r(i)")
    con.execute("CREATE TABLE visits AS SELECT i AS patient_id, 'SSN-' || (1000 + i) AS ssn, 'flu' AS disease "
                f"FROM range({N}) r(i)")
    con.close()


@pytest.mark.parametrize("query, says", [
    ("SELECT * FROM patients p JOIN visits v ON p.id = v.patient_id", "names column 'ssn' more than once"),
    ("SELECT *, ssn AS SSN FROM patients", "differ only in case ('ssn' and 'SSN')"),
])
def test_a_source_query_naming_a_column_twice_is_refused(tmp_path, query, says):
    """A join of two tables that both hold ssn (the README's kind of query), or ``ssn AS SSN``: the
    copy was released as ssn_1 / SSN_1, every row's SSN in the file, exit 0. The oracle: the
    query's own result names, as plain DuckDB gives them unstored, hold ssn twice; nothing is
    written."""
    _hr_database(tmp_path / "hr.duckdb")
    with duckdb.connect(str(tmp_path / "hr.duckdb"), read_only=True) as con:
        assert [c.lower() for c in con.sql(query).columns].count("ssn") == 2
    out = tmp_path / "out.parquet"
    spec = _spec(out, {"path": str(tmp_path / "hr.duckdb"), "query": query}, identifiers=["ssn"])
    with pytest.raises(InputError) as e:
        _release(None, spec, out)
    assert str(e.value).startswith("the source query ") and says in str(e.value)
    assert not SSNS & set(str(e.value).split())
    assert not out.exists()


def test_a_duckdb_relation_naming_a_column_twice_is_refused(tmp_path):
    """A relation's names were checked after it was stored, where DuckDB had renamed the copy SSN_1:
    the check could never fire, and the copy was released. The oracle: ``relation.columns``."""
    _hr_database(tmp_path / "hr.duckdb")
    con = duckdb.connect(str(tmp_path / "hr.duckdb"))
    relation = con.sql("SELECT id, ssn, age, zip, ssn AS SSN FROM patients")
    assert [c.lower() for c in relation.columns].count("ssn") == 2
    out = tmp_path / "out.parquet"
    with pytest.raises(InputError, match=r"the DuckDB relation has columns whose names differ only in case "
                                         r"\('ssn' and 'SSN'\)"):
        _release(relation, _spec(out, identifiers=["ssn"]), out)
    assert not out.exists()


def test_a_source_query_naming_each_column_once_still_releases(tmp_path):
    """The join with one ssn kept releases, and the file holds no SSN (plain DuckDB over it)."""
    _hr_database(tmp_path / "hr.duckdb")
    out = tmp_path / "out.parquet"
    query = "SELECT p.*, v.disease FROM patients p JOIN visits v ON p.id = v.patient_id"
    _release(None, _spec(out, {"path": str(tmp_path / "hr.duckdb"), "query": query}, identifiers=["ssn"]), out)
    assert pq.read_schema(out).names == ["id", "age", "zip", "disease"]
    texts = {str(v) for column in pq.read_table(out).columns for v in column.to_pylist()}
    assert not texts & SSNS


def _table_with_a_nameless_column():
    import pyarrow as pa

    return pa.table({"age": [20 + (i * 7) % 50 for i in range(N)], "zip": [ZIPS[i % 4] for i in range(N)],
                     "": [f"SSN-{1000 + i}" for i in range(N)]})


@pytest.mark.parametrize("kind", ["arrow", "pandas", "parquet", "parquet folder"])
def test_a_column_with_no_name_is_refused_naming_its_position(tmp_path, kind):
    """Review rv25: a CSV header field with no name was refused, but an Arrow table's, a DataFrame's or a
    Parquet file's column named "" was released as 'v2' (Arrow, pandas) or 'C2' (Parquet), a name the
    source does not have. Now refused, naming the column's position. The oracle: the input's names
    (pyarrow), where the third is ""; nothing is written."""
    table = _table_with_a_nameless_column()
    source = {"arrow": table, "pandas": table.to_pandas()}.get(kind, tmp_path / "in")
    if kind == "parquet":
        source = tmp_path / "in.parquet"
        pq.write_table(table, source)
    elif kind == "parquet folder":
        source.mkdir()
        pq.write_table(table.slice(0, 12), source / "a.parquet")
        pq.write_table(table.slice(12), source / "b.parquet")
    if kind.startswith("parquet"):
        assert pq.read_schema(next(iter(sorted(tmp_path.rglob("*.parquet"))))).names == ["age", "zip", ""]
    out = tmp_path / "out.parquet"
    with pytest.raises(InputError, match="its column 3 \\(counted from 1\\) has no name") as e:
        _release(source, _spec(out), out)
    assert "v2" not in str(e.value) and "C2'" not in str(e.value) and "SSN-" not in str(e.value)
    assert not out.exists()


def test_an_identifier_named_as_a_nameless_column_is_not_told_of_a_made_up_name(tmp_path):
    """identifiers = [""] on a table with a column "" was told `column '' is not in arrow table (its
    columns: 'age', 'zip', 'v2')`: the table has that column, and none named v2."""
    out = tmp_path / "out.parquet"
    with pytest.raises(InputError, match="has no name") as e:
        _release(_table_with_a_nameless_column(), _spec(out, identifiers=[""]), out)
    assert "v2" not in str(e.value)


@pytest.mark.parametrize("kind", ["arrow", "parquet", "parquet folder"])
def test_a_struct_whose_fields_differ_only_in_case_is_refused(tmp_path, kind):
    """Review rv25: a kept STRUCT with fields a and A (distinct in Parquet and Arrow) was released from a
    Parquet file as STRUCT(a, A_1): every row's value changed. Refused now, as top-level names alike
    but for case are, naming the column and the fields, also nested in a list. The oracle: the
    input's field names (pyarrow), and no output written."""
    import pyarrow as pa

    table = pa.table({"age": [20 + (i * 7) % 50 for i in range(N)], "zip": [ZIPS[i % 4] for i in range(N)],
                      "s": pa.array([{"a": i, "A": -i} for i in range(N)]),
                      "l": pa.array([[{"x": i, "X": i}] for i in range(N)])})
    source = table if kind == "arrow" else tmp_path / ("in.parquet" if kind == "parquet" else "in")
    if kind == "parquet":
        pq.write_table(table, source)
    elif kind == "parquet folder":
        source.mkdir()
        pq.write_table(table.slice(0, 12), source / "a.parquet")
        pq.write_table(table.slice(12), source / "b.parquet")
    if kind != "arrow":
        written = pq.read_schema(sorted(tmp_path.rglob("*.parquet"))[0])
        assert [f.name for f in written.field("s").type] == ["a", "A"]
    out = tmp_path / "out.parquet"
    with pytest.raises(InputError, match="column 's' holds a struct whose fields 'a' and 'A' are one name"):
        _release(source, _spec(out), out)
    assert not out.exists()
    with pytest.raises(InputError, match="column 'l' holds a struct whose fields 'x' and 'X'"):
        _release(table.drop_columns(["s"]), _spec(out), out)


def test_a_struct_of_distinct_fields_keeps_its_names(tmp_path):
    """A struct whose fields differ (a, b) is released with its fields as the input names them."""
    import pyarrow as pa

    table = pa.table({"age": [20 + (i * 7) % 50 for i in range(N)], "zip": [ZIPS[i % 4] for i in range(N)],
                      "s": pa.array([{"a": i, "b": -i} for i in range(N)])})
    pq.write_table(table, tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    _release(tmp_path / "in.parquet", _spec(out), out)
    assert [f.name for f in pq.read_schema(out).field("s").type] == ["a", "b"]


def _struct_alike_but_for_case(tmp_path):
    """A Parquet file whose struct s has fields a and A (as pyarrow writes them: the oracle)."""
    import pyarrow as pa

    table = pa.table({"age": [20 + (i * 7) % 50 for i in range(N)], "zip": [ZIPS[i % 4] for i in range(N)],
                      "s": pa.array([{"a": i, "A": -i} for i in range(N)]),
                      "l": pa.array([[{"x": i, "X": i}] for i in range(N)])})
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    assert [f.name for f in pq.read_schema(path).field("s").type] == ["a", "A"]
    return path


@pytest.mark.parametrize("through", ["source query", "duckdb relation", "database view", "connection view"])
def test_a_struct_alike_but_for_case_read_through_duckdb_sql_is_refused(tmp_path, through):
    """Review rv26: the file refused as [source] path (above) was released as STRUCT(a, A_1) when
    read through a [source] query, a DuckDB relation or a .duckdb view over it: DuckDB renames the
    field as it reads the file, and the result's schema was not checked. Refused now, naming the
    column and both fields, and no output written (oracle: the file system). The nested case (a
    list of {x, X}) too."""
    path = _struct_alike_but_for_case(tmp_path)
    out = tmp_path / "out.parquet"
    for column in ("s", "l"):
        select = f"SELECT age, zip, {column} FROM '{path}'"
        con = duckdb.connect(str(tmp_path / f"v_{column}.duckdb"))
        con.execute(f"CREATE VIEW v AS {select}")
        if through == "source query":
            source, spec = None, _spec(out, {"query": select, "folder": str(tmp_path)})
        elif through == "duckdb relation":
            source, spec = con.sql(select), _spec(out)
        elif through == "connection view":
            source, spec = (con, "v"), _spec(out)
        else:
            con.close()
            source, spec = None, _spec(out, {"path": str(tmp_path / f"v_{column}.duckdb"), "table": "v"})
        fields = "'A_1' beside 'a'" if column == "s" else "'X_1' beside 'x'"
        with pytest.raises(InputError, match=f"column '{column}' holds a struct whose field {fields}"):
            _release(source, spec, out)
        assert not out.exists()
        con.close()


def test_a_relation_over_an_arrow_struct_alike_but_for_case_is_refused(tmp_path):
    """A relation over a registered Arrow table keeps the fields a and A (DuckDB renames them only
    when it reads a file); storing it would change them: refused as an Arrow source is."""
    import pyarrow as pa

    table = pa.table({"age": [20 + (i * 7) % 50 for i in range(N)], "zip": [ZIPS[i % 4] for i in range(N)],
                      "s": pa.array([{"a": i, "A": -i} for i in range(N)])})
    con = duckdb.connect()
    con.register("people", table)
    out = tmp_path / "out.parquet"
    with pytest.raises(InputError, match="column 's' holds a struct whose fields 'a' and 'A' are one name"):
        _release(con.sql("FROM people"), _spec(out), out)
    assert not out.exists()
