"""Li et al. (ICDE 2007) section 6, "Similarity Attack", reproduced with sqlclose.

Adult (30,162 rows), the 7 quasi-identifiers of the paper's Figure 2 (age, workclass, education,
native-country, marital-status, race, sex), occupation sensitive, its 14 values split into three
semantic groups (level 1 of the occupation hierarchy). For each privacy model of the paper
(entropy 2-diversity; recursive (4,4)-diversity), with k = 1 and no suppression:

1. Incognito (``sqlclose.anonymize``) finds every minimal satisfying full-domain generalization;
2. each minimal node's table is audited: the similarity attack (classes whose occupations all
   fall in one level-1 group; ``sqlclose.audit.tables.Similarity``) and the homogeneity attack
   (classes with one occupation; ``sqlclose.audit.tables.Homogeneity``).

It runs for two sets of hierarchies: the project's own (datasets/adult/adult.toml) and the ARX
files shipped in ../shared (datasets/adult/adult_arx.toml). Because neither l-diversity model
looks at the sensitive hierarchy, the minimal tables depend on the QI hierarchies only; the
script also audits each set of tables under the *other* occupation grouping, to separate the
effect of the QI hierarchies from that of the grouping.

Unless ``--no-verify``, every figure is checked by two routes independent of the search:
- ``sqlclose.check`` on the materialized table of each minimal node (plain GROUP BY over the
  released, generalized labels — not the search's coded rollups): the model must pass and the
  attack counts must agree;
- a brute force in numpy over the *whole* lattice, from the CSV and the hierarchy files (no
  sqlclose code): the set of satisfying nodes, the minimal ones, and the attack counts must agree.

    python benchmarks/similarity_experiment.py              # Markdown tables
    python benchmarks/similarity_experiment.py --json       # the same as JSON
    python benchmarks/similarity_experiment.py --write-tables out/similarity   # also write each
        # vulnerable minimal table as Parquet, to audit with `sqlclose check`
    python benchmarks/similarity_experiment.py --suppression 0.01   # sensitivity run (not the
        # paper's stated setup): minimal nodes when up to 1 % of records may be suppressed; the
        # attacks are counted on the released (kept) classes only

Not a test: the figures go to docs/similarity.md with the machine they were taken on.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import platform
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

import sqlclose
from sqlclose.audit import tables as audit
from sqlclose.audit.check import check as sqlclose_check
from sqlclose.privacy.criteria import criteria_for, judge
from sqlclose.search.node_runner import NodeRunner

ROOT = Path(__file__).resolve().parent.parent
ADULT_DIR = Path(os.environ.get("SQLCLOSE_ADULT_DIR", ROOT.parent / "shared" / "datasets" / "adult")).resolve()
QIS = ["age", "workclass", "education", "native-country", "marital-status", "race", "sex"]
SENSITIVE = "occupation"

HIERARCHIES = {
    "ours": {"spec": ROOT / "datasets" / "adult" / "adult.toml",
             "occupation": ROOT / "datasets" / "adult" / "hierarchies" / "occupation.csv"},
    "arx": {"spec": ROOT / "datasets" / "adult" / "adult_arx.toml",
            "occupation": ADULT_DIR / "adult_hierarchy_occupation.csv"},
}
MODELS = {
    "entropy 2-diversity": {"entropy_l": 2},
    "recursive (4,4)-diversity": {"recursive": {"c": 4, "l": 4}},
}
PAPER = {  # Li et al. section 6; the paper gives no record count for the recursive tables
    "entropy 2-diversity": {"minimal_tables": 21, "vulnerable_tables": 13, "max_records_in_one_table": 916},
    "recursive (4,4)-diversity": {"minimal_tables": 26, "vulnerable_tables": 17, "max_records_in_one_table": None},
}
ENTROPY_TOLERANCE = 1e-9  # as sqlclose.privacy.TOLERANCE: entropy ≥ log l − tolerance


# ---- the experiment, through sqlclose ------------------------------------------------------

def spec_for(hierarchies: str, model: dict, suppression: float = 0.0) -> dict:
    """The Adult spec with k = 1, no suppression (by default) and the l-diversity model on occupation."""
    data = sqlclose.load_spec(HIERARCHIES[hierarchies]["spec"]).model_dump(exclude={"output"}, exclude_none=True)
    data["privacy"] = {"k": 1, "suppression": suppression}
    data["sensitive"] = {SENSITIVE: {**model, "hierarchy": str(HIERARCHIES[hierarchies]["occupation"])}}
    data["search"] = {**data.get("search", {}), "explore": "lattice"}  # the experiment audits every minimal node
    return data


def run(hierarchies: str, model_name: str, verify: bool, write_dir: Path | None, suppression: float = 0.0) -> dict:
    model = MODELS[model_name]
    started = time.perf_counter()
    release = sqlclose.anonymize(None, spec_for(hierarchies, model, suppression))
    search_seconds = time.perf_counter() - started
    problem = release.problem
    names = [qi.name for qi in problem.qis]
    assert names == QIS, names
    sa = problem.sas[0]
    other = "arx" if hierarchies == "ours" else "ours"
    sa_other = dataclasses.replace(sa, hierarchy=sqlclose.Hierarchy.from_csv(HIERARCHIES[other]["occupation"]))

    started = time.perf_counter()
    full = tuple(range(len(names)))
    criteria = criteria_for(problem.k, problem.sas)
    tables = []
    for named in release.minimal_nodes:
        node = tuple(named[n] for n in names)
        hist = NodeRunner(problem).histograms(full, node, keep=False)
        # Classes failing the model are suppressed (none at 0 % suppression): audit what is released.
        kept = ~judge(hist, criteria, problem.rows, problem.max_suppressed).failing
        matrix, sizes = hist.counts[0][kept], hist.sizes[kept]
        tables.append({
            "node": named,
            "classes": int(kept.sum()),
            "suppressed_rows": int(hist.sizes[~kept].sum()),
            "similarity": _tallied(audit.Similarity(sa, level=1), matrix, sizes),
            "similarity_other_grouping": _tallied(audit.Similarity(sa_other, level=1), matrix, sizes),
            "homogeneity": _tallied(audit.Homogeneity(), matrix, sizes),
        })
    audit_seconds = time.perf_counter() - started

    out = {
        "hierarchies": hierarchies,
        "model": model_name,
        "suppression": suppression,
        "rows": problem.rows,
        "lattice_size": release.search.lattice_size,
        "lattice_shape": dict(zip(names, release.search.shape)),
        "satisfying_nodes": int(release.search.satisfying.sum()),
        "nodes_evaluated": release.search.nodes_evaluated,
        "groups": sa.hierarchy.labels(1),
        "other_grouping": other,
        "tables": tables,
        **summarize(tables, "similarity"),
        "other_grouping_summary": summarize(tables, "similarity_other_grouping"),
        "homogeneity_records_max": max((t["homogeneity"]["records"] for t in tables), default=0),
        "search_seconds": search_seconds,
        "audit_seconds": audit_seconds,
        "paper": PAPER[model_name],
    }
    if verify:
        started = time.perf_counter()
        out["verify_check"] = verify_with_check(release, tables, hierarchies, model)
        out["verify_check_seconds"] = time.perf_counter() - started
    if write_dir is not None:
        out["written"] = write_tables(release, tables, write_dir / f"{hierarchies}-{model_key(model_name)}")
    release.close()
    return out


def summarize(tables: list[dict], key: str) -> dict:
    records = [t[key]["records"] for t in tables]
    return {
        "minimal_tables": len(tables),
        "vulnerable_tables": sum(r > 0 for r in records),
        "max_records_in_one_table": max(records, default=0),
        "total_records": sum(records),
        "vulnerable_classes": sum(t[key]["classes"] for t in tables),
    }


def model_key(model_name: str) -> str:
    return model_name.split()[0]


def released_at(release: sqlclose.Release, named: dict) -> sqlclose.Release:
    """The same release, generalized at another (satisfying) node instead of the optimum."""
    return release.at(named)


def _tallied(attack: audit.Attack, matrix, sizes) -> dict:
    """An attack (``sqlclose.audit.tables``) over one released table's classes."""
    attack.exposed(matrix, sizes)
    return attack.result()


def _counts(attack: dict) -> dict:
    return {key: value for key, value in attack.items() if key != "exposed_classes"}


def verify_with_check(release: sqlclose.Release, tables: list[dict], hierarchies: str, model: dict) -> dict:
    """Materialize each minimal table and audit it with sqlclose.check (plain GROUP BY)."""
    sensitive = {SENSITIVE: {**model, "hierarchy": str(HIERARCHIES[hierarchies]["occupation"])}}
    mismatches = []
    for t in tables:
        table = released_at(release, t["node"]).to_arrow()
        report = sqlclose_check(table, QIS, sensitive, similarity_level=1).to_dict()
        attacks = report["sensitive"][SENSITIVE]["attacks"]
        got = {"rows": report["rows"], "classes": report["classes"], "passed": report["passed"],
               "similarity": _counts(attacks["similarity"]), "homogeneity": _counts(attacks["homogeneity"])}
        want = {"rows": release.problem.rows - t["suppressed_rows"], "classes": t["classes"], "passed": True,
                "similarity": t["similarity"], "homogeneity": t["homogeneity"]}
        if got != want:
            mismatches.append({"node": t["node"], "check": got, "search": want})
    return {"tables": len(tables), "agree": not mismatches, "mismatches": mismatches}


def write_tables(release: sqlclose.Release, tables: list[dict], folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for t in tables:
        if t["similarity"]["records"] == 0:
            continue
        name = "node-" + "".join(str(t["node"][n]) for n in QIS) + ".parquet"
        pq.write_table(released_at(release, t["node"]).to_arrow(), folder / name)
        written.append(str(folder / name))
    return written


# ---- the independent brute force (numpy; no sqlclose code) ---------------------------------

def read_spec_qis(spec_path: Path) -> dict:
    """QI hierarchy sources from a spec TOML: {name: ("bands", widths) | ("file", path)}."""
    import tomllib

    data = tomllib.loads(spec_path.read_text())
    out = {}
    for name, entry in data["quasi_identifiers"].items():
        if isinstance(entry, dict) and "bands" in entry:
            out[name] = ("bands", entry["bands"])
        else:
            path = entry["file"] if isinstance(entry, dict) else entry
            path = path.replace("${SQLCLOSE_ADULT_DIR:-../../../shared/datasets/adult}", str(ADULT_DIR))
            p = Path(path)
            out[name] = ("file", p if p.is_absolute() else (spec_path.parent / p).resolve())
    return out


def read_hierarchy_file(path: Path) -> dict[str, list[str]]:
    rows = [line.split(";") for line in path.read_text().splitlines() if line.strip()]
    return {r[0].strip(): [f.strip() for f in r] for r in rows}


def level_codes(column: pd.Series, source: tuple) -> list[np.ndarray]:
    """Per level, a dense integer code of each row's generalized value (level 0 = the value)."""
    kind, arg = source
    if kind == "bands":
        values = column.to_numpy(dtype=np.int64)
        levels = [values] + [np.floor_divide(values, int(w)) for w in arg] + [np.zeros_like(values)]
    else:
        rows = read_hierarchy_file(arg)
        labels = column.astype(str).map(lambda v: rows[v])
        height = len(next(iter(rows.values())))
        levels = [labels.map(lambda r, i=i: r[i]).to_numpy() for i in range(height)]
    return [pd.factorize(lv)[0].astype(np.int64) for lv in levels]


def brute_force(hierarchies: str, model_name: str, suppression: float = 0.0) -> dict:
    """Every node of the lattice, judged from scratch; the minimal satisfying ones; attacks.

    A node satisfies when the records of the classes failing the model number at most
    floor(suppression × rows) (none at 0 %); its released table keeps the other classes."""
    started = time.perf_counter()
    data = duckdb.sql(f"SELECT * FROM read_csv('{ADULT_DIR / 'adult.csv'}', delim=';', header=true)").df()
    sources = read_spec_qis(HIERARCHIES[hierarchies]["spec"])
    codes = [level_codes(data[name], sources[name]) for name in QIS]
    shape = tuple(len(c) for c in codes)
    occ_rows = {h: read_hierarchy_file(HIERARCHIES[h]["occupation"]) for h in HIERARCHIES}
    domain = sorted(occ_rows[hierarchies])
    sens = pd.Categorical(data[SENSITIVE], categories=domain).codes.astype(np.int64)
    assert (sens >= 0).all()
    model = MODELS[model_name]

    def classes_of(node: tuple) -> tuple[np.ndarray, np.ndarray]:
        key = np.zeros(len(data), dtype=np.int64)
        for c, level in zip(codes, node):
            col = c[level]
            key = key * (int(col.max()) + 1) + col
        _, inverse = np.unique(key, return_inverse=True)
        matrix = np.zeros((int(inverse.max()) + 1, len(domain)))
        np.add.at(matrix, (inverse.ravel(), sens), 1)
        return matrix, matrix.sum(axis=1)

    limit = int(np.floor(np.float64(suppression) * len(data) + 1e-9)) if suppression else 0

    def passing(matrix: np.ndarray) -> np.ndarray:
        if "entropy_l" in model:
            p = matrix / matrix.sum(axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                entropy = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
            return entropy >= np.log(model["entropy_l"]) - ENTROPY_TOLERANCE
        c, ell = model["recursive"]["c"], model["recursive"]["l"]
        r = -np.sort(-matrix, axis=1)
        return r[:, 0] < c * r[:, ell - 1:].sum(axis=1)

    def satisfies(matrix: np.ndarray) -> bool:
        return int(matrix.sum(axis=1)[~passing(matrix)].sum()) <= limit

    def attacks(matrix: np.ndarray, sizes: np.ndarray, grouping: str) -> dict:
        group_of = [occ_rows[grouping][v][1] for v in domain]
        present = matrix > 0
        groups = sorted(set(group_of))
        per_group = np.column_stack([present[:, [g == name for name in group_of]].any(axis=1) for g in groups])
        hit = per_group.sum(axis=1) == 1
        return {"classes": int(hit.sum()), "records": int(sizes[hit].sum())}

    all_nodes = list(itertools.product(*(range(s) for s in shape)))
    ok = np.zeros(shape, dtype=bool)
    for node in all_nodes:
        ok[node] = satisfies(classes_of(node)[0])
    sat = np.array([n for n in all_nodes if ok[n]])
    # minimal: no other satisfying node lies below it (componentwise ≤); no monotonicity assumed
    below = (sat[:, None, :] <= sat[None, :, :]).all(axis=2) & ~np.eye(len(sat), dtype=bool)
    minimal = [tuple(int(v) for v in sat[j]) for j in range(len(sat)) if not below[:, j].any()]
    # monotonicity over this lattice: every node above a satisfying one satisfies too
    monotone = all(ok[tuple(np.minimum(np.array(n) + np.eye(len(shape), dtype=int)[a], np.array(shape) - 1))]
                   for n in map(tuple, sat) for a in range(len(shape)))
    other = "arx" if hierarchies == "ours" else "ours"
    tables = {}
    for node in minimal:
        matrix, sizes = classes_of(node)
        kept = passing(matrix)
        matrix, sizes = matrix[kept], sizes[kept]
        homog = (matrix > 0).sum(axis=1) == 1
        tables[node] = {"classes": int(len(sizes)), "similarity": attacks(matrix, sizes, hierarchies),
                        "similarity_other_grouping": attacks(matrix, sizes, other),
                        "homogeneity": {"classes": int(homog.sum()), "records": int(sizes[homog].sum())}}
    return {"lattice_size": len(all_nodes), "satisfying_nodes": int(ok.sum()), "minimal": tables,
            "monotone": monotone, "seconds": time.perf_counter() - started}


def compare_brute_force(result: dict, brute: dict) -> dict:
    ours = {tuple(t["node"][n] for n in QIS): t for t in result["tables"]}
    problems = []
    if set(ours) != set(brute["minimal"]):
        problems.append({"minimal_nodes_only_sqlclose": sorted(set(ours) - set(brute["minimal"])),
                         "minimal_nodes_only_brute_force": sorted(set(brute["minimal"]) - set(ours))})
    if result["satisfying_nodes"] != brute["satisfying_nodes"]:
        problems.append({"satisfying_nodes": [result["satisfying_nodes"], brute["satisfying_nodes"]]})
    for node in set(ours) & set(brute["minimal"]):
        a, b = ours[node], brute["minimal"][node]
        for key in ("classes", "homogeneity"):
            if a[key] != b[key]:
                problems.append({"node": node, key: [a[key], b[key]]})
        for key in ("similarity", "similarity_other_grouping"):
            mine = {"classes": a[key]["classes"], "records": a[key]["records"]}
            if mine != b[key]:
                problems.append({"node": node, key: [mine, b[key]]})
    return {"agree": not problems, "problems": problems, "monotone": brute["monotone"],
            "lattice_size": brute["lattice_size"], "seconds": brute["seconds"]}


# ---- output --------------------------------------------------------------------------------

SHORT = {"age": "age", "workclass": "wc", "education": "edu", "native-country": "country",
         "marital-status": "marital", "race": "race", "sex": "sex"}


def fmt_paper(value) -> str:
    return "—" if value is None else f"{value:,}"


def markdown(results: list[dict], machine: dict) -> str:
    supp = results[0]["suppression"]
    supp_text = "no suppression" if not supp else \
        f"up to {supp:.2%} of records suppressed (sensitivity run; attacks counted on released classes)"
    lines = [f"Adult, {results[0]['rows']:,} rows; QIs {', '.join(QIS)}; occupation sensitive; k = 1, "
             f"{supp_text}; similarity attack at level 1 of the occupation hierarchy.",
             f"Machine: {machine['cores']} cores, Python {machine['python']}, DuckDB {machine['duckdb']}.",
             "", "## Summary", "",
             "| hierarchies | model | minimal tables | vulnerable | max records in one table | total records "
             "(all tables) | vulnerable classes | homogeneity records | search s | audit s | paper |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        p = r["paper"]
        lines.append(
            f"| {r['hierarchies']} | {r['model']} | {r['minimal_tables']} | {r['vulnerable_tables']} | "
            f"{r['max_records_in_one_table']:,} | {r['total_records']:,} | {r['vulnerable_classes']} | "
            f"{r['homogeneity_records_max']} | {r['search_seconds']:.2f} | {r['audit_seconds']:.2f} | "
            f"{p['vulnerable_tables']} of {p['minimal_tables']}, max {fmt_paper(p['max_records_in_one_table'])} |")
    lines += ["", "## The same minimal tables under the other occupation grouping", "",
              "The l-diversity models ignore the sensitive hierarchy, so the minimal tables depend on the QI "
              "hierarchies alone; only the audit's grouping changes.", "",
              "| QI hierarchies | model | grouping | vulnerable | max records in one table | total records |",
              "|---|---|---|---|---|---|"]
    for r in results:
        for grouping, s in ((r["hierarchies"], r), (r["other_grouping"], r["other_grouping_summary"])):
            lines.append(f"| {r['hierarchies']} | {r['model']} | {grouping} | {s['vulnerable_tables']} of "
                         f"{s['minimal_tables']} | {s['max_records_in_one_table']} | {s['total_records']} |")
    for r in results:
        lines += ["", f"## {r['hierarchies']} hierarchies, {r['model']}", "",
                  f"Lattice {' × '.join(str(v) for v in r['lattice_shape'].values())} = {r['lattice_size']:,} "
                  f"nodes, {r['satisfying_nodes']:,} satisfying, {r['minimal_tables']} minimal; level-1 groups: "
                  f"{'; '.join(r['groups'])}.", "",
                  "| node (" + " ".join(SHORT[n] for n in QIS) + ") | classes | suppressed rows | similarity: "
                  "classes / records (group) | other grouping: classes / records | homogeneity records |",
                  "|---|---|---|---|---|---|"]
        for t in r["tables"]:
            s, o = t["similarity"], t["similarity_other_grouping"]
            by = ", ".join(f"{g}: {n}" for g, n in s["records_by_group"].items())
            lines.append(f"| {' '.join(str(t['node'][n]) for n in QIS)} | {t['classes']} | {t['suppressed_rows']} | "
                         f"{s['classes']} / "
                         f"{s['records']}{f' ({by})' if by else ''} | {o['classes']} / {o['records']} | "
                         f"{t['homogeneity']['records']} |")
        if "verify_check" in r:
            v = r["verify_check"]
            lines.append(f"\nsqlclose.check on each materialized table: "
                         f"{'agrees' if v['agree'] else 'DISAGREES: ' + json.dumps(v['mismatches'])} "
                         f"({v['tables']} tables, {r['verify_check_seconds']:.2f} s).")
        if "verify_brute_force" in r:
            v = r["verify_brute_force"]
            lines.append(f"Brute force over all {v['lattice_size']:,} nodes (numpy, no sqlclose): "
                         f"{'agrees' if v['agree'] else 'DISAGREES: ' + json.dumps(v['problems'], default=str)}; "
                         f"satisfaction monotone over this lattice: {v['monotone']} ({v['seconds']:.1f} s).")
        for path in r.get("written", []):
            lines.append(f"\nwritten: {path}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--no-verify", action="store_true",
                        help="skip the checks by sqlclose.check and by the numpy brute force")
    parser.add_argument("--suppression", type=float, default=0.0, metavar="FRACTION",
                        help="let up to this fraction of records be suppressed (default 0, as the paper "
                             "states no suppression; >0 is a sensitivity run)")
    parser.add_argument("--write-tables", type=Path, metavar="DIR",
                        help="write each vulnerable minimal table as Parquet under DIR/<hierarchies>-<model>/")
    args = parser.parse_args()
    results = []
    for hierarchies in HIERARCHIES:
        for model_name in MODELS:
            r = run(hierarchies, model_name, not args.no_verify, args.write_tables, args.suppression)
            if not args.no_verify:
                r["verify_brute_force"] = compare_brute_force(r, brute_force(hierarchies, model_name,
                                                                             args.suppression))
            results.append(r)
    machine = {"cores": os.cpu_count(), "python": platform.python_version(), "duckdb": duckdb.__version__,
               "platform": platform.platform()}
    if args.json:
        print(json.dumps({"machine": machine, "results": results}, indent=2, default=str))
    else:
        print(markdown(results, machine))
    failed = [r for r in results if not r.get("verify_check", {"agree": True})["agree"]
              or not r.get("verify_brute_force", {"agree": True})["agree"]]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
