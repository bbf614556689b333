"""Drawing the progress of a search or a sweep: a live bar on a terminal (rich), timestamped lines in a log.

The library only reports (``SearchProgress`` through a callback); the command decides how it is
shown. A job's log gets one line per stage of the search, not a redrawn bar.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # the search and the sweep are loaded by the commands that run them, not by --help
    from sqlclose.search import ProgressCallback, SearchProgress
    from sqlclose.search.gaa import GaaProgress
    from sqlclose.sweep import SweepCallback, SweepProgress


@contextmanager
def search_progress(enabled: bool) -> Iterator[ProgressCallback | None]:
    if not enabled:
        yield None
    elif sys.stderr.isatty():
        with _bar() as callback:
            yield callback
    else:
        yield _log_lines()


@contextmanager
def _bar() -> Iterator[ProgressCallback]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("lattice", total=None)

        def update(p: SearchProgress | GaaProgress) -> None:
            if _is_gaa(p):
                bar.update(task, description=f"GAA: classes below the model merged, {_gaa_left(p)}",
                           completed=round(100 * p.done), total=100)
                return
            bar.update(task, description=f"lattice decided (subsets of {p.subset_size}/{p.qis} QIs from below)",
                       completed=p.decided, total=p.lattice)

        yield update


def _is_gaa(p: object) -> bool:
    from sqlclose.search.gaa import GaaProgress

    return isinstance(p, GaaProgress)


def _gaa_left(p: GaaProgress) -> str:
    """GAA's rough time left (it compares each merge with every class: a large table takes long)."""
    if p.remaining is None:
        return "time left not known yet"
    return f"about {_duration(p.remaining)} left at this pace"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _gaa_lines() -> ProgressCallback:
    """A line at the first report (a second in: the first estimate), then when another tenth of the
    classes below the model is merged or a minute has passed."""
    last = {"tenth": -1, "elapsed": 0.0}

    def update(p: GaaProgress) -> None:
        tenth = int(10 * p.done)
        if tenth > last["tenth"] or p.elapsed - last["elapsed"] >= 60:
            last.update(tenth=tenth, elapsed=p.elapsed)
            click.echo(f"{_now()} search: GAA {100 * p.done:.0f} % of the classes below the model merged, "
                       f"{p.elapsed:.0f} s, {_gaa_left(p)}", err=True)

    return update


def _log_lines() -> ProgressCallback:
    """A line when the walk from below reaches a larger subset size or the full lattice is another
    tenth decided (by either walk); GAA's own lines (``_gaa_lines``)."""
    last = {"size": None, "tenth": 0}
    gaa_lines = _gaa_lines()

    def update(p: SearchProgress | GaaProgress) -> None:
        if _is_gaa(p):
            gaa_lines(p)
            return
        tenth = 10 * p.decided // max(p.lattice, 1)
        if p.subset_size != last["size"] or tenth > last["tenth"]:
            last.update(size=p.subset_size, tenth=tenth)
            stamp = _now()
            click.echo(f"{stamp} search: full lattice {p.decided:,} of {p.lattice:,} nodes decided; from below at "
                       f"subsets of {p.subset_size}/{p.qis} QIs ({p.candidates:,} candidates); {p.evaluated:,} "
                       f"evaluated so far, {p.elapsed:.1f} s", err=True)

    return update


def _now() -> str:
    """Local time with its UTC offset: a log gathered from machines in several zones (or read after
    a daylight-saving change) orders its lines unambiguously, as the report's created_at is."""
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


@contextmanager
def sweep_progress(enabled: bool) -> Iterator[SweepCallback | None]:
    """A sweep's runs: a live line on a terminal, one timestamped line per run in a log."""
    if not enabled:
        yield None
    elif sys.stderr.isatty():
        with _sweep_bar() as callback:
            yield callback
    else:
        yield _sweep_lines


@contextmanager
def _sweep_bar() -> Iterator[SweepCallback]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("sweep", total=None)

        def update(p: SweepProgress) -> None:
            bar.update(task, description=f"sweep: {p.label} ({p.run_seconds:.1f} s)", completed=p.done,
                       total=p.total)

        yield update


def _sweep_lines(p: SweepProgress) -> None:
    stamp = _now()
    click.echo(f"{stamp} sweep: run {p.done}/{p.total} {p.label}: {p.run_seconds:.2f} s, {p.elapsed:.1f} s elapsed",
               err=True)
