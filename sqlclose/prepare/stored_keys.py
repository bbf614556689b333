"""A base of the rows as they stand, stored as the SQL search's packed keys.

When nearly every input row is a combination of its own (``problem._groups_base``), the base
histogram holds the rows one by one and the SQL search reads them only as packed keys
(``search.keyed_base``). Such a base is made as those keys, in the one sorted pass over the
source, and its dense codes, which every other reader uses, are a view unpacking them: at 10 M
rows one statement of 0.96–1.07 s instead of the base's 1.03–1.12 s and the keys' 0.14 s, and
one table of every row fewer held (docs/performance.md, seventy-ninth round).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from sqlclose.engine.base import Engine
from sqlclose.model.packing import Packing
from sqlclose.sql import queries as q


@dataclass(frozen=True)
class StoredKeys:
    """The keyed rows a base is stored as (``q.keyed_base``'s columns), and their layout."""

    table: exp.Table
    packing: Packing


def keyed_rows(source: exp.Expression, qis: Sequence[q.CodedColumn], sas: Sequence[q.CodedColumn],
               packing: Packing, params: q.Params, ranges: Sequence[int] = (),
               order: Sequence[str] = (), looked_up: q.LookedUp | None = None) -> exp.Expression:
    """The source's rows as packed keys, sorted by the code columns ``order`` (the base's storage
    order, ``problem._base_order``): the ungrouped base histogram's query, keyed, without a count
    (each row counts one: the search's readers count rows, ``KeyedBase.ones``)."""
    rows = q.base_histogram(source.copy(), [*qis, *sas], params, ranges=ranges, grouped=False, looked_up=looked_up)
    return q.keyed_base(rows.subquery(), packing, [c.code for c in qis], [c.code for c in sas], order_by=order,
                        counted=False)


def store_as_keys(engine: Engine, rows: exp.Expression, params: Sequence[object], qis: Sequence[q.CodedColumn],
                  sas: Sequence[q.CodedColumn], packing: Packing,
                  ranges: Sequence[int]) -> tuple[exp.Table, StoredKeys]:
    """The base (a view of the base histogram's columns) and the keyed table it unpacks, stored
    from ``rows`` (``keyed_rows``, bound to ``params``)."""
    keyed = engine.create_temp_table(engine.temp_name("keyed"), rows, params)
    codes = [c.code for c in qis], [c.code for c in sas]
    base = engine.create_temp_view(engine.temp_name("base_histogram"),
                                   q.unpacked_keys(keyed, packing, *codes, ranges, ones=True))
    return base, StoredKeys(keyed, packing)


def keys_at(stored: StoredKeys, levels: Mapping[int, int], qis: Sequence[str], sas: Sequence[str]) -> exp.Expression:
    """Stored keys grouped under the masks of a node (``levels``: QI index → level; a QI not in it
    at its top), read back as base rows: each QI's code with the levels below the node's as 0,
    which the node's divisors drop. A node's groupings read these cells instead of every row
    unpacked by the base's view (the released node at 10 M rows: 0.24 s through the view, 0.09 s
    so, as from a base table)."""
    cells = q.masked_nodes(stored.table, [(0, *stored.packing.masks(levels))], ones=True)  # a row each, as stored
    return q.unpacked_keys(cells.subquery(), stored.packing, qis, sas).subquery()
