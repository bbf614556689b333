"""The search's optimum on tiny tables built so that its tie-break and its bounds sit right at
their edges, against figures worked out by hand and a brute force written here (every node of
the lattice judged from the semantics: classes by a plain count of the generalized rows).

Each case is searched from either end of the lattice and from both (``BELOW_SHARE``, as in
tests/test_search_oracle.py), deciding the whole lattice and exploring for the optimum alone: a
bound or a shortcut that is off by one shows only when the walk reaches the nodes in a given
order, so every order must give the oracle's answer.

- the tie-break: docs/utility.md, "Ties": the least discernibility, then the lower node (fewest
  levels in total), then the lexicographically smaller level tuple;
- ``_Judge.within``: an optimum whose suppressed records are exactly (its discernibility) // rows;
- ``_floor_blocks``: an optimum whose discernibility is exactly its floor rows² / classes;
- ``_Judge.necessary``: a projection whose suppression lower bound is exactly the limit;
- the nodes skipped above one that suppresses nothing: a node suppressing one record is not one.
"""

from __future__ import annotations

import importlib
import itertools
import math
from collections import Counter
from fractions import Fraction

import pyarrow as pa
import pytest

import sqlclose

SHARES = pytest.mark.parametrize("share", [0.0, 0.1, 1e18], ids=["from-above-alone", "both-ends", "from-below-alone"])
EXPLORE = pytest.mark.parametrize("explore", ["optimum", "lattice"])


def leaf_paths(tree: dict) -> dict[str, list[str]]:
    """Per leaf, its label at each level (the leaf, its groups upwards, the top ``*``)."""
    paths: dict[str, list[str]] = {}

    def walk(label: str, children, above: list[str]) -> None:
        if isinstance(children, dict):
            for name, sub in children.items():
                walk(name, sub, [label, *above])
        else:
            for leaf in children:
                paths[leaf] = [leaf, label, *above]

    ((top, children),) = tree.items()
    walk(top, children, [])
    assert len({len(p) for p in paths.values()}) == 1, "a ragged tree"
    return paths


def brute_force(columns: dict[str, list[str]], trees: dict[str, dict], k: int, suppression: float) -> dict:
    """Every node: (satisfies, suppressed records, discernibility). A class below k is suppressed,
    a node satisfies when at most floor(s·N) records are (s read as written: Fraction of its
    text), discernibility = Σ kept size² + suppressed · N."""
    names = list(columns)
    rows = list(zip(*columns.values()))
    n = len(rows)
    limit = math.floor(Fraction(repr(suppression)) * n)
    paths = [leaf_paths(trees[name]) for name in names]
    shape = [len(next(iter(p.values()))) for p in paths]
    judged = {}
    for node in itertools.product(*(range(levels) for levels in shape)):
        classes = Counter(tuple(paths[i][value][node[i]] for i, value in enumerate(row)) for row in rows)
        suppressed = sum(size for size in classes.values() if size < k)
        dm = sum(size * size for size in classes.values() if size >= k) + suppressed * n
        judged[node] = (suppressed <= limit, suppressed, dm)
    return judged


def documented_optimum(judged: dict) -> tuple[int, ...]:
    """docs/utility.md's rule: least discernibility, then fewest levels in total, then the smaller tuple."""
    return min((node for node, (ok, _, _) in judged.items() if ok), key=lambda nd: (judged[nd][2], sum(nd), nd))


def released(columns: dict[str, list[str]], trees: dict[str, dict], k: int, suppression: float,
             explore: str, share: float, monkeypatch) -> tuple[tuple[int, ...], int, int]:
    """The search's optimum (levels in the QIs' order), its discernibility and suppressed records."""
    monkeypatch.setattr(importlib.import_module("sqlclose.search.incognito"), "BELOW_SHARE", share)
    spec = {"privacy": {"k": k, "suppression": suppression}, "search": {"explore": explore},
            "quasi_identifiers": {name: {"tree": tree} for name, tree in trees.items()}}
    with sqlclose.anonymize(pa.table(columns), spec) as release:
        node = tuple(release.node[name] for name in columns)
        return node, release.summary["utility"]["discernibility"], release.summary["suppressed_rows"]


def check(columns, trees, k, suppression, explore, share, monkeypatch, by_hand) -> None:
    """The brute force agrees with the figures worked out by hand (node → (satisfies, suppressed,
    discernibility), every node given), and the search releases the documented optimum."""
    judged = brute_force(columns, trees, k, suppression)
    assert judged == by_hand
    best = documented_optimum(judged)
    assert released(columns, trees, k, suppression, explore, share, monkeypatch) == (best, judged[best][2],
                                                                                      judged[best][1])


@SHARES
@EXPLORE
def test_a_discernibility_tie_goes_to_the_node_with_fewer_levels(explore, share, monkeypatch):
    """(a=1, b=0) and (a=0, b=2) both keep two classes of 2 rows (discernibility 8); the first has
    one level in total, the second two, so the documented tie-break takes (1, 0), though (0, 2) is
    the lexicographically smaller tuple. (1, 1) also costs 8 but has two levels, (1, 2) 16; the rest
    put each row alone and fail k = 2 (no suppression)."""
    columns = {"a": ["a1", "a2", "a1", "a2"], "b": ["b1", "b1", "b3", "b3"]}
    trees = {"a": {"*": ["a1", "a2"]}, "b": {"*": {"B1": ["b1", "b2"], "B2": ["b3", "b4"]}}}
    by_hand = {(0, 0): (False, 4, 16), (0, 1): (False, 4, 16), (0, 2): (True, 0, 8),
               (1, 0): (True, 0, 8), (1, 1): (True, 0, 8), (1, 2): (True, 0, 16)}
    check(columns, trees, 2, 0.0, explore, share, monkeypatch, by_hand)
    assert documented_optimum(by_hand) == (1, 0)


@SHARES
@EXPLORE
def test_an_optimum_suppressing_exactly_its_discernibility_over_the_rows_is_found(explore, share, monkeypatch):
    """``_Judge.within``: a node may have to suppress up to (least discernibility found) // rows
    records and still be the optimum. Here N = 17: a1 ×2, a2 ×2 and 13 values once each, each its
    own group at level 1; k = 2, suppression 0.8 (floor(13.6) = 13 records may go).
    Level 0 keeps {a1}, {a2} and suppresses 13: 4 + 4 + 13·17 = 229. Level 1 keeps {A} (4 rows):
    16 + 221 = 237. Level 2 is one class of 17: 289. The optimum, level 0, suppresses
    13 = 229 // 17 = 237 // 17 records: once level 1 is found, a bound one record tighter rules it out."""
    once = [f"s{i:02d}" for i in range(13)]
    columns = {"a": ["a1", "a1", "a2", "a2", *once]}
    trees = {"a": {"*": {"A": ["a1", "a2"], **{f"P{v}": [v] for v in once}}}}
    by_hand = {(0,): (True, 13, 229), (1,): (True, 13, 237), (2,): (True, 0, 289)}
    check(columns, trees, 2, 0.8, explore, share, monkeypatch, by_hand)
    assert 229 // 17 == 237 // 17 == 13


@SHARES
@EXPLORE
def test_an_optimum_whose_discernibility_is_its_floor_is_found(explore, share, monkeypatch):
    """``_floor_blocks``: a node of c possible classes costs at least N² / c. Here a1, a2, a3 twice
    each (N = 6), tree {A: [a1, a2], B: [a3]}, k = 2, no suppression: level 0 is three classes of
    2, discernibility 12 = 6² / 3, exactly its floor; level 1 is {A} 4 and {B} 2: 20; level 2 is 36.
    Once level 1 is found (20), a floor twice the true one (24) would rule level 0 out."""
    columns = {"a": ["a1", "a1", "a2", "a2", "a3", "a3"]}
    trees = {"a": {"*": {"A": ["a1", "a2"], "B": ["a3"]}}}
    by_hand = {(0,): (True, 0, 12), (1,): (True, 0, 20), (2,): (True, 0, 36)}
    check(columns, trees, 2, 0.0, explore, share, monkeypatch, by_hand)
    assert 6**2 / 3 == 12


@SHARES
@EXPLORE
def test_a_projection_whose_suppression_bound_equals_the_limit_is_not_pruned(explore, share, monkeypatch):
    """``_Judge.necessary``: a node whose suppression lower bound equals the limit may still satisfy.
    7 rows: (a1,b1) ×2, (a2,b2) ×2, (a1,b2) ×2, (a3,b1) ×1; k = 2, suppression 0.15 (floor(1.05) = 1
    record may go). The projection {a} at level 0 has the class a3 of one row: its bound, 1, is the
    limit. (0,0): classes 2, 2, 2 and a3's 1 suppressed: 12 + 7 = 19; (0,1): a1 4, a2 2, a3 1
    suppressed: 16 + 4 + 7 = 27; (1,0): b1 3, b2 4: 25; (1,1): 49. The optimum is (0,0)."""
    rows = [("a1", "b1")] * 2 + [("a2", "b2")] * 2 + [("a1", "b2")] * 2 + [("a3", "b1")]
    columns = {"a": [r[0] for r in rows], "b": [r[1] for r in rows]}
    trees = {"a": {"*": ["a1", "a2", "a3"]}, "b": {"*": ["b1", "b2"]}}
    by_hand = {(0, 0): (True, 1, 19), (0, 1): (True, 1, 27), (1, 0): (True, 0, 25), (1, 1): (True, 0, 49)}
    check(columns, trees, 2, 0.15, explore, share, monkeypatch, by_hand)


@SHARES
@EXPLORE
def test_the_nodes_above_one_suppressing_a_record_are_still_searched(explore, share, monkeypatch):
    """Only a node that suppresses nothing makes its generalizations lose to it. One QI: a1 ×5,
    a2 ×1, a3 ×5, a4 ×5 (N = 16), tree {A: [a1, a2], C: [a3], D: [a4]}; k = 2, suppression 0.1
    (floor(1.6) = 1). Level 0 suppresses a2's row: 3·25 + 16 = 91; level 1 suppresses nothing:
    6² + 5² + 5² = 86, less; level 2: 256. The optimum is level 1, above a satisfying node that
    suppresses one record."""
    columns = {"a": ["a1"] * 5 + ["a2"] + ["a3"] * 5 + ["a4"] * 5}
    trees = {"a": {"*": {"A": ["a1", "a2"], "C": ["a3"], "D": ["a4"]}}}
    by_hand = {(0,): (True, 1, 91), (1,): (True, 0, 86), (2,): (True, 0, 256)}
    check(columns, trees, 2, 0.1, explore, share, monkeypatch, by_hand)
