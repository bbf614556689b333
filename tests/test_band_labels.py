"""Bands cut and labelled exactly: large numbers (13 digits and more, BIGINTs past 2**53) and values
just below an edge each in their own band, with a label that holds them. Found by the forty-eighth
round's review: the edges' labels kept 12 significant digits (bands of 1e13 merged under one label,
or a valid spec was refused as a value with two parents), a value within ~5e-10 of a width below an
edge went into the next band, and integer bands were computed in float64.

Oracles: the bands by their definition, floor(x / width) * width, by plain SQL or exact integer and
decimal arithmetic on the values' text."""
import duckdb
import pyarrow as pa
import pytest

import sqlclose
from sqlclose.errors import HierarchyError
from sqlclose.model.hierarchy import bands_hierarchy, mask_hierarchy


def test_distinct_double_bands_keep_distinct_labels(tmp_path):
    base = 10 ** 13
    xs = [float(base + i) for i in (0, 1, 5, 6, 10, 11, 15, 16)]  # 4 bands of width 5, 2 rows each
    table = pa.table({"x": pa.array(xs, pa.float64()), "s": ["a", "b"] * 4})
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"x": {"bands": [5, 10]}},
            "sensitive": {"s": {"distinct_l": 2}}}
    out = tmp_path / "r.parquet"
    with sqlclose.anonymize(table, spec) as release:
        assert release.node == {"x": 1}  # every width-5 band holds a and b: level 1 is the optimum
        release.write_parquet(out)
    want = duckdb.sql(f"SELECT COUNT(DISTINCT floor(x / 5)) FROM (SELECT unnest({xs}) AS x)").fetchall()[0][0]
    assert want == 4
    labels = [r[0] for r in duckdb.sql(f"SELECT DISTINCT x FROM '{out}'").fetchall()]
    # each band its own label, and no label is an empty interval such as '[1e+13, 1e+13)'
    assert len(labels) == want, labels


def test_bands_of_large_doubles_are_not_refused_as_two_parents(tmp_path):
    base = 10 ** 12
    xs = [float(base + 49)] * 2 + [float(base + 50)] * 2
    table = pa.table({"x": pa.array(xs, pa.float64()), "s": ["a", "b"] * 2})
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"x": {"bands": [1, 10]}},
            "sensitive": {"s": {"distinct_l": 2}}}
    # a valid spec over valid numbers: bands [base+49, base+50) and [base+50, base+51) are two
    # bands with different parents [base+40, base+50) and [base+50, base+60); it must release
    with sqlclose.anonymize(table, spec, node={"x": 1}) as release:
        assert release.summary["classes"] == 2
        labels = set(release.to_arrow().column("x").to_pylist())
    assert labels == {f"[{base + 49}, {base + 50})", f"[{base + 50}, {base + 51})"}


def test_a_value_just_below_a_band_edge_stays_in_its_band(tmp_path):
    """2.9999999999 lies in [2, 3), not in [3, 4): (v - origin) / w is rounded to 9 decimals before
    flooring (model/hierarchy.py bands_hierarchy), which moves it up a band."""
    import decimal
    import math
    xs = [2.9999999999, 2.9999999999, 3.5, 3.5, 1.2, 1.7]
    table = pa.table({"x": pa.array(xs, pa.float64()), "s": ["a", "b"] * 3})
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"x": {"bands": [1, 2]}},
            "sensitive": {"s": {"distinct_l": 2}}}
    out = tmp_path / "r.parquet"
    with sqlclose.anonymize(table, spec, node={"x": 1}) as release:
        release.write_parquet(out)
    # oracle: the band of width 1 holding each value, by exact decimal arithmetic on its text
    want = {}
    for x in xs:
        lo = math.floor(decimal.Decimal(repr(x)))
        label = f"[{lo}, {lo + 1})"
        want[label] = want.get(label, 0) + 1
    got = dict(duckdb.sql(f"SELECT x, COUNT(*) FROM '{out}' GROUP BY x").fetchall())
    assert got == want  # {'[1, 2)': 2, '[2, 3)': 2, '[3, 4)': 2}


def test_integer_bands_of_large_bigints_hold_their_values(tmp_path):
    """9007199254740999 (above 2**53) lies in 9007199254740990-9007199254740999; the band is computed
    in float64, which reads it as 9007199254741000."""
    xs = [9007199254740999] * 2 + [9007199254741001] * 2
    table = pa.table({"x": pa.array(xs, pa.int64()), "s": ["a", "b"] * 2})
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"x": {"bands": [10, 100]}},
            "sensitive": {"s": {"distinct_l": 2}}}
    out = tmp_path / "r.parquet"
    with sqlclose.anonymize(table, spec, node={"x": 1}) as release:
        release.write_parquet(out)
    want = {}
    for x in xs:  # exact integer arithmetic
        lo = x // 10 * 10
        want[f"{lo}-{lo + 9}"] = want.get(f"{lo}-{lo + 9}", 0) + 1
    got = dict(duckdb.sql(f"SELECT x, COUNT(*) FROM '{out}' GROUP BY x").fetchall())
    assert got == want


def test_the_out_of_domain_message_states_the_declared_bound():
    """``:g`` printed the bound 1234567 as 1.23457e+06 (1234570), which holds the value refused."""
    with pytest.raises(HierarchyError) as e:
        bands_hierarchy([("1234567.5", 1234567.5), ("10", 10.0)], [10], domain=(0, 1234567))
    assert "'1234567.5' is outside the declared domain [0, 1234567]" in str(e.value)


def test_the_mask_char_hint_offers_a_character_no_value_holds():
    """It suggested '*', the very character the values hold."""
    with pytest.raises(HierarchyError) as e:
        mask_hierarchy(["4767*", "4767#", "47673"], length=5)
    assert "mask_char '*' occurs in 1 of the column's values" in str(e.value)
    assert 'e.g. mask_char = "~"' in str(e.value)  # '*' and '#' are held
