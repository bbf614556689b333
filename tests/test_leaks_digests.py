"""No published digest lets anyone test guesses of a hidden row (issue 7, the forty-fourth round's
red team). A quasi-identifier's hierarchy must list every value its column holds, suppressed rows'
included, and is commonly built from the data's distinct values (ARX's "hierarchy from data";
this repository's own ``datasets/table3/age.csv`` is exactly Table 3's nine ages). The report gives
the plain sha256 of each hierarchy file (``hierarchies.<column>.sha256``) and of the spec with its
hierarchies' contents (``spec_sha256``): knowing all rows but one and how the file is built, anyone
can rebuild it for each guess of the last row and find the true one by its digest. The oracle is
the attacker's: plain hashlib over the rebuilt file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import sqlclose
from sqlclose.release import files

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"


def _table3() -> pa.Table:
    return pacsv.read_csv(TABLE3 / "table3.csv", convert_options=pacsv.ConvertOptions(
        column_types={"zip": pa.string(), "age": pa.int64()}))


def _age_hierarchy(ages: list[int]) -> str:
    """The age hierarchy as Table 3's is made: one line per distinct age, its decade, <40 or >=40, *."""
    return "".join(f"{a};{a // 10}*;{'<40' if a < 40 else '>=40'};*\n" for a in sorted(set(ages)))


def _release(tmp_path: Path, rows: pa.Table, name: str) -> dict:
    """The operator's run: the age hierarchy built from the rows' ages (one path for every run, so
    that the reports differ only by what the files hold), the release at the optimum."""
    hierarchy = tmp_path / "age.csv"
    hierarchy.write_text(_age_hierarchy(rows.column("age").to_pylist()), encoding="utf-8")
    spec = sqlclose.load_spec(TABLE3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec["quasi_identifiers"]["age"] = {"file": str(hierarchy)}
    with sqlclose.anonymize(rows, spec) as release:
        return release.write_parquet(tmp_path / f"{name}.parquet")


def _with_ninth_age(age: int) -> pa.Table:
    rows = _table3()
    return rows.set_column(1, "age", pa.array(rows.column("age").to_pylist()[:8] + [age], pa.int64()))


@pytest.mark.parametrize("key", [None, "the operator's secret"])
def test_a_hierarchy_built_from_the_data_cannot_be_tested_against_the_reports_digests(tmp_path, monkeypatch, key):
    """Without the operator's key the report gives no digest of the spec or its hierarchies; with
    it, HMACs no guess can be tested against (the plain sha256 of the right file found age 32)."""
    if key is None:
        monkeypatch.delenv("SQLCLOSE_FINGERPRINT_KEY", raising=False)
    else:
        monkeypatch.setenv("SQLCLOSE_FINGERPRINT_KEY", key)
    assert _age_hierarchy(_table3().column("age").to_pylist()) == (TABLE3 / "age.csv").read_text(encoding="utf-8")
    # The 9th person aged 32 or 33: the same release byte for byte ("<40" either way).
    docs = [_release(tmp_path, _with_ninth_age(age), f"r{age}") for age in (32, 33)]
    assert files.sha256(tmp_path / "r32.parquet") == files.sha256(tmp_path / "r33.parquet")
    published = docs[0]
    # The attacker knows the first eight rows and how the hierarchy is made, and tries every age.
    known = _table3().column("age").to_pylist()[:8]
    guesses = {age: hashlib.sha256(_age_hierarchy([*known, age]).encode()).hexdigest() for age in range(0, 121)}
    assert hashlib.sha256((tmp_path / "age.csv").read_bytes()).hexdigest() == guesses[33]  # the attack works
    digests = {published["hierarchies"]["age"]["sha256"], published["spec_sha256"]}
    found = [age for age, digest in guesses.items() if digest in digests]
    assert found == [], f"the report's digests tell the 9th person's age: {found}"
    if key is None:
        assert digests == {None}
        assert docs[0]["spec_sha256"] == docs[1]["spec_sha256"], "the spec's digest tells the 9th person's age apart"
    else:  # the operator recomputes them
        assert published["hierarchies"]["age"]["sha256"] == files.keyed(key, guesses[32])
