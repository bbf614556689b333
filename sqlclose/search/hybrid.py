"""Hybrid execution: the scan on the engine, the search locally over the collected histogram.

On an engine whose every query costs a planning step and jobs (Spark: 0.1–1 s, even on a few
thousand rows), the lattice search — dozens of rollup queries over class counts, not rows — is
faster in a local DuckDB. After the one scan the base histogram's size is known; when it is at
most ``LOCAL_SEARCH_MAX_ROWS`` rows (measured: docs/engines.md, "Hybrid execution"), it is
collected as Arrow (aggregated counts only: one row per distinct combination of QI and sensitive
codes) and the search runs on a copy of the problem pointing at a local DuckDB engine. The
optimum's classes are read from that copy too, before it is closed (``api._search``: the same
arrays a GROUP BY of the base on the source's engine gives). The release, its verification and
the fingerprint still run on the source's engine.

Engines choose with ``Engine.local_search`` (Spark: on, DuckDB: already local).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlclose.engine import DuckDBEngine
from sqlclose.prepare.problem import Problem
from sqlclose.sql import queries as q

# Rows of the base histogram up to which the search runs locally. The collected table costs the
# driver 1–8 bytes per code column per row (Arrow; each code is stored in the narrowest type that
# holds it) and 8 for the count, plus DuckDB's work space: 10 M rows of a 9-column histogram is
# 0.2–0.7 GB. Past it, the search stays on the engine (distributed).
LOCAL_SEARCH_MAX_ROWS = 10_000_000


def searches_locally(problem: Problem, limit: int | None = None) -> bool:
    """The rule: an engine that asks for it, and a base histogram of at most ``limit`` rows."""
    limit = LOCAL_SEARCH_MAX_ROWS if limit is None else limit
    return problem.engine.local_search and problem.base_rows <= limit


@contextmanager
def search_problem(problem: Problem, local: bool | None = None) -> Iterator[Problem]:
    """The problem the search should run on: ``problem`` itself, or (``local``, by default the
    rule above) a copy whose base histogram lives in a local DuckDB, closed on exit."""
    if not (searches_locally(problem) if local is None else local):
        yield problem
        return
    names = [qi.coded.code for qi in problem.qis] + [s.coded.code for s in problem.sas] + ["n"]
    counts = problem.engine.fetch(q.project(problem.base, names))
    engine = DuckDBEngine()
    try:
        name = engine.temp_name("base_histogram")
        engine.register(name, counts)
        yield problem.on_base(engine, q.table(name))
    finally:
        engine.close()
