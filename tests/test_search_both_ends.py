"""The search walks the full lattice from both ends (Incognito from below, a walk from the top
down). On real data the walk from above ends it; where nearly every node satisfies — a table of
repeated rows — the walk from below must. Both against the brute-force oracle of tests/oracle.py,
on Table 3 repeated (every class of the bottom node has k rows) and the same with one rare row."""

from __future__ import annotations

import importlib
import itertools

import numpy as np
import pytest
from oracle import TABLE3_DIR, Config, Oracle, read_hierarchy, solve

import sqlclose
from sqlclose.model.lattice import strictly_above
from sqlclose.privacy.criteria import criteria_for
from sqlclose.search.full_lattice import FullLattice, walk_from_above

search = importlib.import_module("sqlclose.search.incognito")

RARE_ROW = "47910,52,12000,flu"  # a (zip, age) no other row shares: the bottom node fails k


def repeated_table3(tmp_path, copies: int, rare: bool) -> object:
    lines = (TABLE3_DIR / "table3.csv").read_text().splitlines()
    path = tmp_path / "table3_repeated.csv"
    path.write_text("\n".join([lines[0], *lines[1:] * copies, *([RARE_ROW] if rare else [])]) + "\n")
    return path


def spec_for(source, k: int, suppression: float) -> sqlclose.Spec:
    return sqlclose.Spec.model_validate({
        "identifiers": ["salary", "disease"],
        "source": {"path": str(source)},
        "privacy": {"k": k, "suppression": suppression},
        "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": str(TABLE3_DIR / "age.csv")}},
    })


@pytest.mark.parametrize("share", [0.1, 0.0, 1e18], ids=["both-ends", "from-above-alone", "from-below-alone"])
@pytest.mark.parametrize("rare", [False, True], ids=["all-repeated", "one-rare-row"])
@pytest.mark.parametrize("suppression", [0.0, 0.1])
def test_repeated_rows_match_brute_force(tmp_path, monkeypatch, share: float, rare: bool, suppression: float):
    source = repeated_table3(tmp_path, 3, rare)
    oracle = Oracle(source, ",", {"zip": None, "age": read_hierarchy(TABLE3_DIR / "age.csv")},
                    {"disease": "categorical"}, {}, mask=("zip",))  # not judged: k alone
    solution = solve(oracle.evaluate_all({"case": (Config(3), suppression)})["case"], suppression)
    if not rare:
        assert len(solution.satisfying) == len(solution.results)  # every node satisfies: from below wins
    assert solution.optimum is not None
    monkeypatch.setattr(search, "BELOW_SHARE", share)
    with sqlclose.anonymize(source, spec_for(source, 3, suppression)) as release:
        problem = release.problem
        result = search.incognito(problem, criteria_for(problem.k, problem.sas))
    assert {tuple(int(x) for x in idx) for idx in np.argwhere(result.satisfying)} == solution.satisfying
    assert set(result.minimal_nodes) == solution.minimal
    assert result.optimum == solution.optimum
    assert result.evaluated[result.optimum].discernibility == solution.results[solution.optimum].dm


def brute_strictly_above(mask: np.ndarray) -> np.ndarray:
    out = np.zeros_like(mask)
    cells = [tuple(c) for c in np.argwhere(mask)]
    for node in itertools.product(*(range(s) for s in mask.shape)):
        out[node] = any(c != node and all(a <= b for a, b in zip(c, node)) for c in cells)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_strictly_above_matches_brute_force(seed: int):
    rng = np.random.default_rng(seed)
    mask = rng.random((4, 3, 5)) < 0.08
    assert (strictly_above(mask) == brute_strictly_above(mask)).all()


@pytest.mark.parametrize("seed", range(6))
def test_walk_from_above_evaluates_the_satisfying_and_the_highest_failing(seed: int):
    """A random monotone requirement (an up-set of a 3-QI lattice): the walk decides every node
    right, evaluating exactly the up-set and the maximal nodes outside it."""
    rng = np.random.default_rng(seed)
    shape = (4, 3, 5)
    minimal = rng.random(shape) < 0.06
    up = np.zeros(shape, dtype=bool)
    for node in np.argwhere(minimal):
        up[tuple(slice(int(v), None) for v in node)] = True
    lattice, evaluated = FullLattice(shape), []

    def evaluate(nodes):
        evaluated.extend(nodes)
        for node in nodes:
            lattice.satisfying[node] = up[node]
        return np.array([not up[node] for node in nodes], dtype=bool)

    for _ in walk_from_above(lattice, evaluate):
        pass
    assert lattice.decided.all() and (lattice.satisfying == up).all()
    highest_failing = {node for node in itertools.product(*(range(s) for s in shape)) if not up[node] and all(
        up[node[:i] + (node[i] + 1,) + node[i + 1:]] for i in range(3) if node[i] + 1 < shape[i])}
    assert len(evaluated) == len(set(evaluated))
    assert set(evaluated) == {tuple(int(v) for v in c) for c in np.argwhere(up)} | highest_failing
