"""A release report's claims against what its file alone decides (``sqlclose check --against``).

Each function takes the report (its JSON document) and figures measured over the file
(``figures.release_figures``, the audit of ``check``) and returns one message per claim the file
contradicts, naming the report's field, its value and the file's (a figure: the file's labels
are counted, never listed, since a file that is not the release holds raw values). Claims the
file cannot decide are left alone (docs/verification.md, "Re-verifying a release against its report").
``read_report`` reads the report for them (and for the sign-off page), refusing a file that is not one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from sqlclose.audit.figures import ReleaseFigures
from sqlclose.errors import EnvironmentFailure, InputError
from sqlclose.model.own_files import unreadable_report
from sqlclose.model.spec import ALL_DISTANCES, GAA_STRATEGIES
from sqlclose.model.text import name_cut, name_shown

TOLERANCE = 1e-9  # relative: the report's values and the re-check's may differ in the last float bits
T_TOLERANCE = 1e-12  # the project's rule for comparing a distance with t (docs/emd.md)


# What every reader of a report (``check --against``, the sign-off page) takes from it: a JSON file
# without one of these is not a release report, and is told so by name (bad input, not a crash).
REPORT_FIELDS = ("generalization", "privacy.k", "privacy.min_class_size", "privacy.sensitive", "input.rows",
                 "output.path", "output.rows", "output.columns", "suppressed_rows", "classes", "utility")
_SECTIONS = {"generalization": dict, "privacy": dict, "privacy.sensitive": dict, "input": dict, "output": dict,
             "utility": dict, "output.columns": list}
# The counts the claims compute with (rows released = input − dropped − suppressed, the smallest class
# against k): a null or a text there is no count, told by name rather than failing in the arithmetic.
_COUNTS = ("privacy.k", "privacy.min_class_size", "suppressed_rows", "input.rows", "input.dropped_null_rows")
# Per column, the figures the claims compute with (a level against the hierarchy's levels; the
# hierarchy file a report names, read with its delimiter; the type a column is read back with):
# refused given as null or left out by every reader, as the counts are (a TypeError, exit 1).
_COMPUTED = ("generalization.*.levels", "hierarchies.*.path", "hierarchies.*.delimiter", "output.column_types.*",
             "output.path")


def read_report(path: Path, needs: Sequence[str] = REPORT_FIELDS, prints: Sequence[str] = ()) -> dict:
    """A release report's JSON document, refused (``InputError``, naming the file and every field it
    lacks) when it cannot be read or is not a report: a list, an empty object, a failed run's
    ``--json`` document, a report with a section cut out, a figure of another kind than sqlclose
    writes, a section given as null where the schema allows none (``_MAY_BE_NULL``) or a required one
    left out. An optional section given as null is returned left out, as the schema means it.
    ``needs`` may name a figure of every column (``utility.sensitive.*.l1_closeness``): one left out
    of a column's entry is named as lacking. ``prints``: the figures (``_FIGURES`` patterns) a reader
    prints as numbers, refused as null or left out too (the claims judge a null; a page would have
    nothing to print); in ``node`` and ``lattice.levels``, ``*`` is each column of ``generalization``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:  # a release (Parquet, DuckDB) given for its report, most often
        raise InputError(f"{path} is not a release report: it is not text (a release itself?); a release's report "
                         "is the JSON file written beside it, e.g. release.parquet.report.json") from None
    except PermissionError:  # the machine's refusal (exit 5), not a file that is no report (exit 2)
        raise EnvironmentFailure(unreadable_report(path, "the release's claims, which it holds")) from None
    except OSError as e:
        raise InputError(f"cannot read the report {path}: {e.strerror or e}") from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise InputError(f"{path} is not a release report: it is not JSON ({e}); a release's report is the JSON "
                         "file written beside it, e.g. release.parquet.report.json") from None
    if not isinstance(doc, dict):
        kind = {list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(type(doc), "a number")
        raise InputError(f"{path} is not a release report: it holds {kind}, not the JSON object sqlclose writes "
                         "beside a release")
    # A section missing whole is named alone (``privacy``), not as each field of it the reader takes.
    missing = [field if _holds(doc, field.split(".")[0]) else field.split(".")[0]
               for field in [*needs, *_required_sections(doc)] if "*" not in field and not _holds(doc, field)]
    missing = list(dict.fromkeys(missing + [field for pattern in needs if "*" in pattern
                                            for field in _left_out(doc, pattern)]))
    if missing:
        failed = " (it is the --json document of a failed run)" if {"error", "exit_code"} <= doc.keys() else ""
        raise InputError(f"{path} is not a release report{failed}: it lacks {', '.join(missing)} (or holds "
                         f"{'it' if len(missing) == 1 else 'them'} in another form)")
    not_counts = [f"{field} is {json.dumps(value)}, not a whole number" for field in _COUNTS
                  if (field in needs or field == "input.dropped_null_rows") and not _is_count(value := _at(doc, field))]
    not_counts += [f"{section}.{name_cut(name)} is {json.dumps(entry)}, not an object" for section in ("generalization",
                   "privacy.sensitive") if section in needs for name, entry in _at(doc, section).items()
                   if not isinstance(entry, dict)]
    if not not_counts:  # the sections are objects: their figures can be looked at
        not_counts = _negative_counts(doc) + _mistyped_figures(doc) + _unnamed_distances(doc)
        not_counts += _null_sections(doc) + _sections_of_another_algorithm(doc)
        not_counts += _absent_figures(doc, _COMPUTED, "{kind} the claims compute with")
        not_counts += _absent_figures(doc, prints, "a figure printed as {kind}")
    if not_counts:
        not_counts = list(dict.fromkeys(not_counts))  # a figure both computed with and printed is told once
        raise InputError(f"{path} is not a release report as sqlclose writes it: {'; '.join(not_counts)} (give the "
                         "report written beside the release)")
    return _without_nulls_read_as_absent(doc)


def _absent_figures(doc: dict, patterns: Sequence[str], read_as: str) -> list[str]:
    """Each figure ``patterns`` name given as null or left out of an object given to hold it, told
    with its kind and, left out, what the reader does with it (``read_as``: "a figure printed as {kind}")."""
    absent = [f"{field} is null, not {_KINDS[_FIGURES[pattern]][0]}" for pattern in patterns
              for field, value in _given(doc, pattern) if value is None]
    return absent + [f"{field} is left out, {read_as.format(kind=_KINDS[_FIGURES[pattern]][0])}"
                     for pattern in patterns for field in _left_out(doc, pattern)]


# Every other figure a reader takes, by kind: given (not null, not left out) it must be of that kind,
# or the claims and the page would fail on it (a text compared with a number, true read as 1). A
# figure given as null or left out is the claims' to judge (a mismatch where the file decides it).
_KINDS = {
    "count": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "number": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)),
    "level": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "string": ("a string", lambda v: isinstance(v, str)),
    "flag": ("true or false", lambda v: isinstance(v, bool)),
    "object": ("an object", lambda v: isinstance(v, dict)),
    "strings": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)),
    # A distance no model measures is no figure to judge t by (review rv28: a KeyError, exit 1).
    "distance": (f"one of {', '.join(ALL_DISTANCES)}", lambda v: v in ALL_DISTANCES),
    # The claims follow the algorithm (one level per column, or several): another name is no report of ours.
    "algorithm": ("incognito or gaa", lambda v: v in ("incognito", "gaa")),
    # GAA's settings, which its page prints: a name no run takes is no report of ours.
    "strategy": (f"one of {', '.join(GAA_STRATEGIES)}", lambda v: v in GAA_STRATEGIES),
    "scope": ("table or class", lambda v: v in ("table", "class")),
    # Where the page reads the release when none is given: an empty name is the working folder.
    "path": ("a path", lambda v: isinstance(v, str) and v.strip() != ""),
}
L_AND_P_MODELS = ("distinct_l", "entropy_l", "recursive", "p")  # a sensitive column's l and p models: {…, reached}
_FIGURES: dict[str, str] = {
    "input.source": "string", "algorithm": "algorithm", "node": "object", "node.*": "level", "node_given": "flag",
    "lattice": "object", "lattice.levels": "object", "lattice.levels.*": "count", "lattice.size": "count",
    "lattice.complete": "flag", "lattice.searched": "flag", "lattice.seconds": "number",
    "gaa": "object", "gaa.metric": "string", "gaa.strategy": "strategy", "gaa.scope": "scope", "gaa.seconds": "number",
    "generalization.*.level": "level", "generalization.*.levels": "count", "generalization.*.labels": "strings",
    "generalization.*.label_count": "count", "generalization.*.at_top": "flag",
    "generalization.*.classes_per_level": "object", "generalization.*.classes_per_level.*": "count",
    "output.column_roles": "object", "output.column_roles.*": "string",
    "hierarchies": "object", "hierarchies.*": "object", "hierarchies.*.path": "string",
    "hierarchies.*.delimiter": "string", "hierarchies.*.sha256": "string",
    "classes": "count", "privacy.suppression_limit": "number",
    "privacy.sensitive.*.distance": "distance", "privacy.sensitive.*.t": "number", "privacy.sensitive.*.emd": "flag",
    "privacy.sensitive.*.max_emd": "number", "privacy.sensitive.*.max_distance": "number",
    "privacy.sensitive.*.withheld": "string", "privacy.sensitive.*.null_value": "string",
    **{f"privacy.sensitive.*.{model}": "object" for model in L_AND_P_MODELS},
    **{f"privacy.sensitive.*.{model}.{key}": "number" for model in L_AND_P_MODELS
       for key in ("l", "c", "p", "reached")},
    "t_against_release": "object", "t_against_release.*": "number",
    "utility.discernibility": "count", "utility.average_class_size": "number", "utility.metric": "string",
    "utility.alteration": "object", "utility.alteration.*": "number", "utility.mean_alteration": "number",
    "utility.withheld": "object", "utility.withheld.*": "string", "utility.generalized_percent": "number",
    "utility.root_percent": "number", "utility.sensitive": "object", "utility.sensitive.*": "object",
    "utility.sensitive.*.l_diversity": "number", "utility.sensitive.*.l1_closeness": "number",
    "output.path": "path", "output.format": "string", "output.table": "string", "output.rows": "count",
    "output.sha256": "string", "output.content_digest": "string", "output.columns": "strings",
    "output.column_types": "object", "output.column_types.*": "string", "output.partition_by": "strings",
    "warnings": "strings", "verified": "flag",
}


# The report's sections (the "object" figures above) as its schema makes them (a test keeps the two
# equal): those it allows as null, and those it requires. A reader takes a section as an object: one
# given as null where the schema allows none, or a required one left out, is no report sqlclose writes
# and is refused by name, as a figure of another kind is (a null section is nothing the claims judge).
_MAY_BE_NULL = frozenset({"node", "lattice", "gaa", "generalization.*.classes_per_level", "output.column_types",
                          *(f"privacy.sensitive.*.{model}" for model in L_AND_P_MODELS)})
_REQUIRED_SECTIONS = ("node", "lattice", "lattice.levels", "t_against_release", "output.column_roles")
# The required sections the schema allows as null stand null for one algorithm only ("null for GAA"),
# and GAA's own section is null for the other: per section, the algorithm whose report holds it.
_SECTION_OF = {"node": "full-domain", "lattice": "full-domain", "gaa": "gaa"}
# The sections keyed by quasi-identifier: their ``*`` is each column of ``generalization``.
_BY_COLUMN = frozenset({"node", "lattice.levels"})


def _required_sections(doc: dict) -> list[str]:
    """Each required section left out of its parent given (``lattice.levels`` of a lattice given,
    none of a lattice given as null)."""
    return [field for pattern in _REQUIRED_SECTIONS for field in _left_out(doc, pattern)]


def _null_sections(doc: dict) -> list[str]:
    """Each section given as null where the schema allows none (a ``t_against_release``, a
    ``hierarchies``, a column's ``utility.sensitive`` entry): the readers would fail on it."""
    return [f"{field} is null, not an object" for pattern, kind in _FIGURES.items()
            if kind == "object" and pattern not in _MAY_BE_NULL for field, value in _given(doc, pattern)
            if value is None]


def _sections_of_another_algorithm(doc: dict) -> list[str]:
    """A section its algorithm's report holds, given as null or left out: a full-domain (Incognito)
    report's node and lattice (null only in a GAA report's), a GAA report's ``gaa``. The claims and
    the page would read another algorithm's release into it (a node given as null passed as matching)."""
    algorithm = doc.get("algorithm", "incognito")
    kind = "gaa" if algorithm == "gaa" else "full-domain"
    return [f"{section} is {'null' if section in doc else 'left out'}, though the report's algorithm is "
            f"{json.dumps(algorithm)}: a {kind} release's report holds it as an object"
            for section, of in _SECTION_OF.items() if of == kind and doc.get(section) is None]  # a text: mistyped


def _left_out(doc: dict, pattern: str) -> list[str]:
    """Each field ``pattern`` names that is left out of an object given to hold it (``lattice.size``
    of a lattice given; none of a lattice given as null, nor a ``*``, but in a section keyed by
    quasi-identifier: ``node.zip`` of a node given, ``zip`` a column of ``generalization``)."""
    parent, _, name = pattern.rpartition(".")
    holders = [(f"{field}.", value) for field, value in _given(doc, parent)] if parent else [("", doc)]
    columns = list(doc.get("generalization") or {}) if parent in _BY_COLUMN else []
    names = columns if name == "*" else [name]
    return [f"{prefix}{key}" for prefix, value in holders if isinstance(value, dict)
            for key in names if key not in value]


def _without_nulls_read_as_absent(doc: dict) -> dict:
    """``doc`` with each optional section given as null (a model entry ``p: null``, a ``gaa: null``)
    left out, as the report's model reads it (null is its absence: the model not asked)."""
    for pattern in _MAY_BE_NULL.difference(_REQUIRED_SECTIONS):
        parent, _, name = pattern.rpartition(".")
        holders = [value for _, value in _given(doc, parent)] if parent else [doc]
        for holder in holders:
            if isinstance(holder, dict) and name in holder and holder[name] is None:
                del holder[name]
    return doc


def _mistyped_figures(doc: dict) -> list[str]:
    """Each figure given as another kind than the one sqlclose writes, named with its value."""
    wrong = []
    for pattern, kind in _FIGURES.items():
        described, fits = _KINDS[kind]
        wrong += [f"{field} is {json.dumps(value)}, not {described}" for field, value in _given(doc, pattern)
                  if value is not None and not fits(value)]
    return wrong


def _given(node: Any, pattern: str, prefix: str = "") -> list[tuple[str, Any]]:
    """(field, value) for each field ``pattern`` names in ``node`` (``*``: every key of an object);
    a field left out, or under a value that is no object, is not given."""
    head, _, rest = pattern.partition(".")
    if not isinstance(node, dict):
        return []
    keys = list(node) if head == "*" else [head] if head in node else []
    found = []
    for key in keys:
        field = f"{prefix}{key}"
        found += _given(node[key], rest, f"{field}.") if rest else [(field, node[key])]
    return found


def _negative_counts(doc: dict) -> list[str]:
    """The row counts are never negative, and no more rows are dropped than were read: a report
    claiming "5 rows read, −4 dropped" would otherwise add up to 9 released."""
    wrong = [f"{field} is {value}, a negative count" for field in _COUNTS
             if isinstance(value := _at(doc, field), int) and value < 0]
    rows, dropped = doc["input"].get("rows"), doc["input"].get("dropped_null_rows", 0)
    if not wrong and isinstance(rows, int) and isinstance(dropped, int) and dropped > rows:
        wrong.append(f"input.dropped_null_rows is {dropped}, more than the {rows} rows read (input.rows)")
    return wrong


def _unnamed_distances(doc: dict) -> list[str]:
    """A t model's entry names its distance: without it, no distance can be measured to judge its t."""
    return [f"privacy.sensitive.{name_cut(name)}.distance is {'null' if 'distance' in entry else 'left out'}, "
            f"though the entry holds a t model (t = {json.dumps(entry['t'])}): it names the distance t is judged with"
            for name, entry in doc["privacy"]["sensitive"].items()
            if entry.get("t") is not None and entry.get("distance") is None]


_ABSENT = object()  # an optional field left out: input.dropped_null_rows (0)


def _at(doc: dict, field: str) -> Any:
    node: Any = doc
    for part in field.split("."):
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _is_count(value: Any) -> bool:
    return value is _ABSENT or (isinstance(value, int) and not isinstance(value, bool))


def _holds(doc: dict, field: str) -> bool:
    node: Any = doc
    parts = field.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
        kind = _SECTIONS.get(".".join(parts[:i + 1]))
        if kind is not None and not isinstance(node, kind):
            return False
    return True


def same(claimed: Any, found: Any) -> bool:
    if claimed is None or found is None:
        return claimed == found
    return abs(float(claimed) - float(found)) <= TOLERANCE * max(1.0, abs(float(claimed)))


def as_json(value: Any) -> str:
    """A report's value as its JSON writes it (null, true, "text", ["a"]), not as Python prints it."""
    return json.dumps(value, ensure_ascii=False, default=str)


def differs(field: str, claimed: Any, found: Any, what: str = "the file gives") -> list[str]:
    return [] if same(claimed, found) else [f"{field}: the report says {as_json(claimed)}, {what} {as_json(found)}"]


def read_back_order(claimed: Sequence[str], partitions: Sequence[str]) -> list[str]:
    """The report's columns in the order a Parquet folder partitioned by ``partitions`` reads them
    back: the other columns in the release's order, then its Hive partition columns, outermost
    first. Any other order of the columns, or another set of them, still differs."""
    moved = [c for c in partitions if c in claimed]
    return [c for c in claimed if c not in moved] + moved


def columns_differ(found: Sequence[str], claimed: Sequence[str]) -> str:
    """Which columns differ (names only: never a row's values)."""
    added = [c for c in found if c not in claimed]
    missing = [c for c in claimed if c not in found]
    parts = ([f"the file has {', '.join(map(name_shown, added))}, which the report does not list"] if added else []) + \
            ([f"the file lacks {', '.join(map(name_shown, missing))}"] if missing else [])
    repeated = sorted({c for c in claimed if list(claimed).count(c) != list(found).count(c)})
    if repeated:
        parts.append(f"the report names {', '.join(map(name_shown, repeated))} a number of times the file does not")
    if not parts:
        parts = ["the same names in another order"]
    return (f"output.columns: the report says {as_json(list(claimed))}, the file's columns are "
            f"{as_json(list(found))} ({'; '.join(parts)})")


def node_claims(doc: dict, outside: Mapping[str, Mapping[int, int]]) -> list[str]:
    """The node against the generalization section and the lattice, and each generalized level
    against the labels the file holds (``outside``: per QI whose hierarchy is known, per level, the
    file's distinct labels that are not labels of that level)."""
    problems: list[str] = []
    # A full-domain report's node and lattice levels hold every column: one left out is a mismatch,
    # as one given as null is (it was passed over, and a report without it said to match).
    node = doc["node"] if isinstance(doc.get("node"), dict) else None
    lattice = (doc.get("lattice") or {}).get("levels") if isinstance(doc.get("lattice"), dict) else None
    # ... and hold no other column ({"zz": 1} in the lattice kept its size, the product of its levels).
    for where, names in (("lattice.levels", lattice), ("node", node)):
        if extra := [name for name in names or {} if name not in doc["generalization"]]:
            problems.append(f"{where}: the report names {', '.join(map(name_shown, extra))}, which is no column of "
                            "its generalization")
    for name, g in doc["generalization"].items():
        level, levels = g.get("level"), g.get("levels")
        if level is None and doc.get("algorithm", "incognito") != "gaa":  # not a hole the checks fall through
            problems.append(f"generalization.{name_cut(name)}.level: the report gives none, and a full-domain release "
                            f"(algorithm {doc.get('algorithm', 'incognito')!r}) has one level per column")
        if level is None:  # GAA: classes at several levels
            continue
        if node is not None and node.get(name, _ABSENT) != level:
            said = f"says {as_json(node[name])}" if name in node else "leaves it out"
            problems.append(f"node.{name_cut(name)}: the report {said}, its "
                            f"generalization.{name_cut(name)}.level says {level}")
        if isinstance(lattice, dict) and lattice.get(name, _ABSENT) != levels:
            said = f"says {as_json(lattice[name])}" if name in lattice else "is left out"
            problems.append(f"generalization.{name_cut(name)}.levels: the report says {levels}, its "
                            f"lattice.levels.{name_cut(name)} {said}")
        if not 0 <= level < levels:
            problems.append(f"generalization.{name_cut(name)}.level: the report says {level}, outside the hierarchy's "
                            f"levels 0..{levels - 1}")
            continue
        if g.get("at_top") != (level == levels - 1):  # null or left out too: the node decides it
            said = f"says {as_json(g['at_top'])}" if g.get("at_top") is not None else "gives none"
            problems.append(f"generalization.{name_cut(name)}.at_top: the report {said}, level {level} of "
                            f"{levels} is {'' if level == levels - 1 else 'not '}the top")
        per_level = outside.get(name)
        if per_level is None or level not in per_level or per_level[level] == 0:
            continue
        fits = [lv for lv, n in sorted(per_level.items()) if n == 0]
        where = (f"the file's labels are those of level {fits[0]}" if fits else
                 "the file's labels are not those of one level")
        problems.append(f"generalization.{name_cut(name)}.level (node.{name_cut(name)}): the report says {level}, "
                        f"{per_level[level]} of the file's labels are not labels of that level ({where})")
    return problems


def lattice_claims(doc: dict, hierarchy_levels: Mapping[str, int]) -> list[str]:
    """A full-domain report's lattice: its size, the product of its columns' levels, and each
    column's levels against its hierarchy's (``hierarchy_levels``, where known; a GAA report's are
    held to them by ``several_level_claims``)."""
    lattice = doc.get("lattice") if isinstance(doc.get("lattice"), dict) else None
    if lattice is None or doc.get("algorithm") == "gaa":
        return []
    problems = []
    levels = lattice.get("levels") if isinstance(lattice.get("levels"), dict) else {}
    # A level given as null is told against generalization (node_claims): no product is made of it.
    given = levels and all(isinstance(n, int) for n in levels.values())
    if given and lattice.get("size") != math.prod(levels.values()):
        problems.append(f"lattice.size: the report says {as_json(lattice.get('size'))}, its lattice.levels make "
                        f"{math.prod(levels.values())} nodes")
    for name, known in hierarchy_levels.items():
        said = (doc["generalization"].get(name) or {}).get("levels")
        if said is not None and said != known:
            problems.append(f"generalization.{name_cut(name)}.levels: the report says {said}, the column's "
                            f"hierarchy has {known}")
    return problems


def several_level_claims(doc: dict, figures: ReleaseFigures, hierarchy_levels: Mapping[str, int]) -> list[str]:
    """A release whose classes sit at several levels of a column (GAA): per column, its classes per
    level against the report's classes and its ``levels`` and ``at_top``; against the hierarchy's
    levels (``hierarchy_levels``, where known) and, given its labels, the file's classes per level:
    at a level, at least the classes whose label is of it alone, at most those whose label is of it."""
    if doc.get("algorithm") != "gaa":
        return []
    problems: list[str] = []
    for name, g in doc["generalization"].items():
        levels, field = g.get("levels"), f"generalization.{name_cut(name)}"
        given = g.get("classes_per_level") or {}
        if unread := _unread_counts(given):
            problems.append(f"{field}.classes_per_level: the report gives {', '.join(unread)}: a whole number of "
                            "classes per level is what the file's labels are held to")
            continue
        per_level = {int(lv): n for lv, n in given.items()}
        if sum(per_level.values()) != doc["classes"]:
            problems.append(f"{field}.classes_per_level: the report's counts add up to {sum(per_level.values())} "
                            f"classes, its classes say {doc['classes']}")
        if name in hierarchy_levels and levels != hierarchy_levels[name]:
            problems.append(f"{field}.levels: the report says {levels}, the column's hierarchy has "
                            f"{hierarchy_levels[name]}")
        if any(not 0 <= lv < levels for lv in per_level):
            problems.append(f"{field}.classes_per_level: the report names level(s) outside the hierarchy's "
                            f"levels 0..{levels - 1}")
        top = bool(per_level) and set(per_level) == {levels - 1}
        if g.get("at_top") != top:
            problems.append(f"{field}.at_top: the report says {as_json(g.get('at_top'))}, its classes_per_level put "
                            f"{'every' if top else 'not every'} class at the top")
        found = (figures.labels or {}).get(name)
        if found is None or found.classes_at is None:
            continue
        if found.classes_at_no_level:
            problems.append(f"{field}: {found.classes_at_no_level} of the file's classes hold a label of no level of "
                            "the column's hierarchy")
        for lv in sorted(set(per_level) | set(found.classes_at)):
            must, could = found.classes_at.get(lv, (0, 0))
            if not must <= per_level.get(lv, 0) <= could:
                held = f"{must}" if must == could else f"{must} to {could}"
                problems.append(f"{field}.classes_per_level.{lv}: the report says {per_level.get(lv, 0)}, the file's "
                                f"labels put {held} class(es) at that level")
    return problems


def _unread_counts(per_level: Mapping[str, Any]) -> list[str]:
    """A GAA column's classes per level that say nothing: a key that names no level, a null count."""
    return [f"{json.dumps(lv)} (no level)" if not lv.isdigit() else f"{json.dumps(lv)}: null"
            for lv, n in per_level.items() if not lv.isdigit() or n is None]


def label_claims(doc: dict, among: Mapping[str, int], figures: ReleaseFigures, shown: int) -> list[str]:
    """Each column's label count, and its labels: the file's first ``shown``; for a column of ``among``
    (a warehouse's level-0 labels, listed in its text order), each one of the file's values (``among``:
    how many of the file's values they are)."""
    problems: list[str] = []
    for name, g in doc["generalization"].items():
        found = (figures.labels or {}).get(name)
        if found is None:
            continue
        problems += differs(f"generalization.{name_cut(name)}.label_count", g.get("label_count"), found.count,
                            "the file holds")
        if name in among:
            if among[name] != len(g["labels"]):
                problems.append(f"generalization.{name_cut(name)}.labels: the report says "
                                f"{as_json(g['labels'])}, the file holds {among[name]} of them as values of its "
                                "column (its own labels not shown: a file that is not the release may hold raw "
                                "values)")
        elif list(g.get("labels") or []) != found.first[:shown]:
            # The file's own labels are not shown: a file that is not the release (the raw table
            # given by mistake) holds raw values, and the message lands in job logs.
            problems.append(f"generalization.{name_cut(name)}.labels: the report says "
                            f"{as_json(g.get('labels'))}, the file's first {min(shown, found.count)} of its "
                            f"{found.count} distinct label(s) differ from them (not shown: a file that is not the "
                            "release may hold raw values)")
    return problems


def row_claims(doc: dict, figures: ReleaseFigures) -> list[str]:
    """Rows released = input rows − rows dropped for a NULL − suppressed rows; suppression within
    its limit; classes and the smallest class; discernibility and the average class size."""
    problems = differs("output.rows", doc["output"]["rows"], figures.rows, "the file holds")
    entered = doc["input"]["rows"] - doc["input"].get("dropped_null_rows", 0)
    suppressed = doc["suppressed_rows"]
    if entered - suppressed != figures.rows:
        problems.append(f"input.rows − input.dropped_null_rows − suppressed_rows: the report says "
                        f"{doc['input']['rows']} − {doc['input'].get('dropped_null_rows', 0)} − {suppressed} = "
                        f"{entered - suppressed} rows released, the file holds {figures.rows}")
    if suppressed and doc.get("algorithm") == "gaa":  # GAA merges classes until each passes: it suppresses nothing
        problems.append(f"suppressed_rows: the report says {suppressed}, but GAA suppresses no row")
    limit = doc["privacy"].get("suppression_limit")
    if suppressed < 0 or (limit is not None and suppressed > math.floor(Fraction(repr(float(limit))) * entered)):
        problems.append(f"suppressed_rows: the report says {suppressed}, beyond its own suppression_limit {limit} "
                        f"of {entered} rows")
    problems += differs("classes", doc["classes"], figures.classes, "the file holds")
    problems += differs("privacy.min_class_size", doc["privacy"]["min_class_size"], figures.min_class_size)
    if doc["privacy"]["min_class_size"] < doc["privacy"]["k"]:
        problems.append(f"privacy.min_class_size: the report says {doc['privacy']['min_class_size']}, below its "
                        f"own k {doc['privacy']['k']}")
    # Left out is told as null is: the file decides both, so neither is ever withheld.
    utility = doc.get("utility") or {}
    expected = figures.squared_sizes + suppressed * entered
    problems += differs("utility.discernibility", utility.get("discernibility"), expected,
                        f"Σ class size² over the file + suppressed_rows × {entered} rows gives")
    if figures.classes:  # a file with classes decides it: null is no figure, not a withheld one
        problems += differs("utility.average_class_size", utility.get("average_class_size"),
                            figures.rows / figures.classes, "the file's rows per class are")
    return problems


_T_KEYS = {"distance", "emd", "max_emd", "max_distance", "t"}  # what a t model's entry holds (release/report.py)


# Each model's requirement in the report, and how its reached value meets it (the criteria's own tests:
# a class passes entropy l-diversity at exp(H) >= l, within the search's tolerance).
_REQUIRED = {"distinct_l": ("l", "at least"), "entropy_l": ("l", "at least"), "p": ("p", "at least"),
             "recursive": ("c", "below")}
_RELATIVE_TOLERANCE = 1e-9


def requirement_claims(doc: dict, spec_models: Mapping[str, Any] | None = None) -> list[str]:
    """Per sensitive column, each l-diversity or p model's reached value against the requirement the
    report gives beside it (a report claiming l = 4 over a release reaching 3 was checked for its
    reached value alone, and its page said "verified"; review h4 of the eighty-fifth round); with
    ``spec_models`` (the spec given, --spec), each requirement against the spec's."""
    problems: list[str] = []
    for name, entry in doc["privacy"]["sensitive"].items():
        for key, (parameter, how) in _REQUIRED.items():
            model = entry.get(key)
            if not isinstance(model, dict):
                continue
            required, reached = model.get(parameter), model.get("reached")
            field = f"privacy.sensitive.{name_cut(name)}.{key}"
            if isinstance(required, (int, float)) and isinstance(reached, (int, float)) and not (
                    reached >= required * (1 - _RELATIVE_TOLERANCE) if how == "at least" else reached < required):
                problems.append(f"{field}: the report says it reached {reached}, not {how} its own "
                                f"{parameter} = {required}")
            problems += _against_spec(field, key, model, (spec_models or {}).get(name))
    return problems


_METRICS = ("equal", "hierarchical", "variational")  # at most 1, a triangle, a domain the file does not change


def suppressed_t_claims(doc: dict) -> list[str]:
    """With rows suppressed, the file still bounds the largest distance from the input: the input's
    distribution is the file's mixed with the suppressed rows' (share f), at most f from it under a
    metric of at most 1, so some class is at least ``t_against_release`` − f from the input. A t
    below that the file contradicts (a report's t lowered to 0.05 over a class 0.108 from the file's
    own distribution, one row of 61 suppressed, was checked as met; review h4 of the 85th round)."""
    entered = doc["input"]["rows"] - doc["input"].get("dropped_null_rows", 0)
    suppressed = doc["suppressed_rows"]
    if not suppressed or entered <= 0:
        return []
    share = suppressed / entered
    problems = []
    for name, entry in doc["privacy"]["sensitive"].items():
        own = (doc.get("t_against_release") or {}).get(name)
        t = entry.get("t")
        if isinstance(own, (int, float)) and isinstance(t, (int, float)) and entry.get("distance") in _METRICS \
                and own - share > t + T_TOLERANCE:
            problems.append(f"privacy.sensitive.{name_cut(name)}.t: the report says {t}, but a class of the file is "
                            f"{own:.4f} from the file's own distribution (t_against_release.{name_cut(name)}), "
                            f"so at least {own - share:.4f} from the input's, {suppressed} of {entered} rows being "
                            "suppressed")
    return problems


def sensitive_columns_claims(doc: dict, spec: Any) -> list[str]:
    """With the spec given (--spec): the report's sensitive columns are the spec's, each judged by
    the spec's models (a column the spec does not name stopped the check as an internal error)."""
    held, wanted = doc["privacy"]["sensitive"], spec.sensitive
    return [f"privacy.sensitive: the spec given (--spec) asks for column {name_shown(name)}, the report holds none"
            for name in wanted if name not in held] + \
        [f"privacy.sensitive: the report holds column {name_shown(name)}, which the spec given (--spec) does not name "
         "as sensitive" for name in held if name not in wanted]


def spec_claims(doc: dict, spec: Any) -> list[str]:
    """With the spec given (--spec): the report's requirements are the spec's — k, the suppression
    limit, the sensitive columns, and each one's t and distance, and every model the spec asks for
    (the l and p parameters are compared in ``requirement_claims``). A report that lowered k or t,
    raised the limit, or left a model out, over a file that meets what it says, passed before (the
    eighty-seventh round's review)."""
    privacy, asked = doc["privacy"], getattr(spec, "privacy", None)
    if asked is None:
        return []
    problems = differs("privacy.k", privacy.get("k"), asked.k, "the spec given (--spec) asks for")
    limit = privacy.get("suppression_limit")  # null or left out too: every report states its limit
    if not (isinstance(limit, (int, float)) and math.isclose(limit, asked.suppression)):
        said = f"says {as_json(limit)}" if limit is not None else "gives none"
        problems.append(f"privacy.suppression_limit: the report {said}, the spec given (--spec) "
                        f"{asked.suppression!r}")
    held, wanted = privacy["sensitive"], spec.sensitive
    for name, model in wanted.items():
        entry = held.get(name)
        if not isinstance(entry, dict):
            continue
        field = f"privacy.sensitive.{name_cut(name)}"
        if model.t is not None:
            if entry.get("t") != model.t:
                problems.append(f"{field}.t: the report says {as_json(entry.get('t'))}, the spec given (--spec) "
                                f"{as_json(model.t)}")
            if entry.get("distance") != model.distance:
                problems.append(f"{field}.distance: the report says {as_json(entry.get('distance'))}, the spec given "
                                f"(--spec) {as_json(model.distance)}")
        problems += [f"{field}.{key}: the spec given (--spec) asks for it, the report holds none"
                     for key in _REQUIRED if getattr(model, key) is not None and not isinstance(entry.get(key), dict)]
    return problems


def _against_spec(field: str, key: str, model: dict, spec: Any) -> list[str]:
    """The report's parameters of a model against the spec's (none given: nothing to compare)."""
    if spec is None:
        return []
    given = getattr(spec, key, None)
    if given is None:
        return [f"{field}: the report holds a {key} model the spec given (--spec) does not ask for"]
    wanted = {"c": given.c, "l": given.l} if key == "recursive" else {"l" if key.endswith("_l") else key: given}
    return [f"{field}.{k}: the report says {as_json(model.get(k))}, the spec given (--spec) {as_json(v)}"
            for k, v in wanted.items() if model.get(k) != v]


def distance_claims(doc: dict, measured: Mapping[str, dict], unmeasured: Collection[str] = ()) -> list[str]:
    """Per sensitive column with a t model: the largest distance within the report's own t, and,
    with nothing suppressed (the input's distribution is then the file's), equal to the largest
    distance measured over the file (``measured``: the audit's per sensitive column; not for the
    columns ``unmeasured``, whose model was not known)."""
    problems: list[str] = []
    suppressed = doc["suppressed_rows"]
    for name, entry in doc["privacy"]["sensitive"].items():
        if entry.get("t") is None:
            if _T_KEYS & entry.keys():  # a t model's entry, its requirement blanked: nothing to judge against
                problems.append(f"privacy.sensitive.{name_cut(name)}.t: the report gives none for the t model it holds "
                                f"({', '.join(sorted(_T_KEYS & entry.keys()))})")
            continue
        problems += _unexplained_distance(name, entry, suppressed)
        for key in ("max_emd", "max_distance"):
            if entry.get(key) is None:
                continue
            field = f"privacy.sensitive.{name_cut(name)}.{key}"
            if entry[key] > entry["t"] + T_TOLERANCE:
                problems.append(f"{field}: the report says {entry[key]}, above its own t = {entry['t']} "
                                f"(privacy.sensitive.{name_cut(name)}.t)")
            if not suppressed and name not in unmeasured:
                distances = (measured.get(name) or {}).get("distances", {})
                found = (distances.get(entry.get("distance")) or {}).get("reached")
                problems += differs(field, entry[key], found,
                                    f"nothing was suppressed, and the largest {entry.get('distance')} distance of a "
                                    "class from the file's distribution is")
    return problems


def _unexplained_distance(name: str, entry: dict, suppressed: int) -> list[str]:
    """A t model's largest distance left out (null or absent) without the reason a report gives: it is
    withheld only with rows suppressed (``withheld``, docs/what-a-release-reveals.md); with none
    the file decides it."""
    if entry.get("max_emd") is not None or entry.get("max_distance") is not None:
        return []
    field = f"privacy.sensitive.{name_cut(name)}.{'max_distance' if entry.get('emd') is False else 'max_emd'}"
    if not suppressed:
        return [f"{field}: the report gives none, and nothing was suppressed: the file's largest distance is the "
                "figure, never withheld"]
    if not entry.get("withheld"):
        return [f"{field}: the report gives none and no reason (privacy.sensitive.{name_cut(name)}.withheld)"]
    return []


def utility_claims(doc: dict, measured: Mapping[str, dict]) -> list[str]:
    """Per sensitive column, Mauger et al.'s l-diversity (least exp(entropy) of a class) and L1
    closeness (largest Σ|p_class − p_release|) values: both are over the released classes and the
    released table's distribution, so the file decides them (``measured``: the audit's
    ``utility.sensitive``, per column of the privacy section). A column's entry left out, or the
    whole section, leaves out both figures: a mismatch, as either left out alone is."""
    problems: list[str] = []
    given = (doc.get("utility") or {}).get("sensitive") or {}
    for name, found in measured.items():  # a column of the utility section the privacy section lacks is not audited
        for key in ("l_diversity", "l1_closeness"):  # null only where the file has no class (measured null too)
            problems += differs(f"utility.sensitive.{name_cut(name)}.{key}", (given.get(name) or {}).get(key),
                                found.get(key))
    return problems


def share_claims(doc: dict) -> list[str]:
    """A full-domain report's shares of (record, QI) values generalized and at the root: every value
    of a column above level 0 is generalized, at its top at the root, and a suppressed record counts
    at the root, and as generalized where the root lies above level 0 (Mauger et al.'s p_gen and
    p_root, as ``utility.full_domain.value_percents`` makes them, written again here: the check
    shares no judging code with what it checks), so the node and the row counts decide them. A GAA
    report's depend on each class's level, which the labels do not always tell: not checked."""
    utility, node = doc.get("utility") or {}, doc.get("generalization") or {}
    if doc.get("algorithm") == "gaa" or not node:
        return []
    released, suppressed = doc["output"]["rows"], doc["suppressed_rows"]
    if not isinstance(released, int):  # null: told by row_claims, as the file decides it
        return []
    values = (released + suppressed) * len(node)
    levels = [(g.get("level"), g.get("levels")) for g in node.values()]
    # A suppressed record counts at the root of every column, and as generalized where the root
    # lies above level 0 (a hierarchy of one level's root is its leaves).
    counted = {"generalized_percent": ([isinstance(lv, int) and lv > 0 for lv, _ in levels],
                                       [isinstance(n, int) and n > 1 for _, n in levels]),
               "root_percent": ([lv == (n - 1 if isinstance(n, int) else None) for lv, n in levels],
                                [True] * len(levels))}
    problems: list[str] = []
    for key, (kept, dropped) in counted.items():
        if not values:
            continue
        said = utility.get(key)
        share = 100.0 * (released * sum(kept) + suppressed * sum(dropped)) / values
        if not isinstance(said, (int, float)) or isinstance(said, bool):  # null or left out: decided, not given
            problems.append(f"utility.{key}: the report gives {json.dumps(said) if key in utility else 'none'}, "
                            f"its node and rows make {share:g}")
        elif not math.isclose(said, share, rel_tol=1e-9, abs_tol=1e-9):
            problems.append(f"utility.{key}: the report says {said:g}, its node and rows make {share:g}")
    return problems


def gaa_share_claims(doc: dict, figures: ReleaseFigures) -> list[str]:
    """A GAA report's shares of (record, QI) values generalized and at the root (Mauger et al.'s
    p_gen and p_root), from the file's labels: a row's value is generalized where its label is of no
    level but 0, at the root where it is of the top level. A label of two levels (one naming the same
    leaves at both) could stand at either, so the file bounds the share, between what the labels of
    one level alone make and what every label of the level could; a column whose level labels are
    not given (a rule's without the spec) may hold any share of its rows. GAA suppresses nothing."""
    node = doc.get("generalization") or {}
    rows = figures.rows
    tops = [g.get("levels") for g in node.values()]
    if doc.get("algorithm") != "gaa" or not rows or not node or not all(isinstance(t, int) and t > 0 for t in tops):
        return []  # levels out of shape are told by several_level_claims
    found = [(figures.labels or {}).get(name) for name in node]
    if any(f is not None and f.classes_at_no_level for f in found):
        return []  # a label of no level: told by several_level_claims
    unknown = (0, rows)  # (rows surely, rows possibly)
    zero = [f.rows_at.get(0, (0, 0)) if f is not None and f.rows_at is not None else unknown for f in found]
    top = [f.rows_at.get(t - 1, (0, 0)) if f is not None and f.rows_at is not None else unknown
           for f, t in zip(found, tops)]
    made = {"generalized_percent": (sum(rows - could for _, could in zero), sum(rows - must for must, _ in zero)),
            "root_percent": (sum(must for must, _ in top), sum(could for _, could in top))}
    values, utility, problems = rows * len(node), doc.get("utility") or {}, []
    for key, (low, high) in made.items():
        lo, hi = 100.0 * low / values, 100.0 * high / values
        said = utility.get(key)
        text = f"{lo:g}" if low == high else f"between {lo:g} and {hi:g}"
        if not isinstance(said, (int, float)) or isinstance(said, bool):
            problems.append(f"utility.{key}: the report gives {json.dumps(said) if key in utility else 'none'}, the "
                            f"file's labels make {text}")
        elif not (lo - 1e-9 * max(1.0, lo) <= said <= hi + 1e-9 * max(1.0, hi)):
            problems.append(f"utility.{key}: the report says {said:g}, the file's labels make {text}")
    return problems

