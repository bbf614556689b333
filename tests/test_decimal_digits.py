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


def _nested(shape: str, stored: list[int]) -> pa.Array:
    """A column of ``ROWS`` rows holding the DECIMAL(5, 2) values ``stored`` (one a row, or two a row in
    a list or map) inside the nested type ``shape``."""
    decimals = _decimals(stored, 5, 2)
    pairs = pa.array(range(0, len(stored) + 1, 2), pa.int32())
    if shape == "struct":
        return pa.StructArray.from_arrays([decimals], ["v"])
    if shape == "spaced field":
        return pa.StructArray.from_arrays([decimals, pa.array(range(ROWS))], ["a x", "other"])
    if shape == "list":
        return pa.ListArray.from_arrays(pairs, decimals)
    if shape == "list of structs":
        return pa.ListArray.from_arrays(pairs, pa.StructArray.from_arrays([decimals], ["amount"]))
    if shape == "list of lists":
        each_row = pa.array(range(ROWS + 1), pa.int32())
        return pa.ListArray.from_arrays(each_row, pa.ListArray.from_arrays(pairs, decimals))
    if shape == "map value":
        return pa.MapArray.from_arrays(pairs, pa.array([f"k{i % 2}" for i in range(len(stored))]), decimals)
    assert shape == "map key"
    return pa.MapArray.from_arrays(pairs, decimals, pa.array(range(len(stored))))


NESTED = {"struct": (1, "n.v"), "spaced field": (1, 'n."a x"'), "list": (2, "n[]"),
          "list of structs": (2, "n[].amount"), "list of lists": (2, "n[][]"), "map value": (2, "n{value}"),
          "map key": (2, "n{key}")}


@pytest.mark.parametrize("shape", list(NESTED))
def test_a_nested_decimal_past_its_precision_is_refused_by_its_path_and_its_widest_released(tmp_path, shape):
    """One inside a struct, a list, a map, at any depth, read from a Parquet file, was released as read
    and the written file failed pyarrow's validation (ninety-eighth round). Six digits stored in a
    DECIMAL(5, 2) (distinct values: a map's keys are) in some rows: they are counted here. ±999.99,
    the widest the type holds, are released unchanged, the file valid."""
    per_row, path = NESTED[shape]
    stored = [100_000 + i if i % 7 == 3 else 100 + i for i in range(ROWS * per_row)]
    held = len({i // per_row for i, v in enumerate(stored) if v >= 100_000})
    pq.write_table(_table(1)[0].set_column(2, "n", _nested(shape, stored)), tmp_path / "in.parquet")
    with pytest.raises(sqlclose.SqlcloseError) as caught:
        with sqlclose.anonymize(str(tmp_path / "in.parquet"), {**SPEC, "others": "keep"}) as release:
            release.write(str(tmp_path / "out.parquet"))
    error = caught.value
    assert error.exit_code == 2, error
    assert f"column 'n' holds DECIMAL(5, 2) values at {path} and {held} rows of it hold values of more than 5 " \
        "digits" in str(error), error
    assert "1000" not in str(error)
    assert not (tmp_path / "out.parquet").exists()

    widest = [99_999 - i if i % 2 else -99_999 + i for i in range(ROWS * per_row)]
    widest[:2] = [99_999, -99_999]
    fits = _table(1)[0].set_column(2, "n", _nested(shape, widest))
    pq.write_table(fits, tmp_path / "fits.parquet")
    with sqlclose.anonymize(str(tmp_path / "fits.parquet"), {**SPEC, "others": "keep"}) as release:
        release.write(str(tmp_path / "out.parquet"))
    written = pq.read_table(tmp_path / "out.parquet")
    written.validate(full=True)
    assert written.schema.field("n").type == fits.schema.field("n").type
    assert sorted(map(repr, written.column("n").to_pylist())) == sorted(map(repr, fits.column("n").to_pylist()))


def test_a_duckdb_table_holding_one_in_a_union_member_is_refused(tmp_path):
    values = [100_000 if i % 5 == 0 else 100 for i in range(ROWS)]
    pq.write_table(pa.table({"d": _decimals(values, 5, 2)}), tmp_path / "d.parquet")
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT 'g' || (i % 4) AS g, ['x', 'y', 'z'][i % 3 + 1] AS s, "
                f"union_value(d := d)::UNION(d DECIMAL(5, 2), t VARCHAR) AS u "
                f"FROM (SELECT d, row_number() OVER () - 1 AS i FROM '{tmp_path / 'd.parquet'}')")
    error = _refused((con, "t"), {**SPEC, "others": "drop"})
    assert error.exit_code == 2 and f"column 'u' holds DECIMAL(5, 2) values at u.d and {values.count(100_000)} " \
        "rows of it hold values of more than 5 digits" in str(error), error
