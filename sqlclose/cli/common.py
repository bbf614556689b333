"""What every command shares: help settings, error handling with distinct exit codes, output.

Errors print one line (``sqlclose: error: …``) and exit with the error's code; the SQL of a
failing statement and Python tracebacks appear only with ``--verbose``; with ``--json`` a failure
is a JSON document on stdout too. Ctrl-C, SIGTERM and SIGHUP exit 130, 143 and 129 after the run
removed what it had started to write (a pair already placed stays, and the message says so). A
reader of stdout that leaves early (``| head``) ends a command that placed nothing quietly, exit 141.
"""

from __future__ import annotations

import atexit
import functools
import gc
import json
import math
import os
import re
import select
import signal
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from sqlclose.errors import (
    NOTHING_PLACED,
    EngineError,
    EngineOutOfMemory,
    EnvironmentFailure,
    InputError,
    Interrupted,
    NoSolutionError,
    SpecError,
    SqlcloseError,
    SqlcloseWarning,
    VerificationError,
)
from sqlclose.model.text import name_shown

if TYPE_CHECKING:
    from sqlclose.model.spec import EngineSettings, Spec

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
INTERNAL_ERROR = 1
READER_LEFT = 128 + signal.SIGPIPE  # stdout's reader closed the pipe: what a Unix tool killed by SIGPIPE exits

F = TypeVar("F", bound=Callable[..., Any])


class FiniteFloat(click.ParamType):
    """A float option (``--t``, ``--entropy-l``, ``--skew``) that is a finite number, refused as
    typed: click's FLOAT reads ``nan``, ``inf`` and ``1e400`` (as inf), which the command then told
    as "got inf", a value nobody typed (the ninety-sixth round)."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from sqlclose.model.text import not_finite

        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{not_finite(str(value).strip())}: give a finite number", param, ctx)
        return number


FINITE_FLOAT = FiniteFloat()


class OnceCommand(click.Command):
    """A command whose single-valued options may be given once: click keeps the last of
    ``-o a.parquet -o b.parquet`` silently, so a release job's command line built from two
    sources (a wrapper's default and the caller's) wrote where one of them did not mean."""

    def make_parser(self, ctx: click.Context) -> Any:
        parser = super().make_parser(ctx)
        parse = parser.parse_args

        def parse_once(args: list[str]) -> tuple:
            opts, rest, order = parse(args=args)
            if not ctx.resilient_parsing:
                _refuse_repeated(order)
            return opts, rest, order

        parser.parse_args = parse_once
        return parser


class OnceGroup(click.Group):
    """A group whose subcommands are ``OnceCommand``s."""

    command_class = OnceCommand


def _refuse_repeated(order: list[click.Parameter]) -> None:
    """Every option taking one value (or a flag) appears at most once; repeatable ones
    (``multiple``, ``count``) and eager ones (``--help``, which ends the parse) aside."""
    seen: set[str | None] = set()
    for param in order:
        if not isinstance(param, click.Option) or param.multiple or param.count or param.is_eager:
            continue
        if param.name in seen:
            forms = " / ".join(sorted([*param.opts, *param.secondary_opts], key=len))
            raise click.UsageError(f"option {forms} is given more than once; it takes one "
                                   f"{'setting' if param.is_flag else 'value'}: give it once")
        seen.add(param.name)

verbose_option = click.option("--verbose", "-v", is_flag=True, help="Show the SQL of a failing statement and "
                              "tracebacks of internal errors.")
quiet_option = click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors (and --json's document): "
                            "no summary, progress or warning; a release's own warnings stay in its report.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
_ENGINE_OPTIONS = [
    click.option("--engine", "engine_name", help="Run the queries on this engine (duckdb, spark); overrides [engine]."),
    click.option("--threads", type=int, help="DuckDB threads (overrides [engine] threads)."),
    click.option("--memory-limit", help="Memory the whole job may use, e.g. 2GB: of what the interpreter's 250 MB "
                 "leave, DuckDB gets 60 % (and spills to disk past it), the search's Python side 20 %; 20 % is "
                 "left for what neither counts."),
    click.option("--temp-directory", type=click.Path(file_okay=False, path_type=Path), help="Where DuckDB spills."),
]


def engine_options(fn: F) -> F:
    """--engine, --threads, --memory-limit and --temp-directory: where the queries run."""
    for option in reversed(_ENGINE_OPTIONS):
        fn = option(fn)
    return fn


def engine_settings(current: EngineSettings | None, name: str | None, threads: int | None,
                    memory_limit: str | None, temp_directory: Path | None) -> EngineSettings | None:
    """A spec's [engine] (or none) with the command line's engine settings over it."""
    given = {"name": name, "threads": threads, "memory_limit": memory_limit, "temp_directory": temp_directory}
    given = {key: value for key, value in given.items() if value is not None}
    if not given:
        return current
    from pydantic import ValidationError

    from sqlclose.model.spec import EngineSettings, spec_error

    spec = current.model_dump(exclude_none=True) if current else {}
    if "name" in given and given["name"] != spec.get("name", "duckdb"):
        # The spec's settings are its engine's: --engine duckdb over a Spark spec was refused for
        # the spec's master, "a Spark setting", though the command line had switched engines.
        spec = {}
    try:
        return EngineSettings.model_validate({**spec, **given})
    except ValidationError as e:
        problem = _options_problem(e, given)
        raise (SpecError(problem) if problem else spec_error(e, "command line")) from None


_OPTION = {"name": "--engine", "threads": "--threads", "memory_limit": "--memory-limit",
           "temp_directory": "--temp-directory"}


def _options_problem(error, given: dict) -> str | None:
    """The first problem with an option the command line gave, as one line naming the option (not
    "invalid spec" with the size pattern's regular expression); None when the spec's own [engine]
    or the settings together are at fault."""
    for problem in error.errors():
        if not problem["loc"]:  # the settings together (a DuckDB setting on Spark): its own words say it
            return problem["msg"].removeprefix("Value error, ")
        field = str(problem["loc"][0])
        if field not in given:
            continue
        if field == "threads" and problem["type"] == "greater_than_equal":
            why = "needs at least 1 thread"
        elif field == "threads" and problem["type"] == "less_than_equal":
            why = f"at most {problem['ctx']['le']} threads (DuckDB starts each one at once); give the machine's cores"
        else:
            why = problem["msg"].removeprefix("Value error, ")
        return f"{_OPTION[field]} {given[field]}: {why}"
    return None


def with_engine(spec: Spec, name: str | None, threads: int | None, memory_limit: str | None,
                temp_directory: Path | None) -> Spec:
    """The spec with the command line's engine settings over its [engine]."""
    return spec.model_copy(update={"engine": engine_settings(spec.engine, name, threads, memory_limit,
                                                             temp_directory)})


def hold_stops() -> None:
    """From the program's start (``cli.run``) until its command's guard installs the handlers — the
    command's modules imported (~0.5 s, from the first ~50 ms of the process), its options parsed —
    a SIGTERM, SIGINT or SIGHUP is held, then told by ``install_signal_handlers`` as one arriving
    later is (exit 143, 130 or 129, the --json document too); nothing was placed yet. Python's own
    handling ended the process there without a word (SIGTERM, SIGHUP) or with a traceback (Ctrl-C)
    (ninety-seventh round). Not at ``import sqlclose.cli``: a program importing it keeps its own."""
    for signum, default in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler),
                            (signal.SIGHUP, signal.SIG_DFL)):
        if signal.getsignal(signum) is default:  # one the run was started ignoring (nohup, `&`) stays so
            signal.signal(signum, _hold)


def _hold(signum: int, frame: object) -> None:
    _held.append(signum)


def hold_collector() -> None:
    """From the program's start (``cli.run``) until its command's guard (``collector_back``),
    Python's cyclic garbage collector is off: the command's modules load then (~100 k objects by
    the guard, that live as long as the process, and a few hundred KB of garbage cycles). Its
    passes read them again and again: in a 1 M-row job they took 0.15-0.18 s of CPU (two of them
    full passes over every object), 0.07 s with them frozen, on the thread the job's Python runs
    on (hundredth round). Not at ``import sqlclose.cli``: a program importing it keeps its
    collector as it set it."""
    if gc.isenabled():
        gc.disable()
        _collector_held.append(True)


def collector_back() -> None:
    """The collector on again, when ``hold_collector`` turned it off, with what the process holds
    by then moved out of its sight (``gc.freeze``): the modules' objects are never garbage, and a
    pass over the job's own objects no longer reads them. The cycles the loading left (~0.3 MB)
    stay as long as the process does. Python's own way out (``cli.run`` takes it when a thread is
    still running, or on an exception) gets them back for its teardown, which finalizes them as it
    did before."""
    if _collector_held:
        _collector_held.clear()
        gc.freeze()
        atexit.register(gc.unfreeze)
        gc.enable()


def install_signal_handlers() -> None:
    """SIGTERM unwinds like Ctrl-C, so a stopped job removes its temporary files on the way out; so
    does SIGHUP (the terminal or ssh session that started it closed: exit 129), unless the run was
    started ignoring it (``nohup``), which it then keeps doing. A stop held since the start
    (``hold_stops``) is raised here, as its handler would have."""
    signal.signal(signal.SIGTERM, _terminate)
    if signal.getsignal(signal.SIGHUP) in (signal.SIG_DFL, _hold):
        signal.signal(signal.SIGHUP, _terminate)
    if signal.getsignal(signal.SIGINT) is _hold:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if _held:
        held = _held[0]
        _held.clear()
        if held == signal.SIGINT:
            raise KeyboardInterrupt  # as Python's handler raises it: told "interrupted", exit 130
        _terminate(held, None)


def install_signal_handlers_for_help() -> None:
    """``install_signal_handlers`` where no command's guard will run (the group's help, a command's
    --help): a stop held so far is told as the guard tells it (exit 143, 130, 129), no help printed."""
    _outcome[:] = [None]
    _received.clear()
    try:
        install_signal_handlers()
    except KeyboardInterrupt:
        _fail(_the_stop(), verbose=False)


def show_warnings_as_lines() -> None:
    """sqlclose's own warnings print as one line (``sqlclose: warning: …``), not Python's
    file-and-line form; none under --quiet ("nothing but errors": a job that mails any output)."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001, ANN202
        if issubclass(category, SqlcloseWarning):
            if not _quiet[-1]:
                say(f"sqlclose: warning: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def say_when_stdout_is_closed() -> None:
    """Python gives a command started with its standard output closed (``>&-``) no ``sys.stdout``,
    and click then prints nothing there without a word: a run's summary (or ``--json``) was lost
    with exit 0. The exit code still says how the run went; the operator is told where the rest is.
    Said by each command as it starts (``_guard``), but not under --quiet without --json, which prints
    nothing there to lose; by the group for its help alone."""
    if sys.stdout is None:
        say("sqlclose: warning: standard output is closed, so what this command prints there (the "
              "summary, --json) is lost; the exit code still says how it went, and a release's report "
              "file holds its summary", err=True)


_quiet: list[bool] = [False]  # the running command was given --quiet: it prints no warning
_received: list[int] = []  # the SIGTERM that stopped the run, kept for when DuckDB swallows its exception
_held: list[int] = []  # the stops received before the command's handlers were installed (``hold_stops``)
_collector_held: list[bool] = []  # ``hold_collector`` turned the garbage collector off, until the guard
# What a stop or a failure says stands at the output path: nothing (a command that writes a release,
# until it is placed), the placed pair (from then on: release_placed), or no word of an output
# path at all (a command that writes none).
_outcome: list[str | None] = [NOTHING_PLACED]


def release_placed(what: str) -> None:
    """From here on ``what`` stands (e.g. "the release X and its report Y are in place and verified"):
    a signal or a failure that ends the run now says so, never that nothing was placed (the operator
    would retry and be refused: the output already exists)."""
    if _outcome[-1] != what:
        _outcome.append(what)


@contextmanager
def placing(what: str) -> Iterator[None]:
    """The block places a release: from the moment its pair is committed, ``what`` stands (told by the
    commit itself, so that a stop landing between the commit and the block's end says so)."""
    from sqlclose.release.placing import telling_commits  # not at import: ``--help`` stays light

    with telling_commits(lambda: release_placed(what)):
        yield
    release_placed(what)


def _terminate(signum: int, frame: object) -> None:
    # Inside a DuckDB query the exception raised here is swallowed by DuckDB, which stops the query
    # with its own "interrupted" error (read as Ctrl-C): the signal is recorded first, so the run
    # still exits 143 and says SIGTERM, as a scheduler stopping it expects. Raised in Python code,
    # Interrupted is a KeyboardInterrupt: no ``except Exception`` on its way up rewraps it.
    _received.append(signum)
    raise _stopped_by(signum)


def _the_stop() -> Interrupted:
    """The stop a KeyboardInterrupt stands for: the last signal received (kept for when DuckDB swallows
    its exception), else Ctrl-C's."""
    return _stopped_by(_received[-1] if _received else None)


def _stopped_by(signum: int | None) -> Interrupted:
    said = f"stopped by {signal.Signals(signum).name}" if signum else "interrupted"
    return Interrupted(f"{said}; {_outcome[-1]}" if _outcome[-1] else said, signum or signal.SIGINT)


def guarded(fn: F) -> F:
    """Run a command that writes a release (or files): turn every failure into one clear line and its
    exit code, saying what stands at the output path."""
    return _guard(fn, NOTHING_PLACED)


def guarded_read_only(fn: F) -> F:
    """``guarded`` for a command that writes nothing: its failures name no output path."""
    return _guard(fn, None)


def _guard(fn: F, outcome: str | None) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        verbose, as_json, quiet = bool(kwargs.get("verbose")), bool(kwargs.get("as_json")), bool(kwargs.get("quiet"))
        _outcome[:] = [outcome]
        _quiet[:] = [quiet]
        if as_json or not quiet:
            say_when_stdout_is_closed()
        _received.clear()
        collector_back()  # the command's own module is loaded: what it makes from here is collected
        try:
            refuse_undecodable_paths(kwargs)
            install_signal_handlers()  # here, in the guard: a stop held until now is told as any other
            return _stopped_when_signalled(fn, args, kwargs)
        except KeyboardInterrupt:
            _fail(_the_stop(), verbose, as_json)
        except SqlcloseError as e:
            _fail(e if outcome else _naming_no_output_path(e), verbose, as_json)
        except OSError as e:
            if _reader_left(e) and _outcome[-1] in (NOTHING_PLACED, None):
                _leave_quietly()
            _fail(EnvironmentFailure.from_os_error(e, outcome=_outcome[-1]), verbose, as_json)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as e:  # a bug: say so plainly, keep the traceback for --verbose
            if verbose:
                traceback.print_exc()
            said = f"{type(e).__name__}: {e} (a bug: please report it; run with --verbose for the traceback)"
            if _outcome[-1] not in (NOTHING_PLACED, None):  # a bug after the commit: what stands is told
                said = f"{said}; {_outcome[-1]}"
            say(f"sqlclose: internal error: {said}", err=True)
            json_failure(said, INTERNAL_ERROR, as_json)
            sys.exit(INTERNAL_ERROR)

    return wrapper  # type: ignore[return-value]


# What each path parameter of a command (``click.Path``, by its name) names, as a refused name tells it:
# (what cannot be done, why a name must be UTF-8, what to do). The spec's, the source's and the output's
# words are those their own refusals give (``load_spec``, ``sources``, ``files.refuse_undecodable_path``).
_READ_BY_PYTHON = "sqlclose names the files it reads (in messages, in the report) as UTF-8 text"
_WRITTEN = "sqlclose names the files it writes (in messages, in the report) as UTF-8 text"
_ENGINE = "the engine takes a path as UTF-8 text"
_RENAME = "rename it (or the folder holding it) in UTF-8"
_PATH_ROLES = {
    "spec_path": ("cannot read the spec file", _READ_BY_PYTHON, _RENAME),
    "report_path": ("cannot read the report", _READ_BY_PYTHON, _RENAME),  # check --against, report REPORT.json
    "release_path": ("cannot read the release", _ENGINE, _RENAME),
    "source": ("cannot read the source", _ENGINE, _RENAME),
    "data": ("cannot read the source", _ENGINE, _RENAME),  # hierarchy show/validate --data
    "histogram": ("cannot read the source", _ENGINE, _RENAME),  # the warehouse's histogram, read as a source
    "output": ("cannot write the output path", _ENGINE, "give a path named in UTF-8"),
    "report": ("cannot write the report", _WRITTEN, "give a path named in UTF-8"),
    "html_path": ("cannot write the page", _WRITTEN, "give a path named in UTF-8"),
    "out": ("cannot write the sweep's folder", _WRITTEN, "give a path named in UTF-8"),
    "folder": ("cannot write the demo's folder", _WRITTEN, "give a path named in UTF-8"),
    "temp_directory": ("cannot spill to the temporary folder", _ENGINE, "give a folder named in UTF-8"),
}


def refuse_undecodable_paths(values: dict[str, Any]) -> None:
    """Refuse every path a command was given (its ``click.Path`` parameters, in ``values``) whose name is
    not UTF-8 (``text.refuse_undecodable_path``), before anything is read or written: the spec file,
    sources, hierarchies and outputs were, but ``check --against``'s report was read and ``report
    --html``'s page written, each told as a lone surrogate (``x\\udcff.html``); ``--temp-directory``
    failed in DuckDB (exit 1, ``std::bad_cast``) (the hundredth round). A parameter added later is
    covered by its type; one named in no role is told by its option."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    from sqlclose.model.text import refuse_undecodable_path

    for param in ctx.command.params:
        value = values.get(param.name or "")
        if not isinstance(param.type, click.Path) or value is None:
            continue
        told, why, fix = _PATH_ROLES.get(param.name or "", (f"cannot use the {param.opts[0]} path", _ENGINE,
                                                            "give a path named in UTF-8"))
        for path in value if isinstance(value, tuple) else (value,):
            refuse_undecodable_path(path, told, fix, why)


def _stopped_when_signalled(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``fn(*args, **kwargs)``, where a failure that follows a stop is the stop (KeyboardInterrupt,
    told with its signal: 130, 143, 129), not a bug, bad input or a failed verification: DuckDB may
    give the handler's exception back as an error of its own (raised while it ran Python code for a
    query), or a cleanup on the way out may fail on the interrupted connection. The environment's
    failures (exit 5: a file that could not be restored, say) are told as they are."""
    try:
        return fn(*args, **kwargs)
    except (click.exceptions.Exit, click.ClickException, OSError, EnvironmentFailure, EngineOutOfMemory):
        raise
    except Exception as e:
        if _received or _raised_while_stopping(e):
            raise KeyboardInterrupt from None
        raise


def _raised_while_stopping(e: BaseException) -> bool:
    """Whether ``e`` was raised while a KeyboardInterrupt (Ctrl-C, or a signal's Interrupted) was
    unwinding, by the cleanup it ran (its ``__context__``, kept by ``raise … from None`` too)."""
    context, seen = e.__context__, set()
    while context is not None and id(context) not in seen:  # a re-raised exception may close a loop
        if isinstance(context, KeyboardInterrupt):
            return True
        seen.add(id(context))
        context = context.__context__
    return False


def _naming_no_output_path(e: SqlcloseError) -> SqlcloseError:
    """``e`` without the clause a release job's errors end with (the engine's out of memory, say):
    a command that writes nothing has no output path to speak of."""
    text = str(e)
    if text.endswith(f"; {NOTHING_PLACED}"):
        e.args = (text.removesuffix(f"; {NOTHING_PLACED}"),)
    return e


def help_not_written(e: OSError) -> NoReturn:
    """``--help`` or ``--version`` (told before any command's guard) could not be written to stdout:
    its reader left (exit 141, no word, as a command's output), or the stream failed (a full disk:
    one line, exit 5), where click gave a traceback, or exit 1 for a closed pipe."""
    if _reader_left(e):
        _leave_quietly()
    failure = EnvironmentFailure.from_os_error(e, writing="standard output", outcome=None)
    with suppress(OSError):
        say(f"sqlclose: error: {failure}", err=True)
    sys.exit(failure.exit_code)


def _reader_left(e: OSError) -> bool:
    """Whether ``e`` is stdout's reader having closed the pipe (``| head``, ``| less`` quit early),
    not some other pipe or socket failing."""
    if not isinstance(e, BrokenPipeError) or sys.stdout is None:
        return False
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))  # a pipe without reader
    except (AttributeError, OSError, ValueError):  # no poll here, or stdout is no file: trust the error
        return True


def _leave_quietly() -> None:
    """The reader of stdout stopped reading and nothing was placed: stop as other Unix tools do
    (killed by SIGPIPE: no word, exit 141), not as a failure of the environment."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # spare Python's flush at exit an error
    sys.exit(READER_LEFT)


def _fail(e: SqlcloseError | Interrupted, verbose: bool, as_json: bool = False) -> None:
    broken = isinstance(e.__context__, BrokenPipeError)
    if broken:  # stdout is gone: spare Python's flush at exit a second error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    try:  # after SIGHUP the terminal may be gone: the exit code still says what happened
        say(f"sqlclose: error: {one_line(e)}", err=True)
        if verbose and isinstance(e, EngineError):
            say(f"-- the statement that failed:\n{e.sql}", err=True)
        json_failure(str(e), e.exit_code, as_json and not broken)
    except OSError:
        pass
    sys.exit(e.exit_code)


# What each exit code means, in a failure's JSON document (README, "Exit codes").
FAILURE_KINDS = {INTERNAL_ERROR: "internal error", InputError.exit_code: "bad input",
                 NoSolutionError.exit_code: "no solution", VerificationError.exit_code: "verification failed",
                 EnvironmentFailure.exit_code: "environment",
                 **{128 + s: "interrupted" for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)}}


def one_line(failure: BaseException | str) -> str:
    """A failure's message as the one line a log reads it as, a line break a value brings (a path
    holding one) shown as ``\\n`` (review h2 of the eighty-sixth round); a spec's several problems
    keep their list, a line each (``SpecError.listed``: its values' breaks escaped already). The
    --json document keeps the message as it is."""
    from sqlclose.model.text import escaped_breaks

    if getattr(failure, "listed", False):
        return str(failure)
    return escaped_breaks(str(failure))


def say(message: str = "", err: bool = False, file: Any = None, artifact: bool = False) -> None:
    """Print a line (or lines) a person reads: ``click.echo`` of ``message`` with every control
    character but its line breaks escaped (``terminal_text``): a name or value in it (a column, a
    file, a label) holding ``\\x1b[2J`` or a right-to-left override was printed as it was, the
    terminal acting on it. ``artifact``: text a pipe or a file takes as it is (the SQL printed for a
    warehouse: an identifier's bytes are its name), escaped only where it reaches a terminal."""
    from sqlclose.model.text import terminal_text

    stream = file or (sys.stderr if err else sys.stdout)
    if not artifact or _is_terminal(stream):
        message = terminal_text(message)
    click.echo(message, err=err, file=file)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no stream, or closed: nothing reaches a terminal
        return False


def json_failure(message: str, code: int, as_json: bool = True) -> None:
    """With --json, a failure is a JSON document on stdout too (the line on stderr stays): a job
    that parses stdout reads success and failure alike."""
    if as_json:
        print_json({"error": message, "exit_code": code, "kind": FAILURE_KINDS.get(code, "error")})


def print_json(doc: Any) -> None:
    say(json.dumps(doc, indent=2, default=str))


def parse_node(text: str | None) -> dict[str, int] | None:
    """``age=2,zip=1`` → {"age": 2, "zip": 1}; an empty text or a column named twice is refused
    (neither may quietly release another node than meant), as bad input: with --json its failure
    is a JSON document like any other's. A level is digits, so a comma or '=' before one belongs to
    the column's name (``a,b=1`` names the column ``a,b``)."""
    if text is None:
        return None
    node: dict[str, int] = {}
    at = 0
    while True:
        item = _NODE_ITEM.match(text, at)
        if item is None:
            rest = "" if text.endswith(",") and _NODE_ITEM.fullmatch(text[at:-1]) else text[at:]
            raise InputError(f"--node {text}: expected COLUMN=LEVEL[,COLUMN=LEVEL…], got {rest!r}")
        name = item["name"].strip()
        if name in node:
            raise InputError(f"--node {text}: {name_shown(name)} is given twice; give each column one level")
        node[name] = int(item["level"])
        if item.end() == len(text):
            return node
        at = item.end()


# One COLUMN=LEVEL of --node and the comma after it: the shortest name that leaves a level of digits
# followed by a comma or the end.
_NODE_ITEM = re.compile(r"(?P<name>.*?)=\s*(?P<level>-?\d+)\s*(?:,(?=.)|$)", re.DOTALL)
