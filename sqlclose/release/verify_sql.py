"""An independent judge of a written release: every privacy measure recomputed in SQL.

The search judges classes with numpy criteria (``privacy``, ``distances``, ``emd``) over integer
codes and rollups. A bug there would pass its own re-check, so this module shares none of that
code: it imports no criteria, no distance and no class-table code. It reads the written file
and the input through SQL only (``sql/verify_*.sql``), with small lookup tables registered from
the hierarchies, and computes per equivalence class (a GROUP BY over the released QI columns as
written): the size; per sensitive column the distinct values, entropy l, the recursive (c,l)
ratio, and the column's distance to the reference distribution Q — itself recomputed from the
input by a plain GROUP BY. Each distance follows its textbook formula (docs/verification.md),
not the search's closed forms. Python only sees one row of aggregates per model.

The file is read once: grouped by its quasi-identifier and sensitive columns (each distinct row
with the rows it stands for), which every measure reads instead of the file — at 10 M rows the
file's four reads took ~1.2 s, the grouping ~0.35 s (docs/performance.md, twenty-ninth round).
On Spark the measures of the grouped file run on a local copy of it (``verify_local``).

What it may share with the search: the spec (thresholds, distance names, NULL policy) and the
hierarchy objects (which labels exist at which level).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.model.arrays import arrow_table, leaf_labels
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.spec import Sensitive
from sqlclose.model.text import agreeing, counted, name_shown
from sqlclose.prepare.release_query import nan_rewrite
from sqlclose.release.verify_local import Judge, Unfit, judge_for
from sqlclose.sql import queries as q
from sqlclose.sql.templates import template

# A distance d passes t when d <= t + TOLERANCE, an entropy H passes l when H >= ln(l) - TOLERANCE:
# the same 1e-12 the project documents for t (docs/emd.md), so rounding cannot flip a class.
TOLERANCE = 1e-12
ROWS = "__sqlclose_rows"  # the grouped file's count column, unless a QI or sensitive column has that name


@dataclass(frozen=True)
class WrittenQI:
    """A released quasi-identifier: its name, hierarchy, and the text NULL reads as (if any)."""

    name: str
    hierarchy: Hierarchy
    null_value: str | None = None
    # The type its leaves are matched in instead of text (``CodedColumn.typed_match``: the source's,
    # when its values' text casts back to them and NULL has no stand-in), cast by ``queries.typed_leaf``.
    typed_match: exp.DataType | None = None


@dataclass(frozen=True)
class WrittenSensitive:
    """A sensitive column as the spec states it (thresholds, distance) with its hierarchy."""

    name: str
    spec: Sensitive
    hierarchy: Hierarchy | None = None


@dataclass
class ModelResult:
    """One privacy model on the written file: the value the worst class reaches and how many
    classes fail the threshold."""

    model: str  # "k-anonymity", "t-closeness", "distinct l-diversity", …
    column: str | None  # the sensitive column (None for k-anonymity)
    parameters: dict
    reached: Any
    failing: int

    def describe(self) -> str:
        where = f" on {name_shown(self.column)}" if self.column else ""
        shown = ", ".join(f"{k} = {v}" for k, v in self.parameters.items())
        return (f"{counted(self.failing, 'class', 'classes')} "
                f"{agreeing(self.failing, 'fails', 'fail')} {self.model}{where} ({shown}; the worst reaches "
                f"{self.reached})")


@dataclass
class FileMeasures:
    """Everything the independent path measured on a written file."""

    rows: int
    classes: int
    min_class_size: int
    models: list[ModelResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # altered labels or values

    @property
    def failures(self) -> list[str]:
        """Every way the file breaks its requirements, as sentences."""
        return self.problems + [m.describe() for m in self.models if m.failing]


def measure_file(engine: Engine, written: exp.Expression, source: exp.Expression, k: int,
                 qis: Sequence[WrittenQI], sensitive: Sequence[WrittenSensitive],
                 columns: Sequence[str] | None = None, mapping: pa.Table | None = None) -> FileMeasures:
    """Measure the release ``written`` against the input ``source`` (the table Q comes from).

    With ``columns`` (the file's columns, all of them input columns), also check that every
    written row is an input row generalized at the levels the labels show, on those columns.

    A multidimensional release (GAA) gives its ``mapping``: per QI leaf combination, the leaves
    as text (``l0``, ``l1``, …) and the labels written for them (``g0``, …). Then a column's
    values may be labels of any level, every mapped label must be its leaf or an ancestor of it
    in the hierarchy, and every written row must be an input row recoded by the mapping."""
    registered: list[str] = []
    try:
        measured = [qi.name for qi in qis] + [sa.name for sa in sensitive]
        rows = rows_column(measured)
        grouped = _grouped_release(engine, written, measured, registered, rows)
        with judge_for(engine, grouped, list(dict.fromkeys(measured)), rows, registered) as judge:
            try:
                return _measured(engine, judge, written, grouped, source, k, qis, sensitive, columns, mapping,
                                 registered, rows)
            except Unfit:  # a reference past the local copy's bound: every measure on the engine
                pass
        return _measured(engine, Judge(engine, grouped, registered), written, grouped, source, k, qis, sensitive,
                         columns, mapping, registered, rows)
    finally:
        for name in registered:
            engine.unregister(name)


def _measured(engine: Engine, judge: Judge, written: exp.Expression, grouped: exp.Table, source: exp.Expression,
              k: int, qis: Sequence[WrittenQI], sensitive: Sequence[WrittenSensitive], columns: Sequence[str] | None,
              mapping: pa.Table | None, registered: list[str], rows: str) -> FileMeasures:
    """``measure_file``'s measures: those of the grouped file by the ``judge`` (``verify_local``),
    the truth test and the reference distributions on the engine, which reads the input. ``rows``:
    the grouped file's count column."""
    qi_cols = [_col(qi.name) for qi in qis]
    params: list[Any] = []
    sizes_query: exp.Expression = template("verify_sizes", release=judge.grouped, qi=qi_cols,
                                           rows=_grouped_rows(rows), k=_param(k, params))
    # The input's rows, which the truth test compares with the file's, counted in the same statement
    # when the grouped file is on the engine that reads the input (a statement fewer).
    input_counted = columns is not None and judge.engine is engine
    if input_counted:
        sizes_query = exp.select(exp.Star()).from_(sizes_query.subquery("__sqlclose_sizes", copy=False), copy=False) \
            .join(_count(source).subquery("__sqlclose_input", copy=False), join_type="cross", copy=False)
    sizes = judge.engine.fetch_row(sizes_query, params, owned=True)
    result = FileMeasures(int(sizes["row_count"]), int(sizes["classes"]), int(sizes["min_size"] or 0))
    result.models.append(ModelResult("k-anonymity", None, {"k": k}, result.min_class_size, int(sizes["below_k"])))
    levels, problems = _label_levels(judge.engine, judge.grouped, qis, judge.registered,
                                     any_level=mapping is not None)
    result.problems += problems
    if columns is not None and all(levels):
        whole = result.rows == (sizes["n"] if input_counted else engine.fetch_row(_count(source), owned=True)["n"])
        # Rows are compared on the file's columns: the grouped file holds them when they are
        # the measured ones (a release of quasi-identifiers and sensitive columns alone).
        measured = {qi.name for qi in qis} | {sa.name for sa in sensitive}
        classes = [qi.name for qi in qis]
        truth = _Truth(engine, grouped, columns, whole, _col(rows), classes, grouped) if set(columns) == measured \
            else _Truth(engine, written, columns, whole, None, classes, grouped)
        result.problems += _untrue_rows(engine, truth, source, qis, levels, registered) \
            if mapping is None else _untrue_mapped_rows(engine, truth, source, qis, mapping, registered)
    for sa, reference in zip(sensitive, _references(engine, judge, source, sensitive, registered)):
        problems, models = _sensitive(judge, qi_cols, sa, reference, rows)
        result.problems += problems
        result.models += models
    return result


def rows_column(columns: Sequence[str]) -> str:
    """The grouped file's count column: ``ROWS``, lengthened until no column of ``columns`` has its
    name (in any case, as SQL reads names): a quasi-identifier named so made the re-check's SQL
    ambiguous, and a valid release failed it (review rv25)."""
    return q.free_name(ROWS, columns)


def _grouped_release(engine: Engine, written: exp.Expression, columns: Sequence[str],
                     registered: list[str], rows: str) -> exp.Table:
    """The written file grouped by ``columns`` (its quasi-identifier and sensitive columns): each
    distinct row once, with the rows it stands for (in ``rows``) — a plain GROUP BY over the file,
    kept engine-side for the measures to read instead of the file."""
    keys = [_col(c) for c in dict.fromkeys(columns)]
    query = exp.select(*keys, exp.alias_(exp.Count(this=exp.Star()), rows, quoted=True)) \
        .from_(_aliased(written, "__sqlclose_rel")).group_by(*[k.copy() for k in keys])
    return _kept(engine, registered, "verify_grouped", query)


def _class_counts(judge: Judge, qi_cols: list[exp.Column], name: str, text: exp.Expression, as_it_is: bool,
                  own: dict[str, str], rows: str) -> exp.Expression:
    """verify_counts.sql: per class (numbered) and sensitive value as ``text``, its rows. Where the
    grouped file is grouped by exactly the QIs and column ``name``, a text column read ``as_it_is``
    (no NULL stand-in), each of its rows is one such cell already (verify_counts_flat.sql)."""
    number = judge.engine.class_numbers(qi_cols)
    schema = judge.engine.schema(judge.grouped)
    if [n for n in schema.names if n != rows] == [c.name for c in qi_cols] + [name] and as_it_is \
            and pa.types.is_string(schema.field(name).type):
        return template("verify_counts_flat", release=judge.grouped, value=_col(name), rows=_col(rows), number=number)
    return template("verify_counts", renamed=own, release=judge.grouped, qi=qi_cols, value=text,
                    rows=_grouped_rows(rows), number=number)


def _grouped_rows(rows: str) -> exp.Expression:
    """The rows a group of grouped-file rows stands for: the sum of their counts (column ``rows``)."""
    return exp.Cast(this=exp.Sum(this=_col(rows)), to=exp.DataType.build("BIGINT"))


# ---- quasi-identifiers: every written value must be a label of one level ------------------

ANY_LEVEL = -1  # a multidimensional release: the labels of all levels together


def _label_levels(engine: Engine, grouped: exp.Table, qis: Sequence[WrittenQI],
                  registered: list[str], any_level: bool = False) -> tuple[list[list[int]], list[str]]:
    """Per column, the levels whose labels hold every written value (read from the ``grouped``
    file); a problem for each column that no level fits. One query for all columns (each column's
    distinct values, stacked). ``any_level``: the labels of all levels count as one level (``ANY_LEVEL``)."""
    labels = _register(engine, registered, "verify_labels", arrow_table(_labels_table(qis, any_level)))
    params: list[Any] = []
    values = [template("verify_label_values", release=grouped, col=exp.Literal.number(i),
                       value=_text(qi.name, qi.null_value, params)) for i, qi in enumerate(qis)]
    stacked = values[0] if len(values) == 1 else exp.union(*values, distinct=False, copy=False)
    found = engine.fetch(template("verify_labels", written=stacked.subquery(copy=False), labels=labels), params or None,
                         owned=True)
    per_column: list[list[dict]] = [[] for _ in qis]
    for r in found.to_pylist():  # one row per (column, level), fewest misfits first
        per_column[r["col"]].append(r)
    # A column with no values (an empty file) fits every level.
    levels = [[r["level"] for r in rs if r["misfits"] == 0] if rs else
              ([ANY_LEVEL] if any_level else list(range(qi.hierarchy.levels))) for qi, rs in zip(qis, per_column)]
    problems = [f"column {name_shown(qi.name)} holds {counted(rs[0]['misfits'], 'value')} that "
                f"{agreeing(rs[0]['misfits'], 'is not a label', 'are not labels')} of any level of "
                f"its hierarchy {qi.hierarchy.origin} (e.g. {rs[0]['example']!r})" if any_level else
                f"column {name_shown(qi.name)} holds {counted(rs[0]['misfits'], 'value')} that "
                f"{agreeing(rs[0]['misfits'], 'is not a label', 'are not labels')} of any one level "
                f"of its hierarchy {qi.hierarchy.origin} (closest: level {rs[0]['level']}, which lacks "
                f"{rs[0]['example']!r})"
                for qi, rs, fit in zip(qis, per_column, levels) if not fit]
    return levels, problems


def _labels_table(qis: Sequence[WrittenQI], any_level: bool) -> dict[str, list]:
    """Columns col, level, label: each column's distinct labels per level (``ANY_LEVEL``: of all
    levels together) — the hierarchy's own, validated once with it (a 100 k-leaf ZIP hierarchy
    holds 600 k labels, 111 k distinct)."""
    def groups():
        for i, qi in enumerate(qis):
            h = qi.hierarchy
            if any_level:
                yield i, ANY_LEVEL, dict.fromkeys(itertools.chain.from_iterable(h.labels(lv) for lv in range(h.levels)))
            else:
                yield from ((i, level, h.labels(level)) for level in range(h.levels))
    return _stacked(groups(), "level")


def _stacked(groups: Iterable[tuple[int, Any, Iterable[str]]], key: str) -> dict[str, list]:
    """Columns col, ``key``, label from (column index, key, its distinct labels) groups."""
    cols: list[int] = []
    keys: list[Any] = []
    labels: list[str] = []
    for i, k, distinct in groups:
        before = len(labels)
        labels += distinct
        cols += [i] * (len(labels) - before)
        keys += [k] * (len(labels) - before)
    return {"col": cols, key: keys, "label": labels}


# ---- rows: each a generalized input row ------------------------------------------------------

MAX_LEVEL_CHOICES = 16  # labels shared by several levels leave a few readings to try


@dataclass(frozen=True)
class _Truth:
    """The truth test's comparison: rows of ``written`` (on ``columns``) in excess of a generalized
    input, as multisets. ``whole``: the file has as many rows as the input, so it must hold exactly
    the generalized rows, and sums of row keys tell (``verify_row_sums``) before any count is made.
    ``classes``: the quasi-identifiers; a file with fewer rows (classes suppressed) is first
    compared so with the generalized rows of the classes it holds (``_of_written_classes``)."""

    engine: Engine
    written: exp.Expression
    columns: Sequence[str]
    whole: bool
    weight: exp.Expression | None  # the rows a row of ``written`` stands for: the grouped file's count, or None: 1
    classes: Sequence[str]
    grouped: exp.Table  # the file grouped (``_grouped_release``), which holds the classes

    @cached_property
    def written_types(self) -> pa.Schema:
        return self.engine.schema(self.written)

    def untrue(self, generalized: exp.Expression, params: list[Any], hashed: Mapping[str, str] | None = None) -> int:
        """``hashed``: columns of ``generalized`` that are already hashed — a text label's
        ``Engine.value_hash``, carried from its lookup — under another column's name."""
        typed = self.engine.schema(generalized, params)
        as_is = [self.engine.hashed_as_is(self.written_types.field(c).type, typed.field(c).type) for c in self.columns]
        carried = hashed or {}
        own = [self._own_hash(c, keep) for c, keep in zip(self.columns, as_is)]
        # A carried hash is the label's as text; a text label hashed as it is hashes the same.
        key = self.engine.hash_of_hashes([_col(f"__sqlclose_h{i}") for i in range(len(self.columns))])
        hashes = [_col(carried[c]) if c in carried else h for c, h in zip(self.columns, own)]
        written = _keyed(_hashed(self.written, own, self.weight), key, self.weight is not None)
        key_0 = _col("__sqlclose_k")
        key_1 = self.engine.rehash(key_0)
        if self.whole or self.classes:
            compared = generalized if self.whole else \
                self._of_written_classes(generalized, dict(zip(self.columns, hashes)), dict(zip(self.columns, own)))
            sums = self.engine.fetch_row(self.engine.crossed_in_one_job(template(
                "verify_row_sums", release=written, generalized=_keyed(_hashed(compared, hashes), key),
                written_term_0=self._weighted(key_0), written_term_1=self._weighted(key_1),
                generalized_term_0=self._wide(key_0), generalized_term_1=self._wide(key_1))), params, owned=True)
            if sums["written_0"] == sums["generalized_0"] and sums["written_1"] == sums["generalized_1"]:
                return 0
        rows = exp.Literal.number(1) if self.weight is None else _col("__sqlclose_w")
        return self.engine.fetch_row(template("verify_untrue_rows", release=written,
                                              generalized=_keyed(_hashed(generalized, hashes), key),
                                              key_0=key_0, key_1=key_1, written_rows=rows), params,
                                     owned=True)["untrue_rows"]

    def _of_written_classes(self, generalized: exp.Expression, generalized_hashes: Mapping[str, exp.Expression],
                            written_hashes: Mapping[str, exp.Expression]) -> exp.Subquery:
        """The generalized rows of the classes the file holds: a semi-join on one hash of each
        row's class (``Engine.hash_of_hashes`` over its quasi-identifiers' value hashes, as the row
        keys hash them: NULL apart from every value, a column typed otherwise on the two sides as
        text). A release removes whole classes: a true file is exactly these rows, and equal sums
        tell so without grouping either side. Sums that differ prove nothing by themselves (a class
        written in part is still true; two classes' hashes alike keep rows of a class the file
        lacks): the rows are then counted. Whatever rows this keeps, equal sums mean the file is a
        multiset of generalized input rows. One 64-bit key, where the join compared every
        quasi-identifier: 0.92 → 0.63 s at 10 M rows (docs/performance.md, eighty-second round)."""
        key = q.free_name("__sqlclose_ck", self.columns)
        written_key = self.engine.hash_of_hashes([written_hashes[c].copy() for c in self.classes])
        classes = exp.select(exp.alias_(written_key, key)).distinct() \
            .from_(_aliased(self.grouped, "__sqlclose_rel")).subquery("__sqlclose_cls")
        generalized_key = self.engine.hash_of_hashes([_qualified(generalized_hashes[c], "__sqlclose_gen")
                                                      for c in self.classes])
        match = exp.EQ(this=generalized_key, expression=_col(key, "__sqlclose_cls"))
        # An inner join on distinct classes is the semi-join. Read from the grouped file, the
        # classes are estimated small and DuckDB builds its hash table on them: as a SEMI JOIN, or
        # read from the file, it built on the 1 M rows (2-3 s, against 0.2 s for the counts).
        every = exp.Column(this=exp.Star(), table=exp.to_identifier("__sqlclose_gen"))
        return exp.select(every).from_(_aliased(generalized, "__sqlclose_gen")).join(classes, on=match).subquery()

    def _own_hash(self, name: str, as_is: bool) -> exp.Expression:
        """Column ``name``'s value hash on both sides; a column given as it is (not a QI) that holds
        floats by the text of its value with every NaN written without its sign, as a kept column's
        is (``release_query.nan_rewrite``, which reaches floats alone: a text '-nan' in a struct's
        string is not a NaN). A sensitive column's keeps its sign, checked by its own counts."""
        value = _col(name)
        rewrite = None if name in self.classes else \
            nan_rewrite(self.written_types.field(name).type, self.engine.is_nan, None)
        if rewrite is None:
            return self.engine.value_hash(value, as_is)
        return self.engine.value_hash(rewrite(value), as_is=False)  # hashed as its text

    def _weighted(self, key: exp.Expression) -> exp.Expression:
        """A written row's key (``_wide``), times the rows it stands for when it stands for more
        than itself: DuckDB multiplies by 1 too (80 ms per 10 M rows)."""
        term = self._wide(key)
        return term if self.weight is None else exp.Mul(this=term, expression=_col("__sqlclose_w"))

    def _wide(self, key: exp.Expression) -> exp.Expression:
        """A row key as the engine's exact wide integer, whose sum over every row cannot overflow."""
        return exp.Cast(this=key.copy(), to=exp.DataType.build(self.engine.wide_integer))


def _qualified(expression: exp.Expression, alias: str) -> exp.Expression:
    """``expression`` with its columns read from ``alias``: beside a joined relation, no name of
    the user's binds to the other side."""
    def qualify(node: exp.Expression) -> exp.Expression:
        return _col(node.name, alias) if isinstance(node, exp.Column) else node
    return expression.copy().transform(qualify, copy=False)


def _hashed(rows: exp.Expression, hashes: Sequence[exp.Expression],
            weight: exp.Expression | None = None) -> exp.Subquery:
    """``rows`` as their values' hashes (``__sqlclose_h0``, …; ``weight`` as ``__sqlclose_w``): each
    value hashed once for the row key (``_keyed``), where the keys over the values
    hashed every value twice; at 10 M rows the written side's sums took 0.58 s against 0.68 s."""
    select = exp.select(*[exp.alias_(h, f"__sqlclose_h{i}") for i, h in enumerate(hashes)])
    if weight is not None:
        select = select.select(exp.alias_(weight.copy(), "__sqlclose_w"))
    return select.from_(_aliased(rows, "__sqlclose_hashed")).subquery()


def _keyed(hashed: exp.Expression, key: exp.Expression, weighted: bool = False) -> exp.Subquery:
    """``_hashed`` rows as their first row key (``__sqlclose_k``, ``Engine.hash_of_hashes``),
    computed once for both keys (the second is its ``Engine.rehash``), and their weight."""
    select = exp.select(exp.alias_(key.copy(), "__sqlclose_k"))
    if weighted:
        select = select.select(_col("__sqlclose_w"))
    return select.from_(_aliased(hashed, "__sqlclose_keyed")).subquery()


def _untrue_rows(engine: Engine, truth: _Truth, source: exp.Expression, qis: Sequence[WrittenQI],
                 levels: list[list[int]], registered: list[str]) -> list[str]:
    """Generalize the input by label lookups (not the search's codes) at each reading of the
    levels; the file is true to the input if some reading finds every written row."""
    untrue = 0
    for choice in itertools.islice(itertools.product(*levels), MAX_LEVEL_CHOICES):
        params: list[Any] = []
        generalized, hashed = _generalized(engine, source, truth.columns, qis, choice, params, registered)
        untrue = truth.untrue(generalized, params, hashed)
        if not untrue:
            return []
    return [f"{counted(untrue, 'written row')} "
            f"{agreeing(untrue, 'is not a row', 'are not rows')} of the input generalized at the levels the labels "
            "show (a label, a value or a whole row was altered)"]


def _untrue_mapped_rows(engine: Engine, truth: _Truth, source: exp.Expression, qis: Sequence[WrittenQI],
                        mapping: pa.Table, registered: list[str]) -> list[str]:
    """A multidimensional release: the mapping must only generalize (each label its leaf or an
    ancestor, by the hierarchy's rows), and the file must hold input rows recoded by it."""
    cover = _register(engine, registered, "verify_covers", arrow_table(_covers_table(qis)))
    mapped = _register(engine, registered, "verify_mapping", mapping)
    problems = []
    for i, qi in enumerate(qis):
        pair = exp.and_(exp.EQ(this=exp.column("col", "c"), expression=exp.Literal.number(i)),
                        exp.EQ(this=exp.column("leaf", "c"), expression=exp.column(f"l{i}", "m")),
                        exp.EQ(this=exp.column("label", "c"), expression=exp.column(f"g{i}", "m")))
        covered = exp.Exists(this=exp.select(exp.Literal.number(1)).from_(exp.alias_(cover.copy(), "c", table=True))
                             .where(pair))
        query = _count(mapped, "m").where(exp.Not(this=covered))
        bad = engine.fetch_row(query)["n"]
        if bad:
            problems.append(f"column {name_shown(qi.name)}: {counted(bad, 'mapped label')} "
                            f"{agreeing(bad, 'is', 'are')} neither the value nor one of its "
                            f"ancestors in {qi.hierarchy.origin}")
    params: list[Any] = []
    by_name = {qi.name: i for i, qi in enumerate(qis)}
    select = exp.select().from_(_aliased(source, "src"))
    select = select.join(exp.alias_(mapped.copy(), "m", table=True), join_type="left", on=exp.and_(*[
        _leaf_match(exp.column(f"l{i}", "m"), qi, params) for i, qi in enumerate(qis)]))
    for name in truth.columns:
        value = exp.column(f"g{by_name[name]}", "m") if name in by_name else _col(name, "src")
        select = select.select(exp.alias_(value, exp.to_identifier(name, quoted=True)))
    untrue = truth.untrue(select.subquery(), params)
    if untrue:
        problems.append(f"{counted(untrue, 'written row')} "
                        f"{agreeing(untrue, 'is not a row', 'are not rows')} of the input recoded by the release's "
                        "mapping (a label, a value or a whole row was altered)")
    return problems


def _covers_table(qis: Sequence[WrittenQI]) -> dict[str, list]:
    """Columns col, leaf, label: each leaf with itself and its ancestors (a hierarchy row's
    distinct labels), row by row — leaves are unique, so no set over all rows is needed."""
    return _stacked(((i, row[0], dict.fromkeys(row)) for i, qi in enumerate(qis) for row in qi.hierarchy.rows),
                    "leaf")


def _generalized(engine: Engine, source: exp.Expression, columns: Sequence[str], qis: Sequence[WrittenQI],
                 choice: Sequence[int], params: list[Any],
                 registered: list[str]) -> tuple[exp.Expression, dict[str, str]]:
    """The input generalized at ``choice`` by label lookups, and which of its columns carry a
    generalized QI's label hash (``_Truth.untrue``): each label is hashed once, in its lookup, not
    once per row (at 10 M rows the hashing was 0.7 of the generalized side's 1.2 s). A QI at its
    top is the top label, a bound constant: every value generalizes to it, and its join cost ~0.08 s
    a column at 10 M rows (docs/performance.md, twenty-sixth round)."""
    by_name = {qi.name: (qi, level) for qi, level in zip(qis, choice)}
    select = exp.select().from_(_aliased(source, "src"))
    hashed: dict[str, str] = {}
    for name in columns:
        qi, level = by_name.get(name, (None, 0))
        if qi is None or level == 0:
            select = select.select(exp.alias_(exp.column(exp.to_identifier(name, quoted=True), "src"),
                                              exp.to_identifier(name, quoted=True), copy=False), copy=False)
            continue
        hashed[name] = q.free_name(f"__sqlclose_h{len(hashed)}", columns)  # beside the columns: named apart
        if level == qi.hierarchy.height:  # the top: one label for every value, no lookup to join
            top = _param(qi.hierarchy.rows[0][-1], params)
            select = select.select(exp.alias_(top, exp.to_identifier(name, quoted=True), copy=False),
                                   exp.alias_(engine.value_hash(top.copy(), as_is=True),
                                              exp.to_identifier(hashed[name], quoted=True), copy=False), copy=False)
            continue
        h = qi.hierarchy
        lookup = _register(engine, registered, "verify_generalize",
                           arrow_table({"leaf": leaf_labels(h, 0), "label": leaf_labels(h, level)}))
        labels = exp.select("leaf", "label", exp.alias_(engine.value_hash(exp.column("label"), as_is=True), "h")) \
            .from_(lookup, copy=False)
        alias = f"lk_{len(select.args.get('joins') or [])}"
        select = q.join_lookup(select, labels, alias, "leaf",
                               lambda qi=qi, alias=alias: _leaf_match(exp.column("leaf", alias), qi, params),
                               lambda qi=qi: _text(qi.name, qi.null_value, params, table="src"),
                               lambda value: _param(value, params), outer=True, looked_up=engine.looked_up, copy=False)
        # A leaf missing from the lookup has no label: its hash is then the hash of NULL, as if hashed per row.
        carried = exp.Coalesce(this=exp.column("h", alias),
                               expressions=[engine.value_hash(exp.column("label", alias), as_is=True)])
        select = select.select(exp.alias_(exp.column("label", alias), exp.to_identifier(name, quoted=True), copy=False),
                               exp.alias_(carried, exp.to_identifier(hashed[name], quoted=True), copy=False),
                               copy=False)
    return select.subquery(copy=False), hashed  # built here, one owner: the builders need not copy it at each step


# ---- sensitive columns ------------------------------------------------------------------------

def _references(engine: Engine, judge: Judge, source: exp.Expression, sensitive: Sequence[WrittenSensitive],
                registered: list[str]) -> list[Callable[[], exp.Table]]:
    """Each sensitive column's reference distribution Q, from the input by the engine, as the
    column's measures ask for it: kept there for a judge on the engine; for a local judge copied
    beside it, every column's at once, in one statement (each was a job of its own on Spark:
    ``Judge.copied_each``)."""
    if judge.engine is engine:
        def kept(sa: WrittenSensitive) -> exp.Table:
            params: list[Any] = []
            return _kept(engine, registered, "verify_reference", _reference(source, sa, params), params)
        return [functools.partial(kept, sa) for sa in sensitive]
    params: list[Any] = []  # numbered across the columns' queries, collected together
    copied = judge.copied_each(engine, [_reference(source, sa, params) for sa in sensitive], params,
                               "verify_reference") if sensitive else []
    return [lambda table=table: table for table in copied]


def _reference(source: exp.Expression, sa: WrittenSensitive, params: list[Any]) -> exp.Expression:
    """The query of a sensitive column's reference distribution Q (verify_reference.sql)."""
    text = _sensitive_text(sa, params)
    # The ordered distance walks the values in the column's own (typed) order; others only need text.
    sort_key = _col(sa.name) if sa.spec.distance == "ordered" else text
    return template("verify_reference", input=source, value=text, sort_key=sort_key)


def _sensitive_text(sa: WrittenSensitive, params: list[Any]) -> exp.Expression:
    """A sensitive column's value as text; the NULL stand-in, if any, bound (``params``) where it is read."""
    s = sa.spec
    return _text(sa.name, s.null_value if s.nulls == "value" else None, params)


def _sensitive(judge: Judge, qi_cols: list[exp.Column], sa: WrittenSensitive, q_of: Callable[[], exp.Table],
               rows: str) -> tuple[list[str], list[ModelResult]]:
    """A sensitive column's models: its counts per class by the ``judge``, against Q (``q_of``, beside
    the counts: ``_references``, asked for after the counts are kept, as it was made)."""
    text_params: list[Any] = []  # the NULL stand-in ($1), if any: bound where the value is read as text
    text = _sensitive_text(sa, text_params)
    # Its value and count columns sit beside the quasi-identifiers: named apart from them.
    own = {name: q.free_name(name, [c.name for c in qi_cols]) for name in (q.AUDIT_VALUE, q.AUDIT_COUNT)}
    counts = _kept(judge.engine, judge.registered, "verify_counts",
                   _class_counts(judge, qi_cols, sa.name, text, not text_params, own, rows), text_params)
    reference = q_of()
    foreign = template("verify_foreign", counts=counts, reference=reference).subquery("f")
    params: list[Any] = []
    distances = _distance(judge.engine, counts, reference, sa, params, judge.registered) \
        if sa.spec.t is not None else None
    measures, specs = model_measures(sa, counts, distances, params)
    measures = measures.subquery("ms", copy=False)
    # One statement (one row): the foreign-value check beside the models' measures.
    both = exp.select(exp.Star()).from_(foreign, copy=False).join(measures, join_type="cross", copy=False)
    row = judge.engine.fetch_row(both, params, owned=True)  # the largest tree of a re-check: rendered uncopied
    models = [ModelResult(name, sa.name, parameters, row[f"reached_{i}"], int(row[f"failing_{i}"] or 0))
              for i, (name, parameters, *_) in enumerate(specs)]
    return _foreign_values(row, sa.name), models


def _kept(engine: Engine, registered: list[str], stem: str, query: exp.Expression,
          params: Sequence[Any] = ()) -> exp.Table:
    """``query`` kept engine-side, for measures that read it several times. A sensitive column's
    counts and reference were common table expressions, which Spark computed again at every
    reference (~22 shuffle stages per column; docs/performance.md, thirty-fourth round)."""
    table = engine.create_temp_table(engine.temp_name(stem), query, params, owned=True)  # each built for its table
    registered.append(table.name)
    return table


def _foreign_values(found: dict, name: str) -> list[str]:
    """A problem when the written column holds values the input does not (verify_foreign's row)."""
    if not found["classes"]:
        return []
    example = "NULL" if found["nulls"] and found["example"] is None else repr(found["example"])
    held = found["distinct_values"] + (1 if found["nulls"] else 0)
    return [f"column {name_shown(name)} holds {counted(held, 'value')} the input "
            f"does not have (e.g. {example}), in {counted(found['classes'], 'class', 'classes')}"]


def _distance(engine: Engine, counts: exp.Expression, reference: exp.Expression, sa: WrittenSensitive,
              params: list[Any], registered: list[str]) -> exp.Expression:
    """Per class, the distance of its distribution from Q (``class_distances``), over tables kept
    engine-side: each class's size and the input's N (verify_class_sizes.sql), read at several
    places by the exact distances, kept once where every template had its own CTE (fifty-fourth
    round); the hierarchy's tree registered (``_tree_table``)."""
    return class_distances(
        sa, counts, reference, params,
        sizes=lambda: _kept(engine, registered, "verify_class_sizes",
                            template("verify_class_sizes", counts=counts, reference=reference)),
        tree=lambda h: _tree_table(engine, h, registered), keys=lambda: ordered_keys(engine.wide_integer))


def class_distances(sa: WrittenSensitive, counts: exp.Expression, reference: exp.Expression, params: list[Any],
                    sizes: Callable[[], exp.Expression], tree: Callable[[Hierarchy], exp.Expression],
                    keys: Callable[[], tuple[exp.Expression, exp.Expression]]) -> exp.Expression:
    """Per class, the distance of its distribution from Q: (cls, d). Every distance reads each
    class's present values (and, hierarchical, their ancestors), never every class against every
    value of the domain: classes x values rows took minutes on a domain of 100 k values
    (docs/performance.md, fifty-second and fifty-third rounds). ``sizes``: verify_class_sizes.sql's
    table (made when a distance needs it); ``tree``: a hierarchy's ``tree_rows`` as a table;
    ``keys``: verify_ordered.sql's sort keys (``ordered_keys``). The local re-check keeps these
    engine-side; the warehouse's verification query holds them as CTEs (sql/warehouse.py)."""
    name = sa.spec.distance
    if name == "kl":  # reads each class's size once, in its own CTE (verify_kl.sql says why)
        return template("verify_kl", counts=counts, reference=reference).subquery(copy=False)
    sized = sizes()
    if name == "ordered":
        reference_key, segment_key = keys()
        return template("verify_ordered", counts=counts, reference=reference, sizes=sized,
                        reference_key=reference_key, segment_key=segment_key).subquery(copy=False)
    if name != "hierarchical":  # equal and variational: the same number
        return template("verify_equal", counts=counts, reference=reference, sizes=sized).subquery(copy=False)
    h = sa.hierarchy
    if h is None:
        raise ValueError(f"column {name_shown(sa.name)}: the hierarchical distance needs the column's hierarchy")
    tree_distance = template("verify_hierarchical", counts=counts, reference=reference, sizes=sized,
                             tree=tree(h), height=_param(float(h.height), params))
    return tree_distance.subquery(copy=False)


TREE_COLUMNS = ("leaf", "level", "node", "parent", "parent_height")


def tree_rows(h: Hierarchy) -> list[tuple[str, int, str, str, int]]:
    """verify_hierarchical.sql's tree: per (leaf, level < H) the leaf's ancestor at that level
    (node) and the one above (parent, at parent_height): columns ``TREE_COLUMNS``."""
    return [(row[0], level, row[level], row[level + 1], level + 1) for row in h.rows for level in range(h.height)]


def _tree_table(engine: Engine, h: Hierarchy, registered: list[str]) -> exp.Table:
    """verify_hierarchical.sql's tree, registered: per (leaf, level < H) the leaf's ancestor at that
    level (node) and the one above (parent, at parent_height)."""
    tree = tree_rows(h)
    return _register(engine, registered, "verify_tree", arrow_table({
        "leaf": [r[0] for r in tree], "level": [r[1] for r in tree], "node": [r[2] for r in tree],
        "parent": [r[3] for r in tree], "parent_height": [r[4] for r in tree]},
        {"leaf": pa.string(), "level": pa.int64(), "node": pa.string(), "parent": pa.string(),
         "parent_height": pa.int64()}))


def ordered_keys(wide_integer: str, divide: Callable[[exp.Expression, exp.Expression], exp.Expression] | None = None
                 ) -> tuple[exp.Expression, exp.Expression]:
    """verify_ordered.sql's sort keys, exact integers in ``wide_integer`` (an engine's
    ``wide_integer``): a reference position's C_q * N, and a segment's threshold
    floor(c * N * N / s). ``divide``: that floor of two nonnegative wide integers, exactly (DIV,
    unless given: the warehouse's verification query spells it per dialect)."""
    wide = exp.DataType.build(wide_integer)

    def widened(*factors: exp.Expression) -> exp.Expression:
        product = functools.reduce(lambda a, b: exp.Mul(this=a, expression=b), factors)
        return exp.Cast(this=product, to=wide.copy())

    total = exp.column("total", "sg")
    reference_key = widened(exp.column("cq", "cu"), exp.column("total", "d"))
    numerator, denominator = widened(exp.column("c", "sg"), total, total.copy()), widened(exp.column("s", "sg"))
    segment_key = divide(numerator, denominator) if divide is not None else \
        exp.IntDiv(this=numerator, expression=denominator)
    return reference_key, segment_key


def model_measures(sa: WrittenSensitive, counts: exp.Expression, distances: exp.Expression | None,
                   params: list[Any]) -> tuple[exp.Select, list[tuple]]:
    """One row over the classes of ``counts`` (verify_diversity.sql, joined to the classes'
    ``distances`` when the column has t): per model the column asks for (``_model_specs``) the
    value the worst class reaches (``reached_i``) and the classes failing it (``failing_i``).
    Run by the local re-check, and in the warehouse by its verification query."""
    recursive_l = sa.spec.recursive.l if sa.spec.recursive is not None else 1
    diversity = template("verify_diversity", counts=counts, l=_param(recursive_l, params)).subquery(copy=False)
    joined = exp.select().from_(diversity.as_("m", copy=False), copy=False)
    if distances is not None:
        joined = joined.join(distances.as_("d", copy=False), copy=False,
                             on=exp.EQ(this=exp.column("cls", "d"), expression=exp.column("cls", "m")),
                             join_type="left")
    specs = _model_specs(sa, params)
    return joined.select(*[e for spec in specs for e in spec[2:]], copy=False), specs


def _model_specs(sa: WrittenSensitive, params: list[Any]) -> list[tuple]:
    """Per model the column asks for: (name, parameters, reached AS reached_i, failing AS failing_i)."""
    s = sa.spec
    m = exp.column
    out: list[tuple[str, dict, exp.Expression, exp.Expression]] = []

    def add(name: str, parameters: dict, reached: exp.Expression, fails: exp.Expression) -> None:
        i = len(out)
        failing = exp.Sum(this=exp.If(this=fails, true=exp.Literal.number(1), false=exp.Literal.number(0)))
        out.append((name, parameters, exp.alias_(reached, f"reached_{i}"), exp.alias_(failing, f"failing_{i}")))

    if s.t is not None:
        d = exp.Coalesce(this=m("d", "d"), expressions=[exp.Literal.number(0)])
        limit = exp.Add(this=_param(s.t, params), expression=_param(TOLERANCE, params))
        add("t-closeness", {"t": s.t, "distance": s.distance}, exp.Max(this=d.copy()), exp.GT(this=d, expression=limit))
    for name, value in (("distinct l-diversity", s.distinct_l), ("p-sensitivity", s.p)):
        if value is not None:
            add(name, {"p" if name == "p-sensitivity" else "l": value}, exp.Min(this=m("distinct_values", "m")),
                exp.LT(this=m("distinct_values", "m"), expression=_param(value, params)))
    if s.entropy_l is not None:
        floor = exp.Sub(this=exp.Ln(this=_param(float(s.entropy_l), params)), expression=_param(TOLERANCE, params))
        add("entropy l-diversity", {"l": s.entropy_l}, exp.Min(this=exp.Exp(this=m("entropy", "m"))),
            exp.LT(this=m("entropy", "m"), expression=floor))
    if s.recursive is not None:
        tail, r1 = m("tail", "m"), m("r1", "m")
        ratio = exp.If(this=exp.GT(this=tail.copy(), expression=exp.Literal.number(0)),
                       true=exp.Div(this=exp.Cast(this=r1.copy(), to=exp.DataType.build("DOUBLE")),
                                    expression=tail.copy()),
                       false=exp.Cast(this=exp.Literal.string("inf"), to=exp.DataType.build("DOUBLE")))
        # r1 / tail < c passes, an empty tail (ratio ∞) fails. Divided, not multiplied: r1 ≥ c · tail
        # rounded c · tail (8 ≥ 2.666666666666667 × 3 = 8.0) and failed a class whose ratio is below c
        # (review of the sixty-fourth round). A correctly rounded ratio is never below c when the
        # exact one is not: the test can only err closed.
        fails = exp.GTE(this=ratio.copy(), expression=_param(float(s.recursive.c), params))
        add("recursive (c,l)-diversity", {"c": s.recursive.c, "l": s.recursive.l}, exp.Max(this=ratio), fails)
    return out


# ---- helpers ----------------------------------------------------------------------------------

def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name, quoted=True), table=exp.to_identifier(table) if table else None)


def _leaf_match(leaf: exp.Expression, qi: WrittenQI, params: list[Any]) -> exp.Expression:
    """A lookup's leaf is the source row's value of ``qi``: its text, or typed (``typed_match``)."""
    if qi.typed_match is not None:
        return exp.EQ(this=q.typed_leaf(leaf, qi.typed_match), expression=_col(qi.name, "src"))
    return exp.EQ(this=leaf, expression=_text(qi.name, qi.null_value, params, table="src"))


def _text(name: str, stand_in: str | None, params: list[Any], table: str | None = None) -> exp.Expression:
    """A column as text, the form hierarchy labels are matched in; NULL as its stand-in if any."""
    value: exp.Expression = exp.Cast(this=_col(name, table), to=exp.DataType.build("VARCHAR"))
    if stand_in is not None:
        value = exp.Coalesce(this=value, expressions=[_param(stand_in, params)])
    return value


def _param(value: Any, params: list[Any]) -> exp.Expression:
    """A bound parameter ($n): values never enter SQL as text."""
    params.append(value)
    return exp.Placeholder(this=str(len(params)))


def _register(engine: Engine, registered: list[str], stem: str, table: pa.Table) -> exp.Table:
    name = engine.temp_name(stem)
    engine.register(name, table)
    registered.append(name)
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _count(relation: exp.Expression, alias: str = "__sqlclose_in") -> exp.Select:
    """``SELECT COUNT(*) AS n FROM relation AS alias`` (a table or a query)."""
    return exp.select(exp.Count(this=exp.Star()).as_("n")).from_(_aliased(relation, alias))


def _aliased(relation: exp.Expression, alias: str) -> exp.Expression:
    """A copy of a table or query under ``alias``, to select FROM (``alias_`` and ``as_`` copy it: once)."""
    if isinstance(relation, exp.Table):
        return exp.alias_(relation, alias, table=True)
    return relation.as_(alias)
