"""What a run would do, from a prepared problem: the plan `sqlclose explain` and `--dry-run` print."""

from __future__ import annotations

import math

from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.lattice import Node
from sqlclose.model.spec import QuasiIdentifier, Spec
from sqlclose.prepare.problem import Problem
from sqlclose.prepare.release_query import counted_columns, release_query
from sqlclose.privacy.distances import idle_level_warnings
from sqlclose.sql import queries as q
from sqlclose.utility.information_loss import LEAF_COUNTING


def describe_problem(problem: Problem, spec: Spec, node: Node | None, examples: int = 3,
                     values: bool = False) -> dict:
    """The source, hierarchies with example generalizations, the search, lattice, models and the SQL.
    ``values``: give examples of a hierarchy whose leaves are the data's own values too (a rule's,
    or a file's or tree's not declared ``domain = "leaves"``), and the SQL (``_sql``); else those are
    withheld, as a job's log of ``--dry-run`` or ``explain`` would hold a person's ZIP code and age. ``node``: the one
    the release query is shown at; None for GAA, which has no lattice (nor a release query
    before its run: the query joins the classes' labels the run chooses)."""
    qis = []
    for qi in problem.qis:
        h = qi.hierarchy
        withheld = None if values else _data_values(h, qi.name)
        picks = [] if withheld else _spread(len(h.rows), examples)
        # A rule's leaves are the data's distinct values: their number tells whether a suppressed
        # row's value is another row's (two inputs giving one release gave two counts here).
        leaves = None if withheld and h.rule is not None else len(h.leaves)
        qis.append({"name": qi.name, "levels": h.levels, "origin": h.origin, "leaves": leaves,
                    "examples": [list(h.rows[i]) for i in picks], "examples_withheld": withheld,
                    "domain": _domain(h, spec.quasi_identifiers[qi.name])})
    models = {"k": spec.k, "suppression": spec.suppression,
              "sensitive": {name: {"models": s.models, **_thresholds(s)} for name, s in spec.sensitive.items()}}
    return {
        "source": problem.label,
        "rows": problem.input_rows,
        "rows_anonymized": problem.rows,
        "quasi_identifiers": qis,
        "search": _search(spec),
        "lattice_size": None if node is None else math.prod(qi.levels for qi in problem.qis),
        "requirements": models,
        "released_columns": problem.released,
        # what the release's report would warn of the hierarchies alone, told before the run
        "warnings": idle_level_warnings(problem.sas),
        "release_node": None if node is None else {qi.name: int(level) for qi, level in zip(problem.qis, node)},
        "sql": _sql(problem, node) if values else {**dict.fromkeys(SQL_KEYS), "withheld": SQL_WITHHELD},
    }


SQL_KEYS = ("histogram_scan", "histogram_scan_groups", "release")
SQL_WITHHELD = ("its constants count the data's values, a suppressed person's among them (the codes under a "
                "label, the sensitive values, the narrowest integer type holding them) and whether the scan groups "
                "follows the data's distinct combinations; `explain --show-values` prints it")


def _sql(problem: Problem, node: Node | None) -> dict:
    """The scan's and the release's SQL, for the operator's screen alone (``values``): two tables
    giving one release byte for byte, one person suppressed, printed ``"q0" // 5`` and ``// 6`` (the
    ZIP codes under the fullest prefix, the suppressed one's own or another's), ``% 100`` and
    ``% 101`` (the distinct salaries), a scan grouped or not (review of the ninety-third round)."""
    return {"histogram_scan": histogram_scan_sql(problem), "histogram_scan_groups": problem.base_grouped,
            "release": None if node is None else release_sql(problem, node), "withheld": None}


def _search(spec: Spec) -> dict:
    """The algorithm and the settings it runs with (those that apply to it)."""
    search = spec.search
    if search.algorithm == "gaa":
        return {"algorithm": "gaa", "strategy": search.strategy_name, "scope": search.scope_name,
                "metric": search.metric_name}
    return {"algorithm": "incognito", "metric": search.metric_name, "explore": search.exploring}


def histogram_scan_sql(problem: Problem) -> str:
    """The one read of the source's rows before the release, as the run executed it
    (``Problem.base_scan``): the base histogram grouped and counted, or, where the run keeps the
    rows as they stand, ungrouped, as packed keys where it stores them so, in the base's order."""
    assert problem.base_scan is not None, "a prepared problem keeps its scan"
    return problem.base_scan.sql(dialect=problem.engine.dialect, pretty=True)


def release_sql(problem: Problem, node: Node) -> str:
    """The release query at ``node``, as a run writes it (no suppression shown: the suppressed
    classes are known only after the search)."""
    query = release_query(problem, node, None, q.Params(), counted_columns(problem, node))
    return query.sql(dialect=problem.engine.dialect, pretty=True)


def _domain(h: Hierarchy, s: QuasiIdentifier) -> str:
    """What NCP-like metrics count for this hierarchy, and so whether a report may publish them;
    for a mask, whether its levels follow the spec or the codes' length."""
    if h.rule is None:
        return ("NCP counts its leaves, declared the column's domain" if not h.counts_data
                else f"its leaves may be the data's values (domain = \"leaves\" not declared): a report withholds "
                     f"{', '.join(LEAF_COUNTING)}")
    said = ("NCP counts the declared domain" if not h.counts_data
            else f"no domain declared: a report withholds {', '.join(LEAF_COUNTING)}")
    if h.rule == "mask" and s.length is None:
        said += ("; its levels follow the codes' length: declare length = N, or a column whose codes are "
                 "all suppressed tells that they existed")
    return said


def _data_values(h: Hierarchy, name: str) -> str | None:
    """Why a hierarchy's examples are not shown (None: its leaves are a declared code list)."""
    if h.rule is None and not h.counts_data:
        return None
    whose = (f"the {h.rule} rule's leaves are" if h.rule
             else "its leaves may be")  # a file or tree without domain = "leaves": it may list the data's values
    return f"{whose} the column's values in the data; `sqlclose hierarchy show SPEC.toml:{name}` lists them"


def _spread(n: int, count: int) -> list[int]:
    """``count`` indices spread over 0..n-1 (first, middle, last, …)."""
    if n <= count:
        return list(range(n))
    return sorted({round(i * (n - 1) / (count - 1)) for i in range(count)}) if count > 1 else [0]


def _thresholds(s) -> dict:
    out = {}
    if s.t is not None:
        out.update(t=s.t, distance=s.distance)
    for key in ("distinct_l", "entropy_l", "p"):
        if getattr(s, key) is not None:
            out[key] = getattr(s, key)
    if s.recursive is not None:
        out["recursive"] = {"c": s.recursive.c, "l": s.recursive.l}
    return out
