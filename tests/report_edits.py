"""Editing a report's JSON by a dotted path, for tests of what its readers refuse."""

from __future__ import annotations

from typing import Any


def set_field(doc: dict, path: str, value: Any) -> None:
    """Set ``path`` (``utility.sensitive.s``) in ``doc`` to ``value``; ``KeyError`` leaves it out."""
    *parents, last = path.split(".")
    for part in parents:
        doc = doc[part]
    if value is KeyError:
        del doc[last]
    else:
        doc[last] = value
