"""Preparation on its own: the base histogram, the reference distributions, NULL policies and the
released columns of a prepared problem, against counts taken directly from a small input."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from sqlclose.model.spec import as_spec
from sqlclose.prepare.plan import histogram_scan_sql
from sqlclose.prepare.problem import prepare
from sqlclose.prepare.sources import open_source
from sqlclose.sql import queries as q

ROWS = [("a", "x", 1, "n1"), ("a", "y", 2, "n2"), ("b", "x", 1, "n3"), ("b", "x", 3, "n4"), ("a", None, 2, "n5"),
        ("b", "y", 1, "n6")]


def prepared(nulls: str = "drop", others: str = "drop"):
    table = pa.table({"g": [r[0] for r in ROWS], "h": [r[1] for r in ROWS], "s": [r[2] for r in ROWS],
                      "note": [r[3] for r in ROWS]})
    spec = as_spec({"k": 2, "others": others,
                    "quasi_identifiers": {"g": {"tree": {"*": ["a", "b"]}},
                                          "h": {"tree": {"*": ["x", "y", "NULL"]}, "nulls": nulls}},
                    "sensitive": {"s": {"distance": "ordered", "t": 1.0}}})
    opened = open_source(table, None)
    return prepare(opened.engine, opened.relation, spec, opened.label)


def test_the_base_histogram_counts_every_combination():
    problem = prepared()
    g, h = (qi.hierarchy for qi in problem.qis)
    code_of = [{int(c): leaf for c, leaf in zip(x.leaf_codes, x.leaves)} for x in (g, h)]
    base = problem.engine.fetch(f'SELECT * FROM "{problem.base.name}"').to_pylist()
    found = Counter()
    for row in base:
        key = (code_of[0][row["q0"]], code_of[1][row["q1"]], problem.sas[0].domain[row["s0"]])
        found[key] += row["n"]
    expected = Counter((r[0], r[1], str(r[2])) for r in ROWS if r[1] is not None)  # the NULL row is dropped
    assert found == expected
    assert problem.input_rows == 6 and problem.rows == 5 and problem.dropped_rows == 1


def test_the_reference_distribution_is_the_kept_rows():
    problem = prepared()
    sa = problem.sas[0]
    assert sa.domain == ["1", "2", "3"]  # sorted as numbers
    assert sa.q.tolist() == [3.0, 1.0, 1.0]  # s of the five kept rows: 1, 2, 1, 3, 1


def test_nulls_value_keeps_the_row_and_others_keep_releases_the_note():
    problem = prepared(nulls="value", others="keep")
    assert problem.rows == 6 and problem.sas[0].q.tolist() == [3.0, 2.0, 1.0]
    assert problem.released == ["g", "h", "s", "note"]
    assert prepared().released == ["g", "h", "s"]


def test_nulls_error_names_the_column_and_count():
    with pytest.raises(Exception, match="column 'h' has 1 NULL"):
        prepared(nulls="error")


@pytest.mark.parametrize("order", [("g", "h"), ("h", "g")])
def test_values_missing_from_hierarchies_name_the_first_column_in_spec_order(order):
    """All quasi-identifiers are checked in one query; the error is still the first column's
    (spec order): counted in its message (a job's log keeps it), and in ``listed`` (what `hierarchy
    validate --show-values` prints) its strays most frequent first with their row counts (counted by
    hand from ROWS: g lacks 'b' (3 rows); h lacks 'x' (3 rows) and 'y' (2 rows))."""
    from sqlclose.errors import NotLeavesError

    table = pa.table({"g": [r[0] for r in ROWS], "h": [r[1] for r in ROWS], "s": [r[2] for r in ROWS]})
    trees = {"g": {"tree": {"*": ["a"]}}, "h": {"tree": {"*": ["z"]}, "nulls": "drop"}}
    spec = as_spec({"k": 2, "quasi_identifiers": {name: trees[name] for name in order},
                    "sensitive": {"s": {"distance": "ordered", "t": 1.0}}})
    opened = open_source(table, None)
    # A spec given as a dict, over an Arrow table: the error names its own ``named``, not a command
    # validating a SPEC.toml the run had not (the ninety-sixth round).
    counted = {"g": "column 'g' holds 1 value (in 3 rows) that is not a leaf of its hierarchy tree for column 'g' "
                    "(1 leaf; the values are not shown: an error lands in job logs; the error's `named` attribute "
                    "(NotLeavesError.named) lists them): add each to the tree",
               "h": "column 'h' holds 2 values (in 5 rows) that are not leaves of its hierarchy tree for column 'h' "
                    "(1 leaf; the values are not shown: an error lands in job logs; the error's `named` attribute "
                    "(NotLeavesError.named) lists them): add each to the tree"}
    listed = {"g": "column 'g': 1 value is not a leaf of hierarchy tree for column 'g': 'b' (3 rows);",
              "h": "column 'h': 2 values are not leaves of hierarchy tree for column 'h': 'x' (3 rows), "
                   "'y' (2 rows);"}
    with pytest.raises(NotLeavesError, match=re.escape(counted[order[0]])) as e:
        prepare(opened.engine, opened.relation, spec, opened.label)
    assert not [v for v in ("'b'", "'x'", "'y'") if v in str(e.value)], str(e.value)  # no value shown
    assert listed[order[0]] in e.value.named, e.value.named


def test_a_sensitive_value_held_only_by_dropped_rows_is_not_in_the_domain():
    # s = 9 sits only in the row whose h is NULL (dropped): the ordered domain, and so the
    # distance's denominator m - 1, are those of the five kept rows.
    table = pa.table({"g": [r[0] for r in ROWS], "h": [r[1] for r in ROWS],
                      "s": [9 if r[1] is None else r[2] for r in ROWS]})
    spec = as_spec({"k": 2, "quasi_identifiers": {"g": {"tree": {"*": ["a", "b"]}},
                                                  "h": {"tree": {"*": ["x", "y"]}, "nulls": "drop"}},
                    "sensitive": {"s": {"distance": "ordered", "t": 1.0}}})
    opened = open_source(table, None)
    problem = prepare(opened.engine, opened.relation, spec, opened.label)
    assert problem.sas[0].domain == ["1", "2", "3"]
    assert problem.sas[0].q.tolist() == [3.0, 1.0, 1.0]
    assert problem.input_rows == 6 and problem.rows == 5


@pytest.mark.parametrize("nulls", ["drop", "value"])
def test_leaf_counts_count_the_anonymized_rows_per_leaf(nulls):
    # By hand from ROWS: under "drop" the row (a, NULL) is not anonymized, so it is in no leaf count
    # (the column values of the rows kept leave it out); under "value" its h is the leaf "NULL".
    problem = prepared(nulls=nulls)
    kept = [r for r in ROWS if nulls == "value" or r[1] is not None]
    expected = [Counter(r[0] for r in kept), Counter("NULL" if r[1] is None else r[1] for r in kept)]
    for qi, got, want in zip(problem.qis, problem.leaf_counts, expected):
        assert got.tolist() == [float(want[leaf]) for leaf in qi.hierarchy.leaves], qi.name


def test_null_counts_per_column_from_the_column_values():
    # By hand from the table: h has 2 NULLs, s 1, g none; 5 rows.
    from sqlclose.sql import queries as q

    table = pa.table({"g": ["a", "a", "b", "b", "a"], "h": ["x", None, None, "y", "x"], "s": [1, 2, None, 1, 1]})
    opened = open_source(table, None)
    engine = opened.engine
    coded = [q.CodedColumn(name, f"r{i}", f"c{i}", f"lk{i}") for i, name in enumerate(("g", "h", "s"))]
    params = q.Params()
    values = engine.create_temp_table("v", q.column_values(opened.relation, coded, params), params.values)
    assert engine.fetch(q.null_counts(values, coded)).to_pylist() == [{"r0": 0, "r1": 2, "r2": 1,
                                                                      "__sqlclose_rows": 5}]


# ---- the base histogram's storage: narrow codes, sorted ---------------------------------------------
def wide_domains_prepared():
    """QIs of 2, 300 and 40,000 leaves and a sensitive column of 200 values: codes below 2**7,
    2**15 and 2**31, stored by the base histogram as TINYINT, SMALLINT and INTEGER."""
    rows = 1_000
    table = pa.table({"sex": [("f", "m")[i % 2] for i in range(rows)],
                      "town": [f"t{i % 300:03d}" for i in range(rows)],
                      "zip": [f"{(i * 37) % 40_000:05d}" for i in range(rows)],
                      "s": [i % 200 for i in range(rows)]})
    spec = as_spec({"k": 2, "quasi_identifiers": {
        "sex": {"tree": {"*": ["f", "m"]}},
        "town": {"tree": {"*": [f"t{i:03d}" for i in range(300)]}},
        "zip": {"tree": {"*": [f"{i:05d}" for i in range(40_000)]}}},
        "sensitive": {"s": {"distance": "ordered", "t": 1.0}}})
    opened = open_source(table, None)
    return prepare(opened.engine, opened.relation, spec, opened.label), table


def test_the_base_histogram_stores_each_code_in_the_narrowest_type_that_holds_it():
    problem, _ = wide_domains_prepared()
    described = problem.engine.fetch(f'DESCRIBE "{problem.base.name}"').to_pylist()
    types = {r["column_name"]: r["column_type"] for r in described}
    assert types == {"q0": "TINYINT", "q1": "SMALLINT", "q2": "INTEGER", "s0": "SMALLINT", "n": "BIGINT"}


def test_the_base_histogram_is_stored_sorted_by_the_sensitive_codes_then_the_widest_qi():
    problem, table = wide_domains_prepared()
    stored = problem.engine.fetch(f'SELECT * FROM "{problem.base.name}"').to_pylist()  # storage order
    order = ["s0", "q2"]  # the sensitive codes, then the widest QI (of 40,000 codes; the others 300 and 2)
    assert len(stored) == table.num_rows  # every row its own combination
    assert stored == sorted(stored, key=lambda r: [r[c] for c in order])
    assert stored != sorted(stored, key=lambda r: [r[c] for c in ["s0", "q1"]])  # not by another QI
    assert stored != sorted(stored, key=lambda r: [r[c] for c in ["q0", "q1", "q2", "s0"]])  # another order


@pytest.mark.parametrize("counted", [True, False], ids=["with counts", "rows counted"])
def test_node_keys_over_narrow_codes_are_computed_in_64_bits(counted):
    """The keyed base packs narrow codes into 64-bit keys past their types' ranges (the sensitive
    code, SMALLINT, below QI fields of 1 + 9 + 16 bits); a node's keys must unpack to the codes
    int64 arithmetic gives (numpy, on the same codes), not an overflow. Its rows each their own
    combination, the keys stored without a count give the same classes, their rows counted."""
    problem, _ = wide_domains_prepared()
    engine, base = problem.engine, problem.base
    packing = problem.packing
    keyed = engine.create_temp_table("__test_keyed", q.keyed_base(base, packing, ["q0", "q1", "q2"], ["s0"],
                                                                  counted=counted))
    assert ("n" in engine.schema(keyed).names) == counted
    nodes = [(0, 0, 0), (1, 0, 1), (0, 1, 0)]  # levels of sex, town, zip (1: the top)
    plan = "__test_plan"
    engine.register(plan, pa.table({"node": [0, 1, 2], "m0": [packing.masks(dict(enumerate(n)))[0] for n in nodes]}))
    found = engine.fetch(q.base_batch(keyed, q.table(plan), ones=not counted)).to_pydict()
    keys, node = np.asarray(found["key"]), np.asarray(found["node"])
    assert keys.max() > 2**31  # the keys do overflow narrower types
    divisors = np.array([[qi.hierarchy.divisors[level] for qi, level in zip(problem.qis, levels)] for levels in nodes])
    unpacked = [packing.unpack_qi([keys], i, divisors[node, i]) for i in range(3)]
    sa = packing.unpack_sa(keys % packing.sa_span, 0)
    got = sorted(zip(node.tolist(), *(u.tolist() for u in unpacked), sa.tolist(), found["n"]))
    codes = engine.fetch(f'SELECT q0, q1, q2, s0, n FROM "{base.name}"').to_pydict()
    q0, q1, q2, s0, n = (np.asarray(codes[c], dtype=np.int64) for c in ("q0", "q1", "q2", "s0", "n"))
    expected = []
    for number, levels in enumerate(nodes):
        ranges = [qi.hierarchy.code_range for qi in problem.qis]
        generalized = [c if level == 0 else c // r for c, level, r in zip((q0, q1, q2), levels, ranges)]
        sums = Counter()
        for row, count in zip(zip(*(g.tolist() for g in generalized), s0.tolist()), n.tolist()):
            sums[row] += count
        expected += [(number, *row, float(total)) for row, total in sums.items()]
    assert got == sorted(expected)


# ---- a base of the rows as they stand ------------------------------------------------------


def repeated_prepared(combinations: int, repeats: int, monkeypatch, least: int = 1_000, again: int = 0,
                      ages: int = 100):
    """A source of ``combinations`` (age, zip, s) rows (distinct while ``ages`` is 100), each
    ``repeats`` times and the first ``again`` once more, prepared with the ungrouped base allowed
    from ``least`` rows; with the statements the engine ran."""
    from sqlclose.prepare import problem as preparation

    monkeypatch.setattr(preparation, "UNGROUPED_MIN_ROWS", least)
    distinct = [(i % ages, f"{10_000 + 37 * (i // 100):05d}", i % 7) for i in range(combinations)]
    rows = distinct * repeats + distinct[:again]
    table = pa.table({"age": [r[0] for r in rows], "zip": [r[1] for r in rows], "s": [r[2] for r in rows]})
    spec = as_spec({"k": 2, "others": "drop", "quasi_identifiers": {"age": {"bands": [10, 50]}, "zip": {"mask": True}},
                    "sensitive": {"s": {"distance": "ordered", "t": 1.0}}})
    opened = open_source(table, None)
    statements = []
    fetch = opened.engine.fetch

    def spied(query, *args, **kwargs):
        statements.append(query if isinstance(query, str) else query.sql("duckdb"))
        return fetch(query, *args, **kwargs)

    monkeypatch.setattr(opened.engine, "fetch", spied)
    return prepare(opened.engine, opened.relation, spec, opened.label), rows, statements


def decoded_base(problem) -> tuple[list[dict], Counter]:
    """The base histogram's stored rows, and its counts per (age, zip, s) decoded from the codes."""
    age, zip_ = (qi.hierarchy for qi in problem.qis)
    code_of = [{int(c): leaf for c, leaf in zip(h.leaf_codes, h.leaves)} for h in (age, zip_)]
    stored = problem.engine.fetch(f'SELECT * FROM "{problem.base.name}"').to_pylist()
    counts = Counter()
    for row in stored:
        counts[code_of[0][row["q0"]], code_of[1][row["q1"]], problem.sas[0].domain[row["s0"]]] += row["n"]
    return stored, counts


def test_a_large_source_of_distinct_rows_keeps_them_as_they_stand_in_the_base(monkeypatch):
    """Nearly every row its own combination (2,000 combinations in 2,050 rows), at least
    ``UNGROUPED_MIN_ROWS`` rows: the base holds each row once with a count of 1 (not grouped: the
    50 repeated combinations have two rows each), still sorted as every base is, and its counts are
    the rows' own."""
    problem, rows, statements = repeated_prepared(2_000, 1, monkeypatch, again=50)
    stored, counts = decoded_base(problem)
    assert any("APPROX_COUNT_DISTINCT" in s for s in statements)
    assert problem.base_rows == len(stored) == len(rows) == 2_050
    assert {r["n"] for r in stored} == {1}
    assert "GROUP BY" not in histogram_scan_sql(problem)  # what `sqlclose explain` shows of it
    assert counts == Counter((str(a), z, str(s)) for a, z, s in rows)
    order = ["s0", "q0"]  # the sensitive codes, then the widest QI (100 ages; 20 ZIP codes)
    assert stored == sorted(stored, key=lambda r: [r[c] for c in order])


def stored_prepared(monkeypatch, key_limit: int | None = None):
    """3,000 nearly distinct rows of three QIs — ages banded by 5 and 20 (radices 5 and 4, not powers
    of two, so their padded codes differ from their codes), a masked ZIP code, a town of 300 — and
    two sensitive columns, prepared with the ungrouped base allowed; ``key_limit``: the packing's
    word limit (``model.packing.KEY_LIMIT``) during preparation."""
    from sqlclose.prepare import problem as preparation

    monkeypatch.setattr(preparation, "UNGROUPED_MIN_ROWS", 1_000)
    if key_limit is not None:
        monkeypatch.setattr("sqlclose.model.packing.KEY_LIMIT", key_limit)
    n = 3_000
    rows = [(i % 90, f"{(i * 7919) % 100_000:05d}", f"t{(i * 13) % 300:03d}", i % 11, "abc"[i % 3]) for i in range(n)]
    rows += rows[:40]  # some combinations twice
    names = ["age", "zip", "town", "s1", "s2"]
    table = pa.table({name: [r[j] for r in rows] for j, name in enumerate(names)})
    spec = as_spec({"k": 2, "others": "drop", "quasi_identifiers": {
        "age": {"bands": [5, 20]}, "zip": {"mask": True}, "town": {"tree": {"*": [f"t{i:03d}" for i in range(300)]}}},
        "sensitive": {"s1": {"distance": "ordered", "t": 1.0}, "s2": {"distance": "equal", "t": 1.0}}})
    opened = open_source(table, None)
    return prepare(opened.engine, opened.relation, spec, opened.label), rows


def decoded_rows(problem) -> Counter:
    """The base's counts per (age, zip, town, s1, s2), decoded from its codes by the hierarchies."""
    code_of = [{int(c): leaf for c, leaf in zip(qi.hierarchy.leaf_codes, qi.hierarchy.leaves)} for qi in problem.qis]
    counts = Counter()
    for row in problem.engine.fetch(f'SELECT * FROM "{problem.base.name}"').to_pylist():
        leaves = [code_of[i][row[f"q{i}"]] for i in range(3)]
        counts[(*leaves, *(str(sa.domain[row[f"s{j}"]]) for j, sa in enumerate(problem.sas)))] += row["n"]
    return counts


def kind_of(problem, name: str) -> str:
    return problem.engine.fetch_row(f"SELECT table_type FROM information_schema.tables WHERE table_name = '{name}'")[
        "table_type"]


@pytest.mark.parametrize("key_limit", [None, 2**24], ids=["one-key-word", "several-key-words"])
def test_a_base_of_the_rows_as_they_stand_is_stored_as_the_searchs_keys(monkeypatch, key_limit):
    """An ungrouped base is stored as the SQL search's packed keys, sorted as every base is, and the
    base is a view unpacking them: its codes, of the narrowest types, count each input row once
    (decoded by the hierarchies, against the rows themselves), with one key word or several. The
    search reads the stored keys; dropping what it made leaves them, and the base, readable."""
    from sqlclose.search.keyed_base import KeyedBase

    problem, rows = stored_prepared(monkeypatch, key_limit)
    stored = problem.stored_keys
    assert stored is not None and stored.packing == problem.packing
    assert (stored.packing.words > 1) == (key_limit is not None)
    assert [qi.hierarchy.divisors[1] for qi in problem.qis[:1]] == [5]  # padded ≠ dense: radix 5
    assert kind_of(problem, problem.base.name) == "VIEW" and kind_of(problem, stored.table.name) != "VIEW"
    # The key words alone: each row counts one, which the view and the search's readers count.
    assert problem.engine.schema(stored.table).names == [f"key{w}" if w else "key" for w in range(stored.packing.words)]
    assert decoded_rows(problem) == Counter((str(a), z, t, str(s1), s2) for a, z, t, s1, s2 in rows)
    described = problem.engine.fetch(f'DESCRIBE "{problem.base.name}"').to_pylist()
    assert {r["column_name"]: r["column_type"] for r in described} == {
        "q0": "TINYINT", "q1": "SMALLINT", "q2": "SMALLINT", "s0": "TINYINT", "s1": "TINYINT", "n": "BIGINT"}
    base = problem.engine.fetch(f'SELECT * FROM "{problem.base.name}"').to_pylist()  # the keys' storage order
    assert base == sorted(base, key=lambda r: [r[c] for c in ["s0", "s1", "q1"]])  # ZIP: the widest QI
    keyed = KeyedBase(problem, problem.packing)
    assert keyed.table().name == stored.table.name
    keyed.drop()
    assert sum(decoded_rows(problem).values()) == len(rows)


@pytest.mark.parametrize("key_limit", [None, 2**24], ids=["one-key-word", "several-key-words"])
@pytest.mark.parametrize(("subset", "node"), [((0, 1, 2), (1, 2, 0)), ((0, 1, 2), (0, 0, 1)), ((1,), (3,)),
                                              ((0, 2), (2, 0))])
def test_a_nodes_histograms_from_a_base_stored_as_keys_are_the_rows_generalized(monkeypatch, key_limit, subset, node):
    """A single node's class histograms (the released node's path, ``NodeRunner``) read from a base
    stored as keys — its keys grouped under the node's masks, then unpacked — are the input rows
    generalized in Python by the hierarchies: each class's codes, size and sensitive counts."""
    from sqlclose.search.node_runner import NodeRunner

    problem, rows = stored_prepared(monkeypatch, key_limit)
    assert problem.stored_keys is not None
    found = NodeRunner(problem).histograms(subset, node, keep=False)
    qis = problem.qis
    code_of = [{leaf: int(c) for c, leaf in zip(qi.hierarchy.leaf_codes, qi.hierarchy.leaves)} for qi in qis]
    domains = [{str(v): j for j, v in enumerate(sa.domain)} for sa in problem.sas]
    expected: dict[tuple, list] = {}
    for row in rows:
        leaves = (str(row[0]), row[1], row[2])
        cls = tuple(code_of[i][leaves[i]] // qis[i].hierarchy.divisors[level] for i, level in zip(subset, node))
        entry = expected.setdefault(cls, [0, Counter(), Counter()])
        entry[0] += 1
        entry[1][domains[0][str(row[3])]] += 1
        entry[2][domains[1][row[4]]] += 1
    got = {}
    for c in range(len(found.sizes)):
        counts = [np.asarray(found.counts[j][c]).ravel() for j in range(2)]
        got[tuple(int(x) for x in found.codes[c])] = [int(found.sizes[c]),
                                                      *(Counter({v: int(n) for v, n in enumerate(cj) if n})
                                                        for cj in counts)]
    assert got == expected


@pytest.mark.parametrize("node", [(1, 2, 0), (0, 4, 1), (2, 0, 0)])
def test_a_release_rebuilt_from_a_base_stored_as_keys_is_the_rows_generalized(monkeypatch, node):
    """A release of QI and sensitive columns only is rebuilt from the base's counts
    (``release_from_counts``); from a base stored as keys they are its keys under the node's masks.
    Its rows are the input rows generalized in Python by the hierarchies' labels, as multisets."""
    from sqlclose.prepare.release_query import counted_columns, release_query

    problem, rows = stored_prepared(monkeypatch)
    assert problem.stored_keys is not None
    counted = counted_columns(problem, node)
    assert counted is not None  # rebuilt from counts, not read from the rows
    params = q.Params()
    released = problem.engine.fetch(release_query(problem, node, None, params, counted), params.values)
    code_of = [{leaf: int(c) for c, leaf in zip(qi.hierarchy.leaf_codes, qi.hierarchy.leaves)} for qi in problem.qis]
    expected = Counter()
    for row in rows:
        leaves = (str(row[0]), row[1], row[2])
        labels = tuple(qi.hierarchy.labels_by_code(level)[code_of[i][leaves[i]] // qi.hierarchy.divisors[level]]
                       for i, (qi, level) in enumerate(zip(problem.qis, node)))
        expected[(*labels, str(row[3]), row[4])] += 1
    assert released.column_names == ["age", "zip", "town", "s1", "s2"]
    got = Counter(tuple(str(v) for v in r.values()) for r in released.to_pylist())
    assert got == expected


def test_a_base_whose_keys_the_search_would_not_read_stays_a_table_of_codes(monkeypatch):
    """When no packing holds the codes (a QI's field past the word limit: the search then runs a
    query per node), the ungrouped base is a table of its codes, counting the same rows; and a
    search whose packing differs from the stored one keys the base itself."""
    from sqlclose.search.keyed_base import KeyedBase

    problem, rows = stored_prepared(monkeypatch, key_limit=2)
    assert problem.stored_keys is None and problem.packing is None
    assert kind_of(problem, problem.base.name) != "VIEW"
    assert decoded_rows(problem) == Counter((str(a), z, t, str(s1), s2) for a, z, t, s1, s2 in rows)
    stored_problem, _ = stored_prepared(monkeypatch, key_limit=2**24)
    monkeypatch.setattr("sqlclose.model.packing.KEY_LIMIT", 2**62)
    keyed = KeyedBase(stored_problem, stored_problem.packing)  # one word now, the stored keys several
    assert keyed.table().name != stored_problem.stored_keys.table.name
    keyed.drop()


@pytest.mark.parametrize("node", [(0, 0, 0), (1, 2, 0)])
def test_a_local_copy_of_a_base_stored_as_keys_reads_its_own_table(monkeypatch, node):
    """The hybrid search's local copy (``search_problem(local=True)``) holds the base's codes on an
    engine of its own: it keeps none of the stored keys, which live on the original engine, and its
    keyed base and a node's rows are the input rows, generalized by the hierarchies (found by a
    differential review: the copy read the original's keyed table, which its engine has not)."""
    from sqlclose.search.hybrid import search_problem
    from sqlclose.search.keyed_base import KeyedBase

    problem, rows = stored_prepared(monkeypatch)
    assert problem.stored_keys is not None
    with search_problem(problem, local=True) as local:
        assert local.stored_keys is None and local.engine is not problem.engine
        assert decoded_rows(local) == Counter((str(a), z, t, str(s1), s2) for a, z, t, s1, s2 in rows)
        keyed = KeyedBase(local, local.packing)
        assert local.engine.fetch_row(f'SELECT COUNT(*) AS n FROM "{keyed.table().name}"')["n"] == len(rows)
        keyed.drop()
        at = local.engine.fetch(q.project(local.base_at(dict(enumerate(node))), ["n"]))
        assert sum(at.column("n").to_pylist()) == len(rows)


@pytest.mark.parametrize("repeats", [1, 3])
def test_explain_shows_the_scan_the_run_executed(repeats, monkeypatch):
    """`sqlclose explain --sql` shows the statement that read the source into the base, as it ran:
    grouped and counted (rows repeated), or a row each as packed keys, sorted in the base's order
    (rows distinct). The oracle: the query the engine was given to make the base's table."""
    from sqlclose.engine.duckdb import DuckDBEngine

    made = {}
    create = DuckDBEngine.create_temp_table

    def spied(self, name, query, *args, **kwargs):
        made[name] = query.sql(self.dialect, pretty=True)
        return create(self, name, query, *args, **kwargs)

    monkeypatch.setattr(DuckDBEngine, "create_temp_table", spied)
    problem, _, _ = repeated_prepared(2_000, repeats, monkeypatch)
    table = problem.stored_keys.table.name if problem.stored_keys is not None else problem.base.name
    assert (problem.stored_keys is None) == (repeats == 3)
    assert histogram_scan_sql(problem) == made[table]
    assert ("GROUP BY" in made[table]) == (repeats == 3) and "ORDER BY" in made[table]


def test_a_source_of_repeated_rows_is_grouped_into_the_base(monkeypatch):
    """Each combination three times: the estimate finds a third as many combinations as rows, so
    the base groups them, one row per combination counting 3."""
    problem, rows, statements = repeated_prepared(700, 3, monkeypatch)
    stored, counts = decoded_base(problem)
    assert any("APPROX_COUNT_DISTINCT" in s for s in statements)
    assert problem.base_rows == len(stored) == 700 and problem.rows == 2_100
    assert {r["n"] for r in stored} == {3}
    assert "GROUP BY" in histogram_scan_sql(problem)
    assert counts == Counter((str(a), z, str(s)) for a, z, s in rows)


def test_a_small_source_is_grouped_without_an_estimate(monkeypatch):
    """Below ``UNGROUPED_MIN_ROWS`` rows the base is grouped, and no pass estimates anything."""
    problem, rows, statements = repeated_prepared(2_000, 1, monkeypatch, least=2_051, again=50)
    stored, counts = decoded_base(problem)
    assert not any("APPROX_COUNT_DISTINCT" in s for s in statements)
    assert problem.base_rows == 2_000 and problem.rows == 2_050
    assert counts == Counter((str(a), z, str(s)) for a, z, s in rows)


def test_a_source_whose_codes_allow_fewer_combinations_than_its_rows_is_grouped_without_an_estimate(monkeypatch):
    """2,100 rows of 10 ages, 7 ZIP codes and 7 sensitive values: at most 490 combinations, so the
    base is grouped without a pass to estimate them."""
    problem, rows, statements = repeated_prepared(700, 3, monkeypatch, ages=10)
    stored, counts = decoded_base(problem)
    assert not any("APPROX_COUNT_DISTINCT" in s for s in statements)
    assert problem.base_rows == len(counts) == len(set(rows)) <= 490 and problem.rows == 2_100
    assert counts == Counter((str(a), z, str(s)) for a, z, s in rows)


def test_a_counted_source_is_always_grouped():
    """A histogram (the warehouse path) is always grouped, whatever an estimate would say: it holds
    a row per combination already, so nothing is saved, and a row of it counts its count column,
    never 1. The ungrouped form refuses one."""
    from sqlclose.prepare.problem import _groups_base

    problem, _ = wide_domains_prepared()
    assert _groups_base(problem.engine, problem.source, [], 10**9, 10**18, counts="n")
    with pytest.raises(ValueError, match="always grouped"):
        q.base_histogram(problem.source, [], q.Params(), counts="n", grouped=False)
