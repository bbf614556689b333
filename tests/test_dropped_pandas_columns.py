"""A pandas period or interval column, or an ``object`` column (``uuid.UUID``, ``Decimal``), is refused only
where the release holds it (docs/bad-input.md, eighty-fifth round): dropped (an identifier, or
``others = "drop"``) it was refused all the same, while the same frame as an Arrow table was released. A
dropped one reaches neither the release nor its report. The oracle: the frame's own columns and values."""

from __future__ import annotations

import decimal
import json
import uuid

import pandas as pd
import pyarrow.parquet as pq
import pytest

import sqlclose

ROWS = 12
SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": ["a", "b"]}}},
        "sensitive": {"s": {"distinct_l": 2}}}


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"g": ["a", "b"] * (ROWS // 2), "s": ["x", "y", "z"] * (ROWS // 3),
                         "month": pd.period_range("2000-01", periods=ROWS, freq="M"),
                         "span": pd.IntervalIndex.from_breaks(range(ROWS + 1)),
                         "id": [uuid.UUID(int=7 ** 30 + i) for i in range(ROWS)],
                         "fee": [decimal.Decimal("1234.5") + i for i in range(ROWS)]})


@pytest.mark.parametrize("dropped", [{"identifiers": ["month", "span", "id", "fee"]}, {"others": "drop"}])
def test_dropped_period_interval_and_object_columns_are_read_and_left_out(tmp_path, dropped):
    frame = _frame()
    out = tmp_path / "out.parquet"
    with sqlclose.anonymize(frame, {**SPEC, **dropped}) as release:
        release.write(str(out))
    written = pq.read_table(out)
    assert written.column_names == ["g", "s"]
    assert sorted(zip(written.column("g").to_pylist(), written.column("s").to_pylist())) == \
        sorted(zip(frame["g"], frame["s"]))
    report = out.with_name(out.name + ".report.json").read_text()
    json.loads(report)
    for value in [*map(str, frame["id"]), "1234.5", "2000-01", "(0, 1]"]:
        assert value not in report


@pytest.mark.parametrize(("column", "fix"), [("id", "df['id'] = df['id'].astype(\"string\")"),
                                             ("fee", "df['fee'] = df['fee'].astype(pd.ArrowDtype(pa.decimal128("),
                                             ("month", "df['month'].astype(str)")])
def test_a_kept_one_is_refused_with_a_fix_that_works(column, fix):
    frame = _frame()
    others = [c for c in ("month", "span", "id", "fee") if c != column]
    spec = {**SPEC, "identifiers": others, "others": "keep"}
    with pytest.raises(sqlclose.InputError) as caught:
        sqlclose.anonymize(frame, spec)
    assert fix in str(caught.value), caught.value
    if column == "id":  # the fix it gives: the UUIDs' text (a float's cast of a UUID fails)
        frame["id"] = frame["id"].astype("string")
        with sqlclose.anonymize(frame, spec) as release:
            assert sorted(release.to_arrow().column("id").to_pylist()) == sorted(str(u) for u in _frame()["id"])
