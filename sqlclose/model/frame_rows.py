"""A pandas DataFrame given as a hierarchy's rows (``Hierarchy.from_rows(df)``).

A hierarchy file read with ``pd.read_csv(path, sep=";", header=None)`` is the natural way to hold
"rows as a file's lines" in pandas, and iterating a DataFrame yields its column labels: each was
taken for a row (``TypeError: 'int' object is not iterable``, review of the ninety-sixth round).
pandas is interop only: it is never imported here, only recognised when the caller has it loaded.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from sqlclose.errors import HierarchyError

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
