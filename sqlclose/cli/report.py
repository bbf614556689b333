"""``sqlclose report``: the sign-off page of an existing release."""

from __future__ import annotations

from pathlib import Path

import click

from .common import CONTEXT, guarded, verbose_option


@click.command(context_settings=CONTEXT, short_help="The HTML sign-off page of an existing release.",
               epilog="\b\nExample:\n  sqlclose report out/release.parquet.report.json --html out/release.html "
                      "--spec release.toml")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the page.")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The release's spec (hierarchies for hierarchical distances and the similarity audit).")
@click.option("--release", "release_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The released file (default: the report's output.path).")
@verbose_option
@guarded
def report(report_path: Path, html_path: Path, spec_path: Path | None, release_path: Path | None,
           verbose: bool) -> None:
    """Write one self-contained HTML page (charts embedded, no network) for a released file and its
    report: the lattice, the levels and labels, class sizes against k, class distances against t,
    the distributions, suppression, the attack audit and utility."""
    from ..html_report import write_html

    out = write_html(report_path, html_path, spec_path, release_path)
    click.echo(f"wrote {out}")
