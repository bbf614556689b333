"""Sweeps (``sqlclose.sweep``, ``sqlclose sweep``): GAA's one-run k-sweep against the brute-force
greedy and single runs, Incognito sweeps against single ``sqlclose.anonymize`` runs and a plain
GROUP BY over releases written at the same k, NAUC against a hand trapezoid, and the command's
files (CSV read back plainly, PNGs decoded by Pillow)."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from pathlib import Path

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image
from test_gaa import oracle_gaa, oracle_partition, partition_of, random_table, random_weights

import sqlclose
from sqlclose.cli import main
from sqlclose.errors import InputError, NoSolutionError
from sqlclose.model.spec import Search
from sqlclose.search.gaa import STRATEGIES, gaa, gaa_k_sweep
from sqlclose.sweep import COLUMNS, SweepResult, sweep
from sqlclose.utility import custom_metric
from sqlclose.utility.charts import DPI, HEIGHT_INCHES, WIDTH_INCHES

REPO = Path(__file__).resolve().parents[1]
TABLE3_SPEC = REPO / "datasets" / "table3" / "table3.toml"
KS = [1, 2, 3, 4, 5, 9]


# ---- GAA: one run for every k ----------------------------------------------------------------

@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("seed", [0, 1, 2, 13])
def test_gaa_k_sweep_equals_the_brute_force_greedy_at_every_k(strategy, seed):
    combos, hists, data = random_table(seed)
    weights = random_weights(seed)
    mu = custom_metric(data.hierarchies, weights)
    ks = [2, 3, 4, 6, int(data.counts.sum())]
    for scope in ("table", "class"):
        swept = gaa_k_sweep(data, ks, mu, strategy, scope=scope)
        assert sorted(swept) == ks
        for k in ks:
            expect = oracle_gaa(combos, data.counts, hists, weights, k, strategy, scope=scope)
            assert partition_of(swept[k], combos) == oracle_partition(expect, combos), (k, scope)
            single = gaa(data, k, mu, strategy, scope=scope)
            assert single.merges == swept[k].merges and np.array_equal(single.nodes, swept[k].nodes)


# ---- NAUC --------------------------------------------------------------------------------------

def test_sweep_nauc_is_the_hand_trapezoid():
    # A curve measured at k = 1, 3, 7 with values 10, 20, 5; on [2, 5] the ends interpolate to
    # 15 (k = 2) and 12.5 (k = 5): area 1·(15 + 20)/2 + 2·(20 + 12.5)/2 = 17.5 + 32.5 = 50, mean 50/3.
    rows = [{c: None for c in COLUMNS} | {"algorithm": "gaa", "strategy": "S1", "metric": "nllm", "scope": "table",
                                          "status": "ok", "k": k, "mean_alteration": y, "l_diversity": y / 10,
                                          "l1_closeness": y / 100, "suppressed_rows": 0}
            for k, y in ((1, 10.0), (3, 20.0), (7, 5.0))]
    result = SweepResult(rows, max_l_diversity=4.0, nauc_range=(1.0, 7.0))
    by_measure = {r["measure"]: r for r in result.nauc(2, 5)}
    assert by_measure["mean_alteration"]["nauc"] == pytest.approx(50 / 3)
    assert by_measure["mean_alteration"]["nauc_percent"] == pytest.approx(50 / 3)
    # The paper's percentages: t-closeness value × 100; l-diversity value over the table's maximum × 100.
    assert by_measure["l1_closeness"]["nauc_percent"] == pytest.approx(50 / 3 / 100 * 100)
    assert by_measure["l_diversity"]["nauc_percent"] == pytest.approx(50 / 3 / 10 / 4.0 * 100)
    # Rows suppressed in every run: the table's value would tell their sensitive values, withheld.
    for row in rows:
        row["suppressed_rows"] = 1
    assert {r["measure"]: r["nauc_percent"] for r in result.nauc(2, 5)}["l_diversity"] is None
    # Default range: the whole sweep, 2·(10 + 20)/2 + 4·(20 + 5)/2 = 80 over 6.
    assert {r["measure"]: r["nauc"] for r in result.nauc()}["mean_alteration"] == pytest.approx(80 / 6)


def test_sweep_nauc_with_one_bound_uses_it_and_refuses_a_range_outside_the_sweep():
    # result.nauc(2) silently ignored lo = 2 and answered over the whole sweep [1, 7]; a range
    # outside the swept values answered [] (every curve skipped) instead of saying why.
    rows = [{c: None for c in COLUMNS} | {"algorithm": "gaa", "strategy": "S1", "metric": "nllm", "scope": "table",
                                          "status": "ok", "k": k, "mean_alteration": y}
            for k, y in ((1, 10.0), (3, 20.0), (7, 5.0))]
    result = SweepResult(rows, nauc_range=(1.0, 7.0))
    # On [2, 7]: 15 at k = 2 (interpolated), 1·(15 + 20)/2 + 4·(20 + 5)/2 = 17.5 + 50 = 67.5 over 5.
    lo_only = {r["measure"]: r for r in result.nauc(2)}["mean_alteration"]
    assert (lo_only["lo"], lo_only["hi"]) == (2.0, 7.0)
    assert lo_only["nauc"] == pytest.approx(67.5 / 5)
    # On [1, 3]: 2·(10 + 20)/2 = 30 over 2.
    assert {r["measure"]: r["nauc"] for r in result.nauc(hi=3)}["mean_alteration"] == pytest.approx(15.0)
    for lo, hi in ((1, 9), (0.5, 3), (5, 4)):
        with pytest.raises(InputError, match=r"inside the swept values of k \(\[1, 7\]\)"):
            result.nauc(lo, hi)


# ---- Incognito sweeps against single runs ------------------------------------------------------

@pytest.mark.parametrize("metric_name", ["discernibility", "nllm"])
def test_incognito_sweep_equals_single_anonymize_runs_and_a_group_by_over_written_releases(tmp_path, metric_name):
    result = sweep(None, TABLE3_SPEC, KS, metrics=[metric_name])
    assert [r["k"] for r in result.rows] == KS and all(r["status"] == "ok" for r in result.rows)
    con = duckdb.connect()
    for row in result.rows:
        spec = sqlclose.load_spec(TABLE3_SPEC).model_copy(update={"privacy": sqlclose.Privacy(k=row["k"]),
                                                                  "search": Search(metric=metric_name)})
        out = tmp_path / f"k{row['k']}.parquet"
        with sqlclose.anonymize(None, spec) as release:
            doc = release.write_parquet(out)
            assert row["node"] == ",".join(f"{q}={v}" for q, v in release.node.items())
            operators = release.summary["utility"]["alteration"]  # a sweep is the operator's: nothing withheld
        if metric_name == "nllm":
            assert row["alteration"] == pytest.approx(operators["nllm"])
            assert doc["utility"]["alteration"]["nllm"] is None and "nllm" in doc["utility"]["withheld"]
        sizes = [n for (n,) in con.execute("SELECT count(*) FROM read_parquet($p) GROUP BY zip, age",
                                           {"p": str(out)}).fetchall()]
        assert min(sizes) >= row["k"]
        assert row["classes"] == len(sizes)
        assert row["discernibility"] == sum(n * n for n in sizes)
        assert row["average_class_size"] == pytest.approx(sum(sizes) / len(sizes))


# ---- the command -------------------------------------------------------------------------------

def test_sweep_command_end_to_end_on_table3(tmp_path, monkeypatch):
    out = tmp_path / "sweep"
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", ",".join(map(str, KS)), "--out", str(out),
                                    "--nauc-range", "2,5"])
    assert run.exit_code == 0, run.output
    assert str(out / "sweep.csv") in run.output and str(out / "nauc.csv") in run.output
    with (out / "sweep.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == COLUMNS
    assert [int(r["k"]) for r in rows] == KS
    con = duckdb.connect()
    table3 = str(REPO / "datasets" / "table3" / "table3.csv")
    levels = {"zip": lambda lv: f"left(CAST(zip AS VARCHAR), {5 - lv})", "age": None}
    for r in rows:
        # Brute-force independent check of "k reached ≥ k": regroup the input at the row's node
        # (ZIP masked by its level; age by the age.csv hierarchy) with a plain GROUP BY.
        node = dict(item.split("=") for item in r["node"].split(","))
        age_level = int(node["age"])
        con.execute("CREATE OR REPLACE TABLE h AS SELECT * FROM read_csv($p, header = false, delim = ';', "
                    "all_varchar = true)", {"p": str(REPO / "datasets" / "table3" / "age.csv")})
        sizes = [n for (n,) in con.execute(
            f"SELECT count(*) FROM read_csv($p, all_varchar = true) t JOIN h ON h.column0 = t.age "
            f"GROUP BY {levels['zip'](int(node['zip']))}, h.column{age_level}", {"p": table3}).fetchall()]
        assert min(sizes) >= int(r["k"]), r
        assert int(r["classes"]) == len(sizes)
    with (out / "nauc.csv").open(newline="", encoding="utf-8") as f:
        nauc_rows = {r["measure"]: r for r in csv.DictReader(f)}
    disc = {int(r["k"]): float(r["discernibility"]) for r in rows}
    # discernibility at k = 2, 3, 4, 5 (all measured): trapezoids over [2, 5].
    hand = sum((b - a) * (disc[a] + disc[b]) / 2 for a, b in ((2, 3), (3, 4), (4, 5))) / 3
    assert float(nauc_rows["discernibility"]["nauc"]) == pytest.approx(hand)
    pngs = sorted(out.glob("*.png"))
    assert {p.name for p in pngs} >= {"discernibility.png", "average_class_size.png", "seconds.png"}
    for png in pngs:
        assert png.stat().st_size > 0
        with Image.open(png) as image:
            assert image.format == "PNG"
            assert image.size == (int(WIDTH_INCHES * DPI), int(HEIGHT_INCHES * DPI))
    # The README's sweep: "Mean alteration over the seven metrics against k — Incognito, chosen by
    # DISCERNIBILITY, table3.csv" was wider than the image and ran off both sides (review rv6, 4b).
    assert [p.name for p in pngs if ink_at_the_sides(p)] == []
    # A second run refuses to clobber (exit 2, nothing changed), and --overwrite replaces.
    before = (out / "sweep.csv").stat().st_mtime_ns
    again = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(out)])
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert (out / "sweep.csv").stat().st_mtime_ns == before
    _charts_not_drawn(monkeypatch)  # drawn above; what --overwrite replaces is the files (~8 s of drawing)
    replaced = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(out), "--overwrite",
                                         "--quiet"])
    assert replaced.exit_code == 0 and replaced.output == ""
    with (out / "sweep.csv").open(newline="", encoding="utf-8") as f:
        assert [int(r["k"]) for r in csv.DictReader(f)] == [2, 3]


@pytest.mark.parametrize("args, message", [
    (["--k", "2,x"], "comma-separated numbers"),
    (["--k", "2,3", "--nauc-range", "1,3"], "inside the swept values"),
    (["--k", "2", "--nauc-range", "1,3"], "runs over one value of k (2)"),
    (["--k", "2,3", "--strategies", "S2"], "GAA"),
    (["--k", "2,3", "--metrics", "nllm,foo"], "unknown metric 'foo'"),
])
def test_sweep_command_refuses_bad_arguments_with_exit_2(tmp_path, args, message):
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--out", str(tmp_path / "o"), *args])
    assert run.exit_code == 2, run.output
    assert message in run.output
    assert not (tmp_path / "o" / "sweep.csv").exists()


@pytest.mark.parametrize("ks", ["10", "2,99"])
def test_a_k_above_the_rows_is_no_solution_as_anonymize_says_it(tmp_path, ks):
    """Ninety-fourth round: `anonymize` with k = 10 on Table 3's 9 rows exits 3 (no generalization
    satisfies), `sweep --k 10` exited 2 (bad input) for the same cause, in other words. Oracle:
    exit 3, anonymize's message, nothing written."""
    big = ks.split(",")[-1]
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", ks, "--out", str(tmp_path / "o"), "--no-charts"])
    assert run.exit_code == 3, run.output
    assert run.output == (f"sqlclose: error: k = {big} is larger than the table (9 rows): no generalization can make "
                          "classes that big; lower k (sweep k up to 9)\n")
    assert not (tmp_path / "o").exists()
    with pytest.raises(NoSolutionError, match=f"^k = {big} is larger than the table"):
        sweep(None, TABLE3_SPEC, [int(k) for k in ks.split(",")])


@pytest.mark.parametrize("args, message", [
    (["--k", ",3,3"], "Invalid value for '--k': has an empty item (',3,3'): give the values separated by single "
                      "commas, with none before the first or after the last"),
    (["--k", "2,3,"], "Invalid value for '--k': has an empty item ('2,3,')"),
    (["--k", "3,3"], "Invalid value for '--k': gives 3 twice: give each value once"),
    (["--k", "2", "--l", "1.5,1.50"], "Invalid value for '--l': gives 1.50 twice (1.5 and 1.50 are one): give each "
                                      "value once"),
    (["--k", "2", "--t", "0.2,,0.3"], "Invalid value for '--t': has an empty item ('0.2,,0.3')"),
    (["--k", "2,3", "--metrics", "nllm,NLLM"], "Invalid value for '--metrics': names NLLM twice (nllm and NLLM "
                                               "are one): give each value once"),
    (["--k", "2,3", "--strategies", "S1,"], "Invalid value for '--strategies': has an empty item ('S1,')"),
])
def test_an_empty_item_or_a_value_given_twice_in_a_sweep_list_is_refused(tmp_path, args, message):
    """Ninety-fourth round: `--k ,3,3` was swept as one run of k = 3 without a word (the empty item
    dropped, the second 3 merged into the first). Refused, exit 2, naming the option."""
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--out", str(tmp_path / "o"), *args])
    assert run.exit_code == 2, run.output
    assert message in run.output
    assert not (tmp_path / "o").exists()


def test_nauc_range_is_checked_against_the_values_the_sweep_runs_over(tmp_path):
    """--nauc-range was checked against the raw k list: "--k 2,2 --l 1.5,2,2.5" named one k, so the
    sweep runs over l, yet [1.5, 2] was refused with "2 <= LO < HI <= 2" (review rv6, defect 6).
    Oracle: the l values given, [1.5, 2.5], hold the range; nauc.csv's rows are on it."""
    folder = (REPO / "datasets" / "table3").as_posix()
    spec = tmp_path / "l.toml"
    spec.write_text(f'identifiers = ["salary"]\n[source]\npath = "{folder}/table3.csv"\n[privacy]\nk = 2\n'
                    f'[quasi_identifiers]\nzip = {{ mask = true }}\nage = {{ file = "{folder}/age.csv" }}\n'
                    '[sensitive.disease]\nentropy_l = 1.5\n', encoding="utf-8")
    out = tmp_path / "sw"
    run = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2", "--l", "1.5,2,2.5", "--nauc-range",
                                    "1.5,2", "--out", str(out), "--no-charts", "--no-progress"])
    assert run.exit_code == 0, run.output
    with (out / "nauc.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and {(r["lo"], r["hi"]) for r in rows} == {("1.5", "2.0")}
    outside = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2", "--l", "1.5,2,2.5", "--nauc-range",
                                        "1.5,3", "--out", str(out)])
    assert outside.exit_code == 2 and "1.5 <= LO < HI <= 2.5 (inside the swept values of l)" in outside.output


def test_gaa_sweep_rows_are_the_information_loss_of_single_runs(tmp_path):
    """A GAA sweep over a small table: each row's figures equal those of a single gaa() run."""
    from sqlclose.prepare.problem import prepare
    from sqlclose.search.gaa import fetch_gaa_input
    from sqlclose.utility import metric

    spec = {"source": {"path": str(REPO / "datasets" / "table3" / "table3.csv")}, "others": "drop",
            "privacy": {"k": 2}, "search": {"algorithm": "gaa", "metric": "ncp"},
            "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": str(REPO / "datasets/table3/age.csv")}},
            "sensitive": {"disease": {"distance": "equal", "t": 1.0}}}
    result = sweep(None, spec, [2, 3, 4], strategies=["S1", "S3"])
    assert [(r["strategy"], r["k"]) for r in result.rows] == [("S1", 2), ("S1", 3), ("S1", 4), ("S3", 2),
                                                              ("S3", 3), ("S3", 4)]
    opened = sqlclose.api.open_for(None, sqlclose.model.spec.build_spec(spec))
    data = fetch_gaa_input(prepare(opened.engine, opened.relation, sqlclose.model.spec.build_spec(spec),
                                   opened.label), "disease")
    mu = metric("ncp", data.hierarchies)
    with open(REPO / "datasets" / "table3" / "table3.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert result.max_l_diversity == pytest.approx(_exp_entropy([r["disease"] for r in rows]))
    for row in result.rows:
        single = gaa(data, row["k"], mu, row["strategy"])
        assert row["classes"] == single.classes and min(single.sizes) >= row["k"]
        assert row["alteration"] == pytest.approx(mu.alteration(data.leaves, single.nodes, data.counts))
        assert row["discernibility"] == int((single.sizes ** 2).sum())
        # The least exp(entropy) of a class (Definition 11), from the CSV's own disease values per class.
        diseases: dict[int, list[str]] = {}
        for r in rows:
            diseases.setdefault(_class_of_row(data, single, r), []).append(r["disease"])
        assert row["l_diversity"] == pytest.approx(min(_exp_entropy(v) for v in diseases.values()))
    opened.engine.close()


def _exp_entropy(values: list[str]) -> float:
    """exp(−Σ p ln p) of the values' distribution, by plain counting."""
    # sorted: a set's order changes with PYTHONHASHSEED, and with it the sum's last bit
    counts = [values.count(v) for v in sorted(set(values))]
    return math.exp(-sum(c / len(values) * math.log(c / len(values)) for c in counts))


def _class_of_row(data, result, row: dict[str, str]) -> int:
    """The GAA class of a CSV row: that of the combination whose leaves are the row's zip and age."""
    for c, leaves in enumerate(data.leaves):
        if all(str(h.leaves[i]) == row[name] for h, i, name in zip(data.hierarchies, leaves, data.names)):
            return int(result.class_of[c])
    raise AssertionError(f"no combination for {row}")


def test_gaa_k_sweep_rows_equal_single_gaa_releases_from_anonymize():
    """The sweep's one greedy run per curve against ``sqlclose.anonymize`` with algorithm = "gaa" at
    each k (the release path: fetch, Φ with the spec's models, gaa per k)."""
    spec = {"source": {"path": str(REPO / "datasets" / "table3" / "table3.csv")}, "others": "drop",
            "privacy": {"k": 2}, "search": {"algorithm": "gaa", "metric": "nllm"},
            "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": str(REPO / "datasets/table3/age.csv")}},
            "sensitive": {"disease": {"distance": "equal", "t": 1.0}}}
    result = sweep(None, spec, [2, 3, 4, 5], strategies=["S1", "S6"])
    for row in result.rows:
        single = {**spec, "privacy": {"k": row["k"]}, "search": {**spec["search"], "strategy": row["strategy"]}}
        with sqlclose.anonymize(None, single) as release:
            summary = release.summary
        assert row["classes"] == summary["classes"] and row["discernibility"] == summary["utility"]["discernibility"]
        assert row["alteration"] == pytest.approx(summary["utility"]["alteration"]["nllm"])
        assert row["l1_closeness"] == pytest.approx(summary["utility"]["sensitive"]["disease"]["l1_closeness"])


@pytest.mark.parametrize("placeholder", [{"distance": "equal", "t": 1.0}, {"distinct_l": 1}, {"p": 1},
                                         {"entropy_l": 1.0}, {"recursive": {"c": 2, "l": 1}}])
def test_gaa_sweep_under_k_alone_is_one_greedy_run_per_curve(monkeypatch, placeholder):
    """Without a model that can fail (t = 1 cannot, nor distinct_l, p, entropy_l = 1 or recursive
    (c > 1, 1): the spec's rule, Sensitive.vacuous), a curve is one gaa_k_sweep, never gaa per k."""
    import sqlclose.sweep as sweep_module

    def per_k(*args, **kwargs):
        raise AssertionError("gaa() per k was called for a k-only sweep")

    monkeypatch.setattr(sweep_module, "gaa", per_k)
    spec = {"source": {"path": str(REPO / "datasets" / "table3" / "table3.csv")}, "others": "drop",
            "privacy": {"k": 2}, "search": {"algorithm": "gaa"},
            "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": str(REPO / "datasets/table3/age.csv")}},
            "sensitive": {"disease": placeholder}}
    assert len(sweep(None, spec, [2, 3, 4], strategies=["S1", "S2"]).rows) == 6


def test_a_sweep_names_its_source_by_its_kind_not_by_its_labels_text(tmp_path):
    """A sweep's charts and summary name a file by its file name, any other source by its label: a
    caller's DuckDB table "ward/2024" was named "2024", as if its label were a path. Oracle: the names
    the test gave (the table's, the copied file's)."""
    con = duckdb.connect()
    table3 = REPO / "datasets" / "table3" / "table3.csv"
    con.execute(f"""CREATE TABLE "ward/2024" AS SELECT * FROM read_csv('{table3}')""")
    assert sweep((con, "ward/2024"), TABLE3_SPEC, [2]).source == "duckdb table ward/2024"
    copied = tmp_path / "a folder" / "ward 2024.csv"
    copied.parent.mkdir()
    copied.write_bytes(table3.read_bytes())
    assert sweep(copied, TABLE3_SPEC, [2]).source == "ward 2024.csv"


def test_charts_into_a_folder_not_made_yet(tmp_path):
    # docs/utility.md's `result.charts("charts/")` raised FileNotFoundError unless the folder
    # existed (matplotlib's savefig does not make it).
    result = sweep(None, TABLE3_SPEC, [2, 3])
    folder = tmp_path / "charts" / "table3"
    written = result.charts(folder)
    assert written and sorted(written) == sorted(folder.iterdir())
    for png in written:
        with Image.open(png) as image:
            assert image.format == "PNG"


def _charts_not_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chart written whole where it would be drawn, but not drawn (~0.8 s each, 10 in a sweep
    here): which charts a sweep writes and keeps is decided before the drawing; the drawing is
    tested on its own (``test_sweep_command_end_to_end_on_table3``, the chart tests below). Each
    file holds what it would be drawn from, so that two charts, or one chart of two sweeps, differ."""
    from sqlclose.model.whole_files import replaced_whole
    from sqlclose.utility import charts

    def written_undrawn(plt, path: Path, curves, **labels) -> Path:
        drawn_from = (path.name, {label: (list(xs), list(ys)) for label, (xs, ys) in curves.items()}, labels)
        with replaced_whole(path) as temporary:
            temporary.write_bytes(repr(drawn_from).encode())
        return path

    monkeypatch.setattr(charts, "_line_chart", written_undrawn)


def test_sweep_overwrite_leaves_no_chart_of_the_earlier_sweep(tmp_path, monkeypatch):
    # An analyst swept with a sensitive column (l-diversity and L1 charts), then swept again with
    # --overwrite into the same folder. The earlier l_diversity.png stayed beside the new
    # sweep.csv, whose runs have no l-diversity value: a chart of another sweep read as this one's.
    _charts_not_drawn(monkeypatch)
    out = tmp_path / "sweep"
    first = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(out), "--quiet"])
    assert first.exit_code == 0, first.output
    assert (out / "l_diversity.png").exists() and (out / "l1_closeness.png").exists()
    no_sensitive = tmp_path / "no_sensitive.toml"
    folder = (REPO / "datasets" / "table3").as_posix()
    no_sensitive.write_text(f'identifiers = ["salary", "disease"]\n[source]\npath = "{folder}/table3.csv"\n'
                            f'[privacy]\nk = 2\n[quasi_identifiers]\nzip = {{ mask = true }}\n'
                            f'age = {{ file = "{folder}/age.csv" }}\n', encoding="utf-8")
    second = CliRunner().invoke(main, ["sweep", str(no_sensitive), "--k", "2,3", "--out", str(out), "--overwrite",
                                       "--quiet"])
    assert second.exit_code == 0, second.output
    with (out / "sweep.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["l_diversity"] for r in rows] == ["", ""]  # this sweep measured no l-diversity ...
    assert not (out / "l_diversity.png").exists()  # ... so no l-diversity chart is beside it
    assert not (out / "l1_closeness.png").exists()
    assert (out / "discernibility.png").exists()
    # --no-charts --overwrite: the CSVs are this sweep's, and no chart of the earlier one stays.
    third = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,4", "--out", str(out), "--overwrite",
                                      "--no-charts", "--quiet"])
    assert third.exit_code == 0, third.output
    assert sorted(p.name for p in out.iterdir()) == ["nauc.csv", "sweep.csv"]
    # Without --overwrite, a folder holding only an earlier sweep's chart is refused too.
    (out / "seconds.png").write_bytes(b"old")
    (out / "sweep.csv").unlink()
    (out / "nauc.csv").unlink()
    refused = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,4", "--out", str(out), "--no-charts"])
    assert refused.exit_code == 2 and "seconds.png" in refused.output and "--overwrite" in refused.output
    assert sorted(p.name for p in out.iterdir()) == ["seconds.png"]


@pytest.mark.parametrize("read_as", ["table", "hierarchy", "pattern"])
def test_sweep_overwrite_never_replaces_a_file_the_sweep_reads(tmp_path, read_as):
    """--overwrite replaced whatever sat in OUT under a sweep file's name: the table the sweep read
    (named sweep.csv), a hierarchy (nauc.csv), with exit 0 (review rv6, defect 3). README: outputs
    never overwrite inputs, whatever --overwrite says. Oracle: the input's bytes (sha256) before and
    after; a glob source matching sweep.csv would read the sweep back as rows next time."""
    folder = REPO / "datasets" / "table3"
    table = "sweep.csv" if read_as == "table" else "t3.csv"
    (tmp_path / table).write_bytes((folder / "table3.csv").read_bytes())
    age = "nauc.csv" if read_as == "hierarchy" else "age.csv"
    (tmp_path / age).write_bytes((folder / "age.csv").read_bytes())
    source = 'path = "*.csv"\nglob = true' if read_as == "pattern" else f'path = "{table}"'
    spec = tmp_path / "spec.toml"
    spec.write_text(f'identifiers = ["salary"]\n[source]\n{source}\n[privacy]\nk = 2\n[quasi_identifiers]\n'
                    f'zip = {{ mask = true }}\nage = {{ file = "{age}" }}\n[sensitive.disease]\nentropy_l = 1.2\n')
    if read_as == "pattern":  # the pattern reads t3.csv alone (age.csv moves out of its way)
        (tmp_path / "h").mkdir()
        (tmp_path / age).rename(tmp_path / "h" / age)
        spec.write_text(spec.read_text().replace(f'"{age}"', f'"h/{age}"'))
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.rglob("*.csv")}
    result = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2,3", "--out", str(tmp_path), "--overwrite",
                                       "--no-charts", "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "sweep file path" in result.output and "this job reads" in result.output, result.output
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.rglob("*.csv")} == before


def _rows(curves: dict[tuple[str, float], list[tuple[int, float | None]]]) -> list[dict]:
    return [{c: None for c in COLUMNS} | {"algorithm": "gaa", "strategy": "S1", "metric": metric, "scope": "table",
                                          "l": lv, "k": k, "status": "ok" if y is not None else "no solution",
                                          "alteration": y, "l_diversity": y, "l1_closeness": y}
            for (metric, lv), points in curves.items() for k, y in points]


@pytest.fixture
def drawn(monkeypatch) -> dict[str, dict]:
    """The charts a test draws, by file stem: what ``line_chart`` was asked (title, labels, curves)."""
    import sqlclose.utility.charts as charts

    asked: dict[str, dict] = {}

    def capture(path, curves, **labels):
        asked[Path(path).stem] = {**labels, "curves": curves}
        return Path(path)

    monkeypatch.setattr(charts, "line_chart", capture)
    return asked


def test_sweep_charts_name_the_metric_the_column_and_the_curves_without_a_solution(tmp_path, drawn):
    # The alteration chart was titled "Alteration for the run's metric" without naming it, the
    # l-diversity and L1 charts did not say of which column, and a curve whose model had no
    # solution was listed in the legend as if it were drawn ("l=20.0", no point, no word why).
    result = SweepResult(_rows({("nllm", 2.0): [(2, 1.0), (5, 2.0)], ("nllm", 20.0): [(2, None), (5, None)],
                                ("nllm", 4.0): [(2, 3.0), (5, None)]}), source="adult.csv", sensitive="occupation")
    result.charts(tmp_path)
    title, legend = drawn["alteration"]["title"], list(drawn["alteration"]["curves"])
    assert title == "Alteration for NLLM against k — GAA, table scope, merge cost NLLM, adult.csv"
    assert legend == ["l=2", "l=20 (no solution)", "l=4 (no solution at k = 5)"]
    run = "GAA, table scope, merge cost NLLM, adult.csv"
    assert drawn["l_diversity"]["title"] == f"l-diversity value of occupation against k — {run}"
    assert drawn["l1_closeness"]["title"] == f"t-closeness value (L1) of occupation against k — {run}"
    assert result.failed_runs() == ["l=20 k=2", "l=20 k=5", "l=4 k=5"]
    # Curves of different metrics: the legend names each metric, the title does not pick one.
    mixed = SweepResult(_rows({("nllm", 2.0): [(2, 1.0), (5, 2.0)], ("total", 2.0): [(2, 1.5), (5, 2.5)]}),
                        source="adult.csv")
    mixed.charts(tmp_path)
    assert drawn["alteration"]["title"] == ("Alteration for the run's metric against k — GAA, table scope, l = 2, "
                                            "adult.csv")
    assert list(drawn["alteration"]["curves"]) == ["nllm", "total"]
    assert drawn["l_diversity"]["title"] == "l-diversity value against k — GAA, table scope, l = 2, adult.csv"


def test_sweep_command_names_the_curve_of_a_run_without_a_solution(tmp_path):
    # "2 run(s) found no solution: k=2, k=3" did not say which curve (which l) those runs were of.
    spec = tmp_path / "table3_l.toml"
    folder = (REPO / "datasets" / "table3").as_posix()
    spec.write_text(f'identifiers = ["disease"]\n[source]\npath = "{folder}/table3.csv"\n[privacy]\nk = 2\n'
                    f'[quasi_identifiers]\nzip = {{ mask = true }}\nage = {{ file = "{folder}/age.csv" }}\n'
                    f'[sensitive.salary]\nentropy_l = 2\n', encoding="utf-8")
    run = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2,3", "--l", "2,50", "--out", str(tmp_path / "o"),
                                    "--no-charts", "--no-progress"])
    assert run.exit_code == 0, run.output
    # Table 3 has 9 distinct salaries: exp(entropy) ≤ 9 < 50, so l = 50 has no solution at any k.
    assert "2 runs found no solution: l=50 k=2, l=50 k=3" in run.output


class _Clock:
    """A stand-in for ``time.perf_counter``: each reading moves it one second on, and ``pause`` moves
    it as a caller's long work would. The timing tests then hold on a loaded machine: the product's
    figures are differences of readings, all known here, none of them wall-clock time."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now

    def pause(self, seconds: float) -> None:
        self.now += seconds


def test_gaa_k_sweep_seconds_are_gaas_own_not_the_callers(monkeypatch):
    # The one-run k-sweep timed each k from the start, including the time its caller spent in
    # on_result on the smaller k's (the sweep builds every k's release summary there): the
    # "search time" of a large k grew with the measurements of all smaller ones.
    import sqlclose.search.gaa as gaa_module

    combos, _, data = random_table(3)
    clock, pause = _Clock(), 1000.0
    monkeypatch.setattr(gaa_module, "time", clock)
    plain = gaa_k_sweep(data, [2, 3, 4], "nllm", "S1")
    heard = gaa_k_sweep(data, [2, 3, 4], "nllm", "S1", on_result=lambda k, r: clock.pause(pause))
    # GAA itself reads the clock a few times (a second each); the caller holds it 1000 s at k = 2
    # and at k = 3, so k = 4 counting the caller's time would read over 2000 s.
    assert 0 < plain[4].seconds < pause
    assert 0 < heard[4].seconds < pause
    assert partition_of(heard[4], combos) == partition_of(plain[4], combos)


def test_gaa_sweep_row_seconds_are_the_search_and_its_measurements(monkeypatch):
    # docs/utility.md: `seconds` is the run's seconds (search and measurements); GAA rows gave the
    # search's alone. Measuring a run (its release summary) is made to take 1000 s of a stand-in clock, so the
    # figures below do not hang on how fast this machine is.
    import sqlclose.search.gaa as gaa_module
    import sqlclose.sweep as sweep_module
    from sqlclose.release.gaa_release import GaaRelease

    real, clock, pause = GaaRelease.summary, _Clock(), 1000.0

    def slow(self):
        clock.pause(pause)
        return real.fget(self)

    monkeypatch.setattr(GaaRelease, "summary", property(slow))
    monkeypatch.setattr(gaa_module, "time", clock)
    monkeypatch.setattr(sweep_module, "time", clock)
    folder = (REPO / "datasets" / "table3").as_posix()
    gaa_spec = {"identifiers": ["disease"], "source": {"path": f"{folder}/table3.csv"}, "privacy": {"k": 2},
                "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": f"{folder}/age.csv"}},
                "sensitive": {"salary": {"entropy_l": 1}}, "search": {"algorithm": "gaa"}}
    rows = sweep(None, gaa_spec, [2, 3]).rows
    for row in rows:
        assert row["seconds"] >= row["search_seconds"] + pause
    assert 0 < rows[1]["search_seconds"] < pause  # k = 3's search does not hold k = 2's measurement


def test_sweep_alteration_chart_leaves_out_a_curve_that_has_no_alteration(tmp_path, monkeypatch):
    # Incognito swept by ncp and discernibility: discernibility has no alteration (the report's
    # `alteration` is per information-loss metric), yet its curve sat in the alteration chart's
    # legend with nothing drawn, as if its line were missing.
    import sqlclose.utility.charts as charts

    drawn: dict[str, list[str]] = {}
    monkeypatch.setattr(charts, "line_chart",
                        lambda path, curves, **_: drawn.setdefault(Path(path).stem, list(curves)) and Path(path))
    rows = [{c: None for c in COLUMNS} | {"algorithm": "incognito", "metric": metric, "k": k, "status": "ok",
                                          "alteration": alteration, "discernibility": 10.0 * k}
            for metric, alteration in (("ncp", 50.0), ("discernibility", None)) for k in (2, 5)]
    SweepResult(rows).charts(tmp_path)
    assert drawn["alteration"] == ["ncp"]
    assert drawn["discernibility"] == ["ncp", "discernibility"]


@pytest.mark.parametrize("model", [{"distinct_l": 2}, {"recursive": {"c": 3, "l": 2}}])
def test_incognito_l_sweep_refuses_a_fractional_l_for_a_count_of_distinct_values(model):
    # --l 2.5 on a distinct_l (or recursive) model ran int(2.5) = 2 in a row labelled l = 2.5: on
    # Adult (occupation, k = 2) that row's node was l = 2's, whose classes hold 2 distinct values.
    folder = (REPO / "datasets" / "table3").as_posix()
    spec = {"identifiers": ["disease"], "source": {"path": f"{folder}/table3.csv"}, "privacy": {"k": 1},
            "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": f"{folder}/age.csv"}},
            "sensitive": {"salary": model}}
    with pytest.raises(InputError, match=r"l = 2.5 is not a whole number.*'salary'"):
        sweep(None, spec, [1], ls=[2, 2.5])
    assert [r["l"] for r in sweep(None, spec, [1], ls=[2, 3]).rows] == [2.0, 3.0]


def test_sweep_charts_draw_any_measure_asked_by_name_and_refuse_an_unknown_one(tmp_path, drawn):
    # charts(folder, ["alteration_ncp"]) drew nothing (only the default set could be drawn) and a
    # misspelt name ("mean_alteraton") was silently skipped: both returned [].
    rows = [{c: None for c in COLUMNS} | {"algorithm": "gaa", "strategy": "S1", "metric": "nllm", "scope": "table",
                                          "status": "ok", "k": k, "alteration": 2.0 * k, "alteration_ncp": 3.0 * k,
                                          "mean_alteration": 1.0 * k}
            for k in (2, 5)]
    result = SweepResult(rows, source="t.csv")
    written = result.charts(tmp_path, ["alteration_ncp"])
    assert [p.name for p in written] == ["alteration_ncp.png"]
    chart = drawn["alteration_ncp"]
    assert chart["title"] == "Alteration for NCP against k — GAA, table scope, merge cost NLLM, t.csv"
    assert [list(ys) for _, ys in chart["curves"].values()] == [[6.0, 15.0]]
    assert [p.name for p in result.charts(tmp_path, "mean_alteration")] == ["mean_alteration.png"]
    with pytest.raises(InputError, match="no chart for measure 'mean_alteraton'"):
        result.charts(tmp_path, ["mean_alteraton"])


def test_sweep_runs_a_metric_or_strategy_named_twice_once():
    # --metrics nllm,NLLM --strategies S1,s1 ran every k four times: four identical curves under
    # one legend entry, and four times the work.
    folder = (REPO / "datasets" / "table3").as_posix()
    spec = {"identifiers": ["disease"], "source": {"path": f"{folder}/table3.csv"}, "privacy": {"k": 2},
            "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": f"{folder}/age.csv"}},
            "sensitive": {"salary": {"entropy_l": 1}}, "search": {"algorithm": "gaa"}}
    result = sweep(None, spec, [2, 3], metrics=["nllm", "NLLM", "ncp"], strategies=["S1", "s1"])
    assert [(r["metric"], r["strategy"], r["k"]) for r in result.rows] == [
        ("nllm", "S1", 2), ("nllm", "S1", 3), ("ncp", "S1", 2), ("ncp", "S1", 3)]


@pytest.mark.parametrize("algorithm, axis", [
    ("gaa", "t (largest L1 t-closeness value allowed for occupation, not halved: 0–2)"),
    ("incognito", "t (largest EMD of occupation allowed)")])
def test_sweep_chart_over_t_says_which_t(tmp_path, drawn, algorithm, axis):
    # A sweep over t was drawn against an axis named "t": for GAA the paper's plain L1 value (0–2),
    # for Incognito the spec's EMD bound, two quantities an analyst comparing charts would mix up.
    rows = [{c: None for c in COLUMNS} | {"algorithm": algorithm, "metric": "nllm", "k": 5, "t": t, "status": "ok",
                                          "mean_alteration": 10.0 * t} for t in (0.2, 0.4)]
    SweepResult(rows, x="t", sensitive="occupation").charts(tmp_path)
    assert drawn["mean_alteration"]["xlabel"] == axis


def test_gaa_sweep_says_the_spec_suppression_is_not_used(tmp_path):
    # A GAA release warns that GAA never suppresses (the spec's limit is unused); a GAA sweep of
    # the same spec said nothing, so its suppressed_rows column of zeros read as "nothing needed".
    folder = (REPO / "datasets" / "table3").as_posix()
    spec = tmp_path / "gaa.toml"
    spec.write_text(f'identifiers = ["disease"]\n[source]\npath = "{folder}/table3.csv"\n[privacy]\nk = 2\n'
                    f'suppression = 0.1\n[quasi_identifiers]\nzip = {{ mask = true }}\n'
                    f'age = {{ file = "{folder}/age.csv" }}\n[sensitive.salary]\nentropy_l = 1\n'
                    '[search]\nalgorithm = "gaa"\n', encoding="utf-8")
    expected = "GAA does not suppress records: the suppression limit (0.1) was not used; every input row is released"
    result = sweep(None, spec, [2, 3])
    assert result.warnings[0] == expected  # then the data-built hierarchies' figures (test below)
    assert [r["suppressed_rows"] for r in result.rows] == [0, 0]
    run = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2,3", "--out", str(tmp_path / "o"), "--no-charts",
                                    "--no-progress"])
    assert run.exit_code == 0 and f"warning    {expected}" in run.output
    as_json = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2,3", "--out", str(tmp_path / "j"), "--no-charts",
                                        "--json"])
    assert json.loads(as_json.output)["warnings"][0] == expected
    # Incognito suppresses: nothing to warn of.
    assert not [w for w in sweep(None, TABLE3_SPEC, [2, 3]).warnings if "does not suppress" in w]


def test_a_chart_of_many_curves_shows_every_legend_entry_outside_the_plot(tmp_path, monkeypatch):
    # A sweep of 9 strategies × 7 metrics draws 63 curves: the legend, inside the plot at "best",
    # covered the curves and ran off the 500-pixel image (a third of the entries were cut off).
    import matplotlib.pyplot as plt

    from sqlclose.utility.charts import line_chart

    kept = []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    curves = {f"S{i % 9} m{i // 9}": ([2, 5, 10], [i, i + 1, i + 2]) for i in range(63)}
    path = line_chart(tmp_path / "many.png", curves, title="t", xlabel="k", ylabel="y")
    fig = kept[0]
    renderer = fig.canvas.get_renderer()
    legend = (fig.legends or [fig.axes[0].get_legend()])[0]
    box, page, plot = legend.get_window_extent(renderer), fig.bbox, fig.axes[0].get_window_extent(renderer)
    assert len(legend.get_texts()) == 63
    assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1  # all on the image
    assert not box.overlaps(plot)  # and none over the curves
    with Image.open(path) as image:
        assert image.size[0] == int(WIDTH_INCHES * DPI) and image.size[1] > int(HEIGHT_INCHES * DPI)
    plt.close(fig)


def ink_at_the_sides(png: Path) -> int:
    """Dark pixels in the image's two outermost pixel columns on either side: text that fits (title,
    legend, labels) leaves them background, as does the axes' frame, well inside."""
    with Image.open(png) as image:
        grey = np.asarray(image.convert("L"))
    return int((grey[:, :2] < 200).sum() + (grey[:, -2:] < 200).sum())


def test_a_wide_title_and_a_legend_of_curves_drawn_together_stay_inside_the_chart(tmp_path, monkeypatch):
    """Curves with the same points are drawn once under one label ("S1 nllm = S2 nllm = …"): with 18
    names it was wider than the 800-pixel image, yet sat inside the plot (10 curves or fewer), so its
    end and the title's start were cut off at the image's edges; a long title was cut off with one
    curve (review rv6, defect 4). Oracle: no dark pixel on the image's outer columns, and every
    legend entry and the title inside the image's box."""
    import matplotlib.pyplot as plt

    from sqlclose.utility.charts import line_chart

    kept = []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    names = [f"{s} {m}" for m in ("nllm", "total") for s in (*(f"S{i}" for i in range(1, 8)), "ldiv", "tclo")]
    curves = {name: ([2, 3, 4, 8], [0.0, 50.0, 50.0, 100.0]) for name in names}
    curves["other"] = ([2, 3, 4, 8], [75.0, 100.0, 100.0, 100.0])
    title = ("Mean alteration over the seven metrics against k — Incognito, chosen by DISCERNIBILITY, "
             "a_table_with_a_long_name.csv")
    for name, drawn in (("merged", curves), ("one", {"discernibility": curves["other"]})):
        png = line_chart(tmp_path / f"{name}.png", drawn, title=title, xlabel="k", ylabel="y")
        assert ink_at_the_sides(png) == 0, name
        fig = kept.pop()
        renderer, page = fig.canvas.get_renderer(), fig.bbox
        legend = (fig.legends or [fig.axes[0].get_legend()])[0]
        for box in (legend.get_window_extent(renderer), fig.axes[0].title.get_window_extent(renderer)):
            assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, name
        if name == "merged":  # every name is told, on lines that fit
            told = " ".join(t.get_text().replace("\n", " ") for t in legend.get_texts())
            assert told == " = ".join(names) + " other"
        plt.close(fig)


def test_curves_with_the_same_points_are_drawn_once_and_named_together(tmp_path, monkeypatch):
    # Two strategies with the same results drew two lines, the later exactly over the earlier: the
    # chart seemed to have lost a curve, though the legend listed it.
    import matplotlib.pyplot as plt

    from sqlclose.utility.charts import line_chart

    kept = []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    curves = {"S1": ([2, 5], [1.0, 2.0]), "S2": ([2, 5], [1.0, 2.5]), "S3": ([2, 5], [1.0, 2.0])}
    line_chart(tmp_path / "same.png", curves, title="t", xlabel="k", ylabel="y")
    fig = kept[0]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["S1 = S3", "S2"]
    assert [list(line.get_ydata()) for line in fig.axes[0].get_lines()] == [[1.0, 2.0], [1.0, 2.5]]
    plt.close(fig)


def test_incognito_t_sweep_refuses_a_t_above_the_distance_bound():
    # --t 1.5 on Table 3's salary (ordered EMD, at most 1) ran a row labelled t = 1.5 (a bound no
    # class can reach, so no model at all), though the spec itself refuses t = 1.5 for that distance:
    # the mistake of an analyst reading t as the paper's L1 value (0–2), which is GAA's.
    with pytest.raises(InputError, match=r"t = 1.5 is above 1, the largest ordered distance of 'salary'"):
        sweep(None, TABLE3_SPEC, [2, 3], ts=[0.2, 1.5])
    from pydantic import ValidationError

    from sqlclose.model.spec import Sensitive

    with pytest.raises(ValidationError, match=r"t must be in \[0, 1\]"):  # the spec's own rule
        Sensitive.model_validate({"distance": "ordered", "t": 1.5})
    assert [r["t"] for r in sweep(None, TABLE3_SPEC, [2], ts=[0.2, 1.0]).rows] == [0.2, 1.0]


def test_gaa_sweep_charts_say_the_scope(tmp_path, drawn):
    # A class-scope sweep's charts were titled like a table-scope one's ("… — GAA, adult.csv"),
    # though the two scopes give far apart curves for S3/S6 (docs/utility.md).
    rows = [{c: None for c in COLUMNS} | {"algorithm": "gaa", "strategy": "S3", "metric": "nllm", "scope": "class",
                                          "status": "ok", "k": k, "mean_alteration": 1.0 * k} for k in (2, 5)]
    SweepResult(rows, source="adult.csv").charts(tmp_path)
    assert drawn["mean_alteration"]["title"] == ("Mean alteration over the seven metrics against k — "
                                                 "GAA, class scope, merge cost NLLM, adult.csv")


def test_sweep_csv_files_take_a_path_under_the_home_folder(tmp_path, monkeypatch):
    # charts("~/…") wrote under the home folder but to_csv("~/sweep.csv") and nauc_to_csv raised
    # FileNotFoundError for the literal "~" folder.
    monkeypatch.setenv("HOME", str(tmp_path))
    rows = [{c: None for c in COLUMNS} | {"algorithm": "incognito", "metric": "ncp", "k": k, "status": "ok",
                                          "mean_alteration": 10.0 * k} for k in (2, 4)]
    result = SweepResult(rows, nauc_range=(2.0, 4.0))
    assert result.to_csv("~/sweep.csv") == tmp_path / "sweep.csv"
    assert result.nauc_to_csv("~/nauc.csv") == tmp_path / "nauc.csv"
    with (tmp_path / "nauc.csv").open(newline="", encoding="utf-8") as f:
        by_measure = {r["measure"]: r for r in csv.DictReader(f)}
    assert float(by_measure["mean_alteration"]["nauc"]) == pytest.approx(30.0)  # (20 + 40) / 2 over [2, 4]


def test_sweep_charts_name_the_fixed_l_t_and_k(tmp_path, drawn):
    # A sweep over k at l = 2 and one at l = 3 drew identical titles and legends ("S1 nllm"): the
    # fixed l was nowhere on the chart; a sweep over l at k = 5 did not say k.
    over_k = [{c: None for c in COLUMNS} | {"algorithm": "gaa", "strategy": "S1", "metric": "nllm", "scope": "table",
                                            "status": "ok", "k": k, "l": 2.0, "mean_alteration": 1.0 * k}
              for k in (2, 5)]
    SweepResult(over_k, source="adult.csv").charts(tmp_path)
    assert drawn["mean_alteration"]["title"] == ("Mean alteration over the seven metrics against k — "
                                                 "GAA, table scope, merge cost NLLM, l = 2, adult.csv")
    over_l = [{c: None for c in COLUMNS} | {"algorithm": "incognito", "metric": "ncp", "status": "ok", "k": 5,
                                            "l": lv, "mean_alteration": 10.0 * lv} for lv in (2.0, 3.5)]
    SweepResult(over_l, source="adult.csv", x="l").charts(tmp_path)
    assert drawn["mean_alteration"]["title"] == ("Mean alteration over the seven metrics against l — "
                                                 "Incognito, chosen by NCP, k = 5, adult.csv")


def test_nauc_says_which_runs_inside_its_range_it_draws_a_straight_line_over():
    """A run without a solution inside the range left no point: NAUC took the straight line over it
    without a word. By hand: points (2, 1), (8, 4) with k = 5 missing → the trapezoid (1 + 4) / 2 = 2.5."""
    result = SweepResult(_rows({("nllm", 2.0): [(2, 1.0), (5, None), (8, 4.0)],
                                ("nllm", 4.0): [(2, 2.0), (5, 3.0), (8, 4.0)]}), source="adult.csv")
    rows = {(r["curve"], r["measure"]): r for r in result.nauc(2, 8)}
    gap, whole = rows[("l=2", "alteration")], rows[("l=4", "alteration")]
    assert gap["nauc"] == pytest.approx(2.5) and gap["interpolated"] == "5"
    assert whole["nauc"] == pytest.approx((2.5 * 3 + 3.5 * 3) / 6) and whole["interpolated"] == ""
    assert {r["interpolated"] for r in result.nauc(5, 8) if r["curve"] == "l=2"} == {"5"}  # an end counts too


def test_a_nauc_range_whose_end_a_curve_did_not_solve_is_told_not_dropped(tmp_path):
    """A curve whose run at an end of the NAUC range found no solution has no point there: its NAUC
    was dropped from nauc.csv, --json and the summary without a word, asked range or not (review
    rv6, defect 5). By hand: l=2 has points at k = 2, 5 only, (1 + 3) / 2 = 2 on [2, 5] and none
    reaching 8; l=4 none at k = 2. In the command, Table 3's six diseases (a GROUP BY) cap any
    class's exp(entropy) at 6, so entropy l = 7 has no solution (the oracle)."""
    result = SweepResult(_rows({("nllm", 2.0): [(2, 1.0), (5, 3.0), (8, None)],
                                ("nllm", 4.0): [(2, None), (5, 2.0), (8, 4.0)]}), source="t.csv",
                         nauc_range=(2.0, 8.0))
    whole = {(r["curve"], r["measure"]): r for r in result.nauc()}
    assert whole[("l=2", "alteration")]["nauc"] is None and whole[("l=4", "alteration")]["nauc"] is None
    assert whole[("l=2", "alteration")]["note"] == ("not taken: no solution at k = 8, so the curve does not reach an "
                                                      "end of the range")
    assert whole[("l=4", "alteration")]["note"].startswith("not taken: no solution at k = 2,")
    part = {(r["curve"], r["measure"]): r for r in result.nauc(2, 5)}
    assert part[("l=2", "alteration")]["nauc"] == pytest.approx(2.0) and part[("l=2", "alteration")]["note"] == ""
    assert part[("l=4", "alteration")]["nauc"] is None

    folder = (REPO / "datasets" / "table3").as_posix()
    assert duckdb.sql(f"SELECT count(DISTINCT disease) FROM read_csv('{folder}/table3.csv')").fetchall() == [(6,)]
    spec = tmp_path / "l.toml"
    spec.write_text(f'identifiers = ["salary"]\n[source]\npath = "{folder}/table3.csv"\n[privacy]\nk = 2\n'
                    f'[quasi_identifiers]\nzip = {{ mask = true }}\nage = {{ file = "{folder}/age.csv" }}\n'
                    '[sensitive.disease]\nentropy_l = 1.5\n', encoding="utf-8")
    for asked in (["--nauc-range", "1.5,7"], []):
        out = tmp_path / f"sw{len(asked)}"
        run = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2", "--l", "1.5,3,7", "--metrics", "ncp", *asked,
                                        "--out", str(out), "--no-charts", "--no-progress"])
        assert run.exit_code == 0, run.output
        assert "NAUC of mean_alteration on [1.5, 7] not taken: no solution at l = 7" in run.output
        with (out / "nauc.csv").open(newline="", encoding="utf-8") as f:
            rows = {r["measure"]: r for r in csv.DictReader(f)}
        assert rows["mean_alteration"]["nauc"] == "" and "no solution at l = 7" in rows["mean_alteration"]["note"]
        assert rows["seconds"]["nauc"] != ""  # a failed run has its time: that curve reaches both ends
    as_json = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2", "--l", "1.5,3,7", "--metrics", "ncp", "--out",
                                        str(tmp_path / "sj"), "--no-charts", "--json"])
    told = {r["measure"]: r for r in json.loads(as_json.output)["nauc"]}["mean_alteration"]
    assert told["nauc"] is None and told["note"].startswith("not taken: no solution at l = 7")


def test_a_gaa_run_without_a_solution_has_its_time_and_progress_says_it():
    """A GAA run that found no solution had no time: its progress line said "0.00 s", its row none,
    though the greedy run had gone to its end. Table 3 has 6 diseases, so no class reaches the
    paper's l-diversity value 50."""
    spec = {"source": {"path": str(REPO / "datasets" / "table3" / "table3.csv")}, "others": "drop",
            "privacy": {"k": 2}, "search": {"algorithm": "gaa", "metric": "ncp", "strategy": "S2"},
            "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": str(REPO / "datasets/table3/age.csv")}},
            "sensitive": {"disease": {"distance": "equal", "t": 1.0}}}
    seen = []
    result = sweep(None, spec, [2, 3], ls=[50], on_progress=seen.append)
    assert [r["status"] for r in result.rows] == ["no solution", "no solution"]
    assert all(r["seconds"] is not None and r["seconds"] == r["search_seconds"] > 0 for r in result.rows)
    assert [p.run_seconds for p in seen] == [r["seconds"] for r in result.rows]


@pytest.mark.parametrize(("xs", "labels"), [
    ([3, 5, 10, 100, 1000], ["3", "5", "10", "100", "1000"]),  # the values swept
    # Too many to label: no longer the decades but swept values that fit (tests/test_chart_ticks.py)
])
def test_a_log_scale_chart_labels_its_axis_in_plain_numbers(tmp_path, monkeypatch, xs, labels):
    """Review of the sixty-third round: every chart on a log scale (k from 3 to 1000, the help's own
    example) labelled its axis `$\\mathdefault{10^{2}}$`: matplotlib's log labels are mathtext, which the
    charts draw literally (so that a column's `$` is no formula). Oracle: the tick labels matplotlib
    drew, read from the figure as it was saved."""
    import matplotlib.figure

    from sqlclose.utility.charts import line_chart

    drawn_labels = []
    save = matplotlib.figure.Figure.savefig

    def saved(fig, *args, **kwargs):
        save(fig, *args, **kwargs)
        left, right = fig.axes[0].get_xlim()
        drawn_labels.append([tick.get_text() for tick in fig.axes[0].get_xticklabels()
                             if left <= tick.get_position()[0] <= right])

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", saved)
    line_chart(tmp_path / "c.png", {"S1": (xs, list(range(len(xs))))}, title="t", xlabel="k", ylabel="y")
    assert drawn_labels == [labels]


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("stop_at", [1, 3, 4])  # setting the earlier files aside, or placing the new ones
def test_a_sweep_stopped_while_placing_leaves_the_earlier_sweep_whole(tmp_path, monkeypatch, stop_at):
    """Review of the sixty-third round: the files were moved in one by one, so a stop between two
    moves left the new sweep.csv beside the earlier nauc.csv, and said that nothing was placed; the
    earlier sweep's stale files were removed after, unguarded. Oracle: the folder's bytes before the
    second sweep, after it was stopped at each move (exit 130, "nothing was placed", no hidden
    staging folder left)."""
    import sqlclose.cli.sweep as sweep_cli

    _charts_not_drawn(monkeypatch)
    out = tmp_path / "sweep"
    first = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(out), "--quiet"])
    assert first.exit_code == 0, first.output
    before = _folder_bytes(out)
    assert len(set(before.values())) == len(before) and any(name.endswith(".png") for name in before)
    moves, replace = [], sweep_cli.os.replace

    def stopped(src, dst):
        moves.append(dst)
        if len(moves) == stop_at:
            raise KeyboardInterrupt
        replace(src, dst)

    monkeypatch.setattr(sweep_cli.os, "replace", stopped)
    second = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "4,5", "--out", str(out), "--overwrite",
                                       "--no-charts", "--quiet"])
    assert second.exit_code == 130, second.output
    assert "nothing was placed" in second.output
    assert _folder_bytes(out) == before and sorted(p.name for p in out.iterdir()) == sorted(before)


def test_a_sweep_stopped_after_placing_says_its_files_stand(tmp_path, monkeypatch):
    """The stop lands once every file is in: the message says they are in place (a retry without
    --overwrite would be refused), not that nothing was placed. Oracle: the new sweep.csv read back
    holds the runs asked for (k = 4, 5)."""
    import sqlclose.cli.sweep as sweep_cli

    monkeypatch.setattr(sweep_cli, "_print_summary", lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    out = tmp_path / "sweep"
    result = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "4,5", "--out", str(out), "--no-charts"])
    assert result.exit_code == 130, result.output
    assert f"the sweep's files are in place in {out}" in result.output
    with (out / "sweep.csv").open(newline="", encoding="utf-8") as f:
        assert [row["k"] for row in csv.DictReader(f)] == ["4", "5"]


def test_a_failed_sweep_leaves_no_folder_it_made(tmp_path, monkeypatch):
    """Review of the sixty-third round: README's promise, "nothing is left at the output path (not even
    a folder the run made for it)", was not kept by a sweep stopped while writing its files: the empty
    --out folder (and the folders above it it made) stayed. Oracle: tmp_path's listing."""
    monkeypatch.setattr(SweepResult, "to_csv", lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    out = tmp_path / "new" / "deeper"
    result = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(out), "--no-charts"])
    assert result.exit_code == 130, result.output
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_warns_when_its_files_hold_figures_a_report_withholds(tmp_path):
    """Review of the sixty-third round: a sweep's files gave the information loss a release report
    withholds (it counts a data-built hierarchy's values, suppressed rows' included: Table 3's 9th ZIP
    47602 or 47607 moved `alteration_ncp`, the releases the same byte for byte), with nothing saying
    that they are the operator's. Oracle: the figures the written release's report leaves null
    (its `utility.withheld`), named in the sweep's warning; none once both domains are declared."""
    folder = tmp_path / "t3"
    folder.mkdir()
    for name in ("table3.csv", "age.csv", "disease.csv"):
        (folder / name).write_bytes((REPO / "datasets" / "table3" / name).read_bytes())
    data_built = folder / "spec.toml"
    data_built.write_text(TABLE3_SPEC.read_text(encoding="utf-8"), encoding="utf-8")
    declared = folder / "declared.toml"
    declared.write_text(TABLE3_SPEC.read_text(encoding="utf-8").replace(
        "length = 5 }", 'length = 5, alphabet = "0123456789" }').replace(
        'file = "age.csv" }', 'file = "age.csv", domain = "leaves" }'), encoding="utf-8")
    for spec, expected_warning in ((data_built, True), (declared, False)):
        with sqlclose.anonymize(None, spec) as release:
            doc = release.write(tmp_path / f"{spec.stem}.parquet")
        nulls = sorted(name for name, value in doc["utility"]["alteration"].items() if value is None)
        nulls += ["mean_alteration"] if doc["utility"]["mean_alteration"] is None else []
        assert bool(nulls) == expected_warning
        warnings = sweep(None, spec, [2, 3]).warnings
        told = [w for w in warnings if "the release reports withhold" in w]
        if nulls:
            assert len(told) == 1 and f"({', '.join(sorted(nulls))};" in told[0]
        else:
            assert told == []


def test_a_sweep_whose_every_run_finds_no_solution_exits_3_and_writes_nothing(tmp_path, monkeypatch):
    """Review of the sixty-third round: a sweep whose every run found no solution exited 0 and wrote
    files of empty curves, its --json saying nothing of the failures. Oracle: entropy l-diversity
    above 9 on Table 3's 9 rows holds in no class (a class of n rows has entropy l at most n), so
    every run fails: exit 3 as `anonymize` exits, nothing written; with one l that holds, the sweep
    writes and its --json names the failed run. The charts are written undrawn (``_charts_not_drawn``):
    a chart file still makes the folder, and the drawing is not what is asserted."""
    _charts_not_drawn(monkeypatch)
    spec = tmp_path / "spec.toml"
    folder = (REPO / "datasets" / "table3").as_posix()
    spec.write_text(TABLE3_SPEC.read_text(encoding="utf-8").replace('"table3.csv"', f'"{folder}/table3.csv"')
                    .replace('"age.csv"', f'"{folder}/age.csv"').replace('"disease.csv"', f'"{folder}/disease.csv"')
                    .replace('distance = "ordered"', 'entropy_l = 2\ndistance = "ordered"'), encoding="utf-8")
    out = tmp_path / "sw"
    none = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2", "--l", "9.5,10", "--out", str(out), "--json"])
    assert none.exit_code == 3, none.output
    assert json.loads(none.stdout)["kind"] == "no solution" and not out.exists()
    some = CliRunner().invoke(main, ["sweep", str(spec), "--k", "2", "--l", "2,9.5", "--out", str(out), "--json"])
    assert some.exit_code == 0, some.output
    assert json.loads(some.stdout)["failed_runs"] == ["l=9.5"]


def test_a_sweep_runs_within_the_engine_settings_given_on_its_command_line(tmp_path):
    """Review of the sixty-fourth round: `sweep` had no --memory-limit, --threads, --temp-directory
    nor --engine ("No such option"), though its out-of-memory message told the user to raise
    --memory-limit. Now it takes them as anonymize does: a limit no query fits in stops the sweep
    (exit 5, nothing written), a workable one sweeps."""
    runner = CliRunner()
    starved = runner.invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(tmp_path / "a"),
                                   "--no-charts", "--memory-limit", "1KB", "--threads", "1"])
    assert starved.exit_code == 5 and "DuckDB ran out of memory" in starved.output, starved.output
    assert not any((tmp_path / "a").glob("*.csv"))
    run = runner.invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(tmp_path / "b"), "--no-charts",
                               "--memory-limit", "2GB", "--threads", "1", "--engine", "duckdb"])
    assert run.exit_code == 0, run.output
    assert (tmp_path / "b" / "sweep.csv").exists()


@pytest.mark.parametrize("option", ["--strategies", "--metrics"])
def test_an_empty_list_of_names_is_refused_not_taken_as_the_default(tmp_path, option):
    """Review of the sixty-fourth round: `--strategies ""` swept the default strategy, as if the
    option had not been given. Refused now, naming the option; nothing written."""
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(tmp_path / "o"), option,
                                    " , "])
    assert run.exit_code == 2 and f"Invalid value for '{option}'" in run.output and "names none" in run.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("k", [2.9, True])
def test_a_k_that_is_not_a_whole_number_is_refused_not_truncated(k):
    """Review of the sixty-fourth round: `sweep(…, [2.9, True])` ran k = 2 and k = 1 (int() of each),
    a weaker k than asked, where a spec's k = 2.5 is refused."""
    from sqlclose.sweep import sweep

    with pytest.raises(sqlclose.InputError, match="is not a whole number"):
        sweep(None, TABLE3_SPEC, [k])


@pytest.mark.parametrize(("name", "given"), [("k", "1_000"), ("k", "5"), ("l", "+2"), ("t", " 0.2"), ("k", b"5")])
def test_text_for_a_swept_number_is_refused_as_the_command_line_refuses_it(name, given):
    """The API read k = "1_000" as 1000 (int()), where `sqlclose sweep --k 1_000` is refused: the
    same sweep asked two ways ran on one and failed on the other. Text is refused, saying to give
    numbers, before the table is opened."""
    from sqlclose.sweep import sweep

    ks = [given] if name == "k" else [2]
    extra = {"ls": [given]} if name == "l" else {"ts": [given]} if name == "t" else {}
    with pytest.raises(sqlclose.InputError, match=rf"{name} = {re.escape(repr(given))} is text, not a number"):
        sweep(None, TABLE3_SPEC, ks, **extra)


# ---- what fails at the end is told before the first run (review of the sweep, rv66) ------------

@pytest.fixture
def sweep_calls(monkeypatch):
    """The runs the command started: the real ``sweep``, counted."""
    import sqlclose.sweep as module

    calls = []
    real = module.sweep

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "sweep", counted)
    return calls


def test_an_out_that_cannot_be_made_is_refused_before_any_run(tmp_path, sweep_calls):
    """--out under a file was found out only when the files were written, after every run (hours of
    an Adult GAA grid); ``anonymize`` refuses such an output before its search. Exit 5, no run."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    out = blocker / "sweep"
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(out), "--no-progress"])
    assert run.exit_code == 5, run.output
    assert (f"--out {out}: cannot create the folder for {out / 'sweep.csv'}: {blocker} is a file; no run was made: "
            "choose another --out") in run.output
    assert sweep_calls == []
    assert blocker.read_text(encoding="utf-8") == "x"


def test_charts_without_matplotlib_are_refused_before_any_run(tmp_path, monkeypatch, sweep_calls):
    """Without the optional extra the sweep ran to its end, then failed drawing and wrote nothing,
    not even the CSV files. Now told before the first run; --no-charts needs no matplotlib."""
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    out = tmp_path / "sw"
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(out), "--no-progress"])
    assert run.exit_code == 5, run.output
    assert "the sweep's charts need matplotlib, the optional extra: pip install 'sqlclose[report]'" in run.output
    assert sweep_calls == [] and not out.exists()
    csv_only = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2,3", "--out", str(out), "--no-progress",
                                         "--no-charts", "--quiet"])
    assert csv_only.exit_code == 0, csv_only.output
    assert sorted(p.name for p in out.iterdir()) == ["nauc.csv", "sweep.csv"]


def test_a_gaa_t_above_the_largest_l1_distance_is_refused():
    """GAA's t is the paper's plain L1 value: Σ|p − q| of two distributions is at most 2, so t = 3
    bounded nothing and its row was k-anonymity alone labelled t = 3 (Incognito refuses a t above its
    EMD bound). t = 2 itself is a value of the range and runs."""
    spec = {"source": {"path": str(REPO / "datasets" / "table3" / "table3.csv")}, "others": "drop",
            "privacy": {"k": 2}, "search": {"algorithm": "gaa", "metric": "ncp"},
            "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": str(REPO / "datasets/table3/age.csv")}},
            "sensitive": {"disease": {"distance": "equal", "t": 1.0}}}
    with pytest.raises(InputError) as refused:
        sweep(None, spec, [2, 3], ts=[0.5, 3])
    assert str(refused.value) == ("t = 3 is above 2, the largest L1 distance (Σ|p − q|, not halved) of two "
                                  "distributions: GAA's t is the paper's L1 t-closeness value, 0–2; sweep t up to 2")
    assert [r["t"] for r in sweep(None, spec, [2], ts=[2]).rows] == [2.0]


def test_the_node_cell_quotes_a_column_name_that_holds_a_comma_or_equals_sign(tmp_path):
    """The node cell joined "name=level" with commas, so columns named 'zi,p' and 'a=b' gave
    'zi,p=1,a=b=2', which reads as three columns. A name holding ',', '=' or '"' is double-quoted
    (a quote doubled); a plain one is as it was. Oracle: the node ``anonymize`` releases at each k."""
    with (REPO / "datasets" / "table3" / "table3.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    rows[0] = [{"zip": "zi,p", "age": 'a="b"'}.get(name, name) for name in rows[0]]
    with (tmp_path / "t.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    spec = {"source": {"path": str(tmp_path / "t.csv")}, "others": "drop", "privacy": {"k": 2},
            "quasi_identifiers": {"zi,p": {"mask": True}, 'a="b"': {"file": str(REPO / "datasets/table3/age.csv")}},
            "sensitive": {"salary": {"distance": "ordered", "t": 0.4}}}
    result = sweep(None, spec, [2, 4])
    for row in result.rows:
        with sqlclose.anonymize(None, {**spec, "privacy": {"k": row["k"]}}) as release:
            levels = release.node
        quoted = levels['a="b"']
        assert row["node"] == f'"zi,p"={levels["zi,p"]},"a=""b"""={quoted}'


@pytest.mark.parametrize("args, message", [
    (["--k", "1_000"], "Invalid value for '--k': '1_000' is not a whole number written in digits (expected "
                       "comma-separated numbers, e.g. 3,5,10)"),
    (["--k", "2,+3"], "Invalid value for '--k': '+3' is not a whole number written in digits (expected "
                      "comma-separated numbers, e.g. 3,5,10)"),
    (["--k", "3.0"], "Invalid value for '--k': '3.0' is not a whole number written in digits (expected "
                     "comma-separated numbers, e.g. 3,5,10)"),
    (["--k", "2", "--l", "1_0"], "Invalid value for '--l': '1_0' is not a number written in digits (expected "
                                 "comma-separated numbers, e.g. 1.5,2,3)"),
    # ninety-sixth round: nan is told as no finite number, as 1e400 is (tests/test_not_finite_numbers.py)
    (["--k", "2", "--t", "nan"], "Invalid value for '--t': t = nan is not a finite number: give finite numbers "
                                 "written in digits, e.g. 1.5,2,3"),
])
def test_a_number_not_written_in_digits_is_refused_naming_the_option(tmp_path, args, message):
    """Polish round, item 1: `--k 1_000` swept k = 1000 (int() reads underscores), as `--l 1_0`
    swept l = 10: the command line showed a number no one writes. Refused, naming the option."""
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--out", str(tmp_path / "o"), *args])
    assert run.exit_code == 2, run.output
    assert message in run.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, message", [
    (["--k", "2,0"], "Invalid value for '--k': k = 0 is out of range (k ≥ 1)"),
    (["--k", "2", "--l", "0.5"], "Invalid value for '--l': l = 0.5 is out of range (l ≥ 1)"),
])
def test_a_value_out_of_range_names_the_option_on_the_command_line(tmp_path, args, message):
    """Polish round, item 2: `--k 0` said "k = 0 is out of range (k ≥ 1)" without naming the
    option, where every other sweep error names it; the Python API still names the keyword."""
    from sqlclose.sweep import sweep

    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--out", str(tmp_path / "o"), *args])
    assert run.exit_code == 2, run.output
    assert message in run.output
    with pytest.raises(sqlclose.InputError, match=r"^k = 0 is out of range \(k ≥ 1\)$"):
        sweep(None, TABLE3_SPEC, [2, 0])


@pytest.mark.parametrize("option", ["--k", "--l", "--t", "--nauc-range"])
def test_an_empty_list_of_numbers_is_refused_not_taken_as_not_given(tmp_path, option):
    """Polish round, item 3: `--l ""` swept as if no l were given, where `--strategies ""` is
    refused. Every list of numbers is refused empty, naming the option; nothing written."""
    given = ["--k", "2,3"] if option != "--k" else []
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--out", str(tmp_path / "o"), *given, option, " , "])
    assert run.exit_code == 2, run.output
    assert f"Invalid value for '{option}': gives no number: give one or more, separated by commas" in run.output
    assert not (tmp_path / "o").exists()


def test_curve_labels_show_a_whole_number_l_without_a_point_zero(tmp_path, drawn):
    """Polish round, item 4: a chart's curves were labelled "l=2.0" for l = 2 (the float as
    Python prints it). A whole number is shown as one (l=2), any other value as given (l=1.5);
    nauc.csv's curve column and the failed runs read the same."""
    result = SweepResult(_rows({("nllm", 2.0): [(2, 1.0), (5, 2.0)], ("nllm", 1.5): [(2, 0.5), (5, None)]}),
                         source="adult.csv")
    result.charts(tmp_path)
    assert list(drawn["alteration"]["curves"]) == ["l=2", "l=1.5 (no solution at k = 5)"]
    assert [r["curve"] for r in result.nauc(2, 5) if r["measure"] == "alteration"] == ["l=2", "l=1.5"]
    assert result.failed_runs() == ["l=1.5 k=5"]


def test_a_sweep_file_written_from_python_is_replaced_whole_or_not_at_all(tmp_path):
    """`result.to_csv(path)` opened the path for writing at once: a write that failed half-way (here a
    value whose text cannot be made, as a full disk or an interrupt would stop it) left the earlier
    sweep.csv truncated to the rows written so far. Oracle: the earlier file byte for byte, and no
    temporary file beside it; a write that succeeds replaces it."""

    class Unwritable:
        def __str__(self) -> str:
            raise OSError("no space left on device")

    good = [{c: None for c in COLUMNS} | {"algorithm": "incognito", "metric": "ncp", "k": k, "status": "ok",
                                          "mean_alteration": 10.0 * k} for k in (2, 4)]
    earlier = tmp_path / "sweep.csv"
    earlier.write_text("the earlier sweep\n")
    with pytest.raises(OSError, match="no space left"):
        SweepResult(good + [good[0] | {"mean_alteration": Unwritable()}]).to_csv(earlier)
    assert earlier.read_text() == "the earlier sweep\n"
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.csv"]
    SweepResult(good).to_csv(earlier)
    with earlier.open(newline="", encoding="utf-8") as f:
        assert [r["mean_alteration"] for r in csv.DictReader(f)] == ["20.0", "40.0"]


def test_sweep_charts_name_the_spec_models_every_run_keeps(tmp_path, drawn):
    """A sweep over k under the spec's t = 0.2 and one under t = 0.3 drew the same titles: the
    models the spec fixes for every run were nowhere on the chart. Oracle: the spec file's own
    values, read with tomllib. An Incognito t sweep replaces the first column's t, which the chart
    names as its axis, not as a kept model; GAA keeps the spec's models beside its paper t."""
    import tomllib

    declared = tomllib.loads(TABLE3_SPEC.read_text(encoding="utf-8"))["sensitive"]
    salary, disease = declared["salary"], declared["disease"]
    kept_both = (f"salary: t = {salary['t']:g} {salary['distance']}; "
                 f"disease: t = {disease['t']:g} {disease['distance']}")
    sweep(None, TABLE3_SPEC, [2, 3]).charts(tmp_path)
    assert drawn["average_class_size"]["title"].endswith(f", {kept_both}, table3.csv")
    sweep(None, TABLE3_SPEC, [3], ts=[0.25, 0.4]).charts(tmp_path)
    title = drawn["average_class_size"]["title"]
    assert title.endswith(f", k = 3, disease: t = {disease['t']:g} {disease['distance']}, table3.csv"), title
    assert "salary: t" not in title
    gaa = sqlclose.load_spec(TABLE3_SPEC).model_dump()
    gaa["search"] = {"algorithm": "gaa"}
    sweep(None, gaa, [2, 3], ts=[1.5]).charts(tmp_path)
    assert f", t = 1.5, {kept_both}, " in drawn["mean_alteration"]["title"]
    # an l sweep replaces the first column's l-diversity model, and keeps its t
    with_l = sqlclose.load_spec(TABLE3_SPEC).model_dump()
    with_l["sensitive"]["salary"]["distinct_l"] = 2
    sweep(None, with_l, [3], ls=[1, 2]).charts(tmp_path)
    assert drawn["average_class_size"]["title"].endswith(f", k = 3, {kept_both}, table3.csv")


@pytest.mark.parametrize(("model", "l", "refused"), [
    ({"distinct_l": 2}, 2.5, "l = 2.5 is not a whole number, and 'salary''s l-diversity model (distinct_l) counts "
                             "distinct values"),
    ({"recursive": {"c": 3, "l": 2}}, 2.5, "l = 2.5 is not a whole number, and 'salary''s l-diversity model "
                                           "(recursive) counts distinct values"),
    ({}, 2, "an l sweep replaces the l of an l-diversity model, and 'salary' has none"),
    ({"entropy_l": 1.5}, 1.8, None),  # entropy's l need not be whole: swept as given
])
def test_an_incognito_l_sweep_refuses_an_l_its_model_cannot_take(tmp_path, model, l, refused):  # noqa: E741 - the papers' name
    """An l sweep replaces the first sensitive column's l-diversity model (entropy, else distinct,
    else recursive): a non-whole l for a model that counts distinct values would have run int(l), a
    weaker model than the row names, and a column without one has no l to replace."""
    spec = sqlclose.load_spec(TABLE3_SPEC).model_dump()
    spec["sensitive"]["salary"].update(model)
    if refused is None:
        rows = sweep(None, spec, [3], ls=[l]).rows
        assert [(r["l"], r["status"]) for r in rows] == [(l, "ok")]
        return
    with pytest.raises(InputError, match=re.escape(refused)):
        sweep(None, spec, [3], ls=[l])


@pytest.mark.parametrize("given", ["spec file", "dataframe and dict"])
def test_a_sweep_results_files_never_replace_a_file_the_sweep_read(tmp_path, given):
    """Ninety-sixth round: `SweepResult.to_csv` and `nauc_to_csv` wrote over the very table, spec and
    hierarchy files the sweep read, without a word, where `Release.write` refuses an input ("is a
    file this job reads") and `sqlclose sweep` refuses it whatever --overwrite says. Each writer —
    the two CSVs and the charts (a chart path hard-linked to a hierarchy: the same file under another
    name) — now refuses, as Release.write does (``OutputExistsError``). Oracle: every input's bytes
    (sha256) before and after; another path is written as before."""
    import pandas as pd
    from table3_project import table3_project

    from sqlclose.errors import OutputExistsError

    table3_project(tmp_path)
    inputs = [tmp_path / name for name in ("table3.csv", "age.csv", "disease.csv", "spec.toml")]
    if given == "spec file":
        result = sweep(None, tmp_path / "spec.toml", [2, 3])
    else:  # the reviewer's case: a DataFrame, and a dict spec naming the hierarchy files
        inputs = inputs[1:3]
        spec = {"k": 3, "quasi_identifiers": {"zip": {"mask": True, "length": 5},
                                              "age": {"file": str(tmp_path / "age.csv")}},
                "sensitive": {"salary": {"distance": "ordered", "t": 0.2},
                              "disease": {"distance": "hierarchical", "t": 0.3,
                                          "hierarchy": str(tmp_path / "disease.csv")}}}
        result = sweep(pd.read_csv(tmp_path / "table3.csv", dtype={"zip": str}), spec, [2, 3])
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs}
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / "discernibility.png").hardlink_to(tmp_path / "age.csv")
    writes = [*((lambda p=p: result.to_csv(p)) for p in inputs), *((lambda p=p: result.nauc_to_csv(p)) for p in inputs),
              lambda: result.charts(tmp_path / "charts", ["discernibility"])]
    for write in writes:
        with pytest.raises(OutputExistsError, match="is (a file this job reads|.*, which this job reads); writing the "
                                                    "(sweep's runs|sweep's NAUC|chart) there would destroy it: "
                                                    "choose another path"):
            write()
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs} == before
    result.to_csv(tmp_path / "sweep.csv")  # a path of its own: written as before
    with (tmp_path / "sweep.csv").open(newline="", encoding="utf-8") as f:
        assert [int(r["k"]) for r in csv.DictReader(f)] == [2, 3]


def test_a_sweep_takes_its_values_and_names_as_numpy_arrays_or_a_pandas_index():
    """Ninety-sixth round: `ls or []`, `if strategies` and `if metrics` asked a numpy array (or a
    pandas Index) its truth value: ``ValueError: The truth value of an array … is ambiguous``. Any
    sequence is taken now, a text as one name ("ncp" was the metrics 'n', 'c', 'p') and a single k
    as one. Oracle: the runs made are the hand-written product of the values given."""
    import pandas as pd

    rows = sweep(None, TABLE3_SPEC, np.array([3, 2]), ts=pd.Index([0.5, 0.4]), metrics=np.array(["ncp", "nllm"])).rows
    assert [(r["metric"], r["t"], r["k"]) for r in rows] == [
        (m, t, k) for m in ("ncp", "nllm") for t in (0.4, 0.5) for k in (2, 3)]
    assert [(r["metric"], r["k"]) for r in sweep(None, TABLE3_SPEC, 3, metrics="ncp").rows] == [("ncp", 3)]
    gaa = sqlclose.load_spec(TABLE3_SPEC).model_dump()
    gaa["search"] = {"algorithm": "gaa"}
    rows = sweep(None, gaa, [2, 3], strategies=np.array(["S2", "S1"])).rows
    assert [(r["strategy"], r["k"]) for r in rows] == [("S2", 2), ("S2", 3), ("S1", 2), ("S1", 3)]


# ---- the ninety-sixth round ------------------------------------------------------------------

def _table3_spec(algorithm: str = "incognito", **salary) -> dict:
    """Table 3 with one sensitive column (salary, its models ``salary``) and disease an identifier."""
    folder = (REPO / "datasets" / "table3").as_posix()
    return {"identifiers": ["disease"], "source": {"path": f"{folder}/table3.csv"}, "privacy": {"k": 2},
            "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": f"{folder}/age.csv"}},
            "sensitive": {"salary": salary}, "search": {"algorithm": algorithm}}


@pytest.mark.parametrize(("model", "axis", "kept"), [
    ({"recursive": {"c": 3, "l": 2}}, "l (recursive (c, l)-diversity of salary, c = 3)", "salary: recursive c = 3"),
    ({"recursive": {"c": 1.5, "l": 2}}, "l (recursive (c, l)-diversity of salary, c = 1.5)",
     "salary: recursive c = 1.5"),
    ({"entropy_l": 1.5}, "l (entropy l-diversity of salary: least exp(entropy) of a class)", None),
    ({"distinct_l": 2}, "l (distinct l-diversity of salary: least distinct values in a class)", None),
])
def test_an_incognito_l_sweep_names_its_model_and_a_recursive_c(tmp_path, drawn, model, axis, kept):
    """Specs differing only in recursive c = 3 or c = 1.5 (or an entropy or distinct model), swept
    over l, drew the same axis, "l (of salary's l-diversity model)", the same title, and wrote the
    same sweep.csv columns: the model was named nowhere, and c was dropped with the model the sweep
    replaces. Oracle: the spec's own model and c, and sweep.csv read back as text."""
    result = sweep(None, _table3_spec(**model), [2], ls=[1, 2])
    result.charts(tmp_path, ["average_class_size"])
    assert drawn["average_class_size"]["xlabel"] == axis
    title = drawn["average_class_size"]["title"]
    assert (kept in title) if kept else ("salary:" not in title), title
    result.to_csv(tmp_path / "sweep.csv")
    with (tmp_path / "sweep.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    name = next(iter(model)).removesuffix("_l")
    c = model.get("recursive", {}).get("c")
    assert [(r["l"], r["l_model"], r["c"]) for r in rows] == [
        ("1.0", name, "" if c is None else str(float(c))), ("2.0", name, "" if c is None else str(float(c)))]
    if c is not None:  # a sweep over k keeps the whole model, its l too
        sweep(None, _table3_spec(**model), [2, 3]).charts(tmp_path, ["average_class_size"])
        assert f"salary: recursive (c = {c:g}, l = 2)" in drawn["average_class_size"]["title"]


def test_a_gaa_l_sweep_row_names_the_papers_entropy_value():
    """GAA's l is the paper's l-diversity value, exp(entropy) (its axis says so): its rows say
    l_model = entropy, no c."""
    rows = sweep(None, _table3_spec("gaa", t=1.0), [2], ls=[1.5, 2]).rows
    assert [(r["l"], r["l_model"], r["c"]) for r in rows] == [(1.5, "entropy", None), (2.0, "entropy", None)]


@pytest.mark.parametrize("distance, words", [("ordered", "ordered EMD"), ("equal", "equal-distance EMD"),
                                             ("kl", "KL divergence")])
def test_an_incognito_t_sweep_axis_names_the_distance(tmp_path, drawn, distance, words):
    """The t axis said "largest EMD" whatever the distance — of a KL divergence too — and the title
    dropped the replaced t with its distance: two sweeps under ordered and equal EMD looked alike."""
    result = sweep(None, _table3_spec(distance=distance, t=0.9), [2], ts=[0.5, 0.9])
    result.charts(tmp_path, ["average_class_size"])
    assert drawn["average_class_size"]["xlabel"] == f"t (largest {words} of salary allowed)"


def test_sweep_takes_one_name_or_one_number_as_a_list_of_it():
    """metrics="ncp" was read letter by letter (SpecError: unknown metric 'n'), strategies="S3" too
    (unknown GAA strategy 'S'), and ks=5 or ls=2 failed in Python's TypeError. One name is one
    name (as SweepResult.charts takes it), one number one value. Oracle: the parameters the rows
    record, as given."""
    spec = _table3_spec("gaa", t=1.0)
    rows = sweep(None, spec, 3, metrics="ncp", strategies="S3").rows
    assert [(r["k"], r["metric"], r["strategy"]) for r in rows] == [(3, "ncp", "S3")]
    rows = sweep(None, _table3_spec(entropy_l=1.5), 2, ls=2, ts=None).rows
    assert [(r["k"], r["l"]) for r in rows] == [(2, 2.0)]


@pytest.mark.parametrize("ks", [np.array([2, 3]), range(2, 4), (2, 3)], ids=["numpy", "range", "tuple"])
def test_sweep_takes_arrays_and_ranges_as_sequences(ks):
    """ls=np.array([...]) failed in numpy's "truth value of an array is ambiguous" (``ls or []``)."""
    import pandas as pd

    result = sweep(None, _table3_spec(entropy_l=1.5), ks, ls=pd.Series([1.5, 2.0]), ts=np.array([0.9]),
                   metrics=np.array(["ncp"]))
    assert sorted({(r["k"], r["l"], r["t"], r["metric"]) for r in result.rows}) == [
        (2, 1.5, 0.9, "ncp"), (2, 2.0, 0.9, "ncp"), (3, 1.5, 0.9, "ncp"), (3, 2.0, 0.9, "ncp")]


@pytest.mark.parametrize(("keyword", "value", "message"), [
    ("ks", {3: 1}, "ks is a mapping (dict): give a whole number or a list of them, e.g. ks=[3, 5, 10]"),
    ("ls", object, "ls = <class 'object'> is neither a number nor a list of them: give a list, e.g. ls=[2, 3]"),
    ("ks", np.array([True]), "k = np.True_ is not a whole number"),
])
def test_sweep_refuses_what_is_neither_a_value_nor_a_list(keyword, value, message):
    kwargs = {"ks": [2], keyword: value}
    with pytest.raises(InputError, match=re.escape(message)):
        sweep(None, _table3_spec(entropy_l=1.5), **kwargs)


def test_sweep_refuses_a_strategy_that_is_not_text():
    # [1] failed in Python's AttributeError ('int' object has no attribute 'strip')
    with pytest.raises(InputError, match=re.escape("a GAA strategy is named by its text, not 1; choose from S1")):
        sweep(None, _table3_spec("gaa", t=1.0), [2], strategies=[1])


def test_a_sweep_results_files_at_a_path_of_the_wrong_kind_are_refused_writing_nothing(tmp_path):
    """Ninety-sixth round: `SweepResult.charts(folder)` with `folder` an existing file ended in
    Python's FileExistsError from mkdir, a folder under a file in NotADirectoryError, and `to_csv`
    or `nauc_to_csv` of a folder in IsADirectoryError. Each is refused as `Release.write` refuses
    it — a path of the wrong kind `OutputExistsError`, a file in the way above it `EnvironmentFailure`
    (exit 5, as `sqlclose sweep --out FILE/sub`) — and nothing is written (`sqlclose sweep --out
    FILE` is refused as a usage error, exit 2). Oracle: the messages written by hand, and the files
    in tmp_path listed before and after."""
    from sqlclose.errors import EnvironmentFailure, OutputExistsError

    result = sweep(None, TABLE3_SPEC, [2])
    (tmp_path / "afile").write_text("mine", encoding="utf-8")
    (tmp_path / "adir").mkdir()
    afile, adir = tmp_path / "afile", tmp_path / "adir"
    refused = [
        (lambda: result.charts(afile), OutputExistsError,
         f"the chart folder {afile} is a file; the charts need a folder path (each measure is written into it as "
         "<measure>.png)"),
        (lambda: result.charts(afile / "sub", ["discernibility"]), EnvironmentFailure,
         f"cannot create the folder for {afile / 'sub' / 'discernibility.png'}: {afile} is a file"),
        (lambda: result.to_csv(adir), OutputExistsError, f"the output path {adir} is a directory, not a file path"),
        (lambda: result.nauc_to_csv(adir), OutputExistsError,
         f"the output path {adir} is a directory, not a file path"),
        (lambda: result.to_csv(afile / "sweep.csv"), EnvironmentFailure,
         f"cannot create the folder for {afile / 'sweep.csv'}: {afile} is a file"),
    ]
    for write, error, message in refused:
        with pytest.raises(error) as e:
            write()
        assert str(e.value) == message
    run = CliRunner().invoke(main, ["sweep", str(TABLE3_SPEC), "--k", "2", "--out", str(afile)])
    assert run.exit_code == 2 and "is a file" in run.output, run.output
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["adir", "afile"]
    assert afile.read_text(encoding="utf-8") == "mine"


def test_one_numpy_text_given_as_a_list_parameter_is_quoted_as_text():
    """Ninety-sixth round (mend): sweep's list parameters are read by ``text.given_items`` alone, as
    check's names are: one numpy text (``strategies=np.str_("S9")``) was kept as numpy's, and its
    refusal quoted ``np.str_('S9')``, what the caller never typed. Oracle: the name given here."""
    folder = (REPO / "datasets" / "table3").as_posix()
    spec = {"identifiers": ["disease"], "source": {"path": f"{folder}/table3.csv"}, "privacy": {"k": 2},
            "quasi_identifiers": {"zip": {"mask": True}, "age": {"file": f"{folder}/age.csv"}},
            "sensitive": {"salary": {"entropy_l": 1}}, "search": {"algorithm": "gaa"}}
    with pytest.raises(InputError) as raised:
        sweep(None, spec, [2], strategies=np.str_("S9"))
    assert str(raised.value).startswith("unknown GAA strategy 'S9'; choose from "), raised.value
