"""Benchmark: ``sqlclose check`` on a generated table as it is (raw: nearly one class per row).

For each size (tables from ``make_table.py``, generated into ``--data`` when missing), the audit
of the raw table against its spec (k = 5, t = 0.2 hierarchical on occupation): whole process wall
seconds and peak RSS (``/usr/bin/time -v``), and the classes audited; with ``--memory-limit`` the
audit runs under that limit. The JSON reports of every run must be identical, and are.

    python benchmarks/bench_check.py --sizes 10m --runs 2
    python benchmarks/bench_check.py --sizes 10m --memory-limit 1GB

Not a test: figures go to docs/performance.md with the machine they were taken on.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_table  # noqa: E402
from bench_scale import case_spec, parse_size, timed  # noqa: E402


def measure(rows: int, data: Path, runs: int, memory_limit: str | None) -> dict:
    folder = data / f"rows_{rows}"
    if not (folder / "table.parquet").exists():
        print(f"generating {rows:,} rows into {folder} …", file=sys.stderr)
        make_table.make(rows, folder)
    spec = case_spec(folder, "hierarchical", 0.0)
    limit = ["--memory-limit", memory_limit] if memory_limit else []
    command = [str(Path(sys.executable).with_name("sqlclose")), "check", "table.parquet", "--spec", spec.name,
               "--json", *limit]
    procs = [timed(command, cwd=folder) for _ in range(runs)]
    if any(p["rc"] not in (0, 3) for p in procs):  # 3: a threshold fails, as it must on raw data
        raise SystemExit(f"sqlclose check failed: exit {[p['rc'] for p in procs]}")
    reports = [json.loads(p["stdout"]) for p in procs]
    if any(r != reports[0] for r in reports):
        raise SystemExit("the runs' reports differ")
    return {"rows": rows, "classes": reports[0]["classes"], "memory_limit": memory_limit,
            "seconds": statistics.median(p["seconds"] for p in procs),
            "all_seconds": [round(p["seconds"], 2) for p in procs],
            "peak_rss_mib": round(max(p["rss_mb"] for p in procs))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=parse_size, default=[1_000_000])
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--runs", type=int, default=1, help="whole-process runs per size (median)")
    parser.add_argument("--memory-limit", default=None, help="the audit's memory limit (sqlclose --memory-limit)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(n, args.data, args.runs, args.memory_limit) for n in args.sizes]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"`sqlclose check` of the raw generated table; {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}\n")
    print("| rows | classes | memory limit | whole process (median) | runs | peak RSS |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['rows']:,} | {r['classes']:,} | {r['memory_limit'] or 'none'} | {r['seconds']:.1f} s | "
              f"{', '.join(map(str, r['all_seconds']))} | {r['peak_rss_mib']:,} MiB |")


if __name__ == "__main__":
    main()
