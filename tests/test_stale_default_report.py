"""One report per release at a plain output path (``files.refuse_stale_default_report``). A run
``-o x.parquet`` puts its report beside the release, ``x.parquet.report.json``; a later run given
``--report other.json --overwrite`` replaced the release and wrote its report there, leaving the first
report vouching for a file no longer there: ``check x.parquet --against x.parquet.report.json``
failed (exit 4). The hundredth round refused it through a symbolic link; the plain path, a DuckDB
database's table and the Python API's ``write`` are refused alike: exit 2 (``OutputExistsError``),
before the search, nothing written, naming both reports and the ``--report`` that keeps one report
per release. A job that never wrote a report beside the release (its reports always elsewhere) is
not refused.

Oracles: hashlib's sha256 of the release against each report's ``output.sha256``, the folder's
bytes before and after, and ``check --against``'s exit code."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from table3_project import invoke, table3_project

import sqlclose

OTHER_NODE = ("--node", "zip=5,age=3")  # Table 3's top node: a release whose bytes differ from the optimum's


def _vouches(report: Path, data: Path) -> bool:
    return json.loads(report.read_text())["output"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _released(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Table 3 released at ``x.parquet`` with its report beside it: the folder, the release, its report."""
    d = table3_project(tmp_path)
    first = invoke("anonymize", d / "spec.toml", "-o", d / "x.parquet", "-q")
    assert first.exit_code == 0, first.output
    return d, d / "x.parquet", d / "x.parquet.report.json"


def test_a_report_given_elsewhere_refuses_to_leave_the_report_beside_the_release_stale(tmp_path):
    d, release, own = _released(tmp_path)
    other = d / "other.json"
    assert _vouches(own, release)
    before = _files(d)
    args = ("anonymize", d / "spec.toml", *OTHER_NODE, "-o", release, "--report", other, "--overwrite", "-q")
    refused = invoke(*args)
    assert refused.exit_code == 2, refused.output
    assert (f"the report of the release at {release}, {own}, lies beside it: this release's report goes to "
            f"{other}, and that one would be left describing a file no longer there: give this release that "
            f"report path (--report {own}), or remove it") in refused.output, refused.output
    assert _files(d) == before  # nothing written: the release and its one report as they were
    assert invoke("check", release, "--against", own).exit_code == 0
    # As advised: the report beside the release given, it is replaced with the release, and checks.
    given = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", release, "--report", own, "--overwrite", "-q")
    assert given.exit_code == 0, given.output
    assert release.read_bytes() != before["x.parquet"] and _vouches(own, release) and not other.exists()
    # Or removed: the release's one report is then the one given elsewhere, and every later run's too
    # (a job that writes its reports elsewhere is never refused: it made none beside the release).
    own.unlink()
    for node in ((), OTHER_NODE):  # the optimum, then the top node: two releases
        moved = invoke("anonymize", d / "spec.toml", *node, "-o", release, "--report", other, "--overwrite", "-q")
        assert moved.exit_code == 0, moved.output
        assert _vouches(other, release) and not own.exists()
        assert invoke("check", release, "--against", other).exit_code == 0


def test_a_report_given_elsewhere_is_refused_before_the_search(tmp_path, monkeypatch):
    """Before the search (and by a dry run, which runs none): a refusal after it would cost the whole
    search, and the run's objects."""
    d, release, own = _released(tmp_path)
    refused = invoke("anonymize", d / "spec.toml", "-o", release, "--report", d / "other.json", "--overwrite",
                     "--dry-run")
    assert refused.exit_code == 2 and f"--report {own}" in refused.output, refused.output


def test_the_python_api_refuses_it_too(tmp_path):
    d, release, own = _released(tmp_path)
    before = _files(d)
    with sqlclose.anonymize(d / "table3.csv", d / "spec.toml", node={"zip": 5, "age": 3}) as made:
        with pytest.raises(sqlclose.OutputExistsError, match=f"this release's report goes to {d / 'other.json'}"):
            made.write_parquet(release, report=d / "other.json", overwrite=True)
        assert _files(d) == before
        made.write_parquet(release, report=own, overwrite=True)
    assert _vouches(own, release) and release.read_bytes() != before["x.parquet"]


def test_a_duckdb_tables_report_given_elsewhere_is_refused(tmp_path):
    """A table in a database has its report named after both (``db.duckdb.t.report.json``): replaced
    with a report elsewhere, it was left stale as a file's was."""
    d = table3_project(tmp_path)
    db, own = d / "db.duckdb", d / "db.duckdb.t.report.json"
    first = invoke("anonymize", d / "spec.toml", "-o", db, "--output-table", "t", "-q")
    assert first.exit_code == 0, first.output
    before = _files(d)
    refused = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", db, "--output-table", "t", "--report",
                     d / "other.json", "--overwrite", "-q")
    assert refused.exit_code == 2, refused.output
    assert (f"the report of the release at table 't' in {db}, {own}, lies beside it" in refused.output
            and "describing a table no longer there" in refused.output), refused.output
    assert _files(d) == before
