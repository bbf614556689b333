"""Where the re-check's measures of the grouped file run: a local DuckDB when queries are dear.

The grouped file (``verify_sql._grouped_release``: each distinct written row once, with the rows
it stands for) is what every measure but two reads: the class sizes, the labels' levels, each
sensitive column's counts, its diversity and its distances. On an engine whose every query costs
planning and jobs (``Engine.local_search``; Spark: Adult's re-check took 8.6 s in 12 statements),
the grouped file is collected once, as the engine's own text, into a local DuckDB, and those
measures run there. The two that read the input — the truth test and the reference distribution
Q — stay on the engine; Q, a row per sensitive value, is then copied beside the grouped file.

Every column is collected as the engine's text of it (``CAST … AS VARCHAR``), the form labels and
sensitive values are matched in: the local copy never casts a value itself, so a double reads as
Spark printed it (``1.2E7``), as the input's column values were read. The grouping is kept: the
engine grouped the typed values, and text is one-to-one on them.

The copy is bounded in bytes (``GROUPED_MAX_BYTES``, turned into rows by the file's width): at most
one row past the bound is read (a LIMIT), and past it, or when the collect fails, the measures run
on the engine as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.engine.limits import LOCAL_COPY_MAX_BYTES
from sqlclose.engine.local_copy import local_copy

GROUPED_MAX_BYTES = LOCAL_COPY_MAX_BYTES


def row_limit(columns: int) -> int:
    """Rows of a grouped file of ``columns`` text columns that fit the bound: per row its count
    (8 bytes) and per column an offset, validity and its text (~24 bytes assumed)."""
    return GROUPED_MAX_BYTES // (8 + 25 * columns)


@dataclass
class Judge:
    """The engine the grouped file's measures run on, the grouped file there, and the names
    registered there (the source's engine drops them; a local engine is closed whole)."""

    engine: Engine
    grouped: exp.Table
    registered: list[str] = field(default_factory=list)

    def copied(self, source: Engine, table: exp.Table, stem: str) -> exp.Table:
        """``table`` of the source's engine as the judge reads it: itself there, else a local copy."""
        if source is self.engine:
            return table
        name = self.engine.temp_name(stem)
        self.engine.register(name, source.fetch(exp.select(exp.Star()).from_(table.copy())))
        return exp.Table(this=exp.to_identifier(name, quoted=True))


@contextmanager
def judge_for(engine: Engine, grouped: exp.Table, columns: Sequence[str], rows: str,
              registered: list[str]) -> Iterator[Judge]:
    """The judge of ``grouped`` (its text ``columns`` and its count ``rows``): a local copy when the
    engine asks for local work and the file fits ``row_limit``, else the engine itself."""
    text = [exp.alias_(exp.Cast(this=_col(c), to=exp.DataType.build("VARCHAR")), exp.to_identifier(c, quoted=True))
            for c in columns]
    with local_copy(engine, exp.select(*text, _col(rows)).from_(grouped.copy()), row_limit(len(columns)),
                    "verify_grouped") as copy:
        yield Judge(engine, grouped, registered) if copy is None else Judge(*copy)


def _col(name: str) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name, quoted=True))
