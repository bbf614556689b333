"""The Python the docs show is Python that runs: every ``sqlclose.…`` name in README.md and
docs/*.md (in a ``python`` block or an inline code span) names something that exists, a name
written as a call is callable, every ``from sqlclose… import …`` line imports; and a user's
``import sqlclose`` reaches the subpackages by attribute (``sqlclose.engine.DuckDBEngine``), as
the README's own ``engine=sqlclose.engine.SparkEngine(…)`` does."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _spans(text: str) -> list[str]:
    """The python blocks, and the inline code spans outside any block."""
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return blocks + re.findall(r"`([^`]+)`", prose)


def _references() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for doc in DOCS:
        for span in _spans(doc.read_text(encoding="utf-8")):
            for m in re.finditer(r"(?<![\w/.-])(sqlclose(?:\.[A-Za-z_]\w*)+)\s*(\()?", span):
                found.setdefault(m.group(1) + (m.group(2) or ""), set()).add(doc.name)
            for m in re.finditer(r"^\s*from (sqlclose[\w.]*) import ([\w, ]+)", span, re.M):
                found.setdefault(f"from {m.group(1)} import {m.group(2).strip()}", set()).add(doc.name)
    return found


def _resolve(dotted: str) -> object:
    """The object a dotted name names: its longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise ModuleNotFoundError(dotted)


REFERENCES = _references()


def test_the_docs_name_some_python():
    assert any(r.startswith("sqlclose.anonymize") for r in REFERENCES)  # the scan finds what is there


@pytest.mark.parametrize("reference", sorted(REFERENCES))
def test_a_name_the_docs_give_exists(reference):
    where = ", ".join(sorted(REFERENCES[reference]))
    if reference.startswith("sqlclose.engine.SparkEngine"):
        pytest.importorskip("pyspark")
    if reference.startswith("from "):
        module, names = re.match(r"from (\S+) import (.+)", reference).groups()
        imported = importlib.import_module(module)
        for name in (n.strip() for n in names.split(",")):
            assert hasattr(imported, name), f"{where}: {module} has no {name}"
        return
    obj = _resolve(reference.rstrip("("))
    if reference.endswith("("):
        assert callable(obj), f"{where}: {reference.rstrip('(')} is a {type(obj).__name__}, not callable"


def test_subpackages_are_attributes_after_import_sqlclose():
    code = ("import sqlclose\n"
            "print(sqlclose.engine.DuckDBEngine.__name__, sqlclose.sweep.sweep.__name__)\n"
            "try:\n    sqlclose.nothing_of_that_name\nexcept AttributeError:\n    print('refused')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["DuckDBEngine", "sweep", "refused"]
