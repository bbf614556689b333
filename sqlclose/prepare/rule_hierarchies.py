"""A quasi-identifier's hierarchy: a file's or a tree's as the spec gives it, or a rule's (``bands``,
``mask``, ``dates``) built from the column's distinct values, with the levels, labels and cover of a
declared domain that follow from the spec and the column's type, never from which values it holds
(docs/what-a-release-reveals.md)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
from sqlglot import exp

from sqlclose.errors import DataError
from sqlclose.model.dates import dates_hierarchy
from sqlclose.model.domains import band_extent, date_extent, stand_in_only, with_stand_in
from sqlclose.model.hierarchy import (
    TOP_LABEL,
    Hierarchy,
    bands_hierarchy,
    mask_hierarchy,
    masked_per_level,
    writes_whole_number,
)
from sqlclose.model.refused_values import NumberType, Refusals, Refused, ValuesAt
from sqlclose.model.spec import QuasiIdentifier, static_hierarchy
from sqlclose.model.text import cut_in_advice, name_cut, name_shown
from sqlclose.prepare.local_values import ValuesReader
from sqlclose.sql import queries as q


def distinct_values(reader: ValuesReader, c: q.CodedColumn, numbers: bool = True) -> pa.Table:
    """The column's distinct values, as text and (``numbers``) as numbers where they read as numbers."""
    return reader.engine.fetch(q.distinct_with_numbers(reader.table, c.raw, numbers), owned=True)


def qi_hierarchy(reader: ValuesReader, c: q.CodedColumn, s: QuasiIdentifier, column_type: pa.DataType,
                 source_label: str | None = None, dialect: str | None = None,
                 source_kind: str = ValuesAt.source_kind,
                 dated: Callable[[list[str]], list[str]] | None = None) -> Hierarchy:
    """``source_label``, ``dialect`` (the SQL the user writes: the engine's, a warehouse's) and
    ``source_kind`` (the kind of source, for where the user changes a column: ``model.mending``) are for the
    errors counting the values a rule refuses. ``dated``: the texts the dates rule reads the values'
    days from, given the values' (an instant's in the session's zone: ``Engine.instants_as_written``)."""
    if s.kind in ("file", "tree", "hierarchy"):
        return static_hierarchy(s, c.name)
    values = distinct_values(reader, c)
    texts = values.column("text").to_pylist()
    special = [c.null_value] if c.null_value is not None else []
    texts_rule = [t for t in texts if t not in special]
    rows = [n for t, n in zip(texts, values.column("rows").to_pylist()) if t not in special]
    if s.kind == "bands" and not reader.reads_numbers_as_source(texts_rule):
        values = distinct_values(reader.at_source(), c)
    name = f"{s.kind} rule for column {name_shown(c.name)}"
    if not texts_rule:  # every value is NULL, read as the stand-in: nothing for the rule to cut
        return _stand_in_only(s, special[0], name, column_type, c.name)
    at = ValuesAt(c.name, source_label, rows, dialect or reader.source_engine.dialect, source_kind,
                  NumberType.of(column_type), column_type)
    if s.kind == "bands":
        numbers = values.column("number").to_pylist()
        pairs = [(t, x) for t, x in zip(texts, numbers) if t not in special]
        _refuse_non_numbers(pairs, name, at)
        integral = _integral_bands(column_type, pairs, s, name, at)
        h = bands_hierarchy(pairs, s.bands or [], s.origin, name, s.declared_domain, integral, at)
    elif s.kind == "dates":
        read_as = dated(texts_rule) if dated is not None else None
        h = dates_hierarchy(texts_rule, s.date_levels, name, s.declared_domain, at, read_as)
    else:
        h = mask_hierarchy(texts_rule, s.mask_steps, s.mask_char, name, s.alphabet, s.length, at)
    if special:  # the NULL stand-in gets a branch of its own, up to the top
        rows = h.rows + (tuple([special[0]] * h.height + [h.rows[0][-1]]),)
        h = Hierarchy(rows, h.origin).built_by(s.kind, with_stand_in(h.cover))
    return h


def _stand_in_only(s: QuasiIdentifier, stand_in: str, name: str, column_type: pa.DataType, column: str) -> Hierarchy:
    """The hierarchy of a column whose every value is NULL, read as the stand-in: its branch alone,
    with the levels and the cover the rule gives it beside values. Two levels and no cover, it told
    whether a suppressed row held a value (the lattice's levels; the figures withheld or published).
    A mask's levels follow its codes' length: declared, as beside codes; otherwise two levels."""
    top = TOP_LABEL
    if s.kind == "bands":
        below_top = 1 + len(s.bands or [])
        integral = _integral_bands(column_type, [], s, name, ValuesAt(column))
        extent = None if s.declared_domain is None else band_extent(integral, s.declared_domain)
    elif s.kind == "dates":
        below_top = 1 + len(s.date_levels)
        extent = None if s.declared_domain is None else date_extent(s.declared_domain)
    elif s.length is None:
        below_top, extent = 1, None
    else:
        below_top, top, extent = _masked_stand_in(s)
    h = Hierarchy(((*[stand_in] * below_top, top),), name)
    return h.built_by(s.kind, None if extent is None else stand_in_only(h.levels, *extent))


def _masked_stand_in(s: QuasiIdentifier) -> tuple[int, str, tuple[float, float] | None]:
    """A declared mask's levels below the top, its top label and its extent, as ``mask_hierarchy``
    gives them beside codes: the top is the code wholly masked when the last step masks it all."""
    n = s.length
    masked = masked_per_level(s.mask_steps, n)
    whole = s.mask_steps[-1] == n  # no top of its own: the last step's label, every character masked
    extent = None if s.alphabet is None else (1.0, float(len(s.alphabet)) ** n)
    return len(masked) - 1, s.mask_char * n if whole else TOP_LABEL, extent


def _refuse_non_numbers(pairs: list[tuple[str, float | None]], name: str, at: ValuesAt) -> None:
    """The error counting the values the engine does not read as numbers (and their rows)."""
    fix = (", and bands cut numbers: give the column a hierarchy file or tree (or, for days, the dates rule), or "
           "clean the data")

    def find(column: exp.Expression) -> exp.Expression:
        as_number = exp.TryCast(this=column.copy(), to=exp.DataType.build("DOUBLE"), safe=True)
        return exp.and_(as_number.is_(exp.null()), exp.Not(this=column.copy().is_(exp.null())))

    why = Refused("that are not numbers" + fix, find, one="that is not a number" + fix)
    refusals = Refusals()
    for i, (_, x) in enumerate(pairs):
        if x is None:
            refusals.add(why, i)
    refusals.raise_first(name, at, DataError)


def _integral_bands(column_type: pa.DataType, pairs: list[tuple[str, float]], s: QuasiIdentifier,
                    name: str, at: ValuesAt) -> bool:
    """Whether bands are labelled as integers (``35-39``) or intervals (``[35, 40)``): by the widths,
    the origin and the column's type, never by which values it holds. Decided by the values, a
    suppressed row's 40.5 turned every label into an interval: the release told of a row it hides.
    A text column has no numeric type: with whole widths its values must all be whole numbers."""
    whole = s.whole_bands
    if pa.types.is_integer(column_type) or (pa.types.is_decimal(column_type) and column_type.scale == 0):
        return whole
    if pa.types.is_floating(column_type) or pa.types.is_decimal(column_type) or not whole:
        return False
    fix = (", and the column is text, whose bands have whole widths: read it as numbers to band it in intervals "
           f"like [35, 40) — declare its type ([source] types = {{ {name_cut(at.column)} = \"DOUBLE\" }} for a "
           f"CSV{cut_in_advice(at.column)}) or store it as a number — or clean the values")
    why = Refused("that are not whole numbers" + fix, one="that is not a whole number" + fix)
    refusals = Refusals()
    for i, (text, x) in enumerate(pairs):
        if writes_whole_number(text, x) is False:  # None: refused by the bands themselves
            refusals.add(why, i)
    refusals.raise_first(name, at, DataError)
    return True
