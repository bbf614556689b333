"""The Python entry points: ``anonymize`` a source under a spec."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from .engine import Engine
from .errors import NoSolutionError, SpecError
from .privacy import criteria_for
from .problem import prepare
from .release import Release
from .search import incognito
from .sources import ReadOptions, SourceLike, open_source
from .spec import Spec, build_spec, load_spec

FINGERPRINT_KEY_VARIABLE = "SQLCLOSE_FINGERPRINT_KEY"


def anonymize(source: SourceLike, spec: Spec | str | Path | dict, *, engine: Engine | None = None,
              on_progress: Callable[[int], None] | None = None, fingerprint_key: str | None = None) -> Release:
    """Find the optimal full-domain generalization of ``source`` that satisfies ``spec``.

    ``source`` is a path (Parquet, CSV, DuckDB file with the spec's table), a
    ``(duckdb connection, table name)`` pair, a pyarrow Table or a pandas DataFrame; ``None``
    takes the spec's ``[source]``. Raises ``NoSolutionError`` when no node satisfies.
    ``fingerprint_key`` (default: $SQLCLOSE_FINGERPRINT_KEY) is the operator's secret that keys
    the input fingerprint in the report; without one the report records no fingerprint.
    """
    started = time.perf_counter()
    spec = _as_spec(spec)
    if source is None:
        if spec.source is None:
            raise SpecError("no source given: pass one, or add a [source] section with path = \"…\" to the spec")
        source = spec.source
    given = engine
    numeric = tuple(name for name, s in spec.sensitive.items() if s.distance == "ordered")
    opened = open_source(source, engine, ReadOptions.of(spec.source, numeric))
    engine = opened.engine
    try:
        timings = {}
        key = fingerprint_key if fingerprint_key is not None else os.environ.get(FINGERPRINT_KEY_VARIABLE)
        problem = prepare(engine, opened.relation, spec, opened.label, key or None)
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
