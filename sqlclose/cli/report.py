"""``sqlclose report``: the sign-off page of an existing release."""

from __future__ import annotations

import json
from pathlib import Path

import click

from sqlclose.cli.common import CONTEXT, guarded, verbose_option


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
@click.option("--overwrite", is_flag=True, help="Replace an existing page.")
@verbose_option
@guarded
def report(report_path: Path, html_path: Path, spec_path: Path | None, release_path: Path | None,
           overwrite: bool, verbose: bool) -> None:
    """Write one self-contained HTML page (charts embedded, no network) for a released file and its
    report: the lattice, the levels and labels, class sizes against k, class distances against t,
    the distributions, suppression, the attack audit and utility. The page never replaces the
    report, the release, the spec or a file it reads, nor an existing file without --overwrite."""
    from sqlclose.audit.html import write_html
    from sqlclose.release.files import refuse_page_target

    refuse_page_target(html_path, _read_by_page(report_path, spec_path, release_path), overwrite)
    out = write_html(report_path, html_path, spec_path, release_path)
    click.echo(f"wrote {out}")


def _read_by_page(report_path: Path, spec_path: Path | None, release_path: Path | None) -> list[tuple[Path, str]]:
    """What the page must not replace: the report, the release it names, the spec and its files."""
    from sqlclose.model.spec import load_spec

    protected = [(report_path, "the report")]
    try:
        named = json.loads(report_path.read_text(encoding="utf-8"))["output"]["path"]
    except (OSError, ValueError, KeyError, TypeError):
        named = None  # the page's own reading of the report says what is wrong with it
    protected += [(Path(p), "the release") for p in (release_path, named) if p is not None]
    if spec_path is not None:
        protected += [(p, "a file of the spec") for p in load_spec(spec_path).files_read]
    return protected
