"""A report already at its path, as a nightly job meets it (review of the ninety-sixth round).

A report the job may not read was told "not a sqlclose report" (exit 2, bad input) by the rerun, and
refused by ``check --against`` and ``report`` as a usage error (exit 2): it is the environment's
refusal now (exit 5), naming the report and what to do. And ``--overwrite`` let a release's data
replace another release's report, given as ``--output`` with a ``--format``: refused now whatever
``--overwrite`` says, as a report path never takes another release's data.

The job's user is refused the report with ``chmod 000``; run as root, whom no mode refuses, that
refusal is stood in for by refusing to open that one file (Path.open) (as tests/test_duckdb_output_file.py does
for a lock file). Oracles: the exit code and message, and the files' bytes before and after."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from table3_project import invoke, table3_project

ENV = {"SQLCLOSE_FINGERPRINT_KEY": "k3y"}


@pytest.fixture
def released(tmp_path: Path) -> Path:
    """Table 3's project with its first release (out/release.parquet and its report) in place."""
    project = table3_project(tmp_path)
    first = invoke("anonymize", project / "spec.toml", "-q", env=ENV)
    assert first.exit_code == 0, first.output
    return project


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@contextmanager
def unreadable(path: Path, monkeypatch) -> Iterator[None]:
    """``path`` unreadable to this process inside the block: mode 000, and, where the process still
    reads it (root, whom no mode refuses), its opening refused as the kernel refuses it to any other
    user. Its mode is given back after, for the oracles."""
    path.chmod(0)
    try:
        with monkeypatch.context() as patched:
            if _still_readable(path):
                real_open = Path.open

                def opening(self, *args, **kwargs):
                    if self.absolute() == path.absolute():
                        raise PermissionError(errno.EACCES, "Permission denied", str(self))
                    return real_open(self, *args, **kwargs)

                patched.setattr(Path, "open", opening)
            yield
    finally:
        path.chmod(0o644)


def _still_readable(path: Path) -> bool:
    try:
        with open(path, "rb"):
            return True
    except PermissionError:
        return False


def test_a_rerun_over_a_report_it_may_not_read_is_the_environments_refusal(released, monkeypatch):
    out = released / "out"
    before = _files(out)
    report = out / "release.parquet.report.json"
    with unreadable(report, monkeypatch):
        run = invoke("anonymize", released / "spec.toml", "--overwrite", env=ENV)
    assert run.exit_code == 5, run.output
    assert f"permission denied reading the report {report.absolute()}" in run.output
    assert "give the job's user read access to it" in run.output
    assert "nothing was placed at the output path" in run.output
    assert "not a sqlclose report" not in run.output
    assert _files(out) == before


@pytest.mark.parametrize("command", ["check --against", "report"])
def test_checking_against_a_report_it_may_not_read_is_the_environments_refusal(released, monkeypatch, command):
    report = released / "out" / "release.parquet.report.json"
    page = released / "page.html"
    args = ["check", released / "out" / "release.parquet", "--against", report] if command == "check --against" \
        else ["report", report, "--html", page]
    with unreadable(report, monkeypatch):
        run = invoke(*args, env=ENV)
    assert run.exit_code == 5, run.output
    assert f"permission denied reading the report {report}" in run.output
    assert "give the job's user read access to it" in run.output
    assert not page.exists()


@pytest.mark.parametrize("form", ["parquet", "csv"])
def test_overwrite_never_replaces_a_report_with_a_releases_data(released, form):
    """``--output out/release.parquet.report.json --format parquet --overwrite`` replaced the first
    release's report with Parquet bytes, exit 0, and ``check --against`` then failed on that release.
    Oracle: the report's bytes, and the first release still checking against it."""
    out = released / "out"
    before = _files(out)
    report = out / "release.parquet.report.json"
    output = report if form == "parquet" else out / "release.csv"
    if form == "csv":  # a report named as a CSV output must hold one: copied to that name
        output.write_bytes(report.read_bytes())
        before = _files(out)
    run = invoke("anonymize", released / "spec.toml", "-q", "--output", output, "--format", form, "--overwrite",
                 env=ENV)
    assert run.exit_code == 2, run.output
    assert f"the output path {output} holds a sqlclose report, which the release's data would replace" in run.output
    assert "never a report" in run.output
    assert _files(out) == before
    assert invoke("check", out / "release.parquet", "--against", report, env=ENV).exit_code == 0


def test_an_output_inside_a_folder_release_whose_report_it_may_not_read_is_the_environments_refusal(released,
                                                                                                     monkeypatch):
    """Ninety-seventh round: whether a folder above the output is a Parquet folder release is told by its
    report beside it; one the job may not read was taken for "not a release", and the output was written
    inside it, among the files its report's digest covers. The environment's refusal now (exit 5)."""
    folder = released / "out" / "rel"
    first = invoke("anonymize", released / "spec.toml", "-q", "--output", folder, "--format", "parquet-folder",
                   env=ENV)
    assert first.exit_code == 0, first.output
    report = released / "out" / "rel.report.json"
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*")}
    with unreadable(report, monkeypatch):
        run = invoke("anonymize", released / "spec.toml", "-q", "--output", folder / "inside.parquet", env=ENV)
    assert run.exit_code == 5, run.output
    assert f"permission denied reading the report {report}" in run.output
    assert f"to tell whether {folder} is a Parquet folder release" in run.output
    assert "give the job's user read access to it" in run.output
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*")} == before


def test_settling_a_stopped_runs_move_over_a_report_it_may_not_read_is_the_environments_refusal(tmp_path,
                                                                                                monkeypatch):
    """Ninety-seventh round: a run of an earlier build killed while placing (its journal without
    ``existed``) is settled by whether the report vouches for the placed data. One the job may not read
    was taken for "no": the new data went, the old came back, the old report was removed with the
    temporaries, and the old data stood beside the new report. The environment's refusal now (exit 5),
    every file left as it was for the run after the permissions are fixed."""
    import hashlib
    import json
    import subprocess
    import sys

    from sqlclose.errors import EnvironmentFailure
    from sqlclose.release import recovery

    out, report = tmp_path / "r.parquet", tmp_path / "r.parquet.report.json"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    token = f"{int(dead.stdout)}-abc123"
    old_data, old_report = recovery.hidden_name(out, token, "old"), recovery.hidden_name(report, token, "old")
    old_data.write_bytes(b"old data")
    old_report.write_text('{"output": {"sha256": "old"}}')
    new = hashlib.sha256(b"new data").hexdigest()
    out.write_bytes(b"new data")  # the new pair placed whole, its journal not yet removed
    report.write_text(json.dumps({"output": {"sha256": new}}))
    recovery.hidden_name(out, token, "journal").write_text(json.dumps(
        {"data": str(out), "report": str(report), "sha256": new, "old": [str(old_data), str(old_report)],
         "companions": {}}))
    before = _files(tmp_path)
    with unreadable(report, monkeypatch), pytest.raises(EnvironmentFailure) as refused:
        recovery.recover(out, report)
    assert f"permission denied reading the report {report}" in str(refused.value)
    assert "give the job's user read access to it" in str(refused.value)
    assert _files(tmp_path) == before
