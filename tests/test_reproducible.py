"""Same input and spec, the same release byte for byte — at a million rows (eight of DuckDB's row
groups), with two threads.

DuckDB scans and writes in parallel chunks; an output whose row order followed the chunks would
differ from run to run (8 runs on a 3 M-row table once gave 8 different files). The release is
sorted by its own values, so every run must write the same bytes: two independent runs (each its
own engine, search, write and re-check) and a second write of the first, as Parquet and as CSV.
The oracle is sha256 of the written files; a plain SQL COUNT and GROUP BY over the generated table
check that the data really has the size and diversity claimed.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import duckdb
import pytest

import sqlclose

pytestmark = pytest.mark.slow

ROWS = 1_000_000

SPEC = """\
others = "keep"

[source]
path = "people.parquet"

[engine]
threads = 2

[privacy]
k = 10
suppression = 0.01

[quasi_identifiers]
age = { bands = [5, 10, 20, 40] }
zip = { mask = true }
sex = { tree = { "*" = ["F", "M"] } }

[sensitive.disease]
distance = "equal"
t = 0.3
"""


def generate(folder: Path) -> Path:
    """1 M people, made in SQL from hashes of the row number: 74 ages, ~90,000 ZIP codes (nearly all
    of them at this size), two sexes, 200 salaries, six diseases, a float score (its text form must
    survive CSV byte for byte too)."""
    path = folder / "people.parquet"
    duckdb.execute(f"""COPY (SELECT
        (17 + hash(i, 1) % 74)::BIGINT AS age,
        lpad((10000 + hash(i, 2) % 90000)::VARCHAR, 5, '0') AS zip,
        CASE WHEN hash(i, 3) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
        (20000 + (hash(i, 4) % 200) * 500)::BIGINT AS salary,
        ['flu', 'gastritis', 'bronchitis', 'pneumonia', 'ulcer', 'cancer'][1 + (hash(i, 5) % 6)::INT] AS disease,
        (hash(i, 6) % 1000000)::DOUBLE / 7 AS score
        FROM range({ROWS}) AS t(i)) TO '{path}' (FORMAT PARQUET)""")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_million_rows_release_the_same_bytes_every_run(tmp_path):
    started = time.perf_counter()
    data = generate(tmp_path)
    shape = duckdb.execute("SELECT COUNT(*), COUNT(DISTINCT zip), COUNT(DISTINCT age), COUNT(DISTINCT disease) "
                           f"FROM '{data}'").fetchall()
    assert shape[0][0] == ROWS and shape[0][1] > 80_000 and shape[0][2] == 74 and shape[0][3] == 6
    (tmp_path / "spec.toml").write_text(SPEC)
    spec = sqlclose.load_spec(tmp_path / "spec.toml")
    parquet, csv = set(), set()
    for run in ("a", "b"):  # each run: its own engine, search, write and verification
        with sqlclose.anonymize(None, spec) as release:
            node = release.node
            parquet.add(sha256_of(release.write(tmp_path / f"{run}.parquet"), tmp_path / f"{run}.parquet"))
            csv.add(sha256_of(release.write(tmp_path / f"{run}.csv"), tmp_path / f"{run}.csv"))
            if run == "a":
                parquet.add(sha256_of(release.write(tmp_path / "a2.parquet"), tmp_path / "a2.parquet"))
    released = duckdb.execute(f"SELECT COUNT(*) FROM '{tmp_path / 'a.parquet'}'").fetchall()[0][0]
    assert released > 0.99 * ROWS and node["zip"] < 5  # a real release, not everything at the top
    assert len(parquet) == 1, "two runs wrote different Parquet bytes"
    assert len(csv) == 1, "two runs wrote different CSV bytes"
    print(f"\n{ROWS:,} rows: 2 runs, 3 Parquet + 2 CSV writes, same bytes; {time.perf_counter() - started:.1f} s")


def sha256_of(report: dict, path: Path) -> str:
    """The file's own sha256 (the oracle), checked against what its report vouches for."""
    digest = sha256(path)
    assert report["output"]["sha256"] == digest
    return digest
