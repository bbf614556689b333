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
from table3_project import invoke, table3_project

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
    table3_project(tmp_path)
    table = (tmp_path / "table3.csv").read_text()
    assert table.count(",52,") == 1
    (tmp_path / "table3.csv").write_text(table.replace(",52,", ",87,"))
    lines = (tmp_path / "age.csv").read_text().splitlines(keepends=True)
    (tmp_path / "age.csv").write_text("".join(line for line in lines if not line.startswith("52;")))
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
