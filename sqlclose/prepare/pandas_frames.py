"""pandas DataFrames as Arrow: what a frame holds that Arrow, or DuckDB after it, would read as
something else, or not at all, refused by column before the engine reads it (naming no value), and
the conversion to make said for what the column holds."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from sqlclose.errors import DataError, InputError
from sqlclose.model.column_names import refuse_renamed_columns
from sqlclose.model.text import name_shown

_CONVERSION = re.compile(r"Conversion failed for column (.+) with type ([^\s'\")]+)")


def is_pandas(obj: Any) -> bool:
    """A pandas object, or one of a class made from one (a geopandas GeoDataFrame, a user's
    DataFrame subclass, refused as "a source of type MyFrame" before), told without importing pandas."""
    return any(cls.__module__.startswith("pandas") for cls in type(obj).__mro__)


def _refuse_non_frame(source: Any) -> None:
    """Of pandas, a DataFrame is read: a Series (one column, no name to match the spec's) or any
    other pandas object is refused as such, not with an AttributeError from deep inside."""
    import pandas as pd

    if isinstance(source, pd.Series):
        raise InputError("cannot read a pandas Series: give a DataFrame holding the spec's columns "
                         "(series.to_frame() makes one of a named Series)")
    if not isinstance(source, pd.DataFrame):
        raise InputError(f"cannot read a pandas {type(source).__name__}: give a pandas DataFrame")


def refuse_index_columns(source: Any, names: list[str]) -> None:
    """A column the spec names that is a pandas DataFrame's index (``set_index``) is named as such:
    the index is not read, and "not in pandas DataFrame" alone left the user to find out why."""
    if not is_pandas(source):
        return
    _refuse_non_frame(source)
    columns = {str(c) for c in source.columns}
    index = {str(n) for n in source.index.names if n is not None}
    for name in names:
        if name not in columns and name in index:
            raise DataError(f"column {name_shown(name)} is the pandas DataFrame's index, which sqlclose does not read: "
                            "pass df.reset_index() to make it a column")


UTC_NAMES = ("UTC", "Etc/UTC", "+00:00", "Z", "GMT", "Etc/GMT")


def refuse_zoned_dates(source: Any, dated: list[str]) -> None:
    """A ``dates`` quasi-identifier held by a pandas or Arrow column of timestamps in a zone other
    than UTC: DuckDB keeps the instant, not the zone, and dates it in its session's UTC, so the
    frame's 2020-01-01 00:30 in Paris was labelled 2019-12 (review of the sixty-third round). The
    caller says which days are meant."""
    if is_pandas(source):
        zones = {str(c): _pandas_zone(dtype) for c, dtype in zip(source.columns, source.dtypes)}
    elif isinstance(source, pa.Table):
        zones = {f.name: _arrow_zone(f.type) for f in source.schema}
    else:
        return
    for name in dated:
        zone = zones.get(name)
        if zone is not None and str(zone) not in UTC_NAMES:
            raise InputError(
                f"column {name_shown(name)} holds timestamps in the time zone {str(zone)!r}, and its dates rule labels "
                "days in UTC (sqlclose's session keeps the instant, not the zone): say which days are meant — the "
                f"zone's own wall time, df[{name_shown(name)}] = df[{name_shown(name)}].dt.tz_localize(None) (Arrow: "
                f"pyarrow.compute.local_timestamp of the column), or UTC's, df[{name_shown(name)}] = "
                f"df[{name_shown(name)}].dt.tz_convert('UTC')")


def _pandas_zone(dtype: Any) -> Any:
    """A pandas column's time zone: a ``datetime64[ns, tz]``'s, a ``pd.ArrowDtype`` timestamp's
    (which has no ``tz`` of its own: its 2020-02-01 00:30 in Paris was labelled 2020-01, review h2 of
    the eighty-fifth round), or a categorical's of such timestamps (review h3); None for any other."""
    arrow = getattr(dtype, "pyarrow_dtype", None)
    if arrow is not None:
        return _arrow_zone(arrow)
    categories = getattr(dtype, "categories", None)
    if categories is not None:
        return _pandas_zone(categories.dtype)
    return getattr(dtype, "tz", None)


def _arrow_zone(kind: pa.DataType) -> str | None:
    """An Arrow timestamp's time zone, a dictionary's of timestamps too; None for any other type."""
    if pa.types.is_dictionary(kind):
        return _arrow_zone(kind.value_type)
    return kind.tz if pa.types.is_timestamp(kind) else None


def arrow_of_pandas(frame: Any, released: Callable[[str], bool] | None = None) -> pa.Table:
    """A pandas DataFrame as Arrow, its columns as they are (the index is not a column). A column
    Arrow cannot read as one type (an ``object`` column mixing numbers and text) is refused by
    name, not with Arrow's error, which quotes a value of the data. Columns named twice (or alike
    but for case) are refused as for every source, before Arrow's own ValueError. A period,
    interval or ``object`` column is refused only where the release holds it (``released``; None:
    every column): what it would change is the released values, and one the release drops is read
    as the same frame's Arrow table is (the engine reads its storage, for the fingerprint alone)."""
    _refuse_non_frame(frame)
    _refuse_column_levels(frame)
    _refuse_unnamed_columns(frame)
    refuse_renamed_columns([str(name) for name in frame.columns], "the pandas DataFrame")
    _refuse_sparse(frame)
    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        found = _CONVERSION.search(str(e))
        column = f"column {name_shown(found.group(1))} (dtype {found.group(2)})" if found else "a column"
        # The fix names the column by its label as Python quotes it (df['age'], df[3]), where Arrow's words name it
        labels = [label for label in frame.columns if found and str(label) == found.group(1)]
        c = f"df[{name_shown(labels[0])}]" if labels else "df[col]"
        if found and found.group(2).startswith("complex"):
            raise InputError(f"cannot read the pandas DataFrame: {column} holds complex numbers, which Arrow has no "
                             f"type for; convert it first, e.g. to its parts ({c}.real, {c}.imag) or to text "
                             f"({c}.astype(\"string\"))") from None
        raise InputError(f"cannot read the pandas DataFrame: {column} holds values Arrow cannot read as one type "
                         f"(say numbers and text in one object column); convert it first, e.g. {c} = "
                         f"{c}.astype(\"string\"), or pd.to_numeric({c})") from None
    except (OverflowError, UnicodeError) as e:  # Python's own words quote the value: not shown
        raise _unconverted(frame, e) from None
    held = released or (lambda name: True)
    _refuse_types_from_values(frame, table, held)
    _refuse_pandas_extensions(frame, table, held)
    return table


def _unconverted(frame: Any, error: Exception) -> InputError:
    """The column whose values Python could not hand to Arrow: a whole number past 64 bits (an
    OverflowError), text holding a lone surrogate, as ``surrogateescape`` decodes bytes that are not
    UTF-8 (a UnicodeEncodeError quoting it); found by converting each column alone, on this path only."""
    for name in frame.columns:
        if isinstance(name, str) and isinstance(error, UnicodeError) and not _encodes(name):
            return InputError(f"cannot read the pandas DataFrame: the name of column {ascii(name)} is not valid "
                              "Unicode (a lone surrogate, as bytes decoded with 'surrogateescape' give): rename it")
        try:
            pa.Array.from_pandas(frame[name])
        except (OverflowError, UnicodeError, pa.ArrowException):
            what = ("a whole number past 64 bits; give it a type that holds it first, e.g. "
                    f"df[{name_shown(str(name))}].astype(str), or astype(pd.ArrowDtype(pa.decimal128(38, 0)))"
                    if isinstance(error, OverflowError) else
                    "text that is not valid Unicode (a lone surrogate, as bytes decoded with 'surrogateescape' "
                    "give); decode its bytes as what they are, or give them as bytes")
            return InputError(f"cannot read the pandas DataFrame: column {name_shown(str(name))} holds {what}")
    return InputError(f"cannot read the pandas DataFrame: a column holds values Arrow cannot read "
                      f"({type(error).__name__})")


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_column_levels(frame: Any) -> None:
    """Columns of several levels (a MultiIndex, as ``groupby().agg`` or ``pivot_table`` give) have no
    one name each to match the spec's: Arrow names them by their tuples' text, and the error said the
    frame had none of the spec's columns, as of a file without its header line."""
    levels = getattr(frame.columns, "nlevels", 1)
    if levels > 1:
        raise InputError(f"cannot read the pandas DataFrame: its columns have {levels} levels (a MultiIndex), so "
                         "none has one name to match the spec's; flatten them first, e.g. df.columns = "
                         "['_'.join(str(p) for p in c if str(p)) for c in df.columns], or keep one level with "
                         "df.droplevel(…, axis=1)")


def _refuse_unnamed_columns(frame: Any) -> None:
    """A column label that is neither text nor a whole number has no name a spec can give as Arrow
    writes it: None and NaN became ``nan``, a float ``1.5``, a tuple ``('1', '2')`` and bytes failed
    with a KeyError (an internal error)."""
    import numbers

    for label in frame.columns:
        if isinstance(label, str) or (isinstance(label, numbers.Integral) and not isinstance(label, bool)):
            continue
        shown = repr(label) if len(repr(label)) <= 60 else f"{repr(label)[:57]}..."
        raise InputError(f"cannot read the pandas DataFrame: a column's label, {shown} ({type(label).__name__}), is "
                         "neither text nor a whole number, so the spec cannot name it; name it first, e.g. "
                         "df.columns = [str(c) for c in df.columns], or df.rename(columns={old: 'name'})")


def _refuse_sparse(frame: Any) -> None:
    """Arrow reads no sparse column (its TypeError "Sparse pandas data (column o) not supported")."""
    import pandas as pd

    sparse = [str(name) for name, dtype in zip(frame.columns, frame.dtypes) if isinstance(dtype, pd.SparseDtype)]
    if sparse:
        named = f"column {name_shown(sparse[0])} is" if len(sparse) == 1 else \
            f"columns {', '.join(map(name_shown, sparse))} are"
        raise InputError(f"cannot read the pandas DataFrame: {named} sparse, which Arrow does not read; densify "
                         f"it first: df[{name_shown(sparse[0])}] = df[{name_shown(sparse[0])}].sparse.to_dense()")


def _refuse_pandas_extensions(frame: Any, table: pa.Table, held: Callable[[str], bool]) -> None:
    """A pandas period (or interval) column reaches Arrow as pandas' own extension type, which the
    engine reads as its storage: a month period '2000-01' as 360, the months since 1970 — a number
    no row holds, released and verified as such. Refused by name, with the conversions to make."""
    found = [(str(name), str(dtype)) for name, dtype in zip(frame.columns, frame.dtypes)
             if held(str(name)) and isinstance(table.schema.field(str(name)).type, pa.ExtensionType)
             and table.schema.field(str(name)).type.extension_name.startswith("pandas.")]
    if found:
        name, dtype = found[0]
        also = "" if len(found) == 1 else f" (so are {', '.join(name_shown(n) for n, _ in found[1:])})"
        period = dtype.startswith("period")
        read_as = "its count of periods since 1970 (a month '2000-01' as 360)" if period else \
            "pandas' storage of it, not its values"
        fixes = f"df[{name_shown(name)}].astype(str) (its values as text" + (", e.g. '2000-01')" if period else ")") + \
            (f" or df[{name_shown(name)}].dt.to_timestamp() (each period's start)" if period else "")
        raise InputError(f"cannot read the pandas DataFrame: column {name_shown(name)} is of dtype {dtype}, which the "
                         f"engine would read as {read_as}{also}; convert it first: {fixes}")


def _refuse_types_from_values(frame: Any, table: pa.Table, held: Callable[[str], bool]) -> None:
    """An ``object`` column has no type of its own: Arrow infers one from every value, a suppressed
    row's too, and the release holds it. One Decimal 5000.5 among whole ones made the column
    decimal128(6, 1), not (5, 0) (every released salary written 3000.0), one float among ints
    double, one list of a float lists of doubles, a dict with one more key a struct with one more
    field, one bytes value among text binary, one value among NULLs its own type. Only the types
    no value can change are read (text, booleans, dates: another value fails to convert, or is
    read as one); the rest is refused by column, naming no value, the type left to the caller."""
    fixed = (pa.types.is_string, pa.types.is_large_string, pa.types.is_boolean, pa.types.is_date32)
    inferred = [str(name) for name, dtype in zip(frame.columns, frame.dtypes)
                if str(dtype) == "object" and held(str(name))
                and not any(test(table.schema.field(str(name)).type) for test in fixed)]
    if inferred:
        named = f"column {name_shown(inferred[0])} is" if len(inferred) == 1 else \
            f"columns {', '.join(map(name_shown, inferred))} are"
        raise InputError(f"cannot read the pandas DataFrame: {named} of dtype object, whose type Arrow infers from the "
                         "values, a suppressed row's too (one fraction among whole numbers changes every released "
                         f"value's type); give each a type first, e.g. df[{name_shown(inferred[0])}] = "
                         f"df[{name_shown(inferred[0])}].{_typed_as(table.schema.field(str(inferred[0])).type)}")


def _typed_as(inferred: pa.DataType) -> str:
    """The conversion that gives an object column of values Arrow read as ``inferred`` a type of
    its own: bytes stay bytes, numbers numbers (not a float's cast for bytes, as it was), decimals
    decimals, and values of an Arrow extension type (``uuid.UUID`` objects: arrow.uuid) text, which
    every such value has (a float's cast of a UUID fails)."""
    if isinstance(inferred, pa.BaseExtensionType):  # Arrow's own (arrow.uuid) too, not only Python-defined ones
        return "astype(\"string\") (their text)"
    if pa.types.is_decimal(inferred):
        return "astype(pd.ArrowDtype(pa.decimal128(12, 2))) (the precision and scale the column is meant to have)"
    if pa.types.is_binary(inferred) or pa.types.is_large_binary(inferred):
        return "astype(pd.ArrowDtype(pa.binary())), or .str.decode(\"utf-8\") for text"
    if pa.types.is_struct(inferred):
        return "astype(pd.ArrowDtype(pa.struct([(\"field\", pa.float64()), ...])))"
    if pa.types.is_list(inferred) or pa.types.is_map(inferred):
        return "astype(pd.ArrowDtype(pa.list_(pa.float64()))) for lists of numbers"
    if pa.types.is_time(inferred):
        return "astype(pd.ArrowDtype(pa.time64(\"us\")))"
    if pa.types.is_timestamp(inferred):
        return "astype(\"datetime64[us]\")"
    return "astype(\"float64\"), or astype(pd.ArrowDtype(pa.decimal128(12, 2)))"
