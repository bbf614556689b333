"""`check --against` holds a report to the requirements it states (review h4 of the eighty-fifth
round): each l-diversity and p model's reached value against its own l, p or c, the spec's when
given, and, with rows suppressed, t against what the file alone bounds."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pytest
from forked_cli import run_cli

import sqlclose

DISEASES = ["flu", "pneumonia", "bronchitis", "gastritis", "ulcer", "colitis"]


def _rows() -> pa.Table:
    rng = random.Random(7)
    n = 60  # and one outlier, which the optimum suppresses
    return pa.table({"zip": [f"4760{rng.randrange(3)}" for _ in range(n)] + ["99999"],
                     "age": [rng.randrange(20, 60) for _ in range(n)] + [118],
                     "disease": [rng.choice(DISEASES) for _ in range(n)] + ["colitis"],
                     "d2": [rng.choice(DISEASES[:4]) for _ in range(n)] + ["flu"]})


SPEC = {"privacy": {"k": 3, "suppression": 0.05},
        "quasi_identifiers": {"zip": {"mask": True, "length": 5}, "age": {"bands": [10, 20], "domain": [0, 120]}},
        "sensitive": {"disease": {"distance": "equal", "t": 0.6, "entropy_l": 1.5},
                      "d2": {"distinct_l": 2, "p": 2, "recursive": {"c": 3, "l": 2}}}}


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("against")
    with sqlclose.anonymize(_rows(), SPEC) as release:
        release.write(folder / "r.parquet")
    return folder, json.loads((folder / "r.parquet.report.json").read_text())


def _checked(folder: Path, doc: dict, name: str):
    (folder / name).write_text(json.dumps(doc))
    return run_cli(["check", folder / "r.parquet", "--against", folder / name])


def test_the_untouched_report_passes(released):
    folder, doc = released
    assert doc["suppressed_rows"] > 0  # the t bound below needs rows suppressed
    result = _checked(folder, doc, "same.json")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("model", "parameter", "said"), [
    ("entropy_l", "l", "not at least its own l"), ("distinct_l", "l", "not at least its own l"),
    ("p", "p", "not at least its own p"), ("recursive", "c", "not below its own c")])
def test_a_requirement_above_what_is_reached_is_refused(released, model, parameter, said):
    """A report's l, p or c set past the value it says it reached (the reached value left as the
    file decides it) passed, and its page said "verified"."""
    folder, doc = released
    column = "disease" if model == "entropy_l" else "d2"
    edited = json.loads(json.dumps(doc))
    entry = edited["privacy"]["sensitive"][column][model]
    reached = entry["reached"]
    entry[parameter] = reached * 0.9 if model == "recursive" else (int(reached) + 1 if parameter != "l" or
                                                                   model == "distinct_l" else reached + 0.5)
    result = _checked(folder, edited, f"{model}.json")
    assert result.returncode == 4 and f"privacy.sensitive.{column}.{model}: the report says it reached" in \
        result.stderr and said in result.stderr, result.stderr


def test_a_t_below_what_the_file_bounds_is_refused(released):
    """With rows suppressed the input's distribution is the file's mixed with theirs (share f): some
    class is at least t_against_release - f from it, so a t below that is false whatever the input."""
    folder, doc = released
    share = doc["suppressed_rows"] / doc["input"]["rows"]
    bound = doc["t_against_release"]["disease"] - share
    assert bound > 0.02
    edited = json.loads(json.dumps(doc))
    edited["privacy"]["sensitive"]["disease"]["t"] = round(bound - 0.01, 4)
    result = _checked(folder, edited, "t.json")
    assert result.returncode == 4 and "privacy.sensitive.disease.t: the report says" in result.stderr, result.stderr


def _least_limit_allowing(suppressed: int, rows: int) -> Fraction:
    """The least limit in thousandths whose floor(limit × rows) reaches ``suppressed``."""
    return Fraction(math.ceil(Fraction(1000 * suppressed, rows)), 1000)


@pytest.mark.parametrize("step", [0, -1], ids=["limit allowing every suppressed row", "limit one row short"])
def test_suppressed_rows_are_held_to_the_reports_own_suppression_limit(released, step):
    """A report may say it suppressed r rows only if floor(suppression_limit × rows entering the
    search) ≥ r (docs/verification.md). The released report's limit is set to the least value in
    thousandths allowing its r rows, and to the one below, which allows r − 1 (both worked out
    with Fraction here); nothing else is edited, so the file and its digest still match."""
    folder, doc = released
    suppressed, rows = doc["suppressed_rows"], doc["input"]["rows"] - doc["input"].get("dropped_null_rows", 0)
    assert suppressed > 0
    limit = _least_limit_allowing(suppressed, rows) + Fraction(step, 1000)
    assert math.floor(limit * rows) == suppressed + step  # r rows allowed, or r − 1
    edited = json.loads(json.dumps(doc))
    edited["privacy"]["suppression_limit"] = float(limit)
    assert Fraction(repr(float(limit))) == limit  # the float written reads back as that decimal
    result = _checked(folder, edited, f"limit{step}.json")
    if step == 0:
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode == 4, result.stderr
        assert f"suppressed_rows: the report says {suppressed}, beyond its own suppression_limit {float(limit)} " \
               f"of {rows} rows" in result.stderr, result.stderr


def test_a_requirement_unlike_the_specs_is_refused(released, tmp_path):
    """With --spec the report's parameters were not compared with the spec's: recursive l 2 → 3
    passed."""
    folder, doc = released
    edited = json.loads(json.dumps(doc))
    edited["privacy"]["sensitive"]["d2"]["recursive"]["l"] = 3
    (folder / "l3.json").write_text(json.dumps(edited))
    toml = tmp_path / "spec.toml"
    toml.write_text(SPEC_TOML)
    result = run_cli(["check", folder / "r.parquet", "--against", folder / "l3.json", "--spec", toml])
    assert result.returncode == 4 and "privacy.sensitive.d2.recursive.l: the report says 3, the spec given" \
        in result.stderr, result.stderr


SPEC_TOML = """
[privacy]
k = 3
suppression = 0.05
[quasi_identifiers]
zip = { mask = true, length = 5 }
age = { bands = [10, 20], domain = [0, 120] }
[sensitive.disease]
distance = "equal"
t = 0.6
entropy_l = 1.5
[sensitive.d2]
distinct_l = 2
p = 2
recursive = { c = 3, l = 2 }
"""


def _against_spec(folder: Path, tmp_path: Path, doc: dict, spec_text: str):
    (folder / "edited.json").write_text(json.dumps(doc))
    toml = tmp_path / "spec.toml"
    toml.write_text(spec_text)
    return run_cli(["check", folder / "r.parquet", "--against", folder / "edited.json", "--spec", toml])


def test_the_untouched_report_matches_its_spec(released, tmp_path):
    folder, doc = released
    result = _against_spec(folder, tmp_path, doc, SPEC_TOML)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("spec_edit", "said"), [
    (("k = 3", "k = 4"), "privacy.k: the report says 3, the spec given (--spec) asks for 4"),
    (("suppression = 0.05", "suppression = 0.0"), "privacy.suppression_limit: the report says 0.05, the spec given"),
    (("t = 0.6", "t = 0.5"), "privacy.sensitive.disease.t: the report says 0.6, the spec given (--spec) 0.5"),
    (('distance = "equal"', 'distance = "hierarchical"\nhierarchy = { tree = { "*" = ["flu", "pneumonia", '
                             '"bronchitis", "gastritis", "ulcer", "colitis"] } }'),
     'privacy.sensitive.disease.distance: the report says "equal", the spec given (--spec) "hierarchical"'),
])
def test_a_report_is_held_to_the_requirements_of_the_spec_given(released, tmp_path, spec_edit, said):
    """Eighty-seventh round's review: with --spec, a report whose k, suppression limit, t or
    distance was not the spec's passed (the report as written, checked against a spec asking for
    more). The oracle is the spec given: each of its values differs from the report's by one edit."""
    folder, doc = released
    old, new = spec_edit
    result = _against_spec(folder, tmp_path, doc, SPEC_TOML.replace(old, new, 1))
    assert result.returncode == 4 and said in result.stderr, result.stderr


@pytest.mark.parametrize("model", ["t", "entropy_l"])
def test_a_model_the_spec_asks_for_left_out_of_the_report_is_refused(released, tmp_path, model):
    """A report with the disease column's t model (or its entropy l-diversity) cut out passed with
    --spec: the spec asks for it, so the report's silence is no claim met."""
    folder, doc = released
    edited = json.loads(json.dumps(doc))
    entry = edited["privacy"]["sensitive"]["disease"]
    if model == "t":
        for key in ("t", "distance", "max_emd", "emd", "max_distance"):
            entry.pop(key, None)
        edited.get("t_against_release", {}).pop("disease", None)
    else:
        entry.pop(model)
    result = _against_spec(folder, tmp_path, edited, SPEC_TOML)
    said = "privacy.sensitive.disease.t: the report says null" if model == "t" else \
        "privacy.sensitive.disease.entropy_l: the spec given (--spec) asks for it, the report holds none"
    assert result.returncode == 4 and said in result.stderr, result.stderr


def test_a_sensitive_column_the_spec_does_not_name_is_a_mismatch_not_an_internal_error(released, tmp_path):
    """A spec without the report's d2 column ended as `internal error: KeyError: 'd2'` (exit 1)."""
    folder, doc = released
    spec = SPEC_TOML[:SPEC_TOML.index("[sensitive.d2]")]
    result = _against_spec(folder, tmp_path, doc, spec)
    assert result.returncode == 4, result.stderr
    assert "the report holds column 'd2', which the spec given (--spec) does not name as sensitive" in result.stderr
