"""Arrow columns DuckDB would read as something else, or not at all (sqlclose/prepare/arrow_shapes.py):
refused by column before the engine reads them (review h2 of the eighty-fifth round)."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import sqlclose
from sqlclose.errors import InputError

SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"age": {"bands": [10]}}, "sensitive": {"d": {"distinct_l": 2}},
        "others": "keep"}


def _rows(**columns: pa.Array) -> pa.Table:
    return pa.table({"age": [20, 21, 30, 31], "d": ["x", "y", "x", "y"], **columns})


class _Celsius(pa.ExtensionType):
    """A user's extension type over int64 (tenths of a degree)."""

    def __init__(self) -> None:
        super().__init__(pa.int64(), "acme.celsius")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls()


def test_a_pandas_period_in_an_arrow_table_is_refused():
    """Given as a DataFrame, a period column was refused; made into an Arrow table first, it was
    released as its months since 1970 (2001-07 as 378). Oracle: the months pandas gives, 378 and
    more, appear nowhere in the message; the column's text, the fix, is released as pandas writes it."""
    months = pd.period_range("2001-07", periods=4, freq="M")
    table = pa.Table.from_pandas(pd.DataFrame({"age": [20, 21, 30, 31], "d": ["x", "y", "x", "y"], "m": months}),
                                 preserve_index=False)
    with pytest.raises(InputError, match=r"column 'm' is of the Arrow extension type 'pandas.period'") as refused:
        sqlclose.anonymize(table, SPEC)
    assert "378" not in str(refused.value)
    fixed = _rows(m=pa.array(months.astype(str)))
    with sqlclose.anonymize(fixed, SPEC) as release:
        assert sorted(release.to_arrow().column("m").to_pylist()) == sorted(months.astype(str))


def test_an_extension_type_of_a_users_own_is_refused():
    storage = pa.array([215, 220, 230, 199], pa.int64())
    column = pa.ExtensionArray.from_storage(_Celsius(), storage)
    with pytest.raises(InputError, match=r"column 't' is of the Arrow extension type 'acme.celsius'.*\(int64\)"):
        sqlclose.anonymize(_rows(t=column), SPEC)


def test_an_arrow_uuid_is_read():
    """Arrow's own extension types DuckDB reads as their values: a UUID is released as its text."""
    import uuid

    values = [uuid.UUID(int=i) for i in range(4)]
    column = pa.array([u.bytes for u in values], pa.uuid())
    with sqlclose.anonymize(_rows(u=column), SPEC) as release:
        assert sorted(map(str, release.to_arrow().column("u").to_pylist())) == sorted(map(str, values))


def test_pandas_row_index_kept_by_from_pandas_is_refused():
    """pa.Table.from_pandas keeps a filtered frame's index as __index_level_0__: with others = "keep"
    each row's place in the whole table was released. A named index is a column of its own."""
    frame = pd.DataFrame({"age": range(20, 40), "d": ["x", "y"] * 10})
    kept = pa.Table.from_pandas(frame[frame.age % 3 > 0])
    assert "__index_level_0__" in kept.column_names
    with pytest.raises(InputError, match=r"column '__index_level_0__' is pandas' row index.*preserve_index=False"):
        sqlclose.anonymize(kept, SPEC)
    named = pa.Table.from_pandas(frame[frame.age % 3 > 0].rename_axis("row"))
    with sqlclose.anonymize(named, SPEC | {"identifiers": ["row"]}) as release:
        assert "row" not in release.to_arrow().column_names and release.to_arrow().num_rows == 13


@pytest.mark.parametrize(("column", "said"), [
    (pa.array([[("k", 1), ("k", 2)], [("k", 1)], [], None], pa.map_(pa.string(), pa.int64())),
     "a map with one key twice"),
    (pa.array([[[("k", 1)]], [[("j", 1), ("j", 1)]], [], None], pa.list_(pa.map_(pa.string(), pa.int64()))),
     "a map with one key twice"),
    (pa.array([{}, {}, None, {}], pa.struct([])), "a struct of no fields"),
])
def test_columns_the_engine_cannot_read_are_refused_by_name(column, said):
    """A map holding a key twice failed mid-run as "a value could not be converted" naming no column
    (exit 1); a struct of no fields failed at the write. Both are refused before the search."""
    with pytest.raises(InputError, match=rf"column 'x' \(.*\) holds {said}"):
        sqlclose.anonymize(_rows(x=column), SPEC)


def test_maps_with_a_key_in_several_entries_are_read():
    column = pa.array([[("k", 1), ("j", 2)], [("k", 1)], [("k", 3)], None], pa.map_(pa.string(), pa.int64()))
    with sqlclose.anonymize(_rows(x=column), SPEC) as release:
        assert release.to_arrow().num_rows == 4


def test_a_dataframe_subclass_is_read_and_a_table_of_no_columns_refused():
    """Review h2 of the eighty-fifth round: a DataFrame subclass (as geopandas' is) was refused as
    "a source of type MyFrame"; an Arrow table of no columns failed as "a value could not be
    converted". Oracle: the subclass's release holds the plain frame's rows."""

    class MyFrame(pd.DataFrame):
        @property
        def _constructor(self):
            return MyFrame

    frame = pd.DataFrame({"age": [20, 21, 30, 31], "d": ["x", "y", "x", "y"]})
    with sqlclose.anonymize(MyFrame(frame), SPEC) as release:
        assert release.to_arrow().num_rows == 4
    with pytest.raises(InputError, match="the arrow table has no columns"):
        sqlclose.anonymize(pa.table({}), SPEC)
