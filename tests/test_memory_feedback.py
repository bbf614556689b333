"""During the search, DuckDB's memory limit follows what the job's process holds outside DuckDB's
buffers, so that the job's limit holds when that part grows (the interpreter, the search's parts,
pages the allocators keep). The oracle is the rule's arithmetic, done by hand; DuckDB's own
``memory_limit`` setting is read back from it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import duckdb
import pytest
from table3_project import TABLE3

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


_CACHED_PAGES = """
import json, sys, time
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.engine.limits import resident_bytes
engine = DuckDBEngine(memory_limit="500MB")
# a large aggregate and a sort: the pages DuckDB's allocator keeps after them are what the call gives back
engine.con.execute("SELECT count(*) FROM (SELECT i % 300000 AS g, count(*) FROM range(3000000) t(i) "
                   "GROUP BY g)").fetchall()
engine.con.execute("SELECT count(*) FROM (SELECT i, hash(i) AS h FROM range(2000000) t(i) ORDER BY h)").fetchall()
before = resident_bytes()
time.sleep(0.2)
waited = resident_bytes()
if sys.argv[1] == "release":
    engine.release_cached_memory()
after = resident_bytes()
limit = engine.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
print(json.dumps({"before": before, "waited": waited, "after": after, "limit": limit}))
"""


def _cached_pages_run(call: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _CACHED_PAGES, call], capture_output=True, text=True, timeout=120,
                          check=True)
    return json.loads(done.stdout)


def test_the_pages_duckdbs_allocator_keeps_go_back_to_the_system_before_the_recheck():
    """The release's re-check runs after the call: the resident set drops by what DuckDB's allocator
    kept of finished statements (~40 MiB after this aggregate and sort, measured from /proc), its
    limit unchanged (its share: 60 % of 500 MB − 250 MB = 150 MB, shown as 143.0 MiB). Without the
    call, the same wait gives nothing back: the drop is the call's."""
    released, kept = _cached_pages_run("release"), _cached_pages_run("keep")
    assert released["before"] - released["after"] > 20 * 2**20
    assert kept["before"] - kept["after"] < 5 * 2**20
    assert released["limit"] == kept["limit"] == "143.0 MiB"


def test_a_job_without_a_limit_or_on_a_callers_connection_keeps_its_allocator_and_settings():
    con = duckdb.connect(config={"memory_limit": "300MB"})
    theirs = DuckDBEngine(connection=con)
    theirs.release_cached_memory()
    assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "286.1 MiB"
    assert theirs._monitor is None  # no statement of ours on their connection
    theirs.close()
    con.close()
    unlimited = DuckDBEngine()
    unlimited.release_cached_memory()
    assert unlimited._monitor is None
    unlimited.close()


def test_the_release_node_hands_back_its_sorts_pages_before_its_arrays_are_made(monkeypatch):
    """The release's node is fetched sorted by the engine, then made into Python arrays: under a
    limit, the pages DuckDB's allocator kept of that sort go back first. The job of a 632 k-value
    ordered sensitive column peaked there, 514–518 MiB under 500 MB (477 MiB), both held at once
    (docs/engines.md, ninety-fourth round). Oracle: the order of the two calls, recorded."""
    import sqlclose
    import sqlclose.search.node_runner as node_runner
    from sqlclose.model.spec import EngineSettings

    events: list[str] = []
    made = node_runner.class_histograms

    def arrays(*args, **kwargs):
        events.append("release node's arrays" if args[4:] and args[4] is not None else "a node's arrays")
        return made(*args, **kwargs)
    monkeypatch.setattr(node_runner, "class_histograms", arrays)
    monkeypatch.setattr(DuckDBEngine, "release_cached_memory", lambda self: events.append("pages back"))
    fetch = DuckDBEngine.fetch

    def fetched(self, *args, **kwargs):
        events.append("fetched")
        return fetch(self, *args, **kwargs)
    monkeypatch.setattr(DuckDBEngine, "fetch", fetched)
    spec = sqlclose.load_spec(TABLE3 / "table3.toml")
    spec = spec.model_copy(update={"engine": EngineSettings(memory_limit="600MB")})
    with sqlclose.anonymize(TABLE3 / "table3.csv", spec) as release:
        assert release.summary["classes"] == 3  # Li et al.'s Table 5
    first = events.index("release node's arrays")
    assert events[first - 2:first] == ["fetched", "pages back"], events
