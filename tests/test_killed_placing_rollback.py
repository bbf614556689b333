"""A run killed (SIGKILL: the OOM killer, a container stopped) while placing its pair — the old
release set aside, the new one not yet placed — is rolled back by the next run naming the same
output, whatever stops that one (rv11 #5). The recovery ran only once a run reached its write
(``placing.Transaction``), so a next run that stopped early (bad input, exit 2; no solution, exit 3)
left the output path with the old report and no release; a nightly job whose next night failed
kept publishing a report whose release was missing. README: "a killed run is rolled back by the
next". Now every run settles a dead run's move before its search, for every output kind.

The kill lands deterministically: ``os.replace`` is wrapped in the killed run so that the process
SIGKILLs itself right after its first rename of a sqlclose hidden name (the old release set aside),
its mark of life's aside (``recovery.running``).
The oracle: the sha256 of every file of the output folder (a folder release's files too) taken
before the killed run, compared after the next run; and the folder listing (no hidden file left).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from table3_project import table3_project

pytestmark = pytest.mark.slow  # three subprocess runs a case, as the signal tests

KILLED_AFTER_SETTING_ASIDE = """
import os, runpy, signal, sys
real = os.replace
def replace(src, dst, **kw):
    real(src, dst, **kw)
    if ".sqlclose-" in str(src) + str(dst) and not str(dst).endswith(".live"):  # not the run's mark of life
        os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
sys.argv = ["sqlclose"] + sys.argv[1:]
runpy.run_module("sqlclose.cli", run_name="__main__")
"""
OUTPUTS = {"parquet": ["-o", "out/r.parquet"], "csv": ["-o", "out/r.csv"], "parquet-folder": ["-o", "out/r"],
           "duckdb": ["-o", "out/r.duckdb", "--output-table", "people"]}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SQLCLOSE_")}


def _sqlclose(folder: Path, *args: str, killed: bool = False) -> subprocess.CompletedProcess:
    command = ["-c", KILLED_AFTER_SETTING_ASIDE] if killed else ["-m", "sqlclose.cli"]
    return subprocess.run([sys.executable, *command, "anonymize", *args, "--no-progress", "-q"], cwd=folder,
                          env=_env(), capture_output=True, text=True, timeout=300)


def _digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def work(tmp_path) -> Path:
    d = table3_project(tmp_path)
    spec = (d / "spec.toml").read_text()
    (d / "k2.toml").write_text(spec.replace("k = 3", "k = 2"))  # another release: the one killed placing
    (d / "k10.toml").write_text(spec.replace("k = 3", "k = 10"))  # more than Table 3's 9 rows: exit 3
    (d / "nohier.toml").write_text(spec.replace('"age.csv"', '"age_missing.csv"'))  # exit 2, its output known
    return d


@pytest.mark.parametrize("kind, next_spec, next_code, why", [
    *((kind, "k10.toml", 3, "k = 10") for kind in OUTPUTS),
    ("parquet", "nohier.toml", 2, "age_missing.csv"),
    ("duckdb", "nohier.toml", 2, "age_missing.csv"),
    ("parquet", "spec.toml --dry-run", 0, ""),  # a dry run too: it puts back what the dead run set aside
])
def test_a_run_killed_while_placing_is_rolled_back_by_a_next_run_that_stops_early(work, kind, next_spec, next_code,
                                                                                  why):
    output = OUTPUTS[kind]
    first = _sqlclose(work, "spec.toml", *output)
    assert first.returncode == 0, first.stderr
    previous = _digests(work / "out")
    killed = _sqlclose(work, "k2.toml", *output, "--overwrite", killed=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _digests(work / "out") != previous  # the old release set aside: the output path lacks it
    following = _sqlclose(work, *next_spec.split(), *output, "--overwrite")  # as the nightly job runs it
    assert following.returncode == next_code, following.stderr
    assert why in following.stderr
    assert _digests(work / "out") == previous  # the previous pair, byte for byte
    assert sorted(p.name for p in (work / "out").iterdir() if p.name.startswith(".")) == []
