"""A TOML spec's floats, read with their text where it matters: a tree's leaves.

Values are matched to a tree's leaves as text (``CAST(column AS VARCHAR)``), and a float leaf
is the text Python (and DuckDB, for a DOUBLE) writes its number with. TOML keeps no text of a
float, so ``1.5e300`` became the leaf ``1.5e+300`` and ``2.50`` the leaf ``2.5``: a text or
DECIMAL column holding the value as written had it refused as no leaf, or matched another value.
The parse marks such floats; a tree's leaf so marked is refused, then every mark is taken off.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from sqlclose.errors import SpecError
from sqlclose.model.text import shown


class _RewrittenFloat(float):
    """A TOML float whose text is not the one its number is written with (``1.5e300``)."""

    toml_text: str


def toml_float(text: str) -> float:
    """``tomllib``'s ``parse_float``: the number, marked when written otherwise than as its text."""
    number = float(text)
    if str(number) == text:
        return number
    marked = _RewrittenFloat(number)
    marked.toml_text = text
    return marked


def refuse_rewritten_leaves(data: dict[str, Any], where: str) -> None:
    """Stop at a tree's leaf written as a float whose text it would not be matched by."""
    for label, tree in _trees(data):
        for groups, leaf in _leaves(tree, ()):
            if isinstance(leaf, _RewrittenFloat):
                number = str(float(leaf))
                raise SpecError(
                    f"{where}: invalid spec: {label}: group {shown(' > '.join(groups))} lists the number "
                    f"{leaf.toml_text}, which would be matched as the text {number}, not as written (values are "
                    "matched to a tree's leaves as text): write the leaf in quotes as the column's values are "
                    f"written, e.g. \"{number}\" (a DOUBLE column holding it) or \"{leaf.toml_text}\" (a text column)")


def plain_floats(value: Any) -> Any:
    """The parsed TOML with every finite float a plain one, the marks of ``toml_float`` taken off. A
    number past what a float holds keeps its mark (it is inf, no value the spec takes), so that its
    refusal quotes it as written, ``1e400``, not as ``inf`` (``typed``)."""
    if isinstance(value, dict):
        return {key: plain_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_floats(item) for item in value]
    return float(value) if isinstance(value, _RewrittenFloat) and math.isfinite(value) else value


def typed(value: Any, other: Callable[[Any], str] = repr) -> str:
    """A value as the spec wrote it: a marked float's TOML text (a list's too), else ``other``'s text
    of it (its repr; a message's bounded ``text.shown``)."""
    if isinstance(value, list) and any(isinstance(item, _RewrittenFloat) for item in value):
        return f"[{', '.join(typed(item, other) for item in value)}]"
    return value.toml_text if isinstance(value, _RewrittenFloat) else other(value)


def _trees(data: dict[str, Any]) -> Iterator[tuple[str, dict]]:
    """Each tree the spec gives, with its key path: a quasi-identifier's, a sensitive column's hierarchy's."""
    for section in ("quasi_identifiers", "sensitive"):
        columns = data.get(section)
        for name, entry in (columns.items() if isinstance(columns, dict) else ()):
            given = entry.get("hierarchy") if section == "sensitive" and isinstance(entry, dict) else entry
            if isinstance(given, dict) and isinstance(given.get("tree"), dict):
                yield f"{section}.{name}" + (".hierarchy" if section == "sensitive" else "") + ".tree", given["tree"]


def _leaves(node: Any, groups: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each leaf of a tree (or a value where a group's list should be), with its groups from the top."""
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _leaves(child, (*groups, key))
    elif isinstance(node, list):
        for item in node:
            yield groups, item
    else:
        yield groups, node
