"""Sweeps: one spec run over many values of k (and of l or t), with the utility of every run,
the normalized area under each curve (NAUC, Mauger et al. 2023 §3.3.1) and charts like the
papers' figures.

The source is scanned and prepared once; every run reuses the prepared problem (Incognito) or
GAA's aggregated input (one GROUP BY over the base histogram). Under plain k-anonymity a GAA
curve over k is ONE greedy run that reports each k as it reaches it (``gaa_k_sweep``): the run at
a larger k passes through the run at a smaller one.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sqlclose import api
from sqlclose.engine import Engine
from sqlclose.errors import InputError, NoSolutionError, SpecError
from sqlclose.model.spec import Spec, as_spec
from sqlclose.prepare.problem import Problem, SensitiveColumn, prepare
from sqlclose.prepare.sources import SourceLike
from sqlclose.privacy.criteria import criteria_for
from sqlclose.release.release import Release
from sqlclose.search import incognito
from sqlclose.search.gaa import STRATEGIES, GaaInput, GaaResult, fetch_gaa_input, gaa, gaa_k_sweep
from sqlclose.utility import (
    METRICS,
    Metric,
    class_l_diversity,
    custom_metric,
    generalized_percent,
    l1_closeness_value,
    l_diversity_value,
    metric,
    nauc,
    node_class_histograms,
    root_percent,
)

# Every run's row: what was run, then what it gave.
PARAMETERS = ("algorithm", "strategy", "metric", "scope", "k", "l", "t")
ALTERATIONS = tuple(f"alteration_{m}" for m in METRICS)
MEASURES = ("alteration", *ALTERATIONS, "mean_alteration", "generalized_percent", "root_percent", "l_diversity",
            "l1_closeness", "classes", "suppressed_rows", "discernibility", "average_class_size", "seconds")
COLUMNS = (*PARAMETERS, "status", "node", *MEASURES)  # node: the Incognito optimum, "age=2,zip=1"

# What each measure is, for chart axes: (title, axis label with unit).
LABELS = {
    "alteration": ("Alteration for the run's metric", "alteration (% of the fully generalized table's cost)"),
    "mean_alteration": ("Mean alteration over the seven metrics", "mean alteration (%)"),
    "generalized_percent": ("Generalized values", "values generalized above the leaf (%)"),
    "root_percent": ("Values generalized to the root", "values at the root (%)"),
    "l_diversity": ("l-diversity value", "least exp(entropy) over classes"),
    "l1_closeness": ("t-closeness value (L1)", "largest L1 distance of a class from the table (0–2)"),
    "classes": ("Equivalence classes", "classes released"),
    "suppressed_rows": ("Suppressed rows", "rows suppressed"),
    "discernibility": ("Discernibility", "Σ class size² + suppressed × rows"),
    "average_class_size": ("Average class size", "records per class"),
    "seconds": ("Running time", "seconds"),
}
CHARTED = ("alteration", "mean_alteration", "generalized_percent", "root_percent", "l_diversity", "l1_closeness",
           "discernibility", "average_class_size", "suppressed_rows", "seconds")
AXES = {"k": "k (smallest class size required)", "l": "l", "t": "t"}


@dataclass(frozen=True)
class SweepProgress:
    """A run finished: how many of how many, which, how long it took and the sweep so far."""

    done: int
    total: int
    label: str
    run_seconds: float
    elapsed: float


SweepCallback = Callable[[SweepProgress], None]


@dataclass
class SweepResult:
    """One row per run (``COLUMNS``), in run order."""

    rows: list[dict[str, Any]]
    source: str = ""
    max_l_diversity: float | None = None  # the whole table as one class: the paper's l-diversity scale
    seconds: float = 0.0
    x: str = "k"  # the swept parameter the curves run over
    nauc_range: tuple[float, float] | None = None  # default range for NAUC: the swept values' span

    # ---- curves ----------------------------------------------------------------------------
    def curve_keys(self) -> list[tuple]:
        """The distinct curves: every parameter but the swept one, in first-run order."""
        seen: dict[tuple, None] = {}
        for row in self.rows:
            seen.setdefault(self._key(row), None)
        return list(seen)

    def _key(self, row: dict) -> tuple:
        return tuple(row[p] for p in PARAMETERS if p != self.x)

    def label(self, key: tuple) -> str:
        """A curve's legend: only the parameters that differ between curves (else the metric)."""
        names = [p for p in PARAMETERS if p != self.x]
        keys = self.curve_keys()
        varying = [i for i, _ in enumerate(names) if len({k[i] for k in keys}) > 1]
        if not varying:
            varying = [names.index("strategy" if self.rows and self.rows[0]["algorithm"] == "gaa" else "metric")]
            if self.rows and self.rows[0]["algorithm"] == "gaa":
                varying.append(names.index("metric"))
        parts = [f"{names[i]}={key[i]}" if names[i] in ("l", "t", "k", "scope") else str(key[i]) for i in varying]
        return " ".join(parts)

    def curve(self, key: tuple, measure: str) -> tuple[list[float], list[float]]:
        """(x, y) of one curve for one measure, sorted by x, runs without a value left out."""
        points = sorted((float(r[self.x]), _number(r[measure])) for r in self.rows if self._key(r) == key)
        return [x for x, y in points if y is not None], [y for _, y in points if y is not None]

    def measured(self, measure: str) -> bool:
        return any(_number(r[measure]) is not None for r in self.rows)

    # ---- NAUC ------------------------------------------------------------------------------
    def nauc(self, lo: float | None = None, hi: float | None = None) -> list[dict[str, Any]]:
        """Per curve and measure: the mean value of the curve on [lo, hi] (default: the sweep's
        range), and the paper's percentage where it defines one (alteration and the %
        measures as they are; the t-closeness value × 100; the l-diversity value over the whole
        table's, × 100)."""
        lo, hi = (lo, hi) if lo is not None and hi is not None else (self.nauc_range or (None, None))
        out = []
        for key in self.curve_keys():
            for measure in MEASURES:
                xs, ys = self.curve(key, measure)
                if len(xs) < 2 or lo is None or not (xs[0] <= lo < hi <= xs[-1]):
                    continue
                value = nauc(xs, ys, lo, hi)
                row = {p: v for p, v in zip((p for p in PARAMETERS if p != self.x), key)}
                row.update(curve=self.label(key), measure=measure, lo=lo, hi=hi, nauc=value,
                           nauc_percent=self._percent(measure, value))
                out.append(row)
        return out

    def _percent(self, measure: str, value: float) -> float | None:
        if measure in ("alteration", *ALTERATIONS, "mean_alteration", "generalized_percent", "root_percent"):
            return value
        if measure == "l1_closeness":
            return value * 100.0
        if measure == "l_diversity" and self.max_l_diversity:
            return value / self.max_l_diversity * 100.0
        return None

    # ---- files -----------------------------------------------------------------------------
    def to_csv(self, path: str | Path) -> Path:
        """Every run, one row each (``COLUMNS``); empty cells where a measure does not apply."""
        return _write_csv(Path(path), list(COLUMNS), self.rows)

    def nauc_to_csv(self, path: str | Path, lo: float | None = None, hi: float | None = None) -> Path:
        rows = self.nauc(lo, hi)
        columns = [p for p in PARAMETERS if p != self.x] + ["curve", "measure", "lo", "hi", "nauc", "nauc_percent"]
        return _write_csv(Path(path), columns, rows)

    def chart_names(self) -> list[str]:
        """The measures a chart is drawn for: those with a value in some run."""
        return [m for m in CHARTED if self.measured(m)]

    def charts(self, folder: str | Path) -> list[Path]:
        """One PNG per measure (``<measure>.png``): x = the swept parameter, one curve per run set."""
        from sqlclose.utility.charts import line_chart

        folder = Path(folder)
        written = []
        what = self.rows[0]["algorithm"].upper() if self.rows and self.rows[0]["algorithm"] == "gaa" else "Incognito"
        for measure in self.chart_names():
            title, unit = LABELS[measure]
            curves = {self.label(key): self.curve(key, measure) for key in self.curve_keys()}
            written.append(line_chart(folder / f"{measure}.png", curves,
                                      title=f"{title} against {self.x} — {what}, {self.source}",
                                      xlabel=AXES[self.x], ylabel=unit))
        return written


def sweep(source: SourceLike, spec: Spec | str | Path | dict, ks: Sequence[int], *,
          ls: Sequence[float] | None = None, ts: Sequence[float] | None = None,
          strategies: Sequence[str] | None = None, metrics: Sequence[str] | None = None,
          on_progress: SweepCallback | None = None, engine: Engine | None = None) -> SweepResult:
    """Run the spec's algorithm (``[search]``) for every k (× every l, t; × every GAA strategy
    and metric) over one preparation of ``source`` (None: the spec's ``[source]``).

    Incognito: ``ls`` / ``ts`` replace the l of the first sensitive column's l-diversity model
    and its t. GAA: they are the paper's model Φ (l-diversity value ≥ l, L1 t-closeness value ≤ t
    of every class) on the first sensitive column, whose histograms the sensitive strategies read.
    """
    started = time.perf_counter()
    spec = as_spec(spec)
    ks = _values("k", ks, int)
    ls, ts = _values("l", ls or [], float), _values("t", ts or [], float)
    algorithm = spec.search.algorithm
    strategies = [_strategy(s) for s in strategies] if strategies else [spec.search.strategy_name]
    metrics = [m.lower() for m in metrics] if metrics else [spec.search.metric_name]
    if algorithm != "gaa" and strategies != [spec.search.strategy_name]:
        raise SpecError("strategies apply to GAA: set [search] algorithm = \"gaa\" in the spec")
    opened = api.open_for(source, spec, engine)
    try:
        problem = prepare(opened.engine, opened.relation, spec, opened.label)
        too_big = [k for k in ks if k > problem.rows]
        if too_big:
            raise InputError(f"k = {too_big[0]} is larger than the table ({problem.rows} rows); sweep k up to "
                             f"{problem.rows}")
        runner = _GaaSweep if algorithm == "gaa" else _IncognitoSweep
        result = runner(problem, spec, ks, ls, ts, strategies, metrics, on_progress, started).run()
    finally:
        if engine is None:
            opened.engine.close()
    result.source = Path(opened.label).name if "/" in opened.label else opened.label
    result.x = "k" if len(ks) > 1 or (len(ls) <= 1 and len(ts) <= 1) else "l" if len(ls) > 1 else "t"
    swept = {"k": ks, "l": ls, "t": ts}[result.x]
    result.nauc_range = (float(min(swept)), float(max(swept))) if len(swept) > 1 else None
    result.seconds = time.perf_counter() - started
    return result


# ---- the runs ------------------------------------------------------------------------------

@dataclass
class _Sweep:
    problem: Problem
    spec: Spec
    ks: list[int]
    ls: list[float]
    ts: list[float]
    strategies: list[str]
    metrics: list[str]
    on_progress: SweepCallback | None
    started: float
    rows: list[dict[str, Any]] = field(default_factory=list)

    def total(self) -> int:
        return len(self.ks) * max(1, len(self.ls)) * max(1, len(self.ts)) * len(self.metrics) * \
            (len(self.strategies) if self.spec.search.algorithm == "gaa" else 1)

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append({c: row.get(c) for c in COLUMNS})
        if self.on_progress is not None:
            label = " ".join(f"{p}={row[p]}" for p in PARAMETERS if row.get(p) is not None and p != "algorithm")
            self.on_progress(SweepProgress(len(self.rows), self.total(), label, float(row.get("seconds") or 0.0),
                                           time.perf_counter() - self.started))


class _IncognitoSweep(_Sweep):
    def run(self) -> SweepResult:
        for name in self.metrics:
            if name != "discernibility":
                raise SpecError(f"Incognito sweeps choose the optimum by discernibility; metric {name!r} is for "
                                "GAA ([search] algorithm = \"gaa\")")
            for l in self.ls or [None]:  # noqa: E741
                for t in self.ts or [None]:
                    sas = _with_models(self.problem.sas, l, t)
                    for k in self.ks:
                        self.add(self._one(dataclasses.replace(self.problem, k=k, sas=sas), name, l, t))
        sa = self.problem.sas[0] if self.problem.sas else None
        best = float(class_l_diversity(sa.q)[0]) if sa is not None and sa.q is not None else None
        return SweepResult(self.rows, max_l_diversity=best)

    def _one(self, problem: Problem, name: str, l: float | None, t: float | None) -> dict[str, Any]:  # noqa: E741
        started = time.perf_counter()
        row: dict[str, Any] = {"algorithm": "incognito", "metric": name, "k": problem.k, "l": l, "t": t}
        criteria = criteria_for(problem.k, problem.sas)
        result = incognito(problem, criteria)
        if result.optimum is None:
            return {**row, "status": "no solution", "seconds": time.perf_counter() - started}
        summary = Release(problem, result, criteria, self.spec.sha256(), problem.label, owns_engine=False).summary
        node = ",".join(f"{qi.name}={level}" for qi, level in zip(problem.qis, result.optimum))
        return {**row, "status": "ok", "node": node, "classes": summary["classes"],
                "suppressed_rows": summary["suppressed_rows"],
                "discernibility": summary["utility"]["discernibility"],
                "average_class_size": summary["utility"]["average_class_size"],
                "seconds": time.perf_counter() - started}


class _GaaSweep(_Sweep):
    def run(self) -> SweepResult:
        sensitive = next(iter(self.spec.sensitive), None)
        data = fetch_gaa_input(self.problem, sensitive)
        needs = [s for s in self.strategies if s != "S1"]
        if (needs or self.ls or self.ts) and data.sensitive is None:
            raise SpecError(f"{'strategy ' + needs[0] if needs else 'l and t'} need(s) a sensitive column: declare "
                            "one under [sensitive.<column>] in the spec")
        seven = {m: metric(m, data.hierarchies) for m in METRICS}
        for name in self.metrics:
            mu = self._metric(name, data, seven)
            for strategy in self.strategies:
                if self.ls or self.ts:
                    self._with_model(data, mu, strategy, seven)
                else:
                    self._k_sweep(data, mu, strategy, seven)
        best = float(class_l_diversity(data.sensitive.sum(axis=0))[0]) if data.sensitive is not None else None
        return SweepResult(self.rows, max_l_diversity=best)

    def _metric(self, name: str, data: GaaInput, seven: dict[str, Metric]) -> Metric:
        if name in seven:
            return seven[name]
        weights = self.spec.search.weights
        if name == "custom" and weights is not None:
            return custom_metric(data.hierarchies, [weights[qi.name] for qi in self.problem.qis])
        raise SpecError(f"GAA metric {name!r}: choose one of {', '.join(METRICS)} (or custom with [search.weights])")

    def _k_sweep(self, data: GaaInput, mu: Metric, strategy: str, seven: dict[str, Metric]) -> None:
        scope = self.spec.search.scope_name
        gaa_k_sweep(data, self.ks, mu, strategy, scope=scope,
                    on_result=lambda k, r: self.add(self._row(data, r, mu, strategy, k, None, None, seven)))

    def _with_model(self, data: GaaInput, mu: Metric, strategy: str, seven: dict[str, Metric]) -> None:
        for l in self.ls or [None]:  # noqa: E741
            for t in self.ts or [None]:
                for k in self.ks:
                    try:
                        r = gaa(data, k, mu, strategy, l=l, t=t, scope=self.spec.search.scope_name)
                    except NoSolutionError:
                        self.add({"algorithm": "gaa", "strategy": strategy, "metric": mu.name, "k": k, "l": l,
                                  "t": t, "status": "no solution"})
                        continue
                    self.add(self._row(data, r, mu, strategy, k, l, t, seven))

    def _row(self, data: GaaInput, r: GaaResult, mu: Metric, strategy: str, k: int, l: float | None,  # noqa: E741
             t: float | None, seven: dict[str, Metric]) -> dict[str, Any]:
        return {"algorithm": "gaa", "strategy": strategy, "metric": mu.name, "scope": self.spec.search.scope_name,
                "k": k, "l": l, "t": t, "status": "ok", "seconds": r.seconds,
                **gaa_measures(data, r, mu, seven)}


def gaa_measures(data: GaaInput, r: GaaResult, mu: Metric, seven: dict[str, Metric]) -> dict[str, Any]:
    """A GAA release's figures from its per-combination nodes (aggregated counts only)."""
    leaves, nodes, counts = data.leaves, r.nodes, data.counts
    alterations = {f"alteration_{m}": seven[m].alteration(leaves, nodes, counts) for m in METRICS}
    out: dict[str, Any] = {"alteration": mu.alteration(leaves, nodes, counts), **alterations,
                           "mean_alteration": float(np.nanmean(list(alterations.values()))),
                           "generalized_percent": generalized_percent(mu.trees, nodes, counts),
                           "root_percent": root_percent(mu.trees, nodes, counts),
                           "classes": r.classes, "suppressed_rows": 0,
                           "discernibility": int(np.sum(r.sizes.astype(np.int64) ** 2)),
                           "average_class_size": float(np.sum(counts)) / r.classes}
    if data.sensitive is not None:
        hist = node_class_histograms(nodes, data.sensitive)
        out["l_diversity"] = l_diversity_value(hist)
        out["l1_closeness"] = l1_closeness_value(hist, data.sensitive.sum(axis=0))
    return out


# ---- helpers -------------------------------------------------------------------------------

def _with_models(sas: list[SensitiveColumn], l: float | None, t: float | None) -> list[SensitiveColumn]:  # noqa: E741
    """The sensitive columns with the first one's l and/or t replaced (Incognito l/t sweeps)."""
    if l is None and t is None:
        return sas
    if not sas:
        raise SpecError("an l or t sweep needs a sensitive column: declare one under [sensitive.<column>]")
    s = sas[0].spec
    update: dict[str, Any] = {}
    if t is not None:
        update["t"] = t
    if l is not None:
        if s.entropy_l is not None:
            update["entropy_l"] = l
        elif s.distinct_l is not None:
            update["distinct_l"] = int(l)
        elif s.recursive is not None:
            update["recursive"] = s.recursive.model_copy(update={"l": int(l)})
        else:
            raise SpecError(f"an l sweep replaces the l of an l-diversity model, and {sas[0].name!r} has none: give "
                            "it entropy_l, distinct_l or recursive = {c = …, l = …} in the spec")
    return [dataclasses.replace(sas[0], spec=s.model_copy(update=update)), *sas[1:]]


def _values(name: str, given: Sequence[Any], kind: type) -> list[Any]:
    out = []
    for v in given:
        try:
            value = kind(v)
        except (TypeError, ValueError):
            raise InputError(f"{name} = {v!r} is not a number") from None
        if not math.isfinite(value) or value < (1 if name != "t" else 0):
            raise InputError(f"{name} = {v!r} is out of range ({name} ≥ {1 if name != 't' else 0})")
        out.append(value)
    if name == "k" and not out:
        raise InputError("give at least one k to sweep")
    return sorted(set(out))


def _strategy(name: str) -> str:
    fixed = {s.lower(): s for s in STRATEGIES}.get(name.strip().lower())
    if fixed is None:
        raise InputError(f"unknown GAA strategy {name!r}; choose from {', '.join(STRATEGIES)}")
    return fixed


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, str):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if _blank(row.get(c)) else row.get(c) for c in columns])
    return path


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))
