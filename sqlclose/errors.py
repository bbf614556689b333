"""Errors with the exit codes the CLI maps them to.

Every error a user can cause says what is wrong, where (column, value, file, line) and what to
do; the CLI prints the message without a traceback.
"""

from __future__ import annotations


class SqlcloseError(Exception):
    """Base class of every error sqlclose raises on purpose."""

    exit_code = 1


class InputError(SqlcloseError):
    """Bad input: spec, hierarchy, data or arguments. Nothing was written."""

    exit_code = 2


class SpecError(InputError):
    """The release spec is malformed or inconsistent."""


class HierarchyError(InputError):
    """A hierarchy is malformed (ragged, two parents, several tops, …)."""


class DataError(InputError):
    """The data does not fit the spec (missing column, value absent from a hierarchy, NULLs)."""


class OutputExistsError(InputError):
    """The output path exists and overwriting was not asked for."""


class NoSolutionError(SqlcloseError):
    """No node of the lattice satisfies the privacy requirements."""

    exit_code = 3


class VerificationError(SqlcloseError):
    """The written release failed its re-check; it was removed."""

    exit_code = 4


class EngineError(SqlcloseError):
    """The SQL engine failed on a generated query (a bug, or the engine ran out of resources)."""

    exit_code = 1

    def __init__(self, message: str, sql: str) -> None:
        super().__init__(f"{message}\n-- while running:\n{sql}")
        self.sql = sql
