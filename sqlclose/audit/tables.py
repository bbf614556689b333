"""Measures a table as it is: its equivalence classes, every privacy model, and the attacks.

This is the plain path: classes are a GROUP BY over the quasi-identifier columns as they are
written (no hierarchies, no codes, no rollups), one query per sensitive attribute, aggregated
in the engine; Python sees one row per (class, sensitive value). It serves ``sqlclose check``
and the re-check of every written release (``verify``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.errors import DataError
from sqlclose.model.arrays import numpy_of
from sqlclose.model.attributes import SensitiveAttribute
from sqlclose.model.classes import ClassHistograms
from sqlclose.sql import queries as q


@dataclass
class TableClasses:
    """The classes of a table: histograms, and on demand each class's QI values (for reports)."""

    hist: ClassHistograms
    rows: int
    engine: Engine
    relation: exp.Expression
    qi: list[str]
    _labels: pa.Table | None = None

    def class_values(self, i: int) -> dict:
        if self._labels is None:  # one more scan, paid only when classes are listed
            self._labels = self.engine.fetch(q.class_labels(self.relation, self.qi))
        return {name: _plain(self._labels.column(name)[i].as_py()) for name in self._labels.column_names[1:]}


def table_classes(engine: Engine, relation: exp.Expression, qi: Sequence[str],
                  sensitive: Sequence[SensitiveAttribute]) -> TableClasses:
    """Equivalence classes of ``relation`` over ``qi`` with a count matrix per sensitive column:
    one GROUP BY per sensitive column (class sizes come from the first), or one for the sizes
    when there is none."""
    grouped = [engine.fetch(q.verify_classes(relation, qi, sa.name)) for sa in sensitive] or \
        [engine.fetch(q.verify_classes(relation, qi, None))]
    cls_of_row = [numpy_of(g.column("__sqlclose_cls")) for g in grouped]
    n_of_row = [numpy_of(g.column("__sqlclose_n")).astype(np.float64) for g in grouped]
    classes = int(cls_of_row[0].max()) + 1 if len(cls_of_row[0]) else 0
    sizes = np.bincount(cls_of_row[0], weights=n_of_row[0], minlength=classes).astype(np.int64)
    matrices = []
    for sa, g, cls, n in zip(sensitive, grouped, cls_of_row, n_of_row):
        matrix = np.zeros((classes, len(sa.domain)))
        np.add.at(matrix, (cls, domain_positions(g.column("__sqlclose_v").to_pylist(), sa)), n)
        matrices.append(matrix)
    hist = ClassHistograms(np.zeros((classes, 0), dtype=np.int64), sizes, matrices,
                           np.zeros(classes, dtype=np.int64))
    return TableClasses(hist, int(sizes.sum()), engine, relation, list(qi))


def domain_positions(values: list, sa: SensitiveAttribute) -> np.ndarray:
    """Domain index of each (distinct, aggregated) value of a sensitive column."""
    position = {v: i for i, v in enumerate(sa.domain)}
    stand_in = sa.null_value
    if stand_in is not None and stand_in in position:  # nulls = "value": NULL reads as the stand-in
        position[None] = position[stand_in]
    try:
        return np.array([position[v] for v in values], dtype=np.int64)
    except KeyError as e:
        raise DataError(f"column {sa.name!r} holds {e.args[0]!r}, which is not in its domain "
                        f"({len(sa.domain)} values{', from its hierarchy' if sa.hierarchy else ''})") from None


def distribution(engine: Engine, relation: exp.Expression, sa: SensitiveAttribute) -> np.ndarray:
    """Counts of each domain value over a whole table (a plain GROUP BY)."""
    rows = engine.fetch(q.distribution(relation, q.as_text(q.col(sa.name))))
    counts = np.zeros(len(sa.domain))
    np.add.at(counts, domain_positions(rows.column("v").to_pylist(), sa), numpy_of(rows.column("n")))
    return counts


# ---- attacks (Li et al. section 3) --------------------------------------------------------
# Each returns counts plus "exposed", a boolean per class, for listing the classes at risk.

def homogeneity(matrix: np.ndarray, sizes: np.ndarray) -> dict:
    """Classes whose sensitive values are all equal: membership discloses the value."""
    hit = (matrix > 0).sum(axis=1) == 1
    return {"classes": int(hit.sum()), "records": int(sizes[hit].sum()), "exposed": hit}


def skewness(matrix: np.ndarray, sizes: np.ndarray, reference: np.ndarray, ratio: float) -> dict:
    """Classes where some value's share is at least ``ratio`` times its share in the table."""
    q_share = reference / reference.sum()
    p_share = matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(q_share > 0, p_share / np.where(q_share > 0, q_share, 1), 0.0)
    worst = ratios.max(axis=1) if ratios.size else np.zeros(0)
    hit = worst >= ratio
    return {"ratio": ratio, "classes": int(hit.sum()), "records": int(sizes[hit].sum()),
            "worst_ratio": float(worst.max()) if worst.size else 0.0, "exposed": hit}


def similarity(matrix: np.ndarray, sizes: np.ndarray, sa: SensitiveAttribute, level: int) -> dict | None:
    """Classes whose values all fall in one group at ``level`` of the sensitive hierarchy: an
    observer learns the group (e.g. "a stomach disease") without learning the value."""
    if sa.hierarchy is None:
        return None
    if not 1 <= level <= sa.hierarchy.height:
        raise DataError(f"similarity level {level} is outside 1..{sa.hierarchy.height} for column {sa.name!r} "
                        f"(hierarchy {sa.hierarchy.origin})")
    position = {v: i for i, v in enumerate(sa.hierarchy.leaves)}
    groups = sa.hierarchy.level_codes[[position[v] for v in sa.domain], level]
    present = matrix > 0
    per_group = np.zeros((matrix.shape[0], int(groups.max()) + 1), dtype=bool)
    for g in np.unique(groups):
        per_group[:, g] = present[:, groups == g].any(axis=1)
    hit = per_group.sum(axis=1) == 1
    names = sa.hierarchy.labels(level)
    learned: dict[str, int] = {}
    for g in np.flatnonzero(per_group[hit].any(axis=0)):
        learned[names[g]] = int(sizes[hit & per_group[:, g]].sum())
    return {"level": level, "classes": int(hit.sum()), "records": int(sizes[hit].sum()),
            "records_by_group": learned, "exposed": hit}


def _plain(value: object) -> object:
    """JSON-friendly QI values (dates and decimals as text)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
