"""The ``sqlclose`` command (click: parsing, --help and exit codes without hand-written argv code).

Exit codes: 0 released, verified (or already up to date); 1 internal error; 2 bad input (spec,
hierarchy, data, an output in the way); 3 no generalization satisfies the requirements; 4 the
written file failed verification; 5 the environment failed (disk full, permission denied,
out of memory); 130 interrupted (143 for SIGTERM, 129 for SIGHUP); 141, silently, when stdout's reader
left (``| head``) before a release was placed. ``sqlclose check`` exits 3 when a threshold fails.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from importlib import import_module
from typing import IO, Any, NoReturn

import click

from sqlclose._version import __version__
from sqlclose.cli.common import (
    CONTEXT,
    help_not_written,
    hold_collector,
    hold_stops,
    install_signal_handlers_for_help,
    json_failure,
    say,
    say_when_stdout_is_closed,
    show_warnings_as_lines,
)

# Each subcommand's module is imported when the command is named (or --help lists them all): a run
# of one command does not load (and, without bytecode, compile) the others' modules.
COMMANDS = {"anonymize": "sqlclose.cli.anonymize:anonymize", "check": "sqlclose.cli.audit:check",
            "demo": "sqlclose.cli.demo:demo", "explain": "sqlclose.cli.anonymize:explain",
            "hierarchy": "sqlclose.cli.hierarchy:hierarchy", "report": "sqlclose.cli.report:report",
            "sql": "sqlclose.cli.sql:sql", "sweep": "sqlclose.cli.sweep:sweep"}


# click ≥ 8.2 raises this usage error (its message the whole help) for a group given no subcommand.
_HELP_ASKED: type[click.UsageError] | None = getattr(click.exceptions, "NoArgsIsHelpError", None)


class _OneLineUsageError(click.UsageError):
    """A usage error (an unknown option, a value click cannot parse) told as every other failure is:
    one line on stderr, ``sqlclose: error: …`` (exit 2), not click's usage block of four lines that a
    log search for the house form misses."""

    def show(self, file: IO[Any] | None = None) -> None:
        hint = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        from sqlclose.cli.common import one_line

        say(f"sqlclose: error: {one_line(self.format_message().removesuffix('.'))}{hint}", file=file,
              err=file is None)


def _one_line(e: click.UsageError, where: click.Context | None = None) -> click.UsageError:
    if isinstance(e, _OneLineUsageError):
        return e
    told = _OneLineUsageError(e.format_message(), e.ctx or where)
    told.exit_code = e.exit_code
    return told


def _named_command(group: click.Group, name: str, args: list[str]) -> click.Context:
    """The context of the (sub)command the command line names, parsed leniently: click raises an option
    missing its value before that command's context exists (``ctx`` None), so the one line would not say
    whose --help to read."""
    ctx = group.make_context(name, list(args), resilient_parsing=True)
    while isinstance(ctx.command, click.Group):
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]  # click 8 keeps the command's name apart
        if not rest:
            break
        sub_name, sub, sub_args = ctx.command.resolve_command(ctx, rest)
        if sub is None or sub_name is None:
            break
        ctx = sub.make_context(sub_name, sub_args, parent=ctx, resilient_parsing=True)
    return ctx


def _options(ctx: click.Context) -> list[str]:
    """The command line as given, up to any ``--`` (after it, words are arguments)."""
    given = ctx.meta.get("sqlclose.args", [])
    return given[:given.index("--")] if "--" in given else given


def _asked_help(ctx: click.Context) -> bool:
    """Whether the command line asks for a help, which click writes as it parses."""
    return bool({"-h", "--help"} & set(_options(ctx)))


def _print_help(ctx: click.Context) -> None:
    try:
        say(ctx.get_help())
    except OSError as e:
        help_not_written(e)


class _LazyGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["sqlclose.args"] = list(args)  # the command line as given (click empties ctx.args later)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:  # an unknown option before the command's name
            raise _one_line(e) from None
        except OSError as e:  # `sqlclose --help` or `--version`, told as the line is parsed
            help_not_written(e)

    def invoke(self, ctx: click.Context) -> object:
        # click refuses a malformed option (an unknown choice, a callback's BadParameter) before the
        # command's body runs: with --json the failure is told on stdout too, as every other is.
        try:
            return super().invoke(ctx)
        except OSError as e:  # a command's --help, told as its line is parsed (its guard is not yet on)
            if _asked_help(ctx):
                help_not_written(e)
            raise
        except click.UsageError as e:
            if _HELP_ASKED is not None and isinstance(e, _HELP_ASKED) and e.ctx is not None:
                # A group named without its subcommand (`sqlclose hierarchy`): its help, as plain
                # `sqlclose` gives it (and click before 8.2), not a 17-line "error".
                say_when_stdout_is_closed()
                _print_help(e.ctx)
                ctx.exit(0)
            given = ctx.meta.get("sqlclose.args", [])
            if "--json" in _options(ctx):
                json_failure(e.format_message(), e.exit_code)
            try:  # whose --help to point at; the line is told without a pointer if it cannot be found
                where = _named_command(self, ctx.info_name or "sqlclose", given) if e.ctx is None else None
            except click.ClickException:
                where = None
            raise _one_line(e, where) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(import_module(module), attr)


@click.group(name="sqlclose", cls=_LazyGroup, context_settings=CONTEXT, invoke_without_command=True)
@click.version_option(__version__, "--version", prog_name="sqlclose")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Publish tables about people safely: k-anonymity, l-diversity and t-closeness by
    generalizing quasi-identifiers over hierarchies, computed in SQL.

    \b
    Start here:
      sqlclose demo                          a release on the paper's Table 3, in a temporary folder
      sqlclose explain SPEC.toml             what a run would do (--show-values: and its SQL)
      sqlclose anonymize SPEC.toml           search, write, verify, report
      sqlclose check RELEASE.parquet --spec SPEC.toml
      sqlclose sql SPEC.toml --dialect postgres   the warehouse path (docs/warehouse.md)
      sqlclose sweep SPEC.toml --k 3,5,10 --out DIR   utility over many k: CSV and charts
    """
    show_warnings_as_lines()
    if ctx.invoked_subcommand is None or _asked_help(ctx):
        install_signal_handlers_for_help()  # else the command's guard installs them (common.hold_stops)
        say_when_stdout_is_closed()  # the help is lost; a command says so itself, unless --quiet (common._guard)
    if ctx.invoked_subcommand is None:
        _print_help(ctx)
        ctx.exit(0)


def run() -> NoReturn:
    """The ``sqlclose`` command: ``main``, then the process ends without the interpreter's teardown.

    Freeing ~560 modules and the job's objects one by one costs a small job ~60 ms after its work is
    done (a twentieth of a 1 M-row job, a tenth of Adult's). The exit handlers still run (files'
    and engines' finalizers, logging), the shared database is closed (its spill files removed) and
    the streams flushed; only then does the process end. Anything unusual (an exception, a thread
    still running, Spark's gateway, a stream that cannot be flushed) takes Python's usual way out."""
    hold_stops()  # until the command's guard: the command's modules are imported first (~0.5 s)
    hold_collector()  # the same: their objects are not garbage
    try:
        main()
    except SystemExit as stop:
        _exit(stop.code)
    _exit(0)


def _exit(code: object) -> NoReturn:
    if not isinstance(code, int) or threading.active_count() > 1 or "pyspark" in sys.modules:
        sys.exit(code)
    try:
        atexit._run_exitfuncs()  # runs each handler once and forgets it: sys.exit would not run them again
        from sqlclose.engine.duckdb_database import close_shared  # here: `--help` imports no engine

        close_shared()
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:  # noqa: BLE001 - Python's own exit then tells it, as without this function
        sys.exit(code)
    os._exit(code)


__all__ = ["main", "run"]
