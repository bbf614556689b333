"""``check --against --spec`` holds a bands or dates column's level to the file's labels, as it does a
file's, tree's or mask's (sqlclose/audit/rule_levels.py). Before the eighty-sixth round such a
level was left unchecked with a note ("built by a rule from the input's values"): a report edited
to say a column was generalized further than the file shows passed.

The oracle is the level each release was forced to (``--node``): its labels are of that level and
of no other, so a report edited to claim any other level is refused, the message naming the level
the labels are of; the report as written passes, and no note says the column went unchecked.
"""

from __future__ import annotations

import datetime
import json
import random
from pathlib import Path

import pytest
from table3_project import invoke

CASES = {
    # name: (column, its values, the rule as TOML, the rule's levels)
    "whole bands": ("x", lambda r: str(r.randrange(-23, 37)), "bands = [5, 10, 20], origin = 3", 5),
    "fractional bands": ("f", lambda r: f"{r.randrange(-30, 31) / 10:.1f}", "bands = [0.5, 1.5], origin = 0.25", 4),
    "dates": ("d", lambda r: str(datetime.date(2013, 1, 1) + datetime.timedelta(days=r.randrange(0, 4000, 29))),
              'dates = ["quarter", "year", "10y"]', 5),
    "default dates": ("d", lambda r: str(datetime.date(2016, 3, 1) + datetime.timedelta(days=r.randrange(0, 3000, 31))),
                      "dates = true", 5),
}


def _project(folder: Path, case: str) -> Path:
    column, value, rule, _ = CASES[case]
    rng = random.Random(7)
    rows = "".join(f"{value(rng)},{rng.choice('pqrs')}\n" for _ in range(3000))
    (folder / "in.csv").write_text(f"{column},s\n{rows}")
    spec = folder / "spec.toml"
    spec.write_text(f'[source]\npath = "in.csv"\n[output]\npath = "out/r.parquet"\noverwrite = true\n'
                    f'[privacy]\nk = 2\n[quasi_identifiers]\n{column} = {{ {rule} }}\n[sensitive.s]\nt = 1.0\n')
    return spec


@pytest.mark.parametrize("case", list(CASES))
def test_a_rule_columns_level_is_held_to_the_files_labels(tmp_path, case):
    column, _, _, levels = CASES[case]
    spec = _project(tmp_path, case)
    release, report = tmp_path / "out" / "r.parquet", tmp_path / "out" / "r.parquet.report.json"
    for level in range(levels):
        result = invoke("anonymize", spec, "-q", "--node", f"{column}={level}")
        assert result.exit_code == 0, (level, result.output)
        as_written = invoke("check", release, "--against", report, "--spec", spec)
        assert as_written.exit_code == 0, (level, as_written.output)
        assert f"column {column!r} was not checked" not in as_written.output, as_written.output
        doc = json.loads(report.read_text())
        for claimed in set(range(levels)) - {level}:
            edited = json.loads(json.dumps(doc))
            edited["node"][column] = edited["generalization"][column]["level"] = claimed
            edited["generalization"][column]["at_top"] = claimed == levels - 1
            (tmp_path / "edited.json").write_text(json.dumps(edited))
            result = invoke("check", release, "--against", tmp_path / "edited.json", "--spec", spec)
            assert result.exit_code == 4, (level, claimed, result.output)
            assert (f"generalization.{column}.level (node.{column}): the report says {claimed}, " in result.output
                    and f"(the file's labels are those of level {level})" in result.output), (level, claimed,
                                                                                              result.output)


def test_a_null_stand_in_is_of_every_level_below_the_top(tmp_path):
    """``nulls = "value"``: the stand-in is a label of every level but the top, as in a mask rule."""
    rng = random.Random(3)
    rows = "".join(f"{'' if i % 10 == 0 else rng.randrange(0, 40)},{rng.choice('pq')}\n" for i in range(2000))
    (tmp_path / "in.csv").write_text(f"x,s\n{rows}")
    spec = tmp_path / "spec.toml"
    spec.write_text('[source]\npath = "in.csv"\n[output]\npath = "out/r.parquet"\noverwrite = true\n'
                    '[privacy]\nk = 2\n[quasi_identifiers]\n'
                    'x = { bands = [10], nulls = "value", null_value = "none" }\n'
                    '[sensitive.s]\nt = 1.0\n')
    release, report = tmp_path / "out" / "r.parquet", tmp_path / "out" / "r.parquet.report.json"
    assert invoke("anonymize", spec, "-q", "--node", "x=1").exit_code == 0
    doc = json.loads(report.read_text())
    assert "none" in doc["generalization"]["x"]["labels"]  # the stand-in is released at level 1
    result = invoke("check", release, "--against", report, "--spec", spec)
    assert result.exit_code == 0 and "'x' was not checked" not in result.output, result.output
    doc["node"]["x"] = doc["generalization"]["x"]["level"] = 0
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    result = invoke("check", release, "--against", tmp_path / "edited.json", "--spec", spec)
    assert result.exit_code == 4 and "the file's labels are those of level 1" in result.output, result.output


def test_band_edges_past_the_checks_arithmetic_leave_the_level_unchecked_and_say_so(tmp_path):
    """Bands cut numbers up to 10^4000 exactly; the check compares edges as HUGEINTs (38 digits).
    A label it cannot judge is not called wrong: the column's level goes unchecked, with a note."""
    rng = random.Random(5)
    rows = "".join(f"{rng.randrange(1, 9)}{'0' * 40},{rng.choice('pq')}\n" for _ in range(400))
    (tmp_path / "in.csv").write_text(f"x,s\n{rows}")
    spec = tmp_path / "spec.toml"
    spec.write_text('[source]\npath = "in.csv"\n[output]\npath = "out/r.parquet"\noverwrite = true\n'
                    f'[privacy]\nk = 2\n[quasi_identifiers]\nx = {{ bands = [1{"0" * 40}] }}\n'
                    '[sensitive.s]\nt = 1.0\n')
    assert invoke("anonymize", spec, "-q", "--node", "x=1").exit_code == 0
    release, report = tmp_path / "out" / "r.parquet", tmp_path / "out" / "r.parquet.report.json"
    result = invoke("check", release, "--against", report, "--spec", spec)
    assert result.exit_code == 0, result.output
    assert "the level of column 'x' was not checked against the file's labels: some of its band labels" \
        in result.output


def test_a_gaa_releases_classes_per_level_are_held_to_the_rules_labels(tmp_path):
    """GAA puts a column's classes at several levels: each label's level is told by its shape, and
    a report moving one class to another level of a bands or a dates column is refused."""
    rng = random.Random(11)
    day = datetime.date(2010, 1, 1)
    rows = "".join(f"{rng.randrange(0, 60)},{day + datetime.timedelta(days=rng.randrange(0, 3000, 45))},"
                   f"{rng.choice('pqr')}\n" for _ in range(1500))
    (tmp_path / "in.csv").write_text(f"x,d,s\n{rows}")
    spec = tmp_path / "spec.toml"
    spec.write_text('[source]\npath = "in.csv"\n[output]\npath = "out/r.parquet"\n[search]\nalgorithm = "gaa"\n'
                    '[privacy]\nk = 4\n[quasi_identifiers]\nx = { bands = [5, 20] }\nd = { dates = true }\n'
                    '[sensitive.s]\nt = 1.0\n')
    assert invoke("anonymize", spec, "-q").exit_code == 0
    release, report = tmp_path / "out" / "r.parquet", tmp_path / "out" / "r.parquet.report.json"
    result = invoke("check", release, "--against", report, "--spec", spec)
    assert result.exit_code == 0 and "was not checked" not in result.output, result.output
    doc = json.loads(report.read_text())
    for column in ("x", "d"):
        per_level = doc["generalization"][column]["classes_per_level"]
        assert len(per_level) > 1, per_level  # the case: classes at several levels
        edited = json.loads(json.dumps(doc))
        moved = edited["generalization"][column]["classes_per_level"]
        src, dst = sorted(per_level)[0], sorted(per_level)[1]
        moved[src], moved[dst] = moved[src] - 1, moved[dst] + 1
        (tmp_path / "edited.json").write_text(json.dumps(edited))
        result = invoke("check", release, "--against", tmp_path / "edited.json", "--spec", spec)
        assert result.exit_code == 4, result.output
        assert f"generalization.{column}.classes_per_level.{src}: the report says {per_level[src] - 1}, the file's " \
               f"labels put {per_level[src]} class(es) at that level" in result.output, result.output


def test_iso_text_with_a_lower_case_t_is_a_day_as_the_rule_reads_it(tmp_path):
    """Review h3 of the eighty-sixth round: the dates rule reads `2020-01-01t08:00` (ISO 8601 allows
    the lower-case t) but the check's day shape took only `T` or a space, and called the genuine
    level-0 release wrong."""
    days = [f"2020-{m:02d}-{d:02d}t08:00" for m in range(1, 13) for d in (1, 15)]
    (tmp_path / "in.csv").write_text("x,s\n" + "".join(f"{day},{s}\n" for day in days for s in "pq"))
    spec = tmp_path / "spec.toml"
    spec.write_text('[source]\npath = "in.csv"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\n'
                    '[quasi_identifiers]\nx = { dates = ["month", "year"] }\n[sensitive.s]\nt = 1.0\n')
    assert invoke("anonymize", spec, "-q", "--node", "x=0").exit_code == 0
    release, report = tmp_path / "out" / "r.parquet", tmp_path / "out" / "r.parquet.report.json"
    result = invoke("check", release, "--against", report, "--spec", spec)
    assert result.exit_code == 0 and "'x' was not checked" not in result.output, result.output


def test_a_suppressed_record_counts_as_generalized_only_where_the_root_is_above_the_leaves(tmp_path):
    """Review h3 of the eighty-sixth round: column a's hierarchy has one level (its root is its
    leaf), so a suppressed record is at a's root but not generalized there. Both columns at level 0,
    the one record of b = 2 suppressed: by hand, 1 of 16 (record, column) values generalized (the
    suppressed record's b) = 6.25 %, and 9 at the root (7 kept a's, the suppressed record's two) =
    56.25 %. The check counted the suppressed record's a as generalized too (12.5 %) and refused
    the genuine release."""
    rows = [("x", 1, f"s{i}") for i in range(1, 8)] + [("x", 2, "s9")]
    (tmp_path / "data.csv").write_text("a,b,s\n" + "".join(f"{a},{b},{s}\n" for a, b, s in rows))
    (tmp_path / "a.csv").write_text("x\n")
    (tmp_path / "b.csv").write_text("1;*\n2;*\n")
    spec = tmp_path / "spec.toml"
    spec.write_text('others = "keep"\n[source]\npath = "data.csv"\n[output]\npath = "out/r.parquet"\n'
                    '[privacy]\nk = 3\nsuppression = 0.2\n[quasi_identifiers]\na = { file = "a.csv" }\n'
                    'b = { file = "b.csv" }\n')
    assert invoke("anonymize", spec, "-q", "--node", "a=0,b=0").exit_code == 0
    release, report = tmp_path / "out" / "r.parquet", tmp_path / "out" / "r.parquet.report.json"
    doc = json.loads(report.read_text())
    assert (doc["suppressed_rows"], doc["utility"]["generalized_percent"], doc["utility"]["root_percent"]) == (
        1, 6.25, 56.25)
    result = invoke("check", release, "--against", report, "--spec", spec)
    assert result.exit_code == 0, result.output
