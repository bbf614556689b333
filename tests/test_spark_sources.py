"""Spark sources read as DuckDB reads them: a pattern's files less a Spark job's leftovers
(review rv14, defect 1; marked ``spark``).

Oracles: the rows the test itself wrote with pyarrow (counted by hand)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlclose
from sqlclose.engine import SparkEngine

pytestmark = pytest.mark.spark

ZIPS = ["47677", "47602", "47678", "47905", "47909", "47906", "47605", "47673", "47607"]
AGES = [29, 22, 27, 43, 52, 47, 30, 36, 32]
DISEASE = ["flu", "gastritis", "flu", "bronchitis", "flu", "gastritis", "bronchitis", "flu", "gastritis"]
TABLE = pa.table({"zip": ZIPS, "age": AGES, "disease": DISEASE})
QIS = {"zip": {"mask": True, "length": 5}, "age": {"bands": [10, 20]}}
KEEP_SPEC = {"others": "keep", "privacy": {"k": 3}, "quasi_identifiers": QIS,
             "sensitive": {"disease": {"distinct_l": 2}}}


@pytest.fixture
def spark(spark_session):
    engine = SparkEngine(spark_session)
    yield engine
    engine.close()


def test_a_glob_on_spark_skips_leftovers_a_wildcard_matched(tmp_path: Path, spark) -> None:
    """spec.md, [source] path: a glob's Parquet matches under a hidden part a wildcard found are not
    read. Spark read `src/*/*.parquet` through Hadoop's glob, src/_temporary/ and src/.staging/ too (a
    Spark job's leftovers: the same 9 people again), so every class held 3 copies of one person and
    k = 3 released the raw table. Oracle: the 9 people of src/a, written by the test; no raw
    (zip, age) pair may be released."""
    src = tmp_path / "src"
    for sub in ("a", "_temporary", ".staging"):
        (src / sub).mkdir(parents=True)
        pq.write_table(TABLE, src / sub / "p.parquet")
    spec = {"source": {"path": str(src / "*" / "*.parquet"), "glob": True}, "others": "drop",
            "privacy": {"k": 3}, "quasi_identifiers": QIS}
    rows = sqlclose.anonymize(None, spec, engine=spark).to_arrow().to_pylist()
    assert len(rows) == 9
    assert not {(z, str(a)) for z, a in zip(ZIPS, AGES)} & {(r["zip"], r["age"]) for r in rows}
