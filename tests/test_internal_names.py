"""A column named like a name of sqlclose's own queries is measured as any other (docs/spec.md).

Review rv26: rv25 fixed this for ``__sqlclose_rows`` alone. A quasi-identifier named
``__sqlclose_n`` or ``__sqlclose_v`` (the re-check's per-class value and count columns, beside the
quasi-identifiers in verify_counts.sql) failed the re-check of a valid release, exit 4; any
released column named ``__sqlclose_h0`` (a generalized label's hash, beside the file's columns in
the truth test) did too; and a column named ``__sqlclose_row`` (the fingerprint's alias for the
whole row) was hashed in the row's place, so the keyed fingerprint held that column alone.

Every ``__sqlclose_`` name found in sqlclose/ that can sit beside a user's columns is tried as a
quasi-identifier, as an ordered sensitive column and as a kept column. Oracles: a plain GROUP BY
over the written file (each class at least k = 3 rows, the paper's Table 3 release of three
classes), `check --spec` on it, and, for the fingerprint, two inputs that differ in one value."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from click.testing import CliRunner

from sqlclose.cli import main
from sqlclose.engine import DuckDBEngine
from sqlclose.prepare.problem import keyed_fingerprint
from sqlclose.prepare.sources import open_source

ROWS = """47677,29,3000,gastric ulcer,a
47602,22,4000,gastritis,b
47678,27,5000,stomach cancer,c
47905,43,6000,gastritis,d
47909,52,11000,flu,e
47906,47,8000,bronchitis,f
47605,30,7000,bronchitis,g
47673,36,9000,pneumonia,h
47607,32,10000,stomach cancer,i
"""
AGE = "\n".join(f"{a};{a // 10}*;{'<40' if a < 40 else '>=40'};*" for a in (29, 22, 27, 43, 52, 47, 30, 36, 32)) + "\n"
# grep '__sqlclose_' sqlclose/: the names of columns, aliases and subqueries the queries give
NAMES = ["__sqlclose_cls", "__sqlclose_v", "__sqlclose_n", "__sqlclose_q0", "__sqlclose_q1", "__sqlclose_k0",
         "__sqlclose_k1", "__sqlclose_h0", "__sqlclose_h1", "__sqlclose_rel", "__sqlclose_gen", "__sqlclose_in",
         "__sqlclose_src", "__sqlclose_grouped", "__sqlclose_counted", "__sqlclose_row", "__sqlclose_rows",
         "__sqlclose_values", "__sqlclose_count", "__sqlclose_lookup_q0", "__SQLCLOSE_N"]
FAILED_BEFORE = {"__sqlclose_v", "__sqlclose_n", "__sqlclose_h0", "__sqlclose_h1", "__SQLCLOSE_N"}


def _spec(names: dict[str, str]) -> str:
    return f"""
others = "keep"
[source]
path = "t.csv"
[output]
path = "out.parquet"
[privacy]
k = 3
[quasi_identifiers]
"{names['zip']}" = {{ mask = true, length = 5 }}
age = {{ file = "age.csv" }}
[sensitive."{names['salary']}"]
distance = "ordered"
t = 0.5
[sensitive.disease]
distinct_l = 2
"""


def _params():
    return [pytest.param(name, role, marks=() if name in FAILED_BEFORE or role == "zip" else pytest.mark.slow)
            for name in NAMES for role in ("zip", "salary", "note")]


@pytest.mark.parametrize("name, role", _params())
def test_a_column_named_like_an_internal_one_is_released_and_verified(tmp_path, name, role):
    names = {"zip": "zip", "salary": "salary", "note": "note", role: name}
    header = ",".join([names["zip"], "age", names["salary"], "disease", names["note"]])
    (tmp_path / "t.csv").write_text(header + "\n" + ROWS)
    (tmp_path / "age.csv").write_text(AGE)
    (tmp_path / "s.toml").write_text(_spec(names))
    r = CliRunner().invoke(main, ["anonymize", "-q", str(tmp_path / "s.toml")])
    assert r.exit_code == 0, r.output
    out = tmp_path / "out.parquet"
    sizes = duckdb.connect().execute(f'SELECT count(*) FROM \'{out}\' GROUP BY "{names["zip"]}", age').fetchall()
    assert sorted(s for (s,) in sizes) == [3, 3, 3]  # Table 3's release (the paper's Table 5)
    checked = CliRunner().invoke(main, ["check", str(out), "--spec", str(tmp_path / "s.toml")])
    assert checked.exit_code == 0, checked.output


def test_a_column_named_like_the_fingerprints_row_alias_leaves_every_column_in_the_fingerprint():
    """Was: fingerprint.sql hashes the row through the alias __sqlclose_row, and a column of that
    name was read instead: two inputs differing only in another column had one fingerprint, so a
    changed input could be told "already up to date". Oracle: the inputs differ, so must their
    fingerprints; and a column not so named gives the fingerprint it gave before (the alias renamed,
    not the hash)."""
    prints = []
    for other in ([1, 2], [1, 3]):
        for first in ("__sqlclose_row", "plain"):
            opened = open_source(pa.table({first: [0, 0], "other": other}), DuckDBEngine())
            try:
                prints.append(keyed_fingerprint(opened.engine, opened.relation, "operator secret"))
            finally:
                opened.engine.close()
    assert prints[0] != prints[2]  # __sqlclose_row, other column changed
    assert prints[1] != prints[3]
