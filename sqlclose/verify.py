"""Re-checks a written release from the file itself, by a separate and deliberately plain path.

The search works on integer codes, rollups and lookup joins; this module ignores all of that.
It reads the Parquet file back, groups it by the released quasi-identifier columns as they are
written, recomputes the reference distribution with a plain GROUP BY over the input, and
recomputes class sizes and EMDs. Any difference from what the search claimed is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlglot import exp

from . import queries as q
from .emd import EMD_TOLERANCE, emd
from .errors import VerificationError
from .problem import Problem

CLAIM_TOLERANCE = 1e-9  # the search's EMD and the re-check's may differ in the last float bits


@dataclass
class Verified:
    rows: int
    columns: list[str]
    classes: int
    min_class_size: int
    max_emd: dict[str, float] = field(default_factory=dict)


def recheck(problem: Problem, path: Path) -> Verified:
    """Classes, k and max EMD per sensitive attribute, recomputed from the file at ``path``."""
    engine = problem.engine
    written = engine.read_parquet(path)
    columns = [f.name for f in engine.fetch(exp.select(exp.Star()).from_(written.copy()).limit(0)).schema]
    qi_names = [qi.name for qi in problem.qis]
    base = engine.fetch(q.verify_classes(written, qi_names, None))
    cls = base.column("cls").to_numpy()
    sizes = np.bincount(cls, weights=base.column("n").to_numpy().astype(np.float64)).astype(np.int64) \
        if len(cls) else np.zeros(0, dtype=np.int64)
    result = Verified(int(sizes.sum()), columns, int(len(sizes)), int(sizes.min()) if len(sizes) else 0)
    for sa in problem.sas:
        result.max_emd[sa.name] = _max_emd(problem, written, qi_names, sa) if len(sizes) else 0.0
    return result


def _max_emd(problem: Problem, written: exp.Expression, qi_names: list[str], sa) -> float:
    engine = problem.engine
    position = {v: i for i, v in enumerate(sa.domain)}
    if sa.coded.null_value is not None:  # nulls = "value": the release keeps NULL, read as the stand-in
        position[None] = position[sa.coded.null_value]
    text = q.as_text(q.col(sa.name))
    whole = engine.fetch(q.distribution(problem.source.copy(), text.copy()))
    ref = np.zeros(len(sa.domain))
    np.add.at(ref, _positions(whole.column("v").to_pylist(), position, sa.name), whole.column("n").to_numpy())
    per_class = engine.fetch(q.verify_classes(written, qi_names, sa.name))
    cls = per_class.column("cls").to_numpy()
    matrix = np.zeros((int(cls.max()) + 1, len(sa.domain)))
    np.add.at(matrix, (cls, _positions(per_class.column("v").to_pylist(), position, sa.name)),
              per_class.column("n").to_numpy())
    return float(np.max(emd(matrix, ref, sa.distance, sa.hierarchy)))


def _positions(values: list, position: dict[str, int], column: str) -> np.ndarray:
    """Domain index of each (distinct, aggregated) value; an unknown value means a broken release."""
    try:
        return np.array([position[v] for v in values], dtype=np.int64)
    except KeyError as e:
        raise VerificationError(f"column {column!r} of the release holds {e.args[0]!r}, not in its domain") from None


def compare(claimed: dict, found: Verified, problem: Problem, expected_columns: list[str]) -> None:
    """Raise VerificationError listing every way the file differs from the search's claims."""
    problems = []
    if found.columns != expected_columns:
        problems.append(f"columns {found.columns} instead of {expected_columns}")
    leaked = [c for c in problem.identifiers if c in found.columns]
    if leaked:
        problems.append(f"identifier columns {leaked} were written")
    if found.rows != claimed["rows"]:
        problems.append(f"{found.rows} rows instead of {claimed['rows']}")
    if found.classes != claimed["classes"]:
        problems.append(f"{found.classes} classes instead of {claimed['classes']}")
    if found.rows and found.min_class_size < problem.k:
        problems.append(f"a class of {found.min_class_size} rows, below k = {problem.k}")
    if found.min_class_size != claimed["min_class_size"]:
        problems.append(f"smallest class {found.min_class_size} instead of {claimed['min_class_size']}")
    for sa in problem.sas:
        got = found.max_emd[sa.name]
        if got > sa.t + EMD_TOLERANCE:
            problems.append(f"{sa.name}: a class at EMD {got:.12g} > t = {sa.t}")
        if abs(got - claimed["max_emd"][sa.name]) > CLAIM_TOLERANCE:
            problems.append(f"{sa.name}: max EMD {got:.12g} instead of {claimed['max_emd'][sa.name]:.12g}")
    if problems:
        raise VerificationError("the written release failed its re-check: " + "; ".join(problems))
