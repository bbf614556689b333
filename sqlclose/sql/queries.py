"""Builds every generated query as a sqlglot AST.

User-supplied names enter only through ``ident``/``col``/``table`` (quoted identifiers); user
values only as bound parameters (``Params``). Static shapes come from ``sql/*.sql`` via
``sqltemplates.template``; this module fills them and adds the variable parts (joins).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from sqlclose.model.padded import PaddedCode
from sqlclose.sql.templates import template

if TYPE_CHECKING:
    from sqlclose.model.packing import Packing


def ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def col(name: str, table: str | None = None) -> exp.Column:
    return exp.Column(this=ident(name), table=ident(table) if table else None)


def table(name: str) -> exp.Table:
    return exp.Table(this=ident(name))


def as_text(expr: exp.Expression) -> exp.Expression:
    return _cast(expr, exp.DataType.Type.VARCHAR)


@dataclass
class Params:
    """Positional bound parameters ($1, $2, …) collected while a query is built."""

    values: list[Any] = field(default_factory=list)

    def add(self, value: Any) -> exp.Placeholder:
        self.values.append(value)
        return exp.Placeholder(this=str(len(self.values)))


@dataclass(frozen=True)
class Ties:
    """How a release orders rows that tie on columns given as they are (``sorted_by``).

    ``columns``: those whose values compare equal yet are written differently (-0.0 and 0.0; the
    intervals 1 month and 30 days), ordered by their text too: rows that tie are then identical as
    written, so no input order shows through. ``by_text``: those of ``columns`` the engine cannot
    sort (a MAP on Spark: ``Engine.orders_maps``), ordered by that text alone (``text_of``, the
    engine's ``content_text``: a cast to text wrote two maps alike): still by their content."""

    columns: tuple[str, ...] = ()
    by_text: tuple[str, ...] = ()
    text_of: Callable[[exp.Expression], exp.Expression] | None = None

    def among(self, order: Sequence[str]) -> Ties:
        """These ties, of the columns a release is sorted by (``release_order``) alone."""
        return Ties(tuple(name for name in self.columns if name in order), self.by_text, self.text_of)

    def key(self, name: str) -> exp.Expression:
        """The text a tied column is ordered by."""
        return self.text_of(col(name)) if name in self.by_text and self.text_of else as_text(col(name))


@dataclass(frozen=True)
class CodedColumn:
    """A source column as the search sees it: its raw-histogram column, lookup and code name."""

    name: str  # the user's column name
    raw: str  # its column in the raw histogram
    code: str  # its code column in the base histogram
    lookup: str  # registered lookup table: value (text) -> code
    null_value: str | None = None  # NULLs read as this value (nulls = "value")
    typed: bool = False  # keep the SA typed in the raw histogram (ordered domains)
    # The source column's type when its values' text casts back to them (``Engine.exact_text_type``):
    # its leaves are then matched typed (``typed_leaf``) and its distinct values grouped typed.
    exact_type: exp.DataType | None = None

    @property
    def typed_match(self) -> exp.DataType | None:
        """The type the column's values are matched and grouped in instead of their text, if any: not
        with a NULL stand-in, whose text need not be a value of the type."""
        return self.exact_type if self.null_value is None else None


def raw_histogram(source: exp.Expression, columns: Sequence[CodedColumn], params: Params,
                  counts: str | None = None) -> exp.Expression:
    """Rows counted per combination of the columns' values. ``counts``: the source is itself a
    histogram (the warehouse path's export) whose column of that name says how many rows each of
    its rows stands for: they are summed instead of counted."""
    exprs = _raw_values(columns, params)
    select = template("raw_histogram", source=source, columns=exprs)
    # GROUP BY the expressions, not the aliases: portable to engines without alias grouping.
    select.set("group", exp.Group(expressions=[e.this.copy() for e in exprs]))
    return _counted(select, counts)


def _raw_values(columns: Sequence[CodedColumn], params: Params) -> list[exp.Expression]:
    """Each column's value as the raw histogram holds it, aliased by its raw name: text (the form
    hierarchy leaves are matched in), typed for ordered domains, NULL as its stand-in if any."""
    exprs = []
    for c in columns:
        value: exp.Expression = col(c.name, "src")
        if not c.typed:
            value = as_text(value)
        if c.null_value is not None:
            value = exp.Coalesce(this=value, expressions=[params.add(c.null_value)])
        exprs.append(exp.alias_(value, ident(c.raw)))
    return exprs


def _counted(select: exp.Select, counts: str | None) -> exp.Select:
    """``counts``: the source is a histogram; its last select item (``n``) sums that column."""
    if counts is not None:
        total = _bigint(exp.Sum(this=col(counts, "src")))
        select.expressions[-1].set("this", total)
    return select


def column_values(source: exp.Expression, columns: Sequence[CodedColumn], params: Params,
                  counts: str | None = None) -> exp.Expression:
    """Every column's distinct values, NULL included, with the rows holding each: one GROUP BY per
    column, stacked (``column_values.sql``). A row of column i has ``col`` = i, the value under the
    column's raw name (as ``raw_histogram`` would hold it), NULL under the other raw names, and
    ``n``. What preparation reads before the base histogram — NULL counts, the distinct values of
    rule-built hierarchies and sensitive domains, missing-leaf checks — is this small table, so
    the source's rows are grouped once more only by ``base_histogram``."""
    exprs = _raw_values(columns, params)
    parts = []
    for i, (e, c) in enumerate(zip(exprs, columns)):
        values = [e if j == i else exp.alias_(exp.Null(), ident(other.raw)) for j, other in enumerate(columns)]
        branch_source, branch_counts = source, counts
        if c.typed_match is not None and not c.typed:
            # Grouped typed first, then its few distinct values cast (the cast is one-to-one).
            branch_counts = free_name("__sqlclose_n", [c.name])
            branch_source = _typed_values(source, c.name, counts, branch_counts)
        select = template("column_values", source=branch_source, position=exp.Literal.number(i), columns=values,
                          value=e.this)
        parts.append(_counted(select, branch_counts))
    return parts[0] if len(parts) == 1 else exp.union(*parts, distinct=False)


def _typed_values(source: exp.Expression, name: str, counts: str | None, rows: str) -> exp.Expression:
    """The distinct values of column ``name`` (typed) with the rows holding each, under ``rows``."""
    held = exp.Count(this=exp.Star()) if counts is None else exp.Sum(this=col(counts, "src"))
    return exp.select(col(name, "src").as_(ident(name)), exp.alias_(_bigint(held), ident(rows))) \
        .from_(_as_src(source)).group_by(col(name, "src")).subquery()


def missing_values(values: exp.Expression, c: CodedColumn) -> exp.Expression:
    """A sensitive column's values (from ``column_values``) that its lookup lacks, with their
    rows; the quasi-identifiers' come with their leaf counts (``values_on_leaves``)."""
    value = as_text(col(c.raw, "vals")) if c.typed else col(c.raw, "vals")
    return template("missing_values", values=values, value=value, lookup=table(c.lookup))


def whole_numbers_on_leaves(values: exp.Table, c: CodedColumn, written: bool = False,
                            leaves: str | None = None) -> exp.Expression:
    """Error path only: how many of a column's distinct values (from ``column_values``, as text) the
    leaves lack are whole numbers whose integer text is a leaf: the column holds 29.0 where the
    hierarchy has 29 (a pandas column of whole numbers with a missing one is float64). A float's
    value is read as a number (Spark writes 1.0E7); ``written``: a DECIMAL's or a text's is read as
    written, digits, a point and zeros (``29.00``), its integer text those digits, exactly (a DOUBLE
    holds no 17-digit integer). ``leaves``: the table of the hierarchy's leaves (``value``), by
    default the column's lookup (a sensitive column's holds only the leaves the data holds).
    Counted in SQL over the distinct values; the count names none of them."""
    value = as_text(col(c.raw)) if c.typed else col(c.raw)
    leaves_table = exp.select(col("value")).from_(table(leaves or c.lookup)).subquery()
    missing = exp.not_(exp.In(this=value.copy(), query=leaves_table.copy()))
    if written:
        whole = exp.RegexpLike(this=value.copy(), expression=exp.Literal.string("^-?[0-9]+[.]0+$"))
        integer = exp.RegexpReplace(this=value.copy(), expression=exp.Literal.string("[.]0+$"),
                                    replacement=exp.Literal.string(""))
    else:
        number = exp.TryCast(this=value.copy(), to=exp.DataType.build("DOUBLE"), safe=True)
        as_integer = exp.TryCast(this=number.copy(), to=exp.DataType.build("BIGINT"), safe=True)  # NULL past BIGINT
        whole, integer = exp.EQ(this=number, expression=as_integer.copy()), as_text(as_integer)
    return (exp.select(exp.alias_(_bigint(exp.Count(this=exp.Distinct(expressions=[value.copy()]))), "n"))
            .from_(values.copy())
            .where(exp.and_(is_not_null(value), missing, whole, exp.In(this=integer, query=leaves_table))))


def values_on_leaves(values: exp.Table, columns: Sequence[CodedColumn]) -> exp.Expression:
    """Each quasi-identifier's values (from ``column_values``) on its lookup, in one query: per
    column (``col``, its position) a row per leaf code with the rows holding it (``v`` NULL), and a
    row per value the lookup lacks (``code`` −1, the value in ``v``), most rows first. ``columns``
    are ``column_values``' first columns, in its order (preparation puts the QIs there). What the
    leaf check and the leaf counts each read in a query of their own before: on Spark a query of
    joins costs seconds of stages on any table (docs/performance.md, thirty-fourth round)."""
    branches = []
    for i, c in enumerate(columns):
        value, code = col(c.raw, "vals"), col("code", "lk")
        missing = exp.If(this=exp.Is(this=code.copy(), expression=exp.Null()), true=value.copy(), false=exp.Null())
        lookup = exp.alias_(table(c.lookup), ident("lk"), table=True)
        branches.append(
            exp.select(exp.alias_(exp.Literal.number(i), "col"),
                       exp.alias_(exp.Coalesce(this=code.copy(), expressions=[exp.Literal.number(-1)]), "code"),
                       exp.alias_(missing.copy(), "v"), exp.alias_(_bigint(exp.Sum(this=col("n", "vals"))), "n"))
            .from_(exp.alias_(values.copy(), ident("vals"), table=True))
            .join(lookup, join_type="left", on=exp.EQ(this=col("value", "lk"), expression=value.copy()))
            .where(exp.and_(exp.EQ(this=col("col", "vals"), expression=exp.Literal.number(i)),
                            is_not_null(value)))
            .group_by(code, missing))
    return (exp.select(exp.Star()).from_(_union_all(branches).subquery("found"))
            .order_by(ascending(exp.column("col")), exp.Ordered(this=exp.column("n"), desc=True, nulls_first=False),
                      ascending(exp.column("v")), ascending(exp.column("code"))))


def null_counts(values: exp.Table, columns: Sequence[CodedColumn]) -> exp.Expression:
    """Rows with a NULL, per column, and all rows (``__sqlclose_rows``), from ``column_values``."""
    def rows_of(i: int, condition: exp.Expression | None = None) -> exp.Expression:
        mine = exp.EQ(this=exp.column("col"), expression=exp.Literal.number(i))
        when = mine if condition is None else exp.and_(mine, condition)
        total = exp.Sum(this=exp.If(this=when, true=exp.column("n"), false=exp.Literal.number(0)))
        return _bigint(exp.Coalesce(this=total, expressions=[exp.Literal.number(0)]))

    sums = [exp.alias_(rows_of(i, exp.Is(this=col(c.raw), expression=exp.Null())), ident(c.raw))
            for i, c in enumerate(columns)]
    return exp.select(*sums, exp.alias_(rows_of(0), ident("__sqlclose_rows"))).from_(values.copy())


def base_histogram(source: exp.Expression, columns: Sequence[CodedColumn], params: Params,
                   counts: str | None = None, ranges: Sequence[int] = (),
                   order_by: Sequence[str] = (), grouped: bool = True,
                   looked_up: LookedUp | None = None) -> exp.Expression:
    """The source's rows counted per combination of codes: inner joins to the lookups, so rows with
    a NULL left by ``nulls = "drop"`` fall out here. ``ranges`` (one per column, or none; each
    column's codes are below it) store each code in the narrowest integer type that holds it;
    ``order_by`` (code column names) sorts the rows, so that grouping them meets each group in runs.
    Not ``grouped``: each row as it stands, counting 1 (a combination may then have several rows;
    every reader sums them) — for sources where nearly every row is a combination of its own.
    ``looked_up``: how the engine reads a lookup without a join, if it can (``join_lookup``)."""
    codes = [col("code", f"lk_{c.code}") for c in columns]
    select = template("base_histogram", source=source, codes=codes)
    if not grouped:
        if counts is not None:
            raise ValueError("a counted source (a histogram) is always grouped")
        select.set("group", None)
        select.expressions[-1].set("this", _bigint(exp.Literal.number(1)))
    typed = [_narrowest(code, r) for code, r in zip(codes, ranges, strict=True)] if ranges else codes
    select.set("expressions", [exp.alias_(c, ident(cc.code)) for c, cc in zip(typed, columns)]
               + [select.expressions[-1]])
    select = _counted(_join_lookups(select, columns, params, looked_up=looked_up), counts)
    return select.order_by(*[ascending(col(name)) for name in order_by]) if order_by else select


def estimated_combinations(source: exp.Expression, names: Sequence[str]) -> exp.Expression:
    """One row (``combinations``): the distinct combinations of the columns ``names`` among the
    source's rows, estimated by HyperLogLog (``estimated_combinations.sql``)."""
    return template("estimated_combinations", source=source,
                    row=exp.Tuple(expressions=[col(name, "src") for name in names]))


def _narrowest(code: exp.Expression, below: int) -> exp.Expression:
    """A code as the narrowest signed integer type holding 0 … ``below`` - 1 (signed: every engine
    has them). Arithmetic on such a column must widen it first (``_bigint``): a narrow type
    multiplied by a literal stays narrow and overflows."""
    for limit, kind in ((2**7, exp.DataType.Type.TINYINT), (2**15, exp.DataType.Type.SMALLINT),
                        (2**31, exp.DataType.Type.INT)):
        if below <= limit:
            return _cast(code, kind)
    return _bigint(code)


def node_histogram(source: exp.Expression, groups: Sequence[tuple[str, int | None]],
                   extra: Sequence[str], ordered: bool = False) -> exp.Expression:
    """Class histograms of a node: ``groups`` are (code column, divisor from the source's level);
    divisor None: the column is at its top, code 0 for every row, and not grouped by (at 10 M rows
    a node with five of seven QIs at the top took 0.23 s grouped by all seven, ~0.11 s by two).
    ``ordered``: rows by class codes, then sensitive codes, sorted by the engine (a released node's
    ~1 M cells were sorted in Python at ~72 bytes a cell: ``model/classes.class_histograms``)."""
    exprs: list[exp.Expression] = []
    keys: list[exp.Expression] = []
    for name, divisor in groups:
        if divisor is None:
            exprs.append(exp.alias_(exp.Literal.number(0), ident(name)))
            continue
        value = col(name) if divisor == 1 else exp.IntDiv(this=col(name), expression=exp.Literal.number(divisor))
        exprs.append(value if divisor == 1 else exp.alias_(value, ident(name)))
        keys.append(value.copy())
    for name in extra:
        exprs.append(col(name))
        keys.append(col(name))
    select = template("node_histogram", input=source, groups=exprs)
    select.set("group", exp.Group(expressions=keys) if keys else None)  # no keys: one class, the whole table
    return select.order_by(*(k.copy() for k in keys)) if ordered and keys else select


def distribution(source: exp.Expression, value: exp.Expression) -> exp.Expression:
    return template("distribution", input=source, value=value)


FINGERPRINT_ROW = "__sqlclose_row"  # the alias fingerprint.sql gives the source, unless a column has it


def free_name(stem: str, taken: Iterable[str]) -> str:
    """``stem``, or ``stem`` with a number, so that no name of ``taken`` is it (in any case, as SQL
    reads names): a name of sqlclose's own queries beside the user's columns. A column named like
    it made a reference bind to the column (review rv26)."""
    folded = {name.casefold() for name in taken}
    name, i = stem, 0
    while name.casefold() in folded:
        i += 1
        name = f"{stem}_{i}"
    return name


def fingerprint_row(columns: Iterable[str]) -> str:
    """The source's alias in ``fingerprint``, which ``row_hash`` reads as the whole row: a column of
    that name (``__sqlclose_row``) was read instead, and the fingerprint held that column alone."""
    return free_name(FINGERPRINT_ROW, columns)


def fingerprint(source: exp.Expression, row_hash: exp.Expression, row: str = FINGERPRINT_ROW) -> exp.Expression:
    """The input's keyed text digest (the report's fingerprint on Spark); ``row_hash`` is the engine's
    keyed hash of ``row``, the source's alias (``Engine.row_hash``, with the secret as a bound
    parameter, never in SQL text)."""
    return template("fingerprint", renamed={FINGERPRINT_ROW: row}, source=source, row_hash=row_hash)


AUDIT_CLASS, AUDIT_VALUE, AUDIT_COUNT = "__sqlclose_cls", "__sqlclose_v", "__sqlclose_n"


def audit_qi_name(i: int) -> str:
    """The name ``audit_classes`` gives the ``i``-th quasi-identifier's values."""
    return f"__sqlclose_q{i}"


def audit_classes(relation: exp.Expression, qi: Sequence[str], sensitive: str | None) -> exp.Expression:
    """Per (class, sensitive value as text) counts of a table as it is, with each class's number and
    QI values, in class order; no SA: one row per class."""
    sa = as_text(col(sensitive)) if sensitive else as_text(exp.Null())  # a number would be a position
    named = [exp.alias_(col(c), audit_qi_name(i), quoted=True) for i, c in enumerate(qi)]
    return template("audit_classes", release=relation, qi=[col(c) for c in qi], named=named,
                    keys=[col(audit_qi_name(i)) for i in range(len(qi))], sensitive=sa)


def class_range(counted: exp.Table) -> exp.Expression:
    """The (class, value, count) rows of ``audit_classes`` kept in ``counted``, of the classes
    numbered from the first parameter up to (not including) the second."""
    number = col(AUDIT_CLASS)
    within = exp.and_(exp.GTE(this=number, expression=exp.Placeholder(this="1")),
                      exp.LT(this=number.copy(), expression=exp.Placeholder(this="2")))
    return exp.select(number.copy(), col(AUDIT_VALUE), col(AUDIT_COUNT)).from_(counted.copy()).where(within)


def class_totals(counted: exp.Table) -> exp.Expression:
    """Classes, records and rows of an ``audit_classes`` table (columns ``classes``, ``records``,
    ``pairs``)."""
    zero = exp.Literal.number(0)
    classes = exp.Coalesce(this=exp.Max(this=col(AUDIT_CLASS)) + 1, expressions=[zero])
    records = exp.Coalesce(this=exp.Sum(this=col(AUDIT_COUNT)), expressions=[zero.copy()])
    return exp.select(exp.alias_(classes, "classes"), exp.alias_(records, "records"),
                      exp.alias_(exp.Count(this=exp.Star()), "pairs")).from_(counted.copy())


def labels_of_classes(counted: exp.Table, qis: int, classes: Sequence[int],
                      as_text_at: Iterable[int] = ()) -> exp.Expression:
    """The QI values of the given classes (numbers the caller computed) of an ``audit_classes`` table,
    those at positions ``as_text_at`` as the engine's text (named as the others)."""
    texts = set(as_text_at)
    keys = [exp.alias_(as_text(col(audit_qi_name(i))), audit_qi_name(i), quoted=True) if i in texts
            else col(audit_qi_name(i)) for i in range(qis)]
    wanted = exp.In(this=col(AUDIT_CLASS), expressions=[exp.Literal.number(int(c)) for c in classes])
    return exp.select(col(AUDIT_CLASS), *keys).distinct().from_(counted.copy()).where(wanted)


def not_null(columns: Sequence[str]) -> exp.Expression | None:
    if not columns:
        return None
    return exp.and_(*[is_not_null(col(c, "src")) for c in columns])


def is_not_null(e: exp.Expression) -> exp.Expression:
    return exp.Not(this=exp.Is(this=e, expression=exp.Null()))


@dataclass(frozen=True)
class ReleasedQI:
    """How one quasi-identifier appears in a release: its level and lookup."""

    coded: CodedColumn
    level: int
    divisor: int  # leaf code // divisor = class code at this level
    top: str | None = None  # at the hierarchy's top: the one label every value has there (no lookup needed)
    dictionary: exp.DataType | None = None  # the labels' type where not text (Engine.dictionary_type)
    typed: exp.Table | None = None  # below the top, with a dictionary: its lookup so typed (``typed_labels``)


def given_as_is(value: exp.Expression) -> exp.Expression:
    """A released column given as it is (a QI at level 0, a sensitive or other column), its value
    unchanged, written optional whatever the rows hold. DuckDB's Parquet writer makes a column
    required where the planner's statistics rule NULLs out: the file's schema then told whether
    the input, its suppressed rows included, held a NULL there, and changed from one night's data
    to the next (a Parquet source's statistics, a CSV table's). The planner does not see through
    this CASE."""
    return exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null())],
                    default=value)


Rewrite = Callable[[exp.Expression], exp.Expression]


def canonical_nan(value: exp.Expression, kind: exp.DataType, nan: Rewrite,
                  signed: Rewrite | None) -> exp.Expression:
    """A float ``value`` of type ``kind`` with a NaN written as the quiet NaN of its sign, no payload
    (``nan``, ``signed``: the engine's tests, ``Engine.is_nan`` and ``has_minus_sign``), or, with
    ``signed`` None, as the quiet NaN without its sign. NaNs that differ only in their payload
    compare, hash, group and read as text alike in SQL, so nothing sorts them apart; written with
    their own bits, they kept two tied rows in the input's order in the file (rv9 #3). The re-check
    compares as SQL does, NaN equal to NaN."""
    quiet = exp.Cast(this=exp.Literal.string("NaN"), to=kind.copy())
    of_sign = quiet if signed is None else \
        exp.Case(ifs=[exp.If(this=signed(value), true=exp.Neg(this=quiet))], default=quiet.copy())
    return exp.Case(ifs=[exp.If(this=nan(value), true=of_sign)], default=value.copy())


def _given(name: str, rewrites: Mapping[str, Rewrite]) -> exp.Expression:
    """A source column given as it is, rewritten where ``rewrites`` says (``canonical_nan``)."""
    value = col(name, "src")
    return given_as_is(rewrites[name](value) if name in rewrites else value)


def release(source: exp.Expression, columns: Sequence[str], qis: Sequence[ReleasedQI], suppressed: exp.Table | None,
            params: Params, passed: Mapping[str, exp.Table] | None = None, ties: Ties = Ties(),
            rewrites: Mapping[str, Rewrite] | None = None, key: exp.Expression | None = None,
            held: Collection[str] = (), looked_up: LookedUp | None = None) -> exp.Expression:
    """The released table: ``columns`` (generalized QI labels, the others as they are:
    ``given_as_is``), failing classes removed, rows sorted by their own released values —
    generalized QIs first, then the rest — so that the order says nothing about the input's order.
    A QI at its top is one label for every row: it joins no lookup, tells no class apart and sorts
    nothing. ``passed``: columns given as they are in their dictionary types (``Engine.dictionary_type``),
    each with its lookup (``passed_lookup``: value as text → code, the value in its type), joined on the
    row's value (a LEFT JOIN: a NULL stays NULL), so that each value is cast once, not once per row.
    ``ties``: how rows that tie on columns given as they are are ordered (``Ties``); ``rewrites``:
    columns given as they are, each with how its value is written (``canonical_nan``); ``key``: a
    key sorted by before the values that orders as they do (``Engine.packed_sort_key``), ``held``:
    the columns it holds whole. ``looked_up``: how the engine reads a lookup without a join, if it can
    (``join_lookup``)."""
    by_name = {r.coded.name: r for r in qis}
    passed = passed or {}
    select_list: list[exp.Expression] = []
    for name in columns:
        r = by_name.get(name)
        if name in passed:
            select_list.append(exp.alias_(given_as_is(col("code", _passed_alias(columns, name))), ident(name)))
        elif r is None or r.level == 0:
            select_list.append(exp.alias_(_given(name, rewrites or {}), ident(name)))
        elif r.top is not None:
            select_list.append(exp.alias_(labelled(params.add(r.top), r.dictionary), ident(name)))
        else:
            select_list.append(exp.alias_(col(f"label_{r.level}", _lk(r)), ident(name)))
    classes, codes = _class_codes(qis)
    relabelled = {r.coded.code: r.typed for r in classes if r.typed is not None}
    select = _join_lookups(exp.select(*select_list).from_(_as_src(source)), [r.coded for r in classes], params,
                           relabelled, looked_up)
    for name, lookup in passed.items():
        alias = _passed_alias(columns, name)
        select = select.join(exp.alias_(lookup.copy(), ident(alias), table=True),
                             on=exp.EQ(this=col("value", alias), expression=col(name, "src")), join_type="left")
    if suppressed is not None:
        select = without_suppressed(select, suppressed, codes)
    return _sorted_release(select, columns, released_order(columns, qis), ties, key, held)


def passed_values(source: exp.Expression, names: Sequence[str], counted: bool = False) -> exp.Expression:
    """Text columns' values among the source's rows, in one statement: per column ``names[i]`` its
    values (``v``, NULL among them, if any) with ``col = i``, and if ``counted`` their rows (``n``).
    Spellings cannot group together: a source's text is compared byte by byte
    (``DuckDBEngine.compared_as_bytes``) and a connection with a default collation is refused; were
    one written otherwise, the re-check's truth test would refuse the release. At 1 M rows five
    columns took 0.023 s of CPU in one statement against 0.121 s one by one, each with a per-row
    check of its spellings (docs/performance.md, fifty-third round)."""
    rows = [exp.alias_(exp.Count(this=exp.Star()), "n")] if counted else []
    branches = [exp.select(exp.alias_(exp.Literal.number(i), "col"), exp.alias_(col(name, "src"), "v"), *rows)
                .from_(_as_src(source)).group_by(col(name, "src")) for i, name in enumerate(names)]
    return branches[0] if len(branches) == 1 else exp.union(*branches, distinct=False)


def kept_values(source: exp.Expression, names: Sequence[str], qis: Sequence[ReleasedQI], suppressed: exp.Table,
                params: Params, looked_up: LookedUp | None = None) -> exp.Expression:
    """``passed_values`` of the rows a release keeps: the source's rows whose class at the released
    levels (``qis``) is no failing class (a row of ``suppressed``). A value is kept where the rows
    holding it outnumber those of them in failing classes: every row's values counted as
    ``passed_values`` counts them, less the rows of failing classes, joined and grouped by each
    column in one pass (``GROUPING SETS``, the set of column i marked by ``GROUPING``). Those are
    few, and the join keeps only them; grouping the kept rows instead put every row in the sets'
    hash tables: at 10 M rows with 981 rows suppressed 0.19 s, against 0.12 s so
    (docs/performance.md, eighty-second round)."""
    rows, codes = _classed_rows(source, names, qis, params, looked_up)
    dropped = only_suppressed(rows, suppressed, codes)
    match = exp.and_(exp.EQ(this=col("col", "d"), expression=col("col", "a")),
                     exp.NullSafeEQ(this=col("v", "d"), expression=col("v", "a")))
    held = exp.GT(this=col("n", "a"), expression=exp.Coalesce(this=col("n", "d"), expressions=[exp.Literal.number(0)]))
    return exp.select(col("col", "a"), col("v", "a")).from_(passed_values(source, names, counted=True).subquery("a")) \
        .join(_counted_by_each(dropped.subquery("dropped"), names).subquery("d"), on=match, join_type="left") \
        .where(held)


def _counted_by_each(rows: exp.Expression, names: Sequence[str]) -> exp.Select:
    """``rows`` grouped by each column ``names[i]`` in one pass (``GROUPING SETS``, the set of
    column i marked by ``GROUPING``): its values (``v``) with ``col = i``, and their rows (``n``)."""
    grouped = [exp.EQ(this=exp.Grouping(expressions=[col(name)]), expression=exp.Literal.number(0)) for name in names]
    which = exp.Case(ifs=[exp.If(this=g, true=exp.Literal.number(i)) for i, g in enumerate(grouped)])
    value = exp.Case(ifs=[exp.If(this=g.copy(), true=col(name)) for g, name in zip(grouped, names)])
    sets = [exp.Paren(this=col(name)) for name in names]
    return exp.select(exp.alias_(which, "col"), exp.alias_(value, "v"), exp.alias_(exp.Count(this=exp.Star()), "n")) \
        .from_(rows).group_by(exp.GroupingSets(expressions=sets), copy=False)


def estimated_values(source: exp.Expression, names: Sequence[str], counted: bool = False) -> exp.Select:
    """One row: per column ``names[i]``, its distinct values estimated by HyperLogLog (``e<i>``),
    and if ``counted`` the rows (``rows``)."""
    estimates = [exp.alias_(exp.ApproxDistinct(this=col(name, "src")), f"e{i}") for i, name in enumerate(names)]
    rows = [exp.alias_(exp.Count(this=exp.Star()), "rows")] if counted else []
    return exp.select(*estimates, *rows).from_(_as_src(source))


def kept_rows(source: exp.Expression, names: Sequence[str], qis: Sequence[ReleasedQI], suppressed: exp.Table,
              params: Params, looked_up: LookedUp | None = None) -> exp.Select:
    """The columns ``names`` of the source's rows a release keeps: those whose class at the
    released levels (``qis``) is no failing class (a row of ``suppressed``), by the anti-join the
    release uses."""
    rows, codes = _classed_rows(source, names, qis, params, looked_up)
    return without_suppressed(rows, suppressed, codes)


def _classed_rows(source: exp.Expression, names: Sequence[str], qis: Sequence[ReleasedQI], params: Params,
                  looked_up: LookedUp | None = None) -> tuple[exp.Select, list[tuple[str, exp.Expression]]]:
    """The source's rows as their columns ``names`` (a constant without any), joined to the
    lookups of the QIs below their tops, and each row's class codes at the released levels
    (``_class_codes``), which ``without_suppressed`` and ``only_suppressed`` match."""
    classes, codes = _class_codes(qis)
    rows = exp.select(*[exp.alias_(col(name, "src"), ident(name)) for name in names] or [exp.Literal.number(1)]) \
        .from_(_as_src(source))
    return _join_lookups(rows, [r.coded for r in classes], params, looked_up=looked_up), codes


def _class_codes(qis: Sequence[ReleasedQI]) -> tuple[list[ReleasedQI], list[tuple[str, exp.Expression]]]:
    """The QIs below their tops (a QI at its top tells no class apart), and per QI its lookup's code
    column with the row's class code at its released level."""
    classes = [r for r in qis if r.top is None]
    return classes, [(r.coded.code, _class_code(r)) for r in classes]


def held_value_counts(values: exp.Table, columns: Sequence[CodedColumn]) -> exp.Select:
    """One row: per column ``columns[i]``, the non-NULL values rows hold (``c<i>``), read from
    ``column_values`` (each of its rows holds one column's value, NULL under the others)."""
    held = exp.GT(this=col("n"), expression=exp.Literal.number(0))  # a counted histogram may hold zeros
    counts = [exp.alias_(exp.Count(this=col(c.raw)), f"c{i}") for i, c in enumerate(columns)]
    return exp.select(*counts).from_(values.copy()).where(held)


def distinct_counts(queries: Sequence[exp.Select]) -> exp.Select:
    """One row: per query ``queries[i]`` (a column ``v``), its distinct non-NULL values (``c<i>``)."""
    counts = [exp.alias_(exp.Subquery(this=exp.select(exp.Count(this=exp.Distinct(expressions=[col("v")])))
                                      .from_(query.subquery(f"m{i}"))), f"c{i}")
              for i, query in enumerate(queries)]
    return exp.select(*counts)


def passed_value_counts(values: exp.Table) -> exp.Select:
    """Per column of ``passed_values`` (``col``), its distinct non-NULL values."""
    return exp.select(col("col"), exp.alias_(exp.Count(this=col("v")), "distinct_values")) \
        .from_(values.copy()).group_by(col("col"))


def _passed_of(values: exp.Table, column: int) -> exp.Expression:
    """Column ``column``'s non-NULL values in ``passed_values``."""
    return exp.and_(exp.EQ(this=col("col"), expression=exp.Literal.number(column)), is_not_null(col("v")))


def passed_lookup(values: exp.Table, column: int, kind: exp.DataType) -> exp.Select:
    """Column ``column``'s non-NULL values in ``passed_values`` (``value``), each with itself in its
    dictionary type (``code``)."""
    return exp.select(exp.alias_(col("v"), "value"), exp.alias_(exp.Cast(this=col("v"), to=kind.copy()), "code")) \
        .from_(values.copy()).where(_passed_of(values, column))


def passed_members(values: exp.Table, column: int) -> exp.Select:
    """Column ``column``'s non-NULL values in ``passed_values`` (``v``): its dictionary's members."""
    return exp.select(col("v")).from_(values.copy()).where(_passed_of(values, column))


def _passed_alias(columns: Sequence[str], name: str) -> str:
    """A passed-through column's lookup alias, by its place among the columns (a user's name is
    never an alias)."""
    return f"dict_{list(columns).index(name)}"


def without_suppressed(select: exp.Select, suppressed: exp.Table,
                       codes: Sequence[tuple[str, exp.Expression]]) -> exp.Select:
    """``select`` without its rows of a failing class (a row of ``suppressed``): ``codes`` pairs each of
    the table's code columns with the row's code. An anti-join: a LEFT JOIN on the codes, keeping the
    rows that met no failing class (the table's column is NULL only there: a match compared it equal).
    Written as NOT EXISTS, DuckDB decorrelated it by grouping the rows by their codes (924 k groups at
    1 M rows) and joining them back: the 1 M release's COPY took 0.55–0.60 s, against 0.46–0.50 s so
    (docs/performance.md, seventy-seventh round). A QI at its top has one class code, which every
    failing class has: it is left out; with none left, every row is of the one class, failing or not."""
    supp, match = _failing_classes(suppressed, codes)
    if match is None:
        return select.where(exp.Not(this=exp.Exists(this=exp.select(exp.Literal.number(1)).from_(supp))))
    unmatched = exp.Is(this=col(codes[0][0], "supp"), expression=exp.Null())
    return select.join(supp, on=match, join_type="left").where(unmatched)


def only_suppressed(select: exp.Select, suppressed: exp.Table,
                    codes: Sequence[tuple[str, exp.Expression]]) -> exp.Select:
    """``select``'s rows of a failing class (a row of ``suppressed``), ``without_suppressed``'s
    complement: an inner join on the codes; with no code (every QI at its top), every row when a
    class fails."""
    supp, match = _failing_classes(suppressed, codes)
    if match is None:
        return select.where(exp.Exists(this=exp.select(exp.Literal.number(1)).from_(supp)))
    return select.join(supp, on=match)


def _failing_classes(suppressed: exp.Table,
                     codes: Sequence[tuple[str, exp.Expression]]) -> tuple[exp.Expression, exp.Expression | None]:
    """``suppressed`` as ``supp``, and the match of a row's ``codes`` with its code columns (None
    without codes)."""
    supp = exp.alias_(suppressed.copy(), ident("supp"), table=True)
    if not codes:
        return supp, None
    return supp, exp.and_(*[exp.EQ(this=col(name, "supp"), expression=code) for name, code in codes])


def release_mapped(source: exp.Expression, columns: Sequence[str], qis: Sequence[CodedColumn], mapping: exp.Table,
                   params: Params, ties: Ties = Ties(), rewrites: Mapping[str, Rewrite] | None = None,
                   looked_up: LookedUp | None = None) -> exp.Expression:
    """A multidimensional release (GAA): each row's QI leaf codes looked up, then its generalized
    labels read from ``mapping`` (one row per leaf-code combination: columns named by the QIs'
    code columns, and ``<code>_label``). Every QI column is text: its labels sit at several levels."""
    by_name = {c.name: c for c in qis}
    select_list = [exp.alias_(col(f"{by_name[name].code}_label", "map"), ident(name)) if name in by_name
                   else exp.alias_(_given(name, rewrites or {}), ident(name)) for name in columns]
    select = _join_lookups(exp.select(*select_list).from_(_as_src(source)), qis, params, looked_up=looked_up)
    match = exp.and_(*[exp.EQ(this=col(c.code, "map"), expression=col("code", f"lk_{c.code}")) for c in qis])
    select = select.join(exp.alias_(mapping.copy(), ident("map"), table=True), on=match)
    return _sorted_release(select, columns, release_order(columns, list(by_name)), ties)


def _as_src(source: exp.Expression) -> exp.Expression:
    return exp.alias_(source.copy(), ident("src"), table=True) if isinstance(source, exp.Table) else \
        source.copy().as_("src")


# How an engine reads a lookup's columns without joining it (``Engine.looked_up``): select, lookup,
# alias, leaf column, key, bind, outer -> the select, or None to join it.
LookedUp = Callable[[exp.Select, exp.Expression, str, str, Callable[[], exp.Expression],
                     Callable[[Any], exp.Expression], bool], exp.Select | None]


def join_lookup(select: exp.Select, lookup: exp.Expression, alias: str, leaf: str,
                on: Callable[[], exp.Expression], key: Callable[[], exp.Expression],
                bind: Callable[[Any], exp.Expression], outer: bool = False,
                looked_up: LookedUp | None = None, copy: bool = True) -> exp.Select:
    """``select`` with a lookup (a table, or a SELECT over one) readable under ``alias``, matched on
    its ``leaf`` column: joined on ``on`` (an inner join, or LEFT if ``outer``), unless the engine reads
    it without a join (``looked_up``, ``Engine.looked_up``: Spark's maps), by ``key``, the row's value
    as the text a leaf is. ``on`` and ``key`` are made only if used: each may bind a parameter.
    ``copy``: as sqlglot's (False: the caller owns ``select``)."""
    if looked_up is not None:
        done = looked_up(select, lookup, alias, leaf, key, bind, outer)
        if done is not None:
            return done
    relation = exp.alias_(lookup.copy(), ident(alias), table=True) if isinstance(lookup, exp.Table) \
        else lookup.subquery(alias, copy=copy)
    return select.join(relation, on=on(), join_type="left" if outer else None, copy=copy)


def _join_lookups(select: exp.Select, coded: Sequence[CodedColumn], params: Params,
                  relabelled: Mapping[str, exp.Table] | None = None,
                  looked_up: LookedUp | None = None) -> exp.Select:
    """Each QI's lookup (value as text → code and labels), joined on the row's value (NULL as its
    stand-in); ``relabelled``: by code column, the lookup with its released level's labels in
    their dictionary type (``typed_labels``) to join instead; ``looked_up``: as ``join_lookup``."""
    for c in coded:
        lookup = relabelled[c.code] if relabelled and c.code in relabelled else table(c.lookup)
        alias = f"lk_{c.code}"
        select = join_lookup(select, lookup, alias, "value",
                             lambda c=c, alias=alias: leaf_match(col("value", alias), c, params),
                             lambda c=c: leaf_text(col(c.name, "src"), c.null_value, params.add),
                             params.add, looked_up=looked_up)
    return select


def leaf_match(leaf: exp.Expression, c: CodedColumn, params: Params) -> exp.Expression:
    """A lookup's leaf text (``leaf``) is the source row's value of column ``c``: the value's text
    equals it (NULL as its stand-in), or, for a column of a type whose text casts back
    (``typed_match``), the leaf cast to that type equals the value, which matches the same rows
    without casting each row's value to text."""
    value = col(c.name, "src")
    if c.typed_match is not None:
        return exp.EQ(this=typed_leaf(leaf, c.typed_match), expression=value)
    return exp.EQ(this=leaf, expression=leaf_text(value, c.null_value, params.add))


def leaf_text(value: exp.Expression, null_value: str | None, bind: Callable[[Any], exp.Expression]) -> exp.Expression:
    """A row's value as the text a lookup's leaf is: its text, a NULL as its stand-in if any. A typed
    match (``typed_leaf``) meets the same leaves: a value's text is a leaf exactly when the leaf cast
    to the value's type is the value."""
    text = as_text(value)
    return text if null_value is None else exp.Coalesce(this=text, expressions=[bind(null_value)])


def typed_leaf(leaf: exp.Expression, kind: exp.DataType) -> exp.Expression:
    """A leaf's text as a value of ``kind``, NULL unless that value's text is the leaf's. For a type
    whose values' text casts back to them, it equals a value exactly when the value's text equals
    the leaf: a value's text is a leaf ⇒ the leaf casts to the value, whose text it is; the leaf
    cast equals the value ⇒ the value's text is the cast's, the leaf. ('07' is no integer's text: NULL.)"""
    value = exp.TryCast(this=leaf.copy(), to=kind.copy(), safe=True)  # safe: TRY_CAST on Spark too, not CAST
    return exp.Case(ifs=[exp.If(this=exp.EQ(this=as_text(value.copy()), expression=leaf.copy()), true=value)])


def labelled(label: exp.Expression, dictionary: exp.DataType | None) -> exp.Expression:
    """A label as text, or as its dictionary type when it has one."""
    return as_text(label) if dictionary is None else exp.Cast(this=label, to=dictionary.copy())


def class_labels(lookup: str, level: int, divisor: int, dictionary: exp.DataType | None = None) -> exp.Select:
    """``code`` → ``value`` from a QI's lookup: each class's label at ``level`` (leaf code //
    ``divisor``); in its dictionary type when given, the labels that are no member left out
    (``is_member``)."""
    code: exp.Expression = col("code")
    if divisor != 1:
        code = exp.IntDiv(this=code, expression=exp.Literal.number(divisor))
    label: exp.Expression = col(f"label_{level}")
    if dictionary is None:
        return exp.select(exp.alias_(code, "code"), exp.alias_(label, "value")).distinct().from_(table(lookup))
    return exp.select(exp.alias_(code, "code"), exp.alias_(in_dictionary(label, dictionary), "value")).distinct() \
        .from_(table(lookup)).where(is_member(label, dictionary))


def in_dictionary(value: exp.Expression, dictionary: exp.DataType) -> exp.Expression:
    """A lookup row's text in its column's dictionary type, NULL when the type has no such member.
    The members are the values the release holds (``prepare/release_query.released_dictionaries``):
    a lookup row without one belongs to no released row, only to suppressed ones or to none, and
    the written file is re-checked against the source's rows."""
    return exp.TryCast(this=value, to=dictionary.copy())


def typed_labels(lookup: str, level: int, dictionary: exp.DataType) -> exp.Select:
    """A QI's lookup (``code``, ``value``) with its labels at ``level`` in their dictionary type,
    the rows whose label is no member left out (``is_member``)."""
    label = col(f"label_{level}")
    typed = exp.alias_(in_dictionary(label, dictionary), ident(f"label_{level}"))
    return exp.select(col("code"), col("value"), typed).from_(table(lookup)).where(is_member(label, dictionary))


def is_member(text: exp.Expression, dictionary: exp.DataType) -> exp.Expression:
    """A lookup row's text is a member of its dictionary type, or NULL (which stays NULL). Kept as
    a table with only such rows (release_query), a typed column holds a NULL exactly where the
    text does, and the engine knows it: a Parquet write is as required or optional as the text
    release's, where a cast that may give NULL, joined as a query, made every such column optional
    (DuckDB's writer reads the plan's statistics)."""
    return exp.or_(exp.Is(this=text.copy(), expression=exp.Null()),
                   is_not_null(in_dictionary(text.copy(), dictionary)))


def release_order(columns: Sequence[str], qi_names: Sequence[str], constant: Sequence[str] = ()) -> list[str]:
    """The released columns a release is sorted by, in turn: its quasi-identifiers, then the rest;
    not those in ``constant`` (QIs at their top), whose one value orders nothing."""
    order = [name for name in qi_names if name in columns] + [name for name in columns if name not in qi_names]
    return [name for name in order if name not in constant]


def released_order(columns: Sequence[str], qis: Sequence[ReleasedQI]) -> list[str]:
    """``release_order`` of a release read from the rows (``release``), its QIs as released: the
    columns its ORDER BY, and a key sorted by before them (``Engine.packed_sort_key``), follow."""
    return release_order(columns, [r.coded.name for r in qis], [r.coded.name for r in qis if r.top is not None])


def _sorted_release(select: exp.Select, columns: Sequence[str], order: Sequence[str], ties: Ties = Ties(),
                    key: exp.Expression | None = None, held: Collection[str] = ()) -> exp.Expression:
    """Rows sorted by their released values in ``order`` (``release_order``), QIs first: the order
    reveals nothing of the input's."""
    return sorted_by(exp.select(*[col(name) for name in columns]).from_(select.subquery(ident("released"))), order,
                     ties.among(order), key, held)


def sorted_by(select: exp.Select, order: Sequence[str], ties: Ties = Ties(),
              key: exp.Expression | None = None, held: Collection[str] = ()) -> exp.Select:
    """``select`` ordered by the columns ``order``, NULLs last; with none (every column constant), as it is.
    ``ties``: columns of ``order`` ordered by their text too, or by it alone (``Ties``). ``key``: an
    expression of the columns sorted by first, one that orders rows as those columns do (or ties
    them): it may speed the sort, never change its order; ``held``: the columns it holds whole,
    on which rows of equal keys tie: not compared again."""
    by_value = sorted_columns(order, ties)
    by_text = [ascending(ties.key(name)) for name in ties.columns]
    if key is None or not by_value + by_text:
        keys = [ascending(col(name)) for name in by_value] + by_text
    else:
        keys = [ascending(key)] + [ascending(col(name)) for name in by_value if name not in held] + by_text
    return select.order_by(*keys) if keys else select


def sorted_columns(order: Sequence[str], ties: Ties = Ties()) -> list[str]:
    """The columns ``sorted_by`` sorts by as they are, in turn (those of ``ties.by_text`` by their text, after)."""
    return [name for name in order if name not in ties.by_text]


def _class_code(r: ReleasedQI) -> exp.Expression:
    """A row's class code at the released level; divisor 1 (a lookup holding codes at that level,
    as the warehouse path's does) needs no division, which some dialects render as float arithmetic."""
    code = col("code", _lk(r))
    return code if r.divisor == 1 else exp.IntDiv(this=code, expression=exp.Literal.number(r.divisor))


def _lk(r: ReleasedQI) -> str:
    return f"lk_{r.coded.code}"


def rollup_batch(prev: exp.Table, plan: exp.Table, words: int = 1) -> exp.Expression:
    """A lattice level rolled up from the previous one: each child's key words are its parent's
    under the child's masks (plan columns ``m0``, ``m1``, …; ``model.packing``)."""
    select = template("rollup_batch", prev=prev, plan=plan)
    if words == 1:
        return select
    return _with_keys(select, [_plan_masked(col(key_name(w), "prev"), w) for w in range(words)])


def _plan_masked(key: exp.Expression, word: int) -> exp.Expression:
    return exp.BitwiseAnd(this=key, expression=col(f"m{word}", "plan"))


def rows_per_node(source: exp.Table) -> exp.Expression:
    """Rows per node id of ``source``, for the ids from the first parameter on (the newest of a
    table kept in the order its ids were made: the scan skips the older row groups)."""
    return (exp.select(col("node"), exp.Count(this=exp.Star()).as_("rows")).from_(source)
            .where(exp.GTE(this=col("node"), expression=exp.Placeholder(this="1"))).group_by(col("node")))


def present_codes(values: exp.Table, c: CodedColumn, divisor: int = 1) -> exp.Select:
    """The codes (leaf code // ``divisor``) of the values a column's rows hold, read from
    ``column_values``, under the column's code name: what a node's classes hold of it when none is
    suppressed."""
    value = as_text(col(c.raw, "vals")) if c.typed else col(c.raw, "vals")
    code: exp.Expression = col("code", "lk")
    if divisor != 1:
        code = exp.IntDiv(this=code, expression=exp.Literal.number(divisor))
    held = exp.GT(this=col("n", "vals"), expression=exp.Literal.number(0))  # a counted histogram may hold zeros
    lookup = exp.alias_(table(c.lookup), ident("lk"), table=True)
    return (exp.select(exp.alias_(code, ident(c.code))).distinct()
            .from_(exp.alias_(values.copy(), ident("vals"), table=True))
            .join(lookup, on=exp.EQ(this=col("value", "lk"), expression=value))
            .where(held))


def class_sizes(level: exp.Table, words: int, span: int) -> exp.Expression:
    """Per class of a kept level: its records (size) and its (class, sensitive value) rows (pairs)."""
    higher = _higher_words(words)
    return template("class_sizes", level=level, span=exp.Literal.number(span), higher=[col(h, "lv") for h in higher],
                    higher_out=[exp.alias_(col(h, "lv"), h) for h in higher])


def level_summary(sizes: exp.Table, k: int) -> exp.Expression:
    """Per node of a kept level, from ``class_sizes``: (class, sensitive value) rows, records in
    classes below k, and the classes of at least k with their rows."""
    return template("level_summary", sizes=sizes, k=exp.Literal.number(k))


def large_classes(sizes: exp.Table, running: exp.Table, words: int, k: int) -> exp.Expression:
    """A kept level's classes (from ``class_sizes``) of at least k records, of the nodes in
    ``running``, numbered."""
    higher = _higher_words(words)
    return template("large_classes", sizes=sizes, running=running, k=exp.Literal.number(k),
                    higher=[col(h, "c") for h in higher], higher_out=[exp.alias_(col(h, "c"), h) for h in higher])


def class_rows(level: exp.Table, classes: exp.Table, words: int, span: int, width: int,
               ordered: bool = False) -> exp.Expression:
    """The (matrix cell, count) rows of the classes ``large_classes`` numbered from $1 up to (not
    including) $2: cell = (number − $1) × width + sensitive part (the key % span; ``width``: that of
    the classes × sensitive values matrix). ``ordered``: by cell, as a matrix kept by its cells
    holds them (sorted by the engine, not in Python: ``SparseCounts.from_sorted_cells``)."""
    higher = _higher_words(words)
    match = exp.and_(*(exp.EQ(this=col(h, "lv"), expression=col(h, "big")) for h in higher)) if higher \
        else exp.true()
    query = template("class_rows", level=level, classes=classes, span=exp.Literal.number(span), match=match,
                     width=exp.Literal.number(width), first=exp.Placeholder(this="1"))
    query = query.where(_numbers_between(col("cid", "big")))
    return query.order_by(col("cell")) if ordered else query


def numbered_classes(classes: exp.Table) -> exp.Expression:
    """The classes ``large_classes`` numbered from $1 up to (not including) $2."""
    return exp.select(exp.Star()).from_(exp.alias_(classes.copy(), ident("big"), table=True)).where(
        _numbers_between(col("cid", "big")))


def _higher_words(words: int) -> list[str]:
    """The key columns past the first of a level kept in ``words`` words: key1, key2, …"""
    return [f"key{w}" for w in range(1, words)]


def _numbers_between(number: exp.Column) -> exp.Expression:
    return exp.and_(exp.GTE(this=number, expression=exp.Placeholder(this="1")),
                    exp.LT(this=number.copy(), expression=exp.Placeholder(this="2")))


def keyed_base(base: exp.Expression, packing: Packing, qi_codes: Sequence[str], sa_codes: Sequence[str],
               order_by: Sequence[str] = (), counted: bool = True) -> exp.Expression:
    """The base histogram as the SQL search reads it (``packing``'s layout): per row its key words
    (each QI's leaf code padded, at its field; the sensitive codes in word 0) and its count as
    DOUBLE (summed as such by every node query), in the base's order — or, from the base's query
    (a subquery, unsorted), in ``order_by``'s (code columns). Not ``counted``: the key words alone,
    each row counting one (a base of the rows as they stand, whose readers count rows: ``ones``);
    a column of 1.0 per row took 0.08 s of the 10 M-row base's 0.64 s to store."""
    terms: list[list[exp.Expression]] = [[] for _ in range(packing.words)]
    for code_column, pad, stride, word in zip(qi_codes, packing.padded, packing.qi_stride, packing.qi_word):
        if pad.bits:
            terms[word].append(_times(_padded(_bigint(col(code_column, "base")), pad), stride))
    for code_column, stride in zip(sa_codes, packing.sa_stride):
        terms[0].append(_times(_bigint(col(code_column, "base")), stride))
    keys = [_bigint(k) if isinstance(k, exp.Literal) else k for k in _word_sums(terms)]
    count = [exp.alias_(_double(col("n", "base")), "n")] if counted else []
    select = exp.select(*(exp.alias_(k, key_name(w)) for w, k in enumerate(keys)), *count) \
        .from_(base.copy().as_("base"))
    return select.order_by(*[ascending(col(name, "base")) for name in order_by]) if order_by else select


def unpacked_keys(keyed: exp.Expression, packing: Packing, qi_codes: Sequence[str], sa_codes: Sequence[str],
                  ranges: Sequence[int] = (), ones: bool = False) -> exp.Expression:
    """Keyed rows (``keyed_base``, or keys under a node's masks: cleared levels read as 0) read back
    as the base histogram's columns: each QI's dense code from its padded field, each sensitive code
    from word 0's sensitive part — as the narrowest type holding ``ranges`` (one per code column,
    as ``base_histogram`` stores them), or BIGINT without — and the count (``ones``: 1, keyed rows
    stored without a count)."""
    codes = []
    for i, (name, pad) in enumerate(zip(qi_codes, packing.padded)):
        field = exp.Mod(this=_key_div(packing.qi_word[i], packing.qi_stride[i]),
                        expression=exp.Literal.number(packing.qi_card[i]))
        codes.append((name, _unpadded(exp.Paren(this=field), pad)))
    part = exp.Paren(this=exp.Mod(this=col(key_name(0)), expression=exp.Literal.number(packing.sa_span)))
    for j, name in enumerate(sa_codes):
        digit = part.copy() if packing.sa_stride[j] == 1 else \
            exp.IntDiv(this=part.copy(), expression=exp.Literal.number(packing.sa_stride[j]))
        codes.append((name, exp.Mod(this=digit, expression=exp.Literal.number(packing.sa_card[j]))))
    if ranges:
        codes = [(name, _narrowest(exp.Paren(this=code), r)) for (name, code), r in zip(codes, ranges, strict=True)]
    count = _bigint(exp.Literal.number(1)) if ones else _bigint(col("n"))
    return exp.select(*(exp.alias_(code, ident(name)) for name, code in codes),
                      exp.alias_(count, "n")).from_(keyed.copy())


def _key_div(word: int, stride: int) -> exp.Expression:
    key = col(key_name(word))
    return key if stride == 1 else exp.Paren(this=exp.IntDiv(this=key, expression=exp.Literal.number(stride)))


def _unpadded(padded: exp.Expression, pad: PaddedCode) -> exp.Expression:
    """A padded code read back as its mixed-radix leaf code (``PaddedCode.unpad``): each level's
    sibling index, from its bits, times that level's divisor."""
    if pad.identity:
        return padded
    terms = []
    for d, r, shift in zip(pad.divisors, pad.radices, pad.shifts):
        if r > 1:
            bits = exp.BitwiseAnd(this=exp.Paren(this=exp.BitwiseRightShift(this=padded.copy(),
                                                                            expression=exp.Literal.number(shift))),
                                  expression=exp.Literal.number((1 << (r - 1).bit_length()) - 1))
            terms.append(_times(exp.Paren(this=bits), d))
    return _word_sums([terms])[0]


def _padded(code: exp.Expression, pad: PaddedCode) -> exp.Expression:
    """A mixed-radix leaf code as its padded code: each level's sibling index moved to its bits.

    ``PaddedCode.pad`` sums each level's index ``(c // D[l]) % r[l]`` at bit ``s[l]``. Here the
    same sum is written with divisions alone: as ``D[l + 1] = D[l] × r[l]``, the index is
    ``c // D[l] − r[l] × (c // D[l + 1])``, so ``Σ (c // D[l]) × (2^s[l] − r[l − 1] × 2^s[l − 1])``
    (no term at a power-of-two radix, whose factor is 0; each term is non-negative and the sum is
    the padded code, so nothing overflows that did not before). Per row that is half the integer
    divisions or fewer: the keyed base of 10 M rows took 0.38 s instead of 0.60 s, the same keys
    (docs/performance.md, forty-fourth round)."""
    if pad.identity:
        return code
    top = max(level for level, r in enumerate(pad.radices) if r > 1)
    terms = []
    for level in range(top + 1):
        d = pad.divisors[level]
        factor = (1 << pad.shifts[level]) - (pad.radices[level - 1] << pad.shifts[level - 1] if level else 0)
        if factor == 0:
            continue
        index = code.copy() if d == 1 else \
            exp.Paren(this=exp.IntDiv(this=code.copy(), expression=exp.Literal.number(d)))
        terms.append(_times(index, factor))
    return exp.Paren(this=_word_sums([terms])[0])


def _times(e: exp.Expression, factor: int) -> exp.Expression:
    return e if factor == 1 else exp.Mul(this=e, expression=exp.Literal.number(factor))


def masked_nodes(source: exp.Table, nodes: Sequence[tuple[int, ...]], floors: bool = False,
                 ones: bool = False) -> exp.Expression:
    """Nodes grouped from keyed rows by literal masks: per plan row (node id, [floor id,] a mask per
    key word) a GROUP BY of the source's keys under the masks, joined by UNION ALL — from the keyed
    base, or (``floors``) from the kept floors' rows of that floor id (kept in the order their ids
    were made, found by the id alone). DuckDB skips a QI outside the subset and folds each mask into
    one AND, instead of joining every row with every plan row: measured ~1.5x faster on a 1 M-row
    base than a plan table (``base_batch``). ``ones``: every source row counts 1 (a base of the rows
    as they stand), so its rows are counted, not their counts summed (a 10 M-row floor pass 0.20 s
    against 0.22 s)."""
    selects = []
    for node, *rest in nodes:
        floor, masks = _floor_and_masks(rest, floors)
        keys = _masked(masks)
        select = exp.select(exp.alias_(_bigint(exp.Literal.number(node)), "node", copy=False),
                            *(exp.alias_(_bigint(k) if isinstance(k, exp.Literal) else k, key_name(w), copy=False)
                              for w, k in enumerate(keys)),
                            exp.alias_(_records(ones, col("n", "src")), "n", copy=False), copy=False)
        select = select.from_(source.copy().as_("src"), copy=False)  # a fresh tree: no builder copies
        if floors:
            select = select.where(_of_floor(floor), copy=False)
        grouped = [k.copy() for k in keys if not isinstance(k, exp.Literal)]  # GROUP BY 0 would name a column
        selects.append(select.group_by(*grouped, copy=False) if grouped else select)
    return _union_all(selects)


def _records(ones: bool, n: exp.Column) -> exp.Expression:
    """A group's records among keyed rows, as DOUBLE: its rows counted when each counts one
    (``ones``: a base of the rows as they stand, whose stored keys hold no count), else their counts
    (``n``, the count column as the query names it) summed."""
    return _double(exp.Count(this=exp.Star())) if ones else exp.Sum(this=n)


def sampled_rows(source: exp.Table, masks: Sequence[int], span: int, modulus: int) -> exp.Expression:
    """The keyed rows whose class under ``masks`` (a node's, less the sensitive part: the word 0's
    low ``span``) hashes to 0 modulo ``modulus``: whole classes of that node, and so of every node
    finer than it — the screen's sample (``search.screen``)."""
    words = _class_words(masks, span) or [exp.Literal.number(0)]
    hashed = exp.Anonymous(this="HASH", expressions=words)
    residue = exp.Mod(this=hashed, expression=exp.Literal.number(modulus))
    sampled = exp.EQ(this=residue, expression=exp.Literal.number(0))
    return exp.select(exp.Star()).from_(source.copy().as_("src"), copy=False).where(sampled, copy=False)


def _class_words(masks: Sequence[int], span: int) -> list[exp.Expression]:
    """A node's key words under its ``masks`` less the sensitive part (words cleared whole left out)."""
    class_masks = [masks[0] & -span, *masks[1:]]  # the sensitive bits cleared (-1, keep all: -span)
    return [w for w in _masked(class_masks) if not isinstance(w, exp.Literal)]


def small_class_records(source: exp.Table, nodes: Sequence[tuple[int, ...]], k: int, span: int,
                        ones: bool = False) -> exp.Expression:
    """Per plan row (node id, a mask per key word; ``masked_nodes``): ``node`` and ``dropped``, the
    records in the node's classes of fewer than ``k`` among ``source``'s keyed rows (``ones``: each
    counting one, as ``masked_nodes``). A class is a key under the node's masks less its sensitive
    part (the word 0's low ``span``, a power of two)."""
    selects = []
    for node, *masks in nodes:
        words = _class_words(masks, span)
        sizes = exp.select(exp.alias_(_records(ones, col("n", "src")), "size", copy=False)) \
            .from_(source.copy().as_("src"), copy=False)
        sizes = sizes.group_by(*words, copy=False) if words else sizes
        size = exp.column("size", "cls")
        small = exp.Case(ifs=[exp.If(this=exp.LT(this=size.copy(), expression=exp.Literal.number(k)), true=size)],
                         default=exp.Literal.number(0))
        dropped = _bigint(exp.Coalesce(this=exp.Sum(this=small), expressions=[exp.Literal.number(0)]))
        selects.append(exp.select(exp.alias_(_bigint(exp.Literal.number(node)), "node", copy=False),
                                  exp.alias_(dropped, "dropped", copy=False), copy=False)
                       .from_(sizes.subquery("cls", copy=False), copy=False))
    return _union_all(selects)


def estimated_rows(source: exp.Table, nodes: Sequence[tuple[int, ...]], floors: bool = False) -> exp.Expression:
    """One row: per plan row of ``masked_nodes`` the rows its result would have, estimated by
    HyperLogLog (``approx_count_distinct``, a few % off) in one pass over what they read — far
    cheaper than grouping by each. Column ``e<i>`` is the ``i``-th plan row's."""
    estimates, read = [], set()
    for i, (_, *rest) in enumerate(nodes):
        floor, masks = _floor_and_masks(rest, floors)
        kept = [k for k in _masked(masks) if not isinstance(k, exp.Literal)]  # a cleared word counts nothing
        key = _one_key(kept or [exp.Literal.number(0)])
        if floors:
            read.add(floor)
            key = exp.If(this=_of_floor(floor), true=key, false=exp.Null())
        estimates.append(exp.alias_(exp.ApproxDistinct(this=key), f"e{i}"))
    select = exp.select(*estimates).from_(source.copy().as_("src"), copy=False)
    if not floors:
        return select
    return select.where(exp.In(this=col("node", "src"), expressions=[exp.Literal.number(f) for f in sorted(read)]),
                        copy=False)


def _floor_and_masks(rest: Sequence[int], floors: bool) -> tuple[int | None, Sequence[int]]:
    """A plan row past its node id: (floor id, masks) when read from floors, else (None, masks)."""
    return (rest[0], rest[1:]) if floors else (None, rest)


def _of_floor(floor: int) -> exp.Expression:
    """The kept floors' rows of one floor id."""
    return exp.EQ(this=col("node", "src"), expression=exp.Literal.number(floor))


def _masked(masks: Sequence[int]) -> list[exp.Expression]:
    """Key words under literal masks (``Packing.masks``): −1 keeps a word as is, 0 makes it 0."""
    keys: list[exp.Expression] = []
    for w, mask in enumerate(masks):
        key = col(key_name(w), "src")
        keys.append(exp.Literal.number(0) if mask == 0 else key if mask == -1 else
                    exp.BitwiseAnd(this=key, expression=exp.Literal.number(mask)))
    return keys


def _one_key(keys: list[exp.Expression]) -> exp.Expression:
    """A multi-word key as one value to count distinct: the word itself, or a hash of the words."""
    return keys[0] if len(keys) == 1 else exp.Anonymous(this="HASH", expressions=keys)


def _union_all(selects: list[exp.Expression]) -> exp.Expression:
    """UNION ALL of the selects as a balanced tree: no copies, and a depth of log2(n) for the
    generator's recursion (a chain of hundreds would be as deep)."""
    while len(selects) > 1:
        pairs = [exp.Union(this=a, expression=b, distinct=False) for a, b in zip(selects[::2], selects[1::2])]
        selects = pairs + selects[len(pairs) * 2:]
    return selects[0]


def _cast(e: exp.Expression, kind: exp.DataType.Type) -> exp.Cast:
    return exp.Cast(this=e, to=exp.DataType(this=kind, nested=False))  # DataType.build() would parse the name


def _bigint(e: exp.Expression) -> exp.Cast:
    return _cast(e, exp.DataType.Type.BIGINT)


def _double(e: exp.Expression) -> exp.Cast:
    return _cast(e, exp.DataType.Type.DOUBLE)


def key_name(word: int) -> str:
    return "key" if word == 0 else f"key{word}"


def _word_sums(terms: list[list[exp.Expression]]) -> list[exp.Expression]:
    """Each key word as the sum of its terms (0 for a word without any)."""
    keys = []
    for word in terms:
        key = word[0] if word else exp.Literal.number(0)
        for term in word[1:]:
            key = exp.Add(this=key, expression=term)
        keys.append(key)
    return keys


def _with_keys(select: exp.Select, keys: Sequence[exp.Expression]) -> exp.Select:
    """``select`` (node, key, n grouped by node, key) with ``keys`` as key, key1, key2, …"""
    node, _, n = select.expressions
    aliased = [exp.alias_(k, "key" if w == 0 else f"key{w}") for w, k in enumerate(keys)]
    select.set("expressions", [node, *aliased, n])
    select.set("group", exp.Group(expressions=[node.this.copy(), *(k.copy() for k in keys)]))
    return select


def base_batch(keyed: exp.Table, plan: exp.Table, words: int = 1, ones: bool = False) -> exp.Expression:
    """Nodes from the keyed base (``keyed_base``): each plan row a node with a mask per key word
    (plan columns ``m0``, ``m1``, …), every base row's keys under each node's masks (``ones``: its
    rows counted, as ``masked_nodes``)."""
    select = template("base_batch", base=keyed, plan=plan, records=_records(ones, exp.column("n", "base")))
    if words == 1:
        return select
    return _with_keys(select, [_plan_masked(col(key_name(w), "base"), w) for w in range(words)])


# ---- small queries of preparation and audits ---------------------------------------------------
def _count_where(source: exp.Expression, condition: exp.Expression) -> exp.Expression:
    return exp.select(exp.Count(this=exp.Star()).as_("n")).from_(source.copy()).where(condition)


def histogram_margins(histogram: exp.Expression, codes: Sequence[str]) -> exp.Expression:
    """In one pass over a histogram, its size and its margins over ``codes``: the grouping set of
    no column gives its rows (``base_rows``) and the input rows they count (``rows``); the set of
    code column c_j, the rows counted per code (``rows``), a row per code, marked by
    ``GROUPING(c_j) = 0`` in column ``g{j}`` (the column is 0 in the other sets' rows). Was a
    query for the size and one per column: on Spark, a job each (fifty-eighth round)."""
    rows = exp.Cast(this=exp.Sum(this=exp.column("n")), to=exp.DataType.build("BIGINT"))
    select = exp.select(exp.Count(this=exp.Star()).as_("base_rows"), rows.as_("rows")).from_(histogram.copy())
    if not codes:
        return select
    # A code column is NULL in the sets not grouped by it: 0 there (only there), so that it reads
    # as numbers.
    grouping = [exp.Grouping(expressions=[col(c)]) for c in codes]
    select = select.select(*[exp.alias_(exp.If(this=exp.EQ(this=g.copy(), expression=exp.Literal.number(1)),
                                               true=exp.Literal.number(0), false=col(c)), ident(c))
                             for c, g in zip(codes, grouping)],
                           *[exp.alias_(g, f"g{j}") for j, g in enumerate(grouping)])
    sets = [exp.Tuple(expressions=[])] + [exp.Paren(this=col(c)) for c in codes]
    return select.group_by(exp.GroupingSets(expressions=sets), copy=False)


def without_nulls(source: exp.Expression, columns: Sequence[str]) -> exp.Expression:
    """The source without the rows holding a NULL in one of ``columns`` (as a subquery)."""
    relation = source.copy().as_("src") if isinstance(source, exp.Table) else source.copy()
    return exp.select(exp.Star()).from_(relation).where(not_null(columns)).subquery()


def float_checks(source: exp.Expression, column: str,
                 nan: Callable[[exp.Expression], exp.Expression]) -> exp.Expression:
    """Rows of a floating-point ``column`` that are NaN or ±infinity (``non_finite``), -0.0
    (``negative``) and 0.0 (``positive``: one number that reads as two texts), in one pass; ``nan``
    builds the engine's test of NaN (``Engine.is_nan``)."""
    value = col(column)
    infinity = exp.Cast(this=exp.Literal.string("Infinity"), to=exp.DataType.build("DOUBLE"))
    non_finite = exp.or_(nan(value), exp.EQ(this=exp.Abs(this=value.copy()), expression=infinity))  # Spark: no ISINF
    return exp.select(_rows_where(non_finite).as_("non_finite"), *_zero_counts(value)).from_(source.copy())


def float_spellings(source: exp.Expression, column: str, nan: Callable[[exp.Expression], exp.Expression],
                    signed: Callable[[exp.Expression], exp.Expression]) -> exp.Expression:
    """Rows of a floating-point ``column`` that are -0.0 (``negative``) and 0.0 (``positive``), and
    NaN written with a minus sign (``negative_nan``, DuckDB's ``-nan``) and without
    (``positive_nan``): equal values that read as two texts, in one pass; ``nan`` builds the
    engine's test of NaN (``Engine.is_nan``), ``signed`` its test of a minus sign
    (``Engine.has_minus_sign``)."""
    value = col(column)
    minus = signed(value.copy())
    return exp.select(*_zero_counts(value), _rows_where(exp.and_(nan(value), minus)).as_("negative_nan"),
                      _rows_where(exp.and_(nan(value), exp.Not(this=minus.copy()))).as_("positive_nan")) \
        .from_(source.copy())


def _zero_counts(value: exp.Expression) -> list[exp.Expression]:
    """Rows of -0.0 (``negative``) and of 0.0 (``positive``); the text is cast only for zeros."""
    zero = exp.EQ(this=value.copy(), expression=exp.Literal.number(0))
    minus = exp.Like(this=as_text(value.copy()), expression=exp.Literal.string("-%"))
    return [_rows_where(exp.and_(zero, minus)).as_("negative"),
            _rows_where(exp.and_(zero.copy(), exp.Not(this=minus.copy()))).as_("positive")]


def _rows_where(where: exp.Expression) -> exp.Expression:
    return exp.Coalesce(this=exp.Sum(this=exp.If(this=where, true=exp.Literal.number(1),
                                                 false=exp.Literal.number(0))),
                        expressions=[exp.Literal.number(0)])


def ascending(key: exp.Expression) -> exp.Ordered:
    """``key`` sorted ascending, NULLs last, both said: a connection's ``default_order`` or
    ``default_null_order`` decides a key that does not say (DuckDB's ``SET default_order = 'DESC'``
    wrote a release in descending order, and summed the ordered EMD's running sums backwards)."""
    return exp.Ordered(this=key, desc=False, nulls_first=False)


def count_text_equal(source: exp.Expression, column: str, text: str, params: Params) -> exp.Expression:
    """Rows whose ``column``, as text, equals ``text`` (a bound parameter)."""
    return _count_where(source, exp.EQ(this=as_text(col(column)), expression=params.add(text)))


def distinct_with_numbers(histogram: exp.Expression, column: str, numbers: bool = True) -> exp.Expression:
    """The distinct non-NULL values of a column as text, with their value as a number (NULL when
    not one; without ``numbers``, NULL: Spark casts no DATE or TIMESTAMP to a number, even trying)
    and the rows holding them (``rows``, summed from ``column_values``' ``n``), in the column's own order."""
    value = col(column)
    # safe=True: without it sqlglot renders TRY_CAST for Spark as CAST, which fails on text in ANSI mode
    number = exp.TryCast(this=value.copy(), to=exp.DataType.build("DOUBLE"), safe=True) if numbers else \
        exp.cast(exp.Null(), "DOUBLE")
    rows = _bigint(exp.Sum(this=col("n")))
    return (exp.select(as_text(value.copy()).as_("text"), number.as_("number"), rows.as_("rows"))
            .from_(histogram.copy()).where(is_not_null(value.copy()))
            .group_by(value.copy()).order_by(ascending(value.copy())))


def distinct_sorted(relations: Sequence[exp.Expression], column: str) -> exp.Expression:
    """The distinct values (as ``text``) of a column across tables, sorted as the column's type sorts."""
    value = col(column)
    parts = [exp.select(value.copy()).from_(r.copy()) for r in relations]
    values = parts[0] if len(parts) == 1 else exp.union(*parts, distinct=False)
    return (exp.select(as_text(value.copy()).as_("text")).from_(values.subquery("__sqlclose_values"))
            .group_by(value.copy()).order_by(ascending(value.copy())))


def project(relation: exp.Expression, columns: Sequence[str]) -> exp.Expression:
    return exp.select(*(col(c) for c in columns)).from_(relation.copy())


def text_values(relation: exp.Expression, column: str) -> exp.Expression:
    """The distinct values of a column as text, as column ``value``."""
    return exp.select(as_text(col(column)).as_("value")).from_(relation.copy()).distinct().subquery()


def value_shares(relation: exp.Expression, column: str, params: Params, top: str,
                 leaves: exp.Expression | None) -> exp.Expression:
    """Rows, rows whose value (as text) is the top label ``top``, and — given a relation of leaf
    values (column ``value``) — rows whose value is a leaf: one pass. A NULL counts as a leaf: a
    release holds one only in a column given as it is (a level-0 QI read with ``nulls = "value"``),
    never as a label."""
    value = as_text(col(column, "src"))
    at_root = exp.Sum(this=exp.If(this=exp.EQ(this=value.copy(), expression=params.add(top)),
                                  true=exp.Literal.number(1), false=exp.Literal.number(0)))
    select = exp.select(exp.Count(this=exp.Star()).as_("rows"), at_root.as_("at_root")).from_(_as_src(relation))
    if leaves is not None:
        distinct = exp.select(col("value")).from_(leaves.copy()).distinct().subquery("lv")
        select = select.join(distinct, join_type="left", on=exp.EQ(this=col("value", "lv"), expression=value.copy()))
        leaf = exp.or_(col("value", "lv").is_(exp.null()).not_(), value.copy().is_(exp.null()))
        select = select.select(exp.Sum(this=exp.If(this=leaf, true=exp.Literal.number(1),
                                                   false=exp.Literal.number(0))).as_("leaves"))
    return select
