"""``check FILE --against REPORT`` on a release whose hierarchical sensitive column reads its NULLs
as a stand-in (``nulls = "value"``, ``null_value`` a leaf of the hierarchy). The report did not
record the stand-in, so the model rebuilt from it had none and the file's NULLs were refused as "not
leaves of its hierarchy" (exit 2, "fix the data") for a release anonymize had verified (review rv29
#2, Incognito and GAA alike). The report now records ``privacy.sensitive.<column>.null_value``
(spec text, given whether or not the input held a NULL: it tells nothing of the rows).

The oracles: plain SQL over the written file (it holds the NULLs), the documented exit 0 of a file
that matches its own report (docs/verification.md), and the spec's text for the recorded stand-in.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb
import pytest
from forked_cli import run_cli

ROWS = [("Zurich", "flu"), ("Zurich", ""), ("Zurich", "colitis"), ("Bern", "gastritis"), ("Bern", "flu"),
        ("Bern", ""), ("Geneva", "colitis"), ("Geneva", "flu"), ("Geneva", "gastritis")]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd=cwd)


def _project(folder: Path, algorithm: str, rows: list[tuple[str, str]]) -> Path:
    (folder / "t.csv").write_text("city,disease\n" + "".join(f"{c},{d}\n" for c, d in rows))
    (folder / "city.csv").write_text("Zurich;German;*\nBern;German;*\nGeneva;French;*\n")
    (folder / "dis.csv").write_text("flu;resp;*\ncolitis;dig;*\ngastritis;dig;*\nNONE;other;*\n")
    search = '[search]\nalgorithm = "gaa"\n' if algorithm == "gaa" else ""
    (folder / "s.toml").write_text(f"""
[source]
path = "t.csv"
[output]
path = "out/r.parquet"
[privacy]
k = 3
[quasi_identifiers]
city = {{ file = "city.csv" }}
[sensitive.disease]
distance = "hierarchical"
t = 0.9
hierarchy = "dis.csv"
nulls = "value"
null_value = "NONE"
{search}""")
    made = run("anonymize", "s.toml", "-q", cwd=folder)
    assert made.returncode == 0, made.stderr
    return folder / "out" / "r.parquet"


@pytest.mark.parametrize("algorithm", ["incognito", "gaa"])
def test_check_against_its_own_report_passes_a_sensitive_null_stand_in(tmp_path, algorithm):
    release = _project(tmp_path, algorithm, ROWS)
    nulls = duckdb.connect().execute(f"SELECT count(*) FROM '{release}' WHERE disease IS NULL").fetchone()[0]
    assert nulls == 2  # the two empty diseases, released as NULL
    report = json.loads(Path(f"{release}.report.json").read_text())
    assert report["privacy"]["sensitive"]["disease"]["null_value"] == "NONE"  # the spec's text
    got = run("check", str(release), "--against", f"{release}.report.json", cwd=tmp_path)
    assert got.returncode == 0, (got.returncode, got.stderr)
    assert "matches" in got.stdout


def test_the_stand_in_is_recorded_whether_or_not_the_input_held_a_null(tmp_path):
    """The field is spec text: the report of an input without a NULL records it too (its presence
    tells nothing of the rows), and its check passes."""
    release = _project(tmp_path, "incognito", [(c, d or "flu") for c, d in ROWS])
    report = json.loads(Path(f"{release}.report.json").read_text())
    assert report["privacy"]["sensitive"]["disease"]["null_value"] == "NONE"
    got = run("check", str(release), "--against", f"{release}.report.json", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
