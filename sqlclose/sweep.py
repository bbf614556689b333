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
import numbers
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlclose import api
from sqlclose.engine import Engine
from sqlclose.engine.base import leaves_as_found
from sqlclose.errors import InputError, NoSolutionError, OutputExistsError, SpecError
from sqlclose.model.spec import DISTANCE_BOUNDS, METRIC_NAMES, Search, Spec, as_spec
from sqlclose.model.text import given_items, name_shown, not_finite
from sqlclose.model.whole_files import replaced_whole
from sqlclose.prepare.problem import Problem, SensitiveColumn
from sqlclose.prepare.sources import Opened, SourceLike
from sqlclose.privacy.criteria import (
    TOLERANCE,
    Criterion,
    TCloseness,
    criteria_for,
    max_distance,
    max_l1_distance,
    nothing_required,
)
from sqlclose.release import files
from sqlclose.release.gaa_release import GaaRelease, suppression_unused
from sqlclose.release.release import Release
from sqlclose.search.gaa import STRATEGIES, GaaInput, GaaResult, gaa, gaa_k_sweep
from sqlclose.search.gaa_run import GaaRun, fetch_input, spec_violations
from sqlclose.search.incognito import incognito
from sqlclose.search.utility_costs import problem_metric, refuse_blind_metric, refuse_blind_problem, search_cost
from sqlclose.utility import METRICS, Metric, class_l_diversity, nauc

# Every run's row: what was run, then what it gave.
PARAMETERS = ("algorithm", "strategy", "metric", "scope", "k", "l", "t")
ALTERATIONS = tuple(f"alteration_{m}" for m in METRICS)
MEASURES = ("alteration", *ALTERATIONS, "mean_alteration", "generalized_percent", "root_percent", "l_diversity",
            "l1_closeness", "classes", "suppressed_rows", "discernibility", "average_class_size", "search_seconds",
            "seconds")
L1_BOUND = 2.0  # the largest plain L1 distance of two distributions, GAA's t (not halved)
WITHHELD_KEY = "_withheld"  # a run's figures its report would withhold (kept apart from its row)
# Which l-diversity model a run's l is of ("entropy", "distinct", "recursive") and a recursive model's
# c: l sweeps of an entropy, a distinct and a recursive model (of c = 3 or c = 1.5) differ.
L_MODEL = ("l_model", "c")
COLUMNS = (*PARAMETERS[:-1], *L_MODEL, PARAMETERS[-1], "status", "node", *MEASURES)  # node: "age=2,zip=1"

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
    "search_seconds": ("Search time", "seconds (the search alone)"),
    "seconds": ("Running time", "seconds (search and measurements)"),
}


def _metric_title(name: str) -> str:
    """A metric as the paper writes it: Distortion, NCP, Total, LLM, NLLM, WLLM, WNLLM."""
    return {"distortion": "Distortion", "total": "Total", "custom": "the custom weights"}.get(name, name.upper())


# Every metric's alteration may be charted too (asked by name: ``charts(folder, ["alteration_ncp"])``).
LABELS.update({f"alteration_{m}": (f"Alteration for {_metric_title(m)}", LABELS["alteration"][1]) for m in METRICS})
CHARTED = ("alteration", "mean_alteration", "generalized_percent", "root_percent", "l_diversity", "l1_closeness",
           "discernibility", "average_class_size", "suppressed_rows", "search_seconds", "seconds")
AXES = {"k": "k (smallest class size required)", "l": "l", "t": "t"}
# l and t mean different things for the two algorithms (sweep's docstring): the axis says which.
SENSITIVE_AXES = {
    ("gaa", "l"): "l (least l-diversity value required: exp(entropy) of {column})",
    ("gaa", "t"): "t (largest L1 t-closeness value allowed for {column}, not halved: 0–2)",
    ("incognito", "l"): "l (of {column}'s l-diversity model)",  # which model: L_AXES
    ("incognito", "t"): "t (largest {distance} of {column} allowed)",
}
DISTANCE_WORDS = {"ordered": "ordered EMD", "equal": "equal-distance EMD", "hierarchical": "hierarchical EMD",
                  "variational": "variational distance", "kl": "KL divergence"}
# An Incognito l sweep's axis names the model the l is of, and a recursive model's c.
L_AXES = {
    "entropy": "l (entropy l-diversity of {column}: least exp(entropy) of a class)",
    "distinct": "l (distinct l-diversity of {column}: least distinct values in a class)",
    "recursive": "l (recursive (c, l)-diversity of {column}, c = {c:g})",
}


@dataclass(frozen=True)
class SweepProgress:
    """A run finished: how many of how many, which, how long it took and the sweep so far."""

    done: int
    total: int
    label: str
    run_seconds: float
    elapsed: float


SweepCallback = Callable[[SweepProgress], None]

# nauc.csv's note where the l-diversity percentage is left blank (SweepResult._l_diversity_scale).
WITHHELD_L_DIVERSITY_PERCENT = ("nauc_percent withheld: every run suppressed rows, and the whole table's l-diversity "
                                "value it divides by holds their sensitive values")


@dataclass
class SweepResult:
    """One row per run (``COLUMNS``), in run order."""

    rows: list[dict[str, Any]]
    source: str = ""  # the source as the charts' titles and the summary name it (``source_named``)
    # The whole input as one class, suppressed rows included: the paper's l-diversity scale (the
    # operator's; nauc() divides by it only where a release shows it, _l_diversity_scale).
    max_l_diversity: float | None = None
    seconds: float = 0.0
    x: str = "k"  # the swept parameter the curves run over
    nauc_range: tuple[float, float] | None = None  # default range for NAUC: the swept values' span
    sensitive: str | None = None  # the column the l-diversity and L1 values are of (the first sensitive one)
    # The spec's sensitive models every run keeps, in words ("occupation: t = 0.2 hierarchical"): a
    # chart's title names them, or a sweep under t = 0.2 and one under t = 0.3 looked alike.
    spec_models: str = ""
    # The first sensitive column's distance (an Incognito t sweep's axis names it: an ordered EMD, a
    # KL divergence); None where sweep() did not say.
    distance: str | None = None
    warnings: list[str] = field(default_factory=list)  # what every run's report would warn of (a setting unused)
    # The files the sweep read (``api.files_read_by``: the source's, the spec file, the hierarchies),
    # which its files never replace (``_refuse_inputs``), as ``Release.write`` refuses them.
    inputs: list[Path] = field(default_factory=list)

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
        parts = [f"{names[i]}={_shown(key[i])}" if names[i] in ("l", "t", "k", "scope") else str(key[i])
                 for i in varying]
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
        table's, × 100, blank with a ``note`` when every run suppressed rows)."""
        lo, hi = self._nauc_bounds(lo, hi)
        if lo is None or hi is None:
            return []
        out = []
        for key in self.curve_keys():
            for measure in MEASURES:
                xs, ys = self.curve(key, measure)
                row = {p: v for p, v in zip((p for p in PARAMETERS if p != self.x), key)}
                row.update(curve=self.label(key), measure=measure, lo=lo, hi=hi)
                if len(xs) >= 2 and xs[0] <= lo < hi <= xs[-1]:
                    out.append({**row, **self._area(key, measure, xs, ys, lo, hi)})
                elif (unsolved := self._unsolved_ends(key, measure, xs)):
                    # A curve without a point at an end of the range has no area there: told, not dropped.
                    values = ", ".join(f"{v:g}" for v in unsolved)
                    out.append({**row, "nauc": None, "nauc_percent": None, "interpolated": "",
                                "note": f"not taken: no solution at {self.x} = {values}, so the curve does not "
                                        "reach an end of the range"})
        return out

    def _area(self, key: tuple, measure: str, xs: list[float], ys: list[float], lo: float,
              hi: float) -> dict[str, Any]:
        """A curve's NAUC on [lo, hi], its percentage, the runs it draws a straight line over and why
        a figure is blank."""
        value = nauc(xs, ys, lo, hi)
        withheld = measure == "l_diversity" and self.max_l_diversity and self._l_diversity_scale() is None
        return {"nauc": value, "nauc_percent": self._percent(measure, value),
                "interpolated": ";".join(f"{x:g}" for x in self._gaps(key, measure, lo, hi)),
                "note": WITHHELD_L_DIVERSITY_PERCENT if withheld else ""}

    def _unsolved_ends(self, key: tuple, measure: str, xs: list[float]) -> list[float]:
        """The swept values beyond a curve's first and last point where its run found no solution,
        for a measure its solved runs give (alteration is none of a discernibility curve's): the
        reason it has no area on a range reaching past them."""
        failed = sorted(float(v) for v in self._failed(key))
        outside = [v for v in failed if not xs or not xs[0] <= v <= xs[-1]]
        return outside if outside and self._gives(key, measure) else []

    def _gives(self, key: tuple, measure: str) -> bool:
        """Whether a curve's solved runs have a value for the measure: judged on its own, or, with
        none solved, on the sweep's solved runs of its metric."""
        own = [r for r in self.rows if self._key(r) == key and r["status"] == "ok"]
        metric = next(r["metric"] for r in self.rows if self._key(r) == key)
        solved = own or [r for r in self.rows if r["status"] == "ok" and r["metric"] == metric]
        return any(_number(r[measure]) is not None for r in solved)

    def _l_diversity_scale(self) -> float | None:
        """The whole table's l-diversity value, the l-diversity NAUC's scale, where a release of this
        sweep shows it: a run that suppressed no row released the input's distribution. When every
        run suppressed rows it holds their sensitive values, which no release shows: None (withheld,
        as the report withholds the distance against the input)."""
        shown = any(r["status"] == "ok" and r["suppressed_rows"] == 0 for r in self.rows)
        return self.max_l_diversity if shown else None

    def _gaps(self, key: tuple, measure: str, lo: float, hi: float) -> list[float]:
        """The swept values inside [lo, hi] where the curve has a run but no value (no solution):
        the area takes the straight line over them, which the reader must be told."""
        return sorted({float(r[self.x]) for r in self.rows if self._key(r) == key and lo <= float(r[self.x]) <= hi
                       and _number(r[measure]) is None})

    def _nauc_bounds(self, lo: float | None, hi: float | None) -> tuple[float | None, float | None]:
        """[lo, hi]: a bound not given is the sweep's own (``nauc(3)`` is [3, the largest value]);
        a range outside the swept values is an error, not an empty answer."""
        default_lo, default_hi = self.nauc_range or (None, None)
        lo = default_lo if lo is None else float(lo)
        hi = default_hi if hi is None else float(hi)
        if lo is None or hi is None:  # one swept value and no range given: no area to take
            return None, None
        swept = [float(r[self.x]) for r in self.rows if _number(r.get(self.x)) is not None]
        if not swept or not min(swept) <= lo < hi <= max(swept):
            span = f"[{min(swept):g}, {max(swept):g}]" if swept else "none"
            raise InputError(f"NAUC range [{lo:g}, {hi:g}] must lie inside the swept values of {self.x} ({span}) "
                             "with lo < hi")
        return lo, hi

    def _percent(self, measure: str, value: float) -> float | None:
        if measure in ("alteration", *ALTERATIONS, "mean_alteration", "generalized_percent", "root_percent"):
            return value
        if measure == "l1_closeness":
            return value * 100.0
        if measure == "l_diversity" and (scale := self._l_diversity_scale()):
            return value / scale * 100.0
        return None

    # ---- files -----------------------------------------------------------------------------
    def to_csv(self, path: str | Path) -> Path:
        """Every run, one row each (``COLUMNS``); empty cells where a measure does not apply. A path
        that is a file the sweep read is refused (``OutputExistsError``, nothing written)."""
        path = Path(path).expanduser()  # "~" as charts() and every sqlclose path
        self._refuse_inputs([path], "output", "the sweep's runs")
        _refuse_unwritable_file(path)
        return _write_csv(path, list(COLUMNS), self.rows)

    def nauc_to_csv(self, path: str | Path, lo: float | None = None, hi: float | None = None) -> Path:
        """Every curve's NAUC per measure (``nauc``), one row each; a path that is a file the sweep
        read is refused (``OutputExistsError``, nothing written)."""
        path = Path(path).expanduser()
        self._refuse_inputs([path], "output", "the sweep's NAUC")
        _refuse_unwritable_file(path)
        rows = self.nauc(lo, hi)
        columns = [p for p in PARAMETERS if p != self.x] + ["curve", "measure", "lo", "hi", "nauc", "nauc_percent",
                                                            "interpolated", "note"]
        return _write_csv(path, columns, rows)

    def _refuse_inputs(self, targets: list[Path], role: str, written: str) -> None:
        """No file of the sweep may replace a file it read (its table, the spec, a hierarchy: they were
        replaced without a word, where ``Release.write`` and `sqlclose sweep` refuse them), nor land
        inside a Parquet folder release, whose digest is all its files. A Parquet folder source is left
        out, as the command leaves it (``cli.sweep._refuse_inputs``): it reads only .parquet files."""
        inputs = [path for path in self.inputs if not path.is_dir()]
        for target in targets:
            files.refuse_inputs(target, role, inputs, written=written)
            files.refuse_inside_folder_releases(target, role)

    def chart_names(self) -> list[str]:
        """The measures a chart is drawn for: those with a value in some run."""
        return [m for m in CHARTED if self.measured(m)]

    def charts(self, folder: str | Path, measures: Sequence[str] | None = None) -> list[Path]:
        """One PNG per measure (``<measure>.png``): by default every ``CHARTED`` measure with a
        value in some run; ``measures`` names others too (any ``LABELS`` key, e.g.
        ``alteration_ncp``), an unknown name being an InputError. x = the swept parameter, one
        curve per run set; ``folder`` is made if missing."""
        from sqlclose.utility.charts import line_chart

        # charts(folder, "alteration"): one name, not its letters; an Index or array of names alike
        measures = None if measures is None else given_items(measures)
        unknown = [m for m in measures or [] if m not in LABELS]
        if unknown:
            raise InputError(f"no chart for measure {name_shown(unknown[0])}; choose from {', '.join(LABELS)}")
        folder = Path(folder).expanduser()  # "~": the home folder, as for every path sqlclose takes
        wanted = self.chart_names() if measures is None else [m for m in LABELS if m in measures and self.measured(m)]
        self._refuse_inputs([folder / f"{measure}.png" for measure in wanted], "chart", "the chart")
        _refuse_unwritable_folder(folder, wanted)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        what = self._algorithm_title()
        for measure in wanted:
            # A curve with no value for this measure and no failed run (discernibility's curve on
            # the alteration chart: it has no alteration) is not drawn, nor listed in the legend.
            drawn = {key: self.curve(key, measure) for key in self.curve_keys()}
            curves = {self._legend(key): curve for key, curve in drawn.items() if curve[0] or self._failed(key)}
            written.append(line_chart(folder / f"{measure}.png", curves,
                                      title=f"{self._title(measure)} against {self.x} — {what}, {self.source}",
                                      xlabel=self._axis(), ylabel=LABELS[measure][1]))
        return written

    def _algorithm_title(self) -> str:
        """Incognito, or GAA with its scope: a class-scope chart looks like a table-scope one."""
        if not self.rows or self.rows[0]["algorithm"] != "gaa":
            return "Incognito" + self._fixed()
        scopes = {r["scope"] for r in self.rows}
        return (f"GAA, {scopes.pop()} scope" if len(scopes) == 1 else "GAA") + self._fixed()

    def _fixed(self) -> str:
        """The metric, k, l and t where every run has the same one (and the chart is not drawn over
        it): the legend names only what varies, so a sweep at l = 2 and one at l = 3 looked alike."""
        parts = []
        metrics = {r["metric"] for r in self.rows}
        if len(metrics) == 1:  # GAA merges by it, Incognito picks its optimum by it: every chart depends on it
            verb = "merge cost" if self.rows[0]["algorithm"] == "gaa" else "chosen by"
            parts.append(f"{verb} {_metric_title(metrics.pop())}")
        for p in ("k", "l", "t"):
            values = {r[p] for r in self.rows}
            if p != self.x and len(values) == 1 and (value := values.pop()) is not None:
                model = self.rows[0].get("l_model") if p == "l" else None
                parts.append(f"{model + ' ' if model else ''}{p} = {float(value):g}")
        if self.spec_models:
            parts.append(self.spec_models)
        return "".join(f", {part}" for part in parts)

    def _axis(self) -> str:
        """The x axis: k, or which l or t (the paper's values for GAA; for Incognito the spec's
        l-diversity model, with a recursive model's c, or its distance)."""
        algorithm = self.rows[0]["algorithm"] if self.rows else "incognito"
        axis = SENSITIVE_AXES.get((algorithm, self.x))
        if not axis or not self.sensitive:
            return AXES[self.x]
        model, c = (self.rows[0].get(key) for key in L_MODEL) if self.rows else (None, None)
        if algorithm == "incognito" and self.x == "l" and model in L_AXES and (model != "recursive" or c is not None):
            axis = L_AXES[model]
        return axis.format(column=self.sensitive, c=c, distance=DISTANCE_WORDS.get(self.distance, "EMD"))

    def _title(self, measure: str) -> str:
        """The chart's title names what the legend does not: the metric of "alteration" when every
        curve has the same one, and the column the l-diversity and L1 values are of."""
        title = LABELS[measure][0]
        metrics = {r["metric"] for r in self.rows}
        if measure == "alteration" and len(metrics) == 1:
            return f"Alteration for {_metric_title(metrics.pop())}"
        if measure in ("l_diversity", "l1_closeness") and self.sensitive:
            return f"{title} of {self.sensitive}"
        return title

    def _legend(self, key: tuple) -> str:
        """A curve's legend, saying where it has no point because the model had no solution: a
        curve drawn without points (or with a gap) would otherwise look like a missing line."""
        failed = self._failed(key)
        if not failed:
            return self.label(key)
        if len(failed) == sum(1 for r in self.rows if self._key(r) == key):
            return f"{self.label(key)} (no solution)"
        return f"{self.label(key)} (no solution at {self.x} = {', '.join(f'{float(v):g}' for v in failed)})"

    def _failed(self, key: tuple) -> list[Any]:
        """The swept values at which a curve's model had no solution."""
        return [r[self.x] for r in self.rows if self._key(r) == key and r["status"] != "ok"]

    def failed_runs(self) -> list[str]:
        """The runs that found no solution, each named by its curve and swept value."""
        return [f"{self._legend_base(r)}{self.x}={float(r[self.x]):g}" for r in self.rows if r["status"] != "ok"]

    def _legend_base(self, row: dict) -> str:
        label = self.label(self._key(row)) if len(self.curve_keys()) > 1 else ""
        return f"{label} " if label else ""


def sweep(source: SourceLike, spec: Spec | str | Path | dict, ks: Sequence[int] | int, *,
          ls: Sequence[float] | float | None = None, ts: Sequence[float] | float | None = None,
          strategies: Sequence[str] | str | None = None, metrics: Sequence[str] | str | None = None,
          on_progress: SweepCallback | None = None, engine: Engine | None = None) -> SweepResult:
    """Run the spec's algorithm (``[search]``) for every k (× every l, t; × every GAA strategy
    and metric) over one preparation of ``source`` (None: the spec's ``[source]``).

    Every run's figures are its release's ``summary`` (``Release`` or ``GaaRelease``; nothing
    is written). Incognito: the optimum by each metric; ``ls`` / ``ts`` replace the l of the first
    sensitive column's l-diversity model and its t. GAA: Φ is k plus the spec's sensitive models
    (as a GAA release has it) plus, from ``ls`` / ``ts``, the paper's l-diversity value ≥ l and L1
    t-closeness value ≤ t on the first sensitive column, whose histograms the strategies read.

    Each of ``ks``, ``ls``, ``ts``, ``strategies`` and ``metrics`` is a sequence (a list, tuple,
    range, numpy array, pandas Series) or one value: one number (``ks=5``) or one name
    (``metrics="ncp"``, not its letters), as ``SweepResult.charts`` takes one name.
    """
    started = time.perf_counter()
    spec = as_spec(spec)
    ks = _values("k", _as_list("ks", ks), int)
    ls, ts = _values("l", _as_list("ls", ls), float), _values("t", _as_list("ts", ts), float)
    strategies, metrics = _as_list("strategies", strategies), _as_list("metrics", metrics)
    algorithm = spec.search.algorithm
    # Each once, in the order given: "nllm,NLLM" or "S1,s1" name one curve, not two identical ones.
    strategies = list(dict.fromkeys(_strategy(s) for s in strategies)) if strategies else [spec.search.strategy_name]
    odd = [m for m in metrics if not isinstance(m, str)]
    if odd:
        raise SpecError(f"a metric is named by its text, not {odd[0]!r}; choose from {', '.join(METRIC_NAMES)}")
    metrics = list(dict.fromkeys(m.strip().lower() for m in metrics)) if metrics else [spec.search.metric_name]
    if algorithm != "gaa" and strategies != [spec.search.strategy_name]:
        raise SpecError("strategies apply to GAA: set [search] algorithm = \"gaa\" in the spec")
    if algorithm == "gaa":
        _refuse_l1_above_its_bound(ts)
    allowed = [m for m in METRIC_NAMES if not (algorithm == "gaa" and m == "discernibility")]
    unknown = [m for m in metrics if m not in allowed]
    if unknown:
        raise SpecError(f"unknown metric {name_shown(unknown[0])} for {algorithm}; choose from {', '.join(allowed)}")
    for name in metrics:  # a metric that chooses nothing with these QIs, refused before the data are read
        refuse_blind_metric(name, algorithm, list(spec.quasi_identifiers))
    with leaves_as_found(engine):  # a caller's engine: what the sweep made there goes at its end
        opened = api.open_for(source, spec, engine)
        try:
            opened.keep_rows()  # a caller's table is read where it lives, at every pass of prepare
            problem = api.prepared_source(opened, spec)
            # The runs read the histogram prepare made, never the source again: a file replaced, or a
            # caller's table changed, while prepare read it in several passes (values, histogram) gives
            # figures of two inputs.
            opened.refuse_changed("while the sweep read it", "its figures would mix rows of the source before and "
                                  "after; run the sweep again on the source as it is now, and leave it unchanged "
                                  "until the sweep returns")
            too_big = [k for k in ks if k > problem.rows]
            if too_big:  # no solution, as anonymize says it for that k (exit 3): nothing is run
                raise NoSolutionError(f"{api.k_over_rows(too_big[0], problem.rows)} (sweep k up to {problem.rows})")
            runner = (_GaaSweep if algorithm == "gaa" else _IncognitoSweep)(problem, spec, ks, ls, ts, strategies,
                                                                              metrics, on_progress, started)
            result = runner.run()
            if algorithm == "gaa":  # as each run's release report would say
                result.warnings += suppression_unused(problem.suppression)
            result.warnings += _withheld_in_reports(runner.withheld)
        finally:
            if engine is None:
                opened.engine.close()
    result.source = source_named(opened)
    result.inputs = api.files_read_by(opened, spec)
    result.spec_models = spec_models_kept(problem.sas, gaa=algorithm == "gaa", l_swept=bool(ls), t_swept=bool(ts))
    result.distance = problem.sas[0].spec.distance if problem.sas and problem.sas[0].spec is not None else None
    result.x, swept = swept_values(ks, ls, ts)
    result.nauc_range = (float(min(swept)), float(max(swept))) if len(swept) > 1 else None
    result.seconds = time.perf_counter() - started
    return result


def source_named(opened: Opened) -> str:
    """How a sweep's charts and summary name its source: a path's file name (the folders above it are
    the user's, not the chart's), any other source by its label. Told by ``Opened.path``, never by the
    label's text: a caller's table "ward/2024" was named "2024"."""
    return opened.path.name if opened.path is not None else opened.label


def spec_models_kept(sas: Sequence[Any], *, gaa: bool, l_swept: bool, t_swept: bool) -> str:
    """The spec's sensitive models that every run of a sweep keeps, in words, column by column. An
    Incognito l or t sweep replaces the first column's l-diversity model's l or its t
    (``_with_models``: the swept value is named on the chart by itself, the axis says which l or t);
    a recursive model keeps its c, named here (``recursive c = 3``). GAA keeps them all beside its
    paper l and t."""
    described = []
    for i, sa in enumerate(sas):
        if sa.spec is None:
            continue
        swept = i == 0 and not gaa
        replaced = {"t" if swept and t_swept else None, _swept_l_model(sa.spec) if swept and l_swept else None}
        words = [text if model not in replaced else f"recursive c = {sa.spec.recursive.c:g}"
                 for model, text in _model_words(sa.spec).items() if model not in replaced or model == "recursive"]
        if words:
            described.append(f"{sa.name}: {', '.join(words)}")
    return "; ".join(described)


def _model_words(s: Any) -> dict[str, str]:
    """A sensitive column's models in words, by the spec's name of each."""
    words = {"t": f"t = {s.t:g} {s.distance}" if s.t is not None else None,
             "distinct_l": f"distinct l = {s.distinct_l}" if s.distinct_l is not None else None,
             "entropy_l": f"entropy l = {s.entropy_l:g}" if s.entropy_l is not None else None,
             "recursive": f"recursive (c = {s.recursive.c:g}, l = {s.recursive.l})" if s.recursive else None,
             "p": f"p = {s.p}" if s.p is not None else None}
    return {model: text for model, text in words.items() if text is not None}


def _swept_l_model(s: Any) -> str | None:
    """The l-diversity model an Incognito l sweep replaces: entropy_l, else distinct_l, else recursive."""
    return next((m for m in ("entropy_l", "distinct_l", "recursive") if getattr(s, m) is not None), None)


def _l_model_cells(sa: SensitiveColumn | None, l: float | None, gaa: bool) -> dict[str, Any]:  # noqa: E741
    """A run's ``l_model`` and ``c`` (``L_MODEL``): which model its l is of — for GAA the paper's
    l-diversity value, exp(entropy); for Incognito the first column's model the sweep replaced —
    and a recursive model's c. Empty when the run has no l."""
    if l is None:
        return {}
    if gaa or sa is None or sa.spec is None:
        return {"l_model": "entropy"}
    model = _swept_l_model(sa.spec)
    return {"l_model": (model or "").removesuffix("_l") or None,
            "c": sa.spec.recursive.c if model == "recursive" else None}


def swept_values(ks: Sequence[int] | int, ls: Sequence[float] | float | None = None,
                 ts: Sequence[float] | float | None = None) -> tuple[str, list[Any]]:
    """The parameter a sweep's curves run over and its values, each once and sorted, as the sweep
    runs them: k when more than one k is given or no more than one l and t; else l, else t."""
    ks, ls, ts = _values("k", _as_list("ks", ks), int), _values("l", _as_list("ls", ls), float), \
        _values("t", _as_list("ts", ts), float)
    x = "k" if len(ks) > 1 or (len(ls) <= 1 and len(ts) <= 1) else "l" if len(ls) > 1 else "t"
    return x, {"k": ks, "l": ls, "t": ts}[x]


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
    withheld: set[str] = field(default_factory=set)  # figures some run's report would withhold

    def total(self) -> int:
        return len(self.ks) * max(1, len(self.ls)) * max(1, len(self.ts)) * len(self.metrics) * \
            (len(self.strategies) if self.spec.search.algorithm == "gaa" else 1)

    def refuse_runs_without_a_requirement(self) -> None:
        """A run at k = 1 whose models (with the swept l / t) every table satisfies would measure the
        input as it is — its classes are the distinct raw combinations — and a sweep's files may be
        published: refused, as ``anonymize`` refuses such a spec (``Spec``'s rule) and a t no class of
        this table can exceed (``nothing_required``; GAA's paper L1 t by ``max_l1_distance``)."""
        if min(self.ks) >= 2:
            return
        for l in self.ls or [None]:  # noqa: E741
            for t in self.ts or [None]:
                refusal = self._nothing_required_at_k_1(l, t)
                if refusal is not None:
                    raise refusal

    def _nothing_required_at_k_1(self, l: float | None, t: float | None) -> SpecError | InputError | None:  # noqa: E741
        """Why the k = 1 run at this l and t would require nothing of the table, as the error to raise,
        or None when some model of it can fail. Told without the table's figure (its least share)."""
        gaa = self.spec.search.algorithm == "gaa"
        if gaa and self._paper_model_binds(l, t):
            return None
        sas = self.problem.sas if gaa else _with_models(self.problem.sas, l, t)
        why = None
        if not all(sa.spec is None or sa.spec.protects_nothing for sa in sas):
            why = nothing_required([sa for sa in sas if sa.spec is not None])
            if why is None:
                return None
        if gaa and t is not None:  # the paper's t, vacuous on this table (_paper_model_binds)
            why = "; ".join(filter(None, [why, f"every class of this table has an L1 distance of {sas[0].name} at "
                                               f"most t = {t:g} (no class of it can be farther from the table than "
                                               "its farthest class of one value)"]))
        swept = "".join(f", {p} = {v:g}" for p, v in (("l", l), ("t", t)) if v is not None)
        if why is None:
            return SpecError(f"k = 1{swept} protects nothing: that run would measure the input as it is; sweep k "
                             "from 2, or give a model that can fail under [sensitive.<column>]")
        return InputError(f"k = 1{swept} protects nothing on {self.problem.label}: {why}; that run would measure "
                          "the input as it is; sweep k from 2, or lower t")

    def _paper_model_binds(self, l: float | None, t: float | None) -> bool:  # noqa: E741
        """Whether GAA's paper l or t can fail a class at k = 1: l-diversity ≥ l above 1 (a class of
        one value has 1); L1 ≤ t below the farthest L1 distance a class of this table can have
        (``max_l1_distance``), as an equal-distance EMD t is judged. Without a sensitive column the
        run refuses the l or t itself (``_GaaSweep.run``)."""
        if l is not None and l > 1:
            return True
        if t is None:
            return False
        column = self.problem.sas[0] if self.problem.sas else None
        return column is None or column.q is None or t < max_l1_distance(column) - TOLERANCE

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append({c: row.get(c) for c in COLUMNS})
        self.withheld.update(row.get(WITHHELD_KEY, ()))
        if self.on_progress is not None:
            label = " ".join(f"{p}={_shown(row[p])}" for p in PARAMETERS if row.get(p) is not None and p != "algorithm")
            self.on_progress(SweepProgress(len(self.rows), self.total(), label, float(row.get("seconds") or 0.0),
                                           time.perf_counter() - self.started))


class _IncognitoSweep(_Sweep):
    def run(self) -> SweepResult:
        self.refuse_runs_without_a_requirement()
        for name in self.metrics:
            selection = _selection(self.spec, metric=name)
            cost = search_cost(self.problem, name, selection.weights)
            for l in self.ls or [None]:  # noqa: E741
                for t in self.ts or [None]:
                    sas = _with_models(self.problem.sas, l, t)
                    for k in self.ks:
                        problem = dataclasses.replace(self.problem, k=k, sas=sas)
                        self.add(self._one(problem, selection, cost, l, t))
        return SweepResult(self.rows, max_l_diversity=_max_l_diversity(self.problem),
                           sensitive=self.problem.sas[0].name if self.problem.sas else None)

    def _one(self, problem: Problem, selection: Search, cost: Any, l: float | None,  # noqa: E741
             t: float | None) -> dict[str, Any]:
        started = time.perf_counter()
        row: dict[str, Any] = {"algorithm": "incognito", "metric": selection.metric_name, "k": problem.k, "l": l,
                               "t": t, **_l_model_cells(problem.sas[0] if problem.sas else None, l, gaa=False)}
        criteria = criteria_for(problem.k, problem.sas)
        result = incognito(problem, criteria, None, cost, explore="optimum")  # a sweep row lists no minimal nodes
        if result.optimum is None:
            return {**row, "status": "no solution", "seconds": time.perf_counter() - started}
        release = Release(problem, result, criteria, self.spec.sha256(), problem.label, owns_engine=False,
                          selection=selection)
        node = ",".join(f"{_node_name(qi.name)}={level}" for qi, level in zip(problem.qis, result.optimum))
        return {**row, "status": "ok", "node": node, **_from_summary(release.summary, selection.metric_name),
                "search_seconds": result.seconds, "seconds": time.perf_counter() - started}


class _GaaSweep(_Sweep):
    def run(self) -> SweepResult:
        self.refuse_runs_without_a_requirement()
        data = fetch_input(self.problem)
        if self.ls or self.ts or any(s != "S1" for s in self.strategies):
            if data.sensitive is None:
                raise SpecError("GAA's strategies S2–S7 and the paper's l and t read a sensitive column: declare "
                                "one under [sensitive.<column>] in the spec")
        for name in self.metrics:
            refuse_blind_problem(self.problem, name, "gaa")  # with several QIs: judged by their levels
            mu = problem_metric(self.problem, name, self.spec.search.weights)
            for strategy in self.strategies:
                selection = _selection(self.spec, metric=name, strategy=strategy)
                self._curve(data, mu, selection)
        return SweepResult(self.rows, max_l_diversity=_max_l_diversity(self.problem),
                           sensitive=self.problem.sas[0].name if self.problem.sas else None)

    def _curve(self, data: GaaInput, mu: Metric, selection: Search) -> None:
        scope, strategy = selection.scope_name, selection.strategy_name
        binding = [c for c in criteria_for(1, self.problem.sas) if not _vacuous(c)]  # the models besides k
        if not (self.ls or self.ts or binding):  # plain k-anonymity: one greedy run reaches every k
            gaa_k_sweep(data, self.ks, mu, strategy, scope=scope,
                        on_result=lambda k, r: self.add(self._row(data, r, mu, selection, k, None, None)))
            return
        for l in self.ls or [None]:  # noqa: E741
            for t in self.ts or [None]:
                for k in self.ks:
                    criteria = [c for c in criteria_for(k, self.problem.sas) if not _vacuous(c)]
                    started = time.perf_counter()
                    try:
                        r = gaa(data, k, mu, strategy, l=l, t=t, scope=scope, violates=spec_violations(criteria))
                    except NoSolutionError:  # the time it took to find none is a run's time too
                        seconds = time.perf_counter() - started
                        self.add({"algorithm": "gaa", "strategy": strategy, "metric": mu.name, "scope": scope,
                                  "k": k, "l": l, "t": t, **_l_model_cells(None, l, gaa=True),
                                  "status": "no solution", "search_seconds": seconds, "seconds": seconds})
                        continue
                    self.add(self._row(data, r, mu, selection, k, l, t))

    def _row(self, data: GaaInput, r: GaaResult, mu: Metric, selection: Search, k: int, l: float | None,  # noqa: E741
             t: float | None) -> dict[str, Any]:
        started = time.perf_counter()
        problem = dataclasses.replace(self.problem, k=k)
        criteria = criteria_for(k, problem.sas)
        run = GaaRun(data, r, mu, selection.strategy_name, selection.scope_name,
                     problem.sas[0].name if problem.sas else None)
        release = GaaRelease(problem, None, criteria, self.spec.sha256(), problem.label, owns_engine=False,
                             selection=selection, gaa_run=run)
        return {"algorithm": "gaa", "strategy": selection.strategy_name, "metric": selection.metric_name,
                "scope": selection.scope_name, "k": k, "l": l, "t": t, **_l_model_cells(None, l, gaa=True),
                "status": "ok",
                **_from_summary(release.summary, selection.metric_name), "search_seconds": r.seconds,
                "seconds": r.seconds + time.perf_counter() - started}  # the search and this run's measurements


def _withheld_in_reports(figures: set[str]) -> list[str]:
    """The warning a sweep gives when its files hold figures a run's release report would withhold
    (``utility.withheld``: they count values a hierarchy built from the data lists, suppressed rows'
    included). The sweep keeps them — comparing them is what it is for — so its files are the
    operator's, as ``Release.summary`` is."""
    if not figures:
        return []
    listed = ", ".join(sorted(figures))
    return [f"sweep.csv, nauc.csv and the charts hold figures the release reports withhold ({listed}; a report's "
            "utility.withheld says why and which domain to declare): they count the input's raw values, suppressed "
            "rows' included, so keep the sweep's files to those who may see the input, or declare the hierarchies' "
            "domains to make the figures publishable"]


def _from_summary(summary: dict[str, Any], metric_name: str) -> dict[str, Any]:
    """A run's figures from its release's summary (``Release.summary["utility"]``)."""
    utility = summary["utility"]
    alteration = utility.get("alteration") or {}
    sensitive = next(iter((utility.get("sensitive") or {}).values()), {})
    return {"classes": summary["classes"], "suppressed_rows": summary["suppressed_rows"],
            "discernibility": utility["discernibility"], "average_class_size": utility["average_class_size"],
            "alteration": alteration.get(metric_name),
            **{f"alteration_{m}": alteration.get(m) for m in METRICS},
            "mean_alteration": utility.get("mean_alteration"),
            "generalized_percent": utility.get("generalized_percent"), "root_percent": utility.get("root_percent"),
            "l_diversity": sensitive.get("l_diversity"), "l1_closeness": sensitive.get("l1_closeness"),
            WITHHELD_KEY: tuple(utility.get("withheld") or {})}


def _selection(spec: Spec, **changes: str) -> Search:
    """The spec's [search] with one run's metric (and strategy)."""
    return spec.search.model_copy(update=changes)


def _vacuous(criterion: Criterion) -> bool:
    """A model no class can fail (e.g. a placeholder t = 1 that declares a column for GAA's
    strategies): left out of GAA's Φ, so the k-sweep keeps its single run. The release path judges
    it anyway. By its parameters alone (the spec's rule, ``Sensitive.vacuous``), or, for t, on this
    table: t at least the largest distance any class of it can have."""
    column = getattr(criterion, "column", None)  # k-anonymity has none
    if column is None or column.spec is None:
        return False
    if isinstance(criterion, TCloseness) and criterion.t >= max_distance(column) - 1e-12:
        return True
    return column.spec.vacuous(criterion.key)


def _max_l_diversity(problem: Problem) -> float | None:
    """The whole table's l-diversity value (one class): the paper's scale for l-diversity NAUC."""
    sa = problem.sas[0] if problem.sas else None
    return float(class_l_diversity(sa.q)[0]) if sa is not None and sa.q is not None else None


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
        bound = DISTANCE_BOUNDS.get(s.distance, math.inf)
        if t > bound:  # the spec refuses such a t; model_copy below would not (it skips validation)
            raise InputError(f"t = {t:g} is above {bound:g}, the largest {s.distance} distance of "
                             f"{name_shown(sas[0].name)}: an Incognito t sweep replaces that column's t (its EMD "
                             f"bound, 0–{bound:g}); the paper's L1 t-closeness value (0–2) is GAA's t")
        update["t"] = t
    if l is not None:
        model = _swept_l_model(s)
        if model is None:
            raise SpecError(f"an l sweep replaces the l of an l-diversity model, and {name_shown(sas[0].name)} has "
                            "none: give it entropy_l, distinct_l or recursive = {c = …, l = …} in the spec")
        if model != "entropy_l" and l != int(l):
            # int(2.5) ran distinct l = 2 in a row labelled l = 2.5: a weaker model than the row says.
            raise InputError(f"l = {l:g} is not a whole number, and {name_shown(sas[0].name)}'s l-diversity model "
                             f"({model}) counts distinct values: sweep whole values of l, or use entropy_l")
        update[model] = (l if model == "entropy_l" else int(l) if model == "distinct_l"
                         else s.recursive.model_copy(update={"l": int(l)}))
    return [dataclasses.replace(sas[0], spec=s.model_copy(update=update)), *sas[1:]]


LEAST = {"k": 1, "l": 1, "t": 0}  # the smallest value of each swept parameter


def out_of_range(name: str, shown: str) -> str:
    """That a value of ``name`` (as ``shown``) is below its least."""
    return f"{name} = {shown} is out of range ({name} ≥ {LEAST[name]})"


def _not_finite_value(name: str, shown: str) -> str:
    """That a value of ``name`` (as ``shown``) is no finite number: nan, inf, or past what a float
    holds (it said "t = inf is out of range (t ≥ 0)": the ninety-sixth round)."""
    return f"{name} = {not_finite(shown)}: give {name} as a finite number ≥ {LEAST[name]}"


# What one value of each list parameter of sweep() is, and an example list, for its refusal.
ONE_OF = {"ks": ("a whole number", "[3, 5, 10]"), "ls": ("a number", "[2, 3]"), "ts": ("a number", "[0.15, 0.2]"),
          "strategies": ("a strategy's name", '["S1", "S3"]'), "metrics": ("a metric's name", '["nllm", "ncp"]')}


def _as_list(parameter: str, given: Any) -> list[Any]:
    """One list parameter of ``sweep`` as a list (``text.given_items``): None is none; one name (text)
    or one number is a list of itself — "ncp" was read letter by letter, ``ks=5`` failed in Python's
    TypeError; a sequence (list, tuple, range, set, numpy array, pandas Series) is its items, taken
    without a truth test (an array has none). A mapping, or an object that is neither a number nor
    a sequence (a 0-d numpy array), is refused."""
    one, example = ONE_OF[parameter]
    if isinstance(given, Mapping):
        raise InputError(f"{parameter} is a mapping ({type(given).__name__}): give {one} or a list of them, e.g. "
                         f"{parameter}={example}")
    one_item = given is None or isinstance(given, (str, bytes, bytearray, numbers.Number))  # numpy's too: ndim 0
    if not one_item and (not hasattr(given, "__iter__") or getattr(given, "ndim", 1) == 0):  # an object, a 0-d array
        raise InputError(f"{parameter} = {given!r} is neither {one} nor a list of them: give a list, e.g. "
                         f"{parameter}={example}")
    return given_items(given)


def _values(name: str, given: Sequence[Any], kind: type) -> list[Any]:
    """A swept parameter's values (``_as_list``'s), each a number of ``kind``, once and sorted."""
    out = []
    for v in given:
        # int() also reads "1_000", "+3" and " 3", which the command line refuses (cli/sweep._DIGITS):
        # the API takes numbers, as its types say, not text it would read more loosely than the CLI
        if isinstance(v, (str, bytes)):
            raise InputError(f"{name} = {v!r} is text, not a number: give {name} as numbers, e.g. [3, 5, 10]")
        if isinstance(v, float) and not math.isfinite(v):  # int(inf) failed in OverflowError; "out of range" misled
            raise InputError(_not_finite_value(name, str(v)))
        # int(2.9) is 2 and int(True) is 1 (numpy's True too, which is no bool): a weaker k than asked,
        # swept without a word
        if isinstance(v, bool) or str(getattr(v, "dtype", "")) == "bool" or \
                (kind is int and isinstance(v, float) and not v.is_integer()):
            raise InputError(f"{name} = {v!r} is not a whole number")
        try:
            value = kind(v)
        except OverflowError:  # an int past what a float holds
            raise InputError(_not_finite_value(name, str(v))) from None
        except (TypeError, ValueError):
            raise InputError(f"{name} = {v!r} is not a number") from None
        if isinstance(value, float) and not math.isfinite(value):  # a Decimal('Infinity')
            raise InputError(_not_finite_value(name, str(v)))
        if value < LEAST[name]:
            raise InputError(out_of_range(name, repr(v)))
        out.append(value)
    if name == "k" and not out:
        raise InputError("give at least one k to sweep")
    return sorted(set(out))


def _refuse_l1_above_its_bound(ts: list[float]) -> None:
    """GAA's t is the paper's plain L1 value, at most 2 (two distributions apart): a larger t bounds
    nothing, so its row would be k-anonymity alone labelled "t = 5", as Incognito refuses a t above
    its EMD bound (``_with_models``)."""
    above = [t for t in ts if t > L1_BOUND]
    if above:
        raise InputError(f"t = {above[0]:g} is above {L1_BOUND:g}, the largest L1 distance (Σ|p − q|, not halved) "
                         "of two distributions: GAA's t is the paper's L1 t-closeness value, 0–2; sweep t up to 2")


def _node_name(name: str) -> str:
    """A column as the node cell names it: in double quotes (a quote doubled, as SQL writes an
    identifier) when it holds what separates the cell's parts, so "a,b=1" reads one way only."""
    if any(ch in name for ch in ',="') or name != name.strip():
        return '"' + name.replace('"', '""') + '"'
    return name


def _strategy(name: str) -> str:
    if not isinstance(name, str):  # name.strip() failed in Python's AttributeError
        raise InputError(f"a GAA strategy is named by its text, not {name_shown(name)}; choose from "
                         f"{', '.join(STRATEGIES)}")
    fixed = {s.lower(): s for s in STRATEGIES}.get(name.strip().lower())
    if fixed is None:
        raise InputError(f"unknown GAA strategy {name_shown(name)}; choose from {', '.join(STRATEGIES)}")
    return fixed


def _shown(value: Any) -> str:
    """A parameter's value in a label: a whole-number float without its ".0" (l=2, not l=2.0),
    any other value as given (l=1.5)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, str):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _refuse_unwritable_file(path: Path) -> None:
    """A CSV path that is a folder, or lies under a file or in a folder that cannot be written, is
    refused as ``Release.write`` refuses it (OutputExistsError; EnvironmentFailure, exit 5), nothing
    written: it was Python's IsADirectoryError or NotADirectoryError (ninety-sixth round)."""
    files.refuse_blocked_folder(path)
    if path.is_dir():
        raise OutputExistsError(f"the output path {path} is a directory, not a file path")


def _refuse_unwritable_folder(folder: Path, measures: list[str]) -> None:
    """The charts' folder must be one, or be made: a file there (or a link to one) was Python's
    FileExistsError from mkdir, and a file above it NotADirectoryError (ninety-sixth round). Told
    as ``Release.write`` tells a Parquet folder output that is a file, and as ``sqlclose sweep
    --out`` refuses an OUT under a file (EnvironmentFailure, exit 5), nothing written."""
    if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
        raise OutputExistsError(f"the chart folder {folder} is a file; the charts need a folder path (each measure "
                                "is written into it as <measure>.png)")
    first = folder / f"{measures[0] if measures else 'chart'}.png"
    files.refuse_blocked_folder(first)  # its parent is the folder: itself, or where it would be made


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> Path:
    with replaced_whole(path) as temporary, temporary.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(c, row.get(c)) for c in columns])
    return path


# The cells of sweep.csv holding names a person gave: the node names its columns. A spreadsheet
# opening the file ran a cell starting with = + - @ (or a tab, a carriage return) as a formula, a
# column named "@SUM(1+1)" or "-2+3" among them (OWASP's CSV injection: the ninety-eighth round).
# Such a cell is written after a quote ('), which a spreadsheet shows and does not run. The release
# itself is data and is never altered (docs/utility.md).
NAME_CELLS = frozenset({"node"})
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(column: str, value: Any) -> Any:
    if _blank(value):
        return ""
    if column in NAME_CELLS and isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))
