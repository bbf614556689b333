"""``sqlclose report``: the sign-off page of an existing release."""

from __future__ import annotations

from pathlib import Path

import click

from sqlclose.cli.common import CONTEXT, OnceCommand, guarded, say, verbose_option
from sqlclose.model.text import name_shown


@click.command(cls=OnceCommand, context_settings=CONTEXT, short_help="The HTML sign-off page of an existing release.",
               epilog="\b\nExample:\n  sqlclose report out/release.parquet.report.json --html out/release.html "
                      "--spec release.toml")
# readable=False: a report the job may not read is refused by read_report as the environment's (exit 5),
# where click's own check made it a usage error (exit 2).
@click.argument("report_path", metavar="REPORT.json",
                type=click.Path(dir_okay=False, exists=True, readable=False, path_type=Path))
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the page.")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The release's spec (hierarchies for hierarchical distances and the similarity audit); "
                   "without it the sensitive columns' models are rebuilt from the report, as check --against does.")
@click.option("--release", "release_path", type=click.Path(dir_okay=True, path_type=Path),
              help="The released file or Parquet folder (default: the report's output.path).")
@click.option("--overwrite", is_flag=True, help="Replace an existing page (never a file the release was made from).")
@verbose_option
@guarded
def report(report_path: Path, html_path: Path, spec_path: Path | None, release_path: Path | None,
           overwrite: bool, verbose: bool) -> None:
    """Write one self-contained HTML page (charts embedded, no network) for a released file and its
    report: the lattice, the levels and labels, class sizes against k, class distances against t,
    the distributions, suppression, the attack audit and utility. The page never replaces the
    report, the release, its input, the spec or a file it reads, nor lies inside a Parquet folder
    release, whatever --overwrite says; it replaces an existing page with --overwrite only. A file
    that is not a report is bad input (exit 2); a release that no longer matches its report's digest
    (edited, replaced, or another file given with --release) gets no page (exit 4), nor does a
    table exported from the warehouse whose figures are not its report's."""
    from sqlclose.against_report import models_from_report, pair_stamps, refuse_changed_release, refused_if_replaced
    from sqlclose.audit.claims import read_report
    from sqlclose.audit.html import PAGE_FIELDS, PAGE_PRINTS, refuse_malformed, render_html, write_page
    from sqlclose.model.file_stamps import stamps_of
    from sqlclose.release.files import refuse_page_target

    report_read = stamps_of([report_path])  # before it is read: a run may place a new pair meanwhile
    doc = read_report(report_path, PAGE_FIELDS, PAGE_PRINTS)
    refuse_malformed(doc)
    if release_path is None and doc["output"].get("format") != "sql":  # a query's report: write_html says so
        release_path = _recorded_release(report_path, doc)
    refuse_page_target(html_path, _read_by_page(report_path, doc, spec_path, release_path, html_path),
                       overwrite)
    release = release_path or Path(doc["output"]["path"])
    read = {**pair_stamps(release, report_path), **report_read}  # the report as it was before it was read
    # The report is read again below (the check, the page): a pair placed meanwhile was told "does not
    # match its report" (exit 4), or drawn as one release's claims over another's figures.
    with refused_if_replaced(read, release, "while its page was made", "write the page again"):
        audit, notes = refuse_changed_release(release, report_path, doc["output"], spec_path)
        # Without the spec, the models check --against rebuilds from the report: its sensitive columns
        # were left unmeasured, and the page's attack table stood empty, as if nothing were exposed.
        rebuilt = models_from_report(doc) if spec_path is None else None
        page = render_html(report_path, spec_path, release_path, rebuilt, audit, notes)
    out = write_page(page, html_path, overwrite)
    say(f"wrote {out}")


def _recorded_release(report_path: Path, doc: dict) -> Path:
    """The release the report names. A relative ``output.path`` is the run's working folder's: the pair
    is found beside the report when the report bears the release's default name there (read from the
    pair's own folder, the path named nothing; from a folder holding another file of that path, that
    file, told "changed": review of the ninety-third round); else the path as recorded."""
    from sqlclose.model.spec import default_report_path

    recorded = Path(doc["output"]["path"])
    if recorded.is_absolute():
        return recorded
    beside = report_path.parent / recorded.name
    table = doc["output"].get("table") if doc["output"].get("format") == "duckdb" else None
    if default_report_path(beside, table).name == report_path.name and beside.exists():
        return beside
    return recorded


def _read_by_page(report_path: Path, doc: dict, spec_path: Path | None, release_path: Path | None,
                  html_path: Path) -> list[tuple[Path, str]]:
    """What the page must not replace nor lie inside: the report, the release it names, the input it
    was made from (its ``input.source``), the hierarchy files it names, the spec with its source
    and files, and any Parquet folder release the page path is inside (another report's too)."""
    from sqlclose.model.spec import load_spec
    from sqlclose.prepare.sources import query_files
    from sqlclose.release.files import folder_releases_around

    protected = [(report_path, "the report")]
    protected += [(Path(p), "the release") for p in (release_path, doc["output"]["path"]) if p is not None]
    # A pair copied elsewhere: its report names the release where it was made, the copy lies beside it.
    protected.append((report_path.parent / Path(doc["output"]["path"]).name, "the release beside the report"))
    if spec_path is not None:
        spec = load_spec(spec_path)
        protected += [(p, "a file of the spec") for p in spec.files_read]
        if spec.source is not None:
            protected += [(p, "the spec's source") for p in
                          [*([spec.source.path] if spec.source.path else []), *query_files(spec.source)]]
    source = _source_path(doc["input"])
    if source is not None:
        protected.append((source, "the input the release was made from"))
    hierarchies = doc.get("hierarchies") if isinstance(doc.get("hierarchies"), dict) else {}
    protected += [(Path(h["path"]), f"the hierarchy of column {name_shown(name)} the report names")
                  for name, h in hierarchies.items() if isinstance(h, dict) and isinstance(h.get("path"), str)]
    return protected + folder_releases_around(html_path)


def _source_path(recorded: dict) -> Path | None:
    """The path the report's input was read from: its ``input.path`` (null for a source that is no
    path: a DataFrame, a relation, …); for a report before 8.2, read from its ``input.source`` words
    (``data.csv``, ``db.duckdb (table t)``, ``query over data.parquet``; none for ``pandas DataFrame``,
    ``arrow table``, ``query``), which a file's own name may spell."""
    from sqlclose.prepare.source_labels import ARROW_LABEL, PANDAS_LABEL

    if "path" in recorded:
        path = recorded["path"]
        return Path(path) if isinstance(path, str) and path else None
    label = recorded.get("source")
    if not isinstance(label, str) or label in (ARROW_LABEL, PANDAS_LABEL, "query", ""):
        return None
    label = label.removeprefix("query over ")
    if label.endswith(")") and " (table " in label:
        label = label[:label.rindex(" (table ")]
    return Path(label)
