"""An output or report name too long for the temporary files a run places it through is refused
before the search (review of the ninety-first round: a 253-byte name, legal, passed --dry-run and
failed after the search, "File name too long", exit 5).

The oracle: the hidden names' parts counted by hand — "." + name + ".sqlclose-" (10) + a pid of
up to 7 digits + "-" + 12 hex digits + "." + the kind: "committed" for the release (41 bytes more
than its name), "tmp" or "old" for the report (35) — and the file system's longest name,
os.pathconf's NAME_MAX of the folder (255 on the file systems here). The report is named after the
output (+ ".report.json", 12 bytes), so its limit is the output's too.
"""

from __future__ import annotations

import os

import pytest
from table3_project import invoke, table3_project


@pytest.fixture
def project(tmp_path):
    return table3_project(tmp_path)


def _name(size: int) -> str:
    return "r" * (size - len(".parquet")) + ".parquet"


def test_names_past_the_file_systems_longest_with_the_runs_suffixes_are_refused_before_the_search(project):
    most = os.pathconf(project, "PC_NAME_MAX")
    output_fits, report_fits = most - 41, most - 35
    with_its_report = report_fits - len(".report.json")
    for size, role, length, advice in (
            (most - 2, "output", most - 2, f"give the output a name of at most {output_fits} bytes"),
            (output_fits + 1, "output", output_fits + 1, f"give the output a name of at most {output_fits} bytes"),
            (output_fits, "report", output_fits + len(".report.json"),
             f"give the output a name of at most {with_its_report} bytes, or the report a name of its own")):
        for extra in (["--dry-run"], []):
            result = invoke("anonymize", project / "spec.toml", "-o", project / "out" / _name(size), *extra)
            assert result.exit_code == 2, result.output
            said = " ".join(result.output.split())
            assert f"the {role}'s name " in said and f"is {length} bytes long" in said, said
            assert said.endswith(advice), said
        assert not (project / "out").exists()
    # a report named on its own lets the output's name be its longest
    result = invoke("anonymize", project / "spec.toml", "-q", "-o", project / "out" / _name(output_fits),
                    "--report", project / "out" / "r.json")
    assert result.exit_code == 0, result.output
    # the longest output name whose report fits too: both placed
    result = invoke("anonymize", project / "spec.toml", "-q", "-o", project / "out" / _name(with_its_report))
    assert result.exit_code == 0, result.output
    assert sorted(len(p.name) for p in (project / "out").iterdir()) == sorted(
        [len("r.json"), output_fits, with_its_report, report_fits])


def test_a_table_name_that_makes_its_report_name_too_long_is_told_as_the_tables(project):
    """A DuckDB table's report is named after the database and the table: the advice named the output,
    "at most -23 bytes" (review of the ninety-second round). The oracle: "r.duckdb." (9 bytes) + the
    table + ".report.json" (12) must fit NAME_MAX less 35, so the table may take NAME_MAX - 56; past
    that with the database's name alone, only a report of its own fits."""
    most = os.pathconf(project, "PC_NAME_MAX")
    table_fits = most - 35 - len("r.duckdb.") - len(".report.json")
    for table, advice in ((table_fits + 1, f"give the output table a name of at most {table_fits} bytes, or the report "
                                           "a name of its own"),):
        result = invoke("anonymize", project / "spec.toml", "--dry-run", "-o", project / "out" / "r.duckdb",
                        "--output-table", "t" * table)
        said = " ".join(result.output.split())
        assert result.exit_code == 2 and said.endswith(advice), said
    assert invoke("anonymize", project / "spec.toml", "--dry-run", "-q", "-o", project / "out" / "r.duckdb",
                  "--output-table", "t" * table_fits).exit_code == 0
    long_database = "d" * (most - 35 - len(".report.json") - len(".t")) + ".duckdb"  # no room left for a table
    result = invoke("anonymize", project / "spec.toml", "--dry-run", "-o", project / "out" / long_database,
                    "--output-table", "t")
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and said.endswith(
        f"give the report a name of its own (--report), of at most {most - 35} bytes"), said


def test_a_report_named_on_its_own_after_the_database_does_not_blame_the_table(project):
    """A --report the user named starting with the database's name is not the table's default report
    name: the advice named the table, which is no part of it (the round's diff review)."""
    most = os.pathconf(project, "PC_NAME_MAX")
    report = project / "out" / ("r.duckdb." + "x" * (most - 35 - len("r.duckdb.") + 1))
    result = invoke("anonymize", project / "spec.toml", "--dry-run", "-o", project / "out" / "r.duckdb",
                    "--output-table", "people", "--report", report)
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and said.endswith(f"give the report a name of at most {most - 35} bytes"), said
