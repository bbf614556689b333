"""The spec's [engine]: which engine runs the queries and with which limits; never part of the
release (the same release and spec hash whatever the settings)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import sqlclose
from sqlclose.errors import SpecError
from sqlclose.model.spec import as_spec

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "datasets" / "table3" / "table3.toml"


def spec_with(engine: dict | None) -> sqlclose.Spec:
    data = sqlclose.load_spec(SPEC).model_dump(exclude={"output"}, exclude_none=True)
    if engine is not None:
        data["engine"] = engine
    return as_spec(data)


def test_duckdb_limits_reach_the_engine_and_leave_the_release_alone(tmp_path):
    limited = spec_with({"threads": 1, "memory_limit": "256MB", "temp_directory": str(tmp_path / "spill")})
    with sqlclose.anonymize(None, limited) as release:
        settings = release.problem.engine.fetch(
            "SELECT current_setting('threads') AS t, current_setting('memory_limit') AS m").to_pylist()[0]
        release.write_parquet(tmp_path / "limited.parquet")
    assert int(settings["t"]) == 1 and settings["m"].replace(" ", "").upper().startswith(("256", "244"))
    with sqlclose.anonymize(None, spec_with(None)) as release:
        release.write_parquet(tmp_path / "plain.parquet")
    assert pq.read_table(tmp_path / "limited.parquet").equals(pq.read_table(tmp_path / "plain.parquet"))
    assert limited.sha256() == spec_with(None).sha256()


@pytest.mark.parametrize("engine, message", [
    ({"name": "oracle9i"}, "unknown engine 'oracle9i'"),
    ({"master": "local[2]"}, "master"),
])
def test_a_wrong_engine_setting_is_a_spec_error(engine, message):
    with pytest.raises(SpecError, match=message):
        sqlclose.anonymize(None, spec_with(engine))


def test_a_memory_limit_must_say_its_unit():
    with pytest.raises(SpecError, match="engine.memory_limit"):
        spec_with({"memory_limit": "lots"})


@pytest.mark.spark
def test_a_given_spark_engine_finds_what_duckdb_finds(spark_session):
    from sqlclose.engine import SparkEngine

    with sqlclose.anonymize(None, spec_with(None), engine=SparkEngine(spark_session)) as on_spark:
        spark_node, spark_rows = on_spark.node, on_spark.to_arrow().to_pylist()
    with sqlclose.anonymize(None, spec_with(None)) as on_duckdb:
        assert on_duckdb.node == spark_node == {"zip": 1, "age": 2}  # the paper's Table 5
        assert on_duckdb.to_arrow().to_pylist() == spark_rows
