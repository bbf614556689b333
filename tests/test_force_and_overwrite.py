"""What may replace an existing output: overwrite (the spec's, --overwrite, the API's True), and
--force for this spec's own release alone.

Review of the ninety-first round: `--force` replaced any file at the output path with
`overwrite = false` (a user's notes, another spec's release); the API's `overwrite="no"` and the
spec's `overwrite = "yes"` or `1` were read as true. The oracle: the files' bytes before and after,
and the exit codes and messages the README gives.
"""

from __future__ import annotations

import json

import pytest
from table3_project import invoke, table3_project

import sqlclose
from sqlclose.errors import InputError

KEY = {"SQLCLOSE_FINGERPRINT_KEY": "k3y"}


@pytest.fixture
def project(tmp_path):
    return table3_project(tmp_path)


def _release(project):
    return project / "out" / "release.parquet"


def _report(project):
    return project / "out" / "release.parquet.report.json"


@pytest.mark.parametrize("env", [KEY, {}], ids=["with-the-key", "without-the-key"])
@pytest.mark.parametrize("foreign", ["release", "report", "both"])
def test_force_does_not_replace_a_file_that_is_not_this_specs_release(project, env, foreign):
    """A user's files at the output or report path, overwrite = false: --force redoes nothing of
    theirs, exit 2 as without --force, every byte kept."""
    (project / "out").mkdir()
    theirs = {"release": [_release(project)], "report": [_report(project)],
              "both": [_release(project), _report(project)]}[foreign]
    for path in theirs:
        path.write_text(f"my notes in {path.name}")
    result = invoke("anonymize", project / "spec.toml", "--force", env=env)
    assert result.exit_code == 2, result.output
    assert "already exists; pass overwrite (--overwrite) to replace it" in result.output
    for path in theirs:
        assert path.read_text() == f"my notes in {path.name}"
    assert sorted(p.name for p in (project / "out").iterdir()) == sorted(p.name for p in theirs)


def test_force_redoes_this_specs_own_release_when_the_input_changed(project):
    """The release this spec made, its report beside it: --force replaces the pair without overwrite
    (the input changed, so it is not up to date; without --force it is refused)."""
    assert invoke("anonymize", project / "spec.toml", "-q", env=KEY).exit_code == 0
    stamp = _release(project).stat().st_mtime_ns
    fingerprint = json.loads(_report(project).read_text())["input"]["fingerprint"]
    (project / "table3.csv").write_text((project / "table3.csv").read_text().replace("47677", "47671"))
    result = invoke("anonymize", project / "spec.toml", env=KEY)
    assert result.exit_code == 2 and "already exists" in result.output, result.output
    assert _release(project).stat().st_mtime_ns == stamp
    result = invoke("anonymize", project / "spec.toml", "--force", "-q", env=KEY)
    assert result.exit_code == 0, result.output
    assert _release(project).stat().st_mtime_ns != stamp
    assert json.loads(_report(project).read_text())["input"]["fingerprint"] not in (None, fingerprint)


def test_force_does_not_replace_this_specs_release_once_its_file_was_edited(project):
    """The report beside it is this spec's, but the file is no longer what it vouches for (someone
    replaced it): not this spec's release, so not replaced without overwrite."""
    assert invoke("anonymize", project / "spec.toml", "-q", env=KEY).exit_code == 0
    _release(project).write_bytes(b"someone else's file")
    result = invoke("anonymize", project / "spec.toml", "--force", env=KEY)
    assert result.exit_code == 2 and "already exists" in result.output, result.output
    assert _release(project).read_bytes() == b"someone else's file"


def test_force_does_not_replace_another_specs_release(project):
    """A release another spec made at the same path (k = 2 here, k = 3 in the project's spec)."""
    other = project / "other.toml"
    other.write_text((project / "spec.toml").read_text().replace("k = 3", "k = 2"))
    assert other.read_text() != (project / "spec.toml").read_text()
    assert invoke("anonymize", other, "-q", env=KEY).exit_code == 0
    before = _release(project).read_bytes(), _report(project).read_bytes()
    result = invoke("anonymize", project / "spec.toml", "--force", env=KEY)
    assert result.exit_code == 2 and "already exists" in result.output, result.output
    assert (_release(project).read_bytes(), _report(project).read_bytes()) == before
    assert invoke("anonymize", project / "spec.toml", "--force", "--overwrite", "-q", env=KEY).exit_code == 0
    assert _report(project).read_bytes() != before[1]


@pytest.mark.parametrize(("given", "shown"), [('"yes"', "'yes'"), ('"no"', "'no'"), ("1", "1"), ("0", "0"),
                                              ('"true"', "'true'")])
def test_the_specs_overwrite_must_be_true_or_false(project, given, shown):
    """`overwrite = "yes"` and `overwrite = 1` were read as true, and replaced the file there."""
    (project / "out").mkdir()
    _release(project).write_text("kept")
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace("overwrite = false", f"overwrite = {given}"))
    result = invoke("anonymize", spec)
    assert result.exit_code == 2, result.output
    assert f"output.overwrite: give true or false, without quotes (got {shown})" in result.output
    assert _release(project).read_text() == "kept"


@pytest.mark.parametrize(("rule", "says"), [
    ('zip = { mask = 1, length = 5 }', "quasi_identifiers.zip.mask: give true (a character more masked at each level) "
                                       "or the characters masked at each level, e.g. mask = [1, 3, 5] (got 1)"),
    ('zip = { mask = "yes", length = 5 }', "quasi_identifiers.zip.mask: give true"),
    ('zip = { dates = "yes" }', "quasi_identifiers.zip.dates: give true (day, month, year, 5 years) or the levels, "
                                "e.g. dates = [\"month\", \"year\"] (got 'yes')"),
])
def test_a_rules_true_is_true_alone(project, rule, says):
    """mask = 1 was read as mask = true, silently."""
    spec = project / "spec.toml"
    text = spec.read_text()
    line = next(x for x in text.splitlines() if x.startswith("zip = "))
    spec.write_text(text.replace(line, rule))
    result = invoke("anonymize", spec, "--dry-run")
    assert result.exit_code == 2 and says in result.output, result.output


@pytest.mark.parametrize("given", ["no", 1, None, "True"])
def test_the_apis_overwrite_must_be_true_or_false(project, given):
    """`Release.write(path, overwrite="no")` replaced the file at the path."""
    target = project / "mine.parquet"
    target.write_text("my precious file")
    spec = sqlclose.load_spec(project / "spec.toml")
    with sqlclose.anonymize(None, spec) as release:
        for write in (lambda: release.write(target, overwrite=given),
                      lambda: release.write_parquet(target, overwrite=given)):
            with pytest.raises(InputError, match=r"overwrite must be True or False \(got "):
                write()
    assert target.read_text() == "my precious file"
    assert sorted(p.name for p in project.iterdir() if p.name.startswith("mine")) == ["mine.parquet"]


def test_force_does_not_replace_a_users_page(project):
    """Review of the ninety-first round: --force made the release replaceable, and the page check
    took that for the page's too: a user's notes.html at --html was replaced. The page this
    release's run wrote is still rewritten."""
    assert invoke("anonymize", project / "spec.toml", "-q", "--html", project / "own.html", env=KEY).exit_code == 0
    notes = project / "notes.html"
    notes.write_text("my own notes page")
    result = invoke("anonymize", project / "spec.toml", "--force", "--html", notes, env=KEY)
    assert result.exit_code == 2 and "already exists" in result.output, result.output
    assert notes.read_text() == "my own notes page"
    stamp = (project / "own.html").stat().st_mtime_ns
    result = invoke("anonymize", project / "spec.toml", "--force", "-q", "--html", project / "own.html", env=KEY)
    assert result.exit_code == 0, result.output
    assert (project / "own.html").stat().st_mtime_ns != stamp


def test_force_is_refused_on_the_warehouse_path(project):
    """The warehouse path has no up-to-date release to redo: --force there was silently nothing
    (and before, an overwrite)."""
    result = invoke("anonymize", project / "spec.toml", "--histogram", project / "h.parquet", "--force")
    assert result.exit_code == 2, result.output
    assert "it takes no --source, --html or --force (it redoes the query every run; --overwrite replaces one)" \
        in " ".join(result.output.split()), result.output


def test_a_rules_levels_may_be_a_tuple_from_python():
    """The strict true-or-a-list check refused (1, 3), which pydantic read as [1, 3] before."""
    from sqlclose.model.spec import as_spec

    spec = as_spec({"k": 2, "quasi_identifiers": {"zip": {"mask": (1, 3), "length": 5},
                                                 "d": {"dates": ("month", "year")}},
                    "sensitive": {"s": {"distinct_l": 2}}})
    assert spec.quasi_identifiers["zip"].mask == [1, 3] and spec.quasi_identifiers["d"].dates == ["month", "year"]


# Review of the ninety-first round, left then and mended in the ninety-second: --force judged the
# pair at the output path to be this spec's own before the search, and the write replaced whatever
# stood there after it. The oracle: the bytes of what another run placed meanwhile, kept.

def _meanwhile(monkeypatch, point: str, act) -> None:
    """``act()`` once, when the run first reaches ``point`` (api's scan or search, the writer's
    write or place): another process's change at that moment of the run."""
    import sqlclose.api
    import sqlclose.release.writers

    done = []

    def at(name: str) -> None:
        if name == point and not done:  # the first time, as the test hook holds a run
            done.append(act())
    for module in (sqlclose.api, sqlclose.release.writers):
        monkeypatch.setattr(module, "checkpoint", at)


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("point", ["search", "place"])
@pytest.mark.parametrize("changed", ["release", "report"])
def test_force_does_not_replace_what_was_placed_during_the_run(project, monkeypatch, point, changed):
    """The spec's own release, --force without overwrite, and the file or its report replaced during
    the search (or just before the pair is placed): refused, exit 2, the new bytes kept."""
    assert invoke("anonymize", project / "spec.toml", "-q", env=KEY).exit_code == 0
    (project / "table3.csv").write_text((project / "table3.csv").read_text().replace("47677", "47671"))
    path = _release(project) if changed == "release" else _report(project)
    theirs = b"another run's file, placed meanwhile"
    _meanwhile(monkeypatch, point, lambda: path.write_bytes(theirs))
    result = invoke("anonymize", project / "spec.toml", "--force", env=KEY)
    assert result.exit_code == 2, result.output
    assert f"{path} changed while this run was searching and writing" in result.output
    assert "nothing of this run was placed; run again" in result.output
    assert path.read_bytes() == theirs
    assert _leftovers(project / "out") == []


@pytest.mark.parametrize("output", [["--output", "out/r.parquet"], ["--output", "out/r.csv"],
                                    ["--output", "out/r", "--format", "parquet-folder"],
                                    ["--output", "out/r.duckdb", "--output-table", "people"]],
                         ids=["parquet", "csv", "folder", "duckdb"])
def test_force_still_redoes_its_own_release_when_nothing_changed_meanwhile(project, monkeypatch, output):
    """The control, in every format: the same run, the pair untouched during it, is replaced."""
    args = ("anonymize", project / "spec.toml", *(project / a if a.startswith("out/") else a for a in output))
    assert invoke(*args, "-q", env=KEY).exit_code == 0
    report = project / f"{output[1]}{'.people' if 'people' in output else ''}.report.json"
    before = json.loads(report.read_text())["input"]["fingerprint"]
    (project / "table3.csv").write_text((project / "table3.csv").read_text().replace("47677", "47671"))
    _meanwhile(monkeypatch, "search", lambda: None)
    result = invoke(*args, "--force", "-q", env=KEY)
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text())["input"]["fingerprint"] not in (None, before)


def test_force_does_not_replace_a_folder_release_rewritten_in_place(project, monkeypatch):
    """A Parquet folder: one of its files rewritten in place during the search leaves the folder's
    own identity as it was; the files' are compared too."""
    folder = project / "out" / "release"
    args = ("anonymize", project / "spec.toml", "--output", folder, "--format", "parquet-folder")
    assert invoke(*args, "-q", env=KEY).exit_code == 0
    (project / "table3.csv").write_text((project / "table3.csv").read_text().replace("47677", "47671"))
    part = next(p for p in folder.rglob("*.parquet"))
    theirs = b"rewritten in place"

    def rewrite() -> None:
        with part.open("r+b") as f:
            f.truncate(0)
            f.write(theirs)
    _meanwhile(monkeypatch, "search", rewrite)
    result = invoke(*args, "--force", env=KEY)
    assert result.exit_code == 2 and f"{folder} changed while this run was searching" in result.output, \
        result.output
    assert part.read_bytes() == theirs


def test_force_does_not_replace_a_database_written_during_the_run(project, monkeypatch):
    """A DuckDB table release: another table written into the database during the search; the
    run is refused before it touches the file, and that table is kept."""
    import duckdb

    database = project / "out" / "release.duckdb"
    args = ("anonymize", project / "spec.toml", "--output", database, "--output-table", "people")
    assert invoke(*args, "-q", env=KEY).exit_code == 0
    (project / "table3.csv").write_text((project / "table3.csv").read_text().replace("47677", "47671"))

    def write_another_table() -> None:
        with duckdb.connect(str(database)) as con:
            con.execute("CREATE TABLE notes AS SELECT 'kept' AS note")
    _meanwhile(monkeypatch, "search", write_another_table)
    result = invoke(*args, "--force", env=KEY)
    assert result.exit_code == 2 and f"{database} changed while this run was searching" in result.output, \
        result.output
    with duckdb.connect(str(database), read_only=True) as con:
        assert con.execute("SELECT note FROM notes").fetchall() == [("kept",)]
