"""The screen: nodes of the walk from above ruled out by a sample of their classes, before their
histograms are grouped (``BatchRunner``, the SQL level batches; DuckDB only, where levels are kept).

When a node may suppress no record (no suppression: ``read_within`` is 0), one failing class fails
it. The screen looks for one among a sample of the node's classes: below k, counted by the engine
when k is all the criteria; else judged by every criterion, the sample kept and judged as a level
is (``_judged_parts``). The sample is whole classes, so what fails in it fails in the node: a node
it rules out would fail in full too, and is recorded as one whose classes were not read
(``ClassHistograms.unread``). Without suppression every criterion is monotone, so the nodes below
a ruled-out node fail as well, as below any failing one. A node the screen does not rule out is
grouped as before: the screen never decides that a node passes.

A sample is shared by nodes. The keyed rows whose class at some node hashes to 0 modulo
``SCREEN_MODULUS`` are whole classes of that node and of every node finer than it. So the nodes of
a level are put in samples drawn at coarser nodes (each QI at the coarsest of their levels) that
still have ``SCREEN_MIN_VALUES`` classes or more; the base is hashed and filtered once per sample,
and each node groups only the sample, about a ``SCREEN_MODULUS``-th of the rows. The full GROUP BY
it spares puts every base row in a hash table of millions of groups. The last
``SCREEN_KEPT_SAMPLES`` samples are kept for the levels after: a node finer than one of them is
screened by it, without hashing the base again (a sample is a pass over every keyed row, 30–45 ms
at 10 M rows; docs/performance.md, seventy-eighth round).

It pays where fine nodes fail: on a generated 10 M-row table with a date of birth, 80 of a level's
82 nodes were ruled out (by k), and 13 of another's 21 (by t). Where nodes pass it is work for
nothing, so it reads only nodes whose histogram can outgrow the CPU's caches.
docs/performance.md, seventy-fifth round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sqlclose.model.arrays import numpy_of
from sqlclose.privacy.criteria import Criterion, KAnonymity, failing_classes
from sqlclose.search.items import Item, Subset, chunks
from sqlclose.sql import queries as q

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlglot import exp

    from sqlclose.model.lattice import Node
    from sqlclose.model.packing import Packing
    from sqlclose.prepare.problem import Problem
    from sqlclose.search.keyed_base import KeyedBase

SCREEN_MODULUS = 32  # the sample: rows whose sampled bits hash to 0 modulo this
# A node is screened when it can have at least this many (class, sensitive value) rows: a hash
# table past the CPU's caches, where grouping a row costs ~3–6× reading it (floors.CACHED_GROUPS).
SCREEN_MIN_ROWS = 262_144
# A sample is drawn at a node of at least this many classes (by its code space), so that hashing
# them picks about a ``SCREEN_MODULUS``-th of its nodes' classes, not a few lumps of them.
SCREEN_MIN_VALUES = 8 * SCREEN_MODULUS
SCREEN_ROWS_PER_QUERY = 4_000_000  # sampled rows one screening query may group (bounds its memory)
# Samples kept for the levels after theirs, each about a ``SCREEN_MODULUS``-th of the keyed rows
# (16 bytes a row): at 100 M rows, 50 MB each, under the engine's memory limit like any temp table.
SCREEN_KEPT_SAMPLES = 4


class SampledScreen:
    """The screen of a ``BatchRunner`` (mixed into it). It reads the runner's problem, packing,
    keyed base, row bounds and code spaces (``_rows_bound``, ``_space``), names (``_name``), masks
    (``_masks``), the k it drops classes below, its suppression bound (``read_within``) and counters."""

    problem: Problem
    packing: Packing
    keyed: KeyedBase | None
    drop_below: int
    read_within: Callable[[], int] | None
    judged_by: Sequence[Criterion]
    queries: int
    rows_read: int
    _samples: list[tuple[Subset, Node, str]]  # the kept samples, oldest first: (subset, levels, table)

    def _within(self) -> int:
        """Records below k past which a node is not read further (``read_within``, else the limit)."""
        return self.problem.max_suppressed if self.read_within is None else self.read_within()

    def _screened(self, parentless: Sequence[tuple[int, Item]], count: int) -> np.ndarray:
        """Per item (``count`` of them, by id): the records in its sampled classes that fail (below
        k, or any criterion); 0 for an item not screened. An item with more than ``_within()`` is
        ruled out."""
        found = np.zeros(count, dtype=np.int64)
        if self.drop_below <= 1 or self._within() > 0:
            return found
        kept: dict[str, list[tuple[int, Item]]] = {}  # a kept sample's table -> the items it screens
        samples: list[tuple[Subset, Node, list[tuple[int, Item]]]] = []  # (subset, sampled levels, items)
        for n, (subset, node) in parentless:
            if self._rows_bound(subset, node) >= SCREEN_MIN_ROWS:
                table = self._kept_sample(subset, node)
                if table is not None:
                    kept.setdefault(table, []).append((n, (subset, node)))
                else:
                    self._join_sample(samples, n, subset, node)
        for table, members in kept.items():
            self._judged(q.table(table), members, found)
        for subset, levels, members in samples:
            self._screen(subset, levels, members, found)
        return found

    def _kept_sample(self, subset: Subset, node: Node) -> str | None:
        """The kept sample of most classes among those drawn at or above ``node`` (each QI at its
        level or coarser: whole classes of it), if any. Only a sample of ``SCREEN_MIN_VALUES``
        classes or more is reused: one drawn at a node of few classes (alone in its sample) is a
        few lumps of rows, all or none of a finer node's."""
        covering = [(self._space(s, levels), table) for s, levels, table in self._samples
                    if s == subset and all(a <= b for a, b in zip(node, levels)) and self._enough_classes(s, levels)]
        return max(covering)[1] if covering else None

    def _enough_classes(self, subset: Subset, levels: Node) -> bool:
        """Whether a sample drawn at ``levels`` has ``SCREEN_MIN_VALUES`` classes or more (by its code
        space), so that hashing them picks about a ``SCREEN_MODULUS``-th of them, not a few lumps."""
        return self._space(subset, levels) >= SCREEN_MIN_VALUES * self.packing.sa_width

    def _join_sample(self, samples: list, n: int, subset: Subset, node: Node) -> None:
        """Put the node in the first sample whose levels, joined with its own (each QI's coarser
        level), still leave ``SCREEN_MIN_VALUES`` classes; else in a sample of its own levels."""
        for i, (their_subset, levels, members) in enumerate(samples):
            if their_subset == subset:
                joined = tuple(max(a, b) for a, b in zip(levels, node))
                if self._enough_classes(subset, joined):
                    samples[i] = (subset, joined, [*members, (n, (subset, node))])
                    return
        samples.append((subset, node, [(n, (subset, node))]))

    def _screen(self, subset: Subset, levels: Node, members: list[tuple[int, Item]], found: np.ndarray) -> None:
        """The base's rows whose key at ``levels`` (less its sensitive part) hashes to 0, kept;
        each member node grouped from them, what fails of it written into ``found``."""
        # A table of its own until SCREEN_KEPT_SAMPLES are kept, then the oldest one's, replaced.
        sample = self._name(f"sample_{len(self._samples)}") if len(self._samples) < SCREEN_KEPT_SAMPLES \
            else self._samples.pop(0)[2]
        self.problem.engine.keep(sample, q.sampled_rows(self.keyed.table(), self._masks(subset, levels),
                                                        self.packing.sa_span, SCREEN_MODULUS))
        self._samples.append((subset, levels, sample))
        self.queries += 1
        self.rows_read += self.problem.base_rows
        self._judged(q.table(sample), members, found)

    def _judged(self, sample: exp.Table, members: list[tuple[int, Item]], found: np.ndarray) -> None:
        """The members screened by ``sample`` (whole classes of each), what fails written into ``found``."""
        if all(isinstance(c, KAnonymity) for c in self.judged_by):
            self._count_small(sample, members, found)
        else:
            self._judge_sample(sample, members, found)

    def _count_small(self, sample: exp.Table, members: list[tuple[int, Item]], found: np.ndarray) -> None:
        """k alone: each member's records in sampled classes below k, counted by the engine."""
        for rows in self._batches(members):
            result = self.problem.engine.fetch(q.small_class_records(sample, rows, self.drop_below,
                                                                     self.packing.sa_span, ones=self.keyed.ones))
            found[numpy_of(result.column("node")).astype(np.int64)] = numpy_of(result.column("dropped"))

    def _judge_sample(self, sample: exp.Table, members: list[tuple[int, Item]], found: np.ndarray) -> None:
        """Other criteria too: the members' sampled classes kept as a level and judged in parts, as
        a level is (``_judged_parts``); each member's records in failing classes, and below k."""
        engine, staging = self.problem.engine, self._name("staging")
        for j, rows in enumerate(self._batches([(i, item) for i, (_, item) in enumerate(members)])):
            engine.keep(staging, q.masked_nodes(sample, rows, ones=self.keyed.ones), append=j > 0)
        engine.rename(staging, self._name("level"))
        for part in self._judged_parts({item: i for i, (_, item) in enumerate(members)}):
            hist, size = part.hist, part.stop - part.start
            failing = failing_classes(hist, self.judged_by)
            records = np.bincount(hist.node, weights=hist.sizes * failing, minlength=size) + hist.presuppressed
            ids = [n for n, _ in members[part.start:part.stop]]
            found[ids] = np.rint(records).astype(np.int64)
        self.release_cache()

    def _batches(self, members: list[tuple[int, Item]]) -> list[list[tuple[int, ...]]]:
        """The members' plan rows (id, masks), in batches that group at most ``SCREEN_ROWS_PER_QUERY``
        sampled rows; each batch a query, its rows counted as read."""
        per_node = self.problem.base_rows // SCREEN_MODULUS + 1
        batches = chunks([(per_node, (n, *self._masks(*item))) for n, item in members], SCREEN_ROWS_PER_QUERY)
        self.queries += len(batches)
        self.rows_read += per_node * len(members)
        return batches
