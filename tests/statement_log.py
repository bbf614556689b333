"""The SQL an engine runs, recorded for a test that asserts which statements a job made."""

from __future__ import annotations

import pytest


def recorded(monkeypatch: pytest.MonkeyPatch, engine_class: type, hook: str) -> list[str]:
    """Every statement ``engine_class`` passes to its hook ``hook`` (``_execute``, ``_run``, …; each
    takes ``sql, params``) from now on, in order, in the list returned; the hook still runs it."""
    return recorded_each(monkeypatch, engine_class, (hook,))


def recorded_each(monkeypatch: pytest.MonkeyPatch, engine_class: type, hooks: tuple[str, ...]) -> list[str]:
    """``recorded`` over several hooks, into one list in the order the statements ran."""
    statements: list[str] = []
    for hook in hooks:
        original = getattr(engine_class, hook)

        def logged(self, sql, params=None, _original=original):
            statements.append(sql)
            return _original(self, sql, params)

        monkeypatch.setattr(engine_class, hook, logged)
    return statements
