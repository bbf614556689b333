"""A live DuckDB table's TIMETZ value rewritten at another offset between a check's passes. The typed
digest (``prepare.digests._hashed``) hashes a TIMETZ as it is, not by its text as an interval:
DuckDB 2.0.1 tells '12:00:00+01' from '11:00:00+00' (the same instant) in ``=`` and in ``HASH``, so
the change is seen. A guard of that reliance (ninety-ninth round): it passed before, and fails when
the digest hashes the instant alone (``timezone('UTC', v)``), which a DuckDB comparing TIMETZ by
instant would amount to. Oracle: DuckDB's own comparison, and Table 3's nine ZIP codes, k of 1."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

import sqlclose
import sqlclose.audit.check

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"


def test_duckdb_tells_a_timetz_at_another_offset_from_the_same_instant() -> None:
    """What the digest relies on: the two values differ in ``=`` and ``HASH`` though one instant."""
    [(same_instant, equal, hashed_alike)] = duckdb.connect().execute(
        "SELECT timezone('UTC', a) = timezone('UTC', b), a = b, hash(a) = hash(b) "
        "FROM (SELECT '12:00:00+01'::TIMETZ AS a, '11:00:00+00'::TIMETZ AS b)").fetchall()
    assert (same_instant, equal, hashed_alike) == (True, False, False)


def test_a_check_of_a_table_whose_timetz_moved_to_another_offset_is_refused(tmp_path, monkeypatch) -> None:
    shutil.copy(TABLE3 / "table3.csv", tmp_path / "table3.csv")
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT zip, age, disease, '11:00:00+00'::TIMETZ AS seen "
                f"FROM read_csv('{tmp_path / 'table3.csv'}')")
    con.execute("UPDATE t SET seen = '12:00:00+01'::TIMETZ WHERE zip = (SELECT min(zip) FROM t)")
    assert sqlclose.check((con, "t"), ["zip", "age"], ["disease"]).data["k"]["reached"] == 1
    original, changed = sqlclose.audit.check._audit, []

    def audit_then_changed(*args, **kwargs):
        result = original(*args, **kwargs)
        if not changed:
            con.execute("UPDATE t SET seen = '11:00:00+00'::TIMETZ")
            changed.append(True)
        return result

    monkeypatch.setattr(sqlclose.audit.check, "_audit", audit_then_changed)
    with pytest.raises(sqlclose.InputError, match=r"duckdb table t changed while it was checked"):
        sqlclose.check((con, "t"), ["zip", "age"], ["disease"])
    assert changed
