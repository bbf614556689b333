"""Cold start: a whole ``sqlclose anonymize`` run never imports pandas (pyarrow would import it
on ``pa.array``/``pa.table``/``to_numpy``; ~0.3 s of a cold run) nor numpy.ma (``np.unique``
would), nor, over a file, pyarrow.compute (~0.08 s; only an Arrow source's duration check needs
it). Checked honestly: the modules loaded when the process exits, in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from table3_project import table3_project

REPO = Path(__file__).resolve().parents[1]

# Runs the command in-process and records, at exit, whether pandas was ever imported.
RUN = """
import atexit, sys
marker, args, preload = sys.argv[1], sys.argv[2:], {preload!r}
if preload:
    __import__(preload)
watched = ("pandas", "numpy.ma", "pyarrow.compute")
atexit.register(lambda: open(marker, "w").write(" ".join(str(m in sys.modules) for m in watched)))
from sqlclose.cli import main
main(args)
"""


def _run(tmp_path: Path, preload: str = "") -> tuple[subprocess.CompletedProcess, str]:
    project = table3_project(tmp_path)
    marker = tmp_path / "imported.txt"
    proc = subprocess.run([sys.executable, "-c", RUN.format(preload=preload), str(marker), "anonymize",
                           str(project / "spec.toml"), "--quiet"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    return proc, marker.read_text()


def test_anonymize_run_never_imports_pandas(tmp_path):
    proc, imported = _run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the run did release: Table 3's 9 rows, written and verified
    assert pq.read_table(tmp_path / "out" / "release.parquet").num_rows == 9
    assert imported == "False False False"  # neither pandas nor numpy.ma nor pyarrow.compute


def test_the_pandas_check_sees_an_import(tmp_path):
    """The same harness reports the imports when there are (so the check above can fail): pandas
    imports numpy.ma itself."""
    proc, imported = _run(tmp_path, preload="pandas")
    assert proc.returncode == 0, proc.stderr
    assert imported == "True True True"  # pandas imports all three


def test_an_adult_run_never_imports_pandas_nor_numpy_ma(tmp_path, adult_dir):
    """Adult's search rolls lattice levels up in numpy (Table 3's is too small to): that path too
    stays clear of both."""
    marker = tmp_path / "imported.txt"
    proc = subprocess.run([sys.executable, "-c", RUN.format(preload=""), str(marker), "anonymize",
                           str(REPO / "datasets" / "adult" / "adult.toml"), "--output", str(tmp_path / "adult.parquet"),
                           "--quiet"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "SQLCLOSE_ADULT_DIR": str(adult_dir)})
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(tmp_path / "adult.parquet").num_rows == 30162
    assert marker.read_text() == "False False False"


# Runs the command in-process and records, at exit, whether DuckDB or sqlclose's engines were imported.
ENGINES_LOADED = """
import atexit, sys
marker, args = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(marker, "w").write(str(any(m in sys.modules for m in ("duckdb", "sqlclose.engine")))))
from sqlclose.cli import main
main(args)
"""


def test_a_mistake_in_the_spec_is_told_without_loading_the_engines(tmp_path):
    """Each command reading a spec says what is wrong with it before it loads DuckDB and the
    engines (~0.7 s of a process): the exit code and message, and the modules loaded at exit."""
    spec = tmp_path / "bad.toml"
    spec.write_text('[source]\npath = "t.csv"\n[privacy]\nk = 3\n[quasi_identifiers]\nzip = 1\n')
    commands = [["anonymize", str(spec)], ["explain", str(spec)], ["sql", str(spec)],
                ["sweep", str(spec), "--k", "3", "--out", str(tmp_path / "sweep")],
                ["check", str(tmp_path / "t.parquet"), "--spec", str(spec)]]
    for i, command in enumerate(commands):
        marker = tmp_path / f"loaded{i}.txt"
        proc = subprocess.run([sys.executable, "-c", ENGINES_LOADED, str(marker), *command], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 2, (command, proc.stderr)
        assert "quasi_identifiers.zip" in proc.stderr, (command, proc.stderr)
        assert marker.read_text() == "False", f"{command[0]} loaded the engines before reading the spec"
