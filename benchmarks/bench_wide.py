"""Benchmark: a wide problem (codes over 62 bits) searched by the SQL level batches (keys in
several BIGINT words) against one query per node, each in a fresh process with a time budget.

    python benchmarks/make_table.py --rows 3000 --out benchmarks/data/wide3k
    python benchmarks/bench_wide.py benchmarks/data/wide3k/table_15.toml --budget 240

Prints, per runner: finished or stopped, seconds, nodes evaluated, queries, nodes per second.
Not a test: figures go to docs/performance.md with the machine and its load.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import subprocess
import sys
import time
from pathlib import Path


def run(spec: Path, mode: str, budget: int) -> None:
    from sqlclose.api import as_spec, open_for, prepare
    from sqlclose.privacy.criteria import criteria_for
    from sqlclose.search import memory_runner, node_runner, runners

    search = importlib.import_module("sqlclose.search.incognito")
    loaded = as_spec(spec)
    opened = open_for(None, loaded)
    problem = prepare(opened.engine, opened.relation, loaded, opened.label)
    memory_runner.MEMORY_BASE_ROWS = 0  # the SQL path, as for inputs too big for the in-memory rollups
    made = []

    def runner(p):
        made.append(node_runner.NodeRunner(p) if mode == "node" else runners.runner_for(p))
        return made[-1]

    def second(below):  # the walk from above: a runner of the same kind
        made.append(runners.second_runner(below))
        return made[-1]

    search.runner_for, search.second_runner = runner, second

    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, stop)
    signal.alarm(budget)
    started = time.perf_counter()
    try:
        search.incognito(problem, criteria_for(problem.k, problem.sas))
        state = "finished"
    except KeyboardInterrupt:
        state = "stopped"
    seconds = time.perf_counter() - started
    nodes, queries = sum(r.nodes_computed for r in made), sum(r.queries for r in made)
    print(f"{mode}: {type(made[0]).__name__} {state} after {seconds:.0f} s, {nodes} nodes evaluated "
          f"(both walks), {queries} queries, {nodes / seconds:.1f} nodes/s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("--budget", type=int, default=240, help="seconds per runner")
    parser.add_argument("--mode", choices=["batch", "node"], default=None, help="(internal) one runner")
    args = parser.parse_args()
    if args.mode:
        run(args.spec, args.mode, args.budget)
        return
    for mode in ("batch", "node"):  # fresh processes: no warm caches shared between them
        spec = args.spec.resolve()
        subprocess.run([sys.executable, __file__, str(spec), "--budget", str(args.budget), "--mode", mode],
                       cwd=spec.parent, check=True)


if __name__ == "__main__":
    main()
