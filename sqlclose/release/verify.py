"""Re-checks a written release from the file itself, by an independent path, and compares.

The search works on integer codes, rollups and numpy criteria; this module ignores all of that.
It reads the Parquet file back and hands it to ``verify_sql``, which recomputes every privacy
model's value in SQL — classes as a GROUP BY over the released quasi-identifier columns as they
are written, the reference distributions by a plain GROUP BY over the input, the distances by
their textbook formulas — sharing no judging code with the search. Any class failing a
threshold, any label or value the release cannot hold, and any difference from what the search
claimed is an error.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from sqlclose.errors import EngineError, EngineFault, VerificationError
from sqlclose.model.spec import EMD_DISTANCES
from sqlclose.model.text import named
from sqlclose.release.verify_sql import FileMeasures, WrittenQI, WrittenSensitive, measure_file

if TYPE_CHECKING:
    from sqlclose.prepare.problem import Problem

CLAIM_TOLERANCE = 1e-9  # the search's values and the re-check's may differ in the last float bits
_KEYS = {"distinct l-diversity": "distinct_l", "entropy l-diversity": "entropy_l",
         "recursive (c,l)-diversity": "recursive", "p-sensitivity": "p"}


def recheck(problem: Problem, path: Path, mapping: pa.Table | None = None) -> dict:
    """Rows, columns, classes, the privacy section and every failure, measured on the Parquet file at
    ``path``; ``mapping``: a multidimensional release's leaf → label table (see ``measure_file``)."""
    return recheck_relation(problem, problem.engine.read_parquet(path), mapping)


def recheck_relation(problem: Problem, written: exp.Expression, mapping: pa.Table | None = None) -> dict:
    """The same, measured on a written release read back as a relation (a Parquet file, a CSV read
    with the released types, a table in a DuckDB database)."""
    engine = problem.engine
    columns = engine.schema(written).names
    lacking = [c.name for c in [*problem.qis, *problem.sas] if c.name not in columns]
    if lacking:  # nothing to measure classes or distributions by
        return {"rows": None, "columns": columns, "classes": None, "privacy": None,
                "failing": [f"the file lacks the {named('column', lacking)}"]}
    qis = [WrittenQI(qi.name, qi.hierarchy, qi.coded.null_value, qi.coded.typed_match) for qi in problem.qis]
    sas = [WrittenSensitive(sa.name, sa.spec, sa.hierarchy) for sa in problem.sas]
    # Rows are compared with the input projected on the file's columns; a column the input lacks
    # is an error of its own (``compare``), and no row comparison is possible then.
    truth = columns if set(columns) <= set(problem.columns) else None
    try:
        measured = measure_file(engine, written, problem.source.copy(), problem.k, qis, sas, truth, mapping)
    except EngineFault as e:  # the engine's own failure: no word about the file (nothing is placed all the same)
        fault = EngineFault(f"the written release could not be re-checked, the engine failed: {e}", e.sql)
        fault.cause = e.cause
        raise fault from None
    except EngineError as e:  # e.g. a column of another type than the release writes: fail closed
        return {"rows": None, "columns": columns, "classes": None, "privacy": None,
                "failing": [f"the file could not be re-checked ({str(e).splitlines()[0]})"]}
    return {"rows": measured.rows, "columns": columns, "classes": measured.classes,
            "privacy": privacy_section(measured, problem.k, problem.suppression), "failing": measured.failures}


def privacy_section(measured: FileMeasures, k: int, suppression: float) -> dict:
    """The measured values in the report's ``privacy`` shape, to compare with the search's."""
    out: dict = {"k": k, "min_class_size": measured.min_class_size, "suppression_limit": suppression,
                 "sensitive": {}}
    for m in measured.models:
        if m.column is None:
            continue
        entry = out["sensitive"].setdefault(m.column, {})
        if m.model == "t-closeness":
            emd = m.parameters["distance"] in EMD_DISTANCES
            entry.update(distance=m.parameters["distance"], t=m.parameters["t"], emd=emd)
            entry["max_emd" if emd else "max_distance"] = m.reached if m.reached is not None else 0.0
        else:
            entry[_KEYS[m.model]] = {**m.parameters, "reached": m.reached}
    return out


def compare(claimed: dict, found: dict, problem: Problem, expected_columns: list[str]) -> None:
    """Raise VerificationError listing every way the file differs from the search's claims."""
    problems = []
    if found["columns"] != expected_columns:
        problems.append(f"columns {found['columns']} instead of {expected_columns}")
    leaked = [c for c in problem.identifiers if c in found["columns"]]
    if leaked:
        problems.append(f"identifier columns {leaked} were written")
    for key in ("rows", "classes"):
        if found[key] is not None and found[key] != claimed[key]:
            problems.append(f"{found[key]} {key} instead of {claimed[key]}")
    problems += found["failing"]
    if found["privacy"] is not None:
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
    if (isinstance(claimed, float) or isinstance(found, float)) and None not in (claimed, found):
        a, b = float(claimed), float(found)
        same = (math.isinf(a) and a == b) or abs(a - b) <= CLAIM_TOLERANCE * max(1.0, abs(a))
        return [] if same else [f"{where} is {found!r}, the search found {claimed!r}"]
    return [] if claimed == found else [f"{where} is {found!r}, the search found {claimed!r}"]
