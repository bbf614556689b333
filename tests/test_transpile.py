"""Every generated query, rendered for DuckDB and for Spark, gives the same rows on the same data.

Each case builds one query (every builder of ``sqlclose.sql.queries``, every template of ``sqlclose/sql/templates/``,
and the queries ``problem`` builds inline) over small tables registered under the same names in
both engines; the DuckDB rendering runs on DuckDB, the Spark rendering on Spark, and each engine
is the other's oracle; the builders' rows on DuckDB are also worked out in plain Python from the
fixture tables (``test_builders_by_plain_python_on_duckdb``), so both engines wrong alike would
show. The data has a column named ``a"b`` and one named ``x; DROP TABLE t; --`` (quoting per
dialect), NULLs (ordering), and codes that need integer division. The SQL text of each rendering
is snapshot-tested in ``tests/snapshots/{duckdb,spark}`` (a change detector:
``SQLCLOSE_UPDATE_SNAPSHOTS=1`` writes a changed one and fails; review the diff).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from snapshot_files import assert_snapshot
from sqlglot import exp

import sqlclose.sql.templates as sqltemplates
from sqlclose.engine import DuckDBEngine, Engine, SparkEngine
from sqlclose.model.packing import Packing
from sqlclose.model.padded import PaddedCode
from sqlclose.sql import queries as q

SNAPSHOTS = Path(__file__).parent / "snapshots"
QUOTE, EVIL = 'a"b', "x; DROP TABLE t; --"

QI = q.CodedColumn(QUOTE, "r0", "q0", "t_lk_q0", null_value="NA")
SA = q.CodedColumn(EVIL, "r1", "s0", "t_lk_s0", typed=True)
AGE = q.CodedColumn("age", "r2", "q1", "t_lk_q1")

SOURCE = pa.table({
    QUOTE: ["x", "y", "x", "z", None, "y", "w", "x", None, "z", "y", "x"],
    EVIL: [1, 2, 3, 1, 2, 3, 1, 2, 3, 4, 1, 2],
    "age": [30, 31, 30, 45, 46, 45, 30, 31, 47, 46, 30, 31],
    "id": list(range(12)),
})
# QI a"b: leaves x y z NA (w is missing on purpose); level 1 = code DIV 2. SA: 1 2 3 (4 missing).
LOOKUPS = {
    "t_lk_q0": pa.table({"value": ["x", "y", "z", "NA"], "code": [0, 1, 2, 3], "label_1": ["xy", "xy", "z*", "z*"]}),
    "t_lk_s0": pa.table({"value": ["1", "2", "3"], "code": [0, 1, 2]}),
    "t_lk_q1": pa.table({"value": ["30", "31", "45", "46", "47"], "code": [0, 1, 2, 3, 4],
                         "label_1": ["30-31", "30-31", "45-46", "45-46", "47"]}),  # level 1 = code DIV 2
}
# Floats for the non-finite count: NaN, +inf and -inf are three; NULL and the finite values are not.
# The signed zeros: one -0.0, two 0.0.
FLOATS = pa.table({"x": [1.5, float("nan"), float("inf"), None, -float("inf"), -2.0, 1e308, -0.0, 0.0, 0.0]})
SUPPRESSED = pa.table({"q0": [1], "q1": [1]})  # class (z*, 45-46) at node (1, 1) is removed: 3 rows
# A computed level (node, packed key, n) and a rollup plan over it: key = q0 · 4 + s0 (q0 on bits 2–3,
# the sensitive part on bits 0–1: span 4, 3 values). key1 is a second key word (wide problems): here
# q1 = key1, 3 bits. (q0, s0) of node 0: (0, 0) (1, 1) (2, 1) (3, 2); of node 1: (0, 1) (1, 2).
PREV = pa.table({"node": [0, 0, 0, 0, 1, 1], "key": [0, 5, 9, 14, 1, 6], "key1": [0, 1, 1, 3, 4, 4],
                 "n": [2.0, 1.0, 3.0, 1.0, 4.0, 5.0]})
# Masks: 11 = 0b1011 clears q0's low bit (halves it), 3 clears q0 whole; −2 clears key1's low bit.
ROLLUP_PLAN = pa.table({"node": [0, 1, 2, 3], "parent": [0, 0, 1, 0], "m0": [11, 3, 11, -1], "m1": [-1, -1, -1, -2]})
# The keyed base of t_base: a"b (codes 0–3, level 1 = code DIV 2: bits as they are) and age (codes
# 0–4 with divisors 1, 3, 6: padded, its level-0 index on bits 0–1 and its level-1 index on bit 2).
PADDED = [PaddedCode.of((1, 2, 4)), PaddedCode.of((1, 3, 6))]
# One word: s0 on bits 0–1, age on bits 2–4, a"b on bits 5–6. Node 0: leaves; node 1: a"b halved, age at
# its top (keeps bits 0, 1, 6); node 2: a"b at its top, age at level 1 (keeps bits 0, 1, 4).
BASE_PLAN = pa.table({"node": [0, 1, 2], "m0": [-1, 0b1000011, 0b10011]})
# Two words: s0 and a"b (bits 2–3) in key, age in key1 (bits 0–2); the same nodes.
BASE_PLAN_WORDS = pa.table({"node": [0, 1, 2], "m0": [-1, 0b1011, 0b11], "m1": [-1, 0, 0b100]})
# Nodes from kept floors (PREV as the floors), as (node, floor, mask per word): node 0 halves q0 (in key)
# from floor 0; node 1 zeroes q1 (key1) of floor 1.
FLOOR_NODES = [(0, 0, 11, -1), (1, 1, -1, 0)]
# The nodes still in the running and each one's first class number: node 0 has one class of at least 3
# records in t_sizes, so node 1's are numbered from 1 (the search sums them from the level summary).
RUNNING = pa.table({"node": [0, 1], "first": [0, 1]})

SRC, VALUES, BASE = q.table("t_src"), q.table("t_values"), q.table("t_base")


def _raw(engine: Engine) -> Any:
    params = q.Params()
    return q.raw_histogram(SRC, [QI, SA, AGE], params), params.values


def _column_values(engine: Engine) -> Any:
    params = q.Params()
    return q.column_values(SRC, [QI, SA, AGE], params), params.values


def _base(engine: Engine) -> Any:
    """Codes stored narrow (TINYINT: 4, 3 and 5 leaves), as preparation stores them: every query
    over t_base reads narrow columns on both engines."""
    params = q.Params()
    return q.base_histogram(SRC, [QI, SA, AGE], params, ranges=[4, 3, 5]), params.values


def _base_ordered(engine: Engine) -> Any:
    params = q.Params()
    return q.base_histogram(SRC, [QI, SA, AGE], params, ranges=[4, 3, 5], order_by=["s0", "q1", "q0"]), params.values


def _base_ungrouped(engine: Engine) -> Any:
    """The rows as they stand, one each (counting 1), as preparation keeps a source of nearly
    distinct rows: (x, 2, 31) is there twice."""
    params = q.Params()
    return q.base_histogram(SRC, [QI, SA, AGE], params, ranges=[4, 3, 5], order_by=["s0", "q1", "q0"],
                            grouped=False), params.values


def _release(suppressed: bool) -> Callable[[Engine], Any]:
    def build(engine: Engine) -> Any:
        params = q.Params()
        released = [q.ReleasedQI(QI, 1, 2), q.ReleasedQI(AGE, 1, 2)]
        query = q.release(SRC, [QUOTE, EVIL, "age"], released, q.table("t_supp") if suppressed else None, params)
        return query, params.values
    return build


def _keyed(words: int) -> exp.Expression:
    strides, word_of = ((32, 4), (0, 0)) if words == 1 else ((4, 1), (0, 1))
    packing = Packing(qi_stride=strides, qi_card=(4, 8), sa_stride=(1,), sa_card=(3,), qi_word=word_of, sa_span=4,
                      padded=tuple(PADDED))
    return q.keyed_base(BASE, packing, [QI.code, AGE.code], [SA.code])


def _base_batch(engine: Engine) -> Any:
    return q.base_batch(q.table("t_keyed"), q.table("t_base_plan")), []


def _base_batch_words(engine: Engine) -> Any:
    return q.base_batch(q.table("t_keyed2"), q.table("t_base_plan2"), 2), []


def _base_nodes(engine: Engine) -> Any:
    """The base_batch case with literal masks (one GROUP BY per node): the same rows."""
    nodes = [tuple(row.values()) for row in BASE_PLAN.to_pylist()]
    return q.masked_nodes(q.table("t_keyed"), nodes), []


def _canonical_nan(engine: Engine) -> Any:
    """The float column with its NaNs written alike (``queries.canonical_nan``), read as whether it
    is NULL, NaN and signed, and its value where not NaN: rows both engines give alike (NaN equals
    no NaN in Python; the payloads it clears are checked in tests/test_leaks.py on DuckDB)."""
    y = q.canonical_nan(q.col("x"), exp.DataType.build("DOUBLE"), engine.is_nan, engine.has_minus_sign)
    nan = exp.func("COALESCE", engine.is_nan(q.col("y")), exp.false())
    return exp.select(exp.Is(this=q.col("y"), expression=exp.Null()).as_("missing"), nan.as_("nan"),
                      engine.has_minus_sign(q.col("y")).as_("signed"),
                      exp.Case(ifs=[exp.If(this=nan.copy(), true=exp.Null())], default=q.col("y")).as_("value")
                      ).from_(exp.select(y.as_("y")).from_(q.table("t_floats")).subquery("f")), []


def _not_null(engine: Engine) -> Any:
    return exp.select(exp.Count(this=exp.Star()).as_("n")).from_(SRC.copy().as_("src")).where(
        q.not_null([QUOTE, EVIL])), []


# name -> (build(engine) -> (query, params), ordered: the query fixes its row order)
CASES: dict[str, tuple[Callable[[Engine], Any], bool]] = {
    "raw_histogram": (_raw, False),
    "column_values": (_column_values, False),
    "missing_values_text": (lambda e: (q.missing_values(VALUES, QI), []), True),
    "missing_values_typed": (lambda e: (q.missing_values(VALUES, SA), []), True),
    "values_on_leaves": (lambda e: (q.values_on_leaves(VALUES, [QI]), []), True),
    "null_counts": (lambda e: (q.null_counts(VALUES, [QI, SA, AGE]), []), False),
    "float_checks": (lambda e: (q.float_checks(q.table("t_floats"), "x", e.is_nan), []), False),
    "float_spellings": (lambda e: (q.float_spellings(q.table("t_floats"), "x", e.is_nan, e.has_minus_sign), []), False),
    "canonical_nan": (_canonical_nan, False),
    "base_histogram": (_base, False),
    "base_histogram_ordered": (_base_ordered, True),  # as preparation orders it: SA, then AGE (5 leaves), QI (4)
    "base_histogram_ungrouped": (_base_ungrouped, True),
    "estimated_combinations": (lambda e: (q.estimated_combinations(SRC, [QUOTE, EVIL, "age"]), []), False),
    "node_histogram": (lambda e: (q.node_histogram(BASE, [("q0", 2), ("q1", 1)], ["s0"]), []), False),
    "node_histogram_sa_only": (lambda e: (q.node_histogram(BASE, [], ["s0"]), []), False),
    "distribution": (lambda e: (q.distribution(SRC, q.as_text(q.col(EVIL))), []), False),
    "fingerprint": (lambda e: (q.fingerprint(SRC, e.row_hash(q.FINGERPRINT_ROW, exp.Placeholder(this="1"))),
                               ["secret"]), False),
    "audit_classes": (lambda e: (q.audit_classes(SRC, [QUOTE, "age"], EVIL), []), False),
    "audit_classes_no_sensitive": (lambda e: (q.audit_classes(SRC, [QUOTE], None), []), True),
    "class_range": (lambda e: (q.class_range(q.table("t_audit")), [1, 3]), False),
    "class_totals": (lambda e: (q.class_totals(q.table("t_audit")), []), True),
    "labels_of_classes": (lambda e: (q.labels_of_classes(q.table("t_audit"), 2, [0, 4]), []), False),
    "release": (_release(False), True),  # sorted by its own values, NULLs last, on every engine
    "release_suppressed": (_release(True), True),
    "rollup_batch": (lambda e: (q.rollup_batch(q.table("t_prev"), q.table("t_plan")), []), False),
    "base_batch": (_base_batch, False),
    "rollup_batch_words": (lambda e: (q.rollup_batch(q.table("t_prev"), q.table("t_plan"), 2), []), False),
    "base_batch_words": (_base_batch_words, False),
    "not_null": (_not_null, False),
    "keyed_base": (lambda e: (_keyed(1), []), False),
    "keyed_base_words": (lambda e: (_keyed(2), []), False),
    "base_nodes": (_base_nodes, False),
    "floor_nodes_words": (lambda e: (q.masked_nodes(q.table("t_prev"), FLOOR_NODES, floors=True), []), False),
    "estimated_rows": (lambda e: (q.estimated_rows(q.table("t_keyed"), [(0, -1), (1, 0b1000011)]), []), False),
    "class_sizes": (lambda e: (q.class_sizes(q.table("t_prev"), 1, 4), []), False),
    "class_sizes_words": (lambda e: (q.class_sizes(q.table("t_prev"), 2, 4), []), False),
    "level_summary": (lambda e: (q.level_summary(q.table("t_sizes"), 3), []), False),
    "large_classes": (lambda e: (q.large_classes(q.table("t_sizes"), q.table("t_running"), 1, 3), []), False),
    "large_classes_words": (lambda e: (q.large_classes(q.table("t_sizes2"), q.table("t_running"), 2, 3), []),
                            False),
    "rows_per_node": (lambda e: (q.rows_per_node(q.table("t_prev")), [1]), False),
    "estimated_floor_rows": (lambda e: (q.estimated_rows(q.table("t_prev"), FLOOR_NODES, floors=True), []), False),
    "class_rows": (lambda e: (q.class_rows(q.table("t_prev"), q.table("t_large"), 1, 4, 3), [0, 3]), False),
    "class_rows_words": (lambda e: (q.class_rows(q.table("t_prev"), q.table("t_large2"), 2, 4, 3), [1, 2]), False),
    "numbered_classes": (lambda e: (q.numbered_classes(q.table("t_large")), [1, 3]), False),
}


def _setup(engine: Engine) -> None:
    engine.register("t_src", SOURCE)
    for name, table in LOOKUPS.items():
        engine.register(name, table)
    engine.register("t_supp", SUPPRESSED)
    engine.register("t_floats", FLOATS)
    engine.register("t_prev", PREV)
    engine.register("t_plan", ROLLUP_PLAN)
    engine.register("t_base_plan", BASE_PLAN)
    engine.register("t_base_plan2", BASE_PLAN_WORDS)
    engine.register("t_running", RUNNING)
    engine.create_temp_table("t_values", *_column_values(engine))
    engine.create_temp_table("t_base", *_base(engine))
    engine.create_temp_table("t_keyed", _keyed(1))
    engine.create_temp_table("t_keyed2", _keyed(2))
    engine.create_temp_table("t_sizes", q.class_sizes(q.table("t_prev"), 1, 4))
    engine.create_temp_table("t_sizes2", q.class_sizes(q.table("t_prev"), 2, 4))
    engine.create_temp_table("t_large", q.large_classes(q.table("t_sizes"), q.table("t_running"), 1, 3))
    engine.create_temp_table("t_large2", q.large_classes(q.table("t_sizes2"), q.table("t_running"), 2, 3))
    engine.create_temp_table("t_audit", q.audit_classes(SRC, [QUOTE, "age"], EVIL))


def _renderer(cls: type[Engine]) -> Engine:
    """An engine object used only to render SQL (no connection, no session: rendering needs none)."""
    return cls.__new__(cls)


# ---- snapshots (no Spark needed: rendering is sqlglot's) ------------------------------------------
@pytest.mark.parametrize("dialect_engine", [DuckDBEngine, SparkEngine], ids=["duckdb", "spark"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_sql_matches_snapshot(case: str, dialect_engine: type[Engine]) -> None:
    engine = _renderer(dialect_engine)
    query, _ = CASES[case][0](engine)
    assert_snapshot(SNAPSHOTS / engine.name / f"{case}.sql", engine.render(query) + "\n")


@pytest.mark.parametrize("dialect_engine", [DuckDBEngine, SparkEngine], ids=["duckdb", "spark"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_rendering_in_place_gives_the_same_sql(case: str, dialect_engine: type[Engine]) -> None:
    """``render(owned=True)`` (what ``keep`` does with the statements it is handed) skips the copy
    of the tree, not anything of the SQL: the same text as the snapshot; and the default rendering
    leaves the caller's tree as it was."""
    engine = _renderer(dialect_engine)
    query, _ = CASES[case][0](engine)
    before = query.copy()
    expected = engine.render(query)
    assert query == before
    assert engine.render(query, owned=True) == expected


def test_every_template_has_a_case(monkeypatch: pytest.MonkeyPatch) -> None:
    used: set[str] = set()
    real = sqltemplates.template

    def spy(name: str, **holes: Any) -> exp.Expression:
        used.add(name)
        return real(name, **holes)

    monkeypatch.setattr(q, "template", spy)
    for build, _ in CASES.values():
        build(_renderer(DuckDBEngine))
    files = {p.stem for p in Path(sqltemplates._sql_dir()).glob("*.sql")}
    assert files and used | VERIFIED_END_TO_END == files


# The independent verifier's templates (verify_sql.py) are run on both engines end to end, over a
# release written by each: test_engine_spark.test_the_release_rechecks_from_a_parquet_folder_on_spark
# (verify_counts_flat, a text sensitive column alone: test_the_rechecks_from_each_class_values_on_spark).
VERIFIED_END_TO_END = {"verify_class_sizes", "verify_counts", "verify_counts_flat", "verify_diversity", "verify_equal",
                       "verify_foreign", "verify_hierarchical", "verify_kl", "verify_label_values", "verify_labels",
                       "verify_ordered", "verify_reference", "verify_row_sums", "verify_sizes", "verify_untrue_rows"}


def test_spark_placeholders_are_named_and_bound_by_name() -> None:
    engine = _renderer(SparkEngine)
    query, params = _release(False)(engine)
    assert ":p1" in engine.render(query) and "$1" not in engine.render(query)
    assert engine.bind(params) == {"p1": "NA"}


# ---- same rows on both engines ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def engines(spark_session):
    pair = (DuckDBEngine(), SparkEngine(spark_session))
    for engine in pair:
        _setup(engine)
    yield pair
    for engine in pair:
        engine.close()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _rows(table: pa.Table, ordered: bool) -> list[tuple]:
    rows = [tuple(_plain(v) for v in row.values()) for row in table.to_pylist()]
    return rows if ordered else sorted(rows, key=lambda r: [(v is None, str(v)) for v in r])


@pytest.mark.spark
@pytest.mark.parametrize("case", sorted(CASES))
def test_duckdb_and_spark_give_the_same_rows(engines, case: str) -> None:
    build, ordered = CASES[case]
    results = []
    for engine in engines:
        query, params = build(engine)
        table = engine.fetch(query, params)
        if case == "fingerprint":  # each engine has its own row hash: a number as text on both
            assert table.column("fingerprint")[0].as_py().isdigit()
            table = table.select([])
        results.append(table)
    duck, spark = results
    assert duck.column_names == spark.column_names
    assert duck.num_rows > 0 or case == "fingerprint"
    assert _rows(duck, ordered) == _rows(spark, ordered)


@pytest.mark.spark
def test_hand_checked_rows_on_spark(engines) -> None:
    """Two results checked by hand, so both engines being wrong the same way would show."""
    _, spark = engines
    # missing values: w (1 row) of a"b; 4 (1 row) of the sensitive column
    assert _rows(spark.fetch(q.missing_values(VALUES, QI)), True) == [("w", 1)]
    assert _rows(spark.fetch(q.missing_values(VALUES, SA)), True) == [("4", 1)]
    assert _rows(spark.fetch(q.float_checks(q.table("t_floats"), "x", spark.is_nan)), True)[0][0] == 3  # NaN, inf, -inf
    # a"b on its leaves (col, code, v, n; most rows first, then v, then code): x 4 rows, y 3, z 2,
    # NULL read as "NA" 2 (code 3), and w 1 with no leaf (code −1)
    assert _rows(spark.fetch(q.values_on_leaves(VALUES, [QI])), True) == [
        (0, 0, None, 4), (0, 1, None, 3), (0, 2, None, 2), (0, 3, None, 2), (0, -1, "w", 1)]
    # rollup: node 1 from node 0 with mask 3 turns every q0 digit into 0: keys 0, 5, 9, 14
    # (n 2, 1, 3, 1) become 0, 1, 1, 2
    rolled = spark.fetch(q.rollup_batch(q.table("t_prev"), q.table("t_plan")))
    node1 = sorted((r["key"], r["n"]) for r in rolled.to_pylist() if r["node"] == 1)
    assert node1 == [(0, 2.0), (1, 4.0), (2, 1.0)]
    assert _two_word_rollup(spark) == EXPECTED_TWO_WORDS


# By hand: node 0 halves the q0 digit of key (clears bit 2) and carries key1; node 3 halves key1
# (clears bit 0) and carries key. (key, key1, n) of parent node 0: (0,0,2) (5,1,1) (9,1,3) (14,3,1).
EXPECTED_TWO_WORDS = {0: [(0, 0, 2.0), (1, 1, 1.0), (9, 1, 3.0), (10, 3, 1.0)],
                      3: [(0, 0, 2.0), (5, 0, 1.0), (9, 0, 3.0), (14, 2, 1.0)]}


def _two_word_rollup(engine: Engine) -> dict[int, list[tuple]]:
    rows = engine.fetch(q.rollup_batch(q.table("t_prev"), q.table("t_plan"), 2)).to_pylist()
    return {node: sorted((r["key"], r["key1"], r["n"]) for r in rows if r["node"] == node) for node in (0, 3)}


def test_two_word_rollup_by_hand_on_duckdb() -> None:
    engine = DuckDBEngine()
    try:
        _setup(engine)
        assert _two_word_rollup(engine) == EXPECTED_TWO_WORDS
    finally:
        engine.close()


def test_kept_level_queries_by_hand_on_duckdb() -> None:
    """PREV read as a kept level, classes = key DIV 4 (q0), k = 3. Node 0's classes 0..3 hold 2, 1,
    3, 1 records: 4 below k, class 2 (key 9, 3 records) kept and numbered 0; node 1's classes 0
    and 1 (keys 1 and 6) hold 4 and 5: none below k, numbered 1 and 2; their rows carry the
    sensitive part key % 4, as matrix cells (class number from the range's first × 3 values +
    sensitive part); a range of class numbers brings back those classes and their rows alone.
    Floors: node 0 halves q0 of floor 0's keys 0, 5, 9, 14 → 0, 1, 9, 10 with key1 carried; node 1
    zeroes key1 of floor 1's rows (1, 4) and (6, 4); their rows estimated alike; the rows of node
    ids from 1 on. base_nodes gives base_batch's rows."""
    engine = DuckDBEngine()
    try:
        _setup(engine)
        summary = engine.fetch(q.level_summary(q.table("t_sizes"), 3)).to_pylist()
        assert sorted((r["node"], r["pairs"], r["dropped"], r["big_classes"], r["big_pairs"]) for r in summary) == [
            (0, 4, 4.0, 1, 1), (1, 2, 0.0, 2, 2)]
        large = engine.fetch(q.large_classes(q.table("t_sizes"), q.table("t_running"), 1, 3)).to_pylist()
        assert sorted((r["cid"], r["node"], r["cls"]) for r in large) == [(0, 0, 2), (1, 1, 0), (2, 1, 1)]
        rows = engine.fetch(q.class_rows(q.table("t_prev"), q.table("t_large"), 1, 4, 3), [0, 3]).to_pylist()
        assert sorted((r["cell"], r["n"]) for r in rows) == [(0 * 3 + 1, 3.0), (1 * 3 + 1, 4.0), (2 * 3 + 2, 5.0)]
        rows = engine.fetch(q.class_rows(q.table("t_prev"), q.table("t_large"), 1, 4, 3), [1, 3]).to_pylist()
        assert sorted((r["cell"], r["n"]) for r in rows) == [(0 * 3 + 1, 4.0), (1 * 3 + 2, 5.0)]  # from class 1
        classes = engine.fetch(q.numbered_classes(q.table("t_large")), [1, 3]).to_pylist()
        assert sorted((r["cid"], r["node"], r["cls"]) for r in classes) == [(1, 1, 0), (2, 1, 1)]
        floors = engine.fetch(CASES["floor_nodes_words"][0](engine)[0]).to_pylist()
        assert sorted((r["node"], r["key"], r["key1"], r["n"]) for r in floors) == [
            (0, 0, 0, 2.0), (0, 1, 1, 1.0), (0, 9, 1, 3.0), (0, 10, 3, 1.0), (1, 1, 0, 4.0), (1, 6, 0, 5.0)]
        # HyperLogLog is exact on sets this small: those two nodes' 4 and 2 rows, one pass.
        assert engine.fetch(CASES["estimated_floor_rows"][0](engine)[0]).to_pylist() == [{"e0": 4, "e1": 2}]
        assert engine.fetch(q.rows_per_node(q.table("t_prev")), [1]).to_pylist() == [{"node": 1, "rows": 2}]
        assert _rows(engine.fetch(_base_nodes(engine)[0]), False) == _rows(engine.fetch(_base_batch(engine)[0]), False)
    finally:
        engine.close()


# age's padded codes by hand: codes 0, 1, 2 (level-1 group 0) keep bits 0–1; 3, 4 (group 1) get bit 2.
AGE_PADDED = {0: 0b000, 1: 0b001, 2: 0b010, 3: 0b100, 4: 0b101}


def test_keyed_base_and_masked_nodes_by_hand_on_duckdb() -> None:
    """The keyed base's keys are t_base's codes at their fields (age padded), in one word and in
    two; a node's masks group them as the codes generalized by hand: node 1 (a"b halved, age at its
    top) by (a"b DIV 2, s0), node 2 (a"b at its top, age at level 1) by (age DIV 3, s0)."""
    engine = DuckDBEngine()
    try:
        _setup(engine)
        base = engine.fetch(exp.select("*").from_(BASE.copy())).to_pylist()
        keyed = engine.fetch(exp.select("*").from_(q.table("t_keyed"))).to_pylist()
        assert sorted((r["key"], r["n"]) for r in keyed) == sorted(
            (r["q0"] * 32 + AGE_PADDED[r["q1"]] * 4 + r["s0"], float(r["n"])) for r in base)
        keyed2 = engine.fetch(exp.select("*").from_(q.table("t_keyed2"))).to_pylist()
        assert sorted((r["key"], r["key1"], r["n"]) for r in keyed2) == sorted(
            (r["q0"] * 4 + r["s0"], AGE_PADDED[r["q1"]], float(r["n"])) for r in base)
        # (plan, keyed base, words, node, its classes by hand, a found row's class read off its key words)
        cases = [("t_base_plan", "t_keyed", 1, 1, lambda r: (r["q0"] // 2, r["s0"]),
                  lambda r: (r["key"] >> 6, r["key"] & 3)),
                 ("t_base_plan", "t_keyed", 1, 2, lambda r: (r["q1"] // 3, r["s0"]),
                  lambda r: (r["key"] >> 4, r["key"] & 3)),
                 ("t_base_plan2", "t_keyed2", 2, 1, lambda r: (r["q0"] // 2, r["s0"]),
                  lambda r: (r["key"] >> 3, r["key"] & 3, r["key1"])),
                 ("t_base_plan2", "t_keyed2", 2, 2, lambda r: (r["q1"] // 3, r["s0"]),
                  lambda r: (r["key1"] >> 2, r["key"], r["key1"] & 3))]
        for plan, keyed_name, words, node, by_hand, read in cases:
            expected: dict = {}
            for r in base:
                expected[by_hand(r)] = expected.get(by_hand(r), 0) + float(r["n"])
            found = engine.fetch(q.base_batch(q.table(keyed_name), q.table(plan), words)).to_pylist()
            got = {read(r): r["n"] for r in found if r["node"] == node}
            if words == 2:  # the cleared field must read 0
                assert all(k[-1] == 0 for k in got), (plan, node)
                got = {k[:2]: n for k, n in got.items()}
            assert got == expected, (plan, node)
    finally:
        engine.close()


# Divisors of hierarchies' mixed-radix codes: powers of two (the identity), a ZIP's digits, an age's
# bands of 5, 10, 20, a level of radix 1 between others, and radices of 3 and 4 in turn.
PADDING_CASES = [(1, 2, 4, 8), (1, 3, 6), (1, 10, 100, 1000, 10000, 100000), (1, 5, 10, 20, 40, 120),
                 (1, 1, 3, 3, 12), (1, 3, 12, 36, 72)]


@pytest.mark.parametrize("divisors", PADDING_CASES)
def test_keyed_base_pads_every_code_as_padded_code_does(divisors: tuple[int, ...]) -> None:
    """The keyed base writes a code's padded form with divisions alone (``queries._padded``): for
    every code below the top divisor it must be ``PaddedCode.pad``'s sum of remainders."""
    pad = PaddedCode.of(divisors)
    engine = DuckDBEngine()
    try:
        padded = q._padded(q._bigint(q.col("c", "base")), pad)
        query = exp.select(q.col("c", "base"), exp.alias_(padded, "p")).from_(
            exp.Table(this=exp.Anonymous(this="range", expressions=[exp.Literal.number(divisors[-1])]),
                      alias=exp.TableAlias(this=q.ident("base"), columns=[q.ident("c")])))
        found = engine.fetch(query).to_pydict()
        codes = np.asarray(found["c"], dtype=np.int64)
        assert np.array_equal(np.asarray(found["p"], dtype=np.int64), pad.pad(codes)), divisors
    finally:
        engine.close()


@pytest.mark.spark
def test_class_numbers_put_null_last_on_both_engines(engines) -> None:
    """DuckDB sorts NULLs last, Spark first: the class numbering must not depend on it."""
    for engine in engines:
        classes = engine.fetch(q.audit_classes(SRC, [QUOTE], None)).to_pylist()
        assert [(r[q.AUDIT_CLASS], r[q.audit_qi_name(0)]) for r in classes] == [
            (0, "w"), (1, "x"), (2, "y"), (3, "z"), (4, None)]


@pytest.mark.spark
@pytest.mark.parametrize(("column", "expected"), [
    # text sorts by bytes; the rows holding each value counted by hand from SOURCE
    (QI, [("NA", None, 2), ("w", None, 1), ("x", None, 4), ("y", None, 3), ("z", None, 2)]),
    (SA, [("1", 1, 4), ("2", 2, 4), ("3", 3, 3), ("4", 4, 1)]),  # typed: sorted as numbers, read back as numbers
], ids=["text", "typed"])
def test_distinct_values_query(engines, column: q.CodedColumn, expected: list[tuple]) -> None:
    for engine in engines:
        assert _rows(engine.fetch(q.distinct_with_numbers(VALUES, column.raw)), True) == expected


@pytest.mark.parametrize("dialect_engine", [DuckDBEngine, SparkEngine], ids=["duckdb", "spark"])
def test_rendering_leaves_the_callers_tree_as_it_was(dialect_engine: type[Engine]) -> None:
    """A tree with parameter markers is rendered from the engine's own marked copy (in place):
    the caller's tree, with or without markers, is the same afterwards and renders the same twice."""
    engine = _renderer(dialect_engine)
    # Spark's generator rewrites QUALIFY into a subquery by mutating the tree it is given.
    first_row = "ROW_NUMBER() OVER (ORDER BY x) = 1"
    for query in (exp.select("*").from_("t").where(exp.column("x").eq(exp.Placeholder(this="1"))).qualify(first_row),
                  exp.select("*").from_("t").qualify(first_row)):
        before = repr(query)
        first, second = engine.render(query), engine.render(query)
        assert first == second and repr(query) == before


# ---- the builders' rows worked out in plain Python from the fixture tables --------------------------
ROWS = SOURCE.to_pylist()
CODES = {name: dict(zip(t.column("value").to_pylist(), t.column("code").to_pylist())) for name, t in LOOKUPS.items()}
LABELS = {name: dict(zip(t.column("value").to_pylist(), t.column("label_1").to_pylist()))
          for name, t in LOOKUPS.items() if "label_1" in t.column_names}


def _stood_in(value: Any) -> Any:
    """a"b as preparation reads it: NULL stands as its null_value "NA"."""
    return QI.null_value if value is None else value


def _counted(keys: list[tuple]) -> list[tuple]:
    """(*key, rows) per distinct key, sorted as ``_rows`` sorts."""
    counts: dict[tuple, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return _sorted([(*key, n) for key, n in counts.items()])


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=lambda r: [(v is None, str(v)) for v in r])


def _coded(row: dict) -> tuple | None:
    """A source row's (a"b, sensitive, age) codes through the lookups; None when one has no leaf (an
    inner join drops the row: w of a"b, 4 of the sensitive column)."""
    codes = (CODES["t_lk_q0"].get(_stood_in(row[QUOTE])), CODES["t_lk_s0"].get(str(row[EVIL])),
             CODES["t_lk_q1"].get(str(row["age"])))
    return None if None in codes else codes


def _audit_classes(qi: list[str]) -> dict[tuple, int]:
    """audit_classes's numbering: the distinct QI values sorted, NULL last."""
    keys = sorted({tuple(r[c] for c in qi) for r in ROWS}, key=lambda k: [(v is None, v) for v in k])
    return {key: n for n, key in enumerate(keys)}


def _released(suppressed: set[tuple[int, int]]) -> list[tuple]:
    """The release of a"b and age at level 1 (labels; class codes = code DIV 2), the sensitive column
    as it is, sorted by a"b, age, then the sensitive value; rows with a QI value without a leaf (w)
    are not released."""
    rows = []
    for row in ROWS:
        codes = (CODES["t_lk_q0"].get(_stood_in(row[QUOTE])), CODES["t_lk_q1"].get(str(row["age"])))
        if None in codes or (codes[0] // 2, codes[1] // 2) in suppressed:
            continue
        rows.append((LABELS["t_lk_q0"][_stood_in(row[QUOTE])], row[EVIL], LABELS["t_lk_q1"][str(row["age"])]))
    return sorted(rows, key=lambda r: (r[0], r[2], r[1]))


def _expected_rows() -> dict[str, list[tuple]]:
    """Per case, its rows (sorted as ``_rows`` sorts unless the case fixes its order), by plain Python."""
    coded = [c for c in map(_coded, ROWS) if c is not None]
    floats = [x for x in FLOATS.column("x").to_pylist() if x is not None]
    audit = _audit_classes([QUOTE, "age"])
    audit_rows = _counted([(audit[(r[QUOTE], r["age"])], r[QUOTE], r["age"], str(r[EVIL])) for r in ROWS])
    alone = _audit_classes([QUOTE])
    values = [(0, _stood_in(r[QUOTE]), None, None) for r in ROWS] + [(1, None, r[EVIL], None) for r in ROWS] \
        + [(2, None, None, str(r["age"])) for r in ROWS]
    ordered_base = sorted(coded, key=lambda c: (c[1], c[2], c[0]))  # s0, then age, then a"b
    return {
        "raw_histogram": _counted([(_stood_in(r[QUOTE]), r[EVIL], str(r["age"])) for r in ROWS]),
        "column_values": _counted(values),
        # a"b's NULLs stand as "NA"; the others have none: every count 0 but the rows'
        "null_counts": [(0, sum(r[EVIL] is None for r in ROWS), sum(r["age"] is None for r in ROWS), len(ROWS))],
        "distribution": _counted([(str(r[EVIL]),) for r in ROWS]),
        "not_null": [(sum(r[QUOTE] is not None and r[EVIL] is not None for r in ROWS),)],
        "float_checks": [(sum(math.isnan(x) or math.isinf(x) for x in floats),
                          sum(x == 0 and math.copysign(1, x) < 0 for x in floats),
                          sum(x == 0 and math.copysign(1, x) > 0 for x in floats))],
        "float_spellings": [(sum(x == 0 and math.copysign(1, x) < 0 for x in floats),
                             sum(x == 0 and math.copysign(1, x) > 0 for x in floats),
                             sum(math.isnan(x) and math.copysign(1, x) < 0 for x in floats),
                             sum(math.isnan(x) and math.copysign(1, x) > 0 for x in floats))],
        "canonical_nan": _sorted([(False, math.isnan(x), math.copysign(1, x) < 0, None if math.isnan(x) else _plain(x))
                                  for x in floats] + [(True, False, None, None)] * (len(FLOATS) - len(floats))),
        # HyperLogLog is exact on sets this small
        "estimated_combinations": [(len({(r[QUOTE], r[EVIL], r["age"]) for r in ROWS}),)],
        "audit_classes": audit_rows,
        "audit_classes_no_sensitive": [(alone[(r[QUOTE],)], r[QUOTE], None, n) for r, n in
                                       _first_of_each(alone, [QUOTE])],
        "class_range": _sorted([(c, v, n) for c, _, _, v, n in audit_rows if 1 <= c < 3]),
        "class_totals": [(len(audit), len(ROWS), len(audit_rows))],
        "labels_of_classes": _sorted([(c, *key) for key, c in audit.items() if c in (0, 4)]),
        "release": _released(set()),
        "release_suppressed": _released({(1, 1)}),
        "base_histogram": _counted(coded),
        "base_histogram_ordered": [(*c, n) for c, n in _grouped_in_order(ordered_base)],
        "base_histogram_ungrouped": [(*c, 1) for c in ordered_base],
        "node_histogram": _counted([(c[0] // 2, c[2], c[1]) for c in coded]),
        "node_histogram_sa_only": _counted([(c[1],) for c in coded]),
    }


def _first_of_each(classes: dict[tuple, int], qi: list[str]) -> list[tuple[dict, int]]:
    """Per class (in class order): one of its rows and the rows it holds."""
    held: dict[int, list[dict]] = {}
    for r in ROWS:
        held.setdefault(classes[tuple(r[c] for c in qi)], []).append(r)
    return [(held[c][0], len(held[c])) for c in sorted(held)]


def _grouped_in_order(codes: list[tuple]) -> list[tuple[tuple, int]]:
    """Runs of equal codes in a sorted list, with their lengths."""
    runs: list[tuple[tuple, int]] = []
    for c in codes:
        runs[-1:] = [(c, runs[-1][1] + 1)] if runs and runs[-1][0] == c else [*runs[-1:], (c, 1)]
    return runs


def test_builders_by_plain_python_on_duckdb() -> None:
    """Each builder's rows on DuckDB against rows worked out from SOURCE and LOOKUPS in plain Python
    (the cases the engines are otherwise only compared with each other on)."""
    expected = _expected_rows()
    engine = DuckDBEngine()
    try:
        _setup(engine)
        for case, rows in expected.items():
            build, ordered = CASES[case]
            query, params = build(engine)
            assert _rows(engine.fetch(query, params), ordered) == rows, case
    finally:
        engine.close()
