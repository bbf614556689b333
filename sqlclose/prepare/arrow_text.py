"""Arrow text that is not UTF-8: refused by column before the engine reads it.

An Arrow string column may hold any bytes (a view of binary data, a writer that marks raw bytes as
text); DuckDB reads them as they are, without checking. Such a column was released, and the
re-check, comparing the written file with the input, failed: "verification failed" (exit 4), as
if sqlclose had written a wrong file, on bad input. Arrow's full validation checks the text of
every string column (nested ones too), over whole arrays (5 M values: 0.05 s); the refusal names
the column, never a value (Arrow's own message gives an index, which is left out too).
"""

from __future__ import annotations

import pyarrow as pa

from sqlclose.errors import InputError
from sqlclose.model.text import name_shown


def refuse_invalid_text(table: pa.Table, label: str) -> None:
    """Raise InputError naming the first column of ``table`` Arrow's full validation refuses: text
    that is not UTF-8, or an array malformed otherwise."""
    for name, column in zip(table.column_names, table.columns):
        try:
            column.validate(full=True)
        except pa.ArrowInvalid as e:
            if "UTF8" in str(e):
                raise InputError(f"cannot read the {label}: column {name_shown(name)} holds text that is not valid "
                                 "UTF-8; give it as binary (cast it to pa.binary()), or fix its values first") from None
            raise InputError(f"cannot read the {label}: column {name_shown(name)} is malformed (Arrow's full "
                             "validation fails on it); build it again first") from None
