"""A quasi-identifier's values its hierarchy lacks are counted, not shown, by every command a job
runs: the message lands in job logs and --json documents, and a rare age or ZIP code can single a
person out. `sqlclose hierarchy validate … --show-values` names them, where the operator asks to see
them; a sensitive column's are never named, flag or not.

Table 3 with its age-52 row made 87 (a value no other field, count or path of these runs holds) and
the line for 52 taken out of age.csv: the hierarchy lacks the one value 87, held by one row. The
expected messages are written out by hand from that: 1 value, in 1 row, of a hierarchy of 8 leaves.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from table3_project import invoke, table3_missing_age, table3_project

# 87 as a value of its own: quoted, or a token no digit, letter, path or decimal character touches
# (so a tmp folder's 'pytest-87' or a number such as 0.87 or 1870 is not taken for it).
SHOWN = re.compile(r"'87'|(?<![\w./-])87(?![\w./-])")


def counted_message(folder: Path, lister: str = "`sqlclose hierarchy validate SPEC.toml:age --show-values`") -> str:
    """The counted error; ``lister``: what it says lists the values (the file form of `hierarchy
    validate`: its own --show-values)."""
    return (f"column 'age' holds 1 value (in 1 row) that is not a leaf of its hierarchy {folder / 'age.csv'} (8 "
            f"leaves; the values are not shown: an error lands in job logs; {lister} lists them): add a line for "
            "each to the hierarchy (leaf;…;*), or fix the data")


def named_message(folder: Path) -> str:
    return (f"column 'age': 1 value is not a leaf of hierarchy {folder / 'age.csv'}: '87' (1 row); add a line for "
            "each to the hierarchy (leaf;…;*), or fix the data")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Table 3 whose age 52 is 87, and age.csv without its line for 52: 87 is the value it lacks."""
    table3_missing_age(tmp_path)
    assert not SHOWN.search((tmp_path / "age.csv").read_text() + str(tmp_path))
    return tmp_path


def assert_not_shown(*texts: str) -> None:
    for text in texts:
        assert not SHOWN.search(text), text
        assert "47909,87" not in text, text  # nor the row


@pytest.mark.parametrize("args", [["anonymize", "--no-progress"], ["anonymize", "--json"], ["explain"],
                                  ["anonymize", "--dry-run", "--no-progress"]],
                         ids=["anonymize", "anonymize-json", "explain", "dry-run"])
def test_a_run_counts_the_value_its_hierarchy_lacks_and_does_not_show_it(project, args):
    """Guards against a job's own output naming a quasi-identifier's value: `anonymize` printed
    "'52' (1 row)" (the age of one person) on stderr, which job logs keep, and --json put it in its
    document. Each command a job runs exits 2 with the value counted, on stdout and stderr alike."""
    result = invoke(args[0], project / "spec.toml", *args[1:])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"sqlclose: error: {counted_message(project)}\n"
    if "--json" in args:
        assert json.loads(result.stdout) == {"error": counted_message(project), "exit_code": 2, "kind": "bad input"}
    assert_not_shown(result.stdout, result.stderr)


def test_validate_of_a_spec_column_names_the_value_only_with_show_values(project):
    """Guards against the values being lost to the operator (validate --show-values names them,
    on asking, at the terminal) and against validate naming them unasked (its default is a run's
    counted message). The control: Table 3 as shipped passes with the flag (exit 0)."""
    target = f"{project / 'spec.toml'}:age"
    counted = invoke("hierarchy", "validate", target)
    assert counted.exit_code == 2, counted.output
    assert counted.stderr == f"sqlclose: error: {counted_message(project)}\n"
    assert_not_shown(counted.stdout, counted.stderr)
    named = invoke("hierarchy", "validate", target, "--show-values")
    assert named.exit_code == 2, named.output
    assert named.stderr == f"sqlclose: error: {named_message(project)}\n"
    assert SHOWN.search(named.stderr)  # the check above would see the value, were it shown
    table3_project(project)  # the shipped data and hierarchies again
    assert invoke("hierarchy", "validate", target, "--show-values").exit_code == 0


@pytest.mark.parametrize("as_table", [False, True], ids=["csv", "duckdb-table"])
def test_validate_of_a_spec_column_against_other_data_says_to_add_show_values_to_this_command(project, as_table):
    """Guards against the hint sending the operator to other data: `validate SPEC.toml:age --data
    people.duckdb --table people` said "`sqlclose hierarchy validate SPEC.toml:age --show-values` lists
    them", a command that reads the spec's own source, which passes (exit 0): the values of the table
    checked were never named. Validating against --data, the command that lists them is this one:
    it says `--show-values`, as the file form does (given a CSV path it had spelled the whole command
    out). Oracle: the message by hand; the data checked is the project's table (87 no leaf), the
    spec's source has 47 there (a leaf), so the spec's own data passes."""
    import duckdb

    (project / "other.csv").write_bytes((project / "table3.csv").read_bytes())
    data = ["--data", project / "other.csv"]
    if as_table:
        with duckdb.connect(str(project / "people.duckdb")) as con:
            con.execute("CREATE TABLE people AS SELECT * FROM read_csv(?, all_varchar = true)",
                        [str(project / "other.csv")])
        data = ["--data", project / "people.duckdb", "--table", "people"]
    table = (project / "table3.csv").read_text()
    (project / "table3.csv").write_text(table.replace(",87,", ",47,"))
    target = f"{project / 'spec.toml'}:age"
    assert invoke("hierarchy", "validate", target).exit_code == 0  # the spec's own source passes
    counted = invoke("hierarchy", "validate", target, *data)
    assert counted.exit_code == 2, counted.output
    assert counted.stderr == f"sqlclose: error: {counted_message(project, '--show-values')}\n"
    assert_not_shown(counted.stdout, counted.stderr)
    named = invoke("hierarchy", "validate", target, *data, "--show-values")
    assert named.exit_code == 2 and named.stderr == f"sqlclose: error: {named_message(project)}\n", named.output


def test_validate_of_a_file_with_data_names_the_value_only_with_show_values(project):
    """Guards against the file form (no spec) naming a quasi-identifier's values unasked, or not
    naming them when asked."""
    args = ["hierarchy", "validate", project / "age.csv", "--data", project / "table3.csv", "--column", "age"]
    counted = invoke(*args)
    assert counted.exit_code == 2, counted.output
    assert counted.stderr == f"sqlclose: error: {counted_message(project, '--show-values')}\n"
    assert_not_shown(counted.stdout, counted.stderr)
    named = invoke(*args, "--show-values")
    assert named.exit_code == 2, named.output
    assert named.stderr == f"sqlclose: error: {named_message(project)}\n"


def test_show_values_never_shows_a_sensitive_columns_values(project):
    """Guards against --show-values reaching a sensitive column: disease.csv without its 'flu' line
    (Table 3's one flu row): the value is counted in the spec form (the spec says disease is
    sensitive) and in the file form with --sensitive, flag or not; 9 leaves are left."""
    lines = (project / "disease.csv").read_text().splitlines(keepends=True)
    (project / "disease.csv").write_text("".join(line for line in lines if not line.startswith("flu;")))
    told = (f"holds 1 value (in 1 row) that is not a leaf of its hierarchy {project / 'disease.csv'} (9 leaves; the "
            "values are not shown: a sensitive value is what a release protects): add a line for each to the "
            "hierarchy (leaf;…;*), or fix the data")
    file_form = ["hierarchy", "validate", project / "disease.csv", "--data", project / "table3.csv", "--column",
                 "disease", "--sensitive"]
    for args in (["hierarchy", "validate", f"{project / 'spec.toml'}:disease", "--show-values"],
                 [*file_form, "--show-values"], file_form):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert told in result.stderr and "column 'disease'" in result.stderr, result.stderr
        assert "flu" not in result.output.lower() and "flu" not in result.stderr.lower(), result.stderr


def test_show_values_without_data_is_refused(project):
    """Guards against --show-values on a hierarchy file alone passing as if it had applied (there
    is no column whose values it would show): exit 2, saying it needs --data."""
    result = invoke("hierarchy", "validate", project / "age.csv", "--show-values")
    assert result.exit_code == 2, result.output
    assert result.stderr == ("sqlclose: error: --show-values is about a column of --data: give --data TABLE too (with "
                             "--column COLUMN), or leave --show-values out\n")


def test_the_error_keeps_to_one_line_when_a_path_holds_a_line_break(project):
    """Review of the ninety-first round: the error's ``listed`` attribute (the values, named) was read
    as SpecError's flag "several problems, one a line", and a line break in the hierarchy's path was
    printed raw, forging a second line in a job's log. The attribute is ``named`` now."""
    folder = project / "a\nforged: line"
    folder.mkdir()
    (folder / "age.csv").write_bytes((project / "age.csv").read_bytes())
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace('file = "age.csv"', 'file = "a\\nforged: line/age.csv"'))
    assert 'a\\nforged: line/age.csv' in spec.read_text()
    result = invoke("anonymize", spec)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "a\\nforged: line" in result.stderr, result.stderr


# ---- a floating-point column of whole numbers (the ninety-sixth round) --------------------------

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
# Table 3's ages, as its rows hold them; its age.csv has a leaf for each (9 leaves).
AGES = [29, 22, 27, 43, 52, 47, 30, 36, 32]
NAMED_BY_ERROR = "the error's `named` attribute (NotLeavesError.named) lists them"
PANDAS_CAST = ("in the DataFrame first: df['age'] = df['age'].astype('Int64') (pandas' integers that keep a missing "
               "value missing; a missing one is what makes pandas store whole numbers as float64)")
FILE_CAST = ('where it is read: in a [source] query (SELECT * REPLACE (CAST("age" AS BIGINT) AS "age") FROM …), or, '
             'for a CSV file, by declaring its type: [source] types = { "age" = "BIGINT" }')


def float_message(values: int, whole: int, lister: str, cast: str, age_csv: Path = TABLE3 / "age.csv") -> str:
    """The counted error for ``values`` values of a double column, ``whole`` of them whole numbers
    whose integer text is a leaf, written out by hand."""
    return (f"column 'age' holds {values} values (in {values} rows) that are not leaves of its hierarchy {age_csv} "
            f"(9 leaves; the values are not shown: an error lands in job logs; {lister}): add a line for each to the "
            f"hierarchy (leaf;…;*), or fix the data; {whole} of them are whole numbers the column holds as "
            "floating-point numbers (its type is double), whose text writes a fraction where the leaf has none: "
            f"cast the column to whole numbers {cast}")


def no_age_shown(text: str) -> None:
    """No age of the table in ``text``, as a number or as the float text the column holds."""
    for age in [*AGES, 87, 30.5]:
        assert not re.search(rf"(?<![\w./-]){re.escape(str(age))}(?![\w/-]|\.\d)", text), (age, text)


def table3_frame(ages: list) -> object:
    import pandas as pd

    df = pd.read_csv(TABLE3 / "table3.csv", dtype={"zip": str})
    df["age"] = ages
    return df


def age_spec(source: dict | None = None) -> dict:
    spec = {"k": 3, "others": "drop", "quasi_identifiers": {"zip": {"mask": True, "length": 5},
                                                            "age": {"file": str(TABLE3 / "age.csv"), "nulls": "drop"}}}
    return spec if source is None else {**spec, "source": source}


def test_a_pandas_column_made_float_by_one_missing_age_is_told_the_cast_it_needs():
    """The reviewer's case: one missing age makes pandas store the column as float64 (29 -> 29.0),
    and the error said "8 values … are not leaves … add a line for each", with a command for a
    SPEC.toml this run did not have (the spec was a dict). Now it counts the whole numbers whose
    integer text is a leaf, names the cast, and says the error's own ``named`` lists the values
    (which it does); the values themselves are in no message. Oracle: the counts by hand (the age
    22 missing: 8 values in 8 rows, every one a leaf's whole number), and the cast it names,
    applied as written, lets the run through."""
    import pandas as pd

    import sqlclose
    from sqlclose.errors import NotLeavesError

    df = table3_frame([None if age == 22 else float(age) for age in AGES])
    assert df["age"].dtype == "float64"
    with pytest.raises(NotLeavesError) as e:
        sqlclose.anonymize(df, age_spec())
    assert str(e.value) == float_message(8, 8, NAMED_BY_ERROR, PANDAS_CAST)
    no_age_shown(str(e.value))
    assert "'29.0' (1 row)" in e.value.named  # what the message says lists them does
    fix = re.search(r"first: (df\['age'\] = .*?\)) \(", str(e.value)).group(1)
    exec(fix, {"df": df, "pd": pd})  # the cast as the message writes it
    with sqlclose.anonymize(df, age_spec()) as release:
        released = release.to_pandas()
    # The 8 rows with an age, 3-anonymous: a plain groupby over the released labels.
    assert len(released) == 8 and released.groupby(["zip", "age"]).size().min() >= 3


def test_only_whole_numbers_whose_integer_text_is_a_leaf_are_counted():
    """A float column's values that are no whole number (30.5) or whose integer is no leaf (87, for
    the age 52) are counted among the values, not among those the cast would mend. Oracle: by hand,
    9 values of which 7 (29, 22, 27, 43, 47, 36, 32) are leaves' whole numbers."""
    import sqlclose
    from sqlclose.errors import NotLeavesError

    ages = [87.0 if age == 52 else 30.5 if age == 30 else float(age) for age in AGES]
    with pytest.raises(NotLeavesError) as e:
        sqlclose.anonymize(table3_frame(ages), age_spec())
    assert str(e.value) == float_message(9, 7, NAMED_BY_ERROR, PANDAS_CAST)
    no_age_shown(str(e.value))


@pytest.mark.parametrize("given", ["arrow", "parquet", "spec file over a dataframe"])
def test_the_cast_is_named_for_the_source_as_given(tmp_path, given):
    """The cast is made where the column is: in an Arrow table, in a [source] query over a Parquet
    file (or a CSV's declared type); a spec file over a DataFrame points to ``named`` too, since the
    command validating SPEC.toml:age would read the spec's [source], not the DataFrame. Oracle: the
    message by hand, and the cast it names, applied, lets the run through."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import sqlclose
    from sqlclose.errors import NotLeavesError

    df = table3_frame([None if age == 22 else float(age) for age in AGES])
    arrow = pa.Table.from_pandas(df, preserve_index=False)
    if given == "arrow":
        source, spec, cast = arrow, age_spec(), ("in the table first: table['age'].cast('int64'), put back with "
                                                 "table.set_column (a missing value stays missing)")
    elif given == "parquet":
        pq.write_table(arrow, tmp_path / "t3.parquet")
        source, spec, cast = None, age_spec({"path": str(tmp_path / "t3.parquet")}), FILE_CAST
    else:
        spec = tmp_path / "spec.toml"
        spec.write_text(f'others = "drop"\n[privacy]\nk = 3\n[quasi_identifiers]\nzip = {{ mask = true, length = 5 }}\n'
                        f'age = {{ file = "{TABLE3 / "age.csv"}", nulls = "drop" }}\n')
        source, cast = df, PANDAS_CAST
    with pytest.raises(NotLeavesError) as e:
        sqlclose.anonymize(source, spec)
    assert str(e.value) == float_message(8, 8, NAMED_BY_ERROR, cast)
    if given == "arrow":
        source = arrow.set_column(arrow.schema.get_field_index("age"), "age", arrow["age"].cast("int64"))
    elif given == "parquet":
        fix = re.search(r"\((SELECT .*? FROM) …\)", FILE_CAST).group(1)  # the query as the message writes it
        spec = age_spec({"query": f"{fix} '{tmp_path}/t3.parquet'"})
    else:
        source = df.assign(age=df["age"].astype("Int64"))
    with sqlclose.anonymize(source, spec) as release:
        assert release.node == {"zip": 2, "age": 2}


def test_a_csv_declared_double_is_told_to_declare_bigint_and_the_command_to_list_them(project):
    """A spec file over its own CSV whose age is declared DOUBLE: the command validating
    SPEC.toml:age lists the values (it reads that CSV), and the fix is the declared type; declared
    BIGINT as told, the run passes (a BIGINT reads 29.0 as 29). Oracle: the message by hand (the
    project's age 87 has no leaf: 9 values, 8 of them a leaf's whole number)."""
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace('path = "table3.csv"', 'path = "table3.csv"\ntypes = { age = "DOUBLE" }'))
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    lister = "`sqlclose hierarchy validate SPEC.toml:age --show-values` lists them"
    message = float_message(9, 8, lister, FILE_CAST, project / "age.csv").replace("(9 leaves;", "(8 leaves;")
    assert result.stderr == f"sqlclose: error: {message}\n"
    no_age_shown(result.stderr)
    spec.write_text(spec.read_text().replace('"DOUBLE"', '"BIGINT"'))
    assert "age = \"BIGINT\"" in spec.read_text()
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2 and "holds 1 value (in 1 row)" in result.stderr, result.output  # 87 alone is left


@pytest.mark.spark
def test_a_spark_dataframes_float_column_is_counted_on_spark(spark_session):
    """The count is one query over the column's distinct values, run on Spark too (its text of a
    double, 29.0, is DuckDB's): the same message, with Spark's cast. Oracle: as above, by hand."""
    import sqlclose
    from sqlclose.engine.spark import SparkEngine
    from sqlclose.errors import NotLeavesError

    df = spark_session.createDataFrame(table3_frame([None if age == 22 else float(age) for age in AGES]))
    with pytest.raises(NotLeavesError) as e:
        sqlclose.anonymize(df, age_spec(), engine=SparkEngine(spark_session))
    cast = "in the DataFrame first: df.withColumn('age', df['age'].cast('bigint'))"
    assert str(e.value) == float_message(8, 8, NAMED_BY_ERROR, cast)
    df = df.withColumn("age", df["age"].cast("bigint"))
    with sqlclose.anonymize(df, age_spec(), engine=SparkEngine(spark_session)) as release:
        assert release.node == {"zip": 2, "age": 2}


# ---- the same hint for a sensitive column, a text column and a DECIMAL (the ninety-seventh round) ----

SALARIES = {"low": ["3000", "4000", "5000", "6000"], "high": ["7000", "8000", "9000", "10000", "11000"]}


def salary_spec(distance: str) -> dict:
    """Table 3's zip and age, and its salary sensitive under a tree of its nine salaries as leaves."""
    spec = age_spec()
    spec["sensitive"] = {"salary": {"distance": distance, "t": 1, "hierarchy": {"tree": {"*": SALARIES}}}}
    return spec


@pytest.mark.parametrize("distance", ["hierarchical", "ordered"])
def test_a_sensitive_float_column_of_whole_numbers_is_told_the_cast_it_needs(distance):
    """A sensitive column of whole numbers held as float64 (3000.0) against a hierarchy of its
    salaries (3000) was told "9 values … are not leaves … add each to the tree", advice that could not
    help, and no word of the cast: its lookup holds only the leaves the data holds, never 3000. The
    whole numbers are now counted against every leaf of the hierarchy (one query over the distinct
    values), the cast named as for a quasi-identifier, no salary shown. Oracle: by hand, Table 3's 9
    salaries are 9 distinct whole numbers, each a leaf's; the cast, applied as written, lets the run
    through."""
    import pandas as pd

    import sqlclose
    from sqlclose.errors import DataError

    df = table3_frame(AGES)
    df["salary"] = df["salary"].astype("float64")
    with pytest.raises(DataError) as e:
        sqlclose.anonymize(df, salary_spec(distance))
    rows = " (in 9 rows)" if distance == "hierarchical" else ""  # the ordered check reads the domain alone
    assert str(e.value) == (
        f"column 'salary' holds 9 values{rows} that are not leaves of its hierarchy tree for column 'salary' "
        "(9 leaves; the values are not shown: a sensitive value is what a release protects): add each to the tree, "
        "as a leaf of its group (e.g. low = […, \"…\"]), or fix the data; 9 of them are whole numbers "  # low: its 1st
        "the column holds as floating-point numbers (its type is double), whose text writes a fraction where the leaf "
        f"has none: cast the column to whole numbers {PANDAS_CAST.replace(repr('age'), repr('salary'))}")
    assert not re.search(r"\d000", str(e.value))
    exec(re.search(r"first: (df\['salary'\] = .*?\)) \(", str(e.value)).group(1), {"df": df, "pd": pd})
    with sqlclose.anonymize(df, salary_spec(distance)) as release:
        released = release.to_pandas()
    assert len(released) and released.groupby(["zip", "age"]).size().min() >= 3  # a plain groupby: 3-anonymous


def test_a_csv_column_read_as_text_is_told_its_whole_numbers_written_with_a_fraction(project):
    """A CSV's ages written 29.0 and read as text (declared VARCHAR) against age.csv's 29: counted as
    values alone. They are now counted as whole numbers written with a fraction (text is matched as
    it is written: "29.0" against the leaf's digits, exactly, in SQL), advised to be written without
    it or, the column holding numbers alone, read as BIGINT; declared so, the run goes on to the one
    value the hierarchy lacks (87, no leaf's). Oracle: by hand, 9 values of which 8 are a leaf's
    whole number (87 is none); no age in the message."""
    table = (project / "table3.csv").read_text().splitlines()
    rows = [",".join(f"{v}.0" if i == 1 else v for i, v in enumerate(line.split(","))) for line in table[1:]]
    (project / "table3.csv").write_text("\n".join([table[0], *rows]) + "\n")
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace('path = "table3.csv"', 'path = "table3.csv"\ntypes = { age = "VARCHAR" }'))
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    lister = "`sqlclose hierarchy validate SPEC.toml:age --show-values` lists them"
    assert result.stderr == (
        f"sqlclose: error: column 'age' holds 9 values (in 9 rows) that are not leaves of its hierarchy "
        f"{project / 'age.csv'} (8 leaves; the values are not shown: an error lands in job logs; {lister}): add a "
        "line for each to the hierarchy (leaf;…;*), or fix the data; 8 of them are whole numbers the column holds as "
        "text written with a fraction (its type is string), where the leaf has none: write them without it where the "
        f"column is made, or, if the column holds numbers alone, cast it to whole numbers {FILE_CAST}\n")
    no_age_shown(result.stderr)
    spec.write_text(spec.read_text().replace('"VARCHAR"', '"BIGINT"'))
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2 and "holds 1 value (in 1 row)" in result.stderr, result.output  # 87 alone is left


def test_a_decimal_column_of_whole_numbers_is_told_the_cast_it_needs(tmp_path):
    """A DECIMAL(4, 1) age (29.0) against age.csv's 29: counted as values alone. Now counted as whole
    numbers written with a fraction (DuckDB writes a DECIMAL's scale: 29.0), with the cast; the cast
    as written, in a [source] query, lets the run through. Oracle: by hand, Table 3's 9 ages, each a
    leaf's; no age in the message."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    import sqlclose
    from sqlclose.errors import NotLeavesError

    arrow = pa.Table.from_pandas(table3_frame(AGES), preserve_index=False)
    ages = pa.array([decimal.Decimal(f"{age}.0") for age in AGES], pa.decimal128(4, 1))
    pq.write_table(arrow.set_column(arrow.schema.get_field_index("age"), "age", ages), tmp_path / "t3.parquet")
    with pytest.raises(NotLeavesError) as e:
        sqlclose.anonymize(None, age_spec({"path": str(tmp_path / "t3.parquet")}))
    assert str(e.value) == float_message(9, 9, NAMED_BY_ERROR, FILE_CAST).replace(
        "floating-point numbers (its type is double)", "decimals with a fraction part (its type is decimal128(4, 1))")
    no_age_shown(str(e.value))
    fix = re.search(r"\((SELECT .*? FROM) …\)", FILE_CAST).group(1)  # the query as the message writes it
    with sqlclose.anonymize(None, age_spec({"query": f"{fix} '{tmp_path}/t3.parquet'"})) as release:
        released = release.to_pandas()
    assert len(released) and released.groupby(["zip", "age"]).size().min() >= 3  # a plain groupby: 3-anonymous
