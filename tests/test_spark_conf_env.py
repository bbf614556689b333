"""``${VAR}`` in a spec's ``[engine] conf`` values: a spec's paths expanded ``${VAR}`` and
``${VAR:-default}`` from the environment, its Spark settings did not, so ``conf = { "spark.local.dir"
= "${BAD}" }`` made Spark spill into a folder literally named ``${BAD}`` (exit 0). They expand now as
the paths do, an unset variable refused naming the setting (hundred-and-second round). Spark's own
``${env:NAME}``, ``${system:name}`` and ``${spark.key}``, which Spark substitutes in some settings only
(``spark.local.dir`` keeps them as a folder's name), are refused. ``SparkEngine(conf=…)`` given by a
caller is passed to Spark as given.

Oracles: the environment the test sets, the messages written by hand, and spies on the engine's two
ways to a session (a spec refused must start none). That the expanded folder is the one a session of
sqlclose's own spills into, read back from its conf, is tested in
tests/test_spark_sessions_of_our_own.py (a process of its own: the tests' shared session would be
taken as a caller's)."""

from __future__ import annotations

import os

import pytest
from table3_project import invoke, table3_project

import sqlclose
from sqlclose.engine import spark as spark_engine
from sqlclose.model.spec import EngineSettings, build_spec

pytest.importorskip("pyspark")



def _spark_spec(project, conf: str):
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace("out/release.parquet", "out/release")
                    + f'\n[engine]\nname = "spark"\nconf = {{ {conf} }}\n')
    return spec


def test_a_conf_value_expands_its_variables_as_a_path_does(tmp_path, monkeypatch):
    monkeypatch.setenv("SQLCLOSE_TEST_SPILL", str(tmp_path / "spill"))
    monkeypatch.delenv("SQLCLOSE_TEST_UNSET", raising=False)
    spec = _spark_spec(table3_project(tmp_path), '"spark.local.dir" = "${SQLCLOSE_TEST_SPILL}/a", '
                       '"spark.driver.memory" = "${SQLCLOSE_TEST_UNSET:-1g}", "spark.x" = "$HOME {x}"')
    conf = sqlclose.load_spec(spec).engine.conf
    # only ${…} expands, as in a path; a value with none is as written
    assert conf == {"spark.local.dir": f"{tmp_path}/spill/a", "spark.driver.memory": "1g", "spark.x": "$HOME {x}"}
    given = {"privacy": {"k": 2}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}},
             "engine": {"name": "spark", "conf": {"spark.local.dir": "${SQLCLOSE_TEST_SPILL}"}}}
    assert build_spec(given).engine.conf == {"spark.local.dir": f"{tmp_path}/spill"}  # from Python too
    assert given["engine"]["conf"] == {"spark.local.dir": "${SQLCLOSE_TEST_SPILL}"}  # the caller's dict unchanged
    made = sqlclose.Spec(privacy={"k": 2}, quasi_identifiers={"zip": {"mask": True, "length": 5}},
                         engine=EngineSettings(name="spark", conf={"spark.local.dir": "${SQLCLOSE_TEST_SPILL}"}))
    assert made.engine.conf == {"spark.local.dir": f"{tmp_path}/spill"}


@pytest.mark.parametrize("state", ["unset", "empty"])
def test_an_unset_variable_in_a_conf_value_is_refused_naming_the_setting(tmp_path, monkeypatch, no_spark_session,
                                                                          state):
    if state == "unset":
        monkeypatch.delenv("SQLCLOSE_TEST_BAD", raising=False)
    else:
        monkeypatch.setenv("SQLCLOSE_TEST_BAD", "")
    project = table3_project(tmp_path)
    spec = _spark_spec(project, '"spark.local.dir" = "${SQLCLOSE_TEST_BAD}"')
    said = "is not set" if state == "unset" else "is set but empty"
    for result in (invoke("anonymize", spec), invoke("check", project / "table3.csv", "--spec", spec)):
        assert result.exit_code == 2, result.output
        assert result.stderr == (f"sqlclose: error: {spec}: invalid spec: engine.conf: spark.local.dir: environment "
                                 f"variable SQLCLOSE_TEST_BAD {said} (used in '${{SQLCLOSE_TEST_BAD}}'); set it or "
                                 "write ${SQLCLOSE_TEST_BAD:-default}\n")
    assert sorted(os.listdir(project)) == ["age.csv", "disease.csv", "spec.toml", "table3.csv"]  # no ${…} folder


@pytest.mark.parametrize("spark_own", ["${env:HOME}", "${system:java.io.tmpdir}", "${spark.x.dir}"])
def test_sparks_own_substitution_in_a_conf_value_is_refused(tmp_path, no_spark_session, spark_own):
    project = table3_project(tmp_path)
    spec = _spark_spec(project, f'"spark.local.dir" = "{spark_own}/spill"')
    result = invoke("anonymize", spec)
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"sqlclose: error: {spec}: invalid spec: engine.conf: spark.local.dir: {spark_own} in "
                             f"'{spark_own}/spill' is Spark's own substitution, which Spark applies to some settings "
                             "only (spark.local.dir keeps it as a folder's name): write ${NAME} or ${NAME:-default} "
                             "for an environment variable, which sqlclose expands in every [engine] conf value, or "
                             "the value itself\n")
    assert not (project / "out").exists()


class _Stop(Exception):
    pass


def test_a_callers_spark_engine_conf_is_passed_as_given(monkeypatch):
    """``SparkEngine(conf=…)`` is Python's call: its values reach the session's builder as given
    (docs/engines.md, "Spark's resources")."""
    asked: list = []
    monkeypatch.setattr(spark_engine, "_running_session", lambda: None)
    monkeypatch.setenv("SQLCLOSE_TEST_SPILL", "/elsewhere")

    def own(master, conf):
        asked.append(dict(conf))
        raise _Stop
    monkeypatch.setattr(spark_engine, "_own_session", own)
    with pytest.raises(_Stop):
        spark_engine.SparkEngine(conf={"spark.local.dir": "${SQLCLOSE_TEST_SPILL}"})
    assert asked == [{"spark.local.dir": "${SQLCLOSE_TEST_SPILL}"}]
