"""Sources beyond one file: a SQL query (over files or a DuckDB database's tables), a DuckDB
relation from Python, and schema-qualified tables in a DuckDB file.

Oracle: Table 3 read straight from its CSV is the paper's table; every other way of handing the
same rows in (split into two tables and joined back by a query, a relation, a table in a schema)
must give the release DuckDB reads from the CSV-sourced release, row for row.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest
from forked_cli import run_cli
from table3_project import invoke

import sqlclose
from sqlclose.errors import InputError, NotLeavesError, SpecError

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"


@pytest.fixture
def project(tmp_path) -> Path:
    for name in ("table3.csv", "age.csv", "disease.csv"):
        (tmp_path / name).write_bytes((TABLE3 / name).read_bytes())
    con = duckdb.connect(str(tmp_path / "staff.duckdb"))
    con.execute("CREATE SCHEMA hr")
    con.execute("CREATE TABLE hr.people AS SELECT * FROM read_csv(?, header = true)", [str(tmp_path / "table3.csv")])
    con.execute("CREATE TABLE main.people AS SELECT * FROM hr.people")
    # Split in two, so that a query has to join them back: (row id, zip, age) and (row id, salary, disease).
    con.execute("CREATE TABLE who AS SELECT row_number() OVER () AS id, zip, age, salary, disease FROM hr.people")
    con.execute("CREATE TABLE pay AS SELECT id, salary, disease FROM who")
    con.execute("ALTER TABLE who DROP COLUMN salary")
    con.execute("ALTER TABLE who DROP COLUMN disease")
    con.close()
    return tmp_path


def spec_with(project: Path, source: str, name: str = "spec.toml") -> Path:
    text = (TABLE3 / "table3.toml").read_text().replace('path = "table3.csv"', source)
    (project / name).write_text(text.replace("../../out/table3/release.parquet", "out/release.parquet"))
    return project / name


def released_rows(source, spec_path: Path) -> tuple[dict, list[tuple]]:
    with sqlclose.anonymize(source, sqlclose.load_spec(spec_path)) as release:
        table = release.to_arrow()
        return release.node, sorted(zip(*(table.column(c).to_pylist() for c in table.column_names)), key=repr)


@pytest.fixture
def expected(project) -> tuple[dict, list[tuple]]:
    """The release of Table 3 from its CSV file: the paper's Table 5 node."""
    node, rows = released_rows(None, spec_with(project, 'path = "table3.csv"', "csv.toml"))
    assert node == {"zip": 1, "age": 2}
    return node, rows


def test_a_query_over_a_database_joins_tables_and_gives_the_same_release(project, expected, monkeypatch):
    query = ('query = "SELECT w.zip, w.age, p.salary, p.disease FROM who AS w JOIN pay AS p ON p.id = w.id"\n'
             'path = "staff.duckdb"')
    spec = spec_with(project, query)
    before = hashlib.sha256((project / "staff.duckdb").read_bytes()).hexdigest()
    monkeypatch.chdir(project.parent)  # names are the database's, not the working directory's
    assert released_rows(None, spec) == expected
    assert hashlib.sha256((project / "staff.duckdb").read_bytes()).hexdigest() == before  # read-only


def test_a_query_over_files_finds_them_beside_the_spec(project, expected, monkeypatch):
    columns = "{'zip': 'VARCHAR', 'age': 'BIGINT', 'salary': 'BIGINT', 'disease': 'VARCHAR'}"
    spec = spec_with(project, f"query = \"SELECT * FROM read_csv('table3.csv', header = true, columns = {columns}) "
                              "ORDER BY age\"")
    monkeypatch.chdir(project.parent)
    assert released_rows(None, spec) == expected


def test_a_query_counts_what_it_selects(project):
    """The input the report counts is the query's result: a plain SQL COUNT is the oracle."""
    spec = spec_with(project, 'query = "SELECT * FROM people WHERE salary >= 4000"\npath = "staff.duckdb"')
    text = spec.read_text().replace("k = 3", "k = 2").replace("t = 0.2", "t = 0.5").replace("t = 0.3", "t = 0.6")
    spec.write_text(text)
    expected = duckdb.connect(str(project / "staff.duckdb"), read_only=True).execute(
        "SELECT COUNT(*) FROM people WHERE salary >= 4000").fetchone()[0]
    with sqlclose.anonymize(None, sqlclose.load_spec(spec)) as release:
        assert release.report()["input"]["rows"] == expected == 8  # salaries 3,000 … 11,000 by 1,000: all but one


@pytest.mark.parametrize("table", ["hr.people", "main.people", "people"])
def test_schema_qualified_tables_in_a_duckdb_file(project, expected, table):
    assert released_rows(None, spec_with(project, f'path = "staff.duckdb"\ntable = "{table}"')) == expected


def test_a_duckdb_relation_is_a_source(project, expected):
    con = duckdb.connect()
    relation = con.sql("SELECT * FROM read_csv(?, header = true)", params=[str(project / "table3.csv")])
    assert released_rows(relation, spec_with(project, 'path = "table3.csv"')) == expected
    assert con.execute("SELECT COUNT(*) FROM duckdb_tables()").fetchall() == [(0,)]  # nothing left in theirs
    assert len(relation.fetchall()) == 9  # and the relation still reads


@pytest.mark.parametrize("query, message", [
    ("DELETE FROM people", "must be a SELECT (read-only), not DELETE"),
    ("SELECT * FROM people; DROP TABLE people", "must be one SELECT statement, not 2 statements"),
    ("ATTACH 'x.duckdb' AS x", "must be a SELECT (read-only), not ATTACH"),
    ("COPY people TO 'x.csv'", "must be a SELECT (read-only), not COPY"),
    ("SELEC * FROM people", "is not valid SQL"),
])
def test_anything_but_one_select_is_refused_before_running(project, query, message):
    spec = spec_with(project, f'query = "{query}"\npath = "staff.duckdb"')
    before = hashlib.sha256((project / "staff.duckdb").read_bytes()).hexdigest()
    with pytest.raises(SpecError, match="source.query: the query " + message.replace("(", r"\(").replace(")", r"\)")):
        sqlclose.load_spec(spec)
    assert hashlib.sha256((project / "staff.duckdb").read_bytes()).hexdigest() == before


def test_a_query_source_takes_no_file_options(project):
    with pytest.raises(SpecError, match="a query source takes path"):
        sqlclose.load_spec(spec_with(project, 'query = "SELECT 1"\npath = "staff.duckdb"\ntable = "people"'))
    with pytest.raises(SpecError, match="path names the DuckDB database it reads"):
        sqlclose.load_spec(spec_with(project, 'query = "SELECT 1"\npath = "table3.csv"'))


def test_a_failing_query_is_bad_input(project):
    spec = spec_with(project, 'query = "SELECT * FROM nosuch"\npath = "staff.duckdb"')
    with pytest.raises(InputError, match="the source query failed: .*nosuch"):
        sqlclose.anonymize(None, sqlclose.load_spec(spec))



@pytest.mark.parametrize("query", ["SELECT *, nextval('ids') AS id FROM hr.people",
                                   "SELECT * FROM hr.people WHERE nextval('ids') > 0"])
def test_a_query_that_writes_to_its_database_is_told_so(project, query):
    """nextval() advances a sequence stored in the database, which a source is read from read-only:
    DuckDB's refusal was told as "a value could not be converted or computed" (ninety-first round,
    noticed; mended in the ninety-second)."""
    con = duckdb.connect(str(project / "staff.duckdb"))
    con.execute("CREATE SEQUENCE ids")
    con.close()
    spec = spec_with(project, f'query = "{query}"\npath = "staff.duckdb"')
    with pytest.raises(InputError) as told:
        sqlclose.anonymize(None, sqlclose.load_spec(spec))
    assert str(told.value) == (f"the source query over {project / 'staff.duckdb'} writes to the database (as nextval() "
                               "does, advancing a sequence stored in it), and sqlclose reads a source database "
                               "read-only: leave that out of the query")
    con = duckdb.connect(str(project / "staff.duckdb"))
    assert con.execute("SELECT nextval('ids')").fetchall() == [(1,)]  # never advanced by the run
    con.close()



def test_a_table_named_like_a_folder_of_the_working_folder_is_read(project, expected, tmp_path_factory, monkeypatch):
    """A folder 'people' in the working folder refused `[source] table = "people"` (and `check --table
    people`) as a relative file DuckDB would read first: a table is the database's, no file
    (review of the ninety-second round). Oracle: the release of the paper's table from its CSV."""
    here = tmp_path_factory.mktemp("job")
    (here / "people").mkdir()
    monkeypatch.chdir(here)
    spec = spec_with(project, f'path = "{project / "staff.duckdb"}"\ntable = "people"')
    assert released_rows(None, spec) == expected


# ---- text columns declared with a collation ------------------------------------------------------
_SPELLINGS = ["Zell", "zell", "ZELL", "Bern", "bern", "chur"]


def _collated_people(path: Path) -> list[tuple[str, int, str]]:
    """A DuckDB table whose city is declared COLLATE NOCASE and spelled several ways per city."""
    rows = [(_SPELLINGS[i % len(_SPELLINGS)], 20 + (i * 7) % 50, ["flu", "ulcer", "cancer"][i % 3]) for i in range(240)]
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE people (city VARCHAR COLLATE NOCASE, age INTEGER, disease VARCHAR COLLATE NOCASE)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?)", rows)
    con.close()
    return rows


def _collated_spec(source: dict | None, leaves: list[str]) -> dict:
    return {**({"source": source} if source else {}), "k": 2, "suppression": 0.0, "search": {"explore": "lattice"},
            "quasi_identifiers": {"city": {"tree": {"*": leaves}}, "age": {"bands": [10, 20]}},
            "sensitive": {"disease": {"distance": "equal", "t": 1.0}}}


@pytest.mark.parametrize("way", ["table", "query", "connection"])
def test_a_collated_column_is_released_byte_for_byte(tmp_path, way):
    """A column declared COLLATE NOCASE calls "Zell" and "zell" one value; sqlclose's hierarchies,
    lookups and re-check tell them apart. The release holds every spelling as the rows do (its re-check
    refused it as altered before), counted per exact spelling by Python over the rows written."""
    db = tmp_path / "people.duckdb"
    rows = _collated_people(db)
    source: object = None
    if way == "table":
        spec = _collated_spec({"path": str(db), "table": "people"}, _SPELLINGS)
    elif way == "query":
        spec = _collated_spec({"path": str(db), "query": "SELECT city, age, disease FROM people"}, _SPELLINGS)
    else:
        con = duckdb.connect(str(db), read_only=True)
        source, spec = (con, "people"), _collated_spec(None, _SPELLINGS)
    with sqlclose.anonymize(source, spec) as release:
        nodes = [node for node, e in release.search.evaluated.items() if e.satisfied and node[0] == 0]
        assert nodes  # some releases give the city as it is
        at = release.at(nodes[0])
        at.write(tmp_path / "out.parquet")
    written = duckdb.sql(f"SELECT city, disease FROM '{tmp_path / 'out.parquet'}'").fetchall()
    assert sorted(written) == sorted((city, disease) for city, _, disease in rows)


def _output_schema(database: Path) -> str:
    con = duckdb.connect(str(database), read_only=True)
    try:
        return con.execute("SELECT sql FROM duckdb_tables() WHERE table_name = 'released'").fetchall()[0][0]
    finally:
        con.close()


def test_a_table_output_from_a_collated_source_declares_its_text_as_a_parquet_source_gives_it(tmp_path):
    """The source's text is read under the ``binary`` collation (so that "Zell" and "zell" stay
    apart); a DuckDB table output then declared a column given as it is (the city at level 0, a
    note kept as it is) ``VARCHAR COLLATE "binary"``, where the same rows read from Parquet gave
    ``VARCHAR``: the output's schema told how the source was stored. Oracle: the schema DuckDB
    declares for the release written from a Parquet copy of the same table."""
    db = tmp_path / "people.duckdb"
    _collated_people(db)
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE people ADD COLUMN note VARCHAR COLLATE NOCASE")
    con.execute("UPDATE people SET note = CASE WHEN age % 2 = 0 THEN 'Even' ELSE 'odd' END")
    con.close()
    parquet = tmp_path / "people.parquet"
    _copy_table_to_parquet(db, parquet)
    schemas = {}
    for name, source in (("duckdb", {"path": str(db), "table": "people"}), ("parquet", {"path": str(parquet)})):
        with sqlclose.anonymize(None, {**_collated_spec(source, _SPELLINGS), "others": "keep"}) as release:
            nodes = [node for node, e in release.search.evaluated.items() if e.satisfied and node[0] == 0]
            out = tmp_path / f"from_{name}.duckdb"
            assert release.at(min(nodes)).write(out, table="released")["verified"]
        schemas[name] = _output_schema(out)
    assert schemas["duckdb"] == schemas["parquet"]
    assert "city VARCHAR," in schemas["duckdb"] and "note VARCHAR)" in schemas["duckdb"]


def _copy_table_to_parquet(database: Path, parquet: Path) -> None:
    con = duckdb.connect(str(database), read_only=True)
    try:
        con.execute(f"COPY people TO '{parquet}' (FORMAT parquet)")
    finally:
        con.close()


def test_a_collated_value_missing_from_its_hierarchy_is_named(tmp_path):
    """Its collation does not make "zell" the leaf "Zell": the value is told as missing (counted in
    the error, which names no value; named in ``listed``, for `hierarchy validate --show-values`)."""
    db = tmp_path / "people.duckdb"
    _collated_people(db)
    with pytest.raises(NotLeavesError, match=r"column 'city' holds 1 value \(in \d+ rows\) that is not a leaf") \
            as raised:
        sqlclose.anonymize(None, _collated_spec({"path": str(db), "table": "people"},
                                                [s for s in _SPELLINGS if s != "zell"]))
    assert "zell" not in str(raised.value) and "'zell'" in raised.value.named


def test_a_release_from_a_read_only_connection_is_written_and_verified(project, expected, tmp_path):
    """A caller's connection opened read-only: the release is written to Parquet and read back for
    its re-check through a temporary view (a view made in the connection's database was refused)."""
    con = duckdb.connect(str(project / "staff.duckdb"), read_only=True)
    spec = sqlclose.load_spec(spec_with(project, 'path = "table3.csv"', "csv.toml"))
    with sqlclose.anonymize((con, "people"), spec) as release:
        report = release.write(tmp_path / "release.parquet")
    assert report["verified"]
    written = duckdb.sql(f"SELECT * FROM '{tmp_path / 'release.parquet'}'").fetchall()
    assert sorted(written, key=repr) == expected[1]


def test_a_read_only_connection_is_told_it_cannot_write_a_database_output(project, tmp_path):
    """A DuckDB table output is built in a database the connection attaches for writing: from a
    read-only one DuckDB's own error came out as an internal error (exit 1). Now bad input (2),
    saying what to do, with nothing written; its Parquet output still goes (above)."""
    con = duckdb.connect(str(project / "staff.duckdb"), read_only=True)
    spec = sqlclose.load_spec(spec_with(project, 'path = "table3.csv"', "csv.toml"))
    out = tmp_path / "out"
    out.mkdir()
    with sqlclose.anonymize((con, "people"), spec) as release:
        with pytest.raises(InputError, match="opened read-only, so it cannot write a DuckDB database output") as e:
            release.write(out / "release.duckdb", table="people")
    assert e.value.exit_code == 2
    assert list(out.iterdir()) == []


def _parquet_of_table3(project: Path, name: str = "people.parquet") -> tuple[Path, bytes]:
    path = project / name
    duckdb.sql(f"COPY (SELECT * FROM read_csv('{project / 'table3.csv'}')) TO '{path}' (FORMAT parquet)")
    return path, path.read_bytes()


@pytest.mark.parametrize("make", [
    lambda con, path: con.sql(f"SELECT * FROM '{path}'"),
    lambda con, path: con.read_parquet(str(path)),
    lambda con, path: con.sql(f"SELECT * FROM read_parquet('{path}')").filter("age > 0"),
], ids=["sql", "read_parquet", "filtered"])
def test_a_relation_over_a_parquet_file_is_not_overwritten_by_its_release(project, make):
    """A relation is the Python form of a source query, whose files no output may replace, even with
    overwrite (what-a-release-reveals.md); a relation's files were not recorded as inputs, and the
    release was written over the file it read. Oracle: the file's bytes before the run."""
    path, before = _parquet_of_table3(project)
    con = duckdb.connect()
    with sqlclose.anonymize(make(con, path), sqlclose.load_spec(spec_with(project, 'path = "table3.csv"'))) as release:
        with pytest.raises(InputError, match="a file this job reads"):
            release.write(path, overwrite=True)
    assert path.read_bytes() == before


def test_a_view_over_a_parquet_file_is_not_overwritten_by_its_release(project):
    """The same for a (connection, view) source: the view's SQL (duckdb_views()) names the file."""
    path, before = _parquet_of_table3(project)
    con = duckdb.connect()
    con.execute(f"CREATE VIEW people AS SELECT * FROM '{path}'")
    with sqlclose.anonymize((con, "people"), sqlclose.load_spec(spec_with(project, 'path = "table3.csv"'))) as release:
        with pytest.raises(InputError, match="a file this job reads"):
            release.write(path, overwrite=True)
    assert path.read_bytes() == before


def test_a_file_a_view_of_a_view_finds_in_the_search_path_is_not_overwritten(project, tmp_path_factory, monkeypatch):
    """A relation over a view over a view over a relative name, found in the connection's
    file_search_path: each view's SQL is followed, and the name looked up as DuckDB looks it up."""
    path, before = _parquet_of_table3(project)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    con = duckdb.connect()
    con.execute("SET file_search_path = ?", [str(project)])
    con.execute("CREATE VIEW inner_people AS SELECT * FROM 'people.parquet'")
    con.execute("CREATE VIEW people AS SELECT * FROM inner_people")
    with sqlclose.anonymize(con.sql("SELECT * FROM people"),
                            sqlclose.load_spec(spec_with(project, 'path = "table3.csv"'))) as release:
        with pytest.raises(InputError, match="which this job reads|a file this job reads"):
            release.write(path, overwrite=True)
    assert path.read_bytes() == before


@pytest.mark.parametrize("source", ['table = "people"', 'query = "SELECT * FROM people"'])
def test_a_file_a_database_sources_view_reads_is_not_overwritten(project, source):
    """The command's [source] path = "x.duckdb" with a table, or a query, naming a view over a
    Parquet file: the view's SQL names the file, which is refused as the output."""
    path, before = _parquet_of_table3(project)
    con = duckdb.connect(str(project / "views.duckdb"))
    con.execute(f"CREATE VIEW people AS SELECT * FROM '{path}'")
    con.close()
    spec = spec_with(project, f'path = "views.duckdb"\n{source}')
    result = invoke("anonymize", spec, "--output", path, "--overwrite")
    assert result.exit_code == 2, result.output
    assert "this job reads" in result.output
    assert path.read_bytes() == before


def test_a_source_given_beside_a_query_is_refused_not_read_instead(project):
    """Review rv25: `--source people.parquet` on a spec whose source is `SELECT age, zip, note FROM
    'people.parquet'` dropped the query and read the whole file: with others = "keep" its ssn, which
    the query leaves out and so no identifiers entry names, was released, exit 0 (so did
    ``sqlclose.anonymize(path, spec)``). Now refused (exit 2) naming the query and the option, and
    nothing is written. The oracle: the file system (no output) and the SSNs written here."""
    with duckdb.connect() as con:
        con.execute("COPY (SELECT 20 + (i * 7) % 50 AS age, (['47677', '47602', '47678', '47905'])[1 + (i % 4)] AS "
                    "zip, 'n' || i AS note, 'SSN-' || (1000 + i) AS ssn FROM range(20) r(i)) "
                    f"TO '{project / 'people.parquet'}'")
    (project / "s.toml").write_text(
        'others = "keep"\n[source]\nquery = "SELECT age, zip, note FROM \'people.parquet\'"\n'
        '[output]\npath = "out.parquet"\n[privacy]\nk = 3\nsuppression = 0.1\n'
        '[quasi_identifiers]\nage = { bands = [10, 20] }\nzip = { mask = true, length = 5 }\n')
    for command in ("anonymize", "explain"):
        done = run_cli([command, "s.toml", "--source", "people.parquet"], cwd=project)
        assert done.returncode == 2, done.stderr
        assert "[source] is a query" in done.stderr and "--source" in done.stderr and "SSN-" not in done.stderr
    with pytest.raises(SpecError, match=r"\[source\] is a query.*people\.parquet: --source"):
        sqlclose.anonymize(project / "people.parquet", sqlclose.load_spec(project / "s.toml"))
    assert not (project / "out.parquet").exists()
    with sqlclose.anonymize(None, sqlclose.load_spec(project / "s.toml")) as release:  # the query alone: no ssn
        assert release.to_arrow().column_names == ["age", "zip", "note"]


PEOPLE = ("SELECT 20 + (i * 7) % 50 AS age, (['47677', '47602', '47678', '47905'])[1 + (i % 4)] AS zip, "
          "'{tag}-' || i AS note FROM range(20) r(i)")
SPEC_TAIL = ('[output]\npath = "out.parquet"\noverwrite = true\n[privacy]\nk = 3\nsuppression = 0.1\n'
             '[quasi_identifiers]\nage = { bands = [10, 20] }\nzip = { mask = true, length = 5 }\n')


@pytest.mark.parametrize("source", ['path = "db.duckdb"\ntable = "v"', "query = \"SELECT * FROM 'people.parquet'\""])
def test_a_relative_file_is_read_from_the_sources_folder_or_refused(tmp_path, monkeypatch, source):
    """Review rv25: a database's view over 'people.parquet' (made in the database's folder) was read
    from the process's working folder: `sqlclose anonymize sub/s.toml` run from the parent released
    the parent's people.parquet, other rows, exit 0. DuckDB looks a relative name up in the working
    folder before its file_search_path, so a [source] query's files did the same. Now: the
    database's (or the query's) folder is searched, and where the working folder holds a file of
    that name too, the run is refused (exit 2) naming it. The oracle: the notes written into each
    file (REAL-… beside the database, OTHER-… in the parent)."""
    sub, elsewhere = tmp_path / "sub", tmp_path / "elsewhere"
    sub.mkdir(), elsewhere.mkdir()
    with duckdb.connect() as con:
        con.execute(f"COPY ({PEOPLE.format(tag='REAL')}) TO '{sub / 'people.parquet'}'")
        con.execute(f"COPY ({PEOPLE.format(tag='OTHER')}) TO '{tmp_path / 'people.parquet'}'")
    monkeypatch.chdir(sub)  # DuckDB checks the view's file when the view is made
    with duckdb.connect(str(sub / "db.duckdb")) as db:
        db.execute("CREATE VIEW v AS SELECT * FROM 'people.parquet'")
    (sub / "s.toml").write_text(f'others = "keep"\n[source]\n{source}\n{SPEC_TAIL}')
    want = sorted(f"REAL-{i}" for i in range(20))
    for cwd in (sub, elsewhere, tmp_path):
        done = run_cli(["anonymize", sub / "s.toml", "--no-progress"], cwd=cwd)
        if cwd == tmp_path:  # holds a people.parquet of its own, which DuckDB would read first
            assert done.returncode == 2, done.stderr
            assert "'people.parquet', a relative path" in done.stderr and str(tmp_path) in done.stderr
            continue
        assert done.returncode == 0, done.stderr
        with duckdb.connect() as con:
            assert sorted(r[0] for r in con.sql(f"SELECT note FROM '{sub / 'out.parquet'}'").fetchall()) == want
        (sub / "out.parquet").unlink()
        (sub / "out.parquet.report.json").unlink()
    assert not (sub / "out.parquet").exists()


def _database_with_view(folder: Path, monkeypatch) -> Path:
    """``folder/db/db.duckdb`` holding a view over 'people.parquet' (the REAL notes) beside it."""
    db = folder / "db"
    db.mkdir(parents=True)
    with duckdb.connect() as con:
        con.execute(f"COPY ({PEOPLE.format(tag='REAL')}) TO '{db / 'people.parquet'}'")
    monkeypatch.chdir(db)  # DuckDB checks the view's file when the view is made
    with duckdb.connect(str(db / "db.duckdb")) as con:
        con.execute("CREATE VIEW v AS SELECT * FROM 'people.parquet'")
    monkeypatch.chdir(folder)
    return db / "db.duckdb"


def test_a_query_naming_a_databases_view_reads_its_file_in_the_databases_folder(tmp_path, monkeypatch):
    """A [source] query over a database (`path = "db/db.duckdb"`, `query = "SELECT * FROM v"`) whose
    view reads 'people.parquet', a file beside the database: the query's files are looked up in the
    spec's folder, so the view found no file and the job stopped (`No files found that match the
    pattern "people.parquet"`, the view not named), where `table = "v"` read it. Now the database's
    folder is searched after the query's. Where the query's folder holds a people.parquet too (the
    OTHER notes), which DuckDB would read instead, the run is refused naming the view and both
    folders. The oracle: the notes written into each file."""
    database = _database_with_view(tmp_path, monkeypatch)
    (tmp_path / "s.toml").write_text(f'others = "keep"\n[source]\npath = "db/db.duckdb"\nquery = "SELECT * FROM v"\n'
                                     f'{SPEC_TAIL}')
    done = run_cli(["anonymize", tmp_path / "s.toml", "--no-progress"], cwd=tmp_path / "db")
    assert done.returncode == 0, done.stderr
    got = duckdb.sql(f"SELECT note FROM '{tmp_path / 'out.parquet'}'").fetchall()
    assert sorted(r[0] for r in got) == sorted(f"REAL-{i}" for i in range(20))
    (tmp_path / "out.parquet").unlink()
    with duckdb.connect() as con:
        con.execute(f"COPY ({PEOPLE.format(tag='OTHER')}) TO '{tmp_path / 'people.parquet'}'")
    done = run_cli(["anonymize", tmp_path / "s.toml", "--no-progress"], cwd=database.parent)
    assert done.returncode == 2, done.stderr
    assert (f"its view 'v' reads 'people.parquet', a relative path meant in the database's folder "
            f"({database.parent.resolve()}), and the query's folder ({tmp_path.resolve()})") in done.stderr
    assert "OTHER-" not in done.stderr and not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("source", ['table = "v"', 'query = "SELECT * FROM v"'])
def test_a_databases_folder_with_a_comma_is_searched_whole(tmp_path, monkeypatch, source):
    """DuckDB splits ``file_search_path`` at commas: a database in ``2026,q4/`` had its folder
    searched as ``…/2026`` and ``q4``, and its view's people.parquet was not found. The folder is
    now searched through a link of a plain name. The oracle: the notes written into the file."""
    database = _database_with_view(tmp_path / "2026,q4", monkeypatch)
    (tmp_path / "s.toml").write_text(f'others = "keep"\n[source]\npath = "{database}"\n{source}\n{SPEC_TAIL}')
    done = run_cli(["anonymize", tmp_path / "s.toml", "--no-progress"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = duckdb.sql(f"SELECT note FROM '{tmp_path / 'out.parquet'}'").fetchall()
    assert sorted(r[0] for r in got) == sorted(f"REAL-{i}" for i in range(20))
