"""How messages name an in-memory source (its label), shared by the modules that read one and
those whose messages say what to do with it. A label is for messages alone: the kind of source, for
where a message says to change a column, is ``Opened.kind`` (``model.mending``), set where the source
is opened (a file named "duckdb table x.parquet" was told as a caller's table when the kind was read
from its label)."""

ARROW_LABEL, PANDAS_LABEL = "arrow table", "pandas DataFrame"
RELATION_LABEL, SPARK_FRAME_LABEL = "duckdb relation", "spark dataframe"


def callers_table_label(name: object) -> str:
    """How messages name the table ``name`` of a caller's DuckDB connection."""
    return f"duckdb table {name}"
