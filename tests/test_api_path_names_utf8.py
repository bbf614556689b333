"""Every path the Python API (and a spec's ``${VAR}``) takes to write or to spill, named with a byte
that is no UTF-8 (``x\\xff…``, a Latin-1 name: Python holds the byte as a lone surrogate). The command
line refused each of its path options before anything was read (the hundredth round,
``cli.common.refuse_undecodable_paths``), but through the API a release's report was written at such a
name (``write_parquet(path, report=…)``, ``write``, a Parquet folder's, a DuckDB table's, a spec's
``[output] report``), so were ``write_sql``'s query and report and ``write_html``'s page, each told as
``x\\udcff…``; ``DuckDBEngine(temp_directory=…)`` and a spec's ``[engine] temp_directory`` (from the API
or the command) failed in DuckDB as ``std::bad_cast`` (a RuntimeError; exit 1, a bug);
``verify_against_report`` read a report at such a name (and passed), and told a release at one as "the
source", after reading the report. Each is now refused where it is taken, as the command's option is:
``InputError`` (``SpecError`` for the spec's), the name by its bytes, nothing written.

Oracles: the messages spelled out by hand (the name by its bytes, ``\\xff``), and the folder's
listing before and after."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from table3_project import invoke, table3_project
from warehouse_steps import TWO_COLUMN_SPEC

import sqlclose
from sqlclose.engine import DuckDBEngine

WRITTEN = "sqlclose names the files it writes (in messages, in the report) as UTF-8 text"
ENGINE = "the engine takes a path as UTF-8 text"
GIVE = "give a path named in UTF-8"
READ = "sqlclose names the files it reads (in messages, in the report) as UTF-8 text"
RENAME = "rename it (or the folder holding it) in UTF-8"
FOLDER = "give a folder named in UTF-8"
NOT_UTF8 = "its name is not UTF-8 (a byte of another encoding is shown as \\xNN), and {why}: {fix}"
REPORT = ("cannot write the report", WRITTEN, GIVE)
OUTPUT = ("cannot write the output path", ENGINE, GIVE)
SPILL = ("cannot spill to the temporary folder", ENGINE, FOLDER)


def _latin1(name: str) -> str:
    """The file name whose bytes are ``name`` in Latin-1 (``x\\xff.json``: the byte 0xff, no UTF-8)."""
    return os.fsdecode(name.encode("latin-1"))


def _release(d: Path, **engine: object) -> sqlclose.Release:
    return sqlclose.anonymize(d / "table3.csv", d / "spec.toml", **engine)


def _written(d: Path, call: Callable[[sqlclose.Release, Path], object]) -> Callable[[Path], object]:
    def run(bad: Path) -> object:
        with _release(d) as made:
            return call(made, bad)
    return run


def _warehouse(d: Path, call: Callable[[object, Path], object]) -> Callable[[Path], object]:
    """The warehouse path's release (``anonymize_histogram``) over a histogram of four rows."""
    spec = d / "w.toml"
    spec.write_text(TWO_COLUMN_SPEC)
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT * FROM (VALUES ('a', 'x'), ('a', 'y'), ('b', 'x'), ('b', 'y')) "
                "AS t(g, s)")
    con.execute(f"COPY ({sqlclose.histogram_sql(spec, 'duckdb')}) TO '{d / 'h.parquet'}' (FORMAT PARQUET)")
    con.close()

    def run(bad: Path) -> object:
        with sqlclose.anonymize_histogram(d / "h.parquet", spec, dialect="duckdb") as made:
            return call(made, bad)
    return run


def _page(d: Path) -> Callable[[Path], object]:
    from sqlclose.audit.html import write_html

    first = invoke("anonymize", d / "spec.toml", "-o", d / "r.parquet", "-q")
    assert first.exit_code == 0, first.output
    return lambda bad: write_html(d / "r.parquet.report.json", bad, d / "spec.toml", d / "r.parquet")


def _copied(name: str, bad_name: str, pair: Callable[[Path, Path], tuple[Path, Path]]) -> Callable:
    """``verify_against_report`` on a release and its report, the file ``name`` of the two copied to
    ``bad_name``: it was read (and the release passed), its name told as a lone surrogate."""
    from sqlclose.against_report import verify_against_report

    def make(d: Path) -> Callable[[Path], object]:
        _page(d)  # the release and its report
        (d / _latin1(bad_name)).write_bytes((d / name).read_bytes())
        return lambda bad: verify_against_report(*pair(d, bad))
    return make


def _spec_with(d: Path, section: str) -> Path:
    """The project's spec with ``section`` added, naming ``${BAD}`` (the environment's bad name)."""
    spec = d / "s2.toml"
    spec.write_text((d / "spec.toml").read_text() + section)
    return spec


def _spec_temp_directory(d: Path) -> Callable[[Path], object]:
    spec = _spec_with(d, '\n[engine]\ntemp_directory = "${BAD}"\n')

    def run(bad: Path) -> object:
        os.environ["BAD"] = str(bad)
        try:
            return sqlclose.anonymize(d / "table3.csv", spec)
        finally:
            del os.environ["BAD"]
    return run


def _invoked(spec: Path, *args: str) -> Callable[[Path], object]:
    """The command on a spec naming ``${BAD}``: its refusal (exit 2) raised as the API's error, told alike."""
    def run(bad: Path) -> object:
        result = invoke("anonymize", spec, *args, "-q", env={"BAD": str(bad)})
        if result.exit_code == 2:
            raise sqlclose.InputError(result.output)
        return result
    return run


def _command_temp_directory(d: Path) -> Callable[[Path], object]:
    """The spec's [engine] temp_directory from ``${BAD}``: ``--temp-directory`` was refused, DuckDB failed on it."""
    return _invoked(_spec_with(d, '\n[engine]\ntemp_directory = "${BAD}"\n'), "-o", str(d / "o.parquet"))


def _command_output_report(d: Path) -> Callable[[Path], object]:
    """The spec's [output] report from ``${BAD}``: ``--report`` was refused, the spec's was written."""
    text = (d / "spec.toml").read_text()
    assert "[output]\n" in text
    (d / "s2.toml").write_text(text.replace("[output]\n", '[output]\nreport = "${BAD}"\n'))
    return _invoked(d / "s2.toml")


# case: (how to run it, given the folder, the bad name's text, and what the refusal says: (told, why, fix)).
CASES: dict[str, tuple[Callable[[Path], Callable[[Path], object]], str, tuple[str, str, str]]] = {
    "write_parquet report": (lambda d: _written(d, lambda r, bad: r.write_parquet(d / "o.parquet", report=bad)),
                             "r\xff.json", REPORT),
    "write csv report": (lambda d: _written(d, lambda r, bad: r.write(d / "o.csv", report=bad)), "r\xff.json",
                         REPORT),
    "write duckdb table report": (lambda d: _written(d, lambda r, bad: r.write(d / "o.duckdb", report=bad,
                                                                                table="t")), "r\xff.json", REPORT),
    "write_parquet_folder report": (lambda d: _written(d, lambda r, bad: r.write_parquet_folder(d / "o",
                                                                                                report=bad)),
                                    "r\xff.json", REPORT),
    "write_sql path": (lambda d: _warehouse(d, lambda r, bad: r.write_sql(bad)), "q\xff.sql", OUTPUT),
    "write_sql report": (lambda d: _warehouse(d, lambda r, bad: r.write_sql(d / "q.sql", report=bad)),
                         "r\xff.json", REPORT),
    "write_html page": (_page, "p\xff.html", ("cannot write the page", WRITTEN, GIVE)),
    "verify_against_report report": (
        _copied("r.parquet.report.json", "r\xff.json", lambda d, bad: (d / "r.parquet", bad)), "r\xff.json",
        ("cannot read the report", READ, RENAME)),
    "verify_against_report release": (
        _copied("r.parquet", "x\xff.parquet", lambda d, bad: (bad, d / "r.parquet.report.json")), "x\xff.parquet",
        ("cannot read the release", ENGINE, RENAME)),
    "DuckDBEngine temp_directory": (lambda d: lambda bad: _release(d, engine=DuckDBEngine(temp_directory=bad)),
                                    "spill\xff", SPILL),
    "spec [engine] temp_directory": (_spec_temp_directory, "spill\xff", SPILL),
    "command, spec [engine] temp_directory": (_command_temp_directory, "spill\xff", SPILL),
    "command, spec [output] report": (_command_output_report, "r\xff.json", REPORT),
}


def _listing(folder: Path) -> list[bytes]:
    return sorted(os.fsencode(p) for p in folder.rglob("*"))


@pytest.mark.parametrize("case", CASES)
def test_a_path_named_not_in_utf8_is_refused_where_the_api_takes_it(tmp_path, case):
    make, name, (told, why, fix) = CASES[case]
    d = table3_project(tmp_path)
    run = make(d)
    bad = d / _latin1(name)
    before = _listing(d)
    with pytest.raises(sqlclose.InputError) as refused:
        run(bad)
    shown = f"{d}/{name.replace(chr(0xff), chr(92) + 'xff')}"  # the byte spelled \xff, by hand
    assert f"{told} {shown}: {NOT_UTF8.format(why=why, fix=fix)}" in str(refused.value), str(refused.value)
    assert "\\udc" not in str(refused.value)
    assert _listing(d) == before  # nothing written: no report, release, page or spill folder
