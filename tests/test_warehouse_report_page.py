"""`sqlclose check --against` and `sqlclose report --release` on a warehouse release: the table
release.sql made in the warehouse (a DuckDB database here), exported as Parquet. The report's
sha256 is the release query's, so the exported file is checked against the report's figures
instead. Oracles: the tampered file's smallest class counted by a plain GROUP BY; the raw table
(classes of one row, by construction: every row has its own name); the file system's state."""

from __future__ import annotations

import json

import duckdb
import pytest
from warehouse_steps import histogram_in_warehouse, invoke, release_in_warehouse, warehouse_spec, warehouse_with

BODY = """
[privacy]
k = 5
[quasi_identifiers]
age = { bands = [5, 10, 20] }
sex = { tree = { "*" = ["M", "F"] } }
[sensitive.disease]
distinct_l = 2
"""


@pytest.fixture
def made(tmp_path):
    db = warehouse_with(tmp_path, "CREATE TABLE t(age INTEGER, sex VARCHAR, disease VARCHAR, name VARCHAR)",
                        "INSERT INTO t SELECT 20 + (i * 7) % 50, CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END, "
                        "['flu', 'cold', 'hiv', 'ulcer'][1 + i % 4], 'person' || i FROM range(200) r(i)")
    spec = warehouse_spec(tmp_path, "t", ["age", "sex", "disease", "name"], BODY, top='identifiers = ["name"]')
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    r = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec)
    assert r.exit_code == 0, r.output
    released, verify = release_in_warehouse(db, tmp_path)
    assert verify["ok"] is True
    return tmp_path, spec, released, db


def test_check_against_passes_the_faithful_export_and_says_its_bytes_were_not_compared(made):
    """Was: exit 4, 'its sha256 differs from the report's output.sha256 (the file was changed or
    replaced)' for the very release the warehouse made (its verification query said ok): that
    sha256 is the query's. Now every figure is compared and the digest is not, and it says so
    (no 'content' among what matched)."""
    tmp, spec, released, _ = made
    r = invoke("check", released, "--against", tmp / "release.sql.report.json", "--spec", spec)
    assert r.exit_code == 0, r.output
    assert "matches" in r.output and "content," not in r.output, r.output
    assert "bytes were not compared" in r.output, r.output


def test_the_faithful_export_gets_its_page(made):
    tmp, spec, released, _ = made
    r = invoke("report", tmp / "release.sql.report.json", "--release", released, "--html", tmp / "page.html",
               "--spec", spec)
    assert r.exit_code == 0, r.output
    assert (tmp / "page.html").is_file()


def test_a_released_table_that_breaks_k_gets_no_page(made):
    """Was: the page for a file whose smallest class had 3 rows (k = 5) said 'the smallest has
    6 rows'. Now it gets no page (exit 4), as a local release not matching its report."""
    tmp, spec, released, _ = made
    con = duckdb.connect()
    key = con.execute(f"SELECT age, sex FROM '{released}' GROUP BY ALL ORDER BY count(*), age, sex LIMIT 1").fetchone()
    tampered = tmp / "tampered.parquet"
    con.execute(f"""COPY (SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER (PARTITION BY age, sex) AS rn
                    FROM '{released}') WHERE NOT (age = ? AND sex = ? AND rn > 3)) TO '{tampered}' (FORMAT PARQUET)""",
                key)
    assert con.execute(f"SELECT min(n) FROM (SELECT count(*) n FROM '{tampered}' GROUP BY age, sex)").fetchone()[0] == 3
    r = invoke("report", tmp / "release.sql.report.json", "--release", tampered, "--html", tmp / "page.html",
               "--spec", spec)
    assert r.exit_code == 4, r.output
    assert "does not match its report" in r.output, r.output
    assert not (tmp / "page.html").exists()


def test_the_raw_input_table_gets_no_page(made):
    """Was: the raw table (identifiers included, every class of 1 row) got a page saying the
    smallest class has 6 rows. Now: exit 4, no page."""
    tmp, spec, _, db = made
    raw = tmp / "raw.parquet"
    con = duckdb.connect(str(db))
    con.execute(f"COPY t TO '{raw}' (FORMAT PARQUET)")
    con.close()
    r = invoke("report", tmp / "release.sql.report.json", "--release", raw, "--html", tmp / "page.html",
               "--spec", spec)
    assert r.exit_code == 4, r.output
    assert not (tmp / "page.html").exists()


@pytest.mark.parametrize("command", ["report", "check"])
def test_the_raw_table_is_refused_without_listing_its_values(made, command):
    """`report --release` (and `check --against`) given the raw table with the released columns
    refused it listing the file's labels: `generalization.age.labels: the report says ["20-24", …],
    the file holds ['20', '21', …]`, raw ages in the one line a job logs. Now the refusal counts
    them. The oracle: the raw ages and their number, by a plain SQL DISTINCT over the file; none
    is shown, the count is; no page (the file system's state)."""
    tmp, spec, _, db = made
    raw = tmp / "raw.parquet"
    with duckdb.connect(str(db)) as con:
        con.execute(f"COPY (SELECT age, sex, disease FROM t) TO '{raw}' (FORMAT PARQUET)")
    with duckdb.connect() as con:
        ages = [str(a) for (a,) in con.execute(f"SELECT DISTINCT age FROM '{raw}'").fetchall()]
    args = (["report", tmp / "release.sql.report.json", "--release", raw, "--html", tmp / "page.html"]
            if command == "report" else ["check", raw, "--against", tmp / "release.sql.report.json"])
    r = invoke(*args, "--spec", spec)
    assert r.exit_code == 4, r.output
    assert 'generalization.age.labels: the report says ["20-24"' in r.output, r.output
    assert f"the file's first 20 of its {len(ages)} distinct label(s) differ from them" in r.output, r.output
    for age in ages:
        assert repr(age) not in r.output, (age, r.output)
    assert not (tmp / "page.html").exists()


def test_an_export_partitioned_by_a_column_is_checked_as_its_readers_take_it(made):
    """A warehouse export written as a Hive-partitioned folder (Spark's partitionBy, DuckDB's
    PARTITION_BY) reads its partition column last. Was: exit 4, 'the release's columns are …' for
    the faithful export, the report's order expected. Oracle: the same export unpartitioned passes;
    a folder with one class cut to 3 rows (a plain GROUP BY says so) does not."""
    tmp, spec, released, _ = made
    con = duckdb.connect()
    folder, cut = tmp / "by_sex", tmp / "cut_by_sex"
    con.execute(f"COPY (FROM '{released}') TO '{folder}' (FORMAT PARQUET, PARTITION_BY (sex))")
    key = con.execute(f"SELECT age, sex FROM '{released}' GROUP BY ALL ORDER BY count(*), age, sex LIMIT 1").fetchone()
    con.execute(f"""COPY (SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER (PARTITION BY age, sex) AS rn
                    FROM '{released}') WHERE NOT (age = ? AND sex = ? AND rn > 3))
                    TO '{cut}' (FORMAT PARQUET, PARTITION_BY (sex))""", key)
    assert con.execute(f"SELECT min(n) FROM (SELECT count(*) n FROM read_parquet('{cut}/*/*.parquet', "
                       "hive_partitioning = true) GROUP BY age, sex)").fetchone()[0] == 3
    report = tmp / "release.sql.report.json"
    faithful = invoke("check", folder, "--against", report, "--spec", spec)
    assert faithful.exit_code == 0, faithful.output
    tampered = invoke("check", cut, "--against", report, "--spec", spec)
    assert tampered.exit_code == 4 and "min_class_size" in tampered.output, tampered.output


def _warehouse_release_of(tmp_path, dialect: str, column: str, rule: str, texts: dict, kind: str):
    """A warehouse release at level 0 of ``column`` as a warehouse of ``dialect`` makes it: DuckDB plays
    the warehouse, its text of the column (``CAST(… AS TEXT)`` in both queries) replaced by the
    dialect's (``texts``: value → text, from its documentation); each value with 'a' and 'b', twice
    (classes of 4). The released table is exported as Parquet."""
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE t({column} {kind}, s VARCHAR)")
    for value in texts:
        for s in "ab":
            con.execute(f"INSERT INTO t VALUES (CAST(? AS {kind}), ?), (CAST(? AS {kind}), ?)", [value, s, value, s])
    as_text = {duckdb.execute(f"SELECT CAST(CAST(? AS {kind}) AS VARCHAR)", [v]).fetchall()[0][0]: t
               for v, t in texts.items()}
    con.create_function("warehouse_text", lambda x: as_text[x], ["VARCHAR"], "VARCHAR")
    spec = warehouse_spec(tmp_path, "t", [column, "s"], f"[privacy]\nk = 4\n[quasi_identifiers]\n{column} = "
                          f"{{ {'bands = [5, 10]' if rule == 'bands' else 'dates = true'} }}\n[sensitive.s]\n"
                          "distinct_l = 2\n", dialect=dialect)
    cast = f'CAST("src"."{column}" AS TEXT)'
    spelled = f'warehouse_text(CAST("src"."{column}" AS VARCHAR))'
    query = invoke("sql", spec, "--dialect", "duckdb").output
    assert cast in query
    con.execute(f"COPY ({query.replace(cast, spelled)}) TO '{tmp_path / 'h.parquet'}' (FORMAT PARQUET)")
    made = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec, "--node", f"{column}=0",
                  "--dialect", "duckdb")
    assert made.exit_code == 0, made.output
    release = (tmp_path / "release.sql").read_text()
    assert cast in release
    con.execute(f"COPY ({release.replace(cast, spelled)}) TO '{tmp_path / 'released.parquet'}' (FORMAT PARQUET)")
    con.close()
    return tmp_path / "released.parquet", tmp_path / "release.sql.report.json"


@pytest.mark.parametrize("dialect, column, rule, texts, kind", [
    ("trino", "age", "bands", {"29": "2.9E1", "35": "3.5E1", "41": "4.1E1"}, "DOUBLE"),
    ("snowflake", "d", "dates", {"2024-05-17 08:30:00": "2024-05-17 08:30:00.000",
                                 "2024-06-01 10:00:00": "2024-06-01 10:00:00.000"}, "TIMESTAMP"),
])
def test_a_faithful_export_of_a_typed_column_at_level_0_passes_its_check(tmp_path, dialect, column, rule, texts,
                                                                         kind):
    """Was (review D of the ninety-seventh round): `check --against` and `report --release` refused a
    faithful export when a DOUBLE or TIMESTAMP quasi-identifier was released at level 0: the report's
    labels are the warehouse's text ('2.9E1' from Trino's CAST of a DOUBLE, '2024-05-17 08:30:00.000'
    from Snowflake's of a TIMESTAMP_NTZ), the file holds the values, read back as 29.0 and 2024-05-17
    08:30:00. Labels of a warehouse report's level-0 column are now read as values of the file
    column's type. Oracle: the release built by hand from the values; the same file with one value
    changed (a row of 29 made 30) is still refused, its labels differing."""
    released, report = _warehouse_release_of(tmp_path, dialect, column, rule, texts, kind)
    checked = invoke("check", released, "--against", report)
    assert checked.exit_code == 0, checked.output
    page = invoke("report", report, "--release", released, "--html", tmp_path / "page.html")
    assert page.exit_code == 0, page.output
    first = next(iter(texts))
    other = "2024-05-17 08:31:00" if kind == "TIMESTAMP" else "30"
    changed = tmp_path / "changed.parquet"
    duckdb.connect().execute(f"COPY (SELECT * REPLACE (CASE WHEN {column} = CAST('{first}' AS {kind}) THEN "
                             f"CAST('{other}' AS {kind}) ELSE {column} END AS {column}) FROM '{released}') TO "
                             f"'{changed}' (FORMAT PARQUET)")
    refused = invoke("check", changed, "--against", report)
    assert refused.exit_code == 4 and f"generalization.{column}.labels" in refused.output, refused.output


def _many_texts(kind: str) -> dict[str, str]:
    """25 values (more than the 20 labels a report lists) with their warehouse text: Trino writes a DOUBLE
    as 2.9E1, Snowflake a TIMESTAMP_NTZ with its milliseconds (as `_warehouse_release_of`'s cases)."""
    if kind == "DOUBLE":
        return {str(v): f"{v / 10}E1" for v in range(20, 45)}
    return {f"2024-05-{d:02d} 08:30:00": f"2024-05-{d:02d} 08:30:00.000" for d in range(1, 26)}


@pytest.mark.parametrize("dialect, column, rule, kind", [("trino", "age", "bands", "DOUBLE"),
                                                         ("snowflake", "d", "dates", "TIMESTAMP")])
def test_a_faithful_export_of_a_typed_column_of_more_labels_than_listed_passes_its_check(tmp_path, dialect, column,
                                                                                          rule, kind):
    """Was (ninety-eighth round): with more than 20 labels the report lists its first 20 and their
    count, and those were compared as written: the faithful export of a DOUBLE released at level 0 by
    Trino ('2.0E1' … against the file's 20.0 …) was refused, exit 4, as the one of 20 or fewer labels
    was before the ninety-seventh round. The listed labels are read as values of the file column's type
    and must all be among the file's; their count is the file's. Oracle: the release built by hand from
    the 25 values; the same file with a listed value changed into a new one (its rows of 29 made 45, or
    a day moved a minute: the count unchanged), or merged into another (the count one less), is refused."""
    texts = _many_texts(kind)
    released, report = _warehouse_release_of(tmp_path, dialect, column, rule, texts, kind)
    listed = json.loads(report.read_text())["generalization"][column]
    assert listed["label_count"] == 25 and listed["labels"] == sorted(texts.values())[:20], listed
    checked = invoke("check", released, "--against", report)
    assert checked.exit_code == 0, checked.output
    assert f"the labels of column '{column}' were found among the file's values" in checked.output, checked.output
    page = invoke("report", report, "--release", released, "--html", tmp_path / "page.html")
    assert page.exit_code == 0, page.output
    first = sorted(texts)[9]
    new, merged = ("45", sorted(texts)[10]) if kind == "DOUBLE" else ("2024-05-10 08:31:00", sorted(texts)[10])
    for other, says in ((new, f"generalization.{column}.labels"), (merged, f"generalization.{column}.label_count")):
        changed = tmp_path / "changed.parquet"
        duckdb.connect().execute(f"COPY (SELECT * REPLACE (CASE WHEN {column} = CAST('{first}' AS {kind}) THEN "
                                 f"CAST('{other}' AS {kind}) ELSE {column} END AS {column}) FROM '{released}') TO "
                                 f"'{changed}' (FORMAT PARQUET)")
        refused = invoke("check", changed, "--against", report)
        assert refused.exit_code == 4 and says in refused.output, refused.output
