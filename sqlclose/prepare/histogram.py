"""The warehouse path's input: the histogram the warehouse computed and exported.

``sqlclose sql`` prints the query (``histogram_sql``); the warehouse runs it and exports the
result as Parquet (or CSV). That file — counts per combination of quasi-identifier and sensitive
values, no rows — is loaded into a local DuckDB and validated (its columns, a count column of
whole numbers ≥ 1; NULLs are judged by the spec's NULL policies as for any source), then
``problem.prepare`` reads it as the scan's result: hierarchies built by rule from its distinct
values, leaves checked, codes assigned, exactly as for a table.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.engine.base import WHOLE_NUMBER, FileRead
from sqlclose.errors import DataError, InputError, SpecError
from sqlclose.model import mending
from sqlclose.model.spec import Source, Spec
from sqlclose.model.text import agreeing, counted, name_cut, name_shown
from sqlclose.prepare.problem import (
    MAX_ROWS,
    Problem,
    columns_told,
    minus_zero_made_zero,
    nan_made_null,
    prepare,
)
from sqlclose.prepare.sources import Opened, open_source
from sqlclose.sql import queries as q
from sqlclose.sql import warehouse as wh

HISTOGRAM_SUFFIXES = (".parquet", ".pq", ".csv")


def warehouse_source(spec: Spec) -> Source:
    """The spec's warehouse table, or an error saying how to name one."""
    if spec.source is None or spec.source.kind != "warehouse":
        raise SpecError("the warehouse path needs a [source] that names the warehouse table: format = \"warehouse\", "
                        "table = \"schema.table\" (and dialect = \"postgres\", … ; see docs/warehouse.md)")
    return spec.source


def not_read_here(source: Source) -> SpecError:
    """The error for running the local path on a warehouse table."""
    return SpecError(f"the source is the warehouse table {name_cut(source.table)}, which sqlclose does not read: run "
                     "`sqlclose sql SPEC` there, export the result, then `sqlclose anonymize --histogram FILE SPEC` "
                     "(docs/warehouse.md)")


def dialect_of(spec: Spec, given: str | None) -> str:
    """The dialect asked for, else the spec's [source] dialect."""
    dialect = given or warehouse_source(spec).dialect
    if dialect is None:
        raise SpecError("which SQL dialect? pass --dialect (duckdb, spark, postgres, snowflake, bigquery, trino) or "
                        "set [source] dialect = \"…\"")
    wh.require_dialect(dialect)
    return dialect


def scanned_columns(spec: Spec) -> list[q.CodedColumn]:
    """The columns the histogram counts: quasi-identifiers (as text), then sensitive columns
    (ordered ones as numbers)."""
    qis = [q.CodedColumn(name, name, f"q{i}", "") for i, name in enumerate(spec.quasi_identifiers)]
    sas = [q.CodedColumn(name, name, f"s{j}", "", typed=s.distance == "ordered")
           for j, (name, s) in enumerate(spec.sensitive.items())]
    return qis + sas


def banded(spec: Spec) -> list[str]:
    """The quasi-identifiers cut into bands: the histogram also holds their values in the
    warehouse's type (``wh.typed_copy``), whose type decides the labels."""
    return [name for name, s in spec.quasi_identifiers.items() if s.kind == "bands"]


def typed_copies(spec: Spec) -> dict[str, str]:
    """Each banded quasi-identifier with the histogram's column of its typed copy (``wh.typed_copy``)."""
    codes = {c.name: c.code for c in scanned_columns(spec)}
    return {name: wh.typed_copy(codes[name]) for name in banded(spec)}


def typed_counts(spec: Spec) -> dict[str, str]:
    """Each banded quasi-identifier with the histogram's column counting its group's distinct values
    (``wh.typed_values``)."""
    codes = {c.name: c.code for c in scanned_columns(spec)}
    return {name: wh.typed_values(codes[name]) for name in banded(spec)}


def histogram_columns(spec: Spec) -> list[str]:
    """The histogram's columns, as `sqlclose sql` names them."""
    copies, counts = typed_copies(spec), typed_counts(spec)
    return ([c.name for c in scanned_columns(spec)] + [wh.COUNT_COLUMN]
            + [column for name in copies for column in (copies[name], counts[name])])


def check_warehouse_spec(spec: Spec) -> Source:
    """What only a warehouse spec can get wrong, refused before any query is printed or read:
    a counted column missing from ``[source] columns`` (the histogram would count it, the release
    could not name it), a counted column named like one of the histogram's own columns (the query
    would have two columns of that name), ``[source] types`` on a column other than an ordered
    sensitive one or a banded quasi-identifier (a CSV histogram's quasi-identifiers are text, its
    count is the count), ``others = "keep"`` without ``[source] columns`` (the table's other columns,
    which sqlclose cannot see: told by `sqlclose sql`, before the export, not after it)."""
    source = warehouse_source(spec)
    if source.columns is None and spec.others == "keep":
        raise SpecError("others = \"keep\" releases the table's other columns, but sqlclose cannot see a warehouse "
                        "table: list its columns in [source] columns = [\"…\", …]")
    if source.columns is not None:
        for name in spec.declared_columns:
            if name not in source.columns:
                raise SpecError(f"column {name_shown(name)} is declared in the spec but not listed in [source] columns "
                                "(the warehouse table's columns, which sqlclose cannot see): add it to columns if the "
                                "table has it, or correct its name")
    for c in scanned_columns(spec):
        if c.name == wh.COUNT_COLUMN or c.name.startswith(wh.TYPED_PREFIX):
            raise SpecError(f"column {name_shown(c.name)} has a name the histogram query gives its own columns "
                            f"({wh.COUNT_COLUMN!r}, {wh.TYPED_PREFIX}…), so it would have two columns of that name: "
                            "rename it in the warehouse (e.g. a view selecting it AS another name) and in the spec")
    typed = {name for name, s in spec.sensitive.items() if s.distance == "ordered"} | set(banded(spec))
    for name in source.types:
        if name not in typed:
            raise SpecError(f"[source] types names {name_shown(name)}, but on the warehouse path types apply to a CSV "
                            "histogram's ordered sensitive columns and banded quasi-identifiers only (other "
                            "quasi-identifiers are read as text, the count as whole numbers): remove it")
    return source


def histogram_sql(spec: Spec, dialect: str | None = None) -> str:
    """The one query the warehouse runs for the search, in its dialect."""
    source = check_warehouse_spec(spec)
    query = wh.histogram(wh.warehouse_table(source.table_parts), scanned_columns(spec), banded(spec))
    return wh.render(query, dialect_of(spec, dialect))


def table_columns(spec: Spec) -> list[str]:
    """The warehouse table's columns as the spec lists them; unlisted, the declared ones (then
    the release holds only quasi-identifiers and sensitive columns)."""
    source = check_warehouse_spec(spec)
    if source.columns is not None:
        return list(source.columns)
    return list(spec.declared_columns)


def open_histogram(path: Path, spec: Spec, dialect: str | None = None) -> Opened:
    """The exported histogram in a local DuckDB, its columns and counts checked. A CSV's count
    column is first read as the text it is and checked to be whole numbers that a 64-bit integer
    holds (read as a number straight away, 1.5 became 2), then read as BIGINT; ``[source] types``
    gives an ordered sensitive column of a CSV histogram a type (e.g. DOUBLE for Postgres's
    numeric text, 7000.00), as it does a CSV table's, and a banded quasi-identifier's typed copy the
    type that decides its labels (a Parquet histogram carries the warehouse's own). ``dialect``: the
    run's (``--dialect``, else the spec's), which the fixes a refusal gives are written in."""
    path = Path(path)
    if path.suffix.lower() not in HISTOGRAM_SUFFIXES:
        raise InputError(f"the histogram {path} should be the warehouse's export as .parquet (or .csv)")
    source = check_warehouse_spec(spec)
    _refuse_csv_folder(path)
    label = f"the histogram {path}"
    ordered = tuple(name for name, s in spec.sensitive.items() if s.distance == "ordered")
    csv = path.suffix.lower() == ".csv"
    copies = typed_copies(spec)
    declared = {copies.get(name, name): kind for name, kind in source.types.items()}
    exact = tuple(histogram_columns(spec))
    if csv:
        _refuse_names_alike_unspaced(exact, label)
        as_text = _opened(path, spec, FileRead(types={**declared, wh.COUNT_COLUMN: "VARCHAR"}, numeric=ordered,
                                               histogram=True, exact_names=exact))
        try:
            _check_columns(as_text.engine.schema(as_text.relation), spec, label, count_type=False)
            _check_count_text(as_text.engine, as_text.relation, label)
        finally:
            as_text.engine.close()
    types = {**declared, wh.COUNT_COLUMN: "BIGINT"} if csv else {}
    opened = _opened(path, spec, FileRead(types=types, numeric=ordered, histogram=True, exact_names=exact))
    try:
        _check_columns(opened.engine.schema(opened.relation), spec, label, csv=csv)
        _check_counts(opened.engine, opened.relation, label)
        _check_groups(opened.engine, opened.relation, spec, label, csv)
        _check_number_texts(opened.engine, opened.relation, spec, label, dialect)
        _check_typed_copies(opened.engine, opened.relation, spec, label)
    except BaseException:
        opened.engine.close()
        raise
    return opened


def _refuse_names_alike_unspaced(names: tuple[str, ...], label: str) -> None:
    """A CSV header's names are read without the spaces around them, so two counted columns whose
    names are one without them (' age' and 'age', two warehouse columns) cannot be told apart there."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.strip(), name)
        if other != name:
            raise InputError(f"{label} is CSV, whose header's names are read without the spaces around them, and "
                             f"the spec counts the columns {name_shown(other)} and {name_shown(name)}, which are one "
                             "name so: export the histogram as Parquet, which keeps names as they are")


def _opened(path: Path, spec: Spec, read: FileRead) -> Opened:
    """The histogram opened in a local DuckDB of the spec's [engine] settings (threads,
    memory_limit, temp_directory: they were accepted and not used, the job unbounded), or the
    process's own DuckDB without them (a Spark [engine] reads a catalog's tables in place, not here)."""
    if spec.engine is None or spec.engine.name != "duckdb":
        return open_source(path, None, read)
    from sqlclose.engine.registry import engine_from

    engine = engine_from(spec.engine)
    try:
        return open_source(path, engine, read)
    except BaseException:
        engine.close()
        raise


def _refuse_csv_folder(path: Path) -> None:
    """A folder of CSV part files (Spark's ``df.write.csv``, a sharded export) is refused for what
    it is: it was read as a Parquet folder and refused as "types, nulls and encoding apply to CSV
    sources only", which named none of the spec's settings. A folder of Parquet parts is read."""
    if path.is_dir() and (path.suffix.lower() == ".csv" or any(path.rglob("*.csv"))):
        raise InputError(f"the histogram {path} is a folder of CSV files, but a CSV histogram must be one file (one "
                         "header, then the rows): export Parquet (a folder of Parquet part files is read as one), "
                         f"or merge the parts into one CSV, e.g. duckdb -c \"COPY (FROM read_csv('{path}/*.csv', "
                         "all_varchar = true)) TO 'histogram.csv' (HEADER)\"")


def prepare_histogram(opened: Opened, spec: Spec, dialect: str | None = None) -> Problem:
    """The problem, read from the histogram instead of the table's rows (no input fingerprint:
    the rows never left the warehouse); its refusals' fixes in ``dialect``'s SQL (``open_histogram``)."""
    schema = opened.engine.schema(opened.relation)
    return prepare(opened.engine, opened.relation, spec, opened.label, None, counts=wh.COUNT_COLUMN,
                   source_kind=_fixed_in(spec, dialect),
                   table_columns=table_columns(spec),
                   column_types={name: schema.field(copy).type for name, copy in typed_copies(spec).items()})


def _check_columns(schema: pa.Schema, spec: Spec, label: str, count_type: bool = True, csv: bool = True) -> None:
    """The histogram's columns are exactly `sqlclose sql`'s (``csv``: its names are a CSV header's, which
    may be a row of data and are then not listed)."""
    expected = histogram_columns(spec)
    found = schema.names
    missing = [c for c in expected if c not in found]
    extra = [c for c in found if c not in expected]
    if missing and {c.casefold() for c in missing} <= {c.casefold() for c in found}:
        # Told for what it is: the message spoke of "a file without a header line" for a Parquet file.
        which = "its name differs" if len(missing) == 1 else f"the names of {len(missing)} of its columns differ"
        raise DataError(f"{label} has no column {name_shown(missing[0])}: {which} from those of `sqlclose sql` only in "
                        "upper and lower case (a warehouse session that folds quoted names: Snowflake under "
                        "QUOTED_IDENTIFIERS_IGNORE_CASE = TRUE writes ZIP and __SQLCLOSE_COUNT); export the histogram "
                        "from a session that keeps them as written (ALTER SESSION SET QUOTED_IDENTIFIERS_IGNORE_CASE = "
                        "FALSE): it must hold exactly the columns of `sqlclose sql` for this spec: "
                        f"{', '.join(name_shown(c) for c in expected)}")
    if missing:
        raise DataError(f"{label} has no column {name_shown(missing[0])} ({columns_told(expected, found, csv)}); it "
                        "must hold exactly the columns of `sqlclose sql` for this spec: "
                        f"{', '.join(name_shown(c) for c in expected)}")
    if extra:
        extras = ", ".join(name_shown(c) for c in extra)
        raise DataError(f"{label} has {agreeing(len(extra), 'a column', 'columns')} the spec does not count: {extras}; "
                        "export the result of `sqlclose sql` for this spec unchanged")
    if not count_type:
        return
    kind = schema.field(wh.COUNT_COLUMN).type
    whole = pa.types.is_integer(kind) or (pa.types.is_decimal(kind) and kind.scale == 0)
    if not whole:
        raise DataError(f"{label}: its count column {wh.COUNT_COLUMN!r} is {kind}, not whole numbers; export "
                        "COUNT(*) as an integer")


def _check_counts(engine: Engine, relation: exp.Expression, label: str) -> None:
    count = q.col(wh.COUNT_COLUMN)

    def rows_where(condition: exp.Expression, name: str) -> exp.Expression:
        flag = exp.If(this=condition, true=exp.Literal.number(1), false=exp.Literal.number(0))
        return exp.alias_(exp.Coalesce(this=exp.Sum(this=flag), expressions=[exp.Literal.number(0)]), name)

    # The total, each count capped just above the limit: exact, and never itself too large to sum.
    wide = exp.DataType.build("DECIMAL(38, 0)")
    capped = exp.Least(this=exp.Cast(this=count.copy(), to=wide),
                       expressions=[exp.Cast(this=exp.Literal.number(MAX_ROWS + 1), to=wide)])
    query = exp.select(rows_where(exp.Is(this=count.copy(), expression=exp.Null()), "nulls"),
                       rows_where(exp.LT(this=count.copy(), expression=exp.Literal.number(1)), "below"),
                       exp.GT(this=exp.Sum(this=capped), expression=exp.Literal.number(MAX_ROWS)).as_("too_large"),
                       ).from_(relation.copy())
    found = engine.fetch_row(query)
    if found["nulls"]:
        raise DataError(f"{label}: {counted(found['nulls'], 'row')} "
                        f"{agreeing(found['nulls'], 'has', 'have')} no count ({wh.COUNT_COLUMN!r} is NULL); "
                        "export the result of `sqlclose sql` unchanged")
    if found["below"]:
        raise DataError(f"{label}: {counted(found['below'], 'row')} "
                        f"{agreeing(found['below'], 'has', 'have')} a count below 1 ({wh.COUNT_COLUMN!r} "
                        "negative or zero); a histogram counts rows: export the result of `sqlclose sql` unchanged")
    if found["too_large"]:
        raise DataError(_too_large(label, f"its counts ({wh.COUNT_COLUMN!r}) sum to more than {MAX_ROWS:,} rows"))


BIGINT_MAX = 2**63 - 1  # a count is read as a 64-bit integer


def _check_count_text(engine: Engine, relation: exp.Expression, label: str) -> None:
    """A CSV histogram's count column, read as text: whole numbers only (DuckDB's BIGINT read
    rounds 1.5 to 2), each within a 64-bit integer. NULLs are left to ``_check_counts``."""
    count = q.col(wh.COUNT_COLUMN)
    whole = exp.RegexpLike(this=count.copy(), expression=exp.Literal.string(f"^{WHOLE_NUMBER}$"))
    fits = exp.Not(this=exp.Is(this=exp.TryCast(this=count.copy(), to=exp.DataType.build("BIGINT")),
                               expression=exp.Null()))
    query = exp.select(
        exp.Count(this=exp.If(this=exp.not_(whole), true=exp.Literal.number(1))).as_("not_whole"),
        exp.Count(this=exp.If(this=exp.and_(whole.copy(), exp.not_(fits)), true=exp.Literal.number(1))).as_("huge"),
    ).from_(relation.copy())
    found = engine.fetch_row(query)
    if found["not_whole"]:
        raise DataError(f"{label}: {counted(found['not_whole'], 'row')} "
                        f"{agreeing(found['not_whole'], 'has', 'have')} a count ({wh.COUNT_COLUMN!r}) that is "
                        "not a whole number; a histogram counts rows: export the result of `sqlclose sql` unchanged "
                        "(COUNT(*) as an integer)")
    if found["huge"]:
        raise DataError(_too_large(label, f"{counted(found['huge'], 'row')} {agreeing(found['huge'], 'has', 'have')} a "
                                          f"count ({wh.COUNT_COLUMN!r}) above {BIGINT_MAX:,}"))


def _too_large(label: str, what: str) -> str:
    return (f"{label}: {what}; sqlclose's search counts at most {MAX_ROWS:,} rows exactly (its discernibility, "
            "the sum of squared class sizes, is a 64-bit integer): export the result of `sqlclose sql` unchanged, "
            "or anonymize a part of a larger table at a time")


def _check_groups(engine: Engine, relation: exp.Expression, spec: Spec, label: str, csv: bool) -> None:
    """One row per combination of values, as a GROUP BY gives it: a combination in two rows (an
    export written twice, part files copied or merged twice) would be summed, and the search
    would count rows the table does not have — classes below k released as k-anonymous. Counted
    in SQL, one GROUP BY over the counted columns; the values themselves are never fetched."""
    # As text: DuckDB groups -0.0 with 0.0, which the ordered check then names for what it is.
    keys = [q.as_text(q.col(c.name)) for c in scanned_columns(spec)]
    repeated = (exp.select(exp.Literal.number(1).as_("one")).from_(relation.copy())
                .group_by(*keys).having(exp.GT(this=exp.Count(this=exp.Star()),
                                                expression=exp.Literal.number(1))))
    query = exp.select(exp.Count(this=exp.Star()).as_("repeated")).from_(repeated.subquery("repeated"))
    found = engine.fetch_row(query)["repeated"]
    if found:
        blank = (" (in a CSV export an empty string and a NULL read as one: if a counted column holds empty "
                 "strings, export Parquet)") if csv else ""
        raise DataError(f"{label}: {counted(found, 'combination')} of values "
                        f"{agreeing(found, 'appears', 'appear')} in more than one row, but a "
                        "histogram from `sqlclose sql` has one row per combination (the export was written twice, or "
                        f"its part files copied or merged more than once){blank}; export the result of `sqlclose sql` "
                        "again, once, and pass that file")


def _fixed_in(spec: Spec, dialect: str | None) -> str:
    """Where a histogram's column is fixed (``model.mending``): the warehouse, of the run's ``dialect``,
    else the spec's. The spec's alone was read: given ``--dialect trino`` beside a spec naming none, a
    refusal's fix was DuckDB's SQL (``isfinite``, which Trino lacks), unsaid (hundredth round)."""
    return mending.warehouse(dialect or (spec.source.dialect if spec.source is not None else None))


def _check_number_texts(engine: Engine, relation: exp.Expression, spec: Spec, label: str,
                        dialect: str | None = None) -> None:
    """A counted column's text holding one floating-point number written two ways: -0.0 beside
    0.0, or NaN with and without a minus sign. The histogram counts them apart (its columns are
    the warehouse's text), the released column holds the numbers, which compare as one: a class
    claimed 2-diverse held only zeros. Refused, as the local path refuses them in a float column;
    judged from the text, the one thing the histogram holds."""
    # an ordered column is a number here, checked as one (prepare's float checks)
    columns = [c.name for c in scanned_columns(spec) if not c.typed]
    warehouse = _fixed_in(spec, dialect)  # the fix's SQL
    for name, found in zip(columns, _number_spellings(engine, relation, columns)):
        if found["minus_zero"] and found["zero"]:
            what, fix = "both -0.0 and 0.0", minus_zero_made_zero(name, warehouse)
        elif found["minus_nan"] and found["nan"]:
            what, fix = "NaN both with and without a minus sign (-nan and nan)", nan_made_null(name, warehouse)
        else:
            continue
        raise DataError(f"column {name_shown(name)} in {label} holds {what}, one number written two ways: the "
                        "histogram counts them apart, the released numbers compare as one, so its classes and the "
                        "release would not count alike; normalize it in the warehouse (a view selecting it, as "
                        f"[source] table; e.g. {fix}), then run `sqlclose sql` and export again (a text column holding "
                        "such spellings: map one of them to another value in that view)")


def _number_spellings(engine: Engine, relation: exp.Expression, names: list[str]) -> list[dict[str, int]]:
    """Per text column of ``names``, whether it holds a zero with a minus sign (``minus_zero``) and one
    without (``zero``), a NaN with a minus sign (``minus_nan``) and one without (``nan``): 1 or 0.
    One pass over the histogram for them all."""
    held: list[exp.Expression] = []
    for i, name in enumerate(names):
        text = q.as_text(q.col(name))  # a Parquet export may type a column (an integer ZIP): LIKE takes text
        number = exp.TryCast(this=text.copy(), to=exp.DataType.build("DOUBLE"))
        minus = exp.Like(this=text.copy(), expression=exp.Literal.string("-%"))
        zero = exp.EQ(this=number.copy(), expression=exp.Literal.number(0))
        nan = engine.is_nan(number)
        kinds = {"minus_zero": exp.and_(zero, minus), "zero": exp.and_(zero.copy(), exp.not_(minus.copy())),
                 "minus_nan": exp.and_(nan, minus.copy()), "nan": exp.and_(nan.copy(), exp.not_(minus.copy()))}
        held += [exp.Max(this=exp.If(this=kind, true=exp.Literal.number(1), false=exp.Literal.number(0)))
                 .as_(f"c{i}_{key}") for key, kind in kinds.items()]
    if not held:
        return []
    row = engine.fetch_row(exp.select(*held).from_(relation.copy()))
    return [{key: row[f"c{i}_{key}"] for key in ("minus_zero", "zero", "minus_nan", "nan")} for i in range(len(names))]


def _check_typed_copies(engine: Engine, relation: exp.Expression, spec: Spec, label: str) -> None:
    """Each banded quasi-identifier's text group holding one value, which its text reads back as. The
    bands are cut from the text (the lookup the release joins on), so a warehouse writing numbers
    lossily (Postgres under extra_float_digits = 0: 39.99999999999999 and 40.0 both '40') put
    39.99999999999999 in [40, 45), and the verification, measuring the released labels, said ok.
    Refused where a group counts more than one distinct value (values written alike) or, in a float
    column, its text read as a float is not its value (a text that is not its value: the one value
    39.99999999999999 written '40'; a CSV export, which writes the value as lossily as the text,
    cannot tell this one). The values are not shown."""
    copies, counts = typed_copies(spec), typed_counts(spec)
    if not copies:
        return
    schema = engine.schema(relation)
    held: list[exp.Expression] = []
    for i, (name, copy) in enumerate(copies.items()):
        several = exp.GT(this=exp.TryCast(this=q.col(counts[name]), to=exp.DataType.build("BIGINT")),
                         expression=exp.Literal.number(1))
        # an integer's or decimal's text is exact; a float's is the warehouse's choice of digits
        floating = {pa.float32(): "FLOAT", pa.float64(): "DOUBLE"}.get(schema.field(copy).type)
        read = exp.TryCast(this=q.as_text(q.col(name)), to=exp.DataType.build(floating)) if floating else q.col(copy)
        other = exp.not_(exp.NullSafeEQ(this=read, expression=q.col(copy)))
        def texts(where: exp.Expression, column: str = name) -> exp.Expression:  # the column's texts, not its rows
            return exp.Count(this=exp.Distinct(expressions=[exp.If(this=where, true=q.col(column))]))
        held += [texts(several).as_(f"alike_{i}"), texts(other).as_(f"text_{i}")]
    row = engine.fetch_row(exp.select(*held).from_(relation.copy()))
    for i, (name, copy) in enumerate(copies.items()):
        if row[f"alike_{i}"]:
            n = row[f"alike_{i}"]
            what = (f"{counted(n, 'text')} of column {name_shown(name)} {agreeing(n, 'stands', 'stand')} for several "
                    f"values ({counts[name]!r} counts more than 1): the warehouse writes those values alike")
        elif row[f"text_{i}"]:
            n = row[f"text_{i}"]
            what = (f"{counted(n, 'text')} of column {name_shown(name)} {agreeing(n, 'does', 'do')} not read back as "
                    f"the value {agreeing(n, 'it stands', 'they stand')} for ({copy!r})")
        else:
            continue
        raise DataError(f"{label}: {what}, but its bands are cut from the text, so a value would be labelled with "
                        "another's band; have the warehouse write the column's numbers exactly (Postgres: SET "
                        "extra_float_digits = 1, or 3 before version 12, in the sessions that export the histogram "
                        "and run the release), then run `sqlclose sql` and export again")
