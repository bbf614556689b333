"""The sign-off page without ``--spec`` (``sqlclose report REPORT --html PAGE``) measured no
sensitive column: check was given no models, so the attack table held its header alone and the
class-distance and distribution charts were missing, with no word why, as if no record were exposed
(review rv29 #4). The report records each column's distance, t and models, and names its hierarchy
file, from which ``check --against`` rebuilds the models: the page now does the same, and says on
the page what a column whose model needs the spec (a hierarchy given as a tree) cannot show.

The oracles: the records exposed to the skewness attack (a class's share of a value ≥ 3× the
table's, ``check``'s default ratio) by a plain SQL window query over the written file, and what the
page prints with ``--spec`` (the same figure).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import duckdb
from forked_cli import run_cli

TABLE3 = (Path(__file__).resolve().parents[1] / "datasets" / "table3" / "table3.csv").read_text()  # the shipped Table 3
TREE = '{ tree = { stomach = ["gastric ulcer", "gastritis", "stomach cancer"], lungs = ["flu", "bronchitis", ' \
       '"pneumonia"] } }'


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd=cwd)


def _release(folder: Path, disease: str = "") -> Path:
    (folder / "t.csv").write_text(TABLE3)
    (folder / "age.csv").write_text("".join(f"{a};{a // 10}*;{'<40' if a < 40 else '>=40'};*\n"
                                            for a in (22, 27, 29, 30, 32, 36, 43, 47, 52)))
    (folder / "s.toml").write_text(f"""
others = "drop"
[source]
path = "t.csv"
[output]
path = "out/r.parquet"
[privacy]
k = 3
[quasi_identifiers]
zip = {{ mask = true, length = 5 }}
age = {{ file = "age.csv" }}
[sensitive.salary]
distance = "ordered"
t = 0.2
{disease}""")
    made = run("anonymize", "s.toml", "-q", cwd=folder)
    assert made.returncode == 0, made.stderr
    return folder / "out" / "r.parquet"


def _skewed_records(release: Path, column: str) -> int:
    return duckdb.connect().execute(f"""
        WITH c AS (SELECT zip, age, count(*) OVER (PARTITION BY zip, age) AS n,
                          count(*) OVER (PARTITION BY zip, age, {column}) AS m,
                          count(*) OVER (PARTITION BY {column}) AS g, count(*) OVER () AS total FROM '{release}'),
             k AS (SELECT zip, age, max(n) AS n, bool_or(m * total >= 3 * g * n) AS hit FROM c GROUP BY zip, age)
        SELECT coalesce(sum(n) FILTER (WHERE hit), 0) FROM k""").fetchone()[0]


def _attacks(page: str) -> str:
    return re.search(r"<h2>Attacks on the released file</h2>.*?</table>", page, re.S).group(0)


def test_the_page_without_spec_audits_the_sensitive_columns_from_the_report(tmp_path):
    release = _release(tmp_path)
    skewed = _skewed_records(release, "salary")
    assert skewed > 0
    got = run("report", "out/r.parquet.report.json", "--html", "page.html", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    page = (tmp_path / "page.html").read_text()
    assert f"<td>salary</td><td>0</td><td>{skewed} (share ≥ 3× the table's)</td>" in _attacks(page)
    assert "alt='class distances of salary against t'" in page and "alt='distribution of salary'" in page
    with_spec = run("report", "out/r.parquet.report.json", "--html", "spec.html", "--spec", "s.toml", cwd=tmp_path)
    assert with_spec.returncode == 0, with_spec.stderr
    assert _attacks((tmp_path / "spec.html").read_text()) == _attacks(page)


def test_a_column_whose_model_needs_the_spec_is_still_measured_and_the_page_says_why(tmp_path):
    """A hierarchical distance over a tree: the report names no file for it. Its attacks and
    distribution are still shown; its class distances are not, and the page says to give the spec."""
    release = _release(tmp_path, f'[sensitive.disease]\ndistance = "hierarchical"\nt = 0.9\nhierarchy = {TREE}\n')
    skewed = _skewed_records(release, "disease")
    got = run("report", "out/r.parquet.report.json", "--html", "page.html", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    page = (tmp_path / "page.html").read_text()
    assert f"<td>disease</td><td>0</td><td>{skewed} (share ≥ 3× the table's)</td><td>—</td>" in _attacks(page)
    assert "alt='distribution of disease'" in page and "alt='class distances of disease against t'" not in page
    assert "The class distances of disease against t" in page and "give the release&#x27;s spec (--spec)" in page
    assert "alt='class distances of salary against t'" in page  # the other column's model comes from the report
