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


def _maps(rows: list) -> pa.Array:
    return pa.array(rows, pa.map_(pa.string(), pa.int64()))


@pytest.mark.parametrize("cut", ["slice", "batches", "null map"])
def test_a_map_is_judged_by_its_own_entries(cut):
    """Review h3 of the eighty-fifth round: ``MapArray.keys`` are every entry of the buffers, a slice's
    neighbours and a NULL map's hidden entries too: a sliced table (a Parquet file read in batches,
    Table.slice) ended in Arrow's error, and a duplicate behind a NULL map was refused. Oracle: the
    release holds the rows' own maps, as Arrow gives them."""
    if cut == "null map":
        hidden = pa.MapArray.from_arrays(pa.array([0, 1, 3, 4, 5], pa.int32()), pa.array(["a", "z", "z", "b", "c"]),
                                         pa.array([1, 9, 9, 4, 5]), mask=pa.array([False, True, False, False]))
        table = _rows(m=hidden)
    else:
        whole = _rows(m=_maps([[("a", 1)], [("b", 2), ("c", 3)], [("d", 1)], [("e", 1)]]))
        dup = pa.table({"age": [99], "d": ["z"], "m": _maps([[("z", 9), ("z", 9)]])})
        joined = pa.concat_tables([dup, whole]).combine_chunks()
        table = joined.slice(1) if cut == "slice" else \
            pa.Table.from_batches(joined.slice(1).to_batches(max_chunksize=2))
    with sqlclose.anonymize(table, SPEC) as release:
        written = release.to_arrow().column("m").to_pylist()
    assert sorted(map(repr, written)) == sorted(map(repr, table.column("m").to_pylist()))


@pytest.mark.parametrize(("kind", "rows", "refused"), [
    (pa.map_(pa.list_(pa.int64()), pa.int64()), [[([1, 2], 1), ([3], 2)], [([2], 2)], [], None], False),
    (pa.map_(pa.struct([("p", pa.int64()), ("q", pa.int64())]), pa.int64()),
     [[({"p": 1, "q": 1}, 1), ({"p": 1, "q": 2}, 2)], [], [], None], False),
    (pa.map_(pa.float64(), pa.int64()), [[(0.0, 1), (-0.0, 2)], [], [], None], True),  # DuckDB: one key
])
def test_map_keys_are_compared_as_duckdb_compares_them(kind, rows, refused):
    """Keys of a nested type were compared by their first leaf (struct keys sharing a field refused,
    list keys of two lengths an Arrow error); 0.0 and -0.0, one key to DuckDB, passed and failed
    mid-run."""
    column = pa.array(rows, kind)
    if refused:
        with pytest.raises(InputError, match="holds a map with one key twice"):
            sqlclose.anonymize(_rows(m=column), SPEC)
        return
    with sqlclose.anonymize(_rows(m=column), SPEC) as release:
        assert release.to_arrow().num_rows == 4


@pytest.mark.parametrize("unreleased", [{"others": "drop"}, {"identifiers": ["__index_level_0__"]}])
def test_pandas_row_index_the_release_leaves_out_is_read(unreleased):
    """Review h3 of the eighty-fifth round: the kept index was refused even where no release holds
    it (dropped by others = "drop", or an identifier)."""
    frame = pd.DataFrame({"age": range(20, 40), "d": ["x", "y"] * 10})
    kept = pa.Table.from_pandas(frame[frame.age % 3 > 0])
    with sqlclose.anonymize(kept, SPEC | unreleased) as release:
        assert release.to_arrow().column_names == ["age", "d"]


def _fix_told(said: str, start: str) -> str:
    """The pandas statement of a refusal's advice, from ``start`` to the next comma, closing bracket or end."""
    told = said[said.index(start):]
    depth, end = 0, len(told)
    for i, char in enumerate(told):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if depth < 0 or (depth == 0 and char == ","):
            end = i
            break
    return told[:end]


@pytest.mark.parametrize(("label", "values", "shown", "released"), [
    ("it's", [20, "x", 30, "y"], "df[\"it's\"]", ["20", "30", "x", "y"]),
    (3, [20, "x", 30, "y"], "df[3]", ["20", "30", "x", "y"]),
    ("z", [1j, 2j, 3j, 4j], "df['z']", ["1j", "2j", "3j", "4j"])])
def test_a_pandas_columns_fix_names_the_column_as_python_quotes_it(label, values, shown, released):
    """A mixed object column and a complex one were told the fix with a placeholder, `df[col] =
    df[col].astype("string")`, `df[col].real`, where every other refusal names the column (`df['age']`).
    Named now as Python quotes the label (a quote in it, a whole number); the text fix, run as written,
    makes a DataFrame the run releases, the column as the text the test wrote by hand."""
    frame = pd.DataFrame({"age": [20, 21, 30, 31], "d": ["x", "y", "x", "y"], label: values})
    with pytest.raises(InputError) as refused:
        sqlclose.anonymize(frame, SPEC)
    said = str(refused.value)
    assert "df[col]" not in said, said
    if isinstance(values[0], complex):
        assert f"to its parts ({shown}.real, {shown}.imag)" in said, said
    fix = _fix_told(said, f"{shown}.astype(" if isinstance(values[0], complex) else f"{shown} = ")
    run = {"df": frame, "pd": pd}
    exec(fix if " = " in fix else f"df[{label!r}] = {fix}", run)
    with sqlclose.anonymize(run["df"], {**SPEC, "others": "keep"}) as release:
        assert sorted(release.to_arrow().column(str(label)).to_pylist()) == released


def test_a_pandas_period_in_an_arrow_tables_fix_names_the_column():
    """A pandas period in an Arrow table was told `df[col].astype(str)`; it names the column now, and run
    as written on the DataFrame the table was made from, the table made again is released, the months as
    pandas writes them (by hand)."""
    frame = pd.DataFrame({"age": [20, 21, 30, 31], "d": ["x", "y", "x", "y"],
                          "m": pd.period_range("2001-07", periods=4, freq="M")})
    with pytest.raises(InputError) as refused:
        sqlclose.anonymize(pa.Table.from_pandas(frame, preserve_index=False), SPEC)
    said = str(refused.value)
    fix = _fix_told(said, "df['m'].astype(")
    exec(f"df['m'] = {fix}", {"df": frame})
    with sqlclose.anonymize(pa.Table.from_pandas(frame, preserve_index=False), SPEC) as release:
        assert sorted(release.to_arrow().column("m").to_pylist()) == ["2001-07", "2001-08", "2001-09", "2001-10"]
