"""The base histogram as the SQL level batches read it: one packed key per row (``packing``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlclose.model.packing import Packing
from sqlclose.prepare.problem import Problem
from sqlclose.sql import queries as q

if TYPE_CHECKING:
    from sqlglot import exp


@dataclass
class KeyedBase:
    """The base histogram as the SQL search reads it (``q.keyed_base``: padded key words and a
    DOUBLE count per row), shared by a problem's runners: every node grouped from the base is then
    its keys under one AND per word (``Packing.masks``). A base stored as these keys
    (``Problem.stored_keys``) is read as it is; another is keyed on first read, and dropped after."""

    problem: Problem
    packing: Packing
    _table: exp.Table | None = None

    @property
    def ones(self) -> bool:
        """Whether each keyed row counts one (a base of the rows as they stand): groupings of them,
        or of a sample of them, count rows instead of summing counts (``masked_nodes(ones=True)``)."""
        return not self.problem.base_grouped

    def table(self) -> exp.Table:
        stored = self.problem.stored_keys
        if stored is not None and stored.packing == self.packing:
            return stored.table
        if self._table is None:
            p, pk = self.problem, self.packing
            query = q.keyed_base(p.base, pk, [qi.coded.code for qi in p.qis], [sa.coded.code for sa in p.sas])
            self._table = p.engine.create_temp_table(p.engine.temp_name("keyed"), query)
        return self._table

    def drop(self) -> None:
        """Drop the keys made here (the base's own stay, as the base does)."""
        if self._table is not None:
            self.problem.engine.unregister(self._table.name)
            self._table = None
