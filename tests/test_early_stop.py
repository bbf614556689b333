"""Ninety-seventh round: a stop in the first part of a run — before the command's handlers were
installed, while the command's modules are imported (~0.5 s: DuckDB, sqlglot, pyarrow, pydantic) —
ended it as Python does: SIGTERM killed the process without a word and without its --json document
(a scheduler read "killed by signal 15", not sqlclose's exit 143), Ctrl-C printed click's "Aborted!",
exit 1. Such a stop is now held from the program's start (``cli.run``) and told by the command's guard
as a later one is: exit 143 (130 for Ctrl-C), the same line and JSON, nothing placed.

The stop lands at an exact point: the process sends it to itself as the command's module starts to be
imported (an import hook), as a scheduler's signal lands there. Oracles: the exit codes and the message
the README and docs/bad-input.md give for a stop before anything is placed; the output folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from table3_project import table3_project

ROOT = Path(__file__).resolve().parents[1]
STOPPED_WHILE_IMPORTING = """
import importlib.abc, os, signal, sys

class StopWhileImporting(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "sqlclose.cli.anonymize":  # the command's module: imported before the command runs
            os.kill(os.getpid(), int(os.environ["STOP_WITH"]))
        return None

sys.meta_path.insert(0, StopWhileImporting())
sys.argv = ["sqlclose", "anonymize", "spec.toml", "--json"]
from sqlclose.cli import run
run()
"""


@pytest.mark.parametrize(("signum", "code", "said"), [(signal.SIGTERM, 143, "stopped by SIGTERM"),
                                                      (signal.SIGINT, 130, "interrupted")])
def test_a_stop_while_the_command_is_imported_is_told_as_a_later_one(tmp_path, signum, code, said):
    project = table3_project(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STOP_WITH": str(int(signum)), "SQLCLOSE_FINGERPRINT_KEY": "k"}
    proc = subprocess.run([sys.executable, "-c", STOPPED_WHILE_IMPORTING], cwd=project, env=env, capture_output=True,
                          text=True, timeout=120)
    message = f"{said}; nothing was placed at the output path"
    assert proc.returncode == code, proc.stderr
    assert proc.stderr == f"sqlclose: error: {message}\n"
    assert json.loads(proc.stdout) == {"error": message, "exit_code": code, "kind": "interrupted"}
    assert not (project / "out").exists()
