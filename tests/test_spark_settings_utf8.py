"""A Spark setting given to a session of our own (``SparkEngine(master=…, conf=…)``, a spec's
``[engine] master``/``conf`` given from Python) whose name or value is not UTF-8 — a
``spark.local.dir`` named in Latin-1, which Python holds as a lone surrogate (``\\udcff``) — went
unchecked: the session's builder sends each setting to the JVM through py4j as UTF-8 text, and the
job failed once the JVM had started, ``py4j.protocol.Py4JError: An error occurred while calling
o0.set`` (a bug's exit). It is now refused before any session is sought or started, naming the
setting, its bytes shown as ``\\xNN`` (hundred-and-first round). A spec file cannot hold such a value:
TOML is UTF-8, and its ``\\u`` escapes refuse a lone surrogate.

Oracles: the expected messages written by hand (the byte spelled ``\\xff``); a spy on the two ways
the engine finds a session (one running, one of its own), which must not be called; the folder the
setting names, which must not be made."""

from __future__ import annotations

import os

import pytest

import sqlclose
from sqlclose.engine import spark as spark_engine

pytest.importorskip("pyspark")

NOT_UTF8 = ("is not UTF-8 (a byte of another encoding is shown as \\xNN), and Spark takes its settings as UTF-8 "
            "text: ")



def _bad(tmp_path) -> str:
    return os.fsdecode(os.fsencode(tmp_path) + b"/local\xff")  # a folder named in Latin-1 (ÿ)


def test_a_spark_local_dir_not_in_utf8_is_refused_before_a_session_starts(tmp_path, no_spark_session):
    bad = _bad(tmp_path)
    with pytest.raises(sqlclose.InputError) as refused:
        spark_engine.SparkEngine(conf={"spark.driver.memory": "1g", "spark.local.dir": bad})
    assert str(refused.value) == (f"cannot start the Spark session with conf spark.local.dir = {tmp_path}/local\\xff: "
                                  f"its value {NOT_UTF8}give a path named in UTF-8")
    assert os.listdir(tmp_path) == []  # no folder made at that name


def test_a_master_not_in_utf8_is_refused_before_a_session_starts(no_spark_session):
    with pytest.raises(sqlclose.InputError) as refused:
        spark_engine.SparkEngine(master=os.fsdecode(b"local[2]\xe9"))
    assert str(refused.value) == f"cannot start the Spark session with master = local[2]\\xe9: its value {NOT_UTF8}" \
                                 "give it in UTF-8"


def test_a_setting_named_not_in_utf8_is_refused_before_a_session_starts(no_spark_session):
    with pytest.raises(sqlclose.InputError) as refused:
        spark_engine.SparkEngine(conf={os.fsdecode(b"spark.x\xff"): "1"})
    assert str(refused.value) == f"cannot start the Spark session with conf spark.x\\xff = 1: its name {NOT_UTF8}" \
                                 "give it in UTF-8"


def test_a_specs_spark_local_dir_not_in_utf8_is_an_invalid_spec(tmp_path, no_spark_session):
    source = tmp_path / "t.csv"
    source.write_text("zip,s\n47677,a\n47602,b\n47678,a\n47905,b\n")
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}}, "others": "keep",
            "engine": {"name": "spark", "conf": {"spark.local.dir": _bad(tmp_path)}}}
    with pytest.raises(sqlclose.SpecError) as refused:
        sqlclose.anonymize(source, spec)
    assert f"engine.conf: cannot start the Spark session with spark.local.dir = {tmp_path}/local\\xff: its value " \
           f"{NOT_UTF8}give a path named in UTF-8" in str(refused.value), str(refused.value)
    assert os.listdir(tmp_path) == ["t.csv"]


class _Stop(Exception):
    pass


def test_settings_in_utf8_start_as_before(tmp_path, monkeypatch):
    """The check lets a setting in UTF-8 (a folder named ÿ in UTF-8) through to the session's start."""
    asked: list = []
    monkeypatch.setattr(spark_engine, "_running_session", lambda: None)

    def own(master, conf):
        asked.append((master, dict(conf)))
        raise _Stop  # stop there: the session is not the test's
    monkeypatch.setattr(spark_engine, "_own_session", own)
    with pytest.raises(_Stop):
        spark_engine.SparkEngine(conf={"spark.local.dir": f"{tmp_path}/local\xff"})
    assert asked == [("local[2]", {"spark.local.dir": f"{tmp_path}/local\xff"})]
