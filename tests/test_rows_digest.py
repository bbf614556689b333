"""A live source's rows digested typed for a sweep's or check's change test (``prepare.digests``),
not cast to text and MD5-hashed row by row as the report's fingerprint was before the ninety-eighth
round (~1.2 s a million rows for the text cast alone, twice per sweep or check). The oracle for what
must still count as a change is the rows as the tests change them
(tests/test_source_changed_after_search.py, tests/test_keyed_fingerprint.py); here, what is run."""

from __future__ import annotations

import duckdb

from sqlclose.prepare.sources import open_source


def test_a_live_tables_digest_hashes_its_exact_columns_typed(monkeypatch) -> None:
    """A table of integers, dates and timestamps is digested with no row cast to text and no MD5;
    its one text column cast to text under the byte-wise collation, its float hashed with its sign."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 1 AS i, DATE '2020-01-02' AS d, TIMESTAMP '2020-01-02 03:04:05' AS ts, "
                "'x' AS s, 1.5::DOUBLE AS f")
    opened = open_source((con, "t"), None)
    run = []
    original = opened.engine.fetch_row
    monkeypatch.setattr(opened.engine, "fetch_row", lambda query, *a, **k: run.append(query.sql("duckdb"))
                        or original(query, *a, **k))
    opened.keep_rows()
    opened.refuse_changed("while it was read", "")
    assert len(run) == 2 and "MD5" not in run[0].upper()
    assert run[0].upper().count("AS TEXT)") == 2, run[0]  # the text column's and the sum's, no row's
    assert 'SIGNBIT("SRC"."F")' in run[0].upper().replace(" ", ""), run[0]
    opened.engine.close()
