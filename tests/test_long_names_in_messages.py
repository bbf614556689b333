"""A 100,000-character column name was printed whole in the error naming it (ninety-ninth round):
a spec naming such a column a Parquet file lacks, or a file holding one when the spec names a column
it lacks, gave a 100 kB error line. A long name is now quoted by its first 60 and last 20 characters
and its length. The oracles: the name the test wrote, its ends cut by hand, and the output's length."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from sqlclose.cli import main

LONG = "n" * 50_000 + "m" * 50_000
SHOWN = "'" + "n" * 60 + "…" + "m" * 20 + "' (100,000 characters)"
BOUND = 1_000  # the whole output: the message, its source's path and its other columns


def _run(tmp_path: Path, columns: str, qis: str) -> str:
    source = tmp_path / "in.parquet"
    duckdb.connect().execute(f"COPY (SELECT {columns} FROM range(5)) TO '{source}'")
    (tmp_path / "spec.toml").write_text(f'[source]\npath = "{source}"\n[privacy]\nk = 2\n[quasi_identifiers]\n{qis}\n'
                                        "[sensitive.disease]\ndistinct_l = 1\n")
    result = CliRunner().invoke(main, ["anonymize", str(tmp_path / "spec.toml"), "--output",
                                       str(tmp_path / "out.parquet"), "--no-progress", "-q"])
    assert result.exit_code == 2, result.output[:2000]
    assert not (tmp_path / "out.parquet").exists()
    return result.output


@pytest.mark.parametrize(("columns", "qis", "said"), [
    ("1 AS age, 'flu' AS disease", f'"{LONG}" = {{ bands = [5] }}\nage = {{ bands = [5] }}',
     f"column {SHOWN} is not in "),
    (f"1 AS age, 'flu' AS disease, 2 AS \"{LONG}\"", "zip = { bands = [5] }\nage = { bands = [5] }",
     "column 'zip' is not in "),
], ids=["named by the spec", "a column of the file"])
def test_a_100000_character_column_name_is_shortened_in_the_error(tmp_path, columns, qis, said) -> None:
    output = _run(tmp_path, columns, qis)
    assert len(output) < BOUND, len(output)
    assert said in output
    assert SHOWN in output
    assert "its columns: 'age', 'disease'" in output
