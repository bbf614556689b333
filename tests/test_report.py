"""The report is a typed, documented model: its schema file cannot drift, and what it says about
the generalization is what a plain GROUP BY over the written file finds."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

import sqlclose
from sqlclose.release.report import SCHEMA_VERSION, Report, json_schema

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "datasets" / "table3" / "table3.toml"


def test_the_published_schema_is_the_models():
    assert (REPO / "docs" / "report-schema.json").read_text() == json_schema(), \
        "regenerate it: python -m sqlclose.release.report > docs/report-schema.json"


# The JSON types each kind of figure the report readers check (audit/claims.py) may have in the schema.
_SCHEMA_TYPES = {"count": {"integer"}, "level": {"integer"}, "number": {"number", "integer"}, "string": {"string"},
                 "flag": {"boolean"}, "object": {"object"}, "strings": {"array"}, "distance": {"string"},
                 "algorithm": {"string"}, "strategy": {"string"}, "scope": {"string"}, "path": {"string"}}


def _schema_leaves(schema: dict, node: object, parts: list[str]) -> list[dict]:
    """The schema nodes a figure's path (``*`` any key) reaches, through $ref and anyOf; an untyped
    object's keys reach ``{}`` (any)."""
    node = node if not (isinstance(node, dict) and "$ref" in node) else schema["$defs"][node["$ref"].split("/")[-1]]
    if isinstance(node, dict) and "anyOf" in node:
        return [leaf for option in node["anyOf"] for leaf in _schema_leaves(schema, option, parts)]
    if not parts:
        return [node]
    if not isinstance(node, dict):
        return []
    if parts[0] == "*":
        below = node.get("additionalProperties", {})
    elif parts[0] in node.get("properties", {}):
        below = node["properties"][parts[0]]
    elif node.get("type") == "object" and "properties" not in node:
        below = {}  # an object of any keys
    else:
        return []
    return _schema_leaves(schema, {} if below is True else below, parts[1:])


def test_the_report_readers_figure_kinds_agree_with_the_report_schema():
    """audit/claims.py keeps its own table of the report's figures and their kinds (it may not import
    the release's models), which a field renamed or retyped in ``Report`` would silently leave behind
    (the read-through of the fifty-first round). Every figure it checks must be a path of the schema
    (docs/report-schema.json, generated from ``Report``) whose types are its kind's."""
    from sqlclose.audit.claims import _FIGURES

    schema = json.loads(json_schema())
    for pattern, kind in _FIGURES.items():
        leaves = _schema_leaves(schema, schema, pattern.split("."))
        assert leaves, f"{pattern} is no field of the report schema"
        types = {leaf["type"] for leaf in leaves if "type" in leaf} - {"null"}
        assert types <= _SCHEMA_TYPES[kind], f"{pattern}: the schema says {sorted(types)}, claims.py {kind}"


def _schema_sections(schema: dict, node: object, prefix: str = "") -> set[str]:
    """Every object of the schema by its path (``*`` any key), through $ref and anyOf."""
    node = node if not (isinstance(node, dict) and "$ref" in node) else schema["$defs"][node["$ref"].split("/")[-1]]
    if isinstance(node, dict) and "anyOf" in node:
        return {path for option in node["anyOf"] for path in _schema_sections(schema, option, prefix)}
    if not isinstance(node, dict) or node.get("type") != "object":
        return set()
    found = {prefix} if prefix else set()
    for name, below in node.get("properties", {}).items():
        found |= _schema_sections(schema, below, f"{prefix}.{name}" if prefix else name)
    if isinstance(node.get("additionalProperties"), dict):
        found |= _schema_sections(schema, node["additionalProperties"], f"{prefix}.*")
    return found


# Sections no reader of a report takes (check --against, the sign-off page).
_UNREAD_SECTIONS = {"timings", "output.column_roles", "warehouse", "warehouse.expected", "warehouse.sensitive_columns",
                    "warehouse.verification_models"}


def test_the_report_readers_sections_agree_with_the_report_schema():
    """Review rv26 #6: a section given as null (t_against_release, lattice.levels, hierarchies, a
    column's utility.sensitive entry) crashed the report's readers, which took every section as an
    object. audit/claims.py refuses a null section where the schema allows none and a required one
    left out, after its own tables: every section of the schema must be one of its figures (or
    checked by name, or read by no reader), and which may be null and which are required must be the
    schema's, so that a section added or made nullable in ``Report`` cannot be forgotten."""
    from sqlclose.audit.claims import _FIGURES, _MAY_BE_NULL, _REQUIRED_SECTIONS, _SECTION_OF, _SECTIONS

    schema = json.loads(json_schema())
    read = {pattern for pattern, kind in _FIGURES.items() if kind == "object"}
    by_name = {*_SECTIONS, "generalization.*", "privacy.sensitive.*"}  # read_report's own object checks
    unknown = _schema_sections(schema, schema) - read - by_name - _UNREAD_SECTIONS
    assert not unknown, f"sections of the schema audit/claims.py does not classify: {sorted(unknown)}"
    for pattern in read:
        parent, _, name = pattern.rpartition(".")
        nullable = any(leaf.get("type") == "null" for leaf in _schema_leaves(schema, schema, pattern.split(".")))
        assert nullable == (pattern in _MAY_BE_NULL), f"{pattern}: the schema allows null: {nullable}"
        holders = _schema_leaves(schema, schema, parent.split(".") if parent else [])
        required = name != "*" and any(name in holder.get("required", []) for holder in holders)
        assert required == (pattern in _REQUIRED_SECTIONS), f"{pattern}: the schema requires it: {required}"
    assert _MAY_BE_NULL <= read and set(_SECTION_OF) <= _MAY_BE_NULL


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
