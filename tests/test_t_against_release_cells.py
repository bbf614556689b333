"""The release summary's ``t_against_release`` on a large sensitive domain, from each class's own values.

What was wrong: for the equal, variational, KL and hierarchical distances the summary made every
released class dense over every value (runs of 8 MB, ``kept_runs``): 600 classes × 99,520 values
took 4.4 of the report's 5.96 s of verify_seconds (docs/performance.md, "Issue 10, fifty-third
round: the release summary's distances from each class's own values"). Now a class kept as its
cells is read by its cells, to the dense row's bits (the exact integer sums for the hierarchical
distance, KL's terms added in the values' order): no class is made dense (fifty-fourth round; the
fifty-third made the few within rounding of the largest dense again, one small run at a time).

Oracles: the child process's tracemalloc peak against the size of one of the old runs (8 MB, the
classes × values matrix being 160 MB); exact fractions (50-digit decimals for KL's logarithms)
over a plain GROUP BY of the written file; and, for the bits, the dense form of the same classes
(what the summary computed before), compared with ==.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from decimal import Decimal, getcontext
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import duckdb
import numpy as np
import pytest

import sqlclose
from sqlclose.model.classes import ClassHistograms
from sqlclose.model.sparse_counts import SparseCounts
from sqlclose.release import release as release_module
from sqlclose.release.release import t_against_release

DISTANCES = ("equal", "variational", "kl", "hierarchical")


def _problem(name: str, values: int) -> SimpleNamespace:
    """A problem of one sensitive column ``s`` under distance ``name`` (hierarchical: leaf → /50 → /2,500 → *)."""
    leaves = np.arange(values)
    tree = np.column_stack([leaves, leaves // 50, leaves // 2500, np.zeros(values, np.int64)])
    sa = SimpleNamespace(name="s", spec=SimpleNamespace(t=0.5), distance=name,
                         tree=tree if name == "hierarchical" else None)
    return SimpleNamespace(sas=[sa])


def _cells(classes: int, values: int, per_class: int, seed: int) -> SparseCounts:
    """Random classes of ``per_class`` values each, random counts 1-9 (no two alike)."""
    rng = np.random.default_rng(seed)
    cols = np.concatenate([np.sort(rng.choice(values, per_class, replace=False)) for _ in range(classes)])
    rows = np.repeat(np.arange(classes), per_class)
    counts = rng.integers(1, 10, size=len(rows)).astype(np.float64)
    return SparseCounts(rows, cols, counts, (classes, values))


def _hist(counts: SparseCounts | np.ndarray) -> ClassHistograms:
    classes = counts.shape[0]
    sizes = (counts.row_sums() if isinstance(counts, SparseCounts) else counts.sum(axis=1)).astype(np.int64)
    return ClassHistograms(np.arange(classes)[:, None], sizes, [counts])


PEAK = """
import sys, tracemalloc
import numpy as np
sys.path.insert(0, sys.argv[2])
from test_t_against_release_cells import _cells, _hist, _problem
from sqlclose.release.release import t_against_release
hist = _hist(_cells(400, 50_000, 40, seed=1))
problem = _problem(sys.argv[1], 50_000)
kept = np.ones(400, dtype=bool)
kept[::7] = False
tracemalloc.start()
t_against_release(problem, hist, kept)
print(tracemalloc.get_traced_memory()[1])
"""


@pytest.mark.parametrize("name", ["equal", "variational"])
def test_a_large_domain_summary_allocates_no_classes_by_values(name, tmp_path):
    """400 classes of 40 values each over 50,000 values: dense, 160 MB; the summary's runs were
    8 MB each (with their copies and the distance's temporaries, 16.5 MiB at the peak). Oracle:
    the peak of what the call allocated (tracemalloc, in a child process) is below one such run."""
    tests = str(__import__("pathlib").Path(__file__).resolve().parent)
    done = subprocess.run([sys.executable, "-c", PEAK, name, tests], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    peak = int(done.stdout.strip().splitlines()[-1])
    assert peak < 8_000_000, f"{name}: {peak / 2**20:.1f} MiB"


@pytest.mark.parametrize("name", ["kl", "hierarchical"])
def test_a_large_domain_summary_makes_no_class_dense(name, monkeypatch):
    """The same 400 classes, KL and hierarchical: each class's figure comes from its own cells with
    the dense row's bits (privacy/cell_distances.py), so no class is made dense. Oracle: the rows
    ``SparseCounts.dense`` built, counted as it builds them — every class's in the fifty-second
    round (400), the runs holding a class that might be the largest in the fifty-third (20 classes
    of 50,000 values in 8 MB, or two runs), none now."""
    made = []
    dense = SparseCounts.dense
    monkeypatch.setattr(SparseCounts, "dense", lambda self: made.append(self.shape[0]) or dense(self))
    hist = _hist(_cells(400, 50_000, 40, seed=1))
    kept = np.ones(400, dtype=bool)
    kept[::7] = False
    t_against_release(_problem(name, 50_000), hist, kept)
    assert made == [], made


@pytest.mark.parametrize("name", DISTANCES)
@pytest.mark.parametrize("seed", [2, 3])
def test_the_figure_from_cells_has_the_dense_forms_bits(name, seed):
    """The same classes given as cells and dense (the form the summary read before): the same
    float, ==, with some classes withheld (a value only they hold is out of the release's domain)
    and with tied classes (the same counts at other values: their dense sums may differ in the
    last bit, and the largest is the figure)."""
    cells = _cells(60, 3_000, 30, seed)
    tied = SparseCounts(cells.rows[cells.rows < 5] + 60, (cells.cols[cells.rows < 5] + 7) % 3_000,
                        cells.values[cells.rows < 5], (5, 3_000))
    both = SparseCounts.from_cells(np.r_[cells.rows * 3_000 + cells.cols, tied.rows * 3_000 + tied.cols],
                                   np.r_[cells.values, tied.values], (65, 3_000))
    kept = np.ones(65, dtype=bool)
    kept[[3, 11, 40]] = False
    problem = _problem(name, 3_000)
    from_cells = t_against_release(problem, _hist(both), kept)["s"]
    dense = t_against_release(problem, _hist(both.dense()), kept)["s"]
    assert from_cells == dense


def _tree_rows(values: int) -> list[tuple[str, str, str, str]]:
    return [(f"v{i:03d}", f"g{i // 6}", f"G{i // 30}", "*") for i in range(values)]


def _table(tmp_path, rows: int, values: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a VARCHAR, b VARCHAR, s VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)",
                    [(f"a{rng.integers(12)}", f"b{rng.integers(3)}", f"v{int(v):03d}")
                     for v in np.minimum(rng.geometric(0.02, size=rows) - 1, values - 1)])
    con.execute(f"COPY t TO '{tmp_path / 'in.parquet'}' (FORMAT parquet)")
    (tmp_path / "a.csv").write_text("".join(f"a{i};A{i // 4};*\n" for i in range(12)))
    (tmp_path / "b.csv").write_text("b0;*\nb1;*\nb2;*\n")
    (tmp_path / "s.csv").write_text("".join(";".join(r) + "\n" for r in _tree_rows(values)))


def _oracle(name: str, classes: dict, total: dict) -> float:
    """The largest distance of a class of the written file from the file's distribution, exactly."""
    N = sum(total.values())
    worst = None
    for counts in classes.values():
        s = sum(counts.values())
        if name in ("equal", "variational"):
            d = sum(abs(Fraction(counts.get(v, 0), s) - Fraction(n, N)) for v, n in total.items()) / 2
        elif name == "kl":
            getcontext().prec = 50
            d = sum(Decimal(c) / s * (Decimal(c * N) / (Decimal(total[v]) * s)).ln() for v, c in counts.items())
        else:
            d = _hierarchical(counts, s, total, N)
        worst = d if worst is None else max(worst, d)
    return float(worst)


def _hierarchical(counts: dict, s: int, total: dict, N: int) -> Fraction:
    """Li et al.: per internal node, height / H × min(positive, negated negative extras of its children)."""
    H = 3
    rows = {r[0]: r for r in _tree_rows(1000) if r[0] in total}
    extra: dict[tuple[int, str], Fraction] = {}
    for v, r in rows.items():
        e = Fraction(counts.get(v, 0), s) - Fraction(total[v], N)
        for level in range(H + 1):
            extra[(level, r[level])] = extra.get((level, r[level]), Fraction(0)) + e
    cost = Fraction(0)
    for level in range(1, H + 1):
        for (_, node) in [k for k in extra if k[0] == level]:
            children = {(level - 1, r[level - 1]) for r in rows.values() if r[level] == node}
            pos = sum(max(extra[c], 0) for c in children)
            neg = sum(max(-extra[c], 0) for c in children)
            cost += Fraction(level, H) * min(pos, neg)
    return cost


def _written_classes(path: Path) -> tuple[dict, dict]:
    """The written file's classes ((a, b) → {s: count}) and its totals per s, by a plain GROUP BY."""
    grouped = duckdb.sql(f"SELECT a, b, s, count(*) FROM '{path}' GROUP BY ALL").fetchall()
    classes: dict = {}
    total: dict = {}
    for a, b, s, n in grouped:
        classes.setdefault((a, b), {})[s] = n
        total[s] = total.get(s, 0) + n
    return classes, total


@pytest.mark.parametrize("name", DISTANCES)
def test_the_figure_from_cells_is_the_written_files_by_hand(name, tmp_path, monkeypatch):
    """A small random table released with its classes kept as cells (as a large domain's are),
    the figure against a plain GROUP BY of the written file, worked in exact fractions."""
    _table(tmp_path, 900, 120, seed=5)
    monkeypatch.setattr(release_module, "dense_bytes_allowed", lambda budget: 0)  # the released classes as cells
    spec = {"quasi_identifiers": {"a": {"file": str(tmp_path / "a.csv")}, "b": {"file": str(tmp_path / "b.csv")}},
            "sensitive": {"s": {"distance": name, "t": 20.0 if name == "kl" else 0.99,
                                **({"hierarchy": str(tmp_path / "s.csv")} if name == "hierarchical" else {})}},
            "k": 4, "others": "drop"}
    release = sqlclose.anonymize(tmp_path / "in.parquet", spec)
    assert any(isinstance(c, SparseCounts) for c in release._classes()[0].counts)
    report = release.write_parquet(tmp_path / "out.parquet")
    classes, total = _written_classes(tmp_path / "out.parquet")
    assert len(classes) > 3, json.dumps(report["node"])
    assert report["t_against_release"]["s"] == pytest.approx(_oracle(name, classes, total), rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("as_cells", [True, False])
@pytest.mark.parametrize("seed", [5, 6, 7])
def test_the_hierarchical_figure_is_the_exact_rational_of_the_written_file(seed, as_cells, tmp_path, monkeypatch):
    """The published hierarchical ``t_against_release`` was a floating-point sum over the dense row
    of its class's run, whose grouping follows the row's place in the run (numpy's SIMD sums): its
    last bits told which classes lay beside it, and differed from the exact figure (0.23912666666662533
    for 35869/150000 on the fifty-third round's table). Now each class's distance is the exact
    rational of its own counts rounded once. Oracle: Li et al.'s per-node costs in exact fractions
    over a plain GROUP BY of the written file, rounded once: == to the bit."""
    _table(tmp_path, 900, 120, seed=seed)
    if as_cells:
        monkeypatch.setattr(release_module, "dense_bytes_allowed", lambda budget: 0)
    spec = {"quasi_identifiers": {"a": {"file": str(tmp_path / "a.csv")}, "b": {"file": str(tmp_path / "b.csv")}},
            "sensitive": {"s": {"distance": "hierarchical", "t": 0.99, "hierarchy": str(tmp_path / "s.csv")}},
            "k": 4, "others": "drop"}
    report = sqlclose.anonymize(tmp_path / "in.parquet", spec).write_parquet(tmp_path / "out.parquet")
    classes, total = _written_classes(tmp_path / "out.parquet")
    assert len(classes) > 3, json.dumps(report["node"])
    assert report["t_against_release"]["s"] == _oracle("hierarchical", classes, total)


@pytest.mark.parametrize("name", (*DISTANCES, "ordered"))
def test_the_summary_read_in_runs_of_classes_gives_the_whole_nodes_figures(name, monkeypatch):
    """Since the sixty-seventh round the summary reads a node kept as cells a run of classes at a
    time (``ClassHistograms.kept_cell_runs``; the whole node's cells with a dozen temporaries each
    were +100 to +150 MiB at the job's peak). Runs of about 100 cells here (a class of 30 never
    split), so the 65 classes are read in over ten runs, some holding no released class. Oracle: the
    same classes as one dense matrix (one run, the dense form's figure, compared with ==) for
    t_against_release; for the utility section's l-diversity and L1 values the definitions over each
    released class's dense row, summed exactly by ``math.fsum`` (the test above's oracle)."""
    from sqlclose.model.sparse_counts import CELL_BYTES
    from sqlclose.release import utility_section

    cells = _cells(65, 3_000, 30, seed=5)
    kept = np.ones(65, dtype=bool)
    kept[[0, 3, 4, 5, 11, 40, 64]] = False
    problem = _problem(name, 3_000)
    whole = t_against_release(problem, _hist(cells.dense()), kept)["s"]
    runs = []
    reader = ClassHistograms.kept_cell_runs
    monkeypatch.setattr(ClassHistograms, "kept_cell_runs",
                        lambda self, *a: (runs.append(run) or run for run in reader(self, *a)))
    for module in (release_module, utility_section):
        monkeypatch.setattr(module, "SLICE_BYTES", 100 * CELL_BYTES)
    assert t_against_release(problem, _hist(cells), kept)["s"] == whole
    assert len(runs) > 10 and sum(run.shape[0] for run in runs) == kept.sum()
    released = cells.dense()[kept]
    shares = released / released.sum(axis=1, keepdims=True)
    totals = released.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(released > 0, shares * np.log(np.where(released > 0, shares, 1.0)), 0.0)
    figures = utility_section.sensitive_values(problem, _hist(cells), kept)["s"]
    assert figures["l_diversity"] == float(np.exp(-max(math.fsum(row) for row in plogp.tolist())))
    held = totals > 0
    assert figures["l1_closeness"] == max(math.fsum(row) for row in
                                          np.abs(shares[:, held] - totals[held] / totals.sum()).tolist())
