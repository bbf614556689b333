"""The sign-off page (``anonymize --html``, ``report --html``) is an output like the release: it never
replaces a file the job reads, the release or its report, nor an existing file without --overwrite,
and a page that cannot be written stops the job before anything is placed. The oracle: the bytes of
every file before and after, and whether the release exists."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from table3_project import invoke, table3_project


@pytest.fixture
def project(tmp_path) -> Path:
    return table3_project(tmp_path)


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("page", "says"), [
    ("table3.csv", "is a file this job reads"),  # the source
    ("age.csv", "is a file this job reads"),  # a hierarchy
    ("spec.toml", "is a file this job reads"),
    ("out/release.parquet", "is the release"),
    ("out/release.parquet.report.json", "is the release's report"),
    ("precious.html", "already exists"),
    ("table3.csv/page.html", "is a file"),  # a file in the way of its folder
])
def test_anonymize_refuses_a_page_path_before_the_search(project, page, says):
    (project / "precious.html").write_text("precious")
    before = _digests(project)
    result = invoke("anonymize", project / "spec.toml", "--html", project / page, "-q")
    assert result.exit_code in (2, 5), result.output
    assert says in result.output, result.output
    assert _digests(project) == before  # nothing written, nothing placed
    assert not (project / "out").exists()


def test_an_existing_page_is_replaced_with_overwrite(project):
    page = project / "page.html"
    page.write_text("<!DOCTYPE html><p>old page</p>")
    result = invoke("anonymize", project / "spec.toml", "--html", page, "--overwrite", "-q")
    assert result.exit_code == 0, result.output
    assert "zip = 1, age = 2" in page.read_text()  # the paper's Table 5 node


def test_an_up_to_date_release_still_gets_its_page(project):
    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}  # what tells "up to date"
    assert invoke("anonymize", project / "spec.toml", "-q", env=env).exit_code == 0
    release = _digests(project / "out")
    page = project / "page.html"
    result = invoke("anonymize", project / "spec.toml", "--html", page, env=env)
    assert result.exit_code == 0 and "is up to date" in result.output, result.output
    assert "zip = 1, age = 2" in page.read_text()
    assert _digests(project / "out") == release
    # what it says it did: the page written (it said "nothing to do" while it wrote one)
    assert f"nothing to do but its page {page}, written" in result.output, result.output
    result = invoke("anonymize", project / "spec.toml", env=env)
    assert "same node); nothing to do (--force redoes it)" in result.output, result.output


def test_an_up_to_date_rerun_with_html_and_json_prints_the_report_and_writes_the_page(project):
    """Ninety-sixth round: `--html page.html --json` on an up-to-date release writes the page (its
    text mode says so), and `--json` prints the report alone, as its schema has it (no key of the
    command's own: a job validating stdout against docs/report-schema.json reads it as a report), on
    a run that releases and on the rerun alike. The oracle: the report file's JSON, the page on disk
    being this release's (its node), and the release's bytes unchanged."""
    import json

    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}
    spec, report = project / "spec.toml", project / "out" / "release.parquet.report.json"
    first = project / "first.html"
    result = invoke("anonymize", spec, "--html", first, "--json", env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(report.read_text()) and "zip = 1, age = 2" in first.read_text()
    release = _digests(project / "out")
    page = project / "page.html"
    result = invoke("anonymize", spec, "--html", page, "--json", env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(report.read_text()) and "zip = 1, age = 2" in page.read_text()
    assert _digests(project / "out") == release  # up to date: nothing released again


def test_an_up_to_date_rerun_rewrites_its_own_page_and_nothing_else(project):
    """rv3 #6: README: an up-to-date run exits 0 and '--html still writes the page'. The nightly
    `anonymize spec.toml --html page.html` on unchanged input succeeded the first night and exited 2
    the second ('page.html already exists'): the page was refused, before the up-to-date check, for
    being the page this very release's run wrote. That page is rewritten now; a file that is not
    sqlclose's page of this release (a foreign file, another release's page) is refused as before.
    The oracle: the exit codes, and the bytes of every file before and after."""
    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}
    spec, page = project / "spec.toml", project / "page.html"
    assert invoke("anonymize", spec, "-q", "--html", page, env=env).exit_code == 0
    release = _digests(project / "out")
    page.write_text(page.read_text().replace("</body>", "<p>yesterday's</p></body>"))
    result = invoke("anonymize", spec, "--html", page, env=env)
    assert result.exit_code == 0 and "is up to date" in result.output, result.output
    assert "zip = 1, age = 2" in page.read_text() and "yesterday's" not in page.read_text()  # rewritten
    assert _digests(project / "out") == release
    other = project / "other.html"  # the page of another release (another node): not this one's
    assert invoke("anonymize", spec, "-q", "-o", project / "b.parquet", "--node", "zip=2,age=2", "--html", other,
                  env=env).exit_code == 0
    foreign = project / "foreign.html"
    foreign.write_text("<!DOCTYPE html><p>the team's own notes</p>")
    for occupied in (other, foreign):
        before = _digests(project)
        result = invoke("anonymize", spec, "--html", occupied, env=env)
        assert result.exit_code == 2 and f"{occupied} already exists; pass --overwrite" in result.output, result.output
        assert _digests(project) == before


@pytest.mark.parametrize(("page", "says"), [
    ("out/release.parquet.report.json", "is the report"),
    ("out/release.parquet", "is the release"),
    ("age.csv", "is a file of the spec"),
    ("precious.html", "already exists"),
])
def test_report_refuses_a_page_path(project, page, says):
    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0
    (project / "precious.html").write_text("precious")
    before = _digests(project)
    result = invoke("report", project / "out" / "release.parquet.report.json", "--html", project / page,
                    "--spec", project / "spec.toml")
    assert result.exit_code == 2 and says in result.output, result.output
    assert _digests(project) == before


def test_report_replaces_a_page_with_overwrite(project):
    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0
    page = project / "page.html"
    page.write_text("<!DOCTYPE html><p>old page</p>")
    args = ["report", project / "out" / "release.parquet.report.json", "--html", page]
    assert invoke(*args).exit_code == 2
    result = invoke(*args, "--overwrite")
    assert result.exit_code == 0, result.output
    assert "zip = 1, age = 2" in page.read_text()


def test_a_closed_pipe_after_placing_says_the_release_stands(project):
    """`sqlclose anonymize … | true`: the summary meets a closed pipe after the pair
    was placed; the message must not say that nothing was placed. The oracle: the files on disk."""
    # The reader leaves at once, long before the search ends: the summary's first line meets a closed pipe.
    command = f"{shlex.quote(sys.executable)} -m sqlclose.cli anonymize {shlex.quote(str(project / 'spec.toml'))} " \
              "--no-progress | true"
    result = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], capture_output=True, text=True)
    assert (project / "out" / "release.parquet").is_file()
    assert (project / "out" / "release.parquet.report.json").is_file()
    assert result.returncode == 5, result.stderr
    assert "are in place and verified, but printing the summary failed (Broken pipe)" in result.stderr, result.stderr
    assert "nothing was placed" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr


def test_a_job_whose_home_cannot_be_written_gets_its_page_without_matplotlib_warnings(project, tmp_path):
    """A service account's home is often read-only or absent: matplotlib, finding no config folder
    it can make, printed two warnings on stderr (under -q too, so cron mailed them every night) and
    used a temporary folder. The page is written, stderr stays empty, and no temporary folder of
    matplotlib's is left (it removes its own at exit)."""
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPL", "XDG_", "SQLCLOSE_"))}
    env.update(HOME=str(home), TMPDIR=str(temp))
    page = project / "page.html"
    proc = subprocess.run([sys.executable, "-m", "sqlclose.cli", "anonymize", str(project / "spec.toml"), "-q",
                           "--no-progress", "--html", str(page)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert page.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize("partition", [None, "age"])
def test_a_parquet_folder_release_gets_its_page(project, partition):
    """A release written as a Parquet folder (an output path without a suffix, Spark's only kind)
    was placed, and then its page refused: the page asked for the release to be a file ("does not
    exist; pass it explicitly", exit 5), and `sqlclose report --html`, which the error suggested,
    refused it the same way. The oracle: the page names the chosen node and the folder's digest from
    its report, and its classes are the folder's, counted by DuckDB."""
    import duckdb

    spec = (project / "spec.toml").read_text().replace('"out/release.parquet"', '"out/release"')
    if partition:
        spec = spec.replace("[output]", f'[output]\npartition_by = ["{partition}"]')
    (project / "spec.toml").write_text(spec)
    page = project / "page.html"
    result = invoke("anonymize", project / "spec.toml", "--html", page, "-q")
    assert result.exit_code == 0, result.output
    report = (project / "out" / "release.report.json").read_text()
    text = page.read_text()
    assert "zip = 1, age = 2" in text and __import__("json").loads(report)["output"]["sha256"] in text
    classes = duckdb.sql(f"SELECT COUNT(*) FROM (SELECT DISTINCT zip, age FROM read_parquet("
                         f"'{project / 'out' / 'release'}/**/*.parquet', hive_partitioning = true))").fetchall()[0][0]
    assert f"{classes} classes" in text


# ---- the page of `sqlclose report`: never over the data, never inside a folder release, never of a changed file ----
@pytest.mark.parametrize(("page", "with_spec", "says"), [
    ("table3.csv", False, "is the input the release was made from"),  # the report's input.source
    ("table3.csv", True, "is the spec's source"),
    ("disease.csv", False, "is the hierarchy of column 'disease' the report names"),
    ("disease.csv", True, "is a file of the spec"),
])
def test_report_page_never_overwrites_the_input_table(project, page, with_spec, says):
    """README: outputs — the page too — never overwrite inputs. `report --html table3.csv --overwrite`
    wrote the page over the table the release was made from (the report names it, input.source),
    with or without --spec: --overwrite replaces an earlier page, never the data. The oracle: the
    bytes of every file before and after, and the exit code."""
    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0
    before = _digests(project)
    args = ["report", project / "out" / "release.parquet.report.json", "--html", project / page, "--overwrite"]
    result = invoke(*args, *(["--spec", project / "spec.toml"] if with_spec else []))
    assert result.exit_code == 2, result.output
    assert f"the page path {project / page} {says}" in result.output, result.output
    assert _digests(project) == before


@pytest.mark.parametrize("how", ["anonymize", "report"])
def test_the_page_is_not_written_inside_a_released_parquet_folder(project, how):
    """`--html out/rel/page.html` with a Parquet folder release at out/rel put the page among its part
    files (exit 0): read_parquet('out/rel/**') then failed on it, and `check --against` said the folder
    had changed right after a verified run. Refused (exit 2), saying why. The oracle: the folder's
    files, read by DuckDB, and check --against."""
    import duckdb

    folder, page = project / "out" / "rel", project / "out" / "rel" / "page.html"
    if how == "report":
        assert invoke("anonymize", project / "spec.toml", "--output", folder, "-q").exit_code == 0
        result = invoke("report", project / "out" / "rel.report.json", "--html", page)
    else:
        result = invoke("anonymize", project / "spec.toml", "--output", folder, "--html", page, "-q")
    assert result.exit_code == 2 and f"lies inside {folder}, the release" in result.output, result.output
    assert not page.exists()
    if how == "report":  # the release stands, whole
        assert duckdb.sql(f"SELECT COUNT(*) FROM read_parquet('{folder}/**')").fetchall() == [(9,)]
        assert invoke("check", folder, "--against", project / "out" / "rel.report.json").exit_code == 0
    else:  # refused before the search: nothing placed
        assert not (project / "out").exists()


@pytest.mark.parametrize("page", ["rel/page.html", "rel/sub/page.html"])
def test_report_page_is_not_written_inside_another_reports_parquet_folder(project, page):
    """`report A.report.json --html B/page.html`, B a Parquet folder release of another report, wrote the
    page among B's part files (exit 0): only the folder of the report given was protected, and B then
    failed its own `check --against` (sha256 differs). Refused (exit 2), naming B and its report. The
    oracle: B's files' bytes before and after, and B's check --against its report."""
    out = project / "out"
    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0  # A: out/release.parquet
    assert invoke("anonymize", project / "spec.toml", "--output", out / "rel", "-q").exit_code == 0  # B
    before = _digests(out / "rel")
    result = invoke("report", out / "release.parquet.report.json", "--html", out / page)
    assert result.exit_code == 2, result.output
    assert (f"the page path {out / page} lies inside {out / 'rel'}, a Parquet folder release (its report: "
            f"{out / 'rel.report.json'})") in result.output, result.output
    assert _digests(out / "rel") == before
    assert invoke("check", out / "rel", "--against", out / "rel.report.json", "-q").exit_code == 0
    # a folder beside a file that is no report is no release: the page is written there
    (project / "notes").mkdir()
    (project / "notes.report.json").write_text("[]")
    assert invoke("report", out / "release.parquet.report.json", "--html", project / "notes" / "p.html").exit_code == 0


def test_anonymize_page_is_not_written_inside_another_releases_parquet_folder(project):
    """`anonymize --output a.parquet --html rel/page.html`, rel a Parquet folder release of an earlier run,
    wrote the page among rel's part files (exit 0), and rel then failed its check --against. Refused
    before the search (exit 2). The oracle: rel's files' bytes, its check --against, and no new release."""
    out = project / "out"
    assert invoke("anonymize", project / "spec.toml", "--output", out / "rel", "-q").exit_code == 0
    before = _digests(out)
    result = invoke("anonymize", project / "spec.toml", "--output", out / "a.parquet", "--html", out / "rel" / "p.html")
    assert result.exit_code == 2, result.output
    assert f"lies inside {out / 'rel'}, a Parquet folder release (its report: {out / 'rel.report.json'})" \
        in result.output, result.output
    assert _digests(out) == before  # no page, and no a.parquet
    assert invoke("check", out / "rel", "--against", out / "rel.report.json", "-q").exit_code == 0


@pytest.mark.parametrize("given", ["edited", "the input"])
def test_sign_off_page_of_a_file_that_no_longer_matches_its_report_does_not_say_verified(project, given):
    """The page printed 'verified from the written file; sha256 <the report's>' and the report's
    class figures over a file the report does not describe: the release edited afterwards (one row's
    ZIP changed, a class of 1 < k), or another file given with --release (the raw input). Refused as
    `check --against` refuses it (exit 4), and no page. The oracle: hashlib over the file against the
    report's sha256."""
    import duckdb

    release, report = project / "out" / "release.parquet", project / "out" / "release.parquet.report.json"
    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0
    args = ["report", report, "--html", project / "page.html"]
    if given == "edited":
        edited = project / "out" / "edited.parquet"
        duckdb.sql(f"COPY (SELECT * REPLACE (CASE WHEN salary = 3000 THEN '99999' ELSE zip END AS zip) "
                   f"FROM '{release}') TO '{edited}' (FORMAT parquet)")
        edited.replace(release)
        audited = release
    else:
        audited = project / "table3.csv"
        args += ["--release", audited]
    assert hashlib.sha256(audited.read_bytes()).hexdigest() != __import__("json").loads(report.read_text())[
        "output"]["sha256"]
    result = invoke(*args)
    assert result.exit_code == 4, result.output
    assert f"{audited} does not match its report {report}" in result.output
    assert not (project / "page.html").exists()


@pytest.mark.parametrize("forged", ["k", "distance", "t"])
def test_sign_off_page_of_a_report_whose_figures_were_edited_is_refused(project, forged):
    """Review of the sixty-third round: the page checked the release's digest, which ties the file to
    the report but not the report's figures to the file: a report edited beside its release (k and the
    smallest class 5 over classes of 3; the disease distance lowered to 0.05; salary's t lowered below
    its distance) got a page saying "verified", exit 0. Oracle: the class sizes and the largest salary
    distance read by a plain GROUP BY over the release; the page is refused (exit 4) with every edit,
    and not written; the unedited report gets its page."""
    import json

    import duckdb

    release, report = project / "out" / "release.parquet", project / "out" / "release.parquet.report.json"
    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0
    sizes = [n for (n,) in duckdb.sql(f"SELECT COUNT(*) FROM '{release}' GROUP BY zip, age").fetchall()]
    assert min(sizes) == 3
    doc = json.loads(report.read_text())
    salary = doc["privacy"]["sensitive"]["salary"]
    if forged == "k":
        doc["privacy"]["k"] = doc["privacy"]["min_class_size"] = 5
    elif forged == "distance":
        doc["privacy"]["sensitive"]["disease"]["max_emd"] = doc["t_against_release"]["disease"] = 0.05
    else:
        assert salary["max_emd"] > 0.1
        salary["t"] = 0.1
    forged_report = project / "out" / "forged.json"
    forged_report.write_text(json.dumps(doc))
    result = invoke("report", forged_report, "--html", project / "page.html", "--release", release)
    assert result.exit_code == 4, result.output
    assert f"{release} does not match its report {forged_report}" in result.output
    assert not (project / "page.html").exists()
    assert invoke("report", report, "--html", project / "page.html").exit_code == 0


@pytest.mark.parametrize(("content", "says"), [
    ("[1, 2]", "it holds a list, not the JSON object"),
    ("{}", "it lacks generalization, privacy, input, output, suppressed_rows, classes, utility"),
    ('{"error": "no generalization", "exit_code": 3, "kind": "no solution"}', "the --json document of a failed run"),
    ("not json", "is not a release report: it is not JSON"),
    (b"PAR1\xa2\x00\x15", "is not a release report: it is not text (a release itself?)"),
])
def test_report_of_a_json_file_that_is_not_a_report_is_bad_input_not_an_internal_error(tmp_path, content, says):
    """README: exit 1 is an internal error (a bug), 2 bad input. A file that is not a release report
    (a list, an empty object, a failed run's `--json` document) crashed on KeyError 'output' (exit 1)."""
    bogus = tmp_path / "not-a-report.json"
    bogus.write_bytes(content) if isinstance(content, bytes) else bogus.write_text(content)
    result = invoke("report", bogus, "--html", tmp_path / "page.html")
    assert result.exit_code == 2, result.output
    assert f"{bogus}" in result.output and says in result.output, result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("cut", ["privacy", "generalization", "utility", "output.sha256"])
def test_report_missing_a_section_is_bad_input(project, cut):
    import json

    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0
    doc = json.loads((project / "out" / "release.parquet.report.json").read_text())
    section, _, key = cut.partition(".")
    if key:
        del doc[section][key]
    else:
        del doc[section]
    (project / "cut.json").write_text(json.dumps(doc))
    result = invoke("report", project / "cut.json", "--html", project / "page.html")
    assert result.exit_code == 2, result.output
    assert f"it lacks {cut} " in result.output, result.output
    assert not (project / "page.html").exists()


@pytest.mark.parametrize("kind", ["a release's Parquet file", "a CSV file", "text"])
def test_overwrite_replaces_a_page_never_another_kind_of_file(project, kind):
    """--overwrite replaces a previous page at the page path, never a file of another kind there: a
    page path naming a copied release replaced it with HTML (review of the ninety-fourth round).
    Oracle: the file's bytes before and after."""
    other = project / "other.bin"
    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0
    data = {"a release's Parquet file": (project / "out" / "release.parquet").read_bytes(),
            "a CSV file": b"zip,age\n47677,29\n", "text": b"old page"}[kind]
    other.write_bytes(data)
    result = invoke("anonymize", project / "spec.toml", "--output", project / "out" / "second.parquet", "--html",
                    other, "--overwrite", "-q")
    assert result.exit_code == 2, result.output
    assert f"the page path {other} holds a file that is not an HTML page" in " ".join(result.output.split())
    assert other.read_bytes() == data
    assert not (project / "out" / "second.parquet").exists()


def test_report_html_never_replaces_the_release_beside_a_copied_report(project, tmp_path):
    """A pair copied to another folder: its report names the release where it was made (an absolute
    path), and `report --html COPY/release.parquet --overwrite` replaced the copy beside the report
    with the page (exit 0; review of the ninety-fourth round). Oracle: the copy's bytes."""
    assert invoke("anonymize", project / "spec.toml", "--output", project / "out" / "release.parquet",
                  "-q").exit_code == 0
    archive = tmp_path / "archive"
    archive.mkdir()
    for name in ("release.parquet", "release.parquet.report.json"):
        (archive / name).write_bytes((project / "out" / name).read_bytes())
    before = (archive / "release.parquet").read_bytes()
    result = invoke("report", archive / "release.parquet.report.json", "--html", archive / "release.parquet",
                    "--overwrite")
    assert result.exit_code == 2, result.output
    assert "is the release beside the report" in result.output
    assert (archive / "release.parquet").read_bytes() == before
