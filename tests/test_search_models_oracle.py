"""Incognito with every privacy model, mixed, against a brute-force oracle over the lattice.

Issue 3: "Incognito must stay exact with any mix of [privacy models] (tests: brute force over
the lattice agrees on Adult, several mixes)". The oracle reuses test_search_oracle's independent
machinery (hierarchies read with ``csv`` and joined in DuckDB into one pre-aggregated row per
distinct raw QI values and sensitive values, Li et al.'s EMD formulas, the optimum rule). Each
node's classes are those rows grouped on their generalized labels (in numpy, for speed; checked
against the plain SQL ``GROUP BY`` of test_search_oracle on sampled nodes). The other models are
written here from their definitions alone, sharing no code with sqlclose:

- k-anonymity: size ≥ k;
- distinct l-diversity: at least l distinct sensitive values in the class;
- p-sensitivity (Truta & Vinay): at least p distinct sensitive values;
- entropy l-diversity: −Σ p ln p ≥ ln l (within 1e-12);
- recursive (c, l)-diversity: r1 < c·(r_l + … + r_m), counts sorted descending over the domain;
- t-closeness: distance ≤ t (within 1e-12), the distance an EMD (equal, hierarchical) or, not an
  EMD, variational ½Σ|p − q| or Kullback–Leibler Σ p ln(p/q) against the whole table.

A class fails if it fails any model of any sensitive column; a node satisfies when its failing
classes hold at most floor(s·N) rows. Every one of Adult's 3,240 nodes is judged once per mix, from
one class × occupation (and class × salary-class) matrix per node computed once for all mixes, so
the oracle sees the whole satisfying set (with suppression, entropy, recursive and t are not
monotone: a pruned or inferring search can go wrong where the oracle cannot).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from oracle import (  # the independent oracle of the core search
    ADULT_AGE_WIDTHS,
    ADULT_HIERARCHIES,
    ADULT_QIS,
    ADULT_ROWS,
    ADULT_SPEC,
    CLOSE,
    Grouper,
    Oracle,
    Solution,
    check_grouper,
    equal_emd,
    hierarchical_emd,
    read_hierarchy,
    sampled_nodes,
    solve,
)

import sqlclose

pytestmark = pytest.mark.slow

TOL = 1e-12  # entropy ≥ ln l − TOL; distance ≤ t + TOL
OCCUPATION, SALARY = "occupation", "salary-class"
HIERARCHY_FILES = {OCCUPATION: ADULT_HIERARCHIES / "occupation.csv", SALARY: ADULT_HIERARCHIES / "salary-class.csv"}


# ============================================================================ models, from their definitions


def distinct_values(counts: np.ndarray) -> np.ndarray:
    return (counts > 0).sum(axis=1)


def entropy(counts: np.ndarray) -> np.ndarray:
    """−Σ p ln p per class (0 ln 0 = 0)."""
    out = np.zeros(counts.shape[0])
    sizes = counts.sum(axis=1)
    for j in range(counts.shape[1]):
        c = counts[:, j].astype(np.float64)
        p = c / sizes
        out -= np.where(c > 0, p * np.log(np.where(c > 0, p, 1.0)), 0.0)
    return out


def recursive_parts(counts: np.ndarray, l: int) -> tuple[np.ndarray, np.ndarray]:  # noqa: E741
    """(r1, r_l + … + r_m) per class, r the counts over the whole domain sorted descending."""
    r = np.sort(counts, axis=1)[:, ::-1]
    return r[:, 0], r[:, l - 1:].sum(axis=1)


def variational(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.abs(P - q).sum(axis=1) / 2


def kl(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Σ p ln(p/q) per class; every q > 0 (q is the whole table's distribution)."""
    assert (q > 0).all()
    safe = np.where(P > 0, P, 1.0)
    return (np.where(P > 0, P * np.log(safe / q), 0.0)).sum(axis=1)


# ============================================================================ mixes


@dataclass(frozen=True)
class Models:
    """The models asked of one sensitive column."""

    t: tuple[float, str] | None = None  # (t, distance)
    distinct_l: int | None = None
    entropy_l: float | None = None
    recursive: tuple[float, int] | None = None  # (c, l)
    p: int | None = None

    def spec(self) -> dict:
        d: dict = {}
        if self.t:
            d["t"], d["distance"] = self.t
        if self.distinct_l is not None:
            d["distinct_l"] = self.distinct_l
        if self.entropy_l is not None:
            d["entropy_l"] = self.entropy_l
        if self.recursive is not None:
            d["recursive"] = {"c": self.recursive[0], "l": self.recursive[1]}
        if self.p is not None:
            d["p"] = self.p
        return d

    def without(self, name: str) -> Models:
        return Models(**{f: (None if f == name else getattr(self, f)) for f in MODEL_FIELDS})


MODEL_FIELDS = ("t", "distinct_l", "entropy_l", "recursive", "p")


@dataclass(frozen=True)
class Mix:
    k: int
    sensitive: dict[str, Models] = field(default_factory=dict)
    suppression: float = 0.0


# The parameters are chosen so that every model of a mix binds: leaving any one out (k included)
# changes the satisfying set (test_model_mixes_are_not_vacuous). On Adult a t of 0.2-0.3 already
# forces classes far above k = 5 and above distinct_l = 3, hence k = 20-100 and l = 8-13 beside t.
MIXES: dict[str, Mix] = {
    "ent2-s0": Mix(1, {OCCUPATION: Models(entropy_l=2)}),
    "ent2-s5": Mix(1, {OCCUPATION: Models(entropy_l=2)}, 0.05),
    "rec4,4-s0": Mix(1, {OCCUPATION: Models(recursive=(4, 4))}),
    "rec4,4-s5": Mix(1, {OCCUPATION: Models(recursive=(4, 4))}, 0.05),
    "k100-dist13-equal0.4-s5": Mix(100, {OCCUPATION: Models(t=(0.4, "equal"), distinct_l=13)}, 0.05),
    "k5-p3-s5": Mix(5, {OCCUPATION: Models(p=3)}, 0.05),
    "k50-kl0.3-s0": Mix(50, {OCCUPATION: Models(t=(0.3, "kl"))}),
    "k100-var0.35-s5": Mix(100, {OCCUPATION: Models(t=(0.35, "variational"))}, 0.05),
    "k100-ent8-hier0.3-s5": Mix(100, {OCCUPATION: Models(t=(0.3, "hierarchical"), entropy_l=8)}, 0.05),
    "k20-rec1,4-hier0.4-s5": Mix(20, {OCCUPATION: Models(t=(0.4, "hierarchical"), recursive=(1, 4))}, 0.05),
    # Two sensitive columns, each with its own models.
    "two-ent4-dist2-s0": Mix(1, {OCCUPATION: Models(entropy_l=4), SALARY: Models(distinct_l=2)}),
    "two-ent2-dist2-s5": Mix(1, {OCCUPATION: Models(entropy_l=2), SALARY: Models(distinct_l=2)}, 0.05),
    "two-rec1.5,3-p8-equal0.3-s5": Mix(1, {OCCUPATION: Models(recursive=(1.5, 3), p=8),
                                           SALARY: Models(t=(0.3, "equal"))}, 0.05),
    # No node at all: even the single all-'*' class has less occupation entropy than ln 13.
    "none-ent13-s5": Mix(1, {OCCUPATION: Models(entropy_l=13)}, 0.05),
}


def ablations(name: str) -> dict[str, Mix]:
    """The mix with one model left out at a time (k counts as a model when > 1): oracle only,
    to show every model of every mix binds."""
    mix = MIXES[name]
    out = {}
    if mix.k > 1:
        out[f"{name}/-k"] = Mix(1, mix.sensitive, mix.suppression)
    for sa, models in mix.sensitive.items():
        for f in MODEL_FIELDS:
            if getattr(models, f) is None:
                continue
            rest = models.without(f)
            sensitive = {s: (rest if s == sa else m) for s, m in mix.sensitive.items()}
            sensitive = {s: m for s, m in sensitive.items() if m != Models()}
            out[f"{name}/-{sa}.{f}"] = Mix(mix.k, sensitive, mix.suppression)
    return out


ABLATIONS = {a: m for name in MIXES if not name.startswith("none-") for a, m in ablations(name).items()}
ALL_MIXES = {**MIXES, **ABLATIONS}


def mix_spec(mix: Mix) -> sqlclose.Spec:
    d = sqlclose.load_spec(ADULT_SPEC).model_dump()
    assert tuple(d["quasi_identifiers"]) == ADULT_QIS
    d["privacy"] = {"k": mix.k, "suppression": mix.suppression}
    d["sensitive"] = {sa: {**models.spec(), "hierarchy": {"file": str(HIERARCHY_FILES[sa])}}
                      for sa, models in mix.sensitive.items()}
    d["search"]["explore"] = "lattice"  # every outcome checked; the optimum alone below
    return sqlclose.Spec.model_validate(d)


# ============================================================================ the oracle


@dataclass
class Judged:
    satisfied: bool
    classes: int  # kept
    suppressed: int
    dm: int
    reached: dict[tuple[str, str], float]  # (column, model) → worst value over kept classes (a satisfying node)


class NodeMeasures:
    """One node's class matrices, and each model's per-class measure, computed at most once."""

    def __init__(self, oracle: Oracle, sizes: np.ndarray, counts: dict[str, np.ndarray]):
        self.oracle, self.sizes, self.counts = oracle, sizes, counts
        self.cache: dict = {}

    def get(self, key, compute):
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]

    def distance(self, sa: str, distance: str) -> np.ndarray:
        def compute():
            P = self.counts[sa] / self.sizes[:, None]
            q = self.oracle.q[sa]
            if distance == "equal":
                return equal_emd(P, q)
            if distance == "hierarchical":
                spec_sa = next(s for s in self.oracle.sas if s.name == sa)
                return hierarchical_emd(P, q, spec_sa.domain, spec_sa.hierarchy)
            if distance == "variational":
                return variational(P, q)
            if distance == "kl":
                return kl(P, q)
            raise AssertionError(distance)
        return self.get(("distance", sa, distance), compute)

    def distinct(self, sa: str) -> np.ndarray:
        return self.get(("distinct", sa), lambda: distinct_values(self.counts[sa]))

    def entropy(self, sa: str) -> np.ndarray:
        return self.get(("entropy", sa), lambda: entropy(self.counts[sa]))

    def recursive(self, sa: str, l: int) -> tuple[np.ndarray, np.ndarray]:  # noqa: E741
        return self.get(("recursive", sa, l), lambda: recursive_parts(self.counts[sa], l))


def failing(m: NodeMeasures, sa: str, models: Models) -> np.ndarray:
    """The classes failing one sensitive column's models (a mask, computed once per node and models)."""
    def compute():
        fail = np.zeros(m.sizes.shape, dtype=bool)
        if models.t:
            fail |= m.distance(sa, models.t[1]) > models.t[0] + TOL
        if models.distinct_l is not None:
            fail |= m.distinct(sa) < models.distinct_l
        if models.p is not None:
            fail |= m.distinct(sa) < models.p
        if models.entropy_l is not None:
            fail |= m.entropy(sa) < math.log(models.entropy_l) - TOL
        if models.recursive is not None:
            c, l = models.recursive  # noqa: E741
            r1, tail = m.recursive(sa, l)
            fail |= ~(r1 < c * tail)
        return fail
    return m.get(("failing", sa, models), compute)


def reached(m: NodeMeasures, mix: Mix, keep: np.ndarray) -> dict[tuple[str, str], float]:
    """Each model's worst value over the kept classes."""
    out: dict[tuple[str, str], float] = {}
    for sa, models in mix.sensitive.items():
        if models.t:
            out[(sa, "t")] = float(m.distance(sa, models.t[1])[keep].max())
        if models.distinct_l is not None:
            out[(sa, "distinct_l")] = int(m.distinct(sa)[keep].min())
        if models.p is not None:
            out[(sa, "p")] = int(m.distinct(sa)[keep].min())
        if models.entropy_l is not None:  # the l reached: exp of the least entropy
            out[(sa, "entropy_l")] = float(math.exp(m.entropy(sa)[keep].min()))
        if models.recursive is not None:  # the largest r1 / (r_l + … + r_m), below c
            r1, tail = m.recursive(sa, models.recursive[1])
            out[(sa, "recursive")] = float((r1[keep] / tail[keep]).max())
    return out


def mix_failing(m: NodeMeasures, mix: Mix) -> np.ndarray:
    """The classes failing any model of the mix (k included)."""
    fail = m.sizes < mix.k
    for sa, models in mix.sensitive.items():
        fail = fail | failing(m, sa, models)
    return fail


def judge_all(m: NodeMeasures, mixes: dict[str, Mix], N: int) -> dict[str, Judged]:
    """One node under every mix at once: a mixes × classes failing matrix, its rows' suppressed
    rows and discernibility as two products with the class sizes. What each model reached is asked
    of the satisfying nodes alone (an optimum's): judged one mix at a time, with it for every node,
    the 129,600 judgements took ~18 s of numpy calls on tiny arrays."""
    failing_rows = np.stack([mix_failing(m, mix) for mix in mixes.values()])
    sizes = m.sizes.astype(np.int64)
    suppressed = failing_rows @ sizes
    dm = ~failing_rows @ (sizes * sizes) + suppressed * N  # exact: < 2**63
    kept_classes = sizes.size - failing_rows.sum(axis=1)
    out = {}
    for i, (name, mix) in enumerate(mixes.items()):
        satisfied = int(suppressed[i]) <= math.floor(mix.suppression * N + 1e-9)
        worst = reached(m, mix, ~failing_rows[i]) if satisfied and kept_classes[i] else {}
        out[name] = Judged(satisfied, int(kept_classes[i]), int(suppressed[i]), int(dm[i]), worst)
    return out


@pytest.fixture(scope="module")
def models_oracle(adult_dir) -> Oracle:
    qis = {"age": None, **{name: read_hierarchy(ADULT_HIERARCHIES / f"{name}.csv") for name in ADULT_QIS[1:]}}
    oracle = Oracle(adult_dir / "adult.csv", ";", qis, {OCCUPATION: "categorical", SALARY: "categorical"},
                    {sa: read_hierarchy(path) for sa, path in HIERARCHY_FILES.items()}, age_widths=ADULT_AGE_WIDTHS)
    assert oracle.N == ADULT_ROWS
    assert oracle.shape == (5, 3, 4, 3, 3, 3, 2)
    assert len(oracle.sas[0].domain) == 14 and oracle.sas[1].domain == ["<=50K", ">50K"]
    return oracle


@pytest.fixture(scope="module")
def grouper(models_oracle) -> Grouper:
    return Grouper(models_oracle)


@pytest.fixture(scope="module")
def models_solutions(models_oracle, grouper) -> dict[str, Solution]:
    """Every node once: its class matrices computed once, judged for every mix (and ablation)."""
    results: dict[str, dict[tuple, Judged]] = {name: {} for name in ALL_MIXES}
    for node in models_oracle.nodes():
        sizes, counts = grouper.classes(node)
        measures = NodeMeasures(models_oracle, sizes, counts)
        for name, judged in judge_all(measures, ALL_MIXES, models_oracle.N).items():
            results[name][node] = judged
    return {name: solve(results[name], mix.suppression) for name, mix in ALL_MIXES.items()}


_RUNS: dict[str, object] = {}


@pytest.fixture
def mix_run(request, adult_dir):
    name = request.param
    if name not in _RUNS:
        try:
            _RUNS[name] = sqlclose.anonymize(adult_dir / "adult.csv", mix_spec(MIXES[name]))
        except sqlclose.NoSolutionError as e:
            _RUNS[name] = e
    return name, _RUNS[name]


def as_tuple(node: dict[str, int]) -> tuple[int, ...]:
    assert tuple(node) == ADULT_QIS
    return tuple(int(node[q]) for q in ADULT_QIS)


# ============================================================================ the oracle's own checks


def test_oracle_models_on_hand_examples():
    """Small classes whose values are worked out by hand."""
    counts = np.array([[2, 1, 1, 0], [4, 0, 0, 0], [1, 1, 1, 1], [6, 2, 1, 1]])
    assert distinct_values(counts).tolist() == [3, 1, 4, 4]
    h = entropy(counts)
    assert h[0] == pytest.approx(-(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)), abs=CLOSE)  # 1.5 ln 2
    assert h[1] == 0 and h[2] == pytest.approx(math.log(4), abs=CLOSE)
    r1, tail = recursive_parts(counts, 2)
    assert r1.tolist() == [2, 4, 1, 6] and tail.tolist() == [2, 0, 3, 4]  # (6,2,1,1): r2+r3+r4 = 4
    r1, tail = recursive_parts(counts, 3)
    assert tail.tolist() == [1, 0, 2, 2]  # (2,1,1,0): r3+r4 = 1
    # Recursive (2, 2) on (6,2,1,1): 6 < 2·4 holds; (3, 3): 6 < 3·2 does not (strict).
    q = np.array([0.25, 0.25, 0.25, 0.25])
    P = counts / counts.sum(axis=1, keepdims=True)
    assert variational(P, q).tolist() == pytest.approx([0.25, 0.75, 0.0, 0.35], abs=CLOSE)
    assert kl(P, q)[1] == pytest.approx(math.log(4), abs=CLOSE)  # 1 · ln(1 / 0.25)
    assert kl(P, q)[0] == pytest.approx(math.log(4) - h[0], abs=CLOSE)  # KL to uniform = ln m − H
    assert kl(P, q)[2] == pytest.approx(0.0, abs=CLOSE)


def test_grouper_matches_sql_group_by(models_oracle, grouper):
    """The numpy grouping gives the oracle's SQL ``GROUP BY`` classes (two sensitive columns) on
    the bottom, top and 10 sampled nodes."""
    nodes = sampled_nodes(models_oracle, 10, seed=3)
    check_grouper(models_oracle, grouper, nodes)
    assert grouper.classes(nodes[0])[0].shape[0] > 10_000  # the bottom: Adult's many classes


# ============================================================================ sqlclose vs the oracle


@pytest.mark.parametrize("mix_run", list(MIXES), indirect=True)
def test_the_search_for_the_optimum_alone_with_model_mixes_matches_brute_force(mix_run, models_solutions):
    """The default search explores for the optimum alone, pruning by every model's suppression
    bound: it finds the oracle's optimum all the same."""
    from sqlclose.search.incognito import incognito

    name, rel = mix_run
    sol = models_solutions[name]
    if sol.optimum is None:  # no node satisfies: the run deciding the lattice said so (above)
        assert isinstance(rel, sqlclose.NoSolutionError)
        return
    result = incognito(rel.problem, rel.criteria, explore="optimum")
    assert result.optimum == sol.optimum, f"{name}: {result.optimum} ({sol.results.get(result.optimum)})"
    assert result.evaluated[result.optimum].discernibility == sol.results[sol.optimum].dm
    assert result.minimal_nodes is None


@pytest.mark.parametrize("mix_run", list(MIXES), indirect=True)
def test_search_with_model_mixes_matches_brute_force(mix_run, models_solutions):
    name, rel = mix_run
    mix, sol = MIXES[name], models_solutions[name]
    if sol.optimum is None:
        assert isinstance(rel, sqlclose.NoSolutionError), \
            f"{name}: the oracle finds no satisfying node, sqlclose chose {getattr(rel, 'node', None)}"
        return
    if isinstance(rel, Exception):
        pytest.fail(f"{name}: sqlclose raised {rel!r} but the oracle's optimum is {sol.optimum}")
    assert rel.search.satisfying.shape == (5, 3, 4, 3, 3, 3, 2)
    got = {tuple(int(x) for x in idx) for idx in np.argwhere(rel.search.satisfying)}
    missing, extra = sorted(sol.satisfying - got), sorted(got - sol.satisfying)
    assert not missing and not extra, (
        f"{name}: satisfying sets differ: {len(missing)} satisfying nodes not found "
        f"(e.g. {[(n, sol.results[n]) for n in missing[:3]]}), {len(extra)} nodes claimed that do not satisfy "
        f"(e.g. {[(n, sol.results[n]) for n in extra[:3]]})")
    assert {as_tuple(n) for n in rel.minimal_nodes} == sol.minimal
    best = sol.results[sol.optimum]
    chosen = as_tuple(rel.node)
    assert chosen == sol.optimum, \
        f"{name}: sqlclose chose {chosen} ({sol.results.get(chosen)}), oracle {sol.optimum} ({best})"
    assert tuple(int(x) for x in rel.search.optimum) == sol.optimum

    summary = rel.summary
    assert summary["utility"]["discernibility"] == best.dm
    assert summary["classes"] == best.classes
    assert summary["suppressed_rows"] == best.suppressed
    assert summary["rows"] == ADULT_ROWS - best.suppressed
    assert summary["privacy"]["min_class_size"] >= mix.k
    sensitive = summary["privacy"]["sensitive"]
    assert set(sensitive) == set(mix.sensitive)
    for sa, models in mix.sensitive.items():
        entry = sensitive[sa]
        if models.t:
            t, distance = models.t
            emd = distance in ("ordered", "equal", "hierarchical")
            assert (entry["t"], entry["distance"], entry["emd"]) == (t, distance, emd)
            value = entry["max_emd" if emd else "max_distance"]
            assert value == pytest.approx(best.reached[(sa, "t")], abs=CLOSE)
            assert value <= t + TOL
        if models.distinct_l is not None:
            assert entry["distinct_l"] == {"l": models.distinct_l, "reached": best.reached[(sa, "distinct_l")]}
        if models.p is not None:
            assert entry["p"] == {"p": models.p, "reached": best.reached[(sa, "p")]}
        if models.entropy_l is not None:
            assert entry["entropy_l"]["l"] == models.entropy_l
            assert entry["entropy_l"]["reached"] == pytest.approx(best.reached[(sa, "entropy_l")], rel=CLOSE)
            assert entry["entropy_l"]["reached"] >= models.entropy_l * (1 - CLOSE)
        if models.recursive is not None:
            c, l = models.recursive  # noqa: E741
            assert (entry["recursive"]["c"], entry["recursive"]["l"]) == (c, l)
            assert entry["recursive"]["reached"] == pytest.approx(best.reached[(sa, "recursive")], rel=CLOSE)
            assert entry["recursive"]["reached"] < c


def test_model_mixes_are_not_vacuous(models_solutions):
    """Each mix has a non-trivial satisfying set, every one of its models binds (leaving it out
    changes the satisfying set), suppression is used where allowed, and with suppression the
    non-monotone models show it (a satisfying node with a successor that does not satisfy)."""
    for name, mix in MIXES.items():
        sol = models_solutions[name]
        if name.startswith("none-"):
            assert not sol.satisfying, f"{name}: expected no satisfying node"
            continue
        assert 0 < len(sol.satisfying) < 3240, f"{name}: {len(sol.satisfying)} satisfying nodes"
        for ablated in ablations(name):
            assert models_solutions[ablated].satisfying > sol.satisfying, f"{ablated}: the left-out model does not bind"
        best = sol.results[sol.optimum]
        if mix.suppression:
            assert best.suppressed > 0, f"{name}: suppression allowed but not used"
            without = name[:-2] + "s0"
            if without in MIXES:
                assert best.dm < models_solutions[without].results[models_solutions[without].optimum].dm
                assert sol.optimum != models_solutions[without].optimum
        else:
            assert best.suppressed == 0
    broken = {}
    for name in ("ent2-s5", "rec4,4-s5", "k100-ent8-hier0.3-s5", "k20-rec1,4-hier0.4-s5"):
        sol = models_solutions[name]
        broken[name] = [(n, s) for n in sol.satisfying for i in range(len(n))
                        if (s := n[:i] + (n[i] + 1,) + n[i + 1:]) in sol.results and s not in sol.satisfying]
    assert any(broken.values()), "no mix with suppression shows a non-monotone model any more"
