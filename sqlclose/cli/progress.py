"""Drawing the progress of a search or a sweep: a live bar on a terminal (rich), timestamped lines in a log.

The library only reports (``SearchProgress`` through a callback); the command decides how it is
shown. A job's log gets a few lines that tell nothing of the data (``_log_lines``), not a redrawn bar.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlclose.cli.common import say

if TYPE_CHECKING:  # the search and the sweep are loaded by the commands that run them, not by --help
    from sqlclose.search import ProgressCallback, SearchProgress
    from sqlclose.search.gaa import GaaProgress
    from sqlclose.sweep import SweepCallback, SweepProgress


@contextmanager
def search_progress(enabled: bool) -> Iterator[ProgressCallback | None]:
    """A search's progress: a live bar on a terminal, timestamped lines in a log, nothing when the
    command was started with its standard error closed (``2>&-``: Python gives it no ``sys.stderr``,
    and asking it whether it was a terminal ended a good run with an internal error, nothing written)."""
    if not enabled or sys.stderr is None:
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


# A job's log is read by more people than hold the data (a scheduler's history, a log collector),
# so its lines say only what the report says — the lattice's size — and how long the search has run,
# at fixed marks, each stamped at its mark. The nodes decided or evaluated so far, the walk's subset
# size and GAA's share merged are facts of the raw values: two inputs released byte for byte alike
# counted 4 and 3 nodes decided, as one hidden value was y or z (docs/what-a-release-reveals.md,
# "Which other nodes satisfy"). The live bar shows them on a terminal, the operator's own.
LOG_MARKS = (10.0, 30.0)  # seconds of search; then every LOG_EVERY
LOG_EVERY = 60.0


def _log_lines() -> ProgressCallback:
    """A line at the first report (stamped when the search started), then one when the search has
    run past the next mark (``LOG_MARKS``, then every ``LOG_EVERY``): the latest mark passed."""
    state: dict = {}

    def update(p: SearchProgress | GaaProgress) -> None:
        if not state:
            state["start"] = dt.datetime.now().astimezone() - dt.timedelta(seconds=p.elapsed)
            state["marks"] = _marks()
            state["next"] = next(state["marks"])
            what = "GAA started" if _is_gaa(p) else f"started on a lattice of {p.lattice:,} nodes over {p.qis} QIs"
            _log(state["start"], what)
        passed = None
        while p.elapsed >= state["next"]:
            passed, state["next"] = state["next"], next(state["marks"])
        if passed is not None:
            _log(state["start"] + dt.timedelta(seconds=passed),
                 f"{'GAA ' if _is_gaa(p) else ''}running for {_duration(passed)}")

    return update


def _marks() -> Iterator[float]:
    yield from LOG_MARKS
    minute = 1
    while True:
        if LOG_EVERY * minute > LOG_MARKS[-1]:
            yield LOG_EVERY * minute
        minute += 1


def _log(stamp: dt.datetime, what: str) -> None:
    say(f"{stamp.isoformat(timespec='seconds')} search: {what}", err=True)


def _now() -> str:
    """Local time with its UTC offset: a log gathered from machines in several zones (or read after
    a daylight-saving change) orders its lines unambiguously, as the report's created_at is."""
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


@contextmanager
def sweep_progress(enabled: bool) -> Iterator[SweepCallback | None]:
    """A sweep's runs: a live line on a terminal, one timestamped line per run in a log."""
    if not enabled or sys.stderr is None:
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
    say(f"{stamp} sweep: run {p.done}/{p.total} {p.label}: {p.run_seconds:.2f} s, {p.elapsed:.1f} s elapsed",
          err=True)
