"""Every path the command line takes (each ``click.Path`` parameter of each command), named with a byte
that is no UTF-8 (``x\\xff…``, a Latin-1 name: Python holds the byte as a lone surrogate). The spec
file, sources, hierarchies and outputs were refused before anything was read (ninety-eighth and
ninety-ninth rounds), but ``check --against x\\xff.report.json`` read the report and passed, ``report``
read one and wrote its page, ``report --html x\\xff.html``, ``anonymize --report``/``--html`` and
``sweep --out`` wrote there, told as ``x\\udcff…``, and ``--temp-directory`` failed in DuckDB (exit 1,
``std::bad_cast``). Each is now refused as the others are (``cli.common.refuse_undecodable_paths``),
exit 2, nothing read or written.

Oracles: the messages spelled out by hand (the name by its bytes, ``\\xff``), the exit code of the
spec file's refusal, and the folder's listing before and after."""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import click
import pytest
from forked_cli import run_cli
from table3_project import table3_released
from warehouse_steps import TWO_COLUMN_SPEC

READ = "sqlclose names the files it reads (in messages, in the report) as UTF-8 text"
WRITTEN = "sqlclose names the files it writes (in messages, in the report) as UTF-8 text"
ENGINE = "the engine takes a path as UTF-8 text"
RENAME = "rename it (or the folder holding it) in UTF-8"
GIVE = "give a path named in UTF-8"
NOT_UTF8 = "its name is not UTF-8 (a byte of another encoding is shown as \\xNN), and {why}: {fix}"

# (command, parameter): the arguments (the bad name as {bad}, the pair as {release}, {report}, {spec}, its
# folder {folder}, an empty folder for what a run would write {fresh}), the bad file's name, and what the
# refusal says: (told, why, fix).
CASES = {
    ("anonymize", "spec_path"): (["anonymize", "{bad}"], "s\xff.toml", ("cannot read the spec file", READ, RENAME)),
    ("anonymize", "source"): (["anonymize", "{spec}", "-o", "{fresh}/o.parquet", "--source", "{bad}"], "t\xff.csv",
                              ("cannot read the source", ENGINE, RENAME)),
    ("anonymize", "output"): (["anonymize", "{spec}", "-o", "{bad}"], "x\xff.parquet",
                              ("cannot write the output path", ENGINE, GIVE)),
    ("anonymize", "report"): (["anonymize", "{spec}", "-o", "{fresh}/o.parquet", "--report", "{bad}"],
                              "x\xff.json", ("cannot write the report", WRITTEN, GIVE)),
    ("anonymize", "temp_directory"): (["anonymize", "{spec}", "-o", "{fresh}/o.parquet", "--temp-directory",
                                       "{bad}"], "spill\xff", ("cannot spill to the temporary folder", ENGINE,
                                                               "give a folder named in UTF-8")),
    ("anonymize", "histogram"): (["anonymize", "{folder}/w.toml", "--histogram", "{bad}", "--dialect", "duckdb",
                                  "-o", "{fresh}/r.sql"], "h\xff.parquet", ("cannot read the source", ENGINE, RENAME)),
    ("anonymize", "html_path"): (["anonymize", "{spec}", "-o", "{fresh}/o.parquet", "--html", "{bad}"],
                                 "x\xff.html", ("cannot write the page", WRITTEN, GIVE)),
    ("check", "spec_path"): (["check", "{release}", "--spec", "{bad}"], "s\xff.toml",
                             ("cannot read the spec file", READ, RENAME)),
    ("check", "report_path"): (["check", "{release}", "--against", "{bad}"], "x\xff.report.json",
                               ("cannot read the report", READ, RENAME)),
    ("check", "temp_directory"): (["check", "{release}", "--against", "{report}", "--temp-directory", "{bad}"],
                                  "spill\xff", ("cannot spill to the temporary folder", ENGINE,
                                                "give a folder named in UTF-8")),
    ("demo", "folder"): (["demo", "--folder", "{bad}"], "demo\xff", ("cannot write the demo's folder", WRITTEN, GIVE)),
    ("explain", "spec_path"): (["explain", "{bad}"], "s\xff.toml", ("cannot read the spec file", READ, RENAME)),
    ("explain", "source"): (["explain", "{spec}", "--source", "{bad}"], "t\xff.csv",
                            ("cannot read the source", ENGINE, RENAME)),
    ("hierarchy show", "data"): (["hierarchy", "show", "{spec}:age", "--data", "{bad}"], "t\xff.csv",
                                 ("cannot read the source", ENGINE, RENAME)),
    ("hierarchy validate", "data"): (["hierarchy", "validate", "{folder}/age.csv", "--data", "{bad}", "--column",
                                      "age"], "t\xff.csv", ("cannot read the source", ENGINE, RENAME)),
    ("report", "report_path"): (["report", "{bad}", "--html", "{fresh}/p.html"], "x\xff.report.json",
                                ("cannot read the report", READ, RENAME)),
    ("report", "html_path"): (["report", "{report}", "--html", "{bad}"], "p\xff.html",
                              ("cannot write the page", WRITTEN, GIVE)),
    ("report", "spec_path"): (["report", "{report}", "--html", "{fresh}/p.html", "--spec", "{bad}"], "s\xff.toml",
                              ("cannot read the spec file", READ, RENAME)),
    ("report", "release_path"): (["report", "{report}", "--html", "{fresh}/p.html", "--release", "{bad}"],
                                 "x\xff.parquet", ("cannot read the release", ENGINE, RENAME)),
    ("sql", "spec_path"): (["sql", "{bad}", "--dialect", "duckdb"], "s\xff.toml",
                           ("cannot read the spec file", READ, RENAME)),
    ("sweep", "spec_path"): (["sweep", "{bad}", "--out", "{fresh}/sw", "--k", "2,3"], "s\xff.toml",
                             ("cannot read the spec file", READ, RENAME)),
    ("sweep", "out"): (["sweep", "{spec}", "--out", "{bad}", "--k", "2,3"], "sw\xff",
                       ("cannot write the sweep's folder", WRITTEN, GIVE)),
    ("sweep", "source"): (["sweep", "{spec}", "--out", "{fresh}/sw", "--k", "2,3", "--source", "{bad}"], "t\xff.csv",
                          ("cannot read the source", ENGINE, RENAME)),
    ("sweep", "temp_directory"): (["sweep", "{spec}", "--out", "{fresh}/sw", "--k", "2,3", "--temp-directory",
                                   "{bad}"], "spill\xff", ("cannot spill to the temporary folder", ENGINE,
                                                           "give a folder named in UTF-8")),
}


def _latin1(name: str) -> str:
    """The file name whose bytes are ``name`` in Latin-1 (``x\\xff.toml``: the byte 0xff, no UTF-8)."""
    return os.fsdecode(name.encode("latin-1"))


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> tuple[Path, Path, Path]:
    """Table 3 released, and a copy of each file a case reads under a name holding the byte 0xff."""
    release, report = table3_released(tmp_path_factory.mktemp("names") / "p")
    folder = release.parent.parent
    for name, copied in (("s\xff.toml", "spec.toml"), ("t\xff.csv", "table3.csv")):
        shutil.copyfile(folder / copied, folder / _latin1(name))
    shutil.copyfile(release, folder / _latin1("x\xff.parquet"))
    shutil.copyfile(report, folder / _latin1("x\xff.report.json"))
    (folder / "w.toml").write_text(TWO_COLUMN_SPEC)  # the warehouse path's (--histogram)
    return folder, release, report


def _listing(folder: Path) -> list[bytes]:
    return sorted(os.fsencode(p) for p in folder.rglob("*"))


@pytest.mark.parametrize("case", CASES, ids=[" ".join(case) for case in CASES])
def test_a_path_named_not_in_utf8_is_refused_before_anything_is_read(released, case, tmp_path):
    folder, release, report = released
    args, name, (told, why, fix) = CASES[case]
    bad = folder / _latin1(name)
    filled = [a.format(bad=bad, release=release, report=report, spec=folder / "spec.toml", folder=folder,
                       fresh=tmp_path)
              for a in args]
    before = _listing(folder)
    result = run_cli(filled, cwd=folder)
    shown = f"{folder}/{name.replace(chr(0xff), chr(92) + 'xff')}"  # the byte spelled \xff, by hand
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"sqlclose: error: {told} {shown}: {NOT_UTF8.format(why=why, fix=fix)}" in result.stderr, result.stderr
    assert "\\udc" not in result.stderr and "Traceback" not in result.stderr
    assert _listing(folder) == before and _listing(tmp_path) == []  # nothing written: no page, report, folder


def test_the_cases_are_every_path_parameter_of_the_command_line():
    """A path option added later is refused by its type (``click.Path``): this list must name it."""
    from sqlclose.cli import COMMANDS

    found = set()

    def walk(name: str, command: click.Command) -> None:
        for sub, inner in getattr(command, "commands", {}).items():
            walk(f"{name} {sub}", inner)
        found.update((name, p.name) for p in command.params if isinstance(p.type, click.Path))

    for name, target in COMMANDS.items():
        module, attr = target.split(":")
        walk(name, getattr(importlib.import_module(module), attr))
    assert found == set(CASES)
