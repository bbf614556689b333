"""A released node's rows come sorted by the engine (class codes, then sensitive codes), so that
Python need not sort ~1 M cells again (``sql/queries.node_histogram(ordered=True)``). Whatever the
order, the classes, their sizes and their count matrices must be those a plain tally of the rows
gives: the oracle here is a Python dict over the rows, written without sqlclose."""

from __future__ import annotations

from collections import defaultdict

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from sqlclose.model.classes import class_histograms
from sqlclose.model.sparse_counts import SparseCounts, dense_counts
from sqlclose.sql import queries as q

DOMAINS = (7, 3)  # two sensitive columns: the first one's cells repeat once rows are sorted by both


def _rows(seed: int, rows: int = 400) -> pa.Table:
    """(two QI codes, two sensitive codes, count) rows, each (codes, sensitive codes) once, shuffled."""
    rng = np.random.default_rng(seed)
    keys = np.unique(np.column_stack([rng.integers(0, 5, rows), rng.integers(0, 9, rows),
                                      rng.integers(0, DOMAINS[0], rows), rng.integers(0, DOMAINS[1], rows)]), axis=0)
    keys = keys[rng.permutation(len(keys))]
    return pa.table({"a": keys[:, 0], "b": keys[:, 1], "s": keys[:, 2], "u": keys[:, 3],
                     "n": rng.integers(1, 6, len(keys))})


def _tally(table: pa.Table) -> tuple[list[tuple[int, int]], dict, list[dict]]:
    """The oracle: classes in ascending code order, their sizes and per sensitive column {class: {value: n}}."""
    sizes: dict = defaultdict(int)
    counts = [defaultdict(lambda: defaultdict(int)) for _ in DOMAINS]
    for a, b, s, u, n in zip(*(table.column(c).to_pylist() for c in ("a", "b", "s", "u", "n"))):
        sizes[a, b] += n
        counts[0][a, b][s] += n
        counts[1][a, b][u] += n
    return sorted(sizes), sizes, counts


def _engine_sorted(table: pa.Table) -> pa.Table:
    """The rows as the released node's query returns them: its GROUP BY with ``ordered``, run by DuckDB."""
    query = q.node_histogram(q.table("t"), [("a", 1), ("b", 1)], ["s", "u"], ordered=True)
    connection = duckdb.connect()
    connection.register("t", table)
    return connection.sql(query.sql("duckdb")).to_arrow_table()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cells_past", [None, 0])
def test_rows_sorted_by_the_engine_or_not_give_the_tallied_classes(seed, cells_past):
    table = _rows(seed)
    classes, sizes, counts = _tally(table)
    ordered = _engine_sorted(table)
    assert ordered.num_rows == table.num_rows
    for rows in (table, ordered):
        hist = class_histograms(rows, ["a", "b"], ["s", "u"], DOMAINS, cells_past)
        assert [tuple(c) for c in hist.codes.tolist()] == classes
        assert hist.sizes.tolist() == [sizes[c] for c in classes]
        for j, m in enumerate(DOMAINS):
            assert isinstance(hist.counts[j], SparseCounts) == (cells_past == 0)
            expected = [[counts[j][c][v] for v in range(m)] for c in classes]
            assert dense_counts(hist.counts[j]).tolist() == expected


def test_the_released_nodes_rows_come_sorted_by_class_then_value():
    ordered = _engine_sorted(_rows(3))
    keys = list(zip(*(ordered.column(c).to_pylist() for c in ("a", "b", "s", "u"))))
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_sorted_cells_given_twice_are_summed_and_unsorted_ones_sorted():
    # cells 0·3+1, 0·3+1 (twice: rows grouped by a second sensitive column), 1·3+0, 1·3+2
    for cells, values in ((np.array([1, 1, 3, 5]), np.array([2, 3, 1, 4])),
                          (np.array([5, 1, 3, 1]), np.array([4, 2, 1, 3]))):
        counts = SparseCounts.from_cells(cells, values, (2, 3))
        assert counts.rows.tolist() == [0, 1, 1]
        assert counts.cols.tolist() == [1, 0, 2]
        assert counts.values.tolist() == [5.0, 1.0, 4.0]
