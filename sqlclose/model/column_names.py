"""The column names a source must give for each column to be released under its own name.

SQL engines read names without regard to case, and DuckDB renames what it cannot tell apart: the
second ``ssn`` of a query's or a relation's result becomes ``ssn_1`` (``ssn, SSN``: ``SSN_1``) when
it is stored, and a Parquet struct's field ``A`` beside ``a`` becomes ``A_1``. It names a column
without a name itself (``v2``, ``C2``). The column was released under a name nobody declared, an
identifier's copy among them. So a source's names, read before the engine reads them, are checked
here, whatever the source; and so are the fields of a struct a column holds, where the source
gives its schema (Arrow, pandas, Parquet). A query's, a relation's or a view's result comes
through DuckDB, which has renamed such a field already: a struct holding ``A_1`` beside ``a`` is
refused there (``refuse_renamed_fields``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import pyarrow as pa

from sqlclose.errors import InputError
from sqlclose.model.text import name_shown, named

# True while ``check`` reads a table: it releases nothing, and a copy under another name is a
# column audited as nobody named it ("a copy would be released" was said of check's table: the
# ninety-fourth round).
_AUDITED: ContextVar[bool] = ContextVar("sqlclose_names_audited", default=False)


@contextmanager
def names_read_for_audit() -> Iterator[None]:
    """Within, a refusal says what the engine would read (check's table), not what it would release."""
    token = _AUDITED.set(True)
    try:
        yield
    finally:
        _AUDITED.reset(token)


def refuse_renamed_columns(names: list[str], where: str) -> None:
    """Refuse the columns an engine would release under another name: one with no name, one named
    twice, or two whose names differ only in case (``where``: the source, as messages name it,
    e.g. "the source query"). Told as read, not released, within ``names_read_for_audit``."""
    audited = _AUDITED.get()
    fate = "read" if audited else "released"

    def copy(name: str) -> str:  # what the renamed copy is: read by check under DuckDB's name for it
        return f"(say, {name_shown(name + '_1')})" if audited else "(say, an identifier's copy)"

    nameless = [i + 1 for i, name in enumerate(names) if name == ""]
    if nameless:
        raise InputError(f"{where}: its column {nameless[0]} (counted from 1) has no name, and the engine would "
                         f"{'read' if audited else 'release'} it under one it makes up: name it, or remove that column")
    cut = [name for name in names if "\x00" in name]
    if cut:  # DuckDB cuts a name at its NUL: 'ssn\x00copy' was read as 'ssn', beside an identifier ssn as 'ssn_1'
        raise InputError(f"{where}: column {ascii(cut[0])} has a NUL character in its name, at which the engine "
                         f"cuts it ({ascii(cut[0].split(chr(0))[0])}), so it would be {fate} under another name: "
                         "rename it")
    twice = sorted(name for name, n in Counter(names).items() if n > 1)
    if twice:
        raise InputError(f"{where} names {named('column', twice)} more than once; a copy would "
                         f"be {fate} under another name {copy(twice[0])}: rename or remove the duplicates")
    spelled: dict[str, list[str]] = {}
    for name in names:
        spelled.setdefault(name.casefold(), []).append(name)
    alike = sorted(group for group in spelled.values() if len(group) > 1)
    if alike:
        pairs = "; ".join(" and ".join(name_shown(n) for n in group) for group in alike)
        raise InputError(f"{where} has columns whose names differ only in case ({pairs}); SQL engines read them as "
                         f"one name, and one would be {fate} under another name {copy(alike[0][1])}: "
                         "rename or remove one of them")


def refuse_alike_fields(schema: pa.Schema, where: str) -> None:
    """Refuse a struct, at any depth of a column, whose fields are named twice or alike but for
    case: DuckDB renames one (a Parquet file's ``{a, A}`` read as ``{a, A_1}``), and every row's
    value would be released changed; elsewhere it reads them as one name."""
    for column in schema:
        for names in _struct_field_names(column.type):
            cut = next((name for name in names if "\x00" in name), None)
            if cut is not None:  # DuckDB cuts a field's name at its NUL, as a column's
                raise InputError(f"{where}: column {name_shown(column.name)} holds a struct whose field {ascii(cut)} "
                                 f"has a NUL character in its name, at which the engine cuts it "
                                 f"({ascii(cut.split(chr(0))[0])}), changing every row's value: rename the field")
            spelled = Counter(name.casefold() for name in names)
            alike = [name for name in names if spelled[name.casefold()] > 1]
            if alike:
                raise InputError(f"{where}: column {name_shown(column.name)} holds a struct whose fields "
                                 f"{' and '.join(name_shown(n) for n in alike)} are one name to SQL engines, which "
                                 "rename one of them (A_1) and so change every row's value: rename one of the fields")


def refuse_renamed_fields(schema: pa.Schema, where: str) -> None:
    """Refuse a struct of a result DuckDB has read (a query's, a relation's, a view's) whose fields
    are alike but for case, or hold a name DuckDB gives such a field: ``A_1`` beside ``a`` (or
    ``a_1`` beside ``a``). The file under it is out of sight here, and its ``{a, A}`` was released
    as ``{a, A_1}``; a field truly so named is refused too (renaming it in the query releases it)."""
    refuse_alike_fields(schema, where)
    for column in schema:
        for names in _struct_field_names(column.type):
            renamed = _renamed_field(names)
            if renamed is not None:
                kept, made = renamed
                raise InputError(f"{where}: column {name_shown(column.name)} holds a struct whose field "
                                 f"{name_shown(made)} beside {name_shown(kept)} "
                                 "is the name DuckDB gives a second field of one name but for case (a Parquet "
                                 "struct's {a, A} is read as {a, A_1}), which changes every row's value: rename one "
                                 f"of the fields in the file (a field truly named {name_shown(made)}: rename it in the "
                                 "query or view, with struct_pack)")


def _renamed_field(names: list[str]) -> tuple[str, str] | None:
    """The first field ``<base>_<n>`` of ``names`` beside a field named ``<base>`` but for case,
    with that field: what DuckDB made of a second spelling of one name."""
    folded = {name.casefold(): name for name in names}
    for name in names:
        base, underscore, number = name.rpartition("_")
        kept = folded.get(base.casefold())
        if underscore and number.isdigit() and kept is not None and kept != name:
            return kept, name
    return None


def _struct_field_names(kind: pa.DataType) -> list[list[str]]:
    """The field names of every struct ``kind`` holds, itself included, through lists, maps,
    dictionaries and extension types."""
    if isinstance(kind, pa.ExtensionType):
        return _struct_field_names(kind.storage_type)
    if pa.types.is_dictionary(kind):
        return _struct_field_names(kind.value_type)
    fields = [kind.field(i) for i in range(kind.num_fields)]
    found = [[f.name for f in fields]] if pa.types.is_struct(kind) else []
    return found + [names for f in fields for names in _struct_field_names(f.type)]
