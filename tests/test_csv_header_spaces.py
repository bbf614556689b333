"""Spaces around a CSV header's names are no part of them, on the direct path and in a warehouse's
CSV histogram alike (` age ` is the column `age`, as DuckDB's own reader takes a header): the
histogram's header was read as written, so a spec naming `age` ran on a CSV table headed ` age `
and was refused on a histogram headed so. The oracles: a plain GROUP BY over the written release
(rows counted by hand), and the release query a Parquet export of the same histogram gives."""

from __future__ import annotations

from pathlib import Path

from own_connection import rows
from warehouse_steps import histogram_in_warehouse, invoke, warehouse_spec, warehouse_with

BODY = '[privacy]\nk = 2\n[quasi_identifiers]\nage = { bands = [10, 20] }\n[sensitive.disease]\ndistinct_l = 2\n'


def test_the_direct_path_reads_a_header_name_without_the_spaces_around_it(tmp_path):
    """A CSV table headed ` age , disease ` and a spec naming `age`: released under the name `age`,
    banded. By hand: 22, 27 → 20-29; 31, 38 → 30-39, each band holding flu and cold."""
    (tmp_path / "p.csv").write_text(" age , disease \n22,flu\n27,cold\n31,flu\n38,cold\n", encoding="utf-8")
    (tmp_path / "spec.toml").write_text(f'[source]\npath = "p.csv"\n[output]\npath = "r.parquet"\n{BODY}',
                                        encoding="utf-8")
    result = invoke("anonymize", tmp_path / "spec.toml", "--no-progress", "--node", "age=1")
    assert result.exit_code == 0, result.output
    released = tmp_path / "r.parquet"
    assert rows(f"SELECT age, count(*), count(DISTINCT disease) FROM '{released}' GROUP BY age ORDER BY age") == \
        [("20-29", 2, 2), ("30-39", 2, 2)]


def _warehouse(tmp_path: Path, ages: list[str], body: str) -> tuple[Path, Path]:
    """A DuckDB warehouse table t of 120 rows, integer columns named ``ages`` and a disease; its spec."""
    columns = ", ".join(f'"{a}" INTEGER' for a in ages)
    values = ", ".join("20 + (i % 30)" for _ in ages)
    db = warehouse_with(tmp_path, f"CREATE TABLE t({columns}, disease VARCHAR)",
                        f"INSERT INTO t SELECT {values}, CASE WHEN i % 2 = 0 THEN 'flu' ELSE 'cold' END "
                        "FROM range(120) r(i)")
    return db, warehouse_spec(tmp_path, "t", [*ages, "disease"], body)


def test_a_csv_histogram_reads_a_header_name_without_the_spaces_around_it(tmp_path):
    """The same for a CSV histogram whose header holds ` age ` (each name padded, as a hand-edited or
    padding export writes it) with a spec naming `age`: it was refused, 'has no column 'age''; now it
    gives the release query of the Parquet export (minus its salted first line)."""
    db, spec = _warehouse(tmp_path, ["age"], BODY)
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    histogram_in_warehouse(db, spec, tmp_path / "h.csv")
    header, rest = (tmp_path / "h.csv").read_text(encoding="utf-8").split("\n", 1)
    (tmp_path / "h.csv").write_text(",".join(f" {name} " for name in header.split(",")) + "\n" + rest,
                                    encoding="utf-8")
    assert (tmp_path / "h.csv").read_text(encoding="utf-8").startswith(" age , disease , __sqlclose_count ,")
    queries = []
    for name in ("h.parquet", "h.csv"):
        made = invoke("anonymize", "--histogram", tmp_path / name, spec, "--overwrite")
        assert made.exit_code == 0, made.output
        queries.append((tmp_path / "release.sql").read_text(encoding="utf-8").split("\n", 1)[1])
    assert queries[0] == queries[1]


def test_a_csv_histogram_cannot_tell_apart_names_alike_without_their_spaces(tmp_path):
    """Two warehouse columns `age` and ` age` counted: in a CSV header, read without the spaces around
    names, they are one name (the CSV export was read as written, the two apart). Refused, exit 2,
    saying to export Parquet; the Parquet export keeps them apart and releases."""
    body = ('[privacy]\nk = 2\n[quasi_identifiers]\nage = { bands = [10, 20] }\n" age" = { bands = [10, 20] }\n'
            '[sensitive.disease]\ndistinct_l = 2\n')
    db, spec = _warehouse(tmp_path, ["age", " age"], body)
    histogram_in_warehouse(db, spec, tmp_path / "h.csv")
    refused = invoke("anonymize", "--histogram", tmp_path / "h.csv", spec)
    assert refused.exit_code == 2, refused.output
    assert refused.output == (f"sqlclose: error: the histogram {tmp_path / 'h.csv'} is CSV, whose header's names are "
                              "read without the spaces around them, and the spec counts the columns 'age' and ' age', "
                              "which are one name so: export the histogram as Parquet, which keeps names as they "
                              "are\n")
    histogram_in_warehouse(db, spec, tmp_path / "h.parquet")
    made = invoke("anonymize", "--histogram", tmp_path / "h.parquet", spec)
    assert made.exit_code == 0, made.output
