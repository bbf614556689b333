"""Probe: how many satisfying nodes could be decided without their histograms, by an upward bound.

Deciding the whole lattice under suppression evaluates nearly every satisfying node: t-closeness
is not monotone there, so a node above a satisfying one is not known to satisfy. But the criteria
are monotone *without* suppression (k, t by convexity, the l-diversity variants), so a class of a
more general node N made only of passing classes of a satisfying child M passes. N's records that
can fail are those of the N-classes holding a record of a failing M-class ("tainted"); when they
total at most the limit, N satisfies — decided from class sizes alone, with no histogram. An
inferred N passes its tainted classes on as its own possibly failing ones, so the bound chains up.

This probe measures the ceiling of that rule on a real search: it runs the search (deciding the
lattice), then walks its satisfying nodes bottom-up and counts those the rule decides from a
satisfying child. Class sizes and failing classes come from the base histogram (aggregated counts,
one fetch) in numpy — a probe, off the product's path. Its figures are in docs/performance.md
("sixteenth round").

    python benchmarks/probe_cap_inference.py benchmarks/data/rows_1000000/table.toml --suppression 0.05
"""

from __future__ import annotations

import argparse
import importlib
import json
import time

import numpy as np

from sqlclose.api import open_for
from sqlclose.model.arrays import numpy_of
from sqlclose.model.classes import ClassHistograms, tally
from sqlclose.model.lattice import Node, predecessors
from sqlclose.model.spec import as_spec
from sqlclose.prepare.problem import Problem, prepare
from sqlclose.privacy.criteria import criteria_for, failing_classes
from sqlclose.sql import queries as q


def prepared_from_arguments(description: str) -> tuple[Problem, list]:
    """The problem and criteria of the spec named on the command line, at ``--suppression``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("spec")
    parser.add_argument("--suppression", type=float, default=0.05)
    args = parser.parse_args()
    spec = as_spec(args.spec)
    spec = spec.model_copy(update={"privacy": spec.privacy.model_copy(update={"suppression": args.suppression})})
    opened = open_for(None, spec, None)
    problem = prepare(opened.engine, opened.relation, spec, opened.label, None)
    return problem, criteria_for(spec.k, problem.sas)


def main() -> None:
    problem, criteria = prepared_from_arguments(__doc__.split("\n\n")[0])
    search = importlib.import_module("sqlclose.search.incognito")  # the package re-exports the function
    result = search.incognito(problem, criteria, explore="lattice")
    satisfying = sorted((tuple(int(v) for v in x) for x in np.argwhere(result.satisfying)), key=sum)
    started = time.perf_counter()
    classes = _Classes(problem, criteria)
    inferred = _walk_up(satisfying, classes, problem.max_suppressed)
    print(json.dumps({"rows": problem.rows, "limit": problem.max_suppressed, "lattice": result.lattice_size,
                      "nodes_evaluated": result.nodes_evaluated, "search_seconds": round(result.seconds, 2),
                      "satisfying": len(satisfying), "inferable": inferred,
                      "evaluated_if_inferred": result.nodes_evaluated - inferred,
                      "probe_seconds": round(time.perf_counter() - started, 1)}))


class _Classes:
    """A node's class of each base row, its class sizes and failing classes, from the base histogram."""

    def __init__(self, problem: Problem, criteria: list) -> None:
        self.problem, self.criteria = problem, criteria
        names = [qi.coded.code for qi in problem.qis] + [problem.sas[0].coded.code, "n"]
        table = problem.engine.fetch(q.project(problem.base, names))
        self.codes = np.column_stack([numpy_of(table.column(qi.coded.code)).astype(np.int64) for qi in problem.qis])
        self.sa = numpy_of(table.column(problem.sas[0].coded.code)).astype(np.int64)
        self.n = numpy_of(table.column("n")).astype(np.float64)
        cards = self.codes.max(axis=0) + 1
        self.stride = np.cumprod(np.r_[1, cards[::-1][:-1]])[::-1]

    def histograms(self, node: Node) -> tuple[np.ndarray, np.ndarray, ClassHistograms]:
        """(class index per base row, class sizes, the classes' histograms as one node's)."""
        divisors = [qi.hierarchy.divisors[level] for qi, level in zip(self.problem.qis, node)]
        keys = sum((self.codes[:, i] // d) * self.stride[i] for i, d in enumerate(divisors))
        uniq, inverse = np.unique(keys, return_inverse=True)
        sizes, counts = tally(inverse, len(uniq), self.n, [self.sa], [len(self.problem.sas[0].domain)])
        hist = ClassHistograms(np.zeros((len(uniq), 0), dtype=np.int64), sizes, counts,
                               np.zeros(len(uniq), dtype=np.int64))
        return inverse, sizes, hist

    def of(self, node: Node) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(class index per base row, class sizes, failing per class)."""
        inverse, sizes, hist = self.histograms(node)
        return inverse, sizes, failing_classes(hist, self.criteria)


def _walk_up(satisfying: list[Node], classes: _Classes, limit: int) -> int:
    """Satisfying nodes the tainted-class bound decides from a satisfying child, bottom-up."""
    possibly: dict[Node, np.ndarray] = {}  # per satisfying node: per base row, its class may fail
    inferred = 0
    for node in satisfying:
        inverse, sizes, failing = classes.of(node)
        best = None
        for child in predecessors(node):
            if child in possibly:
                tainted = np.zeros(len(sizes), dtype=bool)
                tainted[inverse[possibly[child]]] = True
                bound = int(sizes[tainted].sum())
                if bound <= limit and (best is None or bound < best[0]):
                    best = (bound, tainted)
        if best is None:
            possibly[node] = failing[inverse]
            continue
        if int(sizes[failing].sum()) > limit:
            raise AssertionError(f"the bound decided {node}, which fails: the rule is wrong")
        inferred += 1
        possibly[node] = best[1][inverse]
    return inferred


if __name__ == "__main__":
    main()
