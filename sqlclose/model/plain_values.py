"""A spec's values given from Python made the plain values a TOML spec holds.

From Python a hierarchy's values often come from pandas and numpy: a tree's group as
``df.age[df.age < 40].unique()`` (a numpy array) or ``range(43, 53)``, a domain as
``[np.int64(0), np.int64(120)]``. pydantic keeps them as given where a field takes any value (a
tree's leaves, a domain), and every later stage met them: the spec's hash (``canonical_json``)
stopped with a bare ``TypeError: ndarray`` after the data was read (review of the ninety-sixth
round). Made plain when the spec is validated, such a spec is its plain Python twin: the same
hierarchy, the same messages, the same hash.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import numpy as np

from sqlclose.errors import HierarchyError
from sqlclose.model.hierarchy import MOMENT_UNITS, group_labels, group_leaves, is_leaf_list, value_text
from sqlclose.model.missing_values import is_missing, refuse_missing_leaf
from sqlclose.model.text import shown


def plain_scalar(value: Any) -> Any:
    """A numpy scalar as the Python value it stands for: a bool, an int, a float (a float32's
    exact value), a str, a date (a datetime64 of days) or a datetime (of hours to microseconds, or
    nanoseconds in whole microseconds). Anything else as it is: a timedelta64, NaT, a month, bytes
    (the field's own check refuses it, naming it)."""
    if not isinstance(value, np.generic):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer) and not isinstance(value, np.timedelta64):  # an interval is an integer
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.str_):
        return str(value)
    if isinstance(value, np.datetime64):
        return _plain_moment(value)
    return value


def _plain_moment(value: np.datetime64) -> Any:
    unit, _ = np.datetime_data(value.dtype)
    if unit not in MOMENT_UNITS or np.isnat(value):
        return value
    micro = value.astype("datetime64[us]")
    moment = (value.astype("datetime64[D]") if unit == "D" else micro).item()
    # item() gives an int for what Python's datetime cannot hold (past year 9999, below a microsecond)
    return moment if isinstance(moment, datetime.date) and micro == value else value


def plain_list(values: Any) -> Any:
    """A list field's value (bands, mask, dates, a domain) given as a numpy array, a range or another
    sequence but text, as a list of plain values; anything else as it is, for the field to refuse."""
    if is_leaf_list(values):
        return [plain_scalar(v) for v in values]
    return values


def plain_tree(tree: Any, groups: tuple[str, ...] = ()) -> Any:
    """A tree's groups as plain values: each table a dict keyed by its groups' labels as the
    hierarchy names them (``str(label)``; two keys written alike, 1 and "1", refused: the dict kept
    the last one's leaves alone), each list of leaves (a numpy array, a range, a pandas array, any
    sequence but text) a list, each leaf given by numpy as ``plain_leaf`` makes it. What is neither (a
    set, None, a 2-dimensional array, a list among the leaves) is left as it is, for the tree's own
    refusal to name it. ValueError (for pydantic, which names the field) for what is refused here."""
    try:
        if isinstance(tree, Mapping):
            labels = group_labels(tree, groups)  # two keys written alike (1 and "1") refused: one key of a dict
            return {label: plain_tree(group, (*groups, label)) for label, group in zip(labels, tree.values())}
        if is_leaf_list(tree):
            return [plain_leaf(leaf, groups) for leaf in group_leaves(tree, lambda: f"group {_group_path(groups)}")]
    except HierarchyError as e:
        raise ValueError(str(e)) from None
    return tree


def _group_path(groups: tuple[str, ...]) -> str:
    """A group, its labels from the top, as the tree's own errors name it ('old > 60s', quoted)."""
    return shown(" > ".join(groups) or "(top)")


def plain_leaf(leaf: Any, groups: tuple[str, ...] = ()) -> Any:
    """A tree's leaf given as a numpy scalar as the Python value it stands for when that is
    written as the same text (``np.int64(43)`` as 43, a datetime64 of seconds as a datetime), else
    as its text (a datetime64 of nanoseconds, which no Python datetime holds). One without such a
    text (a float32, NaT) is refused (HierarchyError, naming its group: ``plain_tree`` makes it the
    ValueError pydantic names the field by), as the tree refuses it; so is a missing value but None
    (NaN, TOML's ``nan``, NA, NaT: ``missing_values``), which the spec's hash could not write or wrote
    as a leaf ('nan'). None is left to the tree, which names its column."""
    if leaf is not None and is_missing(leaf):
        refuse_missing_leaf(leaf, lambda: f"group {_group_path(groups)}")
    if not isinstance(leaf, np.generic):
        return leaf
    text = value_text(leaf, f"group {_group_path(groups)}")
    plain = plain_scalar(leaf)
    return plain if not isinstance(plain, np.generic) and value_text(plain, "leaf") == text else text
