"""``sqlclose demo --folder``: the folder it writes is the folder it reads, checked before anything is
written, and left as it was when the run fails or is stopped (review of the demo and hierarchy
commands, defects 1, 3, 4 and 11)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from forked_cli import run_cli
from table3_project import TABLE3, invoke

from sqlclose.release.checkpoints import PAUSE_VARIABLE


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_quoted_home_folder_is_expanded_once_for_the_copy_and_the_release(tmp_path):
    """`demo --folder '~/x'` copied the files into ./~/x and loaded the spec from $HOME/x (load_spec
    expands ~): another folder's table was released. Oracle: the files are in $HOME/x, the release
    there holds Table 3's 9 rows, and the working folder holds nothing."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    result = run_cli(["demo", "--folder", "~/x"], cwd=work, env={**os.environ, "HOME": str(home)}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert list(work.iterdir()) == []
    release = home / "x" / "out" / "release.parquet"
    assert duckdb.sql(f"SELECT COUNT(*) FROM '{release}'").fetchall() == [(9,)]
    assert result.stdout.startswith(f"demo in {home / 'x'}:\n")


def test_a_quoted_home_folder_holding_a_release_is_refused_without_overwrite(tmp_path):
    """The other half of the defect: $HOME/x/out/release.parquet was replaced without --overwrite,
    the refusal having looked at ./~/x."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "x" / "out").mkdir(parents=True)
    work.mkdir()
    (home / "x" / "out" / "release.parquet").write_text("mine\n")
    result = run_cli(["demo", "--folder", "~/x"], cwd=work, env={**os.environ, "HOME": str(home)}, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (f"sqlclose: error: {home / 'x'} already holds out/release.parquet, which the demo "
                             "would replace: give another (or an empty) --folder, or pass --overwrite to replace "
                             "them\n")
    assert (home / "x" / "out" / "release.parquet").read_text() == "mine\n"
    assert list(work.iterdir()) == []


def test_the_input_rows_said_are_the_tables(tmp_path, monkeypatch):
    """The input line said '9 rows' whatever the table held. Oracle: a shipped table of 6 rows (Table
    3's first six, written here) is said to hold 6."""
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    for name in ("age.csv", "disease.csv", "table3.toml"):
        (shipped / name).write_bytes((TABLE3 / name).read_bytes())
    lines = (TABLE3 / "table3.csv").read_text().splitlines()
    (shipped / "table3.csv").write_text("\n".join(lines[:7]) + "\n")
    monkeypatch.setattr("sqlclose.cli.demo._shipped", lambda: shipped)
    result = invoke("demo", "--folder", tmp_path / "d")
    assert result.exit_code == 0, result.output
    assert f"  input      {tmp_path / 'd' / 'table3.csv'} (6 rows: zip, age, salary, disease)\n" in result.output


def test_a_failed_run_leaves_no_file_behind_and_the_next_run_succeeds(tmp_path):
    """A run whose output folder could not be made (a file named out) left the four input files, and
    the next run refused them ('already holds table3.csv, …'). Oracle: the folder as it was."""
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "out").write_text("a file")
    result = invoke("demo", "--folder", folder)
    assert result.exit_code == 5, result.output
    assert _files(folder) == ["out"]
    (folder / "out").unlink()
    assert invoke("demo", "--folder", folder).exit_code == 0


def test_a_run_stopped_by_sigterm_leaves_no_file_behind(tmp_path):
    """SIGTERM during the search left the copied input files (and the folder) behind. The run is
    held at the search by the documented test hook, then stopped: exit 143, neither the folder nor
    its parent, both made by the run, are left."""
    folder, ready = tmp_path / "d" / "e", tmp_path / "ready"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SQLCLOSE_")}
    proc = subprocess.Popen([sys.executable, "-m", "sqlclose.cli", "demo", "--folder", str(folder)],
                            env={**environ, PAUSE_VARIABLE: f"search:{ready}"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert (folder / "table3.csv").is_file()  # the copy was made: the signal lands after it
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert _files(tmp_path) == ["ready"]  # nor the folders made for it


def test_a_dangling_link_in_the_folder_is_not_written_through(tmp_path):
    """`ln -s /outside/victim d/table3.toml; demo --folder d` created the link's target outside the
    folder (`.exists()` is False for a dangling link)."""
    folder, victim = tmp_path / "d", tmp_path / "victim"
    folder.mkdir()
    (folder / "table3.toml").symlink_to(victim)
    result = invoke("demo", "--folder", folder)
    assert result.exit_code == 2, result.output
    assert result.output == (f"sqlclose: error: {folder} holds table3.toml as a symbolic link, which the demo would "
                             "write through: remove the link, or give another (or an empty) --folder\n")
    assert not os.path.lexists(victim) and _files(folder) == ["table3.toml"]


@pytest.mark.parametrize("link", ["age.csv", "out"])
def test_overwrite_does_not_write_through_a_link(tmp_path, link):
    """With --overwrite a link d/age.csv -> victim overwrote victim."""
    folder, victim = tmp_path / "d", tmp_path / "victim"
    folder.mkdir()
    victim.mkdir() if link == "out" else victim.write_text("mine\n")
    (folder / link).symlink_to(victim)
    result = invoke("demo", "--folder", folder, "--overwrite")
    assert result.exit_code == 2 and f"holds {link} as a symbolic link" in result.output, result.output
    assert list(victim.iterdir()) == [] if link == "out" else victim.read_text() == "mine\n"


def test_the_next_line_and_the_specs_run_line_fit_the_folder(tmp_path):
    """The next: line did not quote its paths (a folder with a space or a quote broke it), and the
    copied spec said 'Run from the repository root: sqlclose anonymize datasets/table3/table3.toml'.
    Oracle: a shell's split of each command gives back the paths."""
    folder = tmp_path / "it's a demo"
    result = invoke("demo", "--folder", folder)
    assert result.exit_code == 0, result.output
    spec, release = str(folder / "table3.toml"), str(folder / "out" / "release.parquet")
    explain, check = result.output.splitlines()[-1].removeprefix("next: ").split("   |   ")
    assert shlex.split(explain) == ["sqlclose", "explain", spec]
    assert shlex.split(check) == ["sqlclose", "check", release, "--spec", spec]
    run_line = (folder / "table3.toml").read_text().splitlines()[1]
    assert shlex.split(run_line.removeprefix("# Run:")) == ["sqlclose", "anonymize", spec]


def test_a_failed_run_without_a_folder_removes_the_temporary_folder_it_made(tmp_path, monkeypatch):
    """Polish round, item 5: `sqlclose demo` without --folder made a temporary folder, and a run
    that failed left it behind, empty. Oracle: the temporary directory as it was, empty."""
    import tempfile

    from sqlclose.errors import InputError

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))

    def fails(*args, **kwargs):
        raise InputError("the release failed")

    monkeypatch.setattr("sqlclose.api.anonymize", fails)
    result = invoke("demo")
    assert result.exit_code == 2, result.output
    assert "the release failed" in result.output
    assert _files(temporary) == []


def test_a_failed_overwrite_puts_back_the_files_it_replaced(tmp_path, monkeypatch):
    """`demo --folder d --overwrite` copied Table 3 over d's own table3.csv and table3.toml before
    the release, and a release that failed left the copies: the user's files were lost to a run that
    wrote nothing. Oracle: the folder byte for byte as it was (no file set aside left either), and a
    run that succeeds does replace them."""
    from sqlclose.errors import InputError

    folder = tmp_path / "d"
    (folder / "out").mkdir(parents=True)
    mine = {"table3.csv": "a,b\n1,2\n", "table3.toml": "# my spec\n", "out/release.parquet": "my release\n"}
    for name, text in mine.items():
        (folder / name).write_text(text)

    def fails(*args, **kwargs):
        assert (folder / "table3.csv").read_bytes() == (TABLE3 / "table3.csv").read_bytes()  # the copy was made
        raise InputError("the release failed")

    with monkeypatch.context() as patch:
        patch.setattr("sqlclose.api.anonymize", fails)
        result = invoke("demo", "--folder", folder, "--overwrite")
    assert result.exit_code == 2 and "the release failed" in result.output, result.output
    assert _files(folder) == ["out", "out/release.parquet", "table3.csv", "table3.toml"]
    assert {name: (folder / name).read_text() for name in mine} == mine
    assert invoke("demo", "--folder", folder, "--overwrite").exit_code == 0
    assert (folder / "table3.csv").read_bytes() == (TABLE3 / "table3.csv").read_bytes()
    assert duckdb.sql(f"SELECT COUNT(*) FROM '{folder / 'out' / 'release.parquet'}'").fetchall() == [(9,)]
    assert not [p for p in folder.rglob(".*")]


def _shipped_copy(tmp_path: Path, monkeypatch) -> Path:
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    for name in ("table3.csv", "age.csv", "disease.csv", "table3.toml"):
        (shipped / name).write_bytes((TABLE3 / name).read_bytes())
        (shipped / name).chmod(0o644)
    monkeypatch.setattr("sqlclose.cli.demo._shipped", lambda: shipped)
    return shipped


@pytest.mark.parametrize("how", ["itself", "link", "dot-dot"])
def test_the_folder_the_demo_copies_from_is_refused_even_with_overwrite(tmp_path, monkeypatch, how):
    """Ninety-fourth round: `demo --folder datasets/table3 --overwrite` on an editable install
    rewrote the shipped table3.toml (its output path, its run line), made the shipped files 0600 and
    added out/ there. Oracle: exit 2 naming the folder, the shipped folder byte for byte and mode for
    mode as it was, whether it is named as it is, through a link, or through `..`."""
    shipped = _shipped_copy(tmp_path, monkeypatch)
    before = {p.name: (p.read_bytes(), p.stat().st_mode) for p in shipped.iterdir()}
    if how == "link":
        folder = tmp_path / "link"
        folder.symlink_to(shipped)
    else:
        folder = shipped if how == "itself" else tmp_path / "other" / ".." / "shipped"
        (tmp_path / "other").mkdir()
    result = invoke("demo", "--folder", folder, "--overwrite")
    assert result.exit_code == 2, result.output
    assert result.output == (f"sqlclose: error: {folder} is the folder the demo copies its files from (the data "
                             "shipped with sqlclose), which it never writes to: choose another --folder\n")
    assert {p.name: (p.read_bytes(), p.stat().st_mode) for p in shipped.iterdir()} == before


@pytest.mark.parametrize("char, shown", [("\n", "\\n"), ("\r", "\\r"), ("\x1b", "\\x1b")])
def test_a_folder_named_with_a_control_character_gets_a_spec_that_reads(tmp_path, char, shown):
    """Ninety-fourth round: the folder is written into a comment of the copied spec (its run line),
    and a line break or CR in its name broke the comment: the run failed as 'not valid TOML',
    blaming the demo's own spec. Oracle: the demo succeeds, and the run line shows the character
    escaped on one line."""
    folder = tmp_path / f"we{char}ird"
    result = invoke("demo", "--folder", folder)
    assert result.exit_code == 0, result.output
    assert duckdb.sql(f"SELECT COUNT(*) FROM '{folder / 'out' / 'release.parquet'}'").fetchall() == [(9,)]
    lines = (folder / "table3.toml").read_text().split("\n")
    assert lines[1] == f"# Run:  sqlclose anonymize '{tmp_path}/we{shown}ird/table3.toml'"
