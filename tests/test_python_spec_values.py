"""A spec given from Python with numpy values and ranges (a tree's group as `df.age.unique()`, a
domain as `np.int64`) runs end to end: it validated, then `anonymize`, `sweep` and GAA stopped with
a bare `TypeError: ndarray` when the spec was hashed, after the data was read (review of the
ninety-sixth round). The oracles: plain GROUP BYs over the written release and over the source with
the tree written as a CASE, Table 3's optimum worked out by hand, and the hash of the same spec
written with plain Python values."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pytest
from own_connection import rows as _rows
from table3_project import TABLE3

import sqlclose
from sqlclose.errors import SpecError
from sqlclose.model.spec import build_spec
from sqlclose.sweep import sweep

# Table 3's ages, as pandas hands them out: numpy int64 arrays.
FRAME = pd.read_csv(TABLE3 / "table3.csv", dtype={"zip": str})
YOUNG, OLD = FRAME.age[FRAME.age < 40].unique(), FRAME.age[FRAME.age >= 40].unique()
# The same groups written as plain Python, by hand from table3.csv.
YOUNG_LIST, OLD_LIST = [29, 22, 27, 30, 36, 32], [43, 52, 47]

# zip at level 1 (its last digit masked), age at its tree's level 1, as a plain GROUP BY over the source
SOURCE_CLASSES = (f"SELECT left(zip, 4) || '*' AS z, CASE WHEN age < 40 THEN 'young' ELSE 'old' END AS a, count(*) "
                  f"FROM read_csv('{TABLE3 / 'table3.csv'}', types = {{'zip': 'VARCHAR'}}) GROUP BY ALL ORDER BY ALL")


def _spec(age: object, **more: object) -> dict:
    return {"k": 3, "others": "drop", "quasi_identifiers": {"zip": {"mask": True, "length": 5}, "age": age}, **more}


def _disease_tree(stomach: object) -> dict:
    return {"resp": {"inf": ["flu", "pneumonia", "bronchitis"]},
            "dig": {"stom": stomach, "other": ["gastritis"]}}


@pytest.mark.parametrize("age", [
    {"tree": {"young": YOUNG, "old": OLD}},
    {"tree": {"young": list(YOUNG), "old": list(OLD)}},  # a list of np.int64
    {"tree": {"young": YOUNG_LIST, "old": range(43, 53)}},
], ids=["arrays", "numpy-ints", "range"])
def test_a_tree_of_numpy_groups_is_released(tmp_path, age):
    """At zip=1, age=1 (given: measured alone), the written file's classes are the source's grouped
    by hand, the tree written as a CASE; a sensitive column's tree with a numpy group too."""
    spec = _spec(age, sensitive={"disease": {"distance": "hierarchical", "t": 0.9, "hierarchy": {
        "tree": _disease_tree(np.array(["gastric ulcer", "stomach cancer"]))}}})
    with sqlclose.anonymize(FRAME, spec, node={"zip": 1, "age": 1}) as release:
        release.write_parquet(tmp_path / "r.parquet")
    written = _rows(f"SELECT zip, age, count(*) FROM '{tmp_path / 'r.parquet'}' GROUP BY ALL ORDER BY ALL")
    assert written == _rows(SOURCE_CLASSES)
    assert written == [("4760*", "young", 3), ("4767*", "young", 3), ("4790*", "old", 3)]


@pytest.mark.parametrize("domain", [[np.int64(0), np.int64(120)], np.array([0, 120])], ids=["numpy-ints", "array"])
def test_a_bands_domain_of_numpy_numbers_is_released(tmp_path, domain):
    """Bands of 10 and 20 years, at zip=1, age=2 (the 20-year bands, 20-39 and 40-59), the domain
    declared with numpy numbers: the written file's classes are the source's banded by hand."""
    with sqlclose.anonymize(FRAME, _spec({"bands": [10, 20], "domain": domain}), node={"zip": 1, "age": 2}) as r:
        r.write_parquet(tmp_path / "r.parquet")
    assert _rows(f"SELECT zip, age, count(*) FROM '{tmp_path / 'r.parquet'}' GROUP BY ALL ORDER BY ALL") == \
        [("4760*", "20-39", 3), ("4767*", "20-39", 3), ("4790*", "40-59", 3)]


def test_a_sweep_over_a_tree_of_numpy_groups_finds_the_optimum():
    """Table 3 at k = 2 and 3: zip=1, age=1 is the only node of height 2 whose classes all hold 3
    rows (zip=0 or age=0 leaves every row alone: 9 zips, 9 ages, each class one row; zip=2, age=0
    and zip=0, age=2 alike), so it is the optimum, with 3 classes and discernibility 3 × 3² = 27, as
    the GROUP BY over the source says."""
    result = sweep(FRAME, _spec({"tree": {"young": YOUNG, "old": OLD}}), [2, 3])
    sizes = [n for _, _, n in _rows(SOURCE_CLASSES)]
    assert [(r["k"], r["status"], r["node"], r["classes"], r["discernibility"]) for r in result.rows] == \
        [(k, "ok", "zip=1,age=1", len(sizes), sum(n * n for n in sizes)) for k in (2, 3)]


def test_gaa_over_a_tree_of_numpy_groups_writes_a_release_of_k_rows_a_class(tmp_path):
    """GAA's release, written: every class holds at least k = 3 rows, all 9 rows are there, and the
    ages are the tree's groups with the source's counts (6 under 40, 3 over)."""
    spec = _spec({"tree": {"young": YOUNG, "old": OLD}}, search={"algorithm": "gaa"})
    with sqlclose.anonymize(FRAME, spec) as release:
        release.write_parquet(tmp_path / "r.parquet")
    path = tmp_path / "r.parquet"
    assert _rows(f"SELECT min(n), sum(n) FROM (SELECT count(*) AS n FROM '{path}' GROUP BY zip, age)") == [(3, 9)]
    assert _rows(f"SELECT age, count(*) FROM '{path}' GROUP BY ALL ORDER BY ALL") == \
        [(a, n) for a, n in _rows(f"SELECT a, sum(n) FROM ({SOURCE_CLASSES.replace('count(*)', 'count(*) AS n')}) "
                                   "GROUP BY a ORDER BY a")]


@pytest.mark.parametrize("given, plain", [
    ({"tree": {"young": YOUNG, "old": OLD}}, {"tree": {"young": YOUNG_LIST, "old": OLD_LIST}}),
    ({"tree": {"young": [np.int64(a) for a in YOUNG_LIST], "old": range(43, 53)}},
     {"tree": {"young": YOUNG_LIST, "old": list(range(43, 53))}}),
    ({"tree": {"*": np.array([True, False])}}, {"tree": {"*": [True, False]}}),
    ({"tree": {"*": [np.datetime64("2024-01-31"), np.datetime64("2024-01-31T10:00:00.5", "ns")]}},
     {"tree": {"*": [datetime.date(2024, 1, 31), datetime.datetime(2024, 1, 31, 10, 0, 0, 500000)]}}),
    # a datetime64 finer than a microsecond has no Python value: its leaf is the text it is matched as
    ({"tree": {"*": [np.datetime64("2024-01-31T10:00:00.000000001", "ns")]}},
     {"tree": {"*": ["2024-01-31 10:00:00.000000001"]}}),
    ({"bands": np.array([10, 20]), "domain": [np.int64(0), np.int64(120)], "origin": np.int64(0)},
     {"bands": [10, 20], "domain": [0, 120], "origin": 0}),
    ({"bands": [10, 20], "domain": np.array([0.0, 120.5], dtype=np.float32)},
     {"bands": [10, 20], "domain": [0.0, 120.5]}),
    ({"mask": np.array([1, 3]), "length": np.int64(5)}, {"mask": [1, 3], "length": 5}),
], ids=["arrays", "ints-range", "bools", "moments", "nanoseconds", "bands", "float32-domain", "mask"])
def test_numpy_values_and_ranges_hash_as_the_plain_spec(given, plain):
    """The spec's hash is its plain Python twin's: made plain when validated, no later stage meets
    a numpy value (the hash stopped with a TypeError)."""
    assert build_spec(_spec(given)).sha256() == build_spec(_spec(plain)).sha256()
    assert build_spec(_spec(given)).model_dump() == build_spec(_spec(plain)).model_dump()


def test_a_sensitive_trees_numpy_group_hashes_as_the_plain_spec():
    spec = {**_spec({"mask": True}), "sensitive": {"disease": {"distance": "hierarchical", "t": 0.5}}}

    def hashed(stomach: object) -> str:
        spec["sensitive"]["disease"]["hierarchy"] = {"tree": _disease_tree(stomach)}
        return build_spec(spec).sha256()

    assert hashed(np.array(["gastric ulcer", "stomach cancer"])) == hashed(["gastric ulcer", "stomach cancer"])


def test_numpy_values_are_checked_as_the_plain_values_with_the_spec():
    """Band widths given as an array were let past the nesting check (it looked at lists only) and
    refused after the source was read; a float32 leaf was refused only when the tree was built. Both
    are refused with the spec now, as a plain spec's are."""
    with pytest.raises(SpecError) as e:
        build_spec(_spec({"bands": np.array([10, 25])}))
    assert str(e.value) == ("spec: invalid spec: quasi_identifiers.age.bands: band widths must nest, each a multiple "
                            "(at least 2×) of the previous: 10 then 25 would give a band two parents (e.g. bands = "
                            "[5, 10, 20]) (got [10, 25])")
    with pytest.raises(SpecError) as e:
        build_spec(_spec({"tree": {"young": YOUNG, "old": np.array([43.5], dtype=np.float32)}}))
    assert str(e.value).startswith("spec: invalid spec: quasi_identifiers.age.tree: group 'old': a numpy float32 has "
                                   "no text sqlclose can write as the engine writes a column's value")
    with pytest.raises(SpecError) as e:  # a timedelta64 is numpy's integer, and was taken for a number
        build_spec(_spec({"bands": [10], "domain": [np.timedelta64(0), np.timedelta64(5)]}))
    assert "a bands domain holds two finite numbers, e.g. domain = [0, 120]; got np.timedelta64(0)" in str(e.value)
