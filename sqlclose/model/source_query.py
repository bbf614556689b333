"""The checks of a ``[source] query`` before anything runs: one read-only SELECT, whose files are
read with fixed column types.

DuckDB reads a CSV or JSON file by guessing each column's type from its values (``FROM
'people.csv'``, ``read_csv('people.csv')``), a suppressed row's among them, and the release holds
the types: one suppressed salary of 5000.5 made every released salary a DOUBLE. A query must fix
the types of what it reads that way (docs/what-a-release-reveals.md); Parquet files and database
tables carry their own.
"""

from __future__ import annotations

import logging
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

# DuckDB's readers that guess column types unless told them, and the file names it reads with them
# when a query names a file as a table (its replacement scans; compressed files too).
GUESSING_READERS = {"read_csv", "read_csv_auto", "read_json", "read_json_auto", "read_ndjson", "read_ndjson_auto"}
_GUESSED_FILE = re.compile(r".*\.(csv|tsv|json|jsonl|ndjson)(\.(gz|zst))?", re.IGNORECASE)
_WRITES = (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Command, exp.Copy)


def check(query: str) -> None:
    """Raise ValueError unless ``query`` is exactly one SELECT (DuckDB's SQL) whose CSV and JSON
    reads fix their column types."""
    refuse_guessed_types(single_select(query), "the query")


def refuse_guessed_types(statement: exp.Expression, reader: str) -> None:
    """Raise ValueError where ``statement`` (a query, or a view's SQL: ``reader`` names it) reads a
    CSV or JSON file letting DuckDB guess its columns' types."""
    for table in statement.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and table.this.quoted and _GUESSED_FILE.fullmatch(table.name):
            raise ValueError(_guessed(reader, repr(table.name), f"read_csv('{table.name}', columns = {{…}})"))
    for call in statement.find_all(exp.Func):
        name = _name(call)
        if name in GUESSING_READERS and not _types_fixed(call):
            first = call.expressions[0] if isinstance(call, exp.Anonymous) and call.expressions else call.this
            files = f"{first.sql('duckdb')}, " if isinstance(first, (exp.Literal, exp.Array)) else ""
            raise ValueError(_guessed(reader, f"{name}({files}…)", f"{name}({files}…, columns = {{…}})"))


def single_select(query: str) -> exp.Query:
    """``query`` parsed, when it is exactly one SELECT (DuckDB's SQL); else ValueError."""
    quiet = logging.getLogger("sqlglot")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # sqlglot warns when it falls back to a bare command: we refuse those anyway
    try:
        statements = [s for s in sqlglot.parse(query, read="duckdb") if s is not None]
    except ParseError as e:
        raise ValueError(f"the query is not valid SQL: {str(e).splitlines()[0]}") from None
    finally:
        quiet.setLevel(level)
    if len(statements) != 1:
        raise ValueError(f"the query must be one SELECT statement, not {len(statements)} statements")
    statement = statements[0]
    if not isinstance(statement, exp.Query) or any(isinstance(node, _WRITES) for node in statement.walk()):
        raise ValueError(f"the query must be a SELECT (read-only), not {statement.key.upper()}; nothing was run")
    return statement


def _name(call: exp.Func) -> str:
    return (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()


def _types_fixed(call: exp.Func) -> bool:
    """Whether a reader's call names every column's type (``columns = {…}``), or reads them all as
    text (``all_varchar = true``)."""
    named = {}
    for arg in call.expressions:
        arg = arg.unnest() if isinstance(arg, exp.Paren) else arg  # a view's stored SQL: ("columns" = …)
        if isinstance(arg, (exp.EQ, exp.PropertyEQ)) and isinstance(arg.this, (exp.Column, exp.Identifier)):
            named[arg.this.name.lower()] = arg.expression
    text = named.get("all_varchar")
    return "columns" in named or (isinstance(text, exp.Boolean) and text.this is True)


def _guessed(reader: str, read: str, fixed: str) -> str:
    where = "the query" if reader == "the query" else "the view"
    file_instead = ", or give the file as [source] path" if reader == "the query" else ""
    return (f"{reader} reads {read} with DuckDB guessing each column's type from its values, suppressed rows' "
            f"among them, and the release holds those types: fix them in {where}, as in {fixed} or with "
            f"all_varchar = true and a CAST of each number{file_instead}")
