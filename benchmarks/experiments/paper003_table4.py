"""Mauger et al. (2023), section 4.3 and Table 4, on Adult: GAA with the seven strategies
(metric NLLM) for k in {3, …, 15000}; per k-anonymous table its alteration for NLLM, l-diversity
value and t-closeness value (L1); NAUC on [3, 15000] as the paper turns it into percentages.

Real data (4.3.2): Age, then Marital status, as the sensitive attribute (the other eight
attributes as QIs), in the paper's table scope and in the class-scope variant (docs/utility.md).
Simulated data (4.3.3): sensitive columns of 5…500 values, uniform, geometric or standard normal,
generated in SQL from a hash of each row (fixed seed) and added to Adult's nine QIs.

    python benchmarks/experiments/paper003_table4.py [--out DIR] [--real age,marital-status]
        [--scopes table,class] [--simulated 5,50,500 | all | none] [--strategies S1,…,S7]

Writes DIR/<config>-<scope>/ (sweep.csv, nauc.csv, charts) and DIR/table4.md (default DIR:
benchmarks/data/experiments/paper003_table4).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ADULT, DEFAULT_OUT, NINE, adult_spec, hierarchy, markdown_table, out_folder  # noqa: E402

from sqlclose.sweep import SweepResult, sweep  # noqa: E402

KS_REAL = [3, 4, 5, 10, 20, 100, 250, 500, 1000, 2000, 5000, 10000, 15000]
KS_SIMULATED = [3, 4, 5, 10, 20, 100, 250, 500, 1000, 2000, 5000]
STRATEGIES = ["S1", "S2", "S3", "S4", "S5", "S6", "S7"]
SIZES = [5, 10, 20, 50, 100, 200, 500]
DISTRIBUTIONS = ["uniform", "geometric", "normal"]
SEED = 20231  # the simulated columns' hash seed
MEASURES = {"alteration": "alteration NLLM", "l_diversity": "l-diversity value", "l1_closeness": "t-closeness value"}
# Table 4 (NLLM), Adult rows: NAUC on [3, 15000] per strategy (alteration, l-diversity %, t-closeness × 100).
PAPER = {
    "age": {"S4": (69.71, 86.65, 17.44), "S2": (70.07, 82.22, 20.13), "S1": (71.19, 83.35, 17.63),
            "S7": (79.46, 90.41, 12.14), "S3": (88.02, 94.9, 7.15), "S6": (89.77, 96.29, 4.65),
            "S5": (99.6, 98.56, 1.36)},
    "marital-status": {"S4": (72.92, 66.77, 24.48), "S2": (73.37, 72.64, 24.99), "S1": (76.58, 73.97, 20.69),
                       "S7": (83.35, 94.01, 4.95), "S3": (90.43, 89.46, 9.4), "S6": (92.45, 93.85, 3.7),
                       "S5": (99.28, 97.85, 1.2)},
}


def simulated_source(folder: Path, sizes: list[int]) -> Path:
    """Adult's nine attributes plus one column per (distribution, size), drawn in SQL: u = a hash
    of the row's values and its rank among identical rows (so any scan order gives the same
    table), with a fixed seed. uniform: ⌊u·m⌋; geometric (p = min(½, 4/m)): ⌊ln(1−u)/ln(1−p)⌋
    capped at m−1; standard normal (Box–Muller) cut into m equal bins over [−3, 3], clamped."""
    path = folder / "adult_simulated.parquet"
    if path.exists():
        return path
    columns = ", ".join(f'"{c}"' for c in NINE)
    draws = []
    for m in sizes:
        p = min(0.5, 4.0 / m)
        draws += [f"'v' || lpad(CAST(LEAST({m - 1}, CAST(floor(u1 * {m}) AS BIGINT)) AS VARCHAR), 3, '0') "
                  f"AS uniform_{m}",
                  f"'v' || lpad(CAST(LEAST({m - 1}, CAST(floor(ln(1 - u1) / ln({1 - p})) AS BIGINT)) AS VARCHAR), 3, "
                  f"'0') AS geometric_{m}",
                  f"'v' || lpad(CAST(GREATEST(0, LEAST({m - 1}, CAST(floor((sqrt(-2 * ln(u2)) * cos(2 * pi() * u1) "
                  f"+ 3) / 6 * {m}) AS BIGINT))) AS VARCHAR), 3, '0') AS normal_{m}"]
    sql = f"""
        COPY (
          WITH rows AS (SELECT {columns} FROM read_csv($path, delim = ';', header = true, all_varchar = true)),
          keyed AS (SELECT *, hash({columns}, row_number() OVER (PARTITION BY {columns})) AS h FROM rows),
          drawn AS (SELECT *, (hash(h, $seed) % 1000000007) / 1000000007.0 AS u1,
                              ((hash(h, $seed + 1) % 1000000007) + 1) / 1000000008.0 AS u2 FROM keyed)
          SELECT {columns}, {', '.join(draws)} FROM drawn ORDER BY h
        ) TO '{path}' (FORMAT parquet)"""
    with duckdb.connect() as con:
        con.execute(sql, {"path": str(ADULT), "seed": SEED})
    return path


def run(name: str, spec: dict, ks: list[int], strategies: list[str], folder: Path,
        charts: bool = True) -> tuple[SweepResult, float]:
    started = time.perf_counter()
    result = sweep(None, spec, ks, strategies=strategies,
                   on_progress=lambda p: p.done % len(ks) == 0 and print(
                       f"  {name}: {p.label.split(' k=')[0]} done, {p.elapsed:.0f} s", flush=True))
    seconds = time.perf_counter() - started
    folder.mkdir(parents=True, exist_ok=True)
    result.to_csv(folder / "sweep.csv")
    result.nauc_to_csv(folder / "nauc.csv")
    if charts:
        result.charts(folder, list(MEASURES))
    return result, seconds


def naucs(result: SweepResult) -> dict[str, dict[str, float]]:
    """strategy → measure → the paper's NAUC percentage over the whole k range."""
    return from_rows(result.nauc())


def from_rows(rows) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["measure"] in MEASURES:
            out.setdefault(row["strategy"], {})[row["measure"]] = float(row["nauc_percent"])
    return out


def simulated_report(folder: Path, scope: str) -> str:
    """The ranking tables from the configurations already written (their nauc.csv files)."""
    import csv

    table = {}
    for m in SIZES:
        for dist in DISTRIBUTIONS:
            path = folder / f"{dist}_{m}-{scope}" / "nauc.csv"
            if path.exists():
                with path.open(newline="", encoding="utf-8") as f:
                    table[f"{dist}_{m}"] = from_rows(csv.DictReader(f))
    return simulated_section(table, scope, float("nan")) if table else ""


def real_section(sa: str, scope: str, values: dict, seconds: float) -> str:
    paper = PAPER[sa]
    header = ["strategy"] + [f"{label} {who}" for label in MEASURES.values() for who in ("ours", "paper")]
    rows = []
    for s in sorted(values, key=lambda s: values[s]["alteration"]):
        printed = paper.get(s, (None, None, None))  # ldiv / tclo: the paper gives no NAUC
        rows.append([s] + [x for i, m in enumerate(MEASURES) for x in (values[s][m], printed[i])])
    text = f"\n### Adult, {sa} sensitive, {scope} scope ({seconds:.0f} s)\n\n" + markdown_table(header, rows)
    order = {m: " < ".join(sorted(values, key=lambda s: values[s][m])) for m in MEASURES}
    text += "".join(f"- {label} ranks (ascending): ours {order[m]}; paper "
                    f"{' < '.join(sorted(paper, key=lambda s: paper[s][i]))}\n"
                    for i, (m, label) in enumerate(MEASURES.items()))
    return text


def simulated_section(table: dict[str, dict[str, dict[str, float]]], scope: str, seconds: float) -> str:
    """Per measure, each strategy's rank (1 = best) on every configuration, and the mean NAUC."""
    took = f", {seconds:.0f} s" if seconds == seconds else ""
    text = f"\n### Simulated sensitive columns, {scope} scope ({len(table)} configurations{took})\n"
    configs = list(table)
    for m, label in MEASURES.items():
        rows = []
        for s in STRATEGIES:
            ranks = []
            for c in configs:
                better = sorted(table[c], key=lambda x: -table[c][x][m] if m == "l_diversity" else table[c][x][m])
                ranks.append(better.index(s) + 1 if s in better else None)
            mean = sum(table[c][s][m] for c in configs) / len(configs)
            rows.append([s, *ranks, mean])
        text += f"\n{label} (rank per configuration, 1 = best; mean NAUC %)\n\n"
        text += markdown_table(["strategy", *configs, "mean"], rows)
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="output folder (default benchmarks/data/experiments/paper003_table4)")
    parser.add_argument("--real", default="age,marital-status", help="Adult attributes taken as sensitive ('' none)")
    parser.add_argument("--scopes", default="table,class")
    parser.add_argument("--simulated", default="5,50,500", help="sizes of the simulated columns, 'all' or 'none'")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--report-only", action="store_true",
                        help="write table4.md's simulated rankings from the configurations already in --out")
    args = parser.parse_args(argv)
    if args.report_only:
        folder = out_folder(args.out, "paper003_table4")
        text = "".join(simulated_report(folder, scope) for scope in args.scopes.split(","))
        (folder / "table4.md").write_text("# Mauger et al. (2023) Table 4, simulated data (NLLM)\n" + text,
                                          encoding="utf-8")
        print(text)
        return
    folder = out_folder(args.out, "paper003_table4")
    strategies = args.strategies.split(",")
    scopes = args.scopes.split(",")
    started = time.perf_counter()
    text = ["# Mauger et al. (2023) Table 4 on Adult: NAUC of the seven strategies (NLLM)\n",
            "Alteration for NLLM (%), l-diversity value as % of the whole table's, t-closeness value (L1) × 100.\n"]
    for sa in [s for s in args.real.split(",") if s]:
        for scope in scopes:
            spec = adult_spec([c for c in NINE if c != sa], sensitive={sa: {"distance": "equal", "t": 1.0}},
                              search={"algorithm": "gaa", "metric": "nllm", "scope": scope})
            result, seconds = run(f"{sa}/{scope}", spec, KS_REAL, strategies, folder / f"{sa}-{scope}")
            text.append(real_section(sa, scope, naucs(result), seconds))
    sizes = SIZES if args.simulated == "all" else [] if args.simulated == "none" else \
        [int(x) for x in args.simulated.split(",")]
    if sizes:
        DEFAULT_OUT.mkdir(parents=True, exist_ok=True)
        source = simulated_source(DEFAULT_OUT, SIZES)  # a generated table: never beside committed results
        for scope in scopes:
            table, took = {}, time.perf_counter()
            for m in sizes:  # every distribution of a size before the next size
                for dist in DISTRIBUTIONS:
                    column = f"{dist}_{m}"
                    spec = adult_spec(NINE, sensitive={column: {"distance": "equal", "t": 1.0}},
                                      search={"algorithm": "gaa", "metric": "nllm", "scope": scope})
                    spec["source"] = {"path": str(source)}
                    spec["quasi_identifiers"] = {c: hierarchy(c, "ours") for c in NINE}
                    result, _ = run(f"{column}/{scope}", spec, KS_SIMULATED, strategies,
                                    folder / f"{column}-{scope}", charts=False)  # 21 configurations: CSVs only
                    table[column] = naucs(result)
            text.append(simulated_section(table, scope, time.perf_counter() - took))
    (folder / "table4.md").write_text("".join(text), encoding="utf-8")
    print("".join(text))
    print(f"wrote {folder}/table4.md and one folder per configuration in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
