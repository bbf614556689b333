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

import numpy as np
import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import DuckDBEngine
from sqlclose.errors import InputError

CONTENT_DIGEST_KIND = "sha256-rows-v2"


def refuse_unvouched(recorded: str | None) -> None:
    """A report's ``output.content_digest`` of another kind than this sqlclose computes is refused
    (bad input, exit 2): compared, an untouched table would be told changed, and matched by kind, an
    ``md5-sum-v1`` sum would vouch for a table a forger changed."""
    kind = (recorded or "").partition(":")[0]
    if kind != CONTENT_DIGEST_KIND:
        raise InputError(f"the report's output.content_digest is of kind {kind or '(none)'!r}, not "
                         f"{CONTENT_DIGEST_KIND}: sqlclose vouches for a table by a {CONTENT_DIGEST_KIND} digest "
                         "alone (md5-sum-v1, of reports of schema 7, is a sum a changed table can be made to "
                         "match); make the release again (sqlclose anonymize) to check it")


def content_digest(engine: DuckDBEngine, relation: exp.Expression) -> str:
    """``sha256-rows-v2:hex`` of what ``relation`` holds, its row order aside."""
    # The row by its alias, one no column of the table is named: ``t`` named a release's column ``t``
    # when it had one, and the digest was of that column alone (review h4 of the eighty-fifth round).
    types = engine.column_types(exp.select(exp.Star()).from_(relation.copy()))
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


def _joined_bytes(column: pa.Array) -> memoryview:
    """A binary column's values, one after another, as the bytes they are (no per-value Python)."""
    column = column.cast(pa.binary())
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32, count=len(column) + 1, offset=column.offset * 4)
    data = column.buffers()[2]
    return memoryview(data)[int(offsets[0]):int(offsets[-1])] if data is not None else memoryview(b"")
