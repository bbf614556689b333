"""How ``sqlclose check`` reads a sensitive column before it measures it (review rv23).

- A CSV's numbers: read with the spec's declared ``[source] types`` (the checked file too, not only
  the reference), else as anonymize reads them: text, an ordered column whole numbers. Before, a
  DECIMAL(18, 4) column was read as DOUBLE (three values merged into one no row holds, a false
  distinct-l FAIL) and a sampled BIGINT rounded 5000.5 to 5001; then a type chosen from every value
  read "07" and "7" as one number, which anonymize keeps apart (rv26).
- A CSV's dates: read as the spec declares (DATE), so an ordered date column is audited.
- -0.0 beside 0.0, NaN beside -NaN: refused as anonymize refuses them, never "not in its domain".
- NULL in an ordered domain: refused when the ordered distance is judged, as anonymize refuses it;
  not measured (no place in the order) when ordered is only shown for comparison.

Oracles: plain GROUP BYs of the written file (as text, or read as the declared type) and exact
ordered EMDs worked with fractions from those counts.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from sqlclose.cli import main

SPEC = """[source]
path = "in.csv"
types = {{ s = "{kind}" }}
[output]
path = "out.csv"
[privacy]
k = 2
[quasi_identifiers]
g = {{ tree = {{ "*" = ["a", "b", "c"] }} }}
[sensitive.s]
distance = "ordered"
t = 0.5
"""
DECIMALS = [("a", "12345678901234.0001"), ("a", "12345678901234.0001"), ("a", "12345678901234.0003"),
            ("b", "12345678901234.0002"), ("b", "12345678901234.0002"), ("b", "12345678901234.0003"),
            ("c", "12345678901234.0001"), ("c", "12345678901234.0002")]
DATES = [("a", "2020-01-01"), ("a", "2020-01-02"), ("b", "2020-01-01"), ("b", "2021-01-02"),
         ("c", "2020-01-02"), ("c", "2021-01-02")]


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def released(tmp_path: Path, rows: list[tuple[str, str]], kind: str) -> Path:
    """``rows`` as in.csv, released by ``anonymize`` under a spec declaring s as ``kind``: out.csv."""
    (tmp_path / "in.csv").write_text("g,s\n" + "".join(f"{g},{s}\n" for g, s in rows))
    (tmp_path / "spec.toml").write_text(SPEC.format(kind=kind))
    result = cli("anonymize", tmp_path / "spec.toml", "--quiet")
    assert result.exit_code == 0, result.output
    return tmp_path / "out.csv"


def exact_ordered(counts: list[int], whole: list[int]) -> Fraction:
    """Σ_{i<m} |Σ_{j≤i} (p_j − q_j)| / (m − 1), exactly, over a sorted domain."""
    running, total = Fraction(0), Fraction(0)
    for p, q in list(zip(counts, whole))[:-1]:
        running += Fraction(p, sum(counts)) - Fraction(q, sum(whole))
        total += abs(running)
    return total / (len(whole) - 1)


def file_oracle(path: Path, kind: str) -> tuple[int, int, Fraction]:
    """A GROUP BY of the file, s read as ``kind``: its domain's size, the least distinct values of a
    class, and the largest exact ordered EMD of a class against the file's distribution."""
    rows = duckdb.connect().execute(f"SELECT g, s, COUNT(*) FROM read_csv('{path}', header = true, "
                                    f"columns = {{'g': 'VARCHAR', 's': '{kind}'}}) GROUP BY ALL").fetchall()
    domain = sorted({s for _, s, _ in rows})
    whole = [sum(n for _, s, n in rows if s == v) for v in domain]
    classes = sorted({g for g, _, _ in rows})
    per_class = [[sum(n for g, s, n in rows if g == c and s == v) for v in domain] for c in classes]
    return len(domain), min(sum(1 for n in c if n) for c in per_class), max(exact_ordered(c, whole) for c in per_class)


def audited(result) -> dict:
    assert result.exit_code == 0, (result.exit_code, result.output)
    return json.loads(result.stdout)["sensitive"]["s"]


# ---- 1. a CSV's numbers


def test_check_with_the_spec_reads_the_checked_csv_with_its_declared_decimal_type(tmp_path):
    """The checked file was read as DOUBLE: 3 DECIMAL(18, 4) values became one (12345678901234.0),
    distinct l 1, EMD 0 and every class "homogeneous". The spec's types now reach the checked file."""
    out = released(tmp_path, DECIMALS, "DECIMAL(18, 4)")
    domain, distinct, worst = file_oracle(out, "DECIMAL(18,4)")
    assert (domain, distinct, worst) == (3, 2, Fraction(11, 48))
    for reference in ([], ["--reference", tmp_path / "in.csv"]):  # with the input as reference it stopped (exit 2)
        s = audited(cli("check", out, "--spec", tmp_path / "spec.toml", *reference, "--json"))
        assert s["domain_size"] == domain
        assert s["distinct_l"]["reached"] == distinct
        assert abs(s["distances"]["ordered"]["reached"] - float(worst)) <= 1e-12
        assert s["attacks"]["homogeneity"]["classes"] == 0


def test_check_without_a_spec_reads_undeclared_csv_decimals_as_their_text(tmp_path):
    """Without a spec the file failed distinct l = 2 (exit 3) on values DOUBLE had merged; then it was
    read as a DECIMAL its values chose, which merged texts anonymize keeps apart (rv26). An undeclared
    column is now read as anonymize reads it: text. Oracle: a GROUP BY of the file as text gives every
    class 2 distinct values of 3; judged by the ordered distance, anonymize refuses such a column until
    its type is declared, and check says where it takes a declared type from (--spec)."""
    out = released(tmp_path, DECIMALS, "DECIMAL(18, 4)")
    least = duckdb.connect().execute(f"SELECT MIN(d) FROM (SELECT g, COUNT(DISTINCT s) d FROM read_csv('{out}', "
                                     "header = true, all_varchar = true) GROUP BY g)").fetchone()[0]
    assert least == 2
    s = audited(cli("check", out, "--qi", "g", "--sensitive", "s", "--distinct-l", "2", "--json"))
    assert s["distinct_l"]["reached"] == 2 and s["domain_size"] == 3
    assert "ordered" not in s["distances"]
    result = cli("check", out, "--qi", "g", "--sensitive", "s", "--distance", "ordered", "--t", "0.5")
    assert result.exit_code == 2, result.output
    assert "column 's' holds 8 numbers that are not whole" in result.stderr, result.stderr
    assert "from the spec given with --spec" in result.stderr


@pytest.mark.spark
def test_check_on_spark_reads_undeclared_csv_decimals_as_duckdb_does(tmp_path, spark_session):
    """Both engines read an audited CSV column without a declared type as its text (rv26: the numbers
    a DECIMAL read merged texts anonymize keeps apart). Oracle: a GROUP BY of the file as text."""
    out = released(tmp_path, DECIMALS, "DECIMAL(18, 4)")
    domain, distinct = duckdb.connect().execute(
        f"SELECT (SELECT COUNT(DISTINCT s) FROM read_csv('{out}', header = true, all_varchar = true)), MIN(d) FROM "
        f"(SELECT g, COUNT(DISTINCT s) d FROM read_csv('{out}', header = true, all_varchar = true) GROUP BY g)"
    ).fetchone()
    s = audited(cli("check", out, "--qi", "g", "--sensitive", "s", "--engine", "spark", "--json"))
    assert (s["domain_size"], s["distinct_l"]["reached"]) == (domain, distinct)
    assert "ordered" not in s["distances"]


def test_check_does_not_round_a_fraction_past_a_sample_of_whole_numbers(tmp_path):
    """30,000 whole numbers then one 5000.5: a sample sniffed BIGINT, whose read rounded 5000.5 to 5001
    (2 values; class a holding 5001 5001 times). The column is now read as its text, as anonymize
    reads it. Oracle: a GROUP BY of the file as text."""
    path = tmp_path / "in.csv"
    path.write_text("g,s\n" + "".join(f"{'abc'[i % 3]},{5000 + i % 2}\n" for i in range(30000)) + "a,5000.5\n")
    truth = duckdb.connect().execute(f"SELECT s, COUNT(*) FROM read_csv('{path}', header = true, all_varchar = true) "
                                     "WHERE g = 'a' GROUP BY s").fetchall()
    s = audited(cli("check", path, "--qi", "g", "--sensitive", "s", "--json"))
    assert s["domain_size"] == 3
    shown = next(c["distribution"] for c in s["distinct_l"]["worst_classes"] if c["class"] == {"g": "a"})
    assert shown == dict(truth)


def test_check_reads_numbers_no_decimal_type_holds_exactly_as_text(tmp_path):
    """An exponent (1e3) or more than 38 digits: the column is text (its values as the file writes
    them, by a GROUP BY as text; no ordered distance)."""
    path = tmp_path / "t.csv"
    path.write_text("g,s,w\na,1e3,1\na,2,2\nb,2,1." + "1" * 38 + "\nb,1e3,2\n")
    result = cli("check", path, "--qi", "g", "--sensitive", "s,w", "--json")
    assert result.exit_code == 0, result.output
    for column, values in [("s", {"1e3", "2"}), ("w", {"1", "2", "1." + "1" * 38})]:
        entry = json.loads(result.stdout)["sensitive"][column]
        assert entry["domain_size"] == len(values)
        assert "ordered" not in entry["distances"]


def test_check_compares_a_csv_table_and_a_reference_whose_numbers_have_two_types(tmp_path):
    """The checked CSV's ordered column is read as BIGINT (as anonymize reads it), the reference's
    (a Parquet file) is a DECIMAL(6, 2). Values were compared by their text, so '1' was "not in its
    domain" (exit 2). Now both read as one DECIMAL. Oracle: the exact ordered EMD over the values of
    both files, compared as numbers."""
    reference = tmp_path / "r.parquet"
    ref_values = ["5000.50", "1.00", "5000.25", "1.00"]
    pq.write_table(pa.table({"g": list("aabb"), "s": pa.array([Decimal(v) for v in ref_values],
                                                               pa.decimal128(6, 2))}), reference)
    whole = Counter(Decimal(v) for v in ref_values)
    checked = ["5000", "1", "1", "5000"]
    path = tmp_path / "c.csv"
    path.write_text("g,s\n" + "".join(f"{g},{v}\n" for g, v in zip("aabb", checked)))
    domain = sorted(set(whole) | {Decimal(v) for v in checked})
    worst = max(exact_ordered([Counter(Decimal(v) for v in checked[i:i + 2])[d] for d in domain],
                              [whole[d] for d in domain]) for i in (0, 2))
    s = audited(cli("check", path, "--qi", "g", "--sensitive", "s", "--reference", reference, "--distance",
                    "ordered", "--json"))
    assert s["domain_size"] == len(domain)
    assert abs(s["distances"]["ordered"]["reached"] - float(worst)) <= 1e-12


def test_check_reads_an_undeclared_csv_column_as_text_as_anonymize_does(tmp_path):
    """rv26 #1: the codes "07" and "7" (or "1.5" and "1.50") are two values to anonymize, which reads an
    undeclared CSV column as text, and one number to check, which read it as BIGINT when every value was
    a decimal number. So a table whose classes each hold one code passed t = 0.2 (max EMD 0, exit 0).
    Oracle: the equal-distance EMD worked by hand: class 47602 holds "07" alone, 47905 "7" alone, the
    table half each: 0.5 * (|1 - 0.5| + |0 - 0.5|) = 0.5 > 0.2, so exit 3 with max EMD 0.5."""
    for one, other in [("07", "7"), ("1.5", "1.50")]:
        path = tmp_path / "u.csv"
        path.write_text(f"zip,code\n47677,{one}\n47602,{one}\n47905,{other}\n47906,{other}\n")
        result = cli("check", path, "--qi", "zip", "--sensitive", "code", "--t", "0.2", "--distance", "equal",
                     "--k", "1", "--json")
        assert result.exit_code == 3, result.output
        entry = json.loads(result.stdout)["sensitive"]["code"]
        assert entry["domain_size"] == 2 and entry["distances"]["equal"]["reached"] == 0.5


SPEC_L = """[source]
path = "t.csv"
[output]
path = "out.csv"
[privacy]
k = 2
[quasi_identifiers]
zip = { mask = true, length = 5 }
[sensitive.code]
distinct_l = 2
"""


def test_check_with_the_spec_keeps_apart_the_codes_of_a_valid_csv_release(tmp_path):
    """rv26 #1: anonymize releases rows coded 07/7/07/7 with distinct l = 2 (its CSV release holds both
    texts in each class); check --spec over that release read the codes as one number, distinct l 1,
    FAIL (exit 3). Oracle: a GROUP BY over the release's text gives l = 2; check now passes it."""
    (tmp_path / "t.csv").write_text("zip,code\n47677,07\n47602,7\n47678,07\n47905,7\n")
    (tmp_path / "s.toml").write_text(SPEC_L)
    result = cli("anonymize", "-q", tmp_path / "s.toml")
    assert result.exit_code == 0, result.output
    out = tmp_path / "out.csv"
    least = duckdb.connect().execute(
        f"SELECT min(d) FROM (SELECT zip, count(DISTINCT code) d FROM read_csv('{out}', all_varchar = true) "
        "GROUP BY zip)").fetchone()[0]
    assert least == 2
    result = cli("check", out, "--spec", tmp_path / "s.toml", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sensitive"]["code"]["distinct_l"]["reached"] == 2


def test_check_reads_an_ordered_csv_column_as_whole_numbers_as_anonymize_does(tmp_path):
    """Judged by the ordered distance, an undeclared CSV column is read as anonymize reads it: whole
    numbers (BIGINT), so "07" and "7" are the number 7 there, as in anonymize's release. Oracle: by
    hand, the values {7, 7, 9, 9} in classes {7, 9} and {7, 9} are each the table's distribution: EMD 0."""
    path = tmp_path / "o.csv"
    path.write_text("g,s\na,07\na,9\nb,7\nb,9\n")
    s = audited(cli("check", path, "--qi", "g", "--sensitive", "s", "--distance", "ordered", "--t", "0.1", "--json"))
    assert s["domain_size"] == 2 and s["distances"]["ordered"]["reached"] == 0


# ---- 2. a CSV's dates


def test_check_with_the_spec_audits_an_ordered_date_column_of_a_csv(tmp_path):
    """`types = { s = "DATE" }`, distance = "ordered": anonymize releases it (max EMD 1/4), but check
    read the CSV's s as text and refused it as no ordered type (exit 2), on the release, with the input
    as reference, and on the input itself. Oracle: the exact ordered EMD over the dates, worked by hand."""
    out = released(tmp_path, DATES, "DATE")
    domain = sorted({s for _, s in DATES})  # ISO dates: text order is date order
    whole = [sum(1 for _, s in DATES if s == v) for v in domain]
    worst = max(exact_ordered([sum(1 for g, s in DATES if g == c and s == v) for v in domain], whole) for c in "abc")
    assert worst == Fraction(1, 4) == file_oracle(out, "DATE")[2]
    for table, reference in [(out, []), (out, ["--reference", tmp_path / "in.csv"]), (tmp_path / "in.csv", [])]:
        s = audited(cli("check", table, "--spec", tmp_path / "spec.toml", *reference, "--json"))
        assert abs(s["distances"]["ordered"]["reached"] - 0.25) <= 1e-12


# ---- 3. two spellings of one float


def _floats(tmp_path: Path, values: np.ndarray) -> Path:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"g": ["a", "a", "b", "b", "c", "c"], "s": values}), path)
    return path


def test_check_refuses_minus_zero_beside_zero_as_anonymize_does(tmp_path):
    """s ∈ {-0.0, 0.0, 1.0, 2.0}: check said "column 's' holds '0.0', which is not in its domain (3
    values)", a false statement (DISTINCT kept one spelling; the other's rows were then looked up as
    text), with the ordered distance and with the equal one alike. Now refused naming both spellings
    and the fix, as anonymize refuses them."""
    path = _floats(tmp_path, np.array([-0.0, 0.0, 0.0, 1.0, 2.0, 1.0]))
    for asked in ([], ["--distance", "equal", "--t", "0.9"], ["--distance", "ordered", "--t", "0.9"]):
        result = cli("check", path, "--qi", "g", "--sensitive", "s", *asked)
        assert result.exit_code == 2, (result.exit_code, result.output)
        assert "not in its domain" not in result.stderr
        assert f"column 's' in {path} holds both -0.0 and 0.0" in result.stderr, result.stderr
        assert '"s" + 0.0' in result.stderr


def test_check_refuses_nan_of_both_signs_as_anonymize_does(tmp_path):
    """NaN and -NaN (a NaN with its sign bit set): "holds '-nan', which is not in its domain" before."""
    values = np.array([np.nan, np.nan, 1.0, 2.0, 1.0, 2.0])
    values[1] = np.copysign(np.nan, -1)
    result = cli("check", _floats(tmp_path, values), "--qi", "g", "--sensitive", "s")
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "not in its domain" not in result.stderr
    assert "NaN both with and without a minus sign (-nan and nan)" in result.stderr, result.stderr


@pytest.mark.parametrize("odd", [np.nan, np.inf, -np.inf])
def test_check_keeps_nan_and_infinities_out_of_the_order(tmp_path, odd):
    """Review of the ninety-first round: check ranked NaN above every number, judging classes by an
    ordered EMD (`max EMD ordered 0.5 … FAIL`) that anonymize refuses to compute. Asked for, the
    ordered distance is refused as anonymize refuses it; not asked for, it is not measured (as for a
    column holding NULL), and the other distances are."""
    path = _floats(tmp_path, np.array([1.0, 2.0, odd, 1.0, 2.0, 3.0]))
    result = cli("check", path, "--qi", "g", "--sensitive", "s", "--distance", "ordered", "--t", "0.2")
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert f"column 's' in {path} holds NaN or an infinity in 1 row, which has no place in the order of distance " \
           "= \"ordered\"" in " ".join(result.stderr.split()), result.stderr
    measured = cli("check", path, "--qi", "g", "--sensitive", "s")
    assert measured.exit_code == 0, measured.output
    assert "max EMD ordered" not in measured.stdout and "max EMD equal" in measured.stdout, measured.stdout


def test_check_refuses_minus_zero_in_the_table_beside_zero_in_the_reference(tmp_path):
    """The domain spans the checked table and the reference: -0.0 in one and 0.0 in the other merge too."""
    table, reference = tmp_path / "t.parquet", tmp_path / "r.parquet"
    pq.write_table(pa.table({"g": ["a", "a"], "s": [-0.0, 1.0]}), table)
    pq.write_table(pa.table({"g": ["a", "a"], "s": [0.0, 1.0]}), reference)
    result = cli("check", table, "--qi", "g", "--sensitive", "s", "--reference", reference)
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "holds both -0.0 and 0.0" in result.stderr and "the reference" in result.stderr, result.stderr


# ---- NULL in an ordered domain


def test_check_refuses_null_where_the_ordered_distance_is_judged(tmp_path):
    """check put a NULL after the largest number in the ordered domain (m and every distance depend on
    where: a class {1, NULL} of a table {1, 2, 3, NULL} is 1/6 with NULL last, 1/3 first); anonymize
    refuses NULL there (nulls = "value" is not allowed for an ordered column, "drop" leaves the rows
    out). check says so too: exit 2, naming the column and the distance."""
    path = tmp_path / "n.parquet"
    pq.write_table(pa.table({"g": ["a", "a", "b", "b"], "s": pa.array([3, None, 1, 2], pa.int64())}), path)
    result = cli("check", path, "--qi", "g", "--sensitive", "s", "--distance", "ordered", "--t", "0.5")
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert f"column 's' in {path} holds NULL" in result.stderr and 'distance = "ordered"' in result.stderr


def test_check_measures_no_ordered_distance_over_a_null_it_only_shows(tmp_path):
    """Without an ordered model, the ordered distance is shown for numbers for comparison; over a NULL
    it has no order to measure by, so it is left out, and the NULL counts as a value (GROUP BY: 4)."""
    path = tmp_path / "n.parquet"
    pq.write_table(pa.table({"g": ["a", "a", "b", "b"], "s": pa.array([3, None, 1, 2], pa.int64())}), path)
    s = audited(cli("check", path, "--qi", "g", "--sensitive", "s", "--json"))
    assert s["domain_size"] == 4
    assert set(s["distances"]) == {"equal", "variational", "kl"}


# ---- a CSV value the column's type cannot read: what each command can do about it

NULLS_SPEC = """others = "keep"
[source]
path = "in.csv"
nulls = ["NA"]
{types}
[output]
path = "out.parquet"
[privacy]
k = 2
[quasi_identifiers]
g = {{ tree = {{ "*" = ["a", "b"] }} }}
[sensitive.s]
distance = "ordered"
t = 0.9
nulls = "drop"
"""


@pytest.mark.parametrize("value, types, said", [
    ("n/a", "", "column 's' holds a value that is not a number (line 3)"),
    ("x", 'types = { s = "BIGINT" }', "column 's' holds a value that is not a BIGINT (line 3)"),
])
def test_a_value_check_cannot_read_is_told_with_what_check_can_do(tmp_path, value, types, said):
    """check's hint for a CSV value its ordered (or declared) type cannot read said "list it in
    [source] nulls", which check does not apply to the table it checks — with --spec giving
    nulls = ["NA"] and nulls = "drop", an "NA" still stopped it (a NULL in an ordered column is
    refused anyway). Now check says what it has: fix the value, or (ordered) judge the column by
    another distance, --distance without --spec; anonymize still offers [source] nulls, which it
    applies. The oracle: anonymize releases the same file with "NA" (its [source] nulls apply),
    where check refuses it, exit 2 both for the value neither reads."""
    rows = ["g,s", "a,1", f"b,{value}", "a,2", "b,3", "a,NA", "b,1"]
    (tmp_path / "in.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "spec.toml").write_text(NULLS_SPEC.format(types=types))
    released = cli("anonymize", "-q", tmp_path / "spec.toml")
    assert released.exit_code == 2 and said in released.stderr, released.output
    assert "fix the value, list it in [source] nulls, or use another distance" in released.stderr or types
    assert "change [source] types or nulls" in released.stderr or not types

    checks = [cli("check", tmp_path / "in.csv", "--spec", tmp_path / "spec.toml")]
    if not types:
        checks.append(cli("check", tmp_path / "in.csv", "--qi", "g", "--sensitive", "s", "--distance", "ordered"))
    for checked in checks:
        assert checked.exit_code == 2, checked.output
        assert said in checked.stderr and "list it in [source] nulls" not in checked.stderr, checked.stderr
        assert "types or nulls" not in checked.stderr
        assert "check applies no [source] nulls to the table it checks" in checked.stderr
        assert ("judge the column by another distance (check's --distance, given without --spec)" in checked.stderr
                if not types else "fix the value, or change the spec's [source] types" in checked.stderr)
    rows[2] = "b,NA"  # the value is now one the spec's nulls name: anonymize reads it as NULL and drops its row
    (tmp_path / "in.csv").write_text("\n".join(rows) + "\n")
    assert cli("anonymize", "-q", tmp_path / "spec.toml").exit_code == 0
    assert cli("check", tmp_path / "in.csv", "--spec", tmp_path / "spec.toml").exit_code == 2
