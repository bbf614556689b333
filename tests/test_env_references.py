"""``${VAR}`` in a spec's paths and Spark settings (the hundred-and-second round, follow-up):

- an unset variable in a path was told without the key it was in (``sqlclose: error: environment
  variable X is not set (used in '${X}')``): it names the key now, as ``[engine] conf``'s message does;
- ``[engine] master`` was passed to Spark as written (``${M}`` failed in Spark's JVM): it expands as
  a conf value does, an unset variable and Spark's own ``${env:…}`` (which Spark does not apply to the
  master) refused naming ``engine.master``;
- a malformed reference (``${1abc}``) was kept in a path as a folder's name (exit 0, a folder named
  ``${1abc}``) and told in a conf value as "Spark's own substitution": it has a message of its own;
- a variable whose value holds ``${`` was expanded a second time when a spec was validated again
  (``Spec.model_validate(spec.model_dump())``, ``sqlclose.Spec(quasi_identifiers=loaded.quasi_identifiers,
  …)``): such a value is refused, so one expansion is all there is.

Oracles: the environment the tests set and the messages written by hand; a spy on the engine's way
to a session of its own for the master it is given (a spec refused must start none)."""

from __future__ import annotations

import os

import pytest
from table3_project import invoke, table3_project

import sqlclose
from sqlclose.engine import registry
from sqlclose.engine import spark as spark_engine
from sqlclose.errors import SpecError

UNSET = "SQLCLOSE_TEST_UNSET"
HOW = "write ${NAME} or ${NAME:-default} (NAME of letters, digits and _, not starting with a digit)"



def _edited(project, old: str, new: str):
    spec = project / "spec.toml"
    text = spec.read_text()
    assert old in text, old
    spec.write_text(text.replace(old, new, 1))
    return spec


# key, what is replaced in Table 3's spec, its replacement, the path as written
PATHS = [
    ("source.path", 'path = "table3.csv"', f'path = "${{{UNSET}}}/table3.csv"', f"${{{UNSET}}}/table3.csv"),
    ("output.path", 'path = "out/release.parquet"', f'path = "${{{UNSET}}}/r.parquet"', f"${{{UNSET}}}/r.parquet"),
    ("output.report", 'path = "out/release.parquet"',
     f'path = "out/release.parquet"\nreport = "${{{UNSET}}}/r.json"', f"${{{UNSET}}}/r.json"),
    ("engine.temp_directory", "[privacy]", f'[engine]\ntemp_directory = "${{{UNSET}}}/spill"\n\n[privacy]',
     f"${{{UNSET}}}/spill"),
    ("quasi_identifiers.age", 'age = { file = "age.csv" }', f'age = {{ file = "${{{UNSET}}}/age.csv" }}',
     f"${{{UNSET}}}/age.csv"),
    ("sensitive.disease.hierarchy", 'hierarchy = "disease.csv"', f'hierarchy = "${{{UNSET}}}/disease.csv"',
     f"${{{UNSET}}}/disease.csv"),
]


@pytest.mark.parametrize(("key", "old", "new", "written"), PATHS, ids=[p[0] for p in PATHS])
def test_an_unset_variable_in_a_path_is_told_naming_its_key(tmp_path, monkeypatch, key, old, new, written):
    monkeypatch.delenv(UNSET, raising=False)
    project = table3_project(tmp_path)
    spec = _edited(project, old, new)
    result = invoke("anonymize", spec)
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"sqlclose: error: {spec}: invalid spec: {key}: environment variable {UNSET} is not set "
                             f"(used in '{written}'); set it or write ${{{UNSET}:-default}}\n")
    assert not (project / "out").exists()


def test_an_unset_variable_in_a_dict_specs_path_names_its_key(monkeypatch):
    monkeypatch.delenv(UNSET, raising=False)
    given = {"privacy": {"k": 2}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}},
             "output": {"path": f"${{{UNSET}}}/r.parquet"}}
    with pytest.raises(SpecError) as caught:
        sqlclose.load_spec(given)
    assert str(caught.value) == (f"spec: invalid spec: output.path: environment variable {UNSET} is not set (used in "
                                 f"'${{{UNSET}}}/r.parquet'); set it or write ${{{UNSET}:-default}}")


def _spark_spec(project, engine: str):
    """Table 3's spec on Spark (a Parquet folder for output) with ``engine`` added to its [engine]."""
    _edited(project, "out/release.parquet", "out/release")
    return _edited(project, "[privacy]", f'[engine]\nname = "spark"\n{engine}\n\n[privacy]')


class _Stop(Exception):
    pass


def test_a_specs_master_expands_its_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("SQLCLOSE_TEST_MASTER", "local[1]")
    monkeypatch.delenv(UNSET, raising=False)
    spec = _spark_spec(table3_project(tmp_path), 'master = "${SQLCLOSE_TEST_MASTER}"')
    settings = sqlclose.load_spec(spec).engine
    assert settings.master == "local[1]"
    asked: list = []
    monkeypatch.setattr(spark_engine, "_running_session", lambda: None)

    def own(master, conf):
        asked.append(master)
        raise _Stop
    monkeypatch.setattr(spark_engine, "_own_session", own)
    with pytest.raises(_Stop):
        registry.engine_from(settings)
    assert asked == ["local[1]"]  # the session is asked for the variable's value
    given = {"privacy": {"k": 2}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}},
             "engine": {"name": "spark", "master": f"${{{UNSET}:-local[3]}}"}}
    assert sqlclose.load_spec(given).engine.master == "local[3]"


def test_an_unset_variable_in_the_master_is_refused_naming_it(tmp_path, monkeypatch, no_spark_session):
    monkeypatch.delenv(UNSET, raising=False)
    project = table3_project(tmp_path)
    spec = _spark_spec(project, f'master = "${{{UNSET}}}"')
    for result in (invoke("anonymize", spec), invoke("check", project / "table3.csv", "--spec", spec)):
        assert result.exit_code == 2, result.output
        assert result.stderr == (f"sqlclose: error: {spec}: invalid spec: engine.master: environment variable {UNSET} "
                                 f"is not set (used in '${{{UNSET}}}'); set it or write ${{{UNSET}:-default}}\n")
    assert not (project / "out").exists()


def test_sparks_own_substitution_in_the_master_is_refused(tmp_path, no_spark_session):
    """Spark 4 reads the master as written: ``${env:M}`` stopped its JVM with "Master must either be
    yarn or start with spark, k8s, or local" (checked by hand with M=local[1])."""
    project = table3_project(tmp_path)
    spec = _spark_spec(project, 'master = "${env:SQLCLOSE_TEST_MASTER}"')
    result = invoke("anonymize", spec)
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"sqlclose: error: {spec}: invalid spec: engine.master: ${{env:SQLCLOSE_TEST_MASTER}} in "
        "'${env:SQLCLOSE_TEST_MASTER}' is Spark's own substitution, which Spark does not apply to the master (it "
        "refuses such a master): write ${NAME} or ${NAME:-default} for an environment variable, which sqlclose "
        "expands in [engine] master, or the value itself\n")


# a path as written, the malformed reference shown, what is wrong with it
MALFORMED = [
    ("${1abc}/x", "'${1abc}'", "'1abc' is no variable's name"),
    ("${A B}/x", "'${A B}'", "'A B' is no variable's name"),
    ("${}/x", "'${}'", "it names no variable"),
    ("${DATA:/srv}/x", "'${DATA:/srv}'", "a default follows :- (${DATA:-/srv}), not :"),
    ("${DATA/x", "'${DATA/x'", "it has no closing }"),
    ("${DATA:-${HOME}}/x", "'${DATA:-${HOME}'", "a reference cannot hold another (a default is text as written)"),
    ("${env:HOME}/x", "'${env:HOME}'", "that is Spark's form; an environment variable is written ${HOME}"),
]


@pytest.mark.parametrize(("written", "piece", "what"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_reference_in_a_path_is_told_what_is_wrong(tmp_path, written, piece, what):
    project = table3_project(tmp_path)
    spec = _edited(project, 'path = "out/release.parquet"', f'path = "{written}"')
    result = invoke("anonymize", spec)
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"sqlclose: error: {spec}: invalid spec: output.path: {piece} in '{written}' is no "
                             f"variable reference sqlclose can expand: {what}; {HOW}\n")
    assert sorted(os.listdir(project)) == ["age.csv", "disease.csv", "spec.toml", "table3.csv"]  # no ${1abc} folder


@pytest.mark.parametrize("key", ["conf", "master"])
def test_a_malformed_reference_in_a_spark_setting_is_told_as_malformed(tmp_path, no_spark_session, key):
    """``${1abc}`` was told as "Spark's own substitution": no form of Spark's is written so."""
    project = table3_project(tmp_path)
    engine, label = (('conf = { "spark.local.dir" = "${1abc}" }', "engine.conf: spark.local.dir") if key == "conf"
                     else ('master = "${1abc}"', "engine.master"))
    spec = _spark_spec(project, engine)
    result = invoke("anonymize", spec)
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"sqlclose: error: {spec}: invalid spec: {label}: '${{1abc}}' in '${{1abc}}' is no "
                             f"variable reference sqlclose can expand: '1abc' is no variable's name; {HOW}\n")


def test_a_variable_holding_a_reference_is_refused_not_expanded_twice(tmp_path, monkeypatch):
    """Expanded once, SQLCLOSE_TEST_A = "${SQLCLOSE_TEST_B}" left ``${SQLCLOSE_TEST_B}`` in the path, and
    the spec validated again (``Spec.model_validate(spec.model_dump())``) expanded that to B's value:
    the same spec named two outputs."""
    monkeypatch.setenv("SQLCLOSE_TEST_A", "${SQLCLOSE_TEST_B}")
    monkeypatch.setenv("SQLCLOSE_TEST_B", str(tmp_path / "elsewhere"))
    project = table3_project(tmp_path)
    spec = _edited(project, 'path = "out/release.parquet"', 'path = "${SQLCLOSE_TEST_A}/r.parquet"')
    with pytest.raises(SpecError) as caught:
        sqlclose.load_spec(spec)
    assert str(caught.value) == (
        f"{spec}: invalid spec: output.path: environment variable SQLCLOSE_TEST_A holds ${{ in its value (used in "
        "'${SQLCLOSE_TEST_A}/r.parquet'; the value is not shown): sqlclose expands a spec's ${…} once, not a "
        "variable's value; give SQLCLOSE_TEST_A the text itself, without ${")
    assert "SQLCLOSE_TEST_B" not in str(caught.value)  # the variable's value, which may be a secret


def test_a_value_meeting_a_brace_into_a_reference_is_refused(tmp_path, monkeypatch):
    """``${A}{B}/x`` with A = "out$" expanded to ``out${B}/x``, a reference the next validation expanded."""
    monkeypatch.setenv("SQLCLOSE_TEST_A", "out$")
    project = table3_project(tmp_path)
    spec = _edited(project, 'path = "out/release.parquet"', 'path = "${SQLCLOSE_TEST_A}{B}/r.parquet"')
    with pytest.raises(SpecError) as caught:
        sqlclose.load_spec(spec)
    assert str(caught.value) == (
        f"{spec}: invalid spec: output.path: '${{SQLCLOSE_TEST_A}}{{B}}/r.parquet' expands to text holding ${{ (a "
        "variable's value ending in $ meets the { written after it; the expansion is not shown, as a variable may hold "
        "a secret): sqlclose expands a spec's ${…} once; write the value so that its expansion holds no ${")
    assert "out$" not in str(caught.value)  # the variable's value, which may be a secret


@pytest.mark.parametrize("folder", ["${SQLCLOSE_TEST_DIR}", "${1abc}"])
def test_the_folder_of_a_spec_whose_query_names_files_is_not_expanded(tmp_path, monkeypatch, folder):
    """A query's files are looked up beside the spec: that folder's name, which the spec never wrote,
    was expanded as if it had (a folder named ``${SQLCLOSE_TEST_DIR}`` read as the variable's value)."""
    monkeypatch.setenv("SQLCLOSE_TEST_DIR", str(tmp_path / "elsewhere"))
    (tmp_path / folder).mkdir()
    spec = table3_project(tmp_path / folder) / "spec.toml"
    _edited(spec.parent, 'path = "table3.csv"', "query = \"SELECT * FROM read_csv('table3.csv', all_varchar = true)\"")
    assert sqlclose.load_spec(spec).source.folder == tmp_path / folder
