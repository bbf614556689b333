"""Parquet files of fewer row groups than threads, read as slices of their rows.

DuckDB reads a Parquet row group on one thread, and every operator above that read in the same
pipeline (the joins to the lookups, the base histogram's hash aggregate, the input of the release's
sort) runs on that thread too. A one-row-group file (pyarrow writes up to 1 Mi rows to a row group)
thus leaves the other cores idle in every pass over it. Read as a UNION ALL of ranges of its
``file_row_number``, each range is a task of its own: the 1 M-row job took 0.89× the wall time at
5 % and 0.85× at 0 % (docs/performance.md, seventy-third round). Each slice decodes a row group's
pages again (DuckDB skips the row groups outside its range) and keeps its own rows, so the rows read
are the file's, each once. Several files (a folder, a pattern) are sliced alike: a slice keeps the
same range of row numbers of each file.
"""

from __future__ import annotations

import sqlglot.expressions as exp

# DuckDB's own row group: a slice of fewer rows is not worth a task of its own.
SLICE_MIN_ROWS = 122_880
ROW_NUMBER = "file_row_number"


def slice_bounds(rows: int, row_groups: int, threads: int) -> list[tuple[int, int]]:
    """Half-open ranges of row numbers, one per slice, covering ``range(rows)`` (``rows``: the
    largest file's); none when the files already give every thread a row group, or the largest
    holds too few rows to share."""
    slices = min(threads, rows // SLICE_MIN_ROWS)
    if slices < 2 or row_groups >= slices:
        return []
    step = -(-rows // slices)
    return [(start, min(start + step, rows)) for start in range(0, rows, step)]


def sliced_read(read: exp.Select, bounds: list[tuple[int, int]]) -> exp.Expression:
    """``read`` (every column but the row number, of ``read_parquet(…, file_row_number = true)``)
    once per range of row numbers, in one UNION ALL."""
    row = exp.column(ROW_NUMBER, quoted=True)
    return exp.union(*[read.where(exp.and_(row.copy() >= start, row.copy() < end)) for start, end in bounds],
                     distinct=False)
