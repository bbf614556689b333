"""A quasi-identifier's NULL stand-in (``nulls = "value"``) beside a rule: the rule gives it a branch
of its own, written at every level below the top, so it must be no label the rule writes.

The oracles: a plain GROUP BY over the written release (the rows released under the stand-in are
the rows with no value, counted by hand), and the file system's state for a refusal.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from own_connection import rows as _rows
from table3_project import invoke

import sqlclose
from sqlclose.errors import SpecError
from sqlclose.model.spec import QuasiIdentifier
from sqlclose.model.stand_in import stand_in_rule_level

NO_AGE_ROWS = 4  # rows 0, 6, 12, 18 of the table below



def _project(folder: Path, qi: str) -> Path:
    rows = ["age,dob,zip,diagnosis"]
    for i in range(24):
        age, dob, zip_code = ("", "", "") if i % 6 == 0 else (20 + i, f"196{i % 10}-0{1 + i % 9}-15", f"476{i:02d}")
        rows.append(f"{age},{dob},{zip_code},{['flu', 'ulcer', 'colitis'][i % 4 % 3]}")
    (folder / "p.csv").write_text("\n".join(rows) + "\n")
    spec = folder / "s.toml"
    spec.write_text('others = "drop"\n[source]\npath = "p.csv"\n[output]\npath = "out/r.parquet"\n[privacy]\n'
                    f'k = 2\n[quasi_identifiers]\n{qi}\n[sensitive.diagnosis]\ndistinct_l = 2\n')
    return spec


RULE_LABELS = [
    ('age = { bands = [10, 20], nulls = "value", null_value = "20-39" }', "20-39", "bands", 2),
    ('age = { bands = [10, 20], nulls = "value", null_value = "20-29" }', "20-29", "bands", 1),
    ('dob = { dates = ["year", "10y"], nulls = "value", null_value = "1960-1969" }', "1960-1969", "dates", 2),
    ('zip = { mask = true, nulls = "value", null_value = "476**" }', "476**", "mask", 2),
]


@pytest.mark.parametrize("qi, stand_in, rule, level", RULE_LABELS, ids=[r[1] for r in RULE_LABELS])
def test_a_stand_in_the_rule_writes_as_a_label_is_refused_naming_null_value(tmp_path, qi, stand_in, rule, level):
    """`null_value = "20-39"` under bands [10, 20] was accepted: at age=2 the four rows with no age
    were released as 20-39 beside the real 20-39s (20 rows, 4 of them with no age); "20-29", a
    label one level finer, was refused as "bands rule for column 'age', row 21: '20-29' at level 1
    has two parents", naming a row of a generated table; dates' "1960-1969" was accepted too. Now
    each is refused when the spec is read, naming null_value, the column and the rule's level;
    nothing is written."""
    spec = _project(tmp_path, qi)
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    column = qi.split(" ")[0]
    assert f"quasi_identifiers.{column}: null_value = {stand_in!r} is a label the {rule} rule writes (level " \
        f"{level})" in result.output, result.output
    assert not (tmp_path / "out").exists()
    with pytest.raises(SpecError, match="is a label the"):  # when the spec is read, before any data
        sqlclose.load_spec(spec)


@pytest.mark.parametrize("stand_in", ["25-34", "unknown", "*"])
def test_a_stand_in_the_rule_never_writes_releases_the_rows_with_no_value_under_it(tmp_path, stand_in):
    """A band the rule never cuts (25-34 under widths 10 and 20), a word, or the top itself are no
    label a row with a value is released under. The oracle: at age=1 the rows released under the
    stand-in are the four rows with no age, counted by hand, and no row with an age is."""
    spec = _project(tmp_path, f'age = {{ bands = [10, 20], nulls = "value", null_value = "{stand_in}" }}')
    result = invoke("anonymize", spec, "--no-progress", "--node", "age=1")
    assert result.exit_code == 0, result.output
    release = tmp_path / "out" / "r.parquet"
    assert _rows(f"SELECT count(*) FROM '{release}' WHERE age = ?", [stand_in]) == [(NO_AGE_ROWS,)]


@pytest.mark.parametrize("rule, stand_in, level", [
    ({"bands": [5, 10], "origin": -2}, "3-7", 1),  # bands from -2: [3, 8) at width 5
    ({"bands": [0.5, 1]}, "[1.5, 2)", 1),  # the interval form, fractional widths
    ({"bands": [10, 20]}, "[20, 40)", 2),  # a DOUBLE column's form of 20-39
    ({"bands": [10, 20]}, "42", None),  # a number is a value, not a band label (a real one is refused apart)
    ({"dates": ["quarter", "year"]}, "1984-Q2", 1),
    ({"dates": True}, "1984-Q2", None),  # month, year, 5y: no quarters
    ({"dates": True}, "1984", 2),
    ({"dates": True}, "0000-0004", 3),  # the first 5-year band, years 1 to 4 (no year 0: review of the 93rd round)
    ({"dates": ["year", "10y"]}, "0000-0009", 2),
    ({"dates": True}, "0000", None),  # year 0 is no day's year: no label of the rule
    ({"mask": [2, 5]}, "4767*", None),  # one masked character: not a level of mask [2, 5]
    ({"mask": True, "length": 5}, "*****", None),  # the top: says nothing of a value
    ({"mask": True, "mask_char": "#"}, "47##", 2),
])
def test_the_levels_a_rule_writes_a_stand_in_at_worked_by_hand(rule, stand_in, level):
    """The level at which each rule writes the text as a label, worked by hand from the rule."""
    assert stand_in_rule_level(QuasiIdentifier.model_validate(rule), stand_in) == level
