"""A release written as a Parquet folder (DuckDB; Spark's in test_spark_release.py).

Oracles: the rows of the written folder read by a plain DuckDB GROUP BY / ORDER BY (not the
code under test) against the one-file release and against Table 5 of Li et al.; the folder's
digest recomputed here from its files by hashlib, following the documented definition.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from table3_project import invoke, table3_project

import sqlclose
from sqlclose.errors import InputError, OutputExistsError
from sqlclose.release import files, placing, recovery

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"
TABLE5 = {("4760*", "<40"): 3, ("4767*", "<40"): 3, ("4790*", ">=40"): 3}  # Li et al., Table 5 (zip, age)


def table3() -> pa.Table:
    return pacsv.read_csv(TABLE3 / "table3.csv", convert_options=pacsv.ConvertOptions(
        column_types={"zip": pa.string()}))


def table3_spec() -> dict:
    return sqlclose.load_spec(TABLE3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)


def rows_of(path: Path) -> list[tuple]:
    """Every written row with its multiplicity, by a plain GROUP BY over the file or folder."""
    where = str(path / "**" / "*.parquet") if path.is_dir() else str(path)
    return duckdb.sql("SELECT zip, age, salary, disease, COUNT(*) AS n FROM read_parquet($1, hive_partitioning = "
                      "true, hive_types_autocast = false) GROUP BY ALL ORDER BY ALL", params=[where]).fetchall()


def manifest_digest(folder: Path) -> str:
    lines = []
    for p in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()):
        if p.is_file():
            lines.append(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(folder).as_posix()}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("partition_by", [(), ("age",), ("age", "zip")], ids=["plain", "by-age", "by-age-zip"])
def test_a_folder_release_holds_the_file_releases_rows(tmp_path: Path, partition_by: tuple) -> None:
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        release.write_parquet(tmp_path / "one.parquet")
        doc = release.write_parquet_folder(tmp_path / "folder", partition_by=partition_by)
    folder = tmp_path / "folder"
    assert rows_of(folder) == rows_of(tmp_path / "one.parquet")
    classes = duckdb.sql("SELECT zip, age, SUM(n) FROM (SELECT * FROM (VALUES " + ", ".join(
        f"('{z}', '{a}', {n})" for z, a, _, _, n in rows_of(folder)) + ") v(zip, age, n)) GROUP BY ALL").fetchall()
    assert {(z, a): int(n) for z, a, n in classes} == TABLE5
    assert doc["output"]["sha256"] == manifest_digest(folder) == files.sha256(folder)
    assert doc["output"]["rows"] == 9 and doc["verified"]
    names = files.folder_files(folder)
    assert all(n.endswith(".parquet") for n in names)
    if partition_by == ("age",):  # Hive folders, labels escaped by DuckDB
        assert names == ["age=%3C40/part-0.parquet", "age=%3E%3D40/part-0.parquet"]
    if not partition_by:
        assert names == ["part-0.parquet"]
    assert hidden(tmp_path) == []


def test_a_partition_column_given_as_its_name_alone_is_one_column(tmp_path: Path) -> None:
    """``partition_by="age"`` (a str, not a list) was read as the columns 'a', 'g', 'e' and refused
    ("partition_by names 'a', 'g', 'e'"). The oracle: the file system, the two Hive folders of age
    a list ["age"] gives (Table 5's age labels, escaped by DuckDB)."""
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        release.write_parquet_folder(tmp_path / "folder", partition_by="age")
        release.write(tmp_path / "written", partition_by="age")
    for folder in ("folder", "written"):
        assert files.folder_files(tmp_path / folder) == ["age=%3C40/part-0.parquet", "age=%3E%3D40/part-0.parquet"]


def test_a_folder_release_is_byte_reproducible(tmp_path: Path) -> None:
    digests = []
    for name in ("a", "b"):
        with sqlclose.anonymize(table3(), table3_spec()) as release:
            digests.append(release.write_parquet_folder(tmp_path / name, partition_by=["age"])["output"]["sha256"])
    assert digests[0] == digests[1]
    for name in files.folder_files(tmp_path / "a"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_an_existing_folder_is_replaced_only_when_asked(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    out.mkdir()
    (out / "old.parquet").write_bytes(b"a previous release's file")
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        with pytest.raises(OutputExistsError, match="already exists"):
            release.write_parquet_folder(out)
        assert (out / "old.parquet").exists()
        doc = release.write_parquet_folder(out, overwrite=True, partition_by=["age"])
    assert not (out / "old.parquet").exists() and doc["output"]["sha256"] == manifest_digest(out)
    assert json.loads((tmp_path / "rel.report.json").read_text())["output"]["sha256"] == manifest_digest(out)
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("where", ["mine.txt", "sub/notes.md"])
def test_a_folder_holding_other_files_is_not_replaced_even_when_asked(tmp_path: Path, where: str) -> None:
    """Replacing a folder release removes the folder whole: one holding anything but Parquet files is
    not a release (a folder of documents named by mistake) and stays as it was."""
    out = tmp_path / "docs"
    (out / where).parent.mkdir(parents=True, exist_ok=True)
    (out / where).write_text("someone's file")
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        with pytest.raises(OutputExistsError, match=f"holds {where} that is not a Parquet file"):
            release.write_parquet_folder(out, overwrite=True)
    assert (out / where).read_text() == "someone's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


def test_a_file_where_the_folder_goes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "rel").write_text("a file")
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        with pytest.raises(OutputExistsError, match="is a file"):
            release.write_parquet_folder(tmp_path / "rel", overwrite=True)
    assert (tmp_path / "rel").read_text() == "a file"


def test_an_output_folder_holding_the_input_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    duckdb.sql(f"COPY (SELECT * FROM read_csv('{TABLE3 / 'table3.csv'}', types = {{'zip': 'VARCHAR'}})) "
               f"TO '{data / 'part.parquet'}' (FORMAT PARQUET)")
    with sqlclose.anonymize(data, table3_spec()) as release:
        with pytest.raises(OutputExistsError, match="a folder this job reads"):
            release.write_parquet_folder(data, overwrite=True)
    assert files.folder_files(data) == ["part.parquet"]


def test_a_report_inside_the_release_folder_is_refused_for_what_it_is(tmp_path: Path) -> None:
    """write_parquet_folder('rel', report='rel/report.json') said 'rel appeared while the release was
    being written (another run placed it?)': no other run exists, the report's folder is the
    output. Refused up front, saying so; nothing is written."""
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        with pytest.raises(OutputExistsError) as caught:
            release.write_parquet_folder(tmp_path / "rel", report=tmp_path / "rel" / "report.json")
    message = str(caught.value)
    assert f"the report {tmp_path / 'rel' / 'report.json'} lies inside the output folder {tmp_path / 'rel'}" \
        in message, message
    assert "another run" not in message and "appeared while" not in message, message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("partition_by", "message"), [
    (["nope"], "does not hold"), (["zip", "age", "salary", "disease"], "every released column"),
    (['a"b'], "letters, digits"), (["zip", "zip"], "partition_by names 'zip' twice: give each partition column once"),
    (["age", "AGE"], "partition_by names 'age' and 'AGE', one column to the engines")])
def test_bad_partition_columns_are_refused_before_writing(tmp_path: Path, partition_by: list, message: str) -> None:
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        with pytest.raises(InputError, match=message):
            release.write_parquet_folder(tmp_path / "rel", partition_by=partition_by)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"])
def test_a_folder_partitioned_by_an_unsigned_integer_is_written_and_checked(tmp_path: Path, kind: str) -> None:
    """rv10 #10: an unsigned integer partition column was refused as a type 'a folder name cannot
    carry', with a message saying integers are accepted. Its values are whole numbers, as a signed
    one's. The oracles: plain DuckDB over the folder (rows per value, the type read back), and
    `sqlclose check --against`."""
    duckdb.sql(f"COPY (SELECT zip, p::{kind} AS p, dis FROM (VALUES ('10', 1, 'a'), ('10', 1, 'b'), ('11', 200, 'a'), "
               f"('11', 200, 'b')) t(zip, p, dis)) TO '{tmp_path / 'in.parquet'}' (FORMAT PARQUET)")
    (tmp_path / "spec.toml").write_text('others = "keep"\n[source]\npath = "in.parquet"\n[output]\npath = "out"\n'
                                        'partition_by = ["p"]\n[privacy]\nk = 2\n[quasi_identifiers]\n'
                                        'zip = { mask = true, length = 2 }\n[sensitive.dis]\ndistinct_l = 2\n')
    result = invoke("anonymize", tmp_path / "spec.toml", "-q", "--node", "zip=0")
    assert result.exit_code == 0, result.output
    got = duckdb.sql(f"SELECT p::BIGINT, COUNT(*) FROM read_parquet('{tmp_path}/out/**/*.parquet', "
                     "hive_partitioning = true) GROUP BY ALL ORDER BY 1").fetchall()
    assert got == [(1, 2), (200, 2)]
    report = json.loads((tmp_path / "out.report.json").read_text())
    assert report["output"]["column_types"]["p"] == kind
    assert invoke("check", tmp_path / "out", "--against", tmp_path / "out.report.json").exit_code == 0


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError])
def test_a_failure_after_writing_leaves_nothing(tmp_path: Path, monkeypatch, failure: type) -> None:
    from sqlclose.release import release as release_module

    def broken(*args, **kwargs):
        raise failure("stopped during verification")

    monkeypatch.setattr(release_module, "recheck_relation", broken)
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        with pytest.raises(failure):
            release.write_parquet_folder(tmp_path / "rel", partition_by=["age"])
    assert list(tmp_path.iterdir()) == []


def test_a_failure_between_the_placements_keeps_the_old_folder(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "rel"
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        old = release.write_parquet_folder(out)["output"]["sha256"]
    real, calls = placing._place, []

    def place(tmp, target):
        calls.append(target)
        if len(calls) == 2:  # the folder is in place; the report is next
            raise KeyboardInterrupt
        real(tmp, target)

    monkeypatch.setattr(placing, "_place", place)
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        with pytest.raises(KeyboardInterrupt):
            release.write_parquet_folder(out, overwrite=True, partition_by=["age"])
    assert manifest_digest(out) == old and files.folder_files(out) == ["part-0.parquet"]
    assert json.loads((tmp_path / "rel.report.json").read_text())["output"]["sha256"] == old
    assert hidden(tmp_path) == []


KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    import pyarrow.csv as pacsv, pyarrow as pa
    import sqlclose
    from sqlclose.release import files, placing, recovery
    stage = sys.argv[2]
    real = placing._place
    def place(tmp, target):
        if stage == "before-data" or (stage == "before-report" and target.name.endswith(".json")):
            os.kill(os.getpid(), signal.SIGKILL)
        real(tmp, target)
    placing._place = place
    spec = sqlclose.load_spec(sys.argv[3]).model_dump(exclude={"output", "source"}, exclude_none=True)
    t = pacsv.read_csv(sys.argv[4], convert_options=pacsv.ConvertOptions(column_types={"zip": pa.string()}))
    sqlclose.anonymize(t, spec).write_parquet_folder(sys.argv[1], overwrite=True, partition_by=["age"])
""")


@pytest.mark.parametrize("stage", ["before-data", "before-report"])
def test_a_killed_folder_run_is_rolled_back_by_the_next_one(tmp_path: Path, stage: str) -> None:
    out = tmp_path / "rel"
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        old = release.write_parquet_folder(out)["output"]["sha256"]
    script = tmp_path / "kill.py"
    script.write_text(KILLED_RUN)
    result = subprocess.run([sys.executable, str(script), str(out), stage, str(TABLE3 / "table3.toml"),
                             str(TABLE3 / "table3.csv")], capture_output=True, text=True)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert hidden(tmp_path), "the killed run should have left its temporaries"
    recovery.recover(out, tmp_path / "rel.report.json")
    assert hidden(tmp_path) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["kill.py", "rel",
                                                                                    "rel.report.json"]
    assert manifest_digest(out) == old
    assert json.loads((tmp_path / "rel.report.json").read_text())["output"]["sha256"] == old


def test_the_command_writes_and_checks_a_folder(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    text = (TABLE3 / "table3.toml").read_text().replace('path = "table3.csv"', f'path = "{TABLE3 / "table3.csv"}"')
    for name in ("age.csv", "disease.csv"):
        text = text.replace(f'"{name}"', f'"{TABLE3 / name}"')
    spec.write_text(text.replace("../../out/table3/release.parquet", str(tmp_path / "out" / "rel")))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "sqlclose.cli", "anonymize", str(spec), "--no-progress", "--json"]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "rel"
    assert out.is_dir() and json.loads(result.stdout)["output"]["sha256"] == manifest_digest(out)
    check = subprocess.run([sys.executable, "-m", "sqlclose.cli", "check", str(out), "--against",
                            str(tmp_path / "out" / "rel.report.json"), "--spec", str(spec)],
                           capture_output=True, text=True, env=env)
    assert check.returncode == 0, check.stderr
    assert "matches" in check.stdout
    (out / "part-0.parquet").write_bytes((out / "part-0.parquet").read_bytes()[:-8] + b"PAR1PAR1")
    check = subprocess.run([sys.executable, "-m", "sqlclose.cli", "check", str(out), "--against",
                            str(tmp_path / "out" / "rel.report.json"), "--spec", str(spec)],
                           capture_output=True, text=True, env=env)
    assert check.returncode != 0


@pytest.mark.parametrize("column", ["zip", "age", "salary", "zip, age", "salary, age"])  # salary: the ordered
def test_check_against_passes_on_a_partitioned_folder_and_still_sees_reordered_columns(tmp_path: Path,  # column
                                                                                       column: str) -> None:
    """rv3 #1: a Parquet folder partitioned by a column reads that column back last (Hive), and
    `check --against` said the release just written and verified did not match its report
    ('the same names in another order', exit 4). Oracles: the folder's rows by a plain GROUP BY
    are the report's; the check passes (exit 0); the files' other columns rewritten in another
    order (pyarrow, not the code under test) are still told as a column mismatch (exit 4)."""
    spec = table3_project(tmp_path) / "spec.toml"
    partition_by = column.split(", ")  # two columns: not in alphabetical order, which DuckDB reads them back in
    spec.write_text(spec.read_text().replace('"out/release.parquet"', f'"out/rel"\npartition_by = {partition_by}'))
    assert invoke("anonymize", spec, "-q", "--no-progress").exit_code == 0
    out, report = tmp_path / "out" / "rel", tmp_path / "out" / "rel.report.json"
    assert {p.name.split("=")[0] for p in out.iterdir()} == {partition_by[0]}
    assert sum(n for *_, n in rows_of(out)) == json.loads(report.read_text())["output"]["rows"] == 9
    check = invoke("check", out, "--against", report, "--spec", spec)
    assert check.exit_code == 0, check.output  # salary, text in its folders' names, read as the report's BIGINT
    for part in out.rglob("*.parquet"):  # the files' own columns in another order
        table = pq.read_table(part)
        pq.write_table(table.select(list(reversed(table.column_names))), part)
    check = invoke("check", out, "--against", report, "--spec", spec)
    assert check.exit_code == 4 and "output.columns" in check.output, check.output


def _four_rows(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    duckdb.sql("COPY (SELECT * FROM (VALUES ('10', 'a'), ('10', 'b'), ('11', 'a'), ('11', 'b')) t(zip, dis)) "
               f"TO '{folder / 'part-0.parquet'}' (FORMAT PARQUET)")


_FOUR_ROWS_SPEC = "[privacy]\nk = 2\n[quasi_identifiers]\nzip = { tree = { g = [\"10\", \"11\", \"99\"] } }\n" \
    "[sensitive.dis]\ndistinct_l = 2\n"


def test_a_folder_source_under_a_col_value_folder_keeps_its_files_values(tmp_path: Path) -> None:
    """Review rv10 #1. DuckDB's Hive partitioning reads every col=value part of a file's whole path:
    a source folder below …/zip=99/ had every row's zip (a quasi-identifier its file holds as 10 and
    11) released as 99, and verified (the re-check read it the same way). The folder is now read
    through a plain-named link. The oracle: the file's rows by plain DuckDB, Hive partitioning off."""
    base = tmp_path / "zip=99"
    _four_rows(base / "src")
    (base / "spec.toml").write_text('[source]\npath = "src"\n[output]\npath = "out.parquet"\n' + _FOUR_ROWS_SPEC)
    result = invoke("anonymize", base / "spec.toml", "-q", "--node", "zip=0")
    assert result.exit_code == 0, result.output
    read = "read_parquet('{}', hive_partitioning = false)"
    truth = duckdb.sql(f"SELECT zip, COUNT(*) FROM {read.format(base / 'src' / '*.parquet')} GROUP BY ALL ORDER BY ALL")
    got = duckdb.sql(f"SELECT zip, COUNT(*) FROM {read.format(base / 'out.parquet')} GROUP BY ALL ORDER BY ALL")
    assert got.fetchall() == truth.fetchall() == [("10", 2), ("11", 2)]


@pytest.mark.parametrize("name", ["dt=2024-11-30/release", "run=7", "rel[1]{a}", "q*/rel"])
def test_a_folder_output_whose_path_holds_a_col_value_part_is_written_and_checked(tmp_path: Path, name: str) -> None:
    """Review rv10 #2. The written folder was read back with Hive partitioning over its whole path:
    under …/dt=2024-11-30/ (or named run=7, its hidden temporary folder '.run=7.sqlclose-…') a
    column no release holds appeared, and a valid release ended in exit 4; `check --against` by the
    absolute path refused it too. A folder whose path holds a glob character was written, then
    refused by `check --against` ("has a glob character in its name"; its files are listed, and
    read through a plain-named link). The oracles: the four input rows by plain DuckDB, and the check."""
    _four_rows(tmp_path / "in")
    out = tmp_path / name
    (tmp_path / "spec.toml").write_text('[source]\npath = "in"\n' + _FOUR_ROWS_SPEC)
    result = invoke("anonymize", tmp_path / "spec.toml", "-q", "--node", "zip=0", "-o", out, "--format",
                    "parquet-folder")
    assert result.exit_code == 0, result.output
    files = [str(p) for p in out.rglob("*.parquet")]
    rows = duckdb.sql("SELECT COUNT(*) FROM read_parquet($files, hive_partitioning = false)", params={"files": files})
    assert rows.fetchall() == [(4,)]
    check = invoke("check", out, "--against", Path(f"{out}.report.json"))
    assert check.exit_code == 0, check.output


def _folder_digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("where", "role"), [("report", "report"), ("x.csv", "output"),
                                             ("sub/x.parquet", "output")])
def test_no_output_of_another_run_lands_inside_a_parquet_folder_release(tmp_path: Path, where: str, role: str) -> None:
    """A second run's report (`--report rel/other.report.json`) or release (`-o rel/x.csv`) was
    written inside an earlier run's Parquet folder release (exit 0), which then failed its own
    `check --against` (its sha256 differs), as a page there did before it was refused. Refused
    before the search (exit 2), naming the folder and its report. The oracle: the folder's files'
    bytes before and after, hashlib, and its check --against its report."""
    project = table3_project(tmp_path)
    out, rel = project / "out", project / "out" / "rel"
    assert invoke("anonymize", project / "spec.toml", "--output", rel, "-q").exit_code == 0
    before = _folder_digests(out)
    target = rel / where
    args = ["--output", out / "other.parquet", "--report", rel / "other.report.json"] if where == "report" \
        else ["--output", target]
    result = invoke("anonymize", project / "spec.toml", *args, "-q")
    assert result.exit_code == 2, result.output
    named = rel / "other.report.json" if where == "report" else target
    assert (f"the {role} path {named} lies inside {rel}, a Parquet folder release (its report: "
            f"{out / 'rel.report.json'})") in result.output, result.output
    assert _folder_digests(out) == before  # nothing written: not the other release, not its report
    assert invoke("check", rel, "--against", out / "rel.report.json", "-q").exit_code == 0


@pytest.mark.parametrize("where", ["report", "release"])
def test_the_api_writes_nothing_inside_a_parquet_folder_release(tmp_path: Path, where: str) -> None:
    """`Release.write('rel/x.csv')` or `write(…, report='rel/other.report.json')`, rel a Parquet
    folder release written earlier, put the file among rel's part files, and rel no longer matched
    its report. Refused (OutputExistsError), naming rel and its report. The oracle: rel's digest
    recomputed here by hashlib (manifest_digest) against its report's sha256, and its files' bytes."""
    rel = tmp_path / "rel"
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        release.write_parquet_folder(rel)
        before = _folder_digests(tmp_path)
        with pytest.raises(OutputExistsError) as caught:
            if where == "report":
                release.write(tmp_path / "other.parquet", report=rel / "other.report.json")
            else:
                release.write(rel / "x.csv")
    assert f"lies inside {rel}, a Parquet folder release (its report: {tmp_path / 'rel.report.json'})" \
        in str(caught.value), caught.value
    assert _folder_digests(tmp_path) == before
    assert json.loads((tmp_path / "rel.report.json").read_text())["output"]["sha256"] == manifest_digest(rel)


@pytest.mark.parametrize("role", ["output", "report", "page"])
def test_nothing_lands_inside_a_parquet_folder_release_through_a_symlink(tmp_path: Path, role: str) -> None:
    """Review rv21 #2. `-o rel/x.parquet` was refused, but `alias -> rel` then `-o alias/x.parquet`
    (or `--report alias/…`, `--html alias/page.html`) wrote inside rel: the check walked the path's
    folders as written, and no `alias.report.json` sits beside the link. Refused (exit 2), naming
    rel. The oracle: rel's files' bytes (hashlib) before and after, and its check against its report."""
    project = table3_project(tmp_path)
    out, rel = project / "out", project / "out" / "rel"
    assert invoke("anonymize", project / "spec.toml", "--output", rel, "-q").exit_code == 0
    (project / "alias").symlink_to(rel)
    before = _folder_digests(out)
    args = {"output": ["--output", project / "alias" / "x.parquet"],
            "report": ["--output", project / "other.parquet", "--report", project / "alias" / "x.report.json"],
            "page": ["--output", project / "other.parquet", "--html", project / "alias" / "page.html"]}[role]
    result = invoke("anonymize", project / "spec.toml", *args, "-q")
    assert result.exit_code == 2, result.output
    assert f"inside {rel}" in result.output, result.output
    assert _folder_digests(out) == before
    assert not (project / "other.parquet").exists()
    assert invoke("check", rel, "--against", out / "rel.report.json", "-q").exit_code == 0


def test_the_api_writes_nothing_inside_a_parquet_folder_release_through_a_symlink(tmp_path: Path) -> None:
    """Review rv21 #2: `Release.write('alias/y.parquet')`, alias a symlink to a Parquet folder
    release rel, wrote among rel's part files while `'rel/y.parquet'` was refused. The oracle:
    rel's digest recomputed here by hashlib against its report's sha256."""
    rel = tmp_path / "rel"
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "alias").symlink_to(rel)
    with sqlclose.anonymize(table3(), table3_spec()) as release:
        release.write_parquet_folder(rel)
        with pytest.raises(OutputExistsError) as caught:
            release.write(tmp_path / "links" / "alias" / "sub" / "y.parquet")
    assert f"lies inside {rel}" in str(caught.value), caught.value
    assert not (rel / "sub").exists()
    assert json.loads((tmp_path / "rel.report.json").read_text())["output"]["sha256"] == manifest_digest(rel)


@pytest.mark.parametrize("where", ["rel", "rel/sw"])
def test_a_sweep_writes_nothing_inside_a_parquet_folder_release(tmp_path: Path, where: str) -> None:
    """Review rv21 #3: `sweep --out rel/sw` wrote sweep.csv, nauc.csv and the charts among a Parquet
    folder release's files (exit 0), which then failed its check against its report. Refused before
    any run (exit 2), as anonymize refuses an output there. The oracle: rel's files' bytes (hashlib)
    before and after, and its check against its report."""
    project = table3_project(tmp_path)
    out, rel = project / "out", project / "out" / "rel"
    assert invoke("anonymize", project / "spec.toml", "--output", rel, "-q").exit_code == 0
    before = _folder_digests(out)
    result = invoke("sweep", project / "spec.toml", "--k", "2,3", "--out", out / where, "--no-progress")
    assert result.exit_code == 2, result.output
    assert f"lies inside {rel}, a Parquet folder release" in result.output, result.output
    assert "swept" not in result.output  # refused before any run
    assert _folder_digests(out) == before
    assert invoke("check", rel, "--against", out / "rel.report.json", "-q").exit_code == 0


NOTES_SPEC = {"others": "keep", "privacy": {"k": 3}, "sensitive": {"disease": {"distinct_l": 2}},
              "quasi_identifiers": {"zip": {"mask": True, "length": 5}, "age": {"bands": [10, 20]}}}


def _noted(tmp_path: Path, notes: list) -> Path:
    source = tmp_path / "src.parquet"
    pq.write_table(table3().select(["zip", "age", "disease"]).append_column("note", pa.array(notes, pa.string())),
                   source)
    return source


@pytest.mark.parametrize(("note", "says"), [
    ("日" * 85 + "x" * 10, r"2 rows hold a value whose folder name \(note=… as the duckdb engine escapes it\) "
                          r"is longer than the 255 bytes"),
    ("__HIVE_DEFAULT_PARTITION__", r"on the duckdb engine: 2 rows hold '__HIVE_DEFAULT_PARTITION__'"),
], ids=["name-too-long", "hive-default-name"])
def test_a_text_partition_value_folder_names_cannot_carry_is_refused_before_the_search(tmp_path, monkeypatch, note,
                                                                                      says):
    """Review of the sixty-third round. A value of 95 characters, 85 of them CJK (DuckDB escapes each of
    their 3 bytes as %XX: 775 bytes), failed the folder write after the whole search, exit 1, its
    error quoting the value. The text __HIVE_DEFAULT_PARTITION__ was written (as %5F_HIVE…) and read
    back by DuckDB, but pyarrow's hive reading takes it for NULL. Both refused before the search as
    bad input, counted, never shown. Oracle: the 2 rows the test wrote; the length by DuckDB's own
    write of that value alone (it fails); a search that fails the test if it runs."""
    from sqlclose import api

    if note.startswith("日"):
        with pytest.raises(duckdb.IOException, match="File name too long"):
            duckdb.sql(f"COPY (SELECT '{note}' AS note, 1 AS x) TO '{tmp_path / 'probe'}' "
                       "(FORMAT parquet, PARTITION_BY (note))")
    source = _noted(tmp_path, ["x", note, "y", "x", note, "y", "x", "y", "x"])
    monkeypatch.setattr(api, "_search", lambda *a, **k: pytest.fail("the search ran"))
    with pytest.raises(InputError, match=says) as refused:
        sqlclose.anonymize(str(source), NOTES_SPEC, output_format="parquet-folder", partition_by=["note"])
    assert note.startswith("__") or note not in str(refused.value)  # the one text refused by name is the token


def test_a_text_partition_value_just_under_the_name_limit_is_written(tmp_path):
    """The bound is the escaped name's: 249 ASCII letters (note= and 249 bytes: 254) are written, and
    read back by DuckDB and by pyarrow alike. Oracle: the folder's names and the values read back."""
    import pyarrow.dataset as ds

    note = "a" * 249
    source = _noted(tmp_path, [note] * 9)
    with sqlclose.anonymize(str(source), NOTES_SPEC) as release:
        release.write(tmp_path / "out", partition_by=["note"])
    assert [p.name for p in (tmp_path / "out").iterdir()] == [f"note={note}"]
    assert set(ds.dataset(tmp_path / "out", partitioning="hive").to_table().column("note").to_pylist()) == {note}


def test_an_io_error_naming_a_partition_folder_names_no_value(tmp_path, monkeypatch):
    """Behind the refusal above: were a folder write to fail all the same (the check left out here),
    DuckDB's "Failed to create directory" quotes the folder, whose name is a released row's value.
    Oracle: the value the test wrote is nowhere in the error; the column's name is."""
    from sqlclose.errors import SqlcloseError
    from sqlclose.release import folder

    note = "SECRET" + "日" * 85
    monkeypatch.setattr(folder, "_name_max", lambda: 10**6)  # the length check passes every value
    source = _noted(tmp_path, ["x", note, "y", "x", note, "y", "x", "y", "x"])
    with sqlclose.anonymize(str(source), NOTES_SPEC) as release:
        with pytest.raises(SqlcloseError) as failed:
            release.write(tmp_path / "out", partition_by=["note"])
    assert "note=…" in str(failed.value) and "SECRET" not in str(failed.value), failed.value
    assert "%E6%97%A5" not in str(failed.value)


@pytest.mark.parametrize(("output", "fmt", "partitioned"), [("out/rel", "parquet-folder", True),
                                                            ("out/r.parquet", "parquet", False)])
def test_a_folder_output_on_the_command_line_keeps_the_specs_partition_columns(tmp_path: Path, output: str,
                                                                               fmt: str, partitioned: bool) -> None:
    """`-o out/rel --format parquet-folder` over a spec with partition_by = ["age"] wrote the folder
    unpartitioned, its report saying partition_by null. Oracle: the files the folder holds (one
    per age label, counted by DuckDB from the file); a file output holds no partitions."""
    table3_project(tmp_path)
    spec = tmp_path / "spec.toml"
    spec.write_text(spec.read_text().replace('path = "out/release.parquet"',
                                             'path = "out/release"\npartition_by = ["age"]'))
    result = invoke("anonymize", spec, "-q", "-o", tmp_path / output, "--format", fmt)
    assert result.exit_code == 0, result.output
    written = tmp_path / output
    report = json.loads(Path(f"{written}.report.json").read_text())
    if not partitioned:
        assert written.is_file() and report["output"]["partition_by"] in (None, [])
        return
    ages = duckdb.sql(f"SELECT COUNT(DISTINCT age) FROM read_parquet('{written}/**/*.parquet', "
                      "hive_partitioning = true)").fetchall()[0][0]
    assert sorted(p.parent.name.split("=")[0] for p in written.rglob("*.parquet")) == ["age"] * ages
    assert report["output"]["partition_by"] == ["age"]


def test_a_spec_partitioning_by_a_column_twice_is_refused_before_the_search(tmp_path: Path) -> None:
    """`partition_by = ["zip", "zip"]` passed `--dry-run` and failed after the whole search as an
    internal error, exit 1 (DuckDB's "does not allow duplicate columns"). Now exit 2, the dry run too."""
    project = table3_project(tmp_path)
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace('path = "out/release.parquet"',
                                             'path = "out/release"\npartition_by = ["zip", "zip"]'))
    assert 'partition_by = ["zip", "zip"]' in spec.read_text()
    for extra in (["--dry-run"], []):
        result = invoke("anonymize", spec, *extra)
        assert result.exit_code == 2, result.output
        assert "output: partition_by names 'zip' twice: give each partition column once" in result.output
    assert not (project / "out").exists()


@pytest.mark.parametrize(("label", "says"), [
    ("__HIVE_DEFAULT_PARTITION__", r"on the duckdb engine: 3 rows hold '__HIVE_DEFAULT_PARTITION__'"),
    ("日" * 90, r"3 rows hold a value whose folder name \(age=… as the duckdb engine escapes it\) is longer than the "
               r"255 bytes"),
], ids=["hive-default-label", "label-too-long"])
def test_a_partition_columns_label_folder_names_cannot_carry_is_still_refused(tmp_path, label, says):
    """A quasi-identifier released above its leaves is no longer counted over the release when none of
    its labels at that level is a text folder names cannot carry (``folder._writable``, the
    hundred-and-second round): one that is still is, and the release refused, counted. Here the
    30s of Table 3's ages are labelled so at level 1 (the given node). Oracle: the 3 rows of the
    table whose age is in the 30s (30, 36, 32), and nothing written."""
    (tmp_path / "age.csv").write_text("".join(f"{age};{group};*\n" for age, group in [
        (22, "young"), (27, "young"), (29, "young"), (30, label), (32, label), (36, label),
        (43, "old"), (47, "old"), (52, "old")]), encoding="utf-8")
    spec = {"privacy": {"k": 3}, "sensitive": {"disease": {"distinct_l": 1}},
            "quasi_identifiers": {"zip": {"mask": True, "length": 5}, "age": {"file": str(tmp_path / "age.csv")}}}
    rows = table3().select(["zip", "age", "disease"])
    assert len([a for a in rows.column("age").to_pylist() if 30 <= a < 40]) == 3
    with sqlclose.anonymize(rows, spec, node={"zip": 5, "age": 1}) as release:  # zip at its top: classes by age alone
        with pytest.raises(InputError, match=says) as refused:
            release.write_parquet_folder(tmp_path / "out", partition_by=["age"])
    assert label.startswith("__") or label not in str(refused.value)
    assert not (tmp_path / "out").exists()
