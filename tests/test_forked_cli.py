"""tests/forked_cli.py gives what the interpreter gives: the oracle is the same command run by
``subprocess.run`` with a fresh interpreter, compared on exit code, stdout and stderr."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from forked_cli import CONSOLE_SCRIPT, run_cli

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"


def _table3(folder: Path) -> None:
    for name in ("table3.csv", "age.csv", "disease.csv"):
        (folder / name).write_bytes((TABLE3 / name).read_bytes())
    (folder / "spec.toml").write_text((TABLE3 / "table3.toml").read_text(encoding="utf-8"), encoding="utf-8")


def _run_names(text: str) -> str:
    """Internal table names carry a run's own random token (uuid4): the same in both."""
    return re.sub(r"__sqlclose_(\w+?)_[0-9a-f]{8}_", r"__sqlclose_\1_<run>_", text)


def _fresh(args: list[str], cwd: Path, module: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "sqlclose.cli", *args] if module else [CONSOLE_SCRIPT, *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize(("args", "module"), [
    (["--version"], True),
    (["nosuch"], False),                                   # a usage error, named by the console script
    (["anonymize", "missing.toml", "--no-progress"], True),  # a spec that is not there: exit 2
    (["explain", "spec.toml"], True),                      # stdout of a successful command
    (["anonymize", "--help"], False),
])
def test_a_forked_run_says_what_a_fresh_interpreter_says(tmp_path: Path, args: list[str], module: bool) -> None:
    _table3(tmp_path)
    forked, fresh = run_cli(args, cwd=tmp_path, module=module), _fresh(args, tmp_path, module)
    assert (forked.returncode, _run_names(forked.stdout), forked.stderr) == \
        (fresh.returncode, _run_names(fresh.stdout), fresh.stderr)
    assert forked.stdout or forked.stderr  # each case says something


def test_a_file_size_limit_stops_a_write_as_the_kernel_does(tmp_path: Path) -> None:
    """``fsize`` is the child's RLIMIT_FSIZE: the release cannot be written, and the command says so."""
    _table3(tmp_path)
    done = run_cli(["anonymize", "spec.toml", "-o", "r.parquet", "--no-progress"], cwd=tmp_path, fsize=64)
    assert done.returncode != 0 and not (tmp_path / "r.parquet").exists(), done.stderr
    assert done.stderr.startswith("sqlclose: error: ") and done.stderr.endswith("\n")  # stderr whole: a pipe
    assert run_cli(["anonymize", "spec.toml", "-o", "r.parquet", "--no-progress"], cwd=tmp_path).returncode == 0


def test_an_interpreter_setting_of_its_own_is_not_forked() -> None:
    """``PYTHON*``, ``LANG`` and ``LC_*`` are read as the interpreter starts: a run given other values
    than the server started with goes to a fresh interpreter."""
    import os

    import forked_cli
    server = forked_cli._the_server()
    assert server.starts_like(dict(os.environ))
    assert not server.starts_like({**os.environ, "PYTHONWARNINGS": "error"})
    assert not server.starts_like({**os.environ, "LC_ALL": "C"})
    assert server.starts_like({**os.environ, "SQLCLOSE_ADULT_DIR": "/elsewhere"})
