"""Benchmark: GAA (Mauger et al. 2023) on Adult with the paper's nine attributes as QIs.

Prints, per k and strategy: classes, merges, GAA seconds, NLLM alteration, % generalized,
% at the root, and — with a sensitive attribute — the paper's l-diversity and t-closeness
(L1) values. The input is one GROUP BY over the base histogram (``fetch_gaa_input``).

    python benchmarks/bench_gaa.py                                  # k = 5..10, S1, all nine QIs
    python benchmarks/bench_gaa.py --sensitive marital-status --strategies S1,S3,S6 --k 5

Not a test: figures go to docs/utility.md with the machine they were taken on.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from sqlclose.model.spec import build_spec
from sqlclose.prepare import sources
from sqlclose.prepare.problem import prepare
from sqlclose.search.gaa import fetch_gaa_input, gaa
from sqlclose.utility import (
    generalized_percent,
    l1_closeness_value,
    l_diversity_value,
    metric,
    node_class_histograms,
    root_percent,
)

REPO = Path(__file__).resolve().parents[1]
ADULT = Path(os.environ.get("SQLCLOSE_ADULT_DIR", REPO.parent / "shared" / "datasets" / "adult"))
def open_source(source, delimiter: str | None = None):
    """(engine, relation, label) for a path or an Arrow table."""
    opened = sources.open_source(source, None, sources.FileRead(delimiter=delimiter))
    return opened.engine, opened.relation, opened.label


COLUMNS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation",
           "salary-class"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", default="5,6,7,8,9,10")
    parser.add_argument("--strategies", default="S1")
    parser.add_argument("--metric", default="nllm")
    parser.add_argument("--sensitive", default=None, help="a column taken out of the QIs as sensitive")
    parser.add_argument("--scope", default="table", choices=["table", "class"])
    args = parser.parse_args()
    files = REPO / "datasets" / "adult" / "hierarchies"
    qis = {c: {"bands": [5, 10, 20]} if c == "age" else {"file": str(files / f"{c}.csv")}
           for c in COLUMNS if c != args.sensitive}
    sensitive = {args.sensitive: {"distance": "equal", "t": 1.0}} if args.sensitive else {}
    # The spec's k is a placeholder (gaa() gets each k): k = 1 with only t = 1 is refused as protecting nothing.
    spec = build_spec({"privacy": {"k": 2}, "quasi_identifiers": qis, "sensitive": sensitive})
    engine, relation, label = open_source(ADULT / "adult.csv", ";")
    started = time.perf_counter()
    data = fetch_gaa_input(prepare(engine, relation, spec, label), args.sensitive)
    print(f"prepare + input: {time.perf_counter() - started:.2f} s, {len(data.counts)} distinct QI combinations")
    mu = metric(args.metric, data.hierarchies)
    print("| k | strategy | classes | merges | seconds | alteration | % generalized | % root | l_div | t_clo (L1) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k in [int(x) for x in args.k.split(",")]:
        for strategy in args.strategies.split(","):
            r = gaa(data, k, mu, strategy, scope=args.scope)
            ldiv = tclo = "—"
            if data.sensitive is not None:
                hist = node_class_histograms(r.nodes, data.sensitive)
                ldiv = f"{l_diversity_value(hist):.3f}"
                tclo = f"{l1_closeness_value(hist, data.sensitive.sum(axis=0)):.3f}"
            print(f"| {k} | {strategy} | {r.classes} | {r.merges} | {r.seconds:.2f} | "
                  f"{mu.alteration(data.leaves, r.nodes, data.counts):.2f} | "
                  f"{generalized_percent(mu.trees, r.nodes, data.counts):.1f} | "
                  f"{root_percent(mu.trees, r.nodes, data.counts):.1f} | {ldiv} | {tclo} |", flush=True)
    engine.close()


if __name__ == "__main__":
    main()
