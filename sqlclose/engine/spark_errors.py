"""Spark's data errors rebuilt without the value they quote.

A Spark query that fails on a row — a cast of a caller's DataFrame or view (``CAST(age AS INT)``
over 'SECRET-4711'), an overflow, a division by zero, a date out of range: ANSI mode raises them
all — says so with a data exception (SQLSTATE class 22: ``[CAST_INVALID_INPUT]``,
``[CAST_OVERFLOW]``, ``[DIVIDE_BY_ZERO]``, ``[ARITHMETIC_OVERFLOW]`` …) whose text quotes the value
(``The value 'SECRET-4711' of the type "STRING" cannot be cast to "INT"``), a suppressed row's as
much as any. So do errors outside that class raised by a row's evaluation: a format a row's text does not
match (``[INVALID_FORMAT.MISMATCH_INPUT] … The input "STRING" SECRET-4711 does not match``, SQLSTATE
42601), a DataFrame's own ``raise_error``/``assert_true`` (``[USER_RAISED_EXCEPTION]``, P0001), a
Python UDF's exception (its traceback), an external routine's (classes 38 and 39): review of the
ninety-second round. Such an error is shown rebuilt, as DuckDB's are (``engine.duckdb.message_without_values``):
Spark's condition, the types, and the columns of the failing expression, never its text. Needs no
pyspark: a captured error's methods are read where it has them, else its text alone decides.
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp

from sqlclose.model.text import name_shown

# A data exception's SQLSTATE (SQL's class 22) as Spark prints it, anywhere in an error's text (a
# stage failure's text holds its task's error after its own words): fail closed.
_DATA_SQLSTATE = re.compile(r"SQLSTATE: (?:22|P0|38|39)[0-9A-Z]{3}\b|\[(?:INVALID_FORMAT|USER_RAISED_EXCEPTION)\b")
_ROW_STATES = ("22", "P0", "38", "39")  # data; raised by the user's code; external routines (UDFs)
_ROW_CONDITIONS = ("INVALID_FORMAT", "USER_RAISED_EXCEPTION")
_CONDITION = re.compile(r"[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)*")
_TYPE = re.compile(r'"?([A-Z][A-Z0-9_ (),]*)"?')
_PLAIN_NAME = re.compile(r"\w+")


def message_without_values(e: BaseException) -> str | None:
    """Spark's data exception ``e`` without the value it names; None for any other error."""
    state, condition = _asked(e, "getSqlState"), _asked(e, "getCondition")
    of_a_row = (isinstance(state, str) and state.startswith(_ROW_STATES)) or type(e).__name__ == "PythonException" \
        or (isinstance(condition, str) and condition.startswith(_ROW_CONDITIONS))
    if not of_a_row and not _DATA_SQLSTATE.search(str(e)):
        return None
    said = [(f"[{condition}] " if isinstance(condition, str) and _CONDITION.fullmatch(condition) else "")
            + "a value could not be converted or computed (Spark's message names it, so it is not shown)"]
    if types := _types(_asked(e, "getMessageParameters")):
        said.append(types)
    if columns := _columns(_asked(e, "getQueryContext")):
        said.append(f"column {columns}")
    return "; ".join(said)


def _asked(e: BaseException, method: str) -> Any:
    """What a captured Spark error's ``method`` returns; None where it has none or it fails."""
    try:
        return getattr(e, method)()
    except Exception:  # noqa: BLE001 - a plain exception, or a JVM already gone: the text decides
        return None


def _types(parameters: Any) -> str | None:
    """``STRING to INT`` from a cast's parameters (type names only, never ``expression``/``value``)."""
    if not isinstance(parameters, dict):
        return None
    kinds = [_TYPE.fullmatch(str(parameters.get(key, ""))) for key in ("sourceType", "targetType")]
    return " to ".join(kind[1] for kind in kinds) if all(kinds) else None


def _columns(contexts: Any) -> str | None:
    """The plain-named columns the failing expressions read (``'age'``), from each query context's
    fragment parsed as Spark SQL; the fragment itself is never shown (it may hold a literal)."""
    names: list[str] = []
    for context in contexts or ():
        try:
            fragment = sqlglot.parse_one(context.fragment(), read="spark")
        except Exception:  # noqa: BLE001 - a fragment that is no expression names no column
            continue
        names += [c.name for c in fragment.find_all(exp.Column) if _PLAIN_NAME.fullmatch(c.name)]
    return ", ".join(name_shown(name) for name in dict.fromkeys(names)) or None
