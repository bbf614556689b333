"""Privacy models, judged per class and vectorized over all classes of a node (or a batch).

A criterion knows nothing about the search. It computes one *measure* per class (size,
distinct values, entropy, distance, …), says which classes pass, what the kept classes reach,
whether it is monotone — under generalization alone, and with suppression — so the search knows
when it may infer a node's outcome instead of checking it (Li et al., Fact 2; DESIGN.md
"Suppression caveat"), and gives a lower bound on the records a failing class forces any
specialization to suppress (``suppression_bound``), which keeps the search prunable with
suppression.

Models: k-anonymity; p-sensitivity (Truta & Vinay); distinct, entropy and recursive (c, l)
l-diversity (Machanavajjhala et al., as defined in Li et al. section 2); t-closeness over EMD
(ordered, equal, hierarchical) or, for comparison, the variational and KL distances.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from sqlclose.model.attributes import SensitiveAttribute
from sqlclose.model.classes import ClassHistograms, record_totals
from sqlclose.model.sparse_counts import SparseCounts, dense_counts, kept_totals, values_held
from sqlclose.privacy.cell_distances import class_distances
from sqlclose.privacy.distances import (
    DeficitMap,
    deficit_map,
    is_emd,
    largest_within,
    ordered_least_distance,
    point_mass_distances,
)
from sqlclose.privacy.emd import DENSE_ORDERED_VALUES, EMD_TOLERANCE, row_sums
from sqlclose.privacy.ordered_cells import ClassCells, OrderedTable
from sqlclose.utility.metrics import discernibility

TOLERANCE = EMD_TOLERANCE  # float comparisons with a threshold: pass within 1e-12
# The criteria judge classes in runs whose count matrices hold at most this (ClassHistograms.slices):
# their temporaries stay ~3× that, whatever the part's size (docs/performance.md, eighteenth round).
SLICE_BYTES = 8_000_000
JUDGING_BYTES_PER_CLASS = 64  # per class judged: the outcome's arrays (failing, fractions, weights)
MEASURE_BYTES = 16  # per class and criterion: the measures kept with the histograms (float64, two at most)


class Criterion:
    # Facts about the model, not settings: class constants a caller cannot override per instance.
    name: ClassVar[str] = ""
    monotone: ClassVar[bool] = True  # generalizing a passing node keeps it passing (no suppression)
    worse_is_higher: ClassVar[bool] = False  # for the measure: is a larger value worse?

    def measure(self, hist: ClassHistograms) -> np.ndarray:
        """One value per class (what the criterion thresholds)."""
        raise NotImplementedError

    def passes(self, hist: ClassHistograms) -> np.ndarray:
        """Boolean per class."""
        raise NotImplementedError

    def reached(self, hist: ClassHistograms, kept: np.ndarray) -> dict:
        """The threshold and the value the kept classes reach (the worst of them), for reports."""
        m = self.measure(hist)[kept]
        worst = (m.max() if self.worse_is_higher else m.min()) if m.size else None
        worst = int(worst) if isinstance(worst, np.integer) else (None if worst is None else float(worst))
        return {**self.parameters(), "reached": worst}

    def parameters(self) -> dict:
        return {}

    def let_go(self) -> None:
        """Drop what the criterion keeps for judging (rebuilt if it judges again): called once a
        release's own judging is done, so that its re-check runs with less held."""

    @property
    def key(self) -> str:
        """Where the model's values sit in reports (per sensitive column for SA models)."""
        return self.name

    @property
    def dense_columns(self) -> frozenset[int]:
        """The sensitive columns whose counts this criterion reads as dense rows (a run at a time)."""
        return frozenset()

    @property
    def cell_columns(self) -> frozenset[int]:
        """The sensitive columns whose counts it reads by their nonzero cells alone."""
        return frozenset()

    def suppression_bound(self, hist: ClassHistograms) -> np.ndarray:
        """Per class, a lower bound on the fraction of its records that must be suppressed in
        *any* specialization of the node (the node itself included) for this criterion to hold.

        Size × it must not grow when classes merge: a merged class's at most the sum of its parts'
        (see ``suppression_lower_bound``). 0 is always sound.
        """
        return np.zeros(hist.classes)


class _Cached(Criterion):
    """Shares one measure computation between passes(), reached() and the bound on a node: the
    value is kept with the histograms themselves (and goes with them), not in the criterion."""

    def measure(self, hist: ClassHistograms) -> np.ndarray:
        # In runs of classes: a report's ``reached`` on a whole large node allocates no more than judging it did.
        key = (self.name, getattr(self, "index", None), self.parameters_key())
        return hist.memo_in_runs(key, self._compute, SLICE_BYTES, self._kept_as_cells(hist))

    def _kept_as_cells(self, hist: ClassHistograms) -> frozenset[int]:
        """Its column, when ``hist`` keeps it as cells: measured by them, runs sized by them (``sqlclose
        check`` reads a large domain so; a dense row of 632 k values is 5 MB a class)."""
        index = self.index  # type: ignore[attr-defined]
        return frozenset({index}) if isinstance(hist.counts[index], SparseCounts) else frozenset()

    @property
    def dense_columns(self) -> frozenset[int]:
        return frozenset({self.index})  # type: ignore[attr-defined]

    def parameters_key(self) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in self.parameters().items()))

    def _compute(self, hist: ClassHistograms) -> np.ndarray:
        raise NotImplementedError

    def _counts(self, hist: ClassHistograms) -> np.ndarray:
        return dense_counts(hist.counts[self.index])  # type: ignore[attr-defined]


@dataclass
class KAnonymity(Criterion):
    k: int
    name: ClassVar[str] = "k-anonymity"
    monotone: ClassVar[bool] = True

    def measure(self, hist: ClassHistograms) -> np.ndarray:
        return hist.sizes

    def passes(self, hist: ClassHistograms) -> np.ndarray:
        return hist.sizes >= self.k

    def parameters(self) -> dict:
        return {"k": self.k}

    def suppression_bound(self, hist: ClassHistograms) -> np.ndarray:
        # A class below k splits only into classes below k: all its records go.
        return (hist.sizes < self.k).astype(np.float64)


@dataclass
class _DistinctValues(_Cached):
    """At least ``minimum`` distinct sensitive values in every class."""

    index: int
    column: SensitiveAttribute

    @property
    def minimum(self) -> int:
        raise NotImplementedError

    @property
    def _large(self) -> bool:
        return self.column.q is not None and len(self.column.q) > DENSE_ORDERED_VALUES

    @property
    def dense_columns(self) -> frozenset[int]:
        return frozenset() if self._large else frozenset({self.index})

    @property
    def cell_columns(self) -> frozenset[int]:
        # A count of the values a class holds: its cells alone say it (the same whole number).
        return frozenset({self.index}) if self._large else frozenset()

    def measure(self, hist: ClassHistograms) -> np.ndarray:
        key = (self.name, self.index, self.parameters_key())
        return hist.memo_in_runs(key, self._compute, SLICE_BYTES, self.cell_columns | self._kept_as_cells(hist))

    def _compute(self, hist: ClassHistograms) -> np.ndarray:
        return values_held(hist.counts[self.index])

    def passes(self, hist: ClassHistograms) -> np.ndarray:
        return self.measure(hist) >= self.minimum

    def suppression_bound(self, hist: ClassHistograms) -> np.ndarray:
        # Parts of a class with too few values have too few values: all its records go.
        return (~self.passes(hist)).astype(np.float64)


@dataclass
class DistinctLDiversity(_DistinctValues):
    """At least l distinct sensitive values in every class."""

    l: int  # noqa: E741 - the papers' name
    name: ClassVar[str] = "distinct l-diversity"

    @property
    def minimum(self) -> int:
        return self.l

    @property
    def key(self) -> str:
        return "distinct_l"

    def parameters(self) -> dict:
        return {"l": self.l}


@dataclass
class PSensitivity(_DistinctValues):
    """p-sensitive k-anonymity's sensitive part: at least p distinct values per class
    (Truta & Vinay; the same test as distinct l-diversity, reported under its own name)."""

    p: int
    name: ClassVar[str] = "p-sensitivity"

    @property
    def minimum(self) -> int:
        return self.p

    @property
    def key(self) -> str:
        return "p"

    def parameters(self) -> dict:
        return {"p": self.p}


@dataclass
class EntropyLDiversity(_Cached):
    """Entropy(class) = −Σ p log p ≥ log l. The measure is exp(entropy): the l a class reaches."""

    index: int
    column: SensitiveAttribute
    l: float  # noqa: E741
    name: ClassVar[str] = "entropy l-diversity"
    monotone: ClassVar[bool] = True  # entropy is concave: a union's is at least the parts' least

    @property
    def key(self) -> str:
        return "entropy_l"

    def _compute(self, hist: ClassHistograms) -> np.ndarray:
        return np.exp(self._entropy(hist))

    def reached(self, hist: ClassHistograms, kept: np.ndarray) -> dict:
        """The least exp(entropy) of the kept classes, over the values they hold. The domain also
        holds values only suppressed rows have: their zero columns shift how the row's sum groups
        its terms, and the report's value moved in its last digits with a suppressed row's value."""
        held = kept_totals(hist.counts[self.index], kept) > 0
        least = [np.exp(_entropy(counts)).min() for counts in hist.kept_runs(self.index, kept, held, SLICE_BYTES)]
        return {**self.parameters(), "reached": float(min(least)) if least else None}

    def _entropy(self, hist: ClassHistograms) -> np.ndarray:
        """Per class, shared by passes(), the measure and the bound on the same histograms."""
        return hist.memo_in_runs(("entropy", self.index), lambda h: _entropy(h.counts[self.index]), SLICE_BYTES,
                                 self._kept_as_cells(hist))

    def passes(self, hist: ClassHistograms) -> np.ndarray:
        return self._entropy(hist) >= np.log(self.l) - TOLERANCE

    def parameters(self) -> dict:
        return {"l": self.l}

    def suppression_bound(self, hist: ClassHistograms) -> np.ndarray:
        """Entropy is concave, so parts of a class with entropy H, a share f failing (entropy ≥ 0)
        and the rest passing (≥ log l), satisfy H ≥ (1 − f) log l: f ≥ 1 − H / log l — convex
        and decreasing in H, which merging only raises. And a part holds only the class's d
        values, so its entropy is at most log d: with log d below log l every part fails, f = 1
        (merging only adds values)."""
        if self.l <= 1:
            return np.zeros(hist.classes)
        h = self._entropy(hist)
        share = np.clip(1.0 - (h + TOLERANCE) / np.log(self.l), 0.0, 1.0)
        values = values_held(hist.counts[self.index])
        with np.errstate(divide="ignore"):
            return np.where(np.log(values) < np.log(self.l) - TOLERANCE, 1.0, share)


@dataclass
class RecursiveCLDiversity(_Cached):
    """r1 < c · (r_l + … + r_m), r_i the i-th largest count in the class. The measure is
    r1 / (r_l + … + r_m): a class passes when it is below c (infinite when the tail is empty)."""

    index: int
    column: SensitiveAttribute
    c: float
    l: int  # noqa: E741
    name: ClassVar[str] = "recursive (c,l)-diversity"
    monotone: ClassVar[bool] = True  # Machanavajjhala et al.
    worse_is_higher: ClassVar[bool] = True

    @property
    def key(self) -> str:
        return "recursive"

    def _compute(self, hist: ClassHistograms) -> np.ndarray:
        counts = hist.counts[self.index]
        if isinstance(counts, SparseCounts):
            r1, tail = _largest_and_tail_of_cells(counts, self.l)
        else:
            ordered = _descending(counts)
            r1 = ordered[:, 0]
            tail = ordered[:, self.l - 1:].sum(axis=1) if self.l - 1 < ordered.shape[1] else np.zeros(len(r1))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(tail > 0, r1 / np.where(tail > 0, tail, 1), np.inf)

    def passes(self, hist: ClassHistograms) -> np.ndarray:
        return self.measure(hist) < self.c

    def parameters(self) -> dict:
        return {"c": self.c, "l": self.l}

    def suppression_bound(self, hist: ClassHistograms) -> np.ndarray:
        """The parts of a class that pass, merged, pass (the model is monotone), so they are a
        sub-multiset U of the class with r1(U) < c · tail(U); records outside the largest such U
        are suppressed in any specialization: f ≥ 1 − max |U| / size. Merging never lowers
        max |U| below the sum of the parts' (their union is a candidate), so the suppressed
        records never grow (``_recursive_kept``)."""
        bound = np.zeros(hist.classes)
        failing = ~self.passes(hist)
        if failing.any():
            ordered = _descending(self._counts(hist)[failing])  # sorted again, not kept: a matrix per part
            kept = _recursive_kept(ordered, self.c, self.l)
            bound[failing] = np.clip(1.0 - kept / record_totals(ordered) - TOLERANCE, 0.0, 1.0)
        return bound


def _descending(counts: np.ndarray) -> np.ndarray:
    """Each class's counts sorted in descending order."""
    return -np.sort(-counts, axis=1)


def _largest_and_tail_of_cells(counts: SparseCounts, l: int) -> tuple[np.ndarray, np.ndarray]:  # noqa: E741
    """Per class, from its cells: its largest count r1 and r_l + … + r_m (0 for a class of fewer than
    l values), whole numbers summed exactly, as ``_descending``'s rows give them."""
    rows, _, values = counts.held()
    order = np.lexsort((-values, rows))
    rows, values = rows[order], values[order]
    first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if len(rows) else np.zeros(0, dtype=np.int64)
    rank = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
    r1 = np.zeros(counts.shape[0])
    r1[rows[first]] = values[first]
    return r1, np.bincount(rows, weights=values * (rank >= l - 1), minlength=counts.shape[0])


def _recursive_kept(ordered: np.ndarray, c: float, l: int) -> np.ndarray:  # noqa: E741
    """Per class (its counts sorted in descending order): at least the records of the largest
    sub-multiset U with r1(U) < c · (r_l + … + r_m)(U). Lowering counts to a cap h keeps the
    order and raises no count, and for a given largest count the capped class is the largest
    candidate (the tail never shrinks as counts rise), so max |U| = Σ min(r_i, h*) for the
    largest h* with h* < c · T(h*), T(h) = Σ_{i ≥ l} min(r_i, h). h − c · T(h) is convex and 0 at
    0, so the h that pass form an interval (0, h*): h* is its root, on the segment between the
    last tail count (ascending) where it is still ≤ 0 and the next. Real h (a relaxation of whole
    records) only raises the count kept: the bound stays sound."""
    if l - 1 >= ordered.shape[1]:
        return np.zeros(len(ordered))  # no tail: every part fails
    tail = ordered[:, l - 1:][:, ::-1]  # ascending
    q = tail.shape[1]
    below = np.cumsum(tail, axis=1)  # Σ of the j smallest
    above = q - np.arange(1, q + 1)  # tail counts above the j-th smallest
    g = tail - c * (below + above * tail)  # h − c · T(h) at h = the j-th smallest
    last = (g <= 0).sum(axis=1)  # breakpoints within the interval (it starts at 0)
    rows = np.arange(len(ordered))
    sum_below = np.where(last > 0, below[rows, np.maximum(last - 1, 0)], 0.0)
    slope = 1.0 - c * (q - last)
    segment_end = np.where(last < q, tail[rows, np.minimum(last, q - 1)], np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.where(slope > 0, c * sum_below / np.where(slope > 0, slope, 1.0), segment_end)
    return np.minimum(ordered, root[:, None]).sum(axis=1)


@dataclass
class TCloseness(_Cached):
    """The class's sensitive distribution is within distance t of the whole table's."""

    index: int
    column: SensitiveAttribute
    name: ClassVar[str] = "t-closeness"
    monotone: ClassVar[bool] = True  # Li et al., Fact 2 (every distance here is convex)
    worse_is_higher: ClassVar[bool] = True
    # Per-value arrays (each as long as the domain: 4.8 MiB at 632 k ordered values, ~45 MiB in all),
    # built when first read and let go of before the re-check of a written release (``let_go``):
    # every cached property below, named once the class is made.
    _ARRAYS: ClassVar[tuple[str, ...]]

    @functools.cached_property
    def _ordered(self) -> OrderedTable | None:
        """The ordered distance read by cells: past a few hundred values it reads each class's own
        values, not a row of all of them (the same EMD to the bit, O(values held · log m) a class)."""
        column = self.column
        large = column.distance == "ordered" and len(column.q) > DENSE_ORDERED_VALUES
        return OrderedTable(column.q) if large else None

    @functools.cached_property
    def _point_mass(self) -> np.ndarray:
        """Each value's distance as a class alone."""
        return point_mass_distances(self.column.q, self.column.distance, self.column.tree)

    @functools.cached_property
    def _farthest_first(self) -> np.ndarray:
        """The values by their point-mass distance, farthest first."""
        return np.argsort(-self._point_mass, kind="stable")

    @functools.cached_property
    def _farthest_mass(self) -> np.ndarray:
        return self._point_mass[self._farthest_first]

    @functools.cached_property
    def _deficit(self) -> DeficitMap | None:
        """Counts → ψ's terms (distances.deficit_map)."""
        return deficit_map(self.column.distance, len(self.column.q), self.column.tree)

    @functools.cached_property
    def _shares(self) -> np.ndarray | None:
        """The table's shares of those terms."""
        return None if self._deficit is None else self._deficit.of(self.column.q / self.column.q.sum())

    def let_go(self) -> None:
        for name in self._ARRAYS:  # cached_property keeps them in the instance's __dict__
            self.__dict__.pop(name, None)

    @property
    def t(self) -> float:
        return self.column.spec.t

    @property
    def key(self) -> str:
        return "t"

    @property
    def dense_columns(self) -> frozenset[int]:
        return frozenset() if self._ordered is not None else frozenset({self.index})

    @property
    def cell_columns(self) -> frozenset[int]:
        return frozenset() if self._ordered is None else frozenset({self.index})

    def measure(self, hist: ClassHistograms) -> np.ndarray:
        key = (self.name, self.index, self.parameters_key())
        return hist.memo_in_runs(key, self._compute, SLICE_BYTES, self.cell_columns | self._kept_as_cells(hist))

    def _compute(self, hist: ClassHistograms) -> np.ndarray:
        if self._ordered is not None:
            return self._ordered.emd(self._cells(hist))
        return class_distances(hist.counts[self.index], self.column.q, self.column.distance, self.column.tree)

    def _cells(self, hist: ClassHistograms) -> ClassCells:
        # Not kept with the histograms: every run's copy would stay alive as long as the part.
        return ClassCells.of(hist.counts[self.index])

    def passes(self, hist: ClassHistograms) -> np.ndarray:
        return self.measure(hist) <= self.t + TOLERANCE

    def parameters(self) -> dict:
        return {"t": self.t, "distance": self.column.distance, "emd": is_emd(self.column.distance)}

    def suppression_bound(self, hist: ClassHistograms) -> np.ndarray:
        """Every distance here is convex in the class distribution (for EMD, Li et al.'s Fact 2),
        so if a class at distance e splits into parts, the share f of its records in failing
        parts and the passing rest (at most t) satisfy f·D + (1 − f)·t ≥ e, D the farthest any
        distribution on the class's own values is from the table's (the farthest of those values
        alone, by convexity): f ≥ (e − t) / (D − t). And what any specialization keeps of the
        class is one sub-multiset within t (the passing parts, merged), and no sub-multiset of T
        records is nearer than ψ(T) (``deficit_map``): f ≥ 1 − (the largest T with ψ(T) ≤ t) /
        size — 1 when no distribution on the class's values comes within t. For the ordered
        distance a part is also no nearer than its values' nearest-value bound
        (``ordered_least_distance``), which sees gaps ψ does not: f = 1 when that is above t.
        Merging raises D, keeps ψ of the summed T within t (a weighted mean of the parts') and
        lowers the nearest-value bound, and the first fraction is convex in e: the suppressed
        records never grow."""
        measured = self.measure(hist)
        bound = np.zeros(hist.classes)
        failing = measured > self.t + TOLERANCE
        if not failing.any():
            return bound
        farthest, kept, sizes, least = (self._by_cells if self._ordered is not None else self._by_rows)(hist, failing)
        span = farthest - self.t
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(span > TOLERANCE, (measured[failing] - self.t - TOLERANCE) / span, 0.0)
        if kept is not None:
            share = np.maximum(share, 1.0 - kept / sizes - TOLERANCE)
        if least is not None:
            share = np.where(least > self.t + TOLERANCE, 1.0, share)
        bound[failing] = np.clip(share, 0.0, 1.0)
        return bound

    def _by_rows(self, hist: ClassHistograms, failing: np.ndarray) -> tuple:
        """The failing classes' farthest value, largest part within t (or None), sizes and, for the
        ordered distance, nearest-value bound (or None), from their dense rows."""
        counts = self._counts(hist)[failing]
        present = counts > 0
        sizes = record_totals(counts)
        kept = None
        if self._deficit is not None:
            kept = largest_within(self._shares, self._deficit.of(counts), sizes, self.t + TOLERANCE)
        least = ordered_least_distance(present, self.column.q) if self.column.distance == "ordered" else None
        return self._farthest_present(present), kept, sizes, least

    def _by_cells(self, hist: ClassHistograms, failing: np.ndarray) -> tuple:
        """``_by_rows`` from the failing classes' cells (the ordered distance on a large domain)."""
        cells = self._cells(hist).select(failing)
        table = self._ordered
        return (table.farthest(cells, self._point_mass), table.largest_within(cells, self.t + TOLERANCE),
                cells.sizes, table.least_distance(cells))

    def _farthest_present(self, present: np.ndarray) -> np.ndarray:
        """Per class, the largest point-mass distance among its values (−∞ with none): the first
        present value in farthest-first order, one argmax instead of a masked max over every cell."""
        first = np.argmax(present[:, self._farthest_first], axis=1)
        return np.where(present.any(axis=1), self._farthest_mass[first], -np.inf)


TCloseness._ARRAYS = tuple(name for name, value in vars(TCloseness).items()
                          if isinstance(value, functools.cached_property))


def max_distance(column: SensitiveAttribute) -> float:
    """The farthest any distribution of the table's values is from the table's: every distance here
    is convex, so it is the farthest one-value distribution."""
    q = column.q
    return float(np.max(point_mass_distances(q, column.distance, column.tree)[q > 0]))


def max_l1_distance(column: SensitiveAttribute) -> float:
    """The farthest plain L1 distance (Σ |p − q|: Mauger et al.'s t-closeness value, GAA's paper t)
    any class of the table can be from it, whatever the column's own distance: twice the
    equal-distance EMD's farthest, 2 · (1 − the table's least share), a class of that one value."""
    q = column.q
    return 2.0 * float(np.max(point_mass_distances(q, "equal")[q > 0]))


def holds_for_every_class(column: SensitiveAttribute) -> bool:
    """Every model of the sensitive column ``column`` holds for any class of its table: vacuous by
    its parameters (``Sensitive.vacuous``), or a t at least ``max_distance``, the farthest any class
    of this table can be (distances are convex: a class of one value is the farthest; a KL t of −ln
    of the table's least share, an equal-distance t of 1 − that share). ``anonymize`` and ``sweep``
    refuse k = 1 with it."""
    return all(column.spec.vacuous(key) or (key == "t" and column.spec.t >= max_distance(column) - TOLERANCE)
               for key in column.spec.model_keys)


def nothing_required(columns: Sequence[SensitiveAttribute]) -> str | None:
    """Why every class of the table satisfies every model of ``columns`` (the sensitive columns with
    a model), or None when some model can fail. Told without the table's figure (its least share)."""
    if not columns or not all(holds_for_every_class(c) for c in columns):
        return None
    given = ", ".join(f"sensitive.{c.name}.{key}" for c in columns for key in c.spec.model_keys)
    return (f"every class of this table satisfies {given} (no class of it can be farther from the table than its "
            "farthest class of one value)")


def _entropy(counts: np.ndarray | SparseCounts) -> np.ndarray:
    """−Σ p log p per row, as log n − Σ c log c / n (n = Σ c; 0 for an empty row). Counts are
    record counts: a nonzero one is at least 1, so c · log max(c, 1) is c log c with 0 log 0 = 0 —
    one log per cell, no division or mask over the whole matrix. A row's terms are added left to
    right (``row_sums``), so its cells alone, added in column order, give the same bits (an absent
    value's term is +0.0), and so does the same class beside any others (``np.einsum`` grouped them
    by the row's offset)."""
    if isinstance(counts, SparseCounts):
        totals = counts.row_sums()
        terms = counts.values * np.log(np.maximum(counts.values, 1.0))
        weighted = np.bincount(counts.rows, weights=terms, minlength=counts.shape[0])
    else:
        totals = record_totals(counts)
        terms = np.maximum(counts, 1.0)
        np.log(terms, out=terms)
        terms *= counts
        weighted = row_sums(terms)
    safe = np.where(totals > 0, totals, 1.0)
    return np.maximum(np.log(safe) - weighted / safe, 0.0)  # rounding: never below 0


@dataclass
class NodeOutcome:
    """A node judged against a set of criteria with a suppression limit."""

    satisfied: bool
    classes: int  # classes kept
    suppressed: int  # records in failing classes
    discernibility: int  # Σ kept size² + suppressed × rows (see metrics)
    failing: np.ndarray  # per class


@dataclass
class BatchOutcome:
    """Per node of a batch: the same quantities as NodeOutcome, as arrays."""

    satisfied: np.ndarray
    classes: np.ndarray
    suppressed: np.ndarray
    discernibility: np.ndarray


def by_cells(criteria: Sequence[Criterion]) -> frozenset[int]:
    """The sensitive columns every criterion reads by their cells, if at all (runs of classes sized
    by their cells: ``ClassHistograms.slices``)."""
    cells = frozenset().union(*(c.cell_columns for c in criteria))
    return cells - frozenset().union(*(c.dense_columns for c in criteria))


def _failing_runs(hist: ClassHistograms, criteria: Sequence[Criterion]) -> Iterator[tuple[slice, list[np.ndarray]]]:
    """Per run of classes (bounded in bytes): where it lies, and the classes failing each criterion."""
    for where, run in hist.spans(SLICE_BYTES, by_cells(criteria)) if hist.classes else ():
        yield where, [~c.passes(run) for c in criteria]


def failing_classes(hist: ClassHistograms, criteria: Sequence[Criterion]) -> np.ndarray:
    """Classes that fail any criterion: the records suppression would remove."""
    failing = np.zeros(hist.classes, dtype=bool)
    for where, fails in _failing_runs(hist, criteria):
        for fail in fails:
            failing[where] |= fail
    return failing


def failed_criteria(hist: ClassHistograms, criteria: Sequence[Criterion]) -> list[Criterion]:
    """The criteria some class fails, in ``criteria``'s order: why a node does not satisfy (its
    failing classes hold more rows than suppression may remove)."""
    failed = [False] * len(criteria)
    for _, fails in _failing_runs(hist, criteria):
        failed = [was or bool(fail.any()) for was, fail in zip(failed, fails)]
    return [c for c, f in zip(criteria, failed) if f]


def judging_bytes(classes: int, criteria: Sequence[Criterion], codes: int = 0) -> int:
    """What judging ``classes`` classes against ``criteria`` (``failing_classes``, ``judge_batch``,
    the suppression bound) allocates beyond their histograms, at most: one run's temporaries, the
    outcome's per-class arrays, the measures kept with the histograms (two a criterion at most) and,
    when a cost metric reads them, the classes' ``codes`` QI codes. Measured with tracemalloc on
    300 k classes of 14 values: tests/test_models.py."""
    per_class = JUDGING_BYTES_PER_CLASS + MEASURE_BYTES * len(criteria) + 8 * codes
    return 3 * SLICE_BYTES + per_class * classes


def judge_batch(hist: ClassHistograms, nodes: int, criteria: Sequence[Criterion], rows: int,
                max_suppressed: int, failing: np.ndarray | None = None) -> BatchOutcome:
    """Every node of a batch (classes stacked, ``hist.node`` saying whose): one EMD call per
    attribute for all of them."""
    failing = failing_classes(hist, criteria) if failing is None else failing
    suppressed = np.bincount(hist.node, weights=hist.sizes * failing, minlength=nodes).astype(np.int64)
    classes = np.bincount(hist.node, weights=~failing, minlength=nodes).astype(np.int64)
    dm = discernibility(hist.node, hist.sizes, failing, nodes, rows)
    if hist.presuppressed is not None:  # classes left out below k: suppressed, each record costs `rows`
        suppressed += hist.presuppressed
        dm += hist.presuppressed * rows
    satisfied = suppressed <= max_suppressed
    if hist.unread is not None:
        satisfied &= ~hist.unread
    return BatchOutcome(satisfied, classes, suppressed, dm)


def judge(hist: ClassHistograms, criteria: Sequence[Criterion], rows: int, max_suppressed: int) -> NodeOutcome:
    """One node: ``judge_batch`` on a batch of one, plus which classes fail."""
    failing = failing_classes(hist, criteria)
    one = ClassHistograms(hist.codes, hist.sizes, hist.counts, np.zeros(hist.classes, dtype=np.int64))
    b = judge_batch(one, 1, criteria, rows, max_suppressed, failing)
    return NodeOutcome(bool(b.satisfied[0]), int(b.classes[0]), int(b.suppressed[0]), int(b.discernibility[0]),
                       failing)


def suppression_lower_bound(hist: ClassHistograms, nodes: int, criteria: Sequence[Criterion]) -> np.ndarray:
    """Per node of a batch: records that any specialization of the node must suppress.

    Each class contributes its size times the largest fraction any criterion demands. Merging
    classes never raises the sum (each criterion's records bound never grows when classes merge:
    each ``suppression_bound`` says why), so the bound holds for every
    specialization and projection-superset: a node whose bound exceeds the suppression limit
    fails, and so does everything below it. It makes "bound ≤ limit" a monotone criterion that
    lets Incognito prune even with suppression, where t-closeness itself is not monotone.
    """
    left_out = np.zeros(nodes) if hist.presuppressed is None else hist.presuppressed.astype(np.float64)
    if not hist.classes:
        return left_out
    fraction = np.zeros(hist.classes)
    for where, run in hist.spans(SLICE_BYTES, by_cells(criteria)):
        for c in criteria:
            np.maximum(fraction[where], c.suppression_bound(run), out=fraction[where])
    _none_kept_below_k(fraction, hist.sizes, k_of(criteria))
    return np.bincount(hist.node, weights=hist.sizes * fraction, minlength=nodes) + left_out


def _none_kept_below_k(fraction: np.ndarray, sizes: np.ndarray, k: int) -> None:
    """What a specialization keeps of a class are its passing parts, each of at least k records:
    k or more, or nothing. A class of which the criteria let fewer than k records be kept loses
    them all (fraction 1). Sound: the kept records are a whole number at most size × (1 − fraction),
    so below k (less a rounding margin) they are 0. Still monotone: what a merged class may keep
    is at least the sum of what its parts may (each ``suppression_bound``), and a threshold at k
    keeps that (a part that keeps nothing adds nothing; a merged class that keeps under k has
    parts that each keep under k). Measured: a few nodes fewer (docs/performance.md, seventeenth round)."""
    if k <= 1:
        return
    kept = sizes * (1.0 - fraction)
    fraction[kept < k * (1.0 - 1e-9)] = 1.0


def k_of(criteria: Sequence[Criterion]) -> int:
    """The k a set of criteria demands (1: none)."""
    return max((c.k for c in criteria if isinstance(c, KAnonymity)), default=1)


def drop_classes_below(hist: ClassHistograms, k: int, nodes: int) -> ClassHistograms:
    """The histograms without the classes smaller than ``k``, their records counted per node in
    ``presuppressed``. Only for a batch judged with k-anonymity(k): such a class fails whatever
    else holds, its records are suppressed (suppression bound 1) and nothing else of it is read,
    so the other criteria need not be computed on it — at fine lattice levels most classes."""
    small = hist.sizes < k
    if k <= 1 or not small.any():
        return hist
    left_out = np.bincount(hist.node[small], weights=hist.sizes[small], minlength=nodes).astype(np.int64)
    if hist.presuppressed is not None:
        left_out += hist.presuppressed
    kept = ~small
    return ClassHistograms(lambda: hist.codes[kept], hist.sizes[kept], [m[kept] for m in hist.counts],
                           hist.node[kept], left_out, hist.unread)


def criteria_for(k: int, sensitive: Sequence[SensitiveAttribute]) -> list[Criterion]:
    """The criteria a spec asks for: k-anonymity, then each sensitive column's models."""
    found: list[Criterion] = [KAnonymity(k)] if k > 1 else []
    for j, sa in enumerate(sensitive):
        found.extend(sensitive_criteria(j, sa))
    return found


def sensitive_criteria(index: int, sa: SensitiveAttribute) -> list[Criterion]:
    """The models one sensitive column asks for (``index``: its position in class histograms)."""
    s = sa.spec
    found: list[Criterion] = []
    if s.t is not None:
        found.append(TCloseness(index, sa))
    if s.distinct_l is not None:
        found.append(DistinctLDiversity(index, sa, s.distinct_l))
    if s.entropy_l is not None:
        found.append(EntropyLDiversity(index, sa, s.entropy_l))
    if s.recursive is not None:
        found.append(RecursiveCLDiversity(index, sa, s.recursive.c, s.recursive.l))
    if s.p is not None:
        found.append(PSensitivity(index, sa, s.p))
    return found
