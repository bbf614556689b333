"""The report is a typed, documented model: its schema file cannot drift, and what it says about
the generalization is what a plain GROUP BY over the written file finds."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

import sqlclose
from sqlclose.report import SCHEMA_VERSION, Report, json_schema

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "datasets" / "table3" / "table3.toml"


def test_the_published_schema_is_the_models():
    assert (REPO / "docs" / "report-schema.json").read_text() == json_schema(), \
        "regenerate it: python -m sqlclose.report > docs/report-schema.json"


def test_a_written_report_validates_against_the_model(tmp_path):
    with sqlclose.anonymize(None, SPEC) as release:
        doc = release.write_parquet(tmp_path / "r.parquet")
    on_disk = json.loads((tmp_path / "r.parquet.report.json").read_text())
    assert Report.model_validate(on_disk).schema_version == SCHEMA_VERSION == on_disk["schema_version"]
    assert on_disk == doc


def test_labels_per_column_are_those_in_the_file(tmp_path):
    with sqlclose.anonymize(None, SPEC) as release:
        doc = release.write_parquet(tmp_path / "r.parquet")
    for column, g in doc["generalization"].items():
        found = [r[0] for r in duckdb.sql(f"SELECT DISTINCT \"{column}\" FROM '{tmp_path / 'r.parquet'}' "
                                         "ORDER BY 1").fetchall()]
        assert g["labels"] == found and g["label_count"] == len(found)
    assert doc["generalization"]["zip"]["level"] == doc["node"]["zip"]
    assert doc["warnings"] == []


def test_a_column_generalized_to_the_top_is_a_warning(tmp_path):
    spec = sqlclose.load_spec(SPEC).model_dump(exclude={"output", "source"}, exclude_none=True)
    spec["privacy"]["k"] = 9  # one class of all nine rows: every QI at its top
    with sqlclose.anonymize(REPO / "datasets" / "table3" / "table3.csv", spec) as release:
        doc = release.write_parquet(tmp_path / "r.parquet")
    tops = {r[0] for r in duckdb.sql(f"SELECT DISTINCT age FROM '{tmp_path / 'r.parquet'}'").fetchall()}
    assert tops == {"*"}
    assert doc["generalization"]["age"]["at_top"] is True
    assert any("'age' is generalized to the top" in w for w in doc["warnings"])
