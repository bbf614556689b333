"""Where an error tells the user to change a column's values before a run, as the source given takes it.

A file or a spec's query is changed in a ``[source] query``; but a DataFrame, an Arrow table, a DuckDB
relation or a caller's ``(connection, table)`` takes none (one beside them is refused), and a
histogram's rows are the warehouse's. The errors that advise a conversion (the dates rule's, bands
over NaN, -0.0 beside 0.0, a nested quasi-identifier, a float column's whole numbers) say it where the
source can take it: in the DataFrame or table first (pandas' or pyarrow's own call), in the relation's
query, in a view of the caller's table given instead of it, in a Spark DataFrame (a Spark catalog's
table read as one first), or in the warehouse. The kind is the source's own, set where it is opened
(``prepare.sources.Opened.kind``), never read back from its label: a file whose path began with another
kind's label ("duckdb table …") was advised as that kind (ninety-seventh round).
"""

from __future__ import annotations

from sqlglot import exp

from sqlclose.model.text import name_shown

# The kinds of source, as far as where their columns are changed goes.
QUERY, RELATION, VIEW, PANDAS, ARROW, SPARK_FRAME, SPARK_TABLE, WAREHOUSE = (
    "query", "relation", "view", "pandas", "arrow", "spark frame", "spark table", "warehouse")

# Said after the SQL a warehouse of no dialect named is told: DuckDB's, and how to get the warehouse's own.
UNNAMED_DIALECT = ("(DuckDB's SQL: the spec names no dialect; set [source] dialect = \"postgres\", \"snowflake\", "
                   "\"bigquery\", \"trino\" or \"spark\" for it in the warehouse's own)")
WAREHOUSE_CONVERSION = "a view over the warehouse table, then run `sqlclose sql` again and export the histogram anew"
# The session setting that makes a dialect's text of dates ISO, where it has one (BigQuery, Trino, Spark and
# DuckDB write a DATE as ISO whatever the session: there the view converts the column): Postgres's advice
# was given for every dialect, a Snowflake user told to SET datestyle.
ISO_DATES_SESSION = {
    "postgres": "a Postgres export writes ISO dates under SET datestyle = ISO",
    "snowflake": "a Snowflake export writes ISO dates under ALTER SESSION SET DATE_OUTPUT_FORMAT = 'YYYY-MM-DD', "
                 "TIMESTAMP_OUTPUT_FORMAT = 'YYYY-MM-DD HH24:MI:SS'",
}


def warehouse(dialect: str | None) -> str:
    """The kind of a histogram exported from a warehouse of ``dialect`` (None: named neither by the
    run's ``--dialect`` nor by the spec)."""
    return WAREHOUSE if dialect is None else f"{WAREHOUSE}:{dialect}"


def of_run(kind: str, histogram: bool = False, dialect: str | None = None) -> str:
    """Where a run's column is changed: its source's ``kind`` (``Opened.kind``), or, for the
    warehouse's histogram, the warehouse (``kind`` when it names one, with the run's dialect; else of
    ``dialect``, the spec's)."""
    if not histogram:
        return kind
    return kind if is_warehouse(kind) else warehouse(dialect)


def is_warehouse(kind: str) -> bool:
    """Whether ``kind`` is a warehouse's histogram (``warehouse``), of any dialect."""
    return kind.split(":", 1)[0] == WAREHOUSE


def warehouse_conversion(kind: str) -> str:
    """Where a warehouse's column is converted, with the dialect's session setting for ISO dates if it has one."""
    session = ISO_DATES_SESSION.get(kind.split(":", 1)[1] if ":" in kind else "")
    return f"{WAREHOUSE_CONVERSION} ({session})" if session else WAREHOUSE_CONVERSION


def mended(kind: str, column: str, sql: str | exp.Expression, pandas: str, arrow: str, purpose: str = "") -> str:
    """``in <where the source takes it> (e.g. <the change, in its form><purpose>)``: ``sql`` an
    expression of ``column``, as text in the user's SQL dialect, or a tree rendered in the source's
    (``source_sql``); ``pandas`` and ``arrow`` the statement that changes the column in a DataFrame
    ``df`` or an Arrow ``table``."""
    sql = source_sql(kind, sql)
    quoted = exp.to_identifier(column, quoted=True).sql("duckdb")  # a relation and a view are DuckDB's
    replaced = f"SELECT * REPLACE ({sql} AS {quoted}) FROM …"
    if kind == PANDAS:
        return f"in the DataFrame first (e.g. {pandas}{purpose})"
    if kind == ARROW:
        return f"in the table first (e.g. {arrow}{purpose})"
    if kind == RELATION:
        return f"in the relation first (e.g. {replaced}{purpose})"
    if kind == VIEW:
        return (f"in a view of the table on the connection, given as (connection, view) in its place (e.g. CREATE "
                f"VIEW … AS {replaced}{purpose})")
    if kind == SPARK_FRAME:
        return f"in the DataFrame first (e.g. df.withColumn({name_shown(column)}, F.expr({sql!r})){purpose})"
    if kind == SPARK_TABLE:  # a query beside (session, table) is refused: the table read as a DataFrame, given instead
        return (f"in a DataFrame of the table, given as the source in its place (e.g. df = spark.table(…)"
                f".withColumn({name_shown(column)}, F.expr({sql!r})){purpose})")
    if is_warehouse(kind):
        return f"in {warehouse_conversion(kind)} (e.g. {sql}{purpose})"
    return f"in a [source] query (e.g. {sql}{purpose})"


def is_spark(kind: str) -> bool:
    """Whether a source of ``kind`` is changed in Spark's SQL (a DataFrame's ``F.expr``)."""
    return kind in (SPARK_FRAME, SPARK_TABLE)


def source_sql(kind: str, sql: str | exp.Expression) -> str:
    """``sql`` as the source of ``kind`` runs it: a tree in Spark's dialect for a Spark DataFrame or
    table, in DuckDB's for the others (a relation, a view, a [source] query); text as it is. DuckDB's
    text inside ``F.expr`` was a string literal's to Spark (``"zip"['code']``), its list items
    counted from 1 (review of the ninety-seventh round); a warehouse's, when named, in its own. A
    warehouse whose dialect the spec does not name is told DuckDB's, said to be so: the user ran it in
    their warehouse as if it were its SQL (a hundredth-round review: ``isfinite``, which only DuckDB has).
    No one form serves them all: Postgres and Snowflake take NaN as equal to NaN and compare a float
    with ``'NaN'``, BigQuery and Trino take NaN as unequal to everything and refuse that comparison,
    and BigQuery has no ``REAL``."""
    if isinstance(sql, str):
        return sql
    if kind == WAREHOUSE:  # a warehouse of no dialect named (``warehouse(None)``)
        return f"{sql.sql(dialect='duckdb')} {UNNAMED_DIALECT}"
    return sql.sql(dialect=dialect_of(kind))


def dialect_of(kind: str) -> str:
    """The SQL dialect a source of ``kind`` is changed in (``source_sql``): Spark's for a Spark
    DataFrame or table, a warehouse's own when the run or the spec names it, DuckDB's for the others."""
    if is_spark(kind):
        return "spark"
    if is_warehouse(kind) and ":" in kind:
        return kind.split(":", 1)[1]
    return "duckdb"
