"""Digests of a relation's rows (in any order) and columns: the report's keyed input fingerprint
(``keyed_fingerprint``, ``fingerprint_of``), the change digest that tells whether a live source's rows
changed while a run, a sweep or a check read them (``rows_digest``), and other engines' text digest
(``text_digest``).

A caller's table, Arrow table or pandas DataFrame is read where it lives at every pass, so its rows
are digested before the first pass and after the last (``Opened.keep_rows`` for a sweep or a check;
``api._prepared`` and ``SearchedRows`` for a run, its second digest after the release's re-check),
under the operator's key when a run is given one, else under a key of the run's own. The report's
fingerprint (``keyed_fingerprint``, recomputed by the nightly "up to date" check) is that digest under
the operator's key, on DuckDB its HMAC (the typed digest itself is never published), elsewhere the
keyed text digest as it is: a run takes it from its change test's first pass (``fingerprint_of``).

On DuckDB each row is hashed typed (0.3 s per million rows of sixteen columns, where each row cast to
text and MD5-hashed took 4.3 s, the text cast most of it; docs/performance.md, ninety-eighth round),
except where two values compare (and hash) equal yet are written differently, as the local release's
tie keys judge it (``release_query._unlike_equal``): a float's sign is hashed beside it (-0.0 and 0.0
hash alike), an interval (1 day and 24 hours), a duration or a nested value by its text; text byte for
byte, whatever the column's collation (NOCASE hashes 'A' and 'a' alike). The columns' names and types
are part of the digest. Other engines hash each row's text (``text_digest``: Spark's row as JSON).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.sql import queries as q

_BYTES = exp.Identifier(this="binary", quoted=True)  # DuckDB's byte-wise collation

# What the report's ``input.fingerprint_kind`` says: v3 (DuckDB) is 32 hex digits, an HMAC of the
# typed digest; v2 (text, other engines) is a decimal sum, a colon, then 32 hex digits, so a v2
# fingerprint can never equal a v3 one.
TYPED_KIND = "keyed-hmac-typed-v3"
TEXT_KIND = "keyed-md5-sum-v2"  # see sql/fingerprint.sql; v2: then an HMAC of the columns' names and types


def fingerprint_kind(engine: Engine) -> str:
    """How ``keyed_fingerprint`` fingerprints on ``engine`` (versioned)."""
    return TYPED_KIND if engine.name == "duckdb" else TEXT_KIND


def keyed_fingerprint(engine: Engine, relation: exp.Expression, key: str) -> str:
    """The report's input fingerprint, keyed with the operator's secret: on DuckDB an HMAC-SHA256 of
    the typed digest (a PRF of what the rows determine: without the key nobody can test a guessed row
    or table against it), elsewhere the text digest, itself keyed (``text_digest``)."""
    return fingerprint_of(engine, rows_digest(engine, relation, key), key)


def fingerprint_of(engine: Engine, digest: str, key: str) -> str:
    """The report's fingerprint from ``rows_digest`` under the operator's ``key``, taken once: a live
    source's change test digests its rows under that key, and the same pass gives the fingerprint
    (``api._prepared``). On DuckDB the typed digest itself is never published, only its HMAC; the
    text digest is published as it is."""
    if engine.name != "duckdb":
        return digest
    return hmac.new(key.encode(), digest.encode(), hashlib.sha256).hexdigest()[:32]


def rows_digest(engine: Engine, relation: exp.Expression, key: str) -> str:
    """A digest of ``relation``'s rows (in any order) and columns, keyed by ``key``: it changes
    when a row is updated, deleted or inserted, or a column's name or type changes."""
    if engine.name != "duckdb":
        return text_digest(engine, relation, key)
    return _typed_digest(engine, relation, key)


def text_digest(engine: Engine, relation: exp.Expression, key: str) -> str:
    """The rows' keyed hashes of their text summed (sql/fingerprint.sql, ``Engine.row_hash``), then,
    after a colon, an HMAC of the columns' names and types. A row's text is alike for 39 and '39': a
    Parquet input whose age became text kept its fingerprint, and the nightly re-run said "up to date"
    over an input a fresh run refuses (review h2 of the eighty-sixth round)."""
    params = q.Params()
    schema = engine.schema(relation)
    row = q.fingerprint_row(schema.names)
    query = q.fingerprint(relation.copy(), engine.row_hash(row, params.add(key)), row)
    with engine.texts_in_utc():  # the rows' text as every session gives it
        rows = str(engine.fetch_row(query, params.values)["fingerprint"])
    return f"{rows}:{hmac.new(key.encode(), _columns(schema), hashlib.sha256).hexdigest()[:32]}"


def _typed_digest(engine: Engine, relation: exp.Expression, key: str) -> str:
    """DuckDB's: ``HASH(key, each column as ``_hashed`` reads it)`` summed over the rows as a HUGEINT
    (64-bit hashes: an accidental change keeps the sum with odds of 2^-64), then, after a colon, the
    columns' names and types."""
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
    return f"{rows}:{_columns(schema).decode()}"


def _columns(schema: pa.Schema) -> bytes:
    """The columns' names and types as Arrow gives them, a zone's name aside: a TIMESTAMPTZ reads in
    the session's zone (America/New_York from a caller's table, UTC from a Parquet copy), the same
    instants."""
    return json.dumps([[field.name, re.sub(r"tz=[^\]>,]+", "tz", str(field.type))] for field in schema]).encode()


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
