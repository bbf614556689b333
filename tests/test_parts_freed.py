"""A level's parts are let go as soon as they are judged, without waiting for the garbage
collector (sixty-fifth round): histograms judged in one run of classes held themselves in their
memo (a reference cycle, freed only by a collection), and the loop judging a level's parts held the
previous part while the next was fetched. On the 1 M-row table with an ordered t over ~630 k values
the search held 130–160 MiB of such parts at its peak (docs/engines.md). Oracle: a weak reference to
the histograms, dead once nothing else refers to them, with the collector off."""
from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import numpy as np
import pytest

from sqlclose.model.classes import ClassHistograms
from sqlclose.model.sparse_counts import SparseCounts
from sqlclose.search import incognito
from sqlclose.search.items import LevelPart


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _by_cells(classes: int = 3, width: int = 5) -> ClassHistograms:
    cells = np.arange(classes) * width + 1  # one value a class
    counts = SparseCounts.from_sorted_cells(cells, np.full(classes, 2.0), (classes, width))
    return ClassHistograms(np.zeros((classes, 1), dtype=np.int64), np.full(classes, 2), [counts],
                           np.zeros(classes, dtype=np.int64))


def test_histograms_read_in_one_run_by_their_cells_are_freed_without_a_collection(no_collector):
    hist = _by_cells()
    runs = hist.slices(10**9, frozenset({0}))
    assert len(runs) == 1 and runs[0] is hist
    assert hist.slices(10**9, frozenset({0}))[0] is hist  # asked again: the same (kept) answer
    gone = weakref.ref(hist)
    del hist, runs
    assert gone() is None


def test_histograms_read_in_several_runs_are_freed_without_a_collection(no_collector):
    hist = _by_cells(classes=40)
    runs = hist.slices(200, frozenset({0}))  # ~40 bytes a cell: a few classes a run
    assert len(runs) > 1 and sum(r.classes for r in runs) == 40
    gone = weakref.ref(hist)
    del hist, runs
    assert gone() is None


def test_a_levels_parts_are_let_go_before_the_next_is_fetched(no_collector):
    held_when_fetching = []

    def parts() -> Iterator[LevelPart]:
        for start in range(3):
            part = LevelPart(start, start + 1, _by_cells())
            previous = weakref.ref(part.hist)
            yield part
            del part
            held_when_fetching.append(previous() is not None)  # the judge has it no longer

    judged = incognito._judged(parts(), lambda hist, nodes: (hist.classes, tuple(nodes)), [(0,), (1,), (2,)])
    assert judged == [(3, ((0,),)), (3, ((1,),)), (3, ((2,),))]
    assert held_when_fetching == [False, False, False]
