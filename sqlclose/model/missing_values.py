"""A missing value given from Python or TOML where a tree lists its leaves: told from a value, and refused.

A tree's group is often a column's values (``df.age.unique()``), and a column with NULLs gives
them as None, NaN (a float column's, numpy's, TOML's ``nan``), pandas' NA or NaT. Each was written as
a leaf's text ('None', 'nan', '<NA>'): a value no row holds, or one a text column spelling it does
(review of the ninety-seventh round). A NULL of the data follows its column's nulls policy instead.
pandas is never imported here: its NA and NaT are recognised only when the caller has it loaded.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from decimal import Decimal

import numpy as np

from sqlclose.errors import HierarchyError

# What a NULL of the data is instead of a leaf of a tree (None or pandas' NA among its leaves).
NULL_FOLLOWS_ITS_POLICY = ("a NULL of the data follows its column's nulls policy (nulls = \"value\" reads it as its "
                           "null_value, a leaf to list as text)")


def is_missing(value: object) -> bool:
    """Whether ``value`` stands for no value: None, a NaN (a Python, numpy or Decimal one), a
    numpy NaT, pandas' NA or NaT. Text is told first: a tree's leaves are mostly text."""
    if value is None:
        return True
    if isinstance(value, str):
        return False
    if isinstance(value, (float, np.floating)):
        return math.isnan(value)
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(value))
    if isinstance(value, Decimal):
        return value.is_nan()
    pandas = sys.modules.get("pandas")
    return pandas is not None and (value is pandas.NA or value is pandas.NaT)


def refuse_missing_leaf(leaf: object, group: Callable[[], str], in_pandas: bool = False) -> None:
    """Refuse ``leaf`` (``is_missing``) among the leaves of ``group`` (its words, made only now):
    None as before, any other missing value by its repr (``nan``, ``<NA>``, ``NaT``), which holds
    none of the data's values; ``in_pandas``: found in a pandas array, which ``dropna`` leaves out."""
    if leaf is None and not in_pandas:
        raise HierarchyError(f"{group()} lists None among its leaves: a missing value is no leaf (it was taken as the "
                             f"text 'None'); {NULL_FOLLOWS_ITS_POLICY}: leave None out of the tree")
    written, advice = (f"{leaf!r} in pandas", " (….dropna().unique())") if in_pandas else (repr(leaf), "")
    raise HierarchyError(f"{group()} lists a missing value ({written}) among its leaves: a missing value is no leaf; "
                         f"{NULL_FOLLOWS_ITS_POLICY}: leave it out of the tree{advice}")
