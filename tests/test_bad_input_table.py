"""The bad-input table of docs/bad-input.md, one parametrized row per case.

Every row runs the command in a process of its own (``python -m sqlclose.cli anonymize spec.toml
--no-progress``, forked from an interpreter that has imported sqlclose: tests/forked_cli.py) in a
fresh work folder holding a copy of datasets/table3 and a previous release at the output path
(the files of a successful run). A failing row must exit with the documented code, print exactly
the documented message on stderr (the work folder shown as ``<tmp>``), show no traceback, no
internal error and no raw data row, and leave every file of the work folder byte for byte as it
was: nothing written, the previous release intact, no hidden temporary file. A row that should
succeed (hostile or unicode column names, 2,000 columns, a one-valued sensitive column) must
replace the release with a verified one and leave no temporary file.

The expected message of a row is what the command should say, exactly; docs/bad-input.md shows
the same table (a test keeps the two equal).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from forked_cli import run_cli

pytestmark = pytest.mark.slow

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
HEADER = "zip,age,salary,disease"
ROWS = (TABLE3 / "table3.csv").read_text(encoding="utf-8").splitlines()[1:]
TMP = "<tmp>"
RELEASE = '"out/release.parquet"'
OUTPUT = f"path = {RELEASE}"

# The shipped spec of Table 3, writing beside it; overwrite = true, so a failing run is the only
# thing that stands between the previous release and its replacement.
SPEC = """\
[source]
path = "table3.csv"

[output]
path = "out/release.parquet"
overwrite = true

[privacy]
k = 3
suppression = 0.0

[quasi_identifiers]
zip = { mask = true }
age = { file = "age.csv" }

[sensitive.salary]
distance = "ordered"
t = 0.2

[sensitive.disease]
distance = "hierarchical"
t = 0.3
hierarchy = "disease.csv"
"""


# ---------------------------------------------------------------------------- building a case


def spec(*replacements: tuple[str, str], prefix: str = "") -> str:
    """The base spec with exact text replacements (each must apply) and top-level keys first."""
    text = SPEC
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new, 1)
    return prefix + text


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def table(header: str = HEADER, rows: list[str] | None = None) -> str:
    return "\n".join([header, *(ROWS if rows is None else rows)]) + "\n"


def lines_of(name: str) -> list[str]:
    return (TABLE3 / name).read_text(encoding="utf-8").splitlines()


def toml_key(name: str) -> str:
    """A TOML basic-string key (JSON escapes are valid TOML escapes for these names)."""
    return json.dumps(name, ensure_ascii=False)


def with_columns(names: list[str]) -> Callable[[Path], None]:
    """Table 3 under other column names (zip, age, salary, disease in that order)."""

    def prepare(d: Path) -> None:
        quoted = ",".join('"' + n.replace('"', '""') + '"' for n in names)
        write(d, "table3.csv", table(quoted))
        z, a, s, dis = (toml_key(n) for n in names)
        write(d, "spec.toml", SPEC.replace("zip = {", f"{z} = {{").replace("age = {", f"{a} = {{")
              .replace("[sensitive.salary]", f"[sensitive.{s}]").replace("[sensitive.disease]", f"[sensitive.{dis}]"))

    return prepare


@dataclass(frozen=True)
class Case:
    id: str
    what: str                       # the case, as the doc's table says it
    prepare: Callable[[Path], object]
    code: int
    args: tuple[str, ...] = ("anonymize", "spec.toml")
    env: dict[str, str] = field(default_factory=dict)
    fsize: int | None = None        # a file-size limit (bytes) for the run: a full disk
    locked: str | None = None       # a folder made immutable for the run (chattr +i): not writable, even by root
    columns: tuple[str, ...] = ()   # success rows: the released columns
    node: tuple[int, ...] = ()      # success rows: the levels of (zip, age), when the paper's Table 5 gives them


AGE = 'age = { file = "age.csv" }'
SOURCE = 'path = "table3.csv"'


def _base(d: Path) -> None:
    for name in ("table3.csv", "age.csv", "disease.csv"):
        shutil.copy(TABLE3 / name, d / name)
    write(d, "spec.toml", SPEC)


def _parquet(d: Path, name: str) -> None:
    import pyarrow.csv as pacsv

    pq.write_table(pacsv.read_csv(TABLE3 / "table3.csv"), d / name)


# ---------------------------------------------------------------------------- the cases

def _existing_output_table(d: Path) -> None:
    import duckdb

    con = duckdb.connect(str(d / "out" / "releases.duckdb"))
    con.execute("CREATE TABLE people AS SELECT 1 AS previous")
    con.close()
    write(d, "spec.toml", spec(('path = "out/release.parquet"\noverwrite = true',
                                'path = "out/releases.duckdb"\ntable = "people"\noverwrite = false')))


def _parquet_text_not_utf8(d: Path) -> None:
    """Table 3 as Parquet, one row's disease bytes not UTF-8 (a writer that marks raw bytes as text)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    people = pacsv.read_csv(d / "table3.csv")
    raw = [v.encode() if i != 3 else b"SECRET-4711\xff" for i, v in enumerate(people.column("disease").to_pylist())]
    disease = pa.array(raw, pa.binary()).view(pa.string())
    pq.write_table(people.set_column(people.schema.get_field_index("disease"), "disease", disease), d / "data.parquet")
    write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "data.parquet"')))


def _failing_view(d: Path) -> None:
    """A DuckDB database whose view ``v`` types Table 3's salaries, held as text, with a CAST that
    fails on one row's text (``SECRET-4711``)."""
    import duckdb

    con = duckdb.connect(str(d / "people.duckdb"))
    con.execute("CREATE TABLE people AS SELECT zip, age, salary::VARCHAR AS pay, disease "
                "FROM read_csv(?, header = true)", [str(d / "table3.csv")])
    con.execute("UPDATE people SET pay = 'SECRET-4711' WHERE pay = '3000'")
    con.execute("CREATE VIEW v AS SELECT zip, age, CAST(pay AS BIGINT) AS salary, disease FROM people")
    con.close()
    write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "people.duckdb"\ntable = "v"')))


def _ragged_hierarchy(d: Path) -> None:
    lines = lines_of("age.csv")
    lines[6] = "43;4*;*"
    write(d, "age.csv", "\n".join(lines) + "\n")


def _two_parents(d: Path) -> None:
    lines = lines_of("age.csv")
    lines[4] = "32;3*;>=40;*"
    write(d, "age.csv", "\n".join(lines) + "\n")


def _label_at_two_levels_for_gaa(d: Path) -> None:
    lines = lines_of("age.csv")
    lines[0], lines[1] = "22;22;<40;*", "27;22;<40;*"  # '22' a leaf, and the parent of 22 and 27
    write(d, "age.csv", "\n".join(lines) + "\n")
    write(d, "spec.toml", spec(("[quasi_identifiers]", '[search]\nalgorithm = "gaa"\n\n[quasi_identifiers]')))


def _two_tops(d: Path) -> None:
    write(d, "age.csv", "\n".join(ln.replace(";>=40;*", ";>=40;ALL") for ln in lines_of("age.csv")) + "\n")


def _wide(d: Path) -> None:
    extra = [f"c{i:04d}" for i in range(4, 2000)]
    rows = [row + "," + ",".join(str(i) for i in range(4, 2000)) for row in ROWS]
    write(d, "table3.csv", table(HEADER + "," + ",".join(extra), rows))
    write(d, "spec.toml", spec(prefix='others = "drop"\n'))


def _twenty_more_quasi_identifiers(d: Path) -> None:
    """Table 3 with 20 more QIs q0…q19 (value → group → *): a lattice of 6·4·3²⁰ nodes."""
    extra = [f"q{i}" for i in range(20)]
    rows = [row + "," + ",".join(f"a{(n + i) % 2}" for i in range(20)) for n, row in enumerate(ROWS)]
    write(d, "table3.csv", table(HEADER + "," + ",".join(extra), rows))
    write(d, "flat.csv", "a0;g;*\na1;g;*\n")
    write(d, "spec.toml", spec((AGE, AGE + "".join(f'\n{q} = {{ file = "flat.csv" }}' for q in extra))))


def _one_value(d: Path) -> None:
    write(d, "table3.csv", table(rows=[",".join(r.split(",")[:2] + ["5000", "flu"]) for r in ROWS]))


CASES: list[Case] = [
    # -- the spec file
    Case("toml-malformed", "malformed TOML (an unclosed inline table)",
         lambda d: write(d, "spec.toml", spec(("zip = { mask = true }", "zip = { mask = true"))), 2),
    Case("spec-not-utf8", "a spec file that is not UTF-8 (a Latin-1 comment)",
         lambda d: write(d, "spec.toml", "# r\xe9sum\xe9\n".encode("latin-1") + SPEC.encode()), 2),
    Case("unknown-key", "an unknown key (`[privacy] kk = 3`)",
         lambda d: write(d, "spec.toml", spec(("k = 3", "kk = 3"))), 2),
    Case("unknown-key-typo", "a misspelt key (`[source] delimeter`)",
         lambda d: write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "table3.csv"\ndelimeter = ","'))),
         2),
    Case("spec-missing", "a missing spec file", lambda d: None, 2, args=("anonymize", "nope.toml")),
    Case("spec-empty", "an empty spec file", lambda d: write(d, "spec.toml", ""), 2),
    Case("no-privacy", "a spec without [privacy] (fail closed)",
         lambda d: write(d, "spec.toml", spec(("[privacy]\nk = 3\nsuppression = 0.0\n", ""))), 2),
    Case("k-zero", "k < 1 (`k = 0`)", lambda d: write(d, "spec.toml", spec(("k = 3", "k = 0"))), 2),
    Case("k-fraction", "k not an integer (`k = 2.5`)",
         lambda d: write(d, "spec.toml", spec(("k = 3", "k = 2.5"))), 2),
    Case("k-above-rows", "k > rows (`k = 10` on 9 rows)",
         lambda d: write(d, "spec.toml", spec(("k = 3", "k = 10"))), 3),
    Case("t-above-1", "t > 1 (`t = 1.5`)", lambda d: write(d, "spec.toml", spec(("t = 0.3", "t = 1.5"))), 2),
    Case("t-negative", "t < 0 (`t = -0.1`)",
         lambda d: write(d, "spec.toml", spec(("t = 0.2", "t = -0.1"))), 2),
    Case("suppression-1", "suppression = 1 (outside [0, 1))",
         lambda d: write(d, "spec.toml", spec(("suppression = 0.0", "suppression = 1.0"))), 2),
    Case("suppression-negative", "suppression < 0",
         lambda d: write(d, "spec.toml", spec(("suppression = 0.0", "suppression = -0.05"))), 2),
    Case("two-roles", "a column in two roles (age a QI and sensitive)",
         lambda d: write(d, "spec.toml", spec() + '\n[sensitive.age]\ndistance = "ordered"\nt = 0.5\n'), 2),
    Case("identifier-and-qi", "a column in two roles (zip an identifier and a QI)",
         lambda d: write(d, "spec.toml", spec(prefix='identifiers = ["zip"]\n')), 2),
    Case("unknown-distance", 'an unknown distance (`distance = "manhattan"`)',
         lambda d: write(d, "spec.toml", spec(('distance = "ordered"', 'distance = "manhattan"'))), 2),
    Case("hierarchical-no-hierarchy", "hierarchical distance without a hierarchy",
         lambda d: write(d, "spec.toml", spec(('hierarchy = "disease.csv"\n', ""))), 2),
    Case("env-unset", "`${VAR}` unset (`path = \"${DATA_DIR}/table3.csv\"`)",
         lambda d: write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "${DATA_DIR}/table3.csv"'))), 2),
    Case("env-empty", "`${VAR}` set but empty (`DATA_DIR=`)",
         lambda d: write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "${DATA_DIR}/table3.csv"'))), 2,
         env={"DATA_DIR": ""}),
    # -- the source
    Case("source-missing", "a missing source file", lambda d: (d / "table3.csv").unlink(), 2),
    Case("source-unknown-format", "a source whose extension tells no format (`table3.dat`)",
         lambda d: (shutil.move(d / "table3.csv", d / "table3.dat"),
                    write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "table3.dat"')))), 2),
    Case("query-not-select", "a source query that is not a SELECT (`DELETE FROM people`)",
         lambda d: write(d, "spec.toml", spec(('path = "table3.csv"', 'query = "DELETE FROM people"'))), 2),
    Case("query-two-statements", "a source query of two statements",
         lambda d: write(d, "spec.toml", spec(('path = "table3.csv"',
                                               "query = \"SELECT * FROM 'table3.parquet'; DROP TABLE x\""))), 2),
    Case("query-guessed-types", "a source query reading a CSV with its column types guessed (`FROM 'table3.csv'`)",
         lambda d: write(d, "spec.toml", spec(('path = "table3.csv"', "query = \"SELECT * FROM 'table3.csv'\""))), 2),
    Case("query-fails", "a source query naming a file that does not exist",
         lambda d: write(d, "spec.toml", spec(('path = "table3.csv"', "query = \"SELECT * FROM 'nosuch.parquet'\""))),
         2),
    Case("parquet-garbage", "an unreadable Parquet file (random bytes)",
         lambda d: (write(d, "data.parquet", random.Random(9).randbytes(4096)),
                    write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "data.parquet"')))), 2),
    Case("parquet-text-not-utf8", "a Parquet text column holding bytes that are not UTF-8", _parquet_text_not_utf8, 2),
    Case("csv-ragged", "a CSV with a ragged row (an extra field)",
         lambda d: write(d, "table3.csv", table(rows=ROWS[:3] + [ROWS[3] + ",x"] + ROWS[4:])), 2),
    Case("csv-unterminated-quote", "a quote never closed (line 4's disease written `\"stomach cancer`), which "
         "DuckDB's error followed with every later row of the file",
         lambda d: write(d, "table3.csv", table(rows=ROWS[:2] + [ROWS[2].replace(",stomach", ',"stomach')]
                                                + ROWS[3:])), 2),
    Case("csv-text-after-quote", "text after a closed quote (line 4's disease written `\"stomach\" cancer`), which "
         "DuckDB calls an unterminated quote too (review rv26)",
         lambda d: write(d, "table3.csv", table(rows=ROWS[:2] + [ROWS[2].replace(",stomach cancer",
                                                                                 ',"stomach" cancer')] + ROWS[3:])), 2),
    Case("csv-short-row", "a CSV with a short row (a missing field)",
         lambda d: write(d, "table3.csv", table(rows=ROWS[:3] + [ROWS[3].rsplit(",", 1)[0]] + ROWS[4:])), 2),
    Case("csv-wrong-delimiter", 'a wrong delimiter (`delimiter = ";"` on a comma file)',
         lambda d: write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "table3.csv"\ndelimiter = ";"'))),
         2),
    Case("csv-not-utf8", "a non-UTF-8 CSV (Latin-1 bytes in a value)",
         lambda d: write(d, "table3.csv", table(rows=ROWS[:2] + [ROWS[2].replace("stomach", "estómago")] + ROWS[3:])
                         .encode("latin-1")), 2),
    Case("csv-mixed-line-endings", "a CSV whose lines end with LF, then CRLF (two exports joined)",
         lambda d: write(d, "table3.csv", ("\n".join([HEADER, *ROWS[:4]]) + "\n" + "\r\n".join(ROWS[4:]) + "\r\n")
                         .encode()), 2),
    Case("csv-empty-table", "an empty table (header only)", lambda d: write(d, "table3.csv", table(rows=[])), 2),
    Case("csv-empty-file", "an empty source file (0 bytes)", lambda d: write(d, "table3.csv", ""), 2),
    Case("csv-duplicate-header", "duplicate header names (`age` twice)",
         lambda d: write(d, "table3.csv", table(HEADER + ",age", [r + ",1" for r in ROWS])), 2),
    Case("csv-header-case", "header names differing only in case (`age`, `AGE`)",
         lambda d: write(d, "table3.csv", table(HEADER + ",AGE", [r + ",1" for r in ROWS])), 2),
    Case("csv-header-unnamed", "a header field with no name (`zip,age,,disease`)",
         lambda d: write(d, "table3.csv", table("zip,age,,disease")), 2),
    Case("duckdb-not-a-database", "`format = \"duckdb\"` on a CSV file",
         lambda d: write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "table3.csv"\nformat = "duckdb"\n'
                                                                      'table = "people"'))), 2),
    Case("duckdb-view-fails", "a DuckDB database's view (`table = \"v\"`) whose CAST fails on a row",
         _failing_view, 2),
    Case("undeclared-columns", "an undeclared column (`name`) with no `others`",
         lambda d: write(d, "table3.csv", table(HEADER + ",name", [r + f",Person{i}" for i, r in enumerate(ROWS)])),
         2),
    Case("csv-type-mismatch", "a value that is not a number in an ordered sensitive column",
         lambda d: write(d, "table3.csv", table(rows=ROWS[:4] + [ROWS[4].replace("11000", "eleven")] + ROWS[5:])),
         2),
    Case("csv-type-mismatch-past-line-break", "the same, past a quoted value over two lines (line 2's disease "
         "written `\"gastric⏎ulcer\"`), which DuckDB's record numbers do not count (line 7 was told as 6)",
         lambda d: write(d, "table3.csv", table(rows=[ROWS[0].replace("gastric ulcer", '"gastric\nulcer"')]
                                                + ROWS[1:4] + [ROWS[4].replace("11000", "eleven")] + ROWS[5:])),
         2),
    Case("csv-ordered-fraction", "a number with a fraction in an ordered sensitive column of no declared type",
         lambda d: write(d, "table3.csv", table(rows=ROWS[:4] + [ROWS[4].replace("11000", "11000.5")] + ROWS[5:])),
         2),
    Case("csv-ragged-delimiter-given", "a CSV with a ragged row, `delimiter = \",\"` given",
         lambda d: (write(d, "table3.csv", table(rows=ROWS[:3] + [ROWS[3] + ",x"] + ROWS[4:])),
                    write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "table3.csv"\ndelimiter = ","')))), 2),
    Case("csv-type-declared-mismatch", 'a value that is not a number in a column typed `BIGINT` (`types`)',
         lambda d: (write(d, "table3.csv", table(rows=ROWS[:4] + [ROWS[4].replace("11000", "eleven")] + ROWS[5:])),
                    write(d, "spec.toml", spec(('path = "table3.csv"',
                                                'path = "table3.csv"\ntypes = { salary = "BIGINT" }')))), 2),
    Case("csv-type-declared-fraction", 'a fraction in a column typed `BIGINT` (`types`), which its read would round',
         lambda d: (write(d, "table3.csv", table(rows=ROWS[:4] + [ROWS[4].replace("11000", "11000.5")] + ROWS[5:])),
                    write(d, "spec.toml", spec(('path = "table3.csv"',
                                                'path = "table3.csv"\ntypes = { salary = "BIGINT" }')))), 2),
    Case("qi-missing", "a QI column missing (`zipcode`)",
         lambda d: write(d, "spec.toml", spec(("zip = {", "zipcode = {"))), 2),
    Case("sensitive-missing", "a sensitive column missing (`diagnosis`)",
         lambda d: write(d, "spec.toml", spec(("[sensitive.disease]", "[sensitive.diagnosis]"))), 2),
    Case("report-is-a-pipe", "the report path a named pipe (a device, such as `/dev/null`, likewise)",
         lambda d: os.mkfifo(d / "pipe"), 2, args=("anonymize", "spec.toml", "--report", "pipe")),
    Case("output-dangling-link", "the output path a symbolic link to nothing",
         lambda d: ((d / "out" / "release.parquet").unlink(), (d / "out" / "release.parquet").symlink_to(d / "gone")),
         2, args=("anonymize", "spec.toml", "--overwrite")),
    Case("output-given-twice", "`-o` and `--output` both on the command line (a wrapper's default and the caller's)",
         lambda d: None, 2, args=("anonymize", "spec.toml", "-o", "out/other.parquet", "--output",
                                  "out/release.parquet", "--overwrite")),
    Case("csv-preamble", "a CSV with a line before its header (`# exported …`)",
         lambda d: write(d, "table3.csv", "# exported from the clinic's system\n" + table()), 2),
    Case("csv-no-header", "a CSV without its header line (its first row read as the names: not shown)",
         lambda d: write(d, "table3.csv", "\n".join(ROWS) + "\n"), 2),
    Case("nulls-no-policy", "NULLs without a policy (an empty zip)",
         lambda d: write(d, "table3.csv", table(rows=ROWS[:2] + ["," + ROWS[2].split(",", 1)[1]] + ROWS[3:])), 2),
    Case("nulls-drop-all", 'every row dropped for its NULL (zip empty on every row, `nulls = "drop"`)',
         lambda d: (write(d, "table3.csv", table(rows=["," + r.split(",", 1)[1] for r in ROWS])),
                    write(d, "spec.toml", spec(("zip = { mask = true }", 'zip = { mask = true, nulls = "drop" }')))),
         2),
    # -- hierarchies
    Case("hierarchy-missing-value", "a hierarchy missing a value of the data (age 52)",
         lambda d: write(d, "age.csv", "\n".join(ln for ln in lines_of("age.csv") if not ln.startswith("52;")) + "\n"),
         2),
    Case("hierarchy-two-parents", "a hierarchy value with two parents (3* under <40 and >=40)", _two_parents, 2),
    Case("hierarchy-label-at-two-levels-gaa", "GAA over a hierarchy whose label '22' is a leaf and also the parent "
         "of 22 and 27", _label_at_two_levels_for_gaa, 2),
    Case("hierarchy-ragged", "a ragged hierarchy row", _ragged_hierarchy, 2),
    Case("hierarchy-empty", "an empty hierarchy file", lambda d: write(d, "age.csv", ""), 2),
    Case("hierarchy-two-tops", "a hierarchy with two tops (`*` and `ALL`)", _two_tops, 2),
    Case("hierarchy-header-line", "a hierarchy file with a header line (`age;decade;half;top`)",
         lambda d: write(d, "age.csv", "age;decade;half;top\n" + (TABLE3 / "age.csv").read_text()), 2),
    Case("hierarchy-file-missing", "a hierarchy file that does not exist", lambda d: (d / "age.csv").unlink(), 2),
    Case("mask-different-lengths", "a mask over codes of different lengths",
         lambda d: write(d, "table3.csv", table(rows=["476," + ROWS[0].split(",", 1)[1]] + ROWS[1:])), 2),
    # -- the output
    Case("output-exists", "an existing output and `overwrite = false`",
         lambda d: write(d, "spec.toml", spec(("overwrite = true", "overwrite = false"))), 2),
    Case("output-is-source", "an output path equal to the source (Parquet)",
         lambda d: (_parquet(d, "data.parquet"),
                    write(d, "spec.toml", spec(('path = "table3.csv"', 'path = "data.parquet"'),
                                               ('path = "out/release.parquet"', 'path = "data.parquet"')))), 2),
    Case("output-is-source-csv", "an output path equal to the source (CSV)",
         lambda d: write(d, "spec.toml", spec(('path = "out/release.parquet"', 'path = "table3.csv"'))), 2),
    Case("output-wrong-extension", "an output whose extension does not fit its format (`release.csv` with "
         "`format = \"parquet\"`)",
         lambda d: write(d, "spec.toml", spec(('path = "out/release.parquet"',
                                               'path = "out/release.csv"\nformat = "parquet"'))), 2),
    Case("output-unknown-suffix", "an output whose extension tells no format (`release.txt`)",
         lambda d: write(d, "spec.toml", spec(('path = "out/release.parquet"', 'path = "out/release.txt"'))), 2),
    Case("output-duckdb-no-table", "a DuckDB database output without `table`",
         lambda d: write(d, "spec.toml", spec(('path = "out/release.parquet"', 'path = "out/releases.duckdb"'))), 2),
    Case("output-table-exists", "an output table that exists in the DuckDB database (`overwrite = false`)",
         _existing_output_table, 2),
    Case("report-is-output", "a report path equal to the output path",
         lambda d: write(d, "spec.toml", spec(("overwrite = true", f"overwrite = true\nreport = {RELEASE}"))),
         2),
    Case("output-parent-is-file", "an output folder that cannot be created (its parent is a file)",
         lambda d: (write(d, "blocker", "a file, not a folder\n"),
                    write(d, "spec.toml", spec((OUTPUT, 'path = "blocker/out/release.parquet"')))),
         5),
    Case("output-not-writable", "an output folder that is not writable (immutable: `chattr +i`, which binds "
         "root too)", lambda d: (d / "locked").mkdir(),
         5, args=("anonymize", "spec.toml", "--output", "locked/release.parquet"), locked="locked"),
    Case("disk-full", "a full disk (a 512-byte file-size limit, SIGXFSZ ignored)", lambda d: None, 5, fsize=512),
    Case("memory-too-small", "a memory limit DuckDB cannot work in (`--memory-limit 1MB`, two threads)",
         lambda d: None, 5, args=("anonymize", "spec.toml", "--memory-limit", "1MB", "--threads", "2")),
    Case("lattice-too-large", "a lattice too large to search (20 more quasi-identifiers of 3 levels, no memory "
         "limit), refused before the search", _twenty_more_quasi_identifiers, 5),
    Case("memory-limit-zero", "a memory limit of 0 bytes (`--memory-limit 0GB`), which DuckDB reads as none",
         lambda d: None, 2, args=("anonymize", "spec.toml", "--memory-limit", "0GB")),
    Case("spark-duckdb-setting", "a DuckDB setting with the Spark engine (`--engine spark --threads 2`)",
         lambda d: None, 2, args=("anonymize", "spec.toml", "--engine", "spark", "--threads", "2")),
    Case("spark-parquet-file", "a Parquet file asked of the Spark engine, which writes folders (`--engine spark "
         "--output r.parquet`), refused before its session starts", lambda d: None, 2,
         args=("anonymize", "spec.toml", "--engine", "spark", "--output", "r.parquet")),
    Case("temp-directory-in-output", "`--temp-directory` inside the output folder (`out/folder/spill`), whose spill "
         "files the job found there after the search", lambda d: None, 2,
         args=("anonymize", "spec.toml", "--output", "out/folder", "--temp-directory", "out/folder/spill")),
    Case("spark-csv-output", "a CSV output asked of the Spark engine, which writes Parquet folders (`--engine spark "
         "--output r.csv`), refused before its session starts", lambda d: None, 2,
         args=("anonymize", "spec.toml", "--engine", "spark", "--output", "r.csv")),
    Case("duckdb-spark-setting", "a Spark setting with the DuckDB engine (`[engine] master = \"local[2]\"`)",
         lambda d: write(d, "spec.toml", spec(prefix="") + '\n[engine]\nmaster = "local[2]"\n'), 2),
    Case("temp-directory-file", "`[engine] temp_directory` naming a file (`table3.csv`)",
         lambda d: write(d, "spec.toml", spec(prefix="") + '\n[engine]\ntemp_directory = "table3.csv"\n'), 2),
    Case("node-not-in-lattice", "`--node` naming a level that does not exist (`age=9`)", lambda d: None, 2,
         args=("anonymize", "spec.toml", "--node", "zip=1,age=9")),
    Case("node-not-a-quasi-identifier", "`--node` naming a column that is no quasi-identifier (`zipp=1`): told "
         "before the data is read", lambda d: None, 2, args=("anonymize", "spec.toml", "--node", "zipp=1,age=2")),
    Case("node-double-comma", "`--node` with two commas between pairs (`age=2,,zip=1`): the second is read as part "
         "of the next name, which is told with the name it was near", lambda d: None, 2,
         args=("anonymize", "spec.toml", "--node", "age=2,,zip=1")),
    Case("node-not-satisfying", "`--node` naming a node whose classes fail the requirements (`zip=0,age=0`: every "
         "row its own class): measured alone, then the search runs to name the optimum", lambda d: None, 2,
         args=("anonymize", "spec.toml", "--node", "zip=0,age=0")),
    Case("node-not-satisfying-dry-run", "the same node with `--dry-run`: measured alone as the run measures it, "
         "no search (it exited 0 while the run exited 2)", lambda d: None, 2,
         args=("anonymize", "spec.toml", "--dry-run", "--node", "zip=0,age=0")),
    # -- values that once stopped with an internal error, or released as given
    Case("bands-nan", "a band width that is not a number (`bands = [nan]`)",
         lambda d: write(d, "spec.toml", spec((AGE, "age = { bands = [nan] }"))), 2),
    Case("bands-inf", "an infinite band width (`bands = [inf]`: every age in \"[nan, nan)\")",
         lambda d: write(d, "spec.toml", spec((AGE, "age = { bands = [inf] }"))), 2),
    Case("origin-nan", "a bands origin that is not a number (`origin = nan`)",
         lambda d: write(d, "spec.toml", spec((AGE, "age = { bands = [10], origin = nan }"))), 2),
    Case("origin-inf", "an infinite bands origin (`origin = inf`)",
         lambda d: write(d, "spec.toml", spec((AGE, "age = { bands = [10], origin = inf }"))), 2),
    Case("hierarchy-delimiter-empty", 'an empty hierarchy delimiter (`delimiter = ""`)',
         lambda d: write(d, "spec.toml", spec((AGE, 'age = { file = "age.csv", delimiter = "" }'))), 2),
    Case("hierarchy-delimiter-two", 'a two-character hierarchy delimiter (`delimiter = ";;"`)',
         lambda d: write(d, "spec.toml", spec((AGE, 'age = { file = "age.csv", delimiter = ";;" }'))), 2),
    Case("csv-delimiter-two", 'a two-character source delimiter (`[source] delimiter = ",,"`)',
         lambda d: write(d, "spec.toml", spec((SOURCE, SOURCE + '\ndelimiter = ",,"'))), 2),
    Case("csv-delimiter-backslash-t", 'a tab written as two characters (`delimiter = "\\\\t"`)',
         lambda d: write(d, "spec.toml", spec((SOURCE, SOURCE + '\ndelimiter = "\\\\t"'))), 2),
    Case("hierarchy-file-empty-path", 'an empty hierarchy path (`file = ""`: the spec\'s folder)',
         lambda d: write(d, "spec.toml", spec((AGE, 'age = { file = "" }'))), 2),
    Case("hierarchy-file-folder", 'a hierarchy path that is a folder (`hierarchy = "."`)',
         lambda d: write(d, "spec.toml", spec(('hierarchy = "disease.csv"', 'hierarchy = "."'))), 2),
    Case("hierarchy-other-delimiter", "a hierarchy file written with ',' where the spec expects ';'",
         lambda d: write(d, "age.csv", "\n".join(ln.replace(";", ",") for ln in lines_of("age.csv")) + "\n"), 2),
    Case("hierarchy-not-utf8", "a hierarchy file that is not UTF-8 (a Latin-1 label on line 7)",
         lambda d: write(d, "age.csv", ("\n".join(lines_of("age.csv")) + "\n").replace(">=40", "\xe940")
                         .encode("latin-1")), 2),
    Case("k-boolean", "k given as a boolean (`k = true`, once read as k = 1)",
         lambda d: write(d, "spec.toml", spec(("k = 3", "k = true"))), 2),
    Case("t-boolean", "t given as a boolean (`t = true`, once read as t = 1)",
         lambda d: write(d, "spec.toml", spec(("t = 0.2", "t = true"))), 2),
    Case("suppression-text", 'suppression given as text (`suppression = "0.1"`)',
         lambda d: write(d, "spec.toml", spec(("suppression = 0.0", 'suppression = "0.1"'))), 2),
    Case("types-unknown-column", 'a type for a column the source does not have (`types = { salry = "BIGINT" }`)',
         lambda d: write(d, "spec.toml", spec((SOURCE, SOURCE + '\ntypes = { salry = "BIGINT" }'))), 2),
    Case("vacuous-distinct-l-p", "k = 1 with `distinct_l = 1` and `p = 1`, which every table satisfies (fail closed)",
         lambda d: write(d, "spec.toml", spec(("k = 3", "k = 1"), ('distance = "ordered"\nt = 0.2', "distinct_l = 1"),
                                              ('distance = "hierarchical"\nt = 0.3', "p = 1"))), 2),
    Case("vacuous-t", "k = 1 with `t = 1` (ordered and hierarchical EMD), which every table satisfies (fail closed)",
         lambda d: write(d, "spec.toml", spec(("k = 3", "k = 1"), ("t = 0.2", "t = 1"), ("t = 0.3", "t = 1.0"))), 2),
    Case("vacuous-kl-t", "k = 1 with a KL `t = 100`, which no class of this table can exceed (−ln of its least "
         "share of a value is below 100), and `t = 1` (fail closed)",
         lambda d: write(d, "spec.toml", spec(("k = 3", "k = 1"), ('distance = "ordered"\nt = 0.2',
                                                                  'distance = "kl"\nt = 100'), ("t = 0.3", "t = 1.0"))),
         2),
    Case("vacuous-entropy-recursive", "k = 1 with `entropy_l = 1` and `recursive = { c = 1000, l = 1 }` (fail closed)",
         lambda d: write(d, "spec.toml", spec(("k = 3", "k = 1"), ('distance = "ordered"\nt = 0.2', "entropy_l = 1.0"),
                                              ('distance = "hierarchical"\nt = 0.3',
                                               "recursive = { c = 1000, l = 1 }"))), 2),
    # -- rows that must succeed
    Case("names-quotes", "column names with quotes and a semicolon (succeeds)",
         with_columns(['zip"code', "age'; DROP TABLE t; --", 'sal"ary', "dis;ease"]), 0,
         columns=('zip"code', "age'; DROP TABLE t; --", 'sal"ary', "dis;ease"), node=(1, 2)),
    Case("names-unicode", "unicode column names (succeeds)", with_columns(["邮编", "âge", "salário", "maladie ☤"]),
         0, columns=("邮编", "âge", "salário", "maladie ☤"), node=(1, 2)),
    Case("wide-2000", 'a 2,000-column table with `others = "drop"` (succeeds)', _wide, 0,
         columns=("zip", "age", "salary", "disease"), node=(1, 2)),
    Case("spec-bom", "a spec file that starts with a UTF-8 byte-order mark (succeeds)",
         lambda d: write(d, "spec.toml", b"\xef\xbb\xbf" + SPEC.encode()), 0,
         columns=("zip", "age", "salary", "disease"), node=(1, 2)),
    Case("sensitive-one-value", "a sensitive column with one value (salary all 5000, disease all flu: succeeds, EMD 0)",
         _one_value, 0, columns=("zip", "age", "salary", "disease")),
]

MESSAGES = {
    "toml-malformed": (
        "sqlclose: error: spec.toml: not valid TOML: Unclosed inline table (at line 13, column 20)"
    ),
    "spec-not-utf8": (
        "sqlclose: error: spec file spec.toml is not UTF-8 text (line 1, byte 3); re-save it as UTF-8"
    ),
    "unknown-key": (
        "sqlclose: error: spec.toml: invalid spec (2 problems):\n"
        "  - privacy.k: missing: this key is required\n"
        "  - privacy.kk: unknown key; did you mean 'k'?"
    ),
    "unknown-key-typo": (
        "sqlclose: error: spec.toml: invalid spec: "
        "source.delimeter: unknown key; did you mean 'delimiter'?"
    ),
    "spec-missing": (
        "sqlclose: error: spec file nope.toml does not exist"
    ),
    "spec-empty": (
        "sqlclose: error: spec file spec.toml is empty (or holds only comments): name the quasi-identifiers and"
        " the requirements, as in datasets/table3/table3.toml"
    ),
    "no-privacy": (
        "sqlclose: error: spec.toml: invalid spec: "
        "(top level): no privacy requirement: add [privacy] with k = … (e.g. k = 5), and"
        " t-closeness or l-diversity under [sensitive.<column>]; a spec that states no requirement"
        " releases nothing"
    ),
    "k-zero": (
        "sqlclose: error: spec.toml: invalid spec: "
        "privacy.k: Input should be greater than or equal to 1 (got 0)"
    ),
    "k-fraction": (
        "sqlclose: error: spec.toml: invalid spec: "
        "privacy.k: Input should be a valid integer, got a number with a fractional part (got 2.5)"
    ),
    "k-above-rows": (
        "sqlclose: error: k = 10 is larger than the table (9 rows): no generalization can make classes"
        " that big; lower k"
    ),
    "t-above-1": (
        "sqlclose: error: spec.toml: invalid spec: "
        "sensitive.disease.t: t must be in [0, 1] for the hierarchical distance (KL alone is"
        " unbounded) (got 1.5)"
    ),
    "t-negative": (
        "sqlclose: error: spec.toml: invalid spec: "
        "sensitive.salary.t: Input should be greater than or equal to 0 (got -0.1)"
    ),
    "suppression-1": (
        "sqlclose: error: spec.toml: invalid spec: "
        "privacy.suppression: Input should be less than 1; it is a fraction of the rows: 5 % is suppression = 0.05 (g"
        "ot 1.0)"
    ),
    "suppression-negative": (
        "sqlclose: error: spec.toml: invalid spec: "
        "privacy.suppression: Input should be greater than or equal to 0 (got -0.05)"
    ),
    "two-roles": (
        "sqlclose: error: spec.toml: invalid spec: "
        "(top level): column 'age' is declared both quasi-identifier and sensitive; give it one role"
    ),
    "identifier-and-qi": (
        "sqlclose: error: spec.toml: invalid spec: "
        "(top level): column 'zip' is declared both quasi-identifier and identifier; give it one"
        " role"
    ),
    "unknown-distance": (
        "sqlclose: error: spec.toml: invalid spec: "
        "sensitive.salary.distance: Input should be 'ordered', 'equal', 'hierarchical',"
        " 'variational' or 'kl' (got 'manhattan')"
    ),
    "hierarchical-no-hierarchy": (
        "sqlclose: error: spec.toml: invalid spec: "
        "sensitive.disease: distance = \"hierarchical\" needs a hierarchy (e.g. hierarchy ="
        " \"disease.csv\")"
    ),
    "env-unset": (
        "sqlclose: error: spec.toml: invalid spec: source.path: environment variable DATA_DIR is not set (used in "
        "'${DATA_DIR}/table3.csv'); set it or write ${DATA_DIR:-default}"
    ),
    "env-empty": (
        "sqlclose: error: spec.toml: invalid spec: source.path: environment variable DATA_DIR is set but empty "
        "(used in '${DATA_DIR}/table3.csv'); set it or write ${DATA_DIR:-default}"
    ),
    "source-missing": (
        "sqlclose: error: source <tmp>/table3.csv does not exist"
    ),
    "source-unknown-format": (
        "sqlclose: error: spec.toml: invalid spec: "
        "source: cannot tell the format of <tmp>/table3.dat; set format = \"parquet\", \"csv\" or"
        " \"duckdb\""
    ),
    "parquet-text-not-utf8": (
        "sqlclose: error: cannot read <tmp>/data.parquet: column 'disease' holds text that is not valid UTF-8 (a"
        " Parquet STRING column must; some writers mark raw bytes as text): write that column as binary, or fix its"
        " values"
    ),
    "parquet-garbage": (
        "sqlclose: error: cannot read <tmp>/data.parquet as parquet: Parquet magic bytes not found in"
        " footer. Either the file is corrupted or this is not a parquet file."
    ),
    "csv-ragged": (
        "sqlclose: error: cannot read <tmp>/table3.csv: line 5 has more fields than the header's "
        "4; fix that row (or the delimiter: ',')"
    ),
    "csv-unterminated-quote": (
        "sqlclose: error: cannot read <tmp>/table3.csv: line 4 opens a quoted field (\") that is never closed, so the"
        " rest of the file would be read as that one field; close the quote, or double a quote inside a field (\"\")"
    ),
    "csv-text-after-quote": (
        "sqlclose: error: cannot read <tmp>/table3.csv: line 4 has text after the quote (\") that closes a quoted "
        "field, before the next delimiter (',') or the line's end; quote the whole field, doubling each quote "
        "inside it (\"\"), or remove the stray quotes"
    ),
    "csv-short-row": (
        "sqlclose: error: cannot read <tmp>/table3.csv: line 5 has 3 fields where the header has "
        "4; fix that row (or the delimiter: ',')"
    ),
    "csv-wrong-delimiter": (
        "sqlclose: error: cannot read <tmp>/table3.csv: its header does not split on ';' (it seems "
        "to use ','); set [source] delimiter = ','"
    ),
    "csv-not-utf8": (
        "sqlclose: error: cannot read <tmp>/table3.csv: it is not UTF-8 text (line 4); set "
        "[source] encoding = \"latin-1\" or \"utf-16\""
    ),
    "csv-mixed-line-endings": (
        "sqlclose: error: cannot read <tmp>/table3.csv: line 6 ends with CRLF (\\r\\n) where line 1 ends with LF"
        " (\\n); the CSV reader takes one kind of line ending per file (two files joined, or a file edited on"
        " another system): convert the file to one kind, e.g. with dos2unix (LF) or unix2dos (CRLF)"
    ),
    "csv-empty-table": (
        "sqlclose: error: <tmp>/table3.csv has no rows: there is nothing to anonymize"
    ),
    "csv-empty-file": (
        "sqlclose: error: cannot read <tmp>/table3.csv: the file is empty (no header, no rows)"
    ),
    "csv-duplicate-header": (
        "sqlclose: error: <tmp>/table3.csv names column 'age' more than once; a copy would be"
        " released under another name (say, an identifier's copy): rename or remove the duplicates"
    ),
    "csv-header-case": (
        "sqlclose: error: <tmp>/table3.csv has columns whose names differ only in case ('age' and 'AGE'); SQL"
        " engines read them as one name, and one would be released under another name (say, an identifier's"
        " copy): rename or remove one of them"
    ),
    "csv-header-unnamed": (
        "sqlclose: error: cannot read <tmp>/table3.csv: field 3 of its header (line 1) has no name; name it, or"
        " remove that column"
    ),
    "duckdb-not-a-database": (
        "sqlclose: error: cannot read <tmp>/table3.csv as a DuckDB database: it is not one; set [source] format"
        " to the file's format (\"csv\", \"parquet\") or point path at a .duckdb file"
    ),
    "duckdb-view-fails": (
        "sqlclose: error: cannot read table 'v' in <tmp>/people.duckdb: it is a view, and its query failed:"
        " ConversionException: Conversion Error: a value could not be converted or computed (DuckDB's message"
        " names it, so it is not shown); column 'pay'; fix the view (TRY_CAST gives NULL where CAST fails) or the"
        " rows it reads"
    ),
    "undeclared-columns": (
        "sqlclose: error: <tmp>/table3.csv has 1 column the spec does not mention: 'name'; say what"
        " happens to them with others = \"keep\" (release them unchanged) or others = \"drop\" at the top"
        " of the spec, or list them under identifiers"
    ),
    "csv-type-mismatch-past-line-break": (
        "sqlclose: error: cannot read <tmp>/table3.csv: column 'salary' holds a value that is not "
        "a number (line 7); an ordered sensitive column needs numbers: fix the value, list it in "
        "[source] nulls, or use another distance"
    ),
    "csv-type-mismatch": (
        "sqlclose: error: cannot read <tmp>/table3.csv: column 'salary' holds a value that is not "
        "a number (line 6); an ordered sensitive column needs numbers: fix the value, list it in "
        "[source] nulls, or use another distance"
    ),
    "csv-ordered-fraction": (
        "sqlclose: error: cannot read <tmp>/table3.csv: column 'salary' holds 1 number that is not whole (a "
        "fraction or an exponent); an ordered column of a CSV is read as whole numbers unless its type is "
        "declared: declare it, e.g. [source] types = { salary = \"DOUBLE\" } (or \"DECIMAL(12, 2)\")"
    ),
    "csv-ragged-delimiter-given": (
        "sqlclose: error: cannot read <tmp>/table3.csv: line 5 has more fields than the header's "
        "4; fix that row (or the delimiter: ',')"
    ),
    "csv-type-declared-mismatch": (
        "sqlclose: error: cannot read <tmp>/table3.csv: column 'salary' holds a value that is not "
        "a BIGINT (line 6); fix the value, or change [source] types or nulls"
    ),
    "csv-type-declared-fraction": (
        "sqlclose: error: cannot read <tmp>/table3.csv: column 'salary' is declared BIGINT but holds 1 number "
        "that type would change (a fraction, more decimals than its scale, or a spelling such as an exponent or a "
        "hexadecimal number); a release gives values as the rows hold them: declare it \"DOUBLE\", or "
        "\"DECIMAL(precision, scale)\" with room for its decimals, or fix the values"
    ),
    "qi-missing": (
        "sqlclose: error: column 'zipcode' is not in <tmp>/table3.csv; did you mean 'zip'? (its"
        " columns: 'zip', 'age', 'salary', 'disease')"
    ),
    "sensitive-missing": (
        "sqlclose: error: column 'diagnosis' is not in <tmp>/table3.csv (its columns: 'zip', 'age',"
        " 'salary', 'disease')"
    ),
    "report-is-a-pipe": (
        "sqlclose: error: the report path pipe is not a file but a device, a pipe or a socket, which placing "
        "the new file there would replace: give the path of a file"
    ),
    "output-dangling-link": (
        "sqlclose: error: the output path <tmp>/out/release.parquet is a symbolic link to <tmp>/gone, which d"
        "oes not exist; remove the link, or give another path"
    ),
    "output-given-twice": (
        "sqlclose: error: option -o / --output is given more than once; it takes one value: give it once (see 'py"
        "thon -m sqlclose.cli anonymize --help')"
    ),
    "csv-preamble": (
        "sqlclose: error: cannot read <tmp>/table3.csv: line 2 has more fields than the header's 1; fix that "
        "row (or the delimiter: ','); the header, line 1, has one field: if lines come before the header (a t"
        "itle, a comment), remove them"
    ),
    "csv-no-header": (
        "sqlclose: error: column 'zip' is not in <tmp>/table3.csv (it has 4 columns, none of those asked for; "
        "they are not listed, since a file without a header line has its first row of data read as the names: "
        "check that its first line names its columns and that it is the file meant)"
    ),
    "nulls-no-policy": (
        "sqlclose: error: column 'zip' has 1 NULL value in <tmp>/table3.csv; set nulls = \"drop\""
        " (remove those rows) or nulls = \"value\" (treat NULL as the value null_value) for it in the"
        " spec, or clean the data"
    ),
    "nulls-drop-all": (
        "sqlclose: error: every row of <tmp>/table3.csv was dropped for a NULL under nulls = \"drop\""
        " (column 'zip'): there is nothing to anonymize; set nulls = \"value\" (treat NULL as the"
        " value null_value) for some of them in the spec, or clean the data"
    ),
    "hierarchy-missing-value": (  # a QI's value counted, not shown: `hierarchy validate --show-values` names it
        "sqlclose: error: column 'age' holds 1 value (in 1 row) that is not a leaf of its hierarchy <tmp>/age.csv"
        " (8 leaves; the values are not shown: an error lands in job logs; `sqlclose hierarchy validate"
        " SPEC.toml:age --show-values` lists them): add a line for each to the hierarchy (leaf;…;*), or fix the"
        " data"
    ),
    "hierarchy-two-parents": (
        "sqlclose: error: hierarchy of column 'age': <tmp>/age.csv, line 5: '3*' at level 1 has two"
        " parents at level 2: '<40' (<tmp>/age.csv, line 4) and '>=40'; a value may have only one"
        " parent per level"
    ),
    "hierarchy-label-at-two-levels-gaa": (
        "sqlclose: error: hierarchy of column 'age': <tmp>/age.csv, line 1: label '22' names '22' at level 0 and"
        " '22', '27' at level 1; GAA releases a column's values at several levels side by side, where the two"
        " would read as one class: give one of them another label (Incognito, which releases one level, takes it"
        " as it is)"
    ),
    "hierarchy-ragged": (
        "sqlclose: error: hierarchy of column 'age': <tmp>/age.csv, line 7: ragged hierarchy — leaf"
        " '43' has 3 levels, the first leaf has 4; every leaf needs a label at every level (leaf;…;top)"
    ),
    "hierarchy-empty": (
        "sqlclose: error: hierarchy of column 'age': hierarchy file <tmp>/age.csv is empty: expected"
        " one 'leaf;…;*' line per value"
    ),
    "hierarchy-two-tops": (
        "sqlclose: error: hierarchy of column 'age': <tmp>/age.csv, line 7: the top level must be one value for"
        " all leaves, found 2: '*', 'ALL'; this line's top is 'ALL' where 6 of 9 lines have '*': write '*' as the"
        " last label of every line (3 lines differ)"
    ),
    "hierarchy-header-line": (
        "sqlclose: error: hierarchy of column 'age': <tmp>/age.csv, line 1: the top level must be one value for"
        " all leaves, found 2: '*', 'top'; this first line looks like a header ('age', 'decade', 'half', 'top'):"
        " its top 'top' differs from every other line's; delete it (a hierarchy file has no header line)"
    ),
    "hierarchy-file-missing": (
        "sqlclose: error: hierarchy of column 'age': hierarchy file <tmp>/age.csv does not exist"
    ),
    "mask-different-lengths": (
        "sqlclose: error: mask rule for column 'zip' in <tmp>/table3.csv: the column holds 1 value (in 1"
        " row) of another length than most rows' codes, 5 characters, and masking needs codes of one length:"
        " pad or correct the codes, or use a hierarchy file (not shown: an error names no data value); they are"
        " the rows WHERE LENGTH(\"zip\") <> 5"
    ),
    "output-exists": (
        "sqlclose: error: <tmp>/out/release.parquet already exists; pass overwrite (--overwrite) to"
        " replace it"
    ),
    "output-is-source": (
        "sqlclose: error: the output path <tmp>/data.parquet is a file this job reads;"
        " writing the release there would destroy it: choose another path"
    ),
    "output-is-source-csv": (
        "sqlclose: error: the output path <tmp>/table3.csv is a file this job reads;"
        " writing the release there would destroy it: choose another path"
    ),
    "output-wrong-extension": (
        "sqlclose: error: spec.toml: invalid spec: "
        "output: format = 'parquet' does not fit the path 'release.csv', which names a CSV file: name it with"
        " '.parquet' or '.pq'"
    ),
    "output-unknown-suffix": (
        "sqlclose: error: spec.toml: invalid spec: "
        "output: cannot tell the output format of 'release.txt': name it .parquet, .csv or .duckdb, give no"
        " suffix for a Parquet folder, or set format = \"parquet-folder\" (--format; or \"parquet\", \"csv\","
        " \"duckdb\") to write it under this name"
    ),
    "output-duckdb-no-table": (
        "sqlclose: error: spec.toml: invalid spec: "
        "output: a DuckDB database output needs table = \"name\""
    ),
    "output-table-exists": (
        "sqlclose: error: table 'people' already exists in <tmp>/out/releases.duckdb; pass overwrite (--overwrite)"
        " to replace it"
    ),
    "report-is-output": (
        "sqlclose: error: the report path is the output path (<tmp>/out/release.parquet); give the"
        " report its own file"
    ),
    "output-parent-is-file": (
        "sqlclose: error: cannot create the folder for <tmp>/blocker/out/release.parquet: <tmp>/blocker"
        " is a file"
    ),
    "query-not-select": (
        "sqlclose: error: spec.toml: invalid spec: "
        "source.query: the query must be a SELECT (read-only), not DELETE; nothing was run (got 'DELETE FROM"
        " people')"
    ),
    "query-two-statements": (
        "sqlclose: error: spec.toml: invalid spec: "
        "source.query: the query must be one SELECT statement, not 2 statements (got \"SELECT * FROM"
        " 'table3.parquet'; DROP TABLE x\")"
    ),
    "query-guessed-types": (
        "sqlclose: error: spec.toml: invalid spec: source.query: the query reads 'table3.csv' with DuckDB guessing"
        " each column's type from its values, suppressed rows' among them, and the release holds those types: fix"
        " them in the query, as in read_csv('table3.csv', columns = {…}) or with all_varchar = true and a CAST of"
        " each number, or give the file as [source] path (got \"SELECT * FROM 'table3.csv'\")"
    ),
    "query-fails": (
        "sqlclose: error: the source query failed: IOException: IO Error: No files found that match the pattern"
        " \"nosuch.parquet\""
    ),
    "output-not-writable": (
        "sqlclose: error: cannot write in locked (permission denied); choose another output path"
    ),
    "disk-full": (
        "sqlclose: error: the environment refused: the file grew beyond the size limit while writing"
        " <tmp>/out/release.parquet; nothing was placed at the output path"
    ),
    "memory-too-small": (
        "sqlclose: warning: memory_limit 1 MB cannot bound this job: the interpreter and its libraries alone take"
        " ~250 MB. DuckDB gets 0.15 MB and spills past it, but the process will go over the limit; give at least"
        " 500 MB for a bound that holds\n"
        "sqlclose: error: DuckDB ran out of memory (could not allocate block of size 256.0 KiB (0 bytes/146.4 KiB"
        " used)) within its 0.15 MB of the job's memory_limit (1 MB): raise [engine] memory_limit (--memory-limit),"
        " or set [engine] threads = 1 (a query then needs less memory), and give [engine] temp_directory"
        " (--temp-directory) on a disk with room to spill; nothing was placed at the output path"
    ),
    "lattice-too-large": (
        "sqlclose: error: the search's lattice has 83,682,825,624 nodes (22 quasi-identifiers: 1 of 6 levels,"
        " 1 of 4 levels, 20 of 3 levels), whose bookkeeping needs ~469,158 GB, more than the 4.0 GB sqlclose"
        " allows it without a memory limit: give fewer quasi-identifiers or hierarchies with fewer levels,"
        " give [engine] memory_limit (--memory-limit) of at least 2,345,792 GB, or use [search] algorithm ="
        " \"gaa\" (--algorithm gaa), which does not enumerate the lattice; nothing was placed at the output"
        " path"
    ),
    "memory-limit-zero": (
        "sqlclose: error: --memory-limit 0GB: 0 bytes, which would be no limit at all: give a limit above zero"
        " with its unit (e.g. \"2GB\"), or leave memory_limit unset for no limit"
    ),
    "spark-parquet-file": (
        "sqlclose: error: the spark engine writes Parquet folders, not one file: give the output a path without a"
        " suffix (a Parquet folder)"),
    "temp-directory-in-output": (
        "sqlclose: error: temp_directory <tmp>/out/folder/spill lies inside the output path <tmp>/out/folder: DuckDB"
        " spills there while the job runs, and removes it after; give a folder outside the release (e.g. beside it)"),
    "spark-csv-output": (
        "sqlclose: error: a CSV output is written by the DuckDB engine; the spark engine writes Parquet folders: give"
        " the output a path without a suffix, or run on DuckDB"),
    "spark-duckdb-setting": (
        "sqlclose: error: threads is a DuckDB setting (--threads), not"
        " Spark's: on Spark give the session's resources as [engine] conf (e.g. conf = { \"spark.driver.memory\""
        " = \"4g\", \"spark.local.dir\" = \"/scratch\" }) and its cores as master (e.g. \"local[4]\"); see"
        " docs/engines.md, \"Spark's resources\""
    ),
    "duckdb-spark-setting": (
        "sqlclose: error: spec.toml: invalid spec: engine: master is a Spark setting, not DuckDB's, the engine"
        " this run uses: to run on Spark give [engine] name = \"spark\" (or --engine spark); on DuckDB give its"
        " resources as [engine] threads, memory_limit and temp_directory (--threads, --memory-limit,"
        " --temp-directory); see docs/engines.md, \"Spark's resources\""
    ),
    "temp-directory-file": (
        "sqlclose: error: spec.toml: invalid spec: engine.temp_directory: a file, not a folder: DuckDB spills into"
        " temp_directory; give a folder (made if missing) (got '<tmp>/table3.csv')"
    ),
    "node-not-in-lattice": (
        "sqlclose: error: node age=9: 'age' has no level 9 (its levels are 0 to 3)"
    ),
    "node-not-a-quasi-identifier": (
        "sqlclose: error: node names 'zipp', which is not a quasi-identifier (those are: zip, age)"
    ),
    "node-double-comma": (
        "sqlclose: error: node names ',zip', which is not a quasi-identifier (those are: zip, age); did you mean "
        "'zip'? Pairs are separated by one comma: a comma more is read as part of a name"
    ),
    "node-not-satisfying": (
        "sqlclose: error: node {'zip': 0, 'age': 0} does not satisfy the requirements; the optimum is zip=1, age=2"
    ),
    "node-not-satisfying-dry-run": (
        "sqlclose: error: node {'zip': 0, 'age': 0} does not satisfy the requirements: its classes failing k = 3, "
        "t = 0.2 on 'salary' and t = 0.3 on 'disease' hold more rows than suppression ≤ 0.0% may remove; a run "
        "(anonymize without --dry-run) would search the lattice for the optimum and name it"
    ),
    "bands-nan": (
        "sqlclose: error: spec.toml: invalid spec: "
        "quasi_identifiers.age.bands: band widths must be finite positive numbers, each a multiple "
        "of the previous (e.g. bands = [5, 10, 20]) (got [nan])"
    ),
    "bands-inf": (
        "sqlclose: error: spec.toml: invalid spec: "
        "quasi_identifiers.age.bands: band widths must be finite positive numbers, each a multiple "
        "of the previous (e.g. bands = [5, 10, 20]) (got [inf])"
    ),
    "origin-nan": (
        "sqlclose: error: spec.toml: invalid spec: "
        "quasi_identifiers.age.origin: origin must be a finite number: where the first band starts "
        "(e.g. origin = 0) (got nan)"
    ),
    "origin-inf": (
        "sqlclose: error: spec.toml: invalid spec: "
        "quasi_identifiers.age.origin: origin must be a finite number: where the first band starts "
        "(e.g. origin = 0) (got inf)"
    ),
    "hierarchy-delimiter-empty": (
        "sqlclose: error: spec.toml: invalid spec: "
        "quasi_identifiers.age.delimiter: the delimiter must be one character, such as \";\" or \",\"; "
        "a tab is written \"\\t\" in a TOML basic string (double quotes) (got '')"
    ),
    "hierarchy-delimiter-two": (
        "sqlclose: error: spec.toml: invalid spec: "
        "quasi_identifiers.age.delimiter: the delimiter must be one character, such as \";\" or \",\"; "
        "a tab is written \"\\t\" in a TOML basic string (double quotes) (got ';;')"
    ),
    "csv-delimiter-two": (
        "sqlclose: error: spec.toml: invalid spec: "
        "source.delimiter: the delimiter must be one character, such as \";\" or \",\"; a tab is "
        "written \"\\t\" in a TOML basic string (double quotes) (got ',,')"
    ),
    "csv-delimiter-backslash-t": (
        "sqlclose: error: spec.toml: invalid spec: "
        "source.delimiter: the delimiter must be one character, such as \";\" or \",\"; a tab is "
        "written \"\\t\" in a TOML basic string (double quotes) (got '\\\\t')"
    ),
    "hierarchy-file-empty-path": (
        "sqlclose: error: hierarchy of column 'age': hierarchy file <tmp> is a folder: give the path of "
        "a CSV file with one 'leaf;…;*' line per value"
    ),
    "hierarchy-file-folder": (
        "sqlclose: error: hierarchy of column 'disease': hierarchy file <tmp> is a folder: give the "
        "path of a CSV file with one 'leaf;…;*' line per value"
    ),
    "hierarchy-other-delimiter": (
        "sqlclose: error: hierarchy of column 'age': hierarchy file <tmp>/age.csv: no line splits on "
        "';', and every line holds ',': the file seems to use ','; set delimiter = \",\" for this "
        "hierarchy, or write the file with ';'"
    ),
    "hierarchy-not-utf8": (
        "sqlclose: error: hierarchy of column 'age': hierarchy file <tmp>/age.csv is not UTF-8 text "
        "(line 7, byte 78); re-save it as UTF-8"
    ),
    "k-boolean": (
        "sqlclose: error: spec.toml: invalid spec: "
        "privacy.k: give a number, not true or false (got True)"
    ),
    "t-boolean": (
        "sqlclose: error: spec.toml: invalid spec: "
        "sensitive.salary.t: give a number, not true or false (got True)"
    ),
    "suppression-text": (
        "sqlclose: error: spec.toml: invalid spec: "
        "privacy.suppression: give a number, not text: write it without quotes (got '0.1')"
    ),
    "types-unknown-column": (
        "sqlclose: error: [source] types: column 'salry' is not in <tmp>/table3.csv; did you mean "
        "'salary'? (its columns: 'zip', 'age', 'salary', 'disease'); correct the name or remove it from "
        "types"
    ),
    "vacuous-distinct-l-p": (
        "sqlclose: error: spec.toml: invalid spec: "
        "(top level): the requirements as given protect nothing: k = 1, and every table satisfies "
        "sensitive.salary.distinct_l = 1, sensitive.disease.p = 1; raise k (e.g. k = 5), or raise "
        "distinct_l to 2 or more or raise p to 2 or more"
    ),
    "vacuous-t": (
        "sqlclose: error: spec.toml: invalid spec: "
        "(top level): the requirements as given protect nothing: k = 1, and every table satisfies "
        "sensitive.salary.t = 1, sensitive.disease.t = 1; raise k (e.g. k = 5), or lower t below 1"
    ),
    "vacuous-kl-t": (
        "sqlclose: error: the requirements as given protect nothing on <tmp>/table3.csv: k = 1, and every class of "
        "this table satisfies sensitive.salary.t, sensitive.disease.t (no class of it can be farther from the table "
        "than its farthest class of one value); raise k (e.g. k = 5), or lower t"
    ),
    "vacuous-entropy-recursive": (
        "sqlclose: error: spec.toml: invalid spec: "
        "(top level): the requirements as given protect nothing: k = 1, and every table satisfies "
        "sensitive.salary.entropy_l = 1, sensitive.disease.recursive = { c = 1000, l = 1 }; raise k "
        "(e.g. k = 5), or raise entropy_l above 1 or raise recursive's l to 2 or more (or lower c to 1 "
        "or less)"
    ),
    "spec-bom": (
        "released 9 of 9 rows -> <tmp>/out/release.parquet"
    ),
    "names-quotes": (
        "released 9 of 9 rows -> <tmp>/out/release.parquet"
    ),
    "names-unicode": (
        "released 9 of 9 rows -> <tmp>/out/release.parquet"
    ),
    "wide-2000": (
        "released 9 of 9 rows -> <tmp>/out/release.parquet"
    ),
    "sensitive-one-value": (
        "released 9 of 9 rows -> <tmp>/out/release.parquet"
    ),
}

FAILURES = [c for c in CASES if c.code != 0]
SUCCESSES = [c for c in CASES if c.code == 0]


# ---------------------------------------------------------------------------- running a case


@pytest.fixture(scope="module")
def previous_release(tmp_path_factory) -> dict[str, bytes]:
    """The files of a successful run of the base spec: the release every case finds in place."""
    d = tmp_path_factory.mktemp("previous")
    _base(d)
    result = run(d, ("anonymize", "spec.toml"))
    assert result.returncode == 0, result.stderr
    out = d / "out"
    return {p.name: p.read_bytes() for p in out.iterdir()}


def run(d: Path, args: tuple[str, ...], env: dict[str, str] | None = None,
        fsize: int | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SQLCLOSE_") and k != "DATA_DIR"}
    environ.update(env or {})
    return run_cli([*args, "--no-progress"], cwd=d, env=environ, timeout=300, fsize=fsize)


def snapshot(d: Path) -> dict[str, str]:
    """Every file and folder under d, with the sha256 of each file's bytes."""
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(d.rglob("*"))}


def placeholders(text: str, d: Path) -> str:
    for form in {str(d.resolve()), str(d)}:
        text = text.replace(form, TMP)
    return text


def first_line(text: str) -> str:
    return text.splitlines()[0] if text.strip() else ""


def prepared(tmp_path: Path, case: Case, previous: dict[str, bytes]) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    _base(d)
    (d / "out").mkdir()
    for name, data in previous.items():
        (d / "out" / name).write_bytes(data)
    case.prepare(d)
    return d


def data_rows(d: Path) -> set[str]:
    """The data rows of Table 3 and of the case's own source file (as far as it decodes)."""
    source = d / "table3.csv"
    own = source.read_bytes().decode("utf-8", "replace").splitlines()[1:] if source.is_file() else []
    return {*ROWS, *(row for row in own if row.strip())}


def assert_no_hidden_files(d: Path) -> None:
    hidden = [str(p.relative_to(d)) for p in d.rglob(".*")]
    assert hidden == [], f"temporary files left behind: {hidden}"


@contextmanager
def locked(folder: Path | None) -> Iterator[None]:
    """The folder made immutable for the duration (root's permission checks pass otherwise)."""
    if folder is None:
        yield
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
        pytest.skip("this filesystem or user cannot make a folder immutable (chattr +i)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


@pytest.mark.parametrize("case", FAILURES, ids=[c.id for c in FAILURES])
def test_bad_input_fails_cleanly(case: Case, tmp_path: Path, previous_release: dict[str, bytes]) -> None:
    d = prepared(tmp_path, case, previous_release)
    before = snapshot(d)
    with locked(d / case.locked if case.locked else None):
        result = run(d, case.args, case.env, case.fsize)
    stderr = placeholders(result.stderr, d)
    assert "Traceback" not in stderr, stderr
    for row in data_rows(d):  # no raw data row of the source reaches the terminal or a job's log
        assert row not in stderr and row not in result.stdout, f"a data row leaked: {row!r} in {stderr!r}"
    assert "internal error" not in stderr, stderr
    assert (result.returncode, stderr.rstrip("\n")) == (case.code, MESSAGES[case.id])
    assert snapshot(d) == before, "the failing run wrote, changed or removed a file"
    assert_no_hidden_files(d)


@pytest.mark.parametrize("case", SUCCESSES, ids=[c.id for c in SUCCESSES])
def test_hostile_but_valid_input_succeeds(case: Case, tmp_path: Path, previous_release: dict[str, bytes]) -> None:
    d = prepared(tmp_path, case, previous_release)
    result = run(d, case.args, case.env, case.fsize)
    assert "Traceback" not in result.stderr, result.stderr
    assert (result.returncode, first_line(placeholders(result.stdout, d))) == (0, MESSAGES[case.id]), result.stderr
    released = pq.read_table(d / "out" / "release.parquet")
    assert tuple(released.column_names) == case.columns
    assert released.num_rows == len(ROWS)
    report = json.loads((d / "out" / "release.parquet.report.json").read_text(encoding="utf-8"))
    if case.node:  # Table 5 of Li et al.: ZIP 4767*/4760*/4790* (level 1), age <40/>=40 (level 2)
        assert tuple(report["node"].values()) == case.node
    assert report["output"]["sha256"] == hashlib.sha256((d / "out" / "release.parquet").read_bytes()).hexdigest()
    assert sorted(p.name for p in (d / "out").iterdir()) == ["release.parquet", "release.parquet.report.json"]
    assert_no_hidden_files(d)


def test_one_valued_sensitive_columns_are_exactly_close(tmp_path: Path, previous_release: dict[str, bytes]) -> None:
    """A column with one value has the table's distribution in every class: EMD 0 (by hand), every
    class of the bottom node passes t, so the optimum is the lowest node with classes of >= 3."""
    case = next(c for c in CASES if c.id == "sensitive-one-value")
    d = prepared(tmp_path, case, previous_release)
    assert run(d, case.args).returncode == 0
    report = json.loads((d / "out" / "release.parquet.report.json").read_text(encoding="utf-8"))
    for column in ("salary", "disease"):
        assert report["privacy"]["sensitive"][column]["max_emd"] == 0.0
    assert set(pq.read_table(d / "out" / "release.parquet").column("disease").to_pylist()) == {"flu"}


def test_the_doc_table_lists_every_row(repo_dir: Path) -> None:
    """docs/bad-input.md has one row per case, with its exit code and every line of its message."""
    doc = (repo_dir / "docs" / "bad-input.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z0-9-]+)` \|.*\| (\d+) \|$", doc, re.M)}
    assert sorted(rows) == sorted(c.id for c in CASES)
    for case in CASES:
        assert rows[case.id].endswith(f"| {case.code} |"), case.id
        for line in MESSAGES[case.id].splitlines():
            assert f"`{line}`" in rows[case.id], (case.id, line)


def test_the_table_is_complete() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)
    assert sorted(MESSAGES) == sorted(c.id for c in CASES)
