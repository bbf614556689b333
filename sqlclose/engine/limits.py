"""The user's ``[engine] memory_limit``, in bytes, and how it is shared within the job.

The limit bounds the whole job's process, not DuckDB alone. ``INTERPRETER_BYTES`` are kept for
the interpreter and its libraries; of the rest DuckDB gets ``ENGINE_SHARE`` as its own memory limit
(it spills past it), the search's Python-side structures ``SEARCH_SHARE`` (a kept level's part, the
in-memory rollups), and what remains covers what neither accounts for: DuckDB's allocations outside
its limit and freed memory the allocators keep. Measured: docs/engines.md, "Memory limit".

That last part is not a constant: it grows over a long run (pages the allocators keep, the
search's bookkeeping). So during the search DuckDB's limit follows what the process holds outside
DuckDB (``engine_limit_now``): measured, not modelled.
"""

from __future__ import annotations

import os

from sqlclose.model.sizes import parse_bytes

__all__ = ["parse_bytes"]

# Resident size of the interpreter with duckdb, pyarrow, numpy and sqlglot loaded: ~0.19 GB measured.
INTERPRETER_BYTES = 250 * 10**6
ENGINE_SHARE = 0.6
SEARCH_SHARE = 0.2
# During the search DuckDB's limit is what the job's limit leaves, less this headroom, after the most
# the process has held outside DuckDB; never below ENGINE_FLOOR of its share (it would spill most of
# its work) nor above its share.
HEADROOM = 0.05
ENGINE_FLOOR = 0.5
# Driver memory a local copy of a small engine-side table may take (Spark's column values, a grouped
# release for its re-check): a quarter of Spark's default spark.driver.maxResultSize (1 GB).
LOCAL_COPY_MAX_BYTES = 256 * 2**20


def _working(limit: int) -> int:
    # A limit below the interpreter's own size still gives the engine something to try with.
    return max(limit - INTERPRETER_BYTES, limit // 4)


def engine_share(limit: int) -> int:
    """Bytes DuckDB may hold (its ``memory_limit``) under the job's limit."""
    return int(_working(limit) * ENGINE_SHARE)


def search_share(limit: int) -> int:
    """Bytes the search's Python-side structures may hold under the job's limit."""
    return int(_working(limit) * SEARCH_SHARE)


def engine_limit_now(limit: int, outside: int) -> int:
    """DuckDB's memory limit, in bytes, when the job's process holds ``outside`` bytes besides
    DuckDB's own buffers (the interpreter, the search's parts, allocator-kept pages)."""
    share = engine_share(limit)
    room = int(limit * (1 - HEADROOM)) - outside
    return max(int(share * ENGINE_FLOOR), min(share, room))


def resident_bytes() -> int | None:
    """The process's resident set size now, or None where ``/proc`` cannot tell (not Linux)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def megabytes(n: int) -> str:
    """``150000000`` → "150 MB"; below 10 MB with two significant digits ("0.15 MB")."""
    if n >= 10**7:
        return f"{n / 1e6:,.0f} MB"
    if n >= 10**4:
        return f"{n / 1e6:.2g} MB"
    return f"{n:,} byte" + ("" if n == 1 else "s")  # 1e-06 MB read as a typo


def below_interpreter(limit: int) -> str | None:
    """A warning when the limit is too small for the job's process to stay within it, else None."""
    if limit >= 2 * INTERPRETER_BYTES:
        return None
    return (f"memory_limit {megabytes(limit)} cannot bound this job: the interpreter and its libraries "
            f"alone take ~{megabytes(INTERPRETER_BYTES)}. DuckDB gets {megabytes(engine_share(limit))} and "
            f"spills past it, but the process will go over the limit; give at least "
            f"{megabytes(2 * INTERPRETER_BYTES)} for a bound that holds")
