"""Static SQL from ``sqlclose/sql/templates/``, filled with identifiers through the AST.

A template names its holes ``__like_this__``: as a table (``FROM __source__``) or as a column.
``fill`` swaps each hole for an expression — or, for a column hole inside a list (SELECT list,
GROUP BY, ORDER BY), for several — so user-supplied names only ever enter as quoted
identifiers built by sqlglot, never as text.

The files are written in sqlglot's neutral dialect (integer division is ``DIV``; every ORDER BY
says its direction and where NULLs go, which a connection's defaults would otherwise decide), so
each engine renders them in its own dialect without a DuckDB reading in between.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path

import sqlglot
from sqlglot import exp

Fill = exp.Expression | list[exp.Expression]


def _sql_dir() -> Path:
    return Path(__file__).resolve().parent / "templates"


@cache
def _parsed(name: str) -> exp.Expression:
    text = (_sql_dir() / f"{name}.sql").read_text(encoding="utf-8")
    tree = sqlglot.parse_one(text)  # neutral: no engine's dialect
    for node in tree.walk():
        node.comments = None  # the files are documented; generated SQL stays compact
        node._meta = None  # the parser's token positions: copied with every fill and render, never read
    return tree


def template(name: str, renamed: Mapping[str, str] | None = None, **holes: Fill) -> exp.Expression:
    """Parse ``sql/<name>.sql`` (cached) and fill its holes. Every hole must be given. ``renamed``:
    the template's own names (a column alias such as ``__sqlclose_v``) given others, before the
    holes bring the user's names in: one a user column has would make a reference ambiguous."""
    tree = _parsed(name).copy()
    for identifier in tree.find_all(exp.Identifier) if renamed else ():
        if renamed.get(identifier.name, identifier.name) != identifier.name:  # unchanged: the SQL it was
            identifier.set("this", renamed[identifier.name])
            identifier.set("quoted", True)
    found = set()
    for node in list(tree.find_all(exp.Column, exp.Table)):
        key = _hole_name(node)
        if key is None:
            continue
        if key not in holes:
            raise KeyError(f"template {name}.sql: no value for hole __{key}__")
        found.add(key)
        _fill_one(node, holes[key])
    missing = set(holes) - found
    if missing:
        raise KeyError(f"template {name}.sql has no hole(s) {sorted(missing)}")
    return tree


def _hole_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Column) and node.table:
        return None
    name = node.name
    if len(name) > 4 and name.startswith("__") and name.endswith("__"):
        return name[2:-2]
    return None


def _fill_one(node: exp.Expression, value: Fill) -> None:
    if isinstance(node, exp.Table):
        replacement = value.copy()
        alias = node.args.get("alias")
        if alias is not None:
            replacement.set("alias", alias.copy())
        node.replace(replacement)
        return
    if not isinstance(value, list):
        node.replace(value.copy())
        return
    # A list fills a list: splice copies of the enclosing item (e.g. an ORDER BY term) in place.
    item = node.parent if isinstance(node.parent, exp.Ordered) else node
    holder, key = item.parent, item.arg_key
    items = holder.args.get(key)
    if not isinstance(items, list):
        raise ValueError(f"hole {node.name} takes a single expression here, not a list")
    spliced: list[exp.Expression] = []
    for existing in items:
        if existing is not item:
            spliced.append(existing)
            continue
        for v in value:
            if item is node:
                spliced.append(v.copy())
            else:
                copy = item.copy()
                copy.set("this", v.copy())
                spliced.append(copy)
    holder.set(key, spliced)
