"""A source is read as its rows are, or refused (issue 7, the forty-seventh round's red team), and
no value of the input is in an error. Oracles are plain: all of stderr and the --json document."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import sqlclose

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
SECRET = "SECRET-4711"


def _table3() -> pa.Table:
    return pacsv.read_csv(TABLE3 / "table3.csv", convert_options=pacsv.ConvertOptions(
        column_types={"zip": pa.string(), "age": pa.int64(), "salary": pa.int64()}))


def _spec(**changes: object) -> dict:
    spec = sqlclose.load_spec(TABLE3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec.update(changes)
    return spec


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sqlclose.cli", *args, "--no-progress"], cwd=cwd,
                          capture_output=True, text=True)


def _spec_file(tmp_path: Path, source: str, name: str = "spec.toml") -> Path:
    spec = (TABLE3 / "table3.toml").read_text(encoding="utf-8")
    spec = spec.replace('path = "table3.csv"', source).replace('"../../out/table3/release.parquet"', '"out.parquet"')
    spec = spec.replace('file = "age.csv"', f'file = "{TABLE3 / "age.csv"}"')
    spec = spec.replace('hierarchy = "disease.csv"', f'hierarchy = "{TABLE3 / "disease.csv"}"')
    (tmp_path / name).write_text(spec, encoding="utf-8")
    return tmp_path / name


@pytest.mark.parametrize(("cast", "value"), [("CAST(note AS INT)", "1"), ("CAST(note AS DATE)", "2020-01-01"),
                                           ("strptime(note, '%Y')", "2020")])
def test_a_value_the_source_query_cannot_convert_is_named_nowhere(tmp_path, cast, value):
    """A source query converting a column (its own CAST, or strptime) failed on the one row whose
    note is ``SECRET-4711``: DuckDB's conversion error quoted the value (``Could not convert string
    'SECRET-4711' to INT32``), and the job printed it on stderr and in --json's document (a
    suppressed row's value as much as any). Now a conversion error is shown without the values it
    quotes. The oracle: all of stderr and stdout."""
    rows = _table3()
    rows = rows.append_column("note", pa.array([value] * rows.num_rows, pa.string()))
    extra = pa.table({"zip": ["12345"], "age": [36], "salary": [3000], "disease": ["flu"], "note": [SECRET]},
                     schema=rows.schema)
    pq.write_table(pa.concat_tables([rows, extra]), tmp_path / "people.parquet")
    query = f"SELECT zip, age, salary, disease, {cast} AS note FROM 'people.parquet'"
    spec = _spec_file(tmp_path, f'query = "{query}"')
    spec.write_text('others = "keep"\n' + spec.read_text(encoding="utf-8"), encoding="utf-8")
    run = _cli("anonymize", "spec.toml", "--json", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert SECRET not in run.stderr + run.stdout
    assert "the source query failed" in json.loads(run.stdout)["error"]
