"""A quasi-identifier read with ``nulls = "value"`` and released at level 0 is given as it is: the
rows with no value hold NULL in the file, as in the input, not the stand-in's text (docs/spec.md,
"NULLs"). The report listed the stand-in among the column's labels, so ``check --against`` refused
the untouched release (exit 4) and the sign-off page drew ``NULL`` as a label; ``check --spec``
counted those NULLs as generalized values (review rv16, #1).

The oracles: the file's distinct labels by a plain SQL ``SELECT DISTINCT`` over the written file,
and the node the report gives (level 0: no value of the column is generalized, 0 %).
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from own_connection import rows as _rows
from table3_project import invoke


def _write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([header, *rows])


def _released(folder: Path, name: str, qis_and_sensitive: str, node: str, source: str = "") -> Path:
    """``name``.csv released at ``node`` (k = 3); ``source``: more of its [source] section."""
    spec = (f'[source]\npath = "{name}.csv"\n{source}[output]\npath = "out/{name}.parquet"\n'
            f'[privacy]\nk = 3\n{qis_and_sensitive}')
    (folder / f"{name}.toml").write_text(spec)
    result = invoke("anonymize", folder / f"{name}.toml", "-q", "--node", node)
    assert result.exit_code == 0, result.output
    return folder / "out" / f"{name}.parquet"


def _file_hierarchy_release(folder: Path) -> Path:
    """g: a file hierarchy whose leaf ``NULL`` is the stand-in, released at level 0."""
    random.seed(5)
    _write_csv(folder / "n.csv", ["x", "g", "s"], [[random.randrange(0, 40), random.choice(["a", "b", "c", "d", ""]),
                                                   random.choice("pqr")] for _ in range(300)])
    (folder / "gn.csv").write_text("a;ab;*\nb;ab;*\nc;cd;*\nd;cd;*\nNULL;nn;*\n")
    return _released(folder, "n", '[quasi_identifiers]\nx = { bands = [10, 20], domain = [0, 100] }\n'
                     'g = { file = "gn.csv", domain = "leaves", nulls = "value", null_value = "NULL" }\n'
                     '[sensitive.s]\nt = 0.6\n', "x=2,g=0")


def _mask_release(folder: Path) -> Path:
    """zip: a mask rule with a stand-in, released at level 0."""
    random.seed(7)
    codes = ["47677", "47602", "47678", "13053", "13268"]
    _write_csv(folder / "r.csv", ["zip", "age", "disease"],
               [["" if i % 40 == 0 else random.choice(codes), random.randrange(17, 90),
                 random.choice(["flu", "ulcer", "cancer"])] for i in range(300)])
    return _released(folder, "r", '[quasi_identifiers]\nzip = { mask = true, length = 5, alphabet = "0123456789", '
                     'nulls = "value", null_value = "NULL" }\n'
                     'age = { bands = [10, 20], domain = [0, 120] }\n[sensitive.disease]\nt = 0.6\n', "zip=0,age=3",
                     source='types = { zip = "VARCHAR" }\n')


def _distinct_labels(release: Path, column: str) -> list[str]:
    return sorted(r[0] for r in _rows(f"SELECT DISTINCT CAST(\"{column}\" AS VARCHAR) FROM '{release}' "
                                      f"WHERE \"{column}\" IS NOT NULL"))


def test_the_report_lists_the_labels_a_level0_column_with_a_stand_in_holds_and_check_against_passes(tmp_path):
    release = _file_hierarchy_release(tmp_path)
    report_path = Path(f"{release}.report.json")
    generalization = json.loads(report_path.read_text())["generalization"]["g"]
    assert _rows(f"SELECT count(*) FROM '{release}' WHERE g IS NULL")[0][0] > 0  # the rows with no value
    assert generalization["labels"] == _distinct_labels(release, "g") == ["a", "b", "c", "d"]
    assert generalization["label_count"] == 4
    result = invoke("check", release, "--against", report_path)
    assert result.exit_code == 0, result.output


def test_check_against_passes_a_level0_mask_with_a_stand_in_with_and_without_the_spec(tmp_path):
    release = _mask_release(tmp_path)
    report_path = Path(f"{release}.report.json")
    assert json.loads(report_path.read_text())["generalization"]["zip"]["labels"] == _distinct_labels(release, "zip")
    for extra in (["--spec", tmp_path / "r.toml"], []):
        result = invoke("check", release, "--against", report_path, *extra)
        assert result.exit_code == 0, result.output


def test_check_says_no_value_of_a_level0_column_with_a_stand_in_is_generalized(tmp_path):
    release = _file_hierarchy_release(tmp_path)
    assert json.loads(Path(f"{release}.report.json").read_text())["node"]["g"] == 0
    result = invoke("check", release, "--spec", tmp_path / "n.toml", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["utility"]["quasi_identifiers"]["g"]["generalized_percent"] == 0.0


def test_the_sign_off_page_draws_only_the_labels_a_level0_column_with_a_stand_in_holds(tmp_path):
    """The page drew `NULL` among g's labels, from the report. The oracle: the file's distinct labels."""
    release = _file_hierarchy_release(tmp_path)
    page = tmp_path / "page.html"
    result = invoke("report", Path(f"{release}.report.json"), "--html", page)
    assert result.exit_code == 0, result.output
    row = next(r for r in page.read_text().split("<tr>") if r.startswith("<td>g</td>"))
    assert f"<td>{', '.join(_distinct_labels(release, 'g'))}</td>" in row and "NULL" not in row, row


def test_gaa_writes_the_stand_in_as_a_label_and_its_report_lists_it(tmp_path):
    """GAA writes a column's levels side by side as text labels (a level-0 value as text too), never
    a NULL: its rows with no value hold the stand-in's text, which its report lists (docs/spec.md,
    "NULLs"), and check --against passes. The oracle: SQL over the written file."""
    release = _file_hierarchy_release(tmp_path)
    spec = tmp_path / "n.toml"
    spec.write_text(spec.read_text().replace("[quasi_identifiers]", '[search]\nalgorithm = "gaa"\n[quasi_identifiers]'))
    release.unlink()
    result = invoke("anonymize", spec, "-q", "--overwrite")
    assert result.exit_code == 0, result.output
    assert _rows(f"SELECT count(*) FROM '{release}' WHERE g IS NULL") == [(0,)]
    assert _rows(f"SELECT count(*) FROM '{release}' WHERE g = 'NULL'")[0][0] > 0
    report_path = Path(f"{release}.report.json")
    assert json.loads(report_path.read_text())["generalization"]["g"]["labels"] == _distinct_labels(release, "g")
    assert invoke("check", release, "--against", report_path).exit_code == 0
