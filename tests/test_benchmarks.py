"""The benchmark scripts keep running as the code moves under them.

They are not timed here (figures go to docs/performance.md); this only catches a script broken by a
rename or a changed signature, as ``bench_adult.py`` once was (``sqlclose.search`` stopped exporting
``incognito``) and nobody could measure Adult until it was found by hand."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from forked_cli import run_script

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.rglob("*.py"))


def _sqlclose_imports(script: Path) -> list[tuple[str, str | None]]:
    """(module, name) for every ``from sqlclose… import name`` and ``import sqlclose…``, nested ones too."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlclose":
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "sqlclose"]
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_every_sqlclose_name_a_benchmark_imports_exists(script):
    missing = []
    for module_name, name in _sqlclose_imports(script):
        module = importlib.import_module(module_name)
        if name is None or hasattr(module, name):
            continue
        try:  # a submodule not yet imported
            importlib.import_module(f"{module_name}.{name}")
        except ModuleNotFoundError:
            missing.append(f"{module_name}.{name}")
    assert not missing, f"{script.name} imports names sqlclose no longer has: {missing}"


@pytest.fixture(scope="module")
def small_table(tmp_path_factory) -> Path:
    """A 3,000-row table as make_table.py writes it (its spec, hierarchies and Parquet file)."""
    folder = tmp_path_factory.mktemp("bench") / "t3k"
    _run("make_table.py", "--rows", "3000", "--out", str(folder), cwd=folder.parent)
    return folder


def _run(script: str, *args: str, cwd: Path) -> str:
    done = _invoke(script, *args, cwd=cwd)
    assert done.returncode == 0, f"{script} {' '.join(args)} failed:\n{done.stderr[-3000:]}"
    return done.stdout


def _invoke(script: str, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """``python benchmarks/<script> *args``, a process of its own forked from an interpreter that has
    imported sqlclose (tests/forked_cli.py): ~0.7 s less per run, some 40 runs."""
    return run_script(BENCHMARKS / script, args, cwd=cwd, env={**os.environ, **env}, timeout=300)


# Each with its smallest settings; the Spark ones (bench_engines, bench_class_numbers) are left to the
# import check above: a Spark session alone costs more than all of these.
ON_THE_SMALL_TABLE = [
    ("bench_base_grouping.py", ["{table}/table.parquet", "--repeats", "1"]),
    ("bench_group_cost.py", ["{table}/table.parquet", "--runs", "1"]),
    ("bench_release_write.py", ["{table}/table.toml", "--repeats", "1"]),
    ("probe_cap_inference.py", ["{table}/table.toml"]),
    ("probe_walk_work.py", ["{table}/table.toml"]),
    ("probe_part_memory.py", ["anonymize", "{table}/table.toml", "-q", "--output", "{table}/probe.parquet",
                              "--overwrite"]),
    ("bench_scale.py", ["--sizes", "3000", "--data", "{table}/scale", "--runs", "1"]),
    ("bench_check.py", ["--sizes", "3000", "--data", "{table}/check", "--runs", "1"]),
]
ON_ADULT = [
    ("bench_adult.py", ["--repeats", "1"]),
    ("bench_models.py", ["--repeats", "1"]),
    ("bench_gaa.py", ["--k", "5", "--strategies", "S1", "--sensitive", "occupation", "--scope", "class"]),
    ("bench_gaa_release.py", ["--k", "5", "--strategies", "S1"]),
    ("similarity_experiment.py", ["--no-verify"]),
]


@pytest.mark.parametrize(("script", "args"), ON_THE_SMALL_TABLE, ids=[s for s, _ in ON_THE_SMALL_TABLE])
def test_a_benchmark_runs_on_a_small_generated_table(script, args, small_table):
    out = _run(script, *(a.format(table=small_table) for a in args), cwd=small_table)
    assert "|---" in out or out.lstrip().startswith("{"), f"{script} printed no table:\n{out[-2000:]}"


@pytest.mark.parametrize(("script", "args"), ON_ADULT, ids=[s for s, _ in ON_ADULT])
def test_a_benchmark_runs_on_adult(script, args, adult_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SQLCLOSE_ADULT_DIR", str(adult_dir))
    out = _run(script, *args, cwd=tmp_path)
    assert "|---" in out, f"{script} printed no table:\n{out[-2000:]}"
    if script == "bench_adult.py":  # the header said "median of 5" whatever --repeats was (review rv18)
        assert "warm search (median of 1)" in out, out


def test_bench_scale_counts_the_search(small_table):
    """bench_scale read nodes evaluated and queries from the report, which no longer publishes them
    (what-a-release-reveals.md), so every row printed "None / 6480 | None" (review rv18). Oracle: the
    search evaluated at least the node it released and ran at least one query; the lattice of
    table.toml's hierarchies is 6,480 nodes."""
    out = _run("bench_scale.py", "--sizes", "3000", "--data", str(small_table / "scale_counts"), "--runs", "1",
               "--cases", "hierarchical:0.05", cwd=small_table)
    row = next(line for line in out.splitlines() if line.startswith("| 3,000"))
    evaluated, lattice = row.split(" | ")[8].split(" / ")
    assert int(evaluated) >= 1 and lattice == "6480" and int(row.split(" | ")[9]) >= 1, row


def test_bench_scale_with_the_date_of_birth_searches_its_lattice(small_table):
    """--with-dob makes the date of birth an eighth QI of five levels (day, month, year, 5-year band,
    *): the lattice is 6,480 × 5 nodes, and the release generalizes it."""
    out = _run("bench_scale.py", "--sizes", "3000", "--data", str(small_table / "scale_dob"), "--runs", "1",
               "--cases", "hierarchical:0.0", "--with-dob", cwd=small_table)
    row = next(line for line in out.splitlines() if line.startswith("| 3,000"))
    assert row.split(" | ")[8].split(" / ")[1] == "32400", row
    assert "the date of birth a QI" in out, out


def test_bench_scale_pairs_each_job_with_a_scan_of_its_own(small_table):
    """--paired: each job run right after a scan of its own; "× scan" is the median of the pairs'
    ratios, printed with their range. Oracle: the pairs' seconds it reports, divided here."""
    args = ["--sizes", "3000", "--data", str(small_table / "scale_paired"), "--cases", "equal:0.0", "--paired"]
    result = json.loads(_run("bench_scale.py", *args, "--runs", "3", "--json", cwd=small_table))["results"][0]
    ratios = sorted(job / scan for job, scan in result["pairs"])
    assert result["paired"] and len(ratios) == 3 and all(r > 0 for r in ratios)
    assert result["ratio"] == pytest.approx(ratios[1])
    assert result["ratio_range"] == pytest.approx([ratios[0], ratios[2]])
    assert result["scan_seconds"] == pytest.approx(sorted(scan for _, scan in result["pairs"])[1])
    # The table's format alone: one pair prints its range too (low and high the same), as three do.
    table = _run("bench_scale.py", *args, "--runs", "1", cwd=small_table)
    row = next(line for line in table.splitlines() if line.startswith("| 3,000"))
    assert row.split(" | ")[5].endswith(")") and "× (" in row.split(" | ")[5], row


def test_bench_wide_counts_both_walks(small_table):
    """Both walks evaluate nodes since the search decides the lattice from both ends; counting the
    walk from below alone printed 0 nodes for a finished search. The two runners run one search: the
    same nodes, in 15-QI keys over several words or one query each."""
    out = _run("bench_wide.py", str(small_table / "table_15.toml"), "--budget", "60", cwd=small_table)
    lines = out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["batch", "node"], out
    assert all("finished" in line for line in lines), out
    nodes = {line.split(", ")[1].split(" nodes")[0] for line in lines}
    assert len(nodes) == 1 and nodes != {"0"}, out


@pytest.mark.parametrize(("option", "value"), [("--rows", "0"), ("--rows", "-5"), ("--threads", "0"),
                                               ("--threads", "-2")])
def test_make_table_refuses_a_count_below_one(option, value, tmp_path):
    """``make_table.py --rows -5`` (or 0) wrote an empty table and its specs, and ``--threads 0`` was
    taken for the default while -2 failed in DuckDB with a traceback. Oracle: argparse's usage error
    (exit 2) naming the option and the value, and the file system: no output folder was made."""
    out = tmp_path / "t"
    done = _invoke("make_table.py", "--rows", "10", "--out", str(out), option, value, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"argument {option}: " in done.stderr and value in done.stderr, done.stderr
    assert not out.exists()


@pytest.mark.parametrize("script", ["bench_scale.py", "bench_check.py"])
def test_a_scale_benchmark_refuses_a_size_of_no_rows(script, tmp_path):
    """``--sizes 0`` asked make_table.py for an empty table (now refused there with a traceback).
    Oracle: argparse's usage error (exit 2) naming --sizes; no data folder was made."""
    done = _invoke(script, "--sizes", "0", "--data", str(tmp_path / "data"), cwd=tmp_path)
    assert done.returncode == 2 and "argument --sizes: " in done.stderr, done.stderr
    assert not (tmp_path / "data").exists()


def _description(script: Path) -> str:
    """The first paragraph of a script's docstring, its whitespace as argparse fills it (one space)."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")))
    assert doc, f"{script.name} has no docstring"
    return " ".join(doc.split("\n\n")[0].split())


# Scripts with a command line of their own; probe_part_memory.py hands its arguments to sqlclose's.
COMMANDS = [s for s in SCRIPTS if '__name__ == "__main__"' in s.read_text(encoding="utf-8")
            and s.name != "probe_part_memory.py"]


@pytest.mark.parametrize("script", COMMANDS, ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_a_benchmark_help_describes_it_whole(script, tmp_path):
    """``bench_release_write.py --help`` cut its description mid-sentence ("…twenty-third and"): it
    was the docstring's first line, not its first paragraph; bench_gaa.py printed none. Oracle: the
    docstring's first paragraph, read from the file's source (ast), is in the help whole."""
    done = _invoke(str(script.relative_to(BENCHMARKS)), "--help", cwd=tmp_path, COLUMNS="100")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _description(script) in " ".join(done.stdout.split()), done.stdout


def test_the_benchmarks_compile_sqlclose_before_their_runs():
    """bench_scale's and bench_adult's jobs read sqlclose's bytecode compiled before the runs (as a wheel's install has
    it). Under PYTHONDONTWRITEBYTECODE no run writes it: each compiled what it did not find, so a
    figure hung on which earlier runs had left bytecode. Oracle: Python itself, in a fresh process,
    names where it reads each module's bytecode, and the file there was compiled from the module's
    source as it is now (its header's mtime and size)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import precompile
    finally:
        sys.path.remove(str(BENCHMARKS))
    precompile.compile_sqlclose()
    probe = ("import importlib, json; names = ['sqlclose.cli', 'sqlclose.search.batch_runner', "
             "'sqlclose.release.verify_sql']; mods = [importlib.import_module(n) for n in names]; "
             "print(json.dumps([[m.__spec__.origin, m.__spec__.cached] for m in mods]))")
    found = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                      check=True).stdout)
    for origin, cached in found:
        header = Path(cached).read_bytes()[:16]
        source = Path(origin).stat()
        assert int.from_bytes(header[8:12], "little") == int(source.st_mtime) & 0xFFFFFFFF, origin
        assert int.from_bytes(header[12:16], "little") == source.st_size & 0xFFFFFFFF, origin
