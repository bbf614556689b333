"""What a Python caller catches: each kind of failure the command tells by its exit code is a type
importable from ``sqlclose`` (README, "Errors in Python"), with the message the command prints, and
the warnings the docs name for a Python caller are importable there too (review of the
ninety-eighth round: ``sqlclose.EnvironmentFailure``, ``sqlclose.EngineError`` and the warnings were
only in ``sqlclose.errors``, which no doc names)."""

from __future__ import annotations

from pathlib import Path

import pytest
from forked_cli import run_cli
from table3_project import table3_project

import sqlclose

# The exit codes as the README's "Exit codes" states them, per kind of failure.
EXIT_CODES = {"InputError": 2, "NoSolutionError": 3, "VerificationError": 4, "EnvironmentFailure": 5, "EngineError": 1}


def test_each_kind_of_failure_and_each_warning_is_importable_from_sqlclose() -> None:
    for name, code in EXIT_CODES.items():
        assert name in sqlclose.__all__
        assert issubclass(getattr(sqlclose, name), sqlclose.SqlcloseError) and getattr(sqlclose, name).exit_code == code
    # the engine's faults, and running out of memory, are engine errors; a value off a hierarchy is bad input
    assert issubclass(sqlclose.EngineFault, sqlclose.EngineError)
    assert issubclass(sqlclose.EngineOutOfMemory, sqlclose.EngineError)
    assert issubclass(sqlclose.NotLeavesError, sqlclose.DataError)
    assert issubclass(sqlclose.NullsError, sqlclose.DataError)
    for name in ("SqlcloseWarning", "LimitWarning", "HierarchyWarning", "WaitWarning"):  # docs/engines.md, spec.md
        assert name in sqlclose.__all__ and issubclass(getattr(sqlclose, name), UserWarning)


def test_the_environments_refusal_is_caught_by_its_type_with_the_commands_words(tmp_path: Path) -> None:
    """A release written below a file (the folder cannot be made): ``EnvironmentFailure`` in Python,
    exit 5 on the command line, the same sentence in both."""
    project = table3_project(tmp_path)
    (tmp_path / "afile").write_text("not a folder\n")
    target = tmp_path / "afile" / "release.parquet"
    with sqlclose.anonymize(None, project / "spec.toml") as release:
        with pytest.raises(sqlclose.EnvironmentFailure) as raised:
            release.write_parquet(target)
    told = run_cli(["anonymize", project / "spec.toml", "--output", target, "--no-progress"])
    assert told.returncode == 5
    assert told.stderr.strip() == f"sqlclose: error: {raised.value}"
    assert not target.exists()
