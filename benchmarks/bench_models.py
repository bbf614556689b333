"""Benchmark: Adult warm search for every privacy model issue 10 names, 0 % and 5 % suppression.

k alone; k + t = 0.2 with the equal and hierarchical EMD (Adult has no numeric sensitive column
for the ordered one); distinct, entropy and recursive l-diversity on occupation. Per case: the
search's wall time in a process that already ran it once (median of ``--repeats``), nodes
evaluated, queries, the optimum's discernibility.

    python benchmarks/bench_models.py [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import sqlclose
from sqlclose.privacy.criteria import criteria_for
from sqlclose.search import incognito

SPEC = Path(__file__).resolve().parent.parent / "datasets" / "adult" / "adult.toml"
MODELS = {
    "k = 5": {},
    "k = 5, t = 0.2 equal": {"t": 0.2, "distance": "equal"},
    "k = 5, t = 0.2 hierarchical": {"t": 0.2, "distance": "hierarchical", "hierarchy": "HIER"},
    "k = 5, distinct l = 5": {"distinct_l": 5},
    "k = 5, entropy l = 5": {"entropy_l": 5.0},
    "k = 5, recursive (4, 4)": {"recursive": {"c": 4, "l": 4}},
}


def spec_for(model: dict, suppression: float) -> sqlclose.Spec:
    data = sqlclose.load_spec(SPEC).model_dump()
    data["privacy"]["suppression"] = suppression
    hierarchy = data["sensitive"]["occupation"].get("hierarchy")
    if not model:
        data["sensitive"] = {}
        data["identifiers"] = ["occupation"]
    else:
        data["sensitive"]["occupation"] = {k: (hierarchy if v == "HIER" else v) for k, v in model.items()}
    return sqlclose.Spec.model_validate(data)


def measure(name: str, suppression: float, repeats: int) -> dict:
    with sqlclose.anonymize(None, spec_for(MODELS[name], suppression)) as release:
        problem = release.problem
        criteria = criteria_for(problem.k, problem.sas)
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            result = incognito(problem, criteria)
            times.append(time.perf_counter() - started)
    return {"model": name, "suppression": suppression, "search_seconds_median": statistics.median(times),
            "search_seconds_all": [round(t, 3) for t in times], "nodes_evaluated": result.nodes_evaluated,
            "lattice_size": result.lattice_size, "queries": result.queries,
            "discernibility": result.evaluated[result.optimum].discernibility if result.optimum else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(name, s, args.repeats) for name in MODELS for s in (0.0, 0.05)]
    if args.json:
        print(json.dumps({"load_average": os.getloadavg(), "results": rows}, indent=2))
        return
    print(f"load average at the end: {os.getloadavg()}")
    print("| model | suppression | warm search (median) | all runs | nodes evaluated / lattice | queries "
          "| optimum DM |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['suppression']:.0%} | {r['search_seconds_median'] * 1000:.0f} ms "
              f"| {', '.join(f'{t:.3f}' for t in r['search_seconds_all'])} | {r['nodes_evaluated']:,} / "
              f"{r['lattice_size']:,} | {r['queries']} | {r['discernibility']:,} |")


if __name__ == "__main__":
    main()
