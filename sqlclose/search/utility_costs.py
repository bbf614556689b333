"""The information-loss metric a search optimizes, over a prepared problem.

A spec's ``[search] metric`` names discernibility (Incognito's default, computed by the privacy
judge), one of Mauger et al.'s seven metrics, or ``custom`` with the spec's edge weights. The
seven and custom cost a full-domain node from each QI's leaf counts, read by preparation with its
leaf check from the column values of the rows kept (aggregated counts, never rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlclose.errors import SpecError
from sqlclose.prepare.problem import Problem
from sqlclose.utility.full_domain import FullDomainCost
from sqlclose.utility.information_loss import METRICS, Metric, custom_metric, metric

DISCERNIBILITY = "discernibility"


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


def search_cost(problem: Problem, name: str, weights=None) -> FullDomainCost | None:
    """What Incognito minimizes: None for discernibility (the judge computes it), else the
    metric's full-domain costs."""
    if name == DISCERNIBILITY:
        return None
    if name not in (*METRICS, "custom"):
        raise SpecError(f"unknown metric {name!r}; choose one of {DISCERNIBILITY}, {', '.join(METRICS)}, custom")
    return FullDomainCost.of(problem_metric(problem, name, weights), problem.leaf_counts)
