"""During the search, DuckDB's memory limit follows what the job's process holds outside DuckDB's
buffers, so that the job's limit holds when that part grows (the interpreter, the search's parts,
pages the allocators keep). The oracle is the rule's arithmetic, done by hand; DuckDB's own
``memory_limit`` setting is read back from it."""

from __future__ import annotations

import re

import duckdb
import pytest

import sqlclose.engine.duckdb as duckdb_engine
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.engine.limits import engine_limit_now, resident_bytes

MB = 10**6


@pytest.mark.parametrize(("outside", "expected"), [
    (100 * MB, 450 * MB),  # room (950 − 100) above DuckDB's share (60 % of 1,000 − 250): the share
    (600 * MB, 350 * MB),  # 95 % of the limit less what is held outside
    (900 * MB, 225 * MB),  # never below half the share
])
def test_duckdbs_limit_is_what_the_job_leaves_beside_the_rest_of_the_process(outside, expected):
    assert engine_limit_now(1000 * MB, outside) == expected


def test_the_resident_set_is_read_from_the_process():
    with open("/proc/self/status") as f:
        rss_kib = int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))
    assert abs(resident_bytes() - rss_kib * 1024) < 50 * MB


def _setting(engine: DuckDBEngine) -> float:
    """DuckDB's memory_limit, in bytes (it shows MiB or GiB with one decimal)."""
    text = engine.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    number, unit = re.fullmatch(r"([\d.]+) ?(MiB|GiB)", text).groups()
    return float(number) * (2**20 if unit == "MiB" else 2**30)


def test_duckdbs_limit_follows_the_most_held_outside_it_then_returns_to_its_share(monkeypatch):
    engine = DuckDBEngine(memory_limit="1GB")
    try:
        assert abs(_setting(engine) - 450 * MB) < 0.1 * 2**20  # the share, from the start
        held = {"now": 600 * MB}
        monkeypatch.setattr(duckdb_engine, "resident_bytes", lambda: held["now"])
        engine.fit_memory()
        assert abs(_setting(engine) - 350 * MB) < 2 * MB  # DuckDB's few buffers count as its own
        held["now"] = 200 * MB  # the most held outside counts: the allocators may keep those pages
        engine.fit_memory()
        assert abs(_setting(engine) - 350 * MB) < 2 * MB
        held["now"] = 2000 * MB
        engine.fit_memory()
        assert abs(_setting(engine) - 225 * MB) < 0.1 * 2**20
        engine.reset_memory()  # the search has ended
        assert abs(_setting(engine) - 450 * MB) < 0.1 * 2**20
    finally:
        engine.close()


def test_duckdbs_limit_makes_room_for_what_is_about_to_be_allocated_outside_it(monkeypatch):
    """A part about to be judged: DuckDB's limit leaves room for its estimated cost on top of what
    is held now (before the judging, so that the job's peak stays within its limit), without
    counting it as held once the part is gone."""
    engine = DuckDBEngine(memory_limit="1GB")
    try:
        held = {"now": 300 * MB}
        monkeypatch.setattr(duckdb_engine, "resident_bytes", lambda: held["now"])
        engine.fit_memory(upcoming=250 * MB)
        assert abs(_setting(engine) - 400 * MB) < 2 * MB  # 950 − (300 + 250) held and about to be
        engine.fit_memory()
        assert abs(_setting(engine) - 450 * MB) < 2 * MB  # the share again: 300 was the most held
        held["now"] = 500 * MB
        engine.fit_memory(upcoming=100 * MB)
        assert abs(_setting(engine) - 350 * MB) < 2 * MB  # 950 − 600
    finally:
        engine.close()


def test_a_callers_connection_and_a_job_without_a_limit_keep_their_settings(monkeypatch):
    monkeypatch.setattr(duckdb_engine, "resident_bytes", lambda: 10**12)
    con = duckdb.connect(config={"memory_limit": "300MB"})
    before = con.execute("SELECT current_setting('memory_limit')").fetchone()
    theirs = DuckDBEngine(connection=con)
    theirs.fit_memory()
    assert con.execute("SELECT current_setting('memory_limit')").fetchone() == before
    theirs.close()
    con.close()
    unlimited = DuckDBEngine()
    before = unlimited.con.execute("SELECT current_setting('memory_limit')").fetchone()
    unlimited.fit_memory()
    assert unlimited.con.execute("SELECT current_setting('memory_limit')").fetchone() == before
    unlimited.close()


def test_ctrl_c_inside_the_memory_monitor_is_an_interrupt(monkeypatch):
    # DuckDB reports a Ctrl-C that lands inside a query as its own error; in the monitor's queries
    # (read DuckDB's buffers, set its limit) it must still stop the run as an interrupt (exit 130).
    class Interrupted:
        def execute(self, *args):
            raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")

    engine = DuckDBEngine(memory_limit="1GB")
    try:
        monkeypatch.setattr(duckdb_engine, "resident_bytes", lambda: 600 * MB)
        engine._monitor = Interrupted()
        with pytest.raises(KeyboardInterrupt):
            engine.fit_memory()
        with pytest.raises(KeyboardInterrupt):
            engine._set_limit(300 * MB)
    finally:
        engine._monitor = None
        engine.close()
