"""The SQL layer: every query the project runs, built as sqlglot ASTs from the readable
templates in ``templates/`` (``templates.py``) and the builders in ``queries.py``. Dialect-neutral:
an engine renders them."""
