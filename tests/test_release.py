"""Tests for Release: the report, the written Parquet, the sources, suppression.

Expected values for Table 3 (Li et al., ICDE 2007) are worked out by hand in comments: at node
zip=1 (4767*, 4760*, 4790*) and age=2 (<40, >=40) the three classes are
  4767*/<40: 47677 29 3000 gastric ulcer, 47678 27 5000 stomach cancer, 47673 36 9000 pneumonia
  4760*/<40: 47602 22 4000 gastritis, 47605 30 7000 bronchitis, 47607 32 10000 stomach cancer
  4790*/>=40: 47905 43 6000 gastritis, 47909 52 11000 flu, 47906 47 8000 bronchitis
"""

from __future__ import annotations

import collections
import csv
import hashlib
import hmac
import json
import re
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from oracle import Config, table3_oracle

import sqlclose
import sqlclose.api
from sqlclose import Release
from sqlclose.against_report import verify_against_report
from sqlclose.search import incognito as incognito_module

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
CSV = TABLE3 / "table3.csv"


def spec_dict(**overrides) -> dict:
    spec = {
        "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": str(TABLE3 / "age.csv")}},
        "sensitive": {
            "salary": {"distance": "ordered", "t": 0.2},
            "disease": {"distance": "hierarchical", "t": 0.3, "hierarchy": str(TABLE3 / "disease.csv")},
        },
        "k": 3,
    }
    spec.update(overrides)
    return spec


def input_rows() -> list[dict]:
    with CSV.open() as f:
        return list(csv.DictReader(f))


def rows_of(table: pa.Table) -> list[tuple]:
    """Rows as sorted tuples of text (sources differ in integer vs text typing of pass-through)."""
    cols = table.column_names
    return sorted(tuple(str(r[c]) for c in cols) for r in table.to_pylist())


FINGERPRINT_KEY = "the operator's secret"  # the input fingerprint is keyed; without a key there is none


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Table 3 released once, at its spec's settings, the lattice decided (the minimal nodes
    checked): (release, report, path)."""
    out = tmp_path_factory.mktemp("release") / "t3.parquet"
    release = sqlclose.anonymize(CSV, spec_dict(search={"explore": "lattice"}), fingerprint_key=FINGERPRINT_KEY)
    report = release.write_parquet(out)
    return release, report, out


# ---------------------------------------------------------------------------- the report


def test_report_keys_and_values(written):
    release, report, out = written
    for key in ("node", "lattice", "classes", "suppressed_rows", "privacy", "utility", "input",
                "output", "spec_sha256", "verified"):
        assert key in report, key
    assert report["node"] == {"zip": 1, "age": 2}
    assert list(report["node"]) == ["zip", "age"]
    assert {"zip": 1, "age": 2} in release.minimal_nodes  # the operator's; not in the report (below)
    assert "minimal_nodes" not in report
    lattice = report["lattice"]
    assert lattice["size"] == 6 * 4  # zip: 47677 … *****, 6 levels; age: 4 levels
    assert lattice["levels"] == {"zip": 6, "age": 4}
    assert set(lattice) == {"levels", "size", "complete", "searched", "seconds"} \
        and lattice["complete"] is True and lattice["searched"] is True
    assert 1 <= release.search.nodes_evaluated <= lattice["size"]
    assert lattice["seconds"] >= 0
    assert report["classes"] == 3
    assert report["suppressed_rows"] == 0
    privacy = report["privacy"]
    assert privacy["min_class_size"] == 3
    assert privacy["k"] == 3
    salary, disease = privacy["sensitive"]["salary"], privacy["sensitive"]["disease"]
    assert salary["distance"] == "ordered" and salary["t"] == 0.2
    assert disease["distance"] == "hierarchical" and disease["t"] == 0.3
    # Ordered EMD, 9 distinct salaries, class 4767* holds ranks 0, 2, 6: cumulative extras
    # 2,1,3,2,1,0,2,1,0 (ninths) -> 12/9 / 8 = 1/6; 4790* (ranks 3,5,8) also 1/6; 4760* 1/12.
    assert salary["max_emd"] == pytest.approx(1 / 6, abs=1e-12)
    # Hierarchical EMD (H = 3) of 4790*: respiratory infection 1/3 * 1/9, stomach diseases
    # 1/3 * 1/9, root 2/9 -> 8/27 (4767*: 7/27, 4760*: 5/27).
    assert disease["max_emd"] == pytest.approx(8 / 27, abs=1e-12)
    assert report["utility"]["discernibility"] == 3 * 3 * 3
    assert report["utility"]["average_class_size"] == 3.0
    assert report["input"]["rows"] == 9
    assert report["input"]["dropped_null_rows"] == 0
    assert isinstance(report["input"]["fingerprint"], str) and report["input"]["fingerprint"]
    assert report["output"]["path"] == str(out)
    assert report["output"]["rows"] == 9
    assert report["output"]["columns"] == ["zip", "age", "salary", "disease"]
    assert list(report["output"]["column_roles"]) == ["zip", "age", "salary", "disease"]
    # No row suppressed: the released distribution is the input's, so t against it is the same.
    assert report["t_against_release"]["salary"] == pytest.approx(1 / 6, abs=1e-12)
    assert report["t_against_release"]["disease"] == pytest.approx(8 / 27, abs=1e-12)
    # keyed with the operator's secret, as the fingerprint (tests/test_leaks_digests.py)
    plain = sqlclose.Spec.model_validate(spec_dict(search={"explore": "lattice"})).sha256()
    assert report["spec_sha256"] == hmac.new(FINGERPRINT_KEY.encode(), plain.encode(), "sha256").hexdigest()
    assert report["verified"] is True
    assert report["sqlclose_version"] == sqlclose.__version__


def test_report_file_and_sha256(written):
    release, report, out = written
    assert report["output"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    beside = out.with_name(out.name + ".report.json")
    assert json.loads(beside.read_text()) == report
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name, beside.name]  # no temp files


def test_release_properties_are_the_papers_table5(written):
    release, report, out = written
    assert isinstance(release, Release)
    assert release.node == {"zip": 1, "age": 2}  # Li et al., Table 5: 4767*/4760*/4790*, <40/>=40
    assert release.minimal_nodes == [{"zip": 1, "age": 2}]
    s = release.summary
    assert s["classes"] == 3 and s["rows"] == 9 and s["suppressed_rows"] == 0  # three classes of three
    assert release.columns == ["zip", "age", "salary", "disease"]


def test_fingerprint_stable_across_runs(written, tmp_path):
    _, report, _ = written
    again = sqlclose.anonymize(CSV, spec_dict(), fingerprint_key=FINGERPRINT_KEY).write_parquet(
        tmp_path / "again.parquet")
    assert again["input"]["fingerprint"] == report["input"]["fingerprint"]
    assert again["output"]["sha256"] == report["output"]["sha256"]  # deterministic output


def test_custom_report_path(tmp_path):
    release = sqlclose.anonymize(CSV, spec_dict())
    doc = release.write_parquet(tmp_path / "a" / "r.parquet", report=tmp_path / "b" / "rep.json")
    assert json.loads((tmp_path / "b" / "rep.json").read_text())["output"]["sha256"] == doc["output"]["sha256"]
    assert not (tmp_path / "a" / "r.parquet.report.json").exists()


# ---------------------------------------------------------------------------- the data


def test_written_labels_are_generalized(written):
    _, _, out = written
    table = pq.read_table(out)
    assert table.column_names == ["zip", "age", "salary", "disease"]
    assert set(table.column("zip").to_pylist()) == {"4767*", "4760*", "4790*"}
    assert set(table.column("age").to_pylist()) == {"<40", ">=40"}
    classes = collections.Counter(zip(table.column("zip").to_pylist(), table.column("age").to_pylist(), strict=True))
    assert classes == {("4767*", "<40"): 3, ("4760*", "<40"): 3, ("4790*", ">=40"): 3}


def test_pass_through_columns_unchanged_and_rows_aligned(written):
    _, _, out = written
    got = pq.read_table(out).to_pylist()
    src = input_rows()
    assert collections.Counter(r["salary"] for r in got) == collections.Counter(int(r["salary"]) for r in src)
    assert collections.Counter(r["disease"] for r in got) == collections.Counter(r["disease"] for r in src)
    # each released row is its input row, generalized: the salary identifies the row in Table 3
    by_salary = {int(r["salary"]): r for r in src}
    for r in got:
        s = by_salary[r["salary"]]
        assert r["zip"] == s["zip"][:4] + "*"
        assert r["age"] == ("<40" if int(s["age"]) < 40 else ">=40")
        assert r["disease"] == s["disease"]


def test_to_arrow_equals_written_file(written):
    release, _, out = written
    mem = release.to_arrow()
    disk = pq.read_table(out)
    assert mem.column_names == disk.column_names
    assert rows_of(mem) == rows_of(disk)
    assert sorted(map(tuple, (r.values() for r in mem.to_pylist()))) == \
        sorted(map(tuple, (r.values() for r in disk.to_pylist())))
    assert release.to_pandas().shape == (9, 4)


def test_identifiers_dropped(tmp_path):
    src = tmp_path / "named.csv"
    rows = input_rows()
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "zip", "age", "salary", "disease"])
        for i, r in enumerate(rows):
            w.writerow([f"person {i}", r["zip"], r["age"], r["salary"], r["disease"]])
    release = sqlclose.anonymize(src, spec_dict(identifiers=["name"]))
    out = tmp_path / "out" / "r.parquet"
    report = release.write_parquet(out)
    table = pq.read_table(out)
    assert table.column_names == ["zip", "age", "salary", "disease"]
    assert report["output"]["columns"] == ["zip", "age", "salary", "disease"]
    assert "person" not in out.read_bytes().decode("latin-1")
    assert release.node == {"zip": 1, "age": 2}


def test_column_order_follows_the_input(tmp_path):
    src = tmp_path / "reordered.csv"
    rows = input_rows()
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["disease", "salary", "age", "zip"])
        for r in rows:
            w.writerow([r["disease"], r["salary"], r["age"], r["zip"]])
    release = sqlclose.anonymize(src, spec_dict())
    assert release.to_arrow().column_names == ["disease", "salary", "age", "zip"]
    assert release.node == {"zip": 1, "age": 2}


# ---------------------------------------------------------------------------- sources


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("sources")
    arrow = pacsv.read_csv(CSV)
    pq.write_table(arrow, d / "t3.parquet")
    db = d / "t3.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE people AS SELECT * FROM read_csv(?, header = true)", [str(CSV)])
    con.close()
    odd = d / "t3.data"  # a DuckDB file whose suffix does not say so: format = "duckdb"
    shutil.copy(db, odd)
    return d, arrow, db, odd


def released_rows(release: Release, tmp_path: Path, name: str) -> list[tuple]:
    out = tmp_path / f"{name}.parquet"
    release.write_parquet(out)
    return rows_of(pq.read_table(out))


def test_all_sources_agree(sources, tmp_path):
    d, arrow, db, odd = sources
    reference = sqlclose.anonymize(CSV, spec_dict())
    expected = released_rows(reference, tmp_path, "csv")
    assert reference.node == {"zip": 1, "age": 2}

    con = duckdb.connect()
    con.execute("CREATE TABLE t3 AS SELECT * FROM read_csv(?, header = true)", [str(CSV)])
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE TABLE s.t3b AS SELECT * FROM t3")
    runs = {
        "csv-str": sqlclose.anonymize(str(CSV), spec_dict()),
        "parquet": sqlclose.anonymize(d / "t3.parquet", spec_dict()),
        "duckdb-spec": sqlclose.anonymize(None, spec_dict(source={"path": str(db), "table": "people"})),
        "duckdb-path": sqlclose.anonymize(db, spec_dict(source={"path": str(db), "table": "people"})),
        "duckdb-format": sqlclose.anonymize(None, spec_dict(source={"path": str(odd), "table": "people",
                                                                    "format": "duckdb"})),
        "csv-spec": sqlclose.anonymize(None, spec_dict(source={"path": str(CSV)})),
        "arrow": sqlclose.anonymize(arrow, spec_dict()),
        "pandas": sqlclose.anonymize(pd.read_csv(CSV), spec_dict()),
        "connection": sqlclose.anonymize((con, "t3"), spec_dict()),
        "connection-schema": sqlclose.anonymize((con, ("s", "t3b")), spec_dict()),
    }
    for name, release in runs.items():
        assert release.node == {"zip": 1, "age": 2}, name
        assert release.summary["rows"] == 9, name
        assert released_rows(release, tmp_path, name) == expected, name
    # the caller's connection still works and holds its table
    assert con.execute("SELECT count(*) FROM t3").fetchone()[0] == 9
    con.close()


def test_source_labels_in_report(sources, tmp_path):
    d, arrow, db, _ = sources
    doc = sqlclose.anonymize(None, spec_dict(source={"path": str(db), "table": "people"})) \
        .write_parquet(tmp_path / "a.parquet")
    assert str(db) in doc["input"]["source"] and "people" in doc["input"]["source"]
    doc = sqlclose.anonymize(arrow, spec_dict()).write_parquet(tmp_path / "b.parquet")
    assert doc["input"]["rows"] == 9


def test_text_typed_source_gives_same_labels(tmp_path):
    # zip and age as strings (e.g. a CSV read with all_varchar) release the same labels
    arrow = pacsv.read_csv(CSV, convert_options=pacsv.ConvertOptions(
        column_types={"zip": pa.string(), "age": pa.string()}))
    release = sqlclose.anonymize(arrow, spec_dict())
    assert release.node == {"zip": 1, "age": 2}
    table = release.to_arrow()
    assert set(table.column("zip").to_pylist()) == {"4767*", "4760*", "4790*"}


def test_missing_duckdb_table(sources):
    _, _, db, _ = sources
    with pytest.raises(sqlclose.InputError) as e:
        sqlclose.anonymize(None, spec_dict(source={"path": str(db), "table": "nobody"}))
    assert "nobody" in str(e.value)


def test_missing_connection_table():
    con = duckdb.connect()
    with pytest.raises(sqlclose.InputError) as e:
        sqlclose.anonymize((con, "absent_table"), spec_dict())
    assert "absent_table" in str(e.value)


def test_unsupported_source_type():
    with pytest.raises(sqlclose.InputError, match="int"):
        sqlclose.anonymize(42, spec_dict())


def test_missing_source_path(tmp_path):
    with pytest.raises(sqlclose.InputError) as e:
        sqlclose.anonymize(tmp_path / "none.csv", spec_dict())
    assert "none.csv" in str(e.value)


def test_no_source_at_all():
    with pytest.raises(sqlclose.SpecError, match=r"\[source\]"):
        sqlclose.anonymize(None, spec_dict())


# ---------------------------------------------------------------------------- suppression


def test_suppression_removes_the_small_class(tmp_path):
    # k = 4 and up to 34% (3 of 9 rows) suppressed: at zip=2, age=2 the classes are
    # 476**/<40 (6 rows) and 479**/>=40 (3 rows < k): the latter is suppressed.
    release = sqlclose.anonymize(CSV, spec_dict(k=4, suppression=0.34))
    assert release.node == {"zip": 2, "age": 2}
    out = tmp_path / "sup.parquet"
    report = release.write_parquet(out)
    assert report["suppressed_rows"] == 3
    assert report["output"]["rows"] == 9 - 3
    assert report["input"]["rows"] == 9
    assert report["classes"] == 1
    assert report["privacy"]["min_class_size"] == 6
    assert report["privacy"]["suppression_limit"] == 0.34
    table = pq.read_table(out)
    assert table.num_rows == 6
    classes = collections.Counter(zip(table.column("zip").to_pylist(), table.column("age").to_pylist(), strict=True))
    assert classes == {("476**", "<40"): 6}
    assert min(classes.values()) >= 4
    assert sorted(table.column("salary").to_pylist()) == [3000, 4000, 5000, 7000, 9000, 10000]
    assert rows_of(release.to_arrow()) == rows_of(table)


def test_suppression_limit_below_the_small_class_forces_generalization():
    # floor(0.33 * 9) = 2 < 3: the 479** class cannot be suppressed; only one class of 9 is left
    release = sqlclose.anonymize(CSV, spec_dict(k=4, suppression=0.33))
    assert release.summary["suppressed_rows"] == 0
    assert release.summary["classes"] == 1
    assert release.summary["rows"] == 9


def test_no_suppression_needed_when_allowed():
    # Allowing suppression does not change an optimum that needs none.
    release = sqlclose.anonymize(CSV, spec_dict(suppression=0.5))
    assert release.node == {"zip": 1, "age": 2}
    assert release.summary["suppressed_rows"] == 0


def test_exploring_for_the_optimum_releases_the_same_and_lists_no_minimal_nodes(tmp_path):
    """Exploring for the optimum alone (the default; [search] explore = "optimum"): the optimum
    worked out above (zip=2, age=2, 3 rows suppressed), the same file as deciding the lattice,
    fewer nodes evaluated; the report says the lattice was not decided whole, and the operator
    gets no minimal nodes it does not know."""
    whole = sqlclose.anonymize(CSV, spec_dict(k=4, suppression=0.34, search={"explore": "lattice"}))
    alone = sqlclose.anonymize(CSV, spec_dict(k=4, suppression=0.34))
    assert whole.node == alone.node == {"zip": 2, "age": 2}
    a, b = whole.write_parquet(tmp_path / "a.parquet"), alone.write_parquet(tmp_path / "b.parquet")
    assert a["output"]["sha256"] == b["output"]["sha256"]
    assert a["lattice"]["complete"] is True and whole.minimal_nodes and whole.search.satisfying.sum() > 0
    assert b["lattice"]["complete"] is False and alone.minimal_nodes is None
    assert alone.search.nodes_evaluated < whole.search.nodes_evaluated
    failing = [node for node, ev in alone.search.evaluated.items() if not ev.satisfied]
    assert failing  # the walk from above evaluated failing nodes too
    with pytest.raises(sqlclose.InputError, match="does not satisfy the requirements; the optimum is zip=2, age=2"):
        alone.at(failing[0])
    with pytest.raises(sqlclose.InputError,
                       match=r"does not satisfy the requirements; the optimum is zip=2, age=2 \(Release.minimal_nodes"):
        whole.at(failing[0])


@pytest.mark.parametrize(("k", "suppression", "explore"), [(3, 0.0, "lattice"), (4, 0.34, "optimum"),
                                                           (3, 0.34, "optimum")])
def test_any_satisfying_node_is_released_measured_even_one_the_search_did_not_evaluate(tmp_path, monkeypatch, k,
                                                                                     suppression, explore):
    """``at`` (``--node``) releases exactly the nodes brute force says satisfy, with brute force's
    figures: also those the search decided without measuring them (inferred above a satisfying
    node by the walk from below, alone here, or left aside exploring for the optimum), which it
    evaluates then."""
    monkeypatch.setattr(incognito_module, "BELOW_SHARE", 1e18)
    t = {"salary": (0.2, "ordered"), "disease": (0.3, "hierarchical")}
    truth = table3_oracle().evaluate_all({"case": (Config(k, t), suppression)})["case"]
    release = sqlclose.anonymize(CSV, spec_dict(k=k, suppression=suppression, search={"explore": explore}))
    unmeasured = [n for n, r in truth.items() if r.satisfied and not getattr(
        release.search.evaluated.get(n), "satisfied", False)]
    assert unmeasured, "no satisfying node left unmeasured: the case tests nothing new"
    for node, expected in truth.items():
        if not expected.satisfied:
            with pytest.raises(sqlclose.InputError, match="does not satisfy the requirements"):
                release.at(node)
            continue
        chosen = release.at(node)
        assert (chosen.summary["suppressed_rows"], chosen.summary["classes"]) == (expected.suppressed, expected.classes)
        assert chosen.summary["utility"]["discernibility"] == expected.dm
    out = tmp_path / "r.parquet"
    release.at(unmeasured[0]).write_parquet(out)
    sizes = duckdb.sql(f"SELECT COUNT(*) FROM read_parquet('{out}') GROUP BY zip, age").fetchall()
    assert min(n for (n,) in sizes) >= k and sum(n for (n,) in sizes) == 9 - truth[unmeasured[0]].suppressed


@pytest.mark.parametrize("suppression", [0.0, 0.34])
def test_a_given_satisfying_node_is_released_without_a_search(tmp_path, monkeypatch, suppression):
    """``anonymize(node=…)`` (``--node``) measures the given node alone: every node brute force
    says satisfies is released with brute force's figures while the search fails if it runs at
    all, and the report says none ran. A node that fails is told so, with the optimum the search
    then finds (brute force's); ``at`` on such a release cannot name one, and says why."""
    t = {"salary": (0.2, "ordered"), "disease": (0.3, "hierarchical")}
    truth = table3_oracle().evaluate_all({"case": (Config(3, t), suppression)})["case"]
    spec = spec_dict(k=3, suppression=suppression)

    def no_search(*args, **kwargs):
        raise AssertionError("the search ran for a given node")

    monkeypatch.setattr(sqlclose.api, "incognito", no_search)
    satisfying = [node for node, result in truth.items() if result.satisfied]
    assert len(satisfying) > 1 and len(satisfying) < len(truth)
    for node in satisfying:
        with sqlclose.anonymize(CSV, spec, node=node) as release:
            expected = truth[node]
            assert (release.summary["suppressed_rows"], release.summary["classes"]) == \
                (expected.suppressed, expected.classes)
            assert release.summary["utility"]["discernibility"] == expected.dm
    failing = next(node for node, result in truth.items() if not result.satisfied)
    with sqlclose.anonymize(CSV, spec, node=satisfying[0]) as release:
        doc = release.write_parquet(tmp_path / "given.parquet")
        with pytest.raises(sqlclose.InputError, match="does not satisfy the requirements; no search ran"):
            release.at(failing)
    assert doc["node_given"] is True and doc["lattice"]["searched"] is False and doc["lattice"]["seconds"] == 0
    with sqlclose.anonymize(CSV, {**spec, "search": {"explore": "lattice"}}, node=satisfying[0]) as release:
        assert release.minimal_nodes is None and release.write_parquet(tmp_path / "l.parquet")["lattice"] == \
            {**doc["lattice"], "complete": False}  # nothing decided, whatever explore says
    sizes = duckdb.sql(f"SELECT COUNT(*) FROM read_parquet('{tmp_path / 'given.parquet'}') GROUP BY zip, age")
    sizes = [n for (n,) in sizes.fetchall()]
    assert min(sizes) >= 3 and sum(sizes) == 9 - truth[satisfying[0]].suppressed
    monkeypatch.undo()
    with pytest.raises(sqlclose.InputError, match="does not satisfy the requirements; the optimum is") as told:
        sqlclose.anonymize(CSV, spec, node=failing)
    named = re.search(r"the optimum is zip=(\d+), age=(\d+)", str(told.value))
    least = min(r.dm for r in truth.values() if r.satisfied)
    assert truth[int(named[1]), int(named[2])].satisfied and truth[int(named[1]), int(named[2])].dm == least


def test_connection_table_named_with_its_schema_and_catalog():
    # README: "sqlclose.anonymize((connection, "schema.table"), spec)". The name was quoted whole
    # (a table called "hr.people", which does not exist), and a 3-part tuple dropped its middle
    # part: ("other", "hr", "people") read other.main.people, another table, without a word.
    rows = len(input_rows())
    con = duckdb.connect()
    con.execute("CREATE TABLE t3 AS SELECT * FROM read_csv(?, header = true)", [str(CSV)])
    con.execute("CREATE SCHEMA hr")
    con.execute("CREATE TABLE hr.people AS SELECT * FROM t3")
    con.execute("ATTACH ':memory:' AS other")
    con.execute("CREATE SCHEMA other.hr")
    con.execute("CREATE TABLE other.hr.people AS SELECT * FROM t3")
    con.execute("CREATE TABLE other.main.people AS SELECT * FROM t3 LIMIT 3")  # a decoy: 3 rows
    con.execute("CREATE TABLE main.people AS SELECT * FROM t3 LIMIT 3")  # another
    for name in ("hr.people", ("hr", "people"), "other.hr.people", ("other", "hr", "people")):
        with sqlclose.anonymize((con, name), spec_dict()) as release:
            assert release.summary["rows"] == rows, name
    with pytest.raises(sqlclose.InputError, match="a.b.c.d"):
        sqlclose.anonymize((con, "a.b.c.d"), spec_dict())
    con.close()


def test_a_closed_release_says_so(tmp_path):
    # Used after its `with` block, a release failed with DuckDB's "Connection has already been
    # closed" (to_arrow, as an EngineError) or its raw ConnectionException (write_parquet).
    with sqlclose.anonymize(CSV, spec_dict()) as release:
        node = release.node
        other = release.at(node)
    for use in (release.to_arrow, lambda: release.write_parquet(tmp_path / "r.parquet"), other.to_arrow,
                lambda: release.at(node).to_arrow(), lambda: release.write(tmp_path / "r.csv")):
        with pytest.raises(sqlclose.InputError, match="this release was closed"):
            use()
    assert list(tmp_path.iterdir()) == []
    release.close()  # closing again is harmless


@pytest.mark.parametrize(("node", "says"), [
    ({"zip": 1.5, "age": 2}, "node zip=1.5: a level is a whole number (0 to 5), not a float"),
    ((1, 2, 3), "node (1, 2, 3) gives 3 levels for 2 quasi-identifiers (zip, age)"),
    ({"zip": "1", "age": 2}, "node zip='1': a level is a whole number (0 to 5), not a str"),
    (None, "node None is a NoneType"),
    ("zip=1,age=2", "node 'zip=1,age=2' is a str"),
])
def test_release_at_refuses_a_malformed_node_with_an_input_error(node, says):
    """``at`` takes a dict of a whole level per QI or a tuple of one level per QI. A fraction was
    truncated (1.5 released level 1), a level too many dropped without a word, and a text level,
    None or a text node raised a raw TypeError. Each is refused, saying the form expected."""
    with sqlclose.anonymize(CSV, spec_dict()) as release:
        with pytest.raises(sqlclose.InputError) as caught:
            release.at(node)
        assert release.at((1, 2)).node == {"zip": 1, "age": 2}  # the well-formed tuple still works
    message = str(caught.value)
    assert says in message, message
    assert "a node is a dict of quasi-identifier name to level" in message or "whole number" in message, message


def test_a_node_given_to_anonymize_is_checked_before_the_search_and_released(monkeypatch):
    """``anonymize(…, node=…)`` (what --node calls): a level out of range was told only after the
    whole search. It is told once the hierarchies are built, the search never started; a good node
    is released as ``at`` releases it, by a release that closes its engine as the optimum's would."""
    from sqlclose import api

    def no_search(*_a, **_k):
        raise AssertionError("the search ran")

    with monkeypatch.context() as patched:
        patched.setattr(api, "_search", no_search)
        for node, says in (({"zip": 1, "age": 9}, "node age=9: 'age' has no level 9 (its levels are 0 to 3)"),
                           ((1, 2, 3), "node (1, 2, 3) gives 3 levels for 2 quasi-identifiers")):
            with pytest.raises(sqlclose.InputError, match=re.escape(says)):
                sqlclose.anonymize(CSV, spec_dict(), node=node)
        with pytest.raises(sqlclose.InputError, match="a GAA release has no lattice nodes"):
            sqlclose.anonymize(CSV, spec_dict(search={"algorithm": "gaa"}), node=(1, 2))
    with sqlclose.anonymize(CSV, spec_dict()) as optimum:
        expected = optimum.at((1, 2)).to_arrow()
    with sqlclose.anonymize(CSV, spec_dict(), node={"zip": 1, "age": 2}) as release:
        assert release.node == {"zip": 1, "age": 2} and release.node_given
        assert rows_of(release.to_arrow()) == rows_of(expected)
    assert release.problem.engine.closed
    with pytest.raises(sqlclose.InputError, match="does not satisfy the requirements"):
        sqlclose.anonymize(CSV, spec_dict(), node=(0, 0))


def test_repr_names_the_release_not_its_data():
    # A notebook shows a release by its repr: it was the dataclass's, 5 KB on Table 3 (66 KB on
    # Adult) of internals, with the hierarchies' leaves — the input's own values — in it.
    values = {row[c] for row in input_rows() for c in ("zip", "age", "salary", "disease")}
    arrow = pacsv.read_csv(CSV)  # its label, "arrow table", holds no digit a path might
    with sqlclose.anonymize(arrow, spec_dict()) as release:
        shown = repr(release)
        assert len(shown) < 200
        assert "zip" in shown and "age" in shown and "open" in shown
        assert not [v for v in values if v in shown]
    assert "closed" in repr(release)
    with sqlclose.anonymize(arrow, spec_dict(search={"algorithm": "gaa"})) as gaa:
        assert len(repr(gaa)) < 200 and "GaaRelease" in repr(gaa)
        assert not [v for v in values if v in repr(gaa)]


def test_a_path_under_the_home_folder(tmp_path, monkeypatch):
    # "~/out/r.parquet" was taken literally by Python (a folder "~" made in the working folder)
    # but expanded by DuckDB, whose COPY wrote the temporary file in the home folder: the run
    # failed ("No such file or directory") and left that file there. It means the home folder,
    # as it does in a spec.
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    shutil.copy(CSV, home / "t3.csv")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    with sqlclose.anonymize("~/t3.csv", spec_dict()) as release:
        doc = release.write_parquet("~/out/r.parquet")
    assert sorted(p.name for p in (home / "out").iterdir()) == ["r.parquet", "r.parquet.report.json"]
    assert sorted(p.name for p in home.iterdir()) == ["out", "t3.csv"]  # no temporary file left
    assert list(work.iterdir()) == []  # no folder called "~"
    assert doc["output"]["path"] == str(home / "out" / "r.parquet")
    assert pq.read_table(home / "out" / "r.parquet").num_rows == len(input_rows())
    # a spec file and a release re-verified against its report, named from the home folder too
    age = TABLE3 / "age.csv"
    (home / "spec.toml").write_text(f'[privacy]\nk = 3\n[quasi_identifiers]\nzip = {{ mask = true }}\n'
                                    f'age = {{ file = "{age}" }}\n')
    assert sqlclose.load_spec("~/spec.toml").k == 3
    checked = verify_against_report("~/out/r.parquet", "~/out/r.parquet.report.json")
    assert checked["problems"] == [] and checked["rows"] == len(input_rows())


def test_a_release_never_closed_leaves_nothing_once_collected(tmp_path, monkeypatch):
    # A notebook forgets close(): the temporary tables sqlclose made on the caller's connection
    # (its base histogram: the data's values, grouped) stayed there until the caller closed it,
    # five tables and a view a run; a source path holding a glob character left its folder of
    # links in the temporary folder for good, even past the interpreter's exit.
    import gc

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    con = duckdb.connect()
    con.execute("CREATE TABLE t3 AS SELECT * FROM read_csv(?, header = true)", [str(CSV)])
    odd = tmp_path / "data[1]"
    odd.mkdir()
    shutil.copy(CSV, odd / "t3.csv")
    for _ in range(2):
        release = sqlclose.anonymize((con, "t3"), spec_dict())
        release.to_arrow()
        release = sqlclose.anonymize(odd / "t3.csv", spec_dict())
        assert release.to_arrow().num_rows == len(input_rows())
        assert list((tmp_path / "tmp").iterdir())  # the links are there while the release lives
    del release
    gc.collect()
    temporary = con.execute("SELECT (SELECT count(*) FROM duckdb_tables() WHERE temporary) + "
                            "(SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal)").fetchone()[0]
    assert temporary == 0
    assert list((tmp_path / "tmp").iterdir()) == []
    assert con.execute("SELECT count(*) FROM t3").fetchone()[0] == len(input_rows())  # the caller's own table stays
    con.close()


def test_an_engine_the_caller_gave_is_left_as_it_was_by_each_release(tmp_path):
    # anonymize(…, engine=DuckDBEngine(memory_limit=…)) reused over a notebook's runs: each run's
    # tables (a CSV's parsed copy, the base histogram, lookups, the suppressed classes) stayed on
    # the engine after its release's `with` block, and after a failed run, until the engine closed.
    from sqlclose.engine import DuckDBEngine

    def held(engine) -> int:
        return engine.con.execute(
            "SELECT (SELECT count(*) FROM duckdb_tables() WHERE temporary) + "
            "(SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal) + "
            "(SELECT count(*) FROM duckdb_types() WHERE NOT internal)").fetchall()[0][0]  # no result left open

    engine = DuckDBEngine(threads=1)
    assert held(engine) == 0
    for k in (2, 3):
        with sqlclose.anonymize(CSV, spec_dict(k=k, suppression=0.5, search={"explore": "lattice"}),
                                engine=engine) as release:
            other = release.at(release.minimal_nodes[0])
            other.to_arrow()
            release.write_parquet(tmp_path / f"k{k}.parquet")
        assert held(engine) == 0, k
        with pytest.raises(sqlclose.InputError, match="this release was closed"):
            other.to_arrow()  # its tables went with the release it came from
    with pytest.raises(sqlclose.NoSolutionError):
        sqlclose.anonymize(CSV, spec_dict(k=len(input_rows()) + 1), engine=engine)
    assert held(engine) == 0
    with sqlclose.anonymize(CSV, spec_dict(search={"algorithm": "gaa"}), engine=engine) as gaa:
        gaa.to_arrow()
    assert held(engine) == 0
    with sqlclose.anonymize(CSV, spec_dict(), engine=engine, node=(1, 2)) as given:  # --node's release
        given.to_arrow()
    assert held(engine) == 0
    with pytest.raises(sqlclose.InputError, match="does not satisfy the requirements"):
        sqlclose.anonymize(CSV, spec_dict(), engine=engine, node=(0, 0))
    assert held(engine) == 0
    with sqlclose.anonymize(CSV, spec_dict(), engine=engine) as release:  # the engine still works
        assert release.to_arrow().num_rows == len(input_rows())
    engine.close()


def test_a_float_label_reads_as_duckdbs_text_of_the_value_whatever_engine_printed_it() -> None:
    """A DOUBLE QI's level-0 labels were listed in the engine's text (Spark: '1.0E13', '1.0E-7',
    'Infinity'), which `check --against` (DuckDB) refused; ``float_label`` gives one text. Oracle:
    DuckDB's own CAST(… AS VARCHAR) of each value, fed to ``float_label`` in a Java-style spelling."""
    import random

    import duckdb

    from sqlclose.release.report import float_label

    rnd = random.Random(5)
    values = [1e13, 1e-7, -0.0, 0.1, 1e16, 5e-324, 1.7976931348623157e308, float("inf"), float("-inf")]
    values += [rnd.random() * 10.0 ** rnd.randint(-300, 300) * rnd.choice([1, -1]) for _ in range(5000)]
    rows = duckdb.execute("SELECT CAST(v AS VARCHAR), v FROM (SELECT unnest(?::DOUBLE[]) AS v)", [values]).fetchall()
    for duck, value in rows:
        java = repr(value).replace("e", "E").replace("inf", "Infinity")  # another engine's spelling
        assert float_label(java) == duck, value
    assert float_label("missing") == "missing"


@pytest.mark.parametrize("arguments, says", [
    ({"engine": "duckdb"}, "engine= takes a sqlclose engine"),
    ({"engine": duckdb.connect}, "engine= takes a sqlclose engine"),
    ({"fingerprint_key": b"secret-key-of-the-operator"}, "fingerprint_key is the operator's secret as text"),
    ({"output_format": "orc"}, "output_format 'orc' is not one sqlclose writes"),
    ({"partition_by": ["zip"]}, "partition_by is a Parquet folder's"),
])
def test_anonymizes_own_arguments_are_refused_in_words(arguments, says):
    """Review of the sixty-fourth round: a DuckDB connection (or a name) as the engine failed with an
    AttributeError, a key of bytes with another, an unknown output format ran, and partition_by
    without the folder format went unchecked. Each is refused now, as InputError, before the
    source is read."""
    with pytest.raises(sqlclose.InputError, match=re.escape(says)):
        sqlclose.anonymize(CSV, TABLE3 / "table3.toml", **arguments)


def test_a_closed_engine_and_a_partition_column_given_as_text_are_told_as_such():
    """A closed engine was told as a pandas column "of Arrow type large_string, which the duckdb
    engine does not read"; partition_by="zip" named the columns 'z', 'i', 'p'. The oracle: Table 5's
    node, released by a folder partitioned by the one column named."""
    from sqlclose.engine import DuckDBEngine

    engine = DuckDBEngine()
    engine.close()
    with pytest.raises(sqlclose.InputError, match="the engine given was closed"):
        sqlclose.anonymize(pd.read_csv(CSV, dtype={"zip": str}), TABLE3 / "table3.toml", engine=engine)
    with sqlclose.anonymize(CSV, TABLE3 / "table3.toml", output_format="parquet-folder",
                            partition_by="zip") as release:
        assert release.node == {"zip": 1, "age": 2}


def test_a_closed_relations_connection_a_missing_table_and_a_closed_release_are_told_in_words():
    """Review of the sixty-fourth round: a relation whose connection was closed raised DuckDB's
    ConnectionException; a missing table of a (connection, table) pair was told with DuckDB's guess
    at a system view (`Did you mean "pg_enum"?`); a closed release's `report()`, `generalization`
    and `qi_types` raised "Connection already closed!" instead of saying the release was closed."""
    con = duckdb.connect()
    relation = con.sql("SELECT 1 AS a")
    con.close()
    with pytest.raises(sqlclose.InputError, match="keep it open until sqlclose.anonymize returns"):
        sqlclose.anonymize(relation, TABLE3 / "table3.toml")
    with pytest.raises(sqlclose.InputError) as missing:
        sqlclose.anonymize((duckdb.connect(), "nope"), TABLE3 / "table3.toml")
    assert "nope does not exist" in str(missing.value) and "Did you mean" not in str(missing.value)
    with sqlclose.anonymize(CSV, TABLE3 / "table3.toml") as release:
        assert release.summary["classes"] == 3
    for read in (lambda: release.report(), lambda: release.generalization, lambda: release.qi_types):
        with pytest.raises(sqlclose.InputError, match="this release was closed"):
            read()


def test_recursive_diversity_at_a_ratio_just_below_c_is_released_and_verified(tmp_path):
    """Review of the sixty-fourth round: the re-check tested recursive (c,l) as r1 ≥ c · tail, whose
    product rounds (2.666666666666667 × 3 is 8.0 in floating point), and refused (exit 4) a release
    the search had rightly judged: 8 / 3 < 2.666666666666667 exactly. The oracle: the exact
    fractions, and the class's counts by a plain GROUP BY over the written file."""
    from fractions import Fraction

    c = 2.666666666666667
    assert Fraction(8, 3) < Fraction(c)  # the class passes, exactly
    (tmp_path / "t.csv").write_text("q,s\n" + "".join(f"x,{'a' if i < 8 else 'b'}\n" for i in range(11)))
    spec = tmp_path / "s.toml"
    spec.write_text('[source]\npath = "t.csv"\n[output]\npath = "out.parquet"\n[privacy]\nk = 2\n'
                    '[quasi_identifiers]\nq = { tree = { "*" = ["x"] } }\n'
                    f'[sensitive.s]\nrecursive = {{ c = {c!r}, l = 2 }}\n')
    from click.testing import CliRunner

    from sqlclose.cli import main

    done = CliRunner().invoke(main, ["anonymize", str(spec), "--no-progress"])
    assert done.exit_code == 0, done.output
    counts = duckdb.sql(f"SELECT s, count(*) FROM '{tmp_path / 'out.parquet'}' GROUP BY s ORDER BY s").fetchall()
    assert counts == [("a", 8), ("b", 3)]
