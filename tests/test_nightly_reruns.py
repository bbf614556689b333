"""What a nightly release job re-runs (review h2 of the eighty-sixth round): a re-run is "up to
date" only when the release would be the same, and a killed sweep leaves nothing behind.

The oracles are the inputs as the tests change them: a hierarchy file edited while a run reads it,
the code's build named in the report, a column's type; and the files left in a sweep's folder.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from table3_project import invoke, table3_project

import sqlclose.api

ENV = {"SQLCLOSE_FINGERPRINT_KEY": "k3y"}


def test_a_hierarchy_edited_while_a_run_reads_it_is_not_up_to_date_afterwards(tmp_path, monkeypatch):
    """The run parses, hashes into its spec digest and names in its report the bytes it read on
    its start: the edit made after that (here just before the hierarchies are parsed) is not in
    the release, and the next run, which sees the edited file, redoes it. Before, the report hashed
    the edited file while the release held the old labels, and every later run was "up to date"."""
    project = table3_project(tmp_path)
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace("overwrite = false", "overwrite = true"))
    ages = project / "age.csv"
    original = sqlclose.api.prepare

    def edited_meanwhile(*args, **kwargs):
        ages.write_text(ages.read_text().replace("<40", "under 40"))
        return original(*args, **kwargs)

    monkeypatch.setattr(sqlclose.api, "prepare", edited_meanwhile)
    assert invoke("anonymize", spec, "-q", env=ENV).exit_code == 0
    monkeypatch.setattr(sqlclose.api, "prepare", original)
    release = project / "out" / "release.parquet"

    def ages_released() -> set[str]:
        return {age for (age,) in duckdb.sql(f"SELECT DISTINCT age FROM '{release}'").fetchall()}

    assert "<40" in ages_released()  # the bytes read on the run's start
    result = invoke("anonymize", spec, env=ENV)
    assert result.exit_code == 0 and "up to date" not in result.output, result.output
    assert "under 40" in ages_released() and "<40" not in ages_released()
    assert "up to date" in invoke("anonymize", spec, env=ENV).output  # and now it is


def test_a_report_of_another_build_is_not_up_to_date(tmp_path):
    """The version stayed 0.1.0 over every commit, so a fix of what a release holds never reached
    a release made before it. The report names the build (the sha256 of the package's sources)."""
    project = table3_project(tmp_path)
    assert invoke("anonymize", project / "spec.toml", "-q", env=ENV).exit_code == 0
    report = project / "out" / "release.parquet.report.json"
    assert "up to date" in invoke("anonymize", project / "spec.toml", env=ENV).output
    doc = json.loads(report.read_text())
    doc["sqlclose_build"] = "0" * 64  # what an earlier sqlclose of the same version recorded
    report.write_text(json.dumps(doc))
    result = invoke("anonymize", project / "spec.toml", env=ENV)
    assert result.exit_code == 2 and "already exists" in result.output, result.output  # redone: not overwritten


def test_a_column_retyped_in_the_input_is_not_up_to_date(tmp_path):
    """A row's text is alike for 39 and '39': the input's fingerprint now keys its columns' types too."""
    def write(kind: pa.DataType) -> None:
        pq.write_table(pa.table({"age": pa.array(list(range(20, 60)) * 3, pa.int64()),
                                 "note": pa.array([str(i % 7) for i in range(120)]).cast(kind),
                                 "s": ["x", "y", "z"] * 40}), tmp_path / "in.parquet")

    (tmp_path / "s.toml").write_text('others = "keep"\n[source]\npath = "in.parquet"\n[output]\n'
                                     'path = "out/r.parquet"\noverwrite = true\n[privacy]\nk = 3\n'
                                     '[quasi_identifiers]\nage = { bands = [10, 20] }\n[sensitive.s]\nt = 1.0\n')
    write(pa.int64())
    assert invoke("anonymize", tmp_path / "s.toml", "-q", env=ENV).exit_code == 0
    assert "up to date" in invoke("anonymize", tmp_path / "s.toml", env=ENV).output
    write(pa.string())
    result = invoke("anonymize", tmp_path / "s.toml", env=ENV)
    assert result.exit_code == 0 and "up to date" not in result.output, result.output
    assert pq.read_schema(tmp_path / "out" / "r.parquet").field("note").type == pa.string()


def _staging(out: Path, name: str, *files: str) -> Path:
    """A sweep's staging folder as a killed sweep leaves it: its lock file, no longer held."""
    folder = out / name
    folder.mkdir(parents=True)
    (folder / ".lock").touch()
    for made in files:
        (folder / made).parent.mkdir(parents=True, exist_ok=True)
        (folder / made).write_text(f"{made} of {name}\n")
    return folder


def test_a_killed_sweeps_staging_folder_is_settled_by_the_next_sweep(tmp_path):
    """A sweep killed (SIGKILL) while it computed left OUT/.sweep-… with its partial figures for
    good. The next sweep into OUT removes it; one killed during its swap is finished instead (its
    files moved in: it had written them all). A folder whose lock is held — a sweep running, maybe
    in another container with the same pid (review h3 of the eighty-sixth round) — and one without
    a lock (not a sweep's) are left alone."""
    from sqlclose.cli.sweep import _settle_dead_sweeps

    project = table3_project(tmp_path)
    out = tmp_path / "sweep"
    partial = _staging(out, ".sweep-1-abc", "sweep.csv")
    live = _staging(out, ".sweep-1-def", "sweep.csv")
    notes = out / ".sweep-notes"
    notes.mkdir()
    (notes / "keep.txt").write_text("mine\n")
    with (live / ".lock").open("r+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = invoke("sweep", project / "spec.toml", "--k", "2,3", "--out", out, "--no-progress")
        assert result.exit_code == 0, result.output
        assert not partial.exists() and (live / "sweep.csv").exists() and (notes / "keep.txt").exists()
    swapping = _staging(tmp_path / "other", ".sweep-2-abc", "earlier/sweep.csv", "nauc.csv", "sweep.csv")
    _settle_dead_sweeps(swapping.parent)
    assert not swapping.exists()
    assert sorted(p.name for p in swapping.parent.iterdir()) == ["nauc.csv", "sweep.csv"]
    assert (swapping.parent / "sweep.csv").read_text() == "sweep.csv of .sweep-2-abc\n"


def test_a_path_holding_a_line_break_is_told_on_one_line(tmp_path):
    """A log parser reads a failure as one line: a path's line break is shown as \\n, even one
    followed by what a spec's list of problems starts its lines with (review h3)."""
    from forked_cli import run_cli

    folder = tmp_path / "nl\n  - dir"
    folder.mkdir()
    table3_project(folder)
    (folder / "table3.csv").unlink()
    result = run_cli(["anonymize", folder / "spec.toml", "--no-progress"])
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "nl\\n  - dir" in result.stderr and "does not exist" in result.stderr


def test_the_build_is_its_sources_and_passes_over_an_editors_lock_link(tmp_path):
    """Review h3 of the eighty-sixth round: a dangling `.#release.py` link (Emacs' lock while a file
    is edited) ended the run after its search (exit 5). The oracle: hashlib over the one source."""
    import hashlib

    from sqlclose._version import build, sources_digest

    (tmp_path / "release.py").write_text("x = 1\n")
    (tmp_path / ".#release.py").symlink_to(tmp_path / "gone")
    expected = hashlib.sha256(b"release.py\0" + hashlib.sha256(b"x = 1\n").digest()).hexdigest()
    assert sources_digest(tmp_path) == expected
    (tmp_path / "release.py").write_text("x = 2\n")
    assert sources_digest(tmp_path) != expected
    assert len(build()) == 64


def test_a_folder_made_read_only_while_placing_is_named_not_the_runs_temporary(tmp_path):
    """Review h2 of the eighty-sixth round: an output folder made read-only mid-run was told by the
    run's hidden temporary file (`permission denied (…/.release.parquet.sqlclose-…tmp)`), a name the
    reader cannot act on, and nothing said it would be removed. Oracle: the folder and the output's
    name, and a file of the user's still named as it is."""
    import errno

    from sqlclose.errors import EnvironmentFailure

    own = tmp_path / ".release.parquet.sqlclose-22616-7bfcc83bbad2.tmp"
    told = str(EnvironmentFailure.from_os_error(PermissionError(errno.EACCES, "Permission denied", str(own))))
    assert told == (f"the environment refused: permission denied in {tmp_path}, on this run's temporary file for "
                    "release.parquet there (one left behind is removed by the next run); nothing was placed at the "
                    "output path")
    theirs = tmp_path / ".notes.tmp"
    told = str(EnvironmentFailure.from_os_error(PermissionError(errno.EACCES, "Permission denied", str(theirs))))
    assert f"permission denied ({theirs})" in told


def test_a_folder_release_holding_a_link_added_since_is_not_up_to_date(tmp_path):
    """A link put into a folder release after its run: the folder's digest lists no link, so the
    next run found the release "up to date" and left it, while every reader of the folder (pyarrow,
    Spark) follows the link to rows no run vouched for (`check --against` calls the
    folder not the release). The run now redoes it, and the folder it places holds no link."""
    project = table3_project(tmp_path)
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace("overwrite = false", "overwrite = true"))
    folder = project / "out" / "rel"
    args = ("anonymize", spec, "--output", folder, "--format", "parquet-folder")
    assert invoke(*args, "-q", env=ENV).exit_code == 0
    assert "up to date" in invoke(*args, env=ENV).output

    def rows() -> int:
        return ds.dataset(folder, format="parquet").count_rows()  # pyarrow's listing follows links

    released = rows()
    assert released == 9  # Table 3's nine people
    planted = tmp_path / "planted"
    planted.mkdir()
    part = next(folder.rglob("*.parquet"))
    pq.write_table(pq.read_table(part).slice(0, 1), planted / "one.parquet")  # a class of one, behind a link
    (folder / "more").symlink_to(planted, target_is_directory=True)
    assert rows() == released + 1  # what the folder's readers now take
    result = invoke(*args, env=ENV)
    assert result.exit_code == 0 and "up to date" not in result.output, result.output
    assert not any(p.is_symlink() for p in folder.rglob("*")) and rows() == released


@pytest.mark.slow  # a million rows: the fast subset leaves these out (README)
def test_an_unchanged_million_row_input_is_up_to_date_and_one_float_signed_otherwise_is_not(tmp_path):
    """The nightly re-run recomputes the input's keyed fingerprint, now typed (ninety-eighth round:
    0.3 s a million rows where each row's text cost 4.3 s). Oracle: the input as written here, the
    same, then with one row's 0.0 written -0.0 (a value equal to the old, its sign alone changed)."""
    def write(sign: str) -> None:
        duckdb.sql(f"COPY (SELECT i % 90 AS age, (i % 7)::VARCHAR AS s, CASE WHEN i = 123456 THEN '{sign}0.0'::DOUBLE "
                   f"ELSE i / 3 END AS x FROM range(1000000) r(i)) TO '{tmp_path / 'in.parquet'}' (FORMAT parquet)")

    (tmp_path / "s.toml").write_text('others = "keep"\n[source]\npath = "in.parquet"\n[output]\n'
                                     'path = "out/r.parquet"\noverwrite = true\n[privacy]\nk = 3\n'
                                     '[quasi_identifiers]\nage = { bands = [10, 30] }\n[sensitive.s]\nt = 1.0\n')
    write("")
    assert invoke("anonymize", tmp_path / "s.toml", "-q", env=ENV).exit_code == 0
    assert "up to date" in invoke("anonymize", tmp_path / "s.toml", env=ENV).output
    write("-")
    result = invoke("anonymize", tmp_path / "s.toml", env=ENV)
    assert result.exit_code == 0 and "up to date" not in result.output, result.output
