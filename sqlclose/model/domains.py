"""How much of a declared domain each label of a rule's hierarchy covers.

Mauger et al.'s NCP, LLM and their normalized and weighted forms count the leaves below each
label (nl(v)). A hierarchy file lists its leaves, and the spec's hash covers them. A rule's
hierarchy (``mask``, ``bands``, ``dates``) has the column's distinct values as its leaves,
suppressed rows' included, so a count of them describes the input: Table 3 with its 9th ZIP
47602 or 47607 gives the same release and ``ncp`` 37.008 or 37.5. With the rule's domain
declared in the spec, each label covers a part of it that follows from the label alone, and
the metrics count that instead (``Hierarchy.cover``):

- ``mask`` over an ``alphabet`` of A characters, codes of n characters: a label with s characters
  masked covers A^s codes; the top A^n.
- ``bands`` over ``domain = [lo, hi]``: integral bands (integer values, widths and origin) cover
  their integers within the domain (a fractional bound holds none past it: [0, 120.5] holds 0 to
  120); other bands their length within it, a value none (NCP is then a band's width over the
  range, the usual numeric NCP); the top the whole domain.
- ``dates`` over ``domain = [first, last]``: a label covers its calendar days within the domain
  (a month 28 to 31), a value one day (a timestamp too: the rule's finest unit is the day); the
  top every day of the domain.

A NULL stand-in with a branch of its own covers what a value covers (one; none for real bands) at
every level below the top, and the top one more (``with_stand_in``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date
from decimal import Decimal

import numpy as np


def mask_cover(rows: int, masked: Sequence[int], alphabet: int) -> np.ndarray:
    """rows × levels: ``alphabet`` ** the characters masked at each level (0 at the leaves)."""
    per_level = np.array([float(alphabet) ** m for m in masked])
    return np.tile(per_level, (rows, 1))


def band_extent(integral: bool, domain: tuple[float, float]) -> tuple[float, float]:
    """What a value and the top cover of a bands domain: one integer and its integers, or no
    length and its length."""
    if not integral:
        return 0.0, domain[1] - domain[0]
    lo, hi = whole_numbers_within(domain)
    return 1.0, float(hi - lo + 1)


def whole_numbers_within(domain: tuple[float, float] | tuple[Decimal, Decimal]) -> tuple[int, int]:
    """The first and last whole number of a bands domain, which integral bands count: counted as
    hi − lo + 1, [0, 120.5] held 121.5 integers and every NCP was divided by 120.5, not 120."""
    return math.ceil(domain[0]), math.floor(domain[1])


def date_extent(domain: tuple[date, date]) -> tuple[float, float]:
    """What a value (a day) and the top cover of a dates domain: one day and its days."""
    return 1.0, float(domain[1].toordinal() - domain[0].toordinal() + 1)


def band_cover(lows: np.ndarray, widths: Sequence[float], integral: bool, domain: tuple[float, float]) -> np.ndarray:
    """rows × levels from each value's band lower edge per width (``lows``: rows × widths)."""
    lo, hi = domain
    widths_ = np.asarray(widths, dtype=np.float64)
    if integral:  # the integers of [low, low + width − 1] within [lo, hi]
        covered = np.minimum(lows + widths_ - 1, hi) - np.maximum(lows, lo) + 1
    else:  # the length of [low, low + width) within [lo, hi]
        covered = np.minimum(lows + widths_, hi) - np.maximum(lows, lo)
    leaf, top = band_extent(integral, domain)
    rows = lows.shape[0]
    return np.column_stack([np.full(rows, leaf), np.maximum(covered, 0.0), np.full(rows, float(top))])


def date_cover(months: np.ndarray, widths: Sequence[int], domain: tuple[date, date]) -> np.ndarray:
    """rows × levels from each value's month (year × 12 + month − 1) and each level's width in months
    (a level's periods are aligned on multiples of its width, as the dates rule labels them)."""
    first, last = domain[0].toordinal(), domain[1].toordinal()
    index = np.asarray(months, dtype=np.int64)
    columns = [np.ones(len(index))]
    for w in widths:
        start = (index // w * w).tolist()
        # Every distinct period once: a rule's values fall in few months.
        periods = {s: _days_within(s, s + w, first, last) for s in dict.fromkeys(start)}
        columns.append(np.array([periods[s] for s in start], dtype=np.float64))
    columns.append(np.full(len(index), date_extent(domain)[1]))
    return np.column_stack(columns)


def _days_within(start_month: int, end_month: int, first: int, last: int) -> int:
    """Days of months [start_month, end_month) (as year × 12 + month − 1) within ordinals [first, last]."""
    begin = max(_month_ordinal(start_month), first)
    end = min(_month_ordinal(end_month) - 1, last)
    return max(end - begin + 1, 0)


def _month_ordinal(month: int) -> int:
    """The ordinal of a month's first day, clamped to the calendar datetime can hold (years 1–9999)."""
    if month < 12:
        return date.min.toordinal()
    if month >= 10_000 * 12:
        return date.max.toordinal() + 1
    return date(month // 12, month % 12 + 1, 1).toordinal()


def with_stand_in(cover: np.ndarray | None) -> np.ndarray | None:
    """The cover with a NULL stand-in's branch appended: what a value covers (the leaves' cover: one,
    or none for real bands) at every level below the top, the top one more. Covering one where the
    real bands' values cover none, the stand-in cost less than they to the top: no leaf cost was
    common to all, and the report summed each raw value's own cost, its last digits moving with a
    suppressed row's value."""
    if cover is None:
        return None
    grown = cover.copy()
    grown[:, -1] += 1.0
    return np.vstack([grown, stand_in_only(cover.shape[1], cover[0, 0], cover[0, -1])])


def stand_in_only(levels: int, leaf: float, top: float) -> np.ndarray:
    """1 × levels: the NULL stand-in's cover in a hierarchy of ``levels`` whose values cover ``leaf``
    and whose top covers ``top`` without the stand-in (``with_stand_in``)."""
    return np.r_[np.full(levels - 1, leaf), top + 1.0][None, :]
