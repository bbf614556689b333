"""The warehouse path's companion, ``release.verify.sql``, when it is a symbolic link. The release query
``release.sql`` was written through its link (ninety-ninth round), but the verification query beside
it was placed by a rename over its name: the link replaced by a regular file, the file it named
keeping the old query. It now follows the query's rule (``files.placed_at``): written through, the
link kept; a link naming the release query's own file is refused before anything is written.

Oracles: the link as ``os.readlink`` reads it, the verification query run by DuckDB over the table
(its last column, ``ok``, true), and the files' bytes before and after."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from table3_project import invoke
from warehouse_steps import TWO_COLUMN_SPEC

import sqlclose

OLD = b"-- the previous verification query, kept elsewhere\n"


@pytest.fixture
def warehouse(tmp_path: Path) -> tuple[Path, duckdb.DuckDBPyConnection]:
    """The spec, its histogram exported to ``h.parquet``, and the warehouse's table."""
    (tmp_path / "w.toml").write_text(TWO_COLUMN_SPEC)
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT * FROM (VALUES ('a', 'x'), ('a', 'y'), ('b', 'x'), ('b', 'y')) t(g, s)")
    con.execute(f"COPY ({sqlclose.histogram_sql(tmp_path / 'w.toml', 'duckdb')}) TO '{tmp_path / 'h.parquet'}' "
                "(FORMAT PARQUET)")
    (tmp_path / "elsewhere").mkdir()
    return tmp_path, con


def _release(d: Path, *options: object):
    return invoke("anonymize", d / "w.toml", "--histogram", d / "h.parquet", "--dialect", "duckdb",
                  "-o", d / "release.sql", "-q", *options)


@pytest.mark.parametrize("query_linked", [False, True], ids=["query-a-file", "query-a-link"])
def test_a_verification_query_path_that_is_a_link_is_written_through_it(warehouse, query_linked):
    d, con = warehouse
    real = d / "elsewhere" / "real.verify.sql"
    real.write_bytes(OLD)
    (d / "release.verify.sql").symlink_to(Path("elsewhere") / real.name)  # relative, as `ln -s` makes one
    if query_linked:
        (d / "elsewhere" / "real.sql").write_bytes(b"-- the previous release query\n")
        (d / "release.sql").symlink_to(d / "elsewhere" / "real.sql")
    refused = _release(d)
    assert refused.exit_code == 2 and "already exists; pass overwrite" in refused.output, refused.output
    assert real.read_bytes() == OLD and (d / "release.verify.sql").is_symlink()
    done = _release(d, "--overwrite")
    assert done.exit_code == 0, done.output
    assert (d / "release.verify.sql").is_symlink() and os.readlink(d / "release.verify.sql") == f"elsewhere/{real.name}"
    assert con.execute(real.read_text()).fetchone()[-1] is True  # the new query, its ok column true
    report = json.loads((d / "release.sql.report.json").read_text())
    assert report["warehouse"]["verification_query"] == str(d / "release.verify.sql")  # the path named
    assert [p.name for p in (d / "elsewhere").iterdir() if p.name.startswith(".")] == []  # no temporary left
    assert [p.name for p in d.iterdir() if p.name.startswith(".")] == []


def test_a_verification_query_linked_to_the_release_querys_file_is_refused(warehouse):
    """Written through both links, one file would take both queries: refused before the search (exit 2),
    nothing written, the links as they were."""
    d, _ = warehouse
    real = d / "elsewhere" / "real.sql"
    real.write_bytes(OLD)
    (d / "release.sql").symlink_to(real)
    (d / "release.verify.sql").symlink_to(real)
    refused = _release(d, "--overwrite")
    assert refused.exit_code == 2, refused.output
    assert (f"the verification query's path {d / 'release.verify.sql'} is a symbolic link to {real}, the file the "
            f"release query {d / 'release.sql'} is written to") in refused.output, refused.output
    assert real.read_bytes() == OLD and os.readlink(d / "release.sql") == os.readlink(d / "release.verify.sql") \
        == str(real)
    assert sorted(p.name for p in d.iterdir()) == ["elsewhere", "h.parquet", "release.sql", "release.verify.sql",
                                                   "w.toml"]


def test_a_verification_query_linked_into_a_parquet_folder_release_is_refused(warehouse):
    """Written through, the query would land among a folder release's files, which its report's digest
    covers: refused before the search (exit 2), as an output or report inside one is."""
    d, _ = warehouse
    folder = d / "elsewhere" / "rel"
    folder.mkdir()
    (folder / "part-0.parquet").write_bytes(b"PAR1")
    (d / "elsewhere" / "rel.report.json").write_text(json.dumps({"output": {"format": "parquet-folder"}}))
    (folder / "q.sql").write_bytes(OLD)
    (d / "release.verify.sql").symlink_to(folder / "q.sql")
    refused = _release(d, "--overwrite")
    assert refused.exit_code == 2, refused.output
    assert (f"the verification query path {d / 'release.verify.sql'} lies inside {folder}, a Parquet folder release"
            in refused.output), refused.output
    assert (folder / "q.sql").read_bytes() == OLD and (d / "release.verify.sql").is_symlink()
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.parquet", "q.sql"]
    assert not (d / "release.sql").exists() and not (d / "release.sql.report.json").exists()
