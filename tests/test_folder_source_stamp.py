"""Ninety-seventh round: a folder source is told changed by what its readers take from it, not by its
own modification time. DuckDB spills into ``.tmp`` under the working folder: a run started inside its
Parquet folder source made ``.tmp`` there, the folder's time changed, and the run was refused ("changed
after the release was searched", exit 2) though no file of the table was. And a file added to a
partition folder (``zip=1/``) left the top folder's time alone: the run went on, exit 0.

Oracles: the exit code and message, the file system (nothing placed), a plain SQL count of the source."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import sqlclose.prepare.problem
from sqlclose.cli import main

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
ROWS = f"SELECT zip, age, salary, disease FROM read_csv('{TABLE3 / 'table3.csv'}', types = {{'zip': 'VARCHAR'}})"
SPEC = """others = "keep"
[source]
path = "{source}"
[output]
path = "{out}"
[privacy]
k = 2
[quasi_identifiers]
zip = {{ mask = true, length = 5 }}
age = {{ file = "{age}" }}
"""


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A Parquet folder source of Table 3, in two partition folders, and its spec beside it."""
    source = tmp_path / "people"
    for n, where in enumerate(("salary > 6000", "salary <= 6000")):
        (source / f"part={n}").mkdir(parents=True)
        duckdb.sql(f"COPY ({ROWS} WHERE {where}) TO '{source / f'part={n}' / 'a.parquet'}' (FORMAT parquet)")
    shutil.copy(TABLE3 / "age.csv", tmp_path / "age.csv")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(source=source, out=tmp_path / "out" / "release.parquet", age=tmp_path / "age.csv"))
    return source, spec


def _during_the_run(monkeypatch, change) -> list[bool]:
    """``change`` run as the fingerprint's pass returns (rows read, nothing searched yet)."""
    original, done = sqlclose.prepare.problem.keyed_fingerprint, []

    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        if not done:
            change()
            done.append(True)
        return result

    monkeypatch.setattr(sqlclose.prepare.problem, "keyed_fingerprint", wrapped)
    return done


def _anonymize(spec: Path) -> object:
    return CliRunner().invoke(main, ["anonymize", str(spec), "--no-progress", "-q"])


def test_duckdbs_spill_files_made_inside_the_folder_source_are_no_change(tmp_path, monkeypatch):
    """What DuckDB does when it spills with the folder as its working folder: ``.tmp`` made, a spill file
    in it (and, deeper, a hidden leftover of a job's attempt): none is read, the release is written."""
    monkeypatch.setenv("SQLCLOSE_FINGERPRINT_KEY", "operator-secret")  # the fingerprint is read first
    source, spec = _project(tmp_path)

    def spill() -> None:
        (source / ".tmp").mkdir()
        (source / ".tmp" / "duckdb_temp_storage_DEFAULT-0.tmp").write_bytes(b"\0" * 4096)
        (source / "part=1" / "_temporary").mkdir()

    done = _during_the_run(monkeypatch, spill)
    run = _anonymize(spec)
    assert done
    assert run.exit_code == 0, run.output
    released = tmp_path / "out" / "release.parquet"
    expected = duckdb.sql(f"SELECT count(*) FROM ({ROWS})").fetchall()
    assert duckdb.sql(f"SELECT count(*) FROM '{released}'").fetchall() == expected


def test_a_file_added_to_a_partition_folder_during_the_run_is_refused(tmp_path, monkeypatch):
    """A file added to ``part=1/`` changes the table, and not the top folder's time: the run went on,
    exit 0. Refused now, nothing placed (a file of the table removed or replaced was refused before)."""
    monkeypatch.setenv("SQLCLOSE_FINGERPRINT_KEY", "operator-secret")
    source, spec = _project(tmp_path)

    def upstream() -> None:
        duckdb.sql(f"COPY ({ROWS} LIMIT 2) TO '{source / 'part=1' / 'b.parquet'}' (FORMAT parquet)")

    done = _during_the_run(monkeypatch, upstream)
    run = _anonymize(spec)
    assert done
    assert run.exit_code == 2, run.output
    assert "changed after the release was searched" in run.output
    assert f"({source} was replaced or modified)" in run.output
    assert "run the job again on the source as it is now" in run.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.slow
def test_a_run_spilling_from_inside_its_folder_source_is_written(tmp_path):
    """The same, really: 600,000 rows under a memory limit that makes DuckDB spill, run with the folder
    source as the working folder (DuckDB's default temp directory, ``.tmp``, is made inside it)."""
    source = tmp_path / "src"
    source.mkdir()
    for j in range(2):
        duckdb.sql(f"""COPY (SELECT lpad(CAST(hash(i, 1) % 100000 AS VARCHAR), 5, '0') AS zip,
            lpad(CAST(hash(i, 2) % 1000 AS VARCHAR), 3, '0') AS area,
            CASE WHEN hash(i, 3) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
            'v' || CAST(hash(i, 4) % 6 AS VARCHAR) AS illness FROM range({j * 300_000}, {(j + 1) * 300_000}) AS t(i))
            TO '{source / f'part-{j}.parquet'}' (FORMAT parquet)""")
    (tmp_path / "sex.csv").write_text("F;*\nM;*\n")
    out = tmp_path / "out" / "release.parquet"
    (tmp_path / "spec.toml").write_text(
        f'[source]\npath = "{source}"\n[output]\npath = "{out}"\n[engine]\nmemory_limit = "300MB"\nthreads = 1\n'
        f'[privacy]\nk = 5\nsuppression = 0.0\n[quasi_identifiers]\nzip = {{ mask = true }}\narea = {{ mask = true }}\n'
        f'sex = {{ file = "{tmp_path / "sex.csv"}" }}\n[sensitive]\nillness = {{ t = 0.3, distance = "equal" }}\n')
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run([sys.executable, "-m", "sqlclose.cli", "anonymize", str(tmp_path / "spec.toml"),
                          "--no-progress", "-q"], cwd=source, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert duckdb.sql(f"SELECT count(*) FROM '{out}'").fetchall() == [(600_000,)]
