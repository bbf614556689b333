"""Privacy criteria, judged per class and vectorized over all classes of a node.

A criterion knows nothing about the search. It says which classes pass, what value the kept
classes reach, and whether it is monotone — under generalization alone, and with suppression —
so the search knows when it may infer a node's outcome instead of checking it (Li et al.,
Fact 2; DESIGN.md "Suppression caveat").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .classes import ClassHistograms
from .emd import EMD_TOLERANCE
from .metrics import discernibility
from .problem import SensitiveColumn


class Criterion:
    name: str = ""
    monotone: bool = True  # generalizing a passing node keeps it passing (no suppression)
    monotone_with_suppression: bool = False  # … also when failing classes are suppressed

    def passes(self, hist: ClassHistograms) -> np.ndarray:
        """Boolean per class."""
        raise NotImplementedError

    def reached(self, hist: ClassHistograms, kept: np.ndarray) -> dict:
        """The value the kept classes reach (for reports)."""
        raise NotImplementedError

    def suppression_bound(self, hist: ClassHistograms) -> np.ndarray:
        """Per class, a lower bound on the fraction of its records that must be suppressed in
        *any* specialization of the node (the node itself included) for this criterion to hold.

        It must not grow when classes merge (see ``suppression_lower_bound``). 0 is always sound.
        """
        return np.zeros(hist.classes)


@dataclass
class KAnonymity(Criterion):
    k: int
    name: str = "k-anonymity"
    monotone: bool = True
    # Merging classes only shrinks the set of classes below k: still monotone with suppression.
    monotone_with_suppression: bool = True

    def passes(self, hist: ClassHistograms) -> np.ndarray:
        return hist.sizes >= self.k

    def reached(self, hist: ClassHistograms, kept: np.ndarray) -> dict:
        return {"min_class_size": int(hist.sizes[kept].min()) if kept.any() else 0}

    def suppression_bound(self, hist: ClassHistograms) -> np.ndarray:
        # A class below k splits only into classes below k: all its records go.
        return (hist.sizes < self.k).astype(np.float64)


@dataclass
class TCloseness(Criterion):
    """EMD of the class's sensitive distribution from the whole table's is at most t."""

    index: int  # which sensitive attribute (position in the class histograms)
    column: SensitiveColumn
    name: str = "t-closeness"
    monotone: bool = True  # Li et al., Fact 2
    # A passing class merged into a failing one can fail and take more rows with it.
    monotone_with_suppression: bool = False
    _cache: dict = field(default_factory=dict, repr=False)

    def distances(self, hist: ClassHistograms) -> np.ndarray:
        # passes() and reached() on the same node share one EMD computation; keyed by the
        # object itself (not id(), which Python reuses once a histogram is freed).
        if self._cache.get("hist") is not hist:
            self._cache.update(hist=hist, value=self.column.emd(hist.counts[self.index]))
        return self._cache["value"]

    def passes(self, hist: ClassHistograms) -> np.ndarray:
        return self.distances(hist) <= self.column.t + EMD_TOLERANCE

    def suppression_bound(self, hist: ClassHistograms) -> np.ndarray:
        """EMD is convex in the class distribution (Li et al., Fact 2), so if a class at distance e
        splits into parts, the share f of its records in failing parts (each at most D_max, the
        farthest any distribution is from the table's) and the passing rest (at most t) satisfy
        f·D_max + (1 − f)·t ≥ e, i.e. f ≥ (e − t) / (D_max − t). The bound is convex and
        increasing in e, hence it never grows when classes merge."""
        span = self.column.max_emd - self.column.t
        if span <= EMD_TOLERANCE:
            return np.zeros(hist.classes)
        return np.clip((self.distances(hist) - self.column.t - EMD_TOLERANCE) / span, 0.0, 1.0)

    def reached(self, hist: ClassHistograms, kept: np.ndarray) -> dict:
        d = self.distances(hist)
        return {
            "column": self.column.name,
            "distance": self.column.distance,
            "t": self.column.t,
            "max_emd": float(d[kept].max()) if kept.any() else 0.0,
        }


@dataclass
class NodeOutcome:
    """A node judged against a set of criteria with a suppression limit."""

    satisfied: bool
    classes: int  # classes kept
    suppressed: int  # records in failing classes
    discernibility: int  # Σ kept size² + suppressed × rows (Bayardo & Agrawal, as Li et al. use it)
    failing: np.ndarray  # per class


def judge(hist: ClassHistograms, criteria: Sequence[Criterion], rows: int, max_suppressed: int) -> NodeOutcome:
    failing = np.zeros(hist.classes, dtype=bool)
    for c in criteria:
        failing |= ~c.passes(hist)
    suppressed = int(hist.sizes[failing].sum())
    kept_sizes = hist.sizes[~failing]
    dm = discernibility(kept_sizes, suppressed, rows)
    return NodeOutcome(suppressed <= max_suppressed, int(kept_sizes.shape[0]), suppressed, dm, failing)


@dataclass
class BatchOutcome:
    """Per node of a batch: the same quantities as NodeOutcome, as arrays."""

    satisfied: np.ndarray
    classes: np.ndarray
    suppressed: np.ndarray
    discernibility: np.ndarray


def judge_batch(hist: ClassHistograms, nodes: int, criteria: Sequence[Criterion], rows: int,
                max_suppressed: int) -> BatchOutcome:
    """``judge`` for the stacked classes of many nodes at once: one EMD call per attribute."""
    failing = np.zeros(hist.classes, dtype=bool)
    for c in criteria if hist.classes else ():
        failing |= ~c.passes(hist)
    sizes = hist.sizes
    kept = ~failing
    suppressed = np.bincount(hist.node, weights=sizes * failing, minlength=nodes).astype(np.int64)
    classes = np.bincount(hist.node, weights=kept, minlength=nodes).astype(np.int64)
    kept_squares = (sizes * kept).astype(np.int64) ** 2
    if rows < 90_000_000:  # float64 sums of squares are exact below 2**53
        squares = np.bincount(hist.node, weights=kept_squares, minlength=nodes).astype(np.int64)
    else:
        squares = np.zeros(nodes, dtype=np.int64)
        np.add.at(squares, hist.node, kept_squares)
    discernibility = squares + suppressed * rows
    return BatchOutcome(suppressed <= max_suppressed, classes, suppressed, discernibility)


def suppression_lower_bound(hist: ClassHistograms, nodes: int, criteria: Sequence[Criterion]) -> np.ndarray:
    """Per node of a batch: records that any specialization of the node must suppress.

    Each class contributes its size times the largest fraction any criterion demands. Merging
    classes never raises the sum (each criterion's fraction is convex and increasing in a
    quantity that merging averages, or, for k, only shrinks), so the bound holds for every
    specialization and projection-superset: a node whose bound exceeds the suppression limit
    fails, and so does everything below it. It makes "bound ≤ limit" a monotone criterion that
    lets Incognito prune even with suppression, where t-closeness itself is not monotone.
    """
    if not hist.classes:
        return np.zeros(nodes)
    fraction = np.zeros(hist.classes)
    for c in criteria:
        np.maximum(fraction, c.suppression_bound(hist), out=fraction)
    return np.bincount(hist.node, weights=hist.sizes * fraction, minlength=nodes)


def criteria_for(k: int, sensitive: Sequence[SensitiveColumn]) -> list[Criterion]:
    found: list[Criterion] = []
    if k > 1:
        found.append(KAnonymity(k))
    found.extend(TCloseness(j, sa) for j, sa in enumerate(sensitive))
    return found
