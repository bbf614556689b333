"""The advice a refusal gives, as a test runs it: the refusal's text, and the statement its
"(e.g. …)" holds (shared by the advice-per-source and source-kind tests)."""

from __future__ import annotations

import re

import pytest

import sqlclose


def refused(source, spec) -> str:
    """The text of the refusal (exit 2) ``sqlclose.anonymize(source, spec)`` raises."""
    with pytest.raises(sqlclose.SqlcloseError) as caught:
        sqlclose.anonymize(source, spec)
    assert caught.value.exit_code == 2, caught.value
    return str(caught.value)


def example(said: str) -> str:
    """The statement of the advice: what the bracket opened by "(e.g. " holds, less the words after it."""
    start = said.index("(e.g. ") + 1
    depth = 0
    for end in range(start, len(said)):
        depth += {"(": 1, ")": -1}.get(said[end], 0)
        if depth < 0:
            break
    held = said[start + len("e.g. "):end]
    return re.split(r" for days written |, pandas' missing value|, which ", held)[0]
