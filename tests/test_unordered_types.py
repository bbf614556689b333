"""Columns a release could not order by their content alone are refused before the search, and the
plan does not count a rule's leaves (review of the ninety-first round).

- A kept VARIANT column holding 1 as INTEGER and 1 as BIGINT: the two compare and read alike, so
  the rows tied in every sort and the Parquet file, which keeps the types, followed the input's
  order (two orders of one table, two files). CSV writes both as 1: identical rows, one file. (A
  UNION, alike, was refused for Parquet already: DuckDB writes it as a struct; a DuckDB table
  output refuses both.)
- A fixed-size list of structs holding a float: the release's NaN rewrite does not reach it, so
  NaNs differing only in their payload kept the input's order.
- `explain` and `--dry-run` printed a rule's leaf count, the data's distinct values: two tables
  giving the same release byte for byte, one whose suppressed row's ZIP is its own and one whose is
  another row's, gave 3 and 2.

The oracles: the exit codes and messages the README and docs/bad-input.md give, the files' sha256
over two input orders, and the two tables built by hand so that their releases are equal.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import duckdb
import pytest
from table3_project import invoke

import sqlclose
from sqlclose.errors import DataError

SPEC = """others = "keep"
[source]
path = "{source}"
table = "t"
[output]
path = "{out}"
[privacy]
k = 2
[quasi_identifiers]
zip = {{ mask = true, length = 5 }}
[sensitive.disease]
distinct_l = 2
"""

# per case: the column's type and two values of it that compare equal and read alike
VARIANTS = {
    "variant": ("VARIANT", "CAST(1::INTEGER AS VARIANT)", "CAST(1::BIGINT AS VARIANT)"),
    "variant-in-a-struct": ("STRUCT(v VARIANT)", "{'v': CAST(1::INTEGER AS VARIANT)}",
                            "{'v': CAST(1::BIGINT AS VARIANT)}"),
}


def _database(path: Path, kind: str, first: str, second: str, order: tuple[int, ...]) -> Path:
    """Table t: four rows in one ZIP, two diseases, the two alike values of ``kind`` once per
    disease, inserted in ``order``."""
    rows = [("'flu'", first), ("'flu'", second), ("'cold'", first), ("'cold'", second)]
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE t (zip VARCHAR, disease VARCHAR, x {kind})")
    for i in order:
        con.execute(f"INSERT INTO t VALUES ('47677', {rows[i][0]}, {rows[i][1]})")
    con.close()
    return path


@pytest.mark.parametrize("case", VARIANTS)
def test_a_variant_column_is_refused_for_parquet_before_the_search(tmp_path, case):
    kind, first, second = VARIANTS[case]
    source = _database(tmp_path / "in.duckdb", kind, first, second, (0, 1, 2, 3))
    spec = tmp_path / "spec.toml"
    for out in ("out/r.parquet", "out/r"):
        spec.write_text(SPEC.format(source=source, out=out))
        for extra in (["--dry-run"], []):
            result = invoke("anonymize", spec, *extra)
            assert result.exit_code == 2, result.output
            said = " ".join(result.output.split())
            assert f"column 'x' is {kind}, which Parquet cannot hold as it is (a VARIANT's values of two types, 1 " \
                   "as INTEGER and as BIGINT, compare and read alike" in said, said
            # CSV holds a VARIANT as its text, no nested value; a DuckDB table neither
            assert said.endswith("or write CSV" if kind == "VARIANT" else "variant_typeof(\"x\") as another "
                                 "column if its type matters)"), said
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("kind", "value", "holds"), [
    ("VARIANT", "CAST(1 AS VARIANT)", {"csv"}), ("STRUCT(v VARIANT)", "{'v': CAST(1 AS VARIANT)}", set()),
    ("UNION(hourly INTEGER, monthly INTEGER)", "union_value(hourly := 20)", set())])
def test_a_refusal_suggests_only_an_output_that_holds_the_column(tmp_path, kind, value, holds):
    """Review of the ninety-first round: a UNION column was told "write Parquet" by the table and
    CSV outputs and "write CSV" by Parquet, round in a circle. Each refusal now names only outputs
    that hold the column (the oracle: each suggested output run, and ``holds`` by hand)."""
    con = duckdb.connect(str(tmp_path / "in.duckdb"))
    con.execute(f"CREATE TABLE t AS SELECT '47677' AS zip, d AS disease, CAST({value} AS {kind}) AS x "
                "FROM (VALUES ('flu'), ('cold'), ('flu'), ('cold')) v(d)")
    con.close()
    spec = tmp_path / "spec.toml"
    for suffix in ("parquet", "csv", "duckdb"):
        out = f"out/r.{suffix}"
        spec.write_text(SPEC.format(source=tmp_path / "in.duckdb", out=out))
        if suffix == "duckdb":
            spec.write_text(spec.read_text().replace('path = "out/r.duckdb"', 'path = "out/r.duckdb"\ntable = "r"'))
        result = invoke("anonymize", spec, "-q")
        said = " ".join(result.output.split())
        if suffix in holds:
            assert result.exit_code == 0, said
            continue
        assert result.exit_code == 2 and "'x'" in said, said
        suggested = {name for name, words in (("csv", "write CSV"), ("parquet", "write Parquet"),
                                              ("duckdb", "or a DuckDB table")) if words in said}
        assert suggested <= holds, said


@pytest.mark.parametrize("case", VARIANTS)
def test_a_variant_column_is_released_alike_for_both_orders_as_csv_and_as_text(tmp_path, case):
    """CSV writes the two values as one text: the file is the same for both input orders (a struct
    is no CSV column); so is the Parquet file of the column as text, the refusal's fix."""
    kind, first, second = VARIANTS[case]
    digests: dict[str, set[str]] = {"csv": set(), "text": set()} if kind == "VARIANT" else {"text": set()}
    for i, order in enumerate(((0, 1, 2, 3), (1, 0, 3, 2))):
        source = _database(tmp_path / f"in{i}.duckdb", kind, first, second, order)
        spec = {"source": {"path": str(source), "table": "t"}, "privacy": {"k": 2}, "others": "keep",
                "quasi_identifiers": {"zip": {"mask": True, "length": 5}}, "sensitive": {"disease": {"distinct_l": 2}}}
        if "csv" in digests:
            with sqlclose.anonymize(None, spec) as release:
                digests["csv"].add(release.write(tmp_path / f"r{i}.csv")["output"]["sha256"])
        spec["source"] = {"path": str(source), "query": "SELECT zip, disease, CAST(x AS VARCHAR) AS x FROM t"}
        with sqlclose.anonymize(None, spec) as release:
            digests["text"].add(release.write(tmp_path / f"r{i}.parquet")["output"]["sha256"])
    assert all(len(found) == 1 for found in digests.values()), digests


def test_floats_in_a_fixed_size_list_of_structs_are_refused_before_the_search(tmp_path):
    import pyarrow as pa

    kind = pa.list_(pa.struct([("a", pa.float64())]), 2)
    rows = pa.table({"zip": ["47677"] * 4, "disease": ["flu", "flu", "cold", "cold"],
                     "x": pa.array([[{"a": 1.0}, {"a": 2.0}]] * 4, kind)})
    spec = {"privacy": {"k": 2}, "others": "keep", "quasi_identifiers": {"zip": {"mask": True, "length": 5}},
            "sensitive": {"disease": {"distinct_l": 2}}}
    with pytest.raises(DataError, match=r"column 'x' in .* holds floating-point numbers inside a fixed-size list of "
                                        r"nested values"):
        sqlclose.anonymize(rows, spec)
    # A fixed-size list of floats, which the rewrite reaches, and a list of structs are released.
    for reached in (pa.list_(pa.float64(), 2), pa.list_(pa.struct([("a", pa.float64())]))):
        values = [[1.0, 2.0]] * 4 if pa.types.is_floating(reached.value_type) else [[{"a": 1.0}, {"a": 2.0}]] * 4
        table = rows.set_column(2, "x", pa.array(values, reached))
        with sqlclose.anonymize(table, spec) as release:
            assert release.to_arrow().num_rows == 4


def _plan(tmp_path: Path, rows: list[tuple[str, int, str]], name: str, *extra: str) -> tuple[dict, str]:
    """The plan `explain --json` gives for ``rows`` (zip, age, disease), and the release's sha256."""
    folder = tmp_path / name
    folder.mkdir()
    values = ", ".join(f"('{z}', {a}, '{d}')" for z, a, d in rows)
    duckdb.sql(f"COPY (SELECT * FROM (VALUES {values}) t(zip, age, disease)) TO '{folder / 'p.parquet'}'")
    (folder / "spec.toml").write_text(
        '[source]\npath = "p.parquet"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\nsuppression = 0.12\n'
        '[quasi_identifiers]\nzip = { mask = true, length = 5, alphabet = "0123456789" }\n'
        'age = { bands = [5, 10, 20], domain = [0, 120] }\n[sensitive.disease]\ndistinct_l = 2\n')
    plan = invoke("explain", folder / "spec.toml", "--json", *extra)
    assert plan.exit_code == 0, plan.output
    assert invoke("anonymize", folder / "spec.toml", "-q").exit_code == 0
    return json.loads(plan.output), hashlib.sha256((folder / "out" / "r.parquet").read_bytes()).hexdigest()


def test_the_plan_does_not_count_a_rules_leaves(tmp_path):
    """Eight rows in two classes, and a ninth the search suppresses: its ZIP its own (three ZIPs in
    the data) or another row's (two). The releases are equal byte for byte; so must the plans be."""
    kept = [("47601", 31, "flu"), ("47601", 32, "cold"), ("47601", 33, "flu"), ("47601", 34, "cold"),
            ("47602", 41, "flu"), ("47602", 42, "cold"), ("47602", 43, "flu"), ("47602", 44, "cold")]
    own, shared = (_plan(tmp_path, [*kept, (zip_code, 77, "flu")], name)
                   for name, zip_code in (("own", "99999"), ("shared", "47601")))
    assert own[1] == shared[1]  # the same release
    qis = [{k: v for k, v in qi.items() if k != "origin"} for qi in own[0]["quasi_identifiers"]]
    assert qis == [{k: v for k, v in qi.items() if k != "origin"} for qi in shared[0]["quasi_identifiers"]]
    assert [qi["leaves"] for qi in qis] == [None, None]
    # --show-values is the operator's screen: there the data's values, and so their number, are given.
    shown = _plan(tmp_path, [*kept, ("99999", 77, "flu")], "shown", "--show-values")[0]
    assert [qi["leaves"] for qi in shown["quasi_identifiers"]] == [3, 9]


def test_the_plan_prints_no_sql_whose_constants_count_the_data(tmp_path):
    """Two tables of 201 rows giving one release byte for byte: one person (age 90) suppressed, their
    ZIP code another row's (47604) or their own (47609). The plan's release query at a node divides
    each ZIP's code by the number of codes under the fullest prefix (5 or 6: review of the ninety-third
    round); the scan's SQL casts codes to the narrowest type holding them and groups or not as the
    data's distinct combinations decide. Without --show-values the plans, SQL included, are equal;
    with it (the operator's screen) the SQL is there, and tells the two tables apart."""
    rows = [(f"476{d}{e}", 20 + (7 * i) % 60, "MF"[i % 2], 1000 * (1 + i % 9), ("flu", "cold", "asthma")[i % 3])
            for i, (d, e) in enumerate((d, e) for d in "012" for e in "01234" for _ in range(14))][:200]
    plans = {}
    for name, zip_code in (("shared", "47604"), ("own", "47609")):
        folder = tmp_path / name
        folder.mkdir()
        table = [*rows, (zip_code, 90, "M", 3000, "flu")]
        values = ", ".join(f"('{z}', {a}, '{s}', {p}, '{d}')" for z, a, s, p, d in table)
        duckdb.sql(f"COPY (SELECT * FROM (VALUES {values}) t(zip, age, sex, salary, disease)) "
                   f"TO '{folder / 'p.parquet'}'")
        (folder / "spec.toml").write_text(
            'others = "drop"\n[source]\npath = "p.parquet"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 5\n'
            'suppression = 0.1\n[quasi_identifiers]\nzip = { mask = true, length = 5 }\nage = { bands = [5, 10, 20] }\n'
            'sex = { tree = { P = ["M", "F"] } }\n[sensitive.salary]\ndistance = "ordered"\nt = 0.4\n')
        node = ("--node", "zip=1,age=2,sex=1")
        run = invoke("anonymize", folder / "spec.toml", *node, "-q")
        assert run.exit_code == 0, run.output
        released = duckdb.sql(f"SELECT count(*) FROM '{folder / 'out' / 'r.parquet'}'").fetchall()
        plans[name] = {"release": hashlib.sha256((folder / "out" / "r.parquet").read_bytes()).hexdigest(),
                       "rows": released,
                       **{" ".join(extra): invoke(*command, folder / "spec.toml", *node, *extra).output
                          .replace(str(folder), "<folder>")
                          for command, extra in ((("explain",), ()), (("explain",), ("--json",)),
                                                 (("anonymize",), ("--dry-run", "--json")),
                                                 (("explain",), ("--json", "--show-values")))}}
    shared, own = plans["shared"], plans["own"]
    assert shared["release"] == own["release"] and shared["rows"] == own["rows"] == [(200,)]  # one suppressed
    for shown in ("", "--json", "--dry-run --json"):
        assert re.sub(r"_[0-9a-f]{8}_", "_", shared[shown]) == re.sub(r"_[0-9a-f]{8}_", "_", own[shown])
    assert "SELECT" not in shared["--json"] and '"withheld": "its constants count' in shared["--json"]
    # the operator's screen: the SQL, with the count the others withhold
    shown = [json.loads(plans[name]["--json --show-values"])["sql"]["release"] for name in ("shared", "own")]
    assert '"q0" // 5' in shown[0] and '"q0" // 6' in shown[1]
