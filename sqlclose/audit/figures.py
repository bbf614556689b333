"""What a released file alone says of its report's claims, for ``sqlclose check --against``.

Measured by SQL over the file, as it is read back (``open_source``): its columns (names, in order),
its classes (a ``GROUP BY`` over the quasi-identifier columns: how many, the smallest, the rows and
Σ size², from one row of aggregates), and per quasi-identifier the labels it holds (distinct values
as text: how many, the first ``shown`` in text order, how many of a report's listed labels it holds,
and how many are not labels of each given level of the column's hierarchy: two queries per column).
Python sees a few rows per column, never the file's rows.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from sqlglot import exp

from sqlclose.audit.rule_levels import BandLevels, DateLevels
from sqlclose.engine import Engine
from sqlclose.engine.base import FileRead, leaves_as_found
from sqlclose.model.hierarchy import TOP_LABEL, masked_per_level
from sqlclose.prepare.sources import open_source
from sqlclose.sql import queries as q


@dataclass(frozen=True)
class LabelFigures:
    count: int  # distinct labels the file holds in the column
    first: list[str]  # the first ``shown`` of them, in text order
    outside: dict[int, int]  # per level whose labels were given: the file's distinct labels not of that level
    # A column whose classes sit at several levels (GAA), its level labels given: per level, the
    # classes whose label is of that level only and those whose label is of it (a label may be of
    # two levels where it names the same leaves), and the classes whose label is of none.
    classes_at: dict[int, tuple[int, int]] | None = None
    classes_at_no_level: int = 0
    unjudged: int = 0  # a bands rule's labels whose edges are too long to judge: its level left unchecked
    rows_at: dict[int, tuple[int, int]] | None = None  # as classes_at, counting the classes' rows
    rows_by_label: dict[str | None, int] | None = None  # the rows holding each label (None: NULL), where asked for
    among: int | None = None  # how many of its distinct labels are among ``release_figures``' read labels, if given


@dataclass(frozen=True)
class MaskLevels:
    """A mask rule as the spec gives it: its levels' labels follow from it without the input (the
    characters masked per level, ``masked_per_level``), given the codes' length (declared, else the
    length of the file's first label that is neither the stand-in nor the top)."""

    length: int | None
    mask_char: str
    steps: list[int] | None  # None: one more character per level (mask = true)
    stand_in: str | None  # nulls = "value": its label, at every level below the top


# A hierarchy whose levels' labels follow from the spec's rule, told by a label's shape in SQL.
PatternLevels = MaskLevels | BandLevels | DateLevels
LevelLabels = Mapping[int, Sequence[str]] | PatternLevels


@dataclass(frozen=True)
class ReleaseFigures:
    columns: list[str]
    rows: int = 0
    classes: int = 0
    min_class_size: int = 0
    squared_sizes: int = 0  # Σ class size²
    labels: Mapping[str, LabelFigures] | None = None
    # ``release_figures``' ``read_labels``, as the file's values; how many of a column's the file holds:
    # its ``labels[name].among``
    labels_read: Mapping[str, list[str]] | None = None


def release_figures(source: Any, qis: Sequence[str], expected_columns: Sequence[str],
                    level_labels: Mapping[str, LevelLabels], shown: int, *,
                    table: str | None = None, engine: Engine | None = None,
                    several_levels: bool = False, label_rows: Collection[str] = (),
                    read_labels: Mapping[str, Sequence[str]] | None = None) -> ReleaseFigures:
    """Measure ``source``. When its columns are not ``expected_columns`` (names and order), only
    the columns are given: the other figures would be read from columns that are not the report's.
    ``several_levels``: a release whose classes sit at several levels of a column (GAA), whose
    classes per level are counted where the level labels are given (not for a mask rule's).
    ``label_rows``: the columns whose rows per label are counted (one more query each). ``read_labels``:
    labels of columns released as they are, each read as a value of the file's column (``_read_as_values``)."""
    given = engine
    with leaves_as_found(given):
        opened = open_source(source, engine, FileRead(table=table))
        engine, relation = opened.engine, opened.relation
        try:
            columns = list(engine.schema(relation).names)
            if columns != list(expected_columns):
                return ReleaseFigures(columns)
            sizes = _class_figures(engine, relation, qis)
            wanted = {name: texts for name, texts in (read_labels or {}).items() if name in qis}
            types = _value_types(engine, relation, wanted)
            read = _read_as_values(engine, types, wanted)
            level_labels = _leaves_as_read(engine, types, level_labels, read)
            labels = {name: _label_figures(engine, relation, name, level_labels.get(name) or {}, shown, read.get(name))
                      for name in qis}
            if several_levels:
                labels = {name: _with_classes_per_level(engine, relation, qis, name, f, level_labels.get(name))
                          for name, f in labels.items()}
            counted = _rows_by_label(engine, relation, [name for name in qis if name in label_rows])
            labels = {name: replace(f, rows_by_label=counted[name]) if name in counted else f
                      for name, f in labels.items()}
            return ReleaseFigures(columns, labels=labels, labels_read=read, **sizes)
        finally:
            if given is None:
                engine.close()


def _value_types(engine: Engine, relation: exp.Expression, names: Collection[str]) -> dict[str, exp.DataType]:
    """The type the file holds each column of ``names`` that is no text as (its first row's ``typeof``,
    every column's in one query), as ``_read_as_values`` casts a label to it. A column whose first
    value is NULL, or whose type sqlglot cannot spell, is left out (its labels compared as written)."""
    schema = engine.schema(relation)
    typed = [name for name in names
             if not (pa.types.is_string(kind := schema.field(name).type) or pa.types.is_large_string(kind))]
    if not typed:
        return {}
    held = engine.fetch_row(exp.select(*[exp.Anonymous(this="typeof", expressions=[q.col(name)]).as_(f"t{i}")
                                         for i, name in enumerate(typed)]).from_(relation.copy()).limit(1))
    out: dict[str, exp.DataType] = {}
    for i, name in enumerate(typed):
        if held[f"t{i}"] is None:
            continue
        try:
            out[name] = exp.DataType.build(held[f"t{i}"], dialect="duckdb")
        except Exception:  # noqa: BLE001 - a type sqlglot cannot spell: the labels are compared as written
            continue
    return out


def _read_as_values(engine: Engine, types: Mapping[str, exp.DataType],
                    labels: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Per column of ``labels`` that is no text in the file (``types``: ``_value_types``), its labels
    cast to the column's type and written as the file's values are (``CAST(… AS VARCHAR)``, as
    ``_label_figures`` reads them), every column's in one row: a warehouse's report labels a value
    released as it is by the warehouse's text ('2.9E1' from Trino, '2024-05-17 08:30:00.000' from
    Snowflake), which the exported file holds as the value (29.0). A column whose label does not cast
    is left out (compared as written)."""
    cast = {name: texts for name, texts in labels.items() if texts and name in types}
    if not cast:
        return {}
    row = engine.fetch_row(exp.select(*[
        exp.cast(exp.TryCast(this=exp.Literal.string(text), to=types[name].copy()), "VARCHAR").as_(f"l{j}_{i}")
        for j, (name, texts) in enumerate(cast.items()) for i, text in enumerate(texts)]))
    out: dict[str, list[str]] = {}
    for j, (name, texts) in enumerate(cast.items()):
        read = [row[f"l{j}_{i}"] for i in range(len(texts))]
        if None not in read:
            out[name] = read
    return out


def _leaves_as_read(engine: Engine, types: Mapping[str, exp.DataType], level_labels: Mapping[str, LevelLabels],
                    read: Mapping[str, list[str]]) -> Mapping[str, LevelLabels]:
    """``level_labels`` with the leaves of each column of ``read`` (a warehouse's, released as it is and
    held as values in the file: ``_read_as_values``) read as the file's values too: a hierarchy's leaves
    are the warehouse's text ('1' and 'NaN' from Postgres, '2.9E1' from Trino), a faithful Parquet
    export holds 1.0, NaN, 29.0, and its level was refused as 'not labels of that level' (ninety-ninth
    round). A column a leaf of which does not cast keeps its leaves as written."""
    given = {name: levels for name in read if isinstance(levels := level_labels.get(name), Mapping) and levels.get(0)}
    leaves = _read_as_values(engine, types, {name: levels[0] for name, levels in given.items()})
    return {**level_labels, **{name: {**given[name], 0: leaves[name]} for name in leaves}}


def _rows_by_label(engine: Engine, relation: exp.Expression,
                   names: Sequence[str]) -> dict[str, dict[str | None, int]]:
    """Per column of ``names``, the rows holding each of its labels (as text; NULL as None: a value
    released as it is, where ``nulls = "value"`` left it NULL). One pass over the file: a grouping set
    per column (five GROUP BYs of a 10 M-row file took 0.11 s more than none)."""
    if not names:
        return {}
    labels = [exp.cast(q.col(name), "VARCHAR").as_(f"l{i}") for i, name in enumerate(names)]
    grouped = [exp.Grouping(expressions=[q.col(name)]).as_(f"g{i}") for i, name in enumerate(names)]
    query = (exp.select(*labels, *grouped, exp.Count(this=exp.Star()).as_("n")).from_(relation.copy())
             .group_by(exp.GroupingSets(expressions=[exp.Paren(this=q.col(name)) for name in names])))
    out: dict[str, dict[str | None, int]] = {name: {} for name in names}
    for row in engine.fetch(query).to_pylist():
        i = next(i for i in range(len(names)) if row[f"g{i}"] == 0)  # the set this row counts
        out[names[i]][row[f"l{i}"]] = int(row["n"])
    return out


def _class_figures(engine: Engine, relation: exp.Expression, qis: Sequence[str]) -> dict[str, int]:
    size = exp.Count(this=exp.Star())
    per_class = exp.select(size.as_("n")).from_(relation.copy()).group_by(*(q.col(c) for c in qis))
    n = q.col("n", "c")
    query = exp.select(exp.Count(this=exp.Star()).as_("classes"), exp.Min(this=n.copy()).as_("min_class_size"),
                       exp.Sum(this=n.copy()).as_("rows"),
                       exp.Sum(this=exp.Mul(this=exp.cast(n.copy(), "BIGINT"), expression=n.copy())).as_("squared")
                       ).from_(per_class.subquery("c"))
    row = engine.fetch_row(query)
    return {"classes": int(row["classes"] or 0), "min_class_size": int(row["min_class_size"] or 0),
            "rows": int(row["rows"] or 0), "squared_sizes": int(row["squared"] or 0)}


def _label_figures(engine: Engine, relation: exp.Expression, name: str,
                   levels: LevelLabels, shown: int, read: Sequence[str] | None = None) -> LabelFigures:
    """Two queries over the column's distinct labels (as text): their number with the first
    ``shown`` (and, given ``read``, how many are among them: ``_among``), and — given each level's
    labels, registered as (level, label) — how many are labels of each level."""
    values = q.text_values(relation, name)  # DISTINCT CAST(column AS VARCHAR) AS value
    label = q.col("value", "v")
    total = exp.Window(this=exp.Count(this=exp.Star()))
    among = [_among(label, read).as_("among")] if read is not None else []
    first = engine.fetch(exp.select(label.copy(), total.as_("n"), *among).from_(values.copy().as_("v"))
                         .where(label.copy().is_(exp.null()).not_()).order_by(label.copy()).limit(shown)).to_pylist()
    count = int(first[0]["n"]) if first else 0
    held = None if read is None else int(first[0]["among"]) if first else 0
    outside: dict[int, int] = {}
    if isinstance(levels, PatternLevels):
        return replace(_outside_pattern_levels(engine, values, levels,
                                               LabelFigures(count, [r["value"] for r in first], {})), among=held)
    if levels:
        registered = engine.temp_name("check_level_labels")
        pairs = sorted({(level, text) for level, labels in levels.items() for text in labels})
        engine.register(registered, pa.table({"level": pa.array([lv for lv, _ in pairs], pa.int64()),
                                              "label": pa.array([t for _, t in pairs], pa.string())}))
        try:
            query = (exp.select(q.col("level", "lv"), exp.Count(this=exp.Star()).as_("n"))
                     .from_(values.copy().as_("v"))
                     .join(exp.alias_(q.table(registered), "lv"), join_type="inner",
                           on=exp.EQ(this=q.col("label", "lv"), expression=label.copy()))
                     .group_by(q.col("level", "lv")))
            of_level = {int(r["level"]): int(r["n"]) for r in engine.fetch(query).to_pylist()}
        finally:
            engine.unregister(registered)
        outside = {level: count - of_level.get(level, 0) for level in levels}
    return LabelFigures(count, [r["value"] for r in first], outside, among=held)


def _among(label: exp.Expression, texts: Sequence[str]) -> exp.Expression:
    """How many of the distinct labels are among ``texts``, over every label (a window, before the
    first ones are cut): a report listing only the first labels of a warehouse's level-0 column lists
    them in the warehouse's text order, which the file's values (29.0 for '2.9E1') do not follow, so
    they are looked for rather than compared with the file's first ones. Counted in the pass that
    lists the first labels, where it was a DISTINCT pass of its own until the ninety-ninth round."""
    found = exp.In(this=label.copy(), expressions=[exp.Literal.string(text) for text in texts])
    return exp.Window(this=exp.Sum(this=exp.If(this=found, true=exp.Literal.number(1), false=exp.Literal.number(0))))


def _with_classes_per_level(engine: Engine, relation: exp.Expression, qis: Sequence[str], name: str,
                            found: LabelFigures,
                            levels: LevelLabels | None) -> LabelFigures:
    """``found`` with its classes per level: the file's classes (distinct QI combinations) counted
    per label of ``name``, joined with the (level, label) pairs. One query, a row per level."""
    if not levels:
        return found
    if isinstance(levels, PatternLevels):
        return _with_pattern_classes_per_level(engine, _classes_per_label(relation, qis, name), levels, found)
    registered = engine.temp_name("check_class_levels")
    pairs = sorted({(level, text) for level, labels in levels.items() for text in labels})
    engine.register(registered, pa.table({"level": pa.array([lv for lv, _ in pairs], pa.int64()),
                                          "label": pa.array([t for _, t in pairs], pa.string())}))
    try:
        per_label = _classes_per_label(relation, qis, name, "label")
        choices = exp.Window(this=exp.Count(this=exp.Star()), partition_by=[q.col("label")])
        of_label = exp.select(q.col("level"), q.col("label"), choices.as_("choices")).from_(q.table(registered))
        level, only = q.col("level", "l"), exp.EQ(this=q.col("choices", "l"), expression=exp.Literal.number(1))
        sums = [exp.Sum(this=exp.If(this=only.copy(), true=count, false=exp.Literal.number(0)) if bound == "must"
                        else count).as_(f"{bound}_{what}")
                for what, count in (("classes", q.col("n", "p")), ("rows", q.col("rows", "p")))
                for bound in ("must", "could")]
        query = (exp.select(level.copy().as_("level"), *sums)
                 .from_(per_label.subquery("p"))
                 .join(of_label.subquery("l"), join_type="left", on=exp.EQ(this=q.col("label", "l"),
                                                                           expression=q.col("label", "p")))
                 .group_by(level.copy()))
        rows = engine.fetch(query).to_pylist()
    finally:
        engine.unregister(registered)
    at = {what: {int(r["level"]): (int(r[f"must_{what}"]), int(r[f"could_{what}"])) for r in rows
                 if r["level"] is not None} for what in ("classes", "rows")}
    unplaced = sum(int(r["could_classes"]) for r in rows if r["level"] is None)
    return replace(found, classes_at=at["classes"], classes_at_no_level=unplaced, rows_at=at["rows"])


def _classes_per_label(relation: exp.Expression, qis: Sequence[str], name: str, alias: str = "value") -> exp.Select:
    """The file's classes (distinct QI combinations) counted per label of ``name`` (as text), and
    their rows."""
    classes = (exp.select(*(q.col(c) for c in qis), exp.Count(this=exp.Star()).as_("size")).from_(relation.copy())
               .group_by(*(q.col(c) for c in qis)))
    label = exp.cast(q.col(name), "VARCHAR")
    return (exp.select(label.as_(alias), exp.Count(this=exp.Star()).as_("n"), exp.Sum(this=q.col("size")).as_("rows"))
            .from_(classes.subquery("c")).group_by(label.copy()))


def _with_pattern_classes_per_level(engine: Engine, per_label: exp.Select, pattern: PatternLevels,
                                    found: LabelFigures) -> LabelFigures:
    """``_with_classes_per_level`` for a rule's levels, told by ``_level_tests``."""
    params = q.Params()
    tests = _level_tests(pattern, found.first, params)
    if not tests or found.unjudged:
        return found
    n, zero, one = q.col("n", "v"), exp.Literal.number(0), exp.Literal.number(1)
    flags = [exp.If(this=fits.copy(), true=one.copy(), false=zero.copy()) for fits in tests]
    fitting = exp.Paren(this=functools.reduce(lambda a, b: exp.Add(this=a, expression=b), flags))  # levels it fits
    alone = exp.EQ(this=fitting.copy(), expression=one.copy())
    sums = [exp.Sum(this=exp.If(this=exp.EQ(this=fitting.copy(), expression=zero.copy()),
                                true=n.copy(), false=zero.copy())).as_("none")]
    for level, fits in enumerate(tests):
        for what, count in (("classes", n), ("rows", q.col("rows", "v"))):
            sums += [exp.Sum(this=exp.If(this=fits.copy(), true=count.copy(), false=zero.copy()))
                     .as_(f"could_{what}{level}"),
                     exp.Sum(this=exp.If(this=exp.and_(fits.copy(), alone.copy()), true=count.copy(),
                                         false=zero.copy())).as_(f"must_{what}{level}")]
    row = engine.fetch_row(exp.select(*sums).from_(per_label.subquery("v")), params.values)
    at = {what: {lv: (int(row[f"must_{what}{lv}"] or 0), int(row[f"could_{what}{lv}"] or 0))
                 for lv in range(len(tests))} for what in ("classes", "rows")}
    return replace(found, classes_at={lv: c for lv, c in at["classes"].items() if c[1]},
                   classes_at_no_level=int(row["none"] or 0), rows_at={lv: c for lv, c in at["rows"].items() if c[1]})


def _level_tests(pattern: PatternLevels, first: list[str], params: q.Params) -> list[exp.Expression]:
    """Per level, whether a label (``v.value``) is of it; [] when the rule's labels cannot be told."""
    return _mask_level_tests(pattern, first, params) if isinstance(pattern, MaskLevels) else pattern.tests(params)


def mask_masked(mask: MaskLevels, first: Sequence[str]) -> tuple[int, list[int]] | None:
    """A mask rule's codes' length and the characters it masks per level (its levels: one each),
    the length declared, else that of the file's first label that is neither the stand-in nor the
    top; None where it is not known or the steps do not fit it."""
    n = mask.length or next((len(t) for t in first if t not in (mask.stand_in, TOP_LABEL)), None)
    masked = masked_per_level(mask.steps or list(range(1, n + 1)), n) if n else None
    return (n, masked) if n and masked else None


def _mask_level_tests(mask: MaskLevels, first: list[str], params: q.Params) -> list[exp.Expression]:
    """Per level of a mask rule, whether a label (``v.value``) is of it: the code's first n − m
    characters (no mask character among them) and m mask characters, m the characters masked at
    that level; a top of its own is ``TOP_LABEL``. None where the codes' length is not known."""
    if (known := mask_masked(mask, first)) is None:
        return []
    n, masked = known
    value = q.col("value", "v")
    own_top = masked[-1] == n and (mask.steps or [n])[-1] < n
    tests = []
    for level, m in enumerate(masked):
        if own_top and level == len(masked) - 1:
            fits: exp.Expression = exp.EQ(this=value.copy(), expression=params.add(TOP_LABEL))
        else:
            fits = exp.and_(
                exp.EQ(this=exp.Length(this=value.copy()), expression=exp.Literal.number(n)),
                exp.EQ(this=exp.Right(this=value.copy(), expression=exp.Literal.number(m)),
                       expression=params.add(mask.mask_char * m)),
                exp.EQ(this=exp.StrPosition(this=exp.Left(this=value.copy(), expression=exp.Literal.number(n - m)),
                                            substr=params.add(mask.mask_char)), expression=exp.Literal.number(0)))
        if mask.stand_in is not None and level < len(masked) - 1:
            fits = exp.or_(fits, exp.EQ(this=value.copy(), expression=params.add(mask.stand_in)))
        tests.append(fits)
    return tests


def _outside_pattern_levels(engine: Engine, values: exp.Expression, pattern: PatternLevels,
                            found: LabelFigures) -> LabelFigures:
    """``found`` with, per level of a rule, the file's distinct labels that are not of that level
    (none when a band's edges are too long to judge: ``unjudged`` counts those). One query."""
    params = q.Params()
    tests = _level_tests(pattern, found.first, params)
    if not tests:
        return found
    sums = [exp.Sum(this=exp.If(this=fits, true=exp.Literal.number(0), false=exp.Literal.number(1))).as_(f"l{level}")
            for level, fits in enumerate(tests)]
    if isinstance(pattern, BandLevels):
        sums.append(exp.Sum(this=exp.If(this=pattern.unjudged(params), true=exp.Literal.number(1),
                                        false=exp.Literal.number(0))).as_("unjudged"))
    query = exp.select(*sums).from_(values.copy().as_("v")).where(q.col("value", "v").is_(exp.null()).not_())
    row = engine.fetch_row(query, params.values)
    unjudged = int(row.get("unjudged") or 0)
    outside = {} if unjudged else {level: int(row[f"l{level}"] or 0) for level in range(len(tests))}
    return LabelFigures(found.count, found.first, outside, unjudged=unjudged)
