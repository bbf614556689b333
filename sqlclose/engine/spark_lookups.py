"""Spark: a small lookup read as maps bound to the statement, not joined.

A lookup registered from Arrow is a local relation, and Spark joins one by broadcasting it: a job
of its own before the statement's, ~0.1 s each on a small table, ~10 of a small release's 24 jobs
(docs/performance.md, hundred-and-first round). Read instead as ``TRY_ELEMENT_AT`` of a map from
its leaves to a column, one per column the statement reads, the statement runs as one job: Spark
folds each map into a constant (``FROM_JSON`` of a literal is foldable) and inlines the lateral
subquery holding them into a projection of the source's rows (``OptimizeOneRowRelationSubquery``).

The maps' contents are bound parameters, never SQL text: an error and the logs carry the SQL, and a
lookup's leaves and labels are data. Each column is one parameter, its values as a JSON array that
``FROM_JSON`` reads back exactly (text and integers only): built from Python objects instead (an
``ARRAY`` of ``lit``), a parameter costs a call into the JVM per value (docs/performance.md,
hundred-and-second round). A lookup of more than ``MAPPED_ROWS`` rows stays joined: its maps are
rebuilt for every statement, and past that size they cost more than the broadcast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from sqlglot import exp

# A lookup of at most this many rows is read as maps (``held_lookup``). Measured against its join
# (docs/performance.md, hundred-and-second round, "Spark: lookups as maps"): the maps no slower up to
# ~2,000 leaves, about even at 5,000, slower past 10,000 (a 40,000-leaf ZIP lookup: 2-4x the join).
MAPPED_ROWS = 2_000

# Arrow types whose values JSON carries exactly, and the Spark type ``createDataFrame`` gives them.
_SPARK_TYPES = {pa.string(): "STRING", pa.large_string(): "STRING", pa.int8(): "TINYINT",
                pa.int16(): "SMALLINT", pa.int32(): "INT", pa.int64(): "BIGINT"}


@dataclass(frozen=True)
class HeldLookup:
    """A registered lookup's columns as JSON arrays, each with the Spark type it is read back in."""

    columns: dict[str, tuple[str, str]]  # name -> (JSON array of its values, Spark type)

    def map_of(self, leaf: str, name: str, bind: Callable[[Any], exp.Expression],
               bound: dict[str, exp.Expression]) -> exp.Expression:
        """The map from the ``leaf`` column's values to column ``name``'s, its arrays bound once per
        statement (``bound``: the parameters bound so far, by column)."""
        return exp.Anonymous(this="MAP_FROM_ARRAYS", expressions=[self._array(leaf, bind, bound),
                                                                  self._array(name, bind, bound)])

    def _array(self, name: str, bind: Callable[[Any], exp.Expression],
               bound: dict[str, exp.Expression]) -> exp.Expression:
        text, kind = self.columns[name]
        if name not in bound:
            bound[name] = bind(text)
        return exp.Anonymous(this="FROM_JSON", expressions=[bound[name].copy(),
                                                            exp.Literal.string(f"ARRAY<{kind}>")])


def held_lookup(table: pa.Table) -> HeldLookup | None:
    """A lookup to read as maps, or None: more than ``MAPPED_ROWS`` rows, or a column JSON would not
    carry exactly. The column a statement keys it by is checked then (``keys_leaves``)."""
    if table.num_rows > MAPPED_ROWS or any(field.type not in _SPARK_TYPES for field in table.schema):
        return None
    try:
        return HeldLookup({field.name: (json.dumps(table.column(field.name).to_pylist()), _SPARK_TYPES[field.type])
                           for field in table.schema})
    except UnicodeDecodeError:  # a text that is not UTF-8: joined, and the column's UTF-8 check refuses it as before
        return None


def keys_leaves(table: pa.Table, leaf: str) -> bool:
    """Whether column ``leaf`` keys a map: no NULL, no value twice (a map cannot hold a key twice,
    where a join would match both rows)."""
    if leaf not in table.column_names:
        return False
    values = table.column(leaf)
    return values.null_count == 0 and len(values.unique()) == len(values)


def lateral_columns(held: HeldLookup, items: list[exp.Expression], leaf: str, key: exp.Expression,
                    bind: Callable[[Any], exp.Expression]) -> tuple[exp.Subquery, exp.Expression]:
    """A subquery of one row for each source row: ``items`` (a lookup's columns, or expressions over
    them, each aliased) with every column read as the map's value at ``key``; and the test that
    ``key`` is a leaf (what an inner join keeps)."""
    bound: dict[str, exp.Expression] = {}

    def mapped(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.name in held.columns:
            return exp.Anonymous(this="TRY_ELEMENT_AT", expressions=[held.map_of(leaf, node.name, bind, bound),
                                                                     key.copy()])
        return node

    select = exp.select(*[item.copy().transform(mapped) for item in items])
    found = exp.Anonymous(this="MAP_CONTAINS_KEY", expressions=[held.map_of(leaf, leaf, bind, bound), key.copy()])
    return select.subquery(), found
