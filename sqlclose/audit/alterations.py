"""Mauger et al.'s alterations (2023, Definitions 3–9) re-derived from a released file, for
``check --against``.

A metric weighs every edge of every QI hierarchy; a record costs, per QI, the weights on the path
from its value up to the label it is released as; the alteration is the table's cost over the cost
of every QI at its top, × 100. What the check needs of the file:

- ``distortion``, ``total`` and a custom metric of one weight per level step weigh a step by its
  levels alone: the records at each level of each column decide them (a full-domain release: its
  node and rows; a GAA release: the file's labels, where each tells its level);
- ``ncp``, ``llm``, ``nllm``, ``wllm`` and ``wnllm`` count the leaves below a label (nl): the
  records under each label, and the column's hierarchy (a file or a tree), decide them; for a mask,
  bands or dates rule with its domain declared, what each label covers of it, read from the label
  (``rule_covers``).

A suppressed record counts at the top of every column (the paper's tables keep every record). The
formulas are written again from the paper here, as ``claims.share_claims`` writes the shares: the
check shares no judging code with what it checks (``utility/information_loss.py``).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from sqlclose.audit.figures import LabelFigures, ReleaseFigures
from sqlclose.audit.rule_covers import RuleDomain, readings
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.text import agreeing, name_cut, name_shown

LEAF_COUNTING = ("ncp", "llm", "nllm", "wllm", "wnllm")  # a step's weight counts the leaves it adds
SEVEN = ("distortion", "ncp", "total", "llm", "nllm", "wllm", "wnllm")
_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ColumnRecords:
    """One QI column of a release as the alterations read it. ``at_level``: records per level
    (suppressed ones at the top), None where the labels do not tell each one's level; ``under``:
    (leaves below the label, records) per label (suppressed ones under the top), None where the
    hierarchy is not known; ``why_not``: why ``under`` is None, for the note."""

    levels: int  # the paper's h: the hierarchy's levels, leaves at 0
    at_level: Mapping[int, int] | None
    under: Sequence[tuple[float, int]] | None = None
    leaves: float | None = None  # nl(top): the hierarchy's leaves (a rule's: what its top covers)
    why_not: str = ""
    leaf: float = 1.0  # nl(leaf): one, or what a rule's value covers (none for bands of real numbers)
    # Bands whose labels leave open whether they count whole numbers or lengths: this column read the
    # first way (``reading``), and the others (``rule_covers.readings``).
    reading: str = ""
    others: tuple[ColumnRecords, ...] = ()


def counts_leaves(doc: Mapping) -> bool:
    """Whether the report's leaf-counting alterations need the file's rows per label: one of them
    is given, or null without a reason withheld (then the file must make it undefined)."""
    utility = doc.get("utility") if isinstance(doc.get("utility"), Mapping) else {}
    given = utility.get("alteration") if isinstance(utility.get("alteration"), Mapping) else {}
    withheld = utility.get("withheld") if isinstance(utility.get("withheld"), Mapping) else {}
    return any(not (given.get(name) is None and name in withheld) for name in LEAF_COUNTING)


def release_records(doc: Mapping, figures: ReleaseFigures,
                    hierarchies: Mapping[str, Hierarchy | RuleDomain]) -> dict[str, ColumnRecords]:
    """Per QI column, its records as the alterations read them: a full-domain release's at its
    node's level (its suppressed rows at the top), a GAA release's at the levels its labels tell;
    under each label where the hierarchy is known and the rows per label were counted. Empty where
    the report's levels are out of shape (told by the level claims)."""
    node = doc.get("generalization") if isinstance(doc.get("generalization"), Mapping) else {}
    gaa = doc.get("algorithm") == "gaa"
    suppressed = 0 if gaa else doc.get("suppressed_rows")
    if not _count(suppressed) or not node:
        return {}
    out = {}
    for name, g in node.items():
        levels, level = (g.get("levels"), None if gaa else g.get("level")) if isinstance(g, Mapping) else (None, None)
        if not _count(levels) or levels < 1 or (not gaa and not (_count(level) and level < levels)):
            return {}
        found = (figures.labels or {}).get(name)
        if gaa:
            at_level = _told_levels(found, figures.rows)
        else:
            at_level = Counter({level: figures.rows})
            at_level[levels - 1] += suppressed
        known = hierarchies.get(name)
        if isinstance(known, RuleDomain):
            out[name] = _rule_records(name, found, known, levels, at_level, suppressed)
            continue
        under, why = _under(name, found, known, level, suppressed)
        out[name] = ColumnRecords(levels, at_level, under, None if known is None else len(known.leaves), why)
    return out


def _rule_records(name: str, found: LabelFigures | None, rule: RuleDomain, levels: int,
                  at_level: Mapping[int, int] | None, suppressed: int) -> ColumnRecords:
    """A rule's column: (what the label covers, records) per label, NULL left at its leaf covering
    what a value covers, the suppressed records under the top."""
    if found is None or found.rows_by_label is None:
        return ColumnRecords(levels, at_level, why_not="the file's rows per label were not counted")
    labelled = dict(found.rows_by_label)
    nulls = labelled.pop(None, 0)
    made = readings(rule, labelled, name)
    if isinstance(made, str):
        return ColumnRecords(levels, at_level, why_not=made)
    each = [ColumnRecords(levels, at_level, [*((c.of[label], n) for label, n in labelled.items()), (c.leaf, nulls),
                                             (c.top, suppressed)], c.top, leaf=c.leaf, reading=reading)
            for reading, c in made]
    return replace(each[0], others=tuple(each[1:]))


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _told_levels(found: LabelFigures | None, rows: int) -> dict[int, int] | None:
    """A GAA column's records per level, where each label tells its level (None where one could be
    of two, or of none, or the level labels are not known)."""
    if found is None or found.rows_at is None:
        return None
    if any(must != could for must, could in found.rows_at.values()):
        return None
    at = {level: must for level, (must, _) in found.rows_at.items()}
    return at if sum(at.values()) == rows else None


def _under(name: str, found: LabelFigures | None, h: Hierarchy | None, level: int | None,
           suppressed: int) -> tuple[list[tuple[int, int]] | None, str]:
    """(leaves below the label, records) per label the file holds, and the suppressed records under
    the top; or None and why not. ``level``: a full-domain release's, None for GAA's."""
    if h is None:
        return None, (f"the leaves below each label of column {name_shown(name)} are not known to the check (its "
                      "hierarchy is a rule given without --spec or without its domain declared, or a tree "
                      "given without --spec)")
    if found is None or found.rows_by_label is None:
        return None, "the file's rows per label were not counted"
    labelled = dict(found.rows_by_label)
    nulls = labelled.pop(None, 0)  # nulls = "value" leaves a value at its leaf NULL in the file
    if nulls and level not in (None, 0):
        return None, f"column {name_shown(name)} holds NULL above its leaves, where its hierarchy's labels stand"
    below: dict[str, set[int]] = {}
    for lv in range(h.levels) if level is None else (level,):
        sizes = np.bincount(h.level_codes[:, lv])
        for code, label in enumerate(h.labels(lv)):
            below.setdefault(label, set()).add(int(sizes[code]))
    if any(len(below.get(label, ())) != 1 for label in labelled):
        return None, (f"some labels of column {name_shown(name)} are not labels of its hierarchy"
                      + ("" if level is not None else ", or name other leaves at another level"))
    under = [(next(iter(below[label])), n) for label, n in labelled.items()]
    return under + [(1, nulls), (len(h.leaves), suppressed)], ""  # a NULL left at its leaf: one leaf


def alteration_claims(utility: Mapping, columns: Mapping[str, ColumnRecords], full_domain: bool,
                      level_weights: Mapping[str, Sequence[float]] | None = None) -> tuple[list[str], list[str]]:
    """The report's ``utility.alteration`` and ``mean_alteration`` against what ``columns`` make:
    (mismatches, notes on the figures that could not be re-derived). ``full_domain``: the records'
    levels are the report's node's (held to the file's labels where the hierarchy is known);
    ``level_weights``: a custom metric's weights per level step, per column (the spec's), where the
    report has one."""
    given = utility.get("alteration")
    if not isinstance(given, Mapping) or not columns:
        return [], []
    withheld = utility.get("withheld") if isinstance(utility.get("withheld"), Mapping) else {}
    problems: list[str] = []
    unknown: dict[str, str] = {}
    maker = "its node and the file make" if full_domain else "the file's labels make"
    read, told, aside = _reading(columns, given, withheld)
    for name in [*SEVEN, *(["custom"] if "custom" in given else [])]:
        said = given.get(name)
        if said is None and name in withheld:
            continue  # withholding tells less than the figure: it needs no proof
        made, why = _derived(name, read if name in LEAF_COUNTING else columns, level_weights)
        if why:
            unknown[name] = why
        elif not _agrees(said, made):
            problems.append(_mismatch(f"utility.alteration.{name_cut(name)}", said, made, maker)
                            + (aside if name in LEAF_COUNTING else ""))
    problems += _mean_claims(utility, given, withheld)
    notes = [f"utility.alteration.{', '.join(names)} {agreeing(len(names), 'was', 'were')} not re-derived "
             f"from the file: {why}" for why, names in _grouped(unknown).items()]
    return problems, notes + told


def _reading(columns: Mapping[str, ColumnRecords], given: Mapping,
             withheld: Mapping) -> tuple[Mapping[str, ColumnRecords], list[str], str]:
    """The columns as the leaf-counting figures are re-derived from: where bands leave open whether
    they count whole numbers or lengths, the reading every figure the report gives agrees with, else
    the one most agree with; the note that says which was taken, or what a mismatch adds."""
    open_ = [c for c, col in columns.items() if col.others]
    said = {name: given.get(name) for name in LEAF_COUNTING if not (given.get(name) is None and name in withheld)}
    if not open_ or not said or any(col.under is None for col in columns.values()):  # else a note tells why
        return columns, [], ""
    choices = [dict(zip(open_, pick)) for pick in itertools.product(*([col, *col.others]
                                                                      for col in (columns[c] for c in open_)))]
    agree = [sum(_agrees(v, _derived(name, {**columns, **pick}, None)[0]) for name, v in said.items())
             for pick in choices]
    best = max(range(len(choices)), key=lambda i: (agree[i], -i))
    pick = choices[best]
    how = ", ".join(f"the bands of column {name_shown(c)} {pick[c].reading}" for c in open_)
    if agree[best] < len(said):
        return {**columns, **pick}, [], f" (reading {how}, the reading most of its figures agree with: no reading " \
            "makes them all)"
    return {**columns, **pick}, [f"utility.alteration.{', '.join(said)} were re-derived reading {how} "
                                 "(the reading the report's figures agree with; whether bands count whole numbers "
                                 "or lengths follows from the input column's type, which the file's labels do not "
                                 "tell)"], ""


def _derived(name: str, columns: Mapping[str, ColumnRecords],
             level_weights: Mapping[str, Sequence[float]] | None) -> tuple[float | None, str]:
    """(the alteration ``columns`` make, in percent, None where even the top costs nothing; why it
    cannot be made, or "")."""
    if name in LEAF_COUNTING:
        # A column whose hierarchy is unknown first: the others' rows per label are then not counted.
        missing = sorted((col.leaves is not None, col.why_not) for col in columns.values() if col.under is None)
        if missing:
            return None, missing[0][1]
        return _alteration([(_leaf_costs(name, col, columns), col.under, col.leaves) for col in columns.values()])
    if name == "custom" and level_weights is None:
        return None, "its weights are the spec's: pass the release's spec (--spec) to check it"
    if name == "custom" and any(not _listed(level_weights.get(c)) for c in columns):
        return None, "its weights are given per edge, not per level step"
    unplaced = [c for c, col in columns.items() if col.at_level is None]
    if unplaced:
        return None, (f"the labels of column {name_shown(unplaced[0])} do not tell each record's level (a label of two "
                      "levels, or a rule's labels without --spec)")
    steps = {c: _step_costs(name, col.levels, columns, (level_weights or {}).get(c)) for c, col in columns.items()}
    return _alteration([(steps[c], sorted(col.at_level.items()), col.levels - 1) for c, col in columns.items()])


def _alteration(per_column: list) -> tuple[float | None, str]:
    """Σ records × cost over Σ records × the top's cost, × 100 (Definition 7), summed exactly. Each
    entry: (cost of a place, [(place, records)], the top's place)."""
    spent, full = [], []
    for cost, records, top in per_column:
        spent += [n * cost(place) for place, n in records if n]
        full.append(sum(n for _, n in records) * cost(top))
    whole = math.fsum(full)
    return (math.fsum(spent) / whole * 100.0 if whole > 0 else None), ""


def _step_costs(name: str, levels: int, columns: Mapping[str, ColumnRecords], weights: Sequence[float] | None):
    """What a leaf costs up to each level, for a metric whose steps are weighed by their levels."""
    h = levels
    if name == "custom":
        steps = [float(w) for w in weights or []]
        return lambda level: math.fsum(steps[:level])
    if name == "total":
        return lambda level: level / (h - 1) if h > 1 else 0.0
    # distortion: the step into level p weighs 1/(h − p), normalized over the path, × w1
    norm = math.fsum(1.0 / (h - p) for p in range(1, h))
    w1 = _w1(levels, columns)
    return lambda level: w1 * math.fsum(1.0 / (h - p) for p in range(1, level + 1)) / norm if norm else 0.0


def _leaf_costs(name: str, col: ColumnRecords, columns: Mapping[str, ColumnRecords]):
    """What a leaf costs up to a label covering ``nl`` leaves: (nl − nl(leaf)) × the metric's
    multiplier, over the hierarchy's leaves where the metric is normalized (ncp, nllm, wnllm)."""
    multiplier = {"ncp": 1.0, "llm": _w2(col.levels, columns), "nllm": _w2(col.levels, columns),
                  "wllm": _w1(col.levels, columns), "wnllm": _w1(col.levels, columns)}[name]
    scale = float(col.leaves or 1) if name in ("ncp", "nllm", "wnllm") else 1.0
    return lambda nl: (nl - col.leaf) * multiplier / scale


def _w1(levels: int, columns: Mapping[str, ColumnRecords]) -> float:
    """Definition 8's wid weight: 1 − (h_j − 1)^m / Σ_i (h_i − 1)^m, m the number of QIs."""
    m = len(columns)
    total = sum((c.levels - 1) ** m for c in columns.values())
    return 1.0 - (levels - 1) ** m / total if total > 0 else 1.0


def _w2(levels: int, columns: Mapping[str, ColumnRecords]) -> float:
    """Definition 8's h_max / h_j."""
    return max(c.levels for c in columns.values()) / levels


def _listed(weights: object) -> bool:
    return isinstance(weights, (list, tuple))


def _agrees(said: object, made: float | None) -> bool:
    if not isinstance(said, (int, float)) or isinstance(said, bool):
        return said is None and made is None
    return made is not None and math.isclose(said, made, rel_tol=_TOLERANCE, abs_tol=_TOLERANCE)


def _told(value: object) -> str:
    """A figure as a message gives it: a number to 10 digits, else null or the value as written."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.10g}"
    return "null" if value is None else repr(value)


def _mismatch(field: str, said: object, made: float | None, maker: str) -> str:
    shown = "null (even the top costs nothing)" if made is None else _told(made)
    verb = "says" if isinstance(said, (int, float)) and not isinstance(said, bool) else "gives"
    return f"{field}: the report {verb} {_told(said)}, {maker} {shown}"


def _mean_claims(utility: Mapping, given: Mapping, withheld: Mapping) -> list[str]:
    """Definition 9's mean over the seven that are defined, from the report's own values (each held
    to the file above); null where the report withholds it."""
    values = [v for name in SEVEN if isinstance(v := given.get(name), (int, float)) and not isinstance(v, bool)]
    mean = None if "mean_alteration" in withheld or not values else math.fsum(values) / len(values)
    said = utility.get("mean_alteration")
    if said is None and "mean_alteration" in withheld:
        return []
    if _agrees(said, mean):
        return []
    return [f"utility.mean_alteration: the report says {_told(said)}, its alterations' mean is {_told(mean)}"]


def _grouped(unknown: Mapping[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, why in unknown.items():
        out.setdefault(why, []).append(name)
    return out
