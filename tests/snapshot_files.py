"""Snapshot files of rendered SQL: a change detector, not evidence of correctness (each query's rows
are checked against an oracle elsewhere). ``SQLCLOSE_UPDATE_SNAPSHOTS=1`` writes a changed snapshot
and still fails its test, so that a run that writes one never passes: review the diff, run again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def assert_snapshot(path: Path, text: str) -> None:
    """``text`` equals the snapshot at ``path``; when updating, a missing or changed one is written first."""
    same = path.is_file() and path.read_text(encoding="utf-8") == text
    if not same and os.environ.get("SQLCLOSE_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        pytest.fail(f"wrote {path}: review the diff, then run again without SQLCLOSE_UPDATE_SNAPSHOTS")
    assert path.is_file(), f"no snapshot {path}: run with SQLCLOSE_UPDATE_SNAPSHOTS=1 and review it"
    assert same, f"{path} differs from the rendered SQL: if the change is meant, SQLCLOSE_UPDATE_SNAPSHOTS=1"
