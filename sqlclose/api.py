"""The Python entry points: ``anonymize`` a source under a spec."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from sqlclose.audit.check import check as run_check
from sqlclose.engine import Engine, engine_for
from sqlclose.errors import InputError, NoSolutionError, SpecError
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.spec import EngineSettings, Sensitive, Spec, as_spec
from sqlclose.prepare.plan import describe_problem
from sqlclose.prepare.problem import keyed_fingerprint, prepare
from sqlclose.prepare.sources import Opened, ReadOptions, SourceLike, open_source
from sqlclose.privacy.criteria import criteria_for
from sqlclose.release.files import sha256
from sqlclose.release.gaa_release import GaaRelease
from sqlclose.release.release import Release
from sqlclose.search import ProgressCallback, incognito
from sqlclose.search.gaa_run import run_gaa
from sqlclose.search.utility_costs import leaf_counts, search_cost

FINGERPRINT_KEY_VARIABLE = "SQLCLOSE_FINGERPRINT_KEY"


def anonymize(source: SourceLike, spec: Spec | str | Path | dict, *, engine: Engine | None = None,
              on_progress: ProgressCallback | None = None, fingerprint_key: str | None = None) -> Release:
    """Find the optimal full-domain generalization of ``source`` that satisfies ``spec`` — or, with
    ``[search] algorithm = "gaa"``, GAA's multidimensional recoding (a ``GaaRelease``).

    ``source`` is a path (Parquet, CSV, DuckDB file with the spec's table), a
    ``(duckdb connection, table name)`` pair, a pyarrow Table or a pandas DataFrame; ``None``
    takes the spec's ``[source]``. Raises ``NoSolutionError`` when no node satisfies.
    ``fingerprint_key`` (default: $SQLCLOSE_FINGERPRINT_KEY) is the operator's secret that keys
    the input fingerprint in the report; without one the report records no fingerprint.
    """
    started = time.perf_counter()
    spec = as_spec(spec)
    given = engine
    opened = _open_for(source, spec, engine)
    engine = opened.engine
    try:
        timings = {}
        problem = prepare(engine, opened.relation, spec, opened.label, _key(fingerprint_key))
        timings["prepare_seconds"] = time.perf_counter() - started
        criteria = criteria_for(spec.k, problem.sas)
        if spec.k > problem.rows:
            raise NoSolutionError(f"k = {spec.k} is larger than the table ({problem.rows} rows): no "
                                  "generalization can make classes that big; lower k")
        inputs = [*opened.files, *spec.files_read]
        if spec.search.algorithm == "gaa":
            run = run_gaa(problem, criteria, spec.search)
            timings["search_seconds"] = run.result.seconds
            return GaaRelease(problem, None, criteria, spec.sha256(), opened.label, timings,
                              owns_engine=given is None, inputs=inputs, selection=spec.search, gaa_run=run)
        counts = leaf_counts(problem)
        cost = search_cost(problem, spec.search.metric_name, spec.search.weights, counts)
        result = incognito(problem, criteria, on_progress, cost)
        timings["search_seconds"] = result.seconds
        if result.optimum is None:
            raise NoSolutionError(_no_solution_message(spec, problem.rows, result.lattice_size))
    except BaseException:
        if given is None:
            engine.close()  # temp objects (and our own connection) go; a caller's connection stays
        raise
    return Release(problem, result, criteria, spec.sha256(), opened.label, timings, owns_engine=given is None,
                   inputs=inputs, selection=spec.search, _leaf_counts=counts)


def plan(source: SourceLike, spec: Spec | str | Path | dict, node: dict[str, int] | None = None,
         examples: int = 3) -> dict:
    """What a run would do, without searching or writing: the source and its rows, each
    quasi-identifier's hierarchy (levels, a few example generalizations), the lattice, the models
    and thresholds, and the SQL of the histogram scan and of the release (at ``node``, default
    the bottom). Validates everything a run validates (columns, hierarchies, NULLs)."""
    spec = as_spec(spec)
    opened = _open_for(source, spec, None)
    try:
        problem = prepare(opened.engine, opened.relation, spec, opened.label)
        levels = tuple((node or {}).get(qi.name, 0) for qi in problem.qis)
        return describe_problem(problem, spec, levels, examples)
    finally:
        opened.engine.close()


def input_fingerprint(source: SourceLike, spec: Spec | str | Path | dict,
                      fingerprint_key: str | None = None) -> str | None:
    """The keyed fingerprint a run would record for this input (None without a key): one scan."""
    spec = as_spec(spec)
    key = _key(fingerprint_key)
    if key is None:
        return None
    opened = _open_for(source, spec, None)
    try:
        return keyed_fingerprint(opened.engine, opened.relation, key)
    finally:
        opened.engine.close()


def hierarchy_of(spec: Spec | str | Path | dict, column: str, source: SourceLike = None) -> Hierarchy:
    """The hierarchy a run would use for a quasi-identifier: read, or built by its rule from the
    data, and validated against the data (every value a leaf)."""
    spec = as_spec(spec)
    if column not in spec.quasi_identifiers:
        raise SpecError(f"{column!r} is not a quasi-identifier of the spec (those are: "
                        f"{', '.join(repr(c) for c in spec.quasi_identifiers)})")
    opened = _open_for(source, spec, None)
    try:
        problem = prepare(opened.engine, opened.relation, spec, opened.label)
        return next(qi.hierarchy for qi in problem.qis if qi.name == column)
    finally:
        opened.engine.close()


def open_for(source: SourceLike, spec: Spec, engine: Engine | None = None) -> Opened:
    """The source opened as a run opens it (for callers that prepare once and search many times,
    like ``sqlclose.sweep``); the caller closes ``Opened.engine`` when it made none."""
    return _open_for(source, spec, engine)


def _open_for(source: SourceLike, spec: Spec, engine: Engine | None) -> Opened:
    """Open the source on the given engine, else on the spec's [engine], else on DuckDB."""
    if source is None:
        if spec.source is None:
            raise SpecError("no source given: pass one, or add a [source] section with path = \"…\" to the spec")
        source = spec.source
    numeric = tuple(name for name, s in spec.sensitive.items() if s.distance == "ordered")
    made = _engine_from(spec.engine) if engine is None and spec.engine is not None else None
    try:
        return open_source(source, engine or made, ReadOptions.of(spec.source, numeric))
    except BaseException:
        if made is not None:
            made.close()
        raise


def _engine_from(settings: EngineSettings) -> Engine:
    try:
        return engine_for(settings.name, **settings.options())
    except (ValueError, TypeError) as e:
        raise SpecError(f"[engine]: {e}") from None


def _key(given: str | None) -> str | None:
    return (given if given is not None else os.environ.get(FINGERPRINT_KEY_VARIABLE)) or None




def _no_solution_message(spec: Spec, rows: int, size: int) -> str:
    parts = [f"k = {spec.k}"] + [f"{', '.join(s.models)} on {name!r}" for name, s in spec.sensitive.items()]
    return (f"no generalization satisfies {', '.join(parts)} with suppression ≤ {spec.suppression:.1%} "
            f"(searched the lattice of {size} nodes over {rows} rows); relax t or k, allow more suppression, "
            "or add hierarchy levels")


AGAINST_TOLERANCE = 1e-9  # the report's values and the re-check's may differ in the last float bits


def verify_against_report(path: Path, report_path: Path, spec: Spec | str | Path | None = None) -> dict:
    """Re-verify a released file against its report (its manifest): the file's sha256, rows,
    classes and smallest class, every l/p value, and each sensitive column's largest distance
    against the file's own distribution (the report's ``t_against_release``). ``spec`` gives the
    hierarchies a hierarchical distance needs; without it the report's models are used as stated."""
    try:
        doc = json.loads(Path(report_path).read_text(encoding="utf-8"))
        qis, privacy = list(doc["generalization"]), doc["privacy"]
    except (OSError, ValueError, KeyError) as e:
        raise InputError(f"cannot read the report {report_path}: {e}") from None
    problems = []
    if sha256(Path(path)) != doc.get("output", {}).get("sha256"):
        problems.append("its sha256 differs from the report's output.sha256 (the file was changed or replaced)")
    models = dict(as_spec(spec).sensitive) if spec is not None else {
        name: _model_from_report(name, entry) for name, entry in privacy["sensitive"].items()}
    audit_ = run_check(path, qis, models, k=privacy["k"]).to_dict()
    expected = {"rows": doc["output"]["rows"], "classes": doc["classes"], "k": privacy["min_class_size"]}
    found = {"rows": audit_["rows"], "classes": audit_["classes"], "k": audit_["k"]["reached"]}
    problems += [f"{key} is {found[key]}, the report says {value}" for key, value in expected.items()
                 if found[key] != value]
    for name, entry in privacy["sensitive"].items():
        measured = audit_["sensitive"][name]
        for key in ("distinct_l", "entropy_l", "recursive", "p"):
            if key in entry:
                problems += _mismatch(f"{name} {key}", entry[key]["reached"], _reached(measured, key))
        if "t" in entry and name in doc.get("t_against_release", {}):
            got = measured["distances"][entry["distance"]]["reached"]
            problems += _mismatch(f"{name} largest {entry['distance']} distance against the release",
                                  doc["t_against_release"][name], got)
    return {"file": str(path), "report": str(report_path), "rows": found["rows"], "classes": found["classes"],
            "problems": problems}


def _model_from_report(name: str, entry: dict) -> Sensitive:
    if entry.get("distance") == "hierarchical":
        raise InputError(f"column {name!r} uses the hierarchical distance: give the release's spec (--spec) for its "
                         "hierarchy")
    given = {"distance": entry.get("distance", "equal"), "t": entry.get("t")}
    given.update({key: entry[key]["l"] for key in ("distinct_l", "entropy_l") if key in entry})
    if "recursive" in entry:
        given["recursive"] = {"c": entry["recursive"]["c"], "l": entry["recursive"]["l"]}
    if "p" in entry:
        given["p"] = entry["p"]["p"]
    return Sensitive.model_validate({k: v for k, v in given.items() if v is not None})


def _reached(measured: dict, key: str) -> Any:
    entry = measured.get(key) or {}
    return entry.get("reached")


def _mismatch(what: str, claimed: Any, found: Any) -> list[str]:
    if claimed is None or found is None:
        return [] if claimed == found else [f"{what} is {found}, the report says {claimed}"]
    same = abs(float(claimed) - float(found)) <= AGAINST_TOLERANCE * max(1.0, abs(float(claimed)))
    return [] if same else [f"{what} is {found}, the report says {claimed}"]
