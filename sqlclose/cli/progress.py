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

        def update(p: SearchProgress) -> None:
            bar.update(task, description=f"lattice decided (subsets of {p.subset_size}/{p.qis} QIs from below)",
                       completed=p.decided, total=p.lattice)

        yield update


def _log_lines() -> ProgressCallback:
    """A line when the walk from below reaches a larger subset size or the full lattice is another
    tenth decided (by either walk)."""
    last = {"size": None, "tenth": 0}

    def update(p: SearchProgress) -> None:
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
