"""A DECIMAL value of more digits than its column's precision (-2^127 in a DECIMAL(38, 0): what DuckDB's
own ``.to_arrow_table()`` makes of a UHUGEINT 2^127) is refused before the search, by column and source,
from every kind of source, whatever the column's role: from an Arrow table it stopped inside DuckDB
("Negation of HUGEINT is out of range", exit 1, a dropped column too); from a Parquet file the search ran
and the re-check failed on an invalidated database (exit 4); 2^127 - 1 was released from a Parquet file,
and the written file failed pyarrow's validation. The oracle: the rows the test put past the precision,
counted in the test, and values within it released unchanged."""

from __future__ import annotations

import decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlclose

INT128_MIN, INT128_MAX = -(2 ** 127), 2 ** 127 - 1
ROWS = 60
SPEC = {"privacy": {"k": 3}, "quasi_identifiers": {"g": {"tree": {"A": ["g0", "g1"], "B": ["g2", "g3"]}}},
        "sensitive": {"s": {"distinct_l": 2}}}


def _decimals(values: list[int], precision: int = 38, scale: int = 0) -> pa.Array:
    """A decimal128 array holding ``values`` as stored (unscaled), unchecked, as Arrow lets a writer."""
    data = b"".join(v.to_bytes(16, "little", signed=True) for v in values)
    return pa.Array.from_buffers(pa.decimal128(precision, scale), len(values), [None, pa.py_buffer(data)])


def _table(stored: int, every: int = 2, precision: int = 38, scale: int = 0) -> tuple[pa.Table, int]:
    """g, s and x, x holding ``stored`` in every ``every``-th row and 1 elsewhere; and how many rows hold it."""
    values = [stored if i % every == 0 else 1 for i in range(ROWS)]
    return pa.table({"g": [f"g{i % 4}" for i in range(ROWS)], "s": [["x", "y", "z"][i % 3] for i in range(ROWS)],
                     "x": _decimals(values, precision, scale)}), values.count(stored)


def _refused(source, spec: dict) -> sqlclose.SqlcloseError:
    with pytest.raises(sqlclose.SqlcloseError) as caught:
        with sqlclose.anonymize(source, spec) as release:
            release.to_arrow()
    return caught.value


@pytest.mark.parametrize("role", [{"others": "keep"}, {"identifiers": ["x"]}, {"others": "drop"}])
def test_the_arrow_export_of_a_uhugeint_is_refused_by_column_whatever_its_role(role):
    con = duckdb.connect()
    table = con.sql(f"SELECT 'g' || (i % 4) AS g, ['x', 'y', 'z'][i % 3 + 1] AS s, CASE WHEN i % 2 = 0 THEN "
                    f"{2 ** 127}::UHUGEINT ELSE 1::UHUGEINT END AS x FROM range({ROWS}) r(i)").to_arrow_table()
    assert table.schema.field("x").type == pa.decimal128(38, 0)  # DuckDB's own export: -2^127 stored
    error = _refused(table, {**SPEC, **role})
    assert error.exit_code == 2, error
    said = str(error)
    assert "cannot read arrow table: column 'x' is a DECIMAL(38, 0)" in said
    assert f"{ROWS // 2} rows of it hold values of more than 38 digits" in said
    assert "CAST(\"x\" AS VARCHAR)" in said
    assert str(2 ** 127)[:12] not in said


@pytest.mark.parametrize("stored", [INT128_MIN, INT128_MAX])
def test_a_parquet_file_of_39_digits_is_refused_before_the_search(tmp_path, stored):
    table, held = _table(stored, every=3)
    pq.write_table(table, tmp_path / "in.parquet")
    error = _refused(str(tmp_path / "in.parquet"), {**SPEC, "others": "keep"})
    assert error.exit_code == 2, error
    said = str(error)
    assert f"cannot read {tmp_path / 'in.parquet'}: column 'x' is a DECIMAL(38, 0) and {held} rows" in said
    assert str(abs(stored))[:12] not in said


def test_a_duckdb_table_holding_them_is_refused(tmp_path):
    con = duckdb.connect()
    made, held = _table(INT128_MIN, every=4)
    con.execute("CREATE TABLE t AS SELECT * FROM made")
    error = _refused((con, "t"), {**SPEC, "identifiers": ["x"]})
    assert error.exit_code == 2 and f"cannot read duckdb table t: column 'x' is a DECIMAL(38, 0) and {held} rows" in \
        str(error), error


@pytest.mark.parametrize(("precision", "scale"), [(38, 0), (10, 2), (18, 4)])
def test_one_past_a_decimals_precision_is_refused_and_its_widest_values_released(tmp_path, precision, scale):
    """10^precision stored (one digit too many: Parquet stores it unchecked, DuckDB read it) is refused;
    ±(10^precision - 1), the widest values the type holds, are released unchanged, the file valid."""
    table, held = _table(10 ** precision, every=5, precision=precision, scale=scale)
    pq.write_table(table, tmp_path / "in.parquet")
    error = _refused(str(tmp_path / "in.parquet"), {**SPEC, "others": "keep"})
    assert error.exit_code == 2 and f"column 'x' is a DECIMAL({precision}, {scale}) and {held} rows of it hold " \
        f"values of more than {precision} digits" in str(error), error
    widest = 10 ** precision - 1
    values = [widest if i % 3 == 0 else -widest if i % 3 == 1 else 7 for i in range(ROWS)]
    pq.write_table(table.set_column(2, "x", _decimals(values, precision, scale)), tmp_path / "fits.parquet")
    with sqlclose.anonymize(str(tmp_path / "fits.parquet"), {**SPEC, "others": "keep"}) as release:
        release.write(str(tmp_path / "out.parquet"))
    written = pq.read_table(tmp_path / "out.parquet")
    written.validate(full=True)
    assert written.schema.field("x").type == pa.decimal128(precision, scale)
    exact = decimal.Context(prec=60)  # the stored whole number, all 38 digits
    assert sorted(int(v.as_py().scaleb(scale, exact)) for v in written.column("x")) == sorted(values)


def test_an_engine_fault_in_the_recheck_is_the_engines_failure_not_the_files(tmp_path, monkeypatch):
    """An error inside DuckDB while the written release is re-checked (its database invalidated) was
    told as a release that failed its re-check (exit 4): it is the engine's failure (exit 1)."""
    import sqlclose.release.verify as verify

    def fault(engine, *args, **kwargs):
        raise engine.wrapped_error(duckdb.InternalException("INTERNAL Error: forced"), "SELECT 1")

    monkeypatch.setattr(verify, "measure_file", fault)
    table, _ = _table(1)
    with pytest.raises(sqlclose.SqlcloseError) as caught:
        with sqlclose.anonymize(table, {**SPEC, "others": "keep"}) as release:
            release.write(str(tmp_path / "out.parquet"))
    error = caught.value
    assert error.exit_code == 1, error
    assert "could not be re-checked, the engine failed: InternalException: INTERNAL Error: forced" in str(error)
    assert not (tmp_path / "out.parquet").exists()
