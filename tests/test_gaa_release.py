"""GAA releases, re-checked from the written file by independent oracles:

- privacy: classes by a plain SQL GROUP BY over the Parquet file's QI columns, sizes against k,
  each class's sensitive distribution against the input's by the EMD formulas of tests/oracle.py
  (equal, ordered, hierarchical), distinct / entropy / recursive l-diversity and p written here;
- truth: the file equals, as a multiset, the input CSV joined with the release's text mapping,
  and every mapped label is its value or an ancestor in the hierarchy rows read by the oracle;
- utility: every metric's alteration equals a hand cost (the formula of test_utility_search)
  of the input joined with the mapping;
- determinism: two runs write the same bytes.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from oracle import (
    ADULT_AGE_WIDTHS,
    ADULT_HIERARCHIES,
    ADULT_SPEC,
    TABLE3_DIR,
    TABLE3_SPEC,
    Oracle,
    equal_emd,
    hierarchical_emd,
    ordered_emd,
    qid,
    read_hierarchy,
)
from oracle import (
    table3_oracle as make_table3_oracle,
)
from test_utility_search import ADULT_SUBSET_QIS, SEVEN, path_costs

import sqlclose
from sqlclose.errors import NoSolutionError, SpecError

STRATEGIES = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "ldiv", "tclo")
TOL = 1e-12


# ============================================================================ the independent re-check

def file_classes(path, qis, sensitive: str) -> dict[tuple, dict[str, int]]:
    """Class label tuple → {sensitive value as text: count}, by a plain GROUP BY over the file."""
    cols = ", ".join(qid(q) for q in qis)
    rows = duckdb.execute(f"SELECT {cols}, CAST({qid(sensitive)} AS VARCHAR), COUNT(*) FROM read_parquet(?) "
                          "GROUP BY ALL", [str(path)]).fetchall()
    out: dict[tuple, dict[str, int]] = {}
    for r in rows:
        out.setdefault(tuple(r[:len(qis)]), {})[r[-2]] = r[-1]
    return out


def recheck(oracle: Oracle, path, spec: dict) -> None:
    """Every model of the spec, on every class of the written file."""
    qis = oracle.qis
    sizes = duckdb.execute(f"SELECT COUNT(*) FROM read_parquet(?) GROUP BY {', '.join(qid(q) for q in qis)}",
                           [str(path)]).fetchall()
    assert min(s[0] for s in sizes) >= spec["privacy"]["k"]
    assert sum(s[0] for s in sizes) == oracle.N  # GAA suppresses nothing
    for sa in oracle.sas:
        model = spec["sensitive"].get(sa.name)
        if model is None:  # released unchanged, no model
            continue
        classes = file_classes(path, qis, sa.name)
        key = (lambda v: float(v)) if model.get("distance") == "ordered" else (lambda v: v)
        index = {key(v): i for i, v in enumerate(sa.domain)}
        counts = np.zeros((len(classes), len(sa.domain)))
        for c, hist in enumerate(classes.values()):
            for value, n in hist.items():
                counts[c, index[key(value)]] = n
        P = counts / counts.sum(axis=1, keepdims=True)
        q = oracle.q[sa.name]
        if "t" in model:
            name = model.get("distance", "equal")
            d = equal_emd(P, q) if name == "equal" else ordered_emd(P, q) if name == "ordered" else \
                hierarchical_emd(P, q, sa.domain, sa.hierarchy)
            assert d.max() <= model["t"] + TOL, f"{sa.name}: EMD {d.max()} > t = {model['t']}"
        distinct = (counts > 0).sum(axis=1)
        for key_ in ("distinct_l", "p"):
            if key_ in model:
                assert distinct.min() >= model[key_]
        if "entropy_l" in model:
            with np.errstate(divide="ignore", invalid="ignore"):
                h = -np.nansum(np.where(P > 0, P * np.log(P), 0.0), axis=1)
            assert h.min() >= math.log(model["entropy_l"]) - TOL
        if "recursive" in model:
            c, ell = model["recursive"]["c"], model["recursive"]["l"]
            ranked = -np.sort(-counts, axis=1)
            assert (ranked[:, 0] < c * ranked[:, ell - 1:].sum(axis=1)).all()


def recoded(oracle: Oracle, source, delimiter: str, mapping: pa.Table, columns: list[str]) -> str:
    """The input CSV joined with the text mapping, as a query (every column as text)."""
    duckdb.register("gaa_map", mapping)
    by_qi = {q: i for i, q in enumerate(oracle.qis)}
    select = ", ".join(f"m.g{by_qi[c]} AS {qid(c)}" if c in by_qi else f"CAST(src.{qid(c)} AS VARCHAR) AS {qid(c)}"
                       for c in columns)
    on = " AND ".join(f"m.l{i} = CAST(src.{qid(q)} AS VARCHAR)" for i, q in enumerate(oracle.qis))
    return (f"SELECT {select} FROM read_csv('{source}', delim = '{delimiter}', header = true, all_varchar = true) "
            f"src JOIN gaa_map m ON {on}")


def check_truth(oracle: Oracle, path, source, delimiter: str, mapping: pa.Table) -> None:
    columns = [r[0] for r in duckdb.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()]
    written = "SELECT " + ", ".join(f"CAST({qid(c)} AS VARCHAR) AS {qid(c)}" for c in columns) + \
        f" FROM read_parquet('{path}')"
    expected = recoded(oracle, source, delimiter, mapping, columns)
    for a, b in ((written, expected), (expected, written)):
        assert duckdb.execute(f"SELECT COUNT(*) FROM ({a} EXCEPT ALL {b})").fetchall()[0][0] == 0
    for i, q in enumerate(oracle.qis):
        paths = {row[0]: set(row) for row in oracle.rows[q]}
        for leaf, label in zip(mapping.column(f"l{i}").to_pylist(), mapping.column(f"g{i}").to_pylist()):
            assert label in paths[leaf], f"{q}: {label!r} is not {leaf!r} or one of its ancestors"


def hand_alterations(oracle: Oracle, source, delimiter: str, mapping: pa.Table) -> dict[str, float]:
    """Per metric: Σ over input records of cost(value → written label) over the all-root cost."""
    duckdb.register("gaa_map", mapping)
    qis = oracle.qis
    on = " AND ".join(f"m.l{i} = CAST(src.{qid(q)} AS VARCHAR)" for i, q in enumerate(qis))
    pairs = ", ".join(f"m.l{i}, m.g{i}" for i in range(len(qis)))
    rows = duckdb.execute(f"SELECT {pairs}, COUNT(*) FROM read_csv('{source}', delim = '{delimiter}', header = true, "
                          f"all_varchar = true) src JOIN gaa_map m ON {on} GROUP BY ALL").fetchall()
    hs = [len(oracle.rows[q][0]) for q in qis]
    m = len(qis)
    powers = [(h - 1) ** m for h in hs]
    out = {}
    for name in SEVEN:
        w1 = [1 - p / sum(powers) for p in powers]
        w2 = [max(hs) / h for h in hs]
        costs = [path_costs(oracle.rows[q], name, w1[i], w2[i], None) for i, q in enumerate(qis)]
        level = [{(row[0], label): lv for row in oracle.rows[q] for lv, label in reversed(list(enumerate(row)))}
                 for q in qis]  # the lowest level holding the label on the leaf's path
        total = full = 0.0
        for r in rows:
            n = r[-1]
            for i in range(m):
                leaf, label = r[2 * i], r[2 * i + 1]
                total += n * costs[i][leaf][level[i][(leaf, label)]]
                full += n * costs[i][leaf][-1]
        out[name] = total / full * 100 if full else float("nan")
    return out


def run_and_check(oracle: Oracle, spec: dict, source, delimiter: str, tmp_path, strategy: str) -> dict:
    spec = {**spec, "search": {"algorithm": "gaa", "strategy": strategy}}
    with sqlclose.anonymize(source, spec) as release:
        doc = release.write_parquet(tmp_path / f"{strategy}.parquet")
        mapping = release.text_mapping()
        operators = release.summary["utility"]["alteration"]
    path = tmp_path / f"{strategy}.parquet"
    recheck(oracle, path, spec)
    check_truth(oracle, path, source, delimiter, mapping)
    hand = hand_alterations(oracle, source, delimiter, mapping)
    withheld = doc["utility"]["withheld"]
    for name in SEVEN:  # the operator's summary holds every figure; the report those it may publish
        assert operators[name] == pytest.approx(hand[name], rel=1e-9), name
        assert doc["utility"]["alteration"][name] == (None if name in withheld else pytest.approx(hand[name], rel=1e-9))
    assert doc["algorithm"] == "gaa" and doc["gaa"]["strategy"] == strategy and doc["lattice"] is None
    # S1 compares no sensitive values: the report names no column its merges read (sixty-fourth round)
    assert (doc["gaa"]["strategy_column"] is None) == (strategy == "S1")
    assert doc["suppressed_rows"] == 0 and doc["output"]["rows"] == oracle.N
    per_level = {q: sum(g["classes_per_level"].values()) for q, g in doc["generalization"].items()}
    assert set(per_level.values()) == {doc["classes"]}
    return doc


# ============================================================================ Table 3

@pytest.fixture(scope="module")
def table3_oracle() -> Oracle:
    return make_table3_oracle()


def table3_spec(**disease) -> dict:
    spec = sqlclose.load_spec(TABLE3_SPEC).model_dump(exclude={"output", "source"}, exclude_none=True)
    spec["sensitive"]["disease"].update(disease)
    return spec


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_table3_every_strategy_satisfies_the_spec_on_file(table3_oracle, tmp_path, strategy):
    run_and_check(table3_oracle, table3_spec(), TABLE3_DIR / "table3.csv", ",", tmp_path, strategy)


def disease_only(k: int, **models) -> dict:
    spec = table3_spec()
    spec["privacy"]["k"] = k
    spec["sensitive"] = {"disease": {"distance": "hierarchical", "hierarchy": spec["sensitive"]["disease"]["hierarchy"],
                                     **models}}
    spec["others"] = "keep"
    return spec


@pytest.mark.parametrize("models", [{"distinct_l": 4}, {"entropy_l": 3.5}, {"recursive": {"c": 0.5, "l": 2}},
                                    {"p": 4}, {"t": 0.1}])
def test_table3_the_specs_other_models_are_enforced(table3_oracle, tmp_path, models):
    """Models GAA does not know natively (distinct / recursive l, p, EMD t) hold on the file —
    and they bind: k = 2 alone releases a table that violates each of them."""
    plain = {**disease_only(2, distinct_l=1), "search": {"algorithm": "gaa"}}
    with sqlclose.anonymize(TABLE3_DIR / "table3.csv", plain) as release:
        release.write_parquet(tmp_path / "plain.parquet")
    with pytest.raises(AssertionError):
        recheck(table3_oracle, tmp_path / "plain.parquet", disease_only(2, **models))
    run_and_check(table3_oracle, disease_only(2, **models), TABLE3_DIR / "table3.csv", ",", tmp_path, "S1")


def test_table3_an_unreachable_model_fails_closed(tmp_path):
    out = tmp_path / "r.parquet"
    spec = {**table3_spec(distinct_l=7), "search": {"algorithm": "gaa"}}  # disease has 6 values
    with pytest.raises(NoSolutionError, match="whole table as one class"):
        with sqlclose.anonymize(TABLE3_DIR / "table3.csv", spec) as release:
            release.write_parquet(out)
    assert not out.exists()


def test_a_sensitive_strategy_needs_a_sensitive_column():
    spec = table3_spec()
    spec.update(sensitive={}, others="keep", search={"algorithm": "gaa", "strategy": "S2"})
    with pytest.raises(SpecError, match="strategy S2 compares sensitive values"):
        sqlclose.anonymize(TABLE3_DIR / "table3.csv", spec)


def test_gaa_release_is_deterministic(tmp_path):
    spec = {**table3_spec(), "search": {"algorithm": "gaa", "strategy": "S4"}}
    digests = []
    for run in range(2):
        with sqlclose.anonymize(TABLE3_DIR / "table3.csv", spec) as release:
            digests.append(release.write_parquet(tmp_path / f"r{run}.parquet")["output"]["sha256"])
    assert digests[0] == digests[1]


def test_a_gaa_report_renders_and_rechecks(tmp_path):
    from click.testing import CliRunner

    from sqlclose.cli import main

    out = tmp_path / "r.parquet"
    runner = CliRunner()
    made = runner.invoke(main, ["anonymize", str(TABLE3_SPEC), "-o", str(out), "--algorithm", "gaa",
                                "--strategy", "S3", "--no-progress"])
    assert made.exit_code == 0, made.output
    assert "GAA S3" in made.output
    report = tmp_path / "r.parquet.report.json"
    page = runner.invoke(main, ["report", str(report), "--html", str(tmp_path / "p.html")])
    assert page.exit_code == 0, page.output
    html = (tmp_path / "p.html").read_text()
    assert "GAA S3" in html and "The lattice" not in html
    per_level = json.loads(report.read_text())["generalization"]["age"]["classes_per_level"]
    said = ", ".join(f"level {lv}: {n} class{'' if n == 1 else 'es'}" for lv, n in per_level.items())
    assert f"{said} (levels 0–3)" in html  # age.csv: 4 levels
    assert "nllm (chose the release)" in html and "L1 closeness" in html
    against = runner.invoke(main, ["check", str(out), "--against", str(report), "--spec", str(TABLE3_SPEC)])
    assert against.exit_code == 0, against.output
    node = runner.invoke(main, ["anonymize", str(TABLE3_SPEC), "-o", str(tmp_path / "n.parquet"), "--algorithm",
                                "gaa", "--node", "zip=1,age=2"])
    assert node.exit_code == 2 and "no lattice nodes" in node.output
    assert json.loads(report.read_text())["gaa"]["strategy"] == "S3"


@pytest.mark.parametrize("node", ["age=1", "zip=1", "nope=1"])
def test_any_node_given_to_gaa_is_told_gaa_has_none(tmp_path, node):
    """Ninety-fifth round: docs/utility.md promises `--node` with GAA "a clear error, exit 2: a GAA
    release has no lattice nodes"; a node naming some quasi-identifiers (`age=1`) or another name was
    told `node gives no level for 'zip': name a level for every quasi-identifier` (or `node names
    'nope', which is not a quasi-identifier`), advice that leads to the GAA refusal only once
    followed. Any node is told GAA has none, before the data is read, by anonymize, its dry run and
    explain alike (a whole node was already: test_a_dry_run_and_explain_say_gaa_and_refuse_what_its_run_refuses);
    nothing is written (the folder's listing)."""
    from click.testing import CliRunner

    from sqlclose.cli import main

    told = ('sqlclose: error: a GAA release has no lattice nodes: --node and Release.at apply to algorithm = '
            '"incognito"\n')
    spec = _gaa_project(tmp_path)
    for args in (["anonymize", spec], ["anonymize", spec, "--dry-run"], ["explain", spec],
                 ["anonymize", TABLE3_SPEC, "-o", tmp_path / "out" / "r.parquet", "--algorithm", "gaa"]):
        result = CliRunner().invoke(main, [*map(str, args), "--node", node])
        assert (result.exit_code, result.output) == (2, told), (args, result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["age.csv", "disease.csv", "spec.toml", "table3.csv"]


def test_a_node_given_to_gaa_is_told_before_the_source_is_read(tmp_path):
    """Ninety-sixth round: `explain --node` (and `sqlclose.api.plan(…, node=…)`, `sqlclose.anonymize(…,
    node=…)`) with GAA read the source first, then told the node: slow on a big table, and a source
    that cannot be read was told instead of the real mistake (`anonymize --node` was told first). The
    oracle: a spec whose source does not exist (any read fails); every command and call is told GAA
    has no nodes, exit 2 as anonymize's, and without the node the same commands tell the missing
    source (so the node's refusal did come first). Nothing is written."""
    from click.testing import CliRunner

    from sqlclose.cli import main
    from sqlclose.errors import InputError

    told = ('sqlclose: error: a GAA release has no lattice nodes: --node and Release.at apply to algorithm = '
            '"incognito"\n')
    spec = _gaa_project(tmp_path)
    (tmp_path / "table3.csv").unlink()  # the source: gone, as one unreadable
    for args in (["explain", spec], ["explain", spec, "--show-values"], ["anonymize", spec],
                 ["anonymize", spec, "--dry-run"]):
        result = CliRunner().invoke(main, [*map(str, args), "--node", "zip=1,age=2"])
        assert (result.exit_code, result.output) == (2, told), (args, result.output)
        unread = CliRunner().invoke(main, [*map(str, args)])
        assert unread.exit_code != 0 and "table3.csv" in unread.output, (args, unread.output)
    doc = json.loads(CliRunner().invoke(main, ["explain", str(spec), "--node", "age=1", "--json"]).stdout)
    assert (doc["exit_code"], doc["error"]) == (2, told.removeprefix("sqlclose: error: ").rstrip("\n"))
    for call in (sqlclose.api.plan, sqlclose.anonymize):
        with pytest.raises(InputError, match="a GAA release has no lattice nodes"):
            call(tmp_path / "table3.csv", spec, node={"zip": 1, "age": 2})
        with pytest.raises(Exception, match="table3.csv"):  # without the node: the source's own error
            call(tmp_path / "table3.csv", spec)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["age.csv", "disease.csv", "spec.toml"]


def test_the_verifier_rejects_a_label_that_does_not_generalize(table3_oracle, tmp_path):
    """A mapping whose label is not an ancestor of its value fails verification; nothing is written."""
    from sqlclose.errors import VerificationError
    from sqlclose.release.gaa_release import GaaRelease

    spec = {**table3_spec(), "search": {"algorithm": "gaa"}}
    out = tmp_path / "r.parquet"
    with sqlclose.anonymize(TABLE3_DIR / "table3.csv", spec) as release:
        original = GaaRelease._mapping

        def swapped(self):
            table = original(self)
            labels = table.column("q0_label").to_pylist()
            labels[0] = "4790*" if labels[0] != "4790*" else "4767*"  # a ZIP prefix the value does not have
            return table.set_column(table.schema.get_field_index("q0_label"), "q0_label", pa.array(labels))

        GaaRelease._mapping = swapped
        try:
            with pytest.raises(VerificationError, match="neither the value nor one of its ancestors"):
                release.write_parquet(out)
        finally:
            GaaRelease._mapping = original
    assert not out.exists()


# ============================================================================ an Adult subset


@pytest.fixture(scope="module")
def adult_oracle(adult_subset) -> Oracle:
    qis = {"age": None, **{q: read_hierarchy(ADULT_HIERARCHIES / f"{q}.csv") for q in ADULT_SUBSET_QIS[1:]}}
    return Oracle(adult_subset, ";", qis, {"occupation": "categorical"},
                  {"occupation": read_hierarchy(ADULT_HIERARCHIES / "occupation.csv")}, age_widths=ADULT_AGE_WIDTHS)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_adult_subset_every_strategy_satisfies_the_spec_on_file(adult_oracle, adult_subset, tmp_path, strategy):
    d = sqlclose.load_spec(ADULT_SPEC).model_dump(exclude={"output", "source"}, exclude_none=True)
    d["quasi_identifiers"] = {q: d["quasi_identifiers"][q] for q in ADULT_SUBSET_QIS}
    d["others"] = "drop"
    d["sensitive"]["occupation"].update(t=0.3, entropy_l=2)
    run_and_check(adult_oracle, d, adult_subset, ";", tmp_path, strategy)


def test_check_reports_the_utility_a_file_gives(table3_oracle, tmp_path):
    """sqlclose check on a GAA file: the paper's l-diversity and L1 values per sensitive column and
    the shares of generalized / root values, against plain SQL over the file."""
    spec = {**table3_spec(), "search": {"algorithm": "gaa", "strategy": "S5"}}
    path = tmp_path / "r.parquet"
    with sqlclose.anonymize(TABLE3_DIR / "table3.csv", spec) as release:
        release.write_parquet(path)
    got = sqlclose.check(path, spec=TABLE3_SPEC, reference=TABLE3_DIR / "table3.csv").to_dict()["utility"]
    for sa in table3_oracle.sas:
        classes = list(file_classes(path, table3_oracle.qis, sa.name).values())
        key = float if sa.name == "salary" else str
        ldiv, l1 = [], []
        for hist in classes:
            n = sum(hist.values())
            p = {key(v): c / n for v, c in hist.items()}
            ldiv.append(math.exp(-sum(x * math.log(x) for x in p.values())))
            l1.append(sum(abs(p.get(key(v), 0.0) - table3_oracle.q[sa.name][i]) for i, v in enumerate(sa.domain)))
        assert got["sensitive"][sa.name]["l_diversity"] == pytest.approx(min(ldiv))
        assert got["sensitive"][sa.name]["l1_closeness"] == pytest.approx(max(l1))
    shares = []
    for q in table3_oracle.qis:
        rows = table3_oracle.rows[q]
        leaves, top = {r[0] for r in rows}, rows[0][-1]
        values = [r[0] for r in duckdb.execute(f"SELECT CAST({qid(q)} AS VARCHAR) FROM read_parquet(?)",
                                              [str(path)]).fetchall()]
        generalized = 100 * sum(v not in leaves for v in values) / len(values)
        root = 100 * sum(v == top for v in values) / len(values)
        assert got["quasi_identifiers"][q] == pytest.approx({"generalized_percent": generalized, "root_percent": root})
        shares.append((generalized, root))
    assert got["generalized_percent"] == pytest.approx(sum(s[0] for s in shares) / 2)


def test_anonymize_takes_a_strategy_in_any_case_as_sweep_does(tmp_path):
    # `sqlclose sweep --strategies s3` ran S3 but `sqlclose anonymize --strategy s3` (and a spec's
    # strategy = "s3") was refused; metric names were already taken in any case.
    from click.testing import CliRunner

    from sqlclose.cli import main
    from sqlclose.model.spec import Search

    assert Search.model_validate({"algorithm": "gaa", "strategy": "s3"}).strategy == "S3"
    assert Search.model_validate({"algorithm": "gaa", "strategy": " LDIV "}).strategy == "ldiv"
    folder = TABLE3_DIR.as_posix()
    spec = tmp_path / "gaa.toml"
    spec.write_text(f'identifiers = ["disease"]\n[source]\npath = "{folder}/table3.csv"\n[privacy]\nk = 3\n'
                    f'[quasi_identifiers]\nzip = {{ mask = true }}\nage = {{ file = "{folder}/age.csv" }}\n'
                    '[sensitive.salary]\nentropy_l = 1\n[search]\nalgorithm = "gaa"\n', encoding="utf-8")
    run = CliRunner().invoke(main, ["anonymize", str(spec), "--strategy", "s3", "-o", str(tmp_path / "r.parquet"),
                                    "--json", "--no-progress"])
    assert run.exit_code == 0, run.output
    assert json.loads(run.output)["gaa"]["strategy"] == "S3"
    bad = CliRunner().invoke(main, ["anonymize", str(spec), "--strategy", "s9", "-o", str(tmp_path / "x.parquet")])
    assert bad.exit_code == 2 and "'S1', 'S2'" in bad.output


def test_a_label_naming_two_groups_at_two_levels_is_refused_for_gaa(tmp_path):
    """GAA writes a column's values at several levels side by side: a label that is a leaf ('x')
    and also the parent of other leaves ('x' over 'x' and 'a') made two classes one in the file,
    and the re-check refused the release (exit 4) after the search (the forty-sixth round's red
    team). Now refused before the search, naming the file's line and the label; Incognito, which
    releases one level of a column, takes the hierarchy as it is (the written file, grouped, has
    classes of at least k)."""
    (tmp_path / "h.csv").write_text("x;x;*\na;x;*\nb;y;*\nc;y;*\n", encoding="utf-8")
    rows = pa.table({"h": ["x", "x", "a", "a", "b", "b", "c", "c", "x", "a"],
                     "z": ["1", "2", "1", "2", "1", "2", "1", "2", "1", "2"]})
    spec = {"k": 2, "quasi_identifiers": {"h": {"file": str(tmp_path / "h.csv")}, "z": {"tree": {"*": ["1", "2"]}}}}
    with pytest.raises(sqlclose.HierarchyError) as raised:
        with sqlclose.anonymize(rows, {**spec, "search": {"algorithm": "gaa", "metric": "ncp"}}):
            pass
    said = str(raised.value)
    assert f"{tmp_path / 'h.csv'}, line 1: label 'x' names 'x' at level 0 and 'x', 'a' at level 1" in said
    assert "give one of them another label" in said
    with sqlclose.anonymize(rows, spec) as release:
        release.write_parquet(tmp_path / "r.parquet")
    smallest = duckdb.sql(f"SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM '{tmp_path / 'r.parquet'}' GROUP BY h, z)")
    assert smallest.fetchall()[0][0] >= 2


@pytest.mark.parametrize("rule, stand_in", [({"mask": True, "length": 5}, "*****"), ({"bands": [5, 10]}, "*")],
                         ids=["mask", "bands"])
def test_the_top_label_as_null_stand_in_is_refused_for_gaa_naming_null_value(tmp_path, rule, stand_in):
    """Review rv13 #9. A NULL stand-in equal to a rule's top label is the stand-in's whole branch (it
    is its leaf and the top): GAA, which writes several levels of a column side by side, would write
    the rows with no value and those generalized to the top as one class, so it refuses; but it said
    'mask rule for column 'v', row 1: label …; give one of them another label': a row of a rule that
    has no rows, and not a word of null_value, the one setting to change. Now the rule is named
    without a row and the message names null_value and what to choose. Incognito, which releases one
    level, takes it (docs/spec.md, NULLs): the written file, grouped, has classes of at least k."""
    values = ["47677", "47678", None, None, "47602", "47602"] if "mask" in rule else ["5", "6", None, None, "7", "8"]
    rows = pa.table({"v": values, "s": ["x", "y", "x", "y", "x", "y"]})
    spec = {"k": 2, "quasi_identifiers": {"v": {**rule, "nulls": "value", "null_value": stand_in}},
            "sensitive": {"s": {"distinct_l": 2}}}
    with pytest.raises(sqlclose.HierarchyError) as raised:
        with sqlclose.anonymize(rows, {**spec, "search": {"algorithm": "gaa", "metric": "ncp"}}):
            pass
    said = str(raised.value)
    kind = next(iter(rule))
    assert said.startswith(f"hierarchy of column 'v': {kind} rule for column 'v': label '{stand_in}' names "), said
    assert "row 1" not in said and f"null_value {stand_in!r} is" in said and 'null_value = "NULL"' in said, said
    # A rule's leaves are the rows' values, which an error names none of (the eighty-fourth round's
    # review found '47602', '47677' … listed here).
    assert not [v for v in values if v is not None and repr(v) in said], said
    with sqlclose.anonymize(rows, spec) as release:
        release.write_parquet(tmp_path / "r.parquet")
    smallest = duckdb.sql(f"SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM '{tmp_path / 'r.parquet'}' GROUP BY v)")
    assert smallest.fetchall()[0][0] >= 2


def test_anonymize_with_gaa_says_in_a_log_that_it_runs_and_nothing_of_how_far(tmp_path, monkeypatch):
    """``sqlclose anonymize`` with GAA printed nothing until GAA was done (on 150 k admissions: over
    half an hour of silence). In a log (stderr not a terminal) it now says when GAA started and, at
    fixed marks, how long it has run (tests/test_cli.py); the share merged and the time left it
    drew there are facts of the raw combinations, drawn on a terminal only. Reports made at every
    merge give the one line. The oracle: the run succeeded (GAA reported), no share nor count said."""
    from click.testing import CliRunner

    import sqlclose.search.gaa as gaa_module
    from sqlclose.cli import main

    monkeypatch.setattr(gaa_module, "_PROGRESS_EVERY", 0.0)
    made = CliRunner().invoke(main, ["anonymize", str(TABLE3_SPEC), "-o", str(tmp_path / "r.parquet"),
                                     "--algorithm", "gaa", "--strategy", "S3"])
    assert made.exit_code == 0, made.output
    lines = [line.split(" ", 1)[1] for line in made.output.splitlines() if " search: " in line]
    assert lines == ["search: GAA started"]



def _gaa_project(folder, suppression: float = 0.0, sensitive: bool = True, strategy: str = "S3"):
    """Table 3 and its hierarchies in ``folder``, with a spec run by GAA."""
    folder.mkdir(exist_ok=True)
    for name in ("table3.csv", "age.csv", "disease.csv"):
        (folder / name).write_bytes((TABLE3_DIR / name).read_bytes())
    models = ('[sensitive.disease]\ndistance = "hierarchical"\nt = 0.3\nhierarchy = "disease.csv"\n' if sensitive
              else "")
    (folder / "spec.toml").write_text(
        f'others = "keep"\n[source]\npath = "table3.csv"\n[output]\npath = "out/release.parquet"\n'
        f'[privacy]\nk = 3\nsuppression = {suppression}\n[quasi_identifiers]\nzip = {{ mask = true, length = 5 }}\n'
        f'age = {{ file = "age.csv" }}\n{models}[search]\nalgorithm = "gaa"\nstrategy = "{strategy}"\n')
    return folder / "spec.toml"


@pytest.fixture(scope="module")
def gaa_written(tmp_path_factory) -> Callable[[str], tuple[Path, Path]]:
    """Table 3 released by ``sqlclose anonymize`` from ``_gaa_project``'s spec, once per strategy for
    the tests below that check edited copies of its report: (the spec, the release)."""
    from click.testing import CliRunner

    from sqlclose.cli import main

    written: dict[str, tuple[Path, Path]] = {}

    def of(strategy: str) -> tuple[Path, Path]:
        if strategy not in written:
            spec = _gaa_project(tmp_path_factory.mktemp(f"gaa_{strategy}"), strategy=strategy)
            assert CliRunner().invoke(main, ["anonymize", str(spec), "--no-progress"]).exit_code == 0
            written[strategy] = spec, spec.parent / "out" / "release.parquet"
        return written[strategy]

    return of


def test_a_dry_run_and_explain_say_gaa_and_refuse_what_its_run_refuses(tmp_path):
    """Review of the sixty-fourth round: `--dry-run` and `explain` described an Incognito run for a
    GAA spec (the lattice's size, the release query at the bottom node, a suppression limit GAA
    never uses) and passed what the run then refused before its search: a strategy comparing
    sensitive values without one, a hierarchy label at two levels, `--node`. The oracle: the real
    run's exit and message, and the settings as the spec writes them."""
    from click.testing import CliRunner

    from sqlclose.cli import main

    def run(*args):
        return CliRunner().invoke(main, [str(a) for a in args])

    spec = _gaa_project(tmp_path / "a", suppression=0.1)
    plan = json.loads(run("explain", spec, "--json").output)
    assert plan["search"] == {"algorithm": "gaa", "strategy": "S3", "scope": "table", "metric": "nllm"}
    assert plan["lattice_size"] is None and plan["release_node"] is None and plan["sql"]["release"] is None
    shown = run("explain", spec, "--show-values").output  # the SQL's part, on the operator's screen
    assert "search     GAA, multidimensional recoding over 2 quasi-identifiers (no lattice): strategy S3" in shown
    assert "lattice of" not in shown and "it exists only after the search" in shown
    dry = run("anonymize", spec, "--dry-run").output  # the limit said unused, as the release's report says it
    assert "k = 3, no record suppressed (GAA)" in dry
    assert ("warning    GAA does not suppress records: the suppression limit (0.1) was not used; every input row "
            "is released") in dry
    for command in (["explain", spec], ["anonymize", spec, "--dry-run"]):
        done = run(*command, "--node", "zip=1,age=1")
        assert done.exit_code == 2 and "a GAA release has no lattice nodes" in done.output, done.output
    # what the run refuses before its search, the dry run refuses alike
    spec = _gaa_project(tmp_path / "b", sensitive=False)
    runs = [run("anonymize", spec, "--no-progress", *args) for args in (["--dry-run"], [])]
    assert [r.exit_code for r in runs] == [2, 2] and runs[0].output == runs[1].output
    assert "GAA strategy S3 compares sensitive values" in runs[0].output
    spec = _gaa_project(tmp_path / "c")
    age = tmp_path / "c" / "age.csv"
    age.write_text(age.read_text().replace("22;2*;<40;*\n27;2*;<40;*", "22;22;<40;*\n27;22;<40;*"))
    runs = [run("anonymize", spec, "--no-progress", *args) for args in (["--dry-run"], [])]
    assert [r.exit_code for r in runs] == [2, 2] and runs[0].output == runs[1].output
    assert "GAA releases a column's values at several levels side by side" in runs[0].output
    assert not any((tmp_path / f / "out").exists() for f in "abc")


def _oracle_classes_per_level(path) -> dict[str, dict[str, int]]:
    """Per QI of Table 3, the classes of the written file at each level: zip's level is its number
    of mask characters (a 5-digit code), age's the column of age.csv that holds its label."""
    age_levels = {}
    for line in (TABLE3_DIR / "age.csv").read_text().splitlines():
        for level, label in enumerate(line.split(";")):
            age_levels.setdefault(label, set()).add(level)
    assert all(len(levels) == 1 for levels in age_levels.values())  # one level per label: the count is exact
    classes = duckdb.sql(f"SELECT DISTINCT zip, age FROM read_parquet('{path}')").fetchall()
    out: dict[str, dict[str, int]] = {"zip": {}, "age": {}}
    for zip_, age in classes:
        for name, level in (("zip", zip_.count("*")), ("age", next(iter(age_levels[age])))):
            out[name][str(level)] = out[name].get(str(level), 0) + 1
    return out


@pytest.mark.parametrize("edit, field", [
    (lambda g: g["zip"].update(classes_per_level={"0": 2}), "generalization.zip.classes_per_level.0"),
    (lambda g: g["age"].update(classes_per_level={"1": 1, "2": 1}), "generalization.age.classes_per_level.1"),
    (lambda g: g["zip"].update(at_top=True), "generalization.zip.at_top"),
    (lambda g: g["age"].update(levels=9), "generalization.age.levels: the report says 9, the column's hierarchy has 4"),
    (lambda g: g["age"].update(classes_per_level={"2": 3}), "the report's counts add up to 3 classes"),
])
def test_a_gaa_reports_classes_per_level_are_checked_against_the_file(tmp_path, gaa_written, edit, field):
    """Review of the sixty-fourth round: `check --against` (with the spec) and the sign-off page
    vouched for a GAA report's generalization claims edited — zip's classes all at level 0 over a
    file holding 476** and 4790*, zip at its top, age of 9 levels — since every per-column check
    skipped a column without one level. Now each column's classes per level must add up to the
    classes, agree with at_top and the hierarchy's levels, and with the level of each class's label
    in the file. The oracle: the classes per level counted here from the file and the hierarchies."""
    from click.testing import CliRunner

    from sqlclose.cli import main

    spec, out = gaa_written("S3")
    doc = json.loads(out.with_name("release.parquet.report.json").read_text())
    assert {name: g["classes_per_level"] for name, g in doc["generalization"].items()} == \
        _oracle_classes_per_level(out)
    edit(doc["generalization"])
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    checked = CliRunner().invoke(main, ["check", str(out), "--against", str(edited), "--spec", str(spec)])
    assert checked.exit_code == 4 and field in checked.output, checked.output
    page = CliRunner().invoke(main, ["report", str(edited), "--html", str(tmp_path / "p.html"), "--spec", str(spec)])
    assert page.exit_code == 4 and field in page.output and not (tmp_path / "p.html").exists()
    # Without the spec, zip's mask rule is unknown: its classes per level are not checked, and the
    # page says so where it would vouch for them (the other claims are checked still).
    page = CliRunner().invoke(main, ["report", str(edited), "--html", str(tmp_path / "p.html")])
    if "zip.classes" in field:
        assert page.exit_code == 0, page.output
        assert "the level of column &#x27;zip&#x27; was not checked" in (tmp_path / "p.html").read_text()
    else:
        assert page.exit_code == 4 and field in page.output and not (tmp_path / "p.html").exists()


def test_gaa_beyond_the_memory_limit_is_refused_before_it_runs(tmp_path):
    """Review of the sixty-fourth round: GAA read none of the memory limit (1 M combinations grew a
    job given --memory-limit 600MB to 1.3 GB). Now its structures are sized before it runs, and a
    job they cannot fit is refused, dry run alike (exit 5), saying the least limit in a 1-2-5 step
    and not the count of distinct combinations (it tells whether rows share their raw values). The
    oracle: the advised limit passes the same check; nothing is written."""
    from click.testing import CliRunner

    from sqlclose.cli import main

    draw = random.Random(3)
    rows = [f"{i % 100},{i:05d},{draw.choice(['flu', 'cold', 'x', 'y'])}" for i in range(100_000)]
    (tmp_path / "p.csv").write_text("age,zip,disease\n" + "\n".join(rows) + "\n")
    spec = tmp_path / "s.toml"
    spec.write_text('[source]\npath = "p.csv"\n[output]\npath = "out.parquet"\n[privacy]\nk = 3\n'
                    '[quasi_identifiers]\nage = { bands = [10, 20], domain = [0, 100] }\n'
                    'zip = { mask = true, length = 5 }\n'
                    '[sensitive.disease]\ndistinct_l = 2\n[search]\nalgorithm = "gaa"\n')
    for args in (["--dry-run"], []):
        done = CliRunner().invoke(main, ["anonymize", str(spec), "--memory-limit", "200MB", "--threads", "1",
                                         "--no-progress", *args])
        assert done.exit_code == 5, done.output
        assert "GAA's structures for this table's distinct quasi-identifier combinations need more" in done.output
        assert "100000" not in done.output and "100,000" not in done.output
    advised = re.search(r"to at least ([0-9,]+ [MG]B)", done.output).group(1).replace(" ", "").replace(",", "")
    enough = CliRunner().invoke(main, ["anonymize", str(spec), "--memory-limit", advised, "--threads", "1",
                                       "--dry-run"])
    assert enough.exit_code == 0, enough.output
    assert not (tmp_path / "out.parquet").exists()


def test_a_gaa_release_lists_no_minimal_nodes_and_an_at_copy_keeps_its_own_timings(tmp_path):
    """Review of the sixty-fourth round: a GAA release's ``minimal_nodes`` was ``[]``, which reads as
    "no node satisfies" (None is what a release says when it decided no lattice); and a release's
    ``at()`` copy shared its timings, so writing the copy put its verify time in the original's."""
    spec = {**table3_spec(), "search": {"algorithm": "gaa"}}
    with sqlclose.anonymize(TABLE3_DIR / "table3.csv", spec) as release:
        assert release.minimal_nodes is None
    with sqlclose.anonymize(TABLE3_DIR / "table3.csv", {**table3_spec(), "search": {"explore": "lattice"}}) as release:
        copy = release.at(release.minimal_nodes[0])
        copy.write_parquet(tmp_path / "copy.parquet")
        assert "verify_seconds" in copy.timings and "verify_seconds" not in release.timings


def _oracle_shares(path) -> tuple[float, float, float, float]:
    """p_gen and p_root of Table 3's GAA file, worked from its rows: zip's level is its number of
    mask characters (5 of 5 its top), age's the column of age.csv holding its label (3 its top); and
    the bounds of p_gen without the spec, where zip's levels are unknown (any share of its rows)."""
    age_level = {label: level for line in (TABLE3_DIR / "age.csv").read_text().splitlines()
                 for level, label in enumerate(line.split(";"))}
    rows = duckdb.sql(f"SELECT zip, age FROM read_parquet('{path}')").fetchall()
    zip_gen = sum(z.count("*") > 0 for z, _ in rows)
    age_gen = sum(age_level[a] > 0 for _, a in rows)
    root = sum(z.count("*") == 5 for z, _ in rows) + sum(age_level[a] == 3 for _, a in rows)
    values = 2 * len(rows)
    return (100 * (zip_gen + age_gen) / values, 100 * root / values, 100 * age_gen / values,
            100 * (age_gen + len(rows)) / values)


@pytest.mark.parametrize("strategy", ["S1", "S3"])
def test_a_gaa_reports_shares_are_held_to_the_files_labels(tmp_path, gaa_written, strategy):
    """The eighty-seventh round's review: a GAA report's generalized_percent (26.8 → 0 or 100) and
    root_percent (7.4 → 0) passed `check --against`, with the spec too. Now the file's labels decide
    them (bounded where a label could stand at two levels, or a column's levels are unknown: a mask
    without the spec). The oracle: the shares worked from the written rows and the hierarchies."""
    from click.testing import CliRunner

    from sqlclose.cli import main

    spec, out = gaa_written(strategy)
    doc = json.loads(out.with_name("release.parquet.report.json").read_text())
    generalized, root, low, high = _oracle_shares(out)
    assert doc["utility"]["generalized_percent"] == pytest.approx(generalized, rel=1e-12)
    assert doc["utility"]["root_percent"] == pytest.approx(root, rel=1e-12, abs=1e-12)

    def checked(key, value, *spec_given):
        edited = json.loads(json.dumps(doc))
        edited["utility"][key] = value
        (tmp_path / "edited.json").write_text(json.dumps(edited))
        return CliRunner().invoke(main, ["check", str(out), "--against", str(tmp_path / "edited.json"), *spec_given])

    assert checked("generalized_percent", generalized, "--spec", str(spec)).exit_code == 0
    for key, value in (("generalized_percent", generalized + 10 if generalized < 90 else generalized - 10),
                       ("root_percent", root + 5)):
        result = checked(key, value, "--spec", str(spec))
        assert result.exit_code == 4 and f"utility.{key}: the report says {value:g}" in result.output, result.output
    outside = high + 1 if high < 99 else low - 1  # without the spec zip may hold any share
    result = checked("generalized_percent", outside)
    assert result.exit_code == 4 and f"the file's labels make between {low:g} and {high:g}" in result.output, \
        result.output
    assert checked("generalized_percent", (low + high) / 2).exit_code == 0  # within what the file can tell
