"""Where the test suite's time goes: a pytest plugin writing each test's start and end per xdist worker,
and a summary of what it wrote (each worker's span and idle gaps, the test time by file and by
marker, the slowest tests).

Run the suite with the plugin (the folder must exist; each worker writes ``<worker>.jsonl`` there):

    TIMELINE_DIR=/tmp/tl PYTHONPATH=benchmarks python -m pytest -q -n auto -p suite_timeline

then ``python benchmarks/suite_timeline.py /tmp/tl`` (docs/performance.md, ninety-ninth round). Two
timelines side by side (``--vs OTHER``) compare two commits file by file.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import IO, Any

_out: IO[str] | None = None


def _record(event: str, nodeid: str) -> None:
    global _out
    if _out is None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out = open(Path(os.environ["TIMELINE_DIR"]) / f"{worker}.jsonl", "a", buffering=1, encoding="utf-8")
    _out.write(json.dumps({"ev": event, "id": nodeid, "t": time.time()}) + "\n")


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _record("start", nodeid)


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    _record("end", nodeid)


def durations(folder: Path) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Each test's duration (its setup, call and teardown), and each worker's (span, gaps): the time
    from its first start to its last end, and the part of it between one test's end and the next's
    start. The controller's own file (``main.jsonl`` under xdist) is left out when workers wrote."""
    files = sorted(folder.glob("gw*.jsonl")) or sorted(folder.glob("*.jsonl"))
    tests: dict[str, float] = {}
    workers: dict[str, tuple[float, float]] = {}
    for path in files:
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        started: dict[str, float] = {}
        gaps, last_end = 0.0, None
        for event in events:
            if event["ev"] == "start":
                gaps += event["t"] - last_end if last_end is not None else 0.0
                started[event["id"]] = event["t"]
            elif event["id"] in started:
                tests[event["id"]] = event["t"] - started.pop(event["id"])
                last_end = event["t"]
        if events:
            workers[path.stem] = (events[-1]["t"] - events[0]["t"], gaps)
    return tests, workers


def by_file(tests: dict[str, float]) -> dict[str, float]:
    """The test time of each test file."""
    files: dict[str, float] = defaultdict(float)
    for nodeid, seconds in tests.items():
        files[nodeid.split("::")[0]] += seconds
    return dict(files)


def _summary(folder: Path, other: Path | None, most: int) -> str:
    tests, workers = durations(folder)
    lines = [f"{name}: span {span:.1f} s, gaps {gaps:.1f} s" for name, (span, gaps) in workers.items()]
    lines.append(f"{len(tests)} tests, {sum(tests.values()):.1f} s of test time")
    files = by_file(tests)
    before = by_file(durations(other)[0]) if other else {}
    for name, seconds in sorted(files.items(), key=lambda item: -item[1])[:most]:
        was = f"  (was {before[name]:.1f} s)" if name in before else ""
        lines.append(f"{seconds:8.1f} s  {name}{was}")
    lines.append("slowest tests:")
    lines += [f"{seconds:8.1f} s  {nodeid}" for nodeid, seconds in
              sorted(tests.items(), key=lambda item: -item[1])[:most]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="the TIMELINE_DIR the suite ran with")
    parser.add_argument("--vs", type=Path, help="another run's folder: each file's time there beside it")
    parser.add_argument("--most", type=int, default=30, help="how many files and tests to list (30)")
    args = parser.parse_args()
    print(_summary(args.folder, args.vs, args.most))


if __name__ == "__main__":
    main()
