"""A report's sections (its objects) given as null or left out, read by ``sqlclose check --against`` and
``sqlclose report`` (review rv26 #6).

Before, a section given as null (``t_against_release``, ``node``, ``lattice``, ``lattice.levels``,
``hierarchies``, a model entry ``privacy.sensitive.salary.p``, ``utility.sensitive.<col>``) crashed both
readers (exit 1, "internal error: TypeError"), and ``check --against`` with ``node`` or ``lattice`` null
said the file matched "labels and levels" (exit 0). The oracle is the report's schema
(docs/report-schema.json, generated from ``Report``): a section it allows no null for, or a required
one left out, is a file that is not a report as sqlclose writes it, bad input (exit 2) naming the
field, and no page is written (the file system's state). A section the schema allows as null is read
as the schema means it: an optional one (a model entry) as left out (the model not asked), ``node``
and ``lattice`` ("null for GAA") only in a GAA report, ``gaa`` only in a full-domain one.
Review rv28: the figures the readers compute with or print, per column too (a node's level, a
column's levels, its l-diversity and L1 values, a distance's name), are refused by name as well,
and those the schema allows as null are printed "—" by the page.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_edits import set_field

from sqlclose.cli import main

TABLE3 = (Path(__file__).resolve().parents[1] / "datasets" / "table3" / "table3.csv").read_text()  # the shipped Table 3
SPEC = """
[source]
path = "t.csv"
[output]
path = "y.parquet"
[privacy]
k = 3
[quasi_identifiers]
zip = { mask = true, length = 5 }
age = { file = "age.csv" }
[sensitive.disease]
distinct_l = 2
[sensitive.salary]
p = 2
distance = "ordered"
t = 0.5
"""
AGES = "".join(f"{age};{age // 10}*;{'<40' if age < 40 else '>=40'};*\n"
               for age in (29, 22, 27, 43, 52, 47, 30, 36, 32))


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _release(folder, algorithm: str):
    (folder / "t.csv").write_text(TABLE3)
    (folder / "age.csv").write_text(AGES)
    (folder / "s.toml").write_text(SPEC + f'[search]\nalgorithm = "{algorithm}"\n')
    result = _run("anonymize", "-q", folder / "s.toml")
    assert result.exit_code == 0, result.output
    doc = json.loads((folder / "y.parquet.report.json").read_text())
    assert doc["algorithm"] == algorithm and doc["hierarchies"]["age"]["path"] == str(folder / "age.csv")
    return folder / "y.parquet", doc


@pytest.fixture(scope="module")
def incognito(tmp_path_factory):
    return _release(tmp_path_factory.mktemp("incognito"), "incognito")


@pytest.fixture(scope="module")
def gaa(tmp_path_factory):
    return _release(tmp_path_factory.mktemp("gaa"), "gaa")


def _read(tmp_path, release, doc, path: str, value, command: str, spec: bool = False):
    """Run ``command`` over ``doc`` with ``path`` set to ``value`` (``KeyError``: left out); ``spec``:
    with the release's spec (``--spec``)."""
    edited = json.loads(json.dumps(doc))
    set_field(edited, path, value)
    report = tmp_path / "edited.json"
    report.write_text(json.dumps(edited))
    given = ["--spec", release.parent / "s.toml"] if spec else []
    if command == "report":
        return _run("report", report, "--html", tmp_path / "page.html", "--release", release, *given)
    return _run("check", release, "--against", report, *given)


COMMANDS = ["check", "report"]
# Sections the schema allows no null for (a column's entries included), and what the refusal says.
NOT_NULL = ["t_against_release", "lattice.levels", "hierarchies", "hierarchies.age", "utility.sensitive",
            "utility.sensitive.disease", "utility.alteration", "utility.withheld"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("path", NOT_NULL)
def test_a_section_given_as_null_where_the_schema_allows_none_is_bad_input(tmp_path, incognito, path, command):
    result = _read(tmp_path, *incognito, path, None, command)
    assert result.exit_code == 2, result.output
    assert f"is not a release report as sqlclose writes it: {path} is null, not an object" in result.output, \
        result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("path", ["node", "lattice", "lattice.levels", "t_against_release"])
def test_a_required_section_left_out_is_bad_input(tmp_path, incognito, path, command):
    result = _read(tmp_path, *incognito, path, KeyError, command)
    assert result.exit_code == 2, result.output
    assert f"is not a release report: it lacks {path} " in result.output, result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("path", ["node", "lattice"])
def test_node_or_lattice_given_as_null_in_a_full_domain_report_is_bad_input(tmp_path, incognito, path, command):
    """The schema allows them null for a GAA release only: ``check`` said a full-domain report
    without its node matched "labels and levels" (exit 0), the page crashed."""
    result = _read(tmp_path, *incognito, path, None, command)
    assert result.exit_code == 2, result.output
    assert f'{path} is null, though the report\'s algorithm is "incognito"' in result.output, result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("value", [None, KeyError])
def test_a_gaa_report_without_its_gaa_section_is_bad_input(tmp_path, gaa, value, command):
    release, doc = gaa
    assert doc["node"] is None and doc["lattice"] is None and isinstance(doc["gaa"], dict)
    result = _read(tmp_path, release, doc, "gaa", value, command)
    assert result.exit_code == 2, result.output
    said = "null" if value is None else "left out"
    assert f'gaa is {said}, though the report\'s algorithm is "gaa"' in result.output, result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_the_intact_gaa_report_is_read(tmp_path, gaa, command):
    """node and lattice null, as the schema allows for GAA: both readers take the report."""
    result = _read(tmp_path, *gaa, "node", None, command)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "page.html").exists() == (command == "report")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("path", ["privacy.sensitive.salary.p", "privacy.sensitive.disease.distinct_l"])
def test_a_model_entry_given_as_null_is_read_as_left_out(tmp_path, incognito, path, command):
    """The schema allows a model entry as null (``Report`` reads it as the model not asked, as it
    reads the entry left out): it crashed both readers (exit 1). Read as left out, the report claims
    no value of that model, and every other claim still matches the file (exit 0), as with the entry
    left out."""
    for value in (None, KeyError):
        (tmp_path / "page.html").unlink(missing_ok=True)
        result = _read(tmp_path, *incognito, path, value, command)
        assert result.exit_code == 0 and "internal error" not in result.output, (value, result.output)
        assert (tmp_path / "page.html").exists() == (command == "report")


@pytest.mark.parametrize("path", ["lattice.size", "lattice.complete", "lattice.seconds",
                                  "generalization.zip.label_count", "generalization.age.labels",
                                  "privacy.sensitive.disease.distinct_l.reached"])
def test_the_page_refuses_a_figure_it_prints_left_out(tmp_path, incognito, path):
    """Left out, a figure the page prints crashed it (exit 1, KeyError) where given as null it was
    refused: no report sqlclose writes lacks it (the schema's model writes every field). Bad input
    (exit 2) naming the field, no page written."""
    result = _read(tmp_path, *incognito, path, KeyError, "report")
    assert result.exit_code == 2, result.output
    assert f"{path} is left out, a figure printed as" in result.output, result.output
    assert not (tmp_path / "page.html").exists()


def test_the_page_refuses_a_gaa_class_count_given_as_null(tmp_path, gaa):
    """Review rv28 #1: a GAA column's count of classes at a level given as null was printed "1: None
    classes". The schema: the counts of ``classes_per_level`` are integers. Exit 2 naming it, no page."""
    _, doc = gaa
    level = next(iter(doc["generalization"]["zip"]["classes_per_level"]))
    result = _read(tmp_path, *gaa, f"generalization.zip.classes_per_level.{level}", None, "report")
    assert result.exit_code == 2, result.output
    assert f"generalization.zip.classes_per_level.{level} is null, not a whole number" in result.output, result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("value", [None, KeyError])
def test_the_page_refuses_a_gaa_report_without_its_scope(tmp_path, gaa, value):
    """The page prints the GAA section's scope: given as null or left out it crashed (exit 1)."""
    result = _read(tmp_path, *gaa, "gaa.scope", value, "report")
    assert result.exit_code == 2, result.output
    assert f"gaa.scope is {'null' if value is None else 'left out'}," in result.output, result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("path, value, said", [
    ("node.zip", KeyError, "node.zip is left out, a figure printed as a whole number"),
    ("node.zip", None, "node.zip is null, not a whole number"),
    ("lattice.levels.zip", KeyError, "lattice.levels.zip is left out, a figure printed as a whole number"),
    ("lattice.levels.zip", None, "lattice.levels.zip is null, not a whole number"),
    ("utility.sensitive.salary.l1_closeness", KeyError, "it lacks utility.sensitive.salary.l1_closeness"),
    ("utility.sensitive.disease.l_diversity", KeyError, "it lacks utility.sensitive.disease.l_diversity"),
    ("utility.discernibility", None, "utility.discernibility is null, not a whole number"),
    ("classes", None, "classes is null, not a whole number"),
    ("output.rows", None, "output.rows is null, not a whole number"),
    ("node.zip", 6, "node.zip is 6, outside lattice.levels.zip = 6 (levels 0..5)"),
    ("node.zip", -1, "node.zip is -1, outside lattice.levels.zip = 6 (levels 0..5)"),
    ("lattice.levels.zip", 0, "node.zip is 1, outside lattice.levels.zip = 0"),
])
def test_the_page_refuses_a_column_figure_it_prints_null_or_left_out(tmp_path, incognito, path, value, said):
    """Review rv28 #1: a node level left out, a lattice's levels given as null, a column's
    l-diversity or L1 value left out crashed the page (exit 1, KeyError / TypeError: numpy read a
    node of -1 as the top, one past the top raised IndexError); a null class count printed "None
    classes". The oracle is the schema (docs/report-schema.json): a full-domain report's node and
    lattice levels hold every quasi-identifier (``zip``: level 1 of 6 in this release), a column's
    utility entry requires both values, the counts are never null. Bad input (exit 2) naming the
    field, no page written."""
    _, doc = incognito
    assert doc["node"]["zip"] == 1 and doc["lattice"]["levels"]["zip"] == 6
    result = _read(tmp_path, *incognito, path, value, "report")
    assert "internal error" not in result.output, result.output
    assert result.exit_code == 2, result.output
    assert said in result.output, result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("path, value, printed", [
    ("utility.root_percent", None, "— % at the root"),
    ("utility.root_percent", KeyError, "— % at the root"),
    ("utility.sensitive.salary.l1_closeness", None, "salary: l-diversity value 3.000, L1 closeness (not halved, "
                                                    "not an EMD) —"),
    ("utility.sensitive.salary.l_diversity", None, "salary: l-diversity value —,"),
    ("privacy.sensitive.salary.t", None, "≤ t = —"),
])
def test_the_page_prints_a_figure_the_schema_allows_as_null(tmp_path, incognito, path, value, printed):
    """Review rv28 #1: the schema allows these as null (``l1_closeness`` "where the file has no
    class"; ``root_percent`` and ``t`` default to null): the page crashed on them (exit 1,
    "unsupported format string passed to NoneType", a KeyError, matplotlib given t = None).
    The oracle is the schema: the page is rendered, the figure printed as "—", the entry's
    other figure as worked by hand (Table 3's nine salaries are distinct: every class of 3 holds 3,
    an l-diversity value of exp(ln 3) = 3). Since the sixty-third round the command checks every claim
    before the page (a report edited beside its release got a page vouching for it): a figure the
    file decides (the L1 and l-diversity values of a file that has classes, a t model's t) left null
    is a mismatch there, exit 4 and no page. Since the eighty-seventh round so is the root share of a
    full-domain release, which its node and rows decide (``claims.share_claims``; a null one passed)."""
    from sqlclose.audit.html import render_html

    release, doc = incognito
    edited = json.loads(json.dumps(doc))
    set_field(edited, path, value)
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    page = render_html(tmp_path / "edited.json", release.parent / "s.toml", release)
    assert printed in page, page[page.find("Utility"):][:600]
    result = _read(tmp_path, *incognito, path, value, "report", spec=True)
    assert result.exit_code == 4, result.output
    assert not (tmp_path / "page.html").exists()
    if path.startswith("utility.root"):  # Table 3 at zip=1, age=2: neither column at its root
        assert "utility.root_percent: the report gives" in result.output and "its node and rows make 0" in result.output


@pytest.mark.parametrize("release_of", ["incognito", "gaa"])
@pytest.mark.parametrize("value, said", [
    (None, "generalization.zip.levels is null, not a whole number"),
    (KeyError, "generalization.zip.levels is left out, a whole number the claims compute with"),
])
def test_check_refuses_a_column_s_levels_null_or_left_out(tmp_path, request, release_of, value, said):
    """Review rv28 #2: ``check --against`` compares a column's level with its hierarchy's levels
    (``0 <= level < levels``): given as null or left out it crashed (exit 1, "'<' not supported
    between int and NoneType"). The oracle is the schema: ``levels`` is an integer every
    generalization entry requires. Bad input (exit 2) naming the field, of either algorithm's report."""
    for spec in (False, True):
        result = _read(tmp_path, *request.getfixturevalue(release_of), "generalization.zip.levels", value, "check",
                       spec=spec)
        assert result.exit_code == 2, result.output
        assert said in result.output, result.output


@pytest.mark.parametrize("release_of", ["incognito", "gaa"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_distance_no_model_measures_is_bad_input(tmp_path, request, release_of, command):
    """Review rv28 #2: ``privacy.sensitive.salary.distance: "x"`` crashed ``check --against --spec``
    (exit 1, KeyError: 'x'). The oracle is the list of distances sqlclose measures (docs/spec.md:
    ordered, equal, hierarchical, variational, kl): another is no report sqlclose writes, exit 2
    naming the field and its value, no page."""
    result = _read(tmp_path, *request.getfixturevalue(release_of), "privacy.sensitive.salary.distance", "x",
                   command, spec=True)
    assert result.exit_code == 2, result.output
    assert 'privacy.sensitive.salary.distance is "x", not one of ordered, equal, hierarchical, variational, kl' \
        in result.output, result.output
    assert not (tmp_path / "page.html").exists()


def test_a_distance_the_spec_does_not_measure_is_a_mismatch(tmp_path, incognito):
    """A distance that exists but that the spec given does not measure the column by (the
    hierarchical distance of salary, which the spec judges by ``ordered`` and gives no hierarchy)
    crashed too (KeyError: 'hierarchical'). The spec and the report disagree: a mismatch (exit 4)
    naming the field, what each says."""
    result = _read(tmp_path, *incognito, "privacy.sensitive.salary.distance", "hierarchical", "check", spec=True)
    assert result.exit_code == 4, result.output
    assert ('privacy.sensitive.salary.distance: the report says "hierarchical", the spec given (--spec) judges '
            "'salary' by \"ordered\"") in result.output, result.output


@pytest.mark.parametrize("path, said", [
    ("node.zip", "node.zip: the report leaves it out, its generalization.zip.level says 1"),
    ("lattice.levels.zip", "generalization.zip.levels: the report says 6, its lattice.levels.zip is left out"),
])
def test_check_judges_a_node_or_lattice_level_left_out_as_a_mismatch(tmp_path, incognito, path, said):
    """A full-domain report's node and lattice levels hold every column. Given as null, a column's
    level was a mismatch (exit 4); left out, it was passed over and the report said to match
    (exit 0). The oracle: the release's own report (zip at level 1 of 6), and docs/verification.md
    ("a figure the file decides given as null (or left out) is a mismatch")."""
    _, doc = incognito
    assert doc["node"]["zip"] == 1 and doc["generalization"]["zip"]["levels"] == 6
    result = _read(tmp_path, *incognito, path, KeyError, "check")
    assert result.exit_code == 4, result.output
    assert said in result.output, result.output


def test_the_page_says_a_distance_above_t_fails_never_that_it_is_within(tmp_path, incognito):
    """Review of the sixty-third round: the page wrote "0.1667 ≤ t = 0.1" for a report whose t was
    lowered below its own largest distance, comparing nothing. The command refuses such a report now
    (every claim checked); the renderer, given it all the same, says it fails. Oracle: the report's own
    salary distance, above the t the test writes."""
    from sqlclose.audit.html import render_html

    release, doc = incognito
    edited = json.loads(json.dumps(doc))
    distance = edited["privacy"]["sensitive"]["salary"]["max_emd"]
    assert distance > 0.1
    edited["privacy"]["sensitive"]["salary"]["t"] = 0.1
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    page = render_html(tmp_path / "edited.json", release.parent / "s.toml", release)
    assert f"{distance:.4f}</strong> > (FAILS) t = 0.1" in page and f"{distance:.4f}</strong> ≤ t = 0.1" not in page
