"""The warehouse path's checks of its spec and of the exported histogram (docs/warehouse.md).

A DuckDB database plays the warehouse: the histogram query `sqlclose sql` prints runs there and
its result is exported (Parquet, or CSV as Postgres writes it), sometimes altered the way a real
export goes wrong (written twice, a fractional or huge count, numeric text). The oracles do not
come from sqlclose's search: the expected exit code and the words of the documented message, the
histogram's own values (never to be printed), the paper's Table 5 node, the report's fields.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import duckdb
import pytest
import sqlglot
from forked_cli import run_cli
from test_warehouse import TABLE3_T
from warehouse_steps import histogram_in_warehouse, invoke, warehouse_spec, warehouse_with

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"
COUNT = "__sqlclose_count"


def sqlclose(*args: object) -> subprocess.CompletedProcess:
    extra = ["--no-progress"] if args[0] == "anonymize" else []
    return run_cli([*args, *extra])


def _h(path: Path) -> str:
    return json.dumps(path.as_posix())


def _spec(folder: Path, table: str, body: str, source: str = "") -> Path:
    spec = folder / "wh.toml"
    spec.write_text(f"""
[source]
format = "warehouse"
table = "{table}"
dialect = "duckdb"
{source}
[output]
path = "release.sql"
overwrite = true

{body}
""")
    return spec


QIS = f"""
[quasi_identifiers]
zip = {{ mask = true, length = 5 }}
age = {{ file = {_h(TABLE3 / 'age.csv')} }}
"""
K5 = "[privacy]\nk = 5\n" + QIS
T_SPEC = "[privacy]\nk = 3\n" + QIS + TABLE3_T  # the paper's t: 0.2 ordered salary, 0.3 hierarchical disease
TABLE5_NODE = {"zip": 1, "age": 2}  # the paper's Table 5: 4767*, 4760*, 4790* and <40, >=40


@pytest.fixture
def warehouse(tmp_path) -> Path:
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t3 AS SELECT * FROM read_csv(?)", [str(TABLE3 / "table3.csv")])
    con.execute("CREATE TABLE t3n AS SELECT zip, age, salary::DECIMAL(10, 2) AS salary, disease FROM t3")
    con.close()
    return db


def _export(db: Path, spec: Path, target: Path, wrap: str = "{q}") -> Path:
    """Run `sqlclose sql` in the warehouse and export its result (``wrap``: how the export goes wrong)."""
    query = sqlclose("sql", spec)
    assert query.returncode == 0, query.stderr
    con = duckdb.connect(str(db))
    fmt = "(HEADER)" if target.suffix == ".csv" else "(FORMAT PARQUET)"
    con.execute(f"COPY ({wrap.format(q=query.stdout)}) TO '{target}' {fmt}")
    con.close()
    return target


def _refused(run: subprocess.CompletedProcess, folder: Path, *fragments: str) -> None:
    assert run.returncode == 2, (run.returncode, run.stdout, run.stderr)
    assert run.stderr.startswith("sqlclose: error:") and "Traceback" not in run.stderr, run.stderr
    for fragment in fragments:
        assert fragment in run.stderr, (fragment, run.stderr)
    assert not (folder / "release.sql").exists()


def _table3_values() -> set[str]:
    """Every zip code and disease of Table 3: text that a message must never hold."""
    rows = duckdb.sql(f"SELECT zip::VARCHAR, disease FROM read_csv('{TABLE3 / 'table3.csv'}')").fetchall()
    return {v for row in rows for v in row}


# ---- 1. repeated groups ------------------------------------------------------------------------
@pytest.mark.parametrize("target, wrap", [
    ("h.parquet", "SELECT * FROM ({q}) UNION ALL SELECT * FROM ({q})"),  # the export written twice
    ("h.csv", "SELECT * FROM ({q}) UNION ALL SELECT * FROM ({q})"),
    # one group split in two rows whose counts add up to the true one: still not a GROUP BY result
    ("h.parquet", f"SELECT * FROM ({{q}}) WHERE age <> '29' UNION ALL "
                  f"SELECT * REPLACE (1 AS {COUNT}) FROM ({{q}}) WHERE age = '29' UNION ALL "
                  f"SELECT * REPLACE (1 AS {COUNT}) FROM ({{q}}) WHERE age = '29'"),
], ids=["parquet-twice", "csv-twice", "one-group-split"])
def test_a_histogram_that_repeats_a_combination_is_refused_without_showing_it(tmp_path, warehouse, target, wrap):
    """Summed, a histogram exported twice made classes of 3 rows pass k = 5 (exit 0)."""
    spec = _spec(tmp_path, "t3", K5)
    hist = _export(warehouse, spec, tmp_path / target, wrap)
    run = sqlclose("anonymize", "--histogram", hist, spec)
    _refused(run, tmp_path, str(hist), "more than one row", "export the result of `sqlclose sql` again, once")
    assert not any(value in run.stderr for value in _table3_values()), run.stderr


def test_a_part_file_copied_into_a_histogram_folder_is_refused(tmp_path, warehouse):
    """A Spark export is a folder of part files, read as one: a part copied twice repeats its groups."""
    spec = _spec(tmp_path, "t3", K5)
    folder = tmp_path / "h.parquet"
    folder.mkdir()
    part = _export(warehouse, spec, folder / "part-00000.parquet")
    (folder / "part-00000 copy.parquet").write_bytes(part.read_bytes())
    _refused(sqlclose("anonymize", "--histogram", folder, spec), tmp_path, "h.parquet", "more than one row")


# ---- 2, 3. counts --------------------------------------------------------------------------------
def test_a_csv_histogram_with_a_fractional_count_is_refused(tmp_path, warehouse):
    """DuckDB read the CSV's 1.5 as the BIGINT 2 and released (exit 0); a Parquet one was refused."""
    spec = _spec(tmp_path, "t3", T_SPEC)
    hist = _export(warehouse, spec, tmp_path / "h.csv",
                   f"SELECT * REPLACE (CASE WHEN age = '29' THEN 1.5 ELSE {COUNT} END AS {COUNT}) FROM ({{q}})")
    assert "1.5" in hist.read_text()
    _refused(sqlclose("anonymize", "--histogram", hist, spec), tmp_path, str(hist), COUNT, "not a whole number")


MAX_ROWS = 3_037_000_499  # the largest n with n² < 2^63: discernibility (Σ class size²) is an int64


@pytest.mark.parametrize("target, count", [
    ("h.parquet", "9223372036854775807"),  # 2^63 - 1 in two rows: the total overflows a BIGINT
    ("h.parquet", str(MAX_ROWS // 2)),  # two rows: with the other 7 rows' counts, just above MAX_ROWS
    ("h.parquet", "100000000000000000000000000000::DECIMAL(38, 0)"),  # a whole number beyond any BIGINT
    ("h.csv", "'100000000000000000000000000000'"),  # text: the CSV's count column as it is written
], ids=["parquet-bigint-max", "parquet-sum-above-exact", "parquet-decimal", "csv-huge"])
def test_a_count_too_large_to_sum_is_bad_input_not_an_internal_error(tmp_path, warehouse, target, count):
    """The total overflowed a 64-bit sum deep in the search (exit 1, ConversionException); below
    that, from 3,037,000,500 rows on, discernibility wrapped around silently."""
    spec = _spec(tmp_path, "t3", T_SPEC)
    other = f"{COUNT}::VARCHAR" if target.endswith(".csv") else COUNT
    hist = _export(warehouse, spec, tmp_path / target, f"SELECT * REPLACE (CASE WHEN age IN ('29', '22') THEN {count} "
                                                       f"ELSE {other} END AS {COUNT}) FROM ({{q}})")
    _refused(sqlclose("anonymize", "--histogram", hist, spec), tmp_path, str(hist), COUNT, f"{MAX_ROWS:,} rows")


def test_a_histogram_of_as_many_rows_as_are_counted_exactly_is_released(tmp_path, warehouse):
    spec = _spec(tmp_path, "t3", K5)
    total = duckdb.sql(f"SELECT count(*) FROM read_csv('{TABLE3 / 'table3.csv'}')").fetchall()[0][0]
    hist = _export(warehouse, spec, tmp_path / "h.parquet",
                   f"SELECT * REPLACE (CASE WHEN age = '29' THEN {MAX_ROWS - total + 1} ELSE {COUNT} END AS {COUNT}) "
                   "FROM ({q})")
    run = sqlclose("anonymize", "--histogram", hist, spec, "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["input"]["rows"] == MAX_ROWS
    # The release is one class of every row (asserted): its discernibility is MAX_ROWS², exactly,
    # the largest that fits an int64, not wrapped around.
    assert (doc["classes"], doc["suppressed_rows"]) == (1, 0)
    assert doc["utility"]["discernibility"] == MAX_ROWS ** 2


# ---- 4, 5. the spec --------------------------------------------------------------------------------
def test_a_declared_column_missing_from_source_columns_is_refused_by_sqlclose_sql(tmp_path, warehouse):
    """`sqlclose sql` counted 'age' anyway, and anonymize then said "'age' is not in h.parquet (its
    columns: 'zip', 'salary', 'disease')" of a file that has it: the listed columns were the spec's."""
    spec = _spec(tmp_path, "t3", T_SPEC)
    good = _export(warehouse, spec, tmp_path / "h.parquet")
    spec = _spec(tmp_path, "t3", T_SPEC, 'columns = ["zip", "salary", "disease"]')
    for run in (sqlclose("sql", spec), sqlclose("anonymize", "--histogram", good, spec)):
        _refused(run, tmp_path, "'age'", "[source] columns")
        assert "h.parquet" not in run.stderr, run.stderr


def test_a_column_named_like_a_histogram_column_is_refused_by_sqlclose_sql(tmp_path):
    """A QI named __sqlclose_count (or like a banded column's typed copy): the printed query had two
    output columns of that name."""
    spec = _spec(tmp_path, "t", f"[privacy]\nk = 3\n[quasi_identifiers]\n{COUNT} = {{ mask = true }}\n")
    _refused(sqlclose("sql", spec), tmp_path, f"column {COUNT!r}", "rename it")
    typed = _spec(tmp_path, "t", "[privacy]\nk = 3\n[quasi_identifiers]\nage = { bands = [5] }\n"
                                 "__sqlclose_typed_q0 = { mask = true }\n")  # the name of age's typed copy
    _refused(sqlclose("sql", typed), tmp_path, "'__sqlclose_typed_q0'", "rename it")


# ---- 6. numeric text in a CSV histogram ---------------------------------------------------------------
def test_a_postgres_csv_export_of_a_numeric_ordered_column_is_read_with_the_type_its_hint_names(tmp_path, warehouse):
    """Postgres writes a numeric(10, 2) salary as 7000.00. The hint said "declare [source] types",
    which a warehouse spec refused: a dead end. It is now the way through, as on a CSV table."""
    spec = _spec(tmp_path, "t3n", T_SPEC)
    hist = _export(warehouse, spec, tmp_path / "h.csv")
    assert "7000.00" in hist.read_text()
    _refused(sqlclose("anonymize", "--histogram", hist, spec), tmp_path, "'salary'",
             "[source] types = { salary = \"DOUBLE\" }")

    spec = _spec(tmp_path, "t3n", T_SPEC, 'types = { salary = "DOUBLE" }')
    run = sqlclose("anonymize", "--histogram", hist, spec, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["node"] == TABLE5_NODE
    # The Parquet export keeps the warehouse's DECIMAL: the same node, with or without the setting.
    parquet = _export(warehouse, spec, tmp_path / "h.parquet")
    run = sqlclose("anonymize", "--histogram", parquet, spec, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["node"] == TABLE5_NODE


def test_source_types_on_a_warehouse_spec_name_ordered_sensitive_columns_only(tmp_path):
    spec = _spec(tmp_path, "t3", T_SPEC, 'types = { age = "DOUBLE" }')
    _refused(sqlclose("sql", spec), tmp_path, "'age'", "ordered sensitive")
    spec = _spec(tmp_path, "t3", T_SPEC, 'nulls = ["NA"]')
    _refused(sqlclose("sql", spec), tmp_path, "nulls and encoding apply to CSV sources only")


@pytest.mark.parametrize("value, fragment", [("'NaN'::DOUBLE", "NaN or infinite"),
                                             ("'-0.0'::DOUBLE", "both -0.0 and 0.0")])
def test_an_odd_float_in_a_histogram_is_fixed_in_the_warehouse_not_with_settings_it_lacks(tmp_path, warehouse,
                                                                                          value, fragment):
    """The hints pointed at [source] nulls and a [source] query, which a warehouse spec does not have.
    (A warehouse's GROUP BY merges -0.0 with 0.0; an export that has both is altered here.)"""
    spec = _spec(tmp_path, "t3", T_SPEC)
    hist = _export(warehouse, spec, tmp_path / "h.parquet", f"SELECT * REPLACE (CASE WHEN age = '29' THEN {value} "
                                                            "WHEN age = '22' THEN 0.0 ELSE salary::DOUBLE END "
                                                            "AS salary) FROM ({q})")
    run = sqlclose("anonymize", "--histogram", hist, spec)
    _refused(run, tmp_path, "'salary'", fragment, "warehouse", "export again")
    assert "[source] nulls" not in run.stderr and "[source] query" not in run.stderr, run.stderr


# ---- 7. the report -------------------------------------------------------------------------------
def test_the_warehouse_report_calls_its_output_sql_and_warns_once(tmp_path, warehouse):
    """It said output.format = "parquet" for release.sql, and "not verified locally: the release
    was not verified locally"; `sqlclose report` then read the query as a table."""
    spec = _spec(tmp_path, "t3", T_SPEC)
    run = sqlclose("anonymize", "--histogram", _export(warehouse, spec, tmp_path / "h.parquet"), spec)
    assert run.returncode == 0, run.stderr
    assert not (tmp_path / "release.sql").read_bytes().startswith(b"PAR1")
    report = tmp_path / "release.sql.report.json"
    doc = json.loads(report.read_text())
    assert doc["output"]["format"] == "sql", doc["output"]
    assert [w for w in doc["warnings"] if "not verified locally" in w] == [doc["warehouse"]["note"]], doc["warnings"]
    # The hierarchy files the spec names, as a local release's report names them (it named none)
    assert {name: h["path"] for name, h in doc["hierarchies"].items()} == {
        "age": str(TABLE3 / "age.csv"), "disease": str(TABLE3 / "disease.csv")}
    page = sqlclose("report", report, "--html", tmp_path / "page.html")
    assert page.returncode == 2 and "--release" in page.stderr, page.stderr
    assert not (tmp_path / "page.html").exists()


# ---- 8. bands: the warehouse column's type decides the labels, as a file's does --------------------
BANDS = "[privacy]\nk = 15\n[quasi_identifiers]\nage = { bands = [5, 10, 20] }\n" \
        "[sensitive.d]\ndistance = \"equal\"\nt = 0.5\n"
INTEGRAL = re.compile(r"\d+-\d+")  # docs/spec.md: an integer column's bands, 35-39
INTERVAL = re.compile(r"\[\d+(\.\d+)?, \d+(\.\d+)?\)")  # a DOUBLE or DECIMAL column's, [35, 40)


def _labels(db: Path, folder: Path) -> set[str]:
    con = duckdb.connect(str(db))
    labels = {label for (label,) in con.execute(f"SELECT DISTINCT age FROM ({(folder / 'release.sql').read_text()})")
              .fetchall()}
    con.close()
    assert labels and labels != {"*"}, labels
    return labels - {"*"}


@pytest.mark.parametrize("age_type, target, types, form", [
    ("DOUBLE", "h.parquet", "", INTERVAL),  # was 20-24: the histogram held the ages as text
    ("DECIMAL(5, 1)", "h.parquet", "", INTERVAL),  # with 20.5 among the ages: was refused outright
    ("BIGINT", "h.parquet", "", INTEGRAL),
    ("DOUBLE", "h.csv", "", INTEGRAL),  # a CSV's columns are text, as on the local path...
    ("DOUBLE", "h.csv", 'types = { age = "DOUBLE" }', INTERVAL),  # ...unless the type is declared
], ids=["double", "decimal-fraction", "bigint", "csv-double-undeclared", "csv-double-declared"])
def test_bands_over_a_warehouse_column_are_labelled_by_its_type(tmp_path, age_type, target, types, form):
    """docs/spec.md: "The column's type decides the labels": an integer column gets 35-39, a DOUBLE
    or DECIMAL one [35, 40). The oracle is that text form, checked on the rows the release query
    gives in the warehouse."""
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    half = " + 0.5 * (i % 2)" if age_type.startswith("DECIMAL") else ""
    con.execute(f"CREATE TABLE p AS SELECT (20 + i % 40{half})::{age_type} AS age, ['a', 'b', 'c'][i % 3 + 1] AS d "
                "FROM range(400) t(i)")
    con.close()
    spec = _spec(tmp_path, "p", BANDS, types)
    run = sqlclose("anonymize", "--histogram", _export(db, spec, tmp_path / target), spec)
    assert run.returncode == 0, run.stderr
    labels = _labels(db, tmp_path)
    assert all(form.fullmatch(label) for label in labels), labels


def test_a_histogram_exported_before_typed_copies_is_asked_to_be_exported_again(tmp_path):
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE p AS SELECT (20 + i % 40)::DOUBLE AS age, ['a', 'b', 'c'][i % 3 + 1] AS d "
                "FROM range(400) t(i)")
    con.close()
    spec = _spec(tmp_path, "p", BANDS)
    hist = _export(db, spec, tmp_path / "h.parquet", "SELECT * EXCLUDE (__sqlclose_typed_q0) FROM ({q})")
    _refused(sqlclose("anonymize", "--histogram", hist, spec), tmp_path, "'__sqlclose_typed_q0'",
             "columns of `sqlclose sql`")


def test_a_node_given_to_the_warehouse_path_is_checked_before_the_search(tmp_path, warehouse, monkeypatch):
    """`anonymize --histogram … --node` told a level out of range only after the whole search (the
    local path checks it once the hierarchies are built). Now so does the warehouse path; a good
    node is the release `at` gives, as the local path releases it."""
    import sqlclose as sc
    from sqlclose import api

    spec = _spec(tmp_path, "t3", T_SPEC)
    histogram = _export(warehouse, spec, tmp_path / "h.parquet")

    def no_search(*_a, **_k):
        raise AssertionError("the search ran")

    with monkeypatch.context() as patched:
        patched.setattr(api, "_search", no_search)
        with pytest.raises(sc.InputError, match=re.escape("node age=9: 'age' has no level 9")):
            sc.anonymize_histogram(histogram, spec, node={"zip": 1, "age": 9})
    with sc.anonymize_histogram(histogram, spec, node=TABLE5_NODE) as release:
        assert release.node == TABLE5_NODE and release.node_given
    run = sqlclose("anonymize", "--histogram", histogram, spec, "--node", "zip=1,age=9")
    assert run.returncode == 2 and "'age' has no level 9" in run.stderr, run.stderr


# ---- names Postgres would cut ---------------------------------------------------------------------
LONG_NAME = "age_in_years_at_the_time_of_first_admission_xyz"  # 47 bytes: a legal Postgres column name


@pytest.mark.parametrize("name", [LONG_NAME, "ä" * 31])  # 62 bytes of 2-byte UTF-8 letters
def test_histogram_aliases_fit_postgres_identifier_limit(tmp_path, name):
    """Was: a banded column's typed copy was aliased '__sqlclose_typed_<name>', which Postgres
    (NAMEDATALEN 64) cuts to 63 bytes for a name of 47 bytes or more; the export then lacked the
    column sqlclose asks for. Oracle: Postgres's documented limit, 63 bytes, for every alias of
    the printed query as sqlglot parses it back."""
    assert len(name.encode()) <= 63
    spec = tmp_path / "wh.toml"
    spec.write_text(f'[source]\nformat = "warehouse"\ntable = "t"\ndialect = "postgres"\n'
                    f'columns = {json.dumps([name, "disease"])}\n[output]\npath = "release.sql"\n'
                    f'[privacy]\nk = 5\n[quasi_identifiers]\n"{name}" = {{ bands = [5, 10] }}\n'
                    '[sensitive.disease]\ndistinct_l = 2\n', encoding="utf-8")
    printed = sqlclose("sql", spec)
    assert printed.returncode == 0, printed.stderr
    aliases = [a.alias for a in sqlglot.parse_one(printed.stdout, read="postgres").expressions]
    assert len(aliases) == 5 and not [a for a in aliases if len(a.encode()) > 63], aliases


# ---- how warehouses export ------------------------------------------------------------------------
FOLDER_SPEC = """
[privacy]
k = 2
[quasi_identifiers]
sex = { tree = { "*" = ["M", "F"] } }
[sensitive.disease]
distinct_l = 2
"""


def test_a_folder_of_csv_part_files_is_refused_for_what_it_is(tmp_path):
    """Was: a folder of CSV parts (Spark's df.write.csv(…, header=True)) was read as a Parquet
    folder and refused with 'types, nulls and encoding apply to CSV sources only', though it is
    CSV and the spec sets none of them. Now it is refused (exit 2) as a folder of CSV files,
    asking for one file or Parquet, and nothing is written."""
    spec = _spec(tmp_path, "t", FOLDER_SPEC)
    folder = tmp_path / "h.csv"
    folder.mkdir()
    (folder / "part-0000.csv").write_text(f"sex,disease,{COUNT}\nM,flu,3\nM,cold,3\n", encoding="utf-8")
    (folder / "part-0001.csv").write_text(f"sex,disease,{COUNT}\nF,flu,4\nF,hiv,4\n", encoding="utf-8")
    (folder / "_SUCCESS").write_text("", encoding="utf-8")
    run = sqlclose("anonymize", "--histogram", folder, spec)
    _refused(run, tmp_path, "is a folder of CSV files", "must be one file", "export Parquet")
    assert "apply to CSV sources only" not in run.stderr


def test_a_csv_histogram_keeps_column_names_with_edge_spaces(tmp_path):
    """Was: a column named ' pad age ' (names are quoted exactly as given) ran from the Parquet
    export, while the CSV export of the same query was refused, 'has no column ' pad age '': the
    header's names were trimmed. A histogram's column the spec names with spaces around it is found
    in the header with or without them (a header's names are read without them, as on the direct
    path: tests/test_csv_header_spaces.py): the CSV export gives the Parquet export's release
    (oracle: the same release query, minus its salted first line, from both files)."""
    db = warehouse_with(tmp_path, 'CREATE TABLE t(" pad age " INTEGER, disease VARCHAR)',
                        "INSERT INTO t SELECT 20 + (i % 30), CASE WHEN i % 2 = 0 THEN 'flu' ELSE 'cold' END "
                        "FROM range(120) r(i)")
    spec = warehouse_spec(tmp_path, "t", [" pad age ", "disease"],
                          '[privacy]\nk = 5\n[quasi_identifiers]\n" pad age " = { bands = [5, 10] }\n'
                          '[sensitive.disease]\ndistinct_l = 2\n')
    queries = []
    for name in ("h.parquet", "h.csv"):
        histogram_in_warehouse(db, spec, tmp_path / name)
        made = invoke("anonymize", "--histogram", tmp_path / name, spec, "--overwrite")
        assert made.exit_code == 0, made.output
        queries.append((tmp_path / "release.sql").read_text(encoding="utf-8").split("\n", 1)[1])
    assert queries[0] == queries[1]


def test_a_report_named_like_the_verification_query_is_refused_naming_it(tmp_path, monkeypatch):
    """Was: --output r.sql --report r.verify.sql was refused after the whole search with 'the
    report path is the output path (r.verify.sql)', though the output is r.sql: the collision is
    with the verification query that goes beside it. Now the refusal (exit 2) names the
    verification query, and comes before the search (which is made to fail if it runs); nothing
    is written (the file system's state)."""
    from sqlclose import api

    spec = _spec(tmp_path, "t", FOLDER_SPEC)
    duckdb.connect().execute(
        "COPY (SELECT * FROM (VALUES ('M', 'flu', 3), ('M', 'cold', 3), ('F', 'flu', 4), ('F', 'hiv', 4)) "
        f"t(sex, disease, {COUNT})) TO '{tmp_path / 'h.parquet'}' (FORMAT PARQUET)")

    def no_search(*args, **kwargs):
        raise AssertionError("the search ran before the refusal")

    monkeypatch.setattr(api, "anonymize_histogram", no_search)
    r = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec, "--output", tmp_path / "r.sql",
               "--report", tmp_path / "r.verify.sql")
    assert r.exit_code == 2, r.output
    assert "verification query's path" in r.output and "is the output path" not in r.output, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.parquet", "wh.toml"]


def test_the_histogram_search_runs_within_the_engine_settings_given(tmp_path, warehouse):
    """Review of the sixty-fourth round: `--histogram` took --memory-limit, --threads and
    --temp-directory (and [engine]'s) without a word and ran on the process's DuckDB without them:
    a 1 KB limit released as if none were given. Now the local search runs within them: a limit
    no DuckDB query fits in stops the job as out of memory (exit 5), nothing written; a workable
    one releases the paper's Table 5, as with none."""
    spec = _spec(tmp_path, "t3", T_SPEC)
    hist = _export(warehouse, spec, tmp_path / "h.parquet")
    starved = sqlclose("anonymize", "--histogram", hist, spec, "--memory-limit", "1KB", "--threads", "1")
    assert starved.returncode == 5 and "DuckDB ran out of memory" in starved.stderr, starved.stderr
    assert not (tmp_path / "release.sql").exists()
    run = sqlclose("anonymize", "--histogram", hist, spec, "--memory-limit", "2GB", "--threads", "1", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["node"] == TABLE5_NODE


def test_a_banded_double_whose_text_is_another_number_is_refused(tmp_path):
    """Was (review D of the ninety-seventh round): a warehouse writing doubles with 15 significant
    digits (Postgres under extra_float_digits = 0) writes 39.99999999999999 '40'; the bands are cut
    from the text, so its rows were released as [40, 45), and the verification said ok. Now a banded
    float's text is read back and compared with the value it stands for (the histogram's typed copy,
    exact in Parquet): refused, the value not shown. The warehouse is DuckDB with its text of the
    double replaced by that 15-digit print (a UDF, f"{x:.15g}", as Postgres writes it)."""
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t(age DOUBLE, disease VARCHAR)")
    con.execute("INSERT INTO t VALUES (39.99999999999999, 'flu'), (39.99999999999999, 'cold'), (36, 'flu'), "
                "(36, 'cold'), (41, 'flu'), (41, 'cold')")
    con.create_function("pg0", lambda x: None if x is None else f"{x:.15g}", ["DOUBLE"], "VARCHAR")
    assert con.execute("SELECT pg0(39.99999999999999)").fetchone()[0] == "40"
    spec = _spec(tmp_path, "t", "[privacy]\nk = 2\n[quasi_identifiers]\nage = { bands = [5, 10] }\n"
                 "[sensitive.disease]\ndistinct_l = 2\n", source='columns = ["age", "disease"]')
    query = sqlclose("sql", spec).stdout
    assert 'CAST("src"."age" AS TEXT)' in query
    lossy = query.replace('CAST("src"."age" AS TEXT)', 'pg0("src"."age")')
    con.execute(f"COPY ({lossy}) TO '{tmp_path / 'h.parquet'}' (FORMAT PARQUET)")
    con.close()
    run = sqlclose("anonymize", "--histogram", tmp_path / "h.parquet", spec, "--node", "age=1")
    _refused(run, tmp_path, "1 text of column 'age' does not read back as the value it stands for "
             "('__sqlclose_typed_q0')", "extra_float_digits = 1")
    assert "39.9" not in run.stderr


def test_names_upper_cased_by_the_export_are_told_as_differing_in_case(tmp_path, warehouse):
    """Was (review D of the ninety-seventh round): a Snowflake session under
    QUOTED_IDENTIFIERS_IGNORE_CASE = TRUE exports the histogram's columns as ZIP, AGE, …,
    __SQLCLOSE_COUNT; refused (rightly), but the message said "a file without a header line has its
    first row of data read as the names" of a Parquet file. Now it says the names differ only in
    case and how to keep them. Oracle: the export renamed to upper case by hand, 4 + 1 columns."""
    spec = _spec(tmp_path, "t3", K5 + "[sensitive.disease]\ndistinct_l = 2\n")
    hist = _export(warehouse, spec, tmp_path / "h.parquet",
                   "SELECT zip AS ZIP, age AS AGE, disease AS DISEASE, __sqlclose_count AS __SQLCLOSE_COUNT FROM ({q})")
    run = sqlclose("anonymize", "--histogram", hist, spec)
    _refused(run, tmp_path, "has no column 'zip': the names of 4 of its columns differ from those of `sqlclose sql` "
             "only in upper and lower case", "QUOTED_IDENTIFIERS_IGNORE_CASE = FALSE")
    assert "header line" not in run.stderr
