"""A wide problem — quasi-identifier codes that need more than 62 bits together — searched by the
SQL level batches with keys in several BIGINT words, against the brute-force oracle of
tests/oracle.py (every lattice node judged by plain SQL over the generalized labels).

Four QIs each have a hierarchy of 65,536 leaves (256 groups of 256): 16 bits of code each, 64
in all, plus the sensitive digit — more than one 62-bit key. The table is small (600 rows drawn
from a few leaves per group, so classes merge as the groups generalize)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from oracle import Config, Oracle, read_hierarchy, solve

import sqlclose
from sqlclose.search import batch_runner, memory_runner, runners

pytestmark = pytest.mark.slow

WIDE = ("a", "b", "c", "d")
CASES = {"k3-s0": (Config(3), 0.0), "k3-equal-s0.1": (Config(3, {"disease": (0.35, "equal")}), 0.1)}


@pytest.fixture(scope="module")
def wide_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wide")
    for name in WIDE:
        lines = [f"{name}{leaf:05d};{name}g{leaf // 256:03d};*" for leaf in range(65_536)]
        (folder / f"{name}.csv").write_text("\n".join(lines) + "\n")
    rng = np.random.default_rng(7)
    rows = ["a,b,c,d,sex,disease"]
    diseases = ["flu", "ulcer", "gastritis", "bronchitis"]
    for _ in range(600):
        # Leaves from 3 groups spread over the code range, 5 leaves each: fine levels mostly fail k.
        values = [f"{name}{int(rng.choice([7, 130, 255])) * 256 + int(rng.integers(0, 5)):05d}" for name in WIDE]
        rows.append(",".join([*values, str(rng.choice(["F", "M"])), str(rng.choice(diseases, p=[.4, .3, .2, .1]))]))
    (folder / "wide.csv").write_text("\n".join(rows) + "\n")
    (folder / "sex.csv").write_text("F;*\nM;*\n")
    return folder


def _spec(folder: Path, config: Config, suppression: float) -> sqlclose.Spec:
    qis = {name: {"file": str(folder / f"{name}.csv")} for name in WIDE}
    qis["sex"] = {"file": str(folder / "sex.csv")}
    sensitive = {name: {"t": t, "distance": distance} for name, (t, distance) in config.t.items()}
    return sqlclose.Spec.model_validate({
        "others": "keep", "source": {"path": str(folder / "wide.csv")},
        "privacy": {"k": config.k, "suppression": suppression}, "search": {"explore": "lattice"},  # every node
        "quasi_identifiers": qis, "sensitive": sensitive})


@pytest.fixture(scope="module")
def solutions(wide_dir) -> dict:
    hierarchies = {name: read_hierarchy(wide_dir / f"{name}.csv") for name in WIDE}
    hierarchies["sex"] = read_hierarchy(wide_dir / "sex.csv")
    oracle = Oracle(wide_dir / "wide.csv", ",", hierarchies, {"disease": "categorical"}, {})
    assert oracle.shape == (3, 3, 3, 3, 2)
    results = oracle.evaluate_all(CASES)
    return {case: solve(results[case], CASES[case][1]) for case in CASES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_wide_keys_take_the_level_batches_and_match_brute_force(wide_dir, solutions, case):
    config, suppression = CASES[case]
    with sqlclose.anonymize(None, _spec(wide_dir, config, suppression)) as release:
        problem = release.problem
        packing = problem.packing
        assert packing is not None and packing.words >= 2  # really beyond one 62-bit key
        assert memory_runner.class_strides(problem) is None  # so not the in-memory path either
        assert isinstance(runners.runner_for(problem), batch_runner.BatchRunner)
        search = release.search
        sol = solutions[case]
        assert sol.optimum is not None and len(sol.satisfying) < 3 ** 4 * 2  # not vacuous
        got = {tuple(int(x) for x in idx) for idx in np.argwhere(search.satisfying)}
        assert got == sol.satisfying
        assert set(search.minimal_nodes) == sol.minimal
        assert search.optimum == sol.optimum
        assert search.queries < search.nodes_evaluated  # batched: not one query per node
        best = sol.results[sol.optimum]
        assert search.evaluated[search.optimum].discernibility == best.dm
        assert search.evaluated[search.optimum].suppressed == best.suppressed


def test_the_oracle_sees_every_node(solutions):
    assert all(len(s.results) == len(list(itertools.product(range(3), range(3), range(3), range(3), range(2))))
               for s in solutions.values())
