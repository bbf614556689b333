"""A log x axis labels enough of the swept values to read the points (the ninety-sixth round).

With more than ten values swept over a range wider than 20×, the axis was labelled at its decades
alone: ``sqlclose sweep --k 2,3,4,5,6,8,10,12,15,20,30,50`` drew twelve points against one number,
"10". The oracle is what matplotlib drew: the tick labels read back from the saved figure, and
their boxes as its renderer laid them out (no two may overlap); the values are the test's own."""

from __future__ import annotations

import pytest

from sqlclose.utility.charts import line_chart

REVIEWED = [2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 50]  # the review's sweep: 12 values over 25×
HELP_EXAMPLE = [3, 4, 5, 10, 20, 50, 100, 250, 500, 1000, 2000]  # docs/utility.md's --k, 11 values


@pytest.fixture
def drawn(monkeypatch) -> list[list[tuple[str, float, float]]]:
    """Each chart's x tick labels as saved: (text, left and right pixel of its box), left to right."""
    import matplotlib.figure

    charts: list[list[tuple[str, float, float]]] = []
    save = matplotlib.figure.Figure.savefig

    def saved(fig, *args, **kwargs):
        save(fig, *args, **kwargs)
        ax = fig.axes[0]
        left, right = ax.get_xlim()
        renderer = fig.canvas.get_renderer()
        labels = [t for t in ax.get_xticklabels() if t.get_text() and left <= t.get_position()[0] <= right]
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
        charts.append(sorted((text, box.x0, box.x1) for text, box in boxes))

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", saved)
    return charts


def _chart(tmp_path, xs, curves: int = 1) -> None:
    lines = {f"curve {i} of a sweep with a long label" if curves > 1 else "S1": (xs, [float(i) for i in range(len(xs))])
             for i in range(curves)}
    line_chart(tmp_path / "c.png", lines, title="t", xlabel="k", ylabel="y")


def _assert_readable(labels: list[tuple[str, float, float]], xs: list[float]) -> None:
    """Swept values only, the first and the last among them, at most ten, no two boxes overlapping."""
    texts = [text for text, _, _ in sorted(labels, key=lambda b: b[1])]
    assert set(texts) <= {f"{x:g}" for x in xs}, texts
    assert f"{min(xs):g}" in texts and f"{max(xs):g}" in texts, texts
    assert len(texts) <= 10, texts
    boxes = sorted((x0, x1) for _, x0, x1 in labels)
    assert all(a1 < b0 for (_, a1), (b0, _) in zip(boxes, boxes[1:])), labels


# Ranges whose values all fit, with the labels expected: every one.
ALL_FIT = [
    ([3, 2000], ["3", "2000"]),  # two values: both
    ([3, 5, 10, 20, 50, 100], ["3", "5", "10", "20", "50", "100"]),  # narrow (33×), few
    ([1, 10, 100, 1000, 10_000, 100_000, 1_000_000], ["1", "10", "100", "1000", "10000", "100000", "1e+06"]),  # wide
]


@pytest.mark.parametrize("curves", [1, 12])  # legend inside the plot, and below it (the other layout)
def test_a_log_axis_labels_the_swept_values_that_fit_on_every_range(tmp_path, drawn, curves):
    """Twelve values from 2 to 50 were labelled "10" alone; eleven from 3 to 2000 "10, 100, 1000",
    neither end. Now at least half of them, ends included (the review's 2 and 50 are 11 label widths
    apart on an axis of ~700 pixels: there is room), and few values that fit each one, as before."""
    for xs in (REVIEWED, HELP_EXAMPLE):
        _chart(tmp_path, xs, curves)
        labels = drawn[-1]
        _assert_readable(labels, xs)
        assert len(labels) >= len(xs) // 2, labels
    for xs, expected in ALL_FIT:
        _chart(tmp_path, xs, curves)
        assert sorted(text for text, _, _ in drawn[-1]) == sorted(expected)
        _assert_readable(drawn[-1], xs)


def test_values_too_close_to_label_each_are_thinned_not_overlapped(tmp_path, drawn):
    """Up to ten values were each labelled however close: 2, 2.2, 2.4, … on an axis to 1000 drew
    their labels over one another. Now those that fit, the ends always."""
    xs = [2, 2.2, 2.4, 2.6, 2.8, 3, 1000]
    _chart(tmp_path, xs)
    [labels] = drawn
    _assert_readable(labels, xs)
    assert len(labels) < len(xs)
