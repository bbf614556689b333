"""The re-check's per-class counts (``verify_sql._class_counts``): a plain Python tally of the
written rows is the oracle. Where the grouped file's rows are already one per (class, sensitive
value) — grouped by exactly the QIs and one text column read as it is — they are read without a
second GROUP BY (verify_counts_flat.sql); elsewhere they are grouped again. Either way each cell
must hold the rows the file has for it, and each class one number of its own."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from sqlglot import exp

from sqlclose.engine import DuckDBEngine
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.spec import Sensitive
from sqlclose.release import verify_sql
from sqlclose.release.verify_sql import WrittenQI, WrittenSensitive, measure_file

QI_A = Hierarchy.from_rows([(f"a{i}", "*") for i in range(4)])
QI_B = Hierarchy.from_rows([(f"b{i}", "*") for i in range(3)])


def written_rows(seed: int, sa_type: pa.DataType, nulls: bool) -> pa.Table:
    rng = np.random.default_rng([seed, 78])
    n = int(rng.integers(20, 120))
    a = [f"a{i}" for i in rng.integers(0, 4, n)]
    b = [f"b{i}" for i in rng.integers(0, 3, n)]
    raw = rng.integers(0, 5, n)
    s = [int(v) if pa.types.is_integer(sa_type) else f"v{v}" for v in raw]
    if nulls:
        s = [None if rng.random() < 0.2 else v for v in s]
    return pa.table({"a": a, "b": b, "s": s, "s2": [f"w{v % 2}" for v in raw]},
                    schema=pa.schema([("a", pa.string()), ("b", pa.string()), ("s", sa_type), ("s2", pa.string())]))


def measured_counts(table: pa.Table, sensitive: list[WrittenSensitive], monkeypatch) -> tuple[list[dict], list[str]]:
    """The counts tables the re-check kept (one per sensitive column), and the templates it built them from."""
    engine = DuckDBEngine()
    kept_counts, templates = [], []
    keep, fill = verify_sql._kept, verify_sql.template

    def spied_kept(engine_, registered, stem, query, params=()):
        made = keep(engine_, registered, stem, query, params)
        if stem == "verify_counts":
            kept_counts.append(engine_.fetch(exp.select("*").from_(made)).to_pylist())
        return made

    def spied_template(name, *args, **kwargs):
        if name.startswith("verify_counts"):
            templates.append(name)
        return fill(name, *args, **kwargs)

    monkeypatch.setattr(verify_sql, "_kept", spied_kept)
    monkeypatch.setattr(verify_sql, "template", spied_template)
    try:
        engine.register("written", table)
        engine.register("input", table)
        measure_file(engine, exp.to_table("written"), exp.to_table("input"), 1,
                     [WrittenQI("a", QI_A), WrittenQI("b", QI_B)], sensitive)
    finally:
        engine.close()
    return kept_counts, templates


def assert_counts_are_the_tally(counts: list[dict], table: pa.Table, column: str, stand_in: str | None) -> None:
    """Per class its (value as text, rows) cells, as the file holds them; class numbers matched to
    classes by their cells (a number is the same within a class, different between classes)."""
    rows = table.to_pylist()
    want: dict[tuple, Counter] = {}
    for r in rows:
        value = r[column]
        text = stand_in if value is None else str(value)
        want.setdefault((r["a"], r["b"]), Counter())[text] += 1
    got: dict[int, Counter] = {}
    for cell in counts:
        assert cell["v"] not in got.get(cell["cls"], {})  # a cell once
        got.setdefault(cell["cls"], Counter())[cell["v"]] = cell["n"]
    assert len(got) == len(want)
    assert sorted(map(cells, got.values())) == sorted(map(cells, want.values()))


def cells(c: Counter) -> list[tuple[str, int]]:
    return sorted(("\0NULL" if v is None else v, n) for v, n in c.items())


@pytest.mark.parametrize("seed", range(6))
def test_a_text_column_grouped_with_the_qis_alone_is_read_as_its_cells(seed, monkeypatch):
    table = written_rows(seed, pa.string(), nulls=seed % 2 == 1)
    counts, templates = measured_counts(table, [WrittenSensitive("s", Sensitive(distance="equal", t=0.5))],
                                        monkeypatch)
    assert templates == ["verify_counts_flat"]
    assert_counts_are_the_tally(counts[0], table, "s", None)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("case", ["integer column", "NULL stand-in", "two sensitive columns"])
def test_other_columns_are_grouped_again(seed, case, monkeypatch):
    """An integer column is counted as text (grouped again by its text); a stand-in merges NULL
    with a value; a second sensitive column splits the grouped file's rows finer than a cell."""
    sa_type = pa.int64() if case == "integer column" else pa.string()
    table = written_rows(seed, sa_type, nulls=True)
    stand_in = "v1" if case == "NULL stand-in" else None
    spec = Sensitive(distance="equal", t=0.5, **({"nulls": "value", "null_value": stand_in} if stand_in else {}))
    sensitive = [WrittenSensitive("s", spec)]
    if case == "two sensitive columns":
        sensitive.append(WrittenSensitive("s2", Sensitive(distance="equal", t=0.5)))
    counts, templates = measured_counts(table, sensitive, monkeypatch)
    assert templates == ["verify_counts"] * len(sensitive)
    assert_counts_are_the_tally(counts[0], table, "s", stand_in)
    if case == "two sensitive columns":
        assert_counts_are_the_tally(counts[1], table, "s2", None)
