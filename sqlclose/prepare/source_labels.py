"""How messages name an in-memory source (its label), shared by the modules that read one and
those whose messages say what to do with it; and the kind of source a label names, for where such a
message says to change a column (``mending_kind``)."""

from sqlclose.model import mending

ARROW_LABEL, PANDAS_LABEL = "arrow table", "pandas DataFrame"
RELATION_LABEL, SPARK_FRAME_LABEL = "duckdb relation", "spark dataframe"
# Tables a caller holds in Python, which no command can be given: a fix is made in them, and a
# command's listing of their values is out of reach (``leaf_advice``).
CALLERS_TABLES = (ARROW_LABEL, PANDAS_LABEL, RELATION_LABEL, SPARK_FRAME_LABEL)
# A caller's DuckDB table, given as (connection, table): ``callers_table_label(name)``.
_CALLERS_TABLE = "duckdb table "


def callers_table_label(name: object) -> str:
    """How messages name the table ``name`` of a caller's DuckDB connection."""
    return f"{_CALLERS_TABLE}{name}"


def mending_kind(source_label: str, histogram: bool = False, dialect: str | None = None) -> str:
    """The kind of source a label names, for where an error tells the user to change a column
    (``model.mending``): a histogram's is the warehouse's (of ``dialect``, the spec's), a file's or a
    spec query's a [source] query."""
    if histogram:
        return mending.warehouse(dialect)
    kinds = {PANDAS_LABEL: mending.PANDAS, ARROW_LABEL: mending.ARROW, RELATION_LABEL: mending.RELATION,
             SPARK_FRAME_LABEL: mending.SPARK_FRAME}
    if source_label in kinds:
        return kinds[source_label]
    return mending.VIEW if source_label.startswith(_CALLERS_TABLE) else mending.QUERY
