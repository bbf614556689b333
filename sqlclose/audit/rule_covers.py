"""How much of a rule's declared domain each label of a released file covers, read from the label's
text alone: the leaves below a label (nl) that ``check --against --spec`` re-derives a mask, bands or
dates column's ncp, llm, nllm, wllm and wnllm with (``alterations``).

What a label covers is stated in docs/utility.md and written again here from that statement, apart
from the release's own covers (``model/domains.py``): the audit shares no judging code with what it
audits.

- ``mask`` over an alphabet of A characters, codes of n: a code covers 1, a label whose last m
  characters are the mask character covers A^m, the top (``*``, or the code wholly masked) A^n.
- ``bands`` over ``domain = [lo, hi]``: bands of whole numbers (``35-39``, or ``[-15, -10)`` below 0)
  cover their whole numbers within the domain and a value 1; other bands (``[0.5, 1)``) their length
  within it and a value none; the top the domain's whole numbers, or its length.
- ``dates`` over ``domain = [first, last]``: a month, quarter, year or band of years (``2020-2024``)
  covers its days within the domain, a day (a timestamp too) 1, the top the domain's days.

A NULL's stand-in (``nulls = "value"``) covers what a value covers below the top, NULL left at its
leaf too, and the top one more. Which of the two kinds of bands a column has follows from the
spec's widths and origin and the column's type, which the file tells by its labels: a band of whole
numbers, an interval ending above 0, or a value written with a decimal point or exponent. Where the
labels leave it open (a column released at its top alone, or intervals below 0 alone), ``readings``
gives both, and the check holds the report to the one its figures agree with, saying so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from sqlclose.model.hierarchy import TOP_LABEL
from sqlclose.model.text import name_shown

_WHOLE = re.compile(r"-?[0-9]+")
_DASH = re.compile(r"(-?[0-9]+)-([0-9]+)")
_INTERVAL = re.compile(r"\[(-?[0-9]+(?:\.[0-9]+)?), (-?[0-9]+(?:\.[0-9]+)?)\)")
_DAY = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[ Tt].*)?")
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
_QUARTER = re.compile(r"([0-9]{4})-Q([1-4])")
_YEAR = re.compile(r"([0-9]{4})")
_YEARS = re.compile(r"([0-9]{4})-([0-9]{4})")


@dataclass(frozen=True)
class RuleDomain:
    """A mask, bands or dates rule with its domain declared, as the spec gives it."""

    kind: str  # "mask", "bands" or "dates"
    stand_in: str | None  # nulls = "value": the stand-in's label below the top
    alphabet: int = 0  # mask: the characters a code is made of
    length: int | None = None  # mask: the codes' declared length (else the file's labels tell it)
    mask_char: str = "*"
    whole_widths: bool = False  # bands: widths and origin whole numbers
    domain: tuple = ()  # bands: (lo, hi) as numbers; dates: (first, last) as days


@dataclass(frozen=True)
class Covers:
    """Per label the file holds, what it covers; what a value covers; what the top covers."""

    of: Mapping[str, float]
    leaf: float
    top: float


def covers(rule: RuleDomain, labels: Iterable[str], name: str, whole: bool | None = None) -> Covers | str:
    """What each of ``labels`` (column ``name``'s, NULL left out) covers of the rule's domain, or
    why that is not known from them. ``whole``: bands read as counting whole numbers (True) or
    lengths (False), whatever the labels tell."""
    labels = list(labels)
    if rule.kind == "mask":
        return _mask(rule, labels, name)
    if rule.kind == "bands":
        return _bands(rule, labels, name, whole)
    return _dates(rule, labels, name)


def readings(rule: RuleDomain, labels: Iterable[str], name: str) -> list[tuple[str, Covers]] | str:
    """``covers`` as the labels tell it: one reading (named ""), or, for bands of whole widths whose
    labels leave their kind open, both (named "as whole numbers", "as lengths"); or why none."""
    labels = list(labels)
    told = _whole_numbers(rule, labels) if rule.kind == "bands" else None
    if rule.kind != "bands" or told is not None:
        made = covers(rule, labels, name, told)
        return made if isinstance(made, str) else [("", made)]
    both = [(f"as {kind}", covers(rule, labels, name, whole)) for kind, whole in (("whole numbers", True),
                                                                                   ("lengths", False))]
    problem = next((made for _, made in both if isinstance(made, str)), None)
    return problem if problem is not None else both


def _mask(rule: RuleDomain, labels: list[str], name: str) -> Covers | str:
    codes = [t for t in labels if t not in (rule.stand_in, TOP_LABEL)]
    n = rule.length or (len(codes[0]) if codes else None)
    if n is None:
        return f"the length of column {name_shown(name)}'s codes is not declared, and its labels do not tell it"
    top = float(rule.alphabet) ** n + _extra(rule)
    of = {}
    for label in labels:
        m = len(label) - len(label.rstrip(rule.mask_char))
        if label == TOP_LABEL:
            of[label] = top
        elif label == rule.stand_in:
            of[label] = 1.0
        elif m == n == len(label):  # the code wholly masked: the top where the last step masks it all
            of[label] = top
        elif len(label) != n or rule.mask_char in label[:n - m]:
            return f"a label of column {name_shown(name)} is not a code of {n} characters masked from the right"
        else:
            of[label] = float(rule.alphabet) ** m
    return Covers(of, 1.0, top)


def _bands(rule: RuleDomain, labels: list[str], name: str, whole: bool | None) -> Covers | str:
    whole = _whole_numbers(rule, labels) if whole is None else whole
    if whole is None:
        return (f"whether the bands of column {name_shown(name)} count whole numbers or lengths follows from the input "
                "column's type, which its labels do not tell (intervals below 0, or no value or band at all)")
    lo, hi = (Decimal(str(x)) for x in rule.domain)
    first, last = math.ceil(lo), math.floor(hi)
    leaf = 1.0 if whole else 0.0
    top = float(last - first + 1 if whole else hi - lo) + _extra(rule)
    of = {}
    for label in labels:
        if label == TOP_LABEL:
            of[label] = top
        elif label == rule.stand_in or _number(label) is not None:
            of[label] = leaf
        elif (edges := _band_edges(label)) is not None:
            a, b = edges  # [a, b): a dash band a-c is [a, c + 1)
            held = min(b - 1, last) - max(a, first) + 1 if whole else min(b, hi) - max(a, lo)
            of[label] = float(max(held, 0))
        else:
            return f"a label of column {name_shown(name)} is neither a value nor a band"
    return Covers(of, leaf, top)


def _whole_numbers(rule: RuleDomain, labels: list[str]) -> bool | None:
    """Whether the bands count whole numbers, as the labels tell; None where they do not."""
    if not rule.whole_widths:
        return False
    told = set()
    for label in labels:
        if label in (rule.stand_in, TOP_LABEL):
            continue
        if _DASH.fullmatch(label):
            told.add(True)
        elif (m := _INTERVAL.fullmatch(label)) is not None:
            if Decimal(m.group(2)) >= 1:  # whole numbers would be written a-c
                told.add(False)
        elif _number(label) is not None:
            told.add(_WHOLE.fullmatch(label) is not None)  # a float's or decimal's values keep their point
    return told.pop() if len(told) == 1 else None


def _band_edges(label: str) -> tuple[Decimal, Decimal] | None:
    if (m := _DASH.fullmatch(label)) is not None:
        return Decimal(m.group(1)), Decimal(m.group(2)) + 1
    if (m := _INTERVAL.fullmatch(label)) is not None:
        return Decimal(m.group(1)), Decimal(m.group(2))
    return None


def _number(label: str) -> Decimal | None:
    if _DASH.fullmatch(label):
        return None
    try:
        x = Decimal(label)
    except InvalidOperation:
        return None
    return x if x.is_finite() else None


def _dates(rule: RuleDomain, labels: list[str], name: str) -> Covers | str:
    first, last = (d.toordinal() for d in rule.domain)
    top = float(last - first + 1) + _extra(rule)
    of = {}
    for label in labels:
        if label == TOP_LABEL:
            of[label] = top
        elif label == rule.stand_in or _DAY.fullmatch(label):
            of[label] = 1.0
        elif (days := _period(label)) is None:
            return f"a label of column {name_shown(name)} is neither a day nor a month, quarter, year or band of years"
        else:
            of[label] = float(max(min(days[1], last) - max(days[0], first) + 1, 0))
    return Covers(of, 1.0, top)


def _period(label: str) -> tuple[int, int] | None:
    """The first and last day (ordinals) of a month, quarter, year or band of years; None for
    another label, or a month or year no calendar has."""
    try:
        return _period_of(label)
    except ValueError:
        return None


def _period_of(label: str) -> tuple[int, int] | None:
    if (m := _MONTH.fullmatch(label)) is not None:
        year, month = int(m.group(1)), int(m.group(2))
        return _first_day(year, month), _first_day(year, month + 1) - 1
    if (m := _QUARTER.fullmatch(label)) is not None:
        year, start = int(m.group(1)), 3 * int(m.group(2)) - 2
        return _first_day(year, start), _first_day(year, start + 3) - 1
    if (m := _YEAR.fullmatch(label)) is not None:
        return _first_day(int(m.group(1)), 1), _first_day(int(m.group(1)) + 1, 1) - 1
    if (m := _YEARS.fullmatch(label)) is not None:
        return _first_day(int(m.group(1)), 1), _first_day(int(m.group(2)) + 1, 1) - 1
    return None


def _first_day(year: int, month: int) -> int:
    """The ordinal of a month's first day (month 13 is the next year's first), past year 9999 the
    day after the calendar's last."""
    if not 1 <= month <= 13 or year < 1:
        raise ValueError(f"no month {month} of year {year}")
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return date.max.toordinal() + 1 if year > 9999 else date(year, month, 1).toordinal()


def _extra(rule: RuleDomain) -> float:
    """What the top covers beyond the domain: one for the stand-in (even where a value of real bands
    covers none: docs/utility.md)."""
    return 1.0 if rule.stand_in is not None else 0.0
