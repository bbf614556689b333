"""The in-memory lattice rollups (search.memory_runner.MemoryRunner) against a plain SQL GROUP BY per node.

The oracle groups the base histogram by each QI's code divided by the hierarchy's divisor at the
node's level (QIs outside the subset dropped) and the sensitive codes, in one DuckDB query per
node, and pivots the rows into class histograms with numpy. The runner is driven the way
Incognito drives it — bottom-up over several QI subsets at once, with nodes skipped at random so
that some have a computed parent and some do not — on a generated census-like table.
"""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import numpy as np
import pytest

import sqlclose
from sqlclose.engine.base import FileRead
from sqlclose.model.lattice import nodes_by_height_groups
from sqlclose.prepare.problem import prepare
from sqlclose.prepare.sources import open_source
from sqlclose.search import memory_runner, runners

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import make_table  # noqa: E402

# The oracle is a query per node: on the lattices of more than two QIs, a few nodes of each
# height are checked, not all (7 QIs: ~1,400 nodes took a minute; 8 per height are 137).
SAMPLED_PER_HEIGHT = 8


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    folder = tmp_path_factory.mktemp("generated")
    make_table.make(3_000, folder, seed=7)
    data = sqlclose.load_spec(folder / "table.toml").model_dump()
    spec = sqlclose.Spec.model_validate(data)
    opened = open_source(spec.source, None, FileRead.of(spec.source))
    yield prepare(opened.engine, opened.relation, spec, opened.label)
    opened.engine.close()


@pytest.fixture(scope="module")
def two_sensitive(tmp_path_factory):
    """The same kind of table with two sensitive attributes: the runner's matrix is their value
    combinations, each attribute's counts summed from it."""
    folder = tmp_path_factory.mktemp("generated_two")
    make_table.make(3_000, folder, seed=11)
    data = sqlclose.load_spec(folder / "table.toml").model_dump()
    data["sensitive"]["housing"] = {"distance": "equal", "t": 0.5}
    spec = sqlclose.Spec.model_validate(data)
    opened = open_source(spec.source, None, FileRead.of(spec.source))
    yield prepare(opened.engine, opened.relation, spec, opened.label)
    opened.engine.close()


def oracle(problem, subset, node) -> np.ndarray:
    """Rows (size, counts over each sensitive domain) of the node's classes, sorted."""
    levels = dict(zip(subset, node))
    codes = [f'"{qi.coded.code}" // {qi.hierarchy.divisors[levels[i]]}' for i, qi in enumerate(problem.qis)
             if i in levels]
    sas = [f'"{s.coded.code}"' for s in problem.sas]
    group = ", ".join([*(f"{c} AS c{j}" for j, c in enumerate(codes)), *sas])
    sql = f"SELECT {group}, SUM(n) AS n FROM {problem.base.sql('duckdb')} GROUP BY ALL"
    table = problem.engine.fetch(sql)
    cls = np.column_stack([table.column(f"c{j}").to_numpy() for j in range(len(codes))]) if codes \
        else np.zeros((table.num_rows, 1), dtype=np.int64)
    _, inverse = np.unique(cls, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    n = table.column("n").to_numpy().astype(np.float64)
    classes = inverse.max() + 1
    columns = [np.bincount(inverse, weights=n, minlength=classes)]
    for s in problem.sas:
        m = len(s.domain)
        sa = table.column(s.coded.code).to_numpy()
        columns.append(np.bincount(inverse * m + sa, weights=n, minlength=classes * m).reshape(classes, m))
    rows = np.column_stack(columns)
    return rows[np.lexsort(rows.T[::-1])]


def runner_rows(hist, index: int) -> np.ndarray:
    mask = hist.node == index
    rows = np.column_stack([hist.sizes[mask], *(c[mask] for c in hist.counts)])
    return rows[np.lexsort(rows.T[::-1])]


def test_generated_problem_takes_the_in_memory_path(problem):
    assert len(problem.sas) == 1
    assert isinstance(runners.runner_for(problem), memory_runner.MemoryRunner)


@pytest.mark.parametrize("size", [1, 2, 4, 7])
def test_rollups_match_sql_group_by(problem, size):
    rng = random.Random(size)
    runner = runners.runner_for(problem)
    every = list(itertools.combinations(range(len(problem.qis)), size))
    subsets = rng.sample(every, min(2, len(every)))
    groups = {s: nodes_by_height_groups(tuple(problem.qis[i].levels for i in s)) for s in subsets}
    runner.start()
    checked = 0
    for h in range(max(len(g) for g in groups.values())):
        items = [(s, nd) for s, g in groups.items() if h < len(g) for nd in g[h] if rng.random() < 0.7]
        hist = runner.level(items)
        assert hist.sizes.sum() == problem.rows * len(items)
        indexes = list(range(len(items)))
        if size > 2 and h > 0:
            indexes = sorted(rng.sample(indexes, min(SAMPLED_PER_HEIGHT, len(indexes))))
        for index in indexes:
            subset, node = items[index]
            np.testing.assert_allclose(runner_rows(hist, index), oracle(problem, subset, node))
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("size", [2, 4])
def test_rollups_of_two_sensitive_attributes_match_sql_group_by(two_sensitive, size):
    assert [len(s.domain) > 1 for s in two_sensitive.sas] == [True, True]
    assert isinstance(runners.runner_for(two_sensitive), memory_runner.MemoryRunner)
    test_rollups_match_sql_group_by(two_sensitive, size)


def test_codes_match_sql_group_by(problem):
    """The classes' codes (computed on first read): per node, the QIs of its subset at its levels
    are the SQL GROUP BY's groups, the others 0."""
    runner = runners.runner_for(problem)
    runner.start()
    subset = (0, 2, 5)
    groups = nodes_by_height_groups(tuple(problem.qis[i].levels for i in subset))
    for h in (0, 1, 2):
        items = [(subset, nd) for nd in groups[h]]
        hist = runner.level(items)
        for index, (_, node) in enumerate(items):
            codes = hist.codes[hist.node == index]
            assert not codes[:, [i for i in range(len(problem.qis)) if i not in subset]].any()
            sql_codes = ", ".join(f'"{problem.qis[i].coded.code}" // {problem.qis[i].hierarchy.divisors[lv]}'
                                  for i, lv in zip(subset, node))
            table = problem.engine.fetch(f"SELECT DISTINCT {sql_codes} FROM {problem.base.sql('duckdb')}")
            expected = sorted(tuple(int(v) for v in row.values()) for row in table.to_pylist())
            assert sorted(map(tuple, codes[:, list(subset)].tolist())) == expected


def test_parentless_nodes_from_their_meet_match_sql_group_by(problem, monkeypatch):
    """A level whose nodes have no computed parent and all generalize every QI of their subset:
    they are generalized from their meet (computed once per subset, not counted as evaluated);
    each node's classes and codes still match the SQL GROUP BY."""
    runner = runners.runner_for(problem)
    runner.start()
    subsets = [(0, 2, 5), (1, 3)]
    items = [(s, nd) for s in subsets for g in nodes_by_height_groups(tuple(problem.qis[i].levels for i in s))
             for nd in g if min(nd) >= 1 and sum(nd) <= 4]
    assert all(sum(1 for s, _ in items if s == subset) >= memory_runner.MEET_FROM for subset in subsets)
    units, real = [], memory_runner._Source

    def spy(*args, **kwargs):
        units.append(args[3] if len(args) > 3 else kwargs.get("unit", {}))
        return real(*args, **kwargs)

    monkeypatch.setattr(memory_runner, "_Source", spy)
    hist = runner.level(items)
    assert sum(1 for unit in units if unit) == len(subsets)  # one meet per subset
    assert runner.nodes_computed == len(items)
    for index, (subset, node) in enumerate(items):
        np.testing.assert_allclose(runner_rows(hist, index), oracle(problem, subset, node))
        sql_codes = ", ".join(f'"{problem.qis[i].coded.code}" // {problem.qis[i].hierarchy.divisors[lv]}'
                              for i, lv in zip(subset, node))
        table = problem.engine.fetch(f"SELECT DISTINCT {sql_codes} FROM {problem.base.sql('duckdb')}")
        expected = sorted(tuple(int(v) for v in row.values()) for row in table.to_pylist())
        assert sorted(map(tuple, hist.codes[hist.node == index][:, list(subset)].tolist())) == expected
