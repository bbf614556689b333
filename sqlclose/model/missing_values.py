"""A missing value given from Python or TOML where a hierarchy names a value: told from a value, and refused.

A tree's group is often a column's values (``df.age.unique()``), and a column with NULLs gives
them as None, NaN (a float column's, numpy's, TOML's ``nan``), pandas' NA or NaT. Each was written as
a leaf's text ('None', 'nan', '<NA>'): a value no row holds, or one a text column spelling it does
(review of the ninety-seventh round). So was one in a row of labels (``Hierarchy.from_rows``), and
one as a tree's key, a group's name (``df.groupby(…, dropna=False)``'s NaN group). Each is refused
where it stands: a leaf (``refuse_missing_leaf``), a row's label (``refuse_missing_label``), a key
(``refuse_missing_key``). A NULL of the data follows its column's nulls policy instead.
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


def refuse_missing_label(label: object, where: str, level: int) -> None:
    """Refuse ``label`` (``is_missing``, None included) at ``level`` of a hierarchy's row (``where``: its
    origin, row and level), which was written as its text ('nan'): the leaf (level 0) as a missing leaf
    is, a group's label as a label every leaf needs, as text."""
    if level == 0:
        raise HierarchyError(f"{where}: the leaf is a missing value ({label!r}): a missing value is no leaf; "
                             f"{NULL_FOLLOWS_ITS_POLICY}: leave it out of the rows")
    raise HierarchyError(f"{where}: the label is a missing value ({label!r}); every leaf needs a label at every "
                         "level (leaf, …, top), as text")


def refuse_missing_key(key: object, where: Callable[[], str]) -> None:
    """Refuse ``key`` (``is_missing``, None included), a tree's key naming a group (``where``: the table's
    words, made only now), which was the group's label as its text ('nan', 'None')."""
    raise HierarchyError(f"{where()} has a missing value ({key!r}) as a key: a missing value names no group (it was "
                         f"taken as the text {str(key)!r}); give the group a name as text (\"unknown\")")
