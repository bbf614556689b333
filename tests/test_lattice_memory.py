"""The search's lattice-sized structures (search/lattice_memory.py): their bytes known from the
lattice's shape, and a lattice whose structures cannot fit refused before any work, in a dry run too.

Review rv24: 20 QIs of 3 levels (3²⁰ nodes) stopped with exit 1, 'internal error: MemoryError:
Unable to allocate 26.0 GiB' (a float64 per node of the full lattice) while `--dry-run` passed; 16
such QIs under `--memory-limit 600MB` reached 1.3 GiB and were still searching at 120 s."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import duckdb
import numpy as np
import pytest
from table3_project import invoke, table3_project

from sqlclose.model.lattice import by_height, node_tuples
from sqlclose.search.lattice_memory import lattice_bytes, subset_layers, subset_nodes


def test_subset_lattices_are_counted_by_size():
    """QIs of 2, 3 and 4 levels, by hand: one subset of none; 2 + 3 + 4 nodes of one QI;
    2·3 + 2·4 + 3·4 of two; 2·3·4 of three."""
    assert subset_nodes((2, 3, 4)) == [1, 9, 26, 24]
    assert subset_nodes((3,) * 16)[15] == 16 * 3**15


def test_subset_lattices_are_counted_by_size_and_height():
    """QIs of 2, 3 and 4 levels, by hand: one QI, heights 0..3: 3, 3, 2, 1; two, 2·3 (1, 2, 2, 1),
    2·4 (1, 2, 2, 2, 1) and 3·4 (1, 2, 3, 3, 2, 1) together; three: 1, 3, 5, 6, 5, 3, 1."""
    assert subset_layers((2, 3, 4)) == [[1, 0, 0, 0, 0, 0, 0], [3, 3, 2, 1, 0, 0, 0], [3, 6, 7, 6, 3, 1, 0],
                                        [1, 3, 5, 6, 5, 3, 1]]


def test_the_bytes_of_a_small_lattice_worked_by_hand():
    """24 nodes: 11 bytes each for the full lattice's arrays and the walks' masks, and 35 for the
    evaluated nodes' outcomes (three bools, three int64, a float64): 46 × 24 = 1,104; the floors'
    block of 24 nodes at 33 bytes (792), the walk from above's widest height, 6 nodes at 48 + 16 × 3
    (576). Then the largest walk, the two-QI size's: the one-QI size's arrays kept and its own,
    9 + 3 × 26, and its listed candidates, the larger of listing them (26 × max(8 + 2, 2 × 2 + 3)
    and a block's coordinates, 26 × 8 × 3: 884) and holding them (26 × 2) with its widest height,
    7 nodes, as tuples at 112 + 16 × 2 (1,060): 1,147 (the one-QI size's 421, the full lattice's
    walk 1,032: listing 24 × 11 + 24 × 8 × 4, holding 24 × 3 + 6 × 160)."""
    assert lattice_bytes((2, 3, 4)) == 1104 + 792 + 576 + 1147


def test_the_candidates_listed_per_height_are_counted():
    """The walks listed their candidate nodes per height as Python tuples (``by_height``), which the
    bound left out as data-dependent, though every node is a candidate on a table every node of
    each size satisfies: for 12 QIs of 3 levels (531,441 nodes) the lists peaked at 221 MB (416 B a
    node), the whole bound being 31 MB. They are now arrays of levels, a height's undecided nodes
    made tuples when it is judged, and counted. The oracle: tracemalloc's peak while listing every
    node and holding the widest height's node tuples, within the bound (which holds the lattice's
    arrays too)."""
    shape = (3,) * 12
    tracemalloc.start()
    try:
        listed = by_height(np.ones(shape, dtype=bool))
        widest = max(listed, key=len)
        todo = [((0,), node) for node in node_tuples(widest)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sum(len(g) for g in listed) == 3**12 and len(todo) == max(subset_layers(shape)[12])
    assert peak <= lattice_bytes(shape), (peak, lattice_bytes(shape))


# In a fresh process (nothing else traced): the full lattice of 10 QIs of 3 levels, its nodes listed
# by height as the walk lists its candidates, every node recorded a height at a time (as tuples,
# satisfying, with a cost: the most a record holds) as deciding the whole lattice may; then
# tracemalloc's peak and the bytes still held once the listing is let go.
_EVERY_NODE_RECORDED = """
import sys, tracemalloc
import numpy as np
from sqlclose.model.lattice import by_height, node_tuples
from sqlclose.privacy.criteria import BatchOutcome
from sqlclose.search.full_lattice import FullLattice

shape = (3,) * 10
tracemalloc.start()
lattice = FullLattice(shape)
listed = by_height(np.ones(shape, dtype=bool))
for rows in listed:
    nodes = node_tuples(rows)
    big = np.full(len(nodes), 10**9 + 7, dtype=np.int64)  # past the interpreter's cached small ints
    lattice.record(nodes, np.ones(len(nodes), dtype=bool), BatchOutcome(big > 0, big, big, big * 1000),
                   big.astype(float))
    del nodes
del listed
held, peak = tracemalloc.get_traced_memory()
sys.stdout.write(f"{peak} {held} {len(lattice.evaluated)}")
"""


def test_every_node_of_the_full_lattice_recorded_is_counted():
    """Issue 10, fifty-third round: ``FullLattice.evaluated`` was a dict holding an ``Evaluated`` object
    per evaluated node, ~400 B a node (measured: 392 B for 10 QIs of 3 levels, 403 B for 12; 416 and
    427 with a metric's cost), and the bound left it out, though deciding the whole lattice can
    evaluate every node (nothing inferred from above). For 10 QIs of 3 levels (59,049 nodes) those
    records alone held 23 MB, past the whole bound (20 MB): the refusal and the advised
    --memory-limit undercounted. The oracle: tracemalloc's peak in a fresh process, the full
    lattice's arrays made, its nodes listed by height and every node recorded, within the bound
    (which counts more besides: the subsets' walks, the floors)."""
    run = subprocess.run([sys.executable, "-c", _EVERY_NODE_RECORDED], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    peak, held, recorded = map(int, run.stdout.split())
    assert recorded == 3**10
    assert peak <= lattice_bytes((3,) * 10), (peak, held, lattice_bytes((3,) * 10))


def _wide(tmp_path: Path, qis: int) -> Path:
    """50,000 rows, ``qis`` QIs of 4 values each under value → group → * (3 levels), equal t."""
    cols = ", ".join(f"'a' || (hash(i * {j + 3} + {j}) % 4)::INTEGER AS q{j}" for j in range(qis))
    duckdb.connect().sql(f"""COPY (SELECT {cols}, 'o' || (hash(i) % 10)::INTEGER AS occ
        FROM range(50000) t(i)) TO '{tmp_path / "in.parquet"}' (FORMAT parquet)""")
    (tmp_path / "flat.csv").write_text("".join(f"a{v};g{v // 2};*\n" for v in range(4)))
    qi = "\n".join(f'q{j} = {{ file = "flat.csv" }}' for j in range(qis))
    spec = tmp_path / "spec.toml"
    spec.write_text(f'others = "drop"\n[source]\npath = "in.parquet"\n[output]\npath = "out/rel.parquet"\n'
                    f'[privacy]\nk = 5\nsuppression = 0.05\n[quasi_identifiers]\n{qi}\n'
                    '[sensitive.occ]\ndistance = "equal"\nt = 0.2\n')
    return spec


@pytest.mark.parametrize("extra", [(), ("--dry-run",), ("--memory-limit", "1GB")])
def test_twenty_quasi_identifiers_are_refused_before_the_search(tmp_path, extra):
    spec = _wide(tmp_path, 20)
    result = invoke("anonymize", spec, "--no-progress", *extra)
    assert result.exit_code == 5, result.stderr
    share = ("the search's share of --memory-limit 1,000 MB (150 MB): give fewer quasi-identifiers or hierarchies "
             "with fewer levels, raise [engine] memory_limit (--memory-limit) to" if "1GB" in extra else
             "the 4.0 GB sqlclose allows it without a memory limit: give fewer quasi-identifiers or hierarchies "
             "with fewer levels, give [engine] memory_limit (--memory-limit) of")
    assert result.stderr.startswith("sqlclose: error: the search's lattice has 3,486,784,401 nodes (20 "
                                    "quasi-identifiers: 20 of 3 levels), whose bookkeeping needs ~"), result.stderr
    assert f"GB, more than {share} at least " in result.stderr, result.stderr
    assert result.stderr.endswith('or use [search] algorithm = "gaa" (--algorithm gaa), which does not enumerate '
                                  "the lattice; nothing was placed at the output path\n")
    assert "internal error" not in result.stderr and "search:" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_gaa_which_enumerates_no_lattice_is_not_refused(tmp_path):
    spec = _wide(tmp_path, 20)
    result = invoke("anonymize", spec, "--no-progress", "--dry-run", "--algorithm", "gaa")
    assert result.exit_code == 0, result.stderr
    # the plan says GAA, over no lattice (it printed the 3,486,784,401 nodes of a lattice GAA never walks)
    assert "search     GAA, multidimensional recoding over 20 quasi-identifiers (no lattice)" in result.output


def test_sixteen_quasi_identifiers_under_600mb_are_refused_within_the_limit(tmp_path):
    """43 M nodes: refused at once, the process's peak (the kernel's, for the child) within 600 MB."""
    spec = _wide(tmp_path, 16)
    run = [sys.executable, "-m", "sqlclose.cli", "anonymize", str(spec), "--memory-limit", "600MB", "--no-progress"]
    # A fresh parent whose only child is the run: its children's largest resident size is the run's.
    watch = (f"import resource, subprocess, sys; r = subprocess.run({run!r}, stdout=subprocess.DEVNULL); "
             "sys.stdout.write(f'{r.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}')")
    result = subprocess.run([sys.executable, "-c", watch], capture_output=True, text=True, timeout=120)
    code, peak_kib = map(int, result.stdout.split())
    peak = peak_kib * 1024
    assert code == 5, result.stderr
    assert "43,046,721 nodes" in result.stderr and "share of --memory-limit 600 MB (70 MB)" in result.stderr
    assert peak < 600e6, peak
    assert not (tmp_path / "out").exists()


def test_a_lattice_that_fits_is_searched_as_before(tmp_path):
    """Table 3 (24 nodes) under the smallest limit the docs accept: the paper's Table 5 node."""
    project = table3_project(tmp_path)
    result = invoke("anonymize", project / "spec.toml", "--memory-limit", "500MB", "--no-progress", "-q")
    assert result.exit_code == 0, result.stderr


def _nine_banded(tmp_path):
    """9 banded QIs of 6 levels each (bands 2, 4, 8, 16 over 0..31): 10,077,696 nodes."""
    import random

    columns = [f"q{i}" for i in range(9)]
    rnd = random.Random(1)
    lines = [",".join(columns) + ",s"]
    lines += [",".join(str(rnd.randint(0, 31)) for _ in columns) + f",{rnd.choice('abc')}" for _ in range(40)]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    qis = "\n".join(f"{c} = {{ bands = [2, 4, 8, 16] }}" for c in columns)
    types = ", ".join(f'{c} = "BIGINT"' for c in columns)
    (tmp_path / "s.toml").write_text(f'[source]\npath = "t.csv"\ntypes = {{ {types} }}\n[output]\n'
                                     f'path = "out.parquet"\n[privacy]\nk = 2\nsuppression = 0.5\n'
                                     f'[quasi_identifiers]\n{qis}\n[sensitive.s]\ndistinct_l = 2\n')
    return tmp_path / "s.toml"


def test_the_least_memory_limit_advised_for_a_lattice_is_enough(tmp_path):
    """Review rv26: the refusal advised "raise … to at least 1.1 GB" for a least limit of
    1,124,663,680 bytes, rounded to nearest: given that advice, the run was refused again with the
    same advice. Now the figure is rounded up. Oracle: the advice followed verbatim validates (a
    dry run, exit 0), and a limit one step (0.1 of its unit) below it is refused: the least figure
    at one decimal."""
    import re

    spec = _nine_banded(tmp_path)
    refused = invoke("anonymize", spec, "--dry-run", "--memory-limit", "600MB", "--no-progress")
    assert refused.exit_code == 5, refused.stderr
    advised = re.search(r"to at least ([0-9.,]+) (MB|GB)", refused.stderr)
    assert advised, refused.stderr
    given = invoke("anonymize", spec, "--dry-run", "--memory-limit", "".join(advised.groups()), "--no-progress")
    assert given.exit_code == 0, given.stderr
    below = f"{float(advised.group(1).replace(',', '')) - 0.1:.1f}{advised.group(2)}"
    less = invoke("anonymize", spec, "--dry-run", "--memory-limit", below, "--no-progress")
    assert less.exit_code == 5, (below, less.stderr)
