"""A folder of Parquet files exported by Spark, Hive or Databricks holds, besides its committed
files, what a failed or still-running job leaves: ``_temporary/0/part-….parquet`` (the same rows
again), a hidden ``.staging/`` copy, an ``_attempt.parquet``. Those readers (and sqlclose's Spark
engine, which reads a folder with Spark's reader) skip every path part below the folder that starts
with "_" or "." (Spark keeps "_col=1", a partition folder). sqlclose read them as rows: each person
was counted twice, and with k = 2 the raw table was released as "classes of 2".

The oracle is a plain SQL count over the committed file alone (Table 3: 9 rows)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb
import pytest
from never_blocked import never_blocked
from table3_project import invoke

import sqlclose
from sqlclose.engine.listing import hidden_match

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"


@pytest.fixture
def table3(tmp_path: Path) -> dict:
    """Table 3 and its hierarchies copied to tmp_path, and a spec dict over the copies."""
    for name in ("table3.csv", "age.csv", "disease.csv"):
        shutil.copy(TABLE3 / name, tmp_path / name)
    spec = {
        "privacy": {"k": 3},
        "quasi_identifiers": {"zip": {"mask": True, "length": 5}, "age": {"file": str(tmp_path / "age.csv")}},
        "sensitive": {
            "salary": {"distance": "ordered", "t": 0.2},
            "disease": {"distance": "hierarchical", "t": 0.3, "hierarchy": str(tmp_path / "disease.csv")},
        },
    }
    return {"dir": tmp_path, "csv": tmp_path / "table3.csv", "spec": spec}


def _write(table3: dict, path: Path, fmt: str = "parquet") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    duckdb.sql(f"COPY (SELECT * FROM read_csv('{table3['csv']}')) TO '{path}' (FORMAT {fmt})")


def _rows(path: Path) -> int:
    return duckdb.sql(f"SELECT count(*) FROM '{path}'").fetchall()[0][0]


LEFTOVERS = ["_temporary/0/part-00000.parquet", ".hidden/part-00000.parquet", "_committed_attempt.parquet",
             ".part-00000.parquet"]


@pytest.mark.parametrize("leftover", LEFTOVERS)
def test_a_folder_sources_leftover_attempt_is_not_read_as_rows(table3, leftover) -> None:
    folder = table3["dir"] / "export"
    _write(table3, folder / "part-00000.parquet")
    _write(table3, folder / leftover)  # the same rows, a leftover
    expected = _rows(folder / "part-00000.parquet")  # oracle: the committed file's rows (9)
    with sqlclose.anonymize(folder, table3["spec"]) as release:
        assert release.report()["input"]["rows"] == expected
        assert release.to_arrow().num_rows == expected


def test_a_leftover_in_a_partitioned_folder_is_skipped_and_an_underscore_partition_is_read(table3) -> None:
    """Spark keeps a part starting with "_" that holds "=": a partition folder of a column "_batch"."""
    folder = table3["dir"] / "export"
    _write(table3, folder / "_batch=1" / "part-00000.parquet")
    _write(table3, folder / "_batch=1" / "_temporary" / "0" / "part-00000.parquet")
    spec = {**table3["spec"], "others": "keep"}
    with sqlclose.anonymize(folder, spec) as release:
        released = release.to_arrow()
    assert released.num_rows == _rows(folder / "_batch=1" / "part-00000.parquet")
    assert set(released.column("_batch").to_pylist()) == {"1"}


def test_a_pattern_skips_what_its_wildcards_find_under_a_leftover_part(table3) -> None:
    folder = table3["dir"] / "export"
    _write(table3, folder / "part-00000.parquet")
    _write(table3, folder / "_temporary" / "0" / "part-00000.parquet")
    spec = {**table3["spec"], "source": {"path": str(folder / "**" / "*.parquet"), "glob": True}}
    with sqlclose.anonymize(None, spec) as release:
        assert release.report()["input"]["rows"] == _rows(folder / "part-00000.parquet")


def test_a_hidden_part_the_pattern_spells_itself_is_read() -> None:
    """``_staging/*.parquet`` names its folder: only a wildcard's hidden match is a leftover."""
    assert not hidden_match(Path("/d/_staging/a.parquet"), Path("/d/_staging/*.parquet"))
    assert not hidden_match(Path("/d/x/_a.parquet"), Path("/d/*/_*.parquet"))
    assert hidden_match(Path("/d/_tmp/a.parquet"), Path("/d/*/*.parquet"))
    assert hidden_match(Path("/d/a/.b/c.parquet"), Path("/d/**/*.parquet"))
    assert not hidden_match(Path("/d/a/c.parquet"), Path("/d/**/*.parquet"))


def test_a_csv_pattern_matching_a_leftover_is_refused_naming_it(table3) -> None:
    folder = table3["dir"] / "export"
    shutil.copy(table3["csv"], folder.parent / "x.csv")
    (folder / "_temporary").mkdir(parents=True)
    shutil.copy(table3["csv"], folder / "part-0.csv")
    shutil.copy(table3["csv"], folder / "_temporary" / "part-0.csv")
    spec = {**table3["spec"], "source": {"path": str(folder / "**" / "*.csv"), "glob": True}}
    with pytest.raises(sqlclose.InputError, match=r"_temporary/part-0\.csv.*remove it, or narrow the pattern"):
        sqlclose.anonymize(None, spec)


def test_a_folder_of_leftovers_alone_is_refused_naming_one(table3) -> None:
    folder = table3["dir"] / "export"
    _write(table3, folder / "_temporary" / "0" / "part-00000.parquet")
    with pytest.raises(sqlclose.InputError, match=r"must hold Parquet files.*_temporary/0/part-00000\.parquet"):
        sqlclose.anonymize(folder, table3["spec"])


def test_check_of_a_folder_counts_its_committed_rows_only(table3) -> None:
    folder = table3["dir"] / "export"
    _write(table3, folder / "part-00000.parquet")
    _write(table3, folder / "_temporary" / "0" / "part-00000.parquet")
    audit = sqlclose.check(folder, ["zip", "age"], k=1)
    assert audit.to_dict()["rows"] == _rows(folder / "part-00000.parquet")


def test_every_parquet_file_of_a_folder_is_read_whatever_its_name(table3) -> None:
    """A folder source read ``*.parquet`` alone: Hive's ``000000_0``, ``part-1.pq`` and
    ``PART-2.PARQUET`` beside ``part-0.parquet`` were skipped without a word, and the run said it
    released every row of a quarter of the table. Spark, Hive and Trino read every file not under a
    hidden path part; so does sqlclose now, each told Parquet by its magic bytes, and Spark's
    ``_SUCCESS`` marker and ``.crc`` files stay leftovers. The oracle: the row counts of the four
    files' own footers, read by pyarrow."""
    import pyarrow.parquet as pq

    folder = table3["dir"] / "export"
    names = ["part-0.parquet", "part-1.pq", "PART-2.PARQUET", "000000_0"]
    for name in names:
        _write(table3, folder / name)
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / ".part-0.parquet.crc").write_bytes(b"crc\x00")
    expected = sum(pq.read_metadata(folder / name).num_rows for name in names)
    with sqlclose.anonymize(folder, table3["spec"]) as release:
        assert release.report()["input"]["rows"] == expected
        assert release.to_arrow().num_rows == expected


def test_a_folder_source_holding_a_link_to_a_folder_is_refused(table3, tmp_path) -> None:
    """A folder source whose part files are partly behind a link to a folder: sqlclose's listing did
    not enter it, and released the other rows as the whole table, where pyarrow's and Spark's readers
    take them all (review of the ninety-third round). Refused, naming the link; control: the same
    files copied in place of the link are read whole (oracle: the files' row counts, by DuckDB)."""
    folder = table3["dir"] / "export"
    _write(table3, folder / "part-0.parquet")
    elsewhere = tmp_path / "elsewhere"
    _write(table3, elsewhere / "part-1.parquet")
    (folder / "more").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(sqlclose.InputError, match=r"holds .*export/more, a link to a folder, which sqlclose does "
                                                  r"not follow"):
        sqlclose.anonymize(folder, table3["spec"])
    (folder / "more").unlink()
    shutil.copytree(elsewhere, folder / "more")
    expected = _rows(folder / "part-0.parquet") + _rows(folder / "more" / "part-1.parquet")
    with sqlclose.anonymize(folder, table3["spec"]) as release:
        assert release.report()["input"]["rows"] == expected


def test_a_folder_source_holding_a_link_to_a_folder_stays_bad_input_on_the_command_line(table3, tmp_path) -> None:
    """`check --against` tells a link in a folder release as a mismatch (exit 4: sqlclose writes none
    into a release); a folder given as the source to anonymize is the operator's input, and one
    holding a link to a folder stays bad input: exit 2, naming the link, nothing written."""
    folder = table3["dir"] / "export"
    _write(table3, folder / "part-0.parquet")
    elsewhere = tmp_path / "elsewhere"
    _write(table3, elsewhere / "part-1.parquet")
    (folder / "more").symlink_to(elsewhere, target_is_directory=True)
    spec = table3["dir"] / "spec.toml"
    spec.write_text((TABLE3 / "table3.toml").read_text().replace('path = "table3.csv"', 'path = "export"\n'
                                                                  'format = "parquet"'))
    result = invoke("anonymize", spec, "-o", table3["dir"] / "out.parquet", "--no-progress")
    assert result.exit_code == 2, result.output
    assert f"source folder {folder} holds {folder / 'more'}, a link to a folder" in result.output, result.output
    assert not (table3["dir"] / "out.parquet").exists()


def test_a_folder_holding_a_file_that_is_not_parquet_is_refused_naming_it(table3) -> None:
    """A file of the folder that is no Parquet (a CSV copy, notes) would be read by Spark and Hive,
    which fail on it; skipped, it could hold rows the release left out. Refused, naming the file
    and how to leave it out; nothing is read."""
    folder = table3["dir"] / "export"
    _write(table3, folder / "part-0.parquet")
    shutil.copy(table3["csv"], folder / "part-1.csv")
    with pytest.raises(sqlclose.InputError, match=r"holds .*export/part-1\.csv, which is not a Parquet file .*"
                                                  r"prefix its name with \"_\" to leave it out"):
        sqlclose.anonymize(folder, table3["spec"])


@pytest.mark.parametrize("where", ["part-1.parquet", "more/pipe"])
def test_a_folder_source_holding_a_pipe_is_refused_naming_it(table3, where) -> None:
    """Ninety-sixth round: a pipe (FIFO) among a folder source's files was skipped as no file, and
    the run released the folder as if it were not there, where Spark's and Hive's readers would try to
    read it (opening a pipe waits for a writer). Refused as bad input, exit 2, naming it, never
    opened, nothing written; a pipe under a hidden part (`_pipe`), which those readers skip, is
    skipped as before. Oracle: the release's input rows against a plain count of the Parquet file."""
    folder = table3["dir"] / "export"
    _write(table3, folder / "part-0.parquet")
    (folder / where).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / where)
    spec = table3["dir"] / "spec.toml"
    spec.write_text((TABLE3 / "table3.toml").read_text().replace('path = "table3.csv"', 'path = "export"\n'
                                                                  'format = "parquet"'))
    with never_blocked():
        result = invoke("anonymize", spec, "-o", table3["dir"] / "out.parquet", "--no-progress")
    assert result.exit_code == 2, result.output
    assert (f"source folder {folder} holds {folder / where}, a pipe (FIFO), which is no file of a table: its readers "
            "(Spark, Hive, sqlclose) take every file not under a path part starting with \"_\" or \".\", and would try "
            "to read it (opening a pipe waits for a writer, for good): move it out of the folder, or prefix its name "
            "with \"_\" to leave it out") in " ".join(result.output.split()), result.output
    assert not (table3["dir"] / "out.parquet").exists()
    (folder / where).rename(folder / "_pipe")
    with never_blocked(), sqlclose.anonymize(folder, table3["spec"]) as release:
        assert release.report()["input"]["rows"] == _rows(folder / "part-0.parquet")
