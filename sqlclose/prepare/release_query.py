"""The release query of a node, as a run writes it and `sqlclose explain` shows it.

A release of quasi-identifiers and sensitive columns only is rebuilt from the base histogram's
counts (``sql/release_counts.py``) when the counts give every released value back exactly; any
other is read from the source's rows (``queries.release``). Either way a QI at its hierarchy's top
is its one label (docs/performance.md, twenty-third round). A Parquet write asks for its labels, and
the text values it reads back from counts, in the engine's dictionary types (DuckDB's ENUM): the
same text in the same order, written and sorted by small codes (twenty-fourth round). `explain`
shows the query as text: a dictionary type exists only while a run writes.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from sqlclose.model.lattice import Node
from sqlclose.prepare.problem import Problem, QuasiIdentifierColumn
from sqlclose.sql import queries as q
from sqlclose.sql.release_counts import CountedColumn, read_back_type, release_from_counts

Counted = tuple[list[CountedColumn], list[CountedColumn]]

# Most values a released text column may have for a Parquet write to give it a dictionary type
# (``Engine.dictionary_type``), and fewest released rows per value: making DuckDB's ENUM took 0.01 s
# for 10 k values, 0.08 s for 100 k and 1.4 s for 1 M, against ~0.3 s saved per 10 M rows written
# and column. A column with more values stays text.
MAX_DICTIONARY = 100_000
ROWS_PER_VALUE = 8


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
                  counted: Counted | None, dictionaries: bool = False) -> exp.Expression:
    """The release at ``node``, failing classes (``suppressed``) removed: rebuilt from counts when
    ``counted`` (``counted_columns``) gives its columns, else read from the source's rows.
    ``dictionaries``: for a Parquet write, text the lookups give (labels, and values read back from
    counts) in the engine's dictionary types where it has them: the same values, in the same order."""
    if counted is not None:
        if dictionaries:
            counted = _with_dictionaries(problem, counted)
        return release_from_counts(problem.base, *counted, problem.released, suppressed, params)
    released = [q.ReleasedQI(qi.coded, level, qi.hierarchy.divisors[level], top_label(qi, level),
                             _label_dictionary(problem, qi, level) if dictionaries else None)
                for qi, level in zip(problem.qis, node)]
    return q.release(problem.source, problem.released, released, suppressed, params)


def _with_dictionaries(problem: Problem, counted: Counted) -> Counted:
    """The columns from counts with their dictionary types: labels, and text values read back."""
    qis, sas = counted
    by_name = {qi.name: qi for qi in problem.qis}
    sizes = {sa.name: len(sa.domain) for sa in problem.sas}
    qis = [replace(c, dictionary=_label_dictionary(problem, by_name[c.name], c.level)) if c.level
           else replace(c, dictionary=_value_dictionary(problem, c, len(by_name[c.name].hierarchy.leaves)))
           for c in qis]
    sas = [replace(c, dictionary=_value_dictionary(problem, c, sizes[c.name])) for c in sas]
    return qis, sas


def _label_dictionary(problem: Problem, qi: QuasiIdentifierColumn, level: int) -> exp.DataType | None:
    """The dictionary type of the QI's labels at ``level`` (above 0: at 0 the row path releases the
    source's own values)."""
    if not level or not _worth_a_dictionary(problem, len(qi.hierarchy.labels(level))):
        return None
    labels = exp.select(exp.alias_(q.col(f"label_{level}"), "v")).from_(q.table(qi.coded.lookup))
    return problem.engine.dictionary_type(labels)


def _value_dictionary(problem: Problem, c: CountedColumn, count: int) -> exp.DataType | None:
    """The dictionary type of a column read back from its lookup's text as text."""
    if c.type is None or not c.type.is_type(exp.DataType.Type.VARCHAR) or not _worth_a_dictionary(problem, count):
        return None
    values = exp.select(exp.alias_(q.as_text(q.col("value")), "v")).from_(q.table(c.coded.lookup))
    return problem.engine.dictionary_type(values)


def _worth_a_dictionary(problem: Problem, values: int) -> bool:
    return values <= MAX_DICTIONARY and values * ROWS_PER_VALUE <= problem.rows
