"""Text drawn on sqlclose's charts (the sign-off page's, the sweep's) comes from data and names: a
sensitive value, a label, a source's file name. matplotlib read text between two ``$`` as mathtext
(review rv29 #1): the page failed with exit 1 and a many-line message quoting the value
(``patient $HIV_positive^$ case``), a value that parsed was drawn rewritten (``$0-$10k`` as italic
``0−10k``), and a sweep of ``in $Q_$.csv`` failed drawing its title. The oracles: the documented
exit codes (1 is a bug), the files on disk, the value absent from stderr, and matplotlib's own
settings after the run (sqlclose sets its literal text only around its own figures)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from forked_cli import run_cli

from sqlclose.errors import ChartError

VALUE = "patient $HIV_positive^$ case"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd=cwd)


def _dollar_release(folder: Path) -> None:
    values = ["flu", "$0-$10k", VALUE, "under $5 or $6"]
    (folder / "t.csv").write_text("city,diag\n" + "".join(f"{'abcd'[i % 4]},{values[(i // 4) % 4]}\n"
                                                          for i in range(32)))
    (folder / "c.csv").write_text("a;x;*\nb;x;*\nc;y;*\nd;y;*\n")
    (folder / "s.toml").write_text("""
[source]
path = "t.csv"
[output]
path = "out/r.parquet"
[privacy]
k = 3
[quasi_identifiers]
city = { file = "c.csv" }
[sensitive.diag]
distance = "equal"
t = 0.6
""")


def test_anonymize_html_draws_sensitive_values_with_dollar_signs(tmp_path):
    """`anonymize --html` of a release whose sensitive values hold `$…$`: exit 0, the page written."""
    _dollar_release(tmp_path)
    got = run("anonymize", "s.toml", "--html", "out/page.html", "-q", cwd=tmp_path)
    assert "HIV_positive" not in got.stderr, got.stderr  # docs/bad-input.md: a sensitive value is never shown
    assert got.returncode == 0, got.stderr
    page = (tmp_path / "out" / "page.html").read_text()
    assert "distribution of diag" in page


def test_report_html_draws_sensitive_values_with_dollar_signs(tmp_path):
    """`report --html --spec` of the same release: exit 0, the page written."""
    _dollar_release(tmp_path)
    made = run("anonymize", "s.toml", "-q", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    got = run("report", "out/r.parquet.report.json", "--html", "page.html", "--spec", "s.toml", cwd=tmp_path)
    assert "HIV_positive" not in got.stderr, got.stderr
    assert got.returncode == 0, got.stderr
    assert "distribution of diag" in (tmp_path / "page.html").read_text()


def test_sweep_charts_of_a_source_named_with_dollar_signs(tmp_path):
    """The sweep's chart titles name the source: `in $Q_$.csv` is drawn as it is, exit 0."""
    rows = [(z, a, d) for z in ("47677", "47602", "13053") for a in (22, 29, 43) for d in ("flu", "colitis")]
    (tmp_path / "in $Q_$.csv").write_text("zip,age,disease\n" + "".join(f"{z},{a},{d}\n" for z, a, d in rows))
    (tmp_path / "age.csv").write_text("22;<40;*\n29;<40;*\n43;>=40;*\n")
    (tmp_path / "s.toml").write_text("""
[source]
path = "in $Q_$.csv"
[output]
path = "out/r.parquet"
[privacy]
k = 2
[quasi_identifiers]
zip = { mask = true, length = 5 }
age = { file = "age.csv" }
[sensitive.disease]
distance = "equal"
t = 0.5
""")
    got = run("sweep", "s.toml", "--k", "2,3", "--out", "sw", "-q", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "sw" / "mean_alteration.png").is_file()


def test_text_is_literal_only_inside_sqlclose_drawing_and_a_failure_quotes_nothing():
    """Inside ``drawing`` a text object takes `$…$` as it is; outside, the caller's matplotlib keeps
    its own setting (mathtext on, matplotlib's default). A failure while drawing is a ChartError
    naming the error's kind, never its message (which quoted the value)."""
    import matplotlib

    from sqlclose.utility.charts import drawing

    before = matplotlib.rcParams["text.parse_math"]
    with drawing("the test's chart") as plt:
        fig, ax = plt.subplots()
        label = ax.set_title(VALUE)
        assert label._preprocess_math(VALUE) == (VALUE, False)  # drawn as plain text, dollars and all
        plt.close(fig)
    assert matplotlib.rcParams["text.parse_math"] is before is True
    with pytest.raises(ChartError) as caught:
        with drawing("the test's chart"):
            raise ValueError(f"bad mathtext: {VALUE}")
    assert "HIV_positive" not in str(caught.value) and "ValueError" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
