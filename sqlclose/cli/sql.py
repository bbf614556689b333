"""The warehouse path on the command line: ``sqlclose sql`` prints the histogram query;
``sqlclose anonymize --histogram FILE`` (``release_from_histogram``) writes the release query
and its report. See docs/warehouse.md."""

from __future__ import annotations

import json
from pathlib import Path

import click

from sqlclose.cli.common import CONTEXT, OnceCommand, guarded_read_only, placing, say, verbose_option
from sqlclose.cli.progress import search_progress
from sqlclose.errors import SpecError
from sqlclose.model.spec import WAREHOUSE_DIALECTS, Spec

dialect_option = click.option("--dialect", type=click.Choice(WAREHOUSE_DIALECTS),
                              help="The warehouse's SQL dialect (default: [source] dialect).")


@click.command(cls=OnceCommand, context_settings=CONTEXT,
               short_help="Print the histogram query a warehouse runs for the search.",
               epilog="""\b
Example (the rows stay in the warehouse; only counts per combination leave it):
  sqlclose sql people.toml --dialect postgres > histogram.sql
  psql -c "COPY ($(cat histogram.sql)) TO STDOUT WITH CSV HEADER" > histogram.csv
  sqlclose anonymize --histogram histogram.csv people.toml --output release.sql
  psql -c "CREATE TABLE analytics.people_release AS $(cat release.sql)"
""")
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False, path_type=Path))
@dialect_option
@click.option("--query", "which", type=click.Choice(["histogram"]), default="histogram", show_default=True,
              help="Which query to print.")
@verbose_option
@guarded_read_only
def sql(spec_path: Path, dialect: str | None, which: str, verbose: bool) -> None:
    """Print, for SPEC.toml whose [source] is a warehouse table (format = "warehouse"), the one
    query the search needs: rows counted per combination of quasi-identifier and sensitive values.
    Export its result (Parquet or CSV) and pass it to `sqlclose anonymize --histogram`."""
    from sqlclose.model.spec import load_spec

    spec = load_spec(spec_path)
    from sqlclose import api  # once the spec is valid: a mistake in it is told without loading the engines

    say(api.histogram_sql(spec, dialect), artifact=True)  # no ';': it is wrapped in COPY / EXPORT


def release_from_histogram(spec: Spec, histogram: Path, dialect: str | None, output: Path | None,
                           report: Path | None, replace: bool, node: dict[str, int] | None, dry_run: bool,
                           as_json: bool, quiet: bool, progress: bool) -> None:
    """Search over the warehouse's histogram; write the release query and its report."""
    from sqlclose import api
    from sqlclose.model.spec import default_report_path

    out = output or (spec.output.path if spec.output else None)
    if out is None or out.suffix.lower() != ".sql":
        raise SpecError("with --histogram the output is the release query the warehouse runs: give --output "
                        "release.sql or [output] path = \"….sql\"")
    rep = report or (spec.output.report if spec.output and not output else None) or default_report_path(out)
    from sqlclose.release.files import placed_at, refuse_pair_inside_folder_releases
    from sqlclose.release.placing import recover_output
    from sqlclose.release.warehouse import (
        refuse_report_at_verification,
        refuse_verification_at_query,
        refuse_verification_inside_folder_releases,
        verification_path,
    )

    # Refused before the search, as the local path does (write_sql refuses them again, for the API).
    refuse_pair_inside_folder_releases(out, rep)
    refuse_verification_inside_folder_releases(out)
    refuse_report_at_verification(out, rep)  # before any run is settled too
    refuse_verification_at_query(out)
    # A run killed while placing (a link's file: where it placed): settled before the search.
    recover_output(placed_at(out), rep, (placed_at(verification_path(out)),))
    with search_progress(progress and not (quiet or as_json or dry_run)) as on_progress:
        with api.anonymize_histogram(histogram, spec, dialect=dialect, on_progress=on_progress, node=node) as chosen:
            if dry_run:
                found = {"histogram": str(histogram), "rows": chosen.problem.input_rows, "node": chosen.node,
                         "dry_run": True}
                if as_json:
                    say(json.dumps(found, indent=2))
                elif not quiet:
                    say(f"histogram {histogram}: {found['rows']} rows counted; node {_node(chosen.node)}; "
                          "dry run: nothing was written")
                return
            with placing(f"the release query {out} and its report {rep} are in place"):
                doc = chosen.write_sql(out, rep, overwrite=replace)
    if as_json:
        say(json.dumps(doc, indent=2))
    elif not quiet:
        _print_summary(doc, rep)


def _node(node: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in node.items())


def _print_summary(doc: dict, report: Path) -> None:
    w = doc["warehouse"]
    say(f"release query for {w['table']} ({w['dialect']}) -> {doc['output']['path']}")
    say(f"  node       {_node(doc['node'])}")
    say(f"  expected   {doc['output']['rows']} of {doc['input']['rows']} rows in {doc['classes']} classes "
          f"(min size {doc['privacy']['min_class_size']}, {doc['suppressed_rows']} rows suppressed)")
    say(f"  NOT verified locally: the warehouse makes the release; run {w['verification_query']} there "
          "(its ok column must be true)")
    say(f"  report     {report}")
