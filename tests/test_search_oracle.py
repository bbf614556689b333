"""The Incognito search against the brute-force oracle of tests/oracle.py, which judges every
lattice node from the semantics alone and shares no code with sqlclose's search, lattice,
privacy, EMD, node or query modules. Written releases are re-checked from the Parquet file with
plain SQL, and the file must equal, as a multiset of rows, the release the oracle builds itself
from the input CSV."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from oracle import (  # the independent oracle, shared with test_search_models_oracle
    ADULT_AGE_WIDTHS,
    ADULT_CASES,
    ADULT_CONFIGS,
    ADULT_HIERARCHIES,
    ADULT_QIS,
    ADULT_ROWS,
    ADULT_SPEC,
    ALL_CASES,
    CLOSE,
    EMD_TOL,
    NON_MONOTONE,
    TABLE3_CASES,
    TABLE3_CONFIG,
    TABLE3_DIR,
    TABLE3_QIS,
    TABLE3_SPEC,
    Config,
    Grouper,
    Oracle,
    Solution,
    check_grouper,
    equal_emd,
    hierarchical_emd,
    ordered_emd,
    qid,
    read_hierarchy,
    sampled_nodes,
    solve,
)

import sqlclose

pytestmark = pytest.mark.slow


def adult_spec(config: Config, suppression: float) -> sqlclose.Spec:
    """The case's spec, deciding the whole lattice (the search's every outcome is checked); the
    default, for the optimum alone: ``test_the_default_search_releases_the_oracles_optimum``."""
    d = sqlclose.load_spec(ADULT_SPEC).model_dump()
    d["privacy"]["suppression"] = suppression
    d["search"]["explore"] = "lattice"
    assert d["privacy"]["k"] == config.k == 5
    assert d["sensitive"]["occupation"]["distance"] == "hierarchical"  # the spec's own hierarchy file is kept
    if not config.t:
        d["sensitive"] = {}
        d["identifiers"] = ["salary-class"]  # also exercise dropping an identifier
    for name, (t, distance) in config.t.items():
        if distance == "hierarchical":
            d["sensitive"][name]["t"] = t
        else:
            d["sensitive"][name] = {"t": t, "distance": distance}
    return sqlclose.Spec.model_validate(d)


def table3_spec(config: Config, suppression: float) -> sqlclose.Spec:
    d = sqlclose.load_spec(TABLE3_SPEC).model_dump()
    d["privacy"]["suppression"] = suppression
    d["search"]["explore"] = "lattice"  # as adult_spec
    assert d["privacy"]["k"] == 3
    d["privacy"]["k"] = config.k
    assert {n: (s["t"], s["distance"]) for n, s in d["sensitive"].items()} == TABLE3_CONFIG.t
    return sqlclose.Spec.model_validate(d)


# ============================================================================ fixtures


@pytest.fixture(scope="module")
def adult_oracle(adult_dir) -> Oracle:
    qis = {"age": None, **{name: read_hierarchy(ADULT_HIERARCHIES / f"{name}.csv") for name in ADULT_QIS[1:]}}
    oracle = Oracle(adult_dir / "adult.csv", ";", qis, {"occupation": "categorical"},
                    {"occupation": read_hierarchy(ADULT_HIERARCHIES / "occupation.csv")}, age_widths=ADULT_AGE_WIDTHS)
    assert oracle.N == ADULT_ROWS
    assert oracle.shape == (5, 3, 4, 3, 3, 3, 2)
    return oracle


@pytest.fixture(scope="module")
def table3_oracle() -> Oracle:
    return Oracle(TABLE3_DIR / "table3.csv", ",", {"zip": None, "age": read_hierarchy(TABLE3_DIR / "age.csv")},
                  {"salary": "ordered", "disease": "hierarchical"},
                  {"disease": read_hierarchy(TABLE3_DIR / "disease.csv")}, mask=("zip",))


@pytest.fixture(scope="module")
def adult_solutions(adult_oracle) -> dict[str, Solution]:
    results = adult_oracle.evaluate_all(ADULT_CASES)
    return {case: solve(results[case], ADULT_CASES[case][1]) for case in ADULT_CASES}


@pytest.fixture(scope="module")
def table3_solutions(table3_oracle) -> dict[str, Solution]:
    results = table3_oracle.evaluate_all(TABLE3_CASES)
    return {case: solve(results[case], TABLE3_CASES[case][1]) for case in TABLE3_CASES}


@dataclass
class Case:
    name: str
    config: Config
    suppression: float
    oracle: Oracle
    solution: Solution
    spec: sqlclose.Spec
    source: Path
    qis: tuple[str, ...]
    release: object  # sqlclose.Release, or the NoSolutionError raised


_RUNS: dict[str, object] = {}


def _run(name: str, source: Path, spec: sqlclose.Spec):
    """sqlclose, once per case for the whole module (the search tests and the file tests share it)."""
    if name not in _RUNS:
        try:
            _RUNS[name] = sqlclose.anonymize(source, spec)
        except sqlclose.NoSolutionError as e:
            _RUNS[name] = e
    return _RUNS[name]


@pytest.fixture
def case(request, adult_dir) -> Case:
    name = request.param
    if name in ADULT_CASES:
        config, suppression = ADULT_CASES[name]
        oracle = request.getfixturevalue("adult_oracle")
        solution = request.getfixturevalue("adult_solutions")[name]
        spec = adult_spec(config, suppression)
        source, qis = adult_dir / "adult.csv", ADULT_QIS
    else:
        config, suppression = TABLE3_CASES[name]
        oracle = request.getfixturevalue("table3_oracle")
        solution = request.getfixturevalue("table3_solutions")[name]
        spec = table3_spec(config, suppression)
        source, qis = TABLE3_DIR / "table3.csv", TABLE3_QIS
    assert tuple(spec.quasi_identifiers) == qis
    return Case(name, config, suppression, oracle, solution, spec, source, qis, _run(name, source, spec))


def as_tuple(node: dict[str, int], qis) -> tuple[int, ...]:
    assert list(node) == list(qis)
    return tuple(int(node[q]) for q in qis)


# ============================================================================ the oracle's own checks


def test_oracle_emd_matches_paper_examples():
    """Li et al.'s ordered examples and DESIGN.md's corrected hierarchical ones (Table 3, Figure 1)."""
    salaries = [str(s) for s in range(3000, 12000, 1000)]
    q_sal = np.full(9, 1 / 9)

    def dist(values, domain):
        return np.array([[values.count(v) / len(values) for v in domain]])

    assert ordered_emd(dist(["3000", "4000", "5000"], salaries), q_sal)[0] == pytest.approx(0.375, abs=CLOSE)
    assert ordered_emd(dist(["6000", "8000", "11000"], salaries), q_sal)[0] == pytest.approx(1 / 6, abs=CLOSE)
    rows = read_hierarchy(TABLE3_DIR / "disease.csv")
    table = ["gastric ulcer", "gastritis", "stomach cancer", "gastritis", "flu", "bronchitis", "bronchitis",
             "pneumonia", "stomach cancer"]
    domain = sorted(set(table))
    q_dis = dist(table, domain)[0]
    got = hierarchical_emd(dist(["gastric ulcer", "gastritis", "stomach cancer"], domain), q_dis, domain, rows)[0]
    assert got == pytest.approx(4 / 9, abs=CLOSE)
    got = hierarchical_emd(dist(["gastric ulcer", "stomach cancer", "pneumonia"], domain), q_dis, domain, rows)[0]
    assert got == pytest.approx(7 / 27, abs=CLOSE)
    assert equal_emd(dist(["flu"], domain), q_dis)[0] == pytest.approx(8 / 9, abs=CLOSE)


def _lp_emd(p, q, ground):
    from scipy.optimize import linprog

    m = len(p)
    a_eq = np.vstack([np.kron(np.eye(m), np.ones((1, m))), np.kron(np.ones((1, m)), np.eye(m))])
    res = linprog(ground.ravel(), A_eq=a_eq, b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def test_oracle_emd_matches_transport_lp():
    """The oracle's formulas equal the transport LP on the Adult occupation hierarchy (H = 2)."""
    pytest.importorskip("scipy")
    rows = read_hierarchy(ADULT_HIERARCHIES / "occupation.csv")
    domain = sorted(r[0] for r in rows)
    path = {r[0]: r for r in rows}
    H = len(rows[0]) - 1
    lca = np.array([[min(lv for lv in range(H + 1) if path[a][lv] == path[b][lv]) for b in domain] for a in domain])
    rng = np.random.default_rng(2007)
    P = rng.dirichlet(np.full(len(domain), 0.3), size=6)
    P[0] = 0
    P[0, 3] = 1.0  # a one-value class
    q = rng.dirichlet(np.ones(len(domain)))
    hier, equal = hierarchical_emd(P, q, domain, rows), equal_emd(P, q)
    m = len(domain)
    ordered_ground = np.abs(np.subtract.outer(np.arange(m), np.arange(m))) / (m - 1)
    ordered = ordered_emd(P, q)
    for i in range(len(P)):
        assert hier[i] == pytest.approx(_lp_emd(P[i], q, lca / H), abs=1e-7)
        assert equal[i] == pytest.approx(_lp_emd(P[i], q, 1.0 - np.eye(m)), abs=1e-7)
        assert ordered[i] == pytest.approx(_lp_emd(P[i], q, ordered_ground), abs=1e-7)


def test_oracle_table3_gives_the_papers_table5(table3_oracle, table3_solutions):
    """Without suppression the optimum is zip=1 (4767*, 4790*, 4760*), age=2 (<40, >=40): Table 5,
    with salary 1/6-close and disease 8/27-close (the paper's 0.278 is its erratum)."""
    sol = table3_solutions["table3-s0.0"]
    assert sol.optimum == (1, 2)
    r = sol.results[(1, 2)]
    assert (r.classes, r.suppressed, r.dm) == (3, 0, 27)
    assert r.max_emd["salary"] == pytest.approx(1 / 6, abs=CLOSE)
    assert r.max_emd["disease"] == pytest.approx(8 / 27, abs=CLOSE)
    # With suppression the all-zip=1 classes still win; (1, 3) ties on DM and loses on height.
    sol = table3_solutions["table3-s0.34"]
    assert sol.optimum == (1, 2) and sol.results[(1, 3)].dm == 27
    assert not table3_solutions["table3-k10-s0.0"].satisfying


@pytest.mark.parametrize("name", ["table3", "adult"])
def test_oracle_grouping_matches_sql_group_by(name: str, request):
    """Judging every node groups in numpy (``Grouper``), checked against the plain SQL ``GROUP BY``:
    every node of Table 3; Adult's bottom, top and 12 sampled nodes."""
    oracle = request.getfixturevalue(f"{name}_oracle")
    nodes = list(oracle.nodes()) if name == "table3" else sampled_nodes(oracle, 12, seed=5)
    check_grouper(oracle, Grouper(oracle), nodes)


# ============================================================================ the search vs the oracle


@pytest.mark.parametrize("case", ALL_CASES, indirect=True)
def test_search_matches_brute_force(case: Case):
    sol = case.solution
    if sol.optimum is None:
        assert isinstance(case.release, sqlclose.NoSolutionError), \
            f"{case.name}: the oracle finds no satisfying node, sqlclose chose {getattr(case.release, 'node', None)}"
        return
    if isinstance(case.release, Exception):
        pytest.fail(f"{case.name}: sqlclose raised {case.release!r} but the oracle's optimum is {sol.optimum}")
    rel = case.release
    assert rel.search.satisfying.shape == case.oracle.shape
    got = {tuple(int(x) for x in idx) for idx in np.argwhere(rel.search.satisfying)}
    missing, extra = sorted(sol.satisfying - got), sorted(got - sol.satisfying)
    assert not missing and not extra, (
        f"{case.name}: satisfying sets differ: {len(missing)} satisfying nodes not found "
        f"(e.g. {[(n, sol.results[n]) for n in missing[:3]]}), {len(extra)} nodes claimed that do not satisfy "
        f"(e.g. {[(n, sol.results[n]) for n in extra[:3]]})")
    assert {as_tuple(n, case.qis) for n in rel.minimal_nodes} == sol.minimal
    best = sol.results[sol.optimum]
    chosen = as_tuple(rel.node, case.qis)
    assert chosen == sol.optimum, (
        f"{case.name}: sqlclose chose {chosen} ({sol.results.get(chosen)}), oracle {sol.optimum} ({best})")
    assert tuple(int(x) for x in rel.search.optimum) == sol.optimum
    summary = rel.summary
    assert summary["utility"]["discernibility"] == best.dm
    assert summary["classes"] == best.classes
    assert summary["suppressed_rows"] == best.suppressed
    assert summary["rows"] == case.oracle.N - best.suppressed
    assert summary["privacy"]["min_class_size"] >= case.config.k
    for name, value in best.max_emd.items():
        assert summary["privacy"]["sensitive"][name]["max_emd"] == pytest.approx(value, abs=CLOSE)


@pytest.mark.parametrize("case", ALL_CASES, indirect=True)
def test_the_default_search_releases_the_oracles_optimum(case: Case):
    """A spec that says nothing of ``explore`` explores for the optimum alone: the release is the
    oracle's optimum, with its figures, and lists no minimal nodes."""
    search = case.spec.search.model_copy(update={"explore": None})
    spec = case.spec.model_copy(update={"search": search})
    assert spec.search.exploring == "optimum"
    sol = case.solution
    if sol.optimum is None:
        with pytest.raises(sqlclose.NoSolutionError):
            sqlclose.anonymize(case.source, spec)
        return
    best = sol.results[sol.optimum]
    with sqlclose.anonymize(case.source, spec) as release:
        assert as_tuple(release.node, case.qis) == sol.optimum
        assert release.minimal_nodes is None
        summary = release.summary
    assert (summary["utility"]["discernibility"], summary["classes"], summary["suppressed_rows"]) == \
        (best.dm, best.classes, best.suppressed)


def assert_search_gives(result, sol: Solution) -> None:
    """A search result (not a release) against the oracle's solution."""
    assert {tuple(int(x) for x in idx) for idx in np.argwhere(result.satisfying)} == sol.satisfying
    assert set(result.minimal_nodes) == sol.minimal
    assert result.optimum == sol.optimum
    assert result.evaluated[result.optimum].discernibility == sol.results[sol.optimum].dm
    assert result.evaluated[result.optimum].suppressed == sol.results[sol.optimum].suppressed


SQL_PATH_CASES = ["adult-k5-hier-s0.0", "adult-k5-equal-s0.05", "adult-k5-s0.05", NON_MONOTONE]


# Parts of 200 kB for k alone at 5 % (~4,000 nodes over both walks): its levels still come back in parts
# (up to 35 a level, 9 levels of 14), several nodes to a part; at 5 kB ~1,800 parts took 4 times the time.
PART_BYTES = {"adult-k5-s0.05": 200_000}


@pytest.mark.parametrize("returned", [None, 5_000], ids=["whole-levels", "levels-in-parts"])
@pytest.mark.parametrize("case", SQL_PATH_CASES, indirect=True)
def test_sql_level_batches_match_brute_force(case: Case, returned: int | None, monkeypatch):
    """Small inputs with at most one sensitive attribute take the in-memory rollups
    (sqlclose.search.memory_runner.MemoryRunner); the others the SQL level batches (Table 3, with two, does in
    the tests above). Forcing the SQL path on Adult keeps it checked against the oracle too — with each
    level's classes brought back whole, and in parts of at most 5 kB (as under a small memory limit; 200 kB
    where 5 kB made a part of nearly every node)."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search import batch_runner, memory_runner, runners

    search = importlib.import_module("sqlclose.search.incognito")
    problem = case.release.problem
    assert isinstance(runners.runner_for(problem), memory_runner.MemoryRunner)  # what the other tests exercised
    monkeypatch.setattr(memory_runner, "MEMORY_BASE_ROWS", 0)
    assert isinstance(runners.runner_for(problem), batch_runner.BatchRunner)
    most_parts = [1]
    if returned is not None:
        monkeypatch.setattr(batch_runner, "RETURNED_BYTES", PART_BYTES.get(case.name, returned))
        split = batch_runner._parts
        monkeypatch.setattr(batch_runner, "_parts", lambda rows, budget: most_parts.append(len(split(rows, budget)))
                            or split(rows, budget))
    result = search.incognito(problem, criteria_for(problem.k, problem.sas))
    assert (max(most_parts) > 1) == (returned is not None)  # the parts path really ran, or really did not
    assert_search_gives(result, case.solution)


def maximal_failing(solution: Solution, shape: tuple[int, ...]) -> set[tuple[int, ...]]:
    """Failing nodes whose every one-step generalization satisfies (from the oracle's results)."""
    found = set()
    for node in solution.results:
        if node in solution.satisfying:
            continue
        ups = [node[:i] + (node[i] + 1,) + node[i + 1:] for i in range(len(node)) if node[i] + 1 < shape[i]]
        if all(up in solution.satisfying for up in ups):
            found.add(node)
    return found


EITHER_END_CASES = ["adult-k5-s0.0", "adult-k5-hier-s0.0", "adult-k5-hier-s0.05", NON_MONOTONE, "table3-s0.34"]


@pytest.mark.parametrize("share", [0.0, 1e18], ids=["from-above-alone", "from-below-alone"])
@pytest.mark.parametrize("case", EITHER_END_CASES, indirect=True)
def test_either_walk_alone_matches_brute_force(case: Case, share: float, monkeypatch):
    """The search walks the full lattice from both ends; each walk alone must give the oracle's
    answer. From above alone, without suppression, it evaluates exactly the satisfying nodes and
    the highest failing ones (everything lower is decided by them)."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for

    search = importlib.import_module("sqlclose.search.incognito")
    monkeypatch.setattr(search, "BELOW_SHARE", share)
    problem = case.release.problem
    result = search.incognito(problem, criteria_for(problem.k, problem.sas))
    assert_search_gives(result, case.solution)
    if share == 0.0 and case.suppression == 0:
        sol = case.solution
        assert set(result.evaluated) == sol.satisfying | maximal_failing(sol, case.oracle.shape)


def assert_optimum_gives(result, sol: Solution) -> None:
    """A search for the optimum alone against the oracle: the same optimum, and what it recorded
    of every node it evaluated is true."""
    assert not result.complete and result.minimal_nodes is None
    assert result.optimum == sol.optimum
    assert result.evaluated[result.optimum].discernibility == sol.results[sol.optimum].dm
    assert result.evaluated[result.optimum].suppressed == sol.results[sol.optimum].suppressed
    for node, ev in result.evaluated.items():
        if ev.satisfied:  # a node left unread is recorded failing, whatever it would have been
            assert node in sol.satisfying and ev.discernibility == sol.results[node].dm, node


@pytest.mark.parametrize("share", [0.0, 0.1, 1e18], ids=["from-above-alone", "both-ends", "from-below-alone"])
@pytest.mark.parametrize("case", [c for c in ALL_CASES if c != "table3-k10-s0.0"], indirect=True)
def test_search_for_the_optimum_matches_brute_force(case: Case, share: float, monkeypatch):
    """explore = "optimum" leaves alone nodes that cannot be the optimum: it must still find the
    oracle's optimum, from either end or both, and evaluate fewer nodes than deciding the lattice."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for

    search = importlib.import_module("sqlclose.search.incognito")
    monkeypatch.setattr(search, "BELOW_SHARE", share)
    problem = case.release.problem
    criteria = criteria_for(problem.k, problem.sas)
    whole = search.incognito(problem, criteria)
    result = search.incognito(problem, criteria, explore="optimum")
    assert_optimum_gives(result, case.solution)
    assert whole.complete and len(result.evaluated) <= len(whole.evaluated)


@pytest.mark.parametrize("explore", ["lattice", "optimum"])
@pytest.mark.parametrize("case", SQL_PATH_CASES, indirect=True)
def test_floors_of_floors_match_brute_force(case: Case, explore: str, monkeypatch):
    """Floors refined from floors (``_refine_floors``) wherever a candidate exists — every floor
    large enough, candidates of two nodes, estimates made tiny — give the oracle's answer, deciding
    the lattice or exploring for the optimum; refined floors were really made (from a floor, not
    the base) and nodes were generalized from them."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search import batch_runner, floors, memory_runner

    search = importlib.import_module("sqlclose.search.incognito")
    problem = case.release.problem
    monkeypatch.setattr(memory_runner, "MEMORY_BASE_ROWS", 0)
    monkeypatch.setattr(floors, "FLOOR_GROUP_MIN", 2)
    monkeypatch.setattr(floors, "REFINE_SHARE", 10 ** 12)
    monkeypatch.setattr(batch_runner.BatchRunner, "_space", lambda self, subset, levels: float("inf"))
    monkeypatch.setattr(batch_runner.BatchRunner, "_fetch_estimates", lambda self, rows: [1.0] * len(rows))
    real = batch_runner.BatchRunner._fetch_floor_estimates
    refined, used = set(), []
    monkeypatch.setattr(batch_runner.BatchRunner, "_fetch_floor_estimates",
                        lambda self, rows, floors: real(self, rows, floors) and [0.5] * len(rows))
    add = batch_runner.BatchRunner._add_floors

    def spied_add(self, query, new):
        if "floors" in query.sql():  # grouped from the floors table, not from the base
            refined.update(range(self._floors_made, self._floors_made + len(new)))
        return add(self, query, new)

    monkeypatch.setattr(batch_runner.BatchRunner, "_add_floors", spied_add)
    floor_for = batch_runner.BatchRunner._floor_for
    monkeypatch.setattr(batch_runner.BatchRunner, "_floor_for",
                        lambda self, subset, node: used.append(found := floor_for(self, subset, node)) or found)
    result = search.incognito(problem, criteria_for(problem.k, problem.sas), explore=explore)
    assert refined and any(f is not None and f[0] in refined for f in used)
    if explore == "lattice":
        assert_search_gives(result, case.solution)
    else:
        assert_optimum_gives(result, case.solution)


# A node a chunk, and chunks of 20 k rows; k alone at 5 % (~1,000 nodes a walk) only in the latter, for time,
# and in chunks of 100 k rows: its levels still split (56 chunks of up to 188 nodes, against 274 of 20 k rows
# that took twice the time).
CHUNKED = [(c, 1) for c in SQL_PATH_CASES if c != "adult-k5-s0.05"] + [
    (c, 100_000 if c == "adult-k5-s0.05" else 20_000) for c in SQL_PATH_CASES]


@pytest.mark.parametrize("explore", ["lattice", "optimum"])
@pytest.mark.parametrize(("case", "chunk_rows"), CHUNKED, indirect=["case"])
def test_levels_judged_in_chunks_match_brute_force(case: Case, explore: str, chunk_rows: int, monkeypatch):
    """The walk from above's levels staged and judged in chunks (``CHUNK_ROWS``, ~60 M rows in a
    job, shrunk here so that Adult's levels split): the oracle's answer, deciding the lattice or
    exploring for the optimum; levels were really split (a node a chunk at the smallest budget),
    each chunk within the budget by its bound (a node over it alone), and the walk from below still
    staged its levels whole."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search import batch_runner, memory_runner

    search = importlib.import_module("sqlclose.search.incognito")
    problem = case.release.problem
    monkeypatch.setattr(memory_runner, "MEMORY_BASE_ROWS", 0)
    monkeypatch.setattr(batch_runner, "CHUNK_ROWS", chunk_rows)
    built, levels = [], []
    build, chunked = batch_runner.BatchRunner._build_kept, batch_runner.BatchRunner._chunked_parts

    def spied_build(self, rollups, parentless, make_floors=True):
        bound = sum(self._rows_bound(*item) for _, item in parentless)
        built.append((self.levels_are_parents, make_floors, len(parentless), bound))
        return build(self, rollups, parentless, make_floors)

    def spied_chunked(self, items, parentless):
        levels.append(len(items))
        return chunked(self, items, parentless)

    tiles = []
    parts = batch_runner.BatchRunner.level_parts

    def spied_parts(self, items):
        got = list(parts(self, items))
        tiles.append(([(p.start, p.stop) for p in got], len(items)))
        assert all(not len(p.hist.node) or p.hist.node.max() < p.stop - p.start for p in got)
        yield from got

    monkeypatch.setattr(batch_runner.BatchRunner, "_build_kept", spied_build)
    monkeypatch.setattr(batch_runner.BatchRunner, "_chunked_parts", spied_chunked)
    monkeypatch.setattr(batch_runner.BatchRunner, "level_parts", spied_parts)
    result = search.incognito(problem, criteria_for(problem.k, problem.sas), explore=explore)
    for ranges, n in tiles:  # each level's parts tile its items in order
        assert [a for a, _ in ranges] == [0, *(b for _, b in ranges[:-1])] and ranges[-1][1] == n
    chunks = [b for b in built if not b[0]]
    assert chunks and all(not make_floors for _, make_floors, _, _ in chunks)
    assert sum(n for _, _, n, _ in chunks) == sum(levels)  # every node of those levels, once
    if chunk_rows == 1:  # every node its own chunk
        assert len(chunks) == sum(levels) > len(levels)
    assert all(bound <= chunk_rows or n == 1 for _, _, n, bound in chunks)
    assert all(make_floors for parents, make_floors, _, _ in built if parents)  # from below: whole levels
    if explore == "lattice":
        assert_search_gives(result, case.solution)
    else:
        assert_optimum_gives(result, case.solution)


@pytest.mark.parametrize("case", ["adult-k5-hier-s0.05", "adult-k5-s0.05", NON_MONOTONE, "adult-k5-hier-s0.0"],
                         indirect=True)
def test_sql_batches_for_the_optimum_match_brute_force(case: Case, monkeypatch):
    """The SQL level batches, exploring for the optimum, do not read the classes of nodes whose
    records below k alone cost more than a node found (``read_within``): same optimum as the
    oracle, and such nodes were really left unread under suppression."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search import batch_runner, memory_runner

    search = importlib.import_module("sqlclose.search.incognito")
    problem = case.release.problem
    monkeypatch.setattr(memory_runner, "MEMORY_BASE_ROWS", 0)
    cut_short = []
    parts = batch_runner.BatchRunner._judged_parts

    def spied(self, ids, found=None):
        for part in parts(self, ids, found):
            cut_short.append(int((part.hist.unread & (part.hist.presuppressed <= problem.max_suppressed)).sum()))
            yield part

    monkeypatch.setattr(batch_runner.BatchRunner, "_judged_parts", spied)
    result = search.incognito(problem, criteria_for(problem.k, problem.sas), explore="optimum")
    assert_optimum_gives(result, case.solution)
    within = case.solution.results[case.solution.optimum].dm // problem.rows  # records the optimum's cost allows
    assert (sum(cut_short) > 0) == (within < problem.max_suppressed)


@pytest.mark.parametrize("block", [None, 7])
@pytest.mark.parametrize("name", ["adult", "table3"])
def test_least_discernibility_is_below_every_nodes(name: str, block: int | None, request, monkeypatch):
    """The floor the search for the optimum rules nodes out by (rows² / the classes a node can
    have) is at most every node's discernibility, as the oracle computes it, at any suppression.
    The floors are computed by blocks (a float64 array over the whole lattice was 26 GiB at 20 QIs,
    review rv24): blocks of 7 nodes give the floor worked here from the hierarchies' label counts."""
    from sqlclose.search import incognito as search

    if block is not None:
        monkeypatch.setattr(search, "FLOOR_BLOCK", block)
    oracle = request.getfixturevalue(f"{name}_oracle")
    cases = ADULT_CASES if name == "adult" else TABLE3_CASES
    spec = adult_spec(*cases[next(iter(cases))]) if name == "adult" else table3_spec(*cases[next(iter(cases))])
    source = request.getfixturevalue("adult_dir") / "adult.csv" if name == "adult" else TABLE3_DIR / "table3.csv"
    with sqlclose.anonymize(source, spec) as release:
        problem = release.problem
        floor = np.zeros(oracle.shape)
        for index, floors in search._floor_blocks(oracle.shape, search._labels_per_level(problem), problem.rows):
            floor[index] = floors
        labels = [[len(qi.hierarchy.labels(level)) for level in range(qi.levels)] for qi in problem.qis]
    for node in np.ndindex(*oracle.shape):
        classes = min(problem.rows, math.prod(labels[axis][level] for axis, level in enumerate(node)))
        assert floor[node] == problem.rows ** 2 / classes, node
    for case in cases:
        for node, r in request.getfixturevalue(f"{name}_solutions")[case].results.items():
            assert floor[node] <= r.dm, (case, node)
    assert (floor > 0).all()


def test_adult_cases_are_not_vacuous(adult_solutions):
    """The cases exercise what they claim: non-trivial satisfying sets, t that binds, suppression
    that is used and moves the optimum."""
    count = {name: len(sol.satisfying) for name, sol in adult_solutions.items()}
    best = {name: sol.results[sol.optimum] for name, sol in adult_solutions.items()}
    optimum = {name: sol.optimum for name, sol in adult_solutions.items()}
    for name, n in count.items():
        assert 0 < n < 3240, f"{name}: {n} satisfying nodes"
    for config in ADULT_CONFIGS:
        with_s, without = f"adult-{config}-s0.05", f"adult-{config}-s0.0"
        assert best[with_s].dm < best[without].dm
        assert best[with_s].suppressed > 0 and best[without].suppressed == 0
        assert optimum[with_s] != optimum[without]
    assert count["adult-k5-hier-s0.0"] < count["adult-k5-s0.0"]  # t removes nodes
    assert count["adult-k5-equal-s0.0"] < count["adult-k5-s0.0"]
    assert optimum["adult-k5-s0.05"] not in adult_solutions["adult-k5-s0.05"].minimal  # the pool is all of S
    # With suppression, t-closeness is not monotone: a satisfying node with a failing successor.
    sol = adult_solutions[NON_MONOTONE]
    broken = [(n, m) for n in sol.satisfying for i in range(len(n))
              if (m := n[:i] + (n[i] + 1,) + n[i + 1:]) in sol.results and m not in sol.satisfying]
    assert broken, "the non-monotone case no longer shows the suppression caveat"


# ============================================================================ the written file vs the oracle


@pytest.mark.parametrize("case", ALL_CASES, indirect=True)
def test_written_release_rechecked_from_file(case: Case, tmp_path):
    sol = case.solution
    if sol.optimum is None:
        assert isinstance(case.release, sqlclose.NoSolutionError)
        return
    if isinstance(case.release, Exception):
        pytest.fail(f"{case.name}: sqlclose raised {case.release!r} but the oracle's optimum is {sol.optimum}")
    assert_written_release_is_the_oracles(case, tmp_path)


def assert_written_release_is_the_oracles(case: Case, tmp_path: Path) -> None:
    """The case's release written to Parquet, re-checked from the file with plain SQL, equal as a
    multiset of rows to the oracle's own release, its report beside it."""
    sol = case.solution
    rel, oracle, node = case.release, case.oracle, sol.optimum
    best = sol.results[node]
    out = tmp_path / "release.parquet"
    doc = rel.write_parquet(out)
    assert out.is_file()

    con = duckdb.connect()
    cols = [r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(out)]).fetchall()]
    expected_cols = [c for c in oracle.columns if c not in case.spec.identifiers]
    assert cols == expected_cols
    assert not set(case.spec.identifiers) & set(cols)

    qi_list = ", ".join(qid(c) for c in case.qis)
    sizes = np.array([r[-1] for r in con.execute(
        f"SELECT {qi_list}, COUNT(*) FROM read_parquet(?) GROUP BY ALL", [str(out)]).fetchall()])
    assert sizes.min() >= case.config.k
    assert len(sizes) == best.classes
    assert sizes.sum() == oracle.N - best.suppressed

    # Max EMD per sensitive column, from the file's classes and the input CSV's distribution.
    for name, (t, distance) in case.config.t.items():
        sa = next(s for s in oracle.sas if s.name == name)
        rows = con.execute(f"SELECT {qi_list}, CAST({qid(name)} AS VARCHAR), COUNT(*) FROM read_parquet(?) "
                           "GROUP BY ALL", [str(out)]).fetchall()
        index: dict[tuple, int] = {}
        matrix = np.zeros((len(sizes), len(sa.domain)))
        column = {v: i for i, v in enumerate(sa.domain)}
        for r in rows:
            matrix[index.setdefault(tuple(r[:-2]), len(index)), column[r[-2]]] += r[-1]
        P = matrix / matrix.sum(axis=1, keepdims=True)
        q = oracle.q[name]
        if distance == "equal":
            found = equal_emd(P, q).max()
        elif distance == "ordered":
            found = ordered_emd(P, q).max()
        else:
            found = hierarchical_emd(P, q, sa.domain, sa.hierarchy).max()
        assert found <= t + EMD_TOL
        assert found == pytest.approx(best.max_emd[name], abs=CLOSE)
        if best.suppressed:  # withheld: the input's distribution holds the suppressed rows' values
            assert "max_emd" not in doc["privacy"]["sensitive"][name]
        else:
            assert doc["privacy"]["sensitive"][name]["max_emd"] == pytest.approx(found, abs=CLOSE)

    # The file is exactly the oracle's release, as a multiset of rows (labels, other columns).
    sizes_o, counts_o, labels = oracle.classes(node, labels=True)  # one query: rows stay aligned
    emds = oracle.emds(sizes_o, counts_o, {(n, d) for n, (t, d) in case.config.t.items()})
    keep = ~oracle.failing(sizes_o, emds, case.config)
    kept = pa.table({f"g{i}": pa.array(labels[i], pa.string()).filter(pa.array(keep)) for i in range(len(node))})
    oracle.con.register("kept_view", kept)
    try:
        expected = oracle.release_rows_sql(node, "kept_view")
        shown = ", ".join(f"CAST({qid(c)} AS VARCHAR)" for c in expected_cols)
        file_rows = f"SELECT {shown} FROM read_parquet('{out.as_posix()}')"
        oracle_rows = f"SELECT {shown} FROM ({expected})"
        count = "SELECT COUNT(*) FROM ({} EXCEPT ALL {})"
        only_file = oracle.con.execute(count.format(file_rows, oracle_rows)).fetchall()[0][0]
        only_oracle = oracle.con.execute(count.format(oracle_rows, file_rows)).fetchall()[0][0]
    finally:
        oracle.con.unregister("kept_view")
    assert (only_file, only_oracle) == (0, 0), \
        f"{case.name}: {only_file} rows only in the file, {only_oracle} only in the oracle's release"

    # The report beside it.
    report = json.loads(out.with_name(out.name + ".report.json").read_text())
    assert report["verified"] is True
    assert as_tuple(report["node"], case.qis) == node
    assert report == json.loads(json.dumps(doc))
    assert report["output"]["rows"] == oracle.N - best.suppressed
    assert report["classes"] == best.classes
    assert report["suppressed_rows"] == best.suppressed
    assert {as_tuple(n, case.qis) for n in case.release.minimal_nodes} == sol.minimal  # the operator's
    assert "minimal_nodes" not in report
    assert set(report["lattice"]) == {"levels", "size", "complete", "searched", "seconds"}


# Adult repeats combinations (30,162 rows, fewer combinations); Table 3's rows are all distinct.
BASE_CASES = [("adult-k5-hier-s0.0", "in-memory"), ("adult-k5-s0.05", "sql-batches"), (NON_MONOTONE, "in-memory"),
              (NON_MONOTONE, "sql-batches")]


@pytest.mark.parametrize(("case", "runner"), BASE_CASES, indirect=["case"])
def test_a_base_of_the_rows_as_they_stand_matches_brute_force(case: Case, runner: str, tmp_path, monkeypatch):
    """A base histogram that keeps the rows as they stand, one per row with a count of 1 (what
    preparation chooses when nearly every row of a large source is its own combination): every
    reader sums its counts, so the search, the release and its file are the oracle's. Forced here
    on inputs with many repeated combinations, so that each combination really has several rows."""
    from sqlclose.prepare import problem as preparation
    from sqlclose.search import batch_runner, memory_runner, runners

    monkeypatch.setattr(preparation, "UNGROUPED_MIN_ROWS", 0)
    monkeypatch.setattr(preparation, "UNGROUPED_SHARE", 0.0)
    if runner == "sql-batches":
        monkeypatch.setattr(memory_runner, "MEMORY_BASE_ROWS", 0)
    grouped = case.release.problem
    with sqlclose.anonymize(case.source, case.spec) as release:
        problem = release.problem
        assert problem.base_rows == problem.rows == case.oracle.N > grouped.base_rows  # one row per row
        assert problem.stored_keys is not None  # the search's keys; the base a view of them (prepare.stored_keys)
        wanted = memory_runner.MemoryRunner if runner == "in-memory" else batch_runner.BatchRunner
        assert isinstance(runners.runner_for(problem), wanted)
        assert_search_gives(release.search, case.solution)
        assert {as_tuple(n, case.qis) for n in release.minimal_nodes} == case.solution.minimal
        assert_written_release_is_the_oracles(dataclasses.replace(case, release=release), tmp_path)


@pytest.mark.parametrize("case", ["adult-k5-hier-s0.05"], indirect=True)
def test_pycanon_agrees_on_k(case: Case, tmp_path):
    """A second library (test-only bonus) computes the same k from the written file."""
    from pycanon import anonymity
    sol = case.solution
    assert sol.optimum is not None
    out = tmp_path / "release.parquet"
    case.release.write_parquet(out)
    df = duckdb.connect().execute("SELECT * FROM read_parquet(?)", [str(out)]).fetchdf().reset_index(drop=True)
    k = anonymity.k_anonymity(df, list(case.qis))
    sizes = duckdb.connect().execute(
        f"SELECT COUNT(*) FROM read_parquet(?) GROUP BY {', '.join(qid(c) for c in case.qis)}", [str(out)]).fetchall()
    assert k == min(s[0] for s in sizes) >= case.config.k
    assert k == case.release.summary["privacy"]["min_class_size"]


@pytest.mark.parametrize("case", SQL_PATH_CASES, indirect=True)
def test_floors_chosen_by_estimate_match_brute_force(case: Case, monkeypatch):
    """The SQL level batches with every floor chosen by estimated rows (none by the code-space
    bound), and estimates made tiny so that floors are chosen wherever there are candidates: the
    search still matches the oracle, and floors were really made and used."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search import batch_runner, floors, memory_runner

    search = importlib.import_module("sqlclose.search.incognito")
    problem = case.release.problem
    monkeypatch.setattr(memory_runner, "MEMORY_BASE_ROWS", 0)
    monkeypatch.setattr(floors, "FLOOR_GROUP_MIN", 2)
    monkeypatch.setattr(batch_runner.BatchRunner, "_space", lambda self, subset, levels: float("inf"))
    estimated, used = [], []
    real = batch_runner.BatchRunner._fetch_estimates
    monkeypatch.setattr(batch_runner.BatchRunner, "_fetch_estimates",
                        lambda self, rows: estimated.append(real(self, rows)) or [1.0] * len(rows))
    floor_for = batch_runner.BatchRunner._floor_for
    monkeypatch.setattr(batch_runner.BatchRunner, "_floor_for",
                        lambda self, subset, node: used.append(found := floor_for(self, subset, node)) or found)
    result = search.incognito(problem, criteria_for(problem.k, problem.sas))
    assert estimated and any(f is not None for f in used)
    assert_search_gives(result, case.solution)


@pytest.mark.parametrize("explore", ["lattice", "optimum"])
@pytest.mark.parametrize("case", SQL_PATH_CASES, indirect=True)
def test_floors_bounded_by_code_space_match_brute_force(case: Case, explore: str, monkeypatch):
    """The SQL level batches with floors at the meets of pairs of nodes wherever the greedy choice
    takes them (every code space made tiny, the meet of a whole group never taken, no estimates):
    the search still matches the oracle, and such floors were really made and nodes read them."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search import batch_runner, floors, memory_runner

    search = importlib.import_module("sqlclose.search.incognito")
    problem = case.release.problem
    monkeypatch.setattr(memory_runner, "MEMORY_BASE_ROWS", 0)
    monkeypatch.setattr(floors, "FLOOR_GROUP_MIN", 10 ** 9)
    monkeypatch.setattr(batch_runner.BatchRunner, "_space", lambda self, subset, levels: 1.0)
    monkeypatch.setattr(batch_runner.BatchRunner, "_small_meet", lambda self, subset, nodes_: None)
    bounded, used = set(), []
    real = batch_runner.BatchRunner._bounded_floors

    def spied(self, subset, nodes_, room):
        chosen, rest = real(self, subset, nodes_, room)
        bounded.update(chosen)
        return chosen, rest

    monkeypatch.setattr(batch_runner.BatchRunner, "_bounded_floors", spied)
    floor_for = batch_runner.BatchRunner._floor_for
    monkeypatch.setattr(batch_runner.BatchRunner, "_floor_for",
                        lambda self, subset, node: used.append((subset, found := floor_for(self, subset, node)))
                        or found)
    result = search.incognito(problem, criteria_for(problem.k, problem.sas), explore=explore)
    assert bounded and any(f is not None and (subset, f[1]) in bounded for subset, f in used)
    if explore == "lattice":
        assert_search_gives(result, case.solution)
    else:
        assert_optimum_gives(result, case.solution)




@pytest.mark.parametrize("share", [0.0, None], ids=["from-above-alone", "both-walks"])
@pytest.mark.parametrize("explore", ["lattice", "optimum"])
@pytest.mark.parametrize("case", ["adult-k5-s0.0", "adult-k5-hier-s0.0", "adult-k5-equal-s0.0", "table3-s0.0",
                                  "adult-k5-s0.05"], indirect=True)
def test_the_screen_matches_brute_force(case: Case, explore: str, share: float | None, monkeypatch):
    """The walk from above's nodes screened by a sample of their classes (``search.screen``), every
    node large enough here: the oracle's answer, deciding the lattice or exploring for the optimum,
    with the walk from above alone or both walks. Every node the screen ruled out fails in the
    oracle and was not grouped; from above alone without suppression it ruled nodes out; with
    suppression it never runs."""
    screened, grouped = _screened_search(case, explore, share, 2, monkeypatch)
    if share == 0.0 and not case.suppression:
        assert screened
    if case.suppression:
        assert not screened
    assert not set(screened) & set(grouped)
    assert not any(case.solution.results[node].satisfied for node in screened)


@pytest.mark.parametrize("case", ["adult-k5-s0.0", "adult-k5-hier-s0.0", "adult-k5-equal-s0.0", "table3-s0.0"],
                         indirect=True)
def test_a_screen_of_every_class_rules_out_exactly_the_failing_nodes(case: Case, monkeypatch):
    """With a sample of every class (modulus 1) and no suppression, the screen rules out exactly the
    nodes the walk from above evaluates that fail in the oracle: by k alone in SQL, by t too
    judged as a level is. The others were grouped."""
    screened, grouped = _screened_search(case, "lattice", 0.0, 1, monkeypatch)
    evaluated = set(screened) | set(grouped)
    assert set(screened) == {node for node in evaluated if not case.solution.results[node].satisfied}
    assert screened and grouped


@pytest.mark.parametrize("explore", ["lattice", "optimum"])
@pytest.mark.parametrize("case", ["adult-k5-s0.0", "adult-k5-hier-s0.0", "adult-k5-equal-s0.0", "table3-s0.0"],
                         indirect=True)
def test_a_kept_sample_screens_the_nodes_of_later_levels_at_or_below_it(case: Case, explore: str, monkeypatch):
    """The last samples are kept for the levels after theirs (``SCREEN_KEPT_SAMPLES``): a node at
    or below one (each QI at its level or finer: whole classes of it) is screened by it without a
    new pass over the base, if the sample holds ``SCREEN_MIN_VALUES`` classes or more. Here some
    were; each was below the sample it used, of enough classes; the answer is the oracle's, and no
    node the screen ruled out passes in it."""
    from sqlclose.search import screen

    reused: list[tuple[tuple[int, ...], tuple[int, ...], bool]] = []  # (node, sample's levels, enough classes)
    kept_sample = screen.SampledScreen._kept_sample

    def spied(self, subset, node):
        table = kept_sample(self, subset, node)
        if table is not None:
            levels = next(tuple(levels) for _, levels, t in self._samples if t == table)
            enough = self._space(subset, levels) >= screen.SCREEN_MIN_VALUES * self.packing.sa_width
            reused.append((tuple(node), levels, enough))
        return table

    monkeypatch.setattr(screen.SampledScreen, "_kept_sample", spied)
    screened, _ = _screened_search(case, explore, 0.0, 2, monkeypatch)
    assert reused
    assert all(a <= b for node, levels, _ in reused for a, b in zip(node, levels))
    assert all(enough for *_, enough in reused)  # a sample of a few classes is not reused
    assert not any(case.solution.results[node].satisfied for node in screened)


def _screened_search(case: Case, explore: str, share: float | None, modulus: int,
                     monkeypatch) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """The SQL search with the screen reading every node, its sample drawn by ``modulus``: the
    oracle's answer asserted; the nodes the screen ruled out, and those the walk from above grouped."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search import batch_runner, memory_runner, screen

    search = importlib.import_module("sqlclose.search.incognito")
    problem = case.release.problem
    if share is not None:
        monkeypatch.setattr(search, "BELOW_SHARE", share)
    monkeypatch.setattr(memory_runner, "MEMORY_BASE_ROWS", 0)
    monkeypatch.setattr(screen, "SCREEN_MIN_ROWS", 0)
    monkeypatch.setattr(screen, "SCREEN_MIN_VALUES", 2)
    monkeypatch.setattr(screen, "SCREEN_MODULUS", modulus)
    screened, grouped = [], []
    screen_of, build = screen.SampledScreen._screened, batch_runner.BatchRunner._build_kept

    def spied_screen(self, parentless, count):
        found = screen_of(self, parentless, count)
        screened.extend(tuple(int(v) for v in node) for n, (_, node) in parentless if found[n] > 0)
        return found

    def spied_build(self, rollups, parentless, make_floors=True):
        if not self.levels_are_parents:  # the walk from above's
            grouped.extend(tuple(int(v) for v in node) for _, (_, node) in parentless)
        return build(self, rollups, parentless, make_floors)

    monkeypatch.setattr(screen.SampledScreen, "_screened", spied_screen)
    monkeypatch.setattr(batch_runner.BatchRunner, "_build_kept", spied_build)
    result = search.incognito(problem, criteria_for(problem.k, problem.sas), explore=explore)
    if explore == "lattice":
        assert_search_gives(result, case.solution)
    else:
        assert_optimum_gives(result, case.solution)
    return screened, grouped
