"""Whether a live source's rows changed while a run, a sweep or a check read them.

A caller's table, Arrow table or pandas DataFrame is read where it lives at every pass, so its rows
are digested before the first pass and after the last (``Opened.keep_rows`` for a sweep or a check;
``api._prepared`` and ``SearchedRows`` for a run, its second digest after the release's re-check).
The digest is never published (it is kept in memory under a key of the run's own), so it need not be
the report's keyed fingerprint (``problem.keyed_fingerprint``: MD5 of each row cast to text, 1.2–3.3
s per million rows of nine columns, the text cast most of it; docs/performance.md, ninety-eighth
round). On DuckDB each row is hashed typed instead (0.2 s), except where two values compare (and
hash) equal yet are written differently, as the local release's tie keys judge it
(``release_query._unlike_equal``): a float's sign is hashed beside it (-0.0 and 0.0 hash alike), an
interval (1 day and 24 hours), a duration or a nested value by its text; text byte for byte,
whatever the column's collation (NOCASE hashes 'A' and 'a' alike). The columns'
names and types are part of the digest. Other engines keep the keyed fingerprint.
"""

from __future__ import annotations

import json
import re

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.prepare.problem import keyed_fingerprint
from sqlclose.sql import queries as q

_BYTES = exp.Identifier(this="binary", quoted=True)  # DuckDB's byte-wise collation


def rows_digest(engine: Engine, relation: exp.Expression, key: str) -> str:
    """A digest of ``relation``'s rows (in any order) and columns, keyed by ``key``: it changes
    when a row is updated, deleted or inserted, or a column's name or type changes."""
    if engine.name != "duckdb":
        return keyed_fingerprint(engine, relation, key)
    schema = engine.schema(relation)
    params = q.Params()
    parts = [params.add(key)] + [part for field in schema for part in _hashed(q.col(field.name, "src"), field.type)]
    row = exp.Anonymous(this="HASH", expressions=parts)
    total = exp.Coalesce(this=exp.Sum(this=row), expressions=[exp.Literal.number(0)])
    query = exp.select(exp.alias_(exp.Cast(this=total, to=exp.DataType.build("VARCHAR")), "digest")) \
        .from_(exp.alias_(relation.copy(), q.ident("src"), table=True) if isinstance(relation, exp.Table)
               else relation.copy().as_("src"))
    with engine.texts_in_utc():  # a nested TIMESTAMPTZ's text as every session gives it
        rows = str(engine.fetch_row(query, params.values)["digest"])
    # The types as Arrow gives them, a zone's name aside (as ``keyed_fingerprint``'s): a TIMESTAMPTZ
    # reads in the session's zone, the same instants.
    return f"{rows}:{json.dumps([[field.name, re.sub(r'tz=[^]>,]+', 'tz', str(field.type))] for field in schema])}"


def _hashed(column: exp.Expression, kind: pa.DataType) -> list[exp.Expression]:
    """What a row's hash reads of one column: the value typed where equal values are written
    alike, with a float's sign beside it, else its text byte for byte."""
    if pa.types.is_floating(kind):
        return [column, exp.Anonymous(this="SIGNBIT", expressions=[column.copy()])]
    if pa.types.is_interval(kind) or pa.types.is_duration(kind) or pa.types.is_nested(kind) \
            or pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind) \
            or pa.types.is_dictionary(kind) or pa.types.is_null(kind) or isinstance(kind, pa.ExtensionType):
        return [exp.Collate(this=exp.Cast(this=column, to=exp.DataType.build("VARCHAR")), expression=_BYTES.copy())]
    return [column]
