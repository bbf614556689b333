"""An output or report name too long for the temporary files a run places it through is refused
before the search (review of the ninety-first round: a 253-byte name, legal, passed --dry-run and
failed after the search, "File name too long", exit 5).

The oracle: the hidden name's parts counted by hand — "." + name + ".sqlclose-" (10) + a pid of
up to 7 digits + "-" + 12 hex digits + ".committed.wal" (14): 45 bytes more than the name — and the
file system's longest name, os.pathconf's NAME_MAX of the folder (255 on the file systems here).
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
    fits = most - 45
    for size, role, length in ((most - 2, "output", most - 2), (fits + 1, "output", fits + 1),
                               (fits, "report", fits + len(".report.json"))):
        for extra in (["--dry-run"], []):
            result = invoke("anonymize", project / "spec.toml", "-o", project / "out" / _name(size), *extra)
            assert result.exit_code == 2, result.output
            said = " ".join(result.output.split())
            assert f"the {role}'s name " in said and f"is {length} bytes long" in said, said
            assert f"give the {role} a name of at most {fits} bytes" in said, said
        assert not (project / "out").exists()
    # the longest output name whose report fits too: both placed
    size = fits - len(".report.json")
    result = invoke("anonymize", project / "spec.toml", "-q", "-o", project / "out" / _name(size))
    assert result.exit_code == 0, result.output
    assert sorted(len(p.name) for p in (project / "out").iterdir()) == [size, fits]
