"""Probe: what the full lattice's structures hold once every node is evaluated, against the lattice
memory bound (``search/lattice_memory.lattice_bytes``).

Deciding the whole lattice (``--explore lattice``) can evaluate every node: from above nothing is
inferred upward. This makes the full lattice of QIs of 3 levels (``FullLattice``), lists its nodes
by height as the walks list their candidates, and records every node a height at a time as the walk
from above does (satisfying, with a metric's cost when ``--cost``: the most a record holds), under
tracemalloc in this fresh process. Figures are in docs/performance.md ("fifty-third round").

    python benchmarks/probe_decided_node_bytes.py --qis 12 [--cost]

The probe uses ``FullLattice``'s interface only, so it measures an older checkout as well
(``PYTHONPATH=that/checkout python benchmarks/probe_decided_node_bytes.py …``).
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import numpy as np

from sqlclose.model.lattice import by_height, node_tuples
from sqlclose.privacy.criteria import BatchOutcome
from sqlclose.search.full_lattice import FullLattice
from sqlclose.search.lattice_memory import lattice_bytes


def measure(qis: int, cost: bool) -> dict:
    shape = (3,) * qis
    tracemalloc.start()
    empty = tracemalloc.get_traced_memory()[0]
    lattice = FullLattice(shape)
    made = tracemalloc.get_traced_memory()[0] - empty
    recording = 0.0
    for rows in by_height(np.ones(shape, dtype=bool)):
        nodes = node_tuples(rows)
        big = np.full(len(nodes), 10**9 + 7, dtype=np.int64)  # past the interpreter's cached small ints
        started = time.perf_counter()
        lattice.record(nodes, big > 0, BatchOutcome(big > 0, big, big, big * 1000), big.astype(float) if cost else None)
        recording += time.perf_counter() - started
        del nodes
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    nodes = 3**qis
    return {"qis": qis, "cost": cost, "nodes": nodes, "evaluated": len(lattice.evaluated), "made": made,
            "held": held - empty, "held_per_node": round((held - empty) / nodes, 1),
            "evaluated_per_node": round((held - empty - made) / nodes, 1), "peak": peak - empty,
            "record_seconds": round(recording, 2), "bound": lattice_bytes(shape)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qis", type=int, default=12, help="quasi-identifiers of 3 levels")
    parser.add_argument("--cost", action="store_true", help="record a metric's cost per node too")
    args = parser.parse_args()
    print(json.dumps(measure(args.qis, args.cost)))


if __name__ == "__main__":
    main()
