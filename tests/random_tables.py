"""Small random tables with random requirements, for engine-equality tests (tests/test_spark_random.py).

Each case is a table of 12–60 rows over two or three quasi-identifiers with small hierarchies
(a two-level tree of letters, integer bands, a masked 3-digit code) and one sensitive column
(equal, ordered or hierarchical distance), with random k, t, l and suppression (0 or > 0).
Deterministic for a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

LETTERS = {"AB": ["a", "b"], "CD": ["c", "d", "e"]}
DISEASES = {"lung": ["flu", "cold"], "gut": ["ulcer", "gastritis", "colitis"]}


@dataclass
class Case:
    table: pa.Table
    spec: dict


def case(seed: int) -> Case:
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(12, 61))
    columns: dict[str, list] = {}
    qis: dict[str, dict] = {}
    columns["grp"] = [str(v) for v in rng.choice([x for xs in LETTERS.values() for x in xs], rows)]
    qis["grp"] = {"tree": LETTERS}
    columns["age"] = [int(v) for v in rng.integers(20, 60, rows)]
    qis["age"] = {"bands": [int(rng.choice([5, 10])), 20]}
    if rng.random() < 0.6:
        columns["code"] = [f"{v:03d}" for v in rng.integers(100, 130, rows)]
        qis["code"] = {"mask": True}
    distance = str(rng.choice(["equal", "ordered", "hierarchical"]))
    sensitive: dict = {"distance": distance, "t": round(float(rng.uniform(0.15, 0.6)), 3)}
    if distance == "ordered":
        columns["s"] = [int(v) for v in rng.integers(1, 8, rows) * 1000]
    else:
        columns["s"] = [str(v) for v in rng.choice([x for xs in DISEASES.values() for x in xs], rows)]
        if distance == "hierarchical":
            sensitive["hierarchy"] = {"tree": DISEASES}
    if rng.random() < 0.3:
        sensitive["distinct_l"] = 2
    elif rng.random() < 0.3:
        sensitive["entropy_l"] = 1.5
    suppression = 0.0 if rng.random() < 0.5 else round(float(rng.uniform(0.02, 0.2)), 3)
    spec = {"quasi_identifiers": qis, "k": int(rng.integers(2, 5)), "suppression": suppression,
            "sensitive": {"s": sensitive}}
    return Case(pa.table(columns), spec)
