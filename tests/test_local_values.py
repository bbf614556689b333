"""Preparation on Spark asks its column-value questions of a local DuckDB (prepare/local_values.py).

NULL counts, a rule hierarchy's values, the leaf checks and the leaf counts are read from the
collected ``column_values`` table; the lookups the base histogram joins stay on Spark, and a typed
sensitive column's text (Spark's own cast, the one its join makes) is asked on Spark. Each case
runs collected (the default), with the collect refused (a bound of 0 bytes) and with the collect
failing (as under a driver's lower spark.driver.maxResultSize): then every question is asked on
Spark. Each way must give the values counted by hand from ROWS, and the errors DuckDB gives.
"""

from __future__ import annotations

import re
from collections import Counter

import pyarrow as pa
import pytest
from statement_log import recorded

from sqlclose.engine import DuckDBEngine, SparkEngine
from sqlclose.errors import DataError, NotLeavesError
from sqlclose.model.spec import as_spec
from sqlclose.prepare import local_values
from sqlclose.prepare.problem import prepare
from sqlclose.prepare.sources import open_source

pytestmark = pytest.mark.spark

# (age, zip, disease, income): income is an ordered (typed) sensitive column whose large values
# Spark writes as text in its own way ("1.2E7"), unlike DuckDB ("12000000.0").
ROWS = [(23, "47677", "flu", 1.2e7), (37, "47602", "flu", 3.5e7), (41, "47678", "cancer", 1.2e7),
        (23, "47905", "ulcer", 2.0), (37, "47677", "cancer", 1.2e7)]
NULL_ROW = (29, None, "flu", 3.5e7)
DISEASES = {"*": {"respiratory": ["flu"], "other": ["cancer", "ulcer"]}}


def table(rows: list[tuple] = ROWS) -> pa.Table:
    return pa.table({"age": [r[0] for r in rows], "zip": [r[1] for r in rows],
                     "disease": [r[2] for r in rows], "income": [r[3] for r in rows]})


def spec(**changes) -> object:
    d = {"k": 2, "quasi_identifiers": {"age": {"bands": [10, 20]}, "zip": {"mask": True, "nulls": "drop"}},
         "sensitive": {"disease": {"distance": "hierarchical", "t": 1.0, "hierarchy": {"tree": DISEASES}},
                       "income": {"distance": "ordered", "t": 1.0}}}
    d.update(changes)
    return as_spec(d)


@pytest.fixture(params=["collected", "on-spark", "collect-fails"])
def spark(request, spark_session, monkeypatch):
    """A Spark engine whose preparation collects the column values, or (a bound of 0 bytes, or a
    failing collect) not."""
    if request.param == "on-spark":
        monkeypatch.setattr(local_values, "LOCAL_VALUES_MAX_BYTES", 0)
    if request.param == "collect-fails":
        run = SparkEngine._run

        def refused(self, sql, params):
            if "__sqlclose_column_values_" in sql and " LIMIT " in sql:
                raise RuntimeError("Total size of serialized results is bigger than spark.driver.maxResultSize")
            return run(self, sql, params)

        monkeypatch.setattr(SparkEngine, "_run", refused)
    engine = SparkEngine(spark_session)
    yield engine
    engine.close()


@pytest.fixture
def duck():
    engine = DuckDBEngine()
    yield engine
    engine.close()


def prepared(engine, the_spec=None, rows: list[tuple] = ROWS):
    opened = open_source(table(rows), engine)
    return prepare(opened.engine, opened.relation, the_spec or spec(), opened.label)


def test_the_problem_is_the_one_counted_by_hand(spark, monkeypatch, request) -> None:
    """The problem's counts are those counted by hand from ROWS; and, read in the same preparation,
    only the collect and the typed column's question read the values on Spark when collected
    (Spark reads the column values once, plus the typed column's values as text; its missing
    values are no question since the hundredth round: an ordered column's domain is those very
    values, so no leaf can be missing); not collected, every question is asked there."""
    statements = recorded(monkeypatch, SparkEngine, "_run")
    problem = prepared(spark)
    reads = [s for s in statements if "__sqlclose_column_values_" in s]
    if request.node.callspec.params["spark"] == "collected":
        # 256 MiB at 12 + 9 × 4 + 16 bytes a row of 4 coded columns, and one row past it.
        assert len(reads) == 2 and "LIMIT 4194305" in reads[0], reads
    else:  # the refused or failed collect, NULL counts, the rule's values, leaf counts, two per sensitive column
        # but the ordered one's check of its values against themselves (none since the hundredth round), and the
        # leaves a hierarchical sensitive column holds (its distance is over them: docs/emd.md)
        assert len(reads) == 8, reads
    assert problem.input_rows == problem.rows == 5
    age, zip_ = (qi.hierarchy for qi in problem.qis)
    assert age.leaves == ["23", "37", "41"]  # the rules' values, read from the column values
    assert zip_.leaves == ["47602", "47677", "47678", "47905"]
    expected = [Counter(str(r[0]) for r in ROWS), Counter(r[1] for r in ROWS)]
    for qi, got, want in zip(problem.qis, problem.leaf_counts, expected, strict=True):
        assert got.tolist() == [float(want[leaf]) for leaf in qi.hierarchy.leaves], qi.name
    disease, income = problem.sas
    assert disease.domain == ["flu", "cancer", "ulcer"]  # the hierarchy's leaf order
    assert disease.q.tolist() == [2.0, 2.0, 1.0]
    # Spark's own text of the typed values (the text its base histogram joins on), sorted as numbers.
    assert income.domain == ["2.0", "1.2E7", "3.5E7"]
    assert income.q.tolist() == [1.0, 3.0, 1.0]


def test_a_row_dropped_for_its_null_is_in_no_domain_and_no_count(spark) -> None:
    # The NULL row's age (29) is no value of the column (its rule reads the rows kept); its income
    # 3.5E7 is also another row's, so the domain stays; its disease (flu) is not counted.
    problem = prepared(spark, rows=[*ROWS, NULL_ROW])
    assert problem.input_rows == 6 and problem.rows == 5
    assert problem.qis[0].hierarchy.leaves == ["23", "37", "41"]
    expected = [Counter(str(r[0]) for r in ROWS), Counter(r[1] for r in ROWS)]
    for qi, got, want in zip(problem.qis, problem.leaf_counts, expected, strict=True):
        assert got.tolist() == [float(want[leaf]) for leaf in qi.hierarchy.leaves], qi.name
    disease, income = problem.sas
    assert disease.q.tolist() == [2.0, 2.0, 1.0] and income.q.tolist() == [1.0, 3.0, 1.0]


def test_a_null_only_a_dropped_row_holds_stops_nothing(spark, duck) -> None:
    """A row dropped for its NULL zip is in no check (docs/spec.md, "NULLs"): its NULL disease
    (nulls = "error") stopped the job all the same; a kept row's NULL disease still does. The
    oracle: the counts by hand from ROWS, as without the row."""
    dropped_twice, kept_null = (29, None, None, 3.5e7), (29, "47677", None, 3.5e7)
    for engine in (spark, duck):
        problem = prepared(engine, rows=[*ROWS, dropped_twice])
        assert problem.input_rows == 6 and problem.rows == 5
        assert problem.sas[0].q.tolist() == [2.0, 2.0, 1.0]
        with pytest.raises(DataError, match=re.escape("column 'disease' has 1 NULL value")):
            prepared(engine, rows=[*ROWS, kept_null])


@pytest.mark.parametrize(("changes", "message", "listed"), [
    ({"quasi_identifiers": {"age": {"bands": [10]}, "zip": {"mask": True}}}, "column 'zip' has 1 NULL value", None),
    # The dropped row's age (29) is in no check: the kept row's 41 is (counted in the message, named
    # in what `hierarchy validate --show-values` prints).
    ({"quasi_identifiers": {"age": {"tree": {"*": ["23", "37"]}}, "zip": {"mask": True, "nulls": "drop"}}},
     "column 'age' holds 1 value (in 1 row) that is not a leaf of its hierarchy tree for column 'age' (2 leaves;",
     "column 'age': 1 value is not a leaf of hierarchy tree for column 'age': '41' (1 row);"),
    ({"sensitive": {"disease": {"distance": "hierarchical", "t": 1.0, "hierarchy": {"tree": {"*": ["flu", "cancer"]}}},
                    "income": {"distance": "ordered", "t": 1.0}}},
     "column 'disease' holds 1 value (in 1 row) that is not a leaf of its hierarchy tree for column "
     "'disease' (2 leaves;", None),
], ids=["null", "qi-leaf", "sensitive-leaf"])
def test_bad_values_give_duckdbs_errors(spark, duck, changes, message, listed) -> None:
    for engine in (spark, duck):
        with pytest.raises(DataError, match=re.escape(message)) as e:
            prepared(engine, spec(**changes), [*ROWS, NULL_ROW])
        if listed is not None:
            assert isinstance(e.value, NotLeavesError) and listed in e.value.named, e.value
            assert "'41'" not in str(e.value) and "'29'" not in str(e.value), str(e.value)


def test_a_bands_rule_reads_numbers_as_the_source_does(spark, duck) -> None:
    """Plain numbers read alike everywhere; other text each engine reads its own way (Spark: "1d" is
    the double 1, DuckDB: not a number). Spark's source is read as Spark reads it, collected or not."""
    rows = [("5", r[1], r[2], r[3]) for r in ROWS[:3]] + [("1d", *ROWS[3][1:]), ("12", *ROWS[4][1:])]
    the_spec = spec(quasi_identifiers={"age": {"bands": [10]}, "zip": {"mask": True}})
    age = prepared(spark, the_spec, rows).qis[0].hierarchy
    assert {leaf: band for leaf, band, _ in age.rows} == {"1d": "0-9", "5": "0-9", "12": "10-19"}
    with pytest.raises(DataError, match=re.escape("column 'age' in ") + ".*" + re.escape(
            "holds 1 value (in 1 row) that is not a number")):
        prepared(duck, the_spec, rows)
