"""The Python entry points: ``anonymize`` a source under a spec."""

from __future__ import annotations

import os
import time
from pathlib import Path

from .engine import Engine
from .errors import NoSolutionError, SpecError
from .explain import describe_problem
from .hierarchy import Hierarchy
from .privacy import criteria_for
from .problem import keyed_fingerprint, prepare
from .release import Release
from .search import ProgressCallback, incognito
from .sources import Opened, ReadOptions, SourceLike, open_source
from .spec import Spec, build_spec, load_spec

FINGERPRINT_KEY_VARIABLE = "SQLCLOSE_FINGERPRINT_KEY"


def anonymize(source: SourceLike, spec: Spec | str | Path | dict, *, engine: Engine | None = None,
              on_progress: ProgressCallback | None = None, fingerprint_key: str | None = None) -> Release:
    """Find the optimal full-domain generalization of ``source`` that satisfies ``spec``.

    ``source`` is a path (Parquet, CSV, DuckDB file with the spec's table), a
    ``(duckdb connection, table name)`` pair, a pyarrow Table or a pandas DataFrame; ``None``
    takes the spec's ``[source]``. Raises ``NoSolutionError`` when no node satisfies.
    ``fingerprint_key`` (default: $SQLCLOSE_FINGERPRINT_KEY) is the operator's secret that keys
    the input fingerprint in the report; without one the report records no fingerprint.
    """
    started = time.perf_counter()
    spec = _as_spec(spec)
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
        result = incognito(problem, criteria, on_progress)
        timings["search_seconds"] = result.seconds
        if result.optimum is None:
            raise NoSolutionError(_no_solution_message(spec, problem.rows, result.lattice_size))
    except BaseException:
        if given is None:
            engine.close()  # temp objects (and our own connection) go; a caller's connection stays
        raise
    inputs = [*opened.files, *spec.files_read]
    return Release(problem, result, criteria, spec.sha256(), opened.label, timings, owns_engine=given is None,
                   inputs=inputs)


def plan(source: SourceLike, spec: Spec | str | Path | dict, node: dict[str, int] | None = None,
         examples: int = 3) -> dict:
    """What a run would do, without searching or writing: the source and its rows, each
    quasi-identifier's hierarchy (levels, a few example generalizations), the lattice, the models
    and thresholds, and the SQL of the histogram scan and of the release (at ``node``, default
    the bottom). Validates everything a run validates (columns, hierarchies, NULLs)."""
    spec = _as_spec(spec)
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
    spec = _as_spec(spec)
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
    spec = _as_spec(spec)
    if column not in spec.quasi_identifiers:
        raise SpecError(f"{column!r} is not a quasi-identifier of the spec (those are: "
                        f"{', '.join(repr(c) for c in spec.quasi_identifiers)})")
    opened = _open_for(source, spec, None)
    try:
        problem = prepare(opened.engine, opened.relation, spec, opened.label)
        return next(qi.hierarchy for qi in problem.qis if qi.name == column)
    finally:
        opened.engine.close()


def _open_for(source: SourceLike, spec: Spec, engine: Engine | None) -> Opened:
    if source is None:
        if spec.source is None:
            raise SpecError("no source given: pass one, or add a [source] section with path = \"…\" to the spec")
        source = spec.source
    numeric = tuple(name for name, s in spec.sensitive.items() if s.distance == "ordered")
    return open_source(source, engine, ReadOptions.of(spec.source, numeric))


def _key(given: str | None) -> str | None:
    return (given if given is not None else os.environ.get(FINGERPRINT_KEY_VARIABLE)) or None


def _as_spec(spec: Spec | str | Path | dict) -> Spec:
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, (str, Path)):
        return load_spec(spec)
    if isinstance(spec, dict):
        return build_spec(spec)
    raise SpecError(f"spec must be a Spec, a TOML path or a dict, not {type(spec).__name__}")


def _no_solution_message(spec: Spec, rows: int, size: int) -> str:
    parts = [f"k = {spec.k}"] + [f"{', '.join(s.models)} on {name!r}" for name, s in spec.sensitive.items()]
    return (f"no generalization satisfies {', '.join(parts)} with suppression ≤ {spec.suppression:.1%} "
            f"(searched the lattice of {size} nodes over {rows} rows); relax t or k, allow more suppression, "
            "or add hierarchy levels")
