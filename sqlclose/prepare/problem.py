"""From a spec and a source to a validated, integer-coded problem ready for the search.

Order of work: check the columns exist; one cheap pass for each column's distinct values and
their rows (*column values*: a GROUP BY per column, NULLs included); prove every NULL has a
policy, and when rows are dropped for one, the same pass again over the rows kept; build rule
hierarchies from the rows kept (prepare/rule_hierarchies.py); register lookup tables; prove every
value is a leaf; then group the source's rows once, by integer codes, into the *base histogram*.
Nothing here reads rows in Python: Python sees distinct values and counts.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.errors import DataError, NoRowsError, NotLeavesError, NullsError
from sqlclose.model import mending
from sqlclose.model.arrays import ArrowValues, arrow_table, leaf_labels, numpy_of
from sqlclose.model.arrow_types import unreached_float
from sqlclose.model.attributes import (
    QI_NOT_SHOWN,
    SensitiveAttribute,
    require_ordered_type,
    sensitive_domain,
    values_not_leaves,
)
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.packing import Packing
from sqlclose.model.spec import Sensitive, Spec, static_hierarchy
from sqlclose.model.text import (
    agreeing,
    clipped,
    counted,
    format_characters_hint,
    format_twins,
    name_shown,
    named,
    quoted,
    unicode_form_hint,
    unicode_twins,
)
from sqlclose.prepare.digests import keyed_fingerprint  # prepare calls it by this module's name (tests hook it)
from sqlclose.prepare.leaf_advice import LeafAdvice
from sqlclose.prepare.local_values import ValuesReader, values_reader
from sqlclose.prepare.nested_columns import refuse_nested_models
from sqlclose.prepare.rule_hierarchies import distinct_values, qi_hierarchy
from sqlclose.prepare.stored_keys import StoredKeys, keyed_rows, keys_at, store_as_keys
from sqlclose.sql import queries as q

MAX_LISTED_VALUES = 20

# The base histogram keeps the rows as they stand (no GROUP BY) when the source has at least
# UNGROUPED_MIN_ROWS rows and nearly all of them (UNGROUPED_SHARE, estimated) are combinations of
# their own: grouping would then merge few rows at the price of a hash table as large as the input
# (10 M generated rows, 9.96 M combinations: 5.6-5.8 s grouped and sorted, 3.5-3.7 s sorted alone;
# the estimate 0.2 s; docs/performance.md, thirty-first round). Below that size grouping costs
# little, and the in-memory search wants the fewest rows.
UNGROUPED_MIN_ROWS = 1_000_000
UNGROUPED_SHARE = 0.9


# The most rows the search counts exactly: discernibility (Σ class size², and suppressed rows × all
# rows) is a 64-bit integer, so the total's square must fit one. A table of more (over 3 billion
# rows) would get a wrapped-around metric, hence a wrong choice of node.
MAX_ROWS = math.isqrt(2**63 - 1)

@dataclass
class QuasiIdentifierColumn:
    name: str
    hierarchy: Hierarchy
    coded: q.CodedColumn

    @property
    def levels(self) -> int:
        return self.hierarchy.levels


@dataclass(frozen=True, eq=False)
class SensitiveColumn(SensitiveAttribute):
    """A sensitive attribute with its SQL plumbing: where its codes live."""

    coded: q.CodedColumn | None = None


@dataclass
class Problem:
    engine: Engine
    source: exp.Expression  # the input table (after dropping rows with NULLs under nulls = "drop")
    columns: list[str]  # the input's columns, in order
    qis: list[QuasiIdentifierColumn]
    sas: list[SensitiveColumn]
    identifiers: list[str]
    k: int
    suppression: float
    rows: int  # rows anonymized (input rows minus dropped NULL rows)
    input_rows: int
    fingerprint: str | None  # keyed with the operator's secret; None without one
    base: exp.Table
    base_rows: int
    # column_values (a row per distinct value of each coded column) of the rows the base counts
    # (without those dropped for a NULL).
    values: exp.Table
    # Records per leaf of each QI (``hierarchy.leaves`` order), read with the leaf check from ``values``.
    leaf_counts: list[np.ndarray]
    released: list[str] = field(default_factory=list)  # the columns the release holds, in input order
    label: str = ""  # the source, for messages
    # Where a message tells the user to change a column (``model.mending``: the source's ``Opened.kind``,
    # or the warehouse a histogram counts), never read back from ``label``, which a file's path may spell.
    kind: str = mending.QUERY
    # False when the base holds the rows as they stand, one per row (``_groups_base``).
    base_grouped: bool = True
    # Such a base stored as the SQL search's packed keys, the base a view unpacking them
    # (``stored_keys``); None when the base is a table of its codes.
    stored_keys: StoredKeys | None = None
    # The statement that read the source's rows into the base (or its keys), as it ran: what
    # `sqlclose explain --sql` shows of the scan.
    base_scan: exp.Expression | None = None
    # Whether the released text was found UTF-8 (release/writers.refuse_invalid_text): asked by the
    # output's checks before the search and again by the write, read once.
    text_checked: bool = False

    @property
    def dropped_rows(self) -> int:
        return self.input_rows - self.rows

    def base_at(self, levels: Mapping[int, int]) -> exp.Expression:
        """The base to group at a node (``levels``: QI index → level; a QI not in it at its top):
        the base itself, or, stored as keys, its keys under the node's masks (``stored_keys.keys_at``)."""
        if self.stored_keys is None:
            return self.base.copy()
        return keys_at(self.stored_keys, levels, [qi.coded.code for qi in self.qis], [s.coded.code for s in self.sas])

    def on_base(self, engine: Engine, base: exp.Table) -> Problem:
        """This problem searched over ``base`` on ``engine`` (a copy of the base's codes): the
        stored keys go with the base they were stored for, so the copy keys its own."""
        return dataclasses.replace(self, engine=engine, base=base, stored_keys=None)

    @property
    def packing(self) -> Packing | None:
        """The SQL search's key layout of this problem's codes (``model.packing``)."""
        return _packing(self.qis, self.sas)

    @property
    def max_suppressed(self) -> int:
        """Most records the suppression limit allows to remove."""
        # Exact rational arithmetic: floor(0.05 × rows) must not lose a record to rounding.
        return math.floor(Fraction(repr(self.suppression)) * self.rows)


def prepare(engine: Engine, source: exp.Expression, spec: Spec, source_label: str,
            fingerprint_key: str | None = None, *, counts: str | None = None,
            table_columns: list[str] | None = None, column_types: dict[str, pa.DataType] | None = None,
            names_may_be_data: bool = True, source_kind: str = mending.QUERY,
            given_path: Path | None = None, fingerprint: str | None = None) -> Problem:
    """``counts``: ``source`` is a histogram of the table (the warehouse path: rows counted per
    combination of QI and sensitive values, counts in that column), not the table's rows;
    ``table_columns``: then the columns of the table it counts, which decide what is released;
    ``column_types``: then the table's type of a quasi-identifier the histogram holds as text
    (a banded one: the type decides its labels); ``source_kind``: the source's kind (``Opened.kind``),
    where the errors that advise changing a column say to change it (``model.mending``); ``given_path``:
    the path given in place of the spec's [source] (``Opened.given_path``), which the command an error
    names to list a column's values reads; ``fingerprint``: the report's fingerprint when taken already
    (a live source's, from the digest its change test took: ``api._prepared``), else taken here under
    ``fingerprint_key``."""
    schema = engine.schema(source)
    # where the user changes a column: the source given, or the warehouse a histogram counts
    kind = mending.of_run(source_kind, histogram=counts is not None, dialect=_users_dialect(spec))
    columns = table_columns if table_columns is not None else [f.name for f in schema]
    _check_columns(spec, columns, source_label, names_may_be_data)
    released = released_columns(spec, columns, source_label)
    if counts is None:
        _refuse_unreached_floats(schema, released, source_label)
        refuse_nested_models(schema, spec, source_label, kind)
    for name, s in spec.sensitive.items():
        if s.distance == "ordered":
            require_ordered_type(name, schema.field(name).type, source_label)

    qi_coded = [
        q.CodedColumn(name, f"r{i}", f"q{i}", engine.temp_name(f"lookup_q{i}"),
                      null_value=s.null_value if s.nulls == "value" else None,
                      exact_type=engine.exact_text_type(schema.field(name).type))
        for i, (name, s) in enumerate(spec.quasi_identifiers.items())
    ]
    sa_coded = [
        q.CodedColumn(name, f"r{len(qi_coded) + j}", f"s{j}", engine.temp_name(f"lookup_s{j}"),
                      null_value=s.null_value if s.nulls == "value" else None,
                      typed=s.distance == "ordered", exact_type=engine.exact_text_type(schema.field(name).type))
        for j, (name, s) in enumerate(spec.sensitive.items())
    ]
    coded = qi_coded + sa_coded
    policies = {c.raw: _policy(spec, c.name) for c in coded}

    if fingerprint is None and fingerprint_key:
        fingerprint = keyed_fingerprint(engine, source, fingerprint_key)
    params = q.Params()
    values = engine.create_temp_table(engine.temp_name("column_values"),
                                      q.column_values(source.copy(), coded, params, counts), params.values,
                                      owned=True)
    with ExitStack() as readers:
        reader = readers.enter_context(values_reader(engine, values, len(coded)))
        input_rows, nulls = _null_counts(reader, coded)
        if not input_rows:
            raise NoRowsError(f"{source_label} has no rows: there is nothing to anonymize")
        if input_rows > MAX_ROWS:
            raise DataError(f"{source_label} has {input_rows:,} rows; sqlclose's search counts at most {MAX_ROWS:,} "
                            "rows exactly (its discernibility, the sum of squared class sizes, is a 64-bit integer): "
                            "anonymize a part of the table at a time")
        # Rows with a NULL under nulls = "drop" are not anonymized: every check, rule hierarchy and
        # domain is of the rows kept. Built from all rows, a dropped row's value shaped a rule's
        # leaves (and with them whether a column is written with a dictionary type) or stopped the job.
        drop = [c.name for c in coded if policies[c.raw] == "drop" and nulls[c.raw]]
        effective = q.without_nulls(source, drop) if drop else source
        if drop:
            params = q.Params()
            values = engine.create_temp_table(engine.temp_name("kept_values"), q.column_values(
                effective.copy(), coded, params, counts), params.values, owned=True)
            reader = readers.enter_context(values_reader(engine, values, len(coded)))
            kept, nulls = _null_counts(reader, coded)
            if not kept:
                raise DataError(_all_dropped_message(drop, source_label))
        _refuse_nulls(coded, nulls, policies, source_label)
        _check_values(engine, effective, schema, spec, coded, source_label, kind, histogram=counts is not None)
        types = column_types or {}
        qis = [QuasiIdentifierColumn(c.name, qi_hierarchy(reader, c, spec.quasi_identifiers[c.name],
                                                           types.get(c.name) or schema.field(c.name).type,
                                                           source_label, _users_dialect(spec, kind), kind,
                                                           _dated(engine, effective, c.name, schema)), c)
               for c in qi_coded]
        for qi in qis:
            _register_qi_lookup(reader, qi)
        advice = LeafAdvice.of(spec, schema, kind, given_path)
        leaf_counts = _qi_leaf_counts(reader, qis, advice)
        unmeasured = [_sensitive_column(reader, c, spec.sensitive[c.name], advice) for c in sa_coded]

    params = q.Params()
    ranges = [qi.hierarchy.code_range for qi in qis] + [len(sa.domain) for sa in unmeasured]
    order = _base_order(qi_coded, sa_coded, ranges) if engine.orders_tables else []
    space = math.prod(len(qi.hierarchy.leaves) for qi in qis) * math.prod(len(sa.domain) for sa in unmeasured)
    grouped = _groups_base(engine, source, coded, input_rows, space, counts)
    packing = None if grouped else _packing(qis, unmeasured)
    stored = None
    if packing is not None:
        scan = keyed_rows(source, qi_coded, sa_coded, packing, params, ranges, order, engine.looked_up)
        base, stored = store_as_keys(engine, scan, params.values, qi_coded, sa_coded, packing, ranges)
    else:
        scan = q.base_histogram(source.copy(), coded, params, counts, ranges, order, grouped, engine.looked_up)
        base = engine.create_temp_table(engine.temp_name("base_histogram"), scan, params.values, owned=True)
    margins = engine.fetch(q.histogram_margins(base, [sa.coded.code for sa in unmeasured]), owned=True)
    base_rows, rows = _histogram_size(margins, len(unmeasured))
    sas = [dataclasses.replace(sa, q=_reference_counts(margins, j, sa)) for j, sa in enumerate(unmeasured)]
    return Problem(engine, effective, columns, qis, sas, list(spec.identifiers), spec.k, spec.suppression,
                   rows, input_rows, fingerprint, base, int(base_rows), values, leaf_counts, released, source_label,
                   kind, base_grouped=grouped, stored_keys=stored, base_scan=scan)


def _packing(qis: Sequence[QuasiIdentifierColumn], sas: Sequence[SensitiveColumn]) -> Packing | None:
    return Packing.of([qi.hierarchy.divisors for qi in qis], [len(s.domain) for s in sas])


def _users_dialect(spec: Spec, kind: str = mending.QUERY) -> str | None:
    """The SQL dialect a fix the user writes is in: a warehouse's, as the run names it (``kind``, a
    warehouse's of the ``--dialect`` given) or else the spec; None for the engine's own (a histogram
    read by DuckDB is fixed in the warehouse's SQL)."""
    if mending.is_warehouse(kind) and ":" in kind:
        return mending.dialect_of(kind)
    source = spec.source
    return source.dialect if source is not None and source.kind == "warehouse" else None


def _check_values(engine: Engine, source: exp.Expression, schema: pa.Schema, spec: Spec,
                  coded: list[q.CodedColumn], source_label: str, kind: str, histogram: bool = False) -> None:
    """The checks of the rows kept (``source``, of the input's ``schema``): an ordered sensitive
    column's floats, a NULL stand-in's text; ``kind``: where a fix is said (``model.mending``).
    ``histogram``: the source is the warehouse path's histogram, whose fixes are made in the warehouse
    (it has no [source] nulls or query)."""
    for name, s in spec.sensitive.items():
        if s.distance == "ordered" and pa.types.is_floating(schema.field(name).type):
            _refuse_odd_floats(engine, source, name, source_label, kind, histogram)
        elif pa.types.is_floating(schema.field(name).type):
            _refuse_two_spellings(engine, source, name, source_label, kind, histogram)
    for name in spec.quasi_identifiers:
        if pa.types.is_floating(schema.field(name).type):
            _refuse_two_spellings(engine, source, name, source_label, kind, histogram)
    for c in coded:
        if c.null_value is not None:
            _refuse_colliding_stand_in(engine, source, c, source_label)


def _null_counts(reader: ValuesReader, coded: list[q.CodedColumn]) -> tuple[int, dict[str, int]]:
    """The rows the column values were grouped from, and their NULLs per raw column."""
    nulls = reader.engine.fetch_row(q.null_counts(reader.table, coded), owned=True)
    return int(nulls.pop("__sqlclose_rows") or 0), nulls


def _all_dropped_message(drop: list[str], source_label: str) -> str:
    """Every row held a NULL in a column under nulls = "drop" (``drop``, the columns that dropped some)."""
    return (f"every row of {source_label} was dropped for a NULL under nulls = \"drop\" ({named('column', drop)}): "
            "there is nothing to anonymize; set nulls = \"value\" (treat NULL as the value null_value) for "
            "some of them in the spec, or clean the data")


def _refuse_nulls(coded: list[q.CodedColumn], nulls: dict[str, int], policies: dict[str, str],
                  source_label: str) -> None:
    """NULLs under ``nulls = "error"`` raise, counted over the rows kept: a row dropped for another
    column's NULL is in no check."""
    for c in coded:
        if nulls[c.raw] and policies[c.raw] == "error":
            raise NullsError(
                f"column {name_shown(c.name)} has {counted(nulls[c.raw], 'NULL value')} in {source_label}; set nulls = "
                "\"drop\" (remove those rows) or nulls = \"value\" (treat NULL as the value null_value) for it in the "
                "spec, or clean the data", c.name, int(nulls[c.raw]))


def _groups_base(engine: Engine, source: exp.Expression, coded: list[q.CodedColumn], input_rows: int,
                 space: int, counts: str | None) -> bool:
    """Whether the base histogram groups the source's rows by their codes (else one row per row).
    ``space``: how many combinations the codes allow; when that is below the share, grouping pays
    without an estimate. A counted source (a histogram) is always grouped; so is every source on
    an engine that does not offer it (``Engine.ungrouped_base``)."""
    enough = UNGROUPED_SHARE * input_rows  # combinations that make grouping not worth its hash table
    if counts is not None or not engine.ungrouped_base or input_rows < UNGROUPED_MIN_ROWS or space < enough:
        return True
    found = engine.fetch(q.estimated_combinations(source.copy(), [c.name for c in coded]))
    return int(found.column("combinations")[0].as_py() or 0) < enough


def _base_order(qis: list[q.CodedColumn], sas: list[q.CodedColumn], ranges: list[int]) -> list[str]:
    """The base histogram's storage order: the sensitive codes first (every node groups by them
    whole), then the QI codes of the widest range. Replaying the groupings of the base of a 10 M-row
    search took 5.6–5.8 s over the base so sorted (then by every other QI, the widest first),
    6.1–6.3 s with the QIs first, and 7.6–9.0 s unsorted (docs/performance.md, twentieth round).
    The QIs after the widest bought nothing since the search groups packed keys: at 10 M rows
    the sorted pass took 0.75–0.89 s without them against 0.95–1.07 s, the search 1.94–2.08 s
    either way (with 5 % suppression 6.1–6.2 s either way); sorted by the sensitive codes alone,
    the search took 0.3 s more (seventy-ninth round)."""
    if not qis:  # `sqlclose hierarchy show` of a sensitive column prepares it without the QIs
        return [c.code for c in sas]
    widest = max(range(len(qis)), key=lambda i: ranges[i])
    return [c.code for c in sas] + [qis[widest].code]


def _histogram_size(margins: pa.Table, codes: int) -> tuple[int, int]:
    """The base histogram's rows and the input rows they count: the row of its margins
    (``q.histogram_margins`` over ``codes`` columns) grouped by no column (every ``g`` is 1)."""
    whole = np.ones(margins.num_rows, dtype=bool)
    for j in range(codes):
        whole &= numpy_of(margins.column(f"g{j}")) != 0
    i = int(np.flatnonzero(whole)[0])  # read by index: Table.filter imports pyarrow.compute (and pandas)
    return int(margins.column("base_rows")[i].as_py()), int(margins.column("rows")[i].as_py() or 0)


def _reference_counts(margins: pa.Table, j: int, sa: SensitiveColumn) -> np.ndarray:
    """The whole (kept) table's counts over a sensitive column's domain, t-closeness's Q: the
    ``j``-th margin of ``q.histogram_margins``, its rows grouped by the column (``g{j}`` is 0)."""
    keep = numpy_of(margins.column(f"g{j}")) == 0
    codes = numpy_of(margins.column(sa.coded.code))[keep]
    rows = numpy_of(margins.column("rows"))[keep].astype(np.float64)
    return np.bincount(codes, weights=rows, minlength=len(sa.domain))


def _dated(engine: Engine, source: exp.Expression, name: str, schema: pa.Schema) -> Callable[[list[str]], list[str]]:
    """The texts the dates rule reads a column's values' days from: an instant's as the session's
    zone writes it (``Engine.instants_as_written``; Spark's statements write it in UTC, a day
    before New York's just after midnight), any other value's its own."""
    kind = schema.field(name).type
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        return functools.partial(engine.instants_as_written, source=source, column=name)
    return lambda texts: texts


def released_columns(spec: Spec, columns: list[str], source_label: str) -> list[str]:
    """The columns a release holds, in input order: quasi-identifiers, sensitive columns and, when
    the spec says ``others = "keep"``, the undeclared ones. Undeclared columns with no policy are
    refused: nobody should publish a column they never looked at."""
    declared = set(spec.declared_columns)
    others = [c for c in columns if c not in declared]
    if others and spec.others is None:
        listed = ", ".join(name_shown(c) for c in others[:MAX_LISTED_VALUES])
        more = f" and {len(others) - MAX_LISTED_VALUES} more" if len(others) > MAX_LISTED_VALUES else ""
        raise DataError(f"{source_label} has {counted(len(others), 'column')} the spec does not mention: "
                        f"{listed}{more}; say what happens to them with others = \"keep\" (release them unchanged) or "
                        "others = \"drop\" at the top of the spec, or list them under identifiers")
    keep = set(spec.quasi_identifiers) | set(spec.sensitive) | (set(others) if spec.others == "keep" else set())
    return [c for c in columns if c in keep]


def _refuse_unreached_floats(schema: pa.Schema, released: list[str], source_label: str) -> None:
    """A released column holding floats inside a fixed-size list of nested values: no SQL tells
    NaN payloads apart and the release's NaN rewrite does not reach these (``model.arrow_types``),
    so two orders of one table gave two files (review of the ninety-first round)."""
    told = [name for name in released if unreached_float(schema.field(name).type)]
    if told:
        raise DataError(f"column {name_shown(told[0])} in {source_label} holds floating-point numbers inside a "
                        "fixed-size list of nested values (e.g. STRUCT(a DOUBLE)[2]), whose NaNs a release cannot "
                        "write as one: NaNs differing only in their payload would be written in the input's order; "
                        "give the column as a list (a [source] query's CAST to STRUCT(a DOUBLE)[]), or leave it out "
                        "(others = \"drop\", or list it under identifiers)")


def _refuse_odd_floats(engine: Engine, source: exp.Expression, name: str, source_label: str, kind: str,
                       histogram: bool = False) -> None:
    """An ordered domain holds neither NaN nor ±inf (they would sort to its top), nor -0.0 beside
    0.0: one number, grouped as one value that keeps one of their texts, so the rows of the other
    would find no code and not be counted. Both asked in one pass over the column."""
    found = engine.fetch_row(q.float_checks(source, name, engine.is_nan))
    if found["non_finite"] and histogram:
        raise DataError(f"column {name_shown(name)} in {source_label} has "
                        f"{counted(found['non_finite'], 'NaN or infinite value')}, which "
                        f"{agreeing(found['non_finite'], 'has', 'have')} no place in an ordered distance; clean them "
                        "in the warehouse table (or count "
                        "a view of it that makes them NULL, with nulls = \"drop\" or a null_value for the column), "
                        "then run `sqlclose sql` and export again")
    if found["non_finite"]:
        raise DataError(f"column {name_shown(name)} in {source_label} has "
                        f"{counted(found['non_finite'], 'NaN or infinite value')}, which "
                        f"{agreeing(found['non_finite'], 'has', 'have')} no place in an ordered distance; clean "
                        "them, or set nulls for them and nulls = \"drop\"")
    zeros = _minus_zero(engine, found)
    if zeros and histogram:
        raise DataError(f"column {name_shown(name)} in {source_label} holds {zeros}; an ordered distance needs one: "
                        f"normalize it in the warehouse (e.g. a view selecting {minus_zero_made_zero(name, kind)}, as "
                        "[source] table), then run `sqlclose sql` and export again — or choose another distance")
    if zeros:
        raise DataError(f"column {name_shown(name)} in {source_label} holds {zeros}; an ordered distance needs one: "
                        f"normalize it {_in_the_source(kind, name)} or choose another distance")


def _minus_zero(engine: Engine, found: dict) -> str | None:
    """What a column's -0.0 (``found``: ``q.float_checks``' counts) does to the search, said for a
    message; None when nothing. Beside 0.0 it is one number written two ways; alone, on an engine
    whose GROUP BY makes it 0.0 (Spark), no row holds the text its domain or leaves then keep."""
    if found["negative"] and found["positive"]:
        return "both -0.0 and 0.0, one number written two ways"
    if found["negative"] and engine.groups_minus_zero_as_zero:
        return f"-0.0, which the {engine.name} engine groups as 0.0 (no row then holds the text it keeps)"
    return None


def _refuse_two_spellings(engine: Engine, source: exp.Expression, name: str, source_label: str, kind: str,
                          histogram: bool = False) -> None:
    """A floating-point quasi-identifier's or sensitive column's values are told apart by their
    text (its leaves, its domain), but compared as numbers by the release's re-check: -0.0 beside
    0.0, or NaN beside -NaN, were two values to the search and one to the re-check, which then
    refused the search's node (its classes, l-diversity, t) and the rows it wrote as altered. One
    pass over the column."""
    spellings = _float_spellings(engine, source, name)
    if spellings is None:
        return
    zeros, fix = spellings
    where = ("in the warehouse (a view selecting it, as [source] table), then run `sqlclose sql` and export again "
             f"(e.g. {_fix_text(fix, name, kind)})" if histogram else _in_the_source(kind, name, fix))
    raise DataError(f"column {name_shown(name)} in {source_label} holds {zeros}, which its classes and the release's "
                    f"check would not count alike: normalize it {where}")


# The two fixes a float column written two ways is told: -0.0 made 0.0, NaN made NULL.
MINUS_ZERO, NAN = "-0.0", "NaN"


def _in_the_source(kind: str, name: str, fix: str = MINUS_ZERO) -> str:
    """Where and how a message says to normalize a float column: in the DataFrame or Arrow table
    given (neither takes a [source] query, which the message had named; both fixes said, in pandas' or
    pyarrow's own call), else in the SQL its source takes (``model.mending``: a [source] query, a
    relation's or a view of a caller's table, a Spark DataFrame's expression), by the source's ``kind``."""
    if kind == mending.PANDAS:  # a float64 column's NaN reaches Arrow as NULL, a pd.ArrowDtype's as NaN
        return (f"in the DataFrame first (e.g. df[{name_shown(name)}] = df[{name_shown(name)}] + 0.0, which turns -0.0 "
                "into 0.0; a NaN: "
                f"df[{name_shown(name)}] = df[{name_shown(name)}].astype('float64'), which reads NaN as missing)")
    if kind == mending.ARROW:
        return (f"in the table first (e.g. pyarrow.compute.add(table[{name_shown(name)}], 0.0), which turns -0.0 into "
                "0.0; a NaN: pyarrow.compute.if_else(pyarrow.compute.is_nan(…), None, …))")
    sql, effect = _fix_sql(fix, name, kind)
    return mending.mended(kind, name, sql, "", "", f", which {effect}")


def _fix_sql(fix: str, name: str, kind: str) -> tuple[exp.Expression, str]:
    """``fix`` (``MINUS_ZERO`` or ``NAN``) for column ``name`` as a tree the SQL of a source of ``kind``
    runs (``mending.source_sql`` renders it, the name quoted as that SQL quotes one: a name with a
    space, unquoted, made a statement that did not run), and what it does. -0.0 is made 0.0 by adding a
    zero of the narrowest float, which keeps a 4-byte float one and a double a double: Postgres's
    ``real + 0.0`` and Spark's (ANSI mode, Spark 4's default) ``FLOAT + 0`` or ``+ 0.0`` are doubles,
    whose text of the value is another (0.1 written 0.10000000149011612); DuckDB's ``+ 0.0`` keeps it."""
    column = exp.column(name, quoted=True)
    if fix == MINUS_ZERO:
        duckdb = mending.dialect_of(kind) == "duckdb"
        zero = exp.Literal.number("0.0") if duckdb else exp.cast(exp.Literal.number(0), "FLOAT")
        return exp.Add(this=column, expression=zero), "turns -0.0 into 0.0"
    kept = _not_nan(column, mending.dialect_of(kind))
    return (exp.Case(ifs=[exp.If(this=kept, true=column.copy())]),
            "makes NaN NULL, with nulls = \"drop\" or a null_value for the column")


def _not_nan(column: exp.Expression, dialect: str) -> exp.Expression:
    """True where ``column`` holds a number other than NaN (NULL where NULL), in ``dialect``'s own words:
    a warehouse histogram's advice was DuckDB's ``isfinite``, which none of the others has (ninety-ninth
    round). Postgres and Snowflake compare every NaN equal to 'NaN' (a literal taking the column's type);
    BigQuery and Trino say ``is_nan``, Spark ``isnan``; DuckDB's ISNAN may be folded to false over a
    Parquet file (``DuckDBEngine.is_nan``), so there it is finite or infinite."""
    if dialect in ("postgres", "snowflake"):
        return exp.NEQ(this=column, expression=exp.Literal.string("NaN"))
    if dialect in ("bigquery", "trino"):
        return exp.Not(this=_call("IS_NAN", column))
    if dialect == "spark":
        return exp.Not(this=_call("isnan", column))
    return exp.or_(_call("isfinite", column), _call("isinf", column.copy()))


def _call(function: str, column: exp.Expression) -> exp.Expression:
    """``function(column)`` as named (sqlglot renames a known one per dialect, which some warehouses lack)."""
    return exp.Anonymous(this=function, expressions=[column])


def _fix_text(fix: str, name: str, kind: str) -> str:
    """``fix`` said in a message: the expression in the SQL of a source of ``kind``, then what it does."""
    sql, effect = _fix_sql(fix, name, kind)
    return f"{mending.source_sql(kind, sql)}, which {effect}"


def float_spellings(engine: Engine, source: exp.Expression, name: str,
                    kinds: Sequence[str] = (mending.QUERY,)) -> tuple[str, str] | None:
    """Two spellings of one value a floating-point column holds (-0.0 beside 0.0, NaN beside -NaN,
    or one the engine's grouping changes), said for a message, and where and how to normalize it in
    each table ``source`` reads, a source of each of ``kinds`` (``Opened.kind``: check's table and its
    reference), as that source takes it: ``in … (e.g. …)``; None when none. One pass over the column.
    A file or query is told the expression (in the table checked); a DataFrame, an Arrow table, a
    relation, a caller's table were told it too, which none of them runs (ninety-eighth round)."""
    spellings = _float_spellings(engine, source, name)
    if spellings is None:
        return None
    held, fix = spellings
    if len(set(kinds)) == 1:
        return held, _normalized_in(kinds[0], name, fix, "the table checked")
    roles = ("the table checked", "the reference")
    return held, ", and ".join(_normalized_in(kind, name, fix, role) + ("" if kind == mending.QUERY else f" for {role}")
                               for kind, role in zip(kinds, roles))


def _normalized_in(kind: str, name: str, fix: str, table: str) -> str:
    """Where and how check's ``table`` of ``kind`` normalizes a float column: a file's or a query's in the
    table itself (check takes no [source] query beside a file), any other as anonymize tells it."""
    if kind == mending.QUERY:
        return f"in {table} (e.g. {_fix_text(fix, name, kind)})"
    return _in_the_source(kind, name, fix)


def _float_spellings(engine: Engine, source: exp.Expression, name: str) -> tuple[str, str] | None:
    """``float_spellings`` with the fix by its name (``MINUS_ZERO``, ``NAN``)."""
    found = engine.fetch_row(q.float_spellings(source, name, engine.is_nan, engine.has_minus_sign))
    if zeros := _minus_zero(engine, found):
        return zeros, MINUS_ZERO
    if found["negative_nan"] and found["positive_nan"]:
        return "NaN both with and without a minus sign (-nan and nan), one value written two ways", NAN
    if found["negative_nan"] and engine.cuts_negative_nan_text:
        return (f"NaN with a minus sign (-nan), whose text the {engine.name} engine may cut when it groups it (it "
                "sizes a float's text by the column's statistics, which a Parquet file pyarrow writes leaves NaN out "
                "of; refused from every source alike)"), NAN
    return None


def minus_zero_made_zero(name: str, kind: str = mending.QUERY) -> str:
    """The fix a message gives for -0.0 beside 0.0 in column ``name``, in the SQL of a source of
    ``kind``: an expression, then ", which" and what it does."""
    return _fix_text(MINUS_ZERO, name, kind)


def nan_made_null(name: str, kind: str = mending.QUERY) -> str:
    """The fix a message gives for NaN written two ways in column ``name``, in the SQL of a source of ``kind``."""
    return _fix_text(NAN, name, kind)


def _refuse_colliding_stand_in(engine: Engine, source: exp.Expression, c: q.CodedColumn, source_label: str) -> None:
    """A NULL stand-in that is also a real value would merge the two in the search but not in the
    release (which keeps NULL at level 0, and a sensitive column's NULL as NULL): the search would
    judge another table than the one released."""
    params = q.Params()
    if engine.fetch_row(q.count_text_equal(source, c.name, c.null_value, params), params.values)["n"]:
        raise DataError(f"column {name_shown(c.name)}: null_value = {c.null_value!r} is also a real value in "
                        f"{source_label}; choose a stand-in that does not occur in the data")


def _policy(spec: Spec, name: str) -> str:
    entry = spec.quasi_identifiers.get(name) or spec.sensitive[name]
    return entry.nulls


def _check_columns(spec: Spec, columns: list[str], source_label: str, names_may_be_data: bool) -> None:
    require_columns([*spec.quasi_identifiers, *spec.sensitive, *spec.identifiers], columns, source_label,
                    names_may_be_data)


def require_columns(names: list[str], columns: list[str], source_label: str,
                    names_may_be_data: bool = True) -> None:
    """Every name must be a column; the error suggests close names and lists the columns.
    ``names_may_be_data``: the names may be a CSV file's first row of data (``shows_columns``)."""
    for name in names:
        if name not in columns:
            raise DataError(missing_column(name, columns, source_label, names, names_may_be_data))


# A UTF-8 byte order mark (EF BB BF) read as Latin-1 (or Windows-1252, ISO 8859-15: alike there).
BOM_AS_LATIN1 = "\ufeff".encode("utf-8").decode("latin-1")


def missing_column(name: str, columns: list[str], source_label: str, declared: Iterable[str],
                   names_may_be_data: bool = True) -> str:
    """That ``name`` is not a column, with the close names and the columns there are — those only
    where the source has one of the ``declared`` names or is no CSV file (``columns_told``)."""
    if columns and columns[0].startswith(BOM_AS_LATIN1) and columns[0].removeprefix(BOM_AS_LATIN1) == name:
        # "did you mean 'ï»¿zip'?": the fix is the file's encoding, not the name (the ninety-fourth round)
        return (f"column {name_shown(name)} is not in {source_label}: the file starts with a UTF-8 byte order mark, "
                f"which the encoding it is read with takes for the characters {BOM_AS_LATIN1!r} at the start of its "
                f"first column's name ({name_shown(columns[0])}): the file is UTF-8, read it as UTF-8 (leave [source] "
                "encoding out, or set encoding = \"utf-8\")")
    shown = shows_columns(declared, columns, names_may_be_data)
    cased = [c for c in columns if c.casefold() == name.casefold()]  # names are matched as written
    close = (cased or difflib.get_close_matches(name, columns, n=3)) if shown else []
    hint = f"; did you mean {', '.join(map(name_shown, close))}?" if close else ""
    return (f"column {name_shown(name)} is not in {source_label}{hint} "
            f"({columns_told(declared, columns, names_may_be_data)})")


def shows_columns(declared: Iterable[str], columns: Sequence[str], names_may_be_data: bool = True) -> bool:
    """Whether an error may list a source's ``columns``: when it has one of the ``declared`` names,
    or when they cannot be a CSV file's first row of data (``names_may_be_data`` False: a Parquet
    file's, a database's or an Arrow table's names are its schema). A CSV file without a header line
    has its first row read as its column names, and listing them put a person's row — a sensitive
    value too — in the error, the job's log and ``--json``'s document (the sixty-second round's review)."""
    return not names_may_be_data or bool(set(declared) & set(columns))


def columns_told(declared: Iterable[str], columns: Sequence[str], names_may_be_data: bool = True) -> str:
    """The source's columns as an error lists them, or why they are not listed (``shows_columns``)."""
    if shows_columns(declared, columns, names_may_be_data):
        return f"its columns: {', '.join(map(name_shown, columns))}"
    return (f"it has {counted(len(columns), 'column')}, none of those asked for; they are not listed, since a file "
            "without a header line has its first row of data read as the names: check that its first line names "
            "its columns and that it is the file meant")


def _register_qi_lookup(reader: ValuesReader, qi: QuasiIdentifierColumn) -> None:
    """The lookup the base histogram joins, on the source's engine (and on a local reader's, for
    the leaf check and counts)."""
    h = qi.hierarchy
    data: dict[str, Any] = {"value": leaf_labels(h, 0), "code": h.leaf_codes}
    for level in range(1, h.levels):
        data[f"label_{level}"] = leaf_labels(h, level)
    reader.add_lookup(qi.coded.lookup, arrow_table(data), load=True)


def _check_leaves(reader: ValuesReader, c: q.CodedColumn, hierarchy: Hierarchy | None, advice: LeafAdvice) -> None:
    """A sensitive column's values its lookup lacks stop the job, counted, never shown; the whole
    numbers written with a fraction among them counted too (``_sensitive_whole_numbers``)."""
    missing = reader.engine.fetch(q.missing_values(reader.table, c), owned=True)
    if missing.num_rows == 0:
        return
    values, rows = missing.column("v").to_pylist(), sum(missing.column("n").to_pylist())
    if hierarchy is None:  # the domain is the column's own values, read by the engine's cast
        raise DataError(f"column {name_shown(c.name)} holds {counted(len(values), 'value')} (in "
                        f"{counted(rows, 'row')}) that {agreeing(len(values), 'is', 'are')} not in its domain as read "
                        "(the values are not shown: a sensitive value is what a release protects)")
    told = values_not_leaves(c.name, hierarchy, values, rows, how_to_add_leaves(hierarchy))
    # The stand-in told from the spec and the hierarchy alone, whether or not the column holds a NULL:
    # it is the spec's text, and a NULL among the values would be a fact of the data.
    told += _stand_in_no_leaf(c.null_value, hierarchy)
    raise DataError(told + _sensitive_whole_numbers(reader, c, hierarchy, advice))


def _sensitive_whole_numbers(reader: ValuesReader, c: q.CodedColumn, hierarchy: Hierarchy,
                             advice: LeafAdvice) -> str:
    """Error path only: the whole-numbers hint (``LeafAdvice.whole_numbers``) for a sensitive column.
    Its lookup holds only the leaves the data holds (``sensitive_domain``), never 29 where the data
    writes 29.0, so the count is made against a table of every leaf, registered here."""
    if c.name not in advice.fractions:
        return ""
    leaves = reader.engine.temp_name("leaves")
    reader.add_lookup(leaves, arrow_table({"value": hierarchy.leaves}))
    return advice.whole_numbers(reader, c.name, c, leaves)


def _qi_leaf_counts(reader: ValuesReader, qis: list[QuasiIdentifierColumn],
                    advice: LeafAdvice) -> list[np.ndarray]:
    """Records per leaf of every quasi-identifier (``hierarchy.leaves`` order), read with the
    values its hierarchy lacks in one query (``q.values_on_leaves``): the first column (in spec
    order) with such values raises, as the column-by-column checks would, with ``advice``."""
    if not qis:  # a sensitive column's hierarchy prepared alone (api.hierarchy_of)
        return []
    found = reader.engine.fetch(q.values_on_leaves(reader.table, [qi.coded for qi in qis]), owned=True)
    position = numpy_of(found.column("col")).astype(np.int64)
    codes = numpy_of(found.column("code")).astype(np.int64)
    known = codes >= 0
    if not known.all():
        values, counts = found.column("v").to_pylist(), found.column("n").to_pylist()
        first = int(position[~known][0])
        rows = np.flatnonzero(~known & (position == first)).tolist()
        qi = qis[first]
        _not_leaves(qi.name, [values[i] for i in rows], f"hierarchy {qi.hierarchy.origin}", [counts[i] for i in rows],
                    qi.hierarchy, qi.coded.null_value, advice.lister(qi.name),
                    advice.whole_numbers(reader, qi.name, qi.coded))
    n = numpy_of(found.column("n")).astype(np.float64)
    counts = [qi.hierarchy.leaf_totals(codes[position == i], n[position == i]) for i, qi in enumerate(qis)]
    for c in counts:
        c.flags.writeable = False  # shared by every reader of the problem's leaf counts
    return counts


def _check_leaves_cover(reader: ValuesReader, c: q.CodedColumn, values: list[str], hierarchy: Hierarchy,
                        advice: LeafAdvice) -> None:
    """An ordered sensitive column's values (its domain, every distinct value) its hierarchy lacks
    stop the job, counted, never shown, with the whole-numbers hint."""
    missing = sorted(set(values) - set(hierarchy.leaves))
    if missing:
        raise DataError(values_not_leaves(c.name, hierarchy, missing, None, how_to_add_leaves(hierarchy))
                        + _sensitive_whole_numbers(reader, c, hierarchy, advice))


def _not_leaves(column: str, values: list, where: str, counts: list[int], hierarchy: Hierarchy,
                stand_in: str | None, lister: str, whole_numbers: str = "") -> None:
    """The error for quasi-identifier values a hierarchy lacks: counted, never shown (a job's log
    keeps it; a quasi-identifier's value tells a person apart), with how to add them in the form the
    hierarchy was given in. ``NotLeavesError.named`` names the first few, with their row counts,
    for ``sqlclose hierarchy validate --show-values``; ``lister`` is what the message says names
    them (``LeafAdvice.lister``). ``stand_in``: the spec's ``null_value``, named as such in
    ``named`` where it is one of them; the error tells it from the spec and the hierarchy alone, as
    a sensitive column's does (whether the column holds a NULL is a fact of the data).
    ``whole_numbers``: the hint for a floating-point column's (``LeafAdvice.whole_numbers``)."""
    quoting = "" if _given_inline(hierarchy) else _quoting_counted(values)
    said_after = quoting + _stand_in_no_leaf(stand_in, hierarchy) + whole_numbers

    def told(lister: str) -> str:  # the command that lists them: a spec column's validate, or a caller's own flag
        return values_not_leaves(column, hierarchy, values, sum(counts), how_to_add_leaves(hierarchy),
                                 not_shown=QI_NOT_SHOWN.format(lister=lister)) + said_after

    raise NotLeavesError(told, lister, _listed(column, values, where, counts, hierarchy, stand_in) + whole_numbers,
                         column)


def _stand_in_no_leaf(stand_in: str | None, hierarchy: Hierarchy) -> str:
    """That nulls = "value"'s stand-in is no leaf, told whether or not the column holds a NULL."""
    if stand_in is None or stand_in in hierarchy.leaves:
        return ""
    return (f"; with nulls = \"value\" a NULL is read as {stand_in!r}, which is no leaf of the hierarchy: add it as "
            "one if the column holds NULLs")


def _listed(column: str, values: list, where: str, counts: list[int], hierarchy: Hierarchy,
            stand_in: str | None) -> str:
    """The values a hierarchy lacks, named: the first few with their row counts, and what tells
    them from the leaves they look like."""
    listed = values[:MAX_LISTED_VALUES]
    twins, invisible = unicode_twins(listed, hierarchy.leaves), format_twins(listed, hierarchy.leaves)
    named = [quoted(v, v in twins or v in invisible) + (" (null_value, the NULLs' stand-in)" if v == stand_in else "")
             for v in listed]
    shown = ", ".join(f"{v} ({counted(n, 'row')})" for v, n in zip(named, counts))
    more = f" and {len(values) - MAX_LISTED_VALUES} more" if len(values) > MAX_LISTED_VALUES else ""
    return (f"column {name_shown(column)}: {counted(len(values), 'value')} "
            f"{agreeing(len(values), 'is not a leaf', 'are not leaves')} of {where}: {shown}{more}; "
            f"{how_to_add_leaves(hierarchy)}, or fix the data"
            f"{'' if _given_inline(hierarchy) else _quoting_hint(listed)}"
            f"{_unicode_form_hint(twins, hierarchy)}{_format_characters_hint(invisible)}")


def _format_characters_hint(twins: dict[str, str]) -> str:
    if not twins:
        return ""
    value, leaf = next(iter(twins.items()))
    return f"; {format_characters_hint(value, leaf, len(twins) - 1)}"


def _unicode_form_hint(twins: dict[str, str], hierarchy: Hierarchy | None) -> str:
    """Values that differ from a leaf only in their Unicode form: both escaped, so the difference
    shows, and how to make them one form (a line typed again is the leaf's, refused as a duplicate)."""
    if not twins:
        return ""
    value, leaf = next(iter(twins.items()))
    line = hierarchy.lines[hierarchy.leaves.index(leaf)] if hierarchy.lines else None
    return f"; {unicode_form_hint(value, leaf, line, len(twins) - 1)}"


def _given_inline(hierarchy: Hierarchy | None) -> bool:
    """A tree or a Python hierarchy: no file, so no lines (a rule's hierarchy lacks no value)."""
    return hierarchy is not None and hierarchy.lines is None and hierarchy.rule is None


def how_to_add_leaves(hierarchy: Hierarchy | None) -> str:
    """How a value is added to a hierarchy as the spec gives it: a file's line, a tree's leaf
    (a tree has no lines: the advice to add one was a file's syntax), a Python hierarchy's row."""
    if not _given_inline(hierarchy):
        return "add a line for each to the hierarchy (leaf;…;*)"
    if hierarchy.origin.startswith("tree"):
        return f"add each to the tree, as a leaf of its group (e.g. {_tree_group_example(hierarchy)})"
    return "add a row for each to the hierarchy (leaf, level 1, …, top)"


def _tree_group_example(hierarchy: Hierarchy) -> str:
    """A group of the column's own tree with a leaf added, as the spec writes it: ``old = […, "…"]``,
    its first leaf's group by name, its leaves never (a leaf is a value the data may hold in one row,
    which the message does not show). The fixed Respiratory = ["flu", "…"] was said of an age too. A
    group named as one of its leaves, or too long to read, is not named either."""
    group = hierarchy.rows[0][1]
    if group in hierarchy.leaves or clipped(group) != group:
        return 'GROUP = […, "…"]'
    key = group if re.fullmatch(r"[A-Za-z0-9_-]+", group) else json.dumps(group, ensure_ascii=False)  # as TOML
    return f'{key} = […, "…"]'


def _quoting_counted(values: list) -> str:
    """``_quoting_hint`` for values counted, not shown: how many need quotes in a hierarchy file."""
    odd = sum(1 for v in values if isinstance(v, str) and (v != v.strip() or v == ""))
    if not odd:
        return ""
    return (f"; {odd} of them {agreeing(odd, 'has', 'have')} spaces around or {agreeing(odd, 'is', 'are')} the "
            "empty text, which a hierarchy file lists quoted (\" F\";… or \"\";…): an unquoted label loses its spaces")


def _quoting_hint(values: list) -> str:
    """How a hierarchy file lists a value with spaces around it, or the empty text: quoted, since
    an unquoted label loses its spaces (model/hierarchy_file.py)."""
    spaced = next((v for v in values if isinstance(v, str) and v != v.strip()), None)
    if spaced is None and "" not in values:
        return ""
    example = '"' + (spaced if spaced is not None else "").replace('"', '""') + '"'
    return f"; in a hierarchy file, quote a value with spaces around it or the empty text: {example};…"




def _sensitive_column(reader: ValuesReader, c: q.CodedColumn, s: Sensitive, advice: LeafAdvice) -> SensitiveColumn:
    hierarchy = static_hierarchy(s.hierarchy, c.name) if s.hierarchy is not None else None
    # The value is typed for ordered distances, so numbers sort as numbers; its text is the engine's
    # own cast, the one the base histogram's join will make: asked on the source's engine.
    ask = reader.at_source() if c.typed else reader
    # Its text alone: a DATE or TIMESTAMP ordered column is no number (Spark refused even to try:
    # review of the ninety-second round).
    domain = sensitive_domain(hierarchy, s.distance,
                              lambda: ArrowValues(distinct_values(ask, c, numbers=False).column("text")), c.null_value)
    # Loaded like the QIs' lookups, a table the engine knows (no faster than registered: 10 M rows,
    # base histogram 2.58–2.82 s loaded, 2.67–2.68 s registered). A release's repetition does not
    # depend on it: a column given as it is is written optional (queries.given_as_is).
    values = domain.arrow if isinstance(domain, ArrowValues) else domain
    ask.add_lookup(c.lookup, arrow_table({"value": values, "code": np.arange(len(domain), dtype=np.int64)}), load=True)
    if hierarchy is not None or not c.typed:
        # A typed column without a hierarchy has for its domain its own values' text, read just now by
        # the very cast the check reads them by, on the same engine and table: no value can lack it.
        # The check was two jobs on Spark (Table 3: 0.3-0.7 s a release).
        _check_leaves(ask, c, hierarchy, advice)
    if hierarchy is not None and s.distance == "ordered":
        _check_leaves_cover(ask, c, domain, hierarchy, advice)
    return SensitiveColumn(c.name, s, domain, hierarchy, coded=c)
