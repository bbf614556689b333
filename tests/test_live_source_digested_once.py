"""A live source (a caller's DuckDB table, an Arrow table, a pandas DataFrame) run with the operator's
key: its rows were digested twice before the scan, once under a key of the run's own for the change
test and again under the operator's key for the report's fingerprint (ninety-ninth round). One pass,
under the operator's key, now serves both. The oracles: the digest queries counted as the engine runs
them, the fingerprint as a plain DuckDB query written here and Python's HMAC, and a change made right
after that one pass, refused at the write."""

from __future__ import annotations

import hashlib
import hmac
import json

import duckdb
import pyarrow as pa
import pytest

import sqlclose
import sqlclose.api
from sqlclose.engine.base import Engine

KEY = "the operator's secret"
SPEC = {"privacy": {"k": 2}, "others": "keep", "quasi_identifiers": {"i": {"bands": [2]}}}


def _sources() -> dict:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i, i * 10 AS v FROM range(8) r(i)")
    arrow = con.sql("SELECT * FROM t").arrow()
    arrow = arrow.read_all() if isinstance(arrow, pa.RecordBatchReader) else arrow
    return {"duckdb table": ((con, "t"), con), "arrow table": (arrow, None), "pandas": (arrow.to_pandas(), None)}


def _digest_passes(monkeypatch) -> list[str]:
    """Every query summing the rows' hashes (the typed digest), as the engine is asked to run it."""
    passes: list[str] = []
    original = Engine.fetch_row

    def counted(self, query, *args, **kwargs):
        text = query if isinstance(query, str) else query.sql("duckdb")
        if "SUM(HASH(" in text.upper().replace(" ", ""):
            passes.append(text)
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(Engine, "fetch_row", counted)
    return passes


@pytest.mark.parametrize("kind", ["duckdb table", "arrow table", "pandas"])
def test_a_live_source_run_with_a_key_is_digested_once_before_the_scan(kind, monkeypatch, tmp_path) -> None:
    source, _ = _sources()[kind]
    passes = _digest_passes(monkeypatch)
    with sqlclose.anonymize(source, SPEC, fingerprint_key=KEY) as release:
        assert len(passes) == 1, passes  # two until the ninety-ninth round
        report = release.write_parquet(tmp_path / "r.parquet")
    assert len(passes) == 2  # and one more after the write's re-check
    total = duckdb.connect().execute("SELECT CAST(SUM(HASH($1, i, i * 10)) AS VARCHAR) FROM range(8) r(i)",
                                     [KEY]).fetchall()[0][0]
    digest = f"{total}:{json.dumps([['i', 'int64'], ['v', 'int64']])}"
    assert report["input"]["fingerprint"] == hmac.new(KEY.encode(), digest.encode(), hashlib.sha256).hexdigest()[:32]


def test_a_table_changed_right_after_its_one_digest_is_refused_at_the_write(monkeypatch, tmp_path) -> None:
    """The change test still runs from that pass: an UPDATE as the scan begins (after the one digest,
    before any value is read) is refused at the write, nothing written."""
    source, con = _sources()["duckdb table"]
    passes = _digest_passes(monkeypatch)
    original, changed = sqlclose.api.prepare, []

    def changed_first(*args, **kwargs):
        con.execute("UPDATE t SET v = v + 1 WHERE i = 3")
        changed.append(len(passes))
        return original(*args, **kwargs)

    monkeypatch.setattr(sqlclose.api, "prepare", changed_first)
    with sqlclose.anonymize(source, SPEC, fingerprint_key=KEY) as release:
        with pytest.raises(sqlclose.InputError, match="changed after the release was searched"):
            release.write_parquet(tmp_path / "r.parquet")
    assert changed == [1]
    assert len(passes) == 2  # the first and the write's: no other pass, and none between them (three before)
    assert list(tmp_path.iterdir()) == []
