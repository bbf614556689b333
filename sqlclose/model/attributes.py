"""A sensitive attribute as the privacy models see it: no SQL, no codes."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from sqlclose.errors import DataError
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.spec import Sensitive
from sqlclose.model.text import FORMAT_CHARACTERS_ADVICE, agreeing, counted, format_twins, name_shown, unicode_twins


@dataclass(frozen=True, eq=False)
class SensitiveAttribute:
    """A sensitive column: its values in code order (``domain``), its hierarchy, its models
    (``spec``: None when only measured) and the reference distribution ``q`` (counts over the
    domain; None until measured — build a new attribute with ``dataclasses.replace``)."""

    name: str
    spec: Sensitive | None
    domain: Sequence[str | None]  # a list, or ArrowValues for a large ordered column's
    hierarchy: Hierarchy | None = None
    q: np.ndarray | None = None

    @functools.cached_property
    def tree(self) -> np.ndarray | None:
        """What the hierarchical distance reads: the hierarchy's level codes (``Hierarchy.level_codes``)
        of the domain's leaves, in its order, each level's codes renumbered densely. Its height is
        the whole tree's: leaves the table does not hold are left out (``sensitive_domain``), levels
        never. None without a hierarchy."""
        if self.hierarchy is None:
            return None
        position = {leaf: i for i, leaf in enumerate(self.hierarchy.leaves)}
        codes = self.hierarchy.level_codes[[position[v] for v in self.domain]]
        return np.column_stack([np.unique(level, return_inverse=True)[1].reshape(-1) for level in codes.T])

    @property
    def distance(self) -> str:
        return self.spec.distance if self.spec is not None else "equal"

    @property
    def null_value(self) -> str | None:
        """The value NULL reads as (``nulls = "value"``), else None."""
        return self.spec.null_value if self.spec is not None and self.spec.nulls == "value" else None


def is_number_or_time(dtype: pa.DataType) -> bool:
    t = pa.types
    return t.is_integer(dtype) or t.is_floating(dtype) or t.is_decimal(dtype) or t.is_temporal(dtype)


def require_ordered_type(name: str, dtype: pa.DataType, source_label: str) -> None:
    """The ordered distance sorts values: only numbers, dates, times (and booleans) sort meaningfully."""
    if not (is_number_or_time(dtype) or pa.types.is_boolean(dtype)):
        raise DataError(
            f"column {name_shown(name)} in {source_label} is {dtype}, but distance = \"ordered\" needs numbers, dates "
            "or times (text would sort '10' before '9'); cast the column, or use distance = \"equal\" or "
            "\"hierarchical\""
        )


def sensitive_domain(hierarchy: Hierarchy | None, distance_name: str,
                     distinct_values: Callable[[], Sequence[str | None]],
                     stand_in: str | None = None) -> Sequence[str | None]:
    """A sensitive column's values in code order: the leaves of its hierarchy the table holds (and
    the NULL ``stand_in``, a leaf too), in the hierarchy's order, except for the ordered distance,
    which uses the table's distinct values sorted as the column's type sorts them. A leaf the table
    does not hold has mass 0 in every distribution: every distance is the same without it, the
    hierarchical one measured with the whole tree's height (``SensitiveAttribute.tree``;
    docs/emd.md) — and a 100 k-leaf code list on a table of ten values made every class a row of
    100 k counts. A value that is no leaf is not in the domain: the lookup's check names it."""
    if hierarchy is not None and distance_name != "ordered":
        held = set(distinct_values()) | {stand_in}
        return [leaf for leaf in hierarchy.leaves if leaf in held]
    return distinct_values()


# Why a sensitive column's values a hierarchy lacks are not shown, and a quasi-identifier's (the
# command that lists them, where the operator asks to see them, given the column).
SENSITIVE_NOT_SHOWN = "the values are not shown: a sensitive value is what a release protects"
QI_LISTER = "`sqlclose hierarchy validate SPEC.toml:{column}{data} --show-values`"  # data: the warehouse's histogram
QI_NOT_SHOWN = "the values are not shown: an error lands in job logs; {lister} lists them"
# The lister for a spec given in Python, or a table the caller holds: the command has no SPEC.toml to name.
QI_NAMED_BY_ERROR = "the error's `named` attribute (NotLeavesError.named)"


def values_not_leaves(column: str, hierarchy: Hierarchy, missing: list[str], rows: int | None, to_add: str,
                      source: str | None = None, not_shown: str = SENSITIVE_NOT_SHOWN) -> str:
    """The error for values a hierarchy lacks: how many (and their rows when known), never which. A
    sensitive value is what a release protects, and a quasi-identifier's tells a person apart: an
    error landing in a job's log must not show one, a suppressed row's as much as any
    (docs/bad-input.md); ``not_shown`` says why, and for a quasi-identifier where to see them.
    ``to_add``: how to add a leaf to the hierarchy as it was given; ``source``: the table(s) the
    rows were counted in. Values differing from a leaf only in their Unicode form are counted too
    (naming the leaf would name the value)."""
    told = counted(len(missing), "value") + ("" if rows is None else f" (in {counted(rows, 'row')})")
    twins = len(unicode_twins(missing, hierarchy.leaves))
    unicode = "" if not twins else (
        f"; {twins} of them {agreeing(twins, 'differs', 'differ')} from a leaf only in "
        f"{agreeing(twins, 'its', 'their')} Unicode form, and text is compared code point by "
        "code point: write the data and the hierarchy in one form, NFC (a [source] query's nfc_normalize(column) "
        "normalizes the column)")
    invisible = len(format_twins(missing, hierarchy.leaves))
    unicode += "" if not invisible else (
        f"; {invisible} of them {agreeing(invisible, 'differs', 'differ')} from a leaf only by invisible characters "
        f"{FORMAT_CHARACTERS_ADVICE}")
    held = "" if source is None else f" in {source}"
    return (f"column {name_shown(column)}{held} holds {told} that "
            f"{agreeing(len(missing), 'is not a leaf', 'are not leaves')} of its hierarchy {hierarchy.origin} "
            f"({counted(len(hierarchy.leaves), 'leaf', 'leaves')}; {not_shown}): {to_add}, or fix the data{unicode}"
            f"{_near_leaves(missing, hierarchy.leaves)}")


def _near_leaves(missing: list[str], leaves: Sequence[str]) -> str:
    """How many values differ from a leaf only by spaces around them, or by case: counted, never
    named (review of the sixty-third round: 'gastritis ' left the user nothing to look for)."""
    trimmed, folded = set(leaves), {leaf.casefold() for leaf in leaves}
    texts = [v for v in missing if v is not None]
    spaced = sum(1 for v in texts if v.strip() != v and v.strip() in trimmed)
    cased = sum(1 for v in texts if v.strip() == v and v.casefold() in folded)
    said = []
    if spaced:
        said.append(f"{spaced} of them {agreeing(spaced, 'differs', 'differ')} from a leaf only by spaces around "
                    f"{agreeing(spaced, 'it', 'them')} (trim the column in a [source] query, e.g. trim(column))")
    if cased:
        said.append(f"{cased} of them {agreeing(cased, 'differs', 'differ')} from a leaf only in upper and lower "
                    "case (text is compared as written: write the data and the hierarchy in one case, e.g. "
                    "lower(column) in a [source] query)")
    return "".join(f"; {part}" for part in said)


# How a column holds whole numbers written with a fraction, by its form (``whole_numbers_hint``).
HELD_AS = {"floating": ("floating-point number", "floating-point numbers"),
           "decimal": ("decimal with a fraction part", "decimals with a fraction part"),
           "text": ("text written with a fraction", "text written with a fraction")}


def whole_numbers_hint(count: int, column_type: str, cast: str, form: str = "floating") -> str:
    """That ``count`` of the values a hierarchy lacks are whole numbers its column holds written with
    a fraction (29.0, the leaf written 29): a floating-point column (the commonest pandas pitfall, a
    column of whole numbers with a missing one being float64), a DECIMAL of a scale above 0, or text
    (a CSV's "29.0" read as text) — ``form``. Counted as the other near leaves are, never named, with
    the ``cast`` that makes them the leaves; text may hold other values a cast would not read, so
    writing them without the fraction is said first."""
    if not count:
        return ""
    held = agreeing(count, *HELD_AS[form])
    if form == "text":
        return (f"; {count} of them {agreeing(count, 'is a whole number', 'are whole numbers')} the column holds as "
                f"{held} (its type is {column_type}), where the leaf has none: write them without it where the "
                f"column is made, or, if the column holds numbers alone, cast it to whole numbers {cast}")
    return (f"; {count} of them {agreeing(count, 'is a whole number', 'are whole numbers')} the column holds as "
            f"{held} (its type is {column_type}), whose text writes a fraction where the leaf has none: cast the "
            f"column to whole numbers {cast}")
