"""The settings the Spark engine reads on every statement (marked ``spark``): its session's time zone
(``_statement_zone``) and Arrow's large types (``_schema``), each a py4j call to the JVM (~0.3 ms). A
session of sqlclose's own is UTC by construction and nobody else sets it: they are read once, when it
starts, not per statement (a Table 3 release makes some 30 statements). A caller's session is read each
time, as they may change it between two calls: tests/test_spark_session_zone.py runs those."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # the tests' JVM options (conftest.TEST_JVM_OPTIONS)

# In a process of its own: an engine's own session needs a process where no session runs yet (the
# tests' would be taken as a caller's). Counts, while a Table 3 release is made and written, the
# statements run and the reads of each setting.
_SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
from pyspark.sql.conf import RuntimeConfig
import sqlclose
from sqlclose.engine import SparkEngine

engine = SparkEngine(master="local[1]", conf={"spark.driver.extraJavaOptions": sys.argv[1]})
reads, statements = {}, []
get, sql = RuntimeConfig.get, SparkSession.sql

def counted_get(self, key, *args, **kwargs):
    reads[key] = reads.get(key, 0) + 1
    return get(self, key, *args, **kwargs)

def counted_sql(self, *args, **kwargs):
    statements.append(1)
    return sql(self, *args, **kwargs)

RuntimeConfig.get, SparkSession.sql = counted_get, counted_sql
try:
    with sqlclose.anonymize(None, sys.argv[2], engine=engine) as release:
        release.write(sys.argv[3])
finally:
    RuntimeConfig.get, SparkSession.sql = get, sql
    engine.close()
print(json.dumps({"reads": reads, "statements": len(statements)}))
"""


def spied_release(script: str, tmp_path: Path) -> dict:
    """What ``script`` (``_SCRIPT`` or a variant) prints, run in a process of its own over a Table 3
    release written to ``tmp_path / "r"``."""
    spec = REPO / "datasets" / "table3" / "table3.toml"
    result = subprocess.run([sys.executable, "-c", script, QUICK_JIT, str(spec), str(tmp_path / "r")],
                            capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_an_own_sessions_zone_is_not_read_per_statement(tmp_path):
    """Every statement read the session's zone (a py4j call) to know whether to set UTC around it: 29
    reads for a Table 3 release on a session sqlclose started in UTC itself. None now; the release is
    still written (and re-checked) as before."""
    counts = spied_release(_SCRIPT, tmp_path)
    assert counts["statements"] > 10  # the spy saw the release's statements
    assert counts["reads"].get("spark.sql.session.timeZone", 0) == 0, counts
    assert counts["reads"].get("spark.sql.execution.arrow.useLargeVarTypes", 0) == 0, counts
    assert (tmp_path / "r").is_dir() and (tmp_path / "r.report.json").is_file()
