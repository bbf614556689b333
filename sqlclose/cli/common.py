"""What every command shares: help settings, error handling with distinct exit codes, output.

Errors print one line (``sqlclose: error: …``) and exit with the error's code; the SQL of a
failing statement and Python tracebacks appear only with ``--verbose``. Ctrl-C and SIGTERM exit
130 and 143 after the run removed what it had started to write.
"""

from __future__ import annotations

import functools
import json
import signal
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import click

from sqlclose.errors import EngineError, EnvironmentFailure, Interrupted, LimitWarning, SqlcloseError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
INTERNAL_ERROR = 1

F = TypeVar("F", bound=Callable[..., Any])

verbose_option = click.option("--verbose", "-v", is_flag=True, help="Show the SQL of a failing statement and "
                              "tracebacks of internal errors.")
quiet_option = click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")


def install_signal_handlers() -> None:
    """SIGTERM unwinds like Ctrl-C, so a stopped job removes its temporary files on the way out."""
    signal.signal(signal.SIGTERM, _terminate)


def show_warnings_as_lines() -> None:
    """sqlclose's own warnings print as one line (``sqlclose: warning: …``), not Python's
    file-and-line form."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001, ANN202
        if issubclass(category, LimitWarning):
            click.echo(f"sqlclose: warning: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def _terminate(signum: int, frame: object) -> None:
    raise Interrupted(f"stopped by {signal.Signals(signum).name}; nothing was placed at the output path", signum)


def guarded(fn: F) -> F:
    """Run a command body; turn every failure into one clear line and its exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        verbose = bool(kwargs.get("verbose"))
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            _fail(Interrupted("interrupted; nothing was placed at the output path"), verbose)
        except SqlcloseError as e:
            _fail(e, verbose)
        except OSError as e:
            _fail(EnvironmentFailure.from_os_error(e), verbose)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as e:  # a bug: say so plainly, keep the traceback for --verbose
            if verbose:
                traceback.print_exc()
            click.echo(f"sqlclose: internal error: {type(e).__name__}: {e} (a bug: please report it; run with "
                       "--verbose for the traceback)", err=True)
            sys.exit(INTERNAL_ERROR)

    return wrapper  # type: ignore[return-value]


def _fail(e: SqlcloseError, verbose: bool) -> None:
    click.echo(f"sqlclose: error: {e}", err=True)
    if verbose and isinstance(e, EngineError):
        click.echo(f"-- the statement that failed:\n{e.sql}", err=True)
    sys.exit(e.exit_code)


def print_json(doc: Any) -> None:
    click.echo(json.dumps(doc, indent=2, default=str))


def parse_node(text: str | None) -> dict[str, int] | None:
    """``age=2,zip=1`` → {"age": 2, "zip": 1}."""
    if not text:
        return None
    node = {}
    for item in text.split(","):
        name, sep, level = item.partition("=")
        if not sep or not level.strip().lstrip("-").isdigit():
            raise click.BadParameter(f"expected COLUMN=LEVEL[,COLUMN=LEVEL…], got {item!r}", param_hint="--node")
        node[name.strip()] = int(level)
    return node
