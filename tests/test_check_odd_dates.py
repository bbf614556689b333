"""Days and instants Python's dates cannot hold (a BC day, 'infinity', a year past 9999), and a time of
day they misread (24:00:00), in a quasi-identifier: `anonymize` releases them (a tree, level 0), and
`check`, `check --against`, `report --html` and `anonymize --html` of that release stopped with an
internal error (exit 1, OverflowError): the class labels were read as Python dates. They are the
engine's text now. The oracle: the labels a plain `SELECT DISTINCT CAST(d AS VARCHAR)` gives, and the
files on disk."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from table3_project import invoke

import sqlclose

ODD = {
    "DATE BC": ("DATE '0044-03-15 (BC)'", "DATE '2000-01-01'"),
    "DATE infinity": ("DATE 'infinity'", "DATE '2000-01-01'"),
    "DATE -infinity": ("DATE '-infinity'", "DATE '2000-01-01'"),
    "DATE past 9999": ("DATE '10000-01-01'", "DATE '2000-01-01'"),
    "TIMESTAMP BC": ("TIMESTAMP '0044-03-15 (BC) 10:00:00'", "TIMESTAMP '2000-01-01 00:00:00'"),
    "TIMESTAMP infinity": ("TIMESTAMP 'infinity'", "TIMESTAMP '2000-01-01 00:00:00'"),
    "TIMESTAMP past 9999": ("TIMESTAMP '20000-01-01 00:00:00'", "TIMESTAMP '2000-01-01 00:00:00'"),
    "TIMESTAMPTZ infinity": ("TIMESTAMPTZ 'infinity'", "TIMESTAMPTZ '2000-01-01 00:00:00+00'"),
    "TIME 24:00": ("TIME '24:00:00'", "TIME '01:00:00'"),
}


@pytest.mark.parametrize("case", list(ODD))
def test_check_lists_the_classes_of_odd_days_by_the_engines_text(case):
    odd, plain = ODD[case]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    # 5 rows hold the odd value, 7 the plain one: k = 6 fails the odd class; both are listed, the smaller first
    con.execute(f"CREATE TABLE t AS SELECT CASE WHEN i < 5 THEN {odd} ELSE {plain} END AS d, "
                "['x', 'y', 'z'][i % 3 + 1] AS s FROM range(12) r(i)")
    expected = con.execute("SELECT CAST(d AS VARCHAR), count(*) FROM t GROUP BY d ORDER BY count(*)").fetchall()
    report = sqlclose.check((con, "t"), ["d"], ["s"], k=6)
    assert report.passed is False
    listed = [(c["class"]["d"], c["size"]) for c in report.data["k"]["worst_classes"]]
    assert listed == expected


@pytest.fixture
def bc_project(tmp_path) -> Path:
    con = duckdb.connect(str(tmp_path / "t.duckdb"))
    con.execute("CREATE TABLE p AS SELECT CASE WHEN i % 2 = 0 THEN DATE '0044-03-15 (BC)' ELSE DATE '2000-01-01' "
                "END AS d, ['x', 'y', 'z'][i % 3 + 1] AS s FROM range(12) r(i)")
    con.close()
    (tmp_path / "spec.toml").write_text(f'''[source]
path = "{tmp_path / 't.duckdb'}"
table = "p"
[output]
path = "{tmp_path / 'out' / 'release.parquet'}"
[privacy]
k = 3
[quasi_identifiers]
d = {{ tree = {{ old = ["0044-03-15 (BC)", "2000-01-01"] }} }}
[sensitive.s]
distinct_l = 2
''')
    return tmp_path


def test_the_audit_commands_read_a_release_of_a_bc_day(bc_project):
    release = bc_project / "out" / "release.parquet"
    report = Path(f"{release}.report.json")
    made = invoke("anonymize", bc_project / "spec.toml", "-q", "--html", bc_project / "page.html")
    assert made.exit_code == 0, made.output
    assert (bc_project / "page.html").is_file()
    against = invoke("check", release, "--against", report, "--json")
    assert against.exit_code == 0, against.output
    assert json.loads(against.output)["problems"] == []
    page = invoke("report", report, "--html", bc_project / "page2.html")
    assert page.exit_code == 0, page.output
    assert "0044-03-15 (BC)" in (bc_project / "page2.html").read_text()


def test_a_bug_after_placing_says_the_release_stands(bc_project, monkeypatch):
    """An internal error once the pair is placed (here a failing page, forced) said only "internal
    error": a nightly job read a published release as a failure."""
    import sqlclose.audit.html as html

    def broken(*args, **kwargs):
        raise RuntimeError("forced")

    monkeypatch.setattr(html, "write_html", broken)
    release = bc_project / "out" / "release.parquet"
    made = invoke("anonymize", bc_project / "spec.toml", "-q", "--html", bc_project / "page.html")
    assert made.exit_code == 1
    assert release.is_file() and Path(f"{release}.report.json").is_file()
    assert "internal error: RuntimeError: forced" in made.output
    assert f"the release {release} and its report {release}.report.json are in place and verified" in made.output
