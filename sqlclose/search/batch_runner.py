"""The SQL level batches: class histograms of a whole lattice level computed in as few engine
queries as fit a row budget, the level kept engine-side as the next one's parents.

Incognito visits a lattice bottom-up by height, and every node it must check at height h has
its finer neighbours at height h-1 already computed. So the runner keeps the previous level's
results (node, packed key, count) registered with the engine and computes every node of the
next level in one query, each rolled up from its smallest computed parent (Incognito's rollup:
a coarser node's classes are unions of a finer node's). Nodes with no computed parent are
grouped from a floor below them (``floors``) or from the keyed base histogram, also in one query.
One query per level instead of one per node: the engine's fixed cost per query (parse, plan,
bind; ~1 ms) was the search's bottleneck. What comes back to Python is only what the judge reads
(``_judged_parts``), in parts of whole nodes bounded in bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from sqlclose.engine.limits import search_share
from sqlclose.model.arrays import arrow_table, numpy_of
from sqlclose.model.classes import ClassHistograms, record_totals, tally
from sqlclose.model.lattice import Node, predecessors
from sqlclose.model.packing import Packing, key_column
from sqlclose.model.sparse_counts import SparseCounts
from sqlclose.prepare.problem import Problem
from sqlclose.privacy.criteria import Criterion, by_cells, judging_bytes
from sqlclose.search.floors import FloorChoice
from sqlclose.search.items import Item, LevelPart, Subset, chunks, no_classes
from sqlclose.search.keyed_base import KeyedBase
from sqlclose.search.screen import SampledScreen
from sqlclose.sql import queries as q

if TYPE_CHECKING:
    pass


ROWS_PER_QUERY = 4_000_000  # input rows one batch query may expand to (bounds its memory)
# What one part of a kept level may cost in Python when no memory limit is set (with one, the search's
# share of it, as the in-memory path), and what it costs: per returned (class, sensitive value) row its Arrow
# and NumPy columns (cell, n), per class its classes × sensitive-values matrix, the temporaries that build
# it (~0.4 of it) and what judging it allocates (a bounded run of classes at a time: criteria.judging_bytes).
# Measured with tracemalloc on the generated 1 M-row table (hierarchical t, 5 %, 40 parts of 5–150 MB):
# fetch, build and judging together peaked at most at 0.91 of this model (median 0.27).
RETURNED_BYTES = 512_000_000
BYTES_PER_RETURNED_ROW = 24
MATRIX_COPIES = 3
# A level no walk rolls up from (the walk from above's) is staged and judged in chunks of consecutive
# nodes whose histograms can hold at most this many rows together (~1.5 GB engine-side), each dropped
# once judged: the engine keeps the base, the floors and one chunk, not a whole level (at 100 M rows
# the walk from above's levels spilled past the 77 GB of free disk). A chunk costs ~20 ms of fixed
# statements (measured at 1 M rows, where every level fits in one). docs/performance.md, sixteenth round.
CHUNK_ROWS = 64_000_000


@dataclass
class BatchRunner(FloorChoice, SampledScreen):
    """Class histograms for batches of lattice nodes — of one or many QI subsets at once."""

    problem: Problem
    packing: Packing
    keyed: KeyedBase | None = None  # shared with a second runner over the same problem (None: its own)
    queries: int = 0
    nodes_computed: int = 0
    rows_read: int = 0  # (class, sensitive value) rows the batches grouped: the work done, by a count
    # k of the criteria the levels are judged with (set by the search; 1: none or unknown). Where
    # the engine keeps levels itself, only classes of at least this many records come back.
    drop_below: int = 1
    # Records below k past which a node of a kept level is not read further: the suppression limit,
    # or less once the search knows a node a costlier one cannot beat (set by the search; None: the limit).
    read_within: Callable[[], int] | None = None
    # False for a walk whose levels are never parents (the walk from above; set by the search): a large
    # level is then staged and judged in chunks (``CHUNK_ROWS``) where the engine keeps levels.
    levels_are_parents: bool = True
    # What a part is judged against (set by the search): DuckDB's limit makes room for its judging
    # (``criteria.judging_bytes``); ``codes_read``: QI columns whose codes judging unpacks (a cost metric).
    judged_by: Sequence[Criterion] = ()
    codes_read: int = 0
    _ids: dict[Item, int] = field(default_factory=dict)  # items of the previous level -> id
    _rows: dict[Item, int] = field(default_factory=dict)  # … -> rows in their histograms
    _prev: str | None = None
    _floors: dict[Subset, list[tuple[int, Node, int]]] = field(default_factory=dict)  # (floor id, levels, rows)
    _floors_made: int = 0  # floors kept so far (their ids are 0 … this − 1, in the kept table's order)
    _refined_rows: int = 0  # rows of the floors made from floors (``_refine_floors``)
    _names: dict[str, str] = field(default_factory=dict)
    _sql: dict[str, str] = field(default_factory=dict)
    _samples: list[tuple[Subset, Node, str]] = field(default_factory=list)  # the screen's kept samples

    def __post_init__(self) -> None:
        if self.keyed is None:
            self.keyed = KeyedBase(self.problem, self.packing)

    def _name(self, role: str) -> str:
        """One registered name per role, re-registered each time: each query's SQL text is
        rendered by sqlglot once per run and then reused."""
        if role not in self._names:
            self._names[role] = self.problem.engine.temp_name(role)
        return self._names[role]

    def level_parts(self, items: Sequence[Item]) -> Iterator[LevelPart]:
        """Class histograms of ``items`` (nodes of one height, of any subsets), stacked, in parts
        of whole nodes (one unless the level is kept engine-side and large); ``.node`` indexes
        ``items`` from the part's start. Computed in as few queries as fit the row budget."""
        if not items:
            self.release_cache()  # the next level's parents would not be at this height
            yield LevelPart(0, 0, self._no_classes())
            return
        ids = {item: n for n, item in enumerate(items)}
        rollups, parentless = self._plan(items, ids)
        if self.problem.engine.keeps_levels:
            self.problem.engine.fit_memory()
            if self.levels_are_parents or rollups:
                self._build_kept(rollups, parentless)
                self.nodes_computed += len(items)
                yield from self._judged_parts(ids)
            else:
                yield from self._chunked_parts(items, parentless)
            return
        bases = [(self._base_weight(subset, node), self._base_row(n, subset, node)) for n, (subset, node) in parentless]
        jobs = self._jobs(rollups, [], bases)
        if len(jobs) == 1:  # the usual case: the engine keeps the result itself (no round trip)
            result = self._run(*jobs[0], keep=True)
        else:
            result = pa.concat_tables([self._run(*job) for job in jobs])
            self.problem.engine.register(self._name("level"), result)
        self.nodes_computed += len(items)
        self._keep(result, ids)
        yield LevelPart(0, len(items), self._stack(result, self._divisors(ids)))

    # ---- planning -------------------------------------------------------------------------
    def planned_rows(self, items: Sequence[Item]) -> int:
        """What a batch of ``items`` would read, told before it runs (the search balances its two
        walks by it): a computed parent's rows; else the smallest floor's below the item; else at
        most its code space — a floor made for it holds no more — plus one read of the base that
        makes the floors (the base's rows each, where levels are not kept engine-side)."""
        total, unfloored = 0, False
        for subset, node in items:
            parent = self._smallest_parent(subset, node)
            floor = None if parent is not None else self._floor_for(subset, node)
            if parent is not None or floor is not None:
                total += self._rows[subset, parent] if parent is not None else floor[2]
            elif self.problem.engine.keeps_levels:
                total += int(min(self._space(subset, node), self.problem.base_rows))
                unfloored = True
            else:
                total += self.problem.base_rows
        return total + (self.problem.base_rows if unfloored else 0)

    def _plan(self, items: Sequence[Item], ids: dict[Item, int]) -> tuple[list, list[tuple[int, Item]]]:
        """Rollups (estimated input rows, plan row) of items with a computed parent, each from its
        smallest one; the items without one."""
        rollups, parentless = [], []
        for subset, node in items:
            parent = self._smallest_parent(subset, node)
            if parent is None:
                parentless.append((ids[subset, node], (subset, node)))
                continue
            row = (ids[subset, node], self._ids[subset, parent], *self._masks(subset, node))
            rollups.append((self._rows[subset, parent], row))
        return rollups, parentless

    def _smallest_parent(self, subset: Subset, node: Node) -> Node | None:
        """The computed parent (previous level) of the fewest rows, ties to the smaller levels."""
        parents = [p for p in predecessors(node) if (subset, p) in self._ids]
        return min(parents, key=lambda p: (self._rows[subset, p], p)) if parents else None

    def _jobs(self, rollups: list, from_floor: list, bases: list) -> list[tuple[list[tuple], list[str], str]]:
        """(plan rows, plan columns, kind) per query: each kind's (estimated rows, plan row) pairs
        split to the row budget. A rollup or floor item is estimated by the rows it joins; a base
        item by the rows it can return (``_base_weight``), though each reads the whole base."""
        masks = [f"m{w}" for w in range(self.packing.words)]
        kinds = [(rollups, ["node", "parent", *masks], "rollup"), (from_floor, [], "floor"),  # floor: literals
                 (bases, ["node", *masks], "base")]
        self.rows_read += sum(rows for plan in (rollups, from_floor) for rows, _ in plan) \
            + len(bases) * self.problem.base_rows
        return [(chunk, columns, kind) for plan, columns, kind in kinds for chunk in chunks(plan, ROWS_PER_QUERY)]

    def _base_weight(self, subset: Subset, node: Node) -> int:
        """What a node grouped from the base weighs in a query's row budget: the rows it can return
        (its code space, at most the base's rows). Its GROUP BY is a branch of a UNION ALL over the
        base, whose memory is its hash table, sized by its groups; a batch of coarse nodes is one
        query instead of one each (measured on a 10 M-row base: 20 nodes in one query took half the
        time of 20 queries, with or without a memory limit; docs/performance.md)."""
        return int(min(self._space(subset, node), self.problem.base_rows))

    def _masks(self, subset: Subset, node: Node) -> tuple[int, ...]:
        """The node's masks, one per key word (a QI outside the subset is cleared, as at its top)."""
        return self.packing.masks(dict(zip(subset, node)))

    def _base_row(self, n: int, subset: Subset, node: Node) -> tuple[int, ...]:
        """A node grouped from the keyed base: its id and masks."""
        return (n, *self._masks(subset, node))

    def _divisors(self, ids: dict[Item, int]) -> np.ndarray:
        """Per item (by id) and QI, the divisor of the item's level (1 outside its subset, whose
        digit is 0): what turns a class's unpadded digits into its codes."""
        div = np.ones((len(ids), len(self.problem.qis)), dtype=np.int64)
        for (subset, node), n in ids.items():
            for i, level in zip(subset, node):
                div[n, i] = self.problem.qis[i].hierarchy.divisors[level]
        return div

    def _run(self, plan_rows: list[tuple], names: list[str], kind: str, keep: bool = False) -> pa.Table:
        """One batch query; ``keep``: its result also becomes the registered level table."""
        self._register_plan(plan_rows, names)
        self.queries += 1
        if keep:
            return self.problem.engine.fetch_and_keep(self._name("level"), self._rendered(kind))
        return self.problem.engine.fetch(self._rendered(kind))

    def _rendered(self, kind: str) -> str:
        """A query's SQL text, rendered once per run (the names it reads stay the same)."""
        if kind not in self._sql:
            self._sql[kind] = self.problem.engine.render(self._query(kind))
        return self._sql[kind]

    def _register_plan(self, plan_rows: list[tuple], names: list[str]) -> None:
        columns = list(zip(*plan_rows))
        self.problem.engine.register(self._name("plan"),
                                     arrow_table(dict(zip(names, columns)), dict.fromkeys(names, pa.int64())))

    def _query(self, kind: str):
        pk = self.packing
        level, plan = q.table(self._name("level")), q.table(self._name("plan"))
        if kind == "rollup":
            return q.rollup_batch(level, plan, pk.words)
        if kind == "base":
            return q.base_batch(self.keyed.table(), plan, pk.words, ones=self.keyed.ones)
        if kind == "floor_rows":
            return q.rows_per_node(q.table(self._name("floors")))
        if kind == "sizes":
            return q.class_sizes(level, pk.words, pk.sa_span)
        if kind == "summary":
            return q.level_summary(q.table(self._name("sizes")), self.drop_below)
        if kind == "large":
            return q.large_classes(q.table(self._name("sizes")), q.table(self._name("running")), pk.words,
                                   self.drop_below)
        if kind == "classes":
            return q.numbered_classes(q.table(self._name("large")))
        return q.class_rows(level, q.table(self._name("large")), pk.words, pk.sa_span, pk.sa_width,
                            ordered=kind == "rows_by_cells")

    # ---- levels kept engine-side --------------------------------------------------------------
    def _build_kept(self, rollups: list, parentless: list[tuple[int, Item]], make_floors: bool = True) -> None:
        """The level is built in a table of the engine (under its memory limit, spilling past it)
        and stays there as the next level's parents (a chunk of a level: until it is judged).

        An item without a computed parent is grouped from the base histogram by a literal GROUP BY
        of its own, or generalized from a small *floor* of its subset (``_make_floors``; not when
        the caller made the floors for a whole level it builds in chunks)."""
        engine = self.problem.engine
        if make_floors:
            self._floors_for_level(parentless)
        from_floor, bases = [], []
        for n, (subset, node) in parentless:
            floor = self._floor_for(subset, node)
            if floor is None:
                bases.append((self._base_weight(subset, node), self._base_row(n, subset, node)))
            else:
                from_floor.append((floor[2], self._floor_row(n, floor, subset, node)))
        jobs = self._jobs(rollups, from_floor, bases)
        staging = self._name("staging")
        for n, (plan_rows, names, kind) in enumerate(jobs):
            if kind == "base":
                query = self._base_nodes(plan_rows)
            elif kind == "floor":
                query = q.masked_nodes(q.table(self._name("floors")), plan_rows, floors=True)
            else:
                self._register_plan(plan_rows, names)
                query = self._query(kind)
            engine.keep(staging, query, append=n > 0)
            self.queries += 1
        engine.rename(staging, self._name("level"))
        self._prev = self._name("level")

    def _chunked_parts(self, items: Sequence[Item], parentless: list[tuple[int, Item]]) -> Iterator[LevelPart]:
        """A level no walk rolls up from, in chunks of consecutive items whose histograms can hold
        at most ``CHUNK_ROWS`` rows (a bound per item: its code space, at most the rows of the floor
        or base it is grouped from), each staged, judged and dropped before the next. Items the
        screen rules out (``SampledScreen``) are not grouped; the floors are chosen once, for the
        level's other items, as if they were staged whole."""
        found = self._screened(parentless, len(items))
        out = found > self._within()
        self._floors_for_level([(n, item) for n, item in parentless if not out[n]])
        bound = np.array([0.0 if out[n] else self._rows_bound(subset, node) for n, (subset, node) in enumerate(items)],
                         dtype=np.float64)
        for start, stop in _parts(bound, CHUNK_ROWS):
            chunk = items[start:stop]
            self.nodes_computed += len(chunk)  # ruled out by the screen or grouped: evaluated either way
            grouped = [(n, item) for n, item in enumerate(chunk) if not out[start + n]]
            if not grouped:
                yield LevelPart(start, stop, self._ruled_out(found[start:stop]))
                continue
            self._build_kept([], grouped, make_floors=False)
            for part in self._judged_parts({item: n for n, item in enumerate(chunk)}, found[start:stop]):
                yield LevelPart(start + part.start, start + part.stop, part.hist)
                del part  # not held while the next is fetched
            self.release_cache()

    def _ruled_out(self, found: np.ndarray) -> ClassHistograms:
        """Items the screen ruled out: no class read, the records of their sampled classes that fail
        counted as left out (as a node's records below k are)."""
        hist = self._no_classes()
        hist.presuppressed, hist.unread = found.copy(), np.ones(len(found), dtype=bool)
        return hist

    def _judged_parts(self, ids: dict[Item, int], found: np.ndarray | None = None) -> Iterator[LevelPart]:
        """What of a kept level comes back: per node the records in classes below k and, for the
        nodes those alone do not put past ``read_within`` (the suppression limit, or less), the rows
        of their classes of at least k — at fine levels a small part of the level — in parts of
        whole nodes that cost at most ``_part_bytes`` in Python (a node costing more alone), so
        that Python holds one part at a time whatever the level's size. ``found``: per item, the
        records of its sampled classes that fail (``_screened``; the items it ruled out were not
        grouped, and are not read)."""
        engine = self.problem.engine
        engine.keep(self._name("sizes"), self._query("sizes"))
        summary = self._fetch("summary")
        nodes = len(ids)
        divisors = self._divisors(ids)
        per_node = {}
        for column in ("pairs", "dropped", "big_classes", "big_pairs"):
            per_node[column] = np.zeros(nodes, dtype=np.int64)
            per_node[column][numpy_of(summary.column("node"))] = np.rint(numpy_of(summary.column(column)))
        dropped = per_node["dropped"]
        if found is not None:  # items the screen ruled out were not grouped: what failed of their samples
            np.maximum(dropped, found, out=dropped)
        self._ids, self._rows = ids, {item: int(per_node["pairs"][i]) for item, i in ids.items()}
        running = dropped <= self._within()
        classes = np.where(running, per_node["big_classes"], 0)
        numbers = np.concatenate([[0], np.cumsum(classes)])  # a node's classes are numbered from numbers[node]
        if running.any():
            kept = np.flatnonzero(running)
            engine.register(self._name("running"), arrow_table({"node": kept, "first": numbers[kept]},
                                                                {"node": pa.int64(), "first": pa.int64()}))
            engine.keep(self._name("large"), self._query("large"))
        cost = np.where(running, per_node["big_pairs"], 0) * BYTES_PER_RETURNED_ROW \
            + classes * (self.packing.sa_width * 8 * MATRIX_COPIES)
        for start, stop in _parts(cost, self._part_bytes()):
            first, last = int(numbers[start]), int(numbers[stop])
            if last > first:
                by_cells = self._kept_as_cells(last - first)
                hist = self._numbered(self._fetch("classes", (first, last)),
                                      self._fetch("rows_by_cells" if by_cells else "rows", (first, last)),
                                      first, start, divisors[start:stop], by_cells)
            else:
                hist = self._no_classes()
            hist.presuppressed, hist.unread = dropped[start:stop], ~running[start:stop]
            # The part is held now, and judging it allocates a little more: DuckDB's limit makes room
            # for that before, not after (docs/performance.md, seventeenth and eighteenth rounds).
            engine.fit_memory(upcoming=judging_bytes(hist.classes, self.judged_by, self.codes_read))
            yield LevelPart(start, stop, hist)
            del hist  # judged: not held while the next part is fetched (two at once at the peak)

    def _no_classes(self) -> ClassHistograms:
        return no_classes(len(self.problem.qis), [len(s.domain) for s in self.problem.sas])

    def _part_bytes(self) -> int:
        return part_bytes(self.problem.engine.memory_budget)

    def _base_nodes(self, plan_rows: list[tuple]):
        return q.masked_nodes(self.keyed.table(), plan_rows, ones=self.keyed.ones)

    def _kept_as_cells(self, count: int) -> bool:
        """Whether ``count`` classes' histograms are kept by their nonzero cells (one sensitive
        column whose dense matrix exceeds what a part may hold, or one judged by its cells)."""
        too_large = count * self.packing.sa_width * 8 > dense_bytes_allowed(self.problem.engine.memory_budget)
        return len(self.packing.sa_card) == 1 and (too_large or bool(self._read_by_cells))

    def _numbered(self, classes: pa.Table, rows: pa.Table, first: int, start: int,
                  divisors: np.ndarray, by_cells: bool) -> ClassHistograms:
        """Classes numbered by the engine (cid, from ``first``; their nodes from ``start``, whose
        ``divisors`` these are) and their (matrix cell, n) rows → the histograms, by scatter or
        bincounts: no sort, unlike ``_stack``."""
        count = classes.num_rows
        cid = numpy_of(classes.column("cid")).astype(np.int64) - first
        node = np.empty(count, dtype=np.int64)
        node[cid] = numpy_of(classes.column("node")) - start
        words = [np.empty(count, dtype=np.int64) for _ in range(self.packing.words)]
        words[0][cid] = numpy_of(classes.column("cls")) * self.packing.sa_span  # word 0 as stored, sensitive part 0
        for w in range(1, self.packing.words):
            words[w][cid] = numpy_of(classes.column(key_column(w)))
        width = self.packing.sa_width
        if by_cells:  # its rows sorted by cell (``_kept_as_cells``)
            matrix = _as_cells(rows, (count, width))
            sizes, matrices = np.rint(matrix.row_sums()).astype(np.int64), [matrix]
        elif len(self.packing.sa_card) == 1:  # the cells are the classes × domain matrix's
            matrix = _scattered(rows, count * width).reshape(count, width)
            sizes, matrices = np.rint(record_totals(matrix)).astype(np.int64), [matrix]
        else:
            cell, n = numpy_of(rows.column("cell")), numpy_of(rows.column("n"))
            sa = [self.packing.unpack_sa(cell, j) for j in range(len(self.packing.sa_card))]
            sizes, matrices = tally(cell // width, count, n, sa, self.packing.sa_card, self._read_by_cells)
        qis = len(self.problem.qis)
        codes = (lambda: self._codes(words, divisors[node])) if qis \
            else np.zeros((count, 0), dtype=np.int64)  # read only by a metric's suppression cost
        return ClassHistograms(codes, sizes, matrices, node)

    @property
    def _read_by_cells(self) -> frozenset[int]:
        """The sensitive columns the levels are judged by their cells alone (the ordered t on a large
        domain, ``criteria.by_cells``): they come back as cells, never as classes × values rows."""
        return by_cells(self.judged_by) if self.judged_by else frozenset()

    def _fetch(self, kind: str, params: Sequence[int] | None = None) -> pa.Table:
        """A read of kept results (not counted in ``queries``: those computed histograms)."""
        return self.problem.engine.fetch(self._rendered(kind), params)

    # ---- results --------------------------------------------------------------------------
    def _keep(self, result: pa.Table, ids: dict[Item, int]) -> None:
        """The new level (already registered as the level table) becomes the parents of the next."""
        self._prev = self._name("level")
        counts = np.bincount(numpy_of(result.column("node")), minlength=len(ids))
        self._ids = ids
        self._rows = {item: int(counts[i]) for item, i in ids.items()}

    def _codes(self, words: list[np.ndarray], divisors: np.ndarray) -> np.ndarray:
        """Classes' codes (classes × QIs) from their key words, ``divisors`` per class and QI."""
        return np.column_stack([self.packing.unpack_qi(words, i, divisors[:, i]) for i in range(len(self.problem.qis))])

    def _stack(self, result: pa.Table, divisors: np.ndarray) -> ClassHistograms:
        """Rows (node, packed key words, n) → the classes of all nodes, numbered node by node, with
        their codes at their node's levels (``divisors`` per node; a metric's suppression cost reads
        them)."""
        span = self.packing.sa_span
        node = numpy_of(result.column("node"))
        keys = numpy_of(result.column("key"))
        counts = numpy_of(result.column("n"))
        cls = keys // span
        higher = [numpy_of(result.column(key_column(w))) for w in range(1, self.packing.words)]
        class_span = int(cls.max()) + 1 if len(cls) else 1
        if not higher and class_span * (int(node.max()) + 1 if len(node) else 1) < 2**62:
            order = np.argsort(node * class_span + cls)  # one int64 sort: ~2× a two-key lexsort
        else:
            order = np.lexsort((*reversed(higher), cls, node))
        node, cls, keys, counts = node[order], cls[order], keys[order], counts[order]
        higher = [word[order] for word in higher]
        starts = np.empty(len(node), dtype=bool)
        starts[:1] = True
        starts[1:] = (node[1:] != node[:-1]) | (cls[1:] != cls[:-1])
        for word in higher:
            starts[1:] |= word[1:] != word[:-1]
        inverse = np.cumsum(starts) - 1
        first = np.flatnonzero(starts)
        sa = [self.packing.unpack_sa(keys % span, j) for j in range(len(self.packing.sa_card))]
        sizes, matrices = tally(inverse, len(first), counts, sa, self.packing.sa_card, self._read_by_cells)
        words = [keys[first], *(word[first] for word in higher)]
        codes = self._codes(words, divisors[node[first]]) if self.problem.qis \
            else np.zeros((len(first), 0), dtype=np.int64)
        return ClassHistograms(codes, sizes, matrices, node[first])

    def release_cache(self) -> None:
        if self._prev is not None:
            self.problem.engine.unregister(self._prev)
        self._prev, self._ids, self._rows = None, {}, {}

    def start(self) -> None:
        """A new lattice walk: forget the previous level and the floors."""
        self.release_cache()
        if self._floors_made:
            self.problem.engine.unregister(self._name("floors"))
        self._floors, self._floors_made, self._refined_rows = {}, 0, 0

    def close(self) -> None:
        self.release_cache()
        self.keyed.drop()  # a second runner sharing it may still read it: it is made again then
        for name in self._names.values():
            self.problem.engine.unregister(name)  # idempotent: the level table may be gone already
        self._names.clear()
        self._samples.clear()  # the screen's kept samples: their tables were among the names
        self.problem.engine.reset_memory()  # the parts are gone: the release runs at the engine's share


def _scattered(rows: pa.Table, cells: int) -> np.ndarray:
    """The (cell, n) rows written into ``cells`` zeros, batch by batch. The engine grouped them by
    class and value, so a cell comes once and writing it is summing it; no batch is concatenated.
    Measured on 6 M cells of a 0.7 M × 14 matrix in 41 batches: 0.03–0.09 s against 0.23–0.42 s
    for a bincount over the concatenated columns (docs/performance.md, fifteenth round)."""
    out = np.zeros(cells)
    for batch in rows.to_batches():
        out[numpy_of(batch.column("cell"))] = numpy_of(batch.column("n"))
    return out


def part_bytes(budget: int | None) -> int:
    """What one part of a kept level may cost in Python: the search's share of the user's memory
    limit (the engine's ``memory_budget``), if one was set (as the in-memory path), else ``RETURNED_BYTES``."""
    return RETURNED_BYTES if budget is None else min(RETURNED_BYTES, search_share(budget))


def dense_bytes_allowed(budget: int | None) -> int:
    """The largest classes × values matrix a part (or the released node's classes) holds dense, in
    bytes: past it, its nonzero cells (``SparseCounts``), judged one run of classes at a time."""
    return part_bytes(budget) // MATRIX_COPIES


def _as_cells(rows: pa.Table, shape: tuple[int, int]) -> SparseCounts:
    """The (cell, n) rows as a matrix kept by its nonzero cells (``SparseCounts``): what a node whose
    dense classes × values matrix exceeds the part's budget alone comes back as (20,000 values × a few
    thousand classes peaked at 1.3–1.7 GiB under a 600MB limit, docs/performance.md)."""
    cells = np.concatenate([numpy_of(b.column("cell")) for b in rows.to_batches()] or [np.zeros(0, np.int64)])
    n = np.concatenate([numpy_of(b.column("n")) for b in rows.to_batches()] or [np.zeros(0)])
    return SparseCounts.from_sorted_cells(cells.astype(np.int64, copy=False), n, shape)  # the engine sorted them


def _parts(cost: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Ranges of consecutive nodes whose ``cost`` sums to at most ``budget`` (a node costing more
    alone); one range for all when everything fits."""
    cuts, total = [0], 0
    for n, r in enumerate(cost.tolist()):
        if total and total + r > budget:
            cuts.append(n)
            total = 0
        total += r
    return list(zip(cuts, [*cuts[1:], len(cost)])) if len(cost) else [(0, 0)]
