"""A release's bytes are a function of the rows it holds (issue 7, the forty-fifth round's red
team): how a Parquet writer encodes a column must not follow a value only a suppressed row has.
Oracles are plain: the written files' sha256, and their rows read back with DuckDB."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import sqlclose


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rows(path: Path) -> list[tuple]:
    return duckdb.sql(f"SELECT * FROM read_parquet('{path}') ORDER BY ALL").fetchall()


# 80 kept rows: ten age decades and ten diseases, eight rows each, in zips a and b; one more row in
# a zip of its own, suppressed. A rule hierarchy's labels and a sensitive domain count its value:
# 10 or 11 against 81 rows straddled the rows-per-value bound of a dictionary type.
_KEPT = 80


def _table(age: int, disease: str) -> pa.Table:
    rng = np.random.default_rng(0)
    ages = [10 * (i % 10) + int(rng.integers(0, 10)) for i in range(_KEPT)]
    diseases = [f"d{(i // 2) % 10}" for i in range(_KEPT)]
    zips = [["a", "b"][i % 2] for i in range(_KEPT)]
    return pa.table({"age": pa.array([*ages, age], pa.int64()), "zip": [*zips, "z"], "disease": [*diseases, disease]})


@pytest.mark.parametrize("hidden", ["age", "disease"])
def test_a_columns_dictionary_encoding_does_not_tell_a_suppressed_rows_value(tmp_path, hidden):
    """A Parquet write gave a text column a dictionary type when it had few enough values for its
    rows, counted from the age bands' labels and the disease domain, which hold the suppressed
    row's value: its age in a decade no kept row has (155, against 25), or a disease no kept row
    has, made the column text, written with another encoding (PLAIN_DICTIONARY, not
    RLE_DICTIONARY): the release held the same rows, and its bytes told the hidden value."""
    spec = {"privacy": {"k": 2, "suppression": 0.05},
            "quasi_identifiers": {"age": {"bands": [10, 20]}, "zip": {"tree": {"*": ["a", "b", "z"]}}},
            "sensitive": {"disease": {"distinct_l": 2}}}
    variants = {"age": [(25, "d0"), (155, "d0")], "disease": [(25, "d0"), (25, "secret")]}[hidden]
    digests, rows = set(), []
    for i, (age, disease) in enumerate(variants):
        with sqlclose.anonymize(_table(age, disease), spec) as searched, \
                searched.at({"age": 1, "zip": 0}) as release:
            doc = release.write_parquet(tmp_path / f"r{i}.parquet")
        assert doc["suppressed_rows"] == 1
        digests.add(_sha256(tmp_path / f"r{i}.parquet"))
        rows.append(_rows(tmp_path / f"r{i}.parquet"))
    assert rows[0] == rows[1], "the test needs two inputs whose releases hold the same rows"
    assert len(digests) == 1, "the file's bytes tell the suppressed row's value"


def test_an_ordered_csv_columns_type_does_not_tell_a_suppressed_rows_digit_separator(tmp_path):
    """An undeclared ordered column of a CSV is read as whole numbers; one holding a value that is
    no plain number was read as DOUBLE, so that text fails with its line. DuckDB reads ``5_000`` as
    5000: one suppressed row's salary ``5_000`` (against ``5000``) made every released salary a
    DOUBLE (4000.0). Such a value is now refused, naming the column, not the value; with the type
    declared, both inputs give one file. The oracle: the written files' sha256 and Parquet type."""
    import pyarrow.parquet as pq

    table3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
    spec = sqlclose.load_spec(table3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec.update(privacy={"k": 3, "suppression": 0.15})
    spec["sensitive"]["salary"]["t"] = spec["sensitive"]["disease"]["t"] = 0.99

    def release(salary: str, i: int, types: dict | None = None) -> Path:
        source = tmp_path / f"in{i}.csv"
        source.write_text((table3 / "table3.csv").read_text(encoding="utf-8") + f"12345,29,{salary},flu\n",
                          encoding="utf-8")
        with sqlclose.anonymize(None, {**spec, "source": {"path": str(source), "types": types or {}}}) as searched, \
                searched.at({"zip": 1, "age": 2}) as run:
            assert run.write_parquet(tmp_path / f"r{i}.parquet")["suppressed_rows"] == 1
        return tmp_path / f"r{i}.parquet"

    assert str(pq.read_schema(release("5000", 0)).field("salary").type) == "int64"
    with pytest.raises(sqlclose.errors.InputError) as e:
        release("5_000", 1)
    assert "column 'salary' holds 1 value read as numbers although not written as plain ones" in str(e.value)
    assert "5_000" not in str(e.value) and not (tmp_path / "r1.parquet").exists()
    typed = {_sha256(release(salary, 2 + i, {"salary": "BIGINT"})) for i, salary in enumerate(("5000", "5_000"))}
    assert len(typed) == 1
