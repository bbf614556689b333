"""A ``(connection, table)`` source is read where it lives at every pass, so a caller's loader could
change the table between ``anonymize`` (the search) and ``write``: the release then published the
new rows (re-checked against the new table) under a report whose input fingerprint was the searched
table's. Such a write — and ``to_arrow`` — is now refused, nothing written; an unchanged table is
written as before.

Oracles: the file system (nothing at the output path), and a plain SQL count over the written file
against Table 3's 9 rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

import sqlclose

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"


@pytest.fixture
def table3(tmp_path: Path) -> dict:
    """Table 3 and its hierarchies copied to tmp_path, a spec dict over the copies, and a connection
    holding the table as ``people`` with a kept column ``note``."""
    for name in ("table3.csv", "age.csv", "disease.csv"):
        shutil.copy(TABLE3 / name, tmp_path / name)
    spec = {
        "others": "keep",
        "privacy": {"k": 3},
        "quasi_identifiers": {"zip": {"mask": True, "length": 5}, "age": {"file": str(tmp_path / "age.csv")}},
        "sensitive": {
            "salary": {"distance": "ordered", "t": 0.2},
            "disease": {"distance": "hierarchical", "t": 0.3, "hierarchy": str(tmp_path / "disease.csv")},
        },
    }
    con = duckdb.connect()
    con.execute(f"CREATE TABLE people AS SELECT *, 'n' || salary AS note FROM read_csv('{tmp_path / 'table3.csv'}')")
    return {"dir": tmp_path, "spec": spec, "con": con}


CHANGES = ["UPDATE people SET note = 'CHANGED'", "DELETE FROM people WHERE salary = 3000",
           "INSERT INTO people SELECT * FROM people LIMIT 1"]


@pytest.mark.parametrize("key", [None, "operator-secret"], ids=["no key", "keyed"])
@pytest.mark.parametrize("change", CHANGES, ids=["update", "delete", "insert"])
def test_a_release_written_after_its_table_changed_is_refused(table3, change, key) -> None:
    out = table3["dir"] / "out.parquet"
    with sqlclose.anonymize((table3["con"], "people"), table3["spec"], fingerprint_key=key) as release:
        table3["con"].execute(change)  # the nightly loader, between search and write
        with pytest.raises(sqlclose.InputError, match="duckdb table people changed after the release was searched"):
            release.write(out)
        with pytest.raises(sqlclose.InputError, match="changed after the release was searched"):
            release.to_arrow()
    assert sorted(p.name for p in table3["dir"].iterdir()) == ["age.csv", "disease.csv", "table3.csv"]


@pytest.mark.parametrize("key", [None, "operator-secret"], ids=["no key", "keyed"])
def test_a_release_of_an_unchanged_table_is_written(table3, key) -> None:
    """A NULL age dropped by ``nulls = "drop"``: the searched rows are the table's, not the kept ones."""
    table3["con"].execute("INSERT INTO people VALUES (47677, NULL, 5000, 'flu', 'n')")
    spec = {**table3["spec"]}
    spec["quasi_identifiers"] = {**spec["quasi_identifiers"],
                                 "age": {**spec["quasi_identifiers"]["age"], "nulls": "drop"}}
    out = table3["dir"] / "out.parquet"
    with sqlclose.anonymize((table3["con"], "people"), spec, fingerprint_key=key) as release:
        report = release.write(out)
    assert report["output"]["rows"] == duckdb.sql(f"SELECT count(*) FROM '{out}'").fetchall()[0][0] == 9


def test_a_dataframe_or_parquet_file_changed_after_the_search_is_refused_at_the_write(table3):
    """Review of the sixty-fourth round: a pandas DataFrame's numeric buffers are shared with the
    Arrow table DuckDB reads, and a Parquet file is read where it lies at every pass: one changed
    (or replaced) between `anonymize` and `write` was published — rows the search never judged,
    re-checked against themselves, "verified" under a report vouching for the old input. Both are
    refused now, nothing written; unchanged, both are written. The oracle: the file system, and a
    plain count of the written file."""
    import numpy as np
    import pandas as pd

    folder, spec = table3["dir"], table3["spec"]
    frame = pd.read_csv(folder / "table3.csv", dtype={"zip": str})
    frame["visits"] = np.arange(len(frame))
    frame.to_parquet(folder / "src.parquet", index=False)
    for source in (frame, folder / "src.parquet"):
        out = folder / "out.parquet"
        with sqlclose.anonymize(source, spec) as release:
            changed = frame.copy()
            changed.loc[0, "visits"] = 777
            if isinstance(source, pd.DataFrame):
                frame.loc[0, "visits"] = 777
            else:
                changed.to_parquet(folder / "new.parquet", index=False)
                (folder / "new.parquet").replace(folder / "src.parquet")
            with pytest.raises(sqlclose.InputError, match="changed after the release was searched"):
                release.write_parquet(out)
        assert not out.exists()
        with sqlclose.anonymize(source, spec) as release:  # unchanged since this search
            release.write_parquet(out)
        assert duckdb.sql(f"SELECT count(*) FROM '{out}'").fetchall() == [(9,)]
        out.unlink()
        out.with_name("out.parquet.report.json").unlink()


@pytest.mark.parametrize("change", CHANGES, ids=["update", "delete", "insert"])
def test_a_table_changed_during_the_scan_without_a_key_is_refused(table3, monkeypatch, change) -> None:
    """Ninety-seventh round: without the operator's key the run's own fingerprint of a ``(connection,
    table)`` source was taken after ``prepare`` had scanned it: a loader's change during the scan (here
    after the value pass, before the histogram) was in that fingerprint, and the release was written
    from rows the search never judged, exit 0. It is now taken before the scan reads a row."""
    import sqlclose.prepare.problem

    original, changed = sqlclose.prepare.problem._check_values, []

    def values_then_changed(*args, **kwargs):
        result = original(*args, **kwargs)
        if not changed:
            table3["con"].execute(change)
            changed.append(True)
        return result

    monkeypatch.setattr(sqlclose.prepare.problem, "_check_values", values_then_changed)
    out = table3["dir"] / "out.parquet"
    with sqlclose.anonymize((table3["con"], "people"), table3["spec"]) as release:
        assert changed
        assert release.report()["input"]["fingerprint"] is None  # no key: the report records none
        with pytest.raises(sqlclose.InputError, match="duckdb table people changed after the release was searched "
                                                      r"\(its rows' fingerprint differs\)"):
            release.write(out)
    assert sorted(p.name for p in table3["dir"].iterdir()) == ["age.csv", "disease.csv", "table3.csv"]


def _changed_after(module, name: str, con: duckdb.DuckDBPyConnection, change: str, monkeypatch) -> list:
    """``module.name`` wrapped to run ``change`` on ``con`` after its first call: a loader's change
    between two passes over the table."""
    original, changed = getattr(module, name), []

    def then_changed(*args, **kwargs):
        result = original(*args, **kwargs)
        if not changed:
            con.execute(change)
            changed.append(True)
        return result

    monkeypatch.setattr(module, name, then_changed)
    return changed


@pytest.mark.parametrize("change", CHANGES, ids=["update", "delete", "insert"])
def test_a_sweep_over_a_table_changed_between_its_passes_is_refused(table3, monkeypatch, change) -> None:
    """Ninety-seventh round: a sweep reads a ``(connection, table)`` where it lives at each of prepare's
    passes (values, then the histogram); a change between them gave figures of two tables (the value
    pass's domains, the histogram's counts), published with exit 0. It is refused now, as a file replaced
    meanwhile is; unchanged, the sweep runs (its rows: Table 3's 9, by hand)."""
    import sqlclose.prepare.problem
    from sqlclose.sweep import sweep

    result = sweep((table3["con"], "people"), table3["spec"], [2, 3])
    assert [r["status"] for r in result.rows] == ["ok", "ok"]
    changed = _changed_after(sqlclose.prepare.problem, "_check_values", table3["con"], change, monkeypatch)
    with pytest.raises(sqlclose.InputError, match=r"duckdb table people changed while the sweep read it \(its rows' "
                                                  r"fingerprint differs\): its figures would mix rows"):
        sweep((table3["con"], "people"), table3["spec"], [2, 3])
    assert changed


@pytest.mark.parametrize("change", CHANGES, ids=["update", "delete", "insert"])
def test_a_check_of_a_table_changed_between_its_passes_is_refused(table3, monkeypatch, change) -> None:
    """Ninety-seventh round: ``check`` reads a ``(connection, table)`` in several passes (the models'
    figures, then the utility shares): a change between them gave a report of two tables. It is refused
    now; unchanged, the check reports Table 3's k of 1 (its nine ZIP codes are nine, by hand)."""
    import sqlclose.audit.check

    assert sqlclose.check((table3["con"], "people"), ["zip", "age"], ["disease"]).data["k"]["reached"] == 1
    changed = _changed_after(sqlclose.audit.check, "_audit", table3["con"], change, monkeypatch)
    with pytest.raises(sqlclose.InputError, match=r"duckdb table people changed while it was checked \(its rows' "
                                                  r"fingerprint differs\): the figures would mix rows"):
        sqlclose.check((table3["con"], "people"), ["zip", "age"], ["disease"])
    assert changed


def test_a_sweep_over_a_frame_whose_float_changed_sign_between_its_passes_is_refused(table3, monkeypatch) -> None:
    """Ninety-eighth round: a sweep's and a check's live source is digested typed, not cast to text
    (``rows_digest``), and -0.0 and 0.0 hash alike: the digest hashes a float's sign beside it. A
    pandas DataFrame's float buffer is shared with the Arrow table DuckDB reads; one row's 0.0 made
    -0.0 in place between prepare's passes is refused. Unchanged, the sweep runs."""
    import pandas as pd

    import sqlclose.prepare.problem
    from sqlclose.sweep import sweep

    frame = pd.read_csv(table3["dir"] / "table3.csv", dtype={"zip": str})
    frame["weight"] = [0.0] * len(frame)
    assert [r["status"] for r in sweep(frame, table3["spec"], [2, 3]).rows] == ["ok", "ok"]
    original, changed = sqlclose.prepare.problem._check_values, []

    def values_then_changed(*args, **kwargs):
        result = original(*args, **kwargs)
        if not changed:
            frame.loc[0, "weight"] = -0.0  # in place: the buffer DuckDB reads
            changed.append(True)
        return result

    monkeypatch.setattr(sqlclose.prepare.problem, "_check_values", values_then_changed)
    with pytest.raises(sqlclose.InputError, match=r"pandas DataFrame changed while the sweep read it"):
        sweep(frame, table3["spec"], [2, 3])
    assert changed and str(frame["weight"][0]) == "-0.0"


@pytest.mark.parametrize("column, before, after", [("weight", "0.0::DOUBLE", "'-0.0'::DOUBLE"),
                                                    ("seen", "['0.0'::DOUBLE]", "['-0.0'::DOUBLE]"),
                                                    ("note", "'flu'", "'FLU'")],
                         ids=["float sign", "nested float sign", "case under NOCASE"])
def test_a_check_of_a_table_whose_value_changed_only_as_written_is_refused(table3, monkeypatch, column, before,
                                                                           after) -> None:
    """Ninety-eighth round: the digest hashes values typed where equal values are written alike; where
    they are not (a float's sign, nested or not) or a collation ties them (NOCASE: 'flu' and 'FLU'),
    a row replaced by one differing only there is still a change, refused (the figures' oracle:
    Table 3's nine ZIP codes are nine, k of 1, when unchanged)."""
    import sqlclose.audit.check

    con = table3["con"]
    con.execute("CREATE TABLE typed AS SELECT zip, age, disease, 0.0::DOUBLE AS weight, ['0.0'::DOUBLE] AS seen, "
                "note::VARCHAR COLLATE NOCASE AS note FROM people")
    con.execute(f"UPDATE typed SET {column} = {before} WHERE zip = (SELECT min(zip) FROM typed)")
    assert sqlclose.check((con, "typed"), ["zip", "age"], ["disease"]).data["k"]["reached"] == 1
    change = (f"CREATE OR REPLACE TABLE typed AS SELECT * REPLACE (CASE WHEN zip = (SELECT min(zip) FROM typed) "
              f"THEN {after} ELSE {column} END AS {column}) FROM typed")
    changed = _changed_after(sqlclose.audit.check, "_audit", con, change, monkeypatch)
    with pytest.raises(sqlclose.InputError, match=r"duckdb table typed changed while it was checked"):
        sqlclose.check((con, "typed"), ["zip", "age"], ["disease"])
    assert changed
