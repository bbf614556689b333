"""Names a person gave (a column's, a label's, a file's) followed into what a user opens: the
terminal, the sign-off page, sweep.csv. Nothing in them is acted on: a terminal's escape sequence,
a carriage return, a right-to-left override and a spreadsheet formula are shown, not run (the
ninety-eighth round). The oracles: the characters themselves, looked for in what was printed or
written, and the escaped spelling written out by hand in each test."""

from __future__ import annotations

import csv
import json
import os
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from forked_cli import run_cli

import sqlclose
from sqlclose.cli import main

# A column name that clears the screen, prints red, returns the cursor and backs over a character.
TERMINAL_NAME = "q\x1b[2J\x1b[31mRED\x1b[0m\rX\x08"
TERMINAL_SHOWN = "q\\x1b[2J\\x1b[31mRED\\x1b[0m\\rX\\x08"
# A sensitive column retitling the terminal's window (OSC, ended by BEL) and reversing what follows.
OVERRIDE_NAME = "s\x1b]0;owned\x07\u202eab"
OVERRIDE_SHOWN = "s\\x1b]0;owned\\x07\\u202eab"
ACTED_ON = {"\x1b", "\r", "\x08", "\x07", "\u202e"}


def _release_folder(folder: Path, qi: str, sensitive: str, labels: tuple[str, str] = ("G1", "G2")) -> Path:
    """A Parquet table (names as given: a CSV header cannot hold every one) with a hierarchy per QI
    and a spec naming them by TOML's \\u escapes; returns the spec."""
    rows = range(40)
    pq.write_table(pa.table({"city": ["abcd"[i % 4] for i in rows], qi: ["pqrs"[(i // 4) % 4] for i in rows],
                             sensitive: [["u", "v", "w", "z"][(i // 2) % 4] for i in rows]}), folder / "t.parquet")
    (folder / "c.csv").write_text("a;x;*\nb;x;*\nc;y;*\nd;y;*\n")
    g1, g2 = labels
    (folder / "h.csv").write_text(f"p;{g1};*\nq;{g1};*\nr;{g2};*\ns;{g2};*\n", encoding="utf-8")
    spec = folder / "s.toml"
    spec.write_text(f'[source]\npath = "t.parquet"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 3\n'
                    f'[quasi_identifiers]\n{json.dumps(qi)} = {{ file = "h.csv" }}\ncity = {{ file = "c.csv" }}\n'
                    f'[sensitive.{json.dumps(sensitive)}]\ndistance = "equal"\nt = 0.9\n')
    return spec


def _invoke(*args: str | Path):
    # color=True: click strips CSI sequences itself when its stream is no terminal; a terminal gets them
    return CliRunner().invoke(main, [str(a) for a in args], color=True)


def test_the_summary_and_explain_print_hostile_column_names_escaped(tmp_path):
    spec = _release_folder(tmp_path, TERMINAL_NAME, OVERRIDE_NAME)
    for args in (("anonymize", spec), ("explain", spec)):
        result = _invoke(*args)
        assert result.exit_code == 0, result.output
        assert not ACTED_ON & set(result.stdout), result.stdout
        assert TERMINAL_SHOWN in result.stdout and OVERRIDE_SHOWN in result.stdout


def test_an_error_naming_a_file_prints_its_escape_sequence_escaped(tmp_path):
    result = _invoke("explain", tmp_path / "spec\x1b[2J\u202e.toml")
    assert result.exit_code == 2
    assert not ACTED_ON & set(result.stderr), result.stderr
    assert "spec\\x1b[2J\\u202e.toml" in result.stderr


def test_hierarchy_show_prints_a_files_name_and_labels_escaped(tmp_path):
    """Its labels were printed quoted (repr) already; the file's name heading the table was not."""
    hierarchy = tmp_path / "h\x1b[2J\u202e.csv"
    hierarchy.write_text("p;G\x1b[2J\x07;*\nq;\u202eG2;*\n", encoding="utf-8")
    result = _invoke("hierarchy", "show", hierarchy)
    assert result.exit_code == 0, result.output
    assert not ACTED_ON & set(result.stdout), result.stdout
    assert "h\\x1b[2J\\u202e.csv: 2 leaves" in result.stdout
    assert "G\\x1b[2J\\x07" in result.stdout and "\\u202eG2" in result.stdout


class _Text(HTMLParser):
    """The text a browser shows of a page, per element (entities decoded), and its alt texts."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[str] = []
        self.shown: list[str] = []
        self._in_heading = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_heading = tag == "h2"
        self.shown += [value or "" for name, value in attrs if name == "alt"]

    def handle_endtag(self, tag: str) -> None:
        self._in_heading = self._in_heading and tag != "h2"

    def handle_data(self, data: str) -> None:
        self.shown.append(data)
        if self._in_heading:
            self.headings.append(data)


def _page_text(folder: Path, spec: Path) -> _Text:
    result = _invoke("anonymize", spec, "--html", folder / "page.html", "-q")
    assert result.exit_code == 0, result.output
    text = _Text()
    text.feed((folder / "page.html").read_text(encoding="utf-8"))
    return text


def test_a_sensitive_columns_heading_shows_its_name_as_it_is(tmp_path):
    """The heading's name was escaped twice: `a&lt;b` showed as `a&amp;lt;b`, `<b>` as `&lt;b&gt;`."""
    text = _page_text(tmp_path, _release_folder(tmp_path, "zone", "d&lt;iag<b>"))
    assert "Sensitive column d&lt;iag<b>" in text.headings


def test_no_right_to_left_override_reaches_the_page(tmp_path):
    """A column name holding U+202E showed the rest of their line reversed (the figures
    after the name among them); the page shows the character escaped, as the terminal does."""
    spec = _release_folder(tmp_path, "zo\u202ene", "di\u202eag")
    text = _page_text(tmp_path, spec)
    shown = "".join(text.shown)
    assert "\u202e" not in shown
    assert "zo\\u202ene = 0" in shown and "di\\u202eag: l-diversity" in shown
    assert "Sensitive column di\\u202eag" in text.headings


def test_sweep_csv_writes_a_node_cell_a_spreadsheet_would_run_after_a_quote(tmp_path):
    """A column named `@SUM(1+1)` (or `-2+3`) made the node cell a formula; OWASP's quote keeps it text."""
    spec = _release_folder(tmp_path, "@SUM(1+1)", "diag")
    result = _invoke("sweep", spec, "--k", "2,3", "--out", tmp_path / "sw", "--no-charts")
    assert result.exit_code == 0, result.output
    with (tmp_path / "sw" / "sweep.csv").open(newline="", encoding="utf-8") as f:
        nodes = [row["node"] for row in csv.DictReader(f)]
    assert nodes and all(node.startswith("'@SUM(1+1)=") for node in nodes), nodes


def test_a_csv_release_of_a_column_named_with_a_carriage_return_is_written_and_checked(tmp_path):
    """DuckDB took the carriage return inside the header's quoted name for the file's line ending
    and read the written file back as no row: `failed its re-check: 0 rows instead of 40` (exit 4)."""
    spec = _release_folder(tmp_path, "zone", "di\rag")
    result = _invoke("anonymize", spec, "--output", tmp_path / "out" / "r.csv", "-q")
    assert result.exit_code == 0, result.output
    with (tmp_path / "out" / "r.csv").open(newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    assert header == ["city", "zone", "di\rag"] and len(rows) == 40  # the input's order
    checked = _invoke("check", tmp_path / "out" / "r.csv", "--against", tmp_path / "out" / "r.csv.report.json")
    assert checked.exit_code == 0, checked.output


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_an_input_csv_whose_header_names_a_column_with_a_carriage_return_is_read_right(tmp_path, ending):
    """DuckDB took the carriage return inside the input header's quoted name for the file's line ending:
    the LF file had "no rows", the CRLF file "could not be parsed" (exit 2). The file's own ending, read
    after its header, is told the reader. Oracle: the rows the test wrote, each value as written."""
    rows = [(g, s, str(i)) for i in range(3) for g in "ab" for s in "xy"]
    (tmp_path / "in.csv").write_bytes(ending.join(['g,s,"di\rag"', *(",".join(r) for r in rows), ""]).encode())
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": ["a", "b"]}}},
            "sensitive": {"s": {"distinct_l": 2}}, "others": "keep"}
    with sqlclose.anonymize(tmp_path / "in.csv", spec) as release:
        table = release.to_arrow()
    assert table.column_names == ["g", "s", "di\rag"]
    assert sorted(zip(*(table.column(c).to_pylist() for c in table.column_names))) == sorted(rows)


def test_an_output_path_that_is_not_utf8_is_refused_before_the_search(tmp_path):
    """A byte of Latin-1 in the output's folder (Python's \\udcff) failed DuckDB's write after the
    search: `InvalidInputException … could not be converted` (exit 1, a bug)."""
    spec = _release_folder(tmp_path, "zone", "diag")
    for output in ("out\udce9/r.parquet", "out/r\udce9.csv"):
        result = _invoke("anonymize", spec, "--output", tmp_path / output)
        assert result.exit_code == 2, result.output
        assert "its name is not UTF-8" in result.stderr and "search: started" not in result.stderr
        assert "\\xe9" in result.stderr, result.stderr  # the byte as it is, not Python's \udce9
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith("out")] == []  # no folder made


NOT_UTF8_SOURCE = "its name is not UTF-8 (a byte of another encoding is shown as \\xNN), and the engine takes a " \
    "path as UTF-8 text: rename it (or the folder holding it) in UTF-8"


def test_a_source_whose_name_is_not_utf8_is_told_so_however_it_is_given(tmp_path):
    """A source file named with a Latin-1 byte was refused in Python's codec's words ("'utf-8' codec
    can't encode …") or DuckDB's ("a value could not be converted"), and bytes were "a source of type
    bytes" (ninety-eighth round). Each way of giving it is told the name's bytes and to rename it."""
    name = b"in\xe9.csv"
    (tmp_path / os.fsdecode(name)).write_text("g,s\n" + "a,x\nb,y\n" * 4, encoding="utf-8")
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": ["a", "b"]}}},
            "sensitive": {"s": {"distinct_l": 2}}}
    told = f"cannot read the source {tmp_path}/in\\xe9.csv: {NOT_UTF8_SOURCE}"
    for source, given in ((os.fsencode(tmp_path) + b"/" + name, spec), (tmp_path / os.fsdecode(name), spec),
                          (None, {**spec, "source": {"path": str(tmp_path / os.fsdecode(name))}})):
        with pytest.raises(sqlclose.SqlcloseError) as caught:
            sqlclose.anonymize(source, given)
        assert caught.value.exit_code == 2 and str(caught.value) == told, caught.value
    (tmp_path / "h.csv").write_text("a;*\nb;*\n", encoding="utf-8")
    data = tmp_path / os.fsdecode(name)
    for args in (("check", data, "--qi", "g"),
                 ("hierarchy", "validate", tmp_path / "h.csv", "--data", data, "--column", "g")):
        result = _invoke(*args)
        assert result.exit_code == 2 and f"error: {told}" in result.stderr, result.stderr


def test_a_page_drawing_a_name_no_font_holds_prints_no_raw_warning(tmp_path):
    """matplotlib warned `Glyph 27 (<ESC>) missing from font(s)` in Python's form, the character raw."""
    spec = _release_folder(tmp_path, "zone", "di\x1b[2Jag")
    result = run_cli(["anonymize", str(spec), "--html", str(tmp_path / "page.html"), "-q"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr and "Glyph" not in result.stderr, result.stderr


def test_render_html_escapes_a_forged_reports_digest(tmp_path):
    """The page printed output.sha256 as the report gave it. `report --html` refuses a digest that is not
    the file's first; render_html, called on a report alone, took a script tag there to the page."""
    from sqlclose.audit.html import render_html

    spec = _release_folder(tmp_path, "zone", "diag")
    assert _invoke("anonymize", spec, "-q").exit_code == 0
    report = tmp_path / "out" / "r.parquet.report.json"
    doc = json.loads(report.read_text())
    doc["output"]["sha256"] = "<script>alert(1)</script>"
    report.write_text(json.dumps(doc))
    page = render_html(report, release_path=tmp_path / "out" / "r.parquet")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
