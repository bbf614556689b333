"""``sqlclose.check``: how safe is this table, really?

For any table — a sqlclose release or anyone else's — given its quasi-identifier columns and
sensitive columns: the value each privacy model reaches (k; distinct, entropy and recursive
l-diversity; p; the largest distance of a class from the table for every applicable distance),
the worst classes, pass/fail against the thresholds given, and the records exposed to the
homogeneity, skewness and similarity attacks of Li et al. section 3. All counting is SQL
(``audit``); Python sees one row per (class, sensitive value).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlglot import exp

from sqlclose.audit import tables, utility
from sqlclose.audit.render import render_text
from sqlclose.engine import Engine
from sqlclose.engine.base import FileRead
from sqlclose.errors import DataError, InputError, SpecError
from sqlclose.model.attributes import SensitiveAttribute, is_number_or_time, require_ordered_type, sensitive_domain
from sqlclose.model.spec import Sensitive, Spec, as_spec, static_hierarchy
from sqlclose.prepare.problem import require_columns
from sqlclose.prepare.sources import open_source
from sqlclose.privacy.criteria import Criterion, DistinctLDiversity, EntropyLDiversity, sensitive_criteria
from sqlclose.privacy.distances import ALL_DISTANCES, distance, is_emd
from sqlclose.sql import queries as q

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
          skew: float = DEFAULT_SKEW_RATIO, similarity_level: int = 1, top: int = 10,
          table: str | None = None, delimiter: str | None = None, engine: Engine | None = None) -> CheckReport:
    """Audit ``source`` (a path, ``(connection, table)``, a pyarrow Table or a pandas DataFrame).

    ``sensitive`` maps each sensitive column to its models and thresholds (a ``Sensitive`` or
    its dict; None or a bare list of names: measure only). ``spec`` takes the quasi-identifiers,
    sensitive models and k of a release spec. ``reference`` is the table whose distribution
    t-closeness compares against (default: the audited table itself; give the release's input
    to reproduce a release report when records were suppressed). ``table`` names the table in a
    DuckDB database file; ``delimiter`` is the CSV delimiter (default: detected).
    """
    hierarchies = {}
    if spec is not None:
        spec = as_spec(spec)
        hierarchies = {name: static_hierarchy(s, name) for name, s in spec.quasi_identifiers.items()
                       if s.kind in ("file", "tree", "hierarchy")}  # rule hierarchies need the input's values
        quasi_identifiers = quasi_identifiers or list(spec.quasi_identifiers)
        sensitive = sensitive if sensitive is not None else dict(spec.sensitive)
        k = k if k is not None else spec.k
    qi = list(quasi_identifiers or [])
    models = _sensitive_models(sensitive)
    _check_arguments(qi, models, k, skew, top)
    given = engine
    # Sensitive columns of a CSV are read as numbers when their values are numbers (ordered distance).
    numeric = tuple(models)
    options = FileRead(table=table, delimiter=delimiter, numbers_if_numeric=numeric)
    opened = open_source(source, engine, options)
    engine, relation, label = opened.engine, opened.relation, opened.label
    try:
        ref = _reference(engine, reference, list(models), dataclasses.replace(options, table=None)) \
            if reference is not None else None
        audit = _audit(engine, relation, label, qi, models, k, ref, str(reference), skew, similarity_level, top)
        shares = utility.value_shares(engine, relation, qi, hierarchies, ref)
        audit.data["utility"].update(utility.table_shares(shares), quasi_identifiers=shares)
        return audit
    finally:
        if given is None:
            engine.close()


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
                except Exception as e:
                    raise SpecError(f"sensitive column {name!r}: {e}") from None
        return out
    return {name: None for name in sensitive}


def _check_arguments(qi: list[str], models: dict, k: int | None, skew: float, top: int) -> None:
    if not qi:
        raise InputError("name at least one quasi-identifier column (--qi)")
    both = sorted(set(qi) & set(models))
    if both:
        raise InputError(f"column {both[0]!r} is listed both as quasi-identifier and as sensitive; give it one role")
    if k is not None and k < 1:
        raise InputError(f"k must be at least 1 (got {k})")
    if skew <= 1:
        raise InputError(f"the skewness ratio must be above 1 (got {skew}): a share equal to the table's is no attack")
    if top < 1:
        raise InputError(f"top must be at least 1 (got {top})")


def _audit(engine: Engine, relation: exp.Expression, label: str, qi: list[str], models: dict[str, Sensitive | None],
           k: int | None, reference: exp.Expression | None, reference_label: str, skew: float, similarity_level: int,
           top: int) -> CheckReport:
    schema = engine.schema(relation)
    require_columns([*qi, *models], schema.names, label)
    for name, spec in models.items():
        if spec is not None and spec.distance == "ordered":
            require_ordered_type(name, schema.field(name).type, label)
    ref_relation = reference if reference is not None else relation
    # The domain spans the reference too: a release may have suppressed every row of a value.
    sources = [relation] if reference is None else [relation, reference]
    sas = [_sensitive_column(engine, sources, name, spec) for name, spec in models.items()]
    numeric = {name for name in models if is_number_or_time(schema.field(name).type)}
    sas = [dataclasses.replace(sa, q=tables.distribution(engine, ref_relation, sa)) for sa in sas]
    classes = tables.table_classes(engine, relation, qi, sas)
    if classes.rows == 0:
        raise DataError(f"{label} has no rows: there is nothing to check")
    failures: list[str] = []
    data: dict[str, Any] = {"table": label, "rows": classes.rows, "classes": classes.hist.classes,
                            "quasi_identifiers": qi, "reference": "the table itself" if reference is None
                            else reference_label}
    data["k"] = _model_entry("k", classes, classes.hist.sizes, higher_is_worse=False, required=k,
                             passes=None if k is None else classes.hist.sizes >= k, top=top, failures=failures)
    data["sensitive"] = {sa.name: _sensitive_entry(classes, j, sa, models[sa.name], skew, similarity_level, top,
                                                   failures, sa.name in numeric) for j, sa in enumerate(sas)}
    asked = k is not None or any(m is not None and m.models for m in models.values())
    data["utility"] = {"sensitive": utility.sensitive_values(classes.hist, sas)}
    data["passed"] = (not failures) if asked else None
    data["failures"] = failures
    distances = {sa.name: distance(classes.hist.counts[j], sa.q, models[sa.name].distance, sa.hierarchy)
                 for j, sa in enumerate(sas) if models[sa.name] is not None and models[sa.name].t is not None}
    counts = {sa.name: dict(zip(map(str, sa.domain), classes.hist.counts[j].sum(axis=0).tolist()))
              for j, sa in enumerate(sas)}
    return CheckReport(data, failures, classes.hist.sizes, distances, counts)


def _sensitive_column(engine: Engine, relations: list[exp.Expression], name: str,
                      spec: Sensitive | None) -> SensitiveAttribute:
    hierarchy = static_hierarchy(spec.hierarchy, name) if spec is not None and spec.hierarchy is not None else None

    def distinct_values() -> list[str]:  # sorted as the column's type sorts
        return engine.fetch(q.distinct_sorted(relations, name)).column("text").to_pylist()

    domain = sensitive_domain(hierarchy, spec.distance if spec is not None else "equal", distinct_values)
    return SensitiveAttribute(name, spec, domain, hierarchy)


def _reference(engine: Engine, reference: Any, needed: list[str], options: FileRead) -> exp.Expression:
    opened = open_source(reference, engine, options)
    relation, label = opened.relation, opened.label
    missing = [c for c in needed if c not in engine.schema(relation).names]
    if missing:
        raise DataError(f"the reference table {label} has no column {missing[0]!r}")
    return relation


def _sensitive_entry(classes: tables.TableClasses, j: int, sa: SensitiveAttribute, spec: Sensitive | None, skew: float,
                     similarity_level: int, top: int, failures: list[str], numeric: bool) -> dict:
    hist = classes.hist
    matrix = hist.counts[j]
    asked = {c.key: c for c in sensitive_criteria(j, sa)} if spec is not None else {}

    def model(title: str, key: str, measured: Criterion, required: Any) -> dict:
        """A model's entry: the asked criterion judges; distinct and entropy l are always measured."""
        criterion = asked.get(key)
        return _model_entry(f"{sa.name}: {title}", classes, (criterion or measured).measure(hist),
                            measured.worse_is_higher, required if criterion else None,
                            criterion.passes(hist) if criterion else None, top, failures, j, sa)

    entry: dict[str, Any] = {"domain_size": len(sa.domain)}
    entry["distinct_l"] = model("distinct l-diversity", "distinct_l", DistinctLDiversity(j, sa, 1),
                                spec and spec.distinct_l)
    if "p" in asked:
        entry["p"] = model("p-sensitivity", "p", asked["p"], spec.p)
    entry["entropy_l"] = model("entropy l-diversity", "entropy_l", EntropyLDiversity(j, sa, 1.0),
                               spec and spec.entropy_l)
    if "recursive" in asked:
        c, rl = spec.recursive.c, spec.recursive.l
        entry["recursive"] = model(f"recursive ({c},{rl})-diversity", "recursive", asked["recursive"],
                                   {"c": c, "l": rl})
    entry["distances"] = {}
    for name in _applicable_distances(sa, spec, numeric):
        closeness = asked.get("t") if name == sa.distance else None
        values = closeness.measure(hist) if closeness else distance(matrix, sa.q, name, sa.hierarchy)
        item = _model_entry(f"{sa.name}: t-closeness ({name})", classes, values, True,
                            spec.t if closeness else None, closeness.passes(hist) if closeness else None,
                            top, failures, j, sa)
        item["emd"] = is_emd(name)
        entry["distances"][name] = item
    attacks = {
        "homogeneity": tables.homogeneity(matrix, hist.sizes),
        "skewness": tables.skewness(matrix, hist.sizes, sa.q, skew),
        "similarity": tables.similarity(matrix, hist.sizes, sa, similarity_level),
    }
    for found in attacks.values():
        if found is not None:  # the exposed classes, largest first
            exposed = np.flatnonzero(found.pop("exposed"))
            exposed = exposed[np.argsort(-hist.sizes[exposed], kind="stable")][:top]
            found["exposed_classes"] = [_class_entry(classes, int(i), hist.sizes, j, sa) for i in exposed]
    entry["attacks"] = attacks
    return entry


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


def _model_entry(title: str, classes: tables.TableClasses, measure: np.ndarray, higher_is_worse: bool,
                 required: Any, passes: np.ndarray | None, top: int, failures: list[str], j: int | None = None,
                 sa: SensitiveAttribute | None = None) -> dict:
    worst_value = measure.max() if higher_is_worse else measure.min()
    entry: dict[str, Any] = {"reached": _number(worst_value), "required": required}
    if passes is not None:
        failing = ~passes
        entry.update(passed=bool(not failing.any()), failing_classes=int(failing.sum()),
                     failing_records=int(classes.hist.sizes[failing].sum()))
        if failing.any():
            failures.append(f"{title}: {int(failing.sum())} classes ({int(classes.hist.sizes[failing].sum())} "
                            f"records) fail; worst {_number(worst_value)}, required {required}")
    order = np.argsort(-measure if higher_is_worse else measure, kind="stable")[:top]
    entry["worst_classes"] = [_class_entry(classes, int(i), measure, j, sa) for i in order]
    return entry


def _class_entry(classes: tables.TableClasses, i: int, measure: np.ndarray, j: int | None,
                 sa: SensitiveAttribute | None) -> dict:
    out = {"class": classes.class_values(i), "size": int(classes.hist.sizes[i]), "value": _number(measure[i])}
    if j is not None and sa is not None:
        row = classes.hist.counts[j][i]
        nonzero = np.flatnonzero(row)
        nonzero = nonzero[np.argsort(-row[nonzero], kind="stable")]
        out["distribution"] = {str(sa.domain[v]): int(row[v]) for v in nonzero[:10]}
        if len(nonzero) > 10:
            out["distribution"]["(other values)"] = int(row[nonzero[10:]].sum())
    return out


def _number(value: Any) -> Any:
    if isinstance(value, (np.integer, int)):
        return int(value)
    value = float(value)
    return value if np.isfinite(value) else str(value)
