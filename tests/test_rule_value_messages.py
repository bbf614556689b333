"""Values in the bands and mask rules' errors: counted, never shown.

The bands rule's errors quoted the values they refused (``column 'age' has non-numeric values
['zz9713']``, ``value '4242' is outside the declared domain``, ``'age' is text holding '36.4242'``,
``value '4242e4242' is of the order of 10^4245``), and so did the mask rule's (``value '4242' has 4
characters, but the declared length is 5``, ``found lengths [4, 5] (e.g. '4242' and …)``, ``value
'4242z' holds 'z', which is not in the declared alphabet``): on stderr, in ``--json``'s document and
in job logs, a suppressed row's value as much as any. docs/bad-input.md's rule, which the dates rule
already follows: the rule, the column and the source named, the values and their rows counted, what
to do said, no value shown. The oracle: the counts worked by hand from the rows written here, the
marker values (``zz9713``, ``4242``, ``9713``) absent from everything the command prints, exit 2,
the folder as it was; and the condition the message gives for finding the values, run by the
engine itself over the file, picks out those rows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from table3_project import invoke

import sqlclose

_VALID = [("47677", "29"), ("47602", "22"), ("47678", "27"), ("47905", "43"), ("47909", "52"), ("47906", "47")]
MARKERS = ("zz9713", "4242", "9713")

# per case: the column, its rule, the bad values (one row each), the reason the error gives, and the
# distinct values and rows refused, counted by hand from the bad values
CASES = {
    "bands-not-a-number": ("age", {"bands": [10, 20]}, ["zz9713", "zz9713", "x4242"], "that are not numbers", 2, 3),
    "bands-outside-domain": ("age", {"bands": [10, 20], "domain": [0, 120]}, ["4242", "9713", "9713"],
                             "outside the declared domain [0, 120]", 2, 3),
    "bands-not-whole": ("age", {"bands": [10, 20]}, ["36.4242", "36.4242"], "that is not a whole number", 1, 2),
    "bands-one-not-a-number": ("age", {"bands": [10, 20]}, ["zz9713", "zz9713"], "that is not a number, and", 1, 2),
    "bands-beyond-the-orders": ("age", {"bands": [10, 20]}, ["4242e4242"], "beyond the orders of magnitude", 1, 1),
    "mask-declared-length": ("code", {"mask": True, "length": 5}, ["4242", "4242", "9713"],
                             "whose length is not the declared 5", 2, 3),
    "mask-lengths": ("code", {"mask": True}, ["4242", "971300"],
                     "of another length than most rows' codes, 5 characters", 2, 2),
    "mask-alphabet": ("code", {"mask": True, "alphabet": "0123456789"}, ["4242z", "zz971", "zz971"],
                      "with a character outside the declared alphabet '0123456789'", 2, 3),
}
# per case: the counts above as the error words them, by hand
COUNTED = {"bands-not-a-number": "2 values (in 3 rows)", "bands-outside-domain": "2 values (in 3 rows)",
           "bands-not-whole": "1 value (in 2 rows)",
           "bands-one-not-a-number": "1 value (in 2 rows)", "bands-beyond-the-orders": "1 value (in 1 row)",
           "mask-declared-length": "2 values (in 3 rows)", "mask-lengths": "2 values (in 2 rows)",
           "mask-alphabet": "2 values (in 3 rows)"}
_OTHER_RULE = {"age": {"bands": [10, 20]}, "code": {"mask": True}}


def _toml_value(rule: dict) -> str:
    return "{ " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in rule.items()) + " }"


def project(folder: Path, case: str) -> Path:
    """``people.csv`` (code, age, s): the valid rows, then a row per bad value in the case's column
    (the other column valid); and ``spec.toml`` releasing it to ``out/release.parquet``."""
    column, rule, bad, *_ = CASES[case]
    rows = list(_VALID)
    for i, value in enumerate(bad):
        code, age = _VALID[i % len(_VALID)]
        rows.append((value, age) if column == "code" else (code, value))
    (folder / "people.csv").write_text("code,age,s\n" + "".join(f"{c},{a},{'xy'[i % 2]}\n"
                                                                for i, (c, a) in enumerate(rows)), encoding="utf-8")
    rules = {**_OTHER_RULE, column: rule}
    (folder / "spec.toml").write_text(
        '[source]\npath = "people.csv"\n[output]\npath = "out/release.parquet"\n[privacy]\nk = 2\n'
        f"[quasi_identifiers]\ncode = {_toml_value(rules['code'])}\nage = {_toml_value(rules['age'])}\n"
        "[sensitive.s]\ndistinct_l = 2\n", encoding="utf-8")
    return folder / "spec.toml"


def told(case: str, source: Path) -> str:
    """The start of the error, written by hand from the case."""
    column, rule, _, reason, *_ = CASES[case]
    kind = "bands" if "bands" in rule else "mask"
    return f"{kind} rule for column {column!r} in {source}: the column holds {COUNTED[case]} {reason}"


def assert_no_marker(text: str, source: Path) -> None:
    """No bad value in ``text`` (the source's path taken out first: a folder's name may hold digits)."""
    shown = text.replace(str(source), "<source>")
    for marker in MARKERS:
        assert marker not in shown, shown


@pytest.mark.parametrize("command", ["anonymize", "anonymize-json", "hierarchy-show", "hierarchy-validate"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_rules_refusal_counts_the_values_and_shows_none(tmp_path, case, command):
    spec = project(tmp_path, case)
    column = CASES[case][0]
    before = sorted(p.name for p in tmp_path.iterdir())
    args = {"anonymize": ["anonymize", spec, "--no-progress"],
            "anonymize-json": ["anonymize", spec, "--no-progress", "--json"],
            "hierarchy-show": ["hierarchy", "show", f"{spec}:{column}"],
            "hierarchy-validate": ["hierarchy", "validate", f"{spec}:{column}"]}[command]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert message.startswith("sqlclose: error: " + told(case, tmp_path / "people.csv")), message
    assert "(not shown: an error names no data value)" in message
    if command == "anonymize-json":
        assert json.loads(result.stdout)["exit_code"] == 2
    assert_no_marker(result.stdout + result.stderr, tmp_path / "people.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, not even out/


@pytest.mark.parametrize("case", sorted(c for c in CASES if c not in ("bands-not-whole", "bands-beyond-the-orders")))
def test_the_condition_a_rules_refusal_gives_finds_the_values_it_counts(tmp_path, case):
    """The condition the message gives, run by DuckDB over the CSV as sqlclose reads it (text),
    finds the rows and values the message counts (counted by hand)."""
    spec = project(tmp_path, case)
    *_, values, rows = CASES[case]
    result = invoke("anonymize", spec, "--no-progress")
    condition = re.search(r"they are the rows WHERE (.*)$", result.stderr.strip()).group(1)
    column = CASES[case][0]
    found = duckdb.sql(f"SELECT COUNT(*), COUNT(DISTINCT \"{column}\") FROM read_csv('{tmp_path / 'people.csv'}', "
                       f"all_varchar = true) WHERE {condition}").fetchall()[0]
    assert found == (rows, values), condition


@pytest.mark.spark
@pytest.mark.parametrize("case", ["bands-not-a-number", "bands-outside-domain", "mask-alphabet", "mask-lengths"])
def test_a_rules_refusal_on_spark_counts_the_values_and_gives_sparks_condition(tmp_path, capfd, spark_session,
                                                                               case):
    """The same refusals on Spark (rules are built from the values the engine gives, in one path):
    the counts by hand, no marker in the error or anything printed, and the condition in Spark's SQL,
    which Spark runs over the CSV read as text to find the rows counted."""
    from sqlclose.engine import SparkEngine

    spec = project(tmp_path, case)
    *_, values, rows = CASES[case]
    capfd.readouterr()
    with pytest.raises(sqlclose.errors.InputError) as refused:
        sqlclose.anonymize(None, sqlclose.load_spec(spec), engine=SparkEngine(spark_session))
    message = str(refused.value)
    assert message.startswith(told(case, tmp_path / "people.csv")), message
    out, err = capfd.readouterr()
    assert_no_marker(message + out + err, tmp_path / "people.csv")
    condition = re.search(r"they are the rows WHERE (.*)$", message).group(1)
    assert "`" in condition and '"' not in condition, condition  # Spark quotes names with backticks
    spark_session.read.csv(str(tmp_path / "people.csv"), header=True).createOrReplaceTempView("people")
    column = CASES[case][0]
    found = spark_session.sql(f"SELECT COUNT(*), COUNT(DISTINCT `{column}`) FROM people WHERE {condition}").first()
    assert tuple(found) == (rows, values), condition
    assert not (tmp_path / "out").exists()


def test_on_the_warehouse_path_the_refusal_counts_the_histograms_rows_and_speaks_its_dialect(tmp_path):
    """The warehouse path builds the rules from a histogram (rows counted per combination): the rows
    refused are the counts summed (3 + 2, by hand), and the condition is in the warehouse's SQL, the
    spec's ``dialect = "postgres"`` (its regular-expression match ``~``, written by hand), for the
    user runs it there. No release.sql is written."""
    (tmp_path / "spec.toml").write_text(
        '[source]\nformat = "warehouse"\ntable = "people"\ndialect = "postgres"\n[output]\npath = "out/release.sql"\n'
        '[privacy]\nk = 2\n[quasi_identifiers]\ncode = { mask = true, alphabet = "0123456789" }\n'
        "[sensitive.s]\ndistinct_l = 2\n", encoding="utf-8")
    (tmp_path / "hist.csv").write_text("code,s,__sqlclose_count\n4242z,x,3\nzz971,y,2\n47677,x,4\n47602,y,4\n",
                                       encoding="utf-8")
    result = invoke("anonymize", "--histogram", tmp_path / "hist.csv", tmp_path / "spec.toml", "--no-progress")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "mask rule for column 'code' in " in message and "the column holds 2 values (in 5 rows) with a " \
        "character outside the declared alphabet '0123456789'" in message, message
    assert message.endswith("they are the rows WHERE NOT \"code\" ~ '^[0123456789]*$'"), message
    assert_no_marker(result.output, tmp_path / "hist.csv")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("values", "rows", "expected"), [
    (1, 1, "bands rule for column 'age' in people.csv: the column holds 1 value (in 1 row) that is not a number "
           "(not shown: an error names no data value)"),
    (1, 4, "bands rule for column 'age' in people.csv: the column holds 1 value (in 4 rows) that is not a number "
           "(not shown: an error names no data value)"),
    (2, 3, "bands rule for column 'age' in people.csv: the column holds 2 values (in 3 rows) that are not numbers "
           "(not shown: an error names no data value)"),
    (1, None, "bands rule for column 'age' in people.csv: the column holds 1 value that is not a number "
              "(not shown: an error names no data value)"),
    (5, None, "bands rule for column 'age' in people.csv: the column holds 5 values that are not numbers "
              "(not shown: an error names no data value)"),
])
def test_a_rules_refusal_counts_one_value_and_one_row_in_the_singular(values, rows, expected):
    """The refusal said "1 value(s) (in 1 row(s))": a count of 1 takes the singular, any other the
    plural, for the values and for their rows alike. The oracle: each message written out by hand."""
    from sqlclose.errors import HierarchyError
    from sqlclose.model.refused_values import Refusals, Refused, ValuesAt

    refusals = Refusals()
    for position in range(values):
        refusals.add(Refused("that are not numbers", one="that is not a number"), position)
    per_value = None if rows is None else [rows - values + 1] + [1] * (values - 1)  # ``rows`` over the values
    with pytest.raises(HierarchyError) as raised:
        refusals.raise_first("bands rule for column 'age'", ValuesAt(source="people.csv", rows=per_value))
    assert str(raised.value) == expected


@pytest.mark.parametrize("kind, inside, outside, domain", [
    ("DECIMAL(38, 20)", "119.5", "120.00000000000000000001", [0, 120]),
    ("BIGINT", "9007199254740992", "9007199254740993", [0, 9007199254740992]),
    ("BIGINT", "0", "-1", [0, 9007199254740992]),
    # a bound of more decimals than the column's type: compared widened, a DECIMAL(38, s) overflowed
    ("DECIMAL(38, 0)", "1", "99999999999999999999999999999999999999", [0.5, 1e37]),
    ("DECIMAL(38, 10)", "1", "1000000000000000000000000000", [0.00000000001, 1e26]),
    ("UBIGINT", "1", "18446744073709551615", [0.5, 18446744073709549568]),
    # floats: the check compares a value's shortest text (120.1, 0.1), which a bound between two floats
    # splits from the float's own value (120.1 as a FLOAT is 120.0999985; 0.1 is 0.100000001)
    ("FLOAT", "119.5", "120.1", [0, 120.09999999]),
    ("FLOAT", "1", "0.1", [0.10000000149, 1]),
    ("DOUBLE", "1", "18446744073709551616", [0.5, 18446744073709551616]),  # 2**64, written 1.8446744073709552e19
], ids=["decimal-past-the-top", "bigint-past-2-to-the-53", "bigint-below", "decimal-38-0-finer-bound",
        "decimal-38-10-finer-bound", "ubigint", "float-past-a-bound-between-floats", "float-below",
        "double-written-past-the-bound"])
def test_the_domain_condition_finds_a_value_a_rounding_past_its_edge(tmp_path, kind, inside, outside, domain):
    """A value a rounding past the domain's edge is refused (the check is exact decimal arithmetic on
    each value's text), and the condition the error gives found none of its rows: it read the column as
    DOUBLE, in which 120.00000000000000000001 is 120 and 2**53 + 1 is 2**53 (review of the ninety-third
    round). A number column is compared in its own type, the bounds rounded inwards to it (a float's: to
    the last float whose text is within). Oracle: DuckDB runs the condition over the file written here."""
    data = tmp_path / "people.parquet"
    rows = [(i, inside) for i in range(4)] + [(4, outside), (5, outside)]
    values = ", ".join(f"({i}, CAST('{v}' AS {kind}))" for i, v in rows)
    duckdb.sql(f"COPY (SELECT * FROM (VALUES {values}) t(id, c)) TO '{data}'")
    spec = tmp_path / "spec.toml"
    spec.write_text(f'others = "keep"\n[source]\npath = "{data}"\n[output]\npath = "{tmp_path / "out.parquet"}"\n'
                    f'[privacy]\nk = 2\n[quasi_identifiers]\nc = {{ bands = [5, 10], domain = {domain} }}\n')
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    assert "holds 1 value (in 2 rows) outside the declared domain" in result.stderr, result.stderr
    condition = re.search(r"they are the rows WHERE (.*)$", result.stderr.strip()).group(1)
    found = duckdb.sql(f"SELECT list(id ORDER BY id) FROM read_parquet('{data}') WHERE {condition}").fetchall()
    assert found == [([4, 5],)], condition


# per case: the mask's declaration, and the distinct values and rows it refuses among _NUMBER_ZIPS, by hand
_NUMBER_MASKS = {"length": ('length = 5', 1, 1),  # 1234 alone has 4 digits
                 "alphabet": ('alphabet = "1234"', 2, 3)}  # 12345 (twice) and 98765 hold a 5, 6, 7, 8 or 9
_NUMBER_ZIPS = [12345, 12345, 1234, 98765]


@pytest.mark.parametrize("column_type", ["INTEGER", "BIGINT", "DECIMAL(5, 0)"])
@pytest.mark.parametrize("case", sorted(_NUMBER_MASKS))
def test_a_masks_condition_over_a_number_column_runs_and_finds_the_values_it_counts(tmp_path, case, column_type):
    """Review of the ninety-sixth round: over an INTEGER (or DECIMAL) ZIP code the condition was
    ``LENGTH("zip") <> 5`` or ``NOT REGEXP_MATCHES("zip", …)``, which DuckDB refuses to run (Binder
    Error: no length(INTEGER)). The mask reads such a column as its text, and so must the condition.
    The oracle: the counts by hand from the four codes, the count the message states, and a plain
    ``SELECT count(*) … WHERE <condition>`` over the file run by DuckDB."""
    declared, values, rows = _NUMBER_MASKS[case]
    source = tmp_path / "zips.parquet"
    duckdb.sql(f"SELECT CAST(z AS {column_type}) AS zip, s FROM (VALUES "
               + ", ".join(f"({z}, '{'ab'[i % 2]}')" for i, z in enumerate(_NUMBER_ZIPS))
               + ") t(z, s)").write_parquet(str(source))
    (tmp_path / "spec.toml").write_text(
        f'others = "keep"\n[source]\npath = "zips.parquet"\n[output]\npath = "out/r.csv"\n[privacy]\nk = 2\n'
        f"[quasi_identifiers]\nzip = {{ mask = true, {declared} }}\n", encoding="utf-8")
    result = invoke("anonymize", tmp_path / "spec.toml", "--no-progress")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    counted = f"{values} value{'s' if values > 1 else ''} (in {rows} row{'s' if rows > 1 else ''})"
    assert f"the column holds {counted} " in message, message
    condition = re.search(r"they are the rows WHERE (.*)$", message).group(1)
    found = duckdb.sql(f"SELECT count(*), count(DISTINCT zip) FROM read_parquet('{source}') WHERE {condition}")
    assert found.fetchall() == [(rows, values)], condition
