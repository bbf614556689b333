"""What a released file alone says about its utility (Mauger et al. 2023, Definition 9 and
section 4.1), for ``sqlclose check``.

Computable from the file: per sensitive column, the paper's l-diversity value (least
exp(entropy) of a class) and L1 t-closeness value (largest Σ|p_class − p_reference|, not halved;
the reference is the file itself unless ``--reference`` gives the input); per quasi-identifier,
the share of values at the root (the hierarchy's top label: a rule's as its spec gives it, a mask's
``*****`` given its declared length; unknown for a mask without one) and, when the leaves are known (a
file or tree hierarchy from the spec, or the reference's values of the column), the share of
values generalized (not a leaf). The alterations count the suppressed records too (at the top),
which the file alone does not hold: they are not computed here; ``check --against REPORT``
re-derives the report's from the file and its suppressed rows (``audit/alterations.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.model.arrays import arrow_table, leaf_labels
from sqlclose.model.hierarchy import TOP_LABEL, Hierarchy
from sqlclose.sql import queries as q


def value_shares(engine: Engine, relation: exp.Expression, qi: Sequence[str], hierarchies: dict[str, Hierarchy],
                 reference: exp.Expression | None, tops: Mapping[str, str | None] | None = None) -> dict[str, dict]:
    """Per QI column: % of values at the root and, when the leaves are known, % generalized. The
    root is the top label of the column's hierarchy, else its ``tops`` entry (a rule's top from the
    spec; None: not known, and neither is the share), else ``*``."""
    out = {}
    tops = tops or {}
    for name in qi:
        h = hierarchies.get(name)
        top = h.labels(h.levels - 1)[0] if h is not None else tops.get(name, TOP_LABEL)
        leaves = _leaves(engine, h, name, reference)
        params = q.Params()
        query = q.value_shares(relation, name, params, top, leaves[0] if leaves else None)
        counts = engine.fetch_row(query, params.values)
        if leaves and leaves[1]:
            engine.unregister(leaves[1])
        rows, at_root, leaf = (int(counts.get(key) or 0) for key in ("rows", "at_root", "leaves"))
        out[name] = {"root_percent": 100.0 * at_root / rows if rows and top is not None else None,
                     "generalized_percent": 100.0 * (rows - leaf) / rows if rows and leaves else None}
    return out


def _leaves(engine: Engine, h: Hierarchy | None, name: str, reference: exp.Expression | None
            ) -> tuple[exp.Expression, str | None] | None:
    """A relation of the column's leaves as text (column ``value``), and its registered name if any."""
    if h is not None:
        registered = engine.temp_name("check_leaves")
        engine.register(registered, arrow_table({"value": leaf_labels(h, 0)}))
        return q.table(registered), registered
    if reference is not None:
        return q.text_values(reference, name), None
    return None


def table_shares(per_qi: dict[str, dict]) -> dict[str, float | None]:
    """p_gen and p_root over all (record, QI) values: the mean of the columns' (every column has
    the same rows); None when a column's share is unknown."""
    out = {}
    for key in ("generalized_percent", "root_percent"):
        values = [entry[key] for entry in per_qi.values()]
        out[key] = sum(values) / len(values) if values and None not in values else None
    return out
