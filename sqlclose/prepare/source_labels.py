"""How messages name an in-memory source (its label), shared by the modules that read one and
those whose messages say what to do with it."""

ARROW_LABEL, PANDAS_LABEL = "arrow table", "pandas DataFrame"
RELATION_LABEL, SPARK_FRAME_LABEL = "duckdb relation", "spark dataframe"
# Tables a caller holds in Python, which no command can be given: a fix is made in them, and a
# command's listing of their values is out of reach (``leaf_advice``).
CALLERS_TABLES = (ARROW_LABEL, PANDAS_LABEL, RELATION_LABEL, SPARK_FRAME_LABEL)
