"""Bugs found in review, each pinned by the smallest input that showed it."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlclose


def test_to_arrow_with_bound_parameters():
    # nulls = "value" puts the stand-in into the release query as a bound parameter.
    table = pa.table({"age": [29, None, 27, 43]})
    release = sqlclose.anonymize(table, {"quasi_identifiers": {"age": {"bands": [10, 20], "nulls": "value"}}, "k": 1})
    got = release.to_arrow()
    assert sorted(got.column("age").to_pylist(), key=str) == sorted([29, None, 27, 43], key=str)


def test_null_value_branch_on_a_mask_hierarchy_reaches_the_mask_top():
    table = pa.table({"zip": ["47677", "47602", None]})
    release = sqlclose.anonymize(table, {"quasi_identifiers": {"zip": {"mask": True, "nulls": "value"}}, "k": 3})
    # k = 3 needs all three rows in one class: the top, where NULL's branch joins the codes.
    assert release.node == {"zip": 5}
    assert set(release.to_arrow().column("zip").to_pylist()) == {"*****"}


def test_null_value_on_a_sensitive_column_verifies(tmp_path):
    table = pa.table({"age": [29, 22, 27, 43], "d": ["flu", None, "flu", "cold"]})
    spec = {"quasi_identifiers": {"age": {"bands": [10]}},
            "sensitive": {"d": {"t": 1.0, "nulls": "value"}}, "k": 1}
    report = sqlclose.anonymize(table, spec).write_parquet(tmp_path / "r.parquet")
    assert report["verified"] is True
    assert pq.read_table(tmp_path / "r.parquet").num_rows == 4


@pytest.mark.parametrize("qi", [{"mask": True}, {"bands": [10]}])
def test_an_empty_source_is_bad_input(qi):
    table = pa.table({"zip": pa.array([], pa.string()) if "mask" in qi else pa.array([], pa.int64())})
    with pytest.raises(sqlclose.DataError, match="no rows"):
        sqlclose.anonymize(table, {"quasi_identifiers": {"zip": qi}})
