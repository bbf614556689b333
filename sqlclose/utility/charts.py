"""Line charts of utility curves, drawn like the papers' figures: x = a parameter (k, l or t,
on a log scale when its range is wide), one curve per strategy or metric, PNG.

matplotlib is an optional extra (``sqlclose[report]``): it is imported only when a chart is
drawn, with the Agg backend (no display needed), so the rest of sqlclose runs without it.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlclose.errors import ChartError, EnvironmentFailure, SqlcloseError
from sqlclose.model.whole_files import replaced_whole

WIDTH_INCHES, HEIGHT_INCHES, DPI = 8.0, 5.0, 100  # 800 × 500 pixels
LOG_SCALE_RATIO = 20.0  # a positive x range wider than this factor is drawn on a log scale
LOG_TICKS_MOST = 10  # a log axis labels at most this many of the swept values
TICK_GAP_PIXELS = 8  # kept clear between two tick labels of a log axis
TICK_FONT = "medium"  # matplotlib's default size for tick labels, which the log axis measures its labels at
LEGEND_INSIDE = 10  # up to this many curves the legend sits inside the plot; more go below it, in columns
LEGEND_INSIDE_PIXELS = 250  # a wider label goes below the plot too: inside, it ran off the image
LEGEND_COLUMNS, LEGEND_ROW_INCHES = 4, 0.2  # at most; the image grows by a row per legend line
LEGEND_ENTRY_PIXELS = 60  # a legend entry's marker, padding and column spacing besides its text
MARGIN_PIXELS = 16  # kept clear of text at the image's sides
TITLE_PIXELS = 600  # a title is centred over the axes, not the image: wrapped well inside its width
TITLE_FONT, LABEL_FONT, LEGEND_FONT = "large", "medium", "small"  # matplotlib's sizes for them
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")
# Every text sqlclose draws comes from data or names (a sensitive value, a label, a source's file
# name): drawn as given. matplotlib reads "$…$" as mathtext by default (``patient $HIV_positive^$``
# failed the page, quoting the value; ``$0-$10k`` was drawn as italic ``0−10k``).
LITERAL_TEXT = {"text.parse_math": False, "text.usetex": False}

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


@contextmanager
def drawing(needed_by: str = "charts") -> Iterator[Any]:
    """pyplot (``pyplot(needed_by)``) with every text drawn literally (``LITERAL_TEXT``), set for
    sqlclose's figures alone: ``rc_context`` gives the caller's matplotlib its settings back after.
    Draw and save the figures inside it: tick labels are made when the figure is drawn. A failure
    of matplotlib is a ``ChartError`` naming the charts and the error's kind, never its message,
    which may quote the text drawn (a sensitive value)."""
    plt = pyplot(needed_by)
    import matplotlib

    try:
        with matplotlib.rc_context(LITERAL_TEXT), warnings.catch_warnings():
            # A name or value holding a character no font draws (an escape, U+202E) is drawn as a box;
            # matplotlib's warning printed the character itself, raw, to the terminal in Python's
            # file-and-line form (the ninety-eighth round).
            warnings.filterwarnings("ignore", r"Glyph \d+ .* missing from font", UserWarning)
            yield plt
    except (SqlcloseError, OSError, MemoryError):  # told as they are: a full disk is the environment's
        raise
    except Exception as e:
        raise ChartError(f"matplotlib failed while drawing {needed_by} ({type(e).__name__}; its message is not "
                         "shown, as it may quote a value drawn): a bug, please report it", e) from None


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
    """Draw one line per curve (points marked) and save a PNG of 800 × 500 pixels at ``path``. A
    title or axis label wider than the image is wrapped between words. More than 10 curves, or a
    label too wide to sit inside the plot (curves drawn together: ``S1 = S2 = …``), put the legend
    below the plot, in as many columns as fit and labels wrapped to them, on an image 20 pixels
    taller per legend line. ``log_x=None`` picks a log scale when the x values span more than 20×; a
    log axis labels swept values (``log_ticks``)."""
    with drawing() as plt:
        return _line_chart(plt, Path(path), same_curves_merged(curves), title=title, xlabel=xlabel,
                           ylabel=ylabel, log_x=log_x, legend_title=legend_title)


def _line_chart(plt: Any, path: Path, curves: Mapping[str, Curve], *, title: str, xlabel: str, ylabel: str,
                log_x: bool | None, legend_title: str | None) -> Path:
    """``line_chart``'s drawing, inside ``drawing``."""
    every_x = [x for xs, _ in curves.values() for x in xs]
    fits = _text_fitter()
    inside = len(curves) <= LEGEND_INSIDE and all(fits.width(label, LEGEND_FONT) <= LEGEND_INSIDE_PIXELS
                                                  for label in curves)
    # Below the plot, in columns, on a taller image, every entry is seen: inside, many curves' legend
    # hid the curves, and a wide label ran off the image and squeezed the plot.
    labels, columns = (list(curves), 1) if inside else fits.legend(list(curves))
    lines = 0 if inside else max(sum(label.count("\n") + 1 for label in column)
                                 for column in _columns(labels, columns))
    height = HEIGHT_INCHES + lines * LEGEND_ROW_INCHES
    fig, ax = plt.subplots(figsize=(WIDTH_INCHES, height), dpi=DPI, layout=None if inside else "constrained")
    log = log_x if log_x is not None else wide_range(every_x)
    try:
        for i, (label, (xs, ys)) in enumerate(zip(labels, curves.values())):
            ax.plot(list(xs), list(ys), marker=MARKERS[i % len(MARKERS)], markersize=5, linewidth=1.5, label=label)
        if log:
            _log_x(ax)
        ax.set_title(fits.wrapped(title, TITLE_FONT, TITLE_PIXELS))
        ax.set_xlabel(fits.wrapped(xlabel, LABEL_FONT, TITLE_PIXELS))
        ax.set_ylabel(fits.wrapped(ylabel, LABEL_FONT, int(HEIGHT_INCHES * DPI) - 2 * MARGIN_PIXELS))
        ax.grid(True, which="major", alpha=0.3)
        if not inside:
            fig.legend(title=legend_title, fontsize=LEGEND_FONT, loc="outside lower center", ncols=columns)
        elif curves:
            ax.legend(title=legend_title, fontsize=LEGEND_FONT, loc="best")
        if inside:
            fig.tight_layout()
        if log and every_x:  # where the values fall is known once the plot is laid out
            _label_swept(fig, ax, every_x, fits)
            if inside:
                fig.tight_layout()
        with replaced_whole(path) as temporary:
            fig.savefig(temporary, dpi=DPI, format="png")
    finally:
        plt.close(fig)
    return path


def _log_x(ax: Any) -> None:
    """A log x axis labelled in plain numbers: its default labels are mathtext (``10^{2}``), which
    ``LITERAL_TEXT`` draws as the markup itself (``$\\mathdefault{10^{2}}$``). Which values it labels is
    decided once the plot is laid out (``_label_swept``)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _label_swept(fig: Any, ax: Any, xs: Sequence[float], fits: _TextFitter) -> None:
    """The log axis's labels: the swept values ``log_ticks`` picks for where they fall on the laid out
    axis; every other swept value gets an unlabelled tick, so each point has its mark."""
    from matplotlib.ticker import FixedLocator

    fig.draw_without_rendering()  # lays the figure out: the pixel place of each value is then known
    swept = sorted({float(x) for x in xs if float(x) > 0})
    places = {x: float(ax.transData.transform((x, 1.0))[0]) for x in swept}
    labelled = log_ticks(places, lambda x: fits.width(f"{x:g}", TICK_FONT))
    ax.xaxis.set_major_locator(FixedLocator(labelled))
    ax.xaxis.set_minor_locator(FixedLocator([x for x in swept if x not in labelled]))


def log_ticks(places: Mapping[float, float], width: Callable[[float], float]) -> list[float]:
    """Which swept values label a log axis, given where each falls (pixels along the axis) and how
    wide its label is: the first and the last always, and as many between them as fit with
    ``TICK_GAP_PIXELS`` clear between two labels, at most ``LOG_TICKS_MOST``, spread over the axis —
    every value when they all fit, else, for n from the most down, the values nearest n evenly spaced
    places. A log axis labelled only at its decades showed twelve k from 2 to 50 against one label,
    "10" (the ninety-sixth round)."""
    values = sorted(places)
    if len(values) <= 2:
        return values

    def clear(chosen: list[float]) -> bool:
        return all(places[b] - places[a] >= (width(a) + width(b)) / 2 + TICK_GAP_PIXELS
                   for a, b in zip(chosen, chosen[1:]))

    if len(values) <= LOG_TICKS_MOST and clear(values):
        return values
    first, last = places[values[0]], places[values[-1]]
    for n in range(min(LOG_TICKS_MOST, len(values) - 1), 2, -1):
        aims = [first + (last - first) * i / (n - 1) for i in range(n)]
        chosen = sorted({min(values, key=lambda x: (abs(places[x] - aim), x)) for aim in aims})
        if clear(chosen):
            return chosen
    return [values[0], values[-1]]


def _columns(labels: list[str], columns: int) -> list[list[str]]:
    """The legend's columns as matplotlib fills them: consecutive runs of nearly equal length."""
    size, extra = divmod(len(labels), columns)
    bounds = [i * size + min(i, extra) for i in range(columns + 1)]
    return [labels[a:b] for a, b in zip(bounds, bounds[1:])] or [[]]


class _TextFitter:
    """Text widths in the image's pixels, as the Agg renderer draws them, and text fitted to a width."""

    def __init__(self, renderer: Any, font_properties: Any) -> None:
        self._renderer, self._font = renderer, font_properties

    def width(self, text: str, size: str) -> float:
        """The pixel width of the widest line of ``text`` at a font size ("large", "small", …)."""
        font = self._font(size=size)
        return max(self._renderer.get_text_width_height_descent(line, font, ismath=False)[0]
                   for line in text.split("\n"))

    def wrapped(self, text: str, size: str, pixels: float) -> str:
        """``text`` broken between words into lines at most ``pixels`` wide (a longer word is cut)."""
        lines: list[str] = []
        for word in text.split(" "):
            if lines and self.width(f"{lines[-1]} {word}", size) <= pixels:
                lines[-1] += f" {word}"
                continue
            while len(word) > 1 and self.width(word, size) > pixels:  # a word wider than a line alone
                cut = next((i for i in range(len(word) - 1, 0, -1) if self.width(word[:i], size) <= pixels), 1)
                lines.append(word[:cut])
                word = word[cut:]
            lines.append(word)
        return "\n".join(lines)

    def legend(self, labels: list[str]) -> tuple[list[str], int]:
        """Labels for a legend below the plot, wrapped to its columns, and how many columns fit
        (up to ``LEGEND_COLUMNS``) across the image."""
        room = WIDTH_INCHES * DPI - 2 * MARGIN_PIXELS
        widest = max((self.width(label, LEGEND_FONT) for label in labels), default=0.0)
        columns = max(1, min(LEGEND_COLUMNS, int(room // (widest + LEGEND_ENTRY_PIXELS))))
        text = room / columns - LEGEND_ENTRY_PIXELS
        return [self.wrapped(label, LEGEND_FONT, text) for label in labels], columns


def _text_fitter() -> _TextFitter:
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    return _TextFitter(RendererAgg(int(WIDTH_INCHES * DPI), int(HEIGHT_INCHES * DPI), DPI), FontProperties)
