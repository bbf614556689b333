"""benchmarks/suite_timeline.py: the plugin records each test's start and end, and the summary reads
durations, workers' spans and gaps, and files' totals from them. Oracles: timestamps written by hand
(their differences computed in the test), and a real pytest run of tests that sleep a known time."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import suite_timeline  # noqa: E402

sys.path.remove(str(BENCHMARKS))


def _write(path: Path, events: list[tuple[str, str, float]]) -> None:
    path.write_text("".join(json.dumps({"ev": ev, "id": nodeid, "t": t}) + "\n" for ev, nodeid, t in events))


def test_durations_spans_and_gaps_are_read_per_worker(tmp_path):
    _write(tmp_path / "gw0.jsonl", [("start", "tests/a.py::x", 100.0), ("end", "tests/a.py::x", 102.5),
                                    ("start", "tests/a.py::y", 103.0), ("end", "tests/a.py::y", 104.0)])
    _write(tmp_path / "gw1.jsonl", [("start", "tests/b.py::z", 100.0), ("end", "tests/b.py::z", 101.25)])
    _write(tmp_path / "main.jsonl", [("start", "tests/a.py::x", 100.0), ("end", "tests/a.py::x", 200.0)])
    tests, workers = suite_timeline.durations(tmp_path)
    assert tests == {"tests/a.py::x": 2.5, "tests/a.py::y": 1.0, "tests/b.py::z": 1.25}  # main.jsonl left out
    assert workers == {"gw0": (4.0, 0.5), "gw1": (1.25, 0.0)}
    assert suite_timeline.by_file(tests) == {"tests/a.py": 3.5, "tests/b.py": 1.25}


def test_a_real_run_records_each_test_with_its_time(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_sleepy.py").write_text(
        "import time\n\ndef test_short():\n    pass\n\ndef test_slow():\n    time.sleep(0.3)\n")
    timeline = tmp_path / "timeline"
    timeline.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "suite_timeline", "-p", "no:cacheprovider",
                           "-p", "no:xdist", str(suite)], cwd=suite, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(BENCHMARKS), "TIMELINE_DIR": str(timeline)})
    assert done.returncode == 0, done.stdout + done.stderr
    tests, workers = suite_timeline.durations(timeline)
    assert set(tests) == {"test_sleepy.py::test_short", "test_sleepy.py::test_slow"}
    assert tests["test_sleepy.py::test_slow"] >= 0.3 > tests["test_sleepy.py::test_short"]
    assert list(workers) == ["main"]  # no xdist: the one process's file


@pytest.mark.parametrize("with_other", [False, True])
def test_the_summary_lists_files_by_time_and_the_other_runs_figure(tmp_path, with_other):
    now, before = tmp_path / "now", tmp_path / "before"
    for folder, seconds in ((now, 3.0), (before, 7.0)):
        folder.mkdir()
        _write(folder / "gw0.jsonl", [("start", "tests/a.py::x", 0.0), ("end", "tests/a.py::x", seconds),
                                      ("start", "tests/b.py::y", seconds), ("end", "tests/b.py::y", seconds + 1)])
    text = suite_timeline._summary(now, before if with_other else None, 10)
    assert "2 tests, 4.0 s of test time" in text
    first, second = [line for line in text.splitlines() if " s  tests/" in line][:2]
    assert first.split()[:3] == ["3.0", "s", "tests/a.py"] and second.split()[:3] == ["1.0", "s", "tests/b.py"]
    assert ("(was 7.0 s)" in first) is with_other
