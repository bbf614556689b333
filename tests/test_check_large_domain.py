"""``sqlclose check`` of a sensitive column of many distinct values: each class read by its own values.

The audit judged every class as a dense row over the whole domain: ~25 MB a class for an ordered
income of 632 k values, 792 MiB under a 500 MB limit with ten classes, and a million classes never
finished (docs/engines.md, "Memory limit"). A column of more than ``DENSE_ORDERED_VALUES`` values is
now kept as each class's cells, and every measure, attack and listing reads them.

Oracles: the table's rows written here, counted by a plain DuckDB GROUP BY; each class's distances
from the textbook formulas over its dense row (numpy, in the test), entropy from its definition,
recursive (c,l) from the sorted counts; the criteria's cells forms against their dense rows, bit
for bit, on random classes.
"""

from __future__ import annotations

import math
import tracemalloc
from types import SimpleNamespace

import duckdb
import numpy as np
import pytest

from sqlclose import check
from sqlclose.audit import tables
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.model.attributes import SensitiveAttribute
from sqlclose.model.classes import ClassHistograms
from sqlclose.model.sparse_counts import SparseCounts
from sqlclose.model.spec import Sensitive
from sqlclose.privacy.criteria import (
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
    TCloseness,
)
from sqlclose.privacy.emd import DENSE_ORDERED_VALUES

CLASSES, VALUES, ROWS = 40, 3_000, 24_000  # VALUES: at most


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> SimpleNamespace:
    """40 classes (g) over ~2,900 income values, uneven: class g holds values below 75 · (g + 1);
    in a connection (``con``, table ``t``) and a Parquet file (``path``)."""
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT (i % {CLASSES})::INTEGER AS g, "
                f"(hash(i) % (75 * ((i % {CLASSES}) + 1)))::INTEGER AS income FROM range({ROWS}) r(i)")
    path = tmp_path_factory.mktemp("large_domain") / "t.parquet"
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    return SimpleNamespace(con=con, path=path)


def _dense(con: duckdb.DuckDBPyConnection) -> tuple[np.ndarray, np.ndarray]:
    """The classes' counts over the sorted domain, from a plain GROUP BY, and the table's."""
    domain = [r[0] for r in con.execute("SELECT DISTINCT income FROM t ORDER BY 1").fetchall()]
    where = {v: i for i, v in enumerate(domain)}
    matrix = np.zeros((CLASSES, len(domain)))
    for g, v, n in con.execute("SELECT g, income, count(*) FROM t GROUP BY ALL").fetchall():
        matrix[g, where[v]] = n
    return matrix, matrix.sum(axis=0)


def test_a_large_domain_is_judged_by_each_class_values_as_the_formulas_say(table):
    matrix, q = _dense(table.con)
    assert matrix.shape[1] > DENSE_ORDERED_VALUES
    report = check((table.con, "t"), ["g"], {"income": {"distance": "ordered", "t": 0.2, "entropy_l": 150,
                                                    "recursive": {"c": 3, "l": 5}}}, k=2, top=3)
    data = report.to_dict()["sensitive"]["income"]
    p, share = matrix / matrix.sum(axis=1, keepdims=True), q / q.sum()
    m = matrix.shape[1]
    ordered = np.abs(np.cumsum(p - share, axis=1)[:, :-1]).sum(axis=1) / (m - 1)
    equal = np.abs(p - share).sum(axis=1) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(p > 0, p * np.log(p), 0).sum(axis=1)
        kl = np.where(p > 0, p * np.log(p / share), 0).sum(axis=1)
    descending = -np.sort(-matrix, axis=1)
    recursive = descending[:, 0] / descending[:, 4:].sum(axis=1)
    assert report.class_distances["income"] == pytest.approx(ordered, rel=1e-12)
    distances = data["distances"]
    assert distances["ordered"]["reached"] == pytest.approx(ordered.max(), rel=1e-12)
    assert distances["equal"]["reached"] == pytest.approx(equal.max(), rel=1e-12)
    assert distances["variational"]["reached"] == pytest.approx(equal.max(), rel=1e-12)
    assert distances["kl"]["reached"] == pytest.approx(kl.max(), rel=1e-12)
    assert distances["ordered"]["failing_classes"] == int((ordered > 0.2 + 1e-12).sum()) > 0
    assert data["entropy_l"]["reached"] == pytest.approx(math.exp(entropy.min()), rel=1e-12)
    assert data["entropy_l"]["failing_classes"] == int((entropy < math.log(150) - 1e-12).sum()) > 0
    assert data["distinct_l"]["reached"] == int((matrix > 0).sum(axis=1).min())
    assert data["recursive"]["reached"] == pytest.approx(recursive.max(), rel=1e-15)
    worst = np.argsort(-ordered, kind="stable")[:3]
    listed = distances["ordered"]["worst_classes"]
    assert [c["class"]["g"] for c in listed] == worst.tolist()
    row = matrix[worst[0]]
    commonest = np.argsort(-row, kind="stable")[:10]
    domain = [r[0] for r in table.con.execute("SELECT DISTINCT income FROM t ORDER BY 1").fetchall()]
    assert listed[0]["distribution"] == {**{str(domain[v]): int(row[v]) for v in commonest},
                                         "(other values)": int(row.sum() - row[commonest].sum())}
    skew = data["attacks"]["skewness"]
    ratios = (p / share).max(axis=1)
    assert skew["worst_ratio"] == pytest.approx(ratios.max(), rel=1e-12)
    assert skew["classes"] == int((ratios >= 3 - 1e-12).sum())
    assert report.distributions["income"] == {str(v): int(n) for v, n in zip(domain, q)}


def test_no_class_is_made_dense(monkeypatch):
    """Every figure from the cells: no dense row of the domain (``SparseCounts.dense``), and what
    Python allocates stays far below the dense rows: 200 classes over ~63 k values are 100 MB
    dense (and the measures' temporaries several times that), ~500 values a class as cells."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT (i % 200)::INTEGER AS g, (hash(i) % 100000)::INTEGER AS income "
                "FROM range(100000) r(i)")
    monkeypatch.setattr(SparseCounts, "dense", lambda self: pytest.fail("a class made dense"))
    sensitive = {"income": {"distance": "ordered", "t": 0.5, "entropy_l": 2, "recursive": {"c": 3, "l": 2},
                            "p": 2}}
    check((con, "t"), ["g"], sensitive, k=2)  # imports and caches of a first call are not the audit's
    tracemalloc.start()
    try:
        report = check((con, "t"), ["g"], sensitive, k=2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    values = con.execute("SELECT count(DISTINCT income) FROM t").fetchone()[0]
    assert report.to_dict()["sensitive"]["income"]["domain_size"] == values > 60_000
    assert peak < 40 * 10**6 < 200 * 8 * values, peak


def test_runs_hold_the_python_share_of_a_memory_limit(table, monkeypatch):
    """Under a memory limit a run holds at most the Python side's share of it (``limits.search_share``:
    50 MB of 500 MB), however large ``RUN_BYTES``: with each cell counted at 100 kB (~40 MB a class
    of ~450 values) a run is one class; without a limit the 40 classes are one run."""
    seen = []
    original = tables.TableClasses.runs

    def recording(self, *args):
        for start, hist in original(self, *args):
            seen.append(hist.classes)
            yield start, hist
    monkeypatch.setattr(tables.TableClasses, "runs", recording)
    monkeypatch.setattr(tables, "CELL_COPIES", 2_500)
    monkeypatch.setattr(tables, "RUN_BYTES", 10**12)
    engine = DuckDBEngine(memory_limit="500MB")
    try:
        check(table.path, ["g"], ["income"], engine=engine)
    finally:
        engine.close()
    assert seen == [1] * CLASSES, seen
    seen.clear()
    check(table.path, ["g"], ["income"])
    assert seen == [CLASSES], seen


def _random_cells(rng: np.random.Generator, classes: int, values: int) -> tuple[np.ndarray, SparseCounts]:
    dense = np.zeros((classes, values))
    for i in range(classes):
        held = rng.choice(values, int(rng.integers(1, 60)), replace=False)
        dense[i, held] = rng.integers(1, 9, size=len(held))
    rows, cols = np.nonzero(dense)
    return dense, SparseCounts.from_cells(rows * values + cols, dense[rows, cols], dense.shape)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_criteria_measure_cells_to_the_dense_rows_bits(seed):
    """Entropy and recursive (c,l) l-diversity, distinct l and t (equal, ordered, KL) on the same
    classes as dense rows and as cells: the same bits (a class's figure is its own counts' alone)."""
    rng = np.random.default_rng(seed)
    values = 700
    dense, cells = _random_cells(rng, 300, values)
    q = dense.sum(axis=0) + rng.integers(0, 3, size=values)
    sizes = dense.sum(axis=1).astype(np.int64)
    for distance in ("equal", "ordered", "kl"):
        column = SensitiveAttribute("s", Sensitive(distance=distance, t=0.5), list(range(values)), q=q)
        criteria = [EntropyLDiversity(0, column, 3.0), RecursiveCLDiversity(0, column, 2.0, 3),
                    DistinctLDiversity(0, column, 3), TCloseness(0, column)]
        for criterion in criteria:
            as_rows = criterion.measure(ClassHistograms(np.zeros((300, 0)), sizes, [dense]))
            as_cells = criterion.measure(ClassHistograms(np.zeros((300, 0)), sizes, [cells]))
            assert np.array_equal(as_rows, as_cells), (criterion.name, distance)
