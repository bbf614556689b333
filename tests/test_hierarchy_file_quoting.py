"""A hierarchy file's quoted fields are kept as written: a value with spaces around it, or the
empty text, can be a leaf (every field was stripped, so neither could, while the job asked for
"a line for each"). The oracle: a plain GROUP BY over the written release, whose classes are
counted by hand from the table built below (4 rows of each sex value).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from own_connection import rows as _rows
from table3_project import invoke

SPEC = ('[source]\npath = "p.csv"\n{source}[output]\npath = "out/r.parquet"\n[privacy]\nk = 2\n'
        '[quasi_identifiers]\nage = {{ bands = [10, 20] }}\nsex = {{ file = "sex.csv" }}\n'
        '[sensitive.diagnosis]\ndistinct_l = 2\n')



def _project(folder: Path, sexes: list[str], hierarchy: str, source: str = "") -> Path:
    """12 rows, the sexes in turn (as the CSV writes them), diagnoses flu and ulcer in turn."""
    rows = ["age,sex,diagnosis"] + [f"{20 + i},{sexes[i % 3]},{['flu', 'ulcer'][i % 2]}" for i in range(12)]
    (folder / "p.csv").write_text("\n".join(rows) + "\n")
    (folder / "sex.csv").write_text(hierarchy)
    spec = folder / "spec.toml"
    spec.write_text(SPEC.format(source=source))
    return spec


def _sexes(folder: Path) -> list[tuple[str, int]]:
    release = folder / "out" / "r.parquet"
    return _rows(f"SELECT sex, count(*) FROM '{release}' GROUP BY ALL ORDER BY ALL")


def test_a_value_with_a_trailing_space_is_a_leaf_when_quoted(tmp_path):
    """'F ' (a data-entry system's trailing space) beside 'F': the line '"F ";F;*' was read as 'F'
    and refused as 'F' appearing twice. Now it is the leaf 'F ': at sex=0 the release keeps the
    two values apart (4 rows each), at sex=1 both are 'F' (8 rows)."""
    spec = _project(tmp_path, ["F ", "M", "F"], 'F;F;*\n"F ";F;*\nM;M;*\n')
    assert invoke("anonymize", spec, "--no-progress", "--node", "age=3,sex=0").exit_code == 0
    assert _sexes(tmp_path) == [("F", 4), ("F ", 4), ("M", 4)]
    result = invoke("anonymize", spec, "--no-progress", "--node", "age=3,sex=1", "--overwrite")
    assert result.exit_code == 0, result.output
    assert _sexes(tmp_path) == [("F", 8), ("M", 4)]


def test_the_empty_text_is_a_leaf_when_quoted(tmp_path):
    """With `[source] nulls = ["NA"]` a quoted empty field is the empty text, a value of the column:
    the line '"";*' was refused ("empty label at level 0 for leaf ''"). Now it is that leaf."""
    spec = _project(tmp_path, ['""', "M", "F"], 'F;*\nM;*\n"";*\n', source='nulls = ["NA"]\n')
    result = invoke("anonymize", spec, "--no-progress", "--node", "age=3,sex=0")
    assert result.exit_code == 0, result.output
    assert _sexes(tmp_path) == [("", 4), ("F", 4), ("M", 4)]


QUOTES_COUNTED = ('1 of them has spaces around or is the empty text, which a hierarchy file lists quoted (" F";… '
                  'or "";…): an unquoted label loses its spaces')


@pytest.mark.parametrize("sexes, hierarchy, told", [
    (["F ", "M", "F"], "F;F;*\nM;M;*\n", QUOTES_COUNTED),
    (['""', "M", "F"], "F;*\nM;*\n", QUOTES_COUNTED),
    (["F ", "M", "F"], "F;F;*\nF ;F;*\nM;M;*\n", "line 2: leaf 'F' appears twice (also line 1): spaces around an "
                                                 "unquoted label are dropped; to list the value with its spaces, "
                                                 'quote it on line 2: "F "'),
], ids=["missing-spaced", "missing-empty", "unquoted-spaced-line"])
def test_what_a_file_needs_for_such_a_value_is_told(tmp_path, sexes, hierarchy, told):
    """"add a line for each to the hierarchy (leaf;…;*)" was all the job said, and the line it asked
    for, written unquoted, was read stripped and refused as a duplicate: the messages now say to
    quote it (a value a hierarchy lacks counted, since the ninety-first round; `hierarchy validate
    --show-values` names it quoted as the file needs it). Nothing is written."""
    spec = _project(tmp_path, sexes, hierarchy, source='nulls = ["NA"]\n')
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    assert told in " ".join(result.output.split()), result.output
    assert not (tmp_path / "out").exists()
    if told == QUOTES_COUNTED:
        named = invoke("hierarchy", "validate", f"{spec}:sex", "--show-values")
        assert named.exit_code == 2, named.output
        example = '"F "' if "F " in sexes else '""'
        assert f"in a hierarchy file, quote a value with spaces around it or the empty text: {example};…" \
            in named.output, named.output
