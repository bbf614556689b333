"""A chosen generalization: its data, its metrics, and writing it safely.

Writing is all-or-nothing: DuckDB COPYs the release to a temporary file beside the target, the
file is fsynced and re-checked from disk (``verify``), and only then renamed into place, with
its JSON report beside it. On any failure the temporary file is removed and nothing is left at
the output path. An existing output is replaced only when asked.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from . import __version__
from . import queries as q
from .classes import ClassHistograms
from .errors import OutputExistsError
from .lattice import Node
from .metrics import average_class_size
from .nodes import NodeRunner
from .privacy import Criterion, judge, reached_values
from .problem import Problem
from .search import SearchResult
from .verify import compare, recheck


@dataclass
class Release:
    """The result of ``sqlclose.anonymize``: the optimal node and everything measured about it."""

    problem: Problem
    search: SearchResult
    criteria: list[Criterion]
    spec_sha256: str
    source_label: str
    timings: dict[str, float] = field(default_factory=dict)
    owns_engine: bool = True  # False when the caller passed the engine in: theirs to close
    _hist: ClassHistograms | None = None
    _failing: np.ndarray | None = None

    # ---- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Drop the engine objects this release made (and its own connection, if it has one)."""
        if self.owns_engine:
            self.problem.engine.close()

    def __enter__(self) -> Release:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- what was chosen ----------------------------------------------------------------
    @property
    def node(self) -> dict[str, int]:
        """Generalization level per quasi-identifier."""
        return self._named(self.search.optimum)

    @property
    def minimal_nodes(self) -> list[dict[str, int]]:
        return [self._named(n) for n in self.search.minimal_nodes]

    def _named(self, node: Node) -> dict[str, int]:
        return {qi.name: int(level) for qi, level in zip(self.problem.qis, node)}

    def at(self, node: dict[str, int] | Node) -> Release:
        """The same release at another evaluated node (e.g. one of ``minimal_nodes``): its data,
        summary and report, written and verified the same way. The optimum is unchanged here."""
        levels = tuple(node[qi.name] for qi in self.problem.qis) if isinstance(node, dict) else tuple(node)
        if levels not in self.search.evaluated:
            raise ValueError(f"node {node} was not evaluated by the search; pick one of minimal_nodes or "
                             "a node the search checked")
        if not self.search.evaluated[levels].satisfied:
            raise ValueError(f"node {node} does not satisfy the requirements")
        search = dataclasses.replace(self.search, optimum=levels)
        return dataclasses.replace(self, search=search, owns_engine=False, _hist=None, _failing=None)

    # ---- measurements of the chosen node ---------------------------------------------------
    def _classes(self) -> tuple[ClassHistograms, np.ndarray]:
        if self._hist is None:
            full = tuple(range(len(self.problem.qis)))
            self._hist = NodeRunner(self.problem).histograms(full, self.search.optimum, keep=False)
            outcome = judge(self._hist, self.criteria, self.problem.rows, self.problem.max_suppressed)
            self._failing = outcome.failing
        return self._hist, self._failing

    @property
    def summary(self) -> dict[str, Any]:
        """Classes, suppression, privacy values reached and utility of the chosen node."""
        hist, failing = self._classes()
        kept = ~failing
        suppressed = int(hist.sizes[failing].sum())
        evaluated = self.search.evaluated[self.search.optimum]
        kept_rows = self.problem.rows - suppressed
        privacy = reached_values(self.criteria, hist, kept, self.problem.k, self.problem.suppression)
        return {
            "classes": int(kept.sum()),
            "suppressed_rows": suppressed,
            "rows": kept_rows,
            "privacy": privacy,
            "utility": {
                "discernibility": evaluated.discernibility,
                "average_class_size": average_class_size(kept_rows, int(kept.sum())),
            },
        }

    # ---- the data ---------------------------------------------------------------------------
    def _query(self) -> tuple[Any, list]:
        hist, failing = self._classes()
        params = q.Params()
        suppressed = None
        if failing.any():
            name = self.problem.engine.temp_name("suppressed")
            codes = {qi.coded.code: hist.keys[failing, i] for i, qi in enumerate(self.problem.qis)}
            self.problem.engine.register(name, pa.table(codes))
            suppressed = q.table(name)
        released = [q.ReleasedQI(qi.coded, level, qi.hierarchy.divisors[level])
                    for qi, level in zip(self.problem.qis, self.search.optimum)]
        query = q.release(self.problem.source, self.problem.columns, self.problem.identifiers, released,
                          suppressed, params)
        return query, params.values

    def to_arrow(self) -> pa.Table:
        """The released table (generalized, identifiers dropped, failing classes suppressed)."""
        query, params = self._query()
        return self.problem.engine.fetch(query, params)

    def to_pandas(self):
        return self.to_arrow().to_pandas()

    @property
    def columns(self) -> list[str]:
        return [c for c in self.problem.columns if c not in self.problem.identifiers]

    # ---- writing -------------------------------------------------------------------------------
    def write_parquet(self, path: str | Path, report: str | Path | None = None, overwrite: bool = False) -> dict:
        """Write, verify from disk, then move into place; returns the report (also written as JSON)."""
        path = Path(path)
        report_path = Path(report) if report else path.with_name(path.name + ".report.json")
        if path.resolve() == report_path.resolve():
            raise OutputExistsError(f"the report path is the output path ({path}); give the report its own file")
        for target in (path, report_path):
            if target.exists() and not overwrite:
                raise OutputExistsError(f"{target} already exists; pass overwrite (--overwrite) to replace it")
            if target.is_dir():
                raise OutputExistsError(f"{target} is a directory, not a file path")
        path.parent.mkdir(parents=True, exist_ok=True)
        report_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        tmp_report = report_path.with_name(f".{report_path.name}.{uuid.uuid4().hex}.tmp")
        try:
            started = time.perf_counter()
            query, params = self._query()
            self.problem.engine.copy_to_parquet(query, tmp, params)
            _fsync(tmp)
            self.timings["write_seconds"] = time.perf_counter() - started
            started = time.perf_counter()
            summary = self.summary
            claimed = {"rows": summary["rows"], "classes": summary["classes"], "privacy": summary["privacy"]}
            found = recheck(self.problem, tmp)
            compare(claimed, found, self.problem, self.columns)
            self.timings["verify_seconds"] = time.perf_counter() - started
            digest = _sha256(tmp)
            doc = self.report(summary, path, digest)
            tmp_report.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
            _fsync(tmp_report)
            _place(tmp, path, overwrite)
            try:
                _place(tmp_report, report_path, overwrite)
            except BaseException:
                path.unlink(missing_ok=True)  # no release without its report
                raise
            _fsync_dir(path.parent)
            return doc
        except BaseException:
            for leftover in (tmp, tmp_report):
                leftover.unlink(missing_ok=True)
            raise

    def report(self, summary: dict | None = None, path: Path | None = None, digest: str | None = None) -> dict:
        summary = summary or self.summary
        p = self.problem
        return {
            "sqlclose_version": __version__,
            "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "spec_sha256": self.spec_sha256,
            "input": {"source": self.source_label, "rows": p.input_rows, "fingerprint": p.fingerprint,
                      "dropped_null_rows": p.dropped_rows},
            "node": self.node,
            "minimal_nodes": self.minimal_nodes,
            "lattice": {
                "levels": {qi.name: qi.levels for qi in p.qis},
                "size": self.search.lattice_size,
                "satisfying_nodes": int(self.search.satisfying.sum()),
                "nodes_evaluated": self.search.nodes_evaluated,
                "queries": self.search.queries,
                "seconds": round(self.search.seconds, 4),
            },
            "classes": summary["classes"],
            "suppressed_rows": summary["suppressed_rows"],
            "privacy": summary["privacy"],
            "utility": summary["utility"],
            "output": {"path": str(path) if path else None, "rows": summary["rows"], "sha256": digest,
                       "columns": self.columns},
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "verified": digest is not None,
        }


def _place(tmp: Path, target: Path, overwrite: bool) -> None:
    """Move a finished file into place. Without overwrite, a hard link fails atomically if the
    target appeared meanwhile (no check-then-act window); with it, an atomic rename replaces."""
    if overwrite:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise OutputExistsError(f"{target} appeared while the release was being written; not replacing it") from None
    except OSError:  # filesystems without hard links: fall back to a checked rename
        if target.exists():
            raise OutputExistsError(f"{target} appeared while the release was being written; not replacing it") \
                from None
        os.replace(tmp, target)
        return
    tmp.unlink()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    try:
        _fsync(path)
    except OSError:  # not every filesystem lets a directory be fsynced
        pass

