"""The ``sqlclose`` command (``cli.run``) keeps Python's cyclic garbage collector off while its
modules load, then, at the command's guard, moves what the process holds out of the collector's
sight (``gc.freeze``) and turns it on again: the job's own garbage is collected, and the passes no
longer read the modules' objects. A program that calls ``main`` itself keeps its collector as it
set it. Observed through the interpreter's own ``gc`` state, in a fresh interpreter per case."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from table3_project import table3_project

# Records the collector's state when the command's module is imported, and when the command imports
# the engines' entry (``sqlclose.api``, in its body, past the guard), by a finder that finds
# nothing; and at the process's end (an exit handler: ``run`` runs them before its quick exit).
RUN = """
import atexit, gc, json, sys
marker, how, args = sys.argv[1], sys.argv[2], sys.argv[3:]
seen = {}

class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "sqlclose.cli.anonymize":
            seen["loading"] = {"enabled": gc.isenabled(), "passes": gc.get_stats()[0]["collections"]}
        if name == "sqlclose.api":
            seen["command"] = {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
        return None

def record():
    seen["end"] = {"enabled": gc.isenabled(), "passes": gc.get_stats()[0]["collections"]}
    with open(marker, "w") as f:
        json.dump(seen, f)

sys.meta_path.insert(0, Spy())
atexit.register(record)
if how == "run":
    sys.argv = ["sqlclose", *args]
    from sqlclose.cli import run
    run()
gc.disable()  # a caller's own setting, which ``main`` must leave as it is
from sqlclose.cli import main
try:
    main(args, standalone_mode=False)
finally:
    record()
"""


def _run(tmp_path: Path, how: str) -> dict:
    project = table3_project(tmp_path)
    marker = tmp_path / "gc.json"
    proc = subprocess.run([sys.executable, "-c", RUN, str(marker), how, "anonymize", str(project / "spec.toml"),
                           "--quiet"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "release.parquet").exists()  # the release was made, written and verified
    return json.loads(marker.read_text())


def test_the_command_loads_its_modules_with_the_collector_off_then_collects_the_jobs_garbage(tmp_path):
    seen = _run(tmp_path, "run")
    assert seen["loading"]["enabled"] is False  # off while the command's module loads
    assert seen["command"]["enabled"] is True  # on again for the job
    # What the process held by the guard (the interpreter's, click's and sqlclose's modules: over
    # 50 k objects) is out of the collector's sight; nothing else freezes objects.
    assert seen["command"]["frozen"] > 50_000
    assert seen["end"]["passes"] > seen["loading"]["passes"]  # the job's garbage was collected


def test_a_program_calling_main_keeps_its_collector_as_it_set_it(tmp_path):
    seen = _run(tmp_path, "main")
    assert seen["command"] == {"enabled": False, "frozen": 0}
    assert seen["end"]["enabled"] is False
