"""Generalization hierarchies: read, built from rules, validated, encoded.

A hierarchy is a table with one row per leaf: ``leaf; level 1; …; top`` (the ARX format).
Level 0 is the raw value, the last level is a single value for everything.

Encoding. Each leaf gets a *mixed-radix* integer code such that the code of its ancestor at
level ``l`` is ``leaf_code // divisors[l]``. Generalizing a column of codes — from the leaves
or from any finer level — is then one integer division in SQL: no join, no lookup, and it
transpiles to every engine. ``level_codes`` holds dense codes (0..n_l-1) per level, the form the
hierarchical EMD wants.
"""

from __future__ import annotations

import datetime
import json
import math
import numbers
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation, localcontext
from pathlib import Path
from typing import Any

import numpy as np
from sqlglot import exp

from sqlclose.errors import HierarchyError
from sqlclose.model.domains import band_cover, mask_cover, whole_numbers_within
from sqlclose.model.frame_rows import data_frame_rows, is_data_frame, is_pandas_array, pandas_leaves
from sqlclose.model.hierarchy_file import FileRows, read_rows
from sqlclose.model.mending import QUERY, is_warehouse
from sqlclose.model.missing_values import is_missing, refuse_missing_key, refuse_missing_label, refuse_missing_leaf
from sqlclose.model.refused_values import NumberType, Refusals, Refused, ValuesAt
from sqlclose.model.text import (
    NAMED_IN_UTF8,
    RENAME_IN_UTF8,
    clipped,
    counted,
    name_cut,
    name_shown,
    read_utf8,
    refuse_undecodable_path,
    shown,
    special_file,
    type_name,
    unexpanded_hint,
)

TOP_LABEL = "*"
USUAL_DELIMITERS = ";,\t"
TAB_HINT = 'a tab is written "\\t" in a TOML basic string (double quotes)'
_MAX_CODE = 2**62  # codes and products of codes must stay exact in BIGINT
# Bands cut numbers within 10^±4000 (a text column's; a float is within 10^±324): a label writes every
# digit of its edges, and past 4300 digits Python no longer writes an integer (1e999999999 overflowed).
MAX_BAND_EXPONENT = 4000


class LevelRows(Sequence[tuple[str, ...]]):
    """A rule-built hierarchy's rows (leaf, its label at each level, top), made from each level's
    labels and the rows' dense codes as they are read: one row by its index, or all of them (once)
    to iterate. The search, the lookups and the report read labels and codes, not rows: 99,832 ZIP
    codes' rows made as tuples were ~0.13 s of a job (docs/performance.md, fifty-second round)."""

    __hash__ = None  # type: ignore[assignment]  # compared by value, as a tuple of rows

    def __init__(self, labels: list[list[str]], dense: np.ndarray) -> None:
        self._labels, self._dense = labels, dense
        self._whole: tuple[tuple[str, ...], ...] | None = None

    def __len__(self) -> int:
        return len(self._dense)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.whole()[i]
        return tuple(labels[c] for labels, c in zip(self._labels, self._dense[i].tolist()))

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter(self.whole())

    def __eq__(self, other: object) -> bool:
        return self.whole() == (other.whole() if isinstance(other, LevelRows) else other)

    def __add__(self, other: tuple) -> tuple:
        return self.whole() + other

    def whole(self) -> tuple[tuple[str, ...], ...]:
        """Every row as a tuple, made once."""
        if self._whole is None:
            columns = [np.array(labels, dtype=object)[self._dense[:, level]].tolist()
                       for level, labels in enumerate(self._labels)]
            self._whole = tuple(zip(*columns))
        return self._whole


@dataclass(frozen=True, eq=False, repr=False)
class Hierarchy:
    """A validated generalization hierarchy.

    ``rows[i]`` is ``(leaf, ancestor at level 1, …, top)``; ``origin`` names where it came from
    (a file path or a rule) and ``lines`` the file line of each row, for error messages.

    A rule builds its hierarchy from the column's distinct values (``rule`` names it): its leaves then
    describe the input, suppressed rows included, and a count of them must not be published. When
    the spec declares the rule's domain (a mask's alphabet, a band's or a date's range), ``cover``
    holds, per row and level, how much of that domain the row's label covers (model/domains.py):
    NCP-like metrics count it instead of leaves, a function of the label alone. A file or a tree
    may list the data's values too; its leaves are counted for a report only when the spec declares
    them the column's domain (``leaves_declared``).
    """

    rows: Sequence[tuple[str, ...]]  # a tuple, or a rule's ``LevelRows``
    origin: str = "<inline>"
    lines: tuple[int, ...] | None = None
    # A rule that built the hierarchy level by level gives what validation would derive from its rows
    # (``_built``): each level's labels in order of first appearance and the rows' dense codes.
    _levels: InitVar[tuple[list[list[str]], np.ndarray] | None] = None
    rule: str | None = None  # mask, bands or dates: built from the column's values
    cover: np.ndarray | None = field(default=None, repr=False)  # rows × levels, see above
    leaves_declared: bool = False  # the spec declares the leaves the column's domain (domain = "leaves")
    # What is derived from the rows, computed once: validation, encodings, ``memo``'s structures.
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self, _levels: tuple[list[list[str]], np.ndarray] | None) -> None:
        if is_data_frame(self.rows) or isinstance(self.rows, np.ndarray):  # pandas' "truth value … is ambiguous"
            raise HierarchyError(f"{self.origin}: Hierarchy(rows) takes rows of text, not a {type_name(self.rows)}: "
                                 "give it to sqlclose.Hierarchy.from_rows, which writes each cell as text")
        validated = _levels if _levels is not None else _validate(self.rows, self.origin, self.lines)
        self._derived["validated"] = validated  # labels, dense codes

    # ---- construction -------------------------------------------------------------------
    def built_by(self, rule: str, cover: np.ndarray | None) -> Hierarchy:
        """This hierarchy marked as built by ``rule`` from the column's values, with its labels'
        ``cover`` of the declared domain (None when the spec declares none). Not validated again."""
        if cover is not None and cover.shape != (len(self.rows), self.levels):
            raise ValueError(f"{self.origin}: cover of shape {cover.shape} for {len(self.rows)} rows × "
                             f"{self.levels} levels")
        return Hierarchy(self.rows, self.origin, self.lines, self._derived["validated"], rule=rule, cover=cover)

    def with_leaves_declared(self) -> Hierarchy:
        """This hierarchy with its leaves declared the column's domain (``domain = "leaves"``): a
        file or tree listing a published code list, not the data's values."""
        return Hierarchy(self.rows, self.origin, self.lines, self._derived["validated"], rule=self.rule,
                         cover=self.cover, leaves_declared=True)

    @property
    def counts_data(self) -> bool:
        """Whether a count of leaves below a label may describe the input: a rule built this hierarchy
        from the column's values and the spec declares no domain for it, or a file or tree (which may
        list the data's values, as Table 3's age.csv does) whose leaves the spec does not declare the
        column's domain."""
        return self.cover is None and not self.leaves_declared

    @property
    def counted_cover(self) -> np.ndarray | None:
        """Per row and level, what NCP-like metrics count of its label (rows × levels): a rule's
        cover of its declared domain, or, for a file or tree whose leaves are the declared domain
        (``domain = "leaves"``), the leaves below the label; None when the count would describe the
        data (``counts_data``). Known without data: ``hierarchy show`` prints it."""
        if self.cover is not None or not self.leaves_declared:
            return self.cover
        dense = self.level_codes
        return np.column_stack([np.bincount(dense[:, level])[dense[:, level]]
                                for level in range(self.levels)]).astype(np.float64)

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[object]], origin: str = "<inline>") -> Hierarchy:
        """Rows of values written as text as a tree's leaf is (39 as '39', True as 'true': as the engine
        writes the column's value); None is no label and is refused, not written 'None'. A pandas
        DataFrame's rows are its rows, a missing cell refused (``frame_rows.data_frame_rows``); a row
        given as text (``"22;20s;*"``) is refused, not taken for a row of its characters."""
        if is_data_frame(rows):
            rows = data_frame_rows(rows, origin)
        return cls(tuple(tuple(_row_value_text(v, origin, i, level) for level, v in enumerate(_row(r, origin, i)))
                         for i, r in enumerate(rows)), origin)

    @classmethod
    def _built(cls, labels: list[list[str]], dense: np.ndarray, origin: str) -> Hierarchy:
        """A hierarchy a rule built level by level, valid by construction (distinct leaves, each
        label a function of the one below, one top): its ``labels`` per level, in order of first
        appearance, and each row's ``dense`` codes among them (rows × levels) are what validation
        would derive from its rows, so it is not validated again (99,832 masked ZIP codes: 0.115 of
        0.185 s), and its rows are made from them only when read (``LevelRows``).
        ``tests/test_hierarchy.py`` compares them with validation's."""
        return cls(LevelRows(labels, dense), origin, None, (labels, dense))

    @classmethod
    def from_csv(cls, path: str | Path, delimiter: str = ";", option: str | None = None) -> Hierarchy:
        """Read an ARX-format hierarchy file: one ``leaf;level1;…;top`` line per leaf. ``option``:
        the command-line option that gave the delimiter (``--delimiter``), which a hint about the
        delimiter then names instead of the spec's ``delimiter = "…"``."""
        refuse_undecodable_path(path, "cannot read the hierarchy file", RENAME_IN_UTF8, NAMED_IN_UTF8, HierarchyError)
        path = Path(path)
        if len(delimiter) != 1:  # one character, as CSV's: a longer one would split nothing as meant
            raise HierarchyError(f"hierarchy file {path}: the delimiter must be one character, not {delimiter!r}; "
                                 + (f"a tab is given as {option} '\\t'" if option else TAB_HINT))
        if delimiter in "\"\r\n":  # a quote opens a quoted field, a line break ends the line: neither splits
            raise HierarchyError(f"hierarchy file {path}: the delimiter cannot be {delimiter!r}, which "
                                 + ("quotes a field" if delimiter == '"' else "ends a line")
                                 + f" in a CSV file; give another {option or 'delimiter'} (such as ';' or ',')")
        if path.is_dir():
            raise HierarchyError(f"hierarchy file {path} is a folder: give the path of a CSV file with one "
                                 "'leaf;…;*' line per value")
        if (special := special_file(path)) is not None:
            raise HierarchyError(f"hierarchy file {path} is {special}, which gives its lines once: sqlclose reads a "
                                 "hierarchy more than once (its rows, its sha256 for the report); save it to a file "
                                 "first")
        try:
            text = read_utf8(path, f"hierarchy file {path}", HierarchyError)
        except FileNotFoundError:
            raise HierarchyError(f"hierarchy file {path} does not exist{unexpanded_hint(path)}") from None
        read = read_rows(text, delimiter, str(path))
        rows, lines = read.rows, read.lines
        if not rows:
            raise HierarchyError(f"hierarchy file {path} is empty: expected one 'leaf;…;*' line per value")
        _refuse_other_delimiter(rows, path, delimiter, option)
        if read.trimmed_leaves:
            _refuse_leaf_twice_once_trimmed(read, path)
        return cls(tuple(rows), str(path), tuple(lines))

    @classmethod
    def from_tree(cls, tree: Mapping, origin: str = "tree") -> Hierarchy:
        """Build from a nested mapping ``{group: {subgroup: [leaf, …]}}``.

        Several top-level keys get a common top ``*``; a single key is the top itself.
        """
        paths = [[_leaf_text(leaf, ancestors, origin), *ancestors]
                 for leaves, ancestors in _tree_groups(tree, [], origin) for leaf in leaves]
        rows = tuple(tuple(p) if len(tree) == 1 else (*p, TOP_LABEL) for p in paths)
        try:
            return cls(rows, origin)
        except HierarchyError:
            fault = _tree_fault(paths, origin, lambda: _given_leaves(tree, origin))  # in the tree's own terms
            if fault is None:
                raise
        raise HierarchyError(fault)

    # ---- shape --------------------------------------------------------------------------
    @property
    def height(self) -> int:
        """Number of generalization steps (levels minus one)."""
        return len(self.rows[0]) - 1

    @property
    def levels(self) -> int:
        return len(self.rows[0])

    @property
    def leaves(self) -> list[str]:
        return self.labels(0)  # distinct, in row order: validated (or built) so

    def labels(self, level: int) -> list[str]:
        """Distinct labels at ``level``, in the order of their dense codes."""
        return list(self._derived["validated"][0][level])

    def label_at_two_levels(self) -> tuple[str, str] | None:
        """A label that names a group of leaves at one level and another group at another (``x`` a
        leaf and also the parent of ``a`` and ``b``), with where and how said in a sentence; None if
        no label does.
        Full-domain generalization releases one level of a column, so such a label is harmless
        there; GAA releases several levels side by side, where the two groups would read as one."""
        labels, dense = self._derived["validated"]
        first = _first_rows(dense)  # per level, each code's first row
        sizes = [np.bincount(dense[:, level]) for level in range(self.levels)]
        codes_of: dict[str, list[tuple[int, int]]] = {}  # label → (level, its code there)
        for level, names in enumerate(labels):
            for code, name in enumerate(names):
                codes_of.setdefault(name, []).append((level, code))
        for name, ((low, c), *higher) in codes_of.items():
            # Levels nest: the group above the lower one's first leaf holds it; equal when as large.
            other = next(((level, code) for level, code in higher if sizes[level][code] != sizes[low][c]
                          or dense[first[low][c], level] != code), None)
            if other is not None:
                groups = [np.flatnonzero(dense[:, level] == code) for level, code in ((low, c), other)]
                # A rule's leaves are the rows' own values, which an error names none of (docs/bad-input.md).
                told = [f"{len(g):,} of the column's values" if self.rule is not None else
                        ", ".join(shown(self.rows[int(i)][0]) for i in g[:3]) + (", …" if len(g) > 3 else "")
                        for g in groups]
                # A rule or a tree has no rows to point to (its first row's number named nothing).
                where = self.origin if self.rule is not None or self.origin.startswith("tree") else \
                    _where(self.origin, self.lines, int(groups[1][0]))
                return name, (f"{where}: label {shown(name)} names {told[0]} at level {low} and {told[1]} "
                              f"at level {other[0]}")
        return None

    def levels_without_a_group(self) -> list[int]:
        """Levels above the leaves where every label has exactly one child (as many labels as the level
        below: a '*' over a single root, or a level repeating the one below). They group nothing, yet
        count in the height a hierarchical distance is divided by. None in a hierarchy of one leaf."""
        labels = self._derived["validated"][0]
        if len(labels[0]) < 2:
            return []
        return [level for level in range(1, self.levels) if len(labels[level]) == len(labels[level - 1])]

    # ---- encodings ----------------------------------------------------------------------
    @property
    def level_codes(self) -> np.ndarray:
        """Dense ancestor codes, shape (leaves, levels); column 0 is 0..m-1, the last all 0. Known
        once validated: a hierarchy too wide for mixed codes (``_encode``) still has them, and the
        re-check reads a release's hierarchies by them."""
        return self._derived["validated"][1]

    @property
    def leaf_codes(self) -> np.ndarray:
        """Mixed-radix code of each leaf (see module docstring)."""
        return self._encoding()["mixed"][:, 0]

    @property
    def code_range(self) -> int:
        """Every leaf code is below it: the range a packed key or a column type must hold. Computed
        once: the search's floor choices ask for it thousands of times (a 100 k-leaf ZIP's maximum)."""
        return self.memo("code_range", lambda: int(self.leaf_codes.max()) + 1)

    @property
    def divisors(self) -> list[int]:
        """``leaf_code // divisors[l]`` is the mixed-radix code of the ancestor at level l."""
        return list(self._encoding()["divisors"])

    def labels_by_code(self, level: int) -> dict[int, str]:
        """Each label at ``level`` by its mixed-radix code (``leaf_code // divisors[level]``): read
        from each label's first leaf, not from every row (a 100 k-leaf ZIP's rows are made only
        when read, ``LevelRows``)."""
        first = _first_rows(self.level_codes[:, level:level + 1])[0]  # each dense code's first leaf
        return dict(zip((self.leaf_codes[first] // self.divisors[level]).tolist(), self.labels(level)))

    def leaf_index(self, codes: np.ndarray) -> np.ndarray:
        """Mixed-radix leaf codes → their positions in ``leaves``."""
        order = self.memo("leaf_order", lambda: np.argsort(self.leaf_codes))
        return order[np.searchsorted(self.leaf_codes[order], codes)]

    def leaf_totals(self, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """(mixed-radix leaf code, count) pairs → the counts summed per leaf, in ``leaves`` order."""
        return np.bincount(self.leaf_index(codes), weights=counts, minlength=len(self.rows))

    def level_mixed_codes(self, level: int) -> np.ndarray:
        return self._encoding()["mixed"][:, level]

    def _encoding(self) -> dict:
        if "mixed" not in self._derived:
            self._derived.update(_encode(self.level_codes, self.origin))
        return self._derived

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """A structure derived from this hierarchy, computed once (a utility metric's tree: a
        release's report costs seven metrics over the same hierarchies)."""
        slot = ("memo", key)  # apart from the encodings' own keys
        if slot not in self._derived:
            self._derived[slot] = compute()
        return self._derived[slot]

    def describe(self) -> str:
        return f"{self.origin} ({self.levels} levels, {len(self.rows)} leaves)"

    def __repr__(self) -> str:
        """Its origin and shape, no label: a hierarchy made of the data's values counts as data, and
        the dataclass's repr, every row, reached messages that quote a value (pydantic's, a
        traceback's) whole."""
        return f"<sqlclose.Hierarchy {self.describe()}>"


def _row(row: object, origin: str, i: int) -> Sequence[object]:
    """One of ``from_rows``' rows: its labels (a list, a tuple, a numpy array's row), not text, whose
    characters were taken for its labels, nor one value (a Series' cell: 'int' object is not iterable)."""
    if isinstance(row, (str, bytes)) or not isinstance(row, Iterable):
        raise HierarchyError(f"{origin}, row {i + 1}: {shown(row)} is no row of labels (leaf, level 1, …, top): "
                             "give each row as a list or a tuple of its labels, e.g. [\"22\", \"20s\", \"*\"]")
    return row


def _row_value_text(value: object, origin: str, row: int, level: int) -> str | None:
    """One of ``from_rows``' values as text (``value_text``); None left for validation, which names it;
    any other missing value (NaN, NA, NaT: ``missing_values``), which was written 'nan', refused."""
    if value is None:
        return None
    if is_missing(value):
        refuse_missing_label(value, f"{origin}, row {row + 1}, level {level}", level)
    return value_text(value, origin, row, level)


def _leaf_text(leaf: object, ancestors: list[str], origin: str) -> str:
    """A tree's leaf as the engine writes the column's value (values are matched as text): TOML's
    true and false as ``true`` and ``false``, as the engine casts a BOOLEAN (Python's ``True``
    matched nothing); a number or a date as its text; a datetime or a time as DuckDB writes a
    TIMESTAMP, TIMESTAMPTZ or TIME. A list or a table is no leaf: it was stringified
    (``"['flu']"``), a value no column holds; nor is a pandas Series, Index or array, whose text
    (its repr, the data's values in it) was taken for one leaf; nor is None (from Python:
    ``df.col.unique()`` of a column with NULLs), which was the leaf ``"None"``, nor any other missing
    value (NaN, TOML's ``nan``, NA, NaT: ``missing_values``), which was ``'nan'``. A container is
    named by what it is (``shown``), never by its items: a tree built from the data holds the
    data's values (docs/what-a-release-reveals.md). The group is named only when a leaf is refused:
    its text (a join, ``shown``) for every leaf was a tenth of ``Hierarchy.from_tree`` on 200,000."""
    if is_missing(leaf):
        refuse_missing_leaf(leaf, lambda: f"{origin}: group {_group(ancestors)}")
    if isinstance(leaf, (Iterable, np.ndarray)) and not isinstance(leaf, _SCALARS):  # a pandas Series, an Index too
        raise HierarchyError(f"{origin}: group {_group(ancestors)} lists {shown(leaf)} among its leaves; a leaf is "
                             "one value (text, a number, true or false): list the values themselves (\"*\" = "
                             "[\"flu\", \"ulcer\"]), or make a group a table of its own (Respiratory = [\"flu\"])")
    return value_text(leaf, lambda: f"{origin}: group {_group(ancestors)}")


def _tree_groups(node: object, ancestors: list[str], origin: str) -> Iterator[tuple[Sequence, list[str]]]:
    """A tree's groups of leaves, each with its groups' labels from the innermost (``ancestors``),
    in the tree's order; what is no group of leaves and no table of groups refused, naming it.
    Walked group by group, not leaf by leaf: ``from_tree`` walks it again for an error's words."""
    if isinstance(node, Mapping):
        if not node and not ancestors:
            raise HierarchyError(f"{origin} is empty: give its groups and leaves, e.g. tree = "
                                 "{ young = [\"22\", \"27\"], old = [\"43\", \"52\"] }")
        if not node:
            raise HierarchyError(f"{origin}: group {_group(ancestors)} is empty")
        for label, child in zip(group_labels(node, ancestors[::-1], origin), node.values()):
            yield from _tree_groups(child, [label, *ancestors], origin)
    elif is_leaf_list(node):
        if len(node) == 0:
            raise HierarchyError(f"{origin}: group {_group(ancestors)} has no leaves")
        yield group_leaves(node, lambda: f"{origin}: group {_group(ancestors)}"), ancestors
    else:
        _refuse_lone_value(node, ancestors, origin)


def _given_leaves(tree: Mapping, origin: str) -> list:
    """A tree's leaves as it gives them (1, "1"), in ``from_tree``'s order: walked again, for an
    error's words only (keeping each leaf as given beside its text cost every tree)."""
    return [leaf for leaves, _ in _tree_groups(tree, [], origin) for leaf in leaves]


def group_labels(table: Mapping, groups: Sequence[str], origin: str | None = None) -> list[str]:
    """A tree's table's keys as the labels of its groups: each key as text (``str``). From Python two
    keys may be written alike, 1 and "1" (or True and "True"): their groups were one, their leaves
    merged under one label without a word (a spec's tree kept the last key's leaves alone). Refused,
    naming both keys and the group they would make. ``groups``: the table's own path, from the top;
    ``origin`` starts the error (a spec's field is named by pydantic instead)."""
    where = f"of group {_group(groups[::-1])}" if groups else "at the tree's top"
    for key in table:
        if is_missing(key):  # df.groupby(…, dropna=False)'s NaN group: it was the group 'nan'
            refuse_missing_key(key, lambda: f"{origin + ': ' if origin else ''}the table {where}")
    labels = [str(key) for key in table]
    if len(set(labels)) == len(labels):
        return labels
    first: dict[str, object] = {}
    for key, label in zip(table, labels):
        other = first.setdefault(label, key)
        if other is not key:
            raise HierarchyError(f"{origin + ': ' if origin else ''}keys {shown(other)} and {shown(key)} {where} are "
                                 f"both written {shown(label)}, and a group's name is its key as text: their leaves "
                                 f"would make one group {_group([label, *groups[::-1]])}; rename one of the two, or "
                                 "list their leaves under one key")
    return labels


def group_leaves(node: Sequence, group: Callable[[], str]) -> Sequence:
    """A group's leaves (``is_leaf_list``) as they are iterated: a pandas array, Index or Series as
    the numpy array of its values (``frame_rows.pandas_leaves``: a missing value refused, ``group``
    naming it), taken as a numpy array is (``df["city"].unique()`` of a text column is a pandas
    array); any other as given."""
    return pandas_leaves(node, group) if is_pandas_array(node) else node


def _tree_fault(paths: list[list[str]], origin: str, given: Callable[[], list]) -> str | None:
    """What makes a tree no hierarchy, in its own terms: its group paths ('Europe > East') and a
    tree's fix. ``paths`` are its leaves' (leaf, group, …, outermost group), as written; ``given``
    gives the leaves as the tree gives them (1 or "1"), in the same order. Validation named a "row 10"
    of the rows the tree is flattened to, which the spec has nowhere, and a file's fixes (review of
    the ninety-sixth round). None for what a tree cannot hold wrong this way."""
    def group(p: list[str], level: int) -> str:
        return " > ".join(reversed(p[level:]))

    depth = len(paths[0])
    uneven = next((p for p in paths if len(p) != depth), None)
    if uneven is not None:
        return (f"{origin}: ragged tree — leaf {shown(uneven[0])} is under {counted(len(uneven) - 1, 'group')} "
                f"({shown(group(uneven, 1))}), leaf {shown(paths[0][0])} under {depth - 1} "
                f"({shown(group(paths[0], 1))}); a "
                "hierarchy has a label for every leaf at every level: put every leaf at the same depth, under as "
                "many groups")
    unnamed = next((p for p in paths if "" in p[1:]), None)
    if unnamed is not None:
        return (f"{origin}: a group above leaf {shown(unnamed[0])} has an empty name ({shown(group(unnamed, 1))}); "
                "it would be released as a label no reader tells from a value: name the group")
    first: dict[str, int] = {}
    for i, p in enumerate(paths):
        j = first.setdefault(p[0], i)
        if j != i:
            other = paths[j]
            where = (f"twice in group {shown(group(p, 1))}" if other[1:] == p[1:] else
                     f"twice, in group {shown(group(other, 1))} and in group {shown(group(p, 1))}")
            return (f"{origin}: leaf {shown(p[0])} appears {where}{_given_alike(given, j, i)}; each value is one "
                    "leaf of the tree: list it once, in the group it belongs to")
    for level in range(1, depth):
        named: dict[str, str] = {}
        for p in paths:
            other = named.setdefault(p[level], group(p, level))
            if other != group(p, level):
                return (f"{origin}: two groups at one level are named {shown(p[level])}: {shown(other)} and "
                        f"{shown(group(p, level))}; a label is one class of the release, so a group's name must be "
                        "unique at its level across the tree's branches: rename one of the two groups")
    return None


def _given_alike(given: Callable[[], list], i: int, j: int) -> str:
    """How two leaves written as one text were given, when they were given apart (1 and "1", True
    and "true"): the tree held them as two values, so "appears twice" alone read as wrong."""
    leaves = given()
    a, b = shown(leaves[i]), shown(leaves[j])
    return "" if a == b else (f" (given as {a} and as {b}: a leaf is matched as text, as the engine writes the "
                              "column's values, and both are written so)")


def is_leaf_list(node: object) -> bool:
    """A group's leaves in their order: a list, a tuple, a range, a 1-dimensional numpy array
    (``df.col.unique()``), a pandas array, Index or Series (``group_leaves``), any sequence but text
    or bytes (each an element of a column's)."""
    if isinstance(node, np.ndarray):
        return node.ndim == 1
    return (isinstance(node, Sequence) and not isinstance(node, (str, bytes, bytearray, memoryview))) or \
        is_pandas_array(node)


_SCALARS = (str, bytes, bytearray, numbers.Number, datetime.date, datetime.time, np.generic)


def _refuse_lone_value(value: object, ancestors: list[str], origin: str) -> None:
    """A group written as one value (``old = "43"`` for ``old = ["43"]``) was taken as a group of that
    one leaf: the brackets forgotten, and likely the group's other leaves with them. From Python, a
    group given as neither a list of leaves nor a table of groups nor one value (a set, None, a
    2-dimensional array) is told what it is: advice to wrap it in a list could not be followed."""
    group = f"{origin}: group {_group(ancestors)}" if ancestors else origin
    if isinstance(value, (set, frozenset)):  # Python's own order for text changes from run to run
        raise HierarchyError(f"{group} is a {type(value).__name__}, which has no order, not a list of leaves: a "
                             "tree's leaves are its hierarchy's rows in the order given, and a set's order of text "
                             "changes from run to run; give the leaves as a list (sorted(…) if no other order is "
                             "meant)")
    if not isinstance(value, _SCALARS):
        what = ("None" if value is None else
                f"a {value.ndim}-dimensional numpy array (shape {value.shape})" if isinstance(value, np.ndarray)
                else f"a {type_name(value)}")
        # list(…) of a DataFrame is its column labels: a group is one of its columns' values
        made = ("; a group is one column's values, e.g. df[\"city\"].unique()" if is_data_frame(value) else
                "; list(…) of it makes one, in its order" if isinstance(value, Iterable) and
                not isinstance(value, np.ndarray) else "")
        raise HierarchyError(f"{group} is {what}, not a list of leaves: a group is a list of leaves (text, numbers, "
                             "true or false) or a table of groups, e.g. { young = [\"22\", \"27\"], old = [\"43\", "
                             f"\"52\"] }}{made}")
    written = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else value_text(value, origin)
    if not ancestors:  # from Python, from_tree("x"): no group at all
        raise HierarchyError(f"{origin} is one value, {clipped(written)}: give its groups and leaves, e.g. "
                             "{ young = [\"22\", \"27\"], old = [\"43\", \"52\"] }")
    label = ancestors[0]
    key = label if re.fullmatch(r"[A-Za-z0-9_-]+", label) else json.dumps(label, ensure_ascii=False)  # as TOML
    example = f"{key} = [{written}]"
    example = example if example == clipped(example) else "the value in brackets"
    raise HierarchyError(f"{origin}: group {_group(ancestors)} is one value, {clipped(written)}, not a "
                         f"list of leaves: write its leaves as a list, even a single one ({example})")


def _group(ancestors: list[str]) -> str:
    """A tree's group as a message names it, from the top (``'old > 60s'``), quoted and bounded
    (``shown``): a label is the user's text, and one built from the data's values (a 10 kB label)
    went whole into a message a job's log keeps (docs/what-a-release-reveals.md)."""
    return shown(" > ".join(reversed(ancestors)) or "(top)")


def value_text(value: object, origin: str | Callable[[], str], row: int | None = None, level: int = 0) -> str:
    """One value as the engine writes it as text: a boolean as ``true``/``false``, a datetime or a time
    as DuckDB writes it, a numpy scalar as the Python value it stands for is (``_numpy_text``),
    anything else as its text (39 as ``39``). ``origin``, ``row`` and ``level`` name it in an error;
    ``origin`` may be a function giving it, called only then (a tree's group, per leaf)."""
    if isinstance(value, np.generic):
        try:
            return _numpy_text(value)
        except _NoText as why:
            origin = origin() if callable(origin) else origin
            where = origin if row is None else f"{origin}, row {row + 1}, level {level}"
            raise HierarchyError(f"{where}: a numpy {type(value).__name__} has no text sqlclose can write as the "
                                 f"engine writes a column's value ({why}); give the value as text, as the engine "
                                 "writes the column's (CAST(column AS VARCHAR)), or as a Python bool, int, float, "
                                 "str, date or datetime") from None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (datetime.datetime, datetime.time)):
        return _moment_text(value)
    return str(value)


class _NoText(Exception):
    """A numpy value without a text sqlclose can write as the engine would: why."""


def _numpy_text(value: np.generic) -> str:
    """A numpy scalar as DuckDB writes a column holding it, as the Python value it stands for is
    written (numpy writes ``True`` and ``2024-01-31T10:00:00``). A float32 is refused: DuckDB writes
    a FLOAT with digits not always its shortest (1853183.25, where numpy's shortest is 1853183.2)."""
    if isinstance(value, np.datetime64):
        return _datetime64_text(value)
    if isinstance(value, np.bool_):
        return "true" if value else "false"
    if isinstance(value, np.integer) and not isinstance(value, np.timedelta64):  # an interval is an integer
        return str(int(value))
    if isinstance(value, np.float64):
        return str(float(value))
    if isinstance(value, np.str_):
        return str(value)
    if isinstance(value, np.float32):
        raise _NoText("DuckDB writes some FLOATs with more digits than their shortest")
    raise _NoText("no column holds it as such")


# The units of a datetime64 that is a day or an instant (a month or a year is neither: refused as a leaf).
MOMENT_UNITS = ("D", "h", "m", "s", "ms", "us", "ns")


def _datetime64_text(value: np.datetime64) -> str:
    """A day as a DATE's text, an instant (hours to nanoseconds) as a TIMESTAMP's: its fraction of a
    second to the nanosecond without trailing zeros."""
    unit, _ = np.datetime_data(value.dtype)
    if np.isnat(value):
        raise _NoText("NaT is no value")
    if unit not in MOMENT_UNITS:
        raise _NoText(f"its unit {unit} is no day and no instant DuckDB holds")
    whole = value.astype("datetime64[D]" if unit == "D" else "datetime64[s]")  # floors, before 1970 too
    moment = whole.item()
    if not isinstance(moment, datetime.date):  # an int: Python has no such date
        raise _NoText("it is outside the years 1 to 9999")
    if unit == "D":
        return str(moment)
    nanoseconds = int((value - whole) / np.timedelta64(1, "ns"))
    return _moment_text(moment) + (f".{nanoseconds:09d}".rstrip("0") if nanoseconds else "")


def _moment_text(leaf: datetime.datetime | datetime.time) -> str:
    """A TOML datetime or time as DuckDB writes the value: a fraction of a second without its
    trailing zeros (``10:00:00.5``; Python writes ``10:00:00.500000``), and an offset datetime as the
    instant in UTC with ``+00``, sqlclose's session's zone (Python writes ``+00:00``)."""
    if isinstance(leaf, datetime.datetime) and leaf.tzinfo is not None:
        try:
            utc = leaf.astimezone(datetime.UTC)
        except OverflowError:  # an instant before year 1 in UTC: its Python text, which no value has
            return str(leaf)
        return f"{utc.date()} {_time_of_day_text(utc)}+00"
    if isinstance(leaf, datetime.datetime):
        return f"{leaf.date()} {_time_of_day_text(leaf)}"
    return _time_of_day_text(leaf)


def _time_of_day_text(t: datetime.datetime | datetime.time) -> str:
    whole = f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    return f"{whole}.{t.microsecond:06d}".rstrip("0") if t.microsecond else whole


def _refuse_leaf_twice_once_trimmed(read: FileRows, path: Path) -> None:
    """A leaf on two lines, one of them written with spaces around it and unquoted (``F ;F;*``
    beside ``F;F;*``): meant as another value, the one with its spaces, which only quotes keep."""
    first: dict[str, int] = {}
    for i, row in enumerate(read.rows):
        j = first.setdefault(row[0], i)
        k = i if i in read.trimmed_leaves else j
        if j != i and k in read.trimmed_leaves:
            quoted = '"' + read.trimmed_leaves[k].replace('"', '""') + '"'
            raise HierarchyError(f"{path}, line {read.lines[i]}: leaf {shown(row[0])} appears twice (also line "
                                 f"{read.lines[j]}): spaces around an unquoted label are dropped; to list the value "
                                 f"with its spaces, quote it on line {read.lines[k]}: {quoted}")


def _refuse_other_delimiter(rows: list[tuple[str, ...]], path: Path, delimiter: str, option: str | None) -> None:
    """Lines that do not split on the delimiter but all hold another usual one: the file was
    written with that one (validation would only see one top per leaf)."""
    if any(len(row) != 1 for row in rows):
        return
    seen = next((d for d in USUAL_DELIMITERS if d != delimiter and all(d in row[0] for row in rows)), None)
    if seen is not None:
        given = f"pass {option} '{json.dumps(seen)[1:-1]}'" if option else \
            f"set delimiter = {json.dumps(seen)} for this hierarchy"
        raise HierarchyError(f"hierarchy file {path}: no line splits on {delimiter!r}, and every line holds "
                             f"{seen!r}: the file seems to use {seen!r}; {given}, or write the file with "
                             f"{delimiter!r}")


def _where(origin: str, lines: tuple[int, ...] | None, i: int) -> str:
    return f"{origin}, line {lines[i]}" if lines else f"{origin}, row {i + 1}"


def _validate(rows: tuple[tuple[str, ...], ...], origin: str,
              lines: tuple[int, ...] | None) -> tuple[list[list[str]], np.ndarray]:
    """Raise on what makes ``rows`` no hierarchy; return their labels and dense codes per level."""
    if not rows:
        raise HierarchyError(f"{origin}: hierarchy has no leaves")
    width = len(rows[0])
    if width < 1:
        raise HierarchyError(f"{_where(origin, lines, 0)}: empty line")
    if set(map(len, rows)) != {width}:
        _refuse_header_of_other_width(rows, origin, lines)
        i, row = next((i, row) for i, row in enumerate(rows) if len(row) != width)
        raise HierarchyError(
            f"{_where(origin, lines, i)}: ragged hierarchy — leaf {shown(row[0])} has {counted(len(row), 'level')}, "
            f"the first leaf has {width}; every leaf needs a label at every level (leaf;…;top)"
        )
    columns = list(zip(*rows))  # column by column: the checks below loop in C, not per row in Python
    _refuse_values_not_text(rows, columns, origin, lines)
    # A leaf may be the empty text (a value of a text column, given on purpose: quoted in a file);
    # an empty label above the leaves would release a value no reader tells from it.
    empty = [column.index("") for column in columns[1:] if "" in column]
    if empty:
        i = min(empty)
        raise HierarchyError(
            f"{_where(origin, lines, i)}: empty label at level {rows[i].index('', 1)} for leaf {shown(rows[i][0])}"
        )
    labels, dense = _dense_codes(columns)
    first = _first_rows(dense)  # per level, the row where each label first appears
    repeated = np.flatnonzero(first[0][dense[:, 0]] != np.arange(len(rows)))
    if len(repeated):
        i = int(repeated[0])
        raise HierarchyError(
            f"{_where(origin, lines, i)}: leaf {shown(rows[i][0])} appears twice "
            f"(also {_where(origin, lines, int(first[0][dense[i, 0]]))}); each value needs exactly one line"
        )
    for level in range(1, width):
        # A row whose parent differs from the one its child had where the child first appeared.
        seen_at = first[level - 1][dense[:, level - 1]]
        clash = np.flatnonzero(dense[seen_at, level] != dense[:, level])
        if len(clash):
            i = int(clash[0])
            j = int(seen_at[i])
            raise HierarchyError(
                f"{_where(origin, lines, i)}: {shown(rows[i][level - 1])} at level {level - 1} has two parents at "
                f"level {level}: {shown(rows[j][level])} ({_where(origin, lines, j)}) and "
                f"{shown(rows[i][level])}; a value may have only one parent per level"
            )
    if len(labels[-1]) != 1:
        raise HierarchyError(_several_tops(rows, labels[-1], dense[:, -1], origin, lines))
    return labels, dense


def _refuse_values_not_text(rows: tuple[tuple[str, ...], ...], columns: list[tuple[str, ...]], origin: str,
                            lines: tuple[int, ...] | None) -> None:
    """A value that is not text (a Python hierarchy's 39 or None): values are matched and released as
    text, and the run failed deep inside (pyarrow's ArrowTypeError) rather than naming the row."""
    # set(map(type, …)) loops in C; a subclass of str (numpy's str_) is text too
    level = next((level for level, column in enumerate(columns)
                  if set(map(type, column)) - {str} and not all(isinstance(v, str) for v in column)), None)
    if level is None:
        return
    i = next(i for i, v in enumerate(columns[level]) if not isinstance(v, str))
    value = rows[i][level]
    what = f"leaf {shown(value)}" if level == 0 else f"the label at level {level} of leaf {shown(rows[i][0])}"
    if value is None and level == 0:
        raise HierarchyError(f"{_where(origin, lines, i)}: the leaf is None; a NULL is no leaf: give the column "
                             'nulls = "value" and a null_value, and list that text as a leaf')
    if value is None:
        raise HierarchyError(f"{_where(origin, lines, i)}: {what} is None; every leaf needs a label at every "
                             "level (leaf, …, top), as text")
    raise HierarchyError(f"{_where(origin, lines, i)}: {what} is {type(value).__name__}, not text; values are "
                         "matched as text, as the engine writes the column's values: give text (\"39\"), or build "
                         "the hierarchy with Hierarchy.from_rows, which writes each value as text")


def _refuse_header_of_other_width(rows: tuple[tuple[str, ...], ...], origin: str,
                                  lines: tuple[int, ...] | None) -> None:
    """A file's first line alone in its number of labels, every other line alike: a header, not a
    ragged leaf on line 2 (the lines are compared with the first)."""
    if lines is not None and len(rows) > 2 and len({len(row) for row in rows[1:]}) == 1:
        raise HierarchyError(f"{_where(origin, lines, 0)}: ragged hierarchy — this first line has "
                             f"{counted(len(rows[0]), 'label')} ({', '.join(map(shown, rows[0]))}) where every "
                             f"other line has {len(rows[1])}: "
                             "if it is a header, delete it (a hierarchy file has no header line); else every leaf "
                             "needs a label at every level (leaf;…;top)")


MISTYPED_TOPS_SHARE = 20  # a top other than '*' differing on at most 1 line in 20 (or one line) is a typo


def _several_tops(rows: tuple[tuple[str, ...], ...], tops: list[str], top_codes: np.ndarray, origin: str,
                  lines: tuple[int, ...] | None) -> str:
    """Why the last level holds several values, and a fix that keeps the hierarchy's height. Adding
    a final '*' column to a file whose last column is its top (with a header line, or a typo on a few
    lines) was accepted and made every hierarchical distance smaller: a weaker t, said nowhere."""
    some = ", ".join(shown(t) for t in sorted(tops)[:5]) + (", …" if len(tops) > 5 else "")
    found = f"the top level must be one value for all leaves, found {len(tops)}: {some}"
    counts = np.bincount(top_codes)
    if lines is not None and _looks_like_a_header(rows, tops, top_codes, counts):
        return (f"{_where(origin, lines, 0)}: {found}; this first line looks like a header "
                f"({', '.join(map(shown, rows[0]))}): its top {shown(tops[top_codes[0]])} differs from every other "
                "line's; delete it (a hierarchy file has no header line)")
    common = int(np.argmax(counts))  # the top most lines write, else '*' where some line writes it
    if counts[common] * 2 <= len(rows) and TOP_LABEL in tops:
        common = tops.index(TOP_LABEL)
    # The last column is the top, mistyped: '*' is, or a few lines differ. A third of the lines
    # differing is groups ('<40', '>=40': no top column), and writing one of them everywhere had
    # released 52 as '<40' (review of the sixty-third round).
    few = len(rows) - counts[common] <= max(1, len(rows) // MISTYPED_TOPS_SHARE)
    if tops[common] == TOP_LABEL or (counts[common] * 2 > len(rows) and few):
        odd = np.flatnonzero(top_codes != common)
        i = int(odd[0])
        return (f"{_where(origin, lines, i)}: {found}; this line's top is {shown(tops[top_codes[i]])} where "
                f"{counts[common]} of {len(rows)} lines have {shown(tops[common])}: write {shown(tops[common])} as "
                f"the last label of every line ({len(odd)} line{'s differ' if len(odd) > 1 else ' differs'})")
    if len(rows[0]) == 1:
        return f"{origin}: {found}; every line holds a leaf alone: add its top, '{TOP_LABEL}', to every line (leaf;*)"
    return (f"{origin}: {found}; if that last column holds groups, add a final column with '{TOP_LABEL}' on "
            "every line; if it is meant as the top, write one value there on every line")


def _looks_like_a_header(rows: tuple[tuple[str, ...], ...], tops: list[str], top_codes: np.ndarray,
                         counts: np.ndarray) -> bool:
    """The first line's top is its own and every other line shares one (with a single other line,
    only when that one's is '*': two lines of two groups are no header and a leaf)."""
    rest = set(top_codes[1:].tolist())
    return counts[top_codes[0]] == 1 and len(rest) == 1 and (len(rows) > 2 or tops[rest.pop()] == TOP_LABEL)


def _encode(dense: np.ndarray, origin: str) -> dict:
    width = dense.shape[1]
    # Mixed radix, top-down: a node's code is parent_code * radix + index among its siblings, siblings
    # in order of first appearance (= their dense order). Radices first: the overflow check needs them.
    radices, sibling = [1] * width, [np.zeros(0, dtype=np.int64)] * width
    first_rows = _first_rows(dense)
    for level in range(width - 2, -1, -1):
        parent_of_child = dense[first_rows[level], level + 1]
        sibling[level], radices[level] = _sibling_index(parent_of_child)
    divisors = [1] * width
    for level in range(1, width):
        divisors[level] = divisors[level - 1] * radices[level - 1]
    if divisors[-1] >= _MAX_CODE:
        raise HierarchyError(f"{origin}: too wide to encode in 62-bit integer codes (the product of the largest "
                             "number of children per level is too big); add an intermediate level")
    mixed = np.zeros_like(dense)
    for level in range(width - 2, -1, -1):
        mixed[:, level] = mixed[:, level + 1] * radices[level] + sibling[level][dense[:, level]]
    return {"mixed": mixed, "divisors": divisors}


def _dense_codes(columns: list[tuple[str, ...]]) -> tuple[list[list[str]], np.ndarray]:
    """Per level, the distinct labels in order of first appearance and each row's code among them.
    A dict per level, not Arrow's dictionary encoding: its first call costs ~0.2 s, a cold start's
    budget (docs/performance.md, "Cold start"). Distinct leaves (a valid hierarchy's) are numbered
    as they stand."""
    labels, dense = [], np.empty((len(columns[0]), len(columns)), dtype=np.int64)
    for level, column in enumerate(columns):
        if level == 0 and len(dict.fromkeys(column)) == len(column):
            dense[:, 0] = np.arange(len(column))
            labels.append(list(column))
            continue
        codes: dict[str, int] = {}
        dense[:, level] = [codes.setdefault(label, len(codes)) for label in column]
        labels.append(list(codes))
    return labels, dense


def _first_rows(dense: np.ndarray) -> list[np.ndarray]:
    """Per level, the row where each code first appears (codes number labels in order of first
    appearance, so those rows are where the running maximum grows; ``np.unique`` would import
    ``numpy.ma`` on a cold start)."""
    firsts = []
    for level in range(dense.shape[1]):
        top = np.maximum.accumulate(dense[:, level])
        firsts.append(np.flatnonzero(np.r_[True, top[1:] > top[:-1]]))
    return firsts


def numbered_as_they_appear(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's number among the distinct keys in order of first appearance, and the distinct
    keys in that order (a stable sort, not ``np.unique``: see ``_first_rows``)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    firsts = order[starts]  # each distinct key's first position: the sort is stable
    by_first = np.argsort(firsts)
    rank = np.empty(len(firsts), dtype=np.int64)
    rank[by_first] = np.arange(len(firsts))
    numbers = np.empty(len(keys), dtype=np.int64)
    numbers[order] = rank[np.cumsum(starts) - 1]
    return numbers, keys[firsts[by_first]]


def _sibling_index(parents: np.ndarray) -> tuple[np.ndarray, int]:
    """Children 0…k−1 (in order of first appearance) with their parents' codes → each child's index
    among its parent's children, in that order; and the most children a parent has."""
    order = np.argsort(parents, kind="stable")
    ordered = parents[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    index = np.empty(len(order), dtype=np.int64)
    index[order] = np.arange(len(order)) - np.repeat(starts, sizes)
    return index, int(sizes.max())


# ---- rule builders (need the column's distinct values) -----------------------------------

def _finite(number: float) -> bool:
    """A whole number is finite however large (``math.isfinite`` converts it to a float first)."""
    return isinstance(number, int) or math.isfinite(number)


def bands_hierarchy(values: Sequence[tuple[str, float]], widths: Sequence[float], origin: float = 0,
                    name: str = "bands", domain: tuple[float, float] | None = None,
                    integral: bool | None = None, at: ValuesAt | None = None) -> Hierarchy:
    """Numeric bands of growing width, then ``*``.

    ``values`` are (text as the engine prints it, numeric value) pairs. Widths must nest (each a
    multiple of the previous) so that every band has one parent band. ``domain``: the lowest and
    highest value the column can hold, declared in the spec (model/domains.py). ``integral``:
    label integer bands ``35-39`` rather than ``[35, 40)`` (preparation decides it by the column's
    type, ``rule_hierarchies._integral_bands``); None: when the values, widths and origin are all whole.
    ``at``: the column, source and rows of the values, for the error counting those refused.
    """
    if not widths or any(not (_finite(w) and w > 0) for w in widths):  # NaN and inf make no band
        raise HierarchyError(f"{name_cut(name)}: band widths must be finite positive numbers, got {list(widths)}")
    if not _finite(origin):
        raise HierarchyError(f"{name_cut(name)}: origin must be a finite number (where the bands start), got {origin}")
    # Bands are cut in exact decimal arithmetic on each value's text (the engine's shortest text of a
    # float, a BIGINT's every digit): floats cut 0.3 / 0.1 into band 2, and rounding that away moved
    # 2.9999999999 into [3, 4) and 9007199254740999 into 9007199254741000-…; 12 digits of an edge's
    # label merged bands of 13-digit numbers.
    steps = [_exact(str(w), w, name) for w in widths]
    start = _exact(str(origin), origin, name)
    bounds = None if domain is None else tuple(_exact(str(b), b, name) for b in domain)
    exact = _exact_values(values, bounds, name, at)
    with localcontext() as context:
        # Every step below exact: room for the quotient's digits of the largest value by the finest width.
        context.prec = 50 + 2 * max(abs(d.adjusted()) for d in [*exact, *steps, start, *(bounds or ())])
        _refuse_unnested(steps, name)
        if integral is None:
            integral = all(_whole(x) for x in exact) and all(_whole(w) for w in steps) and _whole(start)
        rows, lows = [], []
        counted = _counted_bounds(bounds, integral)
        base = counted[0] if counted is not None else Decimal(0)  # covers count edges from the domain's lowest value
        labels: dict[tuple[Decimal, Decimal], str] = {}  # (edge, width) -> label: few bands, many values
        for (text, _), x in zip(values, exact):
            row, low = [text], []
            for w in steps:
                lo = start + (x - start) // w * w  # // truncates toward zero: floor below the origin
                if lo > x:
                    lo -= w
                if (lo, w) not in labels:
                    labels[lo, w] = _band_label(lo, lo + w, integral)
                row.append(labels[lo, w])
                low.append(lo - base)
            row.append(TOP_LABEL)
            rows.append(tuple(row))
            lows.append(low)
        h = Hierarchy(tuple(rows), name)
        if bounds is None:
            return h.built_by("bands", None)
        # Edges counted from the domain's lowest value are exact in floats for any domain narrower
        # than 2**53, whatever its values' size (absolute edges past 2**53 were not).
        offsets = np.array(lows, dtype=np.float64).reshape(len(rows), len(steps))
        return h.built_by("bands", band_cover(offsets, [float(w) for w in steps], integral,
                                              (0.0, float(counted[1] - counted[0]))))


def _counted_bounds(bounds: tuple[Decimal, ...] | None, integral: bool) -> tuple[Decimal, Decimal] | None:
    """The part of a declared domain the covers count: integral bands its whole numbers (a
    fractional bound holds none past it), other bands all of it."""
    if bounds is None or not integral:
        return bounds
    lo, hi = whole_numbers_within(bounds)
    return Decimal(lo), Decimal(hi)


def unnested_widths(steps: Sequence[Decimal]) -> tuple[Decimal, Decimal] | None:
    """The first two band widths that do not nest — each must be a whole multiple (≥ 2×) of the
    previous, exactly: else a band has two parents — or None. The spec's check and the rule's."""
    with localcontext() as context:
        context.prec = 50 + 2 * max(abs(d.adjusted()) for d in steps)
        return next(((a, b) for a, b in zip(steps, steps[1:]) if b % a != 0 or b // a < 2), None)


def _refuse_unnested(steps: Sequence[Decimal], name: str) -> None:
    pair = unnested_widths(steps)
    if pair is not None:
        raise HierarchyError(f"{name_cut(name)}: band widths must nest — each a multiple (≥2×) of the previous; "
                             f"{_number(pair[0])} then {_number(pair[1])} would give a band two parents")


def _exact_values(values: Sequence[tuple[str, float | None]], bounds: tuple[Decimal, ...] | None, name: str,
                  at: ValuesAt | None) -> list[Decimal]:
    """Each value as the exact decimal it writes; or the error counting the values refused for the
    first reason met (not a finite number, beyond the orders bands cut, outside the declared
    domain) and their rows, naming none."""
    exact, refusals = [], Refusals()
    for i, (text, x) in enumerate(values):
        try:
            d = exact_value(text, x, at)
            if bounds is not None and not bounds[0] <= d <= bounds[1]:
                raise _outside_domain(bounds, None if at is None else at.number)
        except Refused as why:
            refusals.add(why, i)
            continue
        exact.append(d)
    refusals.raise_first(name, at)
    return exact


def _outside_domain(bounds: tuple[Decimal, ...], number: NumberType | None) -> Refused:
    lo, hi = bounds
    return Refused(f"outside the declared domain [{_number(lo)}, {_number(hi)}]; widen the domain to every value the "
                   "column can hold, or clean the values", lambda column: _outside(column, lo, hi, number))


def _outside(column: exp.Expression, lo: Decimal, hi: Decimal, number: NumberType | None) -> exp.Expression:
    """The condition of a value outside [lo, hi], in the column's own type. Read as DOUBLE, a value a
    rounding past an edge (120.00000000000000000001, 2**53 + 1) was counted by the error and found by
    none of its rows (review of the ninety-third round). Whole numbers and decimals compare exactly
    with the bounds rounded inwards to the type's scale, a bound past the type's range left out (a
    literal of more decimals widened a DECIMAL(38, s) column past 38 digits: an overflow); a float
    with the bounds in its own type (widened to DOUBLE, a FLOAT's 0.1 read past 0.1); text as a DOUBLE,
    the number type every engine reads any numeral as."""
    if number is None:
        return exp.Not(this=exp.Between(this=_as_double(column), low=_literal(lo), high=_literal(hi)))
    if number.float_sql is not None:
        kind = np.float64 if number.float_sql == "DOUBLE" else np.float32
        within = [_float_within(lo, kind, upper=False), _float_within(hi, kind, upper=True)]
        edges = [None if e is None else exp.Cast(this=_literal(e), to=exp.DataType.build(number.float_sql))
                 for e in within]
    else:
        step = Decimal(10) ** -number.scale
        low = (lo / step).to_integral_value(ROUND_CEILING) * step
        high = (hi / step).to_integral_value(ROUND_FLOOR) * step
        edges = [_literal(low) if low > number.least else None, _literal(high) if high < number.greatest else None]
    parts = [cmp(this=column.copy(), expression=edge) for cmp, edge in zip((exp.LT, exp.GT), edges)
             if edge is not None]
    return exp.or_(*parts) if parts else exp.false()


def _float_within(bound: Decimal, kind: type[np.floating], upper: bool) -> Decimal | None:
    """The greatest (``upper``) or least float of ``kind`` whose shortest text — the value the check
    compares — is within ``bound``, as that text (which reads back as that float); None when every
    finite float is (the bound past the type's range). Shortest texts order as their floats do."""
    nearest = kind(float(bound))
    if not np.isfinite(nearest):
        return None

    def within(f: np.floating) -> bool:
        text = Decimal(str(f))
        return text <= bound if upper else text >= bound

    inward, outward = (kind(-np.inf), kind(np.inf)) if upper else (kind(np.inf), kind(-np.inf))
    f = nearest
    while not within(f):
        f = np.nextafter(f, inward)
    while np.isfinite(g := np.nextafter(f, outward)) and within(g):
        f = g
    return Decimal(str(f))


def _as_double(column: exp.Expression) -> exp.Expression:
    return exp.TryCast(this=column, to=exp.DataType.build("DOUBLE"), safe=True)


def _literal(x: Decimal) -> exp.Expression:
    return exp.Literal.number(_number(x))


def _not_finite(at: ValuesAt | None) -> Refused:
    """Why bands refuse NaN and the infinities, with where to make them NULL as the source given
    takes it (a DataFrame or table takes no [source] query: ``model.mending``)."""
    kind = QUERY if at is None else at.source_kind
    if kind == QUERY:
        clean = "clean the values (a [source] query may make them NULL)"
    elif is_warehouse(kind):
        clean = ("clean the values in a view over the warehouse table (one that makes them NULL), then run `sqlclose "
                 "sql` again and export the histogram anew")
    else:
        name = at.column or "v"
        column = exp.column(name, quoted=True)
        finite = exp.Case(ifs=[exp.If(this=exp.Anonymous(this="isfinite", expressions=[column]), true=column.copy())])
        shown = name_shown(name)
        made = at.mended(finite, f"df[{shown}] = df[{shown}].where(np.isfinite(df[{shown}])), pandas' missing value",
                         f"table = table.set_column(table.schema.get_field_index({shown}), {shown}, "
                         f"pyarrow.compute.if_else(pyarrow.compute.is_finite(table[{shown}]), table[{shown}], None))")
        clean = f"clean the values, or make them NULL {made}"
    why = f" (NaN or an infinity), and bands cut numbers: {clean}, or give the column a hierarchy file or tree"
    return Refused("that are not finite numbers" + why, one="that is not a finite number" + why)


_BEYOND_THE_ORDERS = (f"beyond the orders of magnitude bands cut, 10^-{MAX_BAND_EXPONENT} to 10^{MAX_BAND_EXPONENT} "
                      "(a label writes every digit of its edges): correct the values, or give the column a hierarchy "
                      "file or tree")


def exact_value(text: str, x: float | None, at: ValuesAt | None = None) -> Decimal:
    """A finite value as the decimal number its text writes, else as its float's shortest text; or
    ``Refused`` saying why bands cannot cut it (the error built from it names no value)."""
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        d = None
    if d is None or not d.is_finite():
        if x is None or not math.isfinite(x):
            raise _not_finite(at)
        d = Decimal(repr(float(x)))
    if d.is_zero():  # 0e5000 is 0: its exponent must not size the arithmetic
        return Decimal(0)
    if abs(d.adjusted()) > MAX_BAND_EXPONENT:
        raise Refused(_BEYOND_THE_ORDERS)
    return d


def _exact(text: str, x: float | None, name: str) -> Decimal:
    """A number the spec gives (a width, the origin, a domain's bound) as the exact decimal it writes."""
    try:
        return exact_value(text, x)
    except Refused as why:
        raise HierarchyError(f"{name_cut(name)}: {text!r} is not a number bands can cut: {why.said_of(1)}") from None


def _whole(x: Decimal) -> bool:
    return x == x.to_integral_value()


def writes_whole_number(text: str, x: float | None) -> bool | None:
    """Whether a value's text writes a whole number, exactly (29.9999999999999999 does not, though
    its float is 30.0): as bands are cut (``bands_hierarchy``); None for a value bands refuse."""
    try:
        return _whole(exact_value(text, x))
    except Refused:
        return None


def _band_label(lo: Decimal, hi: Decimal, integral: bool) -> str:
    """``35-39`` for whole numbers, ``[35, 40)`` otherwise. A band of negative numbers alone takes
    the interval form too (``[-15, -10)``): ``-15--11`` read as a typo. Non-negative values never fall
    in such a band (its last number is below 0), so their labels are as they were."""
    if integral and hi - 1 >= 0:
        return f"{int(lo)}-{int(hi) - 1}"
    if integral:
        return f"[{int(lo)}, {int(hi)})"
    return f"[{_number(lo)}, {_number(hi)})"


def _number(x: Decimal) -> str:
    """An edge as the plain decimal it is (no exponent, no trailing zeros): every edge apart."""
    return "0" if x == 0 else format(x.normalize(), "f")


MASK_CHARACTERS = "*#~?_X"  # what the mask_char hint offers, the first the values never hold


def mask_hierarchy(values: Sequence[str], steps: Sequence[int] | None = None, mask_char: str = "*",
                   name: str = "mask", alphabet: str | None = None, length: int | None = None,
                   at: ValuesAt | None = None) -> Hierarchy:
    """Mask codes from the right: 47677 → 4767* → 476** → … → *****. ``alphabet``: the characters
    codes are made of, declared in the spec (model/domains.py); ``length``: their length, declared.
    ``at``: the column, source and rows of the values, for the errors counting those refused."""
    if len(mask_char) != 1:
        raise HierarchyError(f"{name_cut(name)}: mask_char must be one character, got {mask_char!r}")
    joined = "".join(values)  # the checks below look at every character at once, not code by code
    if alphabet is not None and joined.translate(dict.fromkeys(map(ord, alphabet))):  # a character left
        _refuse_outside_alphabet(values, alphabet, name, at)
    holding = sum(mask_char in v for v in values) if mask_char in joined else 0
    if holding:  # masked by "2", 47627 becomes 47622: a label that reads as a real code
        free = next((c for c in MASK_CHARACTERS if c not in (alphabet or "") and not any(c in v for v in values)), None)
        raise HierarchyError(f"{name_cut(name)}: mask_char {mask_char!r} occurs in {holding} of the column's "
                             "values, so a masked label could read as a real value; choose a character the values "
                             "never hold"
                             + (f" (e.g. mask_char = {json.dumps(free)})" if free else ""))
    lengths = sorted(set(map(len, values)))
    if len(lengths) != 1 or (length is not None and lengths != [length]):
        _refuse_other_lengths(values, length, name, at)
    n = lengths[0]
    if n == 0:  # steps "within 1..0" said nothing of the cause
        raise HierarchyError(f"{name_cut(name)}: every code is empty text (0 characters), and masking hides a code's "
                             "characters: give the column its codes, or read empty text as NULL in a [source] query "
                             "(NULLIF(column, '')) and choose its nulls policy")
    steps = list(range(1, n + 1)) if steps is None else [int(s) for s in steps]
    masked = masked_per_level(steps, n)
    if masked is None:
        raise HierarchyError(
            f"{name_cut(name)}: mask steps must increase strictly within 1..{n} (characters masked at each level), "
            f"got {steps}"
        )
    labels, dense, distinct = _masked_levels(values, steps, mask_char)
    if steps[-1] < n:  # a top of its own above the last step's labels
        labels.append([TOP_LABEL])
        dense = np.column_stack([dense, np.zeros(len(values), dtype=np.int64)])
    if not distinct:  # validation names the repeated value and its rows
        return Hierarchy(LevelRows(labels, dense).whole(), name)
    cover = None if alphabet is None else mask_cover(len(values), masked, len(alphabet))
    return Hierarchy._built(labels, dense, name).built_by("mask", cover)


def _masked_levels(values: Sequence[str], steps: Sequence[int],
                   mask_char: str) -> tuple[list[list[str]], np.ndarray, bool]:
    """The leaves, then per step the labels of codes of one length with ``steps`` characters hidden
    from the right, and each value's dense code among them (rows × levels);
    and whether the values are distinct. Codes are numbered in order of first appearance, as
    validation's. In NumPy over the codes' characters (a dict per level over 99,832 ZIP codes and
    their rows' labels as Python lists took ~0.2 s): sorted once, the codes sharing their first p
    characters are a run, and a run's code is the rank of its first row among the runs'."""
    n, rows = len(values[0]), len(values)
    points = np.array(values, dtype=f"<U{n}").view(np.uint32).reshape(rows, n)  # exact: every code has n
    order = _lexical_order(points)
    ordered = points[order]
    # new[i, p]: the i-th code in that order starts a run of its first p characters (the first, or one
    # differing from the code before in them)
    new = np.zeros((rows, n + 1), dtype=bool)
    new[0] = True
    np.logical_or.accumulate(ordered[1:] != ordered[:-1], axis=1, out=new[1:, 1:])
    labels, dense = [list(values)], np.empty((rows, 1 + len(steps)), dtype=np.int64)
    dense[:, 0] = np.arange(rows)
    for level, hidden in enumerate(steps, start=1):
        kept = n - hidden
        starts = np.flatnonzero(new[:, kept])
        firsts = np.minimum.reduceat(order, starts)  # each run's first row
        by_first = np.argsort(firsts)
        rank = np.empty(len(firsts), dtype=np.int64)
        rank[by_first] = np.arange(len(firsts))
        dense[order, level] = rank[np.cumsum(new[:, kept]) - 1]
        labels.append([values[i][:kept] + mask_char * hidden for i in firsts[by_first].tolist()])
    return labels, dense, bool(new[1:, n].all())


def _lexical_order(points: np.ndarray) -> np.ndarray:
    """The rows of ``points`` (codes' characters, rows × n) in lexical order: as one integer each
    when they fit 62 bits (ten digits by five: 2× faster to sort), else column by column."""
    low, span = int(points.min()), int(points.max()) - int(points.min()) + 1
    if span ** points.shape[1] >= _MAX_CODE:
        return np.lexsort(points.T[::-1])  # by the first character, then the next, …
    key = np.zeros(len(points), dtype=np.int64)
    for column in points.T:
        key *= span
        key += column
        key -= low
    return np.argsort(key)


def _refuse_other_lengths(values: Sequence[str], length: int | None, name: str, at: ValuesAt | None) -> None:
    """The error counting the codes whose length is not the declared one, or else not the one most
    rows' codes have (masking needs one): their length is not told, a code's length being data."""
    if length is None:
        rows = at.rows if at is not None and at.rows is not None else [1] * len(values)
        per_length: dict[int, int] = {}
        for value, n in zip(values, rows):
            per_length[len(value)] = per_length.get(len(value), 0) + n
        length = max(per_length, key=lambda n: (per_length[n], n))
        tied = sum(rows == per_length[length] for rows in per_length.values()) > 1
        kept = (f"{length} characters (no length is most rows': of those held by the most rows, the longest)"
                if tied else f"most rows' codes, {length} characters")  # an even split has no majority to name
        reason = (f"of another length than {kept}, and masking needs codes of one length: pad or correct the codes, "
                  "or use a hierarchy file")
    else:
        reason = f"whose length is not the declared {length}: pad or correct the codes, or declare the length they have"
    refusals = Refusals()
    other = [i for i, value in enumerate(values) if len(value) != length]
    decomposed = sum(not unicodedata.is_normalized("NFC", values[i]) for i in other)
    if decomposed:  # a code's length counts code points, which a decomposed 'é' has two of
        reason += (f" ({decomposed} of them not in Unicode NFC: a length counts code points, and NFC may write "
                   "them in fewer)")
    read = (at or ValuesAt()).text_of  # the codes as the rule reads them: a number column's as text
    why = Refused(reason, lambda column: exp.NEQ(this=exp.Length(this=read(column)),
                                                 expression=exp.Literal.number(length)))
    for i in other:
        refusals.add(why, i)
    refusals.raise_first(name, at)


def masked_per_level(steps: Sequence[int], n: int) -> list[int] | None:
    """The characters a mask over codes of ``n`` characters hides at each level: none at the leaves,
    then ``steps``, then all n at a top of their own when the last step leaves some. None when the
    steps do not increase strictly within 1..n. The spec, a mask built from codes and one standing in
    for codes no row kept all take their levels from here."""
    steps = [int(s) for s in steps]
    if not steps or any(b <= a for a, b in zip(steps, steps[1:])) or steps[0] < 1 or steps[-1] > n:
        return None
    return [0, *steps, *([n] if steps[-1] < n else [])]


def _refuse_outside_alphabet(values: Sequence[str], alphabet: str, name: str, at: ValuesAt | None) -> None:
    """The error counting the codes with a character outside the declared alphabet, never
    telling which code or which character (either is data)."""
    allowed = set(alphabet)
    read = (at or ValuesAt()).text_of  # the codes as the rule reads them: a number column's as text
    why = Refused(f"with a character outside the declared alphabet {alphabet!r}; add every character the codes can "
                  "hold to the alphabet, or clean the values",
                  lambda column: exp.Not(this=exp.RegexpLike(this=read(column), expression=exp.Literal.string(
                      f"^[{_in_brackets(alphabet)}]*$"))))
    if allowed.issuperset("".join(values)):
        return  # one pass in C: the usual case, 100 k codes in ~2 ms
    refusals = Refusals()
    for i, value in enumerate(values):
        if not allowed.issuperset(value):
            refusals.add(why, i)
    refusals.raise_first(name, at)


def _in_brackets(alphabet: str) -> str:
    """The alphabet's characters written inside a regular expression's brackets, as RE2 (DuckDB) and
    Java (Spark) read them: those special there escaped."""
    return "".join("\\" + c if c in "\\]^-[&" else c for c in dict.fromkeys(alphabet))
