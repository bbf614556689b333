"""``check --against`` against reports and releases forged the way the eighty-seventh round's review
forged them, each of which passed (exit 0, "matches") or stopped as an internal error before:

- a partitioned Parquet folder holding rows its readers take and the check did not read (a
  ``_pad.parquet`` Spark skips was read, a Hive ``000000_0`` it reads was not), its digest
  recomputed by the forger as docs/verification.md prints the recipe;
- a GAA report inventing suppressed rows;
- a hierarchy's keyed digest taken out of a report whose other digests are keyed;
- a report's format, partition columns and column roles edited;
- a share the node and rows decide given as null or left out (an internal error before);

and, from the eighty-eighth round's fuzzer (one field of a report edited at a time): a lattice level,
``output.rows`` or a GAA column's classes per level given as null or naming no level, and
``column_roles`` of another kind (internal errors, exit 1); ``at_top`` null or left out, and a mask
column's level count, which its rule decides (exit 0, "matches").

Oracles: Table 3's release as Li et al.'s Table 5 gives it (three classes of three), a plain
GROUP BY over the folder's files as Spark lists them, the digest recomputed with hashlib, and the
report's own sections.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import duckdb
import pytest
from never_blocked import never_blocked
from table3_project import invoke, table3_project


def _manifest_digest(folder: Path) -> str:
    """A folder's digest as docs/verification.md gives the recipe (sha256sum of every file, sorted)."""
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(folder).as_posix()}\n"
             for p in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()) if p.is_file()]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _release(tmp_path: Path, output: str, extra: str = "", env: dict | None = None) -> tuple[Path, Path, dict]:
    table3_project(tmp_path)
    spec = tmp_path / "spec.toml"
    text = spec.read_text().replace('path = "out/release.parquet"', f'path = "{output}"{extra}')
    spec.write_text(text)
    result = invoke("anonymize", spec, "-q", env=env)
    assert result.exit_code == 0, result.output
    release = tmp_path / output
    report = next(tmp_path.glob("out/*.report.json"))
    return spec, release, json.loads(report.read_text())


def _check(release: Path, doc: dict, folder: Path, *args: object, env: dict | None = None):
    (folder / "edited.json").write_text(json.dumps(doc))
    return invoke("check", release, "--against", folder / "edited.json", *args, env=env)


def _spark_listing(folder: Path) -> list[str]:
    """Spark's and Hive's rule, written here: every file not under a part starting with '_' or '.'."""
    return sorted(str(p) for p in folder.rglob("*") if p.is_file() and not any(
        part.startswith(".") or (part.startswith("_") and "=" not in part) for part in p.relative_to(folder).parts))


def _smallest_class(folder: Path) -> int:
    files = _spark_listing(folder)
    return duckdb.execute("SELECT MIN(n) FROM (SELECT zip, age, COUNT(*) AS n FROM read_parquet($files, "
                          "hive_partitioning = true) GROUP BY zip, age)", {"files": files}).fetchall()[0][0]


@pytest.mark.parametrize("forgery", ["row hidden in _pad.parquet", "raw row as 000000_0"])
def test_a_folder_is_checked_on_the_rows_its_readers_take(tmp_path, forgery):
    _, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    part = release / "age=%3C40" / "part-0.parquet"
    assert part.is_file() and _smallest_class(release) == 3  # Table 5
    con = duckdb.connect()
    read = f"read_parquet('{part}', hive_partitioning = false)"
    assert [r[0] for r in con.sql(f"DESCRIBE SELECT * FROM {read}").fetchall()] == ["zip", "salary", "disease"]
    if forgery == "row hidden in _pad.parquet":  # one row of 4767* moved where Spark does not look
        numbered = f"read_parquet('{part}', hive_partitioning = false, file_row_number = true)"
        moved = f"(SELECT MIN(file_row_number) FROM {numbered} WHERE zip = '4767*')"
        columns = "zip, salary, disease"
        con.execute(f"COPY (SELECT {columns} FROM {numbered} WHERE file_row_number = {moved}) TO "
                    f"'{release / 'age=%3C40' / '_pad.parquet'}' (FORMAT parquet)")
        con.execute(f"COPY (SELECT {columns} FROM {numbered} WHERE file_row_number <> {moved}) TO '{part}.new' "
                    "(FORMAT parquet)")
        Path(f"{part}.new").replace(part)
    else:  # a raw row of its own class, in a file named as Hive names its files
        con.execute(f"COPY (SELECT '47677' AS zip, salary, disease FROM {read} LIMIT 1) TO "
                    f"'{release / 'age=%3C40' / '000000_0'}' (FORMAT parquet)")
    con.close()
    assert _smallest_class(release) < 3  # what a reader of the folder now gets
    doc["output"]["sha256"] = _manifest_digest(release)  # the forger's step
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4, result.output
    assert "does not match" in result.output


def test_a_folder_holding_a_file_that_is_no_parquet_is_refused_naming_it(tmp_path):
    """A forged pair: the report's digest made over the folder with the file in it. The file is
    still no part sqlclose writes: a mismatch (exit 4; it was 2, bad input, until the ninety-fifth
    round), the file named."""
    _, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    (release / "age=%3C40" / "notes.txt").write_text("47677,9000,flu\n")
    doc["output"]["sha256"] = _manifest_digest(release)
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4, result.output
    assert "notes.txt, not Parquet, which its readers (Spark, Hive) would read as part of the table" in result.output


def test_a_folder_holding_a_link_to_a_folder_is_refused_naming_it(tmp_path):
    """A link to a folder of extra rows (a raw row, a class of one) inside a partition folder: the
    check's listing (Path.rglob) does not enter it, pyarrow's dataset reader does, and `check
    --against` passed the release its readers get with a class below k (review of the ninety-third
    round). Refused, naming the link: a mismatch (exit 4; it was 2, bad input, until the
    ninety-fifth round), since sqlclose writes no link into a release. Oracle: pyarrow's own read of
    the folder, past the link; the folder's digest as docs/verification.md gives the recipe, the
    report's own (the link is outside it)."""
    import pyarrow.dataset as ds

    _, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    extra = tmp_path / "extra"
    extra.mkdir()
    duckdb.sql(f"COPY (SELECT '47677' AS zip, salary, disease FROM read_parquet('{release}/*/*.parquet', "
               f"hive_partitioning = false) LIMIT 1) TO '{extra / 'part-9.parquet'}' (FORMAT parquet)")
    (release / "age=%3C40" / "more").symlink_to(extra, target_is_directory=True)
    assert ds.dataset(release, partitioning="hive").count_rows() == 10  # what pyarrow's readers get: 9 + 1
    assert _manifest_digest(release) == doc["output"]["sha256"]
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4, result.output
    assert f"does not match {tmp_path / 'edited.json'}: the folder holds {release / 'age=%3C40' / 'more'}, a " \
        "symbolic link to a folder, and sqlclose writes no link into a release: not the release the report " \
        "describes" in result.output, result.output


def _link_in(release: Path, kind: str, elsewhere: Path) -> None:
    """A symbolic link placed in a folder release, each kind of which its report's digest does not see."""
    part = release / "part-0.parquet"
    if kind == "a part as a link to its own bytes":
        part.rename(elsewhere / "part-0.parquet")
        part.symlink_to(elsewhere / "part-0.parquet")
    elif kind == "a link to nothing":
        (release / "part-1.parquet").symlink_to(elsewhere / "gone.parquet")
    else:  # a link to a folder of rows, under a part Spark skips
        (elsewhere / "part-9.parquet").write_bytes(part.read_bytes())
        (release / "_more").symlink_to(elsewhere, target_is_directory=True)


@pytest.mark.parametrize(("kind", "said"), [("a part as a link to its own bytes", "part-0.parquet, a symbolic link "
                                             "to a file"),
                                            ("a link to nothing", "part-1.parquet, a symbolic link to nothing"),
                                            ("a hidden link to a folder", "_more, a symbolic link to a folder")])
def test_a_folder_release_holding_a_link_is_not_the_release(tmp_path, kind, said):
    """sqlclose writes no link into a release: a folder holding one, whatever it points at, is not
    the release its report describes (exit 4, the link named), though the report's digest cannot
    tell (each of these passed, exit 0, before the ninety-fifth round); nor does it get a page. Oracle:
    the digest as docs/verification.md gives the recipe, equal to the report's, and os.path.islink.
    Control: the folder named through a link of its own (outside it) matches."""
    _, release, doc = _release(tmp_path, "out/release")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "alias").symlink_to(release, target_is_directory=True)
    assert _check(tmp_path / "alias", doc, tmp_path).exit_code == 0
    _link_in(release, kind, elsewhere)
    assert _manifest_digest(release) == doc["output"]["sha256"]
    assert [p.name for p in release.iterdir() if p.is_symlink()] == [said.split(",")[0]]
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4, result.output
    assert f"the folder holds {release / said}, and sqlclose writes no link into a release" in result.output
    page = invoke("report", next(tmp_path.glob("out/*.report.json")), "--html", tmp_path / "page.html")
    assert page.exit_code == 4 and "sqlclose writes no link into a release" in page.output, page.output
    assert not (tmp_path / "page.html").exists()


def test_a_gaa_report_cannot_claim_rows_it_never_suppressed(tmp_path):
    """GAA merges classes until each passes and suppresses nothing: a report claiming 10 rows
    suppressed (so that its distances need only hold against the input loosely) passed."""
    _, release, doc = _gaa_release(tmp_path)
    assert doc["algorithm"] == "gaa" and doc["suppressed_rows"] == 0
    entered = doc["input"]["rows"] + 10
    doc["input"]["rows"], doc["suppressed_rows"], doc["privacy"]["suppression_limit"] = entered, 10, 0.5
    doc["utility"]["discernibility"] += 10 * entered
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4 and "suppressed_rows: the report says 10, but GAA suppresses no row" in result.output


def test_a_keyed_reports_hierarchy_digest_cannot_be_taken_out(tmp_path):
    """With the operator's key, a hierarchy file whose keyed digest was set to null was read as it
    is (a note said no key was used at the release), so any file could stand in for it."""
    env = {"SQLCLOSE_FINGERPRINT_KEY": "s3cret"}
    _, release, doc = _release(tmp_path, "out/release.parquet", env=env)
    assert doc["input"]["fingerprint"] and doc["hierarchies"]["disease"]["sha256"]
    untouched = _check(release, doc, tmp_path, env=env)
    assert untouched.exit_code == 0, untouched.output
    doc["hierarchies"]["disease"]["sha256"] = None
    result = _check(release, doc, tmp_path, env=env)
    assert result.exit_code == 4, result.output
    assert "hierarchies.disease.sha256: the report gives none, yet its other digests are keyed" in result.output


@pytest.mark.parametrize(("field", "value", "said"), [
    ("format", "csv", 'output.format: the report says "csv", the release is "parquet-folder"'),
    ("partition_by", None, 'output.partition_by: the report says null, the folder is partitioned by ["age"]'),
    ("partition_by", ["zip"], 'output.partition_by: the report says ["zip"], the folder is partitioned by ["age"]'),
    ("column_roles", "zip kept", "output.column_roles: the report says"),
])
def test_a_reports_form_of_the_release_is_held_to_the_folder(tmp_path, field, value, said):
    _, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    assert _check(release, doc, tmp_path).exit_code == 0
    if field == "column_roles":  # a generalized QI told as a column released unchanged
        doc["output"]["column_roles"]["zip"] = "other (unchanged)"
    else:
        doc["output"][field] = value
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4 and said in result.output, result.output


@pytest.mark.parametrize("share", ["generalized_percent", "root_percent"])
@pytest.mark.parametrize("edit", ["null", "left out"])
def test_a_share_the_node_decides_cannot_be_null_or_left_out(tmp_path, share, edit):
    """Table 3 at zip=1, age=2 (Table 5): both columns generalized, neither at its root, so 100 %
    and 0 %. A null root share ended as an internal error (exit 1) in the printed summary, and
    with -q passed."""
    _, release, doc = _release(tmp_path, "out/release.parquet")
    assert doc["node"] == {"zip": 1, "age": 2}
    if edit == "null":
        doc["utility"][share] = None
    else:
        del doc["utility"][share]
    made = 100 if share == "generalized_percent" else 0
    for flags in ((), ("-q",)):
        result = _check(release, doc, tmp_path, *flags)
        assert result.exit_code == 4, result.output
        if not flags:
            assert f"utility.{share}: the report gives" in result.output and f"its node and rows make {made}" in \
                result.output


@pytest.mark.parametrize("spelling", ["people", "People", "main.people", "MAIN.PEOPLE"])
def test_a_tables_report_is_found_under_any_spelling_of_its_name(tmp_path, spelling):
    """docs/spec.md: `People`, `people` and `main.people` are one table with one report; `--table
    main.people` was refused as another table than the report's 'people' (the docs review of the
    eighty-seventh round). Another table is still refused."""
    _, release, doc = _release(tmp_path, "out/db.duckdb", '\ntable = "people"')
    assert doc["output"]["table"] == "people"
    assert _check(release, doc, tmp_path, "--table", spelling).exit_code == 0
    other = _check(release, doc, tmp_path, "--table", "main.others")
    assert other.exit_code == 2 and "is of table 'people'" in other.output, other.output


def test_a_csv_whose_header_starts_with_parquets_magic_is_still_a_csv(tmp_path):
    # The format is told by the file's bytes: a CSV whose first column is named PAR1 opens with
    # Parquet's four magic bytes, yet does not end with them; it read as "parquet" (a false alarm).
    table3_project(tmp_path)
    csv_path = tmp_path / "table3.csv"
    csv_path.write_text(csv_path.read_text().replace("zip,", "PAR1,", 1))
    spec = tmp_path / "spec.toml"
    spec.write_text(spec.read_text().replace("\nzip = ", "\nPAR1 = ").replace(
        'path = "out/release.parquet"', 'path = "out/release.csv"\nformat = "csv"'))
    assert invoke("anonymize", spec, "-q").exit_code == 0
    release = tmp_path / "out" / "release.csv"
    assert release.read_bytes()[:4] == b"PAR1"
    result = invoke("check", release, "--against", next(tmp_path.glob("out/*.report.json")))
    assert result.exit_code == 0, result.output


def test_a_folder_release_given_to_report_gets_its_page_and_a_changed_copy_none(tmp_path):
    # `report --release` refused any folder (click's "is a directory"), while the report's own
    # output.path, a folder, got its page. Oracle: the folder as written; a copy missing a partition.
    import shutil

    spec, release, _ = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    report = next(tmp_path.glob("out/*.report.json"))
    result = invoke("report", report, "--release", release, "--html", tmp_path / "page.html", "--spec", spec)
    assert result.exit_code == 0 and (tmp_path / "page.html").is_file(), result.output
    copy = tmp_path / "copy"
    shutil.copytree(release, copy)
    shutil.rmtree(sorted(copy.iterdir())[0])
    result = invoke("report", report, "--release", copy, "--html", tmp_path / "copy.html", "--spec", spec)
    assert result.exit_code == 4 and "does not match its report" in result.output, result.output
    assert not (tmp_path / "copy.html").exists()


# ---- the eighty-eighth round's fuzzer: one field of a report edited at a time ---------------------
def _gaa_release(tmp_path: Path) -> tuple[Path, Path, dict]:
    table3_project(tmp_path)
    spec = tmp_path / "spec.toml"
    spec.write_text(spec.read_text() + '\n[search]\nalgorithm = "gaa"\n')
    assert invoke("anonymize", spec, "-q").exit_code == 0
    release = tmp_path / "out" / "release.parquet"
    return spec, release, json.loads((tmp_path / "out" / "release.parquet.report.json").read_text())


@pytest.mark.parametrize(("edit", "said"), [
    (lambda d: d["lattice"]["levels"].update(zip=None),
     "generalization.zip.levels: the report says 6, its lattice.levels.zip says null"),
    (lambda d: d["output"].update(rows=None), "output.rows: the report says null, the file holds 9"),
    (lambda d: d["generalization"]["age"].update(at_top=None), "generalization.age.at_top: the report gives none"),
    (lambda d: d["generalization"]["age"].pop("at_top"), "generalization.age.at_top: the report gives none"),
], ids=["lattice-level-null", "output-rows-null", "at-top-null", "at-top-left-out"])
def test_a_figure_the_file_decides_given_as_null_is_a_mismatch_not_an_internal_error(tmp_path, edit, said):
    # Was: exit 1 (a TypeError in the lattice's product, in the shares' sum), or exit 0 (at_top).
    spec, release, doc = _release(tmp_path, "out/release.parquet")
    edit(doc)
    result = _check(release, doc, tmp_path, "--spec", spec)
    assert result.exit_code == 4 and said in result.output, result.output


@pytest.mark.parametrize("roles", ["x", -1, True, 1e308])
def test_column_roles_of_another_kind_is_bad_input_not_an_internal_error(tmp_path, roles):
    _, release, doc = _release(tmp_path, "out/release.parquet")
    doc["output"]["column_roles"] = roles
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 2 and f"output.column_roles is {json.dumps(roles)}, not an object" in result.output


@pytest.mark.parametrize(("levels", "at_top"), [(2, True), (7, False)])
def test_a_mask_columns_levels_are_held_to_the_specs_rule(tmp_path, levels, at_top):
    # zip = { mask = true, length = 5 }: 47677, 4767*, …, ***** — six levels (counted by hand).
    # A report claiming two (zip at its top, while the file holds 4767*) or seven passed.
    spec, release, doc = _release(tmp_path, "out/release.parquet")
    assert doc["generalization"]["zip"]["levels"] == 6
    doc["generalization"]["zip"].update(levels=levels, at_top=at_top)
    doc["lattice"]["levels"]["zip"] = levels
    doc["lattice"]["size"] = levels * doc["lattice"]["levels"]["age"]
    doc["node"]["zip"] = doc["generalization"]["zip"]["level"] = min(doc["node"]["zip"], levels - 1)
    result = _check(release, doc, tmp_path, "--spec", spec)
    assert result.exit_code == 4, result.output
    assert f"generalization.zip.levels: the report says {levels}, the column's hierarchy has 6" in result.output


def test_a_gaa_reports_mask_levels_are_held_to_the_specs_rule(tmp_path):
    spec, release, doc = _gaa_release(tmp_path)
    assert doc["generalization"]["zip"]["levels"] == 6
    doc["generalization"]["zip"]["levels"] = 7
    result = _check(release, doc, tmp_path, "--spec", spec)
    assert result.exit_code == 4, result.output
    assert "generalization.zip.levels: the report says 7, the column's hierarchy has 6" in result.output


@pytest.mark.parametrize(("edit", "said"), [
    (lambda per_level: per_level.update(zz=1), '"zz" (no level)'),
    (lambda per_level: per_level.update({next(iter(per_level)): None}), ": null"),
], ids=["key-of-no-level", "null-count"])
def test_a_gaa_reports_classes_per_level_that_say_nothing_are_a_mismatch(tmp_path, edit, said):
    # Was: exit 1 (int('zz'), a sum over None).
    spec, release, doc = _gaa_release(tmp_path)
    edit(doc["generalization"]["zip"]["classes_per_level"])
    result = _check(release, doc, tmp_path, "--spec", spec)
    assert result.exit_code == 4 and "generalization.zip.classes_per_level: the report gives" in result.output
    assert said in result.output, result.output


@pytest.mark.parametrize("edit", ["null", "left out"])
def test_a_suppression_limit_taken_out_is_a_mismatch_given_the_spec(tmp_path, edit):
    spec, release, doc = _release(tmp_path, "out/release.parquet")
    if edit == "null":
        doc["privacy"]["suppression_limit"] = None
    else:
        del doc["privacy"]["suppression_limit"]
    result = _check(release, doc, tmp_path, "--spec", spec)
    assert result.exit_code == 4, result.output
    assert "privacy.suppression_limit: the report gives none, the spec given (--spec) 0.0" in result.output


@pytest.mark.parametrize("algorithm", ["", "flash", "GAA"])
def test_an_algorithm_no_release_is_made_by_is_bad_input(tmp_path, algorithm):
    _, release, doc = _release(tmp_path, "out/release.parquet")
    doc["algorithm"] = algorithm
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 2 and f"algorithm is {json.dumps(algorithm)}, not incognito or gaa" in result.output


@pytest.mark.parametrize(("edit", "said"), [("null", "output.column_roles is null, not an object"),
                                            ("left out", "it lacks output.column_roles")])
def test_column_roles_taken_out_is_no_report_of_ours(tmp_path, edit, said):
    # The schema requires the section; taken out, its self-check (roles against generalization) was skipped.
    _, release, doc = _release(tmp_path, "out/release.parquet")
    if edit == "null":
        doc["output"]["column_roles"] = None
    else:
        del doc["output"]["column_roles"]
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 2 and said in result.output, result.output


@pytest.mark.parametrize(("edit", "said"), [
    (lambda h: h["age"].pop("path"), "hierarchies.age.path is left out, a string the claims compute with"),
    (lambda h: h["disease"].update(path=None), "hierarchies.disease.path is null, not a string"),
    (lambda h: h["age"].update(delimiter=None), "hierarchies.age.delimiter is null, not a string"),
], ids=["path-left-out", "path-null", "delimiter-null"])
def test_a_hierarchy_the_report_names_without_its_file_is_bad_input(tmp_path, edit, said):
    # Without --spec the check reads the hierarchy files the report names: was exit 1 (KeyError, TypeError).
    _, release, doc = _release(tmp_path, "out/release.parquet")
    edit(doc["hierarchies"])
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 2 and said in result.output, result.output


@pytest.mark.parametrize(("kind", "said"), [(None, "output.column_types.age is null, not a string"),
                                            ("", "output.column_types.age is '', which names no column type"),
                                            ("TEXT0", "output.column_types.age is 'TEXT0', which names no column")])
def test_a_partition_columns_type_that_names_none_is_bad_input(tmp_path, kind, said):
    # The partition column is read back with the type its report records: was exit 1 (a ParseError).
    _, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    doc["output"]["column_types"]["age"] = kind
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 2 and said in result.output, result.output


def test_a_column_named_twice_in_the_report_is_told_as_such(tmp_path):
    _, release, doc = _release(tmp_path, "out/release.parquet")
    doc["output"]["columns"] = [doc["output"]["columns"][0], *doc["output"]["columns"]]
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4, result.output
    assert "the report names 'zip' a number of times the file does not" in result.output
    assert "another order" not in result.output


def test_a_folder_told_as_a_parquet_file_is_one_mismatch_not_two(tmp_path):
    _, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    doc["output"]["format"] = "parquet"
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4 and 'output.format: the report says "parquet", the release is "parquet-folder"' \
        in result.output and "partitioned by []" not in result.output, result.output


def test_a_section_of_another_type_is_told_once(tmp_path):
    _, release, doc = _release(tmp_path, "out/release.parquet")
    doc["node"] = "x"
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 2 and 'node is "x", not an object' in result.output, result.output
    assert "node is null" not in result.output


@pytest.mark.parametrize(("path", "said"), [(None, "output.path is null, not a path"),
                                            ("", 'output.path is "", not a path')])
def test_a_page_without_the_releases_path_is_bad_input(tmp_path, path, said):
    # Without --release the page reads the report's output.path: null was exit 1 (a TypeError), and
    # "" compared the working folder with the file's digest.
    spec, _, doc = _release(tmp_path, "out/release.parquet")
    doc["output"]["path"] = path
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    result = invoke("report", tmp_path / "edited.json", "--html", tmp_path / "page.html", "--spec", spec)
    assert result.exit_code == 2 and said in result.output, result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize(("field", "value", "said"), [
    ("strategy", "S10", 'gaa.strategy is "S10", not one of S1'),
    ("scope", "table0", 'gaa.scope is "table0", not table or class'),
])
def test_gaa_settings_no_run_takes_get_no_page(tmp_path, field, value, said):
    # The page printed "Multidimensional recoding by GAA S10" over a release made by S1.
    spec, release, doc = _gaa_release(tmp_path)
    doc["gaa"][field] = value
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    result = invoke("report", tmp_path / "edited.json", "--release", release, "--html", tmp_path / "page.html",
                    "--spec", spec)
    assert result.exit_code == 2 and said in result.output, result.output
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("where", ["lattice.levels", "node"])
def test_a_lattice_column_the_release_does_not_generalize_is_a_mismatch(tmp_path, where):
    # {"zz": 1} keeps the lattice's size, the product of its levels: it passed, and so did a node naming it.
    _, release, doc = _release(tmp_path, "out/release.parquet")
    (doc["lattice"]["levels"] if where == "lattice.levels" else doc["node"])["zz"] = 0 if where == "node" else 1
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4 and f"{where}: the report names 'zz'" in result.output, result.output


def test_any_column_type_that_names_none_is_bad_input_in_a_folders_read_back(tmp_path):
    # Every recorded type is cast in the folder's read-back, not the partition columns' alone: a
    # non-partition column's 'TEXT0' was still exit 1 after the partition column's was fixed.
    _, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    doc["output"]["column_types"]["salary"] = "TEXT0"
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 2 and "output.column_types.salary is 'TEXT0', which names no column" in result.output


# ---- the eighty-ninth round: messages that blamed the wrong thing or named an internal table -------
@pytest.mark.parametrize("kind", ["BIGINT", "DATE"])
def test_a_partition_columns_type_edited_to_one_its_folders_do_not_read_is_told_by_that_type(tmp_path, kind):
    # Table 3's age folders hold "<40" and ">=40" (escaped as Hive escapes them): no whole number, no
    # date. The mismatch blamed the labels ("label_count: the report says 2, the file holds 0").
    _, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    assert sorted(p.name for p in release.iterdir()) == ["age=%3C40", "age=%3E%3D40"]
    doc["output"]["column_types"]["age"] = kind
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4, result.output
    assert (f'output.column_types.age: the report says "{kind}", which reads 9 of the folder\'s 9 rows\' \'age\' '
            "(their partition folders' names) as no value") in result.output
    assert "generalization.age.label" not in result.output


def test_a_csv_read_back_with_a_type_its_model_cannot_measure_names_the_file(tmp_path):
    # The report's salary read as text, its distance ordered: the message named the check's own
    # table (`duckdb table __sqlclose_written_csv_…`), which the user never made.
    _, release, doc = _release(tmp_path, "out/release.csv")
    doc["output"]["column_types"]["salary"] = "VARCHAR"
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 2, result.output
    assert (f"column 'salary' in {release} (read with its report's output.column_types) is string, but "
            'distance = "ordered" needs numbers') in result.output
    assert "__sqlclose" not in result.output


def test_a_sensitive_value_off_its_hierarchy_is_a_file_that_is_not_the_release(tmp_path):
    """A release's file with one disease replaced by a value its hierarchy lacks, and the report's
    digest made again by the forger: the file is not the release (exit 4, "does not match"), told by
    the column and the count, never the value; it was bad input (exit 2), as if the operator's
    hierarchy were wrong. Oracle: the value written here, and its absence from disease.csv."""
    _, release, doc = _release(tmp_path, "out/release.parquet")
    assert "plague" not in (tmp_path / "disease.csv").read_text()
    con = duckdb.connect()
    con.execute(f"COPY (SELECT zip, age, salary, CASE WHEN row_number() OVER () = 1 THEN 'plague' ELSE disease END "
                f"AS disease FROM read_parquet('{release}')) TO '{release}.new' (FORMAT parquet)")
    con.close()
    Path(f"{release}.new").replace(release)
    doc["output"]["sha256"] = hashlib.sha256(release.read_bytes()).hexdigest()
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4, result.output
    assert ("disease: the file holds 1 value in 1 row that its hierarchy lacks (not shown: sensitive values), "
            "which no release made with it holds") in " ".join(result.output.split()), result.output
    assert "plague" not in result.output


@pytest.mark.parametrize("where", ["notes.txt", "age=%3C40/extra.csv"])
def test_a_folder_release_holding_a_file_that_is_not_parquet_is_not_the_release(tmp_path, where):
    """sqlclose writes only Parquet files into a folder release, and its readers (Spark, Hive) read
    every file not under a hidden part: a folder holding another is not the release its report
    describes (exit 4, the file named), where it was refused as a source folder's (exit 2, bad
    input, "source folder … holds …"); nor does it get a page (its digest lists the file). Oracle:
    the file written here and its first bytes (not PAR1). Control: the folder without it matches."""
    _, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]')
    assert (release / "age=%3C40").is_dir()  # a partition the release's readers take
    planted = release / where
    planted.write_text("zip,age\n47677,29\n")
    assert planted.read_bytes()[:4] != b"PAR1"
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4, result.output
    assert (f"the folder holds {planted}, not Parquet, which its readers (Spark, Hive) would read as part of the "
            "table, and sqlclose writes only Parquet files into a release") in result.output
    page = invoke("report", next(tmp_path.glob("out/*.report.json")), "--html", tmp_path / "page.html")
    assert page.exit_code == 4, page.output  # refused by the folder's digest, which lists the file
    assert not (tmp_path / "page.html").exists()
    planted.unlink()
    assert _check(release, doc, tmp_path).exit_code == 0


@pytest.mark.parametrize("where", [".notes", "_SUCCESS", "_temporary/0/part-0.parquet", "age=%3C40/.part-0.crc"])
def test_a_folder_release_holding_a_hidden_file_is_not_the_release_nor_up_to_date(tmp_path, where):
    """Ninety-sixth round: a file under a hidden name (`.notes`, Spark's `_SUCCESS`, a `_temporary/`
    attempt holding rows, a `.crc` beside a part) added to a folder release was told only by the
    folder's digest (`its sha256 differs …: the file was changed or replaced`), while a file that is
    not Parquet and a link were named. sqlclose writes no hidden file into a release (its
    temporaries and lock lie beside the folder; Spark's marker and checksums are removed): such a
    folder is not the release (exit 4), the file named. A rerun does not call it up to date. Oracles:
    Spark's and Hive's listing rule written here (`_spark_listing`) finds every file of the folder
    sqlclose wrote, so none of its own is hidden; the file planted here; the folder's bytes."""
    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}  # what tells "up to date"
    spec, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]', env=env)
    written = sorted(str(p) for p in release.rglob("*") if p.is_file())
    assert written == _spark_listing(release) and len(written) == 2  # no hidden file of sqlclose's own
    assert _check(release, doc, tmp_path).exit_code == 0
    assert "is up to date" in invoke("anonymize", spec, env=env).output
    planted = release / where
    planted.parent.mkdir(parents=True, exist_ok=True)
    if planted.suffix == ".parquet":  # rows its readers skip
        planted.write_bytes((release / "age=%3C40" / "part-0.parquet").read_bytes())
    else:
        planted.write_text("")
    assert str(planted) not in _spark_listing(release)  # hidden, by the readers' own rule
    result = _check(release, doc, tmp_path)
    assert result.exit_code == 4, result.output
    assert (f"does not match {tmp_path / 'edited.json'}: the folder holds {planted}, under a hidden name its "
            "readers (Spark, Hive) skip, and sqlclose writes no hidden file into a release: not the release the "
            "report describes") in result.output, result.output
    forged = {**doc, "output": {**doc["output"], "sha256": _manifest_digest(release)}}  # the digest over it too
    assert _check(release, forged, tmp_path).output == result.output  # named by the listing, not the digest
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != "edited.json"}
    for args in ([], ["--force"]):  # not up to date; and not this spec's own release, which --force may redo
        rerun = invoke("anonymize", spec, *args, env=env)
        assert rerun.exit_code == 2 and "up to date" not in rerun.output, rerun.output  # refused: in the way
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != "edited.json"} == before


@pytest.mark.parametrize("where", ["part-1.parquet", "age=%3C40/pipe", "_temporary/pipe"])
def test_a_folder_release_holding_a_pipe_is_not_the_release_nor_up_to_date(tmp_path, where):
    """Ninety-sixth round: a pipe (FIFO) added to a folder release was skipped by every listing (the
    folder's digest lists regular files), so `check --against` passed the folder and a rerun called
    it up to date, where Spark's and Hive's readers would try to read it (opening a pipe waits for a
    writer). sqlclose writes none into a release: the folder is not the release (exit 4), the pipe
    named, never opened, a hidden one too; a rerun does not call it up to date and refuses it as in
    the way (exit 2). Oracles: the pipe planted here; the folder's files' bytes before and after."""
    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}  # what tells "up to date"
    spec, release, doc = _release(tmp_path, "out/release", '\npartition_by = ["age"]', env=env)
    assert "is up to date" in invoke("anonymize", spec, env=env).output
    planted = release / where
    planted.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(planted)
    with never_blocked():
        result = _check(release, doc, tmp_path)
        assert result.exit_code == 4, result.output
        assert (f"does not match {tmp_path / 'edited.json'}: the folder holds {planted}, a pipe (FIFO), which is no "
                "file of a table: its readers (Spark, Hive, sqlclose) take every file not under a path part starting "
                "with \"_\" or \".\", and would try to read it (opening a pipe waits for a writer, for good), and "
                "sqlclose writes only Parquet files into a release: not the release the report describes"
                ) in result.output, result.output
        before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != "edited.json"}
        for args in ([], ["--force"]):  # not up to date; and not this spec's own release, which --force may redo
            rerun = invoke("anonymize", spec, *args, env=env)
            assert rerun.exit_code == 2 and "up to date" not in rerun.output, rerun.output  # refused: in the way
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != "edited.json"} == before
    assert planted.exists()


def test_two_pipes_in_a_folder_release_are_counted_as_the_other_foreign_files_are(tmp_path):
    """Ninety-sixth round (mend): a folder release holding two pipes was told "(and 1 other such)" where
    its links and hidden files are counted by kind ("(and 1 other link)"): the same count now. Oracle:
    the two pipes planted here, the first in path order named."""
    from sqlclose.against_report import _foreign_claims

    for name in ("a-pipe", "b-pipe"):
        os.mkfifo(tmp_path / name)
    with never_blocked():
        claims = _foreign_claims(tmp_path)
    assert len(claims) == 1 and claims[0].startswith(
        f"the folder holds {tmp_path / 'a-pipe'}, a pipe (FIFO) (and 1 other special file), which is no file of a "
        "table"), claims
