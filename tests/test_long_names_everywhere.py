"""Every message that quotes a name a user gave (a column's, a table's, a file's) quotes it through
``text.name_shown``: a 100,000-character name given in a spec, a DataFrame or a file header was
printed whole by some 120 messages past the few the ninety-ninth round fixed, 100 kB of one error
line (the hundredth round). Oracle: the message's length, and the name's first 60 characters and
its length as written here; a short name's message is the one main gave, byte for byte."""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import sqlclose
from sqlclose.errors import SqlcloseError

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
ROWS = list(csv.DictReader((TABLE3 / "table3.csv").open()))
LONG = "abcdefghij" * 10_000  # 100,000 characters


def spec_dict(qi: str = "zip", **overrides) -> dict:
    spec = {"quasi_identifiers": {qi: {"mask": True}, "age": {"file": str(TABLE3 / "age.csv")}},
            "sensitive": {"disease": {"distance": "equal", "t": 0.9}}, "k": 3, "others": "drop"}
    spec.update(overrides)
    return spec


def rows_with(name: str) -> pa.Table:
    """Table 3 with its zip column named ``name``."""
    return pa.Table.from_pylist([{(name if k == "zip" else k): v for k, v in r.items()} for r in ROWS])


def refused(call) -> str:
    with pytest.raises(SqlcloseError) as e:
        call()
    return str(e.value)


def spec_twice(name, tmp):  # model/spec: a column given two roles
    spec = spec_dict(name, sensitive={name: {"distance": "equal", "t": 0.9}})
    return refused(lambda: sqlclose.anonymize(rows_with(name), spec))


def spec_no_model(name, tmp):  # model/spec: a sensitive column without a privacy model
    spec = spec_dict(sensitive={"disease": {"distance": "equal", "t": 0.9}, name: {"distance": "equal"}})
    return refused(lambda: sqlclose.anonymize(rows_with("zip"), spec))


def output_table(name, tmp):  # model/spec: an output table name with an empty part
    release = sqlclose.anonymize(rows_with("zip"), spec_dict())
    with release:
        return refused(lambda: release.write(tmp / "out.duckdb", table=f"{name[:-1]}."))


def pandas_index(name, tmp):  # prepare/pandas_frames: a quasi-identifier held as the DataFrame's index
    frame = rows_with(name).to_pandas().set_index(name)
    return refused(lambda: sqlclose.anonymize(frame, spec_dict(name)))


def pandas_zone(name, tmp):  # prepare/pandas_frames: zoned timestamps under the dates rule
    import pandas as pd

    stamps = pd.Series([pd.Timestamp("2020-02-01 00:30", tz="Europe/Paris")] * 20)
    frame = pd.DataFrame({name: stamps, "disease": ["flu", "cold", "gastritis", "pneumonia"] * 5})
    spec = {"privacy": {"k": 5}, "quasi_identifiers": {name: {"dates": True, "domain": ["1900-01-01", "2030-12-31"]}},
            "sensitive": {"disease": {"distance": "equal", "t": 0.9}}}
    return refused(lambda: sqlclose.anonymize(frame, spec))


def nested(name, tmp):  # prepare/nested_columns: a struct column as a quasi-identifier
    table = rows_with(name)
    table = table.set_column(table.schema.get_field_index(name), name,
                             pa.array([{"code": v} for v in table[name].to_pylist()]))
    return refused(lambda: sqlclose.anonymize(table, spec_dict(name)))


def check_roles(name, tmp):  # audit/check: a column both quasi-identifier and sensitive
    return refused(lambda: sqlclose.check(rows_with(name), [name], [name]))


def output_path(name, tmp):  # release/writers: an output path naming no file
    release = sqlclose.anonymize(rows_with("zip"), spec_dict())
    with release:
        return refused(lambda: release.write(f"{name[:-3]}/.."))


def partition(name, tmp):  # release/folder: a partition column the release does not hold
    release = sqlclose.anonymize(rows_with("zip"), spec_dict())
    with release:
        return refused(lambda: release.write_parquet_folder(tmp / "out", partition_by=[name]))


def relation_type(name, tmp):  # engine/duckdb: a relation column of a type Arrow changes
    con = duckdb.connect()
    rows = rows_with("zip")  # noqa: F841 - read by the query below
    quoted = '"' + name.replace('"', '""') + '"'
    relation = con.sql(f"SELECT *, TIMETZ '10:00:00+05' AS {quoted} FROM rows")
    return refused(lambda: sqlclose.anonymize(relation, spec_dict()))


def node_name(name, tmp):  # model/lattice: a node naming no quasi-identifier
    return refused(lambda: sqlclose.anonymize(rows_with("zip"), spec_dict(), node={"zip": 0, "age": 0, name: 1}))


def nulls(name, tmp):  # prepare/problem: NULLs in a quasi-identifier, nulls = "error"
    table = rows_with(name)
    values = table[name].to_pylist()
    table = table.set_column(table.schema.get_field_index(name), name, pa.array([None] + values[1:]))
    return refused(lambda: sqlclose.anonymize(table, spec_dict(name)))


def date_levels(name, tmp):  # model/dates: a dates level that is no level
    qis = {"when": {"dates": [name], "domain": ["1900-01-01", "2030-12-31"]}, "age": {"file": str(TABLE3 / "age.csv")}}
    table = rows_with("zip").append_column("when", pa.array([dt.date(2020, 1, 1)] * len(ROWS)))
    return refused(lambda: sqlclose.anonymize(table, spec_dict(quasi_identifiers=qis)))


PATHS = [spec_twice, spec_no_model, output_table, pandas_index, pandas_zone, nested, check_roles, output_path,
         partition, relation_type, node_name, nulls, date_levels]


@pytest.mark.parametrize("path", PATHS, ids=[p.__name__ for p in PATHS])
def test_a_long_name_is_quoted_cut_in_every_message(path, tmp_path):
    said = path(LONG, tmp_path)
    assert len(said) < 1_000, said[:2_000]
    assert LONG[:60] in said and "(100,000 characters)" in said, said


# Main's messages for a short name, byte for byte: name_shown quotes a name of up to 100 characters
# as repr did, and the messages' text is unchanged around it.
SHORT = {
    spec_twice: "spec: invalid spec: (top level): column 'zip' is declared both quasi-identifier and sensitive; "
                "give it one role",
    check_roles: "column 'zip' is listed both as quasi-identifier and as sensitive; give it one role",
    node_name: "node names 'zip_code', which is not a quasi-identifier (those are: zip, age)",
}


@pytest.mark.parametrize("path", list(SHORT), ids=[p.__name__ for p in SHORT])
def test_a_short_name_reads_as_before(path, tmp_path):
    said = path("zip_code" if path is node_name else "zip", tmp_path)
    assert said == SHORT[path]
