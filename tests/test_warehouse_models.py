"""The warehouse's verification query measures every model the spec asks for (docs/warehouse.md,
section 4): t-closeness with the column's distance, entropy l and recursive (c,l) on the released
table in the warehouse, beside the sizes and distinct values it compared with the search's claims.

A DuckDB database plays the warehouse (tests/warehouse_steps.py). The oracles are independent of
the SQL measured: the formulas computed here in Python, exactly (fractions), from the released
table's rows and the table's own; and a table small enough to work by hand, whose histogram is
edited (two sensitive values swapped between classes) so that the search releases a node whose
real classes fail the model: every figure the verification compared before stays as claimed, and
only the new ones tell.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest
import sqlglot
from sqlglot import exp
from warehouse_steps import histogram_in_warehouse, invoke, release_in_warehouse, warehouse_spec, warehouse_with

import sqlclose
from sqlclose.model.spec import WAREHOUSE_DIALECTS

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"


# Table 3's spec up to its sensitive columns: k and the quasi-identifiers of Li et al.'s Table 4.
TABLE3_PRIVACY = f"""[privacy]
k = 3
[quasi_identifiers]
zip = {{ mask = true }}
age = {{ file = {json.dumps(str(TABLE3 / "age.csv"))} }}
"""


def _table3_spec(tmp: Path, disease: str) -> Path:
    t = 1.5 if disease == "kl" else 0.5  # KL is not bounded by 1: no node but the root is within 0.5
    body = TABLE3_PRIVACY + f"""[sensitive.salary]
distance = "ordered"
t = 0.4
entropy_l = 1.5
[sensitive.disease]
distance = "{disease}"
t = {t}
hierarchy = {json.dumps(str(TABLE3 / "disease.csv"))}
recursive = {{ c = 3, l = 2 }}
"""
    return warehouse_spec(tmp, "t", ["zip", "age", "salary", "disease"], body)


# ---- the oracle: each formula over counts, exactly ---------------------------------------------

def _equal(p: Counter, q: Counter) -> Fraction:
    s, n = sum(p.values()), sum(q.values())
    return sum((abs(Fraction(p[v], s) - Fraction(q[v], n)) for v in set(p) | set(q)), Fraction(0)) / 2


def _ordered(p: Counter, q: Counter) -> Fraction:
    domain = sorted(q)
    s, n = sum(p.values()), sum(q.values())
    running, total = Fraction(0), Fraction(0)
    for v in domain[:-1]:
        running += Fraction(p[v], s) - Fraction(q[v], n)
        total += abs(running)
    return total / (len(domain) - 1) if len(domain) > 1 else Fraction(0)


def _hierarchical(p: Counter, q: Counter, rows: list[list[str]]) -> Fraction:
    """Li et al.: per internal node N, height(N) / H * min(positive, negative extras of its children)."""
    height = len(rows[0]) - 1
    s, n = sum(p.values()), sum(q.values())
    extra: dict[tuple[int, str], Fraction] = defaultdict(Fraction)
    children: dict[tuple[int, str], set[tuple[int, str]]] = defaultdict(set)
    for row in rows:
        gap = Fraction(p[row[0]], s) - Fraction(q[row[0]], n)
        for level, node in enumerate(row):
            extra[level, node] += gap
            if level:
                children[level, node].add((level - 1, row[level - 1]))
    cost = Fraction(0)
    for (level, _node), under in children.items():
        positive = sum((max(extra[c], Fraction(0)) for c in under), Fraction(0))
        negative = sum((max(-extra[c], Fraction(0)) for c in under), Fraction(0))
        cost += Fraction(level, height) * min(positive, negative)
    return cost


def _kl(p: Counter, q: Counter) -> float:
    s, n = sum(p.values()), sum(q.values())
    return sum(c / s * math.log((c / s) / (q[v] / n)) for v, c in p.items())


def _entropy_l(p: Counter) -> float:
    s = sum(p.values())
    return math.exp(-sum(c / s * math.log(c / s) for c in p.values()))


def _recursive_ratio(p: Counter, ell: int) -> float:
    counts = sorted(p.values(), reverse=True)
    tail = sum(counts[ell - 1:])
    return counts[0] / tail if tail else math.inf


def _classes(rows: list[dict], qis: list[str], column: str) -> list[Counter]:
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        classes[tuple(r[c] for c in qis)][r[column]] += 1
    return list(classes.values())


@pytest.mark.parametrize("disease", ["hierarchical", "equal", "variational", "kl"])
def test_the_verification_measures_each_model_as_its_formula_does(tmp_path, disease):
    """Table 3 released through the warehouse: ok, and each new figure equal to its formula over the
    released rows (exported) and the table's rows, computed here."""
    db = warehouse_with(tmp_path, f"CREATE TABLE t AS SELECT * FROM read_csv('{TABLE3 / 'table3.csv'}')")
    spec = _table3_spec(tmp_path, disease)
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    made = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec, "--json", "--no-progress")
    assert made.exit_code == 0, made.output
    released, measured = release_in_warehouse(db, tmp_path)
    rows = duckdb.connect().sql(f"FROM read_parquet('{released}')").to_arrow_table().to_pylist()
    source = duckdb.connect().sql(f"FROM read_csv('{TABLE3 / 'table3.csv'}')").to_arrow_table().to_pylist()
    tree = [line.split(";") for line in (TABLE3 / "disease.csv").read_text().splitlines() if line]

    salaries, diseases = _classes(rows, ["zip", "age"], "salary"), _classes(rows, ["zip", "age"], "disease")
    q_salary, q_disease = Counter(r["salary"] for r in source), Counter(r["disease"] for r in source)
    distance = {"hierarchical": lambda p: _hierarchical(p, q_disease, tree), "equal": lambda p: _equal(p, q_disease),
                "variational": lambda p: _equal(p, q_disease), "kl": lambda p: _kl(p, q_disease)}[disease]
    oracle = {"max_distance_s0": float(max(_ordered(p, q_salary) for p in salaries)),
              "min_entropy_l_s0": min(_entropy_l(p) for p in salaries),
              "max_distance_s1": float(max(distance(p) for p in diseases)),
              "max_recursive_ratio_s1": max(_recursive_ratio(p, 2) for p in diseases)}
    assert len(salaries) > 1  # classes, not the whole table: the figures are not all trivial
    assert {name: measured[name] for name in oracle} == pytest.approx(oracle, rel=1e-12, abs=1e-15)
    assert measured["ok"] is True
    columns = list(measured)
    off_tree = ["off_hierarchy_s1"] if disease == "hierarchical" else []  # table3's diseases are all leaves
    assert all(measured[name] == 0 for name in off_tree)
    assert columns == ["released_rows", "classes", "min_class_size", "min_distinct_s0", "min_distinct_s1",
                       "source_rows", "max_distance_s0", "min_entropy_l_s0", "max_distance_s1",
                       "max_recursive_ratio_s1", *off_tree, "ok"]
    models = json.loads(made.stdout)["warehouse"]["verification_models"]
    assert {c: [(m["model"], m["column"]) for m in ms] for c, ms in models.items()} == {
        "min_class_size": [("k-anonymity", None)], "max_distance_s0": [("t-closeness", "salary")],
        "min_entropy_l_s0": [("entropy l-diversity", "salary")], "max_distance_s1": [("t-closeness", "disease")],
        **{name: [("t-closeness", "disease")] for name in off_tree},
        "max_recursive_ratio_s1": [("recursive (c,l)-diversity", "disease")]}
    assert models["max_distance_s1"][0]["parameters"] == {"t": 1.5 if disease == "kl" else 0.5, "distance": disease}


# ---- the attack: an edited histogram -----------------------------------------------------------
# Worked by hand. Class a holds s = 1, 1, 1, 9 and class b 1, 9, 9, 9: Q is half 1, half 9. The
# histogram edited so that one 1 of a and one 9 of b trade places shows each class as 1, 1, 9, 9,
# exactly Q: every class passes at level 0, which the search releases. The real classes have the
# same sizes and distinct values (2), but p(1) = 3/4 in a and 1/4 in b: each is 1/4 from Q in the
# ordered, equal, variational and hierarchical (1 and 9 under one root, H = 1) distances, and
# 3/4 ln(3/2) + 1/4 ln(1/2) in KL; exp(entropy) 1.7548 < 1.9 (2 edited); r1 / tail = 3 / 1 >= c = 2
# (2 / 2 = 1 edited).
ATTACK_ROWS = [("a", 1), ("a", 1), ("a", 1), ("a", 9), ("b", 1), ("b", 9), ("b", 9), ("b", 9)]
KL = 0.75 * math.log(1.5) + 0.25 * math.log(0.5)
ENTROPY = math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
ATTACKS = {
    "ordered": ('distance = "ordered"\nt = 0.1', "max_distance_s0", 0.25),
    "equal": ('distance = "equal"\nt = 0.1', "max_distance_s0", 0.25),
    "variational": ('distance = "variational"\nt = 0.1', "max_distance_s0", 0.25),
    "hierarchical": ('distance = "hierarchical"\nt = 0.1\nhierarchy = {tree}', "max_distance_s0", 0.25),
    "kl": ('distance = "kl"\nt = 0.05', "max_distance_s0", KL),
    "entropy": ("entropy_l = 1.9", "min_entropy_l_s0", ENTROPY),
    "recursive": ("recursive = {{ c = 2, l = 2 }}", "max_recursive_ratio_s0", 3.0),
}


def _edited_release(tmp: Path, sensitive: str) -> tuple[dict, dict, dict]:
    """The attack's table in the warehouse, its histogram edited, the release and its verification."""
    values = ", ".join(f"('{g}', {s})" for g, s in ATTACK_ROWS)
    db = warehouse_with(tmp, f"CREATE TABLE t AS SELECT * FROM (VALUES {values}) AS v(g, s)")
    tree = tmp / "s.csv"
    tree.write_text("1;*\n9;*\n", encoding="utf-8")
    body = (f'[privacy]\nk = 2\n[quasi_identifiers]\ng = {{ tree = {{ "*" = ["a", "b"] }} }}\n'
            f"[sensitive.s]\n{sensitive.format(tree=json.dumps(str(tree)))}\n")
    spec = warehouse_spec(tmp, "t", ["g", "s"], body)
    histogram_in_warehouse(db, spec, tmp / "h.parquet")
    con = duckdb.connect()
    honest = con.execute(f"SELECT g, CAST(s AS VARCHAR), __sqlclose_count FROM '{tmp / 'h.parquet'}' ORDER BY ALL")
    assert honest.fetchall() == [("a", "1", 3), ("a", "9", 1), ("b", "1", 1), ("b", "9", 3)]
    # one 1 of class a and one 9 of class b swapped: the same rows per class and per value
    con.execute(f"COPY (SELECT * REPLACE (__sqlclose_count + CASE WHEN (g = 'a') = (CAST(s AS VARCHAR) = '1') "
                f"THEN -1 ELSE 1 END AS __sqlclose_count) FROM '{tmp / 'h.parquet'}') "
                f"TO '{tmp / 'edited.parquet'}' (FORMAT PARQUET)")
    made = invoke("anonymize", "--histogram", tmp / "edited.parquet", spec, "--json", "--no-progress")
    assert made.exit_code == 0, made.output
    doc = json.loads(made.stdout)
    _, measured = release_in_warehouse(db, tmp)
    return doc, measured, doc["warehouse"]["expected"]


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_edited_histogram_is_caught_by_the_model_it_breaks(tmp_path, attack):
    sensitive, column, real = ATTACKS[attack]
    doc, measured, expected = _edited_release(tmp_path, sensitive)
    assert doc["node"] == {"g": 0}  # the search believed the edited classes
    # everything compared before is as the search claimed ...
    assert {name: measured[name] for name in expected} == expected
    assert measured["min_class_size"] >= 2
    # ... and the model measured in the warehouse says what the real classes reach
    assert measured[column] == pytest.approx(real, rel=1e-12)
    assert measured["ok"] is False


def test_a_value_off_the_hierarchy_named_as_a_leaf_in_the_histogram_is_caught(tmp_path):
    """Review of the ninety-fifth round: class a holds 1, X, 1, X and class b 1, 9, 1, 9, the
    hierarchy's leaves 1 and 9. The honest histogram is refused (X is no leaf); one edited to call X
    9 (the same counts) is released at level 0. The hierarchical distance joins each class's values
    to their leaves, so X added to no cost: max_distance 0 and ok true. The verification now counts
    the released rows whose value is no leaf (off_hierarchy_s0: the two X rows, by hand) and ok is
    false; sqlclose check --against refuses the exported release (exit 2: X is no leaf)."""
    rows = [("a", "1"), ("a", "X"), ("a", "1"), ("a", "X"), ("b", "1"), ("b", "9"), ("b", "1"), ("b", "9")]
    values = ", ".join(f"('{g}', '{s}')" for g, s in rows)
    db = warehouse_with(tmp_path, f"CREATE TABLE t AS SELECT * FROM (VALUES {values}) AS v(g, s)")
    body = ('[privacy]\nk = 2\n[quasi_identifiers]\ng = { tree = { "*" = ["a", "b"] } }\n[sensitive.s]\n'
            'distance = "hierarchical"\nt = 0.1\nhierarchy = { tree = { "*" = ["1", "9"] } }\n')
    spec = warehouse_spec(tmp_path, "t", ["g", "s"], body)
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    honest = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec, "--no-progress")
    assert honest.exit_code == 2 and "not a leaf of its hierarchy" in honest.output, honest.output
    duckdb.connect().execute(f"COPY (SELECT * REPLACE (CASE WHEN s = 'X' THEN '9' ELSE s END AS s) "
                             f"FROM '{tmp_path / 'h.parquet'}') TO '{tmp_path / 'e.parquet'}' (FORMAT PARQUET)")
    made = invoke("anonymize", "--histogram", tmp_path / "e.parquet", spec, "--json", "--no-progress")
    assert made.exit_code == 0 and json.loads(made.stdout)["node"] == {"g": 0}, made.output
    released, measured = release_in_warehouse(db, tmp_path)
    assert duckdb.connect().sql(f"SELECT COUNT(*) FROM '{released}' WHERE s = 'X'").fetchall() == [(2,)]
    assert (measured["off_hierarchy_s0"], measured["ok"]) == (2, False)
    assert {name: measured[name] for name in json.loads(made.stdout)["warehouse"]["expected"]} == \
        json.loads(made.stdout)["warehouse"]["expected"]  # every figure compared before is as claimed


def test_the_honest_histogram_of_the_attack_table_releases_a_passing_node(tmp_path):
    """The counter-check: the same table and models, its histogram untouched, is released at the
    root (one class: Q itself) and its verification says ok, every figure within its model."""
    values = ", ".join(f"('{g}', {s})" for g, s in ATTACK_ROWS)
    db = warehouse_with(tmp_path, f"CREATE TABLE t AS SELECT * FROM (VALUES {values}) AS v(g, s)")
    body = ('[privacy]\nk = 2\n[quasi_identifiers]\ng = { tree = { "*" = ["a", "b"] } }\n'
            '[sensitive.s]\ndistance = "ordered"\nt = 0.1\nentropy_l = 1.9\nrecursive = { c = 2, l = 2 }\n')
    spec = warehouse_spec(tmp_path, "t", ["g", "s"], body)
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    made = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec, "--json", "--no-progress")
    assert made.exit_code == 0, made.output
    assert json.loads(made.stdout)["node"] == {"g": 1}
    _, measured = release_in_warehouse(db, tmp_path)
    assert (measured["max_distance_s0"], measured["min_entropy_l_s0"], measured["max_recursive_ratio_s0"],
            measured["ok"]) == (0.0, pytest.approx(2.0, rel=1e-12), 1.0, True)


# ---- every dialect ---------------------------------------------------------------------------

@pytest.mark.parametrize("disease", ["hierarchical", "kl"])
@pytest.mark.parametrize("dialect", WAREHOUSE_DIALECTS)
def test_the_models_render_and_parse_back_in_every_dialect(tmp_path, dialect, disease):
    """Each dialect's verification query parses back as one query whose row is the columns measured
    before, then the new figures, then ok; no marker left for render to spell; the spellings a
    dialect needs: BigQuery's exact integers are BIGNUMERIC (its NUMERIC holds 29 digits), Trino's
    infinity is INFINITY() (its cast of text reads no 'inf'), and the ordered distance's floor is
    not a division rounded (Snowflake, Trino: the remainder taken away first)."""
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{TABLE3 / 'table3.csv'}')")
    spec = _table3_spec(tmp_path, disease)
    con.execute(f"COPY ({sqlclose.histogram_sql(spec, 'duckdb')}) TO '{tmp_path / 'h.parquet'}' (FORMAT PARQUET)")
    con.close()
    with sqlclose.anonymize_histogram(tmp_path / "h.parquet", spec, dialect=dialect) as release:
        sql = release.verification_sql()
    statements = sqlglot.parse(sql, read=dialect)
    assert len(statements) == 1 and isinstance(statements[0], exp.Select)
    assert statements[0].named_selects == [
        "released_rows", "classes", "min_class_size", "min_distinct_s0", "min_distinct_s1", "source_rows",
        "max_distance_s0", "min_entropy_l_s0", "max_distance_s1", "max_recursive_ratio_s1",
        *(["off_hierarchy_s1"] if disease == "hierarchical" else []), "ok"]
    assert "__SQLCLOSE_" not in sql.upper().replace('"__SQLCLOSE_', "").replace("`__SQLCLOSE_", "")
    assert ("BIGNUMERIC" in sql and "DECIMAL(38" not in sql and "NUMERIC(38" not in sql) == (dialect == "bigquery")
    assert ("INFINITY()" in sql and "'inf'" not in sql) == (dialect == "trino")
    if dialect in ("snowflake", "trino"):
        assert "TRUNC" not in sql.upper() and " % " in sql


def test_an_ordered_domain_of_one_value_measures_0(tmp_path):
    """A column holding one value (m = 1): the ordered distance has no step to walk, and is 0
    (verify_ordered.sql's m > 1 case), not a division by m - 1 = 0."""
    values = ", ".join(f"('{g}', {s})" for g, s in [("a", 1), ("a", 1), ("b", 1), ("b", 1)])
    db = warehouse_with(tmp_path, f"CREATE TABLE t AS SELECT * FROM (VALUES {values}) AS v(g, s)")
    body = ('[privacy]\nk = 2\n[quasi_identifiers]\ng = { tree = { "*" = ["a", "b"] } }\n'
            '[sensitive.s]\ndistance = "ordered"\nt = 0.1\n')
    spec = warehouse_spec(tmp_path, "t", ["g", "s"], body)
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    with sqlclose.anonymize_histogram(tmp_path / "h.parquet", spec) as release:
        release.write_sql(tmp_path / "release.sql")
    _, measured = release_in_warehouse(db, tmp_path)
    assert (measured["max_distance_s0"], measured["ok"]) == (0.0, True)


def test_a_null_stand_in_is_a_value_of_q_and_of_the_classes(tmp_path):
    """nulls = "value": a NULL disease counts as its stand-in 'none', in the classes and in Q (the
    histogram's counting). A first sensitive column with distinct l only is not measured again:
    the figures of the second are named s1. Oracle: the formulas over the rows, NULL read as 'none'."""
    db = warehouse_with(tmp_path, f"CREATE TABLE t AS SELECT * REPLACE (CASE WHEN salary IN (9000, 4000) THEN NULL "
                                  f"ELSE disease END AS disease) FROM read_csv('{TABLE3 / 'table3.csv'}')")
    body = TABLE3_PRIVACY + """[sensitive.salary]
distinct_l = 2
[sensitive.disease]
distance = "equal"
t = 0.6
nulls = "value"
null_value = "none"
entropy_l = 1.2
"""
    spec = warehouse_spec(tmp_path, "t", ["zip", "age", "salary", "disease"], body)
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    made = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec, "--json", "--no-progress")
    assert made.exit_code == 0, made.output
    released, measured = release_in_warehouse(db, tmp_path)
    con = duckdb.connect(str(db), read_only=True)
    source = [r[0] or "none" for r in con.execute("SELECT disease FROM t").fetchall()]
    con.close()
    rows = [{**r, "disease": r["disease"] or "none"}
            for r in duckdb.connect().sql(f"FROM read_parquet('{released}')").to_arrow_table().to_pylist()]
    classes = _classes(rows, ["zip", "age"], "disease")
    assert "none" in source and len(classes) > 1
    oracle = {"max_distance_s1": float(max(_equal(p, Counter(source)) for p in classes)),
              "min_entropy_l_s1": min(_entropy_l(p) for p in classes)}
    assert {name: measured[name] for name in oracle} == pytest.approx(oracle, rel=1e-12)
    assert "max_distance_s0" not in measured and measured["ok"] is True
