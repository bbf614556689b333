"""Benchmark: generated census-like tables of 1 M / 10 M / 100 M rows, k=5 + t=0.2, 0 % and 5 %.

For each size (tables from ``make_table.py``, generated into ``--data`` when missing), and each
case (t = 0.2 hierarchical and equal on occupation; 0 % and 5 % suppression):

- *one scan*: one GROUP BY of the QI and sensitive columns over the same Parquet file, in a
  fresh DuckDB process (Python start included): the floor of a SQL-backed engine;
- *whole process*: ``sqlclose anonymize`` as a subprocess (read, search, release written,
  re-checked from disk, report), wall seconds and peak RSS from ``/usr/bin/time -v``; sqlclose's
  bytecode compiled once before the runs (``precompile.compile_sqlclose``), as an install from a wheel
  has it and as the scan's DuckDB has it;
- from the report: search seconds, nodes evaluated, engine queries, the chosen node.

With ``--paired`` each case's runs alternate with scans of their own (scan, job, scan, job, …) and
"× scan" is the median of the pairs' ratios, with their range: the ratio of medians taken minutes
apart moved by 0.3 at 10 M with the scan alone (2.34–3.04 s on one machine in one hour).

    python benchmarks/bench_scale.py                       # 1 M rows
    python benchmarks/bench_scale.py --sizes 1m 10m 100m   # as the issue asks (100 M: ~hours)
    python benchmarks/bench_scale.py --memory-limit 1GB    # the whole job under a limit (peak RSS vs it)
    python benchmarks/bench_scale.py --explore lattice     # decide every node (default: the optimum, as sqlclose)
    python benchmarks/bench_scale.py --with-dob            # the date of birth an eighth QI (a date hierarchy)
    python benchmarks/bench_scale.py --sizes 10m --runs 5 --paired   # each job beside a scan of its own

Not a test: figures go to docs/performance.md with the machine they were taken on. Generated
data lives in benchmarks/data/ (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_table  # noqa: E402
from precompile import compile_sqlclose  # noqa: E402

QIS = ["age", "zip", "sex", "race", "marital_status", "education", "workclass"]
SENSITIVE = "occupation"
# --with-dob: the date of birth, day → month → year → 5-year band → *, a QI before sex
DOB = 'dob = { dates = true, domain = ["1900-01-01", "2025-12-31"] }\n'
CASES = [("hierarchical", 0.0), ("hierarchical", 0.05), ("equal", 0.0), ("equal", 0.05)]
SCAN = """
import duckdb, sys
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
cols = ", ".join('"' + c + '"' for c in sys.argv[2].split(","))
con.execute(f"CREATE TEMP TABLE h AS SELECT {cols}, COUNT(*) AS n FROM read_parquet($1) GROUP BY {cols}",
            [sys.argv[1]])
print(con.execute("SELECT COUNT(*) FROM h").fetchone()[0])
"""


# The search's counts, which the report no longer publishes (they tell how hard the data was to
# anonymize: docs/what-a-release-reveals.md): one more run through the API, not timed, writing nothing.
COUNTS = """
import json, sys
import sqlclose
from sqlclose.model.spec import EngineSettings
spec = sqlclose.load_spec(sys.argv[1])
engine = (spec.engine or EngineSettings()).model_copy(update={"memory_limit": sys.argv[3] or None})
spec = spec.model_copy(update={"search": spec.search.model_copy(update={"explore": sys.argv[2]}), "engine": engine})
with sqlclose.anonymize(None, spec) as release:
    print(json.dumps({"nodes_evaluated": release.search.nodes_evaluated, "queries": release.search.queries}))
"""


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+)([kKmM]?)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"size {text!r}: a number, optionally with k or m (e.g. 10m)")
    rows = int(m.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()]
    if rows < 1:  # make_table.make refuses an empty table
        raise argparse.ArgumentTypeError(f"size {text!r}: 1 row or more")
    return rows


def timed(cmd: list[str], cwd: Path | None = None, timeout: float | None = None) -> dict:
    """Run under /usr/bin/time -v: wall seconds, peak RSS (MB), exit code, stdout. A run past
    ``timeout`` seconds is stopped and reported as such (rc -9, the time limit as its wall)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        # A session of its own, so a timeout stops the command too, not only /usr/bin/time.
        proc = subprocess.Popen(["/usr/bin/time", "-v", "-o", report.name, *cmd], cwd=cwd, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"seconds": timeout, "rss_mb": float("nan"), "rc": -9, "stdout": ""}
        proc = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
        text = report.read()
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):(\d+(?:\.\d+)?)", text)
    h, m, s = (float(x) if x else 0.0 for x in wall.groups())
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    if proc.returncode:
        print(proc.stderr[-2000:], file=sys.stderr)
    return {"seconds": h * 3600 + m * 60 + s, "rss_mb": rss / 1024, "rc": proc.returncode, "stdout": proc.stdout}


def case_spec(folder: Path, distance: str, suppression: float, dob: bool = False) -> Path:
    """table.toml with the sensitive distance and the suppression limit of one case (``dob``: and
    the date of birth a QI)."""
    text = (folder / "table.toml").read_text()
    text = text.replace("suppression = 0.0", f"suppression = {suppression}")
    stem = f"bench_{distance}_s{suppression}" + ("_dob" if dob else "")
    if dob:
        text = text.replace("\nsex = ", f"\n{DOB}sex = ", 1)
    text = text.replace('path = "out/table.parquet"', f'path = "out/{stem}.parquet"')
    if distance != "hierarchical":
        text = text.replace('distance = "hierarchical"', f'distance = "{distance}"')
        text = text.replace('hierarchy = "hierarchies/occupation.csv"\n', "")
    path = folder / f"{stem}.toml"
    path.write_text(text)
    return path


def measure(rows: int, data: Path, runs: int, cases: list[tuple[str, float]] = CASES,
            timeout: float | None = None, memory_limit: str | None = None, explore: str = "optimum",
            dob: bool = False, paired: bool = False) -> list[dict]:
    folder = data / f"rows_{rows}"
    if not (folder / "table.parquet").exists():
        print(f"generating {rows:,} rows into {folder} …", file=sys.stderr)
        make_table.make(rows, folder)
    scan_cmd = [sys.executable, "-c", SCAN, str(folder / "table.parquet"),
                ",".join([*QIS, *(["dob"] if dob else []), SENSITIVE])]
    scans = [] if paired and cases else [timed(scan_cmd) for _ in range(runs)]  # paired: each case its own
    if scans:
        _print_scans(rows, scans)
    out = []
    for distance, suppression in cases:
        spec = case_spec(folder, distance, suppression, dob)
        limit = ["--memory-limit", memory_limit] if memory_limit else []
        job = [str(Path(sys.executable).with_name("sqlclose")), "anonymize", str(spec.name), *limit,
               "--explore", explore]
        procs, own_scans = _runs(job, folder, runs, timeout, scan_cmd if paired else None)
        if paired:
            _print_scans(rows, own_scans)
        case_scans = own_scans if paired else scans
        report_path = folder / "out" / f"{spec.stem}.parquet.report.json"
        report = json.loads(report_path.read_text()) if report_path.exists() and not procs[-1]["rc"] else {}
        counts = _search_counts(spec, folder, timeout, explore, memory_limit) if report else {}
        scan = statistics.median(s["seconds"] for s in case_scans)
        whole = statistics.median(p["seconds"] for p in procs)
        ratios = [p["seconds"] / s["seconds"] for p, s in zip(procs, case_scans)] if paired else [whole / scan]
        out.append({
            "rows": rows, "distance": distance, "suppression": suppression, "memory_limit": memory_limit, "dob": dob,
            "explore": explore, "paired": paired,
            "scan_seconds": scan,
            "groups": int(case_scans[0]["stdout"].strip() or 0), "process_seconds": whole,
            "process_all": [round(p["seconds"], 2) for p in procs], "ratio": statistics.median(ratios),
            "ratio_range": [min(ratios), max(ratios)],
            "pairs": [[p["seconds"], s["seconds"]] for p, s in zip(procs, case_scans)] if paired else [],
            "peak_rss_mb": max(p["rss_mb"] for p in procs), "ok": not procs[-1]["rc"], "rc": procs[-1]["rc"],
            "search_seconds": report.get("timings", {}).get("search_seconds"),
            "nodes_evaluated": counts.get("nodes_evaluated"),
            "lattice_size": report.get("lattice", {}).get("size"),
            "queries": counts.get("queries"),
            "node": report.get("node"), "discernibility": report.get("utility", {}).get("discernibility"),
        })
        print(json.dumps(out[-1]), file=sys.stderr)
    return out


def _runs(job: list[str], folder: Path, runs: int, timeout: float | None,
          scan_cmd: list[str] | None) -> tuple[list[dict], list[dict]]:
    """``runs`` timed runs of the job; with ``scan_cmd``, each right after a scan of its own (paired)."""
    procs, scans = [], []
    for _ in range(runs):
        scans += [timed(scan_cmd)] if scan_cmd else []
        procs.append(timed(job, cwd=folder, timeout=timeout))
    return procs, scans


def _print_scans(rows: int, scans: list[dict]) -> None:
    print(json.dumps({"rows": rows, "scan_seconds": statistics.median(s["seconds"] for s in scans),
                      "scans": [round(s["seconds"], 2) for s in scans],
                      "scan_rss_mb": max(s["rss_mb"] for s in scans), "groups": scans[0]["stdout"].strip()}),
          file=sys.stderr)


def _search_counts(spec: Path, folder: Path, timeout: float | None, explore: str, memory_limit: str | None) -> dict:
    """Nodes evaluated and engine queries of the case's search, from one run through the API."""
    proc = timed([sys.executable, "-c", COUNTS, str(spec.name), explore, memory_limit or ""], cwd=folder,
                 timeout=timeout)
    lines = proc["stdout"].strip().splitlines()
    return json.loads(lines[-1]) if not proc["rc"] and lines else {}


def _case(parser: argparse.ArgumentParser, text: str) -> tuple[str, float]:
    distance, _, share = text.partition(":")
    try:
        return distance, float(share)
    except ValueError:
        parser.error(f"--cases {text!r}: give distance:suppression, e.g. hierarchical:0.05, or none")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=parse_size, default=[1_000_000])
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--runs", type=int, default=1, help="whole-process runs per case (median)")
    parser.add_argument("--cases", nargs="*", default=None,
                        help="distance:suppression (e.g. hierarchical:0.05); default all four; "
                             "none (or no value): the scan alone")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per whole-process run")
    parser.add_argument("--memory-limit", default=None, help="the job's memory limit (sqlclose --memory-limit)")
    parser.add_argument("--explore", choices=["lattice", "optimum"], default="optimum",
                        help="decide the whole lattice, or only what the optimum needs ([search] explore)")
    parser.add_argument("--with-dob", action="store_true", help="the date of birth an eighth QI (dates = true)")
    parser.add_argument("--paired", action="store_true",
                        help="each job run right after a scan of its own; × scan: the median of the pairs' ratios")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cases = CASES if args.cases is None else [_case(parser, c) for c in args.cases if c != "none"]
    compile_sqlclose()
    results = [r for rows in args.sizes
               for r in measure(rows, args.data, args.runs, cases, args.timeout, args.memory_limit, args.explore,
                                args.with_dob, args.paired)]
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    if args.json:
        print(json.dumps({"machine": machine, "results": results}, indent=2))
        return
    print(f"machine: {machine}; memory limit: {args.memory_limit or 'none'}; explore: {args.explore}"
          + ("; the date of birth a QI" if args.with_dob else "")
          + ("; each job beside a scan of its own (× scan: the pairs' median, their range)" if args.paired else ""))
    print("| rows | t = 0.2 | suppression | one scan | whole process | × scan | search | peak RSS "
          "| nodes evaluated / lattice | queries | optimum DM |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        search = f"{r['search_seconds']:.2f} s" if r["search_seconds"] is not None else \
            ("stopped" if r["rc"] == -9 else "failed")
        print(f"| {r['rows']:,} | {r['distance']} | {r['suppression']:.0%} | {r['scan_seconds']:.2f} s "
              f"| {r['process_seconds']:.2f} s | {_ratio(r)} | {search} | {r['peak_rss_mb']:.0f} MB "
              f"| {r['nodes_evaluated']} / {r['lattice_size']} | {r['queries']} | {r['discernibility']} |")



def _ratio(r: dict) -> str:
    """× scan as the table prints it: paired, the median with the pairs' range."""
    if not r["paired"]:
        return f"{r['ratio']:.1f}×"
    low, high = r["ratio_range"]
    return f"{r['ratio']:.2f}× ({low:.2f}–{high:.2f})"


if __name__ == "__main__":
    main()
