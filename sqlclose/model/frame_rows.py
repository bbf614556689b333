"""A pandas DataFrame given as a hierarchy's rows (``Hierarchy.from_rows(df)``), and a pandas array,
Index or Series given as a tree's group of leaves (``{"*": df["city"].unique()}``).

A hierarchy file read with ``pd.read_csv(path, sep=";", header=None)`` is the natural way to hold
"rows as a file's lines" in pandas, and iterating a DataFrame yields its column labels: each was
taken for a row (``TypeError: 'int' object is not iterable``, review of the ninety-sixth round).
pandas is interop only: it is never imported here, only recognised when the caller has it loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from sqlclose.errors import HierarchyError
from sqlclose.model.missing_values import refuse_missing_leaf

# What to do for a cell pandas reads as missing: read the file as text, or give the file itself.
READ_AS_TEXT = ("read a hierarchy file as text, pd.read_csv(path, sep=\";\", header=None, dtype=str, "
                "keep_default_na=False), or give the file itself (file = path)")


def is_data_frame(value: object) -> bool:
    """Whether ``value`` is a pandas DataFrame (pandas loaded by the caller, never here)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


def data_frame_rows(frame: Any, origin: str) -> list[tuple[object, ...]]:
    """The DataFrame's rows, each its cells in column order (its column labels and its index are
    no part of a row), each cell as its column holds it (a numpy value for a typed column: a
    datetime64 keeps its nanoseconds, which a pandas Timestamp's text drops). A cell pandas reads
    as missing (NaN, None, NA, NaT: ``read_csv`` reads an empty field, ``NA`` and ``null`` so) is
    refused, naming its row and level: it was no label of the file, and its text ('nan') is none."""
    pandas = sys.modules["pandas"]
    missing = pandas.isna(frame).to_numpy()
    if missing.any():
        row, level = (int(i) for i in np.argwhere(missing)[0])
        cell = frame.iat[row, level]
        raise HierarchyError(f"{origin}, row {row + 1}, level {level}: the cell is missing ({cell!r} in the "
                             "DataFrame); a hierarchy has a label at every level (leaf, …, top), and pandas reads an "
                             f"empty field, NA, null and the like as missing: {READ_AS_TEXT}")
    columns = [frame.iloc[:, level].to_numpy() for level in range(frame.shape[1])]
    return list(zip(*columns))


def is_pandas_array(value: object) -> bool:
    """Whether ``value`` is a pandas array (an ExtensionArray: what ``.unique()`` gives of a string,
    categorical, nullable or datetime column — of any text column from pandas 3 on), Index or
    Series, each one-dimensional (pandas loaded by the caller, never here)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, (pandas.api.extensions.ExtensionArray, pandas.Index,
                                                     pandas.Series))


def pandas_leaves(values: Any, group: Callable[[], str]) -> np.ndarray:
    """A pandas array's (Index's, Series') values as numpy holds them (``to_numpy``), to be taken
    as a numpy array's are: a datetime64 keeps its nanoseconds, an Int64's 3 stays 3. A value pandas
    reads as missing (NA, NaN, NaT, None: a NULL of the column) is refused first, as None among a
    group's leaves is (an Int64 array holding NA gave its numbers as floats, 3 as 3.0): its text
    ('<NA>', 'nan') is no value of the column. ``group``: the group's words for the error, made only
    then."""
    pandas = sys.modules["pandas"]
    missing = np.asarray(pandas.isna(values))
    if missing.any():
        refuse_missing_leaf(values.to_numpy(dtype=object)[int(np.argmax(missing))], group, in_pandas=True)
    return values.to_numpy()
