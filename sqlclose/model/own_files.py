"""How sqlclose tells its reports and pages from other files: what an overwrite may replace at a
report's or a page's path. An overwrite replaces a previous file of that kind, never another file
that happens to be there: a report path set to another release's data file
replaced that release with JSON, and a page path given the file beside a copied report replaced
that release with HTML (review of the ninety-fourth round). A DuckDB database is told by its header
here too, for each reader of one: a source, an output a release is added to as a table, and the
format of a file whose suffix names none."""

from __future__ import annotations

import json
from pathlib import Path

PAGE_MARK = "sqlclose-release"  # the <meta> name a sign-off page's head carries (audit/html.py)
PAGE_HEAD_BYTES = 65536  # the page's <head>: its title holds the release's name
REPORT_MOST_BYTES = 512 * 2**20  # past this a file is no report sqlclose wrote (a report is kB to a few MB)


def is_report_file(path: Path) -> bool:
    """Whether ``path`` holds a sqlclose report: a JSON object led by its ``schema_version``.
    PermissionError when it cannot be read: what it holds is not known, and each caller says what
    that means for it (it was told "not a sqlclose report", exit 2, of a report the job may not read:
    the ninety-sixth round's review)."""
    try:
        if path.stat().st_size > REPORT_MOST_BYTES:
            return False
        with path.open("rb") as f:
            if f.read(64).lstrip()[:1] != b"{":  # a data file is never read whole
                return False
            f.seek(0)
            doc = json.loads(f.read())
    except PermissionError:
        raise
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and isinstance(doc.get("schema_version"), str) and "output" in doc


def unreadable_report(report: Path, why: str, named: str = "the report") -> str:
    """The environment's refusal (exit 5) of a report this job may not read; ``why``: what it reads it for;
    ``named``: what the path is to the job ("the output path": a file read to tell whether it is a report)."""
    return f"the environment refused: permission denied reading {named} {report} ({why}): give the job's user " \
           "read access to it"


def is_html_page(path: Path) -> bool:
    """Whether ``path`` holds an HTML page (sqlclose's sign-off page, or another: what a page path may
    hold to be replaced), told by its first bytes."""
    try:
        with path.open("rb") as f:
            head = f.read(1024).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n").lower()
    except OSError:
        return False
    return head.startswith(("<!doctype html", "<html"))


def has_duckdb_header(path: Path) -> bool:
    """Whether ``path`` starts as a DuckDB database does: "DUCK" at byte 8 of its main header (a
    truncated one too, whose opening then says what is wrong with it). OSError when unreadable:
    each caller says what that means for it."""
    with path.open("rb") as f:
        return f.read(12)[8:12] == b"DUCK"
