"""The warehouse path's queries: what runs inside the warehouse, rendered in its dialect.

Only two queries cross the warehouse's boundary. The *histogram* (``histogram``) goes in and its
result comes out: rows counted per combination of quasi-identifier values (as text) and
sensitive values, the same GROUP BY as the local scan (``queries.raw_histogram``), NULLs kept
as NULL so the NULL policies are applied and checked locally. The *release* (``release``) goes in
and stays: the chosen level's lookups and the suppressed classes inline as VALUES (literals built
by sqlglot, never text pasted together), so that the warehouse generalizes its own rows. A
*verification* query measures the released table there (``verification``).

User names enter as quoted identifiers; user values as sqlglot literals (a warehouse SQL file has
no bound parameters), escaped per dialect by sqlglot.

Text is grouped, joined and compared byte for byte (``binary_text``), whatever the column's
collation: under a case-insensitive one the histogram counted 'M' and 'm' as one value, the
release gave each row its own spelling, and the verification query, grouping under the same
collation, said ok to classes below k.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sqlclose.errors import SpecError
from sqlclose.model.spec import WAREHOUSE_DIALECTS
from sqlclose.model.text import name_shown
from sqlclose.sql import queries as q
from sqlclose.sql.templates import template

COUNT_COLUMN = "__sqlclose_count"  # the histogram's count column (the reserved prefix: never a user's column)
RELEASED = "__sqlclose_released"
SUPPRESSED = "__sqlclose_suppressed"
TYPED_PREFIX = "__sqlclose_typed_"  # a banded quasi-identifier's value in its own type (``typed_copy``)
VALUES_CHUNK = 10_000  # Snowflake takes at most 16,384 rows in one VALUES
BINARY_TEXT = "__SQLCLOSE_BINARY_TEXT"  # a marker ``render`` spells in each dialect (``_binary_text``)
SORT_TEXT = "__SQLCLOSE_SORT_TEXT"  # likewise (``_sort_text``)
TIE_TEXT = "__SQLCLOSE_TIE_TEXT"  # likewise (``_tie_text``)
EXACT_DIV = "__SQLCLOSE_EXACT_DIV"  # likewise (``_exact_div``)
CLASSED = "__sqlclose_classed"  # the released rows' class keys and counted sensitive values (``ModelCheck``)
WIDE_INTEGER = "DECIMAL(38, 0)"  # the ordered distance's exact keys (BigQuery: BIGNUMERIC, as sqlglot spells it)


def warehouse_table(parts: Sequence[str]) -> exp.Table:
    """``[catalog, schema, table]`` (or fewer) as a table of quoted identifiers."""
    *prefix, name = parts
    args: dict[str, Any] = {"this": q.ident(name)}
    if prefix:
        args["db"] = q.ident(prefix[-1])
    if len(prefix) == 2:
        args["catalog"] = q.ident(prefix[0])
    return exp.Table(**args)


def typed_copy(code: str) -> str:
    """The histogram's column holding a banded quasi-identifier's value in the warehouse's own
    type (its text is what is counted): the type decides the bands' labels (``35-39`` or
    ``[35, 40)``), as a file's column type does on the local path. Named by the column's code
    (``q0``), not its name: Postgres cuts an identifier to 63 bytes, so a prefixed name of 47
    bytes or more lost its end and the export lacked the column asked for; short codes cannot
    collide, and the user's names never carry the reserved prefix (refused)."""
    return f"{TYPED_PREFIX}{code}"


def typed_values(code: str) -> str:
    """The histogram's column counting a banded quasi-identifier's distinct values in each text group
    (``typed_copy`` holds the smallest): two values the warehouse writes alike as text (Postgres
    under extra_float_digits = 0: 39.99999999999999 and 40.0 both '40') are one group there, cut
    into one band, and are refused where it counts more than one. A count, not the largest value:
    a CSV export writes it exactly, where it writes the values as lossily as the text."""
    return f"{TYPED_PREFIX}distinct_{code}"


def histogram(table: exp.Expression, columns: Sequence[q.CodedColumn], typed: Sequence[str] = ()) -> exp.Expression:
    """The one query the search needs: the scan's GROUP BY, columns named as in the table, and
    the count as ``COUNT_COLUMN``. ``columns`` carry only name and typing (``typed``: an ordered
    sensitive column stays a number); NULLs stay NULL. ``typed``: columns also given in their own
    type, as ``MIN`` of the group (one value, when the group is that value's text), named
    ``typed_copy``, and its count of distinct values, ``typed_values``."""
    plain = [q.CodedColumn(c.name, c.name, c.code, c.lookup, typed=c.typed) for c in columns]
    select = in_binary(q.raw_histogram(table, plain, q.Params()))
    select.expressions[-1].set("alias", q.ident(COUNT_COLUMN))
    codes = {c.name: c.code for c in columns}
    for name in typed:
        select = select.select(exp.alias_(exp.Min(this=q.col(name, "src")), q.ident(typed_copy(codes[name]))),
                               exp.alias_(exp.Count(this=exp.Distinct(expressions=[q.col(name, "src")])),
                                          q.ident(typed_values(codes[name]))),
                               copy=False)
    return quoted(select)


@dataclass(frozen=True)
class InlineLookup:
    """One quasi-identifier at the released level: each leaf value (as text) with its class code
    at that level and, above level 0, its label there."""

    coded: q.CodedColumn
    level: int
    values: Sequence[str]
    codes: Sequence[int]
    labels: Sequence[str] | None = None  # None at level 0 (the raw value is released)

    @property
    def cte(self) -> str:
        return f"__sqlclose_lookup_{self.coded.code}"


def release(table: exp.Expression, columns: Sequence[str], lookups: Sequence[InlineLookup],
            suppressed: Sequence[Sequence[int]], drop_nulls: Sequence[str], kept: Sequence[str] = ()) -> exp.Select:
    """The release as the warehouse runs it: the same query as the local release
    (``queries.release``: same joins, same exclusion of suppressed classes, same ORDER BY) over
    inline lookups. ``suppressed``: the failing classes' codes, one per lookup; ``drop_nulls``:
    columns whose NULL rows ``nulls = "drop"`` removed; ``kept``: columns released unchanged that
    the histogram never saw, sorted by their text (``sort_text``)."""
    source = rows_counted(table, drop_nulls)
    released = [q.ReleasedQI(dataclasses.replace(lk.coded, lookup=lk.cte), lk.level, 1) for lk in lookups]
    params = q.Params()
    query = q.release(source, columns, released, q.table(SUPPRESSED) if suppressed else None, params)
    labelled = {lk.coded.name for lk in lookups if lk.labels is not None}
    untied = never_tied(lookups)
    tied = [name for name in columns if name not in labelled and name not in untied]
    query = inline(with_byte_ties(sorted_by_text(in_binary(query), kept), tied, kept), params.values)
    for lk in lookups:
        rows = [[exp.Literal.string(v), exp.Literal.number(int(c))]
                + ([exp.Literal.string(label)] if lk.labels is not None else [])
                for v, c, label in zip(lk.values, lk.codes, lk.labels or [None] * len(lk.values))]
        names = ["value", "code"] + ([f"label_{lk.level}"] if lk.labels is not None else [])
        # copy=False: a copy per CTE would copy every lookup before it (34,730 dates: 10 s)
        query = query.with_(q.ident(lk.cte), as_=values_table(names, rows), copy=False)
    if suppressed:
        rows = [[exp.Literal.number(int(code)) for code in codes] for codes in sorted(map(tuple, suppressed))]
        query = query.with_(q.ident(SUPPRESSED), as_=values_table([lk.coded.code for lk in lookups], rows), copy=False)
    return quoted(query)


def rows_counted(table: exp.Expression, drop_nulls: Sequence[str]) -> exp.Expression:
    """The table's rows the histogram counted: less those a ``nulls = "drop"`` column's NULL removes."""
    return q.without_nulls(table, drop_nulls) if drop_nulls else table.copy()


def values_table(names: Sequence[str], rows: Sequence[Sequence[exp.Expression]]) -> exp.Expression:
    """``SELECT * FROM (VALUES …) AS t(names)``, in chunks joined by UNION ALL (VALUES has a row
    limit in some warehouses); BigQuery, which has no VALUES, gets UNNEST of STRUCTs from sqlglot."""
    parts = []
    for start in range(0, len(rows), VALUES_CHUNK):
        alias = exp.TableAlias(this=q.ident("t"), columns=[q.ident(n) for n in names])
        # exp.Tuple, not the exp.tuple_ builder, which copies every literal again
        tuples = [exp.Tuple(expressions=r) for r in rows[start:start + VALUES_CHUNK]]
        chunk = exp.Values(expressions=tuples, alias=alias)
        parts.append(exp.select(exp.Star()).from_(chunk, copy=False))
    return parts[0] if len(parts) == 1 else exp.union(*parts, distinct=False, copy=False)


def inline(query: exp.Expression, values: Sequence[Any]) -> exp.Expression:
    """Bound parameters ($1, …) replaced by literals: a file for the warehouse binds nothing."""
    def literal(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder) and node.name.isdigit():
            value = values[int(node.name) - 1]
            return exp.Literal.number(value) if isinstance(value, (int, float)) else exp.Literal.string(str(value))
        return node

    return query.transform(literal)


@dataclass(frozen=True)
class ModelCheck:
    """The models one sensitive column (the ``index``-th) is measured for in the warehouse, beyond
    its distinct values: the local re-check's SQL (release/verify_sql.py: verify_diversity.sql and
    the column's distance) over the column's class counts (``class_counts(index)``: verify_counts.sql
    over the released table) and reference (``reference(index)``: verify_reference.sql over the
    source's rows, as the histogram counted them). ``ctes``: tables the measures read (the class
    sizes, the hierarchy's tree), in order; ``measures``: one row; ``figures``: (verification column,
    its column in ``measures``); ``failing``: ``measures``' columns counting the classes that fail
    a model (each must be 0, or NULL: no class)."""

    index: int
    ctes: Sequence[tuple[str, exp.Expression]]
    measures: exp.Expression
    figures: Sequence[tuple[str, str]]
    failing: Sequence[str]


OFF_HIERARCHY = "off_hierarchy"  # ``with_off_hierarchy``'s column


def with_off_hierarchy(measures: exp.Select, counts: exp.Table, tree: exp.Table) -> exp.Select:
    """``measures``' row beside the rows of ``counts`` whose value is no leaf of ``tree``
    (verify_hierarchical.sql's tree: a value it lacks adds to no class's distance), 0 when none."""
    off_tree = exp.not_(exp.Exists(this=exp.select(exp.Literal.number(1)).from_(q.table(tree.name).as_("lf")).where(
        exp.EQ(this=q.col("leaf", "lf"), expression=q.col("v", "c")))))
    off = (exp.select(exp.alias_(exp.Coalesce(this=exp.Sum(this=q.col("n", "c")), expressions=[exp.Literal.number(0)]),
                                 q.ident(OFF_HIERARCHY)))
           .from_(q.table(counts.name).as_("c")).where(off_tree))
    return (exp.select(exp.Star()).from_(measures.subquery(q.ident("mm")))
            .join(off.subquery(q.ident("oh")), join_type="cross"))


def class_counts(index: int) -> exp.Table:
    """The ``index``-th sensitive column's rows per released class and value (cls, v, n)."""
    return q.table(f"__sqlclose_counts_s{index}")


def reference(index: int) -> exp.Table:
    """The ``index``-th sensitive column's distribution over the source's rows (v, pos, q, n)."""
    return q.table(f"__sqlclose_reference_s{index}")


def exact_div(numerator: exp.Expression, denominator: exp.Expression) -> exp.Expression:
    """floor(numerator / denominator) of two nonnegative ``WIDE_INTEGER``s, exactly, as a
    ``WIDE_INTEGER``: spelled per dialect by ``render`` (``_exact_div``)."""
    return exp.Anonymous(this=EXACT_DIV, expressions=[numerator, denominator])


def verification(release_query: exp.Select, qi: Sequence[str], sensitive: Sequence[q.CodedColumn],
                 expected: Mapping[str, int], k: int, source: exp.Expression,
                 checks: Sequence[ModelCheck] = ()) -> exp.Expression:
    """One row measured on the released table in the warehouse: the source's rows (``source``:
    the table, less the rows ``nulls = "drop"`` removes), released rows, classes, the smallest class
    and, per sensitive column, the fewest distinct values in a class (counted as the histogram
    counts them: ``_counted_value``); then each figure of the ``checks`` (t-closeness, entropy and
    recursive l-diversity, measured by the local re-check's SQL); ``ok`` last, true when each of the
    first equals ``expected`` (the search's claims), the smallest class is at least ``k`` and no
    class fails a model of the ``checks``. ``release_query`` is taken, not copied (its lookups move
    into the result: a copy of 35 k lookup rows cost seconds)."""
    body = release_query
    ctes = body.args.pop("with_", None) or body.args.pop("with", None)
    body.set("order", None)
    per_class = [exp.alias_(exp.Count(this=exp.Star()), q.ident("n"))]
    for j, column in enumerate(sensitive):
        value = _counted_value(column)
        per_class.append(exp.alias_(exp.Count(this=exp.Distinct(expressions=[value])), q.ident(f"d{j}")))
    # Classes as the released bytes tell them apart (the histogram's grouping), not as the column's
    # collation does: a case-insensitive one made 'M' and 'm' one class of 2; and as the values do,
    # where their text does not: Postgres under extra_float_digits = 0 writes 0.3 and 0.1 + 0.2 alike,
    # and a class of two such rows, released at level 0 as two classes of one, passed (review of the
    # ninety-third round).
    classes = exp.select(*per_class).from_(q.table(RELEASED)).group_by(
        *[key for c in qi for key in (q.col(c), binary_text(q.as_text(q.col(c))))])
    # The source's rows, as the histogram counted them: a row the histogram lost (a line deleted from
    # its file) found no lookup row and went unreleased, every other figure as claimed.
    source = _named(source, "counted")
    source_rows = exp.select(exp.Count(this=exp.Star())).from_(source).subquery()
    measured = {"released_rows": exp.Sum(this=q.col("n")), "classes": exp.Count(this=exp.Star()),
                "min_class_size": exp.Min(this=q.col("n"))}
    measured.update({f"min_distinct_s{j}": exp.Min(this=q.col(f"d{j}")) for j in range(len(sensitive))})
    measured["source_rows"] = source_rows
    sizes = exp.select(*[exp.alias_(m, q.ident(name)) for name, m in measured.items()]) \
        .from_(classes.subquery(q.ident("classes")))
    # The measured row beside each check's one row (its own subquery: an aggregate cannot read
    # another's columns), ok computed from their columns.
    select = exp.select(*[q.col(name, "measured") for name in measured]).from_(sizes.subquery(q.ident("measured")))
    checks_ok: list[exp.Expression] = [
        exp.EQ(this=q.col(name, "measured"), expression=exp.Literal.number(expected[name])) for name in measured]
    checks_ok.append(exp.GTE(this=q.col("min_class_size", "measured"), expression=exp.Literal.number(k)))
    for check in checks:
        alias = f"models_s{check.index}"
        select = select.join(check.measures.subquery(q.ident(alias)), join_type="cross", copy=False)
        select = select.select(*[exp.alias_(q.col(inner, alias), q.ident(name)) for name, inner in check.figures],
                               copy=False)
        checks_ok += [exp.EQ(this=exp.Coalesce(this=q.col(inner, alias), expressions=[exp.Literal.number(0)]),
                             expression=exp.Literal.number(0)) for inner in check.failing]
    select = select.select(exp.alias_(exp.and_(*checks_ok), q.ident("ok")), copy=False)
    select = select.with_(q.ident(RELEASED), as_=body, copy=False)
    if checks:
        _with_counts(select, qi, sensitive, checks, source)
    if ctes is not None:  # the release's lookups come first: the released table reads them
        select.set("with_" if "with_" in select.args else "with",
                   exp.With(expressions=[*ctes.expressions, *_with(select).expressions]))
    return quoted(select)


def _class_number(keys: Sequence[exp.Expression]) -> exp.Expression:
    """A number per class: DENSE_RANK over its keys, NULLs last (``Engine.class_numbers``' plain form)."""
    order = exp.Order(expressions=[exp.Ordered(this=k.copy(), desc=False, nulls_first=False) for k in keys])
    return exp.Window(this=exp.DenseRank(), order=order, over="OVER")


def _named(source: exp.Expression, name: str) -> exp.Expression:
    """``source`` to read FROM: a subquery gets a name (Postgres names every subquery in FROM)."""
    if isinstance(source, exp.Subquery):
        source = source.copy()
        source.set("alias", exp.TableAlias(this=q.ident(name)))
    return source


def _with_counts(select: exp.Select, qi: Sequence[str], sensitive: Sequence[q.CodedColumn],
                 checks: Sequence[ModelCheck], source: exp.Expression) -> None:
    """The CTEs the ``checks`` read, after the released table: the released rows' class keys and
    counted values (``CLASSED``); per checked column its class counts (verify_counts.sql, each class
    numbered by DENSE_RANK over the keys the verification groups by: the value and its text, byte
    for byte) and its reference Q (verify_reference.sql over ``source``, the rows the histogram
    counted, each value counted as the histogram counts it, NULL as its stand-in), then the
    check's own tables."""
    keys = [q.col(c) for c in qi] + [q.col(f"__sqlclose_b{i}") for i in range(len(qi))]
    classed = exp.select(*[q.col(c) for c in qi]).from_(q.table(RELEASED))
    classed = classed.select(*[exp.alias_(binary_text(q.as_text(q.col(c))), q.ident(f"__sqlclose_b{i}"))
                               for i, c in enumerate(qi)],
                             *[exp.alias_(_counted_value(sensitive[c.index]), q.ident(f"__sqlclose_s{c.index}"))
                               for c in checks], copy=False)
    select.with_(q.ident(CLASSED), as_=classed, copy=False)
    for check in checks:
        column = sensitive[check.index]
        counts = template("verify_counts", release=q.table(CLASSED), qi=keys,
                          value=q.col(f"__sqlclose_s{check.index}"), rows=exp.Count(this=exp.Star()),
                          number=_class_number(keys))
        select.with_(class_counts(check.index).this, as_=counts, copy=False)
        value = _counted_value(column)
        sort_key = q.col(column.name) if column.typed else value.copy()  # an ordered column: its numbers' order
        select.with_(reference(check.index).this,
                     as_=template("verify_reference", input=_named(source, "counted"), value=value, sort_key=sort_key),
                     copy=False)
        for name, cte in check.ctes:
            select.with_(q.ident(name), as_=cte, copy=False)


def _counted_value(column: q.CodedColumn) -> exp.Expression:
    """A released sensitive column's value as the histogram counted it: text byte for byte
    (``binary_text``: under the column's own collation, a case-insensitive one counted 'flu' and
    'Flu' as one value, and a valid release's distinct l failed), an ordered column as its number;
    NULL as its stand-in when it has one."""
    value: exp.Expression = q.col(column.name)
    if not column.typed:
        value = binary_text(q.as_text(value))
    if column.null_value is not None:
        text = q.as_text(value) if column.typed else value
        value = exp.Coalesce(this=text, expressions=[exp.Literal.string(column.null_value)])
    return value


def _with(select: exp.Select) -> exp.With:
    return select.args.get("with_") or select.args.get("with")


def binary_text(text: exp.Expression) -> exp.Expression:
    """``text`` compared, grouped and joined byte for byte, whatever collation its column has;
    spelled per dialect by ``render``."""
    return exp.Anonymous(this=BINARY_TEXT, expressions=[text])


def in_binary(query: exp.Expression) -> exp.Expression:
    """``query`` with each source column's text (``CAST(src.col AS VARCHAR)``: what is grouped,
    and joined to the lookups) taken byte for byte (``binary_text``)."""
    for cast in list(query.find_all(exp.Cast)):
        column = cast.this
        if (cast.to.this == exp.DataType.Type.VARCHAR and isinstance(column, exp.Column)
                and column.table == "src"):
            cast.replace(binary_text(cast.copy()))
    return query


def sorted_by_text(query: exp.Expression, names: Sequence[str]) -> exp.Expression:
    """``query``'s ORDER BY with the columns ``names`` sorted by their text (``_sort_text``): a
    kept column may have a type the warehouse cannot sort (Postgres json, point, xml; BigQuery
    ARRAY, STRUCT, JSON; Spark MAP), and ORDER BY on it stopped the release."""
    order = query.args.get("order")
    for key in order.expressions if order else []:
        if isinstance(key.this, exp.Column) and key.this.name in names:
            key.set("this", exp.Anonymous(this=SORT_TEXT, expressions=[key.this.copy()]))
    return query


def with_byte_ties(query: exp.Expression, tied: Sequence[str], kept: Sequence[str]) -> exp.Expression:
    """``query``'s ORDER BY with each key of a column of ``tied`` (released as it is: a quasi-identifier
    at level 0 but those ``never_tied``, a sensitive or kept column) followed by that column's text
    byte for byte (``_tie_text``), as the verification groups it. Values that compare equal yet are
    written apart tie in the column's own order ('M' and 'm' under a case-insensitive collation:
    Snowflake 'en-ci', BigQuery 'und:ci', DuckDB NOCASE, a Postgres nondeterministic one; -0 and 0;
    one instant at two offsets), and rows differing only there came out in the table's storage
    order; where none do, the key changes nothing. ``kept``: columns sorted by their text
    (``sorted_by_text``), whose tie key is built from that text."""
    order = query.args.get("order")
    if order is None:
        return query
    keys: list[exp.Expression] = []
    for key in order.expressions:
        keys.append(key)
        column = key.this.expressions[0] if _is_marker(key.this, SORT_TEXT) else key.this
        if isinstance(column, exp.Column) and column.name in tied:
            tie = exp.Anonymous(this=TIE_TEXT, expressions=[column.copy(), exp.Boolean(this=column.name in kept)])
            keys.append(exp.Ordered(this=tie, desc=False, nulls_first=False))
    order.set("expressions", keys)
    return query


def never_tied(lookups: Sequence[InlineLookup]) -> set[str]:
    """The quasi-identifiers released as they are (level 0) whose values no order can tie unless they
    are written alike: their lookup's texts (the only ones the release holds: a row is joined to its
    lookup by its text, byte for byte) are all digits, none with a leading zero or all of one length.
    Two such texts are two integers in any numeric type, a float included (its text is one per value;
    -0 is not digits), and apart under any collation (digits have no case, accent or ignorable weight;
    one that reads digits as numbers, ICU's numeric ordering, ties 07 and 7 alone). The release cannot
    know a column's type in the warehouse (the histogram holds its text, and an export's types are
    not the table's: a Postgres double holding -0 and 0, exported as CSV, reads back as integers), so
    every other column released as it is keeps its tie key (``with_byte_ties``); a sensitive or kept
    column is not joined to the texts counted, and keeps it too."""
    return {lk.coded.name for lk in lookups if lk.labels is None and _apart_as_digits(lk.values)}


_DIGITS = re.compile(r"[0-9]+")


def _apart_as_digits(texts: Sequence[str]) -> bool:
    """Texts of digits alone that no numeric type or collation ties (``never_tied``)."""
    if not all(_DIGITS.fullmatch(text) for text in texts):
        return False
    return len({len(text) for text in texts}) <= 1 or not any(len(text) > 1 and text[0] == "0" for text in texts)


def _is_marker(node: exp.Expression, name: str) -> bool:
    return isinstance(node, exp.Anonymous) and node.name == name


def _tie_text(value: exp.Expression, kept: bool, dialect: str) -> exp.Expression:
    """A released column's text byte for byte, the key that orders rows its own order ties (``with_byte_ties``):
    BigQuery's kept column as its JSON text (an ARRAY or STRUCT has no cast to STRING). Trino has no
    collations, but a ``timestamp with time zone`` at two offsets is one instant in its order, and
    its cast to VARCHAR writes each with its zone (a kept ARRAY or ROW has no such cast: not covered)."""
    text = _sort_text(value, dialect) if kept and dialect == "bigquery" else q.as_text(value)
    return _binary_text(text, dialect)


def _sort_text(value: exp.Expression, dialect: str) -> exp.Expression:
    """A value of any type as a key ``dialect`` can sort: its text where some types have no
    order (Postgres, Spark: a cast to text, which every type has; BigQuery: its JSON text);
    itself in DuckDB, which sorts every type, and in Snowflake and Trino (not covered: their
    GEOGRAPHY, JSON and MAP; docs/warehouse.md)."""
    if dialect in ("postgres", "spark"):
        return q.as_text(value)
    if dialect == "bigquery":  # TO_JSON_STRING(NULL) is the text 'null', sorted among the values: NULL kept
        return exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null())],
                        default=exp.Anonymous(this="TO_JSON_STRING", expressions=[value]))
    return value


def _binary_text(text: exp.Expression, dialect: str) -> exp.Expression:
    """Text under a binary collation in ``dialect``. A COLLATE overrides the column's own
    collation (an explicit collation wins, in each of them); Spark 4's collations are left by a
    round trip through BINARY, which Spark 3 (no collations, no COLLATE clause) also runs; Trino
    has no collations."""
    if dialect in ("duckdb", "postgres"):  # both know the C collation: byte order
        return exp.Collate(this=text, expression=exp.Identifier(this="C", quoted=True))
    if dialect == "snowflake":
        return exp.Collate(this=text, expression=exp.Literal.string("utf8"))
    if dialect == "bigquery":  # an empty specification removes the collation
        return exp.Collate(this=text, expression=exp.Literal.string(""))
    if dialect == "spark":
        as_bytes = exp.Cast(this=text, to=exp.DataType.build("BINARY"))
        return exp.Cast(this=as_bytes, to=exp.DataType.build("STRING", dialect="spark"))
    return text


def _exact_div(numerator: exp.Expression, denominator: exp.Expression, dialect: str) -> exp.Expression:
    """floor(a / b) of two nonnegative ``WIDE_INTEGER``s, exactly, as a ``WIDE_INTEGER``. Postgres'
    DIV of numerics, BigQuery's DIV of BIGNUMERICs and Spark's DIV of decimals (a BIGINT: at most
    N², N the histogram's rows, at most 3,037,000,499) are exact; DuckDB's // of a DECIMAL is a
    DOUBLE, of an INT128 (HUGEINT, the local engine's ``wide_integer``) exact. Snowflake and Trino
    have no DIV: sqlglot's spelling truncates a quotient rounded to a scale (Snowflake: 6 digits,
    Trino: 0, half up), so there the remainder is taken away first, and the division is exact."""
    wide = exp.DataType.build(WIDE_INTEGER)
    if dialect == "duckdb":
        huge = exp.DataType.build("INT128", dialect="duckdb")
        quotient: exp.Expression = exp.IntDiv(this=exp.Cast(this=numerator, to=huge),
                                              expression=exp.Cast(this=denominator, to=huge.copy()))
    elif dialect in ("snowflake", "trino"):
        remainder = exp.Mod(this=numerator.copy(), expression=denominator.copy())
        quotient = exp.Div(this=exp.Paren(this=exp.Sub(this=numerator, expression=remainder)),
                           expression=denominator)
    else:
        quotient = exp.IntDiv(this=numerator, expression=denominator)
    return exp.Cast(this=quotient, to=wide)


def _is_infinity(node: exp.Expression) -> bool:
    """``CAST('inf' AS DOUBLE)``: the recursive (c,l) ratio of a class with an empty tail."""
    return isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string \
        and node.this.name == "inf"


def quoted(query: exp.Expression) -> exp.Expression:
    """Every identifier quoted, aliases too: Snowflake upper-cases an unquoted alias (``AS src`` is
    SRC), which a quoted reference (``"src"."age"``) would then miss."""
    for node in query.find_all(exp.Identifier):
        node.set("quoted", True)
    return query


def render(query: exp.Expression, dialect: str) -> str:
    """The SQL text for a warehouse, pretty-printed (a reviewer reads it before running it), in one
    of the dialects whose byte-wise text comparison it spells (``_binary_text``); any other is
    refused, whatever the caller (the CLI's ``--dialect``, the spec, or the Python API)."""
    require_dialect(dialect)
    def spelled(node: exp.Expression) -> exp.Expression:
        if _is_marker(node, BINARY_TEXT):
            return _binary_text(node.expressions[0].copy(), dialect)
        if _is_marker(node, SORT_TEXT):
            return _sort_text(node.expressions[0].copy(), dialect)
        if _is_marker(node, TIE_TEXT):
            return _tie_text(node.expressions[0].copy(), node.expressions[1].this, dialect)
        if _is_marker(node, EXACT_DIV):
            return _exact_div(node.expressions[0].copy(), node.expressions[1].copy(), dialect)
        if dialect == "trino" and _is_infinity(node):  # Trino's cast of text reads 'Infinity', not 'inf'
            return exp.Anonymous(this="INFINITY", expressions=[])
        return node

    # in place: the query was built for this text alone, and a copy of its lookups costs seconds
    query = query.transform(spelled, copy=False)
    if dialect == "snowflake":
        query = query.transform(_nulls_said, copy=False)
    return query.sql(dialect=dialect, pretty=True, copy=False)


def _nulls_said(node: exp.Expression) -> exp.Expression:
    """A Snowflake sort key with its NULLS FIRST or LAST written out: sqlglot leaves out the one that is
    Snowflake's default, but the session's DEFAULT_NULL_ORDERING may change the default, and the
    release's order (NULLs last) with it."""
    if not isinstance(node, exp.Ordered):
        return node
    key = node.this.sql(dialect="snowflake")
    direction = "DESC" if node.args.get("desc") else "ASC"
    return exp.Var(this=f"{key} {direction} NULLS {'FIRST' if node.args.get('nulls_first') else 'LAST'}")


def require_dialect(dialect: str) -> None:
    """Refuse a dialect the warehouse SQL is not written for: sqlglot would render it (MySQL, Oracle,
    ``"duckdb "``), without the byte-wise text comparison that keeps the verification honest under a
    case-insensitive collation (docs/warehouse.md)."""
    if dialect not in WAREHOUSE_DIALECTS:
        raise SpecError(f"the warehouse SQL is written for {', '.join(WAREHOUSE_DIALECTS)}, not {name_shown(dialect)}: "
                        "its text is compared byte for byte in each of those dialects' own way, and in no other")
