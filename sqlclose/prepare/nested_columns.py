"""A quasi-identifier or sensitive column of nested values (a struct, list, map, union or VARIANT) is
refused: a hierarchy, a rule or a distance would read the engine's text of the whole value (a mask
masked "{'z': 47677}" character by character, a map's labels held its other column's values), and that
text is the engine's, not the data's (review of the ninety-fourth round).

The error names the column's type as the user wrote it: a VARIANT or a UNION is told so, not by the
Arrow storage it travels in (``struct<metadata: binary not null, value: binary>``, ``sparse_union<…>``;
Spark's VARIANT as ``struct<value: binary not null, metadata: binary not null>``, ninety-eighth round),
and its fix is a cast, not a struct field no such value has. The fix is said where the source given
takes it (``model.mending``): a DataFrame, an Arrow table, a relation or a caller's table take no
[source] query.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from sqlclose.errors import DataError
from sqlclose.model import mending
from sqlclose.model.spec import Spec
from sqlclose.model.text import name_shown

_VARIANT = b"arrow.parquet.variant"  # the Arrow extension DuckDB and Parquet carry a VARIANT as


def refuse_nested_models(schema: pa.Schema, spec: Spec, source_label: str, source_kind: str) -> None:
    """Raise DataError for the first quasi-identifier or sensitive column of nested values, its fix
    said where a source of ``source_kind`` takes it (``model.mending``)."""
    roles = {**{name: "quasi-identifier" for name in spec.quasi_identifiers},
             **{name: "sensitive column" for name in spec.sensitive}}
    for name, role in roles.items():
        field = schema.field(name)
        held = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_nested(held):
            said, fix = _told(name, field, held, source_kind)
            raise DataError(f"column {name_shown(name)} in {source_label} is {said}, nested values, but a {role} is "
                            "one plain value a row (its hierarchy, rule or distance would read the engine's text of "
                            f"the whole value): {fix}")


def _told(name: str, field: pa.Field, held: pa.DataType, source_kind: str) -> tuple[str, str]:
    """The column's type as said, and what to do, for a source of ``source_kind`` (``model.mending``)."""
    column = exp.column(name, quoted=True)
    variant = _is_variant(field, held)
    if variant or pa.types.is_union(held):
        said = "a VARIANT" if variant else f"a UNION (of {', '.join(name_shown(m.name) for m in held)})"
        cast = exp.cast(column, "VARCHAR")
        if source_kind == mending.QUERY:
            where = f"in a [source] query (query = \"SELECT {cast.sql('duckdb')} AS {column.sql('duckdb')}, … FROM …\")"
        else:
            where = mending.mended(source_kind, name, cast, f"df[{name_shown(name)}] = "
                                                            f"df[{name_shown(name)}].astype(str)",
                                   "a column of the one type its values hold, made in Python")
        return said, (f"cast it to text {where}, or to the one type its values hold, if the whole of it is what "
                      "tells people apart; else leave it out (others = \"drop\", or list it under identifiers)")
    if source_kind == mending.QUERY:
        return str(field.type), ("select the field or item you mean in a [source] query (query = \"SELECT zip.code AS "
                                 "zip, … FROM …\"), or cast the value to text there if the whole of it is what tells "
                                 "people apart")
    picked, pandas, arrow = _picked(name, column, held)
    where = mending.mended(source_kind, name, picked, pandas, arrow)  # in the source's own SQL
    return str(field.type), (f"select the field or item you mean {where}, or its text if the whole of it is what "
                             "tells people apart")


def _is_variant(field: pa.Field, held: pa.DataType) -> bool:
    """Whether an Arrow field carries a VARIANT: DuckDB's and Parquet's by their extension name, Spark's
    (``toArrow``'s struct of ``value`` and ``metadata``) by the mark on its ``metadata`` field. Spark's
    was told as that struct, with advice to pick its ``value``, the variant's binary encoding."""
    if (field.metadata or {}).get(b"ARROW:extension:name") == _VARIANT:
        return True
    if not pa.types.is_struct(held) or held.get_field_index("metadata") < 0:
        return False
    return (held.field("metadata").metadata or {}).get(b"variant") == b"true"


def _picked(name: str, column: exp.Expression, held: pa.DataType) -> tuple[exp.Expression, str, str]:
    """A struct's first field, a list's first item, a map's value of a key, or the text of the
    value: in SQL, pandas and pyarrow."""
    if pa.types.is_struct(held) and held.num_fields:
        first = held.field(0).name
        return (exp.Bracket(this=column, expressions=[exp.Literal.string(first)]),
                f"df[{name_shown(name)}] = df[{name_shown(name)}].struct.field({first!r})",
                f"table = table.set_column(table.schema.get_field_index({name_shown(name)}), {name_shown(name)}, "
                f"pyarrow.compute.struct_field(table[{name_shown(name)}], [{first!r}]))")
    if pa.types.is_list(held) or pa.types.is_large_list(held) or pa.types.is_fixed_size_list(held):
        return (exp.Bracket(this=column, expressions=[exp.Literal.number(1)], offset=1),  # DuckDB's [1] as written
                f"df[{name_shown(name)}] = df[{name_shown(name)}].list[0]",
                f"table = table.set_column(table.schema.get_field_index({name_shown(name)}), {name_shown(name)}, "
                f"pyarrow.compute.list_element(table[{name_shown(name)}], 0))")
    if pa.types.is_map(held):
        return (exp.Bracket(this=column, expressions=[exp.Literal.string("key")]),
                f"df[{name_shown(name)}] = df[{name_shown(name)}].astype(str)",
                f"table = table.set_column(table.schema.get_field_index({name_shown(name)}), {name_shown(name)}, "
                f"pyarrow.compute.map_lookup(table[{name_shown(name)}], 'key', 'first'))")
    return (exp.cast(column, "VARCHAR"), f"df[{name_shown(name)}] = df[{name_shown(name)}].astype(str)",
            "a column of the one type its values hold, made in Python")
