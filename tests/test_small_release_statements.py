"""A small release's fixed cost in statements (docs/performance.md, hundred-and-first round): a table
of the DuckDB engine's own is typed once while it lives, and typed again once it is made anew; the
release query a Parquet write checks is described once, not again by the write. The oracles are
DuckDB's own answers through the engine's connection, and the statements the engine is sent."""

from __future__ import annotations

import pyarrow as pa
import pytest
from sqlglot import exp
from statement_log import recorded_each
from table3_project import TABLE3

import sqlclose
from sqlclose.engine.duckdb import DuckDBEngine


@pytest.fixture
def sent(monkeypatch) -> list[str]:
    """Every statement the DuckDB engine sends, as its SQL."""
    return recorded_each(monkeypatch, DuckDBEngine, ("_run", "_run_small", "_execute"))


def own_types(engine: DuckDBEngine, name: str) -> dict[str, str]:
    """DuckDB's types of table ``name``, asked on the connection directly (not through the engine's cache)."""
    return {row[0]: row[1] for row in engine.con.execute(f'DESCRIBE "{name}"').fetchall()}


def select(value: str, alias: str = "a") -> exp.Select:
    return exp.select(exp.alias_(exp.cast(exp.Literal.number(1), value), alias))


def test_a_table_of_the_engines_own_is_typed_once_and_again_when_made_anew(sent):
    engine = DuckDBEngine()
    try:
        table = engine.create_temp_table(engine.temp_name("t"), select("BIGINT"))
        assert engine.schema(table).field("a").type == pa.int64() and own_types(engine, table.name) == {"a": "BIGINT"}
        assert engine.relation_types(table) == {"a": "BIGINT"}
        before = len(sent)
        assert engine.schema(table).field("a").type == pa.int64()
        assert engine.relation_types(table) == {"a": "BIGINT"}
        assert engine.plain_text_columns(table, ["a"]) == []
        assert len(sent) == before  # typed once: no statement for the same table's types again
        # Replaced under its name (keep), dropped and made again, renamed: typed anew each time.
        engine.keep(table.name, select("VARCHAR"))
        assert own_types(engine, table.name) == {"a": "VARCHAR"}
        assert engine.schema(table).field("a").type == pa.string()
        assert engine.relation_types(table) == {"a": "VARCHAR"}
        assert engine.plain_text_columns(table, ["a"]) == ["a"]
        engine.unregister(table.name)
        engine.create_temp_table(table.name, select("DOUBLE", "b"))
        assert engine.schema(table).names == ["b"] and engine.relation_types(table) == {"b": "DOUBLE"}
        other = engine.temp_name("u")
        engine.create_temp_table(other, select("INTEGER", "c"))
        assert engine.schema(exp.Table(this=exp.to_identifier(other, quoted=True))).names == ["c"]
        engine.rename(table.name, other)  # the old `other` dropped, `table` now under its name
        assert engine.schema(exp.Table(this=exp.to_identifier(other, quoted=True))).names == ["b"]
        assert engine.relation_types(exp.Table(this=exp.to_identifier(other, quoted=True))) == {"b": "DOUBLE"}
        engine.drop_objects([("table", other)])
        engine.create_temp_table(other, select("BOOLEAN", "d"))
        assert engine.relation_types(exp.Table(this=exp.to_identifier(other, quoted=True))) == {"d": "BOOLEAN"}
    finally:
        engine.close()


def test_a_table_not_the_engines_own_is_typed_each_time(sent):
    """A table the engine did not make (a caller's) may change under it: its types are read each time."""
    engine = DuckDBEngine()
    try:
        engine.con.execute("CREATE TABLE callers AS SELECT 1 AS a")
        table = exp.Table(this=exp.to_identifier("callers", quoted=True))
        assert engine.relation_types(table) == {"a": "INTEGER"}
        engine.con.execute("DROP TABLE callers")
        engine.con.execute("CREATE TABLE callers AS SELECT 'x' AS a")
        assert engine.relation_types(table) == {"a": "VARCHAR"}
        assert engine.schema(table).field("a").type == pa.string()
    finally:
        engine.close()


def test_a_table3_release_types_the_source_once_and_describes_its_query_once(sent, tmp_path):
    spec = sqlclose.load_spec(TABLE3 / "table3.toml")
    release = sqlclose.anonymize(None, spec)
    source = release.problem.source.name
    release.write(tmp_path / "r.parquet")
    typed = [f'DESCRIBE SELECT * FROM "{source}" LIMIT 0', f'SELECT * FROM "{source}" LIMIT 0']
    assert sorted(s for s in sent if s in typed) == typed  # each kind once
    described = [s for s in sent if s.startswith("DESCRIBE") and "UNNEST" in s]  # the release query's
    assert len(described) == 1
    copied = [s for s in sent if s.startswith("COPY (")]
    assert len(copied) == 1 and described[0].removeprefix("DESCRIBE ") in copied[0]  # the query it described


def test_a_table3_release_renders_no_tree_it_copies_first(monkeypatch, tmp_path):
    """Every tree a Table 3 release sends is built for its one statement, its builders copying what
    they share: rendered in place (``owned``), none is deep-copied first to be rendered (16 of 37
    were before the hundred-and-second round). The oracle: each call of sqlglot's generator
    (``Expression.sql``) made while the engine renders, with the ``copy`` it was given."""
    from sqlclose.engine.base import Engine

    copied: list[str] = []
    rendering = [False]
    real_sql, real_render = exp.Expression.sql, Engine.render

    def sql(self, *args, **kwargs):
        if rendering[0] and kwargs.get("copy", True):
            copied.append(type(self).__name__)
        return real_sql(self, *args, **kwargs)

    def render(self, query, owned=False):
        rendering[0] = True
        try:
            return real_render(self, query, owned)
        finally:
            rendering[0] = False

    monkeypatch.setattr(exp.Expression, "sql", sql)
    monkeypatch.setattr(Engine, "render", render)
    spec = sqlclose.load_spec(TABLE3 / "table3.toml")
    with sqlclose.anonymize(None, spec) as release:
        release.write(tmp_path / "r.parquet")
    assert copied == []
