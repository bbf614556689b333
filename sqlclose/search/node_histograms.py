"""Computes class histograms of lattice nodes, a whole lattice level per query.

Incognito visits a lattice bottom-up by height, and every node it must check at height h has
its finer neighbours at height h-1 already computed. So the runner keeps the previous level's
results (node, packed key, count) registered with the engine and computes every node of the
next level in one query, each rolled up from its smallest computed parent (Incognito's rollup:
a coarser node's classes are unions of a finer node's). Nodes with no computed parent are
grouped from the base histogram, also in one query. One query per level instead of one per
node: the engine's fixed cost per query (parse, plan, bind; ~1 ms) was the search's bottleneck.

``MemoryRunner`` does the same rollups in numpy when the base histogram is small (fetched once:
aggregated counts, never input rows), where a level query's fixed cost dwarfs its work.
``NodeRunner`` is the one-node-at-a-time path with one column per code: it serves single nodes
(the release) and problems whose single QI digit does not fit in 62 bits (see ``packing``: wider
problems spread their digits over several BIGINT key words and keep the level batches).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from sqlclose.engine.limits import search_share
from sqlclose.model.arrays import arrow_table, numpy_of
from sqlclose.model.classes import ClassHistograms, class_histograms, record_totals, tally
from sqlclose.model.factorize import factorize as _factorize
from sqlclose.model.factorize import sorted_unique
from sqlclose.model.lattice import Node, predecessors
from sqlclose.prepare.problem import Problem
from sqlclose.privacy.criteria import Criterion, judging_bytes
from sqlclose.search.packing import KEY_LIMIT, Packing, key_column
from sqlclose.sql import queries as q

if TYPE_CHECKING:
    from sqlglot import exp

Subset = tuple[int, ...]


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
# Floors chosen by estimated rows (BatchRunner._estimated_floors): a candidate must cover this many
# nodes; at most this many candidates are estimated in one pass; an estimate is padded by this
# factor (DuckDB's HyperLogLog: up to ~5 % off, measured).
FLOOR_GROUP_MIN = 4
FLOOR_CANDIDATES = 32
# A floor whose code space is at most the base's rows / this is made without an estimate (``_small_meet``,
# ``_bounded_floors``): its space bounds its rows well below a pass over the base.
SMALL_FLOOR_SHARE = 8
# Floors bounded by their code space (BatchRunner._bounded_floors) are sought among the meets of pairs
# of a subset's uncovered nodes when there are at most this many of them (~5 k pairs).
BOUNDED_PAIRS_MAX = 100
BOUNDED_CANDIDATES = 256  # of them, those covering the most nodes (then the smallest) enter the greedy choice
ESTIMATE_MARGIN = 1.1
# A floor is refined (BatchRunner._refine_floors) when it holds at least the base's rows / this; the
# floors refined in one walk hold at most this many times the base's rows together (a bound on what
# they keep engine-side; measured: 3.5× on the generated 1 M-row table, 5 %, for the optimum alone).
REFINE_SHARE = 32
REFINE_ROOM = 8
# A floor is chosen by the time it saves, not the rows: a GROUP BY costs per row read, in units of a
# row read into few groups (~3.5 ns here), 1 + READ_COST_SLOPE·log2(1 + groups / CACHED_GROUPS) as its
# hash table outgrows the CPU's caches (``_read_cost``), and per group written GROUP_WRITE units.
# Fitted on the generated 10 M-row table's packed keys (benchmarks/bench_group_cost.py): a row read
# into few groups ~3.5 ns, into 0.47 M 11 ns, into 1.6–3.9 M ~20 ns; a group written 65–100 ns.
# Counted in rows, a floor of 6.6 M rows (0.77 s to build) was chosen to save its four nodes 3.4 M
# rows each (~0.05 s each). docs/performance.md, twenty-eighth round.
GROUP_WRITE = 22.0
CACHED_GROUPS = 65_536
READ_COST_SLOPE = 0.66
# A level no walk rolls up from (the walk from above's) is staged and judged in chunks of consecutive
# nodes whose histograms can hold at most this many rows together (~1.5 GB engine-side), each dropped
# once judged: the engine keeps the base, the floors and one chunk, not a whole level (at 100 M rows
# the walk from above's levels spilled past the 77 GB of free disk). A chunk costs ~20 ms of fixed
# statements (measured at 1 M rows, where every level fits in one). docs/performance.md, sixteenth round.
CHUNK_ROWS = 64_000_000


Item = tuple[Subset, Node]  # a node of one QI subset's lattice


@dataclass
class LevelPart:
    """The class histograms of the items ``start`` … ``stop`` − 1 of a level (``hist.node``
    counts from ``start``)."""

    start: int
    stop: int
    hist: ClassHistograms


def level_parts(runner: MemoryRunner | BatchRunner | NodeRunner, items: Sequence[Item]) -> Iterator[LevelPart]:
    """A level's class histograms in parts of whole nodes: the SQL level batches may bring a large
    kept level back in several; the other runners compute a level whole."""
    if isinstance(runner, BatchRunner):
        return runner.level_parts(items)
    return iter([LevelPart(0, len(items), runner.level(items))])


@dataclass
class KeyedBase:
    """The base histogram as the SQL search reads it (``q.keyed_base``: padded key words and a
    DOUBLE count per row), made on first read and shared by a problem's runners: every node
    grouped from the base is then its keys under one AND per word (``Packing.masks``)."""

    problem: Problem
    packing: Packing
    _table: exp.Table | None = None

    def table(self) -> exp.Table:
        if self._table is None:
            p, pk = self.problem, self.packing
            query = q.keyed_base(p.base, [qi.coded.code for qi in p.qis], pk.padded, pk.qi_stride, pk.qi_word,
                                 [sa.coded.code for sa in p.sas], pk.sa_stride)
            self._table = p.engine.create_temp_table(p.engine.temp_name("keyed"), query)
        return self._table

    def drop(self) -> None:
        if self._table is not None:
            self.problem.engine.unregister(self._table.name)
            self._table = None


@dataclass
class BatchRunner:
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
        return [(chunk, columns, kind) for plan, columns, kind in kinds for chunk in _chunks(plan, ROWS_PER_QUERY)]

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
            return q.base_batch(self.keyed.table(), plan, pk.words)
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
        return q.class_rows(level, q.table(self._name("large")), pk.words, pk.sa_span, pk.sa_width)

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
        or base it is grouped from), each staged, judged and dropped before the next. The floors are
        chosen once for the whole level, as if it were staged whole."""
        self._floors_for_level(parentless)
        bound = np.array([self._rows_bound(subset, node) for subset, node in items], dtype=np.float64)
        for start, stop in _parts(bound, CHUNK_ROWS):
            chunk = items[start:stop]
            ids = {item: n for n, item in enumerate(chunk)}
            self._build_kept([], [(n, item) for n, item in enumerate(chunk)], make_floors=False)
            for part in self._judged_parts(ids):
                yield LevelPart(start + part.start, start + part.stop, part.hist)
            self.release_cache()

    def _floors_for_level(self, parentless: list[tuple[int, Item]]) -> None:
        """Floors from the base for the level's items without one, then floors of large floors."""
        self._make_floors(parentless)
        self._refine_floors(parentless)

    def _rows_bound(self, subset: Subset, node: Node) -> float:
        """The most rows an item without a parent can have: its code space, at most the rows of
        the floor (or base) it is grouped from."""
        floor = self._floor_for(subset, node)
        return min(self._space(subset, node), float(self.problem.base_rows if floor is None else floor[2]))

    def _judged_parts(self, ids: dict[Item, int]) -> Iterator[LevelPart]:
        """What of a kept level comes back: per node the records in classes below k and, for the
        nodes those alone do not put past ``read_within`` (the suppression limit, or less), the rows
        of their classes of at least k — at fine levels a small part of the level — in parts of
        whole nodes that cost at most ``_part_bytes`` in Python (a node costing more alone), so
        that Python holds one part at a time whatever the level's size."""
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
        self._ids, self._rows = ids, {item: int(per_node["pairs"][i]) for item, i in ids.items()}
        self.nodes_computed += nodes
        running = dropped <= (self.problem.max_suppressed if self.read_within is None else self.read_within())
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
                hist = self._numbered(self._fetch("classes", (first, last)), self._fetch("rows", (first, last)),
                                      first, start, divisors[start:stop])
            else:
                hist = self._no_classes()
            hist.presuppressed, hist.unread = dropped[start:stop], ~running[start:stop]
            # The part is held now, and judging it allocates a little more: DuckDB's limit makes room
            # for that before, not after (docs/performance.md, seventeenth and eighteenth rounds).
            engine.fit_memory(upcoming=judging_bytes(hist.classes, self.judged_by, self.codes_read))
            yield LevelPart(start, stop, hist)

    def _no_classes(self) -> ClassHistograms:
        return _empty(len(self.problem.qis), [len(s.domain) for s in self.problem.sas])

    def _part_bytes(self) -> int:
        """What one part of a kept level may cost in Python: the search's share of the user's memory
        limit, if one was set (as the in-memory path), else ``RETURNED_BYTES``."""
        budget = self.problem.engine.memory_budget
        return RETURNED_BYTES if budget is None else min(RETURNED_BYTES, search_share(budget))

    def _base_nodes(self, plan_rows: list[tuple]):
        return q.masked_nodes(self.keyed.table(), plan_rows)

    def _floor_for(self, subset: Subset, node: Node) -> tuple[int, Node, int] | None:
        """The smallest kept floor of the subset at or below ``node``."""
        below = [f for f in self._floors.get(subset, ()) if all(a <= b for a, b in zip(f[1], node))]
        return min(below, key=lambda f: f[2]) if below else None

    def _make_floors(self, parentless: list[tuple[int, Item]]) -> None:
        """Floors for the parentless items of this level that have none below them yet, grouped
        from the base histogram in one query. Per subset, a floor at their least levels (their
        meet) if its code space (times the sensitive span) is at most an eighth of the base's rows
        — a floor near the base's size would cost a scan of the base and save little (measured on
        a generated 1 M-row table: floors at the least levels of a whole subset walk had ~0.5 M
        rows and made the search slower). Where that bound cannot tell, floors at the meets of
        pairs of them that it does bound (``_bounded_floors``); for the rest, as on tables with
        wide QIs (a code space far above the rows the table has), floors chosen by their rows
        estimated in one pass (``_estimated_floors``)."""
        uncovered: dict[Subset, list[Node]] = {}
        for _, (subset, node) in parentless:
            if self._floor_for(subset, node) is None:
                uncovered.setdefault(subset, []).append(node)
        new, unsure = [], {}
        room = float(self.problem.base_rows)  # what the level's chosen floors may hold together, by their bounds
        for subset, nodes in sorted(uncovered.items()):
            meet = self._small_meet(subset, nodes)
            if meet is not None:
                new.append((subset, meet))
                continue
            bounded, rest = self._bounded_floors(subset, nodes, max(room, 0.0))
            new += bounded
            room -= sum(self._space(*floor) for floor in bounded)
            if len(rest) >= FLOOR_GROUP_MIN:
                unsure[subset] = rest
        new += self._estimated_floors(unsure, max(room, 0.0))
        if new:
            first = self._floors_made
            self._add_floors(self._base_nodes([self._base_row(first + n, subset, meet)
                                               for n, (subset, meet) in enumerate(new)]), new)
            self.rows_read += self.problem.base_rows

    def _add_floors(self, query: exp.Expression, new: list[tuple[Subset, Node]]) -> int:
        """Keep the floors ``query`` computes (ids from ``_floors_made``, in ``new``'s order) and
        their rows; return how many rows they hold."""
        first = self._floors_made
        self.problem.engine.keep(self._name("floors"), query, append=first > 0)
        self.queries += 1
        counts = self._fetch("floor_rows", (first,))
        rows = dict(zip(counts.column("node").to_pylist(), counts.column("rows").to_pylist()))
        for n, (subset, meet) in enumerate(new):
            self._floors.setdefault(subset, []).append((first + n, meet, int(rows.get(first + n, 0))))
        self._floors_made += len(new)
        return int(sum(rows.values()))

    def _refine_floors(self, parentless: list[tuple[int, Item]]) -> None:
        """Floors of floors: where this level's items would read a large floor (``REFINE_SHARE``),
        floors at the meets of groups of them, grouped from that floor, if their rows estimated in
        one pass over it say they save more time than they cost (as ``_estimated_floors``, with the
        source floor's rows in place of the base's), within ``REFINE_ROOM``. A walk from above has
        no finer nodes to roll up from: at 10 M rows its nodes read floors of 1–8 M rows to return
        ~0.1 M each (docs/performance.md, tenth round)."""
        groups: dict[tuple[Subset, int], tuple[tuple[int, Node, int], list[Node]]] = {}
        for _, (subset, node) in parentless:
            floor = self._floor_for(subset, node)
            if floor is not None and floor[2] * REFINE_SHARE >= self.problem.base_rows:
                groups.setdefault((subset, floor[0]), (floor, []))[1].append(node)
        candidates: dict[tuple[Subset, Node], tuple[tuple[int, Node, int], list[Node]]] = {}
        for (subset, _), (floor, nodes) in sorted(groups.items()):
            for meet, covered in _meet_groups(nodes):
                if meet != floor[1]:
                    candidates.setdefault((subset, meet), (floor, covered))
        if not candidates:
            return
        ranked = sorted(candidates.items(), key=lambda c: -len(c[1][1]))[:FLOOR_CANDIDATES]
        plan = [self._floor_row(n, floor, subset, meet) for n, ((subset, meet), (floor, _)) in enumerate(ranked)]
        sources = sorted({floor for _, (floor, _) in ranked})
        estimate = self._fetch_floor_estimates(plan, sources)
        cost = {(subset, node): float(floor[2]) for (subset, _), (floor, nodes) in ranked for node in nodes}
        chosen = _greedy_floors([(key, nodes, float(floor[2])) for key, (floor, nodes) in ranked], estimate, cost,
                                room=float(REFINE_ROOM * self.problem.base_rows - self._refined_rows),
                                spaces=self._spaces(cost))
        if chosen:
            picked = [ranked[c] for c in chosen]
            first = self._floors_made
            plan = [self._floor_row(first + n, floor, subset, meet)
                    for n, ((subset, meet), (floor, _)) in enumerate(picked)]
            self._refined_rows += self._add_floors(
                q.masked_nodes(q.table(self._name("floors")), plan, floors=True),
                [key for key, _ in picked])
            self.rows_read += sum(floor[2] for _, (floor, _) in picked)  # each branch reads its source floor

    def _fetch_floor_estimates(self, plan_rows: list[tuple], floors: list[tuple[int, Node, int]]) -> list[float]:
        """The estimated rows of floor-derived nodes (plan rows as ``_floor_row``'s), padded by the
        estimate's error, in one pass over their source floors."""
        query = q.estimated_rows(q.table(self._name("floors")), plan_rows, floors=True)
        return self._estimates(query, len(plan_rows), sum(f[2] for f in floors))

    def _small_meet(self, subset: Subset, nodes: list[Node]) -> Node | None:
        """The meet of ``nodes`` if its code space is at most an eighth of the base's rows: a floor
        there serves them and, in a walk from below, every node above them at later levels."""
        meet = tuple(int(x) for x in np.min(np.array(nodes), axis=0))
        return meet if self._space(subset, meet) * SMALL_FLOOR_SHARE <= self.problem.base_rows else None

    def _bounded_floors(self, subset: Subset, nodes: list[Node],
                        room: float) -> tuple[list[tuple[Subset, Node]], list[Node]]:
        """Floors whose code space alone says they are small (at most the base's rows /
        ``SMALL_FLOOR_SHARE``, as the meet of all), each at the meet of two or more of ``nodes``,
        chosen greedily by the time they save with their code space for their rows (``_floor_gain``:
        an upper bound, so no estimating pass is needed), their spaces together within ``room``;
        and the nodes none covers. Near the top of a lattice, where nodes leave one QI or two below
        their top each, the meet of them all is far larger than floors of a few of them: at 10 M
        rows, 25 such nodes read the base (1.4 s). Candidates: the meets of pairs of nodes (of at
        most ``BOUNDED_PAIRS_MAX`` nodes; more take the group meets alone) and of groups
        (``_meet_groups``), the ``BOUNDED_CANDIDATES`` covering most kept."""
        base = float(self.problem.base_rows)
        grid = np.array(nodes)
        pairs = itertools.combinations(range(len(nodes)), 2) if len(nodes) <= BOUNDED_PAIRS_MAX else ()
        meets = {tuple(int(x) for x in np.minimum(grid[a], grid[b])) for a, b in pairs}
        meets.update(meet for meet, _ in _meet_groups(nodes))
        ranked = []
        for meet in sorted(meets):
            space = self._space(subset, meet)
            covered = grid[(grid >= np.array(meet)).all(axis=1)]
            if space * SMALL_FLOOR_SHARE <= base and len(covered) >= 2:
                ranked.append(((subset, meet), [tuple(int(x) for x in g) for g in covered], base, space))
        if not ranked:
            return [], nodes
        ranked = sorted(ranked, key=lambda r: (-len(r[1]), r[3]))[:BOUNDED_CANDIDATES]
        cost = {(subset, node): base for node in nodes}
        chosen = _greedy_floors([r[:3] for r in ranked], [r[3] for r in ranked], cost, room=room,
                                spaces=self._spaces(cost))
        covered = {node for c in chosen for node in ranked[c][1]}
        return [ranked[c][0] for c in chosen], [node for node in nodes if node not in covered]

    def _estimated_floors(self, unsure: dict[Subset, list[Node]], room: float) -> list[tuple[Subset, Node]]:
        """Floors worth their pass over the base, among candidates per subset: the meet of its
        nodes, and the meets of its nodes at or above each level of each QI. Their rows are
        estimated in one pass (HyperLogLog); then, greedily, the candidate that saves the most time
        — its nodes reading it instead of the base, less building it (``_floor_gain``) — until none
        saves any. Their rows together stay within ``room`` (the base's rows, less what the level's
        other floors may hold)."""
        candidates: dict[tuple[Subset, Node], list[Node]] = {}
        for subset, nodes in unsure.items():
            for meet, covered in _meet_groups(nodes):
                candidates.setdefault((subset, meet), covered)
        if not candidates:
            return []
        ranked = sorted(candidates.items(), key=lambda c: -len(c[1]))[:FLOOR_CANDIDATES]
        estimate = self._fetch_estimates([self._base_row(n, subset, meet)
                                          for n, ((subset, meet), _) in enumerate(ranked)])
        base = float(self.problem.base_rows)
        cost = {(subset, node): base for (subset, _), nodes in ranked for node in nodes}
        chosen = _greedy_floors([(key, nodes, base) for key, nodes in ranked], estimate, cost, room=room,
                                spaces=self._spaces(cost))
        return [ranked[c][0] for c in chosen]

    def _fetch_estimates(self, plan_rows: list[tuple]) -> list[float]:
        """The estimated rows of nodes grouped from the base (``q.estimated_rows``), padded by its
        error, in one pass over the keyed base."""
        return self._estimates(q.estimated_rows(self.keyed.table(), plan_rows), len(plan_rows),
                               self.problem.base_rows)

    def _estimates(self, query: exp.Expression, count: int, read: int) -> list[float]:
        """The ``count`` estimates (columns ``e<i>``) of an estimating query that reads ``read`` rows."""
        row = self.problem.engine.fetch(query).to_pylist()[0]
        self.queries += 1
        self.rows_read += read
        return [float(row[f"e{n}"]) * ESTIMATE_MARGIN for n in range(count)]

    def _spaces(self, items: Iterable[Item]) -> dict[Item, float]:
        """``_space`` of each item: what a floor's greedy choice bounds a node's groups by."""
        return {(subset, node): self._space(subset, node) for subset, node in items}

    def _space(self, subset: Subset, levels: Node) -> float:
        """Codes a node of the subset at ``levels`` can take, times the sensitive span: a bound
        on its rows."""
        space = float(self.packing.sa_width)
        for i, level in zip(subset, levels):
            hierarchy = self.problem.qis[i].hierarchy
            space *= (hierarchy.code_range - 1) // hierarchy.divisors[level] + 1
        return space

    def _floor_row(self, n: int, floor: tuple[int, Node, int], subset: Subset, node: Node) -> tuple[int, ...]:
        """A node grouped from a kept floor below it: its id, the floor's, its masks (a floor's keys
        are already under the floor's masks, finer than the node's)."""
        return (n, floor[0], *self._masks(subset, node))

    def _numbered(self, classes: pa.Table, rows: pa.Table, first: int, start: int,
                  divisors: np.ndarray) -> ClassHistograms:
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
        if len(self.packing.sa_card) == 1:  # the cells are the classes × domain matrix's
            matrix = _scattered(rows, count * width).reshape(count, width)
            sizes, matrices = np.rint(record_totals(matrix)).astype(np.int64), [matrix]
        else:
            cell, n = numpy_of(rows.column("cell")), numpy_of(rows.column("n"))
            sa = [self.packing.unpack_sa(cell, j) for j in range(len(self.packing.sa_card))]
            sizes, matrices = tally(cell // width, count, n, sa, self.packing.sa_card)
        qis = len(self.problem.qis)
        codes = (lambda: self._codes(words, divisors[node])) if qis \
            else np.zeros((count, 0), dtype=np.int64)  # read only by a metric's suppression cost
        return ClassHistograms(codes, sizes, matrices, node)

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
        sizes, matrices = tally(inverse, len(first), counts, sa, self.packing.sa_card)
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
        self.problem.engine.reset_memory()  # the parts are gone: the release runs at the engine's share


def _meet_groups(nodes: Sequence[Node]) -> list[tuple[Node, list[Node]]]:
    """Candidate floors for ``nodes`` (of one subset): the meet of them all, and per QI and level
    the meet of those at or above it; each with the nodes it covers (at least ``FLOOR_GROUP_MIN``)."""
    grid = np.array(nodes)
    groups = [grid] + [grid[grid[:, a] >= v] for a in range(grid.shape[1]) for v in range(1, int(grid[:, a].max()) + 1)]
    return [(tuple(int(x) for x in group.min(axis=0)), [tuple(int(x) for x in g) for g in group])
            for group in groups if len(group) >= FLOOR_GROUP_MIN]


def _scattered(rows: pa.Table, cells: int) -> np.ndarray:
    """The (cell, n) rows written into ``cells`` zeros, batch by batch. The engine grouped them by
    class and value, so a cell comes once and writing it is summing it; no batch is concatenated.
    Measured on 6 M cells of a 0.7 M × 14 matrix in 41 batches: 0.03–0.09 s against 0.23–0.42 s
    for a bincount over the concatenated columns (docs/performance.md, fifteenth round)."""
    out = np.zeros(cells)
    for batch in rows.to_batches():
        out[numpy_of(batch.column("cell"))] = numpy_of(batch.column("n"))
    return out


def _greedy_floors(ranked: Sequence[tuple[tuple[Subset, Node], list[Node], float]], estimate: Sequence[float],
                   cost: dict[tuple[Subset, Node], float], room: float,
                   spaces: Mapping[tuple[Subset, Node], float]) -> list[int]:
    """Of candidates ((subset, meet), nodes covered, rows read to build it), the indices chosen
    greedily: each time the one that saves the most time (``_floor_gain``; ``cost``: the rows each
    node reads now, lowered as floors are chosen; ``spaces``: each node's code space) until none
    saves any; their estimated rows together stay within ``room``."""
    chosen: list[int] = []
    held = 0.0
    while True:
        gains = [(_floor_gain(key[0], nodes, source, estimate[n], cost, spaces), n)
                 for n, (key, nodes, source) in enumerate(ranked) if held + estimate[n] <= room]
        gain, best = max(gains, default=(0.0, -1))
        if gain <= 0:
            return chosen
        (subset, _), nodes, _ = ranked[best]
        chosen.append(best)
        held += estimate[best]
        for node in nodes:
            cost[subset, node] = min(cost[subset, node], estimate[best])


def _floor_gain(subset: Subset, nodes: list[Node], source: float, rows: float,
                cost: Mapping[tuple[Subset, Node], float], spaces: Mapping[tuple[Subset, Node], float]) -> float:
    """The time a floor of ``rows`` rows, grouped from ``source`` rows, saves its ``nodes`` (each
    reading fewer rows into its groups: at most its code space and the floor's rows), less its build."""
    saved = sum(max(cost[subset, node] - rows, 0.0) * _read_cost(min(spaces[subset, node], rows)) for node in nodes)
    return saved - (source * _read_cost(rows) + rows * GROUP_WRITE)


def _read_cost(groups: float) -> float:
    """What a row read costs a GROUP BY into ``groups`` groups, in reads into few (see ``GROUP_WRITE``)."""
    return 1.0 + READ_COST_SLOPE * math.log2(1.0 + groups / CACHED_GROUPS)


def _empty(qis: int, domain_sizes: Sequence[int]) -> ClassHistograms:
    return ClassHistograms(np.zeros((0, qis), dtype=np.int64), np.zeros(0, dtype=np.int64),
                           [np.zeros((0, m)) for m in domain_sizes], np.zeros(0, dtype=np.int64))


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


def _chunks(plan: list[tuple[int, tuple]], budget: int) -> list[list[tuple]]:
    """Split (estimated input rows, plan row) pairs into batches of at most ``budget`` rows."""
    out: list[list[tuple]] = []
    current: list[tuple] = []
    used = 0
    for rows, row in plan:
        if current and used + rows > budget:
            out.append(current)
            current, used = [], 0
        current.append(row)
        used += rows
    if current:
        out.append(current)
    return out


@dataclass
class NodeRunner:
    """One query per node, one column per code: for single nodes and unpackable key spaces."""

    problem: Problem
    queries: int = 0
    nodes_computed: int = 0
    rows_read: int = 0
    _cache: dict[Item, tuple[str, int]] = field(default_factory=dict)

    def start(self) -> None:
        self.release_cache()

    def level(self, items: Sequence[Item]) -> ClassHistograms:
        parts = [self.histograms(subset, node) for subset, node in items]
        # Parents of the next level are this level's nodes; older results are no longer needed.
        current = set(items)
        for item in [i for i in self._cache if i not in current]:
            self.problem.engine.unregister(self._cache.pop(item)[0])
        if not parts:
            return _empty(0, [len(s.domain) for s in self.problem.sas])
        widths = {p.codes.shape[1] for p in parts}  # one subset size per level: the codes stack
        codes = np.concatenate([p.codes for p in parts]) if len(widths) == 1 else \
            np.zeros((sum(p.classes for p in parts), 0), dtype=np.int64)
        return ClassHistograms(
            codes, np.concatenate([p.sizes for p in parts]),
            [np.concatenate([p.counts[j] for p in parts]) for j in range(len(self.problem.sas))],
            np.concatenate([np.full(p.classes, n, dtype=np.int64) for n, p in enumerate(parts)]))

    def planned_rows(self, items: Sequence[Item]) -> int:
        """What a batch of ``items`` would read (as ``BatchRunner.planned_rows``): each a computed
        parent's rows, or the base's."""
        return sum(self._source(subset, node)[0] for subset, node in items)

    def _source(self, subset: Subset, node: Node) -> tuple[int, Node | None]:
        """The rows a node reads and the cached parent it reads them from: the smallest, or the base (None)."""
        parents = [(self._cache[subset, p][1], p) for p in predecessors(node) if (subset, p) in self._cache]
        return min(parents) if parents else (self.problem.base_rows, None)

    def histograms(self, subset: Subset, node: Node, keep: bool = True) -> ClassHistograms:
        """Class histograms of one node; ``keys`` holds the codes of the subset's QIs."""
        read, parent = self._source(subset, node)
        if parent is not None:
            source, from_levels = q.table(self._cache[subset, parent][0]), parent
        else:
            source, from_levels = self.problem.base.copy(), tuple(0 for _ in node)
        self.rows_read += read
        groups = []
        for i, level, from_level in zip(subset, node, from_levels):
            qi = self.problem.qis[i]
            divisors = qi.hierarchy.divisors
            top = level == qi.levels - 1
            groups.append((qi.coded.code, None if top else divisors[level] // divisors[from_level]))
        sas = self.problem.sas
        result = self.problem.engine.fetch(q.node_histogram(source, groups, [s.coded.code for s in sas]))
        self.queries += 1
        self.nodes_computed += 1
        if keep:
            name = self.problem.engine.temp_name("node")
            self.problem.engine.register(name, result)
            self._cache[subset, node] = (name, result.num_rows)
        qi_codes = [self.problem.qis[i].coded.code for i in subset]
        return class_histograms(result, qi_codes, [s.coded.code for s in sas], [len(s.domain) for s in sas])

    def release_cache(self) -> None:
        for name, _ in self._cache.values():
            self.problem.engine.unregister(name)
        self._cache.clear()

    close = release_cache


def runner_for(problem: Problem) -> MemoryRunner | BatchRunner | NodeRunner:
    """Rollups in numpy over the base histogram when it is small (``MEMORY_BASE_ROWS``,
    ``MEMORY_CELLS``; ``SUPPRESSING_SCALE`` times more under suppression) and its class keys fit
    one word; else level batches in SQL (keys in one or more BIGINT words); one query per node only when a
    single QI's codes exceed 62 bits."""
    strides = class_strides(problem)
    scale = SUPPRESSING_SCALE if problem.max_suppressed else 1.0
    if strides is not None and len(problem.sas) <= 1 and problem.base_rows <= MEMORY_BASE_ROWS * scale and \
            problem.base_rows * _sa_span(problem) <= MEMORY_CELLS * scale and _fits_budget(problem):
        return MemoryRunner(problem, strides)
    packing = Packing.for_problem(problem)
    return BatchRunner(problem, packing) if packing is not None else NodeRunner(problem)


# ---- in memory ------------------------------------------------------------------------------
# When the base histogram is small (Adult: 18 k rows), a lattice level costs DuckDB 10–30 ms of
# fixed cost per query while the rollup itself is a few hundred thousand additions. The base
# histogram (aggregated counts, fetched once by SQL) then becomes classes (a packed class key
# each) and (class, sensitive value, count) pairs, and every node is rolled up from its parent
# in numpy, a whole level at once: the parent's classes are regrouped by hashing
# (pandas.factorize, O(classes), no sort) and its pairs scattered into the new classes ×
# sensitive-domain matrix by one bincount — the matrix the privacy checks read anyway. A level's
# pairs are extracted from its matrix only for the nodes the next level rolls up from, and its
# classes' codes are unpacked only if read (a metric's suppression cost). A node with no computed
# parent is generalized from the base's classes (or its subset's kept bottom); several such nodes
# of one subset in a level share their meet, computed once. The input rows are still read only by SQL.
# Limits of the in-memory path: at most one sensitive attribute, base histogram rows, and base
# rows × sensitive values (the cells of its classes × domain matrix). Past them, SQL level
# batches (bounded by the engine's memory limit) do the work.
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


def second_runner(runner: MemoryRunner | BatchRunner | NodeRunner) -> MemoryRunner | BatchRunner | NodeRunner:
    """A runner of the same kind for a second walk over the same problem: its own previous level
    and engine tables, the in-memory base histogram shared."""
    if isinstance(runner, MemoryRunner):
        return runner.sibling()
    if isinstance(runner, BatchRunner):
        return BatchRunner(runner.problem, runner.packing, runner.keyed, drop_below=runner.drop_below)
    return NodeRunner(runner.problem)


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
            return _empty(0, self.domains)
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
        """The classes × domain count matrix per sensitive attribute (at most one: with several,
        the joint matrix would be the product of their domains wide, so they take the SQL path)."""
        return [joint] if self.domains else []

    def _load_base(self) -> None:
        """Base histogram → classes and pairs (one query; aggregated counts only)."""
        p = self.problem
        names = [qi.coded.code for qi in p.qis] + [s.coded.code for s in p.sas] + ["n"]
        table = p.engine.fetch(q.project(p.base, names))
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
