"""The table a ``(SparkSession, name)`` source names: its name split as Spark spells it, and what
to say when the session has no such table.

Spark quotes a name's part in backticks (``db.`a.b```, a backtick inside doubled: ```a``b```);
``spark.table()`` takes double quotes only under ``spark.sql.ansi.doubleQuotedIdentifiers``, but
sqlclose takes them always, as the DuckDB connection's ``(con, name)`` and ``[source] table`` do:
no part Spark reads starts with a double quote unquoted, so no name Spark reads changes meaning.
The parts then name the table twice, as one: the SQL's quoted identifiers, and the backtick-quoted
name ``session.table`` is given for the files the table reads (kept from being overwritten).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlclose.errors import InputError
from sqlclose.model.spec import source_table_parts, typed_name
from sqlclose.model.text import name_shown

SPARK_QUOTES = "`\""
SPARK_NAME_QUOTING = ("a part holding a dot is written in backticks, a backtick inside doubled (`a.b`, db.`a.b`, "
                      "`a``b`), or in double quotes")
NAMING = (f"name it \"table\", \"db.table\" or \"catalog.db.table\", no part empty; {SPARK_NAME_QUOTING}; or give "
          "the parts as a tuple (\"db\", \"a.b\")")


def spark_table_parts(name: Any) -> list[str]:
    """``name``'s parts, ``[catalog,] [db,] table`` (``source_table_parts``, a quote inside a part
    not quoted refused: Spark's parser refuses it, ``x`a.b``` meant something else)."""
    return source_table_parts(name, "the Spark catalog", NAMING, SPARK_QUOTES, SPARK_NAME_QUOTING, refuse_stray=True)


def typed_spark_name(parts: Sequence[str]) -> str:
    """Parts as they are typed for ``spark_table_parts`` (a message's, a report's label): a part
    that would not be read back as it is (a dot, a quote, spaces at its ends) in backticks, any
    other as it is: ``("db", "a.b")`` is db.`a.b`, ``("db", "people")`` db.people."""
    return typed_name(parts, "`", SPARK_QUOTES)


def missing_table(shown: str, parts: Sequence[str], read_as: str, error: str) -> InputError | None:
    """The refusal of a table the session has none of, Spark's ``error`` (its text) saying so for the
    name ``read_as`` (the backtick-quoted name the SQL reads): the name as read, for the user to see
    how it was split, and how to quote a part. None for another error (a view whose own query names
    a table gone is no missing table of the user's)."""
    if f"[TABLE_OR_VIEW_NOT_FOUND] The table or view {read_as} cannot be found" in error:
        said = f"the session has no table or view {read_as} (the name as read, each part quoted)"
    elif len(parts) == 3 and "[REQUIRES_SINGLE_PART_NAMESPACE]" in error and f"identifier {read_as}" in error:
        # Spark read the first part as a database of its own catalog, spark_catalog, whose databases
        # are one part each: the session has no catalog of that name.
        said = (f"the session has no catalog `{parts[0].replace('`', '``')}`, which a name of three parts starts "
                "with (catalog.db.table)")
    else:
        return None
    return InputError(f"cannot read table {name_shown(shown)} of the Spark catalog: {said}: check the name; "
                      f"{SPARK_NAME_QUOTING}")
