"""The ``sqlclose`` command (click: parsing, --help and exit codes without hand-written argv code).

Exit codes: 0 released, verified (or already up to date); 1 internal error; 2 bad input (spec,
hierarchy, data, an output in the way); 3 no generalization satisfies the requirements; 4 the
written file failed verification; 5 the environment failed (disk full, permission denied);
130 interrupted (143 for SIGTERM). ``sqlclose check`` exits 3 when a threshold fails.
"""

from __future__ import annotations

import click

from sqlclose._version import __version__
from sqlclose.cli.anonymize import anonymize, explain
from sqlclose.cli.audit import check
from sqlclose.cli.common import CONTEXT, install_signal_handlers
from sqlclose.cli.demo import demo
from sqlclose.cli.hierarchy import hierarchy
from sqlclose.cli.report import report
from sqlclose.cli.sql import sql
from sqlclose.cli.sweep import sweep


@click.group(name="sqlclose", context_settings=CONTEXT, invoke_without_command=True)
@click.version_option(__version__, "--version", prog_name="sqlclose")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Publish tables about people safely: k-anonymity, l-diversity and t-closeness by
    generalizing quasi-identifiers over hierarchies, computed in SQL.

    \b
    Start here:
      sqlclose demo                          a release on the paper's Table 3, in a temporary folder
      sqlclose explain SPEC.toml             what a run would do, and its SQL
      sqlclose anonymize SPEC.toml           search, write, verify, report
      sqlclose check RELEASE.parquet --spec SPEC.toml
      sqlclose sql SPEC.toml --dialect postgres   the warehouse path (docs/warehouse.md)
      sqlclose sweep SPEC.toml --k 3,5,10 --out DIR   utility over many k: CSV and charts
    """
    install_signal_handlers()
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
        ctx.exit(0)


for command in (anonymize, explain, check, hierarchy, demo, report, sql, sweep):
    main.add_command(command)

__all__ = ["main"]
