"""A TOML tree's leaves are the values as the engine writes them (values are matched as text):
true and false, never Python's True and False; a list or a table is no leaf. The oracles: a
plain GROUP BY over the written release (6 rows of each boolean, by construction) and the
leaves written out by hand."""

from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from own_connection import rows as _rows
from table3_project import invoke

import sqlclose
from sqlclose.errors import HierarchyError, SpecError
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.spec import load_spec

SPEC = '''
[source]
path = "p.parquet"
[output]
path = "out/r.parquet"
[privacy]
k = 3
[quasi_identifiers]
smoker = {{ tree = {tree} }}
[sensitive.diagnosis]
distinct_l = 2
'''



def test_a_tree_of_toml_booleans_matches_a_boolean_column(tmp_path):
    """A BOOLEAN column and a tree listing true and false: the job said "2 value(s) are not leaves
    of hierarchy tree …: 'false' (6 rows), 'true' (6 rows)", the leaves being spelt 'True' and
    'False'. Now released: 6 rows of each, 3 diagnoses in each class."""
    _rows(f"COPY (SELECT i % 2 = 0 AS smoker, ['flu', 'ulcer', 'colitis'][1 + i % 3] AS diagnosis "
               f"FROM range(12) r(i)) TO '{tmp_path / 'p.parquet'}'")
    (tmp_path / "spec.toml").write_text(SPEC.format(tree='{ "*" = [true, false] }'))
    result = invoke("anonymize", tmp_path / "spec.toml", "--no-progress", "--node", "smoker=0")
    assert result.exit_code == 0, result.output
    rows = _rows(f"SELECT smoker, count(*), count(DISTINCT diagnosis) FROM '{tmp_path / 'out' / 'r.parquet'}' "
                 "GROUP BY ALL ORDER BY ALL")
    assert rows == [(False, 6, 3), (True, 6, 3)]


def test_a_toml_time_leaf_is_hashed_and_released(tmp_path):
    """Review rv13 #3. A TIME column and a tree listing its value as a TOML local time (10:00:00): the
    spec's hash (model/spec.canonical_json) had no case for datetime.time and anonymize stopped with
    'internal error: TypeError: time' (exit 1), though explain accepted the spec. The oracle: DuckDB
    writes TIME '10:00:00' as 10:00:00, the leaf's text, so a plain GROUP BY over the release finds
    both rows labelled G."""
    _rows(f"COPY (SELECT * FROM (VALUES (TIME '10:00:00', 'x'), (TIME '10:00:00', 'y')) t(v, s)) "
          f"TO '{tmp_path / 'p.parquet'}'")
    (tmp_path / "spec.toml").write_text(
        '[source]\npath = "p.parquet"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\n'
        '[quasi_identifiers]\nv = { tree = { G = [10:00:00] } }\n[sensitive.s]\ndistinct_l = 2\n')
    result = invoke("anonymize", tmp_path / "spec.toml", "--no-progress", "--node", "v=1")
    assert result.exit_code == 0, result.output
    assert _rows(f"SELECT v, count(*) FROM '{tmp_path / 'out' / 'r.parquet'}' GROUP BY v") == [("G", 2)]


def test_tree_leaves_are_written_as_the_engine_writes_values():
    """Booleans as true/false, numbers and dates as their text; written out by hand."""
    h = Hierarchy.from_tree({"any": {"flags": [True, False], "numbers": [39, 2.5],
                                     "days": [datetime.date(1984, 5, 17)]}})
    assert h.leaves == ["true", "false", "39", "2.5", "1984-05-17"]


@pytest.mark.parametrize("tree, shown", [
    ({"*": [["flu"], ["ulcer"]]}, "group '*' lists ['flu'] among its leaves"),
    ({"any": {"Respiratory": [{"a": 1}]}}, "group 'any > Respiratory' lists {'a': 1} among its leaves"),
])
def test_a_list_or_a_table_among_leaves_is_refused_naming_its_group(tree, shown):
    """A list or a table inside a list of leaves was stringified into a leaf no column holds
    ("['flu']"); now refused, naming the group and how to write leaves or a group."""
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree(tree, "tree for column 'd'")
    assert str(e.value).startswith(f"tree for column 'd': {shown}; a leaf is one value"), str(e.value)


def test_a_value_missing_from_a_tree_gets_advice_for_a_tree(tmp_path):
    """Review rv8 #8. A value the data holds and a TOML tree lacks was told to 'add a line for each
    to the hierarchy (leaf;…;*)', a hierarchy file's syntax: a tree has no lines. The oracle: the
    data's diagnoses less the tree's leaves, 'ulcer' (2 rows)."""
    (tmp_path / "p.csv").write_text("d,age\nflu,30\npneumonia,31\ngastritis,32\nulcer,33\nflu,34\nulcer,35\n")
    (tmp_path / "spec.toml").write_text(
        '[source]\npath = "p.csv"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\n'
        '[quasi_identifiers]\nage = { bands = [5] }\n[sensitive.d]\ndistance = "hierarchical"\nt = 0.5\n'
        'hierarchy = { tree = { Respiratory = ["flu", "pneumonia"], Digestive = ["gastritis"] } }\n')
    result = invoke("anonymize", tmp_path / "spec.toml", "--no-progress")
    assert result.exit_code == 2, result.output
    assert "1 value (in 2 rows) that is not a leaf of its hierarchy tree for column 'd'" in result.output
    assert "ulcer" not in result.output  # a sensitive value: counted, never shown
    assert "add each to the tree, as a leaf of its group" in result.output and "leaf;…;*" not in result.output


@pytest.mark.parametrize("column, leaf", [
    ("TIMESTAMP '2024-01-01 10:00:00.5'", "2024-01-01T10:00:00.5"),
    ("TIMESTAMP '0044-01-01 01:02:03.000001'", "0044-01-01T01:02:03.000001"),
    ("TIMESTAMPTZ '2024-01-01 04:30:00.5+00'", "2024-01-01T10:00:00.5+05:30"),
    ("TIMESTAMPTZ '2024-01-01 10:00:00+00'", "2024-01-01T10:00:00Z"),
])
def test_a_toml_datetime_leaf_with_a_fraction_or_an_offset_matches_its_timestamp(tmp_path, column, leaf):
    """Review rv13 #6. A TOML datetime leaf became Python's text: '2024-01-01 10:00:00.500000' where
    DuckDB writes the TIMESTAMP '2024-01-01 10:00:00.5', '+00:00' where it writes a TIMESTAMPTZ (in
    sqlclose's UTC session) '+00', and the job said the value was not a leaf of the tree listing it.
    The oracle: a GROUP BY over the written release, both rows labelled G."""
    _rows(f"COPY (SELECT {column} AS v, s FROM (VALUES ('x'), ('y')) t(s)) TO '{tmp_path / 'p.parquet'}'")
    (tmp_path / "spec.toml").write_text(
        '[source]\npath = "p.parquet"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\n'
        f'[quasi_identifiers]\nv = {{ tree = {{ G = [{leaf}] }} }}\n[sensitive.s]\ndistinct_l = 2\n')
    result = invoke("anonymize", tmp_path / "spec.toml", "--no-progress", "--node", "v=1")
    assert result.exit_code == 0, result.output
    assert _rows(f"SELECT v, count(*) FROM '{tmp_path / 'out' / 'r.parquet'}' GROUP BY v") == [("G", 2)]


def test_a_toml_time_leaf_is_written_as_duckdb_writes_a_time():
    """A TOML local time's fraction of a second without its trailing zeros, as DuckDB writes
    TIME '10:00:00.25' (Python wrote '10:00:00.250000'); written out by hand."""
    h = Hierarchy.from_tree({"*": [datetime.time(10, 0, 0, 250000), datetime.time(10, 0)]})
    assert h.leaves == ["10:00:00.25", "10:00:00"]


def _spec_with(tmp_path: Path, qi_tree: str, sensitive: str = "distinct_l = 1") -> Path:
    """A spec over p.csv (age, d) whose age is given by ``qi_tree``; its path."""
    (tmp_path / "spec.toml").write_text(
        '[source]\npath = "p.csv"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\n'
        f'[quasi_identifiers]\nage = {{ tree = {qi_tree} }}\n[sensitive.d]\n{sensitive}\n', encoding="utf-8")
    return tmp_path / "spec.toml"


@pytest.mark.parametrize("tree, sensitive, told", [
    ('{ young = ["22", "27"], old = "43" }', "distinct_l = 1",
     "hierarchy of column 'age': tree for column 'age': group 'old' is one value, \"43\", not a list of leaves: "
     "write its leaves as a list, even a single one (old = [\"43\"])"),
    ('{ young = ["22", "27"], old = ["43"] }',
     'distance = "hierarchical"\nt = 1\nhierarchy = { tree = { any = { "lung ill" = "flu", gut = ["ulcer"] } } }',
     "hierarchy of column 'd': tree for column 'd': group 'any > lung ill' is one value, \"flu\", not a list of "
     "leaves: write its leaves as a list, even a single one (\"lung ill\" = [\"flu\"])"),
    ('{ young = [22, 27], old = 43 }', "distinct_l = 1",
     "hierarchy of column 'age': tree for column 'age': group 'old' is one value, 43, not a list of leaves: "
     "write its leaves as a list, even a single one (old = [43])"),
])
def test_a_group_written_as_one_value_is_refused_saying_to_write_a_list(tmp_path, tree, sensitive, told):
    """A group written as one value (old = "43" meant as old = ["43"]) was taken as a group of that one
    leaf, without a word: here the data holds only 22, 27, 43 (and flu, ulcer), so the job released.
    Refused now, exit 2, naming the column and the group and showing the list to write; the message is
    written out by hand."""
    (tmp_path / "p.csv").write_text("age,d\n22,flu\n27,ulcer\n43,flu\n43,ulcer\n", encoding="utf-8")
    result = invoke("anonymize", _spec_with(tmp_path, tree, sensitive), "--no-progress", "--dry-run")
    assert result.exit_code == 2, result.output
    assert f"sqlclose: error: {told}" in result.output, result.output


def test_a_group_of_one_value_is_refused_from_python_too():
    """`Hierarchy.from_tree` refuses it as a spec's tree is refused: `True` as TOML's true; a tree
    that is one value has no group to name. Written out by hand."""
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({"any": {"smokers": True, "others": [False]}}, "t")
    assert str(e.value) == ("t: group 'any > smokers' is one value, true, not a list of leaves: write its leaves as a "
                            "list, even a single one (smokers = [true])")
    with pytest.raises(HierarchyError, match=r"^t is one value, \"x\": give its groups and leaves"):
        Hierarchy.from_tree("x", "t")


def test_a_group_given_as_a_numpy_array_or_a_range_is_a_list_of_its_leaves():
    """From Python a group's leaves often come as `df.col.unique()`, a numpy array: it was called "one
    value", with advice (`old = [['43' '44']]`) refused again once followed. A 1-dimensional array, a
    range or a tuple is a list of leaves in its order, each leaf checked as a list's (a numpy integer as
    its number, a float32 refused, an array among the leaves refused). Rows written out by hand."""
    h = Hierarchy.from_tree({"old": np.array(["43", "44"]), "young": np.array([22, 27]), "kids": range(2),
                             "one": ("9",)}, "t")
    assert h.rows == (("43", "old", "*"), ("44", "old", "*"), ("22", "young", "*"), ("27", "young", "*"),
                      ("0", "kids", "*"), ("1", "kids", "*"), ("9", "one", "*"))
    with pytest.raises(HierarchyError, match=r"^t: group 'old': a numpy float32 has no text"):
        Hierarchy.from_tree({"old": np.array([4.5], dtype=np.float32), "young": ["22"]}, "t")
    with pytest.raises(HierarchyError, match=r"^t: group 'old' lists a numpy array of shape \(1,\) among its leaves; "
                                             r"a leaf is one value"):
        Hierarchy.from_tree({"old": ["43", np.array(["44"])], "young": ["22"]}, "t")
    with pytest.raises(HierarchyError, match=r"^t: group 'old' has no leaves$"):
        Hierarchy.from_tree({"old": np.array([]), "young": ["22"]}, "t")


def test_none_among_a_groups_leaves_is_refused(tmp_path):
    """`df.col.unique()` of a column with NULLs holds None: it was the leaf "None", the text 'None' of
    no row (or of a row spelling it), without a word. A missing value is no leaf: refused, saying
    what a NULL of the data follows instead; the release's own column, read with nulls = "value",
    holds the stand-in the tree lists as text (a plain GROUP BY over the written file)."""
    told = ("t: group 'sick' lists None among its leaves: a missing value is no leaf (it was taken as the text "
            "'None'); a NULL of the data follows its column's nulls policy")
    for leaves in (["flu", None], np.array(["flu", None], dtype=object)):
        with pytest.raises(HierarchyError) as refused:
            Hierarchy.from_tree({"sick": leaves, "well": ["none"]}, "t")
        assert str(refused.value).startswith(told), str(refused.value)
    (tmp_path / "t.csv").write_text("g,s\na,flu\na,\nb,flu\nb,\n", encoding="utf-8")
    (tmp_path / "s.toml").write_text(
        '[source]\npath = "t.csv"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\n'
        '[quasi_identifiers]\ng = { tree = { "*" = ["a", "b"] } }\n[sensitive.s]\ndistinct_l = 2\n'
        'nulls = "value"\nnull_value = "none"\nhierarchy = { tree = { sick = ["flu"], well = ["none"] } }\n',
        encoding="utf-8")
    assert invoke("anonymize", tmp_path / "s.toml", "-q", "--no-progress").exit_code == 0
    assert _rows(f"SELECT g, s, COUNT(*) FROM '{tmp_path / 'out' / 'r.parquet'}' GROUP BY ALL ORDER BY ALL") == \
        [("a", "flu", 1), ("a", None, 1), ("b", "flu", 1), ("b", None, 1)]


def test_a_group_given_as_a_set_is_refused_as_having_no_order():
    """A set's leaves were called "one value", told to write `old = [{'43', '44'}]`. A tree's leaves
    are its hierarchy's rows in their order, and a set of text is iterated in another order each run
    (hashing is seeded afresh): refused, saying to give a list. Written out by hand."""
    for given, kind in (({"43", "44"}, "set"), (frozenset(["43"]), "frozenset")):
        with pytest.raises(HierarchyError) as e:
            Hierarchy.from_tree({"any": {"old": given, "young": ["22"]}}, "t")
        assert str(e.value) == (
            f"t: group 'any > old' is a {kind}, which has no order, not a list of leaves: a tree's leaves are its "
            "hierarchy's rows in the order given, and a set's order of text changes from run to run; give the leaves "
            "as a list (sorted(…) if no other order is meant)")


@pytest.mark.parametrize("given, what, made", [
    (None, "None", ""),
    (np.array([["43", "44"]]), "a 2-dimensional numpy array (shape (1, 2))", ""),
    ({"43": 1}.keys(), "a dict_keys", "; list(…) of it makes one, in its order"),
    (iter(["43"]), "a list_iterator", "; list(…) of it makes one, in its order"),
])
def test_a_group_given_as_none_or_another_object_is_refused_naming_what_it_is(given, what, made):
    """None (`old = [None]` was the advice) or an object that is no value and no list of leaves is
    named by what it is, with what a group is. Written out by hand."""
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({"any": {"old": given, "young": ["22"]}}, "t")
    assert str(e.value) == (
        f"t: group 'any > old' is {what}, not a list of leaves: a group is a list of leaves (text, numbers, true or "
        f"false) or a table of groups, e.g. {{ young = [\"22\", \"27\"], old = [\"43\", \"52\"] }}{made}")
    with pytest.raises(HierarchyError, match=r"^t is None, not a list of leaves: a group is"):
        Hierarchy.from_tree(None, "t")  # type: ignore[arg-type]


def test_an_empty_groups_path_is_named_from_the_top():
    """The empty group two levels down was named from the bottom, 'a > any' (a leaf's groups are
    gathered bottom-up), where every other message of a tree names 'any > a'."""
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({"any": {"a": {}, "b": ["x"]}}, "t")
    assert str(e.value) == "t: group 'any > a' is empty"


@pytest.mark.parametrize("leaf, matched", [
    ("1.5e300", "1.5e+300"), ("2.50", "2.5"), ("1e3", "1000.0"), ("+2.5", "2.5"), ("1_000.5", "1000.5"),
    ("-nan", "nan"),
])
def test_a_float_leaf_written_otherwise_than_its_text_is_refused(tmp_path, leaf, matched):
    """TOML keeps no float's text: 1.5e300 became the leaf '1.5e+300' (Python's and DuckDB's text of the
    DOUBLE), 2.50 the leaf '2.5', so a text or DECIMAL column holding the value as written had it refused
    as no leaf, or matched to another value. Refused when the spec is read, naming the key path and
    the group, with both quoted spellings; the texts Python writes are worked out by hand."""
    spec = _spec_with(tmp_path, f'{{ "*" = {{ old = ["43", {leaf}] }} }}')
    with pytest.raises(SpecError) as e:
        load_spec(spec)
    assert str(e.value) == (
        f"{spec}: invalid spec: quasi_identifiers.age.tree: group '* > old' lists the number {leaf}, which would be "
        f"matched as the text {matched}, not as written (values are matched to a tree's leaves as text): write the "
        f"leaf in quotes as the column's values are written, e.g. \"{matched}\" (a DOUBLE column holding it) or "
        f"\"{leaf}\" (a text column)")


def test_a_sensitive_trees_float_leaf_is_refused_naming_its_key_path(tmp_path):
    """The same in a sensitive column's tree, named by its own key path."""
    spec = _spec_with(tmp_path, '{ "*" = ["43"] }', 'distance = "hierarchical"\nt = 1\n'
                      'hierarchy = { tree = { "*" = [1.0e1] } }')
    with pytest.raises(SpecError, match=r"invalid spec: sensitive\.d\.hierarchy\.tree: group '\*' lists the number "
                                        r"1\.0e1, which would be matched as the text 10\.0, not as written"):
        load_spec(spec)


def test_a_float_leaf_written_as_its_text_matches_a_double_column(tmp_path):
    """A float leaf whose TOML text is its text (2.5, 39.0, -0.0, inf) is kept: DuckDB writes a DOUBLE
    holding it so. Oracle: a plain GROUP BY over the written release, two rows under each group (2.5
    and -0.0 low, 39.0 and inf high, by construction); and elsewhere in the spec a float is still a
    plain float (t = 0.50 is 0.5)."""
    _rows("COPY (SELECT * FROM (VALUES (2.5::DOUBLE, 'x'), (39.0, 'y'), ('-0.0'::DOUBLE, 'x'), ('inf'::DOUBLE, "
          f"'y')) t(age, d)) TO '{tmp_path / 'p.parquet'}'")
    spec = _spec_with(tmp_path, '{ low = [2.5, -0.0], high = [39.0, inf] }',
                      'distance = "equal"\nt = 0.50').read_text(encoding="utf-8").replace("p.csv", "p.parquet")
    (tmp_path / "spec.toml").write_text(spec, encoding="utf-8")
    t = load_spec(tmp_path / "spec.toml").sensitive["d"].t
    assert type(t) is float and t == 0.5
    result = invoke("anonymize", tmp_path / "spec.toml", "--no-progress", "--node", "age=1")
    assert result.exit_code == 0, result.output
    assert _rows(f"SELECT age, count(*) FROM '{tmp_path / 'out' / 'r.parquet'}' GROUP BY age ORDER BY age") == \
        [("high", 2), ("low", 2)]


def test_a_trees_errors_name_a_container_by_what_it_is_and_cut_a_long_label():
    """A tree built from the data (`df.age.unique()`) put thousands of the data's values into one
    message: a list or an array among the leaves was quoted whole by its repr, and a pandas Series or
    Index there was taken for one leaf, its repr (the data's values) for its text. Each is named by
    what it is; a group's label, a lone value and a leaf are quoted up to 300 characters, then cut
    with their length. The messages are written out by hand; the values of the data appear in none."""
    pd = pytest.importorskip("pandas")
    ages = [f"age-{i}" for i in range(5000)]
    tail = ("among its leaves; a leaf is one value (text, a number, true or false): list the values themselves "
            "(\"*\" = [\"flu\", \"ulcer\"]), or make a group a table of its own (Respiratory = [\"flu\"])")
    for leaf, what in ((ages, "a list of 5000 items"), (np.array(ages[:999]), "a numpy array of shape (999,)"),
                       (pd.Series(ages), "a pandas.Series"), (pd.Index(ages), "a pandas.Index"),
                       (set(ages), "a set of 5000 items")):
        with pytest.raises(HierarchyError) as e:
            Hierarchy.from_tree({"old": ["43", leaf], "young": ["22"]}, "t")
        assert str(e.value) == f"t: group 'old' lists {what} {tail}"
    long = "x" * 10_000
    cut = f"'{'x' * 300}'… (10000 characters)"
    told = {
        f"t: group {cut} has no leaves": {long: [], "young": ["22"]},
        f"t: group {cut} is empty": {long: {}, "young": ["22"]},
        f"t: group 'old' is one value, \"{'x' * 299}… (10002 characters), not a list of leaves: write its leaves "
        "as a list, even a single one (the value in brackets)": {"old": long, "young": ["22"]},
        f"t: leaf {cut} appears twice, in group 'old' and in group 'young'; each value is one leaf of the tree: "
        "list it once, in the group it belongs to":
            {"old": [long], "young": [long]},
    }
    for message, tree in told.items():
        with pytest.raises(HierarchyError) as e:
            Hierarchy.from_tree(tree, "t")
        assert str(e.value) == message


def test_a_spec_trees_array_among_its_leaves_is_named_by_its_shape():
    """The same from a spec given as a dict: the hierarchy's error names the array by its shape,
    never its items (the data's ages: none of them is in the message)."""
    ages = np.array([f"{age}y" for age in range(17, 91)])
    spec = {"k": 2, "others": "keep", "quasi_identifiers": {"age": {"tree": {"*": ["16", ages]}}}}
    with pytest.raises(HierarchyError) as e:
        sqlclose.anonymize(pa.table({"age": ["16", "17y"], "zip": ["1", "2"]}), spec)
    assert str(e.value).startswith("hierarchy of column 'age': tree for column 'age': group '*' lists a numpy array "
                                   "of shape (74,) among its leaves; a leaf is one value"), str(e.value)
    assert not any(f"{age}y" in str(e.value) for age in range(17, 91))


KEYS_ALIKE = ("keys 1 and '1' {where} are both written '1', and a group's name is its key as text: their leaves would "
              "make one group {group}; rename one of the two, or list their leaves under one key")


def test_two_keys_of_a_table_written_alike_are_refused_naming_both():
    """From Python a table's keys 1 and "1" (True and "True") were one group '1': their leaves merged
    under one label without a word, and a spec's tree (its keys made text in a dict) kept the last
    key's leaves alone, its data's 'a' then told "not a leaf". Refused, naming both keys and the
    group they would make, at the top, below a group, and from a spec given as a dict. Written out by
    hand. (1 and 1.0, or 1 and True, are one key of a Python dict already: nothing to tell apart.)"""
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({1: ["a"], "1": ["b"]}, "t")
    assert str(e.value) == "t: " + KEYS_ALIKE.format(where="at the tree's top", group="'1'")
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({"Europe": {"West": ["c"], 1: ["a"], "1": ["b"]}, "Asia": {"East": ["d"]}}, "t")
    assert str(e.value) == "t: " + KEYS_ALIKE.format(where="of group 'Europe'", group="'Europe > 1'")
    with pytest.raises(HierarchyError, match=r"^t: keys True and 'True' at the tree's top are both written 'True'"):
        Hierarchy.from_tree({True: ["a"], "True": ["b"]}, "t")
    spec = {"k": 2, "others": "keep", "quasi_identifiers": {"city": {"tree": {"*": {1: ["a"], "1": ["b"]}}}}}
    with pytest.raises(SpecError) as e:
        sqlclose.anonymize(pa.table({"city": ["a", "b"]}), spec)
    assert str(e.value) == "spec: invalid spec: quasi_identifiers.city.tree: " + KEYS_ALIKE.format(
        where="of group '*'", group="'* > 1'")


def test_leaves_given_apart_but_written_alike_say_how_each_was_given(tmp_path):
    """Leaves 1 and "1" (True and "true") are one leaf, the text the engine writes: refused as a leaf
    listed twice, which read as wrong to whoever gave two values. The message now says how each was
    given. 1, 1.0 and True are three leaves, '1', '1.0' and 'true' (an INTEGER, a DOUBLE and a
    BOOLEAN column's texts): kept. Written out by hand."""
    tail = ("(given as {} and as {}: a leaf is matched as text, as the engine writes the column's values, and both "
            "are written so); each value is one leaf of the tree: list it once, in the group it belongs to")
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({"g": [1, "1"], "h": ["2"]}, "t")
    assert str(e.value) == "t: leaf '1' appears twice in group 'g' " + tail.format("1", "'1'")
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({"g": ["true"], "h": [True]}, "t")
    assert str(e.value) == ("t: leaf 'true' appears twice, in group 'g' and in group 'h' "
                            + tail.format("'true'", "True"))
    with pytest.raises(HierarchyError) as e:  # the same value twice: as it was
        Hierarchy.from_tree({"g": ["1"], "h": ["1"]}, "t")
    assert str(e.value) == ("t: leaf '1' appears twice, in group 'g' and in group 'h'; each value is one leaf of the "
                            "tree: list it once, in the group it belongs to")
    assert Hierarchy.from_tree({"g": [1, 1.0], "h": [True]}, "t").rows == \
        (("1", "g", "*"), ("1.0", "g", "*"), ("true", "h", "*"))
    spec = _spec_with(tmp_path, '{ "*" = { g = [1, "1"] } }')  # TOML's arrays may mix them
    with pytest.raises(HierarchyError, match=r"tree for column 'age': leaf '1' appears twice in group '\* > g' "
                                             r"\(given as 1 and as '1'"):
        sqlclose.anonymize(pa.table({"age": ["1", "1"], "d": ["x", "y"]}), load_spec(spec))


def _pandas_groups(pd):
    """Groups as pandas gives them (``.unique()`` of a string, categorical, nullable or datetime column,
    an Index, a Series), each with its leaves written out by hand as a numpy array's are taken."""
    return [
        (pd.Series(["Lyon", "Nice", "Lyon"], dtype="string[pyarrow]").unique(), ["Lyon", "Nice"]),
        (pd.Series(["Lyon", "Nice"], dtype="string[python]").unique(), ["Lyon", "Nice"]),
        (pd.Series(["Lyon", "Nice"], dtype="str").unique(), ["Lyon", "Nice"]),
        (pd.Categorical(["Nice", "Lyon", "Nice"]).unique(), ["Nice", "Lyon"]),
        (pd.array([43, 52], dtype="Int64"), ["43", "52"]),
        (pd.array([True, False], dtype="boolean"), ["true", "false"]),
        (pd.Series(pd.to_datetime(["2024-01-31 10:00:00.000000001"])).unique(), ["2024-01-31 10:00:00.000000001"]),
        (pd.Index(["Lyon", "Nice"]), ["Lyon", "Nice"]),
        (pd.Series(["Lyon", "Nice"], index=[7, 3]), ["Lyon", "Nice"]),
    ]


def test_a_pandas_array_given_as_a_group_is_taken_as_a_numpy_array_is(tmp_path):
    """`df["city"].unique()` of a string column is a pandas array (of any text column from pandas 3
    on), which was refused as "not a list of leaves" where a numpy array is taken. A pandas array,
    Index or Series is its values in order, each leaf as a numpy array's (an Int64's 43 as '43', a
    datetime's nanoseconds kept); a Series' index is no leaf. Rows written out by hand; and a
    release over a table whose tree was given so: a plain GROUP BY over it finds the group's rows."""
    pd = pytest.importorskip("pandas")
    for group, leaves in _pandas_groups(pd):
        assert Hierarchy.from_tree({"g": group, "h": ["zzz"]}, "t").rows == \
            (*((leaf, "g", "*") for leaf in leaves), ("zzz", "h", "*")), type(group)
    cities = pd.Series(["Lyon", "Nice", "Lyon", "Nice"], dtype="string[pyarrow]")
    spec = {"k": 4, "others": "keep", "quasi_identifiers": {"city": {"tree": {"France": cities.unique()}}}}
    with sqlclose.anonymize(pa.table({"city": ["Lyon", "Nice", "Lyon", "Nice"], "s": list("abcd")}), spec) as r:
        r.write(tmp_path / "r.parquet")
    assert _rows(f"SELECT city, count(*) FROM '{tmp_path / 'r.parquet'}' GROUP BY city") == [("France", 4)]


def test_a_missing_value_of_a_pandas_group_is_refused_as_none_is():
    """A pandas group's missing value (NA, NaN of a str column, NaT: a NULL of the column) is no leaf,
    refused as None among a list's leaves is, naming the group; from a spec given as a dict too.
    Written out by hand."""
    pd = pytest.importorskip("pandas")
    told = ("group '*' lists a missing value ({}) among its leaves: a missing value is no leaf; a NULL of the data "
            "follows its column's nulls policy (nulls = \"value\" reads it as its null_value, a leaf to list as "
            "text): leave it out of the tree (….dropna().unique())")
    for group, cell in ((pd.Series(["Lyon", None], dtype="string[pyarrow]").unique(), "<NA> in pandas"),
                        (pd.Series(["Lyon", None], dtype="str").unique(), "nan in pandas"),
                        (pd.array([43, None], dtype="Int64"), "<NA> in pandas"),
                        (pd.Series(pd.to_datetime(["2024-01-31", None])).unique(), "NaT in pandas"),
                        (pd.Index(["Lyon", None]), "nan in pandas")):
        with pytest.raises(HierarchyError) as e:
            Hierarchy.from_tree({"*": group}, "t")
        assert str(e.value) == "t: " + told.format(cell), type(group)
    spec = {"k": 2, "others": "keep",
            "quasi_identifiers": {"city": {"tree": {"*": pd.Series(["a", None], dtype="string").unique()}}}}
    with pytest.raises(SpecError) as e:
        sqlclose.anonymize(pa.table({"city": ["a", "a"]}), spec)
    assert str(e.value) == "spec: invalid spec: quasi_identifiers.city.tree: " + told.format("<NA> in pandas")


def test_a_data_frame_given_as_a_group_is_told_to_give_a_column():
    """A DataFrame as a group was told "list(…) of it makes one", which makes its column labels the
    leaves. Told to give one column's values. Written out by hand."""
    pd = pytest.importorskip("pandas")
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({"*": pd.DataFrame({"city": ["Lyon"]})}, "t")
    assert str(e.value) == ("t: group '*' is a pandas.DataFrame, not a list of leaves: a group is a list of leaves "
                            "(text, numbers, true or false) or a table of groups, e.g. { young = [\"22\", \"27\"], "
                            "old = [\"43\", \"52\"] }; a group is one column's values, e.g. df[\"city\"].unique()")


def _missing_leaves():
    """Each way a missing value reaches a group's leaves from Python, with the repr a message names it by."""
    import decimal

    pd = pytest.importorskip("pandas")
    return [(["flu", float("nan")], "nan"), (["flu", np.nan], "nan"), (("flu", np.float64("nan")), "np.float64(nan)"),
            (["flu", np.float32("nan")], "np.float32(nan)"), (np.array([1.5, np.nan]), "np.float64(nan)"),
            (np.array(["flu", np.nan], dtype=object), "nan"),
            (np.array(["2024-01-31", "NaT"], dtype="datetime64[D]"), "np.datetime64('NaT','D')"),
            (["flu", np.datetime64("NaT")], "np.datetime64('NaT','generic')"), (["flu", pd.NA], "<NA>"),
            (["flu", pd.NaT], "NaT"), (["flu", decimal.Decimal("NaN")], "Decimal('NaN')"),
            (pd.Series([1.5, np.nan]), "nan in pandas")]


MISSING_TOLD = ("group 'sick' lists a missing value ({}) among its leaves: a missing value is no leaf; a NULL of the "
                "data follows its column's nulls policy (nulls = \"value\" reads it as its null_value, a leaf to list "
                "as text): leave it out of the tree")


def test_a_nan_na_or_nat_among_a_groups_leaves_is_refused_as_none_is():
    """A NaN among a group's leaves (Python's, numpy's, a float array's, an object array's) was the leaf
    'nan', which a text column spelling it matched; pandas' NA was '<NA>'; pandas' NaT stopped with
    "Unknown format code 'd'". Each is a missing value, refused as None is, naming the group, by
    `Hierarchy.from_tree` and by a spec given as a dict (naming the column's tree). Written out by hand."""
    for leaves, written in _missing_leaves():
        pandas_advice = " (….dropna().unique())" if written.endswith("in pandas") else ""
        told = MISSING_TOLD.format(written) + pandas_advice
        with pytest.raises(HierarchyError) as e:
            Hierarchy.from_tree({"sick": leaves, "well": ["none"]}, "t")
        assert str(e.value) == f"t: {told}", written
        spec = {"k": 2, "others": "keep", "quasi_identifiers": {"d": {"tree": {"sick": leaves, "well": ["none"]}}}}
        with pytest.raises(SpecError) as e:
            sqlclose.anonymize(pa.table({"d": ["flu", "nan"]}), spec)
        assert str(e.value) == f"spec: invalid spec: quasi_identifiers.d.tree: {told}", written


def test_a_toml_nan_among_a_groups_leaves_is_refused(tmp_path):
    """TOML writes a float NaN `nan`: as a tree's leaf it was the text 'nan', and a text column's value
    'nan' was released as one of the group's. Refused, naming the column's tree and the group; nothing
    is written at the output path."""
    pq.write_table(pa.table({"d": ["flu", "nan", "flu", "nan"], "s": list("abab")}), tmp_path / "p.parquet")
    (tmp_path / "s.toml").write_text(
        '[source]\npath = "p.parquet"\n[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\n'
        '[quasi_identifiers]\nd = { tree = { sick = ["flu", nan], well = ["none"] } }\n[sensitive.s]\n'
        'distinct_l = 2\n', encoding="utf-8")
    result = invoke("anonymize", tmp_path / "s.toml", "-q", "--no-progress")
    assert result.exit_code == 2, result.output
    assert f"quasi_identifiers.d.tree: {MISSING_TOLD.format('nan')}" in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_a_missing_value_in_a_row_of_labels_is_refused_as_in_a_data_frames():
    """`Hierarchy.from_rows` of plain rows wrote a NaN as the label 'nan' (a DataFrame's rows were checked,
    a list's not): a leaf 'nan' a text column spelling it matched, a group 'nan'. Refused, naming the row
    and the level, a NaN, numpy's, pandas' NA and NaT alike. Written out by hand."""
    pd = pytest.importorskip("pandas")
    for missing, written in ((float("nan"), "nan"), (np.float64("nan"), "np.float64(nan)"), (pd.NA, "<NA>"),
                             (pd.NaT, "NaT")):
        with pytest.raises(HierarchyError) as e:
            Hierarchy.from_rows([["22", "20s", "*"], [missing, "20s", "*"]], "h")
        assert str(e.value) == (f"h, row 2, level 0: the leaf is a missing value ({written}): a missing value is no "
                                "leaf; a NULL of the data follows its column's nulls policy (nulls = \"value\" reads "
                                "it as its null_value, a leaf to list as text): leave it out of the rows")
        with pytest.raises(HierarchyError) as e:
            Hierarchy.from_rows([("22", "20s", "*"), np.array(["27", missing, "*"], dtype=object)], "h")
        assert str(e.value) == (f"h, row 2, level 1: the label is a missing value ({written}); every leaf needs a "
                                "label at every level (leaf, …, top), as text")


def test_a_missing_value_as_a_trees_key_is_refused_naming_its_table():
    """A NaN or None as a tree's key (`df.groupby(…, dropna=False)`'s NaN group) became the group 'nan' or
    'None'. Refused, naming the table it keys, by `Hierarchy.from_tree` and by a spec given as a dict.
    Written out by hand."""
    told = ("the table {} has a missing value ({}) as a key: a missing value names no group (it was taken as the "
            "text '{}'); give the group a name as text (\"unknown\")")
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({"20s": ["22"], float("nan"): ["27"]}, "t")
    assert str(e.value) == "t: " + told.format("at the tree's top", "nan", "nan")
    with pytest.raises(HierarchyError) as e:
        Hierarchy.from_tree({"all": {"20s": ["22"], None: ["27"]}}, "t")
    assert str(e.value) == "t: " + told.format("of group 'all'", "None", "None")
    spec = {"k": 2, "others": "keep", "quasi_identifiers": {"age": {"tree": {"*": {"20s": ["22"], None: ["27"]}}}}}
    with pytest.raises(SpecError) as e:
        sqlclose.anonymize(pa.table({"age": ["22", "27"]}), spec)
    assert str(e.value) == "spec: invalid spec: quasi_identifiers.age.tree: " + told.format(
        "of group '*'", "None", "None")
