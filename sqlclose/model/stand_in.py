"""A quasi-identifier's NULL stand-in (``nulls = "value"``) beside a rule (bands, dates, mask).

The rule gives the stand-in a branch of its own, and the release writes it at every level below
the top. A stand-in the rule itself writes as a label (``20-39`` under ``bands = [10, 20]``,
``1960-1969`` under dates' ``10y``, ``476**`` under a mask) released the rows with no value under
that label, as if their value were in that band, decade or code range; one at a finer level gave
a level two parents and a refusal naming a row of the generated table. Refused when the spec is
read, whatever values the column holds: the labels the rule can write follow from the spec.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlclose.errors import HierarchyError
from sqlclose.model.dates import dates_hierarchy
from sqlclose.model.hierarchy import Hierarchy, bands_hierarchy, mask_hierarchy

if TYPE_CHECKING:
    from sqlclose.model.spec import HierarchySpec

_BAND_START = re.compile(r"\[?(-?[0-9]+(?:\.[0-9]+)?)")  # a band label's lowest value: 20-39, [20.5, 30)
_DATE_START = re.compile(r"([0-9]{4})(?:-([0-9]{2})$|-Q([1-4])$)?")  # 1984, 1984-05, 1984-Q2, 1980-1989


def refuse_stand_in_rule_label(rule: HierarchySpec, stand_in: str) -> None:
    """Raise (a ValueError, for the spec's validation) when ``rule`` can write ``stand_in`` as a
    label below its top. The top itself, and text that is no label of the rule, are fine."""
    level = stand_in_rule_level(rule, stand_in)
    if level is not None:
        raise ValueError(f"null_value = {stand_in!r} is a label the {rule.kind} rule writes (level {level}), so the "
                         f"rows with no value would be released as {stand_in!r}, as if their value were in it; "
                         "choose a stand-in the rule never writes (e.g. the default \"NULL\", or \"unknown\")")


def stand_in_rule_level(rule: HierarchySpec, stand_in: str) -> int | None:
    """The level (1 up to the one below the top) at which ``rule`` writes ``stand_in``, or None.
    Found by building the rule's labels of the value the text would label (its first number, its
    year and month, its code with the masked characters filled in) and comparing them with it."""
    built = {"bands": _bands_of, "dates": _dates_of, "mask": _mask_of}.get(rule.kind)
    for hierarchy in built(rule, stand_in) if built else []:
        labels = hierarchy.rows[0][1:-1]  # the levels between the leaf and the top
        if stand_in in labels:
            return labels.index(stand_in) + 1
    return None


def _bands_of(rule: HierarchySpec, text: str) -> list[Hierarchy]:
    """The bands of the number a band label starts with, written both ways the column's type may
    ask (``35-39`` and ``[35, 40)``; whole widths and origin only for the first)."""
    start = _BAND_START.match(text)
    if start is None:
        return []
    widths = list(rule.bands or [])
    whole = rule.whole_bands
    pair = [(start.group(1), float(start.group(1)))]
    return _built(lambda integral: bands_hierarchy(pair, widths, rule.origin, integral=integral),
                  [True, False] if whole else [False])


def _dates_of(rule: HierarchySpec, text: str) -> list[Hierarchy]:
    """The labels of the first day a dates label names (its year, and month or quarter if given). A
    band of years labelled from 0000 (``0000-0009``) holds years 1 to 9, there being no year 0: its
    first day is in year 1 (year 0 made no day, and the label was taken for no label of the rule)."""
    start = _DATE_START.match(text)
    if start is None:
        return []
    year, month, quarter = start.groups()
    first_month = int(month) if month else 3 * int(quarter) - 2 if quarter else 1
    day = f"{max(int(year), 1):04d}-{first_month:02d}-01"
    return _built(lambda _: dates_hierarchy([day], rule.date_levels), [None])


def _mask_of(rule: HierarchySpec, text: str) -> list[Hierarchy]:
    """The labels of the code a masked label hides, its masked characters filled with another."""
    filler = rule.alphabet[0] if rule.alphabet else "1" if rule.mask_char == "0" else "0"
    code = text.replace(rule.mask_char, filler)
    return _built(lambda _: mask_hierarchy([code], rule.mask_steps, rule.mask_char, alphabet=rule.alphabet,
                                           length=rule.length), [None])


def _built(build: Callable[[Any], Hierarchy], variants: list[Any]) -> list[Hierarchy]:
    """The hierarchies ``build`` makes of each variant; none where the rule refuses the value (not
    a number, a date or a code it takes: then the text is no label of it)."""
    hierarchies = []
    for variant in variants:
        try:
            hierarchies.append(build(variant))
        except (HierarchyError, ValueError):
            continue
    return hierarchies
