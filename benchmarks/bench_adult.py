"""Benchmark: Adult, 7 QIs, occupation sensitive, k=5 + t=0.2 hierarchical, 0 % and 5 % suppression.

Measures, per suppression level:
- warm search: ``incognito`` wall time in a process that has already run it once (median of 5);
- whole process: ``sqlclose anonymize`` as a subprocess, start to exit (median of 3), and its
  peak resident memory; sqlclose's bytecode compiled before (``precompile.compile_sqlclose``);
- nodes evaluated vs lattice size, engine queries.

    python benchmarks/bench_adult.py            # prints a Markdown table; --json for machines

Not a test: figures go to docs/performance.md with the machine they were taken on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sqlclose
from sqlclose.privacy.criteria import criteria_for
from sqlclose.search.incognito import incognito

sys.path.insert(0, str(Path(__file__).resolve().parent))
from precompile import compile_sqlclose  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "datasets" / "adult" / "adult.toml"


def spec_with(suppression: float) -> sqlclose.Spec:
    data = sqlclose.load_spec(SPEC).model_dump()
    data["privacy"]["suppression"] = suppression
    return sqlclose.Spec.model_validate(data)


def warm_search(suppression: float, repeats: int) -> dict:
    release = sqlclose.anonymize(None, spec_with(suppression))  # cold run: imports, caches
    problem = release.problem
    criteria = criteria_for(problem.k, problem.sas)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = incognito(problem, criteria)
        times.append(time.perf_counter() - started)
    return {
        "search_seconds_median": statistics.median(times),
        "search_seconds_all": [round(t, 4) for t in times],
        "nodes_evaluated": result.nodes_evaluated,
        "queries": result.queries,
        "lattice_size": result.lattice_size,
        "satisfying_nodes": int(result.satisfying.sum()),
        "minimal_nodes": len(result.minimal_nodes),
        "node": dict(zip([q.name for q in problem.qis], result.optimum)),
        "discernibility": result.evaluated[result.optimum].discernibility,
    }


def side_by_side(suppression: float, repeats: int) -> dict:
    """Warm search on the SQL level batches and on the in-memory path, alternated in one
    process (the machine's load drifts: only the same run's ratio means something)."""
    from sqlclose.search import memory_runner

    problem = sqlclose.anonymize(None, spec_with(suppression)).problem
    criteria = criteria_for(problem.k, problem.sas)
    default = memory_runner.MEMORY_BASE_ROWS
    times: dict[str, list[float]] = {"sql": [], "memory": []}
    found = {}
    for _ in range(repeats):
        for path, limit in (("sql", 0), ("memory", default)):
            memory_runner.MEMORY_BASE_ROWS = limit
            started = time.perf_counter()
            result = incognito(problem, criteria)
            times[path].append(time.perf_counter() - started)
            found[path] = (result.optimum, result.evaluated[result.optimum].discernibility, result.nodes_evaluated)
    memory_runner.MEMORY_BASE_ROWS = default
    assert found["sql"] == found["memory"], found
    sql, memory = statistics.median(times["sql"]), statistics.median(times["memory"])
    return {"suppression": suppression, "sql_median": sql, "memory_median": memory, "speedup": sql / memory}


def whole_process(suppression: float, repeats: int) -> dict:
    times, peaks = [], []
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = Path(tmp) / "adult.toml"
        text = SPEC.read_text().replace("suppression = 0.0", f"suppression = {suppression}")
        # keep the spec's relative paths valid from the temp folder
        text = text.replace('"hierarchies/', f'"{SPEC.parent}/hierarchies/')
        adult_dir = os.environ.get("SQLCLOSE_ADULT_DIR", str(ROOT.parent / "shared" / "datasets" / "adult"))
        text = text.replace("${SQLCLOSE_ADULT_DIR:-../../../shared/datasets/adult}", adult_dir)
        spec_path.write_text(text)
        for i in range(repeats):
            out = Path(tmp) / f"r{i}.parquet"
            started = time.perf_counter()
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            subprocess.run([sys.executable, "-m", "sqlclose.cli", "anonymize", str(spec_path), "-o", str(out), "-q"],
                           check=True)
            times.append(time.perf_counter() - started)
            peaks.append(max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before))
    return {"process_seconds_median": statistics.median(times), "process_seconds_all": [round(t, 3) for t in times],
            "peak_rss_mb": max(peaks) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--side-by-side", action="store_true",
                        help="warm search only: SQL level batches vs the in-memory path, alternated")
    args = parser.parse_args()
    if args.side_by_side:
        print("| suppression | SQL level batches (median) | in memory (median) | speed-up |")
        print("|---|---|---|---|")
        for suppression in (0.0, 0.05):
            r = side_by_side(suppression, args.repeats)
            print(f"| {suppression:.0%} | {r['sql_median']:.3f} s | {r['memory_median']:.3f} s | {r['speedup']:.1f}× |")
        return
    rows = []
    compile_sqlclose()  # once, before the whole processes are timed
    for suppression in (0.0, 0.05):
        row = {"suppression": suppression}
        row.update(warm_search(suppression, args.repeats))
        row.update(whole_process(suppression, 3))
        rows.append(row)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
               "sqlclose": sqlclose.__version__}
    if args.json:
        print(json.dumps({"machine": machine, "results": rows}, indent=2))
        return
    print(f"machine: {machine}")
    print(f"| suppression | warm search (median of {args.repeats}) | whole process (median of 3) "
          "| nodes evaluated / lattice | queries | peak RSS | optimum DM |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['suppression']:.0%} | {r['search_seconds_median']:.2f} s | {r['process_seconds_median']:.2f} s "
              f"| {r['nodes_evaluated']} / {r['lattice_size']} | {r['queries']} | {r['peak_rss_mb']:.0f} MB "
              f"| {r['discernibility']} |")


if __name__ == "__main__":
    main()
