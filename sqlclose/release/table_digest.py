"""What a table output holds, as one digest independent of its row order (a table has no bytes of
its own to hash, and a database may store its rows in any order).

``sha256-rows-v2``: the SHA-256 of the table's column names and types, then of its rows' own
SHA-256 digests (of each row as text) in sorted order. The rows are hashed and sorted by DuckDB
(a sort larger than memory spills); Python folds the sorted digests into one, a batch at a time.

``md5-sum-v1`` (reports of schema 7) summed the low 64 bits of each row's MD5: a linear sum a
lattice reduction forges (review h4 of the eighty-fifth round flipped 33 rows of a released table
and kept the sum), blind to a column retyped to text. A table is not vouched for by it any more:
``refuse_unvouched`` asks for the release to be made again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import DuckDBEngine
from sqlclose.engine.base import FileRead, leaves_as_found
from sqlclose.engine.duckdb import holds_variant_or_union, table_slot
from sqlclose.errors import InputError, VerificationError
from sqlclose.model.text import name_shown, named
from sqlclose.prepare.sources import open_source

CONTENT_DIGEST_KIND = "sha256-rows-v2"


def refuse_unvouched(recorded: str | None) -> None:
    """A report's ``output.content_digest`` of another kind than this sqlclose computes is refused
    (bad input, exit 2): compared, an untouched table would be told changed, and matched by kind, an
    ``md5-sum-v1`` sum would vouch for a table a forger changed."""
    if not recorded:  # a table's report always records one: taken out, it vouches for nothing
        raise InputError("the report gives no output.content_digest: a table release's report records its "
                         f"{CONTENT_DIGEST_KIND} digest, and without it nothing ties the table to the report; give "
                         "the report written beside the release, or make the release again (sqlclose anonymize)")
    kind = recorded.partition(":")[0]
    if kind != CONTENT_DIGEST_KIND:
        raise InputError(f"the report's output.content_digest is of kind {kind or '(none)'!r}, not "
                         f"{CONTENT_DIGEST_KIND}: sqlclose vouches for a table by a {CONTENT_DIGEST_KIND} digest "
                         "alone (md5-sum-v1, of reports of schema 7, is a sum a changed table can be made to "
                         "match); make the release again (sqlclose anonymize) to check it")


def untold_columns(types: dict[str, str]) -> list[str]:
    """Columns whose type holds a UNION or a VARIANT, at any depth: a row's text says neither a
    UNION's member nor a VARIANT's type (20 as ``hourly`` or ``monthly``, 1 or '1'), so the digest
    could not tell such values apart. sqlclose writes no such column to a table."""
    return [name for name, kind in types.items() if holds_variant_or_union(kind)]


def refuse_untold(types: dict[str, str]) -> None:
    """A table output refuses the columns ``untold_columns`` names (bad input, before the search)."""
    untold = untold_columns(types)
    if untold:
        kind = types[untold[0]]
        csv = ", or write CSV" if kind == "VARIANT" else ""  # Parquet holds neither; CSV no nested value
        raise InputError(f"column {name_shown(untold[0])} is {kind}, which a DuckDB table output cannot hold: its "
                         "content digest reads each row as text, where a UNION's member and a VARIANT's type do not "
                         "show (20 as one member or another read alike); give the column as its text or as a STRUCT "
                         f"in a [source] query{csv}")


def table_release_digest(path: Path, table: str, recorded: str | None, engine: DuckDBEngine | None = None) -> str:
    """The content digest of ``table`` in the database file ``path``, for a report that recorded
    ``recorded``: refused first when the report's kind is not this one (``refuse_unvouched``) and
    when the table is not one sqlclose writes (``refuse_unlike_a_release``, exit 4). ``engine``:
    the check's own (its --memory-limit bounds the sort), left as it was found; else one made here."""
    refuse_unvouched(recorded)
    if path.is_file():  # a missing file: the read says so
        refuse_unlike_a_release(path, table)
    with leaves_as_found(engine):
        opened = open_source(path, engine, FileRead(table=table or None))
        try:
            types = _column_types(opened.engine, opened.relation)
            if untold := untold_columns(types):
                raise VerificationError(f"{path}: table {name_shown(table)} has {named('column', untold)} of a "
                                        "UNION or VARIANT type, which sqlclose writes to no table; this is not the "
                                        "table the report vouches for")
            return content_digest(opened.engine, opened.relation, types)
        finally:
            if engine is None:
                opened.engine.close()


def refuse_unlike_a_release(path: Path, table: str) -> None:
    """What sqlclose never writes as a table release, refused as not the release (exit 4) before a
    digest is taken: a view, computed at every read (it could give the checker, in UTC, the release
    and another reader the raw rows: review h1 of the eighty-sixth round), and a column with a
    collation or generated by an expression, whose reader gets other values than the rows hold; and
    what its schema says beside its rows (an ENUM type's members, a comment, a default, a constraint:
    ``TableSlot.dressed``), the report's digest being of the rows and their plain types."""
    slot = table_slot(path, table)
    if slot.kind == "view":
        raise VerificationError(f"{path}: {name_shown(table)} is a view, not a table: its rows are computed at every "
                                "read, and may differ from reader to reader (by the session's settings, the date), so "
                                "no digest vouches for them; sqlclose writes a release as a table")
    if slot.altered:
        raise VerificationError(f"{path}: table {name_shown(table)} has {named('column', slot.altered)} with a "
                                "collation or generated by an expression, which a reader gets otherwise than the rows "
                                "hold; sqlclose writes neither, so this is not the table the report vouches for")
    if slot.dressed:  # an ENUM's members, a comment or a default are read beside the rows (review of the 93rd round)
        raise VerificationError(f"{path}: table {name_shown(table)} has {', '.join(slot.dressed)}, which a reader of "
                                "the table reads beside its rows and sqlclose writes to no release; this is not the "
                                "table the report vouches for")


def content_digest(engine: DuckDBEngine, relation: exp.Expression, types: dict[str, str] | None = None) -> str:
    """``sha256-rows-v2:hex`` of what ``relation`` holds, its row order aside. ``types``: its
    columns' (``_column_types``), when the caller has them already."""
    types = types if types is not None else _column_types(engine, relation)
    # The row by its alias, one no column of the table is named: ``t`` named a release's column ``t``
    # when it had one, and the digest was of that column alone (review h4 of the eighty-fifth round).
    taken = {name.casefold() for name in types}
    alias = next(a for a in ("t", *(f"t_{i}" for i in range(len(taken) + 1))) if a not in taken)
    row = exp.Cast(this=exp.column(alias), to=exp.DataType.build("VARCHAR"))
    rows = exp.alias_(relation.copy(), alias, table=True)
    with engine.texts_in_utc():  # the rows' text as every session gives it (`check --against` runs in UTC)
        digest = hashlib.sha256(json.dumps(list(types.items())).encode() + b"\n")
        hashed = exp.Anonymous(this="UNHEX", expressions=[exp.Anonymous(this="SHA256", expressions=[row])])
        query = exp.select(hashed.as_("h")).from_(rows).order_by(exp.column("h"))
        for batch in engine.batches(query):
            digest.update(_joined_bytes(batch.column(0)))
    return f"{CONTENT_DIGEST_KIND}:{digest.hexdigest()}"


def _column_types(engine: DuckDBEngine, relation: exp.Expression) -> dict[str, str]:
    return engine.column_types(exp.select(exp.Star()).from_(relation.copy()))


def _joined_bytes(column: pa.Array) -> memoryview:
    """A binary column's values, one after another, as the bytes they are (no per-value Python)."""
    column = column.cast(pa.binary())
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32, count=len(column) + 1, offset=column.offset * 4)
    data = column.buffers()[2]
    return memoryview(data)[int(offsets[0]):int(offsets[-1])] if data is not None else memoryview(b"")
