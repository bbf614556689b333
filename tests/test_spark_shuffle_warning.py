"""A caller's Spark session on a local master with Spark's default 200 shuffle partitions (marked
``spark``): every query's shuffle ran 200 tasks of a few rows. Table 3 on a caller's local[2] session
took 3-5 times as long as with 2 partitions, adaptive execution's coalescing on or off (docs/engines.md,
"Spark's resources"). sqlclose says so once per engine, naming the setting, its value and the fix,
and never changes the caller's setting. The oracle: the values the test set on the session, and
local[2]'s two cores."""

from __future__ import annotations

import warnings

import pytest

from sqlclose.engine import SparkEngine
from sqlclose.errors import SqlcloseWarning

pytestmark = pytest.mark.spark

SHUFFLE = "spark.sql.shuffle.partitions"


def _session(spark_session, partitions: str, adaptive: str = "true"):
    session = spark_session.newSession()  # its own settings, the tests' context (local[2])
    session.conf.set(SHUFFLE, partitions)
    session.conf.set("spark.sql.adaptive.enabled", adaptive)
    return session


def _said(session) -> list[str]:
    """The SqlcloseWarnings an engine on ``session`` gives while made and running two queries."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine = SparkEngine(session)
        try:
            engine.fetch("SELECT id % 3 AS g, count(*) AS n FROM range(10) GROUP BY g ORDER BY g")
            engine.fetch("SELECT 1 AS one")
        finally:
            engine.close()
    return [str(w.message) for w in caught if issubclass(w.category, SqlcloseWarning)]


@pytest.mark.parametrize("adaptive", ["true", "false"])
def test_a_local_callers_session_of_200_shuffle_partitions_is_told_once_and_left_as_it_is(spark_session, adaptive):
    session = _session(spark_session, "200", adaptive)
    said = _said(session)
    assert len(said) == 1, said
    assert f"{SHUFFLE} = 200" in said[0] and "2 cores" in said[0], said[0]
    assert f'spark.conf.set("{SHUFFLE}", "2")' in said[0], said[0]
    assert session.conf.get(SHUFFLE) == "200"  # the caller's, never changed


@pytest.mark.parametrize("partitions", ["2", "8"])
def test_a_callers_session_of_about_its_cores_in_shuffle_partitions_is_not_told(spark_session, partitions):
    assert _said(_session(spark_session, partitions)) == []
