"""``sqlclose hierarchy show|validate``: the data opened as ``check`` opens it, a SPEC:COLUMN target
judged on its column alone, and the options and advice fitting the command (review of the demo
and hierarchy commands, defects 2, 5, 6 and 12)."""

from __future__ import annotations

import duckdb
import pytest
from forked_cli import run_cli
from table3_project import TABLE3, invoke, table3_project

# A target of each command, with the options that make it read --data DB --table T.
TARGETS = {"show": lambda p: ["hierarchy", "show", f"{p / 'spec.toml'}:age"],
           "validate": lambda p: ["hierarchy", "validate", p / "age.csv", "--column", "age"]}


@pytest.fixture
def project(tmp_path):
    table3_project(tmp_path)
    with duckdb.connect(str(tmp_path / "db.duckdb")) as con:
        con.execute(f"CREATE TABLE people AS SELECT * FROM read_csv('{tmp_path / 'table3.csv'}', all_varchar = true)")
    return tmp_path


@pytest.mark.parametrize("command", TARGETS)
def test_a_database_table_is_read_as_check_reads_it(project, command):
    """The control: --data DB --table T reads the table (exit 0)."""
    result = invoke(*TARGETS[command](project), "--data", project / "db.duckdb", "--table", "people")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", TARGETS)
@pytest.mark.parametrize(("data", "table", "said"), [
    ("nope.duckdb", "people", "source {p}/nope.duckdb does not exist"),
    ("table3.csv", "people", "--table names a table of a DuckDB database file, and {p}/table3.csv is a CSV file: "
                             "leave --table out"),
    ("folder", "people", "--table names a table of a DuckDB database file, and {p}/folder is a Parquet folder: "
                         "leave --table out"),
    ("db.duckdb", "nope", "cannot read {p}/db.duckdb (table nope): {p}/db.duckdb holds no table or view 'nope' "
                          "(it holds 'people'); name one it holds as the table to read"),
])
def test_a_database_that_cannot_be_read_is_bad_input_named(project, command, data, table, said):
    """A missing database, a CSV or a folder given with --table were internal errors (exit 1, DuckDB's
    'Cannot launch in-memory database in read-only mode'), a missing table DuckDB's 'Catalog Error'
    text: now check's own messages, exit 2."""
    (project / "folder").mkdir()
    result = invoke(*TARGETS[command](project), "--data", project / data, "--table", table)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"sqlclose: error: {said.format(p=project)}\n"


@pytest.mark.parametrize("command", TARGETS)
def test_a_locked_database_is_the_environments_state(project, command):
    """A database another process writes was an internal error (exit 1): exit 5, as check says."""
    with duckdb.connect(str(project / "db.duckdb")):  # this process holds the write lock
        result = run_cli([*TARGETS[command](project), "--data", project / "db.duckdb", "--table", "people"],
                         cwd=project, timeout=60)
    assert result.returncode == 5, result.stderr
    assert result.stderr.startswith(f"sqlclose: error: the environment refused: another process holds the lock of "
                                    f"{project / 'db.duckdb'} (table people), the source database"), result.stderr


BREAKS = {"age": (",52,", ",99,"), "disease": ("flu", "SECRETDISEASE")}  # a value each hierarchy lacks


@pytest.mark.parametrize(("command", "column", "broken"), [
    ("validate", "disease", ["age"]), ("show", "disease", ["age"]), ("validate", "age", ["disease"]),
    ("validate", "zip", ["age", "disease"]), ("show", "zip", ["age", "disease"])])
def test_another_columns_problem_is_not_the_asked_columns(tmp_path, command, column, broken):
    """`validate spec:disease` failed naming age (a value 99 its hierarchy lacks), `show spec:zip`
    failed for disease's value. Oracle: only the asked column is judged, and its values are all
    leaves (the table is Table 3 but for the broken columns' values, each read from the files)."""
    table3_project(tmp_path)
    table = (tmp_path / "table3.csv").read_text()
    for name in broken:
        table = table.replace(*BREAKS[name])
    (tmp_path / "table3.csv").write_text(table)
    result = invoke("hierarchy", command, f"{tmp_path / 'spec.toml'}:{column}")
    assert result.exit_code == 0 and result.stderr == "", result.output
    assert "SECRET" not in result.output


def test_a_column_the_spec_leaves_unsaid_does_not_block_the_asked_column(tmp_path):
    """A data column the spec does not mention, with `others` unset, failed every target ('table3.csv
    has a column the spec does not mention'): a run's refusal, not this hierarchy's."""
    table3_project(tmp_path)
    lines = (tmp_path / "table3.csv").read_text().splitlines()
    (tmp_path / "table3.csv").write_text("\n".join([lines[0] + ",ssn"] + [f"{line},{i}" for i, line in
                                                                          enumerate(lines[1:])]) + "\n")
    assert invoke("hierarchy", "validate", f"{tmp_path / 'spec.toml'}:age").exit_code == 0
    refused = invoke("anonymize", tmp_path / "spec.toml", "--dry-run")
    assert refused.exit_code == 2 and "does not mention" in refused.output, refused.output


def test_rows_a_run_drops_for_another_columns_null_are_not_checked(tmp_path):
    """Narrowed to its column, the target still reads the rows a run reads: a row dropped for a NULL
    zip (nulls = "drop") holds age 99, which age's hierarchy lacks and no run checks; the row with
    disease 'SECRETDISEASE' failed `validate spec:age` before. Exit 0."""
    table3_project(tmp_path)
    spec = (tmp_path / "spec.toml").read_text().replace("zip = { mask = true, length = 5 }",
                                                        'zip = { mask = true, length = 5, nulls = "drop" }')
    (tmp_path / "spec.toml").write_text(spec)
    table = (tmp_path / "table3.csv").read_text().replace("flu", "SECRETDISEASE")
    (tmp_path / "table3.csv").write_text(table + ",99,1000,gastritis\n")
    result = invoke("hierarchy", "validate", f"{tmp_path / 'spec.toml'}:age")
    assert result.exit_code == 0, result.output
    table_with_age = table + "47677,99,1000,gastritis\n"
    (tmp_path / "table3.csv").write_text(table_with_age)
    result = invoke("hierarchy", "validate", f"{tmp_path / 'spec.toml'}:age")
    assert result.exit_code == 2 and "column 'age' holds 1 value (in 1 row) that is not a leaf" in result.output, \
        result.output
    assert "'99'" not in result.output and "SECRETDISEASE" not in result.output, result.output  # counted
    result = invoke("hierarchy", "validate", f"{tmp_path / 'spec.toml'}:age", "--show-values")
    assert result.exit_code == 2 and "'99' (1 row)" in result.output, result.output
    assert "SECRETDISEASE" not in result.output, result.output


def _no_source_spec(folder) -> None:
    for name in ("age.csv", "disease.csv"):
        (folder / name).write_bytes((TABLE3 / name).read_bytes())
    (folder / "ns.toml").write_text('[privacy]\nk = 2\n[quasi_identifiers]\nage = { file = "age.csv" }\n'
                                    'zip = { mask = true }\n[sensitive.disease]\ndistance = "hierarchical"\n'
                                    't = 0.3\nhierarchy = "disease.csv"\n')


def test_a_sensitive_columns_hierarchy_file_is_shown_without_data(tmp_path):
    """It said 'no source given: pass one, or add a [source] section' for a sensitive column's
    hierarchy file, which needs no data. Oracle: disease.csv's first fields, read here."""
    _no_source_spec(tmp_path)
    result = invoke("hierarchy", "show", f"{tmp_path / 'ns.toml'}:disease", "--limit", "0")
    assert result.exit_code == 0, result.output
    leaves = [line.split(";")[0] for line in (tmp_path / "disease.csv").read_text().splitlines() if line]
    assert [line[2:].split("  ")[0] for line in result.stdout.splitlines()[1:]] == leaves


@pytest.mark.parametrize(("command", "said"), [
    ("show", "the hierarchy of 'zip' is built by its rule from the data"),
    ("validate", "validating 'zip' checks the column's values in the data against its hierarchy")])
def test_without_data_the_error_names_this_commands_option(tmp_path, command, said):
    """'pass one' named no option this command has: it says --data TABLE."""
    _no_source_spec(tmp_path)
    result = invoke("hierarchy", command, f"{tmp_path / 'ns.toml'}:zip")
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"sqlclose: error: no source given: {said}: give --data TABLE, or add a [source] "
                             "section with path = \"…\" to the spec\n")


def test_a_file_hierarchy_is_shown_when_the_specs_source_is_gone(tmp_path):
    """`show gone.toml:age`, its [source] a missing file, failed instead of showing age.csv: shown,
    with a warning naming the missing source (exit 0). A rule's hierarchy still fails."""
    _no_source_spec(tmp_path)
    (tmp_path / "gone.toml").write_text('[source]\npath = "gone.csv"\n' + (tmp_path / "ns.toml").read_text())
    result = invoke("hierarchy", "show", f"{tmp_path / 'gone.toml'}:age")
    assert result.exit_code == 0, result.output
    assert result.stderr == (f"sqlclose: warning: source {tmp_path / 'gone.csv'} does not exist (shown as the spec "
                             "gives it, not checked against the data)\n")
    assert [line.split()[0] for line in result.stdout.splitlines()[2:]] == \
        [line.split(";")[0] for line in (TABLE3 / "age.csv").read_text().splitlines()]
    rule = invoke("hierarchy", "show", f"{tmp_path / 'gone.toml'}:zip")
    assert rule.exit_code == 2 and rule.stderr == f"sqlclose: error: source {tmp_path / 'gone.csv'} does not exist\n"


@pytest.mark.parametrize("command", ["show", "validate"])
def test_data_beside_a_query_source_names_data(tmp_path, command):
    """It said '(data.csv: --source, or the source argument)', options this command lacks, and a
    release's harm."""
    table3_project(tmp_path)
    spec = (tmp_path / "spec.toml").read_text().replace(
        'path = "table3.csv"', f"query = \"SELECT * FROM read_csv('{tmp_path / 'table3.csv'}', all_varchar = true)\"")
    (tmp_path / "q.toml").write_text(spec)
    result = invoke("hierarchy", command, f"{tmp_path / 'q.toml'}:age", "--data", tmp_path / "table3.csv")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "sqlclose: error: the spec's [source] is a query, which chooses the rows and columns to read, and a source "
        f"was given as well ({tmp_path / 'table3.csv'}: --data), which would replace it and take the hierarchy's "
        "values from rows the run never reads: leave --data out, or name the file in the query (FROM "
        "'people.parquet')\n")
    assert invoke("hierarchy", command, f"{tmp_path / 'q.toml'}:age").exit_code == 0


# ---- the target's form, the file form's options and advice, labels (defects 7 to 10, 13) ----------------
@pytest.mark.parametrize(("spec_name", "column"), [("colon.toml", "a:b"), ("UPPER.TOML", "age"),
                                                   ("x.toml:y.toml", "age")])
def test_a_spec_target_splits_at_the_spec_file(tmp_path, spec_name, column):
    """`colon.toml:a:b` was split at the last ':' (spec 'colon.toml:a', column 'b'), and a spec
    ending .TOML was read as a hierarchy file. Oracle: the column's hierarchy is age.csv's leaves."""
    (tmp_path / "age.csv").write_bytes((TABLE3 / "age.csv").read_bytes())
    (tmp_path / spec_name).write_text(f'[privacy]\nk = 2\n[quasi_identifiers]\n"{column}" = {{ file = "age.csv" }}\n')
    result = invoke("hierarchy", "show", f"{tmp_path / spec_name}:{column}", "--limit", "0")
    assert result.exit_code == 0, result.output
    assert [line.split()[0] for line in result.stdout.splitlines()[2:]] == \
        [line.split(";")[0] for line in (TABLE3 / "age.csv").read_text().splitlines()]


def _secret_table(folder):
    (folder / "disease.csv").write_bytes((TABLE3 / "disease.csv").read_bytes())
    (folder / "t.csv").write_text((TABLE3 / "table3.csv").read_text().replace("flu", "SECRETDISEASE"))


def test_the_file_form_counts_a_sensitive_columns_values_never_shows_them(tmp_path):
    """`validate FILE --data D --column disease` printed 'SECRETDISEASE', which the spec form counts
    without showing. --sensitive counts them (1 value, 1 row: written here), --show-values or not; a
    QI's are counted too, and listed with --show-values."""
    _secret_table(tmp_path)
    args = ["hierarchy", "validate", tmp_path / "disease.csv", "--data", tmp_path / "t.csv", "--column", "disease"]
    result = invoke(*args, "--sensitive")
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"sqlclose: error: column 'disease' holds 1 value (in 1 row) that is not a leaf of "
                             f"its hierarchy {tmp_path / 'disease.csv'} (10 leaves; the values are not shown: a "
                             "sensitive value is what a release protects): add a line for each to the hierarchy "
                             "(leaf;…;*), or fix the data\n")
    assert invoke(*args, "--sensitive", "--show-values").stderr == result.stderr  # never shown
    as_qi = invoke(*args)  # a quasi-identifier's: counted, named on asking
    assert as_qi.exit_code == 2 and "holds 1 value (in 1 row) that is not a leaf" in as_qi.stderr, as_qi.stderr
    assert "SECRETDISEASE" not in as_qi.stderr, as_qi.stderr
    assert "'SECRETDISEASE' (1 row)" in invoke(*args, "--show-values").stderr
    assert "--sensitive" in invoke("hierarchy", "validate", "--help").output


@pytest.mark.parametrize(("table", "said"), [
    ("zip,age\n47677,\n47602,22\n", "column 'age' has 1 NULL value in {t}, which a hierarchy file alone does not "
                                    "decide: validate SPEC.toml:age (its nulls = \"drop\" or \"value\" says what a run "
                                    "does with them), or clean the data"),
    ("zip,age\n", "{t} has no rows: there is no value of 'age' to check against the hierarchy")])
def test_the_file_forms_advice_fits_a_command_without_a_spec(tmp_path, table, said):
    """NULLs were told to 'set nulls = "drop" … in the spec' (there is none), an empty table that
    'there is nothing to anonymize'."""
    (tmp_path / "t.csv").write_text(table)
    result = invoke("hierarchy", "validate", TABLE3 / "age.csv", "--data", tmp_path / "t.csv", "--column", "age")
    assert result.exit_code == 2, result.output
    assert result.stderr == f"sqlclose: error: {said.format(t=tmp_path / 't.csv')}\n"


@pytest.mark.parametrize(("args", "said"), [
    (["validate", "{h}", "--column", "age"], "--column is about a column of --data: give --data TABLE too (with "
                                            "--column COLUMN), or leave --column out"),
    (["validate", "{h}", "--sensitive"], "--sensitive is about a column of --data: give --data TABLE too (with "
                                        "--column COLUMN), or leave --sensitive out"),
    (["validate", "{s}:age", "--column", "age"], "--column is for a hierarchy file: a SPEC.toml:COLUMN target names "
                                                "its column, and its spec says whether it is sensitive; leave "
                                                "--column out"),
    (["show", "{h}", "--data", "{t}"], "--data is the table a SPEC.toml:COLUMN target's hierarchy is built from or "
                                      "checked against; a hierarchy file is shown as written: leave it out (`sqlclose "
                                      "hierarchy validate FILE --data TABLE --column COLUMN` checks a file against a "
                                      "table)")])
def test_an_option_the_target_has_no_use_for_is_refused(tmp_path, args, said):
    """They were ignored silently, and the command passed as if they had applied."""
    table3_project(tmp_path)
    paths = {"h": tmp_path / "age.csv", "s": tmp_path / "spec.toml", "t": tmp_path / "table3.csv"}
    result = invoke("hierarchy", *[a.format(**paths) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"sqlclose: error: {said}\n"


def test_labels_that_would_not_show_as_written_are_quoted(tmp_path):
    """An empty label, 'a ' beside 'a', a line break and an invisible U+FEFF were printed as they are:
    indistinguishable, or breaking the table. Oracle: Python's repr of each, written here."""
    (tmp_path / "odd.csv").write_text('a;x;*\n"a ";x;*\n"";y;*\nb\ufeff;y;*\n"d\ne";y;*\n', encoding="utf-8")
    result = invoke("hierarchy", "show", tmp_path / "odd.csv")
    assert result.exit_code == 0, result.output
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == ["a", "'a", "''", "'b\\ufeff'", "'d\\ne'"]
    assert result.stdout.splitlines()[2] == "  'a '       x  *"


def test_a_value_differing_from_a_leaf_by_a_format_character_is_told(tmp_path):
    """'b\\ufeff' (a byte-order mark after it) against the leaf 'b': counted, and the hint says why;
    with --show-values, escaped and told apart from the leaf."""
    (tmp_path / "h.csv").write_text("b;*\n")
    (tmp_path / "t.csv").write_text("v\nb\ufeff\n", encoding="utf-8")
    args = ["hierarchy", "validate", tmp_path / "h.csv", "--data", tmp_path / "t.csv", "--column", "v"]
    counted = invoke(*args)
    assert counted.exit_code == 2, counted.output
    # (the advice's list of such characters between the two parts is model/text.py's to word)
    assert counted.stderr.startswith(f"sqlclose: error: column 'v' holds 1 value (in 1 row) that is not a leaf of "
                                     f"its hierarchy {tmp_path / 'h.csv'} (1 leaf; the values are not shown"), \
        counted.stderr
    assert "; 1 of them differs from a leaf only by invisible characters (such as U+FEFF, a byte-order mark" \
        in counted.stderr and counted.stderr.endswith("): remove them from the data or the hierarchy\n"), counted.stderr
    assert "'b" not in counted.stderr, counted.stderr  # neither the value nor the leaf it looks like
    result = invoke(*args, "--show-values")
    assert result.exit_code == 2, result.output
    assert "; 'b\\ufeff' differs from the leaf 'b' only by invisible characters (such as U+FEFF, a byte-order " \
        "mark" in result.stderr and result.stderr.endswith("): remove them from the data or the hierarchy\n"), \
        result.stderr


@pytest.mark.parametrize("control", ["\x07", "\x00", "\r"])
def test_a_value_differing_from_a_leaf_by_a_control_character_is_told(tmp_path, control):
    """Review of the ninety-first round: '43' with a BEL (U+0007) or a NUL after it against the leaf
    '43' got "add a line for each", though the line is there; a control character shows in no editor,
    as a format character does not. The oracle: Python's ascii() of the value, written here."""
    (tmp_path / "h.csv").write_text("43;4*;*\n")
    import duckdb

    duckdb.sql(f"COPY (SELECT '43' || chr({ord(control)}) AS v) TO '{tmp_path / 't.parquet'}'")
    args = ["hierarchy", "validate", tmp_path / "h.csv", "--data", tmp_path / "t.parquet", "--column", "v"]
    counted = invoke(*args)
    assert counted.exit_code == 2, counted.output
    if control.isspace():  # a CR left by a CRLF file: a space around the value, told once, as such
        assert "; 1 of them differs from a leaf only by spaces around it" in counted.stderr, counted.stderr
        assert "invisible" not in counted.stderr, counted.stderr
        return
    assert "; 1 of them differs from a leaf only by invisible characters (such as" in counted.stderr, counted.stderr
    assert "or a control character such as U+0007): remove them from the data or the hierarchy" in counted.stderr
    shown = invoke(*args, "--show-values")
    assert f"; {ascii('43' + control)} differs from the leaf '43' only by invisible characters" in shown.stderr, \
        shown.stderr


@pytest.mark.parametrize(("delimiter", "why"), [('"', "quotes a field"), ("\n", "ends a line"), ("\r", "ends a line")])
def test_a_quote_or_a_line_break_is_no_delimiter(delimiter, why):
    result = invoke("hierarchy", "show", TABLE3 / "age.csv", "--delimiter", delimiter)
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"sqlclose: error: hierarchy file {TABLE3 / 'age.csv'}: the delimiter cannot be "
                             f"{delimiter!r}, which {why} in a CSV file; give another --delimiter (such as ';' or "
                             "',')\n")


def test_a_band_of_years_wider_than_a_millennium_is_refused(tmp_path):
    """dates = ["1000000y"] labelled every date 0000-999999, though the labels are years 1 to 9999."""
    (tmp_path / "s.toml").write_text('[privacy]\nk = 2\n[quasi_identifiers]\nd = { dates = ["1000000y"] }\n')
    result = invoke("hierarchy", "show", f"{tmp_path / 's.toml'}:d", "--data", tmp_path / "none.csv")
    assert result.exit_code == 2, result.output
    assert "dates level '1000000y' is wider than 1000y: the dates rule labels years 1 to 9999 in four digits; give " \
        "a band of at most 1000 years (the top level, '*', holds every date)" in result.stderr, result.stderr


@pytest.mark.parametrize("command", ["show", "validate"])
def test_a_delimiter_given_for_a_spec_target_is_refused_not_ignored(project, command):
    """`hierarchy show spec.toml:age --delimiter ,` showed the hierarchy read with the spec's ';' and
    said nothing: a user checking a comma-separated file through the spec was told it read fine.
    Oracle: exit 2 with the reason; the same target without the option is shown (exit 0), and a
    hierarchy file takes the option as before."""
    target = ["hierarchy", command, f"{project / 'spec.toml'}:age"]
    refused = invoke(*target, "--delimiter", ",")
    assert refused.exit_code == 2, refused.output
    assert refused.stderr == ("sqlclose: error: --delimiter is for a hierarchy file: a SPEC.toml:COLUMN target's "
                              "file is read with the delimiter its spec gives (`delimiter = \",\"` beside the "
                              "column's `file`); leave --delimiter out, or set it in the spec\n")
    assert invoke(*target).exit_code == 0
    (project / "age_commas.csv").write_text((project / "age.csv").read_text().replace(";", ","))
    shown = invoke("hierarchy", command, project / "age_commas.csv", "--delimiter", ",")
    assert shown.exit_code == 0, shown.output


def test_counts_of_one_are_said_in_the_singular(tmp_path):
    """Ninety-fourth round: a one-leaf file was "valid (1 leaves, 3 levels)", shown with "level 2:
    1 values", and a header line of one label was "this first line has 1 labels"."""
    (tmp_path / "star.csv").write_text("*;*;*\n")
    (tmp_path / "one.csv").write_text("a;*\n")
    (tmp_path / "c.csv").write_text("# c\na;x;*\nb;x;*\n")
    valid = invoke("hierarchy", "validate", tmp_path / "star.csv")
    assert valid.exit_code == 0, valid.output
    assert valid.stdout.startswith(f"{tmp_path / 'star.csv'}: valid (1 leaf, 3 levels); give --data")
    shown = invoke("hierarchy", "show", tmp_path / "one.csv")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.splitlines()[0] == (f"{tmp_path / 'one.csv'}: 1 leaf, 2 levels (level 0: 1 value, "
                                            "level 1: 1 value)")
    ragged = invoke("hierarchy", "validate", tmp_path / "c.csv")
    assert ragged.exit_code == 2
    assert "ragged hierarchy — this first line has 1 label ('# c') where every other line has 3:" in ragged.output
