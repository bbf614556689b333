"""The release rebuilt from counts, when every released column is a quasi-identifier or a
sensitive column.

Such a release is the chosen node's class histogram — its classes × sensitive values, grouped
from the base histogram — with each of its rows repeated ``n`` times. Built that way it does not
read the source a second time and joins the lookups once per class row instead of once per input
row; its rows are then sorted by their released values, as every release's are. The rows, their
order and their types are those of the release read from the source (``queries.release``), which
stays the way for every other release (docs/performance.md, twenty-third round).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from sqlclose.sql import queries as q

# Types whose values read back from their text exactly, each as the SQL type to read them back as.
# Others (floats, decimals, timestamps, unsigned integers…) keep the release read from the source.
_READ_BACK = ((pa.types.is_string, "VARCHAR"), (pa.types.is_large_string, "VARCHAR"),
              (lambda t: t == pa.int8(), "TINYINT"), (lambda t: t == pa.int16(), "SMALLINT"),
              (lambda t: t == pa.int32(), "INT"), (lambda t: t == pa.int64(), "BIGINT"),
              (lambda t: t == pa.date32(), "DATE"), (pa.types.is_boolean, "BOOLEAN"))


def read_back_type(kind: pa.DataType) -> exp.DataType | None:
    """The SQL type a column of ``kind`` is read back as from its text, or None when its text may
    not give back exactly the value it was made from."""
    return next((exp.DataType.build(sql) for test, sql in _READ_BACK if test(kind)), None)


@dataclass(frozen=True)
class CountedColumn:
    """A released column as its lookup gives it: the label of its class at ``level`` (a
    generalized quasi-identifier), or its own value read back from the lookup's text as ``type``
    (level 0, and sensitive columns), NULL where the text is the column's ``null_value``."""

    name: str
    coded: q.CodedColumn
    level: int = 0
    divisor: int = 1  # leaf code // divisor = class code at ``level``
    type: exp.DataType | None = None  # the source's type; None: text, as the lookup holds it
    null_value: str | None = None  # the stand-in NULLs were read as (quasi-identifiers only)
    top: str | None = None  # at the hierarchy's top: the one label of every class (nothing to group or join)
    dictionary: exp.DataType | None = None  # its text's type where not VARCHAR (Engine.dictionary_type)
    typed: exp.Table | None = None  # below the top, with a dictionary: its lookup kept so typed (``typed_lookup``)


def release_from_counts(base: exp.Expression, qis: Sequence[CountedColumn], sas: Sequence[CountedColumn],
                        names: Sequence[str], suppressed: exp.Table | None, params: q.Params,
                        looked_up: q.LookedUp | None = None) -> exp.Expression:
    """The release: the columns ``names`` (every one a quasi-identifier or a sensitive column),
    failing classes removed (``suppressed``: their class codes), rows sorted as every release's
    are (``queries.release_order``) after they are repeated: only an ORDER BY at the top
    guarantees an order. ``looked_up``: how the engine reads a lookup without a join, if it can
    (``queries.join_lookup``)."""
    by_name = {c.name: c for c in [*qis, *sas]}
    columns = [by_name[name] for name in names]
    count, copy = _free_names(["count", "copy"], names)
    grouped = [(c.coded.code, c.divisor) for c in qis if c.top is None]
    classes = released_classes(base, grouped, [c.coded.code for c in sas], suppressed)
    values = [q.labelled(params.add(c.top), c.dictionary) if c.top is not None
              else q.col("value", _lk(c)) if c.level else q.given_as_is(q.col("value", _lk(c))) for c in columns]
    select = exp.select(*[exp.alias_(v, q.ident(c.name)) for v, c in zip(values, columns)],
                        exp.alias_(q.col("n", "cls"), q.ident(count))).from_(classes.subquery("cls", copy=False))
    for c in columns:
        if c.top is None:
            code = q.col(c.coded.code, "cls")
            select = q.join_lookup(select, _lookup(c, params), _lk(c), "code",
                                   lambda c=c, code=code: exp.EQ(this=q.col("code", _lk(c)), expression=code),
                                   lambda code=code: code.copy(), params.add, looked_up=looked_up, copy=False)
    copies = exp.Explode(this=exp.GenerateSeries(start=exp.Literal.number(1), end=q.col(count)))
    repeated = exp.select(*[q.col(name) for name in names], exp.alias_(copies, q.ident(copy))).from_(
        select.subquery("counted", copy=False))
    order = q.release_order(names, [c.name for c in qis], [c.name for c in qis if c.top is not None])
    return q.sorted_by(exp.select(*[q.col(name) for name in names]).from_(repeated.subquery("released", copy=False)),
                       order)


def released_classes(base: exp.Expression, groups: Sequence[tuple[str, int]], sa_codes: Sequence[str],
                     suppressed: exp.Table | None) -> exp.Select:
    """A node's classes × sensitive values with their counts, grouped from the base histogram
    (``groups``: the QIs' code columns and divisors, those at their top left out), failing classes
    (``suppressed``: their class codes) removed: what a release of the node holds."""
    classes = q.node_histogram(base.copy(), groups, sa_codes)
    if suppressed is None:
        return classes
    codes = [(code, q.col(code, "cls")) for code, _ in groups]
    every_column = exp.Column(this=exp.Star(), table=q.ident("cls"))
    return q.without_suppressed(exp.select(every_column).from_(classes.subquery("cls", copy=False)),
                                suppressed, codes)


def _free_names(stems: Sequence[str], taken: Sequence[str]) -> list[str]:
    """Names for the query's own columns that no released column has (a user's may be "n" or
    "__sqlclose_count")."""
    out = []
    for stem in stems:
        name, i = f"__sqlclose_{stem}", 0
        while name in taken:
            i += 1
            name = f"__sqlclose_{stem}_{i}"
        out.append(name)
    return out


def _lookup(c: CountedColumn, params: q.Params) -> exp.Select:
    """``code`` → ``value`` for one column: a class's label at its level, or a leaf's value typed;
    in its dictionary type, the kept ``typed_lookup``."""
    if c.typed is not None:
        return exp.select(q.col("code"), q.col("value")).from_(c.typed.copy())
    if c.level:
        return q.class_labels(c.coded.lookup, c.level, c.divisor)
    value: exp.Expression = q.col("value")
    if c.type is not None:
        value = exp.Cast(this=value, to=c.type.copy())
    if c.null_value is not None:
        is_stand_in = exp.EQ(this=q.col("value"), expression=params.add(c.null_value))
        value = exp.Case(ifs=[exp.If(this=is_stand_in, true=exp.Null())], default=value)
    return exp.select(q.col("code"), exp.alias_(value, "value")).from_(q.table(c.coded.lookup))


def typed_lookup(c: CountedColumn, dictionary: exp.DataType) -> exp.Select:
    """``code`` → ``value`` for a column below its top given a dictionary type: its classes'
    labels, or its leaves' text, in that type, those that are no member left out
    (``queries.is_member``: a label or value no released class holds)."""
    if c.level:
        return q.class_labels(c.coded.lookup, c.level, c.divisor, dictionary)
    value = exp.alias_(q.in_dictionary(q.col("value"), dictionary), "value")
    member = q.is_member(q.col("value"), dictionary)
    return exp.select(q.col("code"), value).from_(q.table(c.coded.lookup)).where(member)


def _lk(c: CountedColumn) -> str:
    return f"lk_{c.coded.code}"
