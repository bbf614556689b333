"""Benchmark: Adult warm search for every privacy model issue 10 names, 0 % and 5 % suppression.

k alone; k + t = 0.2 with the equal and hierarchical EMD on occupation, and with the ordered EMD on
age (Adult's one numeric column: sensitive there, the other six quasi-identifiers, occupation
dropped); distinct, entropy and recursive l-diversity on occupation. Per case: the
search's wall time in a process that already ran it once (median of ``--repeats``), nodes
evaluated, queries, the optimum's discernibility.

    python benchmarks/bench_models.py [--repeats 5] [--json]   # the optimum alone, sqlclose's default
    python benchmarks/bench_models.py --explore both   # deciding the lattice vs the optimum alone,
                                                       # alternated in one process (same optimum asserted)
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
from sqlclose.search.incognito import incognito

SPEC = Path(__file__).resolve().parent.parent / "datasets" / "adult" / "adult.toml"
MODELS = {
    "k = 5": {},
    "k = 5, t = 0.2 equal": {"t": 0.2, "distance": "equal"},
    "k = 5, t = 0.2 hierarchical": {"t": 0.2, "distance": "hierarchical", "hierarchy": "HIER"},
    "k = 5, t = 0.2 ordered (age)": {"t": 0.2, "distance": "ordered", "column": "age"},
    "k = 5, distinct l = 5": {"distinct_l": 5},
    "k = 5, entropy l = 5": {"entropy_l": 5.0},
    "k = 5, recursive (4, 4)": {"recursive": {"c": 4, "l": 4}},
}


def spec_for(model: dict, suppression: float) -> sqlclose.Spec:
    data = sqlclose.load_spec(SPEC).model_dump()
    data["privacy"]["suppression"] = suppression
    hierarchy = data["sensitive"]["occupation"].get("hierarchy")
    model = dict(model)
    column = model.pop("column", "occupation")
    if not model:
        data["sensitive"] = {}
        data["identifiers"] = ["occupation"]
    elif column != "occupation":  # a numeric sensitive column: no longer a quasi-identifier
        del data["quasi_identifiers"][column]
        data["sensitive"] = {column: model}
        data["identifiers"] = ["occupation"]
    else:
        data["sensitive"]["occupation"] = {k: (hierarchy if v == "HIER" else v) for k, v in model.items()}
    return sqlclose.Spec.model_validate(data)


def measure(name: str, suppression: float, repeats: int, explores: list[str]) -> list[dict]:
    """One row per way of exploring, their runs alternated (the machine's load drifts)."""
    times: dict[str, list[float]] = {e: [] for e in explores}
    results = {}
    with sqlclose.anonymize(None, spec_for(MODELS[name], suppression)) as release:
        problem = release.problem
        criteria = criteria_for(problem.k, problem.sas)
        for _ in range(repeats):
            for explore in explores:
                started = time.perf_counter()
                results[explore] = incognito(problem, criteria, explore=explore)
                times[explore].append(time.perf_counter() - started)
    found = {e: (r.optimum, r.evaluated[r.optimum].discernibility if r.optimum else None) for e, r in results.items()}
    assert len(set(found.values())) == 1, found
    return [{"model": name, "suppression": suppression, "explore": e, "search_seconds_median": statistics.median(t),
             "search_seconds_all": [round(x, 3) for x in t], "nodes_evaluated": results[e].nodes_evaluated,
             "lattice_size": results[e].lattice_size, "queries": results[e].queries, "discernibility": found[e][1]}
            for e, t in times.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--explore", choices=["lattice", "optimum", "both"], default="optimum",
                        help="[search] explore: decide the whole lattice, the optimum alone, or both side by side")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    explores = ["lattice", "optimum"] if args.explore == "both" else [args.explore]
    rows = [row for name in MODELS for s in (0.0, 0.05) for row in measure(name, s, args.repeats, explores)]
    if args.json:
        print(json.dumps({"load_average": os.getloadavg(), "results": rows}, indent=2))
        return
    print(f"load average at the end: {os.getloadavg()}")
    print("| model | suppression | explore | warm search (median) | all runs | nodes evaluated / lattice | queries "
          "| optimum DM |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['suppression']:.0%} | {r['explore']} | {r['search_seconds_median'] * 1000:.0f} ms "
              f"| {', '.join(f'{t:.3f}' for t in r['search_seconds_all'])} | {r['nodes_evaluated']:,} / "
              f"{r['lattice_size']:,} | {r['queries']} | {r['discernibility']:,} |")


if __name__ == "__main__":
    main()
