"""The screen's SQL (``queries.sampled_rows``, ``queries.small_class_records``) against numpy over
the same keyed rows: a sample is whole classes of every node finer than the one it was drawn by,
and the records below k it counts are those of its classes, exactly."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from sqlclose.sql import queries as q

SPAN = 4  # the sensitive part: the key's low 2 bits
MASK_COARSE = (0xF00 | (SPAN - 1), -1)  # word 0: its high QI digit (and the sensitive bits, as a node keeps them)
MASK_FINE = (-1, -1)  # both words whole: every digit


def keyed_rows(seed: int = 7, rows: int = 4000) -> pa.Table:
    rng = np.random.default_rng(seed)
    key = rng.integers(0, 4096, rows, dtype=np.int64)  # QI digits above the sensitive part
    key1 = rng.integers(0, 3, rows, dtype=np.int64)
    n = rng.integers(1, 4, rows, dtype=np.int64)
    return pa.table({"key": key, "key1": key1, "n": n})


def class_sizes(t: pa.Table, masks: tuple[int, int]) -> dict[tuple[int, int], int]:
    """The oracle: each class's records, keys masked and the sensitive part cleared, in numpy."""
    k0 = t.column("key").to_numpy() & masks[0] & -SPAN
    k1 = t.column("key1").to_numpy() & masks[1]
    sizes: dict[tuple[int, int], int] = {}
    for a, b, n in zip(k0.tolist(), k1.tolist(), t.column("n").to_numpy().tolist()):
        sizes[a, b] = sizes.get((a, b), 0) + n
    return sizes


@pytest.fixture
def con():
    c = duckdb.connect()
    yield c
    c.close()


@pytest.mark.parametrize("modulus", [1, 2, 5])
def test_a_sample_is_whole_classes_of_finer_nodes_and_counts_their_small_ones(con, modulus):
    rows = keyed_rows()
    con.register("keyed", rows)
    sample = con.sql(q.sampled_rows(q.table("keyed"), MASK_COARSE, SPAN, modulus).sql("duckdb")).to_arrow_table()
    if modulus == 1:
        assert sample.num_rows == rows.num_rows
    else:
        assert 0 < sample.num_rows < rows.num_rows
    everyone = class_sizes(rows, MASK_FINE)
    sampled = class_sizes(sample, MASK_FINE)
    assert all(everyone[c] == size for c, size in sampled.items())  # whole classes of the finer node
    con.register("sample", sample)
    for k in (2, 8, 12):
        got = con.execute(q.small_class_records(q.table("sample"), [(3, *MASK_FINE), (5, *MASK_COARSE)], k, SPAN)
                          .sql("duckdb")).fetchall()
        want = {3: sum(s for s in sampled.values() if s < k),
                5: sum(s for s in class_sizes(sample, MASK_COARSE).values() if s < k)}
        assert dict(got) == want
        assert want[3] <= sum(s for s in everyone.values() if s < k)  # a lower bound of the node's
    assert any(s < 8 for s in sampled.values())  # not vacuous: small classes were there to count


def test_keyed_rows_stored_without_a_count_count_one_each(con):
    """Rows of a base stored as keys alone (``prepare.stored_keys``: each row counts one) give the
    records below k that numpy counts over the same rows, each counted once."""
    rows = keyed_rows().drop_columns(["n"])
    con.register("keys", rows)
    ones = rows.append_column("n", pa.array(np.ones(rows.num_rows, dtype=np.int64)))
    for k in (2, 3, 5):
        got = con.execute(q.small_class_records(q.table("keys"), [(3, *MASK_FINE), (5, *MASK_COARSE)], k, SPAN,
                                                ones=True).sql("duckdb")).fetchall()
        want = {3: sum(s for s in class_sizes(ones, MASK_FINE).values() if s < k),
                5: sum(s for s in class_sizes(ones, MASK_COARSE).values() if s < k)}
        assert dict(got) == want and want[3] > 0
