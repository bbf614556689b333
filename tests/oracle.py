"""The brute-force oracle of the search tests (tests/test_search_oracle.py, tests/test_search_models_oracle.py):
every lattice node judged from the semantics alone.

The oracle is written here from the semantics alone and shares no code with sqlclose's search,
lattice, privacy, EMD, node or query modules:

- hierarchies are read from the ARX-format CSVs with the ``csv`` module (age bands and ZIP
  masking are rebuilt by their rules), and loaded into DuckDB as (value, label at each level)
  tables;
- the input is pre-aggregated in SQL by all raw QI values and the sensitive values, every
  level's generalized label riding along; a node's classes are those rows grouped on its labels:
  a plain SQL ``GROUP BY`` (``Oracle.classes``), or the same grouping in numpy (``Grouper``,
  which judging every node uses, checked against the SQL on every Table 3 node and sampled
  Adult nodes);
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
import math
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

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
        kept = sizes[~fail].astype(np.int64)
        suppressed = int(sizes[fail].sum())
        dm = int((kept * kept).sum()) + suppressed * self.N  # exact: N² is far below 2⁶³
        max_emd = {name: float(emds[(name, distance)][~fail].max()) if kept.size else 0.0
                   for name, (t, distance) in config.t.items()}
        return NodeResult(suppressed <= self.limit(suppression), int(kept.size), suppressed, dm, max_emd)

    def evaluate_all(self, cases: dict[str, tuple[Config, float]]) -> dict[str, dict[tuple, NodeResult]]:
        """Every node, once: its class matrix computed once and judged for every case."""
        distances = {(name, d) for config, _ in cases.values() for name, (t, d) in config.t.items()}
        results: dict[str, dict[tuple, NodeResult]] = {case: {} for case in cases}
        grouper = Grouper(self)
        for node in self.nodes():
            sizes, counts = grouper.classes(node)
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


class Grouper:
    """Each node's classes, grouped in numpy from the oracle's pre-aggregated SQL rows (one per
    distinct raw QI values and sensitive values, with every level's generalized label): a node's
    classes are the distinct label tuples at its levels. Checked against the oracle's own SQL
    ``GROUP BY`` (``Oracle.classes``) on every node of Table 3 and sampled nodes of Adult
    (``check_grouper``); Adult's 3,240 nodes are grouped in seconds this way, against ~60 s as
    one SQL statement each."""

    def __init__(self, oracle: Oracle):
        got = oracle.con.execute("SELECT * FROM wide").fetchnumpy()
        self.oracle = oracle
        self.n = np.asarray(got["n"], dtype=np.int64)
        self.codes: dict[tuple[int, int], np.ndarray] = {}
        self.radix: dict[tuple[int, int], int] = {}
        for i, levels in enumerate(oracle.shape):
            for lv in range(levels):
                labels, inverse = np.unique(np.asarray(got[f"q{i}_{lv}"], dtype=object).astype(str),
                                            return_inverse=True)
                self.codes[(i, lv)], self.radix[(i, lv)] = inverse.astype(np.int64), len(labels)
        assert math.prod(max(self.radix[(i, lv)] for lv in range(levels))
                         for i, levels in enumerate(oracle.shape)) < 2**62
        self.values: dict[str, np.ndarray] = {}
        for j, sa in enumerate(oracle.sas):
            column = {v: d for d, v in enumerate(sa.domain)}
            self.values[sa.name] = np.array([column[v] for v in got[f"s{j}"]], dtype=np.int64)

    def classes(self, node: tuple[int, ...]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        key = np.zeros(self.n.shape[0], dtype=np.int64)
        for i, lv in enumerate(node):
            key = key * self.radix[(i, lv)] + self.codes[(i, lv)]
        # A class number per distinct key, by hashing (in the order of first appearance: nothing reads
        # the classes' order); np.unique's sort took ~1.5 ms a node, 5 times as long.
        cls = pd.factorize(key)[0]
        C = int(cls.max()) + 1
        sizes = np.bincount(cls, weights=self.n, minlength=C).astype(np.int64)
        counts = {}
        for sa in self.oracle.sas:
            m = len(sa.domain)
            flat = np.bincount(cls * m + self.values[sa.name], weights=self.n, minlength=C * m)
            counts[sa.name] = flat.reshape(C, m).astype(np.int64)
        return sizes, counts


def class_rows(sizes: np.ndarray, counts: dict[str, np.ndarray]) -> list[tuple[int, ...]]:
    """A node's classes as a sorted list of (size, counts…) rows: the multiset two groupings must agree on."""
    return sorted(tuple(int(x) for x in row) for row in np.column_stack([sizes, *counts.values()]))


def sampled_nodes(oracle: Oracle, count: int, seed: int) -> list[tuple[int, ...]]:
    """The lattice's bottom and top, and ``count`` other nodes drawn at random."""
    every = list(oracle.nodes())
    drawn = np.random.default_rng(seed).choice(np.arange(1, len(every) - 1), count, replace=False)
    return [every[0], every[-1], *(every[i] for i in drawn)]


def check_grouper(oracle: Oracle, grouper: Grouper, nodes: list[tuple[int, ...]]) -> None:
    """The numpy grouping gives each node the classes of the oracle's SQL ``GROUP BY`` (as a
    multiset of size and counts rows), and the lattice's top is one class of every row."""
    for node in nodes:
        sizes, counts, _ = oracle.classes(node)
        got_sizes, got_counts = grouper.classes(node)
        assert list(got_counts) == list(counts)
        assert class_rows(got_sizes, got_counts) == class_rows(sizes, counts), node
    top = tuple(levels - 1 for levels in oracle.shape)
    assert grouper.classes(top)[0].tolist() == [oracle.N]


def table3_oracle() -> Oracle:
    """Table 3 with its ZIP mask, age file and both sensitive columns (salary ordered, disease hierarchical)."""
    return Oracle(TABLE3_DIR / "table3.csv", ",", {"zip": None, "age": read_hierarchy(TABLE3_DIR / "age.csv")},
                  {"salary": "ordered", "disease": "hierarchical"},
                  {"disease": read_hierarchy(TABLE3_DIR / "disease.csv")}, mask=("zip",))


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
    if not satisfying:
        return set()
    nodes = sorted(satisfying)
    levels = np.array(nodes, dtype=np.int64).reshape(len(nodes), -1)
    found = set()
    for i, n in enumerate(levels):  # a row per node against every other: a set's nodes are distinct
        below = (levels <= n).all(axis=1)
        below[i] = False
        if not below.any():
            found.add(nodes[i])
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
