"""Line charts of utility curves, drawn like the papers' figures: x = a parameter (k, l or t,
on a log scale when its range is wide), one curve per strategy or metric, PNG.

matplotlib is an optional extra (``sqlclose[report]``): it is imported only when a chart is
drawn, with the Agg backend (no display needed), so the rest of sqlclose runs without it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlclose.errors import EnvironmentFailure

WIDTH_INCHES, HEIGHT_INCHES, DPI = 8.0, 5.0, 100  # 800 × 500 pixels
LOG_SCALE_RATIO = 20.0  # a positive x range wider than this factor is drawn on a log scale
LEGEND_INSIDE = 10  # up to this many curves the legend sits inside the plot; more go below it, in columns
LEGEND_COLUMNS, LEGEND_ROW_INCHES = 4, 0.2
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")

Curve = tuple[Sequence[float], Sequence[float]]


@contextmanager
def quiet_matplotlib() -> Iterator[None]:
    """matplotlib logs two warnings on stderr (even under --quiet, in a scheduled job's mail) when
    its config folder under HOME cannot be made — a service account's read-only or absent home —
    and then uses a temporary folder it removes at exit. The same, without the warnings: only its
    errors are shown while it is imported."""
    log = logging.getLogger("matplotlib")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def pyplot(needed_by: str = "charts") -> Any:
    """matplotlib's pyplot on its file backend (Agg), imported quietly; without the optional extra,
    an EnvironmentFailure naming what needed it and how to install it."""
    with quiet_matplotlib():
        try:
            import matplotlib
        except ImportError:
            raise EnvironmentFailure(f"{needed_by} need matplotlib, the optional extra: pip install "
                                     "'sqlclose[report]'") from None
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

    return plt


def wide_range(xs: Sequence[float]) -> bool:
    """Whether an x range deserves a log scale: all positive and spanning more than 20×."""
    values = [float(x) for x in xs]
    return bool(values) and min(values) > 0 and max(values) / min(values) > LOG_SCALE_RATIO


def same_curves_merged(curves: Mapping[str, Curve]) -> dict[str, Curve]:
    """Curves with the same points drawn once, labelled ``S1 = S3``: drawn apart, the later one hid
    the earlier exactly, and the chart seemed to have lost a curve."""
    by_points: dict[tuple, list[str]] = {}
    for label, (xs, ys) in curves.items():
        by_points.setdefault((tuple(map(float, xs)), tuple(map(float, ys))), []).append(label)
    return {" = ".join(labels): curves[labels[0]] for labels in by_points.values()}


def line_chart(path: str | Path, curves: Mapping[str, Curve], *, title: str, xlabel: str, ylabel: str,
               log_x: bool | None = None, legend_title: str | None = None) -> Path:
    """Draw one line per curve (points marked) and save a PNG of 800 × 500 pixels at ``path``
    (taller by 20 pixels per legend row when more than 10 curves put the legend below the plot).
    ``log_x=None`` picks a log scale when the x values span more than 20×."""
    plt = pyplot()
    path = Path(path)
    curves = same_curves_merged(curves)
    every_x = [x for xs, _ in curves.values() for x in xs]
    # Many curves (a sweep of strategies × metrics): inside the plot their legend hid the curves and
    # ran off the image. Below the plot, in columns, on a taller image, every entry is seen.
    below = len(curves) > LEGEND_INSIDE
    legend_rows = -(-len(curves) // LEGEND_COLUMNS) if below else 0
    height = HEIGHT_INCHES + legend_rows * LEGEND_ROW_INCHES
    fig, ax = plt.subplots(figsize=(WIDTH_INCHES, height), dpi=DPI, layout="constrained" if below else None)
    try:
        for i, (label, (xs, ys)) in enumerate(curves.items()):
            ax.plot(list(xs), list(ys), marker=MARKERS[i % len(MARKERS)], markersize=5, linewidth=1.5, label=label)
        if log_x if log_x is not None else wide_range(every_x):
            ax.set_xscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", alpha=0.3)
        if below:
            fig.legend(title=legend_title, fontsize="small", loc="outside lower center", ncols=LEGEND_COLUMNS)
        elif curves:
            ax.legend(title=legend_title, fontsize="small", loc="best")
        if not below:
            fig.tight_layout()
        fig.savefig(path, dpi=DPI, format="png")
    finally:
        plt.close(fig)
    return path
