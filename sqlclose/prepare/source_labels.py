"""How messages name an in-memory source (its label), shared by the modules that read one and
those whose messages say what to do with it."""

ARROW_LABEL, PANDAS_LABEL = "arrow table", "pandas DataFrame"
