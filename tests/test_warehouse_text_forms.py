"""The warehouse path over values whose text and equality disagree: a column under a
case-insensitive collation ('M' = 'm'), and floating-point columns holding -0.0 beside 0.0 or
NaN beside -NaN. A DuckDB database plays the warehouse; every oracle is a plain GROUP BY or
count over the table or the exported release, or a hierarchy read by hand."""

from __future__ import annotations

import duckdb
import pytest
from warehouse_steps import histogram_in_warehouse, invoke, release_in_warehouse, warehouse_spec

SEX_K2 = """
[privacy]
k = 2
[quasi_identifiers]
sex = { tree = { "*" = ["M", "F"] } }
"""


def _nocase_table(db, rows: str) -> None:
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t(sex VARCHAR COLLATE NOCASE, disease VARCHAR)")
    con.execute(f"INSERT INTO t VALUES {rows}")
    con.close()


def test_a_nocase_column_is_counted_byte_for_byte_so_a_spelling_off_the_hierarchy_is_refused(tmp_path):
    """Was: the histogram's GROUP BY ran under the column's NOCASE collation and counted 'M' and
    'm' as one value of 2 rows; level 0 was chosen, the release gave each row its own spelling
    (classes 'M': 1 and 'm': 1) and the verification query, grouping under the same collation,
    returned ok = true. Now the histogram groups bytes: 'm' is its own value, and the hierarchy
    (read by hand: leaves M and F) has no leaf 'm', so the run is refused as the local path
    refuses it, naming the column and the value's count, and nothing is written."""
    db = tmp_path / "wh.duckdb"
    _nocase_table(db, "('M', 'flu'), ('m', 'cold'), ('F', 'flu'), ('F', 'cold')")
    spec = warehouse_spec(tmp_path, "t", ["sex", "disease"], SEX_K2, top='others = "keep"')
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    r = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec)
    assert r.exit_code == 2, r.output
    # 'm' counted on its own (1 value, in 1 row), told as differing from a leaf in case; not shown
    assert "column 'sex' holds 1 value (in 1 row) that is not a leaf" in r.output and "1 of them differs from a leaf " \
        "only in upper and lower case" in r.output, r.output
    assert "'m'" not in r.output, r.output
    assert not (tmp_path / "release.sql").exists()
    # The command the error gives to see the values, with the histogram as its data, names it
    # (review of the ninety-first round: without --data it refused the warehouse's spec).
    lister = "sqlclose hierarchy validate SPEC.toml:sex --data HISTOGRAM --show-values"
    assert lister in " ".join(r.output.split()), r.output
    named = invoke("hierarchy", "validate", f"{spec}:sex", "--data", tmp_path / "h.parquet", "--show-values")
    assert named.exit_code == 2 and "'m' (1 row)" in named.output, named.output


def test_both_spellings_in_the_hierarchy_are_two_classes_each_row_released_once(tmp_path):
    """Was: with leaves 'M' and 'm', each row joined both lookup rows under the NOCASE collation
    (six table rows gave more released rows). Now each row joins its own spelling once: the
    released table has the table's 6 rows (oracle: the INSERT), its classes as a plain GROUP BY
    over the exported bytes have 2 rows each (k = 2), and the verification query says ok."""
    db = tmp_path / "wh.duckdb"
    _nocase_table(db, "('M', 'flu'), ('M', 'cold'), ('m', 'flu'), ('m', 'cold'), ('F', 'flu'), ('F', 'cold')")
    spec = warehouse_spec(tmp_path, "t", ["sex", "disease"],
                          SEX_K2.replace('["M", "F"]', '["M", "m", "F"]'), top='others = "keep"')
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    r = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec)
    assert r.exit_code == 0, r.output
    released, verify = release_in_warehouse(db, tmp_path)
    sizes = dict(duckdb.connect().execute(f"SELECT sex, count(*) FROM '{released}' GROUP BY sex").fetchall())
    assert sizes == {"M": 2, "m": 2, "F": 2}
    assert verify["ok"] is True and verify["released_rows"] == 6 and verify["classes"] == 3, verify


SCORE_L2 = SEX_K2 + "[sensitive.score]\ndistinct_l = 2\n"


@pytest.mark.parametrize("values, told", [
    ("CAST('-0.0' AS DOUBLE), 0.0", "both -0.0 and 0.0"),
    ("-CAST('nan' AS DOUBLE), CAST('nan' AS DOUBLE)", "NaN both with and without a minus sign"),
])
def test_one_float_written_two_ways_in_a_counted_column_is_refused(tmp_path, values, told):
    """Was: the histogram casts a DOUBLE sensitive column to text, so -0.0 and 0.0 (or -nan and
    nan) counted as two values; the run claimed distinct l = 2 for the class M, whose released
    scores are one number (oracle: count(DISTINCT score) over the table's M rows is 1). Now the
    run is refused (exit 2) as the local path refuses such a column, naming the column and what
    it holds, and nothing is written."""
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t(sex VARCHAR, score DOUBLE)")
    m1, m2 = values.split(", ")
    con.execute(f"INSERT INTO t VALUES ('M', {m1}), ('M', {m2}), ('F', 1.5), ('F', 2.5)")
    assert con.execute("SELECT count(DISTINCT score) FROM t WHERE sex = 'M'").fetchone()[0] == 1
    con.close()
    spec = warehouse_spec(tmp_path, "t", ["sex", "score"], SCORE_L2)
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    r = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec)
    assert r.exit_code == 2, r.output
    assert "column 'score'" in r.output and told in r.output and "sqlclose sql" in r.output, r.output
    assert not (tmp_path / "release.sql").exists()


def test_a_nocase_sensitive_column_is_verified_byte_for_byte(tmp_path):
    """Was (review rv26): the histogram counts a sensitive column's text byte for byte, but
    release.verify.sql counted COUNT(DISTINCT disease) under the column's NOCASE collation: the
    class M ('flu', 'Flu') held one value there, so a valid distinct-2 release said
    min_distinct_s0 = 1, ok = false. Now the verification counts bytes, as the histogram does.
    Oracle: a plain GROUP BY over the exported release's bytes (each class holds 2 diseases)."""
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t(sex VARCHAR, disease VARCHAR COLLATE NOCASE)")
    con.execute("INSERT INTO t VALUES ('M', 'flu'), ('M', 'Flu'), ('F', 'flu'), ('F', 'cold')")
    con.close()
    spec = warehouse_spec(tmp_path, "t", ["sex", "disease"], SEX_K2 + "[sensitive.disease]\ndistinct_l = 2\n")
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    r = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec)
    assert r.exit_code == 0, r.output
    released, verify = release_in_warehouse(db, tmp_path)
    least = duckdb.connect().execute(f"SELECT min(d) FROM (SELECT count(DISTINCT disease) AS d "
                                     f"FROM '{released}' GROUP BY sex)").fetchone()[0]
    assert least == 2
    assert verify["min_distinct_s0"] == 2 and verify["ok"] is True, verify


def test_a_nocase_sensitive_column_with_a_stand_in_is_verified_byte_for_byte(tmp_path):
    """The same with nulls = "value": the verification's COALESCE(text, stand-in) also counted
    under the NOCASE collation (2 values in each class). Oracle: the release's bytes by hand:
    class M holds 'flu', 'Flu' and NULL (read as the stand-in 'none'), class F 'flu', 'FLU' and
    'cold': 3 values each."""
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t(sex VARCHAR, disease VARCHAR COLLATE NOCASE)")
    con.execute("INSERT INTO t VALUES ('M', 'flu'), ('M', 'Flu'), ('M', NULL), "
                "('F', 'flu'), ('F', 'FLU'), ('F', 'cold')")
    con.close()
    body = SEX_K2 + '[sensitive.disease]\ndistinct_l = 2\nnulls = "value"\nnull_value = "none"\n'
    spec = warehouse_spec(tmp_path, "t", ["sex", "disease"], body)
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    r = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec)
    assert r.exit_code == 0, r.output
    _, verify = release_in_warehouse(db, tmp_path)
    assert verify["min_distinct_s0"] == 3 and verify["ok"] is True, verify


def test_rows_differing_only_in_case_are_released_in_byte_order_whatever_the_storage_order(tmp_path):
    """Was (review D of the ninety-seventh round): the release's ORDER BY sorted a column released as
    it is (sex at level 0, the sensitive disease) under its NOCASE collation, where 'M' = 'm' and
    'flu' = 'Flu': rows differing only there came out in the table's storage order, which the
    release must not tell. Now each such key is followed by its text byte for byte. Oracle: the same
    rows stored in two orders give one release, the rows sorted by hand in byte order (uppercase first)."""
    rows = [("M", "flu"), ("m", "Flu"), ("M", "Flu"), ("m", "flu"), ("F", "flu"), ("F", "cold")]
    expected = [("F", "cold"), ("F", "flu"), ("M", "Flu"), ("M", "flu"), ("m", "Flu"), ("m", "flu")]
    body = SEX_K2.replace('["M", "F"]', '["M", "m", "F"]') + "[sensitive.disease]\ndistinct_l = 2\n"
    released = []
    for name, stored in (("forward", rows), ("reversed", rows[::-1])):
        folder = tmp_path / name
        folder.mkdir()
        db = folder / "wh.duckdb"
        con = duckdb.connect(str(db))
        con.execute("CREATE TABLE t(sex VARCHAR COLLATE NOCASE, disease VARCHAR COLLATE NOCASE)")
        con.executemany("INSERT INTO t VALUES (?, ?)", stored)
        con.close()
        spec = warehouse_spec(folder, "t", ["sex", "disease"], body)
        histogram_in_warehouse(db, spec, folder / "h.parquet")
        r = invoke("anonymize", "--histogram", folder / "h.parquet", spec, "--node", "sex=0")
        assert r.exit_code == 0, r.output
        con = duckdb.connect(str(db))
        released.append(con.execute((folder / "release.sql").read_text()).fetchall())
        assert con.execute((folder / "release.verify.sql").read_text()).fetchone()[-1] is True
        con.close()
    assert released == [expected, expected], released
