"""Ninety-sixth round, review: a source file replaced while the run reads it — an upstream job's atomic
rename during the fingerprint, the value scan or the histogram (seconds at 2 M rows) — was never
refused: the files were stamped (size, modification time, inode) only after ``prepare``. Replaced
after the fingerprint, the run exited 0 with the new file's rows under the old file's fingerprint;
after the histogram, the node was chosen on the old rows and the new ones written (exit 4, or exit 0
with input.rows below output.rows). The files are now stamped when the source is opened, before a row
is read, and a change refused at the write (exit 2, "changed after the release was searched"), nothing
placed; a sweep and a check refuse a file replaced while they read it too.

The replacement lands at an exact point: the function that point ends is wrapped in-process (the
upstream job's ``os.replace`` run as it returns). Oracles: the exit code and message, the file system
(the previous release and its report byte for byte, nothing else beside them), a plain SQL count."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import sqlclose
import sqlclose.api
import sqlclose.prepare.problem
from sqlclose.cli import main
from sqlclose.sweep import sweep

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
SPEC = """others = "keep"
[source]
{source}
[output]
path = "out/release.parquet"
overwrite = true
[privacy]
k = 2
[quasi_identifiers]
zip = {{ mask = true, length = 5 }}
age = {{ file = "age.csv" }}
"""
KINDS = {  # how each kind of source is named in the spec, and the file the upstream job replaces
    "parquet file": ('path = "people.parquet"', "people.parquet"),
    "parquet folder": ('path = "people"', "people/part-1.parquet"),
    "pattern": ('path = "parts/*.parquet"\nglob = true', "parts/b.parquet"),
    "csv": ('path = "people.csv"', "people.csv"),
    "duckdb database": ('path = "people.duckdb"\ntable = "people"', "people.duckdb"),
}


def _table3(extra: int, where: str = "true") -> str:
    """Table 3's rows (those ``where`` says) and ``extra`` more copies of its first: another input of the
    same shape."""
    rows = f"SELECT zip, age, salary, disease FROM read_csv('{TABLE3 / 'table3.csv'}', types = {{'zip': 'VARCHAR'}})"
    copies = f"SELECT t.* FROM ({rows} WHERE salary = 3000) t, range({extra})"
    return f"SELECT * FROM ({rows} UNION ALL {copies}) WHERE {where}"


def _write(kind: str, folder: Path, extra: int) -> Path:
    """The source of ``kind`` holding Table 3 plus ``extra`` rows, written aside and renamed over the
    one in place (as an upstream job does); returns the file it replaced."""
    name = KINDS[kind][1]
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = target.with_name(".incoming-" + target.name)
    con = duckdb.connect()
    if kind in ("parquet file", "pattern", "parquet folder"):
        if kind != "parquet file":  # the other part: Table 3's first rows, never replaced
            first = target.with_name("a.parquet" if kind == "pattern" else "part-0.parquet")
            if not first.exists():
                con.execute(f"COPY ({_table3(0, 'salary > 6000')}) TO '{first}' (FORMAT parquet)")
            con.execute(f"COPY ({_table3(extra, 'salary <= 6000')}) TO '{staged}' (FORMAT parquet)")
        else:
            con.execute(f"COPY ({_table3(extra)}) TO '{staged}' (FORMAT parquet)")
    elif kind == "csv":
        con.execute(f"COPY ({_table3(extra)}) TO '{staged}' (HEADER, DELIMITER ',')")
    else:
        con.close()
        db = duckdb.connect(str(staged))
        db.execute(f"CREATE TABLE people AS {_table3(extra)}")
        db.close()
    con.close()
    os.replace(staged, target)
    return target


def _project(tmp_path: Path, kind: str) -> Path:
    shutil.copy(TABLE3 / "age.csv", tmp_path / "age.csv")
    (tmp_path / "spec.toml").write_text(SPEC.format(source=KINDS[kind][0]))
    return tmp_path


def _anonymize(folder: Path) -> object:
    return CliRunner().invoke(main, ["anonymize", str(folder / "spec.toml"), "--no-progress", "-q"])


def _replacing_after(monkeypatch, module: object, name: str, replace: Callable[[], Path]) -> list[Path]:
    """``module.name`` wrapped so that the upstream job replaces the source as its first call returns;
    returns the list the replaced file is appended to (empty: the point was never reached)."""
    original = getattr(module, name)
    replaced: list[Path] = []

    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        if not replaced:
            replaced.append(replace())
        return result

    monkeypatch.setattr(module, name, wrapped)
    return replaced


POINTS = {  # where the replacement lands: the function prepare ends that part with
    "after the fingerprint": (sqlclose.prepare.problem, "keyed_fingerprint"),  # prepare's first pass
    "after the histogram": (sqlclose.api, "prepare"),  # the scan and histogram done, nothing searched yet
}


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_source_replaced_during_the_scan_is_refused_and_the_previous_release_stays(tmp_path, monkeypatch,
                                                                                       kind, point):
    monkeypatch.setenv("SQLCLOSE_FINGERPRINT_KEY", "operator-secret")  # the fingerprint is read first
    folder = _project(tmp_path, kind)
    _write(kind, folder, extra=2)  # last night's input
    first = _anonymize(folder)
    assert first.exit_code == 0, first.output
    out = folder / "out"
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(before) == ["release.parquet", "release.parquet.report.json"]
    assert duckdb.sql(f"SELECT count(*) FROM '{out / 'release.parquet'}'").fetchall() == [(11,)]

    _write(kind, folder, extra=0)  # tonight's input, which the upstream job replaces during the run
    replaced = _replacing_after(monkeypatch, *POINTS[point], lambda: _write(kind, folder, extra=1))
    run = _anonymize(folder)

    assert replaced, "the replacement point was never reached"
    assert run.exit_code == 2, run.output
    assert "changed after the release was searched" in run.output
    assert f"({replaced[0]} was replaced or modified)" in run.output
    assert "run the job again on the source as it is now" in run.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing of this run placed or left


def test_a_sweep_refuses_a_source_replaced_while_it_read_it(tmp_path, monkeypatch):
    """``prepare`` reads the source in several passes: its values (the rule hierarchies, the domains),
    then the histogram every run of a sweep measures. A file replaced between them gave figures of two
    inputs, exit 0; the sweep is now refused, naming the file."""
    folder = _project(tmp_path, "parquet file")
    _write("parquet file", folder, extra=0)
    replaced = _replacing_after(monkeypatch, sqlclose.prepare.problem, "_check_values",
                                lambda: _write("parquet file", folder, extra=3))
    with pytest.raises(sqlclose.InputError, match="changed while the sweep read it") as refused:
        sweep(None, sqlclose.load_spec(folder / "spec.toml"), [2, 3])
    assert replaced
    assert f"({replaced[0]} was replaced or modified)" in str(refused.value)


def test_a_check_refuses_a_table_replaced_while_it_read_it(tmp_path, monkeypatch):
    """``check`` reads the table in several passes (the sensitive domain and distribution, then the
    classes): a file replaced between them was measured half old, half new. Refused now."""
    import sqlclose.audit.tables

    folder = _project(tmp_path, "parquet file")
    source = _write("parquet file", folder, extra=0)
    original = sqlclose.audit.tables.table_classes

    def replaced_first(*args, **kwargs):  # the distribution read, the classes not yet
        _write("parquet file", folder, extra=3)
        return original(*args, **kwargs)

    monkeypatch.setattr(sqlclose.audit.tables, "table_classes", replaced_first)
    with pytest.raises(sqlclose.InputError, match="changed while it was checked") as refused:
        sqlclose.check(source, ["zip", "age"], ["disease"], k=2)
    assert f"({source} was replaced or modified)" in str(refused.value)


def test_check_against_refuses_a_release_replaced_after_its_digest(tmp_path, monkeypatch):
    """``check --against`` compares the file's digest, then reads it again for its figures: a release
    replaced in between was measured as another file after its digest had matched, and a "does not
    match" (exit 4) told of claims the release made rightly. Refused now as a file that changed."""
    import sqlclose.against_report

    folder = _project(tmp_path, "parquet file")
    _write("parquet file", folder, extra=0)
    assert _anonymize(folder).exit_code == 0
    released, report = folder / "out" / "release.parquet", folder / "out" / "release.parquet.report.json"
    other = folder / "other.parquet"
    duckdb.sql(f"COPY (SELECT * FROM '{released}' UNION ALL (SELECT * FROM '{released}' LIMIT 2)) TO '{other}' "
               "(FORMAT parquet)")
    original = sqlclose.against_report.released_digest

    def digest_then_replaced(*args, **kwargs):
        digest = original(*args, **kwargs)
        os.replace(other, released)
        return digest

    monkeypatch.setattr(sqlclose.against_report, "released_digest", digest_then_replaced)
    with pytest.raises(sqlclose.InputError, match="changed while it was checked against its report") as refused:
        sqlclose.against_report.verify_against_report(released, report)
    assert f"({released} was replaced or modified)" in str(refused.value)


def test_the_warehouse_path_refuses_a_histogram_replaced_while_it_read_it(tmp_path, monkeypatch):
    """``anonymize --histogram`` reads the warehouse's export in the same passes as a table (its values,
    then the histogram it searches): one replaced between them chose the release query on counts of
    two files. Refused now, naming the file."""
    shutil.copy(TABLE3 / "age.csv", tmp_path / "age.csv")
    spec = sqlclose.load_spec(_warehouse_spec(tmp_path))
    exported = tmp_path / "histogram.parquet"

    def export(extra: int) -> Path:  # the warehouse runs the histogram query; the job exports its result
        con = duckdb.connect()
        con.execute("CREATE SCHEMA analytics")
        con.execute(f"CREATE TABLE analytics.people AS {_table3(extra)}")
        con.execute(f"COPY ({sqlclose.api.histogram_sql(spec).rstrip().rstrip(';')}) TO "
                    f"'{tmp_path / '.incoming.parquet'}' (FORMAT parquet)")
        con.close()
        os.replace(tmp_path / ".incoming.parquet", exported)
        return exported

    export(0)
    replaced = _replacing_after(monkeypatch, sqlclose.prepare.problem, "_check_values", lambda: export(3))
    with pytest.raises(sqlclose.InputError, match="changed while the run read it") as refused:
        sqlclose.api.anonymize_histogram(exported, spec)
    assert replaced
    assert f"({exported} was replaced or modified)" in str(refused.value)


def _warehouse_spec(folder: Path) -> Path:
    (folder / "warehouse.toml").write_text('others = "drop"\n[source]\nformat = "warehouse"\n'
                                           'table = "analytics.people"\ndialect = "duckdb"\n[output]\n'
                                           'path = "release.sql"\n[privacy]\nk = 2\n[quasi_identifiers]\n'
                                           'zip = { mask = true, length = 5 }\nage = { file = "age.csv" }\n')
    return folder / "warehouse.toml"
