"""Class histograms of lattice levels rolled up in numpy, for problems whose base histogram is small.

When the base histogram is small (Adult: 18 k rows), a lattice level costs DuckDB 10–30 ms of
fixed cost per query while the rollup itself is a few hundred thousand additions. The base
histogram (aggregated counts, fetched once by SQL) then becomes classes (a packed class key
each) and (class, sensitive value, count) pairs, and every node is rolled up from its parent
in numpy, a whole level at once: the parent's classes are regrouped by hashing
(pandas.factorize, O(classes), no sort) and its pairs scattered into the new classes ×
sensitive-domain matrix by one bincount — the matrix the privacy checks read anyway. A level's
pairs are extracted from its matrix only for the nodes the next level rolls up from, and its
classes' codes are unpacked only if read (a metric's suppression cost). A node with no computed
parent is generalized from the base's classes (or its subset's kept bottom); several such nodes
of one subset in a level share their meet, computed once. The input rows are still read only by SQL.
Limits of the in-memory path: base histogram rows, and base rows × sensitive value combinations
(the cells of its classes × joint domain matrix: with several sensitive attributes, its columns are
their combinations, and each attribute's matrix is summed from it). Past them, SQL level
batches (bounded by the engine's memory limit) do the work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sqlclose.engine.limits import search_share
from sqlclose.model.arrays import numpy_of
from sqlclose.model.classes import ClassHistograms, record_totals
from sqlclose.model.factorize import factorize as _factorize
from sqlclose.model.factorize import sorted_unique
from sqlclose.model.lattice import predecessors
from sqlclose.model.packing import KEY_LIMIT
from sqlclose.prepare.problem import Problem
from sqlclose.search.items import Item, Subset, no_classes
from sqlclose.sql import queries as q

# At 1 M base rows (a generated table, 14-value attribute) the in-memory search was 6-8x faster than
# SQL but peaked at 0.9 GB at 0 % suppression and 2.9 GB at 5 % (wider levels): kept at 250 k.
MEMORY_BASE_ROWS = 250_000
MEMORY_CELLS = 4_000_000
# With suppression both bounds are this many times larger: the search evaluates many more nodes
# (hundreds to thousands), each level a SQL statement of fixed cost, and numpy stays ahead further.
# Measured on generated tables, 5 %, whole process side by side (docs/performance.md, twenty-fifth
# round): in memory the search took 0.6–0.85 of the SQL path's time from 300 k to 700 k base rows
# and tied at 1 M (2.5: 625 k rows, short of the tie); without suppression it is behind from 300 k on
# (pandas' import among its costs). A kept subset bottom still counts against MEMORY_BASE_ROWS.
SUPPRESSING_SCALE = 2.5
# A parentless node's classes are found by one bincount over its whole code space (× sensitive
# values) when that space is at most this many cells per source pair: zeroing and scanning a cell
# costs ~1 ns, hashing a source class ~15 ns.
DENSE_CELLS_PER_PAIR = 4
# Parentless items of one subset in a level share a meet computed once from this many on.
MEET_FROM = 2


# Peak bytes of the in-memory search per base cell (base row × sensitive value): the classes ×
# domain matrices of a level and their pairs, in float64/int64. Measured: 1 M base rows × 14 values
# peaked at 0.9 GB (0 % suppression) and 2.9 GB (5 %), i.e. 64–210 bytes per cell; 256 covers both.
MEMORY_BYTES_PER_CELL = 256


def takes(problem: Problem) -> bool:
    """Whether the in-memory path takes the problem: its class keys fit one word, the base
    histogram's rows and cells (rows × the sensitive attributes' value combinations) within
    ``MEMORY_BASE_ROWS`` and ``MEMORY_CELLS`` (``SUPPRESSING_SCALE`` times more under suppression),
    and the user's memory limit, if any, has room for it (``_fits_budget``)."""
    scale = SUPPRESSING_SCALE if problem.max_suppressed else 1.0
    return class_strides(problem) is not None \
        and problem.base_rows <= MEMORY_BASE_ROWS * scale \
        and problem.base_rows * _sa_span(problem) <= MEMORY_CELLS * scale and _fits_budget(problem)


def _fits_budget(problem: Problem) -> bool:
    """With a user memory limit, the in-memory path must fit in the search's share of it (DuckDB,
    holding the base histogram beside it, has its own); else the engine does the rollups, spilling
    to disk past its share."""
    budget = problem.engine.memory_budget
    cells = problem.base_rows * max(_sa_span(problem), 1)
    return budget is None or cells * MEMORY_BYTES_PER_CELL <= search_share(budget)


def _sa_span(problem: Problem) -> int:
    return int(np.prod([len(s.domain) for s in problem.sas], dtype=np.float64))


def class_strides(problem: Problem) -> tuple[int, ...] | None:
    """Place values packing every QI's leaf code into one class key, or None over 62 bits."""
    strides, place = [], 1
    for qi in reversed(problem.qis):
        strides.append(place)
        place *= qi.hierarchy.code_range
    return tuple(reversed(strides)) if place < KEY_LIMIT else None


@dataclass
class _Level:
    """Classes and (class, sensitive value, count) pairs of a batch of nodes. Node i's classes
    are cstart[i]:cstart[i]+ccount[i], its pairs pstart[i]:pstart[i]+pcount[i]; pairs are
    sorted by class."""

    keys: np.ndarray
    cstart: np.ndarray
    ccount: np.ndarray
    pcls: np.ndarray
    psa: np.ndarray
    pn: np.ndarray
    pstart: np.ndarray
    pcount: np.ndarray

    @classmethod
    def from_matrix(cls, keys: np.ndarray, node: np.ndarray, joint: np.ndarray, nodes: int) -> _Level:
        """From new classes (keys, node of each, contiguous per node) and their classes × sa_span counts."""
        span = joint.shape[1]
        flat = joint.ravel()
        nz = np.flatnonzero(flat)
        pcls = nz // span
        cstart, ccount = _spans(node, nodes)
        pstart = np.searchsorted(pcls, cstart)
        pcount = np.searchsorted(pcls, cstart + ccount) - pstart
        return cls(keys, cstart, ccount, pcls, nz % span, flat[nz], pstart, pcount)


def _spans(node: np.ndarray, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """First class and number of classes of each node (classes contiguous per node, nodes in any order)."""
    ccount = np.bincount(node, minlength=nodes)
    cstart = np.zeros(nodes, dtype=np.int64)
    if len(node):
        begins = np.flatnonzero(np.r_[True, node[1:] != node[:-1]])
        cstart[node[begins]] = begins
    return cstart, ccount


@dataclass
class _Classes:
    """A level's classes as computed (keys, node of each, classes × sa_span counts, contiguous per
    node): its pairs are built only for the nodes the next level rolls up from."""

    keys: np.ndarray
    node: np.ndarray
    joint: np.ndarray
    cstart: np.ndarray
    ccount: np.ndarray

    @classmethod
    def of(cls, keys: np.ndarray, node: np.ndarray, joint: np.ndarray, nodes: int) -> _Classes:
        return cls(keys, node, joint, *_spans(node, nodes))

    def pairs_of(self, used: np.ndarray) -> tuple[_Level, np.ndarray]:
        """The classes and pairs of at least the nodes ``used`` (sorted ids), and where each node
        is in them. When those nodes hold most classes, all are taken (no copy of the matrix)."""
        if 2 * int(self.ccount[used].sum()) >= len(self.keys):
            return _Level.from_matrix(self.keys, self.node, self.joint, len(self.ccount)), np.arange(len(self.ccount))
        rows = _ranges(self.cstart[used], self.ccount[used])
        node = np.repeat(np.arange(len(used)), self.ccount[used])
        where = np.zeros(len(self.ccount), dtype=np.int64)
        where[used] = np.arange(len(used))
        return _Level.from_matrix(self.keys[rows], node, self.joint[rows], len(used)), where


@dataclass
class _Source:
    """Classes a parentless node is generalized from (the base's, or a subset's bottom), with,
    cached, each QI's codes at each divisor (unpacked from the class keys on first use)."""

    level: _Level
    stride: np.ndarray
    card: np.ndarray
    unit: dict[int, int] = field(default_factory=dict)  # QI → the divisor its key digits are at (else 1)
    codes: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)

    def at(self, i: int, divisor: int) -> np.ndarray:
        if (i, divisor) not in self.codes:
            unit = self.unit.get(i, 1)  # divisors are nested: leaf // divisor == (leaf // unit) // (divisor // unit)
            self.codes[i, divisor] = self.at(i, unit) // (divisor // unit) if divisor > unit else \
                (self.level.keys // self.stride[i]) % self.card[i]
        return self.codes[i, divisor]


def _weighted(source: _Source, cols: list[int], divisors: list[int], weights: list[int]) -> np.ndarray:
    """Σ over the QIs of (code at the divisor's level) × weight: a packed key per source class."""
    out = None
    for i, d, w in zip(cols, divisors, weights):
        code = source.at(i, d)
        if out is None:
            out = code * w  # a new array: the cached codes stay as they are
        elif w == 1:
            out += code
        else:
            out += code * w
    return np.zeros(len(source.level.keys), dtype=np.int64) if out is None else out


@dataclass
class MemoryRunner:
    """Class histograms of lattice levels, rolled up in numpy from one fetch of the base histogram."""

    problem: Problem
    strides: tuple[int, ...]
    queries: int = 0
    nodes_computed: int = 0
    rows_read: int = 0  # (class, sensitive value) pairs read from parents and sources
    _base: _Level | None = None
    _bottoms: dict[Subset, _Source] = field(default_factory=dict)
    _bottom_pairs: int = 0
    _prev: _Classes | None = None
    _ids: dict[Item, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.card = np.array([qi.hierarchy.code_range for qi in self.problem.qis], dtype=np.int64)
        self.stride = np.array(self.strides, dtype=np.int64)
        self._cards = self.card.tolist()
        self.span = int(self.card[0] * self.stride[0])  # class keys lie in 0..span-1
        self.domains = [len(s.domain) for s in self.problem.sas]
        self.sa_span = _sa_span(self.problem)

    @property
    def _full(self) -> Subset:
        return tuple(range(len(self.card)))

    def start(self) -> None:
        """A new walk (the next subset size): the last walk's subset bottoms are of no more use."""
        self.release_cache()
        self._bottoms = {s: b for s, b in self._bottoms.items() if s == self._full}
        self._bottom_pairs = 0

    def planned_rows(self, items: Sequence[Item]) -> int:
        """0: a level in numpy takes milliseconds; the walks share the work by what they have read."""
        return 0

    def level(self, items: Sequence[Item]) -> ClassHistograms:
        if self._base is None:
            self._load_base()
        if not items:
            self.release_cache()
            return no_classes(0, self.domains)
        rollups, bases = self._plan(items)
        blocks = [self._rollup_block(rollups)] if rollups else []
        blocks += self._base_blocks(bases)
        node, keys, joint = (np.concatenate(part) for part in zip(*blocks))
        self._prev = _Classes.of(keys, node, joint, len(items))
        self._ids = {item: n for n, item in enumerate(items)}
        self.nodes_computed += len(items)
        sizes = np.rint(record_totals(joint)).astype(np.int64)
        # The classes' codes at their node's levels: only a metric's suppression cost reads them.
        return ClassHistograms(lambda: self._digits_of(keys), sizes, self._marginals(joint), node)

    def _marginals(self, joint: np.ndarray) -> list[np.ndarray]:
        """The classes × domain count matrix per sensitive attribute. With several, the joint matrix's
        columns are their value combinations, the first attribute's outermost (``_load_base``): each
        attribute's matrix sums the others' axes out (whole numbers in float64: exact in any order)."""
        if len(self.domains) <= 1:
            return [joint] if self.domains else []
        cube = joint.reshape(len(joint), *self.domains)
        axes = range(1, len(self.domains) + 1)
        return [cube.sum(axis=tuple(a for a in axes if a != j + 1)) for j in range(len(self.domains))]

    def _load_base(self) -> None:
        """Base histogram → classes and pairs (one query; aggregated counts only)."""
        p = self.problem
        names = [qi.coded.code for qi in p.qis] + [s.coded.code for s in p.sas] + ["n"]
        table = p.engine.fetch(q.project(p.base, names), owned=True)
        self.queries += 1
        codes = np.column_stack([numpy_of(table.column(qi.coded.code)).astype(np.int64) for qi in p.qis])
        inverse, keys = _factorize(codes @ self.stride)
        sa = np.zeros(len(inverse), dtype=np.int64)
        for s, m in zip(p.sas, self.domains):
            sa = sa * m + numpy_of(table.column(s.coded.code)).astype(np.int64)
        joint = np.bincount(inverse * self.sa_span + sa, weights=numpy_of(table.column("n")).astype(np.float64),
                            minlength=len(keys) * self.sa_span).reshape(len(keys), self.sa_span)
        self._base = _Level.from_matrix(np.asarray(keys, dtype=np.int64), np.zeros(len(keys), dtype=np.int64), joint, 1)
        self._bottoms[self._full] = _Source(self._base, self.stride, self.card)

    def _digits_of(self, keys: np.ndarray) -> np.ndarray:
        return (keys[:, None] // self.stride) % self.card

    def _plan(self, items: Sequence[Item]) -> tuple[list, list]:
        """Rollups (child, parent id, stride, card, ratio) and base nodes (child, divisors)."""
        rollups, bases = [], []
        for n, (subset, node) in enumerate(items):
            parents = [p for p in predecessors(node) if (subset, p) in self._ids]
            if parents:
                parent = min(parents, key=lambda p: (int(self._prev.ccount[self._ids[subset, p]]), p))
                axis = next(a for a in range(len(node)) if node[a] != parent[a])
                i = subset[axis]
                div = self.problem.qis[i].hierarchy.divisors
                rollups.append((n, self._ids[subset, parent], self.strides[i], int(self.card[i]),
                                div[node[axis]] // div[parent[axis]]))
            else:
                levels = dict(zip(subset, node))
                bases.append((n, subset, [qi.hierarchy.divisors[levels[i]] if i in levels else 1
                                          for i, qi in enumerate(self.problem.qis)]))
        return rollups, bases

    def _rollup_block(self, rollups: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every rolled-up item of a level at once: the parents' classes with one digit
        generalized, regrouped by hashing; the parents' pairs scattered into the new matrix."""
        child, parent, stride, card, ratio = (np.array(c, dtype=np.int64) for c in zip(*rollups))
        prev, where = self._prev.pairs_of(sorted_unique(parent))  # np.unique would import numpy.ma
        parent = where[parent]
        cidx = _ranges(prev.cstart[parent], prev.ccount[parent])
        kid, stride, card, ratio = (np.repeat(v, prev.ccount[parent]) for v in (child, stride, card, ratio))
        k = prev.keys[cidx]
        digit = (k // stride) % card
        keys = k + (digit // ratio - digit) * stride
        pidx = _ranges(prev.pstart[parent], prev.pcount[parent])
        self.rows_read += len(pidx)
        block = np.cumsum(prev.ccount[parent]) - prev.ccount[parent]
        pair_cls = prev.pcls[pidx] - np.repeat(prev.cstart[parent] - block, prev.pcount[parent])
        node, keys, rows = _group(kid, keys, self.span)
        return node, keys, self._scatter(rows[pair_cls], prev.psa[pidx], prev.pn[pidx], len(node))

    def _base_blocks(self, bases: list[tuple]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The items of a level with no computed parent. Several of one subset that all generalize
        some QI are generalized from their meet (each QI at the least level among them), computed
        once and not counted as evaluated: it has fewer classes than the base or bottom each would
        read (on Adult, coarse parentless nodes read ~2× fewer source pairs in all)."""
        by_subset: dict[Subset, list[tuple[int, list[int]]]] = {}
        for n, subset, div in bases:
            by_subset.setdefault(subset, []).append((n, div))
        blocks = []
        for subset, group in by_subset.items():
            meet = [min(div[i] for _, div in group) for i in subset]
            if len(group) < MEET_FROM or max(meet) == 1:
                blocks += [self._base_block(n, subset, div) for n, div in group]
                continue
            source = self._bottoms.get(subset) or self._bottoms[self._full]
            keys, joint = self._generalize(source, list(subset), meet)
            level = _Level.from_matrix(keys, np.zeros(len(keys), dtype=np.int64), joint, 1)
            shared = _Source(level, self.stride, self.card, dict(zip(subset, meet)))
            blocks += [self._base_block(n, subset, div, shared) for n, div in group]
        return blocks

    def _base_block(self, n: int, subset: Subset, div: list[int], source: _Source | None = None) \
            -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One item with no computed parent, generalized from ``source`` if given, else from its
        subset's bottom if that was kept, else from the base histogram's classes."""
        source = source or self._bottoms.get(subset) or self._bottoms[self._full]
        d = [div[i] for i in subset]
        keys, joint = self._generalize(source, list(subset), d)
        if not any(di > 1 for di in d) and subset not in self._bottoms:
            self._keep_bottom(subset, keys, joint)
        return np.full(len(keys), n, dtype=np.int64), keys, joint

    def _generalize(self, source: _Source, cols: list[int], d: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The classes (keys, classes × sa_span counts) of ``source`` with QI ``cols[j]`` divided by
        ``d[j]`` and the other QIs dropped. When the code space is small (a coarse node), the
        classes are found by one bincount over that space instead of hashing."""
        level = source.level
        self.rows_read += len(level.pn)
        local = [(self._cards[i] - 1) // di + 1 for i, di in zip(cols, d)]  # codes per QI at the node's level
        space = math.prod(local)
        pcls = None if len(level.pcls) == len(level.keys) else level.pcls  # None: one pair per class, in order
        if space * self.sa_span <= DENSE_CELLS_PER_PAIR * len(level.pn) + 4096:
            lstride = [math.prod(local[j + 1:]) for j in range(len(local))]
            dense = _weighted(source, cols, d, lstride)
            full = self._scatter(dense if pcls is None else dense[pcls], level.psa, level.pn, space)
            present = np.flatnonzero(full.any(axis=1) if self.sa_span > 1 else full[:, 0])
            keys = np.zeros(len(present), dtype=np.int64)
            for i, ls, loc in zip(cols, lstride, local):
                keys += (present // ls) % loc * self.strides[i]
            return keys, full[present]
        rows, keys = _factorize(_weighted(source, cols, d, [self.strides[i] for i in cols]))
        return keys, self._scatter(rows if pcls is None else rows[pcls], level.psa, level.pn, len(keys))

    def _keep_bottom(self, subset: Subset, keys: np.ndarray, joint: np.ndarray) -> None:
        """A subset's bottom node (its QIs at level 0), kept as the source of that subset's
        nodes that have no computed parent: fewer classes than the base histogram."""
        level = _Level.from_matrix(keys, np.zeros(len(keys), dtype=np.int64), joint, 1)
        if self._bottom_pairs + len(level.pn) <= MEMORY_BASE_ROWS:
            self._bottoms[subset] = _Source(level, self.stride, self.card)
            self._bottom_pairs += len(level.pn)

    def _scatter(self, cls: np.ndarray, sa: np.ndarray, n: np.ndarray, classes: int) -> np.ndarray:
        """(class, sensitive combination, count) pairs → the classes × sa_span count matrix."""
        if self.sa_span == 1:
            return np.bincount(cls, weights=n, minlength=classes).reshape(classes, 1)
        return np.bincount(cls * self.sa_span + sa, weights=n, minlength=classes * self.sa_span) \
            .reshape(classes, self.sa_span)

    def sibling(self) -> MemoryRunner:
        """A second runner over the same base histogram (fetched once, shared read-only)."""
        if self._base is None:
            self._load_base()
        other = MemoryRunner(self.problem, self.strides, _base=self._base)
        other._bottoms[self._full] = self._bottoms[self._full]
        return other

    def release_cache(self) -> None:
        self._prev, self._ids = None, {}

    def close(self) -> None:
        self.release_cache()


def _first(rows: np.ndarray, classes: int) -> np.ndarray:
    """A source row of each class (the first; any would do: they share the key)."""
    first = np.empty(classes, dtype=np.int64)
    first[rows[::-1]] = np.arange(len(rows) - 1, -1, -1)
    return first


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated aranges start:start+length."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(total)


def _group(kid: np.ndarray, keys: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """New classes = distinct (item, key) pairs, numbered in order of first appearance (so each
    item's classes are contiguous, as its source classes are). Returns each class's item and key,
    and each source class's new class."""
    if len(kid) and int(kid.max()) + 1 < KEY_LIMIT // span:
        rows, uniques = _factorize(kid * span + keys)
        return uniques // span, uniques % span, rows  # the hashed values hold item and key
    dense, _ = _factorize(keys)
    rows, uniques = _factorize(kid * (int(dense.max()) + 1 if len(dense) else 1) + dense)
    node = np.empty(len(uniques), dtype=np.int64)
    node[rows] = kid
    return node, keys[_first(rows, len(node))], rows
