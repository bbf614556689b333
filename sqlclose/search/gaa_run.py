"""GAA as a release algorithm: its input from SQL, the spec's models as its Φ, its result.

The input is one GROUP BY over the base histogram (every QI code and every sensitive code, with
counts), turned into distinct leaf combinations with, per sensitive column, a combinations ×
domain count matrix. GAA's Φ is k-anonymity (native) plus every sensitive model of the spec,
judged by the same vectorized criteria Incognito uses (``privacy.criteria``) over the merged
classes: entropy / distinct / recursive l-diversity, p-sensitivity and t-closeness with any
distance. The paper's own l and L1 t are not spec models; the strategies (S2–S7, ldiv, tclo)
read the paper's l-diversity and L1 values of the first sensitive column. GAA never suppresses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlglot import exp

from sqlclose.errors import HierarchyError, SpecError
from sqlclose.model.classes import ClassHistograms
from sqlclose.model.spec import Search
from sqlclose.model.text import name_shown
from sqlclose.prepare.problem import Problem
from sqlclose.privacy.criteria import Criterion, KAnonymity, failing_classes
from sqlclose.search.gaa import STRATEGIES, GaaInput, GaaProgressCallback, GaaResult, Violates, gaa
from sqlclose.search.utility_costs import problem_metric, refuse_blind_problem
from sqlclose.sql import queries as q
from sqlclose.utility.information_loss import Metric

_SENSITIVE_STRATEGIES = frozenset(STRATEGIES) - {"S1"}


@dataclass
class GaaRun:
    """What a GAA release was made from: its input combinations, its result and settings."""

    data: GaaInput
    result: GaaResult
    metric: Metric
    strategy: str
    scope: str
    strategy_column: str | None  # the sensitive column the strategies' l / t values read


def fetch_input(problem: Problem) -> GaaInput:
    """One GROUP BY over the base histogram: the distinct QI leaf combinations (lexicographic),
    their counts and, per sensitive column, their histograms."""
    sas = problem.sas
    query = q.node_histogram(problem.base.copy(), [(qi.coded.code, 1) for qi in problem.qis],
                             [sa.coded.code for sa in sas])
    result = problem.engine.fetch(query)
    n = result.column("n").to_numpy().astype(np.float64)
    leaves = np.column_stack([qi.hierarchy.leaf_index(result.column(qi.coded.code).to_numpy().astype(np.int64))
                              for qi in problem.qis])
    combos, inverse = np.unique(leaves, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    counts = np.bincount(inverse, weights=n, minlength=len(combos)).astype(np.int64)
    hists = []
    for sa in sas:
        m = len(sa.domain)
        codes = result.column(sa.coded.code).to_numpy().astype(np.int64)
        hists.append(np.bincount(inverse * m + codes, weights=n, minlength=len(combos) * m).reshape(len(combos), m))
    return GaaInput([qi.hierarchy for qi in problem.qis], combos, counts, hists[0] if hists else None,
                    [qi.name for qi in problem.qis], hists)


def spec_violations(criteria: Sequence[Criterion]) -> Violates | None:
    """The spec's sensitive models as GAA's extra Φ: classes failing any of them (k is GAA's own)."""
    models = [c for c in criteria if not isinstance(c, KAnonymity)]
    if not models:
        return None

    def violates(sizes: np.ndarray, hists: list[np.ndarray]) -> np.ndarray:
        hist = ClassHistograms(np.zeros((len(sizes), 0), dtype=np.int64), np.asarray(sizes, dtype=np.int64), hists)
        return failing_classes(hist, models)

    return violates


def run_gaa(problem: Problem, criteria: Sequence[Criterion], search: Search,
            on_progress: GaaProgressCallback | None = None) -> GaaRun:
    """GAA over the problem with the spec's metric, strategy, scope and models; ``on_progress``
    hears a ``GaaProgress`` about once a second."""
    strategy, scope = search.strategy_name, search.scope_name
    refuse_before_gaa(problem, search)
    mu = problem_metric(problem, search.metric_name, search.weights)
    data = fetch_input(problem)
    result = gaa(data, problem.k, mu, strategy, scope=scope, violates=spec_violations(criteria),
                 on_progress=on_progress)
    # S1 compares no sensitive values: a column named there read as one its merges weighed.
    compared = problem.sas[0].name if problem.sas and strategy in _SENSITIVE_STRATEGIES else None
    return GaaRun(data, result, mu, strategy, scope, compared)


def refuse_before_gaa(problem: Problem, search: Search) -> None:
    """What GAA refuses of a problem before it runs (and a dry run with it): a w1-weighted metric that
    costs nothing here, a strategy comparing sensitive values without one, a hierarchy label at two
    levels, structures past the memory limit's share."""
    strategy = search.strategy_name
    refuse_blind_problem(problem, search.metric_name, "gaa")
    if strategy in _SENSITIVE_STRATEGIES and not problem.sas:
        raise SpecError(f"GAA strategy {strategy} compares sensitive values: declare a [sensitive.<column>] or use "
                        "strategy = \"S1\"")
    _refuse_labels_at_two_levels(problem)
    _refuse_beyond_memory(problem)


# What GAA holds per distinct QI combination it starts from, measured (sixty-fourth round: 1 M
# combinations of 7 QIs and a 14-value sensitive column grew the process by ~1.05 GB in 40 s; 200 k
# by ~0.29 GB): its per-class arrays, its dict of generalized tuples, the class histograms' copies.
BYTES_PER_COMBINATION = 400
BYTES_PER_COMBINATION_QI = 60
BYTES_PER_COMBINATION_VALUE = 40


def gaa_bytes(combinations: int, qis: int, values: int) -> int:
    """What GAA's structures take for ``combinations`` distinct QI combinations of ``qis`` columns
    and sensitive histograms of ``values`` values in all."""
    per = BYTES_PER_COMBINATION + BYTES_PER_COMBINATION_QI * qis + BYTES_PER_COMBINATION_VALUE * values
    return combinations * per


def _refuse_beyond_memory(problem: Problem) -> None:
    """GAA read none of the memory limit: 1 M combinations grew a job given --memory-limit 600MB
    to 1.3 GB (review of the sixty-fourth round). Refused (exit 5) before it runs when its
    structures cannot fit the search's share of the limit (``UNLIMITED_BOUND`` without one). The
    message says the least limit in a 1-2-5 step, not the count: how many distinct combinations
    there are tells whether rows share their raw values, and a log is read by more people than
    hold the data."""
    from sqlclose.engine.limits import INTERPRETER_BYTES, SEARCH_SHARE, search_share
    from sqlclose.errors import EnvironmentFailure
    from sqlclose.search.lattice_memory import UNLIMITED_BOUND

    budget = problem.engine.memory_budget
    room = UNLIMITED_BOUND if budget is None else search_share(budget)
    combinations = problem.engine.fetch_row(exp.select(exp.Count(this=exp.Star()).as_("n")).from_(
        exp.select(*(q.col(qi.coded.code) for qi in problem.qis)).distinct().from_(problem.base.copy())
        .subquery("c")))["n"]
    needed = gaa_bytes(int(combinations), len(problem.qis), sum(len(sa.domain) for sa in problem.sas))
    if needed <= room:
        return
    least = _step_up(math.ceil(needed / SEARCH_SHARE) + INTERPRETER_BYTES)
    said = "the search's share of --memory-limit" if budget is not None else "what sqlclose allows it without a limit"
    raise EnvironmentFailure(
        f"GAA's structures for this table's distinct quasi-identifier combinations need more than {said}: "
        f"{'raise' if budget else 'give'} [engine] memory_limit (--memory-limit) to at least {least}, use Incognito "
        "(--algorithm incognito, the default), or coarsen the quasi-identifiers in a [source] query (fewer "
        "distinct combinations, e.g. a date's year); nothing was placed at the output path")


def _step_up(n: int) -> str:
    """``n`` bytes rounded up to 1, 2 or 5 times a power of ten, as the message says it (an order of
    magnitude, not the count behind it)."""
    power = 10 ** (len(str(n)) - 1)
    step = next(s * power for s in (1, 2, 5, 10) if s * power >= n)
    return f"{step // 10**9:,} GB" if step >= 10**9 else f"{step // 10**6:,} MB"


def _refuse_labels_at_two_levels(problem: Problem) -> None:
    """GAA writes a class's values at the level it reached, several levels of a column side by side:
    a label naming two groups at two levels made two classes one in the written file, and the
    re-check refused the release (exit 4) after the search. Refused before it, naming the label."""
    for qi in problem.qis:
        found = qi.hierarchy.label_at_two_levels()
        if found is None:
            continue
        label, said = found
        if label == qi.coded.null_value:  # the stand-in: its setting is what to change, not a label
            raise HierarchyError(f"hierarchy of column {name_shown(qi.name)}: {said}; null_value {label!r} is what "
                                 "NULL is released as, and GAA releases a column's values at several levels side by "
                                 "side, where the rows with no value would read as one class with the rows generalized "
                                 f"to {label!r}: choose a null_value the hierarchy writes nowhere else (e.g. "
                                 'null_value = "NULL", if the column never holds that text), or use Incognito '
                                 "(--algorithm incognito), which releases one level and takes it as it is")
        raise HierarchyError(f"hierarchy of column {name_shown(qi.name)}: {said}; GAA releases a column's values at "
                             "several levels side by side, where the two would read as one class: give one "
                             "of them another label (Incognito, which releases one level, takes it as it is)")
