"""Corrupting a release's file right after it is written, for tests of the verifier.

The engine's ``copy_to_parquet`` is wrapped: it writes the true release, then the file is loaded
into table ``t`` of a fresh DuckDB, the given statements run on it, and the result takes its
place (the rewritten copy is made in a scratch folder and moved, so nothing of ours is left
beside the output). The verification itself is never patched: it has to find the corruption in
the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from sqlclose.engine import DuckDBEngine


def rewrite(path: Path, scratch: Path, statements: list[str]) -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(path)])
    for statement in statements:
        con.execute(statement)
    scratch.mkdir(exist_ok=True)
    rewritten = scratch / "rewritten.parquet"
    con.execute("COPY t TO ? (FORMAT PARQUET)", [str(rewritten)])
    con.close()
    os.replace(rewritten, path)


def corrupt_on_write(monkeypatch: pytest.MonkeyPatch, engine: DuckDBEngine, scratch: Path,
                     statements: list[str]) -> None:
    """This engine corrupts what it writes."""
    original = engine.copy_to_parquet

    def copy_then_corrupt(query, path, params=()):
        original(query, path, params)
        rewrite(path, scratch, statements)

    monkeypatch.setattr(engine, "copy_to_parquet", copy_then_corrupt)


def corrupt_every_write(monkeypatch: pytest.MonkeyPatch, scratch: Path, statements: list[str]) -> None:
    """Every DuckDB engine corrupts what it writes (for the CLI, which builds its own engine)."""
    original = DuckDBEngine.copy_to_parquet

    def copy_then_corrupt(self, query, path, params=()):
        original(self, query, path, params)
        rewrite(path, scratch, statements)

    monkeypatch.setattr(DuckDBEngine, "copy_to_parquet", copy_then_corrupt)
