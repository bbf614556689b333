"""A session of sqlclose's own whose ``conf`` sets a time zone other than UTC (marked ``spark``).

Every statement runs in UTC (``SparkEngine._statement_zone``): on such a session the zone is set to
UTC around each statement and put back after. What to put back was read from the session each time
(a py4j call, ~0.3 ms: 29 reads of ``spark.sql.session.timeZone`` for a Table 3 release), though
nobody but the engine sets its own session, and its zone was read once when it started. Oracle: the
reads counted by a spy on pyspark's ``RuntimeConfig.get`` (tests/test_spark_setting_reads.py's), and
the zone the conf gave, found on the session after the release.
"""

from __future__ import annotations

import pytest
from test_spark_setting_reads import _SCRIPT, spied_release

pytestmark = pytest.mark.spark

ZONE = "America/New_York"
_CONF = 'conf={"spark.driver.extraJavaOptions": sys.argv[1]}'
_ZONED = _CONF.replace("sys.argv[1]}", f'sys.argv[1], "spark.sql.session.timeZone": "{ZONE}"}}')
_AFTER = "    RuntimeConfig.get, SparkSession.sql = get, sql\n"  # in the script's finally
_KEPT = _AFTER + '    zone = engine.spark.conf.get("spark.sql.session.timeZone")\n'


def test_an_own_sessions_zone_set_in_its_conf_is_not_read_per_statement(tmp_path):
    """Was {"spark.sql.session.timeZone": 29} reads for the release's 29 statements."""
    assert _CONF in _SCRIPT and _AFTER in _SCRIPT  # the spy script, changed only here
    script = _SCRIPT.replace(_CONF, _ZONED).replace(_AFTER, _KEPT) \
        .replace('"statements": len(statements)}', '"statements": len(statements), "zone": zone}')
    counts = spied_release(script, tmp_path)
    assert counts["statements"] > 10  # the spy saw the release's statements
    assert counts["reads"].get("spark.sql.session.timeZone", 0) == 0, counts
    assert counts["zone"] == ZONE  # put back after each statement, as the conf gave it
    assert (tmp_path / "r").is_dir() and (tmp_path / "r.report.json").is_file()
