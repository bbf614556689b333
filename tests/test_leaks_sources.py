"""A source is read as its rows are, or refused (issue 7, the forty-sixth round's red team): a
Parquet folder's files read each with its own types, and no value of the input in an error. Oracles
are plain: each file read alone by pyarrow, the error's text, all of stderr and the --json document."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from forked_cli import run_cli

import sqlclose
from sqlclose.errors import InputError, SpecError

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
SECRET = "SECRET-4711"


def _table3() -> pa.Table:
    return pacsv.read_csv(TABLE3 / "table3.csv", convert_options=pacsv.ConvertOptions(
        column_types={"zip": pa.string(), "age": pa.int64(), "salary": pa.int64()}))


def _spec(**changes: object) -> dict:
    spec = sqlclose.load_spec(TABLE3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec.update(changes)
    return spec


def _folder(path: Path, second: pa.Table) -> Path:
    """Table 3 as a folder of two files: its first five rows as they are, then ``second``."""
    path.mkdir()
    pq.write_table(_table3().slice(0, 5), path / "a.parquet")
    pq.write_table(second, path / "b.parquet")
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli([*args, "--no-progress"], cwd=cwd)


def _spec_file(tmp_path: Path, source: str, name: str = "spec.toml") -> Path:
    spec = (TABLE3 / "table3.toml").read_text(encoding="utf-8")
    spec = spec.replace('path = "table3.csv"', source).replace('"../../out/table3/release.parquet"', '"out.parquet"')
    spec = spec.replace('file = "age.csv"', f'file = "{TABLE3 / "age.csv"}"')
    spec = spec.replace('hierarchy = "disease.csv"', f'hierarchy = "{TABLE3 / "disease.csv"}"')
    (tmp_path / name).write_text(spec, encoding="utf-8")
    return tmp_path / name


def test_a_parquet_folders_files_of_unlike_types_are_refused(tmp_path):
    """DuckDB reads a folder (or a pattern) as one table, every file with the first file's types:
    a second file whose salaries are DOUBLE (8000.5) was cast to the first's BIGINT, and the release
    published 8000, a salary no row holds, verified all the same (the re-check reads the source the
    same way). The oracle: each file read alone by pyarrow; the same folder with one type releases
    the salaries its files hold."""
    rest = _table3().slice(5)
    alike = _folder(tmp_path / "alike", rest)
    with sqlclose.anonymize(alike, _spec()) as release:
        release.write_parquet(tmp_path / "alike.parquet")
    held = {v for f in alike.iterdir() for v in pq.read_table(f).column("salary").to_pylist()}
    assert set(pq.read_table(tmp_path / "alike.parquet").column("salary").to_pylist()) == held

    halves = pa.array([s + 0.5 for s in rest.column("salary").to_pylist()], pa.float64())
    unlike = _folder(tmp_path / "unlike", rest.set_column(2, "salary", halves))
    with pytest.raises(InputError) as refused:
        with sqlclose.anonymize(unlike, _spec()) as release:
            release.write_parquet(tmp_path / "unlike.parquet")
    message = str(refused.value)
    assert "'salary'" in message and "b.parquet" in message and "a.parquet" in message
    assert "DOUBLE" in message and "BIGINT" in message
    assert not any(str(v) in message for v in halves.to_pylist())


def test_a_parquet_folders_files_whose_types_read_unchanged_are_released(tmp_path):
    """A second file whose ages are 32-bit and whose notes are a column of NULLs read unchanged
    as the first file's BIGINT: released, as before the check (which refused every difference).
    The reverse (a first file of 32-bit ages, a second of 64-bit ones, which may not fit) is refused.
    The oracle: each file read alone by pyarrow, and the release's ages (Table 3's are generalized
    by decade: 2*, 3*, 4*, 5*) against them."""
    rest = _table3().slice(5)
    narrow = rest.set_column(1, "age", rest.column("age").cast(pa.int32()))
    nulls = narrow.append_column("note", pa.nulls(narrow.num_rows))
    first = _table3().slice(0, 5).append_column("note", pa.array(["a"] * 5, pa.string()))
    folder = tmp_path / "people"
    folder.mkdir()
    pq.write_table(first, folder / "a.parquet")
    pq.write_table(nulls, folder / "b.parquet")
    with sqlclose.anonymize(folder, _spec(others="keep")) as release:
        release.write_parquet(tmp_path / "r.parquet")
    released = pq.read_table(tmp_path / "r.parquet")
    ages = [a for f in sorted(folder.iterdir()) for a in pq.read_table(f).column("age").to_pylist()]
    assert released.num_rows == len(ages) == 9
    assert sorted(released.column("note").to_pylist(), key=str) == sorted(["a"] * 5 + [None] * 4, key=str)
    reverse = tmp_path / "reverse"
    reverse.mkdir()
    pq.write_table(narrow, reverse / "a.parquet")
    pq.write_table(_table3().slice(0, 5), reverse / "b.parquet")
    with pytest.raises(InputError, match="gives column 'age' the type BIGINT"):
        sqlclose.anonymize(reverse, _spec())


def test_a_value_a_parquet_folders_second_file_holds_is_named_nowhere(tmp_path):
    """A second file whose ages are text, one of them ``SECRET-4711``: DuckDB's cast to the first
    file's BIGINT failed and its error quoted the value, printed as an internal error (exit 1) on
    stderr and in --json's document. Now the files' types are compared before any row is read:
    refused as bad input (exit 2), naming the files and the column, never a value."""
    rest = _table3().slice(5)
    ages = pa.array([SECRET, *map(str, rest.column("age").to_pylist()[1:])], pa.string())
    _folder(tmp_path / "people", rest.set_column(1, "age", ages))
    _spec_file(tmp_path, 'path = "people"')
    run = _cli("anonymize", "spec.toml", "--json", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert SECRET not in run.stderr + run.stdout
    assert "'age'" in json.loads(run.stdout)["error"]


@pytest.mark.parametrize(("cast", "value", "secret"), [
    ("CAST(note AS INT)", "1", SECRET), ("CAST(note AS DATE)", "2020-01-01", SECRET),
    ("strptime(note, '%Y')", "2020", SECRET), ("CAST(note AS INT) * 1000", "1", "47114711"),
    ("json_extract_string(note, '$.a')", '{"a": "x"}', "{bad " + SECRET),
    ("regexp_matches(zip, note)", "4", "(" + SECRET)])
def test_a_value_the_source_query_cannot_convert_is_named_nowhere(tmp_path, cast, value, secret):
    """A source query converting a column (its own CAST, strptime, arithmetic) failed on the one
    row whose note is ``SECRET-4711`` (or 47114711, which overflows, or malformed JSON, or a regular
    expression): DuckDB's error quoted the value (``Could not convert string 'SECRET-4711' to INT32``,
    ``Overflow in multiplication of INT32 (47114711 * 1000)``, ``Malformed JSON at byte 1 of input: …
    Input: "{bad SECRET-4711"``, ``missing ): (SECRET-4711``),
    and the job printed it on stderr and in --json's document (a suppressed
    row's value as much as any). Now such an error is shown without it. The oracle: all of stderr
    and stdout."""
    rows = _table3()
    rows = rows.append_column("note", pa.array([value] * rows.num_rows, pa.string()))
    extra = pa.table({"zip": ["12345"], "age": [36], "salary": [3000], "disease": ["flu"], "note": [secret]},
                     schema=rows.schema)
    pq.write_table(pa.concat_tables([rows, extra]), tmp_path / "people.parquet")
    query = f"SELECT zip, age, salary, disease, {cast} AS note FROM 'people.parquet'"
    spec = _spec_file(tmp_path, f'query = "{query}"')
    spec.write_text('others = "keep"\n' + spec.read_text(encoding="utf-8"), encoding="utf-8")
    run = _cli("anonymize", "spec.toml", "--json", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert secret not in run.stderr + run.stdout
    assert "the source query failed" in json.loads(run.stdout)["error"]


def test_a_value_a_source_querys_declared_csv_types_cannot_read_is_named_nowhere(tmp_path):
    """The way to a CSV's types in a source query (``read_csv(…, columns = {…})``, which the spec
    asks for instead of DuckDB's guesses): a row whose salary is ``SECRET-4711`` failed the read, and
    DuckDB's error quoted it (``Could not convert string "SECRET-4711" to 'BIGINT'``). Now the job
    names the line and the column, never the value. The oracle: all of stderr and stdout."""
    lines = (TABLE3 / "table3.csv").read_text(encoding="utf-8").splitlines() + [f"12345,36,{SECRET},flu"]
    (tmp_path / "people.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    columns = "{'zip': 'VARCHAR', 'age': 'BIGINT', 'salary': 'BIGINT', 'disease': 'VARCHAR'}"
    _spec_file(tmp_path, f'query = "SELECT * FROM read_csv(\'people.csv\', header = true, columns = {columns})"')
    run = _cli("anonymize", "spec.toml", "--json", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert SECRET not in run.stderr + run.stdout
    error = json.loads(run.stdout)["error"]
    assert "CSV line 11" in error and "column 'salary'" in error


def _salaries(path: Path) -> set[Decimal]:
    """The salaries a CSV holds, as the decimal numbers their text writes."""
    return {Decimal(line.split(",")[2]) for line in path.read_text(encoding="utf-8").splitlines()[1:]}


@pytest.mark.parametrize("declared, salary, refused", [
    ("BIGINT", "3000.5", True), ("BIGINT", "1e3", True), ("BIGINT", "3000.0", False), ("BIGINT", "3_000", False),
    ("DECIMAL", "3000.1234", True), ("DECIMAL", "3000.125", False),
    ("DECIMAL(12, 2)", "3000.125", True), ("DECIMAL(12, 2)", "3000.50", False), ("DECIMAL(12,2)", ".25", False),
    ("DOUBLE", "3000.5", False),
])
def test_a_declared_number_type_releases_the_numbers_as_the_csv_writes_them(tmp_path, declared, salary, refused):
    """Declared BIGINT, DuckDB's read rounded a CSV's 3000.5 to 3001 (and DECIMAL rounded past its
    scale, 3 digits for a plain DECIMAL): the release gave a salary no row holds, and its re-check,
    reading the source the same way, passed. Now a number its declared type would change stops the
    job (the column, the type and the count; never the value), and one it reads as written is
    released as the number it is. The oracle: the CSV's text read as Python decimals."""
    source = tmp_path / "people.csv"
    source.write_text((TABLE3 / "table3.csv").read_text(encoding="utf-8").replace(
        "47677,29,3000,", f"47677,29,{salary},"), encoding="utf-8")
    assert Decimal(salary) in _salaries(source)
    spec = _spec(source={"path": str(source), "types": {"salary": declared}})
    if refused:
        with pytest.raises(InputError) as e:
            sqlclose.anonymize(None, spec)
        assert "column 'salary' is declared" in str(e.value)
        assert "holds 1 number that type would change" in str(e.value)
        assert salary not in str(e.value)
        return
    with sqlclose.anonymize(None, spec) as release:
        released = {Decimal(str(v)) for v in release.to_arrow().column("salary").to_pylist()}
    assert released == _salaries(source)


def _with_column(path: Path, values: list[str]) -> Path:
    """Table 3 with a column ``seen`` holding ``values`` in turn, as a CSV."""
    lines = (TABLE3 / "table3.csv").read_text(encoding="utf-8").splitlines()
    rows = [f"{line},{values[i % len(values)]}" for i, line in enumerate(lines[1:])]
    path.write_text("\n".join([f"{lines[0]},seen", *rows]) + "\n", encoding="utf-8")
    return path


def _moment(kind: str, text: str) -> object:
    """What ``text`` writes, by Python's own reading: a day, a UTC wall time, a time of day."""
    if kind == "DATE":
        return dt.date.fromisoformat(text[:10])
    if kind == "TIME":
        return dt.time.fromisoformat(text)
    written = dt.datetime.fromisoformat(text)
    return written.astimezone(dt.UTC).replace(tzinfo=None) if written.tzinfo else written


@pytest.mark.parametrize("declared, values, refused", [
    ("DATE", ["2020-01-01 13:00:00", "2020-01-02"], True),
    ("DATE", ["2020-01-01", "2020-01-02 00:00:00"], False),
    ("TIMESTAMP", ["2020-01-01 00:00:00+05:00", "2020-01-01 00:00:00-08:00"], True),
    ("TIMESTAMP", ["2020-01-01 00:00:00.123456789", "2020-01-01 00:00:00.123456001"], True),
    ("TIMESTAMP", ["2020-01-01T00:00:00Z", "2020-01-01 00:00:00.1234560", "2020-01-02 13:30"], False),
    ("TIME", ["01:02:03.1234567", "01:02:03.1234561"], True),
    ("TIME", ["01:02:03.5", "01:02:00"], False),
    ("DOUBLE", ["1e400", "1.5"], True),
    ("DOUBLE", ["-1e400", "1.5"], True),
    ("DOUBLE", ["1e300", "1.5"], False),
    ("DOUBLE", ["1e-400", "2.5"], True),  # a nonzero below DOUBLE's least, read as 0: a value no row holds
    ("DOUBLE", ["-0.0000e-999", "1.5"], False),  # zero written small is still zero
    ("DOUBLE", ["1e-310", "1.5"], False),  # a subnormal: the nearest DOUBLE, as 0.1 is
])
def test_a_declared_date_time_or_double_releases_the_values_as_the_csv_writes_them(tmp_path, declared, values,
                                                                                    refused):
    """DuckDB's casts drop what a declared type cannot hold, and the release gave values no row
    holds, verified: DATE dropped a time of day (2020-01-01 13:00 released as 2020-01-01),
    TIMESTAMP a UTC offset (two instants 13 hours apart released as one) and TIMESTAMP and TIME the
    digits past the microsecond (two values released as one); DOUBLE read 1e400 as infinity. Now such
    a column stops the job (the column, the type and the count; never a value), and one its type
    holds as written is released as written. The oracle: the CSV's text read by Python's datetime
    and float (a time zone's instant in UTC, as DuckDB reads a UTC offset of zero)."""
    source = _with_column(tmp_path / "people.csv", values)
    spec = _spec(others="keep", source={"path": str(source), "types": {"seen": declared}})
    if refused:
        with pytest.raises(InputError) as e:
            sqlclose.anonymize(None, spec)
        assert f"column 'seen' is declared {declared} but holds" in str(e.value)
        assert not any(v in str(e.value) for v in values)
        return
    with sqlclose.anonymize(None, spec) as release:
        released = set(release.to_arrow().column("seen").to_pylist())
    assert released == {float(v) if declared == "DOUBLE" else _moment(declared, v) for v in values}


@pytest.mark.parametrize("declared", ["DATE", "TIMESTAMP"])
def test_a_day_written_otherwise_than_iso_is_told_as_such(tmp_path, declared):
    """A declared DATE column holding 20200105 (which DuckDB reads as a day and Spark does not) was
    told "a time of day, which DATE drops", and the advice it gave (TIMESTAMP) failed the same way,
    told as a UTC offset. The oracle: the wording of the case, written out by hand."""
    source = _with_column(tmp_path / "people.csv", ["2020-01-01"] * 8 + ["20200105"])  # 9 rows: one such
    spec = _spec(others="keep", source={"path": str(source), "types": {"seen": declared}})
    with pytest.raises(InputError) as e:
        sqlclose.anonymize(None, spec)
    message = str(e.value)
    assert f"column 'seen' is declared {declared} but holds 1 value not read as written (" in message
    assert "or a day not written YYYY-MM-DD, such as 20240517, which the engines read differently)" in message
    assert "20200105" not in message


@pytest.mark.parametrize("age, salary, says", [
    ("2.9e1", "3000", "column 'age' is declared BIGINT but holds 1 number that type would change"),
    ("29", "3000.5", "column 'salary' holds 1 number that is not whole"),
])
def test_a_declared_and_an_undeclared_number_column_are_checked_together(tmp_path, age, salary, says):
    """A CSV's declared BIGINT (age) and its ordered column without a type (salary) are checked in
    one pass over the text: each check still names its own column and count, never the value."""
    source = tmp_path / "people.csv"
    source.write_text((TABLE3 / "table3.csv").read_text(encoding="utf-8").replace(
        "47677,29,3000,", f"47677,{age},{salary},"), encoding="utf-8")
    with pytest.raises(InputError) as e:
        sqlclose.anonymize(None, _spec(source={"path": str(source), "types": {"age": "BIGINT"}}))
    told = str(e.value).replace(str(source), "<source>")  # the path may hold the digits (pytest-29)
    assert says in told and age not in told.replace("'age'", "") and salary not in told


@pytest.mark.parametrize("declared, problem", [("DECIMAL(39, 2)", "precision"), ("DECIMAL(5, 6)", "precision"),
                                               ("NUMERIC", "is not one of")])
def test_a_declared_decimal_needs_a_precision_and_scale_the_engines_take(tmp_path, declared, problem):
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[source]\npath = "x.csv"\ntypes = {{ salary = "{declared}" }}\n[privacy]\nk = 2\n'
                    '[quasi_identifiers]\nage = { bands = [10] }\n', encoding="utf-8")
    with pytest.raises(SpecError) as e:
        sqlclose.load_spec(spec)
    assert problem in str(e.value) and "salary" in str(e.value)


def _folder_of(path: Path, tables: list[pa.Table]) -> Path:
    path.mkdir()
    for i, table in enumerate(tables):
        pq.write_table(table, path / f"part-{i:03d}.parquet")
    return path


def test_a_parquet_folders_later_file_naming_a_column_twice_is_refused(tmp_path):
    """Files are compared once per kind of footer: a file whose footer is unlike the others' is
    read, and one naming a column twice refused, wherever it sits in the folder."""
    good = _table3().slice(0, 3)
    twice = pa.Table.from_arrays([*good.columns, good.column("salary")], names=[*good.column_names, "salary"])
    folder = _folder_of(tmp_path / "people", [good, good.slice(0, 1), twice, good])
    with pytest.raises(InputError, match="'salary' more than once") as e:
        sqlclose.anonymize(folder, _spec())
    assert "part-002.parquet" in str(e.value)


def test_a_file_of_a_parquet_folder_that_is_no_parquet_is_named(tmp_path):
    folder = _folder_of(tmp_path / "people", [_table3().slice(0, 5), _table3().slice(5)])
    (folder / "part-001.parquet").write_bytes(b"zip,age\n47677,29\n")
    with pytest.raises(InputError) as e:
        sqlclose.anonymize(folder, _spec())
    assert "part-001.parquet" in str(e.value) and "parquet" in str(e.value)


def test_files_alike_but_for_pandas_metadata_or_nesting_read_as_duckdb_reads_each(tmp_path):
    """Footers equal but for pandas' index range read alike: released. Two files whose nested
    columns hold the same fields in other places (a {x int, y text}, b {x text, y int} against a {x
    text, y int}, …) read as other types: refused. The oracle: each file as pyarrow reads it alone."""
    rows = _table3()
    as_pandas = [pa.Table.from_pandas(rows.slice(0, 5).to_pandas()),
                 pa.Table.from_pandas(rows.slice(5).to_pandas().reset_index(drop=True).set_axis(range(10, 14)))]
    assert as_pandas[0].schema.metadata != as_pandas[1].schema.metadata
    with sqlclose.anonymize(_folder_of(tmp_path / "pandas", as_pandas), _spec()) as release:
        assert release.to_arrow().num_rows == rows.num_rows
    a = pa.StructArray.from_arrays([pa.array([1] * 9), pa.array(["t"] * 9)], names=["x", "y"])
    b = pa.StructArray.from_arrays([pa.array(["t"] * 9), pa.array([1] * 9)], names=["x", "y"])
    first, second = rows.append_column("a", a).append_column("b", b), rows.append_column("a", b).append_column("b", a)
    assert first.schema.field("a").type != second.schema.field("a").type
    with pytest.raises(InputError, match="gives column 'a' the type"):
        sqlclose.anonymize(_folder_of(tmp_path / "nested", [first, second]), _spec(others="keep"))




VIEW_FAILING_ON_A_VALUE = "SELECT zip, age, CAST(pay AS BIGINT) AS salary, disease FROM people"


def _people_with_a_failing_view(con, view: str = VIEW_FAILING_ON_A_VALUE) -> None:
    """Table 3 as ``people``, with its salary also as text (``pay``) and a ``note`` of '1', except
    on one row, whose pay and note are ``SECRET-4711``; and a view ``v``, ``view``, over it."""
    con.execute("CREATE TABLE people AS SELECT *, salary::VARCHAR AS pay, '1' AS note FROM read_csv(?, header = true)",
                [str(TABLE3 / "table3.csv")])
    con.execute(f"UPDATE people SET pay = '{SECRET}', note = '{SECRET}' WHERE salary = 3000")
    con.execute(f"CREATE VIEW v AS {view}")

def test_a_python_jobs_traceback_names_no_value(tmp_path):
    """What a pipeline's log holds when the error propagates: Python prints the exception with its
    cause chain (``logging.exception`` does the same). The error's message left the value out, but
    DuckDB's raw error rode along as its ``__cause__`` (``Could not convert string 'SECRET-4711' to
    INT32``). The oracle: the whole printed traceback."""
    import traceback

    import duckdb

    con = duckdb.connect()
    _people_with_a_failing_view(con)
    with pytest.raises(sqlclose.SqlcloseError) as caught:
        sqlclose.anonymize((con, "v"), _spec())
    assert SECRET not in "".join(traceback.format_exception(caught.value))


@pytest.mark.parametrize("columns", ["CAST(pay AS BIGINT) AS salary, disease",
                                     "salary, disease, CAST(note AS INT) AS note",
                                     "salary, disease, [CAST(note AS INT)] AS note",
                                     "salary, disease, length(note)::INT * 200000000::INT AS note"],
                         ids=["sensitive", "kept", "kept-in-a-list", "kept-overflow"])
def test_a_view_of_a_callers_connection_that_fails_on_a_value_is_bad_input(columns):
    """A caller's view whose query fails on a row (a CAST, an overflow) is a source query: it was
    read only by the search's queries (a sensitive column's failure: EngineError, "an internal
    error (a bug)", exit 1) or by the write (a kept column's: the search succeeded, the write
    failed). The same SELECT given as a relation was InputError. Now the view is refused as bad
    input when it is opened, naming no value. The oracle: the error's type and text."""
    import duckdb

    con = duckdb.connect()
    _people_with_a_failing_view(con, f"SELECT zip, age, {columns} FROM people")
    with pytest.raises(InputError) as caught:
        sqlclose.anonymize((con, "v"), _spec(others="keep"))
    assert "cannot read table 'v': it is a view, and its query failed" in str(caught.value)
    assert SECRET not in str(caught.value) and "4711" not in str(caught.value)


def test_a_view_reading_its_rows_as_they_are_is_released(tmp_path):
    """The check of a view's values refuses only a failing one: a view that converts every row
    (TRY_CAST) is released, its note the number each row's text is, NULL for the one that is not.
    The oracle: the same table's rows, converted by hand."""
    import duckdb

    con = duckdb.connect()
    _people_with_a_failing_view(con, "SELECT zip, age, salary, disease, TRY_CAST(note AS INT) AS note FROM people")
    with sqlclose.anonymize((con, "v"), _spec(others="keep")) as release:
        notes = sorted(release.to_arrow().column("note").to_pylist(), key=str)
    assert notes == [1] * 8 + [None]


@pytest.mark.parametrize("key", ["salary", "Salary", "zip"])
def test_a_hive_folder_key_that_is_also_a_file_column_is_refused(tmp_path, key):
    """A Parquet folder whose partition folders (``salary=3000/``) name a column its files hold too:
    DuckDB read the folder's value for every row, and the files' own salaries were gone from the
    release without a word (a QI so shadowed, zip, was searched and released on the folders'
    values). Names alike but for case are one column to an engine. Now refused, naming the column
    and a folder. The oracle: pyarrow's dataset reader refuses the same folder; nothing is read."""
    import pyarrow.dataset as ds

    table = _table3()
    for part in ("1", "2"):
        (tmp_path / "in" / f"{key}={part}").mkdir(parents=True)
        pq.write_table(table, tmp_path / "in" / f"{key}={part}" / "part-0.parquet")
    if key != "Salary":  # pyarrow matches names by case: a key alike but for case is its own column there
        with pytest.raises(pa.ArrowTypeError):
            ds.dataset(tmp_path / "in", partitioning="hive").to_table()
    with pytest.raises(InputError) as refused:
        sqlclose.anonymize(tmp_path / "in", _spec())
    column = key.lower()
    assert f"name column {column!r}, which its files hold too" in str(refused.value)
    assert f"{key}=1" in str(refused.value)


@pytest.mark.parametrize("folder", [False, True])
def test_a_decimal_wider_than_38_digits_in_a_parquet_source_is_refused_by_name(tmp_path, folder):
    """DuckDB reads a Parquet DECIMAL of more than 38 digits (pyarrow's decimal256) as DOUBLE: a
    kept column of ten different values was released as one rounded double, no row's, and
    verified. The same column in an Arrow table was refused by name already. Now refused, naming
    the column and the file, in a folder too (a second file's footer unlike the first's). The
    oracle: pyarrow reads the file's values back as ten distinct decimals of 50 digits."""
    import decimal

    table = _table3()
    values = pa.array([decimal.Decimal(f"1234567890123456789012345678901234567{i}.012345678{i}")
                       for i in range(table.num_rows)], pa.decimal256(50, 10))
    path = tmp_path / "in" / "b.parquet" if folder else tmp_path / "in.parquet"
    path.parent.mkdir(exist_ok=True)
    if folder:
        pq.write_table(table.append_column("big", pa.array([1.5] * table.num_rows)), path.parent / "a.parquet")
    pq.write_table(table.append_column("big", values), path)
    assert pq.read_table(path).column("big").type == pa.decimal256(50, 10)
    assert len(set(pq.read_table(path).column("big").to_pylist())) == table.num_rows  # the oracle
    with pytest.raises(InputError) as refused:
        sqlclose.anonymize(path.parent if folder else path, _spec(others="keep"))
    assert f"cannot read {path}: column 'big' is a DECIMAL of 50 digits" in str(refused.value)
    assert "12345678901234" not in str(refused.value)


@pytest.mark.parametrize(("step", "refused"), [(1, True), (1000, False)])
def test_int96_timestamps_finer_than_a_microsecond_are_refused_by_name(tmp_path, step, refused):
    """DuckDB reads INT96 timestamps (Impala's, Spark's legacy format), which hold nanoseconds, to
    the microsecond: rows a nanosecond apart were released as one value, no row's, and verified.
    Now a file whose INT96 column holds a part finer than a microsecond is refused naming the
    column and the file; one of whole microseconds (as Spark writes them) is released as it is.
    The oracle: pyarrow reads the file's instants back at nanoseconds, one per row."""
    table = _table3()
    base = 1_600_000_000_123_456_000
    instants = pa.array([base + i * step for i in range(table.num_rows)], pa.timestamp("ns"))
    pq.write_table(table.append_column("ts", instants), tmp_path / "in.parquet", use_deprecated_int96_timestamps=True)
    held = pq.read_table(tmp_path / "in.parquet").column("ts")
    assert held.type == pa.timestamp("ns") and len(set(held.cast(pa.int64()).to_pylist())) == table.num_rows
    if refused:
        with pytest.raises(InputError) as e:
            sqlclose.anonymize(tmp_path / "in.parquet", _spec(others="keep"))
        assert f"cannot read {tmp_path / 'in.parquet'}: column 'ts' holds INT96 timestamps" in str(e.value)
        return
    with sqlclose.anonymize(tmp_path / "in.parquet", _spec(others="keep")) as release:
        released = release.to_arrow().column("ts").cast(pa.timestamp("ns")).cast(pa.int64()).to_pylist()
    assert sorted(released) == sorted(held.cast(pa.int64()).to_pylist())


def _unreadable_run(tmp_path: Path, table: pa.Table, compression: str = "snappy") -> Path:
    """``table`` written as ``in.parquet`` (returned), and a spec releasing it with its ``note`` kept."""
    pq.write_table(table, tmp_path / "in.parquet", compression=compression)
    (tmp_path / "s.toml").write_text(
        'others = "keep"\n[source]\npath = "in.parquet"\n[output]\npath = "out.parquet"\n[privacy]\nk = 3\n'
        'suppression = 0.5\n[quasi_identifiers]\nage = { bands = [10, 20] }\n', encoding="utf-8")
    return tmp_path / "in.parquet"


def _ages(n: int) -> list[int]:
    return [20 + (i * 7) % 50 for i in range(n)]


def test_a_parquet_text_column_that_is_not_utf8_is_bad_input_naming_file_and_column(tmp_path):
    """A Parquet STRING column holding bytes that are not UTF-8 (some writers mark raw bytes as text)
    stopped the job with exit 1, an internal error, "a value could not be converted or computed",
    naming neither file nor column — for a kept column at the write, after the whole search. Now it
    is bad input (exit 2) naming the file and the column, never the value; nothing is written. The
    oracle: pyarrow's full validation of the column refuses its text."""
    raw = [f"ok{i}".encode() if i != 7 else SECRET.encode() + b"\xff\xfe" for i in range(20)]
    note = pa.array(raw, pa.binary()).view(pa.string())
    with pytest.raises(pa.ArrowInvalid, match="UTF8"):
        note.validate(full=True)
    source = _unreadable_run(tmp_path, pa.table({"age": _ages(20), "note": note}))
    run = _cli("anonymize", "s.toml", "--json", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert f"cannot read {source}: column 'note' holds text that is not valid UTF-8" in run.stderr
    assert json.loads(run.stdout)["kind"] == "bad input"
    assert SECRET not in run.stderr + run.stdout and not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("compression", ["snappy", "zstd", "none"])
def test_a_parquet_file_with_a_damaged_data_page_is_bad_input_naming_file_and_column(tmp_path, compression):
    """A Parquet file whose footer reads but a data page of a kept column is damaged (a bad copy)
    ended as exit 1 after the whole search, at the write: "a value could not be converted or
    computed" (snappy), or DuckDB's bare "Out of buffer" (uncompressed), naming nothing. Now bad
    input naming the file and the column. The oracle: pyarrow cannot read the file's ``note``
    column and reads its ``age`` column whole (the damage is in note's pages)."""
    n = 2000
    source = _unreadable_run(tmp_path, pa.table({"age": _ages(n), "note": [f"note-{i}" for i in range(n)]}),
                             compression)
    data = bytearray(source.read_bytes())
    middle = len(data) // 2
    for offset in (middle, middle + 1, middle + 2, len(data) // 3):
        data[offset] ^= 0xFF
    source.write_bytes(bytes(data))
    assert pq.read_table(source, columns=["age"]).num_rows == n
    with pytest.raises(Exception):  # noqa: B017 - pyarrow's own errors differ by codec
        pq.read_table(source, columns=["note"]).validate(full=True)
    run = _cli("anonymize", "s.toml", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert f"cannot read {source}: a data page of column 'note' cannot be decoded" in run.stderr
    assert not (tmp_path / "out.parquet").exists()


def test_an_arrow_text_column_that_is_not_utf8_is_bad_input_not_a_failed_verification():
    """The same bytes in an Arrow string column were released, failed the re-check and ended as
    "verification failed" (exit 4), as if sqlclose had written a wrong file. Now refused as bad
    input before the engine reads it, naming the column, never the value. The oracle: pyarrow's
    full validation of the table."""
    raw = [f"ok{i}".encode() if i != 7 else SECRET.encode() + b"\xff\xfe" for i in range(20)]
    table = pa.table({"age": _ages(20), "note": pa.array(raw, pa.binary()).view(pa.string())})
    with pytest.raises(pa.ArrowInvalid, match="UTF8"):
        table.validate(full=True)
    spec = {"others": "keep", "privacy": {"k": 3, "suppression": 0.5}, "quasi_identifiers": {"age": {"bands": [10]}}}
    with pytest.raises(InputError) as refused:
        sqlclose.anonymize(table, spec)
    assert "column 'note' holds text that is not valid UTF-8" in str(refused.value)
    assert SECRET not in str(refused.value)


def test_an_unterminated_quote_prints_no_record_of_the_csv(tmp_path):
    """Review rv25: a stray quote on line 7 makes DuckDB echo the rest of the file as its "Original
    Line" (every later record, 15 here, every row after it on a real file); only the echo's first line
    was dropped, so each record reached stderr and the --json document. Now exit 2 naming the line
    and the quote, no record. The oracle: the records written here, each with a made-up SSN."""
    rows = [f"{20 + i % 30},4760{i % 3},v{i % 2},SSN-{1000 + i}" for i in range(20)]
    rows.insert(5, '25,47601,"open,SSN-9999')  # line 7 of the file: a quote never closed
    (tmp_path / "in.csv").write_text("\n".join(["age,zip,val,note", *rows, "", *rows[10:]]) + "\n")
    (tmp_path / "s.toml").write_text(
        'others = "keep"\n[source]\npath = "in.csv"\n[output]\npath = "out.parquet"\n[privacy]\nk = 3\n'
        'suppression = 0.1\n[quasi_identifiers]\nage = { bands = [10, 20] }\nzip = { mask = true, length = 5 }\n')
    for extra in ([], ["--json"]):
        done = _cli("anonymize", "s.toml", *extra, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        said = done.stderr + done.stdout
        assert "line 7 opens a quoted field" in said
        leaked = [ssn for ssn in [*(f"SSN-{1000 + i}" for i in range(20)), "SSN-9999"] if ssn in said]
        assert not leaked, said
        assert "47602,v1" not in said and "open," not in said
        if extra:
            assert json.loads(done.stdout)["exit_code"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "s.toml"]


@pytest.mark.parametrize("read", ["table", "query"])
def test_a_source_database_another_process_holds_is_the_environment_not_bad_input(tmp_path, read):
    """Review of the sixty-third round: a source database another process held open for writing was
    told as bad input (exit 2), where the same lock on an output database is the environment's (exit
    5): a scheduler retrying on 5 took the busy source for a broken one. Oracle: the lock a second
    process takes on the file (it prints once it holds it); exit 5 while it runs, nothing written."""
    import sys

    db = tmp_path / "db.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"CREATE TABLE people AS SELECT * FROM read_csv('{TABLE3 / 'table3.csv'}', "
                    "columns = {'zip': 'VARCHAR', 'age': 'BIGINT', 'salary': 'BIGINT', 'disease': 'VARCHAR'})")
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys, time; c = duckdb.connect({str(db)!r}); "
                               "print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        spec = tmp_path / "spec.toml"
        source = 'table = "people"' if read == "table" else 'query = "SELECT * FROM people"'
        spec.write_text((TABLE3 / "table3.toml").read_text().replace('path = "table3.csv"', f'path = "{db}"\n{source}')
                        .replace('file = "age.csv"', f'file = "{TABLE3 / "age.csv"}"')
                        .replace('hierarchy = "disease.csv"', f'hierarchy = "{TABLE3 / "disease.csv"}"')
                        .replace("../../out/table3/release.parquet", str(tmp_path / "out" / "r.parquet")))
        run = subprocess.run([sys.executable, "-m", "sqlclose.cli", "anonymize", str(spec)], capture_output=True,
                             text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert run.returncode == 5, run.stderr
    assert "another process holds the lock of" in run.stderr and "run again once it is done" in run.stderr
    assert not (tmp_path / "out").exists()


def test_a_compressed_csv_is_named_as_such_with_the_ways_to_read_it(tmp_path):
    """Review of the sixty-third round: `path = "people.csv.gz"` was "cannot tell the format", and the
    same bytes named people.csv were "not UTF-8 text … set encoding = latin-1", whose advice read the
    compressed bytes as a table. Both name the compression now, and the query they give reads it.
    Oracle: gzip's own bytes of Table 3; the query's release holds its nine rows."""
    import gzip

    packed = gzip.compress((TABLE3 / "table3.csv").read_bytes())
    (tmp_path / "people.csv.gz").write_bytes(packed)
    (tmp_path / "people.csv").write_bytes(packed)
    spec = {"privacy": {"k": 3}, "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": str(TABLE3 / "age.csv")}},
            "sensitive": {"disease": {"distinct_l": 2}}, "identifiers": ["salary"]}
    with pytest.raises(SpecError, match=r"people.csv.gz is a compressed CSV, which \[source\] path does not read"):
        sqlclose.anonymize(None, {**spec, "source": {"path": str(tmp_path / "people.csv.gz")}})
    with pytest.raises(InputError, match=r"it is gzip-compressed; .* read_csv\('people.csv', compression = 'gzip'"):
        sqlclose.anonymize(None, {**spec, "source": {"path": str(tmp_path / "people.csv")}})
    columns = "{'zip': 'VARCHAR', 'age': 'BIGINT', 'salary': 'BIGINT', 'disease': 'VARCHAR'}"
    query = f"SELECT * FROM read_csv('people.csv.gz', columns = {columns})"
    with sqlclose.anonymize(None, {**spec, "source": {"query": query, "folder": str(tmp_path)}}) as release:
        assert release.to_arrow().num_rows == 9
