"""Floors: small histograms a level's items without a computed parent are grouped from, instead
of the keyed base (``BatchRunner``, the SQL level batches).

A floor is a node of a QI subset's lattice at or below the items it serves, kept engine-side; an
item reads the smallest floor below it. Floors are chosen per level: at the meet of the items when
its code space is small, at meets of pairs bounded by their code space, or by their rows estimated
in one pass (HyperLogLog) — each kept only if the time it saves its items exceeds its build
(``_floor_gain``, a cost model fitted on the generated 10 M-row table). Large floors get floors of
their own (``_refine_floors``). docs/performance.md tells what each rule bought.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sqlclose.model.lattice import Node
from sqlclose.search.items import Item, Subset
from sqlclose.sql import queries as q

if TYPE_CHECKING:
    from sqlglot import exp

    from sqlclose.model.packing import Packing
    from sqlclose.prepare.problem import Problem
    from sqlclose.search.keyed_base import KeyedBase

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


class FloorChoice:
    """The floors of a ``BatchRunner`` (mixed into it): which to make for a level, making them,
    and which an item reads. It keeps ``_floors`` (per subset: (floor id, levels, rows)), the
    count made (their ids) and the rows of floors made from floors; it reads the runner's problem,
    packing, keyed base and counters, and asks it for names (``_name``), reads (``_fetch``) and a
    node's plan row and masks (``_base_nodes``, ``_base_row``, ``_masks``)."""

    problem: Problem
    packing: Packing
    keyed: KeyedBase | None
    queries: int
    rows_read: int
    _floors: dict[Subset, list[tuple[int, Node, int]]]
    _floors_made: int
    _refined_rows: int

    def _floors_for_level(self, parentless: list[tuple[int, Item]]) -> None:
        """Floors from the base for the level's items without one, then floors of large floors."""
        self._make_floors(parentless)
        self._refine_floors(parentless)


    def _rows_bound(self, subset: Subset, node: Node) -> float:
        """The most rows an item without a parent can have: its code space, at most the rows of
        the floor (or base) it is grouped from."""
        floor = self._floor_for(subset, node)
        return min(self._space(subset, node), float(self.problem.base_rows if floor is None else floor[2]))

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
        row = self.problem.engine.fetch_row(query, owned=True)  # ``q.estimated_rows``: built for it
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


def _meet_groups(nodes: Sequence[Node]) -> list[tuple[Node, list[Node]]]:
    """Candidate floors for ``nodes`` (of one subset): the meet of them all, and per QI and level
    the meet of those at or above it; each with the nodes it covers (at least ``FLOOR_GROUP_MIN``)."""
    grid = np.array(nodes)
    groups = [grid] + [grid[grid[:, a] >= v] for a in range(grid.shape[1]) for v in range(1, int(grid[:, a].max()) + 1)]
    return [(tuple(int(x) for x in group.min(axis=0)), [tuple(int(x) for x in g) for g in group])
            for group in groups if len(group) >= FLOOR_GROUP_MIN]


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
