"""Re-checks a written release from the file itself, by a separate and deliberately plain path.

The search works on integer codes, rollups and lookup joins; this module ignores all of that.
It reads the Parquet file back, groups it by the released quasi-identifier columns as they are
written (``audit.table_classes``), recomputes the reference distributions with a plain GROUP BY
over the input, and recomputes every privacy model's value. Any difference from what the search
claimed is an error.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from .audit import distribution, table_classes
from .errors import VerificationError
from .privacy import criteria_for, reached_values
from .problem import Problem

CLAIM_TOLERANCE = 1e-9  # the search's values and the re-check's may differ in the last float bits


def recheck(problem: Problem, path: Path) -> dict:
    """Rows, columns, classes and the privacy section, recomputed from the file at ``path``."""
    engine = problem.engine
    written = engine.read_parquet(path)
    columns = engine.schema(written).names
    # The reference distributions come from the input again, not from the search's counts.
    sas = [dataclasses.replace(sa, q=distribution(engine, problem.source.copy(), sa)) for sa in problem.sas]
    classes = table_classes(engine, written, [qi.name for qi in problem.qis], sas)
    kept = np.ones(classes.hist.classes, dtype=bool)
    criteria = criteria_for(problem.k, sas)
    privacy = reached_values(criteria, classes.hist, kept, problem.k, problem.suppression)
    failing = [c.name for c in criteria if classes.hist.classes and not c.passes(classes.hist).all()]
    return {"rows": classes.rows, "columns": columns, "classes": classes.hist.classes, "privacy": privacy,
            "failing": failing}


def compare(claimed: dict, found: dict, problem: Problem, expected_columns: list[str]) -> None:
    """Raise VerificationError listing every way the file differs from the search's claims."""
    problems = []
    if found["columns"] != expected_columns:
        problems.append(f"columns {found['columns']} instead of {expected_columns}")
    leaked = [c for c in problem.identifiers if c in found["columns"]]
    if leaked:
        problems.append(f"identifier columns {leaked} were written")
    for key in ("rows", "classes"):
        if found[key] != claimed[key]:
            problems.append(f"{found[key]} {key} instead of {claimed[key]}")
    if found["failing"]:
        problems.append(f"classes failing {', '.join(found['failing'])}")
    problems += _differences(claimed["privacy"], found["privacy"], "privacy")
    if problems:
        raise VerificationError("the written release failed its re-check: " + "; ".join(problems))


def _differences(claimed: object, found: object, where: str) -> list[str]:
    if isinstance(claimed, dict) and isinstance(found, dict):
        out = []
        for key in sorted(set(claimed) | set(found)):
            if key not in claimed or key not in found:
                out.append(f"{where}.{key} present on one side only")
            else:
                out += _differences(claimed[key], found[key], f"{where}.{key}")
        return out
    if isinstance(claimed, float) or isinstance(found, float):
        a, b = float(claimed), float(found)
        same = (math.isinf(a) and a == b) or abs(a - b) <= CLAIM_TOLERANCE * max(1.0, abs(a))
        return [] if same else [f"{where} is {found!r}, the search found {claimed!r}"]
    return [] if claimed == found else [f"{where} is {found!r}, the search found {claimed!r}"]
