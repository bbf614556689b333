"""An output path that is a symbolic link, through the command line. Placing renamed the release
over the link itself: with --overwrite the link was gone, a regular file in its place, and the file
it named kept the old release (ninety-ninth round). A release is now written through the link, as
``cp`` and a shell's ``>`` write through one: placed at the file (or folder) the link names, its
temporary files beside that file, the link kept; its report beside the link, the path named (as a
DuckDB database output's already was). A link to nothing, to a folder for a file output, or to the
input is refused as before; one whose file has a report of its own beside it is refused (that
report would describe a file no longer there).

Oracles: the link as ``os.readlink`` reads it, the rows of the file it names counted by a plain
DuckDB query, hashlib's sha256 of that file against the report's, and the folder listings."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from table3_project import invoke, table3_project
from test_killed_placing_rollback import _env
from test_killed_placing_rollback import _sqlclose as killed_or_whole_run
from warehouse_steps import TWO_COLUMN_SPEC

OLD = b"old release, kept elsewhere\n"


def _project(tmp_path: Path) -> Path:
    d = table3_project(tmp_path)
    (d / "elsewhere").mkdir()
    return d


def _rows(path: Path, kind: str) -> int:
    read = {"csv": f"read_csv('{path}')", "parquet": f"read_parquet('{path}')",
            "folder": f"read_parquet('{path}/**/*.parquet')"}[kind]
    return duckdb.connect().execute(f"SELECT count(*) FROM {read}").fetchall()[0][0]


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_file_output_that_is_a_link_is_written_through_it(tmp_path, suffix):
    d = _project(tmp_path)
    real = d / "elsewhere" / f"real{suffix}"
    real.write_bytes(OLD)
    out = d / f"out{suffix}"
    out.symlink_to(Path("elsewhere") / real.name)  # relative, as `ln -s` makes one
    refused = invoke("anonymize", d / "spec.toml", "-o", out, "-q")
    assert refused.exit_code == 2 and f"{out} already exists; pass overwrite" in refused.output, refused.output
    assert real.read_bytes() == OLD
    done = invoke("anonymize", d / "spec.toml", "-o", out, "--overwrite", "-q")
    assert done.exit_code == 0, done.output
    assert out.is_symlink() and os.readlink(out) == f"elsewhere/{real.name}"  # the link kept, as it was
    assert _rows(real, suffix[1:]) == 9  # Table 3's nine rows, in the file the link names
    report = json.loads((d / f"out{suffix}.report.json").read_text())  # beside the link: the path named
    assert report["output"]["sha256"] == hashlib.sha256(real.read_bytes()).hexdigest()
    assert sorted(p.name for p in real.parent.iterdir()) == [real.name]  # no temporary left, no report
    assert _hidden(d) == []
    checked = invoke("check", out, "--against", d / f"out{suffix}.report.json")
    assert checked.exit_code == 0, checked.output


def test_a_folder_output_that_is_a_link_is_written_through_it(tmp_path):
    d = _project(tmp_path)
    real = d / "elsewhere" / "rel"
    real.mkdir()
    (real / "part-0.parquet").write_bytes(OLD)  # no release: a folder of Parquet files
    (d / "rel").symlink_to(real, target_is_directory=True)
    done = invoke("anonymize", d / "spec.toml", "-o", d / "rel", "--overwrite", "-q")
    assert done.exit_code == 0, done.output
    assert (d / "rel").is_symlink() and os.readlink(d / "rel") == str(real)
    assert _rows(real, "folder") == 9 and OLD not in b"".join(p.read_bytes() for p in real.rglob("*.parquet"))
    assert (d / "rel.report.json").is_file() and sorted(p.name for p in real.parent.iterdir()) == ["rel"]


def test_links_a_release_is_not_written_through_are_refused(tmp_path):
    """Each refused before the search (exit 2), the link and what it names left as they were."""
    d = _project(tmp_path)
    cases = {"dangling.csv": (d / "elsewhere" / "gone.csv", "is a symbolic link to {to}, which does not exist"),
             "input.csv": (d / "table3.csv", "is {to}, which this job reads"),
             "folder.csv": (d / "elsewhere", "is a directory, not a file path")}
    for name, (to, told) in cases.items():
        (d / name).symlink_to(to)
        result = invoke("anonymize", d / "spec.toml", "-o", d / name, "--overwrite", "-q")
        assert result.exit_code == 2 and told.format(to=to) in result.output, result.output
        assert os.readlink(d / name) == str(to) and not (d / f"{name}.report.json").exists()
    # A release with its own report beside it, named through a link: that report would be left
    # describing a file no longer there.
    first = invoke("anonymize", d / "spec.toml", "-o", d / "elsewhere" / "r.csv", "-q")
    assert first.exit_code == 0, first.output
    before = (d / "elsewhere" / "r.csv").read_bytes()
    (d / "r.csv").symlink_to(d / "elsewhere" / "r.csv")
    result = invoke("anonymize", d / "spec.toml", "-o", d / "r.csv", "--overwrite", "-q")
    assert result.exit_code == 2 and f"--report {d}/elsewhere/r.csv.report.json" in result.output, result.output
    assert (d / "elsewhere" / "r.csv").read_bytes() == before and not (d / "r.csv.report.json").exists()
    given = invoke("anonymize", d / "spec.toml", "-o", d / "r.csv", "--overwrite", "-q",
                   "--report", d / "elsewhere" / "r.csv.report.json")
    assert given.exit_code == 0 and (d / "r.csv").is_symlink(), given.output


def test_a_run_killed_placing_through_a_link_is_rolled_back_where_it_placed(tmp_path):
    """Killed once the old release was set aside (the link then names nothing): the next run, which
    stops early (k = 10 over nine rows, exit 3), puts it back beside the file the link names."""
    d = _project(tmp_path)
    (d / "k2.toml").write_text((d / "spec.toml").read_text().replace("k = 3", "k = 2"))
    (d / "k10.toml").write_text((d / "spec.toml").read_text().replace("k = 3", "k = 10"))
    real = d / "elsewhere" / "real.parquet"
    (d / "out.parquet").symlink_to(real)

    def run(spec: str, killed: bool = False) -> subprocess.CompletedProcess:
        return killed_or_whole_run(d, spec, "-o", "out.parquet", "--overwrite", killed=killed)

    real.write_bytes(OLD)
    assert run("spec.toml").returncode == 0
    previous = real.read_bytes(), (d / "out.parquet.report.json").read_bytes()
    killed = run("k2.toml", killed=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not real.exists()  # set aside
    following = run("k10.toml")
    assert following.returncode == 3, following.stderr
    assert (real.read_bytes(), (d / "out.parquet.report.json").read_bytes()) == previous
    assert os.readlink(d / "out.parquet") == str(real) and _hidden(d) == [] and _hidden(real.parent) == []



# The killed run: SIGKILLs itself at a point of placing its report (argv 1), the data already placed
# at the file the output's link names. "before": as the report's link is asked for; "linked": the
# report linked into place, its temporary not yet removed; "committed": the journal just renamed to
# the commit mark, the old pair and the mark not yet removed.
KILLED_PLACING_THE_REPORT = """
import os, runpy, signal, sys
AT = sys.argv.pop(1)
link, replace = os.link, os.replace
def placing_link(src, dst, **kw):
    if AT == "before" and str(dst).endswith(".report.json"):
        os.kill(os.getpid(), signal.SIGKILL)
    link(src, dst, **kw)
    if AT == "linked" and str(dst).endswith(".report.json"):
        os.kill(os.getpid(), signal.SIGKILL)
def marking_replace(src, dst, **kw):
    replace(src, dst, **kw)
    if AT == "committed" and str(dst).endswith(".committed"):
        os.kill(os.getpid(), signal.SIGKILL)
os.link, os.replace = placing_link, marking_replace
sys.argv = ["sqlclose"] + sys.argv[1:]
runpy.run_module("sqlclose.cli", run_name="__main__")
"""


@pytest.mark.parametrize("at, stands", [("before", "previous"), ("linked", "previous"), ("committed", "new")])
def test_a_run_killed_placing_its_report_through_a_link_leaves_one_whole_pair(tmp_path, at, stands):
    """A release written through a link (``-o out.parquet`` naming ``elsewhere/real.parquet``): its
    data and journal lie beside the file the link names, its report beside the link, in another
    folder. A run SIGKILLed while placing that report leaves the new data without its report (the
    old one set aside), or the report placed and its temporary too: the next run, which stops early
    (k = 10 over nine rows, exit 3), puts the previous pair back, or keeps the new one once its
    commit mark stood; no hidden file is left in either folder, and a rerun writes its release.
    Oracles: the files' bytes read before, hashlib's sha256 of the data against its report's, the
    folder listings."""
    d = _project(tmp_path)
    (d / "k9.toml").write_text((d / "spec.toml").read_text().replace("k = 3", "k = 9"))  # a release of other bytes
    (d / "k10.toml").write_text((d / "spec.toml").read_text().replace("k = 3", "k = 10"))
    real, report = d / "elsewhere" / "real.parquet", d / "out.parquet.report.json"
    (d / "out.parquet").symlink_to(real)
    real.write_bytes(OLD)

    def run(spec: str) -> subprocess.CompletedProcess:
        return killed_or_whole_run(d, spec, "-o", "out.parquet", "--overwrite")

    assert run("spec.toml").returncode == 0
    previous = real.read_bytes(), report.read_bytes()
    killed = subprocess.run([sys.executable, "-c", KILLED_PLACING_THE_REPORT, at, "anonymize", "k9.toml", "-o",
                             "out.parquet", "--overwrite", "--no-progress", "-q"], cwd=d, env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _hidden(d) != [] and _hidden(real.parent) != []  # stopped mid-move: its files on both sides
    assert real.read_bytes() != previous[0]  # the new data placed through the link
    if at == "before":
        assert not report.exists()  # the old report set aside, the new one not placed
    else:
        assert report.read_bytes() != previous[1]
    following = run("k10.toml")
    assert following.returncode == 3, following.stderr
    pair = real.read_bytes(), report.read_bytes()
    if stands == "previous":
        assert pair == previous
    else:  # the k = 9 release, whole: its report vouches for the data the link names
        assert pair != previous
        assert json.loads(pair[1])["output"]["sha256"] == hashlib.sha256(pair[0]).hexdigest()
        assert json.loads(pair[1])["privacy"]["k"] == 9
    assert os.readlink(d / "out.parquet") == str(real) and _hidden(d) == [] and _hidden(real.parent) == []
    again = run("spec.toml")
    assert again.returncode == 0, again.stderr
    assert json.loads(report.read_text())["output"]["sha256"] == hashlib.sha256(real.read_bytes()).hexdigest()
    assert _rows(real, "parquet") == 9 and os.readlink(d / "out.parquet") == str(real)
    assert _hidden(d) == [] and _hidden(real.parent) == [] and sorted(p.name for p in real.parent.iterdir()) == \
        ["real.parquet"]


def test_a_release_query_path_that_is_a_link_is_written_through_it(tmp_path):
    """The warehouse path (`--histogram … --output release.sql`) places its query as a file is placed:
    through the link, its report and verification query beside the link."""
    import sqlclose

    spec = tmp_path / "w.toml"
    spec.write_text(TWO_COLUMN_SPEC)
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT * FROM (VALUES ('a', 'x'), ('a', 'y'), ('b', 'x'), ('b', 'y')) t(g, s)")
    con.execute(f"COPY ({sqlclose.histogram_sql(spec, 'duckdb')}) TO '{tmp_path / 'h.parquet'}' (FORMAT PARQUET)")
    (tmp_path / "elsewhere").mkdir()
    real = tmp_path / "elsewhere" / "real.sql"
    real.write_bytes(OLD)
    (tmp_path / "release.sql").symlink_to(real)
    done = invoke("anonymize", spec, "--histogram", tmp_path / "h.parquet", "--dialect", "duckdb",
                  "-o", tmp_path / "release.sql", "--overwrite", "-q")
    assert done.exit_code == 0, done.output
    assert os.readlink(tmp_path / "release.sql") == str(real)
    report = json.loads((tmp_path / "release.sql.report.json").read_text())
    assert report["output"]["sha256"] == hashlib.sha256(real.read_bytes()).hexdigest() and OLD not in real.read_bytes()
    assert sorted(con.execute(real.read_text()).fetchall()) == [("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")]
    assert (tmp_path / "release.verify.sql").is_file() and sorted(p.name for p in real.parent.iterdir()) == ["real.sql"]
