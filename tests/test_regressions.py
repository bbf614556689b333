"""Bugs found in review, each pinned by the smallest input that showed it."""

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlclose


def test_to_arrow_with_bound_parameters():
    # nulls = "value" puts the stand-in into the release query as a bound parameter. Each value
    # twice: k = 2 holds at level 0, so the release shows the raw ages (NULL mapped back).
    table = pa.table({"age": [29, None, 27, 43] * 2})
    release = sqlclose.anonymize(table, {"quasi_identifiers": {"age": {"bands": [10, 20], "nulls": "value"}}, "k": 2})
    got = release.to_arrow()
    assert sorted(got.column("age").to_pylist(), key=str) == sorted([29, None, 27, 43] * 2, key=str)


def test_null_value_branch_on_a_mask_hierarchy_reaches_the_mask_top():
    table = pa.table({"zip": ["47677", "47602", None]})
    release = sqlclose.anonymize(table, {"quasi_identifiers": {"zip": {"mask": True, "nulls": "value"}}, "k": 3})
    # k = 3 needs all three rows in one class: the top, where NULL's branch joins the codes.
    assert release.node == {"zip": 5}
    assert set(release.to_arrow().column("zip").to_pylist()) == {"*****"}


def test_null_value_on_a_sensitive_column_verifies(tmp_path):
    table = pa.table({"age": [29, 22, 27, 43], "d": ["flu", None, "flu", "cold"]})
    spec = {"quasi_identifiers": {"age": {"bands": [10]}},
            "sensitive": {"d": {"t": 1.0, "nulls": "value"}}, "k": 2}  # k = 1 with t = 1 is refused
    report = sqlclose.anonymize(table, spec).write_parquet(tmp_path / "r.parquet")
    assert report["verified"] is True
    assert pq.read_table(tmp_path / "r.parquet").num_rows == 4


@pytest.mark.parametrize("qi", [{"mask": True}, {"bands": [10]}])
def test_an_empty_source_is_bad_input(qi):
    table = pa.table({"zip": pa.array([], pa.string()) if "mask" in qi else pa.array([], pa.int64())})
    with pytest.raises(sqlclose.DataError, match="no rows"):
        sqlclose.anonymize(table, {"quasi_identifiers": {"zip": qi}, "k": 2})


# ---- found in code review ------------------------------------------------------------------

def test_ordered_distance_refuses_a_text_column(tmp_path):
    # Sorted as text, "10" < "3": the ground distance would be meaningless and a class over t
    # could pass. The paper's salaries as strings must be refused, not released.
    table = pa.table({"zip": ["47677", "47602", "47678"] * 3, "salary": [str(s) for s in range(3, 12)]})
    spec = {"quasi_identifiers": {"zip": {"mask": True}},
            "sensitive": {"salary": {"t": 0.3, "distance": "ordered"}}, "k": 3}
    with pytest.raises(sqlclose.DataError, match="'salary'.*needs numbers"):
        sqlclose.anonymize(table, spec)


def test_null_stand_in_without_nulls(tmp_path):
    table = pa.table({"age": [29, 22, 27, 43], "d": ["flu", "cold", "flu", "cold"]})
    spec = {"quasi_identifiers": {"age": {"bands": [10]}}, "sensitive": {"d": {"t": 1.0, "nulls": "value"}},
            "k": 2}  # k = 1 with t = 1 protects nothing: refused
    assert sqlclose.anonymize(table, spec).write_parquet(tmp_path / "r.parquet")["verified"] is True


def test_a_ready_hierarchy_object_in_a_python_spec():
    table = pa.table({"x": ["a", "b", "a", "b"]})
    spec = {"k": 2, "quasi_identifiers": {"x": sqlclose.Hierarchy.from_rows([("a", "*"), ("b", "*")])}}
    release = sqlclose.anonymize(table, spec)
    assert release.node == {"x": 0}
    other = {"k": 2, "quasi_identifiers": {"x": sqlclose.Hierarchy.from_rows([("a", "*"), ("b", "*"), ("c", "*")])}}
    assert sqlclose.Spec.model_validate(other).sha256() != sqlclose.Spec.model_validate(spec).sha256()


def test_spec_hash_follows_hierarchy_file_contents(tmp_path):
    (tmp_path / "h.csv").write_text("a;*\nb;*\n")
    spec = tmp_path / "s.toml"
    spec.write_text('[privacy]\nk = 2\n[quasi_identifiers]\nx = "h.csv"\n')
    before = sqlclose.load_spec(spec).sha256()
    (tmp_path / "h.csv").write_text("a;*\nb;*\nc;*\n")
    assert sqlclose.load_spec(spec).sha256() != before


def test_no_temp_objects_left_in_the_callers_connection(tmp_path):
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT (i % 7)::VARCHAR AS x, (i % 3)::VARCHAR AS d FROM range(60) r(i)")
    spec = {"quasi_identifiers": {"x": {"tree": {"G": [str(i) for i in range(7)]}}},
            "sensitive": {"d": {"t": 0.5}}, "k": 2}
    with sqlclose.anonymize((con, "t"), spec) as release:
        release.write_parquet(tmp_path / "r.parquet")
    with pytest.raises(sqlclose.NoSolutionError):
        sqlclose.anonymize((con, "t"), {**spec, "k": 100})
    left = con.execute("SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views() "
                       "WHERE NOT internal").fetchall()
    assert [name for (name,) in left if name.startswith("__sqlclose")] == []


@pytest.mark.parametrize("name", ["n", "v", "cls", "src", "key", "node"])
def test_user_columns_named_like_internal_ones(tmp_path, name):
    table = pa.table({name: [1, 1, 2, 2, 3, 3] * 10, "other": list(range(60)), "d": ["x", "y", "z"] * 20})
    spec = {"quasi_identifiers": {name: {"bands": [2]}}, "sensitive": {"d": {"t": 0.5}}, "k": 2, "others": "keep"}
    assert sqlclose.anonymize(table, spec).write_parquet(tmp_path / "r.parquet")["verified"] is True


def test_fingerprint_covers_every_column():
    from sqlclose.engine import DuckDBEngine
    from sqlclose.prepare.sources import open_source
    from sqlclose.sql.queries import FINGERPRINT_ROW, Params, fingerprint

    prints = []
    for other in ([1, 2], [1, 3]):
        opened = open_source(pa.table({"src": [0, 0], "other": other}), DuckDBEngine())
        params = Params()
        query = fingerprint(opened.relation, opened.engine.row_hash(FINGERPRINT_ROW, params.add("operator secret")))
        prints.append(opened.engine.fetch(query, params.values).column("fingerprint")[0].as_py())
    assert prints[0] != prints[1]


def test_a_null_stand_in_that_is_a_real_value_is_refused():
    table = pa.table({"x": ["NULL", None, "a", "a"]})
    spec = {"quasi_identifiers": {"x": {"tree": {"G": ["a", "NULL"]}, "nulls": "value"}}, "k": 2}
    with pytest.raises(sqlclose.DataError, match="also a real value"):
        sqlclose.anonymize(table, spec)


def test_a_sensitive_null_stand_in_that_is_a_real_value_is_refused():
    """The search would count the NULL as flu and the release keep it NULL: refused, as for a QI."""
    table = pa.table({"age": [30, 31, 32, 33], "disease": ["flu", None, "cold", "flu"]})
    spec = {"quasi_identifiers": {"age": {"bands": [10]}}, "k": 2,
            "sensitive": {"disease": {"distance": "equal", "t": 0.5, "nulls": "value", "null_value": "flu"}}}
    with pytest.raises(sqlclose.DataError, match="column 'disease': null_value = 'flu' is also a real value"):
        sqlclose.anonymize(table, spec)
    spec["sensitive"]["disease"]["null_value"] = "unknown"  # a stand-in of its own is fine
    with sqlclose.anonymize(table, spec) as release:
        assert release.to_arrow().column("disease").null_count == 1


def test_report_path_equal_to_output_is_refused(tmp_path):
    table = pa.table({"x": ["a", "b", "a", "b"]})
    release = sqlclose.anonymize(table, {"k": 2, "quasi_identifiers": {"x": {"tree": {"G": ["a", "b"]}}}})
    with pytest.raises(sqlclose.OutputExistsError, match="its own file"):
        release.write_parquet(tmp_path / "x.out", report=tmp_path / "x.out")
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_parquet_is_bad_input(tmp_path):
    bad = tmp_path / "t.parquet"
    bad.write_text("not parquet")
    with pytest.raises(sqlclose.InputError, match="cannot read"):
        sqlclose.anonymize(bad, {"quasi_identifiers": {"x": {"mask": True}}, "k": 2})


def test_suppression_limit_is_exact_for_large_tables():
    from fractions import Fraction

    from sqlclose.prepare.problem import Problem

    problem = Problem.__new__(Problem)
    problem.suppression, problem.rows = 0.69, 88_420_600
    assert problem.max_suppressed == int(Fraction(69, 100) * 88_420_600) == 61_010_214


@pytest.mark.parametrize("suppression", [0.0, 0.05])
def test_one_query_per_node_fallback_agrees_with_the_batched_search(suppression, adult_dir, monkeypatch):
    # The per-node path serves key spaces too wide to pack into 64 bits; on Adult both apply, so
    # they must find the same satisfying set, minimal nodes and optimum.
    import importlib

    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search.node_runner import NodeRunner

    search = importlib.import_module("sqlclose.search.incognito")
    data = sqlclose.load_spec("datasets/adult/adult.toml").model_dump()
    data["privacy"]["suppression"] = suppression
    data["search"]["explore"] = "lattice"  # every outcome compared
    release = sqlclose.anonymize(None, sqlclose.Spec.model_validate(data))
    problem = release.problem
    monkeypatch.setattr(search, "runner_for", NodeRunner)
    slow = search.incognito(problem, criteria_for(problem.k, problem.sas))
    assert slow.queries == slow.nodes_evaluated  # one query per node: the fallback really ran
    assert release.search.queries < release.search.nodes_evaluated
    assert (slow.satisfying == release.search.satisfying).all()
    assert slow.minimal_nodes == release.search.minimal_nodes
    assert slow.optimum == release.search.optimum
    assert slow.evaluated[slow.optimum] == release.search.evaluated[release.search.optimum]


def test_release_at_another_minimal_node(tmp_path, adult_dir):
    data = sqlclose.load_spec("datasets/adult/adult.toml").model_dump()
    data["privacy"]["suppression"] = 0.05  # with suppression every candidate node is evaluated
    release = sqlclose.anonymize(None, sqlclose.Spec.model_validate(data))
    optimum = release.node
    satisfying = [n for n, e in release.search.evaluated.items() if e.satisfied and n != release.search.optimum]
    assert satisfying, "Adult at 5 % has satisfying nodes besides the optimum"
    other = release.at(satisfying[0])
    report = other.write_parquet(tmp_path / "other.parquet")
    assert report["verified"] is True
    assert tuple(report["node"].values()) == satisfying[0]
    assert release.node == optimum  # the original is untouched
    with pytest.raises(sqlclose.InputError, match="not evaluated|does not satisfy"):
        release.at((0,) * 7)


@pytest.mark.parametrize("rule", [{"mask": True}, {"bands": [10]}])
def test_a_qi_of_nulls_only_read_as_a_value_gets_its_own_hierarchy(rule):
    """Every value NULL with nulls = "value" and a rule hierarchy crashed (min() of nothing)."""
    table = pa.table({"z": pa.array([None] * 4, pa.string()), "d": ["a", "b", "a", "b"]})
    spec = {"k": 2, "quasi_identifiers": {"z": {**rule, "nulls": "value"}}, "sensitive": {"d": {"distinct_l": 2}}}
    with sqlclose.anonymize(table, spec) as release:
        rows = release.to_arrow().to_pylist()
    assert release.node == {"z": 0}  # one class of four rows, two values: level 0 already holds
    assert sorted(r["d"] for r in rows) == ["a", "a", "b", "b"] and all(r["z"] is None for r in rows)


def test_a_callers_connection_stays_open_when_the_source_cannot_be_read():
    con = duckdb.connect()
    con.execute("CREATE TABLE kept AS SELECT 1 AS a")
    with pytest.raises(sqlclose.InputError, match="missing_table"):
        sqlclose.anonymize((con, "missing_table"), {"k": 2, "quasi_identifiers": {"a": {"mask": True}}})
    assert con.sql("SELECT a FROM kept").fetchall() == [(1,)]


def test_a_callers_engine_stays_open_when_its_source_cannot_be_read(tmp_path):
    from sqlclose.engine import DuckDBEngine

    con = duckdb.connect()
    engine = DuckDBEngine(con)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(sqlclose.InputError, match="bad.parquet"):
        sqlclose.anonymize(tmp_path / "bad.parquet", {"k": 2, "quasi_identifiers": {"a": {"mask": True}}},
                           engine=engine)
    assert engine.fetch("SELECT 42 AS x").column("x").to_pylist() == [42]
