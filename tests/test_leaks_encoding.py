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
