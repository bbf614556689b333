"""The report's ``utility`` section: how much a release lost, by Mauger et al.'s (2023) measures.

Every quantity comes from class-level counts: each QI's leaf counts (one GROUP BY per QI over
the base histogram) and the released node's classes (codes, sizes, sensitive counts). Suppressed
records count as generalized to the root (see utility/full_domain.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sqlclose.model.classes import ClassHistograms
from sqlclose.model.sparse_counts import SparseCounts, kept_totals
from sqlclose.model.spec import Search
from sqlclose.model.text import name_shown
from sqlclose.prepare.problem import Problem
from sqlclose.privacy.criteria import SLICE_BYTES
from sqlclose.search.utility_costs import problem_metric
from sqlclose.utility.full_domain import FullDomainCost, value_percents
from sqlclose.utility.information_loss import (
    LEAF_COUNTING,
    METRICS,
    Metric,
    Tree,
    generalized_percent,
    l1_closeness_value,
    l1_closeness_value_of_cells,
    l_diversity_value,
    l_diversity_value_of_cells,
    root_percent,
)

if TYPE_CHECKING:  # GAA's run is imported only when a GAA release is made
    from sqlclose.search.gaa_run import GaaRun


def _metric_names(search: Search) -> list[str]:
    return [*METRICS, *(["custom"] if search.metric_name == "custom" else [])]


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None


def alterations(problem: Problem, search: Search, counts: Sequence[np.ndarray], levels: Sequence[int],
                hist: ClassHistograms, failing: np.ndarray) -> dict[str, float | None]:
    """Per metric (the seven, then custom when the spec uses it): alteration in %, None if undefined.
    From the records at each released label where the metric allows (``Metric.released_cost``):
    summed over raw values, the floating-point result told them apart in its last digits."""
    node = np.array([levels], dtype=np.int64)
    out: dict[str, float | None] = {}
    records: list[np.ndarray] | None = None  # the same for every metric: their trees are the hierarchies'
    for name in _metric_names(search):
        metric = problem_metric(problem, name, search.weights)
        if metric.from_leaves is not None:
            records = records if records is not None else _node_records(metric.trees, levels, hist, failing)
            out[name] = _finite(metric.released_alteration(records))
            continue
        cost = FullDomainCost.of(metric, counts)  # custom weights per edge: a cost per raw leaf
        out[name] = _finite(float(cost.alteration(cost.costs(node, np.zeros(hist.classes, dtype=np.int64),
                                                             hist.codes, hist.sizes * failing)[0])))
    return out


def _node_records(trees: Sequence[Tree], levels: Sequence[int], hist: ClassHistograms,
                  failing: np.ndarray) -> list[np.ndarray]:
    """Per QI, the records at each node of its tree: a kept class's at its label, the suppressed at the root."""
    kept = np.where(failing, 0, hist.sizes).astype(np.float64)
    suppressed = float(hist.sizes[failing].sum())
    out = []
    for j, (tree, level) in enumerate(zip(trees, levels)):
        h = tree.hierarchy
        mixed = h.leaf_codes // h.divisors[level]  # a class's code at this level, per leaf
        node_of = np.zeros(int(mixed.max()) + 1, dtype=np.int64)
        node_of[mixed] = tree.ancestors[tree.leaf_nodes, level]
        records = np.bincount(node_of[hist.codes[:, j]], weights=kept, minlength=tree.nodes)
        records[tree.root] += suppressed
        out.append(records)
    return out


def _multidimensional_alteration(metric: Metric, leaves: np.ndarray, nodes: np.ndarray, counts: np.ndarray) -> float:
    """A GAA release's alteration: from the records at each node where the metric allows (as above)."""
    if metric.from_leaves is None:
        return float(metric.alteration(leaves, nodes, counts))
    weights = np.asarray(counts, dtype=np.float64)
    return metric.released_alteration([np.bincount(nodes[:, j], weights=weights, minlength=tree.nodes)
                                       for j, tree in enumerate(metric.trees)])


def withheld(problem: Problem, search: Search) -> dict[str, str]:
    """Per figure of ``alteration`` (and ``mean_alteration``) that would describe the input beyond
    the release: why the report leaves it out. The operator's summary and sweeps keep it."""
    out: dict[str, str] = {}
    counting = [qi for qi in problem.qis if qi.hierarchy.counts_data]
    if counting:
        declare = "; ".join(f"{name_shown(qi.name)}: {domain_to_declare(qi.hierarchy.rule)}" for qi in counting)
        reason = ("it counts the values below each label, and the hierarchies of "
                  f"{', '.join(name_shown(qi.name) for qi in counting)} are built from the column's values or may list "
                  "them (a file or tree made from the data), suppressed rows' included; declare each one's domain "
                  f"to publish it ({declare})")
        out.update((name, reason) for name in LEAF_COUNTING)
        out["mean_alteration"] = f"it averages {', '.join(LEAF_COUNTING)}, which are withheld"
    if search.metric_name == "custom" and problem_metric(problem, "custom", search.weights).from_leaves is None:
        out["custom"] = ("its weights per edge give each value its own cost, so the figure would tell which values "
                         "lie below a released label; give one weight per level step to publish it")
    return out


def domain_to_declare(rule: str | None) -> str:
    """The spec line that declares a hierarchy's domain: a mask's alphabet, a band's or a date's range,
    or, for a file or tree (no rule), that its leaves are the column's domain."""
    if rule == "mask":
        return "alphabet = \"…\" (the characters its codes are made of)"
    if rule is None:
        return ("domain = \"leaves\" (if its leaves are the domain the column's values are drawn from, e.g. a "
                "published code list, not read from this data)")
    return "domain = [lowest, highest]"


def published(utility: dict) -> dict:
    """The utility section as a report may publish it: the ``withheld`` figures null."""
    hidden = utility.get("withheld") or {}
    if not hidden:
        return utility
    alteration = {name: None if name in hidden else value for name, value in (utility.get("alteration") or {}).items()}
    mean = None if "mean_alteration" in hidden else utility.get("mean_alteration")
    return {**utility, "alteration": alteration, "mean_alteration": mean}


def mean_of(alteration: dict[str, float | None]) -> float | None:
    """The mean alteration of Definition 9 over the seven metrics that are defined."""
    values = [v for name, v in alteration.items() if name in METRICS and v is not None]
    return float(np.mean(values)) if values else None


def sensitive_values(problem: Problem, hist: ClassHistograms, kept: np.ndarray) -> dict[str, dict]:
    """Per sensitive column: the paper's l-diversity value and L1 t-closeness value over released
    classes, one run of classes at a time (a released node of thousands of classes over 20,000 values
    is gigabytes as one matrix). Each value is a largest (or least) of per-class figures, each summed
    exactly, so the runs' extremes give the same bits as the whole's."""
    out = {}
    for j, sa in enumerate(problem.sas):
        totals = kept_totals(hist.counts[j], kept)
        # Over the values the release holds: a value only suppressed rows have is a zero column,
        # which shifts how each row's sum groups its terms (the last digits moved with it).
        held = totals > 0
        if not kept.any():
            out[sa.name] = {"l_diversity": None, "l1_closeness": None}
            continue
        # Against the released table's own distribution: the input's (sa.q) holds the suppressed
        # rows' values, which the release hides (t-closeness's max_emd is the one measure against it).
        if isinstance(hist.counts[j], SparseCounts):  # by their cells: a dense run is a few classes
            figures = [_cell_values(run, totals) for run in hist.kept_cell_runs(j, kept, SLICE_BYTES)]
        else:
            figures = [_run_values(counts, totals[held]) for counts in hist.kept_runs(j, kept, held, SLICE_BYTES)]
        out[sa.name] = {"l_diversity": min(f[0] for f in figures), "l1_closeness": max(f[1] for f in figures)}
    return out


def _cell_values(released: SparseCounts, totals: np.ndarray) -> tuple[float, float]:
    """``_run_values`` of the released classes from their cells (every value they hold is held)."""
    cells = released.values > 0
    rows, cols, counts = released.rows[cells], released.cols[cells], released.values[cells]
    classes = released.shape[0]
    return (l_diversity_value_of_cells(rows, counts, classes),
            l1_closeness_value_of_cells(rows, cols, counts, classes, totals))


def _run_values(released: np.ndarray, totals: np.ndarray) -> tuple[float, float]:
    """A run of released classes' least l-diversity value and largest L1 distance from ``totals``."""
    return l_diversity_value(released), l1_closeness_value(released, totals)


def full_domain_utility(problem: Problem, search: Search, levels: Sequence[int], hist: ClassHistograms,
                        failing: np.ndarray) -> dict:
    """The information-loss part of the utility section for a full-domain release."""
    counts = problem.leaf_counts
    alteration = alterations(problem, search, counts, levels, hist, failing)
    suppressed = int(hist.sizes[failing].sum())
    p_gen, p_root = value_percents(levels, [qi.levels - 1 for qi in problem.qis], problem.rows, suppressed)
    return {"metric": search.metric_name, "alteration": alteration, "mean_alteration": mean_of(alteration),
            "withheld": withheld(problem, search), "generalized_percent": p_gen, "root_percent": p_root,
            "sensitive": sensitive_values(problem, hist, ~failing)}


def multidimensional_utility(problem: Problem, search: Search, run: GaaRun, hist: ClassHistograms) -> dict:
    """The information-loss part of the utility section for a GAA release (nothing suppressed):
    every metric over the combinations and the node each was generalized to."""
    data, result = run.data, run.result
    alteration = {name: _finite(_multidimensional_alteration(problem_metric(problem, name, search.weights),
                                                             data.leaves, result.nodes, data.counts))
                  for name in _metric_names(search)}
    trees = run.metric.trees
    return {"metric": search.metric_name, "alteration": alteration, "mean_alteration": mean_of(alteration),
            "withheld": withheld(problem, search),
            "generalized_percent": generalized_percent(trees, result.nodes, data.counts),
            "root_percent": root_percent(trees, result.nodes, data.counts),
            "sensitive": sensitive_values(problem, hist, np.ones(hist.classes, dtype=bool))}
