"""``check --against --spec`` re-derives the leaf-counting alterations (ncp, llm, nllm, wllm, wnllm)
of mask, bands and dates columns whose domain the spec declares, since the ninetieth round: until
then it said they were "not re-derived", and a report that halved them matched.

Oracle: what each label covers is counted by brute force over the declared domain (every code of
the alphabet, every whole number, every day, or a grid of 1/64 for bands of real numbers) mapped to
its label at each level by the rule as docs/spec.md states it; the records per label are a plain
GROUP BY over the written file, the suppressed ones at the top; each record's cost is summed edge by
edge along its path (an edge up from a label weighs what its parent covers less what it covers,
with Definition 8's multipliers). No code of sqlclose computes any expected figure.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import date, timedelta
from functools import cache
from pathlib import Path

import duckdb
import pytest
from table3_project import invoke

from sqlclose.audit.rule_covers import RuleDomain, covers, readings

LEAF_COUNTING = ("ncp", "llm", "nllm", "wllm", "wnllm")


# ---- the brute-force oracle -------------------------------------------------------------------------
def _band_label(x: int, width: int) -> str:
    lo = x // width * width
    return f"{lo}-{lo + width - 1}"


def _bands_paths(lo: int, hi: int, widths: list[int]) -> dict[str, list[str]]:
    """Whole numbers in [lo, hi]: each one's labels from the leaf to the top."""
    return {str(x): [str(x), *(_band_label(x, w) for w in widths), "*"] for x in range(lo, hi + 1)}


def _mask_paths(n: int) -> dict[str, list[str]]:
    """Every code of n digits: its labels, one more character masked a level (the top wholly masked)."""
    codes = (f"{i:0{n}d}" for i in range(10 ** n))
    return {c: [c[:n - m] + "*" * m for m in range(n + 1)] for c in codes}


def _date_label(day: date, level: str) -> str:
    return {"month": f"{day.year:04d}-{day.month:02d}", "quarter": f"{day.year:04d}-Q{(day.month + 2) // 3}",
            "year": f"{day.year:04d}", "5y": f"{day.year // 5 * 5:04d}-{day.year // 5 * 5 + 4:04d}"}[level]


def _dates_paths(first: date, last: date, levels: list[str]) -> dict[str, list[str]]:
    days = (first + timedelta(days=i) for i in range((last - first).days + 1))
    return {d.isoformat(): [d.isoformat(), *(_date_label(d, lv) for lv in levels), "*"] for d in days}


def _covered(paths: dict[str, list[str]], stand_in: str | None = None) -> Counter:
    """(level, label) → how many of the domain's points lie below it; the stand-in a point of its
    own below the top (docs/utility.md: it covers what a value covers, and the top one more)."""
    below: Counter = Counter()
    for path in paths.values():
        for level, label in enumerate(path):
            below[level, label] += 1
    if stand_in is not None:
        top = next(iter(paths.values()))
        for level in range(len(top) - 1):
            below[level, stand_in] += 1
        below[len(top) - 1, top[-1]] += 1
    return below


def _alterations(columns: dict[str, tuple[Counter, int, Counter, float]]) -> dict[str, float]:
    """Per metric, 100 × Σ records' edge weights up to their label over Σ up to the top. ``columns``:
    per QI, (records per (level, label), levels h, what each (level, label) covers, a value's cover);
    an edge up from level ℓ weighs what its parent covers less the leaf's share, taken per record as
    cover(label) − cover(leaf) once the edges are summed along the path."""
    m = len(columns)
    power = sum((h - 1) ** m for _, h, _, _ in columns.values())
    h_max = max(h for _, h, _, _ in columns.values())
    out = {}
    for metric in LEAF_COUNTING:
        spent = full = 0.0
        for records, h, below, leaf in columns.values():
            root = next(n for (level, _), n in below.items() if level == h - 1)
            w1, w2 = 1 - (h - 1) ** m / power, h_max / h
            scale = {"ncp": 1 / root, "llm": w2, "nllm": w2 / root, "wllm": w1, "wnllm": w1 / root}[metric]
            for (level, label), n in records.items():
                # the path's edges: leaf → … → label, each its parent's cover less its own
                spent += n * scale * (below[level, label] - leaf)
                full += n * scale * (root - leaf)
        out[metric] = 100 * spent / full
    return out


def _records(release: Path, name: str, level: int, suppressed: int, top: int, top_label: str = "*") -> Counter:
    """Records per (level, label) of a full-domain release: a plain GROUP BY, the suppressed at the top."""
    rows = duckdb.sql(f"SELECT CAST(\"{name}\" AS VARCHAR), COUNT(*) FROM '{release}' GROUP BY 1").fetchall()
    out = Counter({(level, label): n for label, n in rows})
    out[top, top_label] += suppressed
    return out


@cache
def _zip_covers(stand_in: str | None) -> Counter:
    """What each label of a five-digit mask covers, brute force over its 10⁵ codes: counted once per
    stand-in for the module (~0.7 s each), the same Counter for every release (only read)."""
    return _covered(_mask_paths(5), stand_in)


def _zips(release: Path, level: int, suppressed: int, stand_in: str | None = None) -> tuple:
    """zip's (records, h, covers, a value's cover): a mask of five digits, 10⁵ codes."""
    return (_records(release, "zip", level, suppressed, 5, "*****"), 6, _zip_covers(stand_in), 1)


# ---- projects ---------------------------------------------------------------------------------------
def _anonymize(folder: Path, table: str, qis: str, node: str, k: int = 2, suppression: float = 0.5,
               extra: str = "") -> tuple[Path, Path, dict]:
    duckdb.sql(f"COPY ({table}) TO '{folder / 'data.parquet'}'")
    spec = folder / "spec.toml"
    spec.write_text(f'others = "drop"\n[source]\npath = "data.parquet"\n[output]\npath = "out/r.parquet"\n'
                    f"[privacy]\nk = {k}\nsuppression = {suppression}\n[quasi_identifiers]\n{qis}\n"
                    f'[sensitive.disease]\ndistance = "equal"\nt = 0.9\n{extra}')
    result = invoke("anonymize", spec, "-q", *(("--node", node) if node else ()))
    assert result.exit_code == 0, result.output
    report = folder / "out" / "r.parquet.report.json"
    return spec, report, json.loads(report.read_text())


ROWS = ("SELECT '4' || (i % 7)::VARCHAR || lpad((i * 13 % 1000)::VARCHAR, 3, '0') AS zip, "
        "(CASE WHEN i % 23 = 22 THEN 58 + i // 23 ELSE 20 + i % 23 END)::{age} AS age, "
        "['flu', 'cold', 'ulcer'][1 + i % 3] AS disease FROM range(200) t(i)")
QIS = ('zip = { mask = true, length = 5, alphabet = "0123456789" }\n'
       "age = { bands = [5, 10, 20], domain = [18, 65] }")


def _assert_checked(spec: Path, report: Path, doc: dict, expected: dict[str, float]) -> None:
    """The report's five figures are the oracle's; the check re-derives each (no note), and a report
    with any one halved is a mismatch naming it. The release and its report are removed after, for
    the test's next node."""
    assert {k: doc["utility"]["alteration"][k] for k in LEAF_COUNTING} == pytest.approx(expected, rel=1e-12)
    release = report.parent / "r.parquet"
    result = invoke("check", release, "--against", report, "--spec", spec)
    assert result.exit_code == 0, result.output
    assert "not re-derived" not in result.output, result.output
    for name in LEAF_COUNTING:
        edited = json.loads(json.dumps(doc))
        edited["utility"]["alteration"][name] = expected[name] / 2
        edited["utility"]["mean_alteration"] = sum(
            v for v in edited["utility"]["alteration"].values() if v is not None) / 7
        (report.parent / "edited.json").write_text(json.dumps(edited))
        result = invoke("check", release, "--against", report.parent / "edited.json", "--spec", spec)
        assert result.exit_code == 4, result.output
        assert (f"utility.alteration.{name}: the report says {expected[name] / 2:.10g}, its node and the file make "
                f"{expected[name]:.10g}") in result.output
        assert result.output.count("utility.") == 1, result.output
    release.unlink()
    report.unlink()


@pytest.mark.parametrize("age_type", ["BIGINT", "VARCHAR"])
def test_whole_number_bands_and_a_mask_generalized(tmp_path, age_type):
    spec, report, doc = _anonymize(tmp_path, ROWS.format(age=age_type), QIS, "zip=3,age=2")
    assert doc["suppressed_rows"] > 0
    release = tmp_path / "out" / "r.parquet"
    ages = _covered(_bands_paths(18, 65, [5, 10, 20]))
    expected = _alterations({"zip": _zips(release, 3, doc["suppressed_rows"]),
                             "age": (_records(release, "age", 2, doc["suppressed_rows"], 4), 5, ages, 1)})
    _assert_checked(spec, report, doc, expected)


def test_whole_number_bands_at_their_leaves(tmp_path):
    # age released as it is (its values, not labels): the file's type says whole numbers
    spec, report, doc = _anonymize(tmp_path, ROWS.format(age="BIGINT"), QIS, "zip=5,age=0")
    assert doc["suppressed_rows"] > 0
    release = tmp_path / "out" / "r.parquet"
    expected = _alterations({
        "zip": _zips(release, 5, doc["suppressed_rows"]),
        "age": (_records(release, "age", 0, doc["suppressed_rows"], 4), 5,
                _covered(_bands_paths(18, 65, [5, 10, 20])), 1)})
    _assert_checked(spec, report, doc, expected)


def test_bands_of_real_numbers_cover_their_length(tmp_path):
    # a DOUBLE age of 20 to 41: bands [20, 25) … cover their length within [18, 45] ([40, 50) five), a
    # value none; counted on a grid of 1/64 (every edge here is a whole number)
    table = ROWS.format(age="DOUBLE").replace("CASE WHEN i % 23 = 22 THEN 58 + i // 23 ELSE 20 + i % 23 END",
                                              "20 + i % 22")
    qis = QIS.replace("[5, 10, 20], domain = [18, 65]", "[5, 10], domain = [18, 45]")
    for node in ("zip=3,age=2", "zip=5,age=0"):
        spec, report, doc = _anonymize(tmp_path, table, qis, node)
        release = tmp_path / "out" / "r.parquet"
        assert duckdb.sql(f"SELECT COUNT(*) FROM '{release}' WHERE CAST(age AS VARCHAR) IN ('[40, 50)', '40.0')"
                          ).fetchall()[0][0] > 0
        grid: Counter = Counter()
        for i in range((45 - 18) * 64):
            x = 18 + i / 64
            for level, w in ((1, 5), (2, 10)):
                lo = math.floor(x / w) * w
                grid[level, f"[{lo}, {lo + w})"] += 1 / 64
        grid[3, "*"] = 45 - 18
        level = int(node.split("age=")[1])
        expected = _alterations({
            "zip": _zips(release, int(node[4]), doc["suppressed_rows"]),
            "age": (_records(release, "age", level, doc["suppressed_rows"], 3), 4, grid, 0)})
        _assert_checked(spec, report, doc, expected)


def test_dates_cover_their_days_within_the_domain(tmp_path):
    table = ("SELECT '4' || (i % 7)::VARCHAR || lpad((i * 13 % 1000)::VARCHAR, 3, '0') AS zip, "
             "DATE '1990-01-01' + CAST(i * 37 % 3000 AS INTEGER) AS born, "
             "['flu', 'cold', 'ulcer'][1 + i % 3] AS disease FROM range(3000) t(i)")
    qis = ('zip = { mask = true, length = 5, alphabet = "0123456789" }\n'
           'born = { dates = ["month", "quarter", "year", "5y"], domain = ["1989-07-15", "1999-03-10"] }')
    for node in ("zip=4,born=1", "zip=3,born=2", "zip=2,born=4"):
        spec, report, doc = _anonymize(tmp_path, table, qis, node)
        release = tmp_path / "out" / "r.parquet"
        days = _covered(_dates_paths(date(1989, 7, 15), date(1999, 3, 10), ["month", "quarter", "year", "5y"]))
        z, b = int(node[4]), int(node.split("born=")[1])
        expected = _alterations({
            "zip": _zips(release, z, doc["suppressed_rows"]),
            "born": (_records(release, "born", b, doc["suppressed_rows"], 5), 6, days, 1)})
        _assert_checked(spec, report, doc, expected)


def test_a_null_stand_in_covers_a_value_and_the_top_one_more(tmp_path):
    # zip and age with NULLs as their stand-ins; age released at its leaves keeps NULL in the file,
    # which covers what a value covers (one)
    table = ("SELECT CASE WHEN i % 10 = 0 THEN NULL "
             "ELSE '4' || (i % 7)::VARCHAR || lpad((i * 13 % 1000)::VARCHAR, 3, '0') END AS zip, "
             "(CASE WHEN i % 11 = 0 THEN NULL WHEN i % 23 = 22 THEN 58 + i // 23 ELSE 20 + i % 23 END)::BIGINT AS age, "
             "['flu', 'cold', 'ulcer'][1 + i % 3] AS disease FROM range(200) t(i)")
    qis = ('zip = { mask = true, length = 5, alphabet = "0123456789", nulls = "value", null_value = "none" }\n'
           'age = { bands = [5, 10, 20], domain = [18, 65], nulls = "value" }')
    ages = _covered(_bands_paths(18, 65, [5, 10, 20]), stand_in="NULL")
    for z, a in ((3, 2), (5, 0)):
        spec, report, doc = _anonymize(tmp_path, table, qis, f"zip={z},age={a}")
        release = tmp_path / "out" / "r.parquet"
        stand_ins = duckdb.sql(f"SELECT COUNT(*) FILTER (zip = 'none'), COUNT(*) FILTER (age IS NULL) "
                               f"FROM '{release}'").fetchall()[0]
        assert stand_ins[0] > 0 if z < 5 else stand_ins[1] > 0
        age_records = _records(release, "age", a, doc["suppressed_rows"], 4)
        age_records[a, "NULL"] += age_records.pop((a, None), 0)  # NULL left at its leaf: the stand-in's place
        expected = _alterations({"zip": _zips(release, z, doc["suppressed_rows"], stand_in="none"),
                                 "age": (age_records, 5, ages, 1)})
        _assert_checked(spec, report, doc, expected)


def test_a_gaa_release_of_rules_is_re_derived_from_its_labels(tmp_path):
    spec, report, doc = _anonymize(tmp_path, ROWS.format(age="BIGINT"), QIS, "", k=3, suppression=0.0,
                                   extra='[search]\nalgorithm = "gaa"\n')
    release = tmp_path / "out" / "r.parquet"
    zips = _zip_covers(None)
    ages = _covered(_bands_paths(18, 65, [5, 10, 20]))
    records = {}
    for name, below in (("zip", zips), ("age", ages)):
        level_of = {label: level for (level, label) in below}  # each label here is of one level
        rows = duckdb.sql(f"SELECT CAST({name} AS VARCHAR), COUNT(*) FROM '{release}' GROUP BY 1").fetchall()
        records[name] = Counter({(level_of[label], label): n for label, n in rows})
    assert len({level for level, _ in records["zip"]}) > 1 or len({level for level, _ in records["age"]}) > 1
    expected = _alterations({"zip": (records["zip"], 6, zips, 1), "age": (records["age"], 5, ages, 1)})
    assert {k: doc["utility"]["alteration"][k] for k in LEAF_COUNTING} == pytest.approx(expected, rel=1e-12)
    assert invoke("check", release, "--against", report, "--spec", spec).exit_code == 0
    doc["utility"]["alteration"]["ncp"] = expected["ncp"] + 1
    doc["utility"]["mean_alteration"] = sum(doc["utility"]["alteration"].values()) / 7
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    result = invoke("check", release, "--against", tmp_path / "edited.json", "--spec", spec)
    assert result.exit_code == 4
    assert (f"utility.alteration.ncp: the report says {expected['ncp'] + 1:.10g}, the file's labels make "
            f"{expected['ncp']:.10g}") in result.output


@pytest.mark.parametrize(("age_type", "widths", "reading"), [("BIGINT", [5, 10, 20], "whole numbers"),
                                                             ("DOUBLE", [5, 10], "lengths")])
def test_bands_at_their_top_alone_are_held_to_the_reading_the_report_agrees_with(tmp_path, age_type, widths,
                                                                                 reading):
    # age released at its top alone: "*" tells nothing of the input's type, which decides whether the
    # top covers 48 whole numbers or a length of 47; the report's figures agree with one reading only
    spec, report, doc = _anonymize(tmp_path, ROWS.format(age=age_type), QIS.replace("[5, 10, 20]", str(widths)),
                                   f"zip=3,age={len(widths) + 1}")
    release = tmp_path / "out" / "r.parquet"
    h = len(widths) + 2
    if reading == "whole numbers":
        ages = _covered(_bands_paths(18, 65, widths))
    else:
        ages = Counter({(h - 1, "*"): 65 - 18})  # a length; a value covers none
    expected = _alterations({"zip": _zips(release, 3, doc["suppressed_rows"]),
                             "age": (_records(release, "age", h - 1, doc["suppressed_rows"], h - 1), h, ages,
                                     1 if reading == "whole numbers" else 0)})
    assert {k: doc["utility"]["alteration"][k] for k in LEAF_COUNTING} == pytest.approx(expected, rel=1e-12)
    result = invoke("check", release, "--against", report, "--spec", spec)
    assert result.exit_code == 0, result.output
    assert (f"were re-derived reading the bands of column 'age' as {reading} (the reading the report's figures "
            "agree with;") in result.output
    doc["utility"]["alteration"]["nllm"] = expected["nllm"] + 1
    doc["utility"]["mean_alteration"] = sum(doc["utility"]["alteration"].values()) / 7
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    result = invoke("check", release, "--against", tmp_path / "edited.json", "--spec", spec)
    assert result.exit_code == 4, result.output
    assert (f"utility.alteration.nllm: the report says {expected['nllm'] + 1:.10g}, its node and the file make "
            f"{expected['nllm']:.10g} (reading the bands of column 'age' as {reading}, the reading most of its figures "
            "agree with: no reading makes them all)") in result.output
    assert result.output.count("utility.") == 1, result.output


def test_without_the_spec_the_rule_is_unknown_and_a_note_says_so(tmp_path):
    spec, report, doc = _anonymize(tmp_path, ROWS.format(age="BIGINT"), QIS, "zip=3,age=2")
    result = invoke("check", tmp_path / "out" / "r.parquet", "--against", report)
    assert result.exit_code == 0, result.output
    assert ("note: utility.alteration.ncp, llm, nllm, wllm, wnllm were not re-derived from the file: the leaves "
            "below each label of column 'age' are not known to the check (its hierarchy is a rule given without "
            "--spec or without its domain declared") in result.output


# ---- what the labels leave open ------------------------------------------------------------------------
def test_bands_whose_kind_the_labels_do_not_tell_are_not_re_derived():
    rule = RuleDomain("bands", None, whole_widths=True, domain=(-40.0, -1.0))
    # [-15, -10): whole numbers below 0 are written as intervals too, as are real numbers
    open_ = covers(rule, ["[-15, -10)", "*"], "age")
    assert "whether the bands of column 'age' count whole numbers or lengths" in open_
    told = covers(rule, ["[-15, -10)", "-3-1", "*"], "age")  # a band of whole numbers beside it tells
    assert not isinstance(told, str) and told.of["[-15, -10)"] == 5 and told.top == 40
    assert covers(rule, ["[-15, -10)", "-12.5"], "age").of["[-15, -10)"] == 5  # a value with a point: real
    both = readings(rule, ["[-15, -10)", "*"], "age")  # open: both readings, for the report to agree with one
    assert [(name, c.of["[-15, -10)"], c.top) for name, c in both] == [("as whole numbers", 5, 40),
                                                                        ("as lengths", 5, 39)]


@pytest.mark.parametrize(("labels", "why"), [
    (["2024-13", "*"], "neither a day nor a month"),
    (["0000", "*"], "neither a day nor a month"),
    (["2024-W05"], "neither a day nor a month"),
])
def test_a_label_no_date_rule_writes_is_not_re_derived(labels, why):
    rule = RuleDomain("dates", None, domain=(date(2020, 1, 1), date(2025, 12, 31)))
    assert why in covers(rule, labels, "born")


def test_a_mask_label_of_another_shape_is_not_re_derived():
    rule = RuleDomain("mask", None, alphabet=10, length=5)
    assert "is not a code of 5 characters masked from the right" in covers(rule, ["47*0*"], "zip")
    assert "is not a code of 5 characters masked from the right" in covers(rule, ["4767"], "zip")
    assert covers(rule, ["476**", "*****"], "zip").of == {"476**": 100.0, "*****": 100_000.0}
