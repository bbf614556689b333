"""``sqlclose.check``: how safe is this table, really?

For any table — a sqlclose release or anyone else's — given its quasi-identifier columns and
sensitive columns: the value each privacy model reaches (k; distinct, entropy and recursive
l-diversity; p; the largest distance of a class from the table for every applicable distance),
the worst classes, pass/fail against the thresholds given, and the records exposed to the
homogeneity, skewness and similarity attacks of Li et al. section 3. All counting is SQL
(``tables``); Python sees one row per (class, sensitive value), a run of classes at a time, and
keeps of each model only what the report shows (``_Worst``, ``_SensitiveTally``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import ValidationError
from sqlglot import exp

from sqlclose.audit import tables, utility
from sqlclose.audit.render import SELF_REFERENCE, render_text
from sqlclose.engine import Engine
from sqlclose.engine.base import FileRead, leaves_as_found
from sqlclose.errors import (
    DataError,
    HierarchyWarning,
    InputError,
    OptionError,
    SensitiveOffHierarchyError,
    SpecError,
)
from sqlclose.model.attributes import (
    SensitiveAttribute,
    is_number_or_time,
    require_ordered_type,
    sensitive_domain,
    values_not_leaves,
)
from sqlclose.model.classes import ClassHistograms
from sqlclose.model.column_names import names_read_for_audit
from sqlclose.model.hierarchy import TOP_LABEL, Hierarchy
from sqlclose.model.sparse_counts import SparseCounts, kept_totals
from sqlclose.model.spec import (
    MAX_DECIMAL_DIGITS,
    QuasiIdentifier,
    Sensitive,
    Spec,
    as_spec,
    static_hierarchy,
    validation_problems,
)
from sqlclose.model.text import counted, given_items, name_shown, named_once
from sqlclose.prepare.problem import float_spellings, how_to_add_leaves, require_columns
from sqlclose.prepare.sources import Opened, open_source, path_format, spec_engine
from sqlclose.privacy.cell_distances import class_distances
from sqlclose.privacy.criteria import Criterion, DistinctLDiversity, EntropyLDiversity, sensitive_criteria
from sqlclose.privacy.distances import ALL_DISTANCES, idle_level_warnings, is_emd
from sqlclose.sql import queries as q
from sqlclose.utility.information_loss import (
    l1_closeness_value,
    l1_closeness_value_of_cells,
    l_diversity_value,
    l_diversity_value_of_cells,
)

DEFAULT_SKEW_RATIO = 3.0


@dataclass
class CheckReport:
    """The audit of one table. ``passed`` is None when no threshold was given."""

    data: dict[str, Any]
    failures: list[str] = field(default_factory=list)
    class_sizes: np.ndarray | None = None  # per class, for charts
    class_distances: dict[str, np.ndarray] = field(default_factory=dict)  # per SA with t: per class
    distributions: dict[str, dict[str, float]] = field(default_factory=dict)  # per SA: value -> rows

    @property
    def passed(self) -> bool | None:
        return self.data["passed"]

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def __str__(self) -> str:
        return render_text(self.data)


def check(source: Any, quasi_identifiers: Sequence[str] | None = None,
          sensitive: Mapping[str, Sensitive | dict | None] | Sequence[str] | None = None, *,
          spec: Spec | str | Path | dict | None = None, k: int | None = None, reference: Any = None,
          skew: float = DEFAULT_SKEW_RATIO, similarity_level: int | None = None, top: int = 10,
          table: str | None = None, delimiter: str | None = None, engine: Engine | None = None) -> CheckReport:
    """Audit ``source`` (a path, ``(connection, table)``, a pyarrow Table or a pandas DataFrame).

    ``quasi_identifiers`` (and ``sensitive`` given as names) may be any sequence of column names: a
    list, a tuple, a pandas Index (``df.columns[:2]``), a numpy array; a text is one name, and a set
    is taken in sorted order (``text.given_items``).
    ``sensitive`` maps each sensitive column to its models and thresholds (a ``Sensitive`` or
    its dict; None or a bare list of names: measure only). ``spec`` takes the quasi-identifiers,
    sensitive models and k of a release spec. ``reference`` is the table whose distribution
    t-closeness compares against (default: the audited table itself; give the release's input
    to reproduce a release report when records were suppressed; refused without a sensitive
    column). ``table`` names the table in a DuckDB database file; ``delimiter`` is the CSV delimiter
    (default: detected); each is refused for a source it does not apply to.
    ``similarity_level``: the level of a sensitive column's hierarchy under which values count as
    similar, for the similarity attack (default 1); given when no sensitive column has a hierarchy,
    it would change nothing, and is refused. Without
    ``engine``, the spec's [engine] runs the queries, or DuckDB as it comes. What Python holds is
    a run of classes at a time (``tables.RUN_BYTES``) and 8 bytes per class for each per-class
    array the report keeps (sizes, and the distances t is judged by).
    """
    hierarchies = {}
    tops: dict[str, str | None] = {}  # a rule's top label, from the spec alone (None: the input's codes tell it)
    reading: FileRead | None = None  # how the reference is read, when the spec says (its [source])
    drop: tuple[str, ...] = ()  # the spec's columns whose NULL rows nulls = "drop" takes out of the reference
    declared: dict[str, str] = {}  # the spec's [source] types of its sensitive columns, for the checked CSV too
    if spec is not None:
        spec = as_spec(spec)
        if engine is None and (made := spec_engine(spec.engine, source)) is not None:  # closed here
            try:
                return check(source, quasi_identifiers, sensitive, spec=spec, k=k, reference=reference, skew=skew,
                             similarity_level=similarity_level, top=top, table=table, delimiter=delimiter,
                             engine=made)
            finally:
                made.close()
        hierarchies = {name: static_hierarchy(s, name) for name, s in spec.quasi_identifiers.items()
                       if s.kind in ("file", "tree", "hierarchy")}  # rule hierarchies need the input's values
        tops = {name: rule_top(s) for name, s in spec.quasi_identifiers.items() if name not in hierarchies}
        qi = _names(quasi_identifiers) or list(spec.quasi_identifiers)
        sensitive = sensitive if sensitive is not None else dict(spec.sensitive)
        k = k if k is not None else spec.k
        # The reference as the release's run read its input: the spec's [source] options (declared
        # types, NULL strings, encoding) and its NULL policies (nulls = "drop": the release measured
        # t against the rows kept).
        reading = spec_reading(spec)
        drop = tuple(name for name, s in [*spec.quasi_identifiers.items(), *spec.sensitive.items()]
                     if s.nulls == "drop")
        declared = _declared_sensitive_types(spec)
    else:
        qi = _names(quasi_identifiers)
    models = _sensitive_models(sensitive)
    k, skew, similarity_level, top = _check_arguments(qi, models, k, skew, similarity_level, top)
    if reference is not None and not models:  # dropped, it changed nothing, as the command refuses it
        raise SpecError("reference is the table t-closeness compares a sensitive column's distribution to, and no "
                        "sensitive column was given: name one (sensitive=[...], or a spec's [sensitive] section), "
                        "or leave reference out")
    refuse_unused_reading_options(source, reference if reading is None else None, table, delimiter)
    given = engine
    # Sensitive columns of a CSV as anonymize reads them: with the spec's declared types, else as text,
    # an ordered one as whole numbers (numbers typed from their text merged "07" and "7" into one value);
    # no [source] nulls (``checked``: an error's hint says what check has).
    options = FileRead(table=table, delimiter=delimiter, types={c: t for c, t in declared.items() if c in models},
                       numeric=tuple(c for c, m in models.items() if m is not None and m.distance == "ordered"),
                       checked=True)
    # names_read_for_audit: a duplicate column is told as read, not "released" (check releases nothing)
    with leaves_as_found(given), names_read_for_audit():  # a caller's engine: what the audit made there goes at its end
        with _types_told_for_check(spec):
            opened = open_source(source, engine, options, lambda name: name in qi or name in models)
        engine, relation, label = opened.engine, opened.relation, opened.label
        try:
            opened.keep_rows()  # a caller's table is read where it lives, at every pass of the audit
            require_columns([*qi, *models], engine.schema(relation).names, label, opened.names_may_be_data)
            with _types_told_for_check(spec):
                ref, ref_label, ref_opened = _reference(engine, reference, list(models), reading or dataclasses.replace(
                    options, table=None), drop) if reference is not None else (None, "", None)
            if ref_opened is not None:
                ref_opened.keep_rows()
            if ref is not None:
                relation, ref = _one_number_type(engine, relation, ref, list(models))
            kinds = [opened.kind] + ([ref_opened.kind] if ref_opened is not None else [])
            audit = _audit(engine, relation, label, qi, models, k, ref, ref_label, skew, similarity_level, top, kinds)
            shares = utility.value_shares(engine, relation, qi, hierarchies, ref, tops)
            audit.data["utility"].update(utility.table_shares(shares), quasi_identifiers=shares)
            _refuse_changed_while_checked([opened, ref_opened])
            return audit
        finally:
            if given is None:
                engine.close()


def rule_top(s: QuasiIdentifier) -> str | None:
    """The top label of a rule's hierarchy, as the spec alone gives it: ``*`` for bands and dates; for
    a mask with a declared ``length``, the code wholly masked when its last step masks every
    character (``*****``), else a top of its own, ``*`` (``hierarchy.mask_hierarchy``). None for a
    mask without ``length``: its top depends on the codes' length, which only the input tells."""
    if s.kind != "mask":
        return TOP_LABEL
    steps = s.mask_steps
    if s.length is None or steps is None:
        return None
    return s.mask_char * s.length if steps[-1] == s.length else TOP_LABEL


def spec_reading(spec: Spec | None) -> FileRead | None:
    """How the spec's run read its input (its ``[source]`` options, its ordered columns as numbers),
    which check reads a reference by; None when it says nothing a reference file is read by."""
    if spec is None or spec.source is None or spec.source.kind in ("query", "warehouse"):
        return None
    return FileRead.of(spec.source, tuple(n for n, s in spec.sensitive.items() if s.distance == "ordered"))


_FORMAT_NAMES = {"csv": "a CSV file", "parquet": "a Parquet file", "duckdb": "a DuckDB database", None: "not a file"}


def refuse_unused_reading_options(source: Any, reference: Any, table: str | None, delimiter: str | None,
                                  names: tuple[str, str] = ("table", "delimiter")) -> None:
    """``table`` names a table of a DuckDB database file, ``delimiter`` a CSV file's (the checked
    table's, or ``reference``'s, when it is read with these options): given for a source it does not
    apply to, it was dropped and the audit passed as if it had been applied. ``names``: the options
    as the caller gave them (``--table``, ``--delimiter`` on the command line)."""
    is_path = isinstance(source, (str, Path))
    kind = path_format(Path(source)) if is_path else None
    if is_path and kind is None:
        return  # no format told: reading it says so
    what = "a Parquet folder" if is_path and Path(source).expanduser().is_dir() else _FORMAT_NAMES[kind]
    shown = f"{source} is {what}" if is_path else f"the source (a {type(source).__name__}) is not a file"
    if table is not None and kind != "duckdb":
        raise SpecError(f"{names[0]} names a table of a DuckDB database file, and {shown}: leave {names[0]} out")
    if delimiter is None or kind == "csv" or _may_be_csv(reference):
        return
    if reference is not None:
        shown = f"neither {source if is_path else 'the source'} nor the reference is a CSV file"
    raise SpecError(f"{names[1]} is a CSV file's delimiter, and {shown}: leave {names[1]} out")


def _may_be_csv(reference: Any) -> bool:
    """A reference path that is a CSV file, or whose format no suffix or first bytes tell."""
    return isinstance(reference, (str, Path)) and path_format(Path(reference)) in ("csv", None)


@contextmanager
def _types_told_for_check(spec: Spec | None) -> Iterator[None]:
    """A CSV column refused until its type is declared (an ordered one holding 5000.5) is told in a
    spec's words, ``[source] types``: without --spec, check has none, so the refusal says where
    check takes them from."""
    try:
        yield
    except InputError as e:
        if spec is not None or "[source] types" not in str(e):
            raise
        raise type(e)(f"{e} (check reads a CSV's declared types from the spec given with --spec: the release's, "
                      "or one written for this table)") from None


def _declared_sensitive_types(spec: Spec) -> dict[str, str]:
    """The spec's ``[source] types`` of its sensitive columns. A release gives those columns as its
    input holds them, so the declared types describe a checked CSV's columns too, whichever file it
    is (a DATE column, read as text, was refused as no ordered type; a DECIMAL(18, 4) one, read as
    DOUBLE, merged its values). Its quasi-identifiers are not typed: a release holds their labels."""
    if spec.source is None:
        return {}
    return {c: t for c, t in spec.source.types.items() if c in spec.sensitive}


def _one_number_type(engine: Engine, relation: exp.Expression, reference: exp.Expression,
                     names: list[str]) -> tuple[exp.Expression, exp.Expression]:
    """The checked table and the reference, each sensitive column that is an integer or a decimal in
    both but of two types read as one DECIMAL holding both: values are compared by their text, and the
    two files need not type a column alike (a CSV's ordered column read as BIGINT, 5000, beside a
    Parquet DECIMAL(6, 2), 5000.25), so a value of one was "not in the domain"."""
    ours, theirs = engine.schema(relation), engine.schema(reference)
    for n in names:
        _refuse_floats_beside_numbers(n, ours.field(n).type, theirs.field(n).type)
    common = {n: kind for n in names if (kind := _common_decimal(ours.field(n).type, theirs.field(n).type))}
    if not common:
        return relation, reference
    return _cast(relation, ours.names, common), _cast(reference, theirs.names, common)


def _refuse_floats_beside_numbers(name: str, ours: pa.DataType, theirs: pa.DataType) -> None:
    """A sensitive column of floats on one side and whole numbers or decimals on the other: compared
    by their text, 5000 and 5000.0 are two values, and every value was told "not in its domain",
    the types unsaid (review h2 of the eighty-fifth round: one NaN makes pandas' int column float)."""
    kinds = [pa.types.is_floating(t) for t in (ours, theirs)]
    numbers = all(pa.types.is_floating(t) or _digits(t) is not None for t in (ours, theirs))
    too_wide = ours != theirs and not any(kinds) and numbers and _common_decimal(ours, theirs) is None
    if (kinds[0] != kinds[1] and numbers) or too_wide:
        raise DataError(f"column {name_shown(name)} is {ours} in the checked table and {theirs} in the reference: "
                        "values are compared by their text, where 5000 and 5000.0 differ; give both one type (e.g. "
                        f"df[{name_shown(name)}].astype('Int64') for a pandas column made float by a missing value)")


def _common_decimal(one: pa.DataType, other: pa.DataType) -> str | None:
    """A DECIMAL that holds every value of two different integer or decimal types exactly; None when
    they are one type, another kind, or need more than 38 digits."""
    digits = [_digits(t) for t in (one, other)]
    if one == other or None in digits:
        return None
    whole, scale = max(d[0] for d in digits), max(d[1] for d in digits)
    return f"DECIMAL({whole + scale}, {scale})" if whole + scale <= MAX_DECIMAL_DIGITS else None


def _digits(kind: pa.DataType) -> tuple[int, int] | None:
    """The digits before and after the point a type's values may have."""
    if pa.types.is_integer(kind):
        return len(str(2 ** kind.bit_width)), 0
    if pa.types.is_decimal(kind):
        return kind.precision - kind.scale, kind.scale
    return None


def _cast(relation: exp.Expression, columns: list[str], types: dict[str, str]) -> exp.Expression:
    return exp.select(*[exp.Cast(this=q.col(c), to=exp.DataType.build(types[c])).as_(exp.to_identifier(c, quoted=True))
                        if c in types else q.col(c) for c in columns]).from_(relation.copy()).subquery()


def _names(given: Iterable[str] | str | None, option: str = "quasi_identifiers") -> list[str]:
    """Column names as a list, each once: any sequence of them (``text.given_items``: a pandas Index,
    ``df.columns[:2]``, or a numpy array ended in "truth value … is ambiguous"), a text as one name
    ("zip" was read as 'z', 'i' and 'p'); a name given twice was audited as two columns."""
    names = given_items(given)
    named_once(names, option)
    return names


def _sensitive_models(sensitive: Any) -> dict[str, Sensitive | None]:
    if sensitive is None:
        return {}
    if isinstance(sensitive, Mapping):
        out = {}
        for name, value in sensitive.items():
            if value is None or isinstance(value, Sensitive):
                out[name] = value
            else:
                try:
                    out[name] = Sensitive.model_validate(value)
                except ValidationError as e:  # one line: "sensitive column 's': entropy_l: … (got 0.5)"
                    problems = "; ".join(validation_problems(e, Sensitive))  # its keys, not a whole spec's
                    raise SpecError(f"sensitive column {name_shown(name)}: {problems}") from None
                except Exception as e:
                    raise SpecError(f"sensitive column {name_shown(name)}: {e}") from None
        return out
    return dict.fromkeys(_names(sensitive, "sensitive"))


def _check_arguments(qi: list[str], models: dict, k: Any, skew: Any, similarity_level: Any,
                     top: Any) -> tuple[int | None, float, int | None, int]:
    """The arguments refused before anything is read, named as Python gives them (the command line
    renames them, ``OptionError.renamed``); k, skew, similarity_level and top as plain numbers."""
    if not qi:
        raise InputError("name at least one quasi-identifier column (--qi)")
    both = sorted(set(qi) & set(models))
    if both:
        raise InputError(f"column {name_shown(both[0])} is listed both as quasi-identifier and as sensitive; give it "
                         "one role")
    at_least_one(k, "k")
    above_one(skew, "skew")
    at_least_one(similarity_level, "similarity_level")
    at_least_one(top, "top")
    return (None if k is None else int(k), float(skew), None if similarity_level is None else int(similarity_level),
            int(top))


def at_least_one(value: Any, name: str) -> None:
    """Refuse a count below 1, or no whole number (True is none here), naming it as the caller gave it:
    ``k`` in Python, ``--k`` on the command line (``--k: must be at least 1 (got 0)``, as the other
    thresholds are told)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OptionError(name, f"must be a whole number (got {value!r})")
    if value < 1:
        raise OptionError(name, f"must be at least 1 (got {value})")


def above_one(skew: Any, name: str) -> None:
    """Refuse a skewness ratio that is no finite number above 1: NaN compared false with every share
    (no class exposed, the attack silently off), and infinity or NaN made the JSON report invalid."""
    if isinstance(skew, bool) or not isinstance(skew, numbers.Real):
        raise OptionError(name, f"must be a number (got {skew!r})")
    if not (math.isfinite(skew) and skew > 1):
        raise OptionError(name, f"the skewness ratio must be a finite number above 1 (got {skew}): a share equal "
                                "to the table's is no attack")


def _require_similarity_level(sas: list[SensitiveAttribute], level: int) -> None:
    """The level must be one of every sensitive hierarchy's (its root included): told before the
    classes are counted, which on a large table takes a while."""
    heights = {sa.name: sa.hierarchy.height for sa in sas if sa.hierarchy is not None}
    for sa in sas:
        if sa.hierarchy is not None and level > sa.hierarchy.height:
            fits = min(heights.values())
            advice = (f"give a level in 1..{fits}" if len(heights) == 1 else
                      f"give a level every sensitive column's hierarchy has (1..{fits}), or audit the columns in "
                      "separate runs, each with a level its hierarchy has")
            raise OptionError("similarity_level", f"{level} is outside 1..{sa.hierarchy.height} for column "
                                                  f"{name_shown(sa.name)} (hierarchy {sa.hierarchy.origin}): {advice}")


def _audit(engine: Engine, relation: exp.Expression, label: str, qi: list[str], models: dict[str, Sensitive | None],
           k: int | None, reference: exp.Expression | None, reference_label: str, skew: float,
           similarity_level: int | None,
           top: int, kinds: list[str]) -> CheckReport:
    """The audit's report; ``kinds``: the table's kind of source and the reference's (``Opened.kind``),
    where a refusal tells them to change a column."""
    schema = engine.schema(relation)  # every column named is there (check)
    for name, spec in models.items():
        if spec is not None and spec.distance == "ordered":
            require_ordered_type(name, schema.field(name).type, label)
    ref_relation = reference if reference is not None else relation
    # The domain spans the reference too: a release may have suppressed every row of a value.
    sources = [relation] if reference is None else [relation, reference]
    where = label if reference is None else f"{label} and the reference {reference_label}"
    non_finite = set()  # columns holding NaN or ±inf: no ordered distance is measured over them
    schemas = [schema] if reference is None else [schema, engine.schema(reference)]
    for name in models:
        values = _float_values(sources, schemas, name)
        if values is None:
            continue
        _refuse_two_spellings(engine, values, name, where, kinds)
        rows = int(engine.fetch_row(q.float_checks(values, name, engine.is_nan))["non_finite"] or 0)
        if rows and models[name] is not None and models[name].distance == "ordered":
            raise DataError(f"column {name_shown(name)} in {where} holds NaN or an infinity in {counted(rows, 'row')}, "
                            "which has no place in the order of distance = \"ordered\" (anonymize refuses it): check a "
                            "table without those rows, as the release is, or judge the column by distance = "
                            "\"equal\"")
        non_finite |= {name} if rows else set()
    sas = [_sensitive_column(engine, sources, name, spec, where) for name, spec in models.items()]
    for sa in sas:
        _refuse_ordered_null(sa, where)
    idle_levels = _warn_of_idle_levels(sas)
    if similarity_level is not None and all(sa.hierarchy is None for sa in sas):
        raise SpecError("similarity_level is a level of a sensitive column's hierarchy (values under one label there "
                        "count as similar, for the similarity attack), and no sensitive column has one: give a "
                        "sensitive column a hierarchy, or leave similarity_level out")
    level = 1 if similarity_level is None else similarity_level
    _require_similarity_level(sas, level)
    # The ordered distance is measured for numbers and times, but not over a NULL, NaN or an infinity: they
    # have no place in their order.
    numeric = {sa.name for sa in sas if is_number_or_time(schema.field(sa.name).type) and None not in sa.domain
               and sa.name not in non_finite}
    sas = [dataclasses.replace(sa, q=tables.distribution(engine, ref_relation, sa)) for sa in sas]
    if reference is not None and sas and not sas[0].q.sum():
        raise DataError(f"the reference table {reference_label} has no rows: there is no distribution to "
                        "compare the classes to")
    classes = tables.table_classes(engine, relation, qi, sas)
    try:
        if classes.rows == 0:
            raise DataError(f"{label} has no rows: there is nothing to check")
        tallies = [_SensitiveTally(j, sa, models[sa.name], skew, level, top, sa.name in numeric)
                   for j, sa in enumerate(sas)]
        k_tally = _Worst("k", higher_is_worse=False, required=k, top=top)
        sizes = []
        for start, hist in classes.runs():
            k_tally.add(start, hist, hist.sizes, None if k is None else hist.sizes >= k)
            sizes.append(hist.sizes)
            for tally in tallies:
                tally.add(start, hist)
        listed = [k_tally, *(w for tally in tallies for w in tally.listing())]
        labels = classes.class_values(i for w in listed for i in w.ids)
    finally:
        classes.drop()
        engine.reset_memory()  # DuckDB's limit lowered for the runs: its share again
    failures: list[str] = []
    data: dict[str, Any] = {"table": label, "rows": classes.rows, "classes": classes.classes,
                            "quasi_identifiers": qi, "reference": SELF_REFERENCE if reference is None
                            else reference_label}
    data["k"] = k_tally.entry(labels, failures)
    data["sensitive"] = {tally.sa.name: tally.entry(labels, failures) for tally in tallies}
    asked = k is not None or any(m is not None and m.models for m in models.values())
    data["utility"] = {"sensitive": {tally.sa.name: tally.utility() for tally in tallies}}
    data["passed"] = (not failures) if asked else None
    data["failures"] = failures
    data["warnings"] = idle_levels
    distances = {tally.sa.name: np.concatenate(tally.judged_distance) for tally in tallies if tally.judged_distance}
    counts = {tally.sa.name: dict(zip(map(str, tally.sa.domain), tally.counts.tolist())) for tally in tallies}
    return CheckReport(data, failures, np.concatenate(sizes), distances, counts)


def _warn_of_idle_levels(sas: list[SensitiveAttribute]) -> list[str]:
    """What a release of these columns' t would warn of (a sensitive hierarchy's level that groups
    nothing: t holds more loosely than it reads), said as a warning too, since the audit judges the same t over
    the same hierarchy (the command prints it on stderr, none under --quiet)."""
    said = idle_level_warnings(sas)
    for line in said:
        warnings.warn(line, HierarchyWarning, stacklevel=3)
    return said


def _sensitive_column(engine: Engine, relations: list[exp.Expression], name: str,
                      spec: Sensitive | None, where: str) -> SensitiveAttribute:
    hierarchy = static_hierarchy(spec.hierarchy, name) if spec is not None and spec.hierarchy is not None else None

    @functools.cache
    def distinct_values() -> list[str]:  # sorted as the column's type sorts
        return engine.fetch(q.distinct_sorted(relations, name)).column("text").to_pylist()

    stand_in = spec.null_value if spec is not None and spec.nulls == "value" else None
    distance = spec.distance if spec is not None else "equal"
    domain = sensitive_domain(hierarchy, distance, distinct_values, stand_in)
    # Whatever the distance: the ordered one's domain is the column's values, and the similarity attack
    # looks each up among the leaves (a number by its text as read, 7 for a CSV's "07", as anonymize does).
    if hierarchy is not None:
        _refuse_values_off_hierarchy(engine, relations, name, hierarchy, distinct_values(), where)
    return SensitiveAttribute(name, spec, domain, hierarchy)


def _refuse_values_off_hierarchy(engine: Engine, relations: list[exp.Expression], name: str, hierarchy: Hierarchy,
                                 values: list[str | None], where: str) -> None:
    """Values the hierarchy lacks stop the audit, counted over every table read (the rows only
    then), never shown, as ``anonymize`` counts them: they are sensitive values. (A NULL is left
    to the class reads: ``nulls`` decides what it is.)"""
    leaves = set(hierarchy.leaves)
    missing = [v for v in values if v is not None and v not in leaves]
    if not missing:
        return
    off = set(missing)
    rows = 0
    for relation in relations:
        counted = engine.fetch(q.distribution(relation, q.as_text(q.col(name)))).to_pylist()
        rows += sum(int(r["n"]) for r in counted if r["v"] in off)
    to_add = f"{how_to_add_leaves(hierarchy)}, or give the hierarchy the release was made with"
    raise SensitiveOffHierarchyError(values_not_leaves(name, hierarchy, missing, rows, to_add, where), name,
                                     len(missing), rows)


def _float_values(sources: list[exp.Expression], schemas: list[pa.Schema], name: str) -> exp.Expression | None:
    """A float column's values over the checked table and its reference, as one relation (None when
    it is no float): what the spellings' and the NaN checks read, each in one pass."""
    floats = [r for r, s in zip(sources, schemas) if pa.types.is_floating(s.field(name).type)]
    if not floats:
        return None
    values = exp.union(*[q.project(r, [name]) for r in floats], distinct=False) if len(floats) > 1 \
        else q.project(floats[0], [name])
    return values.subquery("__sqlclose_values")


def _refuse_two_spellings(engine: Engine, values: exp.Expression, name: str, where: str, kinds: list[str]) -> None:
    """A float sensitive column holding -0.0 beside 0.0 (or NaN beside -NaN) is refused, as anonymize
    refuses it: its domain is made by DISTINCT, which keeps one spelling of the number, and the rows
    of the other were then looked up as text and said to hold a value "not in its domain". NaN and
    ±infinity, which have no place in an ordered distance's order, are ``_audit``'s (check ranked
    NaN above every number)."""
    spellings = float_spellings(engine, values, name, kinds)
    if spellings is not None:
        held, fix = spellings
        raise DataError(f"column {name_shown(name)} in {where} holds {held}, which check would count as one value yet "
                        f"look up as two: normalize it {fix}, as anonymize asks too")


def _refuse_ordered_null(sa: SensitiveAttribute, where: str) -> None:
    """A NULL has no place in the order an ordered distance judges by (where it went, first or last,
    changed m and every class's distance): refused, as anonymize refuses it (nulls = "value" is not
    allowed there, and nulls = "drop" leaves its rows out, so that a release holds none)."""
    if sa.spec is not None and sa.spec.distance == "ordered" and None in sa.domain:
        raise DataError(f"column {name_shown(sa.name)} in {where} holds NULL, which has no place in the order of "
                        "distance = \"ordered\" (anonymize refuses it, or leaves its rows out under nulls = "
                        "\"drop\", so its release holds none): check a table without those rows, as the release is, or "
                        "judge the column by distance = \"equal\"")


def _refuse_changed_while_checked(read: Sequence[Opened | None]) -> None:
    """A file of the checked table or the reference replaced or modified since it was opened (its
    stamp, ``Opened.stamps``), or a caller's table changed since its rows were fingerprinted
    (``Opened.keep_rows``): the audit reads it in several passes (domains, distribution, classes,
    labels, shares), whose figures would then be of two tables."""
    for opened in read:
        if opened is not None:
            opened.refuse_changed("while it was checked", "the figures would mix rows of the source before and "
                                  "after; check it again once it is no longer being changed")


def _reference(engine: Engine, reference: Any, needed: list[str], options: FileRead,
               drop: Sequence[str] = ()) -> tuple[exp.Expression, str, Opened]:
    """The reference table's relation, without the rows holding a NULL in one of ``drop`` (the
    spec's nulls = "drop" columns it has), its label (its path as given, or what ``open_source``
    calls it) and the source opened (its files' stamps)."""
    if isinstance(reference, (str, Path)) and not options.glob and not Path(reference).expanduser().exists():
        # told as the source's ("source nope.csv does not exist"), it was the checked table that seemed missing
        raise OptionError("reference", f"{reference} does not exist")
    opened = open_source(reference, engine, options)
    relation, label = opened.relation, opened.label
    names = engine.schema(relation).names
    missing = [c for c in needed if c not in names]
    if missing:
        raise DataError(f"the reference table {label} has no column {name_shown(missing[0])}")
    dropped = [c for c in drop if c in names]
    return (q.without_nulls(relation, dropped) if dropped else relation,
            str(reference) if isinstance(reference, (str, Path)) else label, opened)


class _Worst:
    """One model over every class, gathered run by run: the worst value reached, the classes and
    records failing (when judged), and the ``top`` classes to list, worst first — ties in class
    order, as one stable sort over every class would list them."""

    def __init__(self, title: str, higher_is_worse: bool, required: Any, top: int, j: int | None = None,
                 sa: SensitiveAttribute | None = None, ranked_by: str | None = None) -> None:
        self.title, self.higher_is_worse, self.required, self.top, self.j, self.sa = \
            title, higher_is_worse, required, top, j, sa
        self.ranked_by = ranked_by  # a measure listed beside the value, ordering before it, highest first
        self.firsts = np.zeros(0)  # its values, of the classes to list so far
        self.reached: Any = None
        self.judged = False
        self.failing = self.failing_records = 0
        self.ids = np.zeros(0, dtype=np.int64)  # the classes to list so far, worst first
        self.values: np.ndarray | None = None  # of the measure's type: a count lists as an integer
        self.sizes = np.zeros(0, dtype=np.int64)
        self.held: list[Commonest] = []  # per class listed: its commonest values

    def add(self, start: int, hist: ClassHistograms, measure: np.ndarray, passes: np.ndarray | None,
            among: np.ndarray | None = None, first: np.ndarray | None = None) -> None:
        """A run of classes (numbered from ``start``): each one's measure, whether it passes, which
        may be listed (all, unless ``among`` says), and their ``ranked_by`` measure (``first``)."""
        reached = measure.max() if self.higher_is_worse else measure.min()
        pick = np.max if self.higher_is_worse else np.min
        self.reached = reached if self.reached is None else pick([self.reached, reached])
        if passes is not None:
            self.judged = True
            self.failing += int((~passes).sum())
            self.failing_records += int(hist.sizes[~passes].sum())
        pool = np.arange(hist.classes) if among is None else np.flatnonzero(among)
        chosen = pool[self._worst_first(measure[pool], None if first is None else first[pool])]
        self.ids = np.concatenate([self.ids, chosen + start])
        self.values = measure[chosen] if self.values is None else np.concatenate([self.values, measure[chosen]])
        self.sizes = np.concatenate([self.sizes, hist.sizes[chosen]])
        if self.j is not None:
            self.held += _commonest(hist.counts[self.j], chosen)
        if first is not None:
            self.firsts = np.concatenate([self.firsts, first[chosen]])
        kept = self._worst_first(self.values, self.firsts if first is not None else None)  # stable: ties in class order
        self.firsts = self.firsts[kept] if first is not None else self.firsts
        self.ids, self.values, self.sizes = self.ids[kept], self.values[kept], self.sizes[kept]
        self.held = [self.held[i] for i in kept] if self.j is not None else self.held

    def _worst_first(self, values: np.ndarray, firsts: np.ndarray | None = None) -> np.ndarray:
        """Positions of the ``top`` worst values, worst first, ties in position order (a class's
        measure is a function of its own counts, to the last bit: ``emd``'s exact integer sums
        divided once, or a row summed left to right); with ``firsts``, highest of those first."""
        key = -values if self.higher_is_worse else values
        if firsts is not None:  # lexsort is stable: its last key orders first
            return np.lexsort((key, -firsts))[:self.top]
        if len(key) > 4 * self.top:  # sort only what can be listed: the top values and their ties
            nth = np.partition(key, self.top - 1)[self.top - 1]
            if not np.isnan(nth):  # NaN sorts last: then the whole sort says where
                pool = np.flatnonzero(key <= nth)
                return pool[np.argsort(key[pool], kind="stable")[:self.top]]
        return np.argsort(key, kind="stable")[:self.top]

    def entry(self, labels: dict[int, dict], failures: list[str] | None) -> dict:
        """The report's entry; a failing judged model adds its line to ``failures``."""
        entry: dict[str, Any] = {"reached": _number(self.reached), "required": self.required}
        if self.judged:
            entry.update(passed=not self.failing, failing_classes=self.failing, failing_records=self.failing_records)
            if self.failing and failures is not None:
                failures.append(f"{self.title}: {self.failing} classes ({self.failing_records} records) fail; "
                                f"worst {_shown(self.reached)}, required {self.required}")
        entry["worst_classes"] = self.listed(labels)
        return entry

    def listed(self, labels: dict[int, dict]) -> list[dict]:
        """The classes to list, worst first: QI values, size, value and (for a sensitive column) its
        ten commonest values."""
        out = []
        firsts = self.firsts if self.ranked_by is not None else None
        for n in self._worst_first(self.values, firsts):
            item = {"class": labels[int(self.ids[n])], "size": int(self.sizes[n]), "value": _number(self.values[n])}
            if firsts is not None:
                item[self.ranked_by] = _number(firsts[n])
            if self.sa is not None:
                item["distribution"] = self.held[n].named(self.sa)
            out.append(item)
        return out


class _SensitiveTally:
    """Everything ``check`` reports of one sensitive column, gathered run by run."""

    def __init__(self, j: int, sa: SensitiveAttribute, spec: Sensitive | None, skew: float, similarity_level: int,
                 top: int, numeric: bool) -> None:
        self.j, self.sa = j, sa
        asked = {c.key: c for c in sensitive_criteria(j, sa)} if spec is not None else {}
        recursive = spec.recursive if spec is not None else None
        # (entry key, the criterion measuring it, the asked one judging it or None, its tally);
        # distinct and entropy l are always measured, p and recursive only when asked.
        self.diversity: list[tuple[str, Criterion, Criterion | None, _Worst]] = []
        for key, title, measured, required in [
                ("distinct_l", "distinct l-diversity", DistinctLDiversity(j, sa, 1), spec and spec.distinct_l),
                ("p", "p-sensitivity", asked.get("p"), spec and spec.p),
                ("entropy_l", "entropy l-diversity", EntropyLDiversity(j, sa, 1.0), spec and spec.entropy_l),
                ("recursive", recursive and f"recursive ({recursive.c},{recursive.l})-diversity",
                 asked.get("recursive"), recursive and {"c": recursive.c, "l": recursive.l})]:
            if measured is not None:
                judged = asked.get(key)
                self.diversity.append((key, judged or measured, judged, _Worst(
                    f"{sa.name}: {title}", measured.worse_is_higher, required if judged else None, top, j, sa)))
        # (distance name, the t-closeness criterion judging it or None, its tally)
        self.distances: list[tuple[str, Criterion | None, _Worst]] = []
        for name in _applicable_distances(sa, spec, numeric):
            judged = asked.get("t") if name == sa.distance else None
            self.distances.append((name, judged, _Worst(f"{sa.name}: t-closeness ({name})", True,
                                                        spec.t if judged else None, top, j, sa)))
        self.judged_distance: list[np.ndarray] = []  # per run: the distance t is judged by, per class (charts)
        self.attacks: dict[str, tables.Attack | None] = {
            "homogeneity": tables.Homogeneity(), "skewness": tables.Skewness(sa.q, skew),
            "similarity": tables.Similarity(sa, similarity_level) if sa.hierarchy is not None else None}
        self.exposed = {kind: _Worst(kind, True, None, top, j, sa, attack.ranked_by if attack else None)
                        for kind, attack in self.attacks.items()}
        self.l_diversity, self.l1_closeness = np.inf, -np.inf
        self.counts = np.zeros(len(sa.domain))

    def add(self, start: int, hist: ClassHistograms) -> None:
        matrix = hist.counts[self.j]
        for _, measured, judged, worst in self.diversity:
            worst.add(start, hist, measured.measure(hist), judged.passes(hist) if judged else None)
        for name, judged, worst in self.distances:
            values = judged.measure(hist) if judged else class_distances(matrix, self.sa.q, name, self.sa.tree)
            worst.add(start, hist, values, judged.passes(hist) if judged else None)
            if judged:
                self.judged_distance.append(values)
        for kind, attack in self.attacks.items():
            if attack is not None:
                hit = attack.exposed(matrix, hist.sizes)
                self.exposed[kind].add(start, hist, hist.sizes, None, among=hit, first=attack.class_measure)
        self.l_diversity = np.minimum(self.l_diversity, _l_diversity(matrix))  # NaN stays NaN, as one pass
        self.l1_closeness = np.maximum(self.l1_closeness, _l1_closeness(matrix, self.sa.q))
        self.counts += kept_totals(matrix, np.ones(matrix.shape[0]))

    def listing(self) -> list[_Worst]:
        return [m[-1] for m in self.diversity] + [m[-1] for m in self.distances] + list(self.exposed.values())

    def entry(self, labels: dict[int, dict], failures: list[str]) -> dict:
        entry: dict[str, Any] = {"domain_size": len(self.sa.domain)}
        entry.update((key, worst.entry(labels, failures)) for key, _, _, worst in self.diversity)
        entry["distances"] = {name: {**worst.entry(labels, failures), "emd": is_emd(name)}
                              for name, _, worst in self.distances}
        entry["attacks"] = {kind: None if attack is None else
                            {**attack.result(), "exposed_classes": self.exposed[kind].listed(labels)}
                            for kind, attack in self.attacks.items()}
        return entry

    def utility(self) -> dict:
        return {"l_diversity": float(self.l_diversity), "l1_closeness": float(self.l1_closeness)}


def _applicable_distances(sa: SensitiveAttribute, spec: Sensitive | None, numeric: bool) -> list[str]:
    """Equal, variational and KL always; hierarchical with a hierarchy; ordered for numbers."""
    names = {"equal", "variational", "kl"}
    if sa.hierarchy is not None and (spec is None or spec.distance != "ordered"):
        names.add("hierarchical")
    if numeric:
        names.add("ordered")
    if spec is not None:
        names.add(spec.distance)
    return [n for n in ALL_DISTANCES if n in names]


def _l_diversity(matrix: np.ndarray | SparseCounts) -> float:
    if isinstance(matrix, SparseCounts):
        rows, _, counts = matrix.held()
        return l_diversity_value_of_cells(rows, counts, matrix.shape[0])
    return l_diversity_value(matrix)


def _l1_closeness(matrix: np.ndarray | SparseCounts, reference: np.ndarray) -> float:
    if isinstance(matrix, SparseCounts):
        return l1_closeness_value_of_cells(*matrix.held(), matrix.shape[0], reference)
    return l1_closeness_value(matrix, reference)


@dataclass(frozen=True)
class Commonest:
    """A listed class's ten commonest sensitive values (positions in the domain, commonest first,
    ties in domain order), their counts, and the records of its other values: what its listing
    shows, kept instead of its counts (a class of a 632 k-value column holds 60 k of them)."""

    values: np.ndarray
    counts: np.ndarray
    others: int | None  # None: it holds no other value

    def named(self, sa: SensitiveAttribute) -> dict[str, int]:
        out = {str(sa.domain[v]): int(n) for v, n in zip(self.values.tolist(), self.counts.tolist())}
        if self.others is not None:
            out["(other values)"] = self.others
        return out


def _commonest(matrix: np.ndarray | SparseCounts, classes: np.ndarray) -> list[Commonest]:
    """``Commonest`` of each of ``classes`` (positions in a run), from its dense row or its cells."""
    out = []
    for i in classes.tolist():
        if isinstance(matrix, SparseCounts):
            _, values, counts = matrix[i:i + 1].held()
        else:
            values = np.flatnonzero(matrix[i])
            counts = matrix[i, values]
        order = np.argsort(-counts, kind="stable")
        others = int(counts[order[10:]].sum()) if len(order) > 10 else None
        out.append(Commonest(values[order[:10]], counts[order[:10]], others))
    return out


def _shown(value: Any) -> str:
    """A value for a line a person reads: ten significant digits (the JSON keeps every bit)."""
    value = _number(value)
    return f"{value:.10g}" if isinstance(value, float) else str(value)


def _number(value: Any) -> Any:
    if isinstance(value, (np.integer, int)):
        return int(value)
    value = float(value)
    return value if np.isfinite(value) else str(value)
