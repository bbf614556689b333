"""A report given as a hard link of the release's own report beside it (one file, two names): the
report is renamed over the name given, and the one beside the release kept the old report, vouching
for a file no longer there. ``refuse_stale_default_report`` took the two names for one file (``same``
compares inodes) and let the run through. Oracles: the files' bytes and sha256 against the report's
``output.sha256``, as hashlib reads them, and the exit code."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from forked_cli import run_cli

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"


def _spec(tmp_path: Path) -> Path:
    for name in ("table3.csv", "age.csv", "disease.csv", "table3.toml"):
        shutil.copy(TABLE3 / name, tmp_path / name)
    return tmp_path / "table3.toml"


def test_a_report_given_as_a_hard_link_of_the_one_beside_the_release_is_refused(tmp_path):
    spec = _spec(tmp_path)
    out = tmp_path / "x.parquet"
    first = run_cli(["anonymize", str(spec), "-o", str(out), "--no-progress"], cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    own = tmp_path / "x.parquet.report.json"
    other = tmp_path / "other.json"
    os.link(own, other)
    before = own.read_bytes()
    again = run_cli(["anonymize", str(spec), "-o", str(out), "--report", str(other), "--overwrite", "--no-progress"],
                    cwd=tmp_path)
    assert again.returncode == 2, again.stderr
    assert str(own) in again.stderr and "--report" in again.stderr
    assert own.read_bytes() == before  # nothing placed
    assert json.loads(before)["output"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
