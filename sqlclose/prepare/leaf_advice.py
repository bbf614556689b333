"""What the error for a column's values its hierarchy lacks advises beside their count
(``problem._not_leaves``, ``problem._check_leaves``): where to see a quasi-identifier's named, and, for
a column holding whole numbers written with a fraction whose integer text is a leaf (29.0 for the
leaf 29: a floating-point column, a DECIMAL of a scale above 0, or text), the cast that mends it, for
the source as it was given. The values themselves are never named here
(docs/what-a-release-reveals.md)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from sqlglot import exp

from sqlclose.model import mending
from sqlclose.model.attributes import QI_LISTER, QI_NAMED_BY_ERROR, whole_numbers_hint
from sqlclose.model.spec import Spec
from sqlclose.model.text import name_shown
from sqlclose.prepare.local_values import ValuesReader
from sqlclose.sql import queries as q


@dataclass(frozen=True)
class LeafAdvice:
    """The run's facts the advice depends on: whether the spec came from a file, the source's kind
    (``model.mending``: a table the caller holds is mended in Python, the warehouse's histogram in the
    warehouse), and the type of each column with a hierarchy that may hold whole numbers written with
    a fraction, with its form (``number_form``)."""

    from_file: bool
    source_kind: str
    fractions: dict[str, tuple[str, str]] = field(default_factory=dict)  # column -> (form, its type)
    data: str = ""  # the lister's --data for a path given in place of the spec's [source] (``data_option``)

    @classmethod
    def of(cls, spec: Spec, schema: pa.Schema, source_kind: str, given_path: Path | None = None) -> LeafAdvice:
        with_hierarchy = [*spec.quasi_identifiers, *(name for name, s in spec.sensitive.items()
                                                     if s.hierarchy is not None)]
        forms = {name: (number_form(schema.field(name).type), str(schema.field(name).type)) for name in with_hierarchy}
        return cls(spec.origin is not None, source_kind,
                   {name: told for name, told in forms.items() if told[0] is not None}, data_option(spec, given_path))

    def lister(self, column: str) -> str:
        """What names the values: `sqlclose hierarchy validate SPEC.toml:COLUMN --show-values` where the
        spec is a file and the source one the command reads (a file or query, the warehouse's histogram
        as --data); else the error's own ``named``: a spec given as a dict, or a source held in Python
        (a DataFrame, an Arrow table, a relation, a caller's (connection, table), a Spark DataFrame or
        catalog table), which no command is given: the command read the spec's [source] instead, or none."""
        histogram = mending.is_warehouse(self.source_kind)
        if not self.from_file or not (histogram or self.source_kind == mending.QUERY):
            return QI_NAMED_BY_ERROR
        return QI_LISTER.format(column=column, data=" --data HISTOGRAM" if histogram else self.data)

    def whole_numbers(self, reader: ValuesReader, column: str, coded: q.CodedColumn, leaves: str | None = None) -> str:
        """The hint for a column's whole numbers written with a fraction whose integer text is a leaf:
        counted by one query over the column's distinct values (error path only); "" for a column of
        another type. ``leaves``: the table of the hierarchy's leaves, if not the column's lookup."""
        told = self.fractions.get(column)
        if told is None:
            return ""
        form, kind = told
        written = form != "floating"  # a DECIMAL's or a text's read as written, not as a number
        found = reader.engine.fetch_row(q.whole_numbers_on_leaves(reader.table, coded, written=written, leaves=leaves))
        return whole_numbers_hint(int(found["n"] or 0), kind, self._cast(column), form)

    def _cast(self, column: str) -> str:
        """Where and how to cast ``column`` to whole numbers: in the table the caller holds, in the
        warehouse, in a relation's or a caller's table's own SQL (``mending.mended``, as the other
        advice to change a column says it), else where the file is read (a [source] query, a CSV's
        declared type)."""
        cast = exp.Cast(this=q.col(column), to=exp.DataType.build("BIGINT"))
        kind = self.source_kind
        if mending.is_warehouse(kind):
            return (f"in the warehouse (a view selecting {cast.sql()} AS {q.ident(column).sql()}, as [source] table), "
                    "then run `sqlclose sql` and export the histogram again")
        if kind == mending.PANDAS:
            return (f"in the DataFrame first: df[{name_shown(column)}] = df[{name_shown(column)}].astype('Int64') "
                    "(pandas' integers that "
                    "keep a missing value missing; a missing one is what makes pandas store whole numbers as float64)")
        if kind == mending.ARROW:
            return (f"in the table first: table[{name_shown(column)}].cast('int64'), put back with table.set_column (a "
                    "missing value stays missing)")
        if kind == mending.SPARK_FRAME:
            return (f"in the DataFrame first: df.withColumn({name_shown(column)}, "
                    f"df[{name_shown(column)}].cast('bigint'))")
        if kind == mending.SPARK_TABLE:  # a query beside (session, table) is refused
            return (f"in a DataFrame of the table, given as the source in its place: df = spark.table(…); "
                    f"df = df.withColumn({name_shown(column)}, df[{name_shown(column)}].cast('bigint'))")
        if kind in (mending.RELATION, mending.VIEW):  # neither takes a [source] query
            return mending.mended(kind, column, cast.sql("duckdb"), "", "")
        replaced = f"SELECT * REPLACE ({cast.sql('duckdb')} AS {q.ident(column).sql('duckdb')}) FROM …"
        return (f"where it is read: in a [source] query ({replaced}), or, for a CSV file, by declaring its type: "
                f"[source] types = {{ {json.dumps(column, ensure_ascii=False)} = \"BIGINT\" }}")


def data_option(spec: Spec, given: Path | None) -> str:
    """`` --data PATH`` (`` --table NAME`` for a DuckDB database, the table the run read by the spec's
    [source] table) for a path given in place of the spec's [source]; "" for the spec's own source,
    which the command reads by itself. Without it the command had read the spec's [source], another
    table than the run's, or none."""
    if given is None:
        return ""
    table = spec.source.table if spec.source is not None else None
    is_db = given.suffix.lower() in (".duckdb", ".db", ".ddb") and table
    return f" --data {shlex.quote(str(given))}" + (f" --table {shlex.quote(table)}" if is_db else "")


def number_form(kind: pa.DataType) -> str | None:
    """How a column of ``kind`` may hold a whole number written with a fraction: as a float
    ("floating"), a DECIMAL of a scale above 0 ("decimal": DECIMAL(4, 1) writes 29.0), or text
    ("text": a CSV's "29.0" read as text); None for any other type (an integer writes none)."""
    if pa.types.is_floating(kind):
        return "floating"
    if pa.types.is_decimal(kind) and kind.scale > 0:
        return "decimal"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return "text"
    return None
