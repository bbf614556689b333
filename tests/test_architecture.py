"""The layers point downward, and the verifier shares no judging code with the search: both are
import-linter contracts (.importlinter), run here so that CI fails on an upward import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    command = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = subprocess.run([command, "--config", str(REPO / ".importlinter")], cwd=REPO, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "2 kept, 0 broken" in result.stdout


def test_a_newcomer_finds_the_layers_as_folders():
    layers = ["model", "privacy", "utility", "sql", "engine", "prepare", "search", "release", "audit", "cli"]
    for layer in layers:
        assert (REPO / "sqlclose" / layer / "__init__.py").is_file(), layer
    flat = sorted(p.name for p in (REPO / "sqlclose").glob("*.py"))
    # sweep and the re-verification against a report: beside the api, above audit/ and release/ both
    assert flat == ["__init__.py", "_version.py", "against_report.py", "api.py", "errors.py", "sweep.py"]
