"""The information-loss metric a search optimizes, over a prepared problem.

A spec's ``[search] metric`` names discernibility (Incognito's default, computed by the privacy
judge), one of Mauger et al.'s seven metrics, or ``custom`` with the spec's edge weights. The
seven and custom cost a full-domain node from each QI's leaf counts, a ``GROUP BY`` per QI over
the base histogram (aggregated counts, never rows), all in one query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sqlclose.errors import SpecError
from sqlclose.model.arrays import numpy_of
from sqlclose.prepare.problem import Problem
from sqlclose.sql import queries as q
from sqlclose.utility.full_domain import FullDomainCost
from sqlclose.utility.information_loss import METRICS, Metric, custom_metric, metric

DISCERNIBILITY = "discernibility"


def leaf_counts(problem: Problem) -> list[np.ndarray]:
    """Records per leaf of every QI (``hierarchy.leaves`` order): read by preparation with its
    leaf check when the distinct values it counted count the base's rows (``Problem.leaf_counts``),
    else a GROUP BY per QI over the base histogram, all in one query (UNION ALL, each branch
    tagged with its QI's position)."""
    if problem.leaf_counts is not None:
        return problem.leaf_counts
    result = problem.engine.fetch(q.leaf_counts(problem.base, [qi.coded.code for qi in problem.qis]))
    which = numpy_of(result.column("qi")).astype(np.int64)
    codes = numpy_of(result.column("code")).astype(np.int64)
    n = numpy_of(result.column("n")).astype(np.float64)
    return [qi.hierarchy.leaf_totals(codes[which == i], n[which == i]) for i, qi in enumerate(problem.qis)]


def problem_metric(problem: Problem, name: str, weights: Mapping[str, Sequence[float] | Mapping[str, float]] | None
                   = None) -> Metric:
    """One of the seven metrics, or ``custom`` with per-QI weights keyed by QI name."""
    hierarchies = [qi.hierarchy for qi in problem.qis]
    if name != "custom":
        return metric(name, hierarchies)
    if weights is None:
        raise SpecError("metric = \"custom\" needs [search.weights]: per quasi-identifier, one weight per level "
                        "step or a weight per edge keyed by the child's label")
    try:
        return custom_metric(hierarchies, [weights[qi.name] for qi in problem.qis])
    except KeyError as e:
        raise SpecError(f"[search.weights] gives no weights for {e.args[0]!r}") from None
    except ValueError as e:
        raise SpecError(f"[search.weights]: {e}") from None


def search_cost(problem: Problem, name: str, weights=None, counts: list[np.ndarray] | None = None
                ) -> FullDomainCost | None:
    """What Incognito minimizes: None for discernibility (the judge computes it), else the
    metric's full-domain costs."""
    if name == DISCERNIBILITY:
        return None
    if name not in (*METRICS, "custom"):
        raise SpecError(f"unknown metric {name!r}; choose one of {DISCERNIBILITY}, {', '.join(METRICS)}, custom")
    return FullDomainCost.of(problem_metric(problem, name, weights), counts or leaf_counts(problem))
