"""Mutation tests of the verifier: a release whose written file was altered must be rejected.

Each test writes a real release, but the engine's ``copy_to_parquet`` is wrapped so that right
after writing the true file it rewrites it through DuckDB with one corruption — a class made
smaller than k, sensitive values swapped so that t breaks, a QI label renamed, two classes'
labels exchanged, a pass-through value edited, a suppressed row put back, a row dropped, an
identifier column added. ``write_parquet`` must raise a
``VerificationError`` naming what broke, and leave nothing at the output path (no temporary
files either). Nothing in the comparison is patched: the independent re-check
(``verify_sql``) has to see each corruption in the file itself. A control run through the same
wrapper with no corruption must pass, so the harness alone does not cause the failures.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corruption import corrupt_on_write

import sqlclose
from sqlclose import VerificationError

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"


# ---------------------------------------------------------------------------- the harness (tests/corruption.py)


def rejected(monkeypatch, release, tmp_path: Path, statements: list[str]) -> str:
    """Write with the corruption; return the VerificationError's message after checking that
    nothing was left behind."""
    outdir = tmp_path / "out"
    corrupt_on_write(monkeypatch, release.problem.engine, tmp_path / "scratch", statements)
    with pytest.raises(VerificationError) as e:
        release.write_parquet(outdir / "release.parquet")
    assert not outdir.exists()  # no release, no report, no temporary file, not even the folder made for them
    return str(e.value)


@pytest.fixture(scope="module")
def table3() -> Iterator[sqlclose.Release]:
    """Table 3 at its spec: node zip=1, age=2; classes 4767*/<40 (salaries 3000, 5000, 9000),
    4760*/<40 (4000, 7000, 10000), 4790*/>=40 (6000, 8000, 11000); k = 3, salary 1/6-close
    (t = 0.2), disease 8/27-close (t = 0.3)."""
    with sqlclose.anonymize(None, sqlclose.load_spec(TABLE3 / "table3.toml")) as release:
        assert release.node == {"zip": 1, "age": 2}
        yield release


def test_control_the_uncorrupted_file_passes(monkeypatch, table3, tmp_path):
    corrupt_on_write(monkeypatch, table3.problem.engine, tmp_path / "scratch", [])
    report = table3.write_parquet(tmp_path / "out" / "release.parquet")
    assert report["verified"] is True
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["release.parquet", "release.parquet.report.json"]


# ---------------------------------------------------------------------------- Table 3


def test_table3_class_made_smaller_than_k(monkeypatch, table3, tmp_path):
    # The 3000 row moves from 4767*/<40 to 4760*/<40: sizes 2 and 4, still three classes.
    msg = rejected(monkeypatch, table3, tmp_path, ["UPDATE t SET zip = '4760*' WHERE salary = 3000"])
    assert "1 class fails k-anonymity (k = 3; the worst reaches 2)" in msg
    assert "privacy.min_class_size is 2, the search found 3" in msg


def test_table3_sensitive_values_swapped_break_t(monkeypatch, table3, tmp_path):
    # Swap the diseases of rows 9000 (pneumonia, 4767*) and 6000 (gastritis, 4790*): 4790* holds
    # only respiratory infections, 4767* only stomach diseases; the table's Q is unchanged.
    msg = rejected(monkeypatch, table3, tmp_path, [
        "UPDATE t SET disease = CASE salary WHEN 9000 THEN 'gastritis' ELSE 'pneumonia' END "
        "WHERE salary IN (9000, 6000)"])
    assert "fail t-closeness on 'disease' (t = 0.3, distance = hierarchical" in msg
    assert "privacy.sensitive.disease.max_emd" in msg
    assert "k-anonymity" not in msg


def test_table3_qi_label_renamed(monkeypatch, table3, tmp_path):
    # The whole class 4767* renamed 4768*: same classes, sizes and distributions; only the label
    # betrays it (no level of the zip hierarchy has it).
    msg = rejected(monkeypatch, table3, tmp_path, ["UPDATE t SET zip = '4768*' WHERE zip = '4767*'"])
    assert "column 'zip' holds 1 value that is not a label of any one level of its hierarchy" in msg
    assert "'4768*'" in msg


def test_table3_class_labels_exchanged(monkeypatch, table3, tmp_path):
    # 4767*/<40 and 4760*/<40 trade labels: the same classes with the same sizes and distributions
    # (privacy unchanged), but the file no longer tells the truth about the input.
    msg = rejected(monkeypatch, table3, tmp_path, [
        "UPDATE t SET zip = CASE zip WHEN '4767*' THEN '4760*' ELSE '4767*' END WHERE zip IN ('4767*', '4760*')"])
    assert msg.endswith("6 written rows are not rows of the input generalized at the levels the labels show "
                        "(a label, a value or a whole row was altered)")


def test_table3_row_dropped(monkeypatch, table3, tmp_path):
    msg = rejected(monkeypatch, table3, tmp_path, ["DELETE FROM t WHERE salary = 11000"])
    assert "8 rows instead of 9" in msg
    assert "1 class fails k-anonymity" in msg


def test_table3_every_row_deleted(monkeypatch, table3, tmp_path):
    msg = rejected(monkeypatch, table3, tmp_path, ["DELETE FROM t"])
    assert "0 rows instead of 9" in msg and "0 classes instead of 3" in msg


def test_table3_qi_column_dropped(monkeypatch, table3, tmp_path):
    msg = rejected(monkeypatch, table3, tmp_path, ["ALTER TABLE t DROP COLUMN age"])
    assert "columns ['zip', 'salary', 'disease'] instead of ['zip', 'age', 'salary', 'disease']" in msg
    assert "the file lacks the column 'age'" in msg


def test_table3_column_type_changed(monkeypatch, table3, tmp_path):
    # salary as text with a unit: rows are compared as text, and none of the 9 is an input row.
    msg = rejected(monkeypatch, table3, tmp_path, ["ALTER TABLE t ALTER salary TYPE VARCHAR",
                                                   "UPDATE t SET salary = salary || ' EUR'"])
    assert "9 written rows are not rows of the input generalized at the levels the labels show" in msg


@pytest.fixture(scope="module")
def table3_top() -> Iterator[sqlclose.Release]:
    """Table 3 with k = 9: one class of all nine rows, zip=3 (47***) and age=3 — age at its top
    ('*'), which the truth test reads as the hierarchy's top label, not through its lookup."""
    spec = sqlclose.load_spec(TABLE3 / "table3.toml")
    spec = spec.model_copy(update={"privacy": spec.privacy.model_copy(update={"k": 9})})
    with sqlclose.anonymize(None, spec) as release:
        assert release.node == {"zip": 3, "age": 3}
        yield release


def test_a_qi_at_its_top_the_control_passes(monkeypatch, table3_top, tmp_path):
    corrupt_on_write(monkeypatch, table3_top.problem.engine, tmp_path / "scratch", [])
    assert table3_top.write_parquet(tmp_path / "out" / "release.parquet")["verified"] is True


def test_a_qi_at_its_top_a_row_edited_is_untrue(monkeypatch, table3_top, tmp_path):
    # One row's salary moved to a value no input row has with its disease: one class still, every
    # label true, the row untrue.
    msg = rejected(monkeypatch, table3_top, tmp_path, ["UPDATE t SET salary = 3000 WHERE salary = 11000"])
    assert "1 written row is not a row of the input generalized at the levels the labels show" in msg


def test_table3_identifier_column_added(monkeypatch, tmp_path):
    src = tmp_path / "named.csv"
    with (TABLE3 / "table3.csv").open() as f, src.open("w", newline="") as out:
        rows = list(csv.reader(f))
        writer = csv.writer(out)
        writer.writerow(["name", *rows[0]])
        writer.writerows([f"person {i}", *r] for i, r in enumerate(rows[1:]))
    spec = sqlclose.load_spec(TABLE3 / "table3.toml").model_copy(update={"identifiers": ["name"]})
    with sqlclose.anonymize(src, spec) as release:
        msg = rejected(monkeypatch, release, tmp_path, ["ALTER TABLE t ADD COLUMN name VARCHAR DEFAULT 'someone'"])
    assert "identifier columns ['name'] were written" in msg
    assert "columns ['zip', 'age', 'salary', 'disease', 'name'] instead of ['zip', 'age', 'salary', 'disease']" in msg


def test_table3_suppressed_row_put_back(monkeypatch, tmp_path):
    # k = 4, up to 3 rows suppressed: node zip=2, age=2 keeps 476**/<40 (6 rows) and suppresses
    # 479**/>=40 (47905, 43, 6000, gastritis; 47909, 52, 11000, flu; 47906, 47, 8000, bronchitis).
    spec = sqlclose.load_spec(TABLE3 / "table3.toml")
    spec = spec.model_copy(update={"privacy": spec.privacy.model_copy(update={"k": 4, "suppression": 0.34})})
    with sqlclose.anonymize(None, spec) as release:
        assert release.node == {"zip": 2, "age": 2} and release.summary["suppressed_rows"] == 3
        msg = rejected(monkeypatch, release, tmp_path,
                       ["INSERT INTO t VALUES ('479**', '>=40', 6000, 'gastritis')"])
    assert "7 rows instead of 6" in msg
    assert "2 classes instead of 1" in msg
    assert "1 class fails k-anonymity (k = 4; the worst reaches 1)" in msg


# ---------------------------------------------------------------------------- Adult


@pytest.fixture(scope="module")
def adult(adult_dir) -> Iterator[sqlclose.Release]:
    """Adult at datasets/adult/adult.toml (k = 5, t = 0.2 hierarchical on occupation) with 5 %
    suppression, so that some records are suppressed."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SQLCLOSE_ADULT_DIR", str(adult_dir))
        spec = sqlclose.load_spec(REPO / "datasets" / "adult" / "adult.toml")
    spec = spec.model_copy(update={"privacy": spec.privacy.model_copy(update={"suppression": 0.05})})
    with sqlclose.anonymize(None, spec) as release:
        assert release.summary["suppressed_rows"] > 0
        yield release


def qi_names(release: sqlclose.Release) -> list[str]:
    return [qi.name for qi in release.problem.qis]


def same_class(columns: list[str], alias: str) -> str:
    return " AND ".join(f't."{c}" IS NOT DISTINCT FROM {alias}."{c}"' for c in columns)


def test_adult_class_made_smaller_than_k(monkeypatch, adult, tmp_path):
    # All but 4 rows of the smallest class take the QI labels of the largest class.
    qi = qi_names(adult)
    cols = ", ".join(f'"{c}"' for c in qi)
    ranked = f"(SELECT {cols}, COUNT(*) AS n FROM t GROUP BY {cols})"
    sets = ", ".join(f'"{c}" = big."{c}"' for c in qi)
    msg = rejected(monkeypatch, adult, tmp_path, [
        f"CREATE TABLE small AS SELECT * FROM {ranked} ORDER BY n, {cols} LIMIT 1",
        f"CREATE TABLE big AS SELECT * FROM {ranked} ORDER BY n DESC, {cols} LIMIT 1",
        f"UPDATE t SET {sets} FROM big WHERE t.rowid IN (SELECT t.rowid FROM t, small "
        f"WHERE {same_class(qi, 'small')} LIMIT (SELECT n - 4 FROM small))",
        "DROP TABLE small", "DROP TABLE big"])
    assert "1 class fails k-anonymity (k = 5; the worst reaches 4)" in msg


def test_adult_sensitive_values_changed_break_t(monkeypatch, adult, tmp_path):
    # Every row of the largest class gets the same occupation: far from the table's distribution.
    qi = qi_names(adult)
    cols = ", ".join(f'"{c}"' for c in qi)
    msg = rejected(monkeypatch, adult, tmp_path, [
        f"CREATE TABLE big AS SELECT {cols}, COUNT(*) AS n FROM t GROUP BY {cols} ORDER BY n DESC, {cols} LIMIT 1",
        f"UPDATE t SET occupation = 'Tech-support' FROM big WHERE {same_class(qi, 'big')}",
        "DROP TABLE big"])
    assert "1 class fails t-closeness on 'occupation' (t = 0.2, distance = hierarchical" in msg
    assert "k-anonymity" not in msg


def test_adult_qi_label_renamed(monkeypatch, adult, tmp_path):
    # Every label of one released column gets a suffix: classes and distributions are unchanged.
    column = next(c for c in qi_names(adult) if adult.node[c] > 0)
    msg = rejected(monkeypatch, adult, tmp_path, [f"UPDATE t SET \"{column}\" = \"{column}\" || ' (edited)'"])
    assert f"column {column!r} holds" in msg and "that are not labels of any one level" in msg


def test_adult_pass_through_value_edited(monkeypatch, adult, tmp_path):
    # One row's salary class flipped: privacy intact, the row untrue.
    msg = rejected(monkeypatch, adult, tmp_path, [
        "UPDATE t SET \"salary-class\" = CASE \"salary-class\" WHEN '>50K' THEN '<=50K' ELSE '>50K' END "
        "WHERE rowid = (SELECT MIN(rowid) FROM t)"])
    assert msg.endswith("1 written row is not a row of the input generalized at the levels the labels show "
                        "(a label, a value or a whole row was altered)")


def test_adult_row_dropped(monkeypatch, adult, tmp_path):
    rows = adult.summary["rows"]
    msg = rejected(monkeypatch, adult, tmp_path, ["DELETE FROM t WHERE rowid = (SELECT MIN(rowid) FROM t)"])
    assert f"{rows - 1} rows instead of {rows}" in msg


def test_adult_suppressed_row_put_back(monkeypatch, adult, adult_dir, tmp_path):
    # The suppressed rows are the input generalized at the node (labels from the hierarchies)
    # minus the written file; one of them goes back in.
    scratch = tmp_path / "labels"
    scratch.mkdir()
    selects = []
    for qi in adult.problem.qis:
        level = adult.node[qi.name]
        mapping = pa.table({"leaf": qi.hierarchy.leaves, "label": [row[level] for row in qi.hierarchy.rows]})
        path = scratch / f"{qi.name}.parquet"
        pq.write_table(mapping, path)
        selects.append(f"(SELECT label FROM read_parquet('{path}') WHERE leaf = CAST(src.\"{qi.name}\" AS VARCHAR))"
                       if level else f'src."{qi.name}"')
    columns = [f'"{c}"' for c in adult.columns]
    generalized = [selects[qi_names(adult).index(c.strip('"'))] if c.strip('"') in qi_names(adult) else f"src.{c}"
                   for c in columns]
    source = f"read_csv('{adult_dir / 'adult.csv'}', delim = ';', header = true)"
    msg = rejected(monkeypatch, adult, tmp_path, [
        f"CREATE TABLE gone AS (SELECT {', '.join(generalized)} FROM {source} AS src) EXCEPT ALL (SELECT * FROM t)",
        "INSERT INTO t (SELECT * FROM gone LIMIT 1)",
        "DROP TABLE gone"])
    rows = adult.summary["rows"]
    assert f"{rows + 1} rows instead of {rows}" in msg


# ---------------------------------------------------------------------------- a kept float column holding NaN

def _signed_nan_rows() -> pa.Table:
    """60 rows, two QIs, a kept float ``w`` holding NaN of both signs (20 each) and 1.5: enough rows
    for DuckDB's Parquet writer to give ``w`` a dictionary, which keeps one NaN for the two signs."""
    minus_nan = -float("nan")
    w = [minus_nan if i % 3 == 0 else float("nan") if i % 3 == 1 else 1.5 for i in range(60)]
    return pa.table({"age": [20 + i % 4 for i in range(60)], "sex": ["MF"[i % 2] for i in range(60)],
                     "disease": ["abcd"[i % 4] for i in range(60)], "w": pa.array(w, pa.float64())})


SIGNED_NAN_SPEC = {"others": "keep", "privacy": {"k": 2},
                   "quasi_identifiers": {"age": {"bands": [5, 10]}, "sex": {"tree": {"*": ["M", "F"]}}},
                   "sensitive": {"disease": {"distance": "equal", "t": 0.9}}}


@pytest.fixture()
def signed_nans() -> Iterator[sqlclose.Release]:
    with sqlclose.anonymize(_signed_nan_rows(), SIGNED_NAN_SPEC) as release:
        yield release


def test_kept_float_with_nans_of_both_signs_the_control_passes(monkeypatch, signed_nans, tmp_path):
    """Was: the release wrote each NaN with its sign, DuckDB's Parquet dictionary kept one NaN for
    both, and the release failed its own re-check (exit 4). A kept column's NaN is now written
    without its sign."""
    corrupt_on_write(monkeypatch, signed_nans.problem.engine, tmp_path / "scratch", [])
    out = tmp_path / "out" / "release.parquet"
    assert signed_nans.write_parquet(out)["verified"] is True
    written = pq.read_table(out).column("w").to_pylist()
    assert sorted(map(repr, written)) == sorted(["1.5"] * 20 + ["nan"] * 40)


@pytest.mark.parametrize("edit", ["UPDATE t SET w = 2.5 WHERE rowid = (SELECT min(rowid) FROM t WHERE w = 1.5)",
                                  "UPDATE t SET w = 1.5 WHERE rowid = (SELECT min(rowid) FROM t WHERE isnan(w))",
                                  "UPDATE t SET w = 'nan' WHERE rowid = (SELECT min(rowid) FROM t WHERE w = 1.5)"])
def test_kept_float_with_nans_an_edited_value_is_untrue(monkeypatch, signed_nans, tmp_path, edit):
    """The re-check hashes a kept float by its text with NaN's sign left out: a value edited into or
    out of NaN, or into another number, is still an untrue row."""
    msg = rejected(monkeypatch, signed_nans, tmp_path, [edit])
    assert "1 written row is not a row of the input generalized at the levels the labels show" in msg


@pytest.mark.parametrize(("kind", "value", "edit"), [
    (pa.struct([("f", pa.float64()), ("s", pa.string())]), lambda i: {"f": -float("nan") if i % 2 else 1.5,
                                                                         "s": "x-nan" if i == 0 else f"y{i}"},
     "UPDATE t SET w = {'f': 1.5, 's': 'xnan'} WHERE w.s = 'x-nan'"),
    (pa.map_(pa.string(), pa.float64()), lambda i: [("k-nan" if i == 0 else f"k{i}", -float("nan") if i % 2 else 1.0)],
     "UPDATE t SET w = MAP {'knan': 1.0} WHERE map_keys(w)[1] = 'k-nan'")])
def test_kept_nested_text_beside_floats_edited_is_untrue(monkeypatch, tmp_path, kind, value, edit):
    """The first form of the sign-free re-check took '-nan' out of the whole text of a nested value:
    a string 'x-nan' inside a struct holding a float, or a map key, edited to 'xnan', was verified
    (review h1 of the eighty-fifth round). Only a float's NaN loses its sign: the edit is untrue."""
    rows = _signed_nan_rows().drop_columns(["w"]).append_column("w", pa.array([value(i) for i in range(60)], kind))
    with sqlclose.anonymize(rows, SIGNED_NAN_SPEC) as release:
        corrupt_on_write(monkeypatch, release.problem.engine, tmp_path / "control", [])
        assert release.write_parquet(tmp_path / "control" / "r.parquet")["verified"] is True
        monkeypatch.undo()
        msg = rejected(monkeypatch, release, tmp_path, [edit])
    assert "1 written row is not a row of the input generalized at the levels the labels show" in msg
