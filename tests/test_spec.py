"""Tests for sqlclose.spec: loading TOML, path resolution, env expansion, validation, hashing."""

from __future__ import annotations

import copy
import hmac
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import sqlclose
from sqlclose.errors import InputError, SpecError
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.spec import Spec, as_spec, build_spec, expand_env, load_spec

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"

BASE_TOML = """
others = "keep"   # salary: neither QI nor sensitive here, released unchanged

[source]
path = "data/table3.csv"

[output]
path = "out/release.parquet"
report = "out/report.json"

[privacy]
k = 3

[quasi_identifiers]
zip = { mask = true }
age = { file = "h/age.csv" }

[sensitive.disease]
distance = "hierarchical"
t = 0.3
hierarchy = "h/disease.csv"
"""


def write_spec(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path):
    """tmp/proj/{spec.toml, data/table3.csv, h/age.csv, h/disease.csv}"""
    root = tmp_path / "proj"
    (root / "data").mkdir(parents=True)
    (root / "h").mkdir()
    shutil.copy(TABLE3 / "table3.csv", root / "data" / "table3.csv")
    shutil.copy(TABLE3 / "age.csv", root / "h" / "age.csv")
    shutil.copy(TABLE3 / "disease.csv", root / "h" / "disease.csv")
    write_spec(root / "spec.toml", BASE_TOML)
    return root


# ---------------------------------------------------------------------------- paths


def test_relative_paths_are_relative_to_the_spec_file(project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the spec's directory
    spec = load_spec(project / "spec.toml")
    assert spec.source.path == project / "data" / "table3.csv"
    assert spec.output.path == project / "out" / "release.parquet"
    assert spec.output.report == project / "out" / "report.json"
    assert spec.quasi_identifiers["age"].file == project / "h" / "age.csv"
    assert spec.sensitive["disease"].hierarchy.file == project / "h" / "disease.csv"
    assert spec.source.kind == "csv"


def test_relative_spec_path_from_another_directory(project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = load_spec(Path("proj") / "spec.toml")
    assert Path(spec.source.path).resolve() == (project / "data" / "table3.csv").resolve()
    assert Path(spec.quasi_identifiers["age"].file).resolve() == (project / "h" / "age.csv").resolve()
    # and it runs from here
    release = sqlclose.anonymize(None, spec)
    assert release.node == {"zip": 1, "age": 2}


def test_absolute_paths_kept_and_shorthand_file_resolved(tmp_path):
    absolute = TABLE3 / "table3.csv"
    spec_path = write_spec(tmp_path / "s" / "spec.toml", f"""
[source]
path = "{absolute.as_posix()}"
[privacy]
k = 2
[quasi_identifiers]
age = "ages.csv"
""")
    spec = load_spec(spec_path)
    assert spec.source.path == absolute
    assert spec.quasi_identifiers["age"].kind == "file"
    assert spec.quasi_identifiers["age"].file == tmp_path / "s" / "ages.csv"


def test_tilde_expands_to_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    spec = load_spec(write_spec(tmp_path / "spec.toml", """
[source]
path = "~/data.parquet"
[privacy]
k = 2
[quasi_identifiers]
zip = { mask = true }
"""))
    assert spec.source.path == tmp_path / "home" / "data.parquet"
    assert spec.source.kind == "parquet"


def test_missing_spec_file(tmp_path):
    with pytest.raises(SpecError) as e:
        load_spec(tmp_path / "nope.toml")
    assert "nope.toml" in str(e.value) and "does not exist" in str(e.value)


# ---------------------------------------------------------------------------- environment


def test_env_var_expansion(project, tmp_path, monkeypatch):
    monkeypatch.setenv("SQLCLOSE_TEST_DATA", str(project / "data"))
    monkeypatch.setenv("SQLCLOSE_TEST_NAME", "release")
    text = BASE_TOML.replace('path = "data/table3.csv"', 'path = "${SQLCLOSE_TEST_DATA}/table3.csv"')
    text = text.replace('path = "out/release.parquet"', 'path = "out/${SQLCLOSE_TEST_NAME}.parquet"')
    spec = load_spec(write_spec(project / "env.toml", text))
    assert spec.source.path == project / "data" / "table3.csv"
    assert spec.output.path == project / "out" / "release.parquet"


def test_env_var_default_used_when_unset_or_empty(project, monkeypatch):
    monkeypatch.delenv("SQLCLOSE_TEST_UNSET", raising=False)
    monkeypatch.setenv("SQLCLOSE_TEST_EMPTY", "")
    text = BASE_TOML.replace('path = "data/table3.csv"', 'path = "${SQLCLOSE_TEST_UNSET:-data}/table3.csv"')
    text = text.replace('file = "h/age.csv"', 'file = "${SQLCLOSE_TEST_EMPTY:-h}/age.csv"')
    spec = load_spec(write_spec(project / "env.toml", text))
    assert spec.source.path == project / "data" / "table3.csv"
    assert spec.quasi_identifiers["age"].file == project / "h" / "age.csv"


def test_env_var_set_wins_over_default(project, tmp_path, monkeypatch):
    monkeypatch.setenv("SQLCLOSE_TEST_DIR", str(tmp_path / "elsewhere"))
    text = BASE_TOML.replace('path = "data/table3.csv"', 'path = "${SQLCLOSE_TEST_DIR:-data}/table3.csv"')
    spec = load_spec(write_spec(project / "env.toml", text))
    assert spec.source.path == tmp_path / "elsewhere" / "table3.csv"


def test_env_var_unset_without_default_is_an_error(project, monkeypatch):
    monkeypatch.delenv("SQLCLOSE_TEST_MISSING", raising=False)
    text = BASE_TOML.replace('file = "h/age.csv"', 'file = "${SQLCLOSE_TEST_MISSING}/age.csv"')
    with pytest.raises(SpecError) as e:
        load_spec(write_spec(project / "env.toml", text))
    assert "SQLCLOSE_TEST_MISSING" in str(e.value)
    assert ":-default" in str(e.value)


def test_expand_env_direct(monkeypatch):
    monkeypatch.setenv("SQLCLOSE_A", "x")
    monkeypatch.delenv("SQLCLOSE_B", raising=False)
    assert expand_env("${SQLCLOSE_A}/${SQLCLOSE_B:-y}/$HOME") == "x/y/$HOME"  # only ${…} expands
    assert expand_env("${SQLCLOSE_B:-}z") == "z"


# ---------------------------------------------------------------------------- TOML and validation messages


def test_toml_syntax_error_names_the_file(tmp_path):
    p = write_spec(tmp_path / "broken.toml", "[quasi_identifiers\nzip = { mask = true }\n")
    with pytest.raises(SpecError) as e:
        load_spec(p)
    assert str(p) in str(e.value)
    assert "not valid TOML" in str(e.value)
    assert "line 1" in str(e.value)


@pytest.mark.parametrize("old,new,key_path,says", [
    ("[privacy]\nk = 3", "[privacy]\nk = 3\nkk = 4", "privacy.kk", "did you mean 'k'?"),
    ("zip = { mask = true }", "zip = { maks = true, mask = true }", "quasi_identifiers.zip.maks",
     "did you mean 'mask'?"),
    ("t = 0.3", "t = 0.3\ntt = 0.1", "sensitive.disease.tt", "did you mean 't'?"),
    ('[source]\npath = "data/table3.csv"', '[source]\npath = "data/table3.csv"\nsheet = 1', "source.sheet",
     "(this table's keys: path, query, folder, table, delimiter, format, dialect, columns, glob, encoding, nulls, "
     "types)"),  # nothing close to "sheet": [source]'s keys, as the spec reference lists them
    ("\n[source]", "colour = \"red\"\n[source]", "colour",
     "(this table's keys: quasi_identifiers, sensitive, identifiers, others, privacy, source, output, engine, search)"),
])
def test_unknown_keys_rejected_with_key_path(project, old, new, key_path, says):
    assert old in BASE_TOML
    p = write_spec(project / "typo.toml", BASE_TOML.replace(old, new))
    with pytest.raises(SpecError) as e:
        load_spec(p)
    msg = str(e.value)
    assert str(p) in msg
    assert f": invalid spec: {key_path}: unknown key" in msg and says in msg, msg


def test_several_problems_listed_together(project):
    text = BASE_TOML.replace("k = 3", "k = 0").replace("t = 0.3", "t = 3")
    with pytest.raises(SpecError) as e:
        load_spec(write_spec(project / "two.toml", text))
    msg = str(e.value)
    assert "2 problems" in msg
    assert "privacy.k" in msg and "sensitive.disease.t" in msg


def test_spec_error_is_an_input_error():
    assert issubclass(SpecError, InputError)
    assert SpecError("x").exit_code == 2


# ---------------------------------------------------------------------------- one hierarchy source


@pytest.mark.parametrize("entry,got", [
    ({"mask": True, "file": "age.csv"}, "file, mask"),
    ({"bands": [5, 10], "tree": {"a": ["1"]}}, "bands, tree"),
    ({}, "none"),
    ({"mask": False}, "none"),
    ({"nulls": "drop"}, "none"),
])
def test_exactly_one_hierarchy_source(entry, got):
    with pytest.raises(SpecError) as e:
        build_spec({"quasi_identifiers": {"age": entry}, "k": 2})
    msg = str(e.value)
    assert "quasi_identifiers.age" in msg
    assert "exactly one hierarchy source" in msg
    assert f"(got {got})" in msg


def test_each_single_hierarchy_source_accepted():
    h = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    for entry, kind in [({"mask": True}, "mask"), ({"mask": [1, 3]}, "mask"), ({"bands": [5]}, "bands"),
                        ({"file": "age.csv"}, "file"), ({"tree": {"x": ["a"]}}, "tree"), (h, "hierarchy"),
                        ("age.csv", "file")]:
        spec = build_spec({"quasi_identifiers": {"age": entry}, "k": 2})
        assert spec.quasi_identifiers["age"].kind == kind


def test_sensitive_hierarchy_rules():
    base = {"quasi_identifiers": {"zip": {"mask": True}}, "k": 2}
    with pytest.raises(SpecError, match="needs a hierarchy"):
        build_spec({**base, "sensitive": {"d": {"t": 0.3, "distance": "hierarchical"}}})
    # A hierarchy is allowed with any distance: the similarity audit groups values by it.
    spec = build_spec({**base, "sensitive": {"d": {"t": 0.3, "distance": "equal", "hierarchy": "d.csv"}}})
    assert spec.sensitive["d"].hierarchy.kind == "file"
    with pytest.raises(SpecError, match="no privacy model"):
        build_spec({**base, "sensitive": {"d": {"distance": "equal"}}})
    with pytest.raises(SpecError, match="not bands"):
        build_spec({**base, "sensitive": {"d": {"t": 0.3, "distance": "hierarchical", "hierarchy": {"bands": [5]}}}})
    with pytest.raises(SpecError, match="ordered domain"):
        build_spec({**base, "sensitive": {"d": {"t": 0.3, "distance": "ordered", "nulls": "value"}}})
    with pytest.raises(SpecError, match="sensitive.d.distance"):
        build_spec({**base, "sensitive": {"d": {"t": 0.3, "distance": "euclidean"}}})
    spec = build_spec({**base, "sensitive": {"d": {"t": 0.3}}})
    assert spec.sensitive["d"].distance == "equal"


@pytest.mark.parametrize("data,fragment", [
    ({"quasi_identifiers": {}, "k": 2}, "at least one quasi-identifier"),
    ({"quasi_identifiers": {"a": {"mask": True}}, "identifiers": ["a"], "k": 2}, "'a' is declared both"),
    ({"quasi_identifiers": {"a": {"mask": True}}, "sensitive": {"a": {"t": 0.1}}, "k": 2}, "'a' is declared both"),
    ({"quasi_identifiers": {"a": {"mask": True}}, "k": 0}, "privacy.k"),
    ({"quasi_identifiers": {"a": {"mask": True}}, "suppression": 1.0, "k": 2}, "privacy.suppression"),
    ({"quasi_identifiers": {"a": {"mask": True}}, "source": {"path": "x.duckdb"}, "k": 2}, "needs table"),
    ({"quasi_identifiers": {"a": {"mask": True}}, "source": {"path": "x.csv", "table": "t"}, "k": 2},
     "only applies"),
    ({"quasi_identifiers": {"a": {"mask": True}}, "source": {"path": "x.xlsx"}, "k": 2}, "cannot tell the format"),
    ({"quasi_identifiers": {"a": {"mask": True, "nulls": "maybe"}}, "k": 2}, "quasi_identifiers.a.nulls"),
])
def test_other_validation_rules(data, fragment):
    with pytest.raises(SpecError) as e:
        build_spec(data)
    assert fragment in str(e.value)


# ---------------------------------------------------------------------------- numbers, delimiters, bands

QI = {"a": {"mask": True}}


@pytest.mark.parametrize("data,key,fragment", [
    ({"k": True}, "privacy.k", "give a number, not true or false"),
    ({"k": "3"}, "privacy.k", "give a number, not text"),
    ({"k": 3, "suppression": "0.1"}, "privacy.suppression", "give a number, not text"),
    ({"k": 3, "suppression": True}, "privacy.suppression", "give a number, not true or false"),
    ({"k": 3, "sensitive": {"d": {"t": True}}}, "sensitive.d.t", "give a number, not true or false"),
    ({"k": 3, "sensitive": {"d": {"t": "0.2"}}}, "sensitive.d.t", "give a number, not text"),
    ({"k": 3, "sensitive": {"d": {"t": float("inf"), "distance": "kl"}}}, "sensitive.d.t", "give a finite number"),
    ({"k": 3, "sensitive": {"d": {"distinct_l": True}}}, "sensitive.d.distinct_l", "not true or false"),
    ({"k": 3, "sensitive": {"d": {"entropy_l": "2"}}}, "sensitive.d.entropy_l", "not text"),
    ({"k": 3, "sensitive": {"d": {"p": True}}}, "sensitive.d.p", "not true or false"),
    ({"k": 3, "sensitive": {"d": {"recursive": {"c": "3", "l": 2}}}}, "sensitive.d.recursive.c", "not text"),
    ({"k": 3, "sensitive": {"d": {"recursive": {"c": 3, "l": True}}}}, "sensitive.d.recursive.l", "not true"),
])
def test_numeric_fields_refuse_booleans_text_and_non_finite_values(data, key, fragment):
    # Pydantic's lax mode read k = true as 1, t = true as 1.0 and "0.1" as 0.1.
    with pytest.raises(SpecError) as e:
        build_spec({"quasi_identifiers": QI, **data})
    line = next(ln for ln in str(e.value).splitlines() if f": invalid spec: {key}: " in ln)  # one problem, one line
    assert fragment in line


@pytest.mark.parametrize("entry,key,fragment", [
    ({"bands": [float("nan")]}, "bands", "band widths must be finite positive numbers"),
    ({"bands": [5, float("inf")]}, "bands", "band widths must be finite positive numbers"),
    ({"bands": [0]}, "bands", "band widths must be finite positive numbers"),
    ({"bands": [True]}, "bands", "band widths must be finite positive numbers"),
    ({"bands": [10], "origin": float("nan")}, "origin", "origin must be a finite number"),
    ({"bands": [10], "origin": float("-inf")}, "origin", "origin must be a finite number"),
    ({"file": "a.csv", "delimiter": ""}, "delimiter", "the delimiter must be one character"),
    ({"file": "a.csv", "delimiter": ";;"}, "delimiter", "the delimiter must be one character"),
    ({"file": "a.csv", "delimiter": "\\t"}, "delimiter", 'a tab is written "\\t" in a TOML basic string'),
])
def test_bands_origin_and_hierarchy_delimiter_are_checked_when_read(entry, key, fragment):
    # Once: "cannot convert float NaN to integer", "[nan, nan)" bands, or csv's TypeError.
    with pytest.raises(SpecError) as e:
        build_spec({"quasi_identifiers": {"age": entry}, "k": 2})
    line = next(ln for ln in str(e.value).splitlines() if f": invalid spec: quasi_identifiers.age.{key}: " in ln)
    assert fragment in line


@pytest.mark.parametrize("delimiter", ["", ",,", "\\t"])
def test_source_delimiter_is_one_character(delimiter):
    with pytest.raises(SpecError) as e:
        build_spec({"quasi_identifiers": QI, "k": 2, "source": {"path": "x.csv", "delimiter": delimiter}})
    assert ": invalid spec: source.delimiter: the delimiter must be one character" in str(e.value)
    assert build_spec({"quasi_identifiers": QI, "k": 2, "source": {"path": "x.csv", "delimiter": "\t"}})


def test_a_spec_with_a_byte_order_mark_loads(project):
    spec_path = project / "spec.toml"
    spec_path.write_bytes(b"\xef\xbb\xbf" + spec_path.read_bytes())
    assert load_spec(spec_path).k == 3


def test_a_spec_that_is_not_utf8_names_the_line(project):
    spec_path = project / "spec.toml"
    spec_path.write_bytes(b"\xef\xbb\xbf# one\n# two\n# r\xe9sum\xe9\n" + BASE_TOML.encode())
    with pytest.raises(SpecError) as e:
        load_spec(spec_path)
    # The byte 0xe9 is at offset 3 (BOM) + 6 + 6 + 3 = 18, on the third line.
    assert str(e.value) == f"spec file {spec_path} is not UTF-8 text (line 3, byte 18); re-save it as UTF-8"


def test_a_spec_path_that_is_a_folder(tmp_path):
    # Once IsADirectoryError: "the environment refused" (exit 5).
    with pytest.raises(SpecError) as e:
        load_spec(tmp_path)
    assert e.value.exit_code == 2
    assert str(e.value) == f"spec file {tmp_path} is a folder: give the path of a TOML file"


# ---------------------------------------------------------------------------- fail closed: vacuous models

@pytest.mark.parametrize("sensitive,shown,fix", [
    ({"d": {"distinct_l": 1}}, "sensitive.d.distinct_l = 1", "raise distinct_l to 2 or more"),
    ({"d": {"p": 1}}, "sensitive.d.p = 1", "raise p to 2 or more"),
    ({"d": {"entropy_l": 1.0}}, "sensitive.d.entropy_l = 1", "raise entropy_l above 1"),
    ({"d": {"t": 1.0}}, "sensitive.d.t = 1", "lower t below 1"),
    ({"d": {"t": 1.0, "distance": "ordered"}}, "sensitive.d.t = 1", "lower t below 1"),
    ({"d": {"t": 1.0, "distance": "hierarchical", "hierarchy": {"tree": {"*": ["x", "y"]}}}}, "sensitive.d.t = 1",
     "lower t below 1"),
    ({"d": {"t": 1.0, "distance": "variational"}}, "sensitive.d.t = 1", "lower t below 1"),
    ({"d": {"recursive": {"c": 1000, "l": 1}}}, "sensitive.d.recursive = { c = 1000, l = 1 }",
     "raise recursive's l to 2 or more"),
    ({"d": {"distinct_l": 1, "t": 1.0}, "e": {"p": 1}}, "sensitive.d.t = 1, sensitive.d.distinct_l = 1, "
     "sensitive.e.p = 1", "lower t below 1 or raise distinct_l to 2 or more or raise p to 2 or more"),
])
def test_k1_with_only_vacuous_models_protects_nothing(sensitive, shown, fix):
    # With k = 1 these released the table unchanged: every table satisfies every model given.
    with pytest.raises(SpecError) as e:
        build_spec({"quasi_identifiers": QI, "k": 1, "sensitive": sensitive})
    assert f"the requirements as given protect nothing: k = 1, and every table satisfies {shown}; " \
           f"raise k (e.g. k = 5), or {fix}" in str(e.value)


@pytest.mark.parametrize("sensitive", [
    {"d": {"recursive": {"c": 1, "l": 1}}},  # a one-valued class fails: r1 < 1 · r1 is false
    {"d": {"recursive": {"c": 2, "l": 2}}},
    {"d": {"t": 1.0, "distance": "kl"}},  # KL's largest value depends on the table
    {"d": {"t": 0.99}},
    {"d": {"entropy_l": 1.01}},
    {"d": {"t": 1.0, "distinct_l": 2}},  # one model that can fail is a requirement
    {"d": {"t": 1.0}, "e": {"p": 2}},
])
def test_k1_with_a_model_that_can_fail_is_a_requirement(sensitive):
    assert build_spec({"quasi_identifiers": QI, "k": 1, "sensitive": sensitive}).k == 1


def test_vacuous_models_with_k_above_1_are_placeholders():
    # GAA sweeps declare a column with t = 1 to use its strategies: k protects.
    spec = build_spec({"quasi_identifiers": QI, "k": 2, "sensitive": {"d": {"t": 1.0}, "e": {"distinct_l": 1}}})
    assert spec.sensitive["d"].protects_nothing and spec.sensitive["e"].protects_nothing


def test_source_format_overrides_suffix():
    spec = build_spec({"quasi_identifiers": {"a": {"mask": True}}, "k": 2,
                       "source": {"path": "x.bin", "format": "duckdb", "table": "t"}})
    assert spec.source.kind == "duckdb"


def test_top_level_k_is_privacy_k():
    a = build_spec({"quasi_identifiers": {"a": {"mask": True}}, "k": 4, "suppression": 0.1})
    b = build_spec({"quasi_identifiers": {"a": {"mask": True}}, "privacy": {"k": 4, "suppression": 0.1}})
    assert a.k == b.k == 4 and a.suppression == b.suppression == 0.1
    assert a.sha256() == b.sha256()


def test_anonymize_rejects_a_spec_of_another_type():
    with pytest.raises(SpecError, match="int"):
        sqlclose.anonymize(TABLE3 / "table3.csv", 42)


def test_toml_text_given_as_the_spec_is_told_apart_from_a_path():
    # The text of a TOML spec passed as `spec` was taken as a file name: "spec file [privacy]
    # k = 3 … does not exist", over several lines.
    with pytest.raises(SpecError) as e:
        sqlclose.anonymize(TABLE3 / "table3.csv", BASE_TOML)
    message = str(e.value)
    assert "\n" not in message and "TOML text" in message and "tomllib.loads" in message


def test_toml_text_given_to_load_spec_is_told_apart_from_a_path():
    """load_spec took TOML text for a path, "spec file <the whole 866-character text> does not exist",
    and a one-line text ("k = 3", from anonymize too) likewise. Told as anonymize tells it, the text
    never echoed whole; a missing path holding '=' (a Hive folder's) is said both ways, and an
    existing file named with '=' is read. Messages written by hand."""
    text = (TABLE3 / "table3.toml").read_text(encoding="utf-8")
    told = ("give the spec file's path, or the text parsed, tomllib.loads(text), as a dict (its relative paths then "
            "relative to the working folder)")
    for given, message in [
        (text, f"spec is TOML text, not a path: {told}"),
        ("k = 3", f"spec 'k = 3' is TOML text, not a path (it names no file): {told}"),
        ("k = 3  # " + "x" * 71 + "y" * 48,  # 9 + 71 + 48 = 128 characters, cut at 80
         f"spec {'k = 3  # ' + 'x' * 71!r}… (128 characters) is TOML text, not a path (it names no file): {told}"),
        ("data/date=2024/spec.toml",
         f"spec file 'data/date=2024/spec.toml' does not exist; if it is TOML text (it holds '='), not a path: {told}"),
    ]:
        for load in (load_spec, lambda g: sqlclose.anonymize(TABLE3 / "table3.csv", g)):
            with pytest.raises(SpecError) as e:
                load(given)
            assert str(e.value) == message


def test_a_spec_path_no_file_can_have_is_refused_as_bad_input(tmp_path):
    """A name too long for a file was Python's OSError, quoting it whole; a NUL character its bare
    ValueError. A file whose name holds '=' is read as a path."""
    with pytest.raises(SpecError) as e:
        load_spec("x" * 5000)
    assert str(e.value) == (f"spec file {'x' * 300!r}… (5000 characters) cannot be read: File name too long; give the "
                            "path of a TOML file")
    with pytest.raises(SpecError, match=r"^spec file 'a\\x00b\.toml' holds a NUL character, which no file name"):
        load_spec("a\0b.toml")
    named = tmp_path / "date=2024.toml"
    shutil.copy(TABLE3 / "table3.toml", named)
    (tmp_path / "table3.csv").write_bytes((TABLE3 / "table3.csv").read_bytes())
    shutil.copy(TABLE3 / "age.csv", tmp_path)
    shutil.copy(TABLE3 / "disease.csv", tmp_path)
    assert load_spec(str(named)).k == 3


# ---------------------------------------------------------------------------- what a message shows of a value


def _age_refused(qi: object) -> str:
    with pytest.raises(SpecError) as e:
        build_spec({"k": 3, "others": "drop", "quasi_identifiers": {"age": qi}})
    return str(e.value)


BIG = Hierarchy.from_rows([[str(i), "x", "*"] for i in range(5000)])


@pytest.mark.parametrize("key", ["file", "tree", "bands", "mask", "dates"])
def test_a_hierarchy_given_under_another_key_is_named_not_quoted(key):
    """`{"age": {"file": H}}` quoted H whole, every leaf (data, for a hierarchy made of the data's
    values): 99 kB for 5,000 leaves; mask = H said it twice, once per branch of its union. Named by
    its type, with what to write. Written out by hand."""
    assert _age_refused({key: BIG}) == (
        f"spec: invalid spec: quasi_identifiers.age.{key}: a sqlclose.Hierarchy is given as hierarchy = H (or as the "
        f"column's entry itself, \"age\": H), not as {key} = H (got a sqlclose.Hierarchy)")


def test_a_sensitive_hierarchy_given_under_file_is_named_not_quoted():
    with pytest.raises(SpecError) as e:
        build_spec({"k": 3, "quasi_identifiers": {"zip": {"mask": True}},
                    "sensitive": {"disease": {"distinct_l": 2, "hierarchy": {"file": BIG}}}})
    assert str(e.value) == ("spec: invalid spec: sensitive.disease.hierarchy.file: a sqlclose.Hierarchy is given as "
                            "hierarchy = H, not as file = H (got a sqlclose.Hierarchy)")


def test_rows_given_as_a_hierarchy_are_told_to_make_one_not_quoted():
    """`hierarchy = rows` (a list, an array, a DataFrame) said "Input should be a dictionary or an
    instance of Hierarchy (got [['23', '20s', '*'], …])": a dictionary of what, and the rows quoted."""
    rows = [["23", "20s", "*"], ["97", "90s", "*"]]
    make = ("hierarchy takes a sqlclose.Hierarchy: make one of rows (leaf, level 1, …, top) with hierarchy = "
            "sqlclose.Hierarchy.from_rows(rows)")
    assert _age_refused({"hierarchy": rows}) == f"spec: invalid spec: quasi_identifiers.age.hierarchy: {make} (got a " \
        "list of 2 items)"
    assert _age_refused({"hierarchy": np.array(rows)}).endswith(f"{make} (got a numpy array of shape (2, 3))")
    with pytest.raises(SpecError) as e:
        build_spec({"k": 3, "quasi_identifiers": {"zip": {"mask": True}},
                    "sensitive": {"disease": {"distinct_l": 2, "hierarchy": rows}}})
    assert str(e.value) == f"spec: invalid spec: sensitive.disease.hierarchy: {make} (got a list of 2 items)"
    assert _age_refused({"hierarchy": "age.csv"}) == (
        "spec: invalid spec: quasi_identifiers.age.hierarchy: hierarchy takes a sqlclose.Hierarchy; a hierarchy file "
        "is given as file = \"…\" (got 'age.csv')")


def test_a_value_shown_in_a_spec_error_is_bounded_and_never_an_arrays_contents():
    """pydantic's "got …" quoted any value whole: an array of the data's values given as a tree, a
    long list, a Series. Short plain values are still quoted; the rest is named."""
    ages = np.arange(20, 90)
    assert _age_refused({"tree": ages}) == ("spec: invalid spec: quasi_identifiers.age.tree: Input should be a valid "
                                           "dictionary (got a numpy array of shape (70,))")
    assert _age_refused({"tree": list(range(5000))}).endswith("(got a list of 5000 items)")
    assert _age_refused({"file": pd.Series(ages)}).endswith("(got a pandas.Series)")
    assert _age_refused({"tree": ["23", "97"]}).endswith("Input should be a valid dictionary (got ['23', '97'])")
    assert _age_refused({"bands": [10], "domain": list(range(300))}) == (
        "spec: invalid spec: quasi_identifiers.age: domain must be [lowest, highest], e.g. domain = [0, 120]; got a "
        "list of 300 items")


# ---------------------------------------------------------------------------- hashing

REORDERED_TOML = """
others = "keep"

[sensitive.disease]
hierarchy = "h/disease.csv"
t = 0.3
distance = "hierarchical"

[quasi_identifiers]
age = { file = "h/age.csv" }
zip = { mask = true }

[privacy]
k = 3

[output]
report = "out/report.json"
path = "out/release.parquet"

[source]
path = "data/table3.csv"
"""


def test_sha256_stable_and_independent_of_key_order(project):
    a = load_spec(project / "spec.toml")
    b = load_spec(project / "spec.toml")
    c = load_spec(write_spec(project / "reordered.toml", REORDERED_TOML))
    assert len(a.sha256()) == 64 and int(a.sha256(), 16) >= 0
    assert a.sha256() == b.sha256() == c.sha256()
    # the order of QIs is kept in the spec (it is the column order of the lattice) ...
    assert list(c.quasi_identifiers) == ["age", "zip"]


@pytest.mark.parametrize(("toml", "key"), [
    ('[privacy]\nk = 2\nidentifiers = ["name"]\n[quasi_identifiers]\nage = { bands = [5] }\n', "privacy.identifiers"),
    ('[privacy]\nk = 2\n[quasi_identifiers]\nage = { bands = [5] }\nothers = "drop"\n', "quasi_identifiers.others"),
    ('[privacy]\nk = 2\n[quasi_identifiers]\nidentifiers = ["name"]\nage = { bands = [5] }\n',
     "quasi_identifiers.identifiers"),
    ('[privacy]\nk = 2\n[quasi_identifiers]\nage = { bands = [5] }\n[sensitive]\nothers = "keep"\n',
     "sensitive.others"),
])
def test_a_top_level_key_written_inside_a_table_is_told_as_such(tmp_path, toml, key):
    """Review rv8 #7. TOML puts a key written after [table] in that table: `identifiers` after
    [privacy] was an 'unknown key', `others = "drop"` under [quasi_identifiers] a quasi-identifier
    named others ("column 'others' is not in …"), `identifiers` there pydantic's 'Input should be a
    valid dictionary'. Each now says it is a top-level key and where to write it."""
    path = tmp_path / "s.toml"
    path.write_text('[source]\npath = "p.csv"\n' + toml + "[sensitive.d]\ndistinct_l = 2\n"
                    if "[sensitive]" not in toml else '[source]\npath = "p.csv"\n' + toml)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    message = str(caught.value)
    assert f"{key}: {key.split('.')[1]} is a top-level key: write it at the top of the spec, before the first " \
           "[table]" in message, message


@pytest.mark.parametrize(("toml", "said"), [
    ('[privacy]\nk = 2\nsuppression = 5\n', "privacy.suppression: Input should be less than 1; it is a fraction of "
                                             "the rows: 5 % is suppression = 0.05 (got 5)"),
    ('[privacy]\nk = 2\n[output]\npath = "o.parquet"\nsuppression = 0.05\n',
     "output.suppression: suppression belongs under [privacy] (or at the top of the spec, before the first [table]): "
     "TOML makes a key written after [output] a key of that table"),
    ('[privacy]\nsuppression = 0.05\n[output]\npath = "o.parquet"\nk = 5\n', "output.k: k belongs under [privacy]"),
    ('[privacy]\nk = 2\n[quasi_identifiers.zip]\nmask = true\nlength = 0\n',
     "length must be a whole number of characters, at least 1 (e.g. length = 5 for ZIP codes); got 0\n"),
], ids=["suppression-as-percent", "suppression-after-output", "k-after-output", "length-told-once"])
def test_a_spec_mistake_a_person_makes_is_told_with_its_fix(tmp_path, toml, said):
    """Review of the sixty-third round: `suppression = 5` (meant as 5 %) was told only "less than 1";
    `k` written after [output] was an unknown key of [output]; `length = 0` ended "got 0 (got 0)"."""
    path = tmp_path / "s.toml"
    body = toml if "quasi_identifiers" in toml else toml.replace("[privacy]", "[quasi_identifiers]\nage = { bands = "
                                                                              "[5] }\n[privacy]")
    path.write_text('[source]\npath = "p.csv"\n' + body + "[sensitive.d]\ndistinct_l = 2\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert said in str(caught.value) + "\n", str(caught.value)


def test_a_path_with_a_shells_variable_is_told_the_spec_expands_braces(tmp_path, monkeypatch):
    """Review of the sixty-third round: `file = "$HDIR/age.csv"` (a shell's form) was read literally
    and told only as a file that does not exist; a spec expands ${HDIR}. Oracle: the same spec with
    ${HDIR}, HDIR set to the folder holding the file, loads and reads it."""
    import sqlclose

    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "age.csv").write_text("29;*\n22;*\n")
    monkeypatch.setenv("HDIR", str(tmp_path / "h"))
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"age": {"file": "$HDIR/age.csv"}},
            "sensitive": {"d": {"distinct_l": 2}}}
    data = pa.table({"age": [29, 22, 29, 22], "d": ["a", "b", "b", "a"]})
    with pytest.raises(sqlclose.HierarchyError, match=r"does not exist \(a spec expands \$\{HDIR\}, not \$HDIR"):
        sqlclose.anonymize(data, spec)
    (tmp_path / "s.toml").write_text('[privacy]\nk = 2\n[quasi_identifiers]\nage = { file = "${HDIR}/age.csv" }\n'
                                     '[sensitive.d]\ndistinct_l = 2\n')
    assert sqlclose.anonymize(data, tmp_path / "s.toml").to_arrow().num_rows == 4


def test_sha256_reads_a_band_width_or_origin_as_the_number_it_writes():
    """Widths and origins are kept whole (exact past 2**53, review rv10 #9): 5 and 5.0, 0 and 0.0
    are still one spec, and a whole number past 2**53 another than the float next to it."""
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"x": {"bands": [5, 10]}}, "sensitive": {"s": {"distinct_l": 2}}}

    def digest(bands: list, origin: float | None = None) -> str:
        qi = {"bands": bands} | ({} if origin is None else {"origin": origin})
        return as_spec(spec | {"quasi_identifiers": {"x": qi}}).sha256()

    assert digest([5, 10]) == digest([5.0, 10.0]) == digest([5, 10.0], 0) == digest([5, 10], 0.0)
    assert digest([5, 10], 2**53 + 1) != digest([5, 10], float(2**53 + 1))


def test_sha256_ignores_output_but_not_privacy(project):
    a = load_spec(project / "spec.toml")
    other_output = load_spec(write_spec(project / "o.toml", BASE_TOML.replace("out/release", "elsewhere/x")))
    assert other_output.sha256() == a.sha256()
    other_t = load_spec(write_spec(project / "t.toml", BASE_TOML.replace("t = 0.3", "t = 0.31")))
    assert other_t.sha256() != a.sha256()
    other_k = load_spec(write_spec(project / "k.toml", BASE_TOML.replace("k = 3", "k = 2")))
    assert other_k.sha256() != a.sha256()


def test_sha256_same_for_dict_and_toml(project):
    from_toml = load_spec(project / "spec.toml")
    from_dict = build_spec({
        "source": {"path": str(project / "data" / "table3.csv")},
        "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": str(project / "h" / "age.csv")}},
        "sensitive": {"disease": {"distance": "hierarchical", "t": 0.3,
                                  "hierarchy": str(project / "h" / "disease.csv")}},
        "k": 3,
        "others": "keep",
    })
    assert isinstance(from_dict, Spec)
    assert from_dict.sha256() == from_toml.sha256()


def test_sha256_in_report_matches_spec(project, tmp_path, monkeypatch):
    # keyed with the operator's secret (a plain one could be tested against guesses of a hierarchy
    # built from the data: tests/test_leaks_digests.py); the operator recomputes it
    monkeypatch.setenv("SQLCLOSE_FINGERPRINT_KEY", "operator-secret")
    spec = load_spec(project / "spec.toml")
    release = sqlclose.anonymize(None, spec)
    doc = release.write_parquet(tmp_path / "r.parquet")
    assert doc["spec_sha256"] == hmac.new(b"operator-secret", spec.sha256().encode(), "sha256").hexdigest()
    assert not os.path.exists(project / "out")  # the spec's output is not used by the API


def test_a_dict_spec_reads_its_relative_paths_from_the_working_folder_once(project, tmp_path, monkeypatch):
    # A dict's relative paths were kept relative: the report named the hierarchy "h/disease.csv",
    # so re-verifying the release against it from any other folder said the hierarchy "no longer
    # exists". They are made absolute when the spec is built, as a TOML spec's are beside its file.
    from sqlclose.against_report import verify_against_report

    monkeypatch.chdir(project)
    given = {
        "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": "h/age.csv"}},
        "sensitive": {"disease": {"distance": "hierarchical", "t": 0.3, "hierarchy": "h/disease.csv"}},
        "k": 3, "others": "keep",
    }
    before = copy.deepcopy(given)
    with sqlclose.anonymize("data/table3.csv", given) as release:
        doc = release.write_parquet(tmp_path / "r.parquet")
    assert given == before  # the caller's dict is not changed
    assert doc["hierarchies"]["disease"]["path"] == str(project / "h" / "disease.csv")
    assert doc["hierarchies"]["age"]["path"] == str(project / "h" / "age.csv")
    monkeypatch.chdir(tmp_path)
    checked = verify_against_report(tmp_path / "r.parquet", tmp_path / "r.parquet.report.json")
    assert checked["problems"] == []


def test_a_spec_built_directly_reads_its_relative_paths_from_the_working_folder_once(project, tmp_path,
                                                                                    monkeypatch):
    """``Spec(...)`` kept relative paths: read against whatever folder the run was in, named so in
    the report. Built in the project's folder, run from another, it now reads the project's files,
    whether the columns are given as dicts or as models."""
    from sqlclose.model.spec import HierarchySpec, Privacy, QuasiIdentifier, Sensitive

    monkeypatch.chdir(project)
    spec = Spec(quasi_identifiers={"zip": {"mask": True}, "age": QuasiIdentifier(file=Path("h/age.csv"))},
                sensitive={"disease": Sensitive(distance="hierarchical", t=0.3,
                                                hierarchy=HierarchySpec(file="h/disease.csv"))},
                privacy=Privacy(k=3), others="keep", source={"path": "data/table3.csv"},
                output={"path": "out/r.parquet"})
    assert spec.output.path == project / "out" / "r.parquet"
    monkeypatch.chdir(tmp_path)  # no data/ nor h/ here
    with sqlclose.anonymize(None, spec) as release:  # the spec's [source]
        doc = release.write_parquet(tmp_path / "r.parquet")
    assert doc["input"]["source"] == str(project / "data" / "table3.csv")
    assert doc["hierarchies"]["age"]["path"] == str(project / "h" / "age.csv")
    assert doc["hierarchies"]["disease"]["path"] == str(project / "h" / "disease.csv")


@pytest.mark.parametrize("text, said", [
    ('quasi_identifiers = "zip"\n', "quasi_identifiers: Input should be a valid dictionary (got 'zip')"),
    ("sensitive = 3\n", "sensitive: Input should be a valid dictionary (got 3)"),
    ('[quasi_identifiers]\nzip = { mask = true, length = 9223372036854775807 }\n',
     "quasi_identifiers.zip.length: length must be at most 1000 characters"),
    ('[quasi_identifiers]\nzip = { file = "a\\u0000.csv" }\n',
     "quasi_identifiers.zip: the path '"),
    ('[output]\npath = "out/\\u0000.parquet"\n', "output.path: the path 'out/\\x00.parquet' holds a NUL character"),
], ids=["qis a text", "sensitive a number", "mask of 2**63 characters", "NUL in a hierarchy path", "NUL in the output"])
def test_a_spec_of_the_wrong_shape_is_bad_input_not_an_internal_error(tmp_path, text, said):
    """Found by the eighty-fourth round's fuzzer: each was an internal error (exit 1): an
    AttributeError resolving paths before validation, a MemoryError listing a mask's 2**63 levels, a
    ValueError from a file call given a NUL character."""
    spec = tmp_path / "spec.toml"
    spec.write_text(f'k = 2\n{text}', encoding="utf-8")
    with pytest.raises(SpecError) as raised:
        sqlclose.load_spec(spec)
    assert said in str(raised.value)
    assert raised.value.exit_code == 2


def test_load_spec_takes_a_dict_or_a_spec_as_anonymize_does(tmp_path, monkeypatch):
    """`load_spec(dict)` and `load_spec(Spec)` ended in Python's `TypeError: expected str, bytes or
    os.PathLike object`, where `anonymize(source, dict)` takes either. A dict is validated as a dict
    spec is (its relative paths against the working folder, errors as SpecError); a Spec comes back
    as it is; anything else is refused naming its type. Values and messages written by hand."""
    monkeypatch.chdir(tmp_path)
    spec = load_spec({"k": 2, "source": {"path": "x.csv"}, "quasi_identifiers": {"age": {"bands": [10]}}})
    assert (spec.privacy.k, spec.quasi_identifiers["age"].bands, spec.source.path) == (2, [10], tmp_path / "x.csv")
    assert sqlclose.load_spec(spec) is spec
    with pytest.raises(SpecError) as e:
        load_spec({"k": 2, "quasi_identifiers": {"age": {"bandz": [10]}}})
    assert str(e.value) == "spec: invalid spec: quasi_identifiers.age.bandz: unknown key; did you mean 'bands'?"
    for given, kind in ((3, "int"), (None, "NoneType"), (b"s.toml", "bytes")):
        with pytest.raises(SpecError) as e:
            load_spec(given)
        assert str(e.value) == f"load_spec takes a TOML file's path, a dict or a sqlclose.Spec, not {kind}"


def test_a_spec_model_built_directly_raises_a_spec_error_worded_as_a_dict_specs():
    """`sqlclose.Spec(…)` (and the other models sqlclose exports) built directly raised pydantic's
    ValidationError in pydantic's words (`Extra inputs are not permitted [type=extra_forbidden, …]`)
    where every other entry point raises SpecError. The same content gives the dict spec's message;
    a model below the spec is named, its unknown keys told against its own keys (a sensitive column's
    given to `check` too, which listed a whole spec's). Messages written by hand."""
    with pytest.raises(SpecError) as e:
        sqlclose.Spec(k=2, quasi_identifiers={"age": {"bandz": [10]}})
    assert str(e.value) == "spec: invalid spec: quasi_identifiers.age.bandz: unknown key; did you mean 'bands'?"
    with pytest.raises(SpecError) as e:
        sqlclose.Spec(k=0, quasi_identifiers={"age": {"bands": [10]}}, sensitive={"s": {"t": 2}})
    assert str(e.value) == ("spec: invalid spec (2 problems):\n"
                            "  - sensitive.s.t: t must be in [0, 1] for the equal distance (KL alone is unbounded) "
                            "(got 2)\n"
                            "  - privacy.k: Input should be greater than or equal to 1 (got 0)") and e.value.listed
    told = {
        "sqlclose.QuasiIdentifier: invalid spec: bandz: unknown key; did you mean 'bands'?":
            lambda: sqlclose.QuasiIdentifier(bandz=[10]),
        "sqlclose.Sensitive: invalid spec: tt: unknown key; did you mean 't'?": lambda: sqlclose.Sensitive(tt=0.3),
        "sqlclose.Sensitive: invalid spec: hierarchy.fil: unknown key; did you mean 'file'?":
            lambda: sqlclose.Sensitive(t=0.3, hierarchy={"fil": "h.csv"}),
        "sqlclose.Privacy: invalid spec: k: Input should be greater than or equal to 1 (got 0)":
            lambda: sqlclose.Privacy(k=0),
        "sensitive column 's': tt: unknown key; did you mean 't'?":
            lambda: sqlclose.check(pa.table({"a": [1], "s": ["x"]}), ["a"], {"s": {"tt": 0.3}}, k=1),
    }
    for message, build in told.items():
        with pytest.raises(SpecError) as e:
            build()
        assert str(e.value) == message
    built = sqlclose.Spec(k=2, quasi_identifiers={"age": sqlclose.QuasiIdentifier(bands=[10])})
    assert (built.privacy.k, built.quasi_identifiers["age"].bands) == (2, [10])
