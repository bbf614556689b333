"""Names a message prints unquoted (``node age=2``, ``privacy.sensitive.disease.t``, ``(table sales)``,
``[source] types = { age = "DOUBLE" }``) are cut past 100 characters as ``name_shown`` cuts a quoted
one (``text.name_cut``): a 100,000-character name was printed whole, 100 kB of one error line. A short
name's message is as before, character for character; runnable advice holding a cut name says so.

Oracles: the messages' lengths (a bound of 1,000 characters), the name's own ends and length as
Python counts them, and the short names' messages as written out here by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sqlclose.against_report import _report_types
from sqlclose.audit.claims import _unnamed_distances
from sqlclose.engine.base import undeclared_number_type
from sqlclose.errors import HierarchyError, InputError
from sqlclose.model.hierarchy import bands_hierarchy, mask_hierarchy
from sqlclose.model.lattice import checked_node
from sqlclose.prepare.histogram import not_read_here

LONG = "a" * 50_000 + "z" * 50_000  # its ends: 60 a's before the cut, 20 z's after
CUT = f"{'a' * 60}…{'z' * 20} (100,000 characters)"


def _refusal(call, *args) -> str:
    with pytest.raises(InputError) as caught:
        call(*args)
    return str(caught.value)


def test_a_node_naming_a_long_quasi_identifier_is_told_in_a_bounded_message():
    told = _refusal(checked_node, {LONG: 1.5}, [LONG])
    assert len(told) < 1000 and f"node {CUT}=1.5: a level is a whole number" in told, told[:2000]
    past = _refusal(checked_node, {LONG: 7}, [LONG], [3])
    assert len(past) < 1000 and past.startswith(f"node {CUT}=7: "), past[:2000]


def test_a_short_quasi_identifiers_node_messages_are_as_before():
    assert _refusal(checked_node, {"age": 1.5}, ["age"]) == \
        "node age=1.5: a level is a whole number (0 or more), not a float"
    assert _refusal(checked_node, {"age": 7}, ["age"], [3]) == \
        "node age=7: 'age' has no level 7 (its levels are 0 to 2)"
    assert _refusal(checked_node, (1, 2), ["age"]).startswith(
        "node (1, 2) gives 2 levels for 1 quasi-identifier (age): a node is a dict of quasi-identifier name to level")


def test_a_long_columns_type_advice_is_cut_and_says_so():
    told = _refusal(undeclared_number_type, LONG, 3, 1, 3)
    assert len(told) < 1000, told[:2000]
    assert f'[source] types = {{ {CUT} = "DOUBLE" }} (or "DECIMAL(12, 2)") (the name is cut here: write it whole)' \
        in told


def test_a_short_columns_type_advice_is_as_before():
    assert _refusal(undeclared_number_type, "price", 3, 1, 3) == (
        "column 'price' holds 2 numbers that are not whole (a fraction or an exponent); an ordered column of a CSV is "
        "read as whole numbers unless its type is declared: declare it, e.g. [source] types = { price = \"DOUBLE\" } "
        "(or \"DECIMAL(12, 2)\")")


def test_a_reports_long_column_and_table_names_are_cut():
    told = _refusal(_report_types, {LONG: "NOT A TYPE"})
    assert len(told) < 1000 and told.startswith(f"output.column_types.{CUT} is 'NOT A TYPE'"), told[:2000]
    assert _refusal(_report_types, {"zip": "NOT A TYPE"}).startswith("output.column_types.zip is 'NOT A TYPE', which")
    unnamed = _unnamed_distances({"privacy": {"sensitive": {LONG: {"t": 0.2}}}})
    assert len(unnamed) == 1 and len(unnamed[0]) < 1000
    assert unnamed[0].startswith(f"privacy.sensitive.{CUT}.distance is left out"), unnamed[0][:2000]
    warehouse = str(not_read_here(SimpleNamespace(table=LONG)))
    assert len(warehouse) < 1000 and f"the warehouse table {CUT}, which" in warehouse, warehouse[:2000]
    assert str(not_read_here(SimpleNamespace(table="sales"))).startswith(
        "the source is the warehouse table sales, which sqlclose does not read: run `sqlclose sql SPEC` there")


def test_a_rule_hierarchys_long_column_is_cut_in_its_refusals():
    with pytest.raises(HierarchyError) as bands:
        bands_hierarchy([("1", 1.0)], [0], name=LONG)
    assert len(str(bands.value)) < 1000 and str(bands.value).startswith(f"{CUT}: band widths must be finite"), \
        str(bands.value)[:2000]
    with pytest.raises(HierarchyError) as mask:
        mask_hierarchy(["47677"], mask_char="**", name=LONG)
    assert len(str(mask.value)) < 1000 and str(mask.value) == f"{CUT}: mask_char must be one character, got '**'"
    with pytest.raises(HierarchyError) as short:
        bands_hierarchy([("1", 1.0)], [0], name="age")
    assert str(short.value) == "age: band widths must be finite positive numbers, got [0]"
