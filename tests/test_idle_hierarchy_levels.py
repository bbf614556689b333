"""A sensitive hierarchy's level that groups nothing (review rv13, design point): a '*' above a single
root, or a level repeating the one below, counts in the height H that hierarchical distances are
divided by (docs/emd.md), so it was accepted silently while every distance shrank (a top level) or
shifted (a middle one): t held more loosely than it reads. The report's warnings, and the command's
output, now name the column and the level. Oracles: the levels and factors worked by hand from the
files written below (Table 3's disease.csv has height 3; one more level above its root makes 4, so
every distance is 3/4 and t = 0.6 holds as 0.8 would), and the EMD of each released class computed
by tests/oracle.py over the written file under both hierarchies."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pytest
from oracle import hierarchical_emd, read_hierarchy
from table3_project import invoke, table3_project

from sqlclose.model.hierarchy import Hierarchy


def _original(tmp_path: Path) -> Path:
    """Table 3 as shipped, in a folder of its own."""
    folder = tmp_path / "orig"
    folder.mkdir()
    return table3_project(folder)


def _with_disease_hierarchy(folder: Path, lines: list[str]) -> Path:
    table3_project(folder)
    (folder / "disease2.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = folder / "spec.toml"
    # t = 0.6: the paper's Table 5 node (3 classes) holds under either hierarchy, so the distances compared
    # below are those of several classes
    spec.write_text(spec.read_text().replace('"disease.csv"', '"disease2.csv"').replace("t = 0.3", "t = 0.6"))
    return spec


def _class_emds(folder: Path, rows: list[list[str]]) -> np.ndarray:
    """Each released class's hierarchical EMD against the input's disease distribution, classes in (zip, age) order."""
    domain = [r[0] for r in rows]
    release = folder / "out" / "release.parquet"
    # ordered, so that the arrays of two calls compare class by class
    classes = duckdb.sql(f"SELECT zip, age, list(disease) FROM '{release}' GROUP BY ALL ORDER BY ALL").fetchall()
    P = np.array([[c[2].count(v) for v in domain] for c in classes], dtype=float)
    whole = [r[0] for r in duckdb.sql(f"SELECT disease FROM '{folder / 'table3.csv'}'").fetchall()]
    q = np.array([whole.count(v) for v in domain], dtype=float)
    return hierarchical_emd(P / P.sum(axis=1, keepdims=True), q / q.sum(), domain, rows)


def test_a_level_above_the_single_root_is_warned_of_with_the_t_it_amounts_to(tmp_path):
    original = _original(tmp_path)
    lines = [line + ";*" for line in (original / "disease.csv").read_text().split("\n") if line]
    spec = _with_disease_hierarchy(tmp_path, lines)
    result = invoke("anonymize", spec, "--no-progress", "--node", "zip=1,age=2")
    assert result.exit_code == 0, result.output
    warning = ("sensitive column 'disease': level 4 of its hierarchy groups nothing (each label there has exactly "
               "one child below), yet counts in the height (4) that hierarchical distances are divided by, so every "
               "distance is 3/4 of what it is without it, and t = 0.6 holds as t = 0.8 would over the hierarchy "
               "without it")
    report = json.loads((tmp_path / "out" / "release.parquet.report.json").read_text())
    assert [w for w in report["warnings"] if w.startswith("sensitive column")] == [
        warning + ": looser than it reads; remove it from the hierarchy unless that is meant"]
    assert warning in " ".join(result.output.split())
    # the claim, by the oracle: each class's distance under the hierarchy given is 3/4 of that without the level
    given, without = read_hierarchy(tmp_path / "disease2.csv"), read_hierarchy(original / "disease.csv")
    shrunk, before = _class_emds(tmp_path, given), _class_emds(tmp_path, without)
    assert len(before) == 3 and before.max() > 0 and np.allclose(shrunk, 0.75 * before)


def test_a_level_repeating_the_leaves_is_warned_of_as_moving_distances(tmp_path):
    original = _original(tmp_path)
    lines = [f"{line.split(';')[0]};{line}" for line in (original / "disease.csv").read_text().split("\n") if line]
    spec = _with_disease_hierarchy(tmp_path, lines)
    result = invoke("anonymize", spec, "--no-progress", "--node", "zip=1,age=2")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "release.parquet.report.json").read_text())
    said = [w for w in report["warnings"] if w.startswith("sensitive column 'disease': level 1 of its hierarchy "
                                                           "groups nothing")]
    assert len(said) == 1 and "joined above it (below the top) farther" in said[0], report["warnings"]
    # the claim, by the oracle: with every value its own group at level 1, no class's distance is smaller
    given, without = read_hierarchy(tmp_path / "disease2.csv"), read_hierarchy(original / "disease.csv")
    farther, before = _class_emds(tmp_path, given), _class_emds(tmp_path, without)
    assert np.all(farther >= before - 1e-12) and np.any(farther > before + 1e-12)


@pytest.mark.parametrize("rows, idle", [
    ([["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"]], []),                       # x groups a and b
    ([["a", "x", "ALL", "*"], ["b", "x", "ALL", "*"], ["c", "y", "ALL", "*"]], [3]),  # '*' above the root ALL
    ([["a", "x", "x2", "*"], ["b", "x", "x2", "*"], ["c", "y", "y2", "*"]], [2]),     # level 2 repeats level 1
    ([["a", "a", "*"], ["b", "b", "*"]], [1]),                                       # level 1 repeats the leaves
    ([["a", "x", "*"]], []),                                                         # one leaf: no distance
])
def test_levels_without_a_group_by_hand(rows, idle):
    assert Hierarchy.from_rows(rows).levels_without_a_group() == idle


@pytest.mark.parametrize("how", ["spec", "hierarchy"])
def test_check_warns_of_an_idle_level_as_anonymize_does(tmp_path, how):
    """Review rv21 #7: `check --spec` and `check --hierarchy … --distance hierarchical --t` judged t
    over a sensitive hierarchy with a '*' above its single root and said "required 0.6: ok" with no
    word that t = 0.6 holds there as t = 0.8 would; `anonymize` warns. check now says the same, as one
    `sqlclose: warning:` line on stderr (and in --json's `warnings`), none under -q. The oracle: the
    height (4) and factor (3/4) worked by hand from the file written here."""
    original = _original(tmp_path)
    lines = [line + ";*" for line in (original / "disease.csv").read_text().split("\n") if line]
    spec = _with_disease_hierarchy(tmp_path, lines)
    assert invoke("anonymize", spec, "-q", "--node", "zip=1,age=2").exit_code == 0
    release = tmp_path / "out" / "release.parquet"
    args = ["--spec", spec] if how == "spec" else [
        "--qi", "zip,age", "--sensitive", "disease", "--distance", "hierarchical", "--t", "0.6",
        "--hierarchy", f"disease={tmp_path / 'disease2.csv'}"]
    said = ("sqlclose: warning: sensitive column 'disease': level 4 of its hierarchy groups nothing (each label "
            "there has exactly one child below), yet counts in the height (4) that hierarchical distances are "
            "divided by, so every distance is 3/4 of what it is without it, and t = 0.6 holds as t = 0.8 would "
            "over the hierarchy without it")
    result = invoke("check", release, *args)
    assert result.exit_code == 0, result.output
    assert said in result.stderr and "required 0.6: ok" in result.stdout, result.stderr
    as_json = invoke("check", release, *args, "--json")
    assert json.loads(as_json.stdout)["warnings"] == [said.removeprefix("sqlclose: warning: ") + ": looser than it "
                                                      "reads; remove it from the hierarchy unless that is meant"]
    quiet = invoke("check", release, *args, "-q")
    assert quiet.exit_code == 0 and quiet.stderr == "" and quiet.stdout == "", quiet.output
