"""Errors with the exit codes the CLI maps them to.

Every error a user can cause says what is wrong, where (column, value, file, line) and what to
do; the CLI prints the message without a traceback.

Exit codes: 0 released (or up to date); 1 an internal error (a bug: please report it);
2 bad input (spec, hierarchy, data, an output in the way); 3 no generalization satisfies the
requirements; 4 the written file failed verification; 5 the environment failed (disk full,
permission denied, out of memory); 130 interrupted (143 SIGTERM, 129 SIGHUP); 141 stdout's reader
left (``| head``) before a release was placed, told with no message, as other Unix tools do.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

NOTHING_PLACED = "nothing was placed at the output path"


class SqlcloseError(Exception):
    """Base class of every error sqlclose raises on purpose."""

    exit_code = 1


class InputError(SqlcloseError):
    """Bad input: spec, hierarchy, data or arguments. Nothing was written."""

    exit_code = 2


class OptionError(InputError):
    """A bad value of one of a function's options, the message starting with the option's name as
    the caller gave it: ``skew`` in Python, ``--skew`` on the command line (``renamed``)."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option}: {problem}")
        self.option, self.problem = option, problem

    def renamed(self, names: dict[str, str]) -> OptionError:
        """The same error naming the option as ``names`` maps it (a Python keyword to its flag)."""
        return OptionError(names.get(self.option, self.option), self.problem)


class SpecError(InputError):
    """The release spec is malformed or inconsistent. ``listed``: its message lists several
    problems, a line each (the only line breaks it holds: its values' are escaped)."""

    listed: bool = False


class HierarchyError(InputError):
    """A hierarchy is malformed (ragged, two parents, several tops, …)."""


class DataError(InputError):
    """The data does not fit the spec (missing column, value absent from a hierarchy, NULLs)."""


class NoRowsError(DataError):
    """The source has no rows: there is nothing to anonymize (a caller that checks, not anonymizes,
    says so in its own words)."""


class NullsError(DataError):
    """A column holds NULLs its ``nulls = "error"`` refuses; ``column`` and ``count`` say which and how many."""

    def __init__(self, message: str, column: str, count: int) -> None:
        super().__init__(message)
        self.column, self.count = column, count


class NotLeavesError(DataError):
    """Quasi-identifier values a hierarchy lacks: the message counts them (a job's log, its --json
    document, keep it), ``named`` names them, for ``sqlclose hierarchy validate --show-values``,
    where the operator asks to see the data's values. ``told`` builds the message naming ``lister``,
    the command that lists them: ``listed_by`` tells it with another (a command's own flag)."""

    def __init__(self, told: Callable[[str], str], lister: str, named: str, column: str) -> None:
        super().__init__(told(lister))
        self.named, self.column, self._told = named, column, told

    def listed_by(self, lister: str) -> str:
        """The message naming ``lister`` as what lists the values."""
        return self._told(lister)


class SensitiveOffHierarchyError(DataError):
    """Sensitive values a hierarchy lacks (``sqlclose check``): counted, never named. ``check
    --against`` tells from it a file that is not its release, which holds none."""

    def __init__(self, message: str, column: str, values: int, rows: int | None) -> None:
        super().__init__(message)
        self.column, self.values, self.rows = column, values, rows


class OutputExistsError(InputError):
    """The output path exists and overwriting was not asked for."""


class NoSolutionError(SqlcloseError):
    """No node of the lattice satisfies the privacy requirements."""

    exit_code = 3


class VerificationError(SqlcloseError):
    """The written release failed its re-check; it was removed."""

    exit_code = 4


class EngineError(SqlcloseError):
    """The SQL engine failed on a generated query (a bug, or the engine ran out of resources).
    The statement is kept in ``sql``, not in the message: the CLI shows it with --verbose only.
    The driver's own error is kept in ``cause``, not chained as ``__cause__``: its text may quote a
    value of the data (``Could not convert string 'SECRET-4711'``), and Python prints a chained
    cause with every traceback a job logs (``raise … from None`` keeps it out)."""

    exit_code = 1

    def __init__(self, message: str, sql: str) -> None:
        super().__init__(message)
        self.sql = sql
        self.cause: BaseException | None = None  # set by ``Engine.wrapped_error``


class EngineFault(EngineError):
    """The engine failed inside itself (DuckDB's internal or fatal error, after which its database is
    invalidated): the engine's failure, never a property of the data or of a written file. A
    re-check it stops is told as such (exit 1), not as a release that failed its re-check (exit 4)."""


class ChartError(SqlcloseError):
    """matplotlib failed to draw a chart (a bug). Its own message may quote the text it was drawing
    (a sensitive value, a label, a source's name), so it is kept in ``cause``, neither in the
    message nor chained as ``__cause__`` (a job's traceback would print it)."""

    exit_code = 1

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class SourceDataError(EngineError, InputError):
    """A source file's data could not be read when a pass first read it (text that is not UTF-8,
    a damaged page), or a value of a source's lazily computed column could not be (a Spark
    DataFrame's cast failing on a row): bad input, named by file or column, never by value. An
    EngineError too, as the engine raised it where any query may fail."""

    exit_code = 2


class EngineOutOfMemory(EngineError):
    """The engine ran out of the memory it was given; the message says what it had and what to
    change. Nothing was placed at the output path."""

    exit_code = 5


class EngineOutOfDisk(EngineOutOfMemory):
    """The engine's spill files filled the disk of its temp directory; the message names the
    directory and what to change. Nothing was placed at the output path."""


class EngineCannotSpill(EngineOutOfMemory):
    """The engine could not write its spill files (a temp directory it cannot create or write: by
    default ``.tmp`` in the working folder); the message names the directory and what to change.
    Nothing was placed at the output path."""


class EnvironmentFailure(SqlcloseError):
    """The machine refused: disk full, permission denied, a folder that cannot be created.
    Nothing was placed at the output path."""

    exit_code = 5

    @classmethod
    def from_os_error(cls, e: OSError, writing: object = None,
                      outcome: str | None = NOTHING_PLACED) -> EnvironmentFailure:
        """``writing``: the output being written, named when the error names no file (a full disk
        while writing a file names none), so a job's log says which disk to look at. ``outcome``:
        what stands at the output path (None: a command that writes none, and names none). A file
        ``writing_file`` named (the report, beside an output on another disk) comes before it."""
        writing = getattr(e, _WRITING, None) or writing
        reason = _OS_REASONS.get(e.errno or 0, e.strerror or str(e))
        where = f" ({e.filename})" if e.filename else f" while writing {writing}" if writing else ""
        hidden = HIDDEN_TEMPORARY.match(Path(str(e.filename)).name) if e.filename else None
        if hidden:  # a folder made read-only mid-run: its folder is what the reader can act on
            where = (f" in {Path(str(e.filename)).parent}, on this run's temporary file for {hidden['name']} there "
                     "(one left behind is removed by the next run)")
        return cls(f"the environment refused: {reason}{where}" + (f"; {outcome}" if outcome else ""))

    @classmethod
    def from_engine(cls, e: EngineError | Exception, writing: object = None) -> EnvironmentFailure | None:
        """The engine's own I/O failures (a full disk while it writes ``writing``, a database file
        another process holds) are the environment's; None for any other error, and for the
        engine's failures to spill (``EngineOutOfMemory`` and its kinds): their message names the
        temp directory, whose "Permission denied" or full disk is not the output's (review of the
        ninety-sixth round: a read-only temp directory was told as the release's folder)."""
        if isinstance(e, EngineOutOfMemory):
            return None
        text = str(e)
        for marker, reason in (("No space left", "the disk is full"), ("Permission denied", "permission denied"),
                               ("File too large", "the file grew beyond the size limit"),
                               (DATABASE_LOCKED, _LOCKED_REASON)):
            if marker in text:
                what = f"writing {writing}" if writing else "writing"
                return cls(f"the environment refused: {reason} while {what}; {NOTHING_PLACED}")
        return None


class DatabaseLocked(EnvironmentFailure):
    """A DuckDB database file another process holds open for writing (DuckDB's file lock), met
    while reading it: exit 5, the write path's words. An analyst's ``duckdb`` shell on a release
    database is a transient state of the environment, not a bug (review of the ninety-sixth round:
    an internal error, exit 1, in the up-to-date check, ``check --against`` and ``report --html``).
    A command that writes nothing (``check``) says it without the clause on the output path
    (``cli.common``); ``report`` names the page's."""

    @classmethod
    def held(cls, path: object, doing: str = "reading") -> DatabaseLocked:
        """``doing``: what the run was at, "reading" (a check, the up-to-date test) or "writing"."""
        return cls(f"the environment refused: {_LOCKED_REASON} while {doing} {path}; {NOTHING_PLACED}")

    @classmethod
    def source(cls, label: object) -> DatabaseLocked:
        """A source database (``label``: its path, and table) held while it is opened to be read: it
        may be read from a copy, too (review of the sixty-third round: exit 2, as broken input)."""
        return cls(f"the environment refused: another process holds the lock of {label}, the source database (run "
                   f"again once it is done, or read a copy of it); {NOTHING_PLACED}")


DATABASE_LOCKED = "Could not set lock on file"  # DuckDB's words for a file another process holds
_LOCKED_REASON = "another process holds the database file's lock (run again once it is done)"


_WRITING = "sqlclose_writing"  # the attribute writing_file sets on an OSError
# A run's hidden temporary beside its output, ``.NAME.sqlclose-PID-TOKEN.KIND`` (release.recovery names
# them, and finds a dead run's by it).
HIDDEN_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.sqlclose-(?P<pid>\d+)-(?P<token>[0-9a-f]+)"
                              r"\.(?P<kind>[a-z-]+(?:\.wal)?)$")


@contextmanager
def writing_file(path: object) -> Iterator[None]:
    """An OSError raised inside that names no file (a full disk names none) is told by
    ``EnvironmentFailure.from_os_error`` as raised while writing ``path`` (the innermost such
    block's): the file whose write failed, not the output, may be on another disk."""
    try:
        yield
    except OSError as e:
        if not e.filename and getattr(e, _WRITING, None) is None:
            setattr(e, _WRITING, path)
        raise


_OS_REASONS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
               errno.EFBIG: "the file grew beyond the size limit", errno.EACCES: "permission denied",
               errno.EPERM: "operation not permitted", errno.EROFS: "the file system is read-only",
               errno.ENOTDIR: "a folder on the path is a file", errno.EEXIST: "a file is in the way"}


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (exit 130), SIGTERM (143) or SIGHUP (129): the run stopped and removed what it had
    started to write.

    A KeyboardInterrupt, not an Exception (so not a SqlcloseError): the CLI's SIGTERM/SIGHUP handler
    raises it wherever Python code runs when the signal lands, and an ``except Exception`` there (the
    engine wrapping a driver's error as EngineError, a source read wrapped as InputError, a cleanup
    that carries on) would have turned the stop into another failure with another exit code. Like
    Ctrl-C, it passes every such handler; ``except BaseException`` cleanups still run."""

    exit_code = 130

    def __init__(self, message: str, signal_number: int = 2) -> None:
        super().__init__(message)
        self.exit_code = 128 + signal_number


class SqlcloseWarning(UserWarning):
    """sqlclose's own warnings: the command prints each as one line, ``sqlclose: warning: …``, and
    none under --quiet; a Python caller gets them through ``warnings``."""


class LimitWarning(SqlcloseWarning):
    """A resource limit the job cannot keep as asked (e.g. a memory limit below the interpreter's
    own size); the job still runs."""


class HierarchyWarning(SqlcloseWarning):
    """A hierarchy accepted as given that does not measure what it reads as (a sensitive hierarchy's
    level that groups nothing, so t holds more loosely than it reads: docs/emd.md)."""


class WaitWarning(SqlcloseWarning):
    """The run waits for another sqlclose run (one writing the same output database, or placing a
    release in the same folder): said once as the wait begins, so that a job that seems to hang says why."""
