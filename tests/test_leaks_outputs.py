"""A release gives away nothing beyond its guarantee, whatever its output format (issue 7, the
forty-fourth round's red team): two inputs that differ only in a row the release suppresses write
the same CSV, the same DuckDB table and the same reports. Oracles are plain: the written file's
bytes, the table's rows and DESCRIBE read back with DuckDB, the report's JSON."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv

import sqlclose

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"
# What varies from run to run whatever the input: the clock, and where the run wrote and read.
_RUN_FIELDS = {"created_at", "timings", "path", "source", "seconds"}


def _table3() -> pa.Table:
    return pacsv.read_csv(TABLE3 / "table3.csv", convert_options=pacsv.ConvertOptions(
        column_types={"zip": pa.string(), "age": pa.int64()}))


def _spec(source: Path) -> dict:
    spec = sqlclose.load_spec(TABLE3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec.update(source={"path": str(source), "table": "people"}, privacy={"k": 3, "suppression": 0.2}, others="keep")
    spec["sensitive"]["salary"]["t"] = spec["sensitive"]["disease"]["t"] = 0.9
    return spec


def _published(doc: dict) -> dict:
    """The report less what every run changes (and the max EMD against the input's distribution,
    suppressed rows included: published by design, docs/what-a-release-reveals.md)."""
    if isinstance(doc, dict):
        return {k: _published(v) for k, v in doc.items()
                if k not in _RUN_FIELDS and not k.endswith("_seconds") and k != "max_emd"}
    return [_published(v) for v in doc] if isinstance(doc, list) else doc


def _differences(a: object, b: object, where: str = "") -> list[str]:
    """Where two reports differ, as paths (``output.column_types.colour``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [where]


def _enum_database(path: Path, colour: str) -> Path:
    """Table 3 in a DuckDB database, with a tenth row in a ZIP of its own (suppressed) and a
    ``colour`` kept as it is, whose ENUM type is made from the column's values (a common idiom:
    ``CREATE TYPE … AS ENUM (SELECT DISTINCT …)``); only the tenth row's colour differs."""
    con = duckdb.connect(str(path))
    con.register("t3", _table3())
    con.execute(f"CREATE TABLE raw AS SELECT *, 'red' AS colour FROM t3 UNION ALL "
                f"SELECT '12345', 36, 3000, 'flu', '{colour}'")
    con.execute("CREATE TYPE colours AS ENUM (SELECT DISTINCT colour FROM raw ORDER BY colour)")
    con.execute("CREATE TABLE people AS SELECT zip, age, salary, disease, colour::colours AS colour FROM raw")
    con.close()
    return path


def test_a_source_enum_type_does_not_carry_a_suppressed_rows_value_into_a_csv_or_table(tmp_path):
    """A DuckDB table's ENUM column kept as it is: the CSV output's report gave its type,
    ``ENUM('red', 'secret')``, in ``output.column_types``, and the DuckDB table output was made with
    that type (DESCRIBE lists the members): the value only the suppressed row holds (``secret``
    against ``blue``) was published. The Parquet output wrote text. Now every format writes such a
    column as text, whose values are the rows'."""
    published = []
    for i, colour in enumerate(("secret", "blue")):
        source = tmp_path / "in.duckdb"  # one path: the spec's hash names it
        source.unlink(missing_ok=True)
        spec = _spec(_enum_database(source, colour))
        outputs = []
        for name, kwargs in ((f"r{i}.csv", {}), (f"r{i}.duckdb", {"table": "release"})):
            with sqlclose.anonymize(None, spec) as searched, searched.at({"zip": 1, "age": 2}) as release:
                doc = release.write(tmp_path / name, **kwargs)
            assert doc["suppressed_rows"] == 1
            outputs.append(_published(doc))
        csv = (tmp_path / f"r{i}.csv").read_bytes()
        con = duckdb.connect(str(tmp_path / f"r{i}.duckdb"), read_only=True)
        table = (con.execute("DESCRIBE release").fetchall(), con.execute("FROM release").fetchall())
        con.close()
        published.append((outputs, hashlib.sha256(csv).hexdigest(), table))
    assert published[0][1] == published[1][1], "the test needs two inputs with the same CSV release"
    assert published[0][2][1] == published[1][2][1], "the test needs two inputs with the same table rows"
    assert _differences(published[0][0], published[1][0]) == []
    assert published[0][2][0] == published[1][2][0], "the tables' schemas differ"
    assert ("colour", "VARCHAR") in [row[:2] for row in published[0][2][0]]


def test_a_hive_partitioned_folders_files_hold_the_release_in_its_order(tmp_path):
    """DuckDB's partitioned COPY (``partition_by``) appended the sorted release to each partition's
    file from several threads: past a few row groups a file held two sorted runs, cut where the
    threads met (445,000 rows cut at 198,700, 245,760 or not at all, run after run), so the folder's
    bytes and the report's digest changed with the scheduling and the input's order, where the
    release is documented as sorted and the same byte for byte. Now the partitioned write runs on
    one thread. The oracle: each part file's rows as DuckDB reads them against the same rows sorted
    in Python, and the folders' files byte for byte for the input and the input reversed."""
    from sqlclose.engine import DuckDBEngine

    n = 450_000
    con = duckdb.connect()
    rows = con.sql(f"SELECT (i % 40)::BIGINT AS age, lpad(((i * 7919) % 1000)::VARCHAR, 5, '4') AS zip, "
                   f"['a', 'b', 'c'][1 + (i * 31) % 3] AS dis, 'n' || (i % 997) AS note "
                   f"FROM range({n}) t(i)").to_arrow_table()
    spec = {"others": "keep", "privacy": {"k": 2}, "sensitive": {"dis": {"distinct_l": 2}},
            "quasi_identifiers": {"age": {"bands": [20]}, "zip": {"mask": True, "length": 5}}}
    folders = []
    for i, order in enumerate((range(n), range(n - 1, -1, -1))):
        engine = DuckDBEngine(threads=4)
        with sqlclose.anonymize(rows.take(list(order)), spec, engine=engine) as searched, \
                searched.at({"age": 1, "zip": 2}) as release:
            release.write_parquet_folder(tmp_path / f"r{i}", partition_by=["age"])
        assert engine.con.execute("SELECT current_setting('threads')").fetchall() == [(4,)]  # put back
        engine.close()
        parts = sorted((tmp_path / f"r{i}").rglob("*.parquet"))
        for part in parts:
            written = con.sql(f"SELECT zip, dis, note FROM read_parquet('{part}')").fetchall()
            assert written == sorted(written), f"{part.relative_to(tmp_path)} is not in the release's order"
        folders.append({str(p.relative_to(tmp_path / f"r{i}")): p.read_bytes() for p in parts})
    assert sum(con.sql(f"SELECT COUNT(*) FROM read_parquet('{tmp_path / 'r0'}/**/*.parquet')").fetchall()[0]) == n
    assert folders[0] == folders[1], "the partition files' bytes follow the scheduling or the input's order"
