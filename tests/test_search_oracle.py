"""The Incognito search against a brute-force oracle over every lattice node.

The oracle is written here from the semantics alone and shares no code with sqlclose's search,
lattice, privacy, EMD, node or query modules:

- hierarchies are read from the ARX-format CSVs with the ``csv`` module (age bands and ZIP
  masking are rebuilt by their rules), and loaded into DuckDB as (value, label at each level)
  tables;
- each node's classes come from a plain SQL ``GROUP BY`` over the generalized labels (first
  pre-aggregated by all raw QI values and the sensitive values, with ``SUM(n)`` per node);
- EMD is the plain formula of Li et al. section 5 (equal, ordered, hierarchical), itself
  checked against the paper's examples (with DESIGN.md's erratum) and a transport LP;
- a class fails if it is smaller than k or its EMD exceeds t + 1e-12; a node satisfies when its
  failing classes hold at most floor(s·N) rows; discernibility = Σ kept size² + suppressed·N;
- the optimum is the least-discernibility minimal node (no suppression) or satisfying node
  (with suppression), ties broken by height, then by the level tuple.

Every node of the lattice is judged (3,240 for Adult), so the oracle sees the whole satisfying
set, not only what a pruned search reaches. Written releases are re-checked from the Parquet
file with plain SQL, and the file must equal, as a multiset of rows, the release the oracle
builds itself from the input CSV.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import sqlclose

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
ADULT_SPEC = REPO / "datasets" / "adult" / "adult.toml"
ADULT_HIERARCHIES = REPO / "datasets" / "adult" / "hierarchies"
TABLE3_DIR = REPO / "datasets" / "table3"
TABLE3_SPEC = TABLE3_DIR / "table3.toml"

ADULT_QIS = ("age", "workclass", "education", "native-country", "marital-status", "race", "sex")  # spec order
ADULT_AGE_WIDTHS = (5, 10, 20)
ADULT_ROWS = 30_162
TABLE3_QIS = ("zip", "age")

EMD_TOL = 1e-12  # a class passes t when EMD <= t + EMD_TOL
CLOSE = 1e-9  # two computations of the same EMD agree this closely


# ============================================================================ hierarchies


def read_hierarchy(path: Path) -> list[list[str]]:
    """ARX format: one ``leaf;l1;…;top`` line per leaf."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = [row for row in csv.reader(f, delimiter=";") if row]
    assert rows and len({len(r) for r in rows}) == 1, f"{path}: ragged or empty hierarchy"
    return rows


def band_rows(values: list[str], widths: tuple[int, ...]) -> list[list[str]]:
    """Integer bands: level i (1-based) is ``lo-hi`` with lo = floor(v / w_i) * w_i, hi = lo + w_i - 1."""
    rows = []
    for text in values:
        v = int(text)
        row = [text]
        for w in widths:
            lo = (v // w) * w
            row.append(f"{lo}-{lo + w - 1}")
        rows.append(row + ["*"])
    return rows


def mask_rows(values: list[str]) -> list[list[str]]:
    """Level l replaces the last l characters by '*' (all of them at the top)."""
    n = len(values[0])
    assert all(len(v) == n for v in values)
    return [[v[: n - level] + "*" * level for level in range(n + 1)] for v in values]


# ============================================================================ EMD (Li et al. section 5)
# P: classes × m matrix of class proportions; q: the whole table's proportions (m,).


def equal_emd(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    return 0.5 * np.abs(P - q).sum(axis=1)


def ordered_emd(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Domain sorted ascending: D = Σ_{i<m} |Σ_{j≤i} (p_j − q_j)| / (m − 1)."""
    m = q.shape[0]
    running = np.cumsum(P - q, axis=1)[:, : m - 1]
    return np.abs(running).sum(axis=1) / (m - 1)


def hierarchical_emd(P: np.ndarray, q: np.ndarray, domain: list[str], rows: list[list[str]]) -> np.ndarray:
    """extra(leaf) = p − q; extra(N) = Σ extra(children);
    cost(N) = height(N)/H · min(pos_extra, neg_extra) over N's children; D = Σ cost(N)."""
    H = len(rows[0]) - 1
    column = {v: i for i, v in enumerate(domain)}
    extra: dict[tuple[int, str], np.ndarray] = {}
    for row in rows:  # leaves absent from the domain have p = q = 0
        extra[(0, row[0])] = P[:, column[row[0]]] - q[column[row[0]]] if row[0] in column else np.zeros(P.shape[0])
    assert set(domain) <= {row[0] for row in rows}, "a sensitive value is not a leaf of its hierarchy"
    total = np.zeros(P.shape[0])
    for level in range(1, H + 1):
        children: dict[str, set[str]] = {}
        for row in rows:
            children.setdefault(row[level], set()).add(row[level - 1])
        for label, kids in children.items():
            kid_extras = [extra[(level - 1, kid)] for kid in sorted(kids)]
            pos = sum(np.maximum(e, 0.0) for e in kid_extras)
            neg = sum(np.maximum(-e, 0.0) for e in kid_extras)
            total += level / H * np.minimum(pos, neg)
            extra[(level, label)] = sum(kid_extras)
    return total


# ============================================================================ the oracle


def qid(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class SA:
    name: str
    domain: list[str]  # in EMD order (ascending numbers for ordered)
    hierarchy: list[list[str]] | None = None


@dataclass
class Config:
    """k and, per sensitive column, (t, distance)."""

    k: int
    t: dict[str, tuple[float, str]] = field(default_factory=dict)


@dataclass
class NodeResult:
    satisfied: bool
    classes: int  # kept
    suppressed: int
    dm: int
    max_emd: dict[str, float]  # over kept classes


class Oracle:
    """Plain SQL over generalized labels; every node judged."""

    def __init__(self, csv_path: Path, delimiter: str, qis: dict[str, list[list[str]] | None],
                 sas: dict[str, str], sa_hierarchies: dict[str, list[list[str]]], age_widths=None, mask=()):
        self.con = duckdb.connect()
        self.con.execute("CREATE TABLE raw AS SELECT * FROM read_csv(?, delim = ?, header = true, all_varchar = true)",
                         [str(csv_path), delimiter])
        self.columns = [r[0] for r in self.con.execute("DESCRIBE raw").fetchall()]
        self.N = self.con.execute("SELECT COUNT(*) FROM raw").fetchall()[0][0]
        self.qis = list(qis)
        self.rows: dict[str, list[list[str]]] = {}
        for name, rows in qis.items():
            if rows is None:  # a rule: bands or masking over the column's distinct values
                values = [r[0] for r in self.con.execute(f"SELECT DISTINCT {qid(name)} FROM raw").fetchall()]
                rows = mask_rows(values) if name in mask else band_rows(values, age_widths)
            self.rows[name] = rows
        self.shape = tuple(len(self.rows[name][0]) for name in self.qis)
        for i, name in enumerate(self.qis):
            rows = self.rows[name]
            table = pa.table({f"l{lv}": [r[lv] for r in rows] for lv in range(len(rows[0]))})
            self.con.register("m_view", table)
            self.con.execute(f"CREATE TABLE map{i} AS SELECT * FROM m_view")
            self.con.unregister("m_view")
        # One row per distinct (raw QI values, sensitive values) with its count; the generalized
        # labels of every level ride along, so a node is a GROUP BY over the right columns.
        labels = ", ".join(f"m{i}.l{lv} AS q{i}_{lv}" for i in range(len(self.qis)) for lv in range(self.shape[i]))
        sa_cols = ", ".join(f"r.{qid(s)} AS s{j}" for j, s in enumerate(sas))
        joins = " ".join(f"JOIN map{i} m{i} ON r.{qid(name)} = m{i}.l0" for i, name in enumerate(self.qis))
        self.con.execute(f"CREATE TABLE wide AS SELECT {labels}, {sa_cols}, COUNT(*) AS n FROM raw r {joins} "
                         "GROUP BY ALL")
        matched = self.con.execute("SELECT SUM(n) FROM wide").fetchall()[0][0]
        assert matched == self.N, f"{self.N - matched} rows have a QI value missing from its hierarchy"
        self.sas: list[SA] = []
        self.q: dict[str, np.ndarray] = {}
        for name, distance in sas.items():
            values = [r[0] for r in self.con.execute(f"SELECT DISTINCT {qid(name)} FROM raw").fetchall()]
            domain = sorted(values, key=float) if distance == "ordered" else sorted(values)
            self.sas.append(SA(name, domain, sa_hierarchies.get(name)))
            self.q[name] = self.reference(name, domain)

    def reference(self, name: str, domain: list[str]) -> np.ndarray:
        """The whole table's distribution, straight from the input CSV."""
        counts = dict(self.con.execute(f"SELECT {qid(name)}, COUNT(*) FROM raw GROUP BY ALL").fetchall())
        return np.array([counts[v] for v in domain], dtype=np.float64) / self.N

    def nodes(self):
        return itertools.product(*(range(n) for n in self.shape))

    def classes(self, node: tuple[int, ...], labels: bool = False):
        """One row per class: its size and, per sensitive column, its counts over the domain."""
        groups = [f"q{i}_{lv}" for i, lv in enumerate(node)]
        aggs, params = ["SUM(n) AS size"], []
        for j, sa in enumerate(self.sas):
            for d, value in enumerate(sa.domain):
                aggs.append(f"COALESCE(SUM(n) FILTER (WHERE s{j} = ?), 0) AS c{j}_{d}")
                params.append(value)
        shown = ", ".join(f"{g} AS g{i}" for i, g in enumerate(groups)) + ", " if labels else ""
        sql = f"SELECT {shown}{', '.join(aggs)} FROM wide GROUP BY {', '.join(groups)}"
        got = self.con.execute(sql, params).fetchnumpy()
        sizes = np.asarray(got["size"], dtype=np.int64)
        counts = {sa.name: np.column_stack([np.asarray(got[f"c{j}_{d}"], dtype=np.int64)
                                            for d in range(len(sa.domain))])
                  for j, sa in enumerate(self.sas)}
        for sa in self.sas:
            assert (counts[sa.name].sum(axis=1) == sizes).all()
        names = [list(got[f"g{i}"]) for i in range(len(node))] if labels else None
        return sizes, counts, names

    def emds(self, sizes: np.ndarray, counts: dict[str, np.ndarray], distances: set[tuple[str, str]]):
        found = {}
        for sa in self.sas:
            P = counts[sa.name] / sizes[:, None]
            q = self.q[sa.name]
            for name, distance in distances:
                if name != sa.name:
                    continue
                if distance == "equal":
                    found[(name, distance)] = equal_emd(P, q)
                elif distance == "ordered":
                    found[(name, distance)] = ordered_emd(P, q)
                else:
                    found[(name, distance)] = hierarchical_emd(P, q, sa.domain, sa.hierarchy)
        return found

    def limit(self, suppression: float) -> int:
        return math.floor(suppression * self.N + 1e-9)

    def failing(self, sizes, emds, config: Config) -> np.ndarray:
        fail = sizes < config.k
        for name, (t, distance) in config.t.items():
            fail = fail | (emds[(name, distance)] > t + EMD_TOL)
        return fail

    def judge(self, sizes, emds, config: Config, suppression: float) -> NodeResult:
        fail = self.failing(sizes, emds, config)
        kept = sizes[~fail]
        suppressed = int(sizes[fail].sum())
        dm = sum(int(s) * int(s) for s in kept) + suppressed * self.N
        max_emd = {name: float(emds[(name, distance)][~fail].max()) if kept.size else 0.0
                   for name, (t, distance) in config.t.items()}
        return NodeResult(suppressed <= self.limit(suppression), int(kept.size), suppressed, dm, max_emd)

    def evaluate_all(self, cases: dict[str, tuple[Config, float]]) -> dict[str, dict[tuple, NodeResult]]:
        """Every node, once: its class matrix computed once and judged for every case."""
        distances = {(name, d) for config, _ in cases.values() for name, (t, d) in config.t.items()}
        results: dict[str, dict[tuple, NodeResult]] = {case: {} for case in cases}
        for node in self.nodes():
            sizes, counts, _ = self.classes(node)
            emds = self.emds(sizes, counts, distances)
            for case, (config, suppression) in cases.items():
                results[case][node] = self.judge(sizes, emds, config, suppression)
        return results

    def release_rows_sql(self, node: tuple[int, ...], kept_table: str) -> str:
        """The expected release as a query over the input: generalized QIs, other columns as read,
        rows of failing classes left out (``kept_table`` lists the kept label tuples g0…)."""
        qi_index = {name: i for i, name in enumerate(self.qis)}
        cols = []
        for c in self.columns:
            if c in qi_index:
                i = qi_index[c]
                cols.append(f"m{i}.l{node[i]} AS {qid(c)}")
            else:
                cols.append(f"r.{qid(c)} AS {qid(c)}")
        joins = " ".join(f"JOIN map{i} m{i} ON r.{qid(name)} = m{i}.l0" for i, name in enumerate(self.qis))
        match = " AND ".join(f"k.g{i} = m{i}.l{node[i]}" for i in range(len(self.qis)))
        return (f"SELECT {', '.join(cols)} FROM raw r {joins} "
                f"WHERE EXISTS (SELECT 1 FROM {kept_table} k WHERE {match})")


@dataclass
class Solution:
    satisfying: set[tuple[int, ...]]
    minimal: set[tuple[int, ...]]
    optimum: tuple[int, ...] | None
    results: dict[tuple, NodeResult]


def height(node) -> int:
    return sum(node)


def minimal_nodes(satisfying: set[tuple[int, ...]]) -> set[tuple[int, ...]]:
    """Nodes of the set with no other node of the set below them (componentwise)."""
    found = set()
    for n in satisfying:
        below = any(m != n and all(a <= b for a, b in zip(m, n)) for m in satisfying)
        if not below:
            found.add(n)
    return found


def solve(results: dict[tuple, NodeResult], suppression: float) -> Solution:
    satisfying = {n for n, r in results.items() if r.satisfied}
    minimal = minimal_nodes(satisfying)
    pool = minimal if suppression == 0 else satisfying
    optimum = min(pool, key=lambda n: (results[n].dm, height(n), n)) if pool else None
    return Solution(satisfying, minimal, optimum, results)


# ============================================================================ cases

ADULT_CONFIGS = {
    "k5": Config(5),
    "k5-equal": Config(5, {"occupation": (0.2, "equal")}),
    "k5-hier": Config(5, {"occupation": (0.2, "hierarchical")}),
}
ADULT_SUPPRESSION = (0.0, 0.05)
ADULT_CASES = {f"adult-{c}-s{s}": (ADULT_CONFIGS[c], s) for c in ADULT_CONFIGS for s in ADULT_SUPPRESSION}
# The suppression caveat in action: here a satisfying node has a successor that does not satisfy
# (merging classes suppresses more), so a search that infers upward under suppression fails.
NON_MONOTONE = "adult-k5-hier0.15-s0.1"
ADULT_CASES[NON_MONOTONE] = (Config(5, {"occupation": (0.15, "hierarchical")}), 0.1)

TABLE3_CONFIG = Config(3, {"salary": (0.2, "ordered"), "disease": (0.3, "hierarchical")})
TABLE3_SUPPRESSION = (0.0, 0.34)
TABLE3_CASES = {f"table3-s{s}": (TABLE3_CONFIG, s) for s in TABLE3_SUPPRESSION}
# No node satisfies only when even the single all-'*' class (EMD 0) is too small: k > N.
TABLE3_CASES["table3-k10-s0.0"] = (Config(10, TABLE3_CONFIG.t), 0.0)

ALL_CASES = list(ADULT_CASES) + list(TABLE3_CASES)


def adult_spec(config: Config, suppression: float) -> sqlclose.Spec:
    d = sqlclose.load_spec(ADULT_SPEC).model_dump()
    d["privacy"]["suppression"] = suppression
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


SQL_PATH_CASES = ["adult-k5-hier-s0.0", "adult-k5-equal-s0.05", "adult-k5-s0.05", NON_MONOTONE]


@pytest.mark.parametrize("case", SQL_PATH_CASES, indirect=True)
def test_sql_level_batches_match_brute_force(case: Case, monkeypatch):
    """Small inputs with at most one sensitive attribute take the in-memory rollups
    (sqlclose.search.node_histograms.MemoryRunner); the others the SQL level batches (Table 3, with two, does in
    the tests above). Forcing the SQL path on Adult keeps it checked against the oracle too."""
    import importlib

    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search import node_histograms as nodes

    search = importlib.import_module("sqlclose.search.incognito")
    problem = case.release.problem
    assert isinstance(nodes.runner_for(problem), nodes.MemoryRunner)  # what the other tests exercised
    monkeypatch.setattr(nodes, "MEMORY_BASE_ROWS", 0)
    assert isinstance(nodes.runner_for(problem), nodes.BatchRunner)
    result = search.incognito(problem, criteria_for(problem.k, problem.sas))
    sol = case.solution
    assert {tuple(int(x) for x in idx) for idx in np.argwhere(result.satisfying)} == sol.satisfying
    assert set(result.minimal_nodes) == sol.minimal
    assert result.optimum == sol.optimum
    assert result.evaluated[result.optimum].discernibility == sol.results[sol.optimum].dm
    assert result.evaluated[result.optimum].suppressed == sol.results[sol.optimum].suppressed


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
    assert {as_tuple(n, case.qis) for n in report["minimal_nodes"]} == sol.minimal


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
