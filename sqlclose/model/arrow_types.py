"""What an Arrow type holds, for a release's columns given as they are: floats at any depth, and
which of them the NaN rewrite reaches (``prepare.release_query.nan_rewrite``).

No SQL tells NaN payloads apart, so a release writes every NaN of a column given as it is as the
quiet NaN, rebuilding nested values around their floats. A fixed-size list is rebuilt as a list
and cast back, which needs its element's type: floats alone. A float inside a fixed-size list of
nested values is not reached; such a column is refused before the search (``prepare.problem``),
since its NaNs' payloads would keep the input's order in the file.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa


def reached_float(kind: pa.DataType) -> bool:
    """Whether ``kind`` holds a float the NaN rewrite reaches."""
    if pa.types.is_floating(kind):
        return True
    if pa.types.is_fixed_size_list(kind):
        return pa.types.is_floating(kind.value_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return reached_float(kind.value_type)
    if pa.types.is_map(kind):
        return reached_float(kind.key_type) or reached_float(kind.item_type)
    if pa.types.is_struct(kind):
        return any(reached_float(kind.field(i).type) for i in range(kind.num_fields))
    return False


def unreached_float(kind: pa.DataType) -> bool:
    """Whether ``kind`` holds a float the NaN rewrite does not reach: inside a fixed-size list of
    nested values, at any depth."""
    if pa.types.is_fixed_size_list(kind) and not pa.types.is_floating(kind.value_type) and \
            holds(kind.value_type, pa.types.is_floating):
        return True
    return any(unreached_float(inner) for inner in _inner_types(kind))


def holds(kind: pa.DataType, test: Callable[[pa.DataType], bool]) -> bool:
    """Whether ``kind`` or a type inside it (a struct's fields, a map's keys and values, a list's or
    a dictionary's values), at any depth, passes ``test``."""
    return test(kind) or any(holds(inner, test) for inner in _inner_types(kind))


def _inner_types(kind: pa.DataType) -> list[pa.DataType]:
    if pa.types.is_struct(kind):
        return [kind.field(i).type for i in range(kind.num_fields)]
    if pa.types.is_map(kind):
        return [kind.key_type, kind.item_type]
    return [kind.value_type] if hasattr(kind, "value_type") else []
