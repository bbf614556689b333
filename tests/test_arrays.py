"""Arrow tables and NumPy arrays built without pandas (sqlclose.model.arrays) and factorize
(sqlclose.model.factorize): each equals what pyarrow's own constructors, ``to_numpy`` and
``pandas.factorize`` give on the same input (the oracles)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sqlclose.model.arrays import arrow_array, arrow_table, decoded_strings, leaf_labels, numpy_of
from sqlclose.model.factorize import _by_sort, factorize, sorted_unique
from sqlclose.model.hierarchy import mask_hierarchy

INPUTS = [
    ["a", "bé", "", "日本", "x" * 300],
    ["47677", "", "4767*", "a\x00b", "x" * 300],  # ASCII alone: joined and encoded at once
    [np.str_("ab"), "c"],               # a subclass of str is text too
    ["a", None, "c", None],
    [None, "only"],
    [1, -2, 2**62, 0],
    [1.5, -0.0, 1e300],
    [True, False],                     # left to pa.array (bool lists are rare here)
    [],                                # pa.array's null type
    (3, 4),
    np.array([5, 6, 7], dtype=np.int64),
    np.array([5, 6], dtype=np.int32),
    np.array([0.5, 2.0]),
    np.array([True, False, True, True, False, False, True, True, False]),
    np.arange(10, dtype=np.int64)[::3],  # not contiguous
    np.array(["x", "y", None], dtype=object),
    np.array([[1, 2]]),                # 2-D: left to pa.array
]


@pytest.mark.parametrize("values", INPUTS, ids=range(len(INPUTS)))
def test_arrow_array_equals_pa_array(values):
    try:
        expected = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as e:
        with pytest.raises(type(e)):
            arrow_array(values)
        return
    got = arrow_array(values)
    got.validate(full=True)
    assert got.type == expected.type and got.equals(expected)


@pytest.mark.parametrize(("values", "kind"), [
    (["a", "b"], pa.string()), ([1, 2], pa.int64()), ([1, 2], pa.float64()), ([], pa.string()),
    ([np.int64(3), 4, np.int32(5)], pa.int64()), ([np.float64(0.5), 1], pa.float64()), (["x", None], pa.string()),
])
def test_arrow_array_with_a_type_equals_pa_array(values, kind):
    got = arrow_array(values, kind)
    got.validate(full=True)
    assert got.equals(pa.array(values, kind))


@pytest.mark.parametrize(("values", "kind"), [([1.5], pa.int64()), ([1.0], pa.int64()), (["a"], pa.int64()),
                                               ([2**64], pa.int64()), ([True], pa.int64()), ([1], pa.string())])
def test_values_unlike_their_type_behave_as_in_pyarrow(values, kind):
    """Either both refuse, or both build the same array (pyarrow's own rules, not ours)."""
    try:
        expected = pa.array(values, kind)
    except (pa.ArrowException, OverflowError, TypeError) as e:
        with pytest.raises(type(e)):
            arrow_array(values, kind)
        return
    assert arrow_array(values, kind).equals(expected)


def test_arrow_table_equals_pa_table():
    columns = {"value": ["a", "b", None], "code": [0, 1, 2], "n": np.array([1.0, 2.0, 3.0]),
               "keep": np.array([True, False, True])}
    expected = pa.table(columns)
    got = arrow_table(columns)
    got.validate(full=True)
    assert got.schema == expected.schema and got.equals(expected)
    schema = pa.schema([("value", pa.string()), ("code", pa.int64()), ("n", pa.float64()), ("keep", pa.bool_())])
    assert arrow_table(columns, dict(zip(schema.names, schema.types))).equals(pa.table(columns, schema=schema))


def _chunked(kind: pa.DataType, n: int) -> pa.ChunkedArray:
    if kind == pa.bool_():
        values = (np.arange(n) % 3 == 0)
    else:
        values = np.arange(n).astype(kind.to_pandas_dtype())
    return pa.chunked_array([pa.array(values[:n // 3]), pa.array(values[n // 3:])], kind)


@pytest.mark.parametrize("kind", [pa.int64(), pa.int32(), pa.uint8(), pa.float64(), pa.float32(), pa.bool_()])
def test_numpy_of_equals_to_numpy(kind):
    column = _chunked(kind, 100)
    for case in (column, column.slice(7, 80), pa.chunked_array([column.combine_chunks()]).slice(13, 50),
                 pa.chunked_array([], kind)):
        got, expected = numpy_of(case), case.to_numpy()
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
        assert got.flags.writeable == expected.flags.writeable  # a view stays read-only, as to_numpy's
        single = case.chunks[0] if case.num_chunks else None
        if single is not None:
            assert np.array_equal(numpy_of(single), single.to_numpy(zero_copy_only=False))


def test_numpy_of_with_nulls_or_strings_is_to_numpy():
    for column in (pa.chunked_array([[1, None, 3]]), pa.chunked_array([["a", "b"]]), pa.chunked_array([], pa.string())):
        got, expected = numpy_of(column), column.to_numpy()
        assert got.dtype == expected.dtype
        assert list(map(str, got)) == list(map(str, expected))


@pytest.mark.parametrize(("n", "span"), [(0, 5), (1, 5), (17, 3), (1000, 40), (50_000, 10**15)])
def test_factorize_is_pandas_factorize(n, span):
    values = np.random.default_rng(n).integers(-span, span, n).astype(np.int64)
    codes, uniques = _by_sort(values)
    expected_codes, expected_uniques = pd.factorize(values)
    assert codes.dtype == expected_codes.dtype and np.array_equal(codes, expected_codes)
    assert uniques.dtype == expected_uniques.dtype and np.array_equal(uniques, expected_uniques)
    assert np.array_equal(uniques[codes], values)
    codes, uniques = factorize(values)  # pandas is imported here: this takes its path
    assert np.array_equal(codes, expected_codes) and np.array_equal(uniques, expected_uniques)


@pytest.mark.parametrize("values", [np.array([], dtype=np.int64), np.array([3]), np.array([2, 2, 2]),
                                    np.array([5, -1, 5, 3, -1, 0], dtype=np.int32),
                                    np.array([[4, 1], [1, 9]]), np.array([True, False, True]),
                                    np.random.default_rng(3).integers(0, 50, 10_000)])
def test_sorted_unique_is_np_unique(values):
    got, expected = sorted_unique(values), np.unique(values)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_decoded_strings_are_the_labels_arrow_builds_from_a_list():
    """Oracle: pyarrow's own array of the labels picked per row in Python."""
    labels = ["0-4", "ZIP 0213*", "Zürich", "€ 12", "*"]
    codes = np.random.default_rng(5).integers(0, len(labels), size=10_000)
    expected = pa.array([labels[c] for c in codes.tolist()], pa.string())
    assert decoded_strings(codes, labels).equals(expected)
    assert decoded_strings(np.zeros(0, dtype=np.int64), labels).equals(pa.array([], pa.string()))


def test_leaf_labels_are_the_hierarchy_rows_column_made_once():
    """Oracle: pyarrow's array of each row's label at the level, read from the hierarchy's rows."""
    h = mask_hierarchy([f"{z:05d}" for z in np.random.default_rng(3).choice(100_000, 2_000, replace=False)])
    for level in range(h.levels):
        expected = pa.array([row[level] for row in h.rows], pa.string())
        assert leaf_labels(h, level).equals(expected)
        assert leaf_labels(h, level) is leaf_labels(h, level)  # the lookups and the re-check share one


@pytest.mark.parametrize("values", [["1", "10", "2", None, "x" * 300, ""], [str(i) for i in range(70_000)], []])
def test_arrow_values_read_as_the_list_they_replace(values):
    """An ordered sensitive domain is kept as one Arrow array (``ArrowValues``: 631,908 values held
    38.5 MiB as Python strings). Oracle: the Python list of the same values, for everything a
    domain is asked (length, index, a slice, iteration across its batches, ``in``, equality)."""
    from sqlclose.model.arrays import ArrowValues

    held = ArrowValues(pa.chunked_array([pa.array(values[:3], pa.string()), pa.array(values[3:], pa.string())]))
    assert len(held) == len(values)
    assert list(held) == values and held == values and held == ArrowValues(pa.array(values, pa.string()))
    assert [held[i] for i in range(-min(3, len(values)), len(values), max(1, len(values) // 7))] == \
        [values[i] for i in range(-min(3, len(values)), len(values), max(1, len(values) // 7))]
    assert held[1:4] == values[1:4]
    for probe in [*values[:4], *values[-2:], "absent", None, 7, b"1"]:
        assert (probe in held) == (probe in values), probe
    if values:
        with pytest.raises(IndexError):
            held[len(values)]
    assert held != values + ["more"]
