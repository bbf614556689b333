"""Values that differ from a leaf only in their Unicode form (review rv13 #7). Text is compared code
point by code point, so a decomposed 'Zürich' (u + U+0308) is not the precomposed leaf (U+00FC) and
the job is right to stop; but the message quoted it exactly as the leaf looks and said to add a
line the file already shows (typed again, it is the precomposed leaf, refused as a duplicate).
A zero-width space was already shown escaped ('Bern\\u200b'); a value not in NFC now is too, and
the leaf it differs from is named. The oracles: the escaped forms written out by hand (Python's
ascii() of 'Zu\\u0308rich' is 'Zu\\u0308rich', of 'Zürich' 'Z\\xfcrich'), and the code points counted
by hand ('e\\u0301cole': 6, its NFC form 'école': 5)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from own_connection import rows as _rows
from table3_project import invoke

import sqlclose
from sqlclose.errors import HierarchyError
from sqlclose.model.text import counted, format_characters_hint, quoted, unicode_form_hint, unicode_twins

SPEC = ('[source]\npath = "p.parquet"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\n'
        '[quasi_identifiers]\nv = { file = "h.csv" }\n[sensitive.s]\ndistinct_l = 2\n')


def _refusal(folder, data_form: str, leaf_form: str) -> str:
    (folder / "h.csv").write_text(f"Bern;CH;*\n{leaf_form};CH;*\n", encoding="utf-8")
    _rows(f"COPY (SELECT * FROM (VALUES ('{data_form}', 'x'), ('{data_form}', 'y'), ('Bern', 'x'), ('Bern', 'y')) "
          f"t(v, s)) TO '{folder / 'p.parquet'}'")
    (folder / "spec.toml").write_text(SPEC)
    result = invoke("anonymize", folder / "spec.toml", "--no-progress")
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split())


def _listed(folder) -> str:
    """What `hierarchy validate spec.toml:v --show-values` says of the values (named, on asking)."""
    result = invoke("hierarchy", "validate", f"{folder / 'spec.toml'}:v", "--show-values")
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split())


UNICODE_COUNTED = ("holds 1 value (in 2 rows) that is not a leaf of its hierarchy {h} (2 leaves; the values are not "
                   "shown: an error lands in job logs; `sqlclose hierarchy validate SPEC.toml:v --show-values` lists "
                   "them): add a line for each to the hierarchy (leaf;…;*), or fix the data; 1 of them differs from a "
                   "leaf only in its Unicode form, and text is compared code point by code point: write the data "
                   "and the hierarchy in one form, NFC (a [source] query's nfc_normalize(column) normalizes the "
                   "column)")


def _counted_without_either_form(folder, message: str) -> None:
    """The run's message counts the value and the Unicode twin, and shows neither it nor its leaf,
    escaped or not (an error lands in job logs)."""
    assert UNICODE_COUNTED.format(h=folder / "h.csv") in message, message
    for shown in ("Z\\xfcrich", "Zu\\u0308rich", "Z\u00fcrich", "Zu\u0308rich"):
        assert shown not in message, message


def test_a_decomposed_value_is_shown_escaped_and_told_apart_from_its_precomposed_leaf(tmp_path):
    _counted_without_either_form(tmp_path, _refusal(tmp_path, "Zu\u0308rich", "Z\u00fcrich"))
    message = _listed(tmp_path)
    assert "h.csv: 'Zu\\u0308rich' (2 rows)" in message, message
    assert ("'Zu\\u0308rich' differs from the leaf 'Z\\xfcrich' (line 2) only in its Unicode form" in message
            and "NFC" in message), message
    assert "Zürich" not in message  # no quoted form that looks exactly like the leaf


def test_a_precomposed_value_is_told_apart_from_its_decomposed_leaf(tmp_path):
    _counted_without_either_form(tmp_path, _refusal(tmp_path, "Z\u00fcrich", "Zu\u0308rich"))
    message = _listed(tmp_path)
    assert "'Z\\xfcrich' differs from the leaf 'Zu\\u0308rich' (line 2) only in its Unicode form" in message, message


def test_a_mask_over_a_decomposed_code_counts_its_code_points_and_says_so():
    """The mask message said "'école' has 6 characters" of a value that shows 5. Now the value is
    counted, not shown (1 value, in 2 rows: the table here), and the message says that it is not in
    NFC, whose form may count fewer code points."""
    table = pa.table({"v": ["e\u0301cole", "e\u0301cole", "ville", "ville"], "s": ["x", "y", "x", "y"]})
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"v": {"mask": True, "length": 5}},
            "sensitive": {"s": {"distinct_l": 2}}}
    with pytest.raises(HierarchyError) as e:
        sqlclose.anonymize(table, spec)
    message = str(e.value)
    assert ("holds 1 value (in 2 rows) whose length is not the declared 5: pad or correct the codes, or declare "
            "the length they have (1 of them not in Unicode NFC: a length counts code points, and NFC may write them "
            "in fewer)") in message, message
    assert "cole" not in message, message


def test_an_ascii_value_is_told_apart_from_a_leaf_that_normalizes_to_it():
    """The Kelvin sign (U+212A) is 'K' in NFC: a data value 'K' has it as its twin, shown escaped."""
    assert unicode_twins(["K", "Zu\u0308rich", "x"], ["\u212a", "Z\u00fcrich", "y"]) == {
        "K": "\u212a", "Zu\u0308rich": "Z\u00fcrich"}
    assert quoted("\u212a") == "'\\u212a'" and quoted("K") == "'K'" and quoted("K", escaped=True) == "'K'"


@pytest.mark.parametrize("how", ["hierarchy", "spec"])
def test_check_counts_a_decomposed_sensitive_value_and_names_neither_it_nor_its_leaf(tmp_path, how):
    """Review rv21 #8: `sqlclose check --hierarchy` (and --spec) quoted a decomposed sensitive value as
    'Zürich', looking exactly like the leaf, and advised adding the line `Zürich;…;*` the file already
    shows. Later (the last round's leftovers) a sensitive value is shown nowhere, escaped or not: the
    message counts the values off the hierarchy (1, in 1 row: the data written here) and those that
    differ from a leaf only in their Unicode form, naming neither the value nor the leaf."""
    (tmp_path / "t.csv").write_text("age,city\n1,Zu\u0308rich\n1,Bern\n2,Z\u00fcrich\n2,Bern\n", encoding="utf-8")
    (tmp_path / "age.csv").write_text("1;*\n2;*\n")
    (tmp_path / "city.csv").write_text("Bern;CH;*\nZ\u00fcrich;CH;*\n", encoding="utf-8")
    (tmp_path / "spec.toml").write_text('[source]\npath = "t.csv"\n[privacy]\nk = 2\n[quasi_identifiers]\n'
                                        'age = { file = "age.csv" }\n[sensitive.city]\ndistance = "hierarchical"\n'
                                        't = 0.9\nhierarchy = "city.csv"\n')
    args = ["--spec", tmp_path / "spec.toml"] if how == "spec" else [
        "--qi", "age", "--sensitive", "city", "--distance", "hierarchical", "--hierarchy", f"city={tmp_path}/city.csv"]
    result = invoke("check", tmp_path / "t.csv", *args, "-q")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert ("column 'city' in " in message and "holds 1 value (in 1 row) that is not a leaf of its hierarchy"
            in message and "1 of them differs from a leaf only in its Unicode form" in message
            and "NFC" in message), message
    # a sensitive value is counted, never shown: neither its form nor the leaf it looks like
    for shown in ("Z\\xfcrich", "Zu\\u0308rich", "Z\u00fcrich", "Zu\u0308rich"):
        assert shown not in message, message


def test_a_count_of_one_takes_the_singular_and_any_other_the_plural():
    """Messages counted things as "value(s)" and "row(s)"; ``counted`` words a count as English does."""
    assert counted(1, "value") == "1 value"
    assert counted(2, "value") == "2 values"
    assert counted(0, "row") == "0 rows"
    assert counted(1, "class", "classes") == "1 class" and counted(3, "class", "classes") == "3 classes"
    assert counted(12345, "row") == "12345 rows"  # the number as it was written, no separators added


def test_the_values_alike_beside_a_twin_are_counted_in_the_singular_or_the_plural():
    """The hints said "(1 more value(s) alike)". The oracle: the messages written out by hand."""
    assert format_characters_hint("Bern\u200b", "Bern", 1) == (
        "'Bern\\u200b' differs from the leaf 'Bern' only by invisible characters (1 more value alike) (such "
        "as U+FEFF, a byte-order mark, U+200B, a zero-width space, or a control character such as U+0007): remove "
        "them from the data or the hierarchy")
    assert format_characters_hint("Bern\u200b", "Bern", 2) == (
        "'Bern\\u200b' differs from the leaf 'Bern' only by invisible characters (2 more values alike) "
        "(such as U+FEFF, a byte-order mark, U+200B, a zero-width space, or a control character such as U+0007): "
        "remove them from the data or the "
        "hierarchy")
    assert unicode_form_hint("Zu\u0308rich", "Z\u00fcrich", 2, 1) == (
        "'Zu\\u0308rich' differs from the leaf 'Z\\xfcrich' (line 2) only in its Unicode form (1 more value alike), "
        "and text is compared code point by code point: write the data and the hierarchy in one form, NFC (a "
        "[source] query's nfc_normalize(column) normalizes the column)")
    assert unicode_form_hint("Zu\u0308rich", "Z\u00fcrich", None, 3) == (
        "'Zu\\u0308rich' differs from the leaf 'Z\\xfcrich' only in its Unicode form (3 more values alike), and "
        "text is compared code point by code point: write the data and the hierarchy in one form, NFC (a [source] "
        "query's nfc_normalize(column) normalizes the column)")
