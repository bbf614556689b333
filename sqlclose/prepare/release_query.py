"""The release query of a node, as a run writes it and `sqlclose explain` shows it.

A release of quasi-identifiers and sensitive columns only is rebuilt from the base histogram's
counts (``sql/release_counts.py``) when the counts give every released value back exactly; any
other is read from the source's rows (``queries.release``). Either way a QI at its hierarchy's top
is its one label (docs/performance.md, twenty-third round).
"""

from __future__ import annotations

from sqlglot import exp

from sqlclose.model.lattice import Node
from sqlclose.prepare.problem import Problem, QuasiIdentifierColumn
from sqlclose.sql import queries as q
from sqlclose.sql.release_counts import CountedColumn, read_back_type, release_from_counts

Counted = tuple[list[CountedColumn], list[CountedColumn]]


def top_label(qi: QuasiIdentifierColumn, level: int) -> str | None:
    """The one label of every value at ``level`` when it is the hierarchy's top (above level 0)."""
    return qi.hierarchy.labels(level)[0] if 0 < level == qi.levels - 1 else None


def counted_columns(problem: Problem, node: Node) -> Counted | None:
    """The quasi-identifiers and sensitive columns as the counts give them back at ``node``, or
    None when the release must be read from the source: a released column that is neither (its
    values are in no histogram), a value whose text may not read back exactly, or a sensitive
    column's NULL stand-in (it may also be a real value: the counts cannot tell them apart)."""
    if set(problem.released) - {qi.name for qi in problem.qis} - {sa.name for sa in problem.sas}:
        return None
    schema = problem.engine.schema(problem.source)
    qis = []
    for qi, level in zip(problem.qis, node):
        kind = read_back_type(schema.field(qi.name).type) if level == 0 else None  # above 0: labels, text
        if level == 0 and kind is None:
            return None
        qis.append(CountedColumn(qi.name, qi.coded, int(level), qi.hierarchy.divisors[level], kind,
                                 None if level else qi.coded.null_value, top_label(qi, level)))
    sas = []
    for sa in problem.sas:
        kind = read_back_type(schema.field(sa.name).type)
        if kind is None or sa.coded.null_value is not None:
            return None
        sas.append(CountedColumn(sa.name, sa.coded, type=kind))
    return qis, sas


def release_query(problem: Problem, node: Node, suppressed: exp.Table | None, params: q.Params,
                  counted: Counted | None) -> exp.Expression:
    """The release at ``node``, failing classes (``suppressed``) removed: rebuilt from counts when
    ``counted`` (``counted_columns``) gives its columns, else read from the source's rows."""
    if counted is not None:
        return release_from_counts(problem.base, *counted, problem.released, suppressed, params)
    released = [q.ReleasedQI(qi.coded, level, qi.hierarchy.divisors[level], top_label(qi, level))
                for qi, level in zip(problem.qis, node)]
    return q.release(problem.source, problem.released, released, suppressed, params)
