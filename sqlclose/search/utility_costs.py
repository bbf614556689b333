"""The information-loss metric a search optimizes, over a prepared problem.

A spec's ``[search] metric`` names discernibility (Incognito's default, computed by the privacy
judge), one of Mauger et al.'s seven metrics, or ``custom`` with the spec's edge weights. The
seven and custom cost a full-domain node from each QI's leaf counts, read by preparation with its
leaf check from the column values of the rows kept (aggregated counts, never rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlclose.errors import SpecError
from sqlclose.model.text import name_shown
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
        raise SpecError(f"[search.weights] gives no weights for {name_shown(e.args[0])}") from None
    except ValueError as e:
        raise SpecError(f"[search.weights]: {e}") from None


def search_cost(problem: Problem, name: str, weights=None) -> FullDomainCost | None:
    """What Incognito minimizes: None for discernibility (the judge computes it), else the
    metric's full-domain costs."""
    if name == DISCERNIBILITY:
        return None
    if name not in (*METRICS, "custom"):
        raise SpecError(f"unknown metric {name_shown(name)}; choose one of {DISCERNIBILITY}, {', '.join(METRICS)}, "
                        "custom")
    refuse_blind_problem(problem, name, "incognito")
    return FullDomainCost.of(problem_metric(problem, name, weights), problem.leaf_counts)


# The metrics weighted by w1 (Definition 8), and each one's form without it, for the refusal below.
W1_METRICS = ("distortion", "wllm", "wnllm")
WITHOUT_W1 = {
    "wllm": 'metric = "llm": the same lost leaves, weighted by w2, which is 1 here',
    "wnllm": 'metric = "nllm": the same lost leaves over the hierarchy\'s, weighted by w2, which is 1 here',
    "distortion": 'metric = "total", also a cost by level; or Distortion\'s own level costs without w1: metric = '
                  '"custom" with [search.weights] {column} = [1/(h − 1), …, 1/2, 1], one weight per level step of '
                  'its h levels (e.g. [0.5, 1] for 3)',
}
CHOOSES = {"gaa": "every merge of GAA would be a tie broken by class id alone",
           "incognito": "Incognito's node would be its tie-break's, the lowest satisfying one, whatever it costs "
                        "by any other measure"}


def refuse_blind_metric(name: str, algorithm: str, qis: Sequence[str], levels: Sequence[int] | None = None) -> None:
    """A w1-weighted metric (Distortion, WLLM, WNLLM) where w1 = 1 − (h_j − 1)^m / Σ_i (h_i − 1)^m is 0
    for every quasi-identifier that generalizes: one QI (1 − x/x), or one whose hierarchy has more
    than one level among others of one level (h_i − 1 = 0). Every generalization then costs 0, so the
    metric would choose nothing: refused, naming the metric, why and its form without w1. Without
    ``levels`` (before the hierarchies are built: from the spec alone), judged by the QIs' count."""
    if name not in W1_METRICS:
        return
    generalizing = list(qis) if levels is None else [q for q, h in zip(qis, levels) if h > 1]
    if len(generalizing) != 1:
        return
    column = generalizing[0]
    if len(qis) == 1:
        who = f"{name_shown(column)}, the only quasi-identifier (1 − x/x)"
    else:
        flat = ", ".join(name_shown(q) for q in qis if q != column)
        who = (f"{name_shown(column)}, the only quasi-identifier whose hierarchy has more than one level "
               f"({flat}: h − 1 = 0)")
    raise SpecError(f"metric {name} weighs each quasi-identifier's costs by w1 = 1 − (h_j − 1)^m / Σ_i (h_i − 1)^m "
                    f"(Mauger et al., Definition 8), which is 0 for {who}: every generalization costs 0 under "
                    f"{name}, so {CHOOSES[algorithm]}; use {WITHOUT_W1[name].format(column=column)}"
                    f"{' ([] for the others)' if name == 'distortion' and len(qis) > 1 else ''}")


def refuse_blind_problem(problem: Problem, name: str, algorithm: str) -> None:
    """``refuse_blind_metric`` once the hierarchies are built: by the levels of each QI's."""
    refuse_blind_metric(name, algorithm, [qi.name for qi in problem.qis], [qi.levels for qi in problem.qis])
