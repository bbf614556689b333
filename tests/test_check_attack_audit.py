"""The attack audit of ``sqlclose check`` (homogeneity, skewness, similarity): the audit review.

- A sensitive value its hierarchy lacks, in a column judged by the ordered distance, is counted and
  never shown (exit 2), as under the other distances and in ``anonymize``: it stopped as
  ``internal error: KeyError: '11000'`` (exit 1), the value in the message.
- ``--skew`` and ``--similarity-level`` (``skew``, ``similarity_level``, ``top``, ``k`` in Python):
  a value out of range, or no number, is one line naming the option as the caller gave it; NaN
  silently turned the skewness audit off, and the similarity level was judged only after the
  classes were counted.
- A similarity level whose one label holds every leaf reveals nothing, as the root's.
- A missing column of a Parquet file lists its columns (its names are a schema, never a row).
- The skewness attack lists each exposed class with its own ratio, the most skewed first; the
  text prints the ratio as given and says whose share it compares to; the HTML table says the
  ratio and the level its figures were measured at.

Oracles: the rows written here, counted by hand or by a plain DuckDB GROUP BY; exact messages.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import sqlclose
from sqlclose import DataError, InputError
from sqlclose.audit import html as audit_html
from sqlclose.audit import tables
from sqlclose.cli import main
from sqlclose.model.attributes import SensitiveAttribute
from sqlclose.model.hierarchy import Hierarchy

SALARIES = [("a", 3000), ("a", 4000), ("a", 5000), ("b", 6000), ("b", 9000), ("c", 10000), ("c", 11000),
            ("c", 11000)]
FULL = ["3000;low;*", "4000;low;*", "5000;low;*", "6000;mid;*", "9000;high;*", "10000;high;*", "11000;high;*"]
SPEC = """[source]
path = "t.parquet"
[output]
path = "{out}"
[privacy]
k = 2
[quasi_identifiers]
q = {{ tree = {{ all = ["a", "b", "c"] }} }}
[sensitive.salary]
distance = "ordered"
t = 0.9
hierarchy = "{hierarchy}"
"""


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_refused(result, *fragments: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stderr.startswith("sqlclose: error:") and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in " ".join(result.stderr.split()), (fragment, result.stderr)


def _salaries(folder: Path) -> None:
    """t.parquet (salary an INTEGER column), its full hierarchy and one lacking 11000 (in 2 rows)."""
    pq.write_table(pa.table({"q": [r[0] for r in SALARIES], "salary": pa.array([r[1] for r in SALARIES],
                                                                               pa.int32())}), folder / "t.parquet")
    (folder / "full.csv").write_text("\n".join(FULL) + "\n")
    (folder / "missing.csv").write_text("\n".join(line for line in FULL if not line.startswith("11000")) + "\n")
    for name, hierarchy in (("full", "full.csv"), ("missing", "missing.csv")):
        (folder / f"{name}.toml").write_text(SPEC.format(out=f"out_{name}.parquet", hierarchy=hierarchy))


@pytest.mark.parametrize("route", ["flags", "spec", "report-html", "python"])
def test_an_ordered_column_off_its_hierarchy_is_counted_never_shown(tmp_path, monkeypatch, route):
    """The oracle: SALARIES by hand, 11000 (one value, 2 rows) missing from missing.csv."""
    _salaries(tmp_path)
    monkeypatch.chdir(tmp_path)
    said = "holds 1 value (in 2 rows) that is not a leaf of its hierarchy"
    if route == "python":
        with pytest.raises(DataError) as refused:
            sqlclose.check("t.parquet", ["q"], {"salary": {"distance": "ordered", "hierarchy": "missing.csv"}})
        assert said in str(refused.value) and "11000" not in str(refused.value)
        return
    if route == "flags":
        result = cli("check", "t.parquet", "--qi", "q", "--sensitive", "salary", "--hierarchy",
                     "salary=missing.csv", "--distance", "ordered")
    elif route == "spec":
        result = cli("check", "t.parquet", "--spec", "missing.toml")
    else:
        assert cli("anonymize", "full.toml", "--quiet").exit_code == 0
        result = cli("report", "out_full.parquet.report.json", "--html", "page.html", "--spec", "missing.toml")
    checked = tmp_path / "out_full.parquet" if route == "report-html" else "t.parquet"
    assert_refused(result, f"column 'salary' in {checked} {said}")
    assert "11000" not in result.output


def test_the_similarity_lookup_refuses_a_value_off_the_hierarchy_unnamed():
    """The attack's own lookup (behind check's count): a domain value the hierarchy lacks is bad
    input, counted, never shown."""
    hierarchy = Hierarchy.from_rows([["x", "g", "*"], ["y", "g", "*"]], "h.csv")
    sa = SensitiveAttribute("s", None, ["x", "SECRET"], hierarchy)
    with pytest.raises(DataError) as refused:
        tables.Similarity(sa, 1)
    assert "holds 1 value that is not a leaf of its hierarchy h.csv" in str(refused.value)
    assert "SECRET" not in str(refused.value)


@pytest.mark.parametrize(("leaf", "refused"), [("07", True), ("7", False)])
def test_an_ordered_csv_column_is_looked_up_by_its_number_as_anonymize_does(tmp_path, monkeypatch, leaf, refused):
    """An ordered CSV column is read as whole numbers: "07" is 7, so a leaf "07" lacks it and a leaf
    "7" holds it, for check as for anonymize. The oracle: by hand, class a holds 7 and 8 (both
    "lo": 2 records learn it), class b 9 and 7 (two groups)."""
    monkeypatch.chdir(tmp_path)
    Path("t.csv").write_text("q,s\na,07\na,8\nb,9\nb,07\n")
    Path("h.csv").write_text(f"{leaf};lo;*\n8;lo;*\n9;hi;*\n")
    Path("spec.toml").write_text('[source]\npath = "t.csv"\n[output]\npath = "out.csv"\n[privacy]\nk = 2\n'
                                 '[quasi_identifiers]\nq = { tree = { all = ["a", "b"] } }\n[sensitive.s]\n'
                                 'distance = "ordered"\nt = 0.9\nhierarchy = "h.csv"\n')
    checked = cli("check", "t.csv", "--qi", "q", "--sensitive", "s", "--hierarchy", "s=h.csv", "--distance",
                  "ordered", "--json")
    anonymized = cli("anonymize", "spec.toml", "--quiet")
    if refused:
        assert_refused(checked, "holds 1 value (in 2 rows) that is not a leaf of its hierarchy h.csv")
        assert anonymized.exit_code == 2
        return
    assert checked.exit_code == 0 and anonymized.exit_code == 0, (checked.output, anonymized.output)
    similarity = json.loads(checked.stdout)["sensitive"]["s"]["attacks"]["similarity"]
    assert {k: similarity[k] for k in ("classes", "records", "records_by_group")} == {
        "classes": 1, "records": 2, "records_by_group": {"lo": 2}}


@pytest.fixture
def hand_csv(tmp_path):
    path = tmp_path / "hand.csv"
    path.write_text("g,s\na,x\na,x\na,y\nb,x\nb,y\nb,z\n")
    return path


@pytest.mark.parametrize(("given", "past"), [("nan", False), ("inf", False), ("1e400", True), ("-inf", False)])
def test_cli_skew_must_be_a_finite_number(hand_csv, given, past):
    """NaN compared false with every share: the skewness audit reported 0 records, and --json wrote
    a bare NaN (invalid JSON). The oracle: the option as typed — 1e400 was told as "got inf", a value
    nobody typed (the ninety-sixth round)."""
    result = cli("check", hand_csv, "--qi", "g", "--sensitive", "s", "--skew", given, "--json")
    assert_refused(result)
    beyond = " (beyond what a float holds, ±1.8e308)" if past else ""
    assert f"Invalid value for '--skew': {given} is not a finite number{beyond}: give a finite number" \
        in result.stderr, result.stderr


def test_cli_skew_must_be_above_one(hand_csv):
    result = cli("check", hand_csv, "--qi", "g", "--sensitive", "s", "--skew", "1", "--json")
    assert_refused(result)
    assert result.stderr == ("sqlclose: error: --skew: the skewness ratio must be a finite number above 1 (got "
                             "1.0): a share equal to the table's is no attack\n")


@pytest.mark.parametrize(("keyword", "value", "message"), [
    ("skew", float("nan"), "skew: the skewness ratio must be a finite number above 1 (got nan): a share equal to "
                           "the table's is no attack"),
    ("skew", float("inf"), "skew: the skewness ratio must be a finite number above 1 (got inf): a share equal to "
                           "the table's is no attack"),
    ("skew", "3", "skew: must be a number (got '3')"),
    ("skew", True, "skew: must be a number (got True)"),
    ("similarity_level", 1.5, "similarity_level: must be a whole number (got 1.5)"),
    ("similarity_level", True, "similarity_level: must be a whole number (got True)"),
    ("similarity_level", "1", "similarity_level: must be a whole number (got '1')"),
    ("similarity_level", 0, "similarity_level: must be at least 1 (got 0)"),
    ("top", 2.5, "top: must be a whole number (got 2.5)"),
    ("k", True, "k: must be a whole number (got True)"),
])
def test_python_audit_options_of_the_wrong_type_or_range_are_input_errors(hand_csv, tmp_path, keyword, value,
                                                                           message):
    """IndexError and TypeError reached the caller; NaN turned the skewness audit off."""
    (tmp_path / "h.csv").write_text("x;g;*\ny;g;*\nz;h;*\n")
    with pytest.raises(InputError) as refused:
        sqlclose.check(hand_csv, ["g"], {"s": {"hierarchy": str(tmp_path / "h.csv")}}, **{keyword: value})
    assert str(refused.value) == message
    # a caller can tell a bad option from bad data by the class the package exports, and by its parts
    assert isinstance(refused.value, sqlclose.OptionError)
    assert (refused.value.option, f"{keyword}: {refused.value.problem}") == (keyword, message)


def _two_hierarchies(folder: Path) -> Path:
    (folder / "t.csv").write_text("q,s,t\nx,v1,a\nx,v2,b\ny,v3,a\ny,v4,a\n")
    (folder / "tall.csv").write_text("v1;g1;G;*\nv2;g1;G;*\nv3;g2;G;*\nv4;g2;G;*\n")
    (folder / "flat.csv").write_text("a;*\nb;*\n")
    return folder / "t.csv"


def test_cli_similarity_level_out_of_range_names_the_option_and_what_to_do(tmp_path):
    """Two hierarchies of heights 3 and 1: level 2 is outside the flat one's 1..1."""
    path = _two_hierarchies(tmp_path)
    result = cli("check", path, "--qi", "q", "--sensitive", "s,t", "--hierarchy", f"s={tmp_path / 'tall.csv'}",
                 "--hierarchy", f"t={tmp_path / 'flat.csv'}", "--similarity-level", 2)
    assert_refused(result)
    assert result.stderr == (f"sqlclose: error: --similarity-level: 2 is outside 1..1 for column 't' (hierarchy "
                             f"{tmp_path / 'flat.csv'}): give a level every sensitive column's hierarchy has (1..1), "
                             "or audit the columns in separate runs, each with a level its hierarchy has\n")
    alone = cli("check", path, "--qi", "q", "--sensitive", "s", "--hierarchy", f"s={tmp_path / 'tall.csv'}",
                "--similarity-level", 4)
    assert alone.stderr == (f"sqlclose: error: --similarity-level: 4 is outside 1..3 for column 's' (hierarchy "
                            f"{tmp_path / 'tall.csv'}): give a level in 1..3\n")


def test_similarity_level_is_judged_before_the_classes_are_counted(tmp_path, monkeypatch):
    """On a 700 k-class table the level was refused after the class GROUP BY (1.4 s)."""
    path = _two_hierarchies(tmp_path)

    def counted(*args, **kwargs):
        raise AssertionError("the classes were counted before the level was judged")

    monkeypatch.setattr(tables, "table_classes", counted)
    with pytest.raises(InputError) as refused:
        sqlclose.check(path, ["q"], {"s": {"hierarchy": str(tmp_path / "tall.csv")}}, similarity_level=4)
    assert str(refused.value).startswith("similarity_level: 4 is outside 1..3 for column 's'")


@pytest.mark.parametrize("level", [1, 2, 3])
def test_a_level_with_one_label_over_every_leaf_reveals_nothing(tmp_path, level):
    """v1, v2, v3 are all under "all" and "top" below the root: as at the root, learning the one
    group tells nothing, so no class is exposed (every class was, at levels 1 and 2)."""
    (tmp_path / "t.csv").write_text("q,s\nx,v1\nx,v1\ny,v2\ny,v2\nz,v3\nz,v3\n")
    (tmp_path / "h.csv").write_text("v1;all;top;*\nv2;all;top;*\nv3;all;top;*\n")
    got = sqlclose.check(tmp_path / "t.csv", ["q"], {"s": {"hierarchy": str(tmp_path / "h.csv")}},
                         similarity_level=level).to_dict()["sensitive"]["s"]["attacks"]["similarity"]
    assert (got["classes"], got["records"], got["records_by_group"]) == (0, 0, {})


def test_a_level_of_two_groups_still_counts_the_classes_in_one(tmp_path):
    """The oracle: by hand, class x holds v1 (group a), y v1 and v2 (a), z v3 (b) and v1 (a)."""
    (tmp_path / "t.csv").write_text("q,s\nx,v1\nx,v1\ny,v1\ny,v2\nz,v3\nz,v1\n")
    (tmp_path / "h.csv").write_text("v1;a;top;*\nv2;a;top;*\nv3;b;top;*\n")
    got = sqlclose.check(tmp_path / "t.csv", ["q"], {"s": {"hierarchy": str(tmp_path / "h.csv")}},
                         similarity_level=1).to_dict()["sensitive"]["s"]["attacks"]["similarity"]
    assert (got["classes"], got["records"], got["records_by_group"]) == (2, 4, {"a": 4})


def test_a_missing_column_of_a_parquet_file_lists_its_columns(tmp_path):
    """The CSV-only hint (a first row read as the names) was given for a Parquet file, whose names
    are its schema; a CSV file still keeps them back."""
    pq.write_table(pa.table({"q1": ["a"], "sal": [1]}), tmp_path / "t.parquet")
    (tmp_path / "t.csv").write_text("q1,sal\na,1\n")
    parquet = cli("check", tmp_path / "t.parquet", "--qi", "zz", "--sensitive", "nope")
    assert parquet.stderr == f"sqlclose: error: column 'zz' is not in {tmp_path / 't.parquet'} (its columns: 'q1', " \
                             "'sal')\n"
    csv = cli("check", tmp_path / "t.csv", "--qi", "zz", "--sensitive", "nope")
    assert_refused(csv, "it has 2 columns, none of those asked for; they are not listed")


def test_skewness_lists_each_class_with_its_ratio_most_skewed_first(tmp_path):
    """The oracle: each class's largest share ratio, by a plain DuckDB GROUP BY of the rows written
    here (exact fractions), exposed at >= 1.5, ordered by ratio then size, highest first."""
    rows = ([("a", "x")] * 4 + [("a", "y")] * 2 + [("b", "y")] * 2 + [("c", "x")] * 3 + [("c", "z")]
            + [("d", "z")] * 3 + [("d", "x")] * 3 + [("e", "x")] * 5)
    path = tmp_path / "t.csv"
    path.write_text("g,s\n" + "".join(f"{g},{s}\n" for g, s in rows))
    counted = duckdb.sql(f"SELECT g, s, count(*) AS n, sum(count(*)) OVER (PARTITION BY g) AS size, "
                         f"sum(count(*)) OVER (PARTITION BY s) AS total FROM read_csv('{path}') "
                         "GROUP BY g, s").fetchall()
    ratios: dict[str, tuple[Fraction, int]] = {}
    for g, _, n, size, total in counted:
        ratio = Fraction(int(n), int(size)) / Fraction(int(total), len(rows))
        ratios[g] = (max(ratio, ratios.get(g, (Fraction(0), 0))[0]), int(size))
    expected = sorted(((g, r, size) for g, (r, size) in ratios.items() if r >= Fraction(3, 2)),
                      key=lambda item: (-item[1], -item[2]))
    got = sqlclose.check(path, ["g"], ["s"], skew=1.5).to_dict()["sensitive"]["s"]["attacks"]["skewness"]
    listed = [(c["class"]["g"], c["ratio"], c["size"]) for c in got["exposed_classes"]]
    assert [(g, size) for g, _, size in listed] == [(g, size) for g, _, size in expected]
    assert [r for _, r, _ in listed] == pytest.approx([float(r) for _, r, _ in expected], abs=1e-12)
    assert [g for g, _, _ in expected] == ["b", "d", "a", "e"]  # by hand: not the order of the sizes (6, 6, 5, 2)


def test_the_text_prints_the_skew_ratio_as_given_and_whose_share(hand_csv, tmp_path):
    """``:g`` printed --skew 1.0000001 as ">= 1x"; with --reference the share compared to is the
    reference's, not "its table share"; one value is "1 value"."""
    plain = cli("check", hand_csv, "--qi", "g", "--sensitive", "s", "--skew", "1.0000001")
    assert "hold a value at >= 1.0000001x its table share" in plain.stdout, plain.stdout
    reference = cli("check", hand_csv, "--qi", "g", "--sensitive", "s", "--reference", hand_csv)
    assert "hold a value at >= 3x its share in the reference" in reference.stdout, reference.stdout
    (tmp_path / "one.csv").write_text("g,s\na,x\nb,x\n")
    one = cli("check", tmp_path / "one.csv", "--qi", "g", "--sensitive", "s")
    assert "sensitive s (1 value; reference: the table itself)" in one.stdout, one.stdout


def test_the_html_attacks_table_says_the_ratio_and_level_measured_at(hand_csv, tmp_path):
    (tmp_path / "h.csv").write_text("x;g;*\ny;g;*\nz;h;*\n")
    audit = sqlclose.check(hand_csv, ["g"], {"s": {"hierarchy": str(tmp_path / "h.csv")}}, skew=2.5,
                           similarity_level=2)
    page = audit_html._attacks(audit)
    assert "(share ≥ 2.5× the table's)" in page and "(level 2)" in page, page


def test_anonymize_lists_the_columns_of_a_parquet_file_missing_one(tmp_path):
    """As ``check`` (above): a release's spec naming a column a Parquet file lacks is told the
    file's columns, its schema; a CSV file's (maybe a first row of data) are still kept back."""
    pq.write_table(pa.table({"q1": ["a"], "sal": [1]}), tmp_path / "t.parquet")
    (tmp_path / "t.csv").write_text("q1,sal\na,1\n")
    for name in ("t.parquet", "t.csv"):
        (tmp_path / f"{name}.toml").write_text(f'[source]\npath = "{name}"\n[privacy]\nk = 2\n'
                                               '[quasi_identifiers]\nzz = { bands = [10] }\n[sensitive.nope]\n'
                                               't = 0.5\ndistance = "equal"\n')
    parquet = cli("anonymize", tmp_path / "t.parquet.toml", "-o", tmp_path / "out.parquet")
    assert parquet.stderr == f"sqlclose: error: column 'zz' is not in {tmp_path / 't.parquet'} (its columns: 'q1', " \
                             "'sal')\n"
    assert_refused(cli("anonymize", tmp_path / "t.csv.toml", "-o", tmp_path / "out.parquet"),
                   "it has 2 columns, none of those asked for; they are not listed")
    assert not (tmp_path / "out.parquet").exists()
