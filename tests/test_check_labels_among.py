"""``check --against`` of a warehouse release whose report lists only the first labels of a column
released as it is: how many of them the file holds was a DISTINCT pass over the column of its own
(``figures._values_among``), beside the pass that counts and lists its labels; since the ninety-ninth
round the listing pass counts them too. The oracles: the labels held, counted by hand from the values
the test wrote, and the passes over the column's distinct values counted as the engine runs them."""

from __future__ import annotations

import duckdb
import pytest

from sqlclose.audit.figures import release_figures
from sqlclose.engine.base import Engine


@pytest.fixture
def release(tmp_path):
    """A release of 12 ages, 20.0 to 31.0 (a DOUBLE released as it is), beside a masked zip."""
    path = tmp_path / "release.parquet"
    duckdb.connect().execute(f"COPY (SELECT (20 + i % 12)::DOUBLE AS age, '47**' AS zip FROM range(24) r(i)) "
                             f"TO '{path}'")
    return path


def _distinct_passes(monkeypatch, column: str) -> list[str]:
    """The queries over ``column``'s distinct values as text, as the engine is asked to run them."""
    passes: list[str] = []
    for method in ("fetch", "fetch_row"):
        original = getattr(Engine, method)

        def counted(self, query, *args, _original=original, **kwargs):
            text = query if isinstance(query, str) else query.sql("duckdb")
            if f'DISTINCT CAST("{column}"' in text:
                passes.append(text)
            return _original(self, query, *args, **kwargs)

        monkeypatch.setattr(Engine, method, counted)
    return passes


def test_the_labels_a_report_lists_are_counted_among_the_files_in_the_pass_that_lists_them(release,
                                                                                           monkeypatch) -> None:
    passes = _distinct_passes(monkeypatch, "age")
    # Trino's text of 29, 30 and 99: the file holds the first two (29.0, 30.0), never 99
    figures = release_figures(release, ["age", "zip"], ["age", "zip"], {}, 5,
                              read_labels={"age": ["2.9E1", "3.0E1", "9.9E1"]})
    assert figures.labels_read == {"age": ["29.0", "30.0", "99.0"]}
    assert figures.labels["age"].among == 2
    assert figures.labels["age"].count == 12 and figures.labels["age"].first == ["20.0", "21.0", "22.0", "23.0",
                                                                                 "24.0"]
    assert len(passes) == 1, passes  # two until the ninety-ninth round

    none_held = release_figures(release, ["age", "zip"], ["age", "zip"], {}, 5, read_labels={"age": ["9.9E1"]})
    assert none_held.labels["age"].among == 0
