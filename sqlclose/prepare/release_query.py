"""The release query of a node, as a run writes it and `sqlclose explain` shows it.

A release of quasi-identifiers and sensitive columns only is rebuilt from the base histogram's
counts (``sql/release_counts.py``) when the counts give every released value back exactly; any
other is read from the source's rows (``queries.release``). Either way a QI at its hierarchy's top
is its one label (docs/performance.md, twenty-third round). A Parquet write asks for its labels, and
the text values it reads back from counts, in the engine's dictionary types (DuckDB's ENUM): the
same text in the same order, written and sorted by small codes (twenty-fourth round). A type's
members are the values the release holds, never a lookup's every value: a Parquet writer may write
every member into the file. `explain` shows the query as text: a dictionary type exists only while
a run writes.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.model.arrays import arrow_table
from sqlclose.model.arrow_types import holds, reached_float
from sqlclose.model.lattice import Node
from sqlclose.prepare.problem import Problem, QuasiIdentifierColumn
from sqlclose.prepare.sort_key import packed_sort_key
from sqlclose.sql import queries as q
from sqlclose.sql.release_counts import (
    CountedColumn,
    read_back_type,
    release_from_counts,
    released_classes,
    typed_lookup,
)

Counted = tuple[list[CountedColumn], list[CountedColumn]]

# Most values a released text column may have for a Parquet write to give it a dictionary type
# (``Engine.dictionary_type``), and fewest released rows per value: making DuckDB's ENUM took 0.01 s
# for 10 k values, 0.08 s for 100 k and 1.4 s for 1 M, against ~0.3 s saved per 10 M rows written
# and column. A column with more values stays text.
MAX_DICTIONARY = 100_000
ROWS_PER_VALUE = 8
# A text column a release gives as it is takes a dictionary type only with at most this many values
# and in a release of at least this many rows: its values are grouped from the source's rows first.
# Measured on the 10 M-row generated table (docs/performance.md, thirty-seventh round): grouping a
# column of 3–800 values took 0.15–0.18 s and saved more in the sorted write; one of 100 k values
# took 0.85 s, its type and lookup 0.2 s more, for less than it saved. Since every column is grouped
# in one statement (fifty-third round), five columns cost 0.02 s of CPU at 1 M rows against ~0.3 s
# saved in the write, and the write still saves more than they cost at 200 k rows.
PASSED_MAX_VALUES = 10_000
PASSED_MIN_ROWS = 200_000
# HyperLogLog's estimate of a column's distinct values can be this much above them (a few % at
# DuckDB's precision): a column is grouped unless its estimate, so lowered, has too many values.
ESTIMATE_ERROR = 1.1


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
    given = [qi.name for qi, level in zip(problem.qis, node) if level == 0] + [sa.name for sa in problem.sas]
    if not _text_is_plain(problem, schema, given):
        return None
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


def _text_is_plain(problem: Problem, schema: pa.Schema, names: list[str]) -> bool:
    """Whether every column given as it is (``names``) that Arrow reads as text is the engine's
    plain text: DuckDB's UUID and JSON reach Arrow as text too, and read back from the counts as
    text, a UUID column's release changed its type and its re-check found no row of the input."""
    text = [name for name in names if read_back_type(schema.field(name).type) == exp.DataType.build("VARCHAR")]
    return len(problem.engine.plain_text_columns(problem.source, text)) == len(text)


def release_query(problem: Problem, node: Node, suppressed: exp.Table | None, params: q.Params,
                  counted: Counted | None, dictionaries: bool = False,
                  suppressed_rows: int | None = None) -> exp.Expression:
    """The release at ``node``, failing classes (``suppressed``, holding ``suppressed_rows`` rows)
    removed: rebuilt from counts when ``counted`` (``counted_columns``) gives its columns, else read
    from the source's rows. ``dictionaries``: for a Parquet write, text the lookups give (labels, and
    values read back from counts) in the engine's dictionary types where it has them: the same
    values, in the same order."""
    types = released_dictionaries(problem, node, suppressed, counted) if dictionaries else {}
    if counted is not None:
        qis, sas = (_counted_in_types(problem.engine, columns, types) for columns in counted)
        return release_from_counts(problem.base_at(dict(enumerate(node))), qis, sas, problem.released, suppressed,
                                   params, problem.engine.looked_up)
    released = [_released_qi(problem.engine, qi, level, types.get(qi.name) if level else None)
                for qi, level in zip(problem.qis, node)]
    passed = passed_through_dictionaries(problem, node, suppressed, suppressed_rows) if dictionaries else {}
    schema = problem.engine.schema(problem.source)
    ties, rewrites = written_as_given(problem, node, schema)
    key = packed_sort_key(problem, released, passed, ties, schema)
    return q.release(problem.source, problem.released, released, suppressed, params, passed, ties=ties,
                     rewrites=rewrites, key=key.expression if key else None, held=key.whole if key else (),
                     looked_up=problem.engine.looked_up)


def written_as_given(problem: Problem, node: Node | None,
                     schema: pa.Schema | None = None) -> tuple[q.Ties, dict[str, q.Rewrite]]:
    """Of the released columns given as they are (not a QI released above its leaves, a label,
    text; nor any QI when ``node`` is None, GAA: every QI is a label), from one look at the source's
    schema:

    - ``ties``: those whose equal values may be written differently: floating point (-0.0 and 0.0),
      intervals (1 month and 30 days), nested types holding them; ordered by their text too, and by
      it alone (``Ties.by_text``) those the engine cannot sort (``Engine.orders_maps``: a MAP, or a
      type holding one, on Spark, whose release query failed with INVALID_ORDERING_TYPE after the
      search): every such type is nested, so one of ``ties.columns``;
    - ``rewrites``: those holding floats, plain or nested, each with its NaNs written as one NaN
      (``nan_rewrite``): NaNs that differ only in their payload tie in every sort SQL has, text
      included (rv9 #3). A quasi-identifier's or sensitive column's NaN keeps its sign (a column
      holding both is refused up front: ``problem._refuse_two_spellings``); a kept column's is
      dropped: DuckDB's Parquet writer keeps one NaN per dictionary, whichever sign came first, so
      a column holding both was written with one and failed its own re-check. A release rebuilt
      from counts holds no float (``release_counts.read_back_type``). ``schema``: the source's,
      when the caller has read it."""
    engine = problem.engine
    schema = schema if schema is not None else engine.schema(problem.source)
    given = [(name, schema.field(name).type) for name in _given_as_is(problem, node)]
    unlike = tuple(name for name, kind in given if _unlike_equal(kind))
    judged = {qi.name for qi in problem.qis} | {sa.name for sa in problem.sas}
    rewrites = {name: rewrite for name, kind in given
                if (rewrite := nan_rewrite(kind, engine.is_nan,
                                           engine.has_minus_sign if name in judged else None)) is not None}
    by_text = () if engine.orders_maps else tuple(name for name, kind in given if holds(kind, pa.types.is_map))
    return q.Ties(unlike, by_text, engine.content_text if by_text else None), rewrites


def nan_rewrite(kind: pa.DataType, nan: q.Rewrite, signed: q.Rewrite | None) -> q.Rewrite | None:
    """How a value of Arrow type ``kind`` given as it is gets its NaNs written as ``canonical_nan``
    writes one (of its sign, or with ``signed`` None without it) — a float, or every float inside
    its lists, structs and maps at any depth — or None when it holds no float this reaches. Nested
    NaNs follow the input's order as plain ones did: a list column holding NaNs of two payloads was
    written with every NaN carrying the bits of the first row that held one (the sixty-second
    round's review). A fixed-size list is rebuilt as a list and cast back, which its elements' type
    allows when they are floats: one of nested values holding a float is not reached, and refused
    before the search (``model.arrow_types``)."""
    if not reached_float(kind):
        return None
    return lambda value: _nans_rewritten(value, kind, nan, signed, 0)


def _nans_rewritten(value: exp.Expression, kind: pa.DataType, nan: q.Rewrite, signed: q.Rewrite | None,
                    depth: int) -> exp.Expression:
    """``value`` (of ``kind``, which ``reached_float``) rebuilt with its floats through ``canonical_nan``;
    a part holding none is taken whole. ``depth`` names each level's lambda variable apart."""
    if not reached_float(kind):
        return value.copy()
    if pa.types.is_floating(kind):
        return q.canonical_nan(value, _float_type(kind), nan, signed)
    if pa.types.is_struct(kind):  # a NULL struct stays NULL, not a struct of NULLs
        fields = [kind.field(i) for i in range(kind.num_fields)]
        rebuilt = exp.Struct(expressions=[
            exp.PropertyEQ(this=exp.to_identifier(f.name, quoted=True),
                           expression=_nans_rewritten(_member(value, f.name), f.type, nan, signed, depth))
            for f in fields])
        return exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null())],
                        default=rebuilt)
    element = exp.to_identifier(f"__sqlclose_element_{depth}")
    if pa.types.is_map(kind):
        entry = exp.Struct(expressions=[
            exp.PropertyEQ(this=exp.to_identifier(part, quoted=True),
                           expression=_nans_rewritten(_member(exp.column(element), part), part_type, nan, signed,
                                                      depth + 1))
            for part, part_type in (("key", kind.key_type), ("value", kind.item_type))])
        entries = exp.Anonymous(this="MAP_ENTRIES", expressions=[value.copy()])
        return exp.Anonymous(this="MAP_FROM_ENTRIES", expressions=[
            exp.Transform(this=entries, expression=exp.Lambda(this=entry, expressions=[element]))])
    rebuilt = exp.Transform(this=value.copy(), expression=exp.Lambda(
        this=_nans_rewritten(exp.column(element), kind.value_type, nan, signed, depth + 1), expressions=[element]))
    if pa.types.is_fixed_size_list(kind):  # LIST_TRANSFORM gives a list of any size
        array = exp.DataType(this=exp.DataType.Type.ARRAY, expressions=[_float_type(kind.value_type)],
                             values=[exp.Literal.number(kind.list_size)], nested=True)
        return exp.Cast(this=rebuilt, to=array)
    return rebuilt


def _member(value: exp.Expression, name: str) -> exp.Expression:
    return exp.Bracket(this=value.copy(), expressions=[exp.Literal.string(name)])


def _float_type(kind: pa.DataType) -> exp.DataType:
    return exp.DataType.build("DOUBLE" if kind == pa.float64() else "FLOAT")


def _given_as_is(problem: Problem, node: Node | None) -> list[str]:
    """The released columns given as they are: not a QI released above its leaves, nor any QI
    when ``node`` is None (GAA)."""
    labelled = {qi.name for qi, level in zip(problem.qis, node) if level} if node is not None \
        else {qi.name for qi in problem.qis}
    return [name for name in problem.released if name not in labelled]


def _unlike_equal(kind: pa.DataType) -> bool:
    return (pa.types.is_floating(kind) or pa.types.is_interval(kind) or pa.types.is_duration(kind)
            or pa.types.is_nested(kind))


def _released_qi(engine: Engine, qi: QuasiIdentifierColumn, level: int, kind: exp.DataType | None) -> q.ReleasedQI:
    """How a QI is released at ``level``: with a dictionary type below its top, joined to its
    lookup kept with its labels so typed (``queries.typed_labels``)."""
    top = top_label(qi, level)
    typed = _kept_lookup(engine, q.typed_labels(qi.coded.lookup, level, kind)) \
        if kind is not None and top is None else None
    return q.ReleasedQI(qi.coded, level, qi.hierarchy.divisors[level], top, kind, typed)


def _counted_in_types(engine: Engine, columns: list[CountedColumn],
                      types: dict[str, exp.DataType]) -> list[CountedColumn]:
    """The columns read back from counts, each with its dictionary type, if any, and below its top
    its lookup kept so typed (``release_counts.typed_lookup``)."""
    out = []
    for c in columns:
        kind = types.get(c.name)
        typed = _kept_lookup(engine, typed_lookup(c, kind)) if kind is not None and c.top is None else None
        out.append(replace(c, dictionary=kind, typed=typed))
    return out


def _kept_lookup(engine: Engine, lookup: exp.Select) -> exp.Table:
    """A typed lookup as a temp table: the engine then knows where its typed column holds NULL
    (``queries.is_member``), and a Parquet write is as required or optional as the text release's.
    ``lookup`` is built for this one statement (``queries.typed_labels``, ``release_counts.typed_lookup``):
    rendered without a copy."""
    return engine.create_temp_table(engine.temp_name("typed_lookup"), lookup, owned=True)


def passed_through_dictionaries(problem: Problem, node: Node, suppressed: exp.Table | None,
                                suppressed_rows: int | None = None) -> dict[str, exp.Table]:
    """For a release read from the source's rows, the text columns it gives as they are (a QI at
    level 0, sensitive and other columns) in dictionary types, whose members are the values of the
    rows the release keeps, grouped in one pass for all columns: the source's rows
    (``Problem.source``: rows dropped for a NULL are left out), less those of a suppressed class
    (``queries.kept_values``): a value only they hold would be a member, which a Parquet writer may
    write into the file. Written and sorted as small codes, the 10 M-row generated table's release
    of 16 columns took 20–30 % less time to write (docs/performance.md, thirty-seventh round); its
    text, order, NULLs and Parquet schema are the text release's. A column under a collation is read
    byte by byte (``DuckDBEngine.compared_as_bytes``): "A" and "a" are two members. Only the
    engine's plain text type (``Engine.dictionary_columns``: on DuckDB VARCHAR, not JSON or UUID,
    which reach Arrow as text too). A column with too many values for a dictionary
    (``_worth_passing``) is not grouped: a QI's and a sensitive column's are counted from
    ``Problem.values``, another's are estimated first (HyperLogLog, all such columns in one pass)."""
    engine = problem.engine
    if not engine.has_dictionary_types or problem.rows < PASSED_MIN_ROWS:
        return {}
    levels = dict(zip((qi.name for qi in problem.qis), node))
    text = engine.dictionary_columns(problem.source, [name for name in problem.released if levels.get(name, 0) == 0])
    if suppressed is None:
        names = _few_values(problem, text)
        return _passed_through(problem, q.passed_values(problem.source, names), names) if names else {}
    params = q.Params()
    released = [q.ReleasedQI(qi.coded, level, qi.hierarchy.divisors[level], top_label(qi, level))
                for qi, level in zip(problem.qis, node)]
    names = _few_values(problem, text, released, suppressed, suppressed_rows)
    if not names:
        return {}
    kept = q.kept_values(problem.source, names, released, suppressed, params, problem.engine.looked_up)
    return _passed_through(problem, kept, names, params.values)


def _few_values(problem: Problem, names: list[str], released: Sequence[q.ReleasedQI] = (),
                suppressed: exp.Table | None = None, suppressed_rows: int | None = None) -> list[str]:
    """Of ``names``, the columns that may have few enough values for a dictionary: a QI's or a
    sensitive column's as the rows hold them (``Problem.values``), never its hierarchy's or
    domain's size, which may count values no released row holds; another's estimated, with the
    estimate's error. ``released``, ``suppressed``: the released QIs and the failing classes, when
    classes are suppressed. What suppressed rows hold must not decide whether a column is
    written with a dictionary type (docs/what-a-release-reveals.md), so then the estimates are of
    the kept rows alone (``queries.kept_rows``), and a counted column's values are lowered by the
    rows suppressed: each holds one value at most, so what is left is no more than the kept rows
    hold, and a column it rules out has too many in the kept rows too. A column this passes is
    decided by the kept rows' exact count (``_passed_through``). Without a column to estimate, the
    rows suppressed are the release's own count (``suppressed_rows``) where the caller gives it: no
    pass over the rows just to count them (0.25 s at 10 M rows)."""
    engine = problem.engine
    coded = [qi.coded for qi in problem.qis] + [sa.coded for sa in problem.sas if sa.coded is not None]
    counted = {c.name for c in coded}
    others = [name for name in names if name not in counted]
    known: dict[str, int] = {}
    dropped = 0
    if suppressed is not None and not others and suppressed_rows is not None:
        dropped = suppressed_rows  # the release's own count: no pass over the rows just to count them
    elif suppressed is not None:  # the kept rows alone: their values estimated, and counted
        params = q.Params()
        rows = q.kept_rows(problem.source, others, released, suppressed, params, engine.looked_up).subquery()
        found = engine.fetch_row(q.estimated_values(rows, others, counted=True), params.values, owned=True)
        dropped = problem.rows - int(found["rows"])
    elif others:
        found = engine.fetch_row(q.estimated_values(problem.source, others), owned=True)
    if others:
        known.update({name: int(found[f"e{i}"] / ESTIMATE_ERROR) for i, name in enumerate(others)})
    if coded:
        held = engine.fetch_row(q.held_value_counts(problem.values, coded), owned=True)
        known.update({c.name: max(int(held[f"c{i}"] or 0) - dropped, 0) for i, c in enumerate(coded)})
    return [name for name in names if _worth_passing(problem, known[name])]


def _worth_passing(problem: Problem, values: int) -> bool:
    return values <= PASSED_MAX_VALUES and _worth_a_dictionary(problem.rows, values)


def _passed_through(problem: Problem, grouped: exp.Expression, names: list[str],
                    params: list[object] | None = None) -> dict[str, exp.Table]:
    """Of the columns ``names``, each one's lookup (value → its member of the column's dictionary
    type) in a temp table of the engine, kept while the engine is (the release query joins it);
    a column that stays text has none. ``grouped``: their values (``queries.passed_values``), a
    tree built for this one statement (rendered without a copy)."""
    engine = problem.engine
    values = engine.create_temp_table(engine.temp_name("passed_values"), grouped, params or (), owned=True)
    try:
        counts = engine.fetch(q.passed_value_counts(values), owned=True)
        distinct = dict(zip(counts.column("col").to_pylist(), counts.column("distinct_values").to_pylist()))
        lookups = {}
        for i, name in enumerate(names):
            if not distinct.get(i) or not _worth_passing(problem, distinct[i]):
                continue
            kind = engine.dictionary_type(q.passed_members(values, i))
            if kind is not None:
                # A table, not a query: its code column, known to hold no NULL, keeps an inner join's column NOT NULL.
                lookups[name] = engine.create_temp_table(engine.temp_name("passed_lookup"),
                                                         q.passed_lookup(values, i, kind), owned=True)
        return lookups
    finally:
        engine.unregister(values.name)


def released_dictionaries(problem: Problem, node: Node, suppressed: exp.Table | None,
                          counted: Counted | None) -> dict[str, exp.DataType]:
    """Per released text column a lookup gives, its dictionary type (``Engine.dictionary_type``),
    whose members are the values the release holds, and nothing else: a Parquet writer may write a
    type's every member into the file (DuckDB's did in every row group's dictionary page, in the
    versions whose source we read), and a label of a suppressed class, or a value only suppressed
    rows have, must not reach it. The members come from the node's released classes
    (``release_counts.released_classes``), grouped once from the base histogram; or, when no class
    is suppressed, from the values the rows kept hold: the release then holds every one, and the
    base need not be grouped again for them (~0.11 s of a 10 M-row job; docs/performance.md,
    thirtieth round). A QI's labels are then known without a query, from the leaf counts
    (``_held_labels``); a value read back from counts is read from ``Problem.values``."""
    wanted = _wanted(problem, node, counted) if problem.engine.has_dictionary_types else {}
    if not wanted:
        return {}
    engine = problem.engine
    if suppressed is None:
        held = _held_labels(problem, node, wanted)
        types = _typed_held(engine, held, problem.rows)
        types.update(_typed(engine, {name: members(q.present_codes(problem.values, coded, divisor).subquery())
                                     for name, (coded, divisor, members) in wanted.items() if name not in held},
                            problem.rows))
        return types
    grouped = [(qi.coded.code, qi.hierarchy.divisors[level]) for qi, level in zip(problem.qis, node)
               if top_label(qi, level) is None]
    classes = released_classes(problem.base_at(dict(enumerate(node))), grouped, [sa.coded.code for sa in problem.sas],
                               suppressed)
    table = engine.create_temp_table(engine.temp_name("released_classes"), classes, owned=True)
    try:
        released_count = engine.fetch_row(exp.select(exp.alias_(exp.Count(this=exp.Star()), "n")).from_(table.copy()),
                                          owned=True)["n"]
        if not released_count:
            return {}  # nothing released: nothing to write faster
        # No column holds more values than the release has classes: when those are few, all are.
        few = _worth_a_dictionary(problem.rows, released_count)
        return _typed(engine, {name: members(table) for name, (_, _, members) in wanted.items()}, problem.rows, few)
    finally:
        engine.unregister(table.name)


def _held_labels(problem: Problem, node: Node, wanted: Container[str]) -> dict[str, list[str]]:
    """Of the ``wanted`` columns, each QI released above its leaves with its labels at its level
    that the rows kept hold: those of the leaves the leaf counts (``Problem.leaf_counts``, read
    from ``Problem.values``) find in a row. When no class is suppressed the release holds exactly
    these; a leaf no row holds, a hierarchy's every label, must not be a member. Distinct, since a
    level's labels are (``Hierarchy.labels``): no query counts them. The count and the joins over
    the column values this saves took ~0.05 s of CPU of the 1 M-row job (docs/performance.md,
    hundred-and-second round)."""
    held = {}
    for qi, level, counts in zip(problem.qis, node, problem.leaf_counts):
        if level and qi.name in wanted:
            labels = qi.hierarchy.labels(level)
            # bincount, not np.unique: the codes are small and non-negative, and np.unique loads numpy.ma,
            # which a run does not otherwise import (tests/test_cold_start.py)
            codes = np.flatnonzero(np.bincount(qi.hierarchy.level_codes[counts > 0, level]))
            held[qi.name] = [labels[c] for c in codes.tolist()]
    return held


def _typed_held(engine: Engine, held: dict[str, list[str]], rows: int) -> dict[str, exp.DataType]:
    """``_typed`` of columns whose members are known (``held``): worth a type by their number, made
    from a table of them registered for the types' statements (a label is a value of a file, never
    SQL text)."""
    worth = {name: values for name, values in held.items() if _worth_a_dictionary(rows, len(values))}
    if not worth:
        return {}
    name = engine.temp_name("held_labels")
    positions = [i for i, values in enumerate(worth.values()) for _ in values]
    engine.register(name, arrow_table({"col": positions, "v": [v for values in worth.values() for v in values]},
                                      {"col": pa.int64(), "v": pa.string()}))
    try:
        return _typed(engine, {column: exp.select(q.col("v")).from_(q.table(name)).where(
            exp.EQ(this=q.col("col"), expression=exp.Literal.number(i))) for i, column in enumerate(worth)},
            rows, few=True)
    finally:
        engine.unregister(name)


def _typed(engine: Engine, members: dict[str, exp.Select], rows: int, few: bool = False) -> dict[str, exp.DataType]:
    """The dictionary type of each column's members worth one, where the engine makes one. Worth
    it by how many members the column has (the values the release holds) and by its rows, never by
    its hierarchy's size: a rule's leaves, or a file's, may be values no released row holds, a
    suppressed or dropped one's, and the type is in the file's bytes. ``few``: every column is
    known to have few enough, uncounted."""
    if not members:
        return {}
    if not few:
        held = engine.fetch_row(q.distinct_counts(list(members.values())), owned=True)
        members = {name: query for i, (name, query) in enumerate(members.items())
                   if _worth_a_dictionary(rows, int(held[f"c{i}"] or 0))}
    types = {name: engine.dictionary_type(query) for name, query in members.items()}
    return {name: kind for name, kind in types.items() if kind is not None}


# A column's members as a query over a node's classes (a table, or a query, holding its code column).
Members = Callable[[exp.Expression], exp.Select]


def _wanted(problem: Problem, node: Node, counted: Counted | None) -> dict[str, tuple[q.CodedColumn, int, Members]]:
    """The released columns that may take a dictionary type, each with its coded column, the
    divisor its classes' codes are at, and the query of its values over the released classes: a
    QI's labels (above level 0), and, rebuilt from counts, text values (``_typed`` counts them)."""
    wanted: dict[str, tuple[q.CodedColumn, int, Members]] = {}
    for qi, level in zip(problem.qis, node):
        if level:
            wanted[qi.name] = (qi.coded, qi.hierarchy.divisors[level], _labels(qi, level))
    if counted is None:
        return wanted
    for c in [c for c in counted[0] if not c.level] + list(counted[1]):
        text = c.type is not None and c.type.is_type(exp.DataType.Type.VARCHAR)
        # A NULL stand-in is released as NULL, not as its text: such a column stays text.
        if text and c.null_value is None:
            wanted[c.name] = (c.coded, 1, _values(c))
    return wanted


def _labels(qi: QuasiIdentifierColumn, level: int) -> Members:
    """The labels at ``level`` of the released classes (at its top: the one label)."""
    if top_label(qi, level) is not None:
        return lambda classes: exp.select(exp.alias_(q.col(f"label_{level}"), "v")).from_(q.table(qi.coded.lookup))
    lookup = q.class_labels(qi.coded.lookup, level, qi.hierarchy.divisors[level])
    return lambda classes: _joined(classes, lookup, qi.coded.code, q.col("value", "lk"))


def _values(c: CountedColumn) -> Members:
    """The text values of a column read back from counts, as the released classes hold them."""
    lookup = exp.select(q.col("code"), q.col("value")).from_(q.table(c.coded.lookup))
    return lambda classes: _joined(classes, lookup, c.coded.code, q.as_text(q.col("value", "lk")))


def _joined(classes: exp.Expression, lookup: exp.Select, code: str, value: exp.Expression) -> exp.Select:
    on = exp.EQ(this=q.col("code", "lk"), expression=q.col(code, "cls"))
    return exp.select(exp.alias_(value, "v")).from_(exp.alias_(classes.copy(), "cls", table=True)).join(
        lookup.subquery("lk"), on=on)


def _worth_a_dictionary(rows: int, values: int) -> bool:
    return values <= MAX_DICTIONARY and values * ROWS_PER_VALUE <= rows
