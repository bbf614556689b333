"""GAA, the Greedy Anonymization Algorithm of Mauger, Le Mahec & Dequen (2023), section 2.2
(Algorithm 1) with the merge strategies of section 4.2 (Definition 17).

While the table violates the model Φ (k-anonymity; optionally the paper's l-diversity value
≥ l and t-closeness value ≤ t per class), take a smallest class C_s that violates it, pick the
class C the strategy prefers, and generalize C_s ∪ C to the lowest common ancestor per QI
(multidimensional recoding: different classes may sit at different levels).

It runs on aggregated counts: the distinct QI leaf combinations with their record counts and,
for the sensitive strategies, their sensitive histograms — never rows. Each merge evaluates C_s
against every other class in one numpy pass per QI over the metric's pair-cost matrix.

Definitions followed literally:
- μ̄(C_s, C) is Definition 6 applied to the classes' generalized records: Σ_j M(f_j, g_j) +
  M(g_j, f_j), one record of each class (not weighted by class sizes).
- l_div(gen_T(C_s ∪ C)) and t_clo(gen_T(C_s ∪ C)) in Definitions 15–16 are values of the whole
  table after the merge (min, resp. max, over all its classes). ``scope="class"`` uses the
  merged class's own value instead (a documented variant, not the paper's definition).
- Equivalence classes are sets of records with identical generalized QI values, so a merge whose
  generalized tuple equals another class's tuple joins that class too.

Tie-breaking (deterministic). Combinations are numbered in lexicographic order of their leaf
indices; a class's id is the lowest number among its combinations. C_s is the violating class
of least size, then least id. Among the classes the strategy leaves (values equal within a
relative 1e-9, to absorb float rounding of sums), C is the one of least id.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from sqlclose.errors import NoSolutionError
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.text import counted, name_shown
from sqlclose.prepare.problem import Problem
from sqlclose.sql import queries as q
from sqlclose.utility.information_loss import Metric, class_l1_closeness, class_l_diversity, metric

STRATEGIES = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "ldiv", "tclo")
_SENSITIVE_STRATEGIES = frozenset(STRATEGIES) - {"S1"}
_TIE = 1e-9  # relative tolerance for equal strategy values
_MODEL_TOL = 1e-12  # l and t thresholds, as the rest of sqlclose compares them


@dataclass
class GaaInput:
    """Distinct QI leaf combinations (lexicographic order) with counts and sensitive histograms."""

    hierarchies: list[Hierarchy]
    leaves: np.ndarray  # combos × QIs: indices into hierarchy.leaves
    counts: np.ndarray  # combos: records per combination
    sensitive: np.ndarray | None = None  # combos × sensitive domain: counts
    names: list[str] | None = None  # QI column names, for the release mapping
    extra: list[np.ndarray] | None = None  # per sensitive column, combos × domain: what ``violates`` judges


@dataclass
class GaaResult:
    """Per input combination: its class and, per QI, its generalized (level, label index)."""

    class_of: np.ndarray  # combos: class id 0..classes-1 (classes ordered by their least combination)
    levels: np.ndarray  # combos × QIs
    labels: np.ndarray  # combos × QIs: index into hierarchy.labels(level)
    nodes: np.ndarray  # combos × QIs: node ids (information_loss.Tree numbering), for the metrics
    sizes: np.ndarray  # classes: records per class
    merges: int
    seconds: float

    @property
    def classes(self) -> int:
        return int(self.sizes.shape[0])


Violates = Callable[[np.ndarray, list[np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class GaaProgress:
    """Where a GAA run is, reported about once a second (the library reports; the command draws).

    GAA compares each merge's C_s with every class, so its time grows with the square of the
    distinct QI combinations (150 k of them: 15 min on 2 busy cores); a run this long says how far it
    is. ``done`` is the share of the classes that violated Φ at the start that no longer do
    (merged away, or grown until they hold) — a share, not counts: how many raw combinations a
    table has tells whether its rows share values (the report leaves them out too)."""

    done: float  # 0..1
    elapsed: float  # seconds of GAA so far
    remaining: float | None  # a rough estimate (elapsed × left / done; merges get cheaper as classes
    # merge, so it tends high), None until something is done


GaaProgressCallback = Callable[[GaaProgress], None]
_PROGRESS_EVERY = 1.0  # seconds between progress reports


def gaa(data: GaaInput, k: int, metric_: Metric | str = "nllm", strategy: str = "S1", *,
        l: float | None = None, t: float | None = None, scope: str = "table",  # noqa: E741
        violates: Violates | None = None, on_progress: GaaProgressCallback | None = None) -> GaaResult:
    """Run GAA; ``metric_`` is a Metric or the name of one of the seven (over ``data.hierarchies``).

    ``violates(sizes, histograms)`` adds models to Φ: given classes' sizes and, per sensitive
    column, their classes × domain counts (``data.extra``, merged as classes merge), it says
    which classes violate them (e.g. a spec's l-diversity or EMD t-closeness). ``on_progress``
    hears a ``GaaProgress`` about once a second."""
    started = time.perf_counter()
    state = _start(data, k, metric_, strategy, l, t, scope, violates)
    merges = state.run(progress=None if on_progress is None else _Reporter(state, on_progress, started))
    return state.result(merges, time.perf_counter() - started)


def gaa_k_sweep(data: GaaInput, ks: Sequence[int], metric_: Metric | str = "nllm", strategy: str = "S1", *,
                scope: str = "table", on_result: Callable[[int, GaaResult], None] | None = None
                ) -> dict[int, GaaResult]:
    """GAA under plain k-anonymity for several k in ONE run: the result at each k equals
    ``gaa(data, k, …)``, and each result's ``seconds`` is the time from the start to that k
    (GAA's own: the time spent in ``on_result`` is not counted).

    Why one run is enough: C_s is the least (size, id) among classes below k, and the partner a
    strategy picks does not depend on k. So while some class is smaller than k₁ < k₂, the runs at
    k₁ and k₂ make the same merge; the run at k₁ stops when the least class reaches k₁, which is
    exactly where the run at k₂ stands then. Not so with an l or t model (C_s may then be a
    large class that fails l or t): run ``gaa`` per value for those. ``on_result(k, result)``
    hears each k as soon as it is reached."""
    started = time.perf_counter()
    wanted = sorted({int(k) for k in ks})
    if not wanted:
        return {}
    state = _start(data, wanted[-1], metric_, strategy, None, None, scope)
    out: dict[int, GaaResult] = {}
    listening = [0.0]  # time spent in on_result: the caller's work (a sweep measures each k), not GAA's

    def reached(least: int | None, merges: int) -> None:
        # Every k ≤ the least violating class's size (all classes when none is left) is done.
        while wanted and (least is None or wanted[0] <= least):
            k = wanted.pop(0)
            out[k] = state.result(merges, time.perf_counter() - started - listening[0])
            if on_result is not None:
                heard = time.perf_counter()
                on_result(k, out[k])
                listening[0] += time.perf_counter() - heard

    merges = state.run(reached)
    reached(None, merges)
    return out


def _start(data: GaaInput, k: int, metric_: Metric | str, strategy: str, l: float | None,  # noqa: E741
           t: float | None, scope: str, violates: Violates | None = None) -> _State:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown GAA strategy {name_shown(strategy)}; choose one of {', '.join(STRATEGIES)}")
    if scope not in ("table", "class"):
        raise ValueError(f"scope must be 'table' (the paper's definition) or 'class', not {name_shown(scope)}")
    needs_sensitive = strategy in _SENSITIVE_STRATEGIES or l is not None or t is not None
    if needs_sensitive and data.sensitive is None:
        raise ValueError(f"strategy {strategy} / l / t need the sensitive histograms (GaaInput.sensitive)")
    mu = metric(metric_, data.hierarchies) if isinstance(metric_, str) else metric_
    return _State(data, mu, k, l, t, scope, strategy, needs_sensitive, violates)


class _State:
    """The live classes as parallel arrays over positions (dead positions are compacted away)."""

    def __init__(self, data: GaaInput, mu: Metric, k: int, l: float | None, t: float | None,  # noqa: E741
                 scope: str, strategy: str, needs_sensitive: bool, violates: Violates | None = None) -> None:
        self.mu, self.k, self.l, self.t, self.scope, self.strategy = mu, k, l, t, scope, strategy
        self.extra_violates = violates
        self.extra = [np.asarray(h, dtype=np.float64).copy() for h in data.extra or []] if violates else []
        n0 = data.leaves.shape[0]
        self.n0 = n0
        self.total = int(np.sum(data.counts))
        self.ids = np.arange(n0, dtype=np.int64)
        self.alive = np.ones(n0, dtype=bool)
        self.size = np.asarray(data.counts, dtype=np.int64).copy()
        self.nodes = np.stack([tree.leaf_nodes[data.leaves[:, j]] for j, tree in enumerate(mu.trees)])  # QIs × n
        self.pos_of_id = np.arange(n0, dtype=np.int64)  # class id → its position (until compaction moves it)
        self.parent = np.arange(n0, dtype=np.int64)  # union-find over class ids, for the final mapping
        self.hist = np.asarray(data.sensitive, dtype=np.float64).copy() if needs_sensitive else None
        if self.hist is not None:
            self.reference = self.hist.sum(axis=0)
            self.ldiv = class_l_diversity(self.hist)
            self.tclo = class_l1_closeness(self.hist, self.reference)
            self.xlogx = _xlogx(self.hist).sum(axis=1)
        self.viol = self._violates(np.arange(n0))
        self.groups = _cost_groups(mu)
        self.node_ids: dict[int, np.ndarray] = {}  # per untabulated QI, its node ids (``_untabulated_cost``)
        self.joint = self._joint(slice(None))
        self.where = {tuple(self.nodes[:, p]): p for p in range(n0)}
        self._init_keys()
        self._check_feasible()

    # ---- the model Φ -------------------------------------------------------------------
    def _violates(self, p: np.ndarray) -> np.ndarray:
        bad = self.size[p] < self.k
        if self.l is not None:
            bad |= self.ldiv[p] < self.l - _MODEL_TOL
        if self.t is not None:
            bad |= self.tclo[p] > self.t + _MODEL_TOL
        if self.extra_violates is not None:
            bad |= self.extra_violates(self.size[p], [h[p] for h in self.extra])
        return bad

    def _check_feasible(self) -> None:
        if self.k > self.total:
            raise NoSolutionError(f"k = {self.k} is larger than the table ({counted(self.total, 'record')})")
        if self.hist is not None and self.l is not None:
            best = float(class_l_diversity(self.reference)[0])
            if best < self.l - _MODEL_TOL:
                # The table's own figure is not told: one changed sensitive value moves it.
                raise NoSolutionError(f"l = {self.l:g} cannot be reached: even the whole table as one class is "
                                      "below it")
        if self.extra_violates is not None and self.extra_violates(
                np.array([self.total]), [h.sum(axis=0, keepdims=True) for h in self.extra])[0]:
            raise NoSolutionError("the privacy models fail even with the whole table as one class: no merging can "
                                  "satisfy them")

    # ---- the loop ----------------------------------------------------------------------
    def run(self, reached: Callable[[int, int], None] | None = None, progress: _Reporter | None = None) -> int:
        """Merge until no class violates; ``reached(size, merges)`` hears the least violating
        class's size before each merge (for ``gaa_k_sweep``); ``progress`` is told after each."""
        # Violating classes in a heap keyed (size, id): the least size, then the least id. Sizes
        # only grow, so an entry whose size no longer matches its class is stale and skipped.
        heap = [(int(self.size[p]), int(self.ids[p])) for p in np.flatnonzero(self.viol)]
        heapq.heapify(heap)
        merges, live = 0, int(self.alive.size)
        while heap:
            size, cid = heapq.heappop(heap)
            s = int(self.pos_of_id[cid])
            if not (s < self.alive.size and self.ids[s] == cid and self.alive[s] and self.size[s] == size
                    and self.viol[s]):  # stale: merged away, grown, moved by compaction, or satisfied
                continue
            if reached is not None:
                reached(size, merges)
            if live == 1:  # cannot happen after _check_feasible; kept as a guard
                raise NoSolutionError("GAA merged the whole table into one class and it still violates the model")
            keep, removed = self._merge(s, self._choose(s))
            live -= removed
            merges += 1
            if self.viol[keep]:
                heapq.heappush(heap, (int(self.size[keep]), int(self.ids[keep])))
            if live * 2 < self.alive.size and self.alive.size > 64:
                self._compact()
            if progress is not None:
                progress.merged()
        return merges

    def _choose(self, s: int) -> int:
        st = self.strategy
        if st in ("S1", "S2", "S5"):  # cost first: evaluated over every position at once
            cost = self._cost(s)
            cost[~self.alive] = np.inf
            cost[s] = np.inf
            pool = np.flatnonzero(cost <= cost.min() + _TIE * max(1.0, float(cost.min())))
        else:
            cand = self.alive.copy()
            cand[s] = False
            pool = np.flatnonzero(cand)
        if st in ("S2", "S3", "ldiv"):
            pool = _best(pool, self._ldiv(s, pool), minimize=False)
        if st in ("S5", "S6", "tclo"):
            pool = _best(pool, self._tclo(s, pool), minimize=True)
        if st in ("S3", "S6"):
            pool = self._least_cost(s, pool)
        if st == "S4":
            pool = _best(pool, self._cost(s, pool) / self._ldiv(s, pool), minimize=True)
        if st == "S7":
            pool = _best(pool, self._cost(s, pool) * self._tclo(s, pool), minimize=True)
        return int(pool[np.argmin(self.ids[pool])])

    def _least_cost(self, s: int, pool: np.ndarray) -> np.ndarray:
        """The members of ``pool`` of least μ̄(C_s, C). When the pool is every class but C_s (the l
        or t step kept them all, as it does on most merges) the costs are taken over every position
        at once, dead ones and C_s set aside, without gathering the pool's columns first: the same
        values, so the same least ones, in a fraction of the time per merge."""
        if pool.size != np.count_nonzero(self.alive) - 1:
            return _best(pool, self._cost(s, pool), minimize=True)
        cost = self._cost(s)
        cost[~self.alive] = np.inf
        cost[s] = np.inf
        return _best(np.arange(cost.size), cost, minimize=True)

    def _cost(self, s: int, pool: np.ndarray | None = None) -> np.ndarray:
        """μ̄(C_s, C) for every C in pool (default: every position): one gather per group of QIs
        from the group's joint pair-cost matrix (per QI through the metric for huge hierarchies)."""
        total = np.zeros(self.nodes.shape[1] if pool is None else pool.size)
        for g, group in enumerate(self.groups):
            if group.cost is None:
                j = group.qis[0]
                b = self.nodes[j] if pool is None else self.nodes[j, pool]
                total += self._untabulated_cost(j, int(self.nodes[j, s]), b)
            else:
                b = self.joint[g] if pool is None else self.joint[g, pool]
                total += group.cost[self.joint[g, s]].take(b)
        return total

    def _untabulated_cost(self, j: int, a: int, b: np.ndarray) -> np.ndarray:
        """M(a, b) + M(b, a) of a QI too big to tabulate. With more classes than the hierarchy has
        nodes (150 k classes, 35 k dates of birth), node a's costs to every node are computed once
        and looked up per class: the same values, from a fraction of the LCA work."""
        nodes = self.mu.trees[j].nodes
        if b.size <= nodes:
            return self.mu.pair_cost(j, a, b)
        if j not in self.node_ids:
            self.node_ids[j] = np.arange(nodes, dtype=np.int64)
        return self.mu.pair_cost(j, a, self.node_ids[j]).take(b)

    def _joint(self, columns: np.ndarray | slice) -> np.ndarray:
        """Each position's node tuple within each QI group as one index into the group's matrix."""
        out = np.zeros((len(self.groups), self.nodes[:, columns].shape[1]), dtype=np.int64)
        for g, group in enumerate(self.groups):
            for j in group.qis:
                out[g] = out[g] * self.mu.trees[j].nodes + self.nodes[j, columns]
        return out

    def _ldiv(self, s: int, pool: np.ndarray) -> np.ndarray:
        """l_div(gen_T(C_s ∪ C)) per candidate (scope "table"), or the merged class's own value."""
        flat = self._flat_rest(s, self.ldiv, lowest=True)
        if flat is not None and self.ldiv[s] >= flat:  # every candidate's table value is `flat` (see there)
            return np.full(pool.size, flat)
        partner = self._partners(s, pool)
        n = self._mix(s, pool, partner, np.ones(self.size.size))
        if self.scope == "class":
            return self._merged_ldiv(s, pool, partner, n)
        rest = self._others(s, pool, partner, self.ldiv, lowest=True)
        # Entropy is concave: the merged class's value is at least exp(Σ share_i · entropy_i), so
        # where that bound already reaches the rest of the table, the table's value is the rest's.
        low = np.exp(self._mix(s, pool, partner, np.log(self.ldiv)) / n)
        out = rest.copy()
        need = np.flatnonzero(low < rest)
        if need.size:
            out[need] = np.minimum(self._merged_ldiv(s, pool[need], partner[need], n[need]), rest[need])
        return out

    def _tclo(self, s: int, pool: np.ndarray) -> np.ndarray:
        """t_clo(gen_T(C_s ∪ C)) per candidate (scope "table"), or the merged class's own value."""
        flat = self._flat_rest(s, self.tclo, lowest=False)
        if flat is not None and self.tclo[s] <= flat:
            return np.full(pool.size, flat)
        partner = self._partners(s, pool)
        if self.scope == "class":
            return class_l1_closeness(self._merged(s, pool, partner), self.reference)
        rest = self._others(s, pool, partner, self.tclo, lowest=False)
        # The L1 distance is convex: the merged class is no farther than the size-weighted mean.
        high = self._mix(s, pool, partner, self.tclo) / self._mix(s, pool, partner, np.ones(self.size.size))
        out = rest.copy()
        need = np.flatnonzero(high > rest)
        if need.size:
            own = class_l1_closeness(self._merged(s, pool[need], partner[need]), self.reference)
            out[need] = np.maximum(own, rest[need])
        return out

    def _flat_rest(self, s: int, values: np.ndarray, lowest: bool) -> float | None:
        """In the table scope, the table's value after any merge when it is the same for every
        candidate: when at least three live classes besides C_s share the extreme (least l, most
        t) value v, the classes a merge leaves untouched still hold v (a merge removes at most two
        besides C_s), and the merged class cannot pass it as long as C_s does not (entropy is
        concave and the L1 distance convex: a merged class is no worse than its worst part). The
        caller checks C_s. This skips the per-candidate work on most merges (homogeneous classes
        pin the l-value at 1 early on). None when it does not apply."""
        if self.scope != "table":
            return None
        live = self.alive.copy()
        live[s] = False
        v = values[live]
        if v.size < 3:
            return None
        extreme = v.min() if lowest else v.max()
        return float(extreme) if np.count_nonzero(v == extreme) >= 3 else None

    def _mix(self, s: int, pool: np.ndarray, partner: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Σ size × value over C_s, each candidate C and C's partner."""
        total = self.size[s] * values[s] + self.size[pool] * values[pool]
        joins = partner >= 0
        total[joins] += self.size[partner[joins]] * values[partner[joins]]
        return total

    def _merged_ldiv(self, s: int, pool: np.ndarray, partner: np.ndarray, n: np.ndarray) -> np.ndarray:
        """exp(entropy) of each merged class from Σ x·ln x: only C_s's few values change C's sum."""
        xlogx = self.xlogx[pool].copy()
        for v in np.flatnonzero(self.hist[s]):
            x = self.hist[pool, v]
            xlogx += _xlogx(x + self.hist[s, v]) - _xlogx(x)
        joins = np.flatnonzero(partner >= 0)
        if joins.size:  # rare: a third class joins; sum those exactly
            xlogx[joins] = _xlogx(self._merged(s, pool[joins], partner[joins])).sum(axis=1)
        return np.exp(np.log(n) - xlogx / n)

    def _merged(self, s: int, pool: np.ndarray, partner: np.ndarray) -> np.ndarray:
        """Sensitive counts of C_s ∪ C for every candidate C, plus the class its LCA tuple joins."""
        merged = self.hist[pool] + self.hist[s]
        joins = partner >= 0
        merged[joins] += self.hist[partner[joins]]
        return merged

    def _partners(self, s: int, pool: np.ndarray) -> np.ndarray:
        """Per candidate C, the live class (position) whose generalized tuple equals LCA(C_s, C) —
        it becomes part of the merged class — or -1."""
        if self.strides is None:  # keys would overflow int64: look the LCA tuples up one by one
            lca = np.empty((self.nodes.shape[0], pool.size), dtype=np.int64)
            for j, tree in enumerate(self.mu.trees):
                lca[j] = tree.lca(int(self.nodes[j, s]), self.nodes[j, pool])
            partner = np.array([self.where.get(tuple(col), -1) for col in lca.T], dtype=np.int64)
        else:
            keys = np.zeros(pool.size, dtype=np.int64)
            for g, group in enumerate(self.groups):
                if group.lca is not None:
                    lca = group.lca[self.joint[g, s]].take(self.joint[g, pool])
                else:
                    j = group.qis[0]
                    lca = self.mu.trees[j].lca(int(self.nodes[j, s]), self.nodes[j, pool])
                keys += lca * self.strides[g]
            if self.keys_stale:
                self._sort_keys()
            i = np.minimum(np.searchsorted(self.sorted_keys, keys), self.sorted_keys.size - 1)
            partner = np.where(self.sorted_keys[i] == keys, self.sorted_pos[i], -1)
        partner[(partner == s) | (partner == pool)] = -1
        return partner

    def _others(self, s: int, pool: np.ndarray, partner: np.ndarray, values: np.ndarray, lowest: bool) -> np.ndarray:
        """Per candidate C, the min (``lowest``) or max of ``values`` over the live classes the merge
        leaves as they are (all but C_s, C and C's partner): the rest of the table."""
        w = np.where(self.alive, values if lowest else -values, np.inf)
        w[s] = np.inf
        top, kept = [], []
        for _ in range(min(3, w.size)):  # the three most extreme (at most two are excluded per candidate)
            i = int(np.argmin(w))
            top.append(i)
            kept.append(w[i])
            w[i] = np.inf
        out = np.full(pool.size, np.inf)
        done = np.zeros(pool.size, dtype=bool)
        for i, value in zip(top, kept):
            ok = ~done & (pool != i) & (partner != i)
            out[ok] = value
            done |= ok
        return out if lowest else -out

    def _init_keys(self) -> None:
        """One int64 key per generalized tuple (mixed radix over node counts) and the live keys
        sorted, to find vectorized which class a candidate merge would join."""
        sizes = [g.size for g in self.groups]
        self.strides, self.keys_stale = None, True
        if self.hist is None or math.prod(sizes) >= 2**62:
            return
        strides = [1] * len(sizes)
        for g in range(len(sizes) - 2, -1, -1):
            strides[g] = strides[g + 1] * sizes[g + 1]
        self.strides = np.array(strides, dtype=np.int64)
        self._sort_keys()

    def _sort_keys(self) -> None:
        """Sort the live classes' keys. Done lazily, when ``_partners`` needs them after merges
        (``keys_stale``): most merges never look partners up (``_flat_rest``), and one sort of
        all keys costs about what inserting and deleting one key in a sorted array does."""
        live = np.flatnonzero(self.alive)
        keys = self._keys(live)
        order = np.argsort(keys, kind="stable")
        self.sorted_keys, self.sorted_pos = keys[order], live[order]
        self.keys_stale = False

    def _keys(self, positions: np.ndarray | int) -> np.ndarray:
        """The tuple key of classes: their joint group indices, mixed radix over the groups."""
        return (self.joint[:, positions].T * self.strides).sum(axis=-1)

    # ---- merging -----------------------------------------------------------------------
    def _merge(self, s: int, c: int) -> tuple[int, int]:
        """Merge C_s and C (and any class with their LCA tuple) into the one of least id; returns
        its position and how many classes disappeared."""
        lca = np.array([tree.lca(int(self.nodes[j, s]), int(self.nodes[j, c])) for j, tree in enumerate(self.mu.trees)])
        group = [s, c]
        same = self.where.get(tuple(lca))
        if same is not None and same not in group:  # the merged records equal another class's: one class
            group.append(same)
        for p in group:
            del self.where[tuple(self.nodes[:, p])]
        keep = min(group, key=lambda p: self.ids[p])
        for p in group:
            if p != keep:
                self.alive[p] = False
                self.viol[p] = False
                self.parent[self.ids[p]] = self.ids[keep]
                self.size[keep] += self.size[p]
                if self.hist is not None:
                    self.hist[keep] += self.hist[p]
                for h in self.extra:
                    h[keep] += h[p]
        self.nodes[:, keep] = lca
        self.joint[:, keep] = self._joint(slice(keep, keep + 1))[:, 0]
        self.where[tuple(lca)] = keep
        self.keys_stale = True
        if self.hist is not None:
            self.ldiv[keep] = class_l_diversity(self.hist[keep])[0]
            self.tclo[keep] = class_l1_closeness(self.hist[keep], self.reference)[0]
            self.xlogx[keep] = _xlogx(self.hist[keep]).sum()
        self.viol[keep] = self._violates(np.array([keep]))[0]
        return keep, len(group) - 1

    def _compact(self) -> None:
        live = np.flatnonzero(self.alive)
        self.ids, self.size, self.viol = self.ids[live], self.size[live], self.viol[live]
        self.nodes, self.joint = self.nodes[:, live], self.joint[:, live]
        if self.hist is not None:
            self.hist, self.ldiv, self.tclo = self.hist[live], self.ldiv[live], self.tclo[live]
            self.xlogx = self.xlogx[live]
        self.extra = [h[live] for h in self.extra]
        self.alive = np.ones(live.size, dtype=bool)
        self.pos_of_id[self.ids] = np.arange(live.size)
        self.where = {tuple(self.nodes[:, p]): p for p in range(live.size)}
        self.keys_stale = True

    # ---- output ------------------------------------------------------------------------
    def result(self, merges: int, seconds: float) -> GaaResult:
        root = self.parent.copy()
        while True:  # pointer jumping: every combination's id to its class's id
            nxt = root[root]
            if np.array_equal(nxt, root):
                break
            root = nxt
        live = np.flatnonzero(self.alive)
        order = np.argsort(self.ids[live])
        live = live[order]
        class_number = np.full(self.n0, -1, dtype=np.int64)
        class_number[self.ids[live]] = np.arange(live.size)
        class_of = class_number[root]
        nodes = self.nodes[:, live][:, class_of].T.copy()
        levels = np.column_stack([t.level[nodes[:, j]] for j, t in enumerate(self.mu.trees)])
        labels = np.column_stack([t.label_index(nodes[:, j]) for j, t in enumerate(self.mu.trees)])
        return GaaResult(class_of, levels, labels, nodes, self.size[live].copy(), merges, seconds)


class _Reporter:
    """Tells ``on_progress`` where a run is, at most once per ``_PROGRESS_EVERY`` seconds (counting
    the violating classes is one pass over the classes: not at every merge)."""

    def __init__(self, state: _State, on_progress: GaaProgressCallback, started: float) -> None:
        self.state, self.on_progress, self.started = state, on_progress, started
        self.violating_at_start = max(int(np.count_nonzero(state.viol)), 1)
        self.next_report = started + _PROGRESS_EVERY

    def merged(self) -> None:
        now = time.perf_counter()
        if now < self.next_report:
            return
        self.next_report = now + _PROGRESS_EVERY
        left = int(np.count_nonzero(self.state.viol & self.state.alive))
        done = min(max(1.0 - left / self.violating_at_start, 0.0), 1.0)
        elapsed = now - self.started
        self.on_progress(GaaProgress(done, elapsed, elapsed * (1.0 - done) / done if done > 0 else None))


def release_mapping(data: GaaInput, result: GaaResult) -> pa.Table:
    """The table a SQL release joins to: per input combination, each QI's mixed-radix leaf code
    (``q0``, ``q1``, … — the base histogram's code columns), its generalized level and label
    (``q0_level``, ``q0_label``, …) and its ``class`` id."""
    columns: dict[str, pa.Array] = {}
    for j, h in enumerate(data.hierarchies):
        columns[f"q{j}"] = pa.array(h.leaf_codes[data.leaves[:, j]])
        columns[f"q{j}_level"] = pa.array(result.levels[:, j])
        text = np.empty(len(result.levels), dtype=object)
        for level in np.unique(result.levels[:, j]):
            rows = result.levels[:, j] == level
            text[rows] = np.asarray(h.labels(int(level)), dtype=object)[result.labels[rows, j]]
        columns[f"q{j}_label"] = pa.array(text, type=pa.string())
    columns["class"] = pa.array(result.class_of)
    return pa.table(columns)


@dataclass
class _Group:
    """QIs evaluated together: their joint node index is mixed radix over their node counts."""

    qis: list[int]
    size: int  # joint node count
    cost: np.ndarray | None  # joint pair cost Σ_j (M_j + M_jᵀ); None for a hierarchy too big to tabulate
    lca: np.ndarray | None  # joint index of the per-QI LCAs


def _cost_groups(mu: Metric, limit: int = 1024) -> list[_Group]:
    """Pack QIs into groups whose joint node count stays ≤ ``limit``, with joint pair-cost and LCA
    tables: fewer gathers per merge (Adult's 9 QIs: 4). A QI too big to tabulate is its own group."""
    sizes = [t.nodes for t in mu.trees]
    packs: list[list[int]] = []
    for j in sorted(range(len(sizes)), key=lambda j: -sizes[j]):  # first fit, largest first
        fits = [p for p in packs if mu.pair_matrix(p[0]) is not None
                and math.prod(sizes[i] for i in p) * sizes[j] <= limit]
        if mu.pair_matrix(j) is not None and fits:
            fits[0].append(j)
        else:
            packs.append([j])
    groups = []
    for qis in packs:
        size = math.prod(sizes[j] for j in qis)
        if mu.pair_matrix(qis[0]) is None:
            groups.append(_Group(qis, size, None, None))
            continue
        cost, lca = mu.pair_matrix(qis[0]), mu.trees[qis[0]].lca_table
        for j in qis[1:]:
            n = sizes[j]
            cost = (cost[:, None, :, None] + mu.pair_matrix(j)[None, :, None, :]).reshape(cost.shape[0] * n, -1)
            lca = (lca[:, None, :, None] * n + mu.trees[j].lca_table[None, :, None, :]).reshape(lca.shape[0] * n, -1)
        groups.append(_Group(qis, size, cost, lca))
    return groups


def _xlogx(x: np.ndarray) -> np.ndarray:
    return x * np.log(np.where(x > 0, x, 1.0))


def _best(pool: np.ndarray, values: np.ndarray, *, minimize: bool) -> np.ndarray:
    """The members of ``pool`` whose value is the best, within a relative tolerance."""
    best = values.min() if minimize else values.max()
    return pool[np.abs(values - best) <= _TIE * max(1.0, abs(float(best)))]


def combos_from_codes(codes: np.ndarray, counts: np.ndarray, hierarchies: Sequence[Hierarchy],
                      sensitive_codes: np.ndarray | None = None, domain: int = 0
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Grouped rows (mixed-radix leaf codes per QI, count, optional sensitive code) → the distinct
    leaf-index combinations in lexicographic order, their counts and sensitive histograms."""
    leaves = np.column_stack([h.leaf_index(codes[:, j]) for j, h in enumerate(hierarchies)])
    combos, inverse = np.unique(leaves, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    total = np.bincount(inverse, weights=counts, minlength=len(combos)).astype(np.int64)
    hist = None
    if sensitive_codes is not None:
        hist = np.bincount(inverse * domain + sensitive_codes, weights=counts,
                           minlength=len(combos) * domain).reshape(len(combos), domain).astype(np.int64)
    return combos, total, hist


def fetch_gaa_input(problem: Problem, sensitive: str | None = None) -> GaaInput:
    """GAA's input from a prepared ``Problem``: one GROUP BY over the base histogram (QI codes and,
    if named, one sensitive column's codes), then numpy on those counts."""
    sa = None
    if sensitive is not None:
        matches = [s for s in problem.sas if s.name == sensitive]
        if not matches:
            raise ValueError(f"{name_shown(sensitive)} is not a sensitive column of this problem "
                             f"({', '.join(s.name for s in problem.sas) or 'none'})")
        sa = matches[0]
    query = q.node_histogram(problem.base.copy(), [(qi.coded.code, 1) for qi in problem.qis],
                             [sa.coded.code] if sa else [])
    result = problem.engine.fetch(query)
    codes = np.column_stack([result.column(qi.coded.code).to_numpy() for qi in problem.qis]).astype(np.int64)
    counts = result.column("n").to_numpy().astype(np.float64)
    sa_codes = result.column(sa.coded.code).to_numpy().astype(np.int64) if sa else None
    hierarchies = [qi.hierarchy for qi in problem.qis]
    leaves, total, hist = combos_from_codes(codes, counts, hierarchies, sa_codes, len(sa.domain) if sa else 0)
    return GaaInput(hierarchies, leaves, total, hist, [qi.name for qi in problem.qis])
