"""``sqlclose anonymize`` and ``sqlclose explain``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from sqlclose.cli.common import (
    CONTEXT,
    OnceCommand,
    engine_options,
    guarded,
    guarded_read_only,
    json_option,
    parse_node,
    placing,
    quiet_option,
    say,
    verbose_option,
    with_engine,
)
from sqlclose.cli.progress import search_progress
from sqlclose.cli.sql import dialect_option, release_from_histogram
from sqlclose.errors import DatabaseLocked, EnvironmentFailure, SpecError, SqlcloseError
from sqlclose.model.text import counted, name_cut

EXAMPLE = """\b
Examples:
  sqlclose anonymize datasets/table3/table3.toml
  sqlclose anonymize datasets/table3/table3.toml --output out/t3.parquet --node zip=2,age=2
  sqlclose anonymize datasets/adult/adult.toml --output out/adult.csv
  sqlclose anonymize datasets/adult/adult.toml --output out/releases.duckdb --output-table adult
  sqlclose anonymize datasets/adult/adult.toml --dry-run
  sqlclose anonymize people.toml --histogram histogram.parquet --output release.sql
"""


@click.command(cls=OnceCommand, context_settings=CONTEXT,
               epilog=EXAMPLE, short_help="Search, write, verify and report a release.")
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--source", type=click.Path(path_type=Path),
              help="Input table (overrides [source] path; refused when the spec's source is a query).")
@click.option("--output", "-o", type=click.Path(path_type=Path),
              help="Where to write (overrides [output]): x.parquet, x.csv, x.duckdb with --output-table, or a path "
              "without a suffix for a Parquet folder.")
@click.option("--format", "output_format", type=click.Choice(["parquet", "parquet-folder", "csv", "duckdb"]),
              help="Output format (default: told by the output's suffix; it must fit the suffix).")
@click.option("--output-table", metavar="[SCHEMA.]TABLE", help="Table to write in a DuckDB database output.")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path),
              help="JSON report path (default: OUTPUT.report.json).")
@click.option("--overwrite", is_flag=True, default=None, help="Replace an existing output and report.")
@click.option("--force", is_flag=True, help="Redo the release even when the output is up to date, replacing this "
              "spec's own release (with $SQLCLOSE_FINGERPRINT_KEY set); any other file there still needs overwrite.")
@click.option("--dry-run", is_flag=True, help="Validate the spec, data, hierarchies and outputs, and refuse what the "
              "run refuses before its search (k past the rows, requirements that protect nothing, a kept or "
              "sensitive column the output cannot hold or partition by, a --node that fails, measured alone); "
              "print the plan; search nothing, write nothing.")
@click.option("--node", metavar="COL=LEVEL,…", help="Release this satisfying node instead of the optimum (e.g. a "
              "minimal one: Release.minimal_nodes with --explore lattice): measured alone, no search runs "
              "unless it fails (the error then names the optimum; with --dry-run, the requirements it fails).")
@click.option("--no-progress", is_flag=True, help="Do not show the search's progress.")
@engine_options
@click.option("--metric", help="What the release minimizes (overrides [search] metric): discernibility, distortion, "
              "ncp, total, llm, nllm, wllm, wnllm, or custom (with [search.weights]).")
@click.option("--algorithm", type=click.Choice(["incognito", "gaa"]), help="Full-domain Incognito (default) or "
              "GAA's multidimensional recoding (overrides [search] algorithm).")
@click.option("--strategy", help="GAA's merge strategy S1..S7, ldiv or tclo (overrides [search] strategy).")
@click.option("--explore", type=click.Choice(["lattice", "optimum"]), help="Decide only what the optimum needs "
              "(optimum, the default), or every node (lattice: Python's Release.minimal_nodes lists the minimal nodes; "
              "a --node that fails is told the optimum; the same release, slower under suppression) (overrides "
              "[search] explore).")
@click.option("--histogram", type=click.Path(path_type=Path),
              help="The warehouse path: search over this export of `sqlclose sql`'s result and write the release "
              "query (--output X.sql) for the warehouse to run (docs/warehouse.md).")
@dialect_option
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the sign-off page (one self-contained HTML file) here.")
@json_option
@quiet_option
@verbose_option
@guarded
def anonymize(spec_path: Path, source: Path | None, output: Path | None, output_format: str | None,
              output_table: str | None, report: Path | None,
              overwrite: bool | None, force: bool, dry_run: bool, node: str | None, no_progress: bool,
              engine_name: str | None, threads: int | None, memory_limit: str | None, temp_directory: Path | None,
              metric: str | None, algorithm: str | None, strategy: str | None, explore: str | None,
              histogram: Path | None, dialect: str | None, html_path: Path | None, as_json: bool, quiet: bool,
              verbose: bool) -> None:
    """Search the optimal generalization for SPEC.toml, write it (Parquet, CSV, or a table in a
    DuckDB database), verify it from what was written, and place it with its JSON report."""
    from sqlclose.model.spec import load_spec

    spec = with_engine(load_spec(spec_path), engine_name, threads, memory_limit, temp_directory)
    spec = with_search(spec, metric=metric, algorithm=algorithm, strategy=strategy, explore=explore)
    chosen = parse_node(node)
    _refuse_node_before_reading(chosen, spec)
    # Loaded once the command line and spec are valid: a mistake there is told without loading the
    # engines and the search (~0.7 s of a process).
    from sqlclose import api
    from sqlclose.prepare.sources import query_files
    from sqlclose.release.files import folder_releases_around, found_pair, refuse_page_target
    from sqlclose.release.writers import writer_for

    api.refuse_source_beside_query(source, spec)  # before anything is read or written

    if histogram is not None or dialect is not None:
        if histogram is None or source is not None or html_path is not None or force:
            raise SpecError("--histogram FILE (with --dialect) is the warehouse path: it takes no --source, --html or "
                            "--force (it redoes the query every run; --overwrite replaces one), and --dialect needs "
                            "--histogram")
        replace = overwrite if overwrite is not None else bool(spec.output and spec.output.overwrite)
        release_from_histogram(spec, histogram, dialect, output, report, replace, chosen, dry_run, as_json, quiet,
                               not no_progress)
        return
    if source is None and spec.source is not None and spec.source.kind == "warehouse" and \
            (spec.engine is None or spec.engine.name != "spark"):  # Spark reads its catalog's tables in place
        from sqlclose.prepare.histogram import not_read_here

        raise not_read_here(spec.source)
    given = [source] if source else [spec.source.path] if spec.source and spec.source.path else []
    # A hierarchy "file" that is a folder is refused when it is read, with its column: not here, as a
    # folder an output would lie in.
    read = [path for path in spec.files_read if not path.is_dir()]
    inputs = [*read, *given, *([] if source else query_files(spec.source))]
    target = _target(spec_path, spec, output, output_format, output_table, report, overwrite, inputs)
    _refuse_inside_folder_releases(target)
    _refuse_unwritten_format(spec, target)
    _refuse_temp_directory_in_output(spec, target)
    # A run killed while placing its pair is settled first, whatever stops this one (and before the
    # up-to-date check reads the pair).
    writer_for(target).recover(target)
    current = None if force else _up_to_date(api, source, spec, target, chosen)
    asked = target.overwrite  # what --force grants below is the release's, never a page's
    own = None
    if force and not asked:
        found = found_pair(target.path, target.report)  # before it is judged: a pair placed since is refused
        own = _own_release(spec, target)
    if own is not None:  # --force redoes this spec's release as found, never another file
        target = dataclasses.replace(target, overwrite=True, replacing=found)
    page_overwrite = asked or (html_path is not None and _own_page(html_path, current or own))
    if html_path is not None:  # an up-to-date release's own page is rewritten, as its run wrote it
        refuse_page_target(html_path, [*((p, "a file this job reads") for p in inputs),
                                       (target.path, "the release"), (target.report, "the release's report"),
                                       *folder_releases_around(html_path)],
                           page_overwrite)
    if current is None:  # a dry run too: it validates what the run would refuse, the output included
        writer_for(target).refuse(target, inputs)
    if dry_run:
        _print_plan(api.plan(source, spec, chosen, as_run=True, output_format=target.format,
                             partition_by=target.partition_by), as_json, quiet)
        return
    if current is not None:
        if html_path is not None:
            _write_page(target, html_path, spec, page_overwrite)
        if as_json:
            say(json.dumps(current, indent=2))
        elif not quiet:
            done = f"nothing to do but its page {html_path}, written" if html_path is not None else "nothing to do"
            say(f"{_where(target)} is up to date (same spec, same input, same node); {done} "
                  "(--force redoes it)")
        return
    with search_progress(not (quiet or as_json or no_progress)) as on_progress:
        with api.anonymize(source, spec, on_progress=on_progress, node=chosen,
                           output_format=target.format, partition_by=target.partition_by) as release:
            placed = f"the release {_where(target)} and its report {target.report} are in place and verified"
            with placing(placed):  # a stop from the commit on says so, not that nothing was placed
                doc = release.write(target.path, target.report, target.overwrite, format=target.format,
                                    table=target.table, partition_by=target.partition_by,
                                    replacing=target.replacing)
    if html_path is not None:
        _write_page(target, html_path, spec, page_overwrite)
    try:
        if as_json:
            say(json.dumps(doc, indent=2))
        elif not quiet:
            _print_summary(doc, target.report)
    except OSError as e:  # e.g. `| head` closed the pipe: the release stands, and the message must say so
        raise EnvironmentFailure(f"{placed}, but printing the summary failed ({e.strerror or e})") from None


def with_search(spec, **given: str | None):
    """The spec with the command line's [search] settings over its own (validated together)."""
    given = {key: value for key, value in given.items() if value is not None}
    if not given:
        return spec
    from pydantic import ValidationError

    from sqlclose.model.spec import Search, spec_error

    current = spec.search.model_dump(exclude_none=True)
    if given.get("algorithm", current.get("algorithm")) != "gaa":  # GAA's settings go with GAA only
        current.pop("strategy", None)
        current.pop("scope", None)
    else:  # and Incognito's with Incognito
        current.pop("explore", None)
    try:
        search = Search.model_validate({**current, **given})
    except ValidationError as e:
        raise spec_error(e, "command line") from None
    return spec.model_copy(update={"search": search})


def _target(spec_path: Path, spec, output: Path | None, fmt: str | None, table: str | None, report: Path | None,
            overwrite: bool | None, inputs: list[Path]):
    """Where the release goes: the command line's --output (its format told by its suffix unless
    --format) over the spec's [output]; --output-table names the table of a DuckDB database. An
    input named as the output is refused first, whatever its suffix."""
    from sqlclose.release.files import refuse_inputs
    from sqlclose.release.writers import Target

    for path, role in ((output, "output"), (report, "report")):
        if path is not None:
            refuse_inputs(path, role, inputs)

    given = spec.output
    if output is None and given is None:
        raise SpecError(f"{spec_path}: no output path: add [output] path = \"…\" or pass --output")
    replace = overwrite if overwrite is not None else bool(given and given.overwrite)
    if output is not None:
        target = Target.of(output, report, fmt, table, replace)
        # The spec's partition columns go with a folder --output (they were dropped without a word);
        # a file output holds no partitions, and the spec's [output] is replaced whole.
        if given is not None and target.format == "parquet-folder":
            return dataclasses.replace(target, partition_by=tuple(given.partition_by))
        return target
    return Target.of(given.path, report or given.report, fmt or given.format, table or given.table, replace,
                     given.partition_by)


def _refuse_unwritten_format(spec, target) -> None:
    """A format the engine does not write (a Parquet file or CSV asked of Spark): told before its
    session starts, not after the search (the write refuses it too, for the Python API)."""
    from sqlclose.release.writers import refuse_unwritten_format

    if spec.engine is not None:
        refuse_unwritten_format(spec.engine.name, target.format)


def _refuse_temp_directory_in_output(spec, target) -> None:
    """DuckDB's spill folder at or inside the output path: the job searched, then found its own spill
    files in the output folder and stopped (an empty folder left there), or, given the output file's
    own path, DuckDB removed it at close. Told before the engine starts (a dry run too)."""
    temp = spec.engine.temp_directory if spec.engine is not None else None
    if temp is None:
        return
    temp, out = Path(temp).absolute(), Path(target.path).absolute()
    for path, what in ((out, "the output path"), (Path(target.report).absolute(), "the report's path")):
        if temp == path or path in temp.parents:
            raise SpecError(f"temp_directory {temp} lies {'at' if temp == path else 'inside'} {what} {path}: DuckDB "
                            "spills there while the job runs, and removes it after; give a folder outside the "
                            "release (e.g. beside it)")


def _refuse_inside_folder_releases(target) -> None:
    """Refuse an output or report inside a Parquet folder release, as a page there is: before the
    search (``Release.write`` refuses it again, for the Python API)."""
    from sqlclose.release.files import refuse_pair_inside_folder_releases

    refuse_pair_inside_folder_releases(target.path, target.report)


def _own_page(page: Path, current: dict | None) -> bool:
    """Whether ``page`` is the sign-off page of the up-to-date release ``current`` (its report)."""
    if current is None or not page.is_file():
        return False
    from sqlclose.audit.html import is_page_of

    return is_page_of(page, current)


def _write_page(target, page: Path, spec, overwrite: bool) -> None:
    """The sign-off page of the release just placed (or found up to date). It is written last: a
    failure here says that the release stands, since it was placed and verified before.
    ``overwrite``: an existing page may be replaced (else one that appeared since it was checked is not)."""
    from sqlclose.audit.html import write_html

    try:
        write_html(target.report, page, spec, overwrite=overwrite)
    except (OSError, SqlcloseError) as e:  # a signal (Interrupted, a KeyboardInterrupt) passes: told as such
        reason = e if isinstance(e, SqlcloseError) else (e.strerror or e)
        raise EnvironmentFailure(f"the release {_where(target)} and its report {target.report} are in place and "
                                 f"verified, but its page {page} was not written ({reason}); write it with "
                                 f"`sqlclose report {target.report} --html PAGE`") from None


def _where(target) -> str:
    return f"{target.path} (table {name_cut(target.table)})" if target.table else str(target.path)


def _own_release(spec, target) -> dict | None:
    """The report of the output when this spec made it (its keyed ``spec_sha256``, so only with the
    operator's key) in the target's format and table, and the output is still what the report
    vouches for; else None. What ``--force`` may replace without overwrite: a file of anyone else's
    at the output path (or another table of the database) is not replaced."""
    report = target.report
    if not report.is_file() or not target.path.exists():
        return None
    try:
        doc = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    from sqlclose.against_report import released_digest
    from sqlclose.engine.listing import files_below
    from sqlclose.release.files import keyed, operator_key

    published = keyed(operator_key(), spec.sha256())
    if not isinstance(doc, dict) or published is None or doc.get("spec_sha256") != published:
        return None
    output = doc.get("output")
    if not isinstance(output, dict) or output.get("format", "parquet") != target.format or \
            _table(output.get("table")) != _table(target.table):
        return None  # another form at the path (another table of the database): not the release this run makes
    try:  # a file added to a folder, hidden or not (``.notes``, ``_SUCCESS``), changes its digest: not up to date
        if released_digest(target.path, output) != (output.get("content_digest") or output.get("sha256")):
            return None
    except DatabaseLocked:  # whether it is up to date cannot be told while another process holds it: exit 5
        raise
    except SqlcloseError:
        return None
    if target.path.is_dir() and ((below := files_below(target.path)).links or below.special):
        # A link or a pipe added since, which its digest lists none of: readers follow a link to rows
        # nothing vouches for, and would try to read a pipe (``check --against``: not the release).
        return None
    return doc


def _up_to_date(api, source, spec, target, chosen: dict[str, int] | None) -> dict | None:
    """The report of the output when it is this spec's own release (``_own_release``) of the same
    (keyed) input fingerprint and node (``--node``'s, else whatever the spec's search chose), in the
    same form, made by this sqlclose (version and report schema); else None."""
    from sqlclose._version import __version__, build
    from sqlclose.release.report import SCHEMA_VERSION

    doc = _own_release(spec, target)
    if doc is None or not isinstance(doc.get("input"), dict) or not doc["input"].get("fingerprint"):
        return None
    if (doc.get("sqlclose_version"), doc.get("sqlclose_build"), doc.get("schema_version")) != \
            (__version__, build(), SCHEMA_VERSION):
        return None  # made by another sqlclose: an upgrade (a fix of what a release holds) redoes it
    if doc.get("node_given") is not (chosen is not None) or (chosen is not None and doc.get("node") != chosen):
        return None  # another node than asked for (a report without node_given is older: redo it)
    if list(doc["output"].get("partition_by") or []) != list(target.partition_by):
        return None  # a folder partitioned otherwise: the spec hash leaves [output] out
    return doc if api.input_fingerprint(source, spec) == doc["input"]["fingerprint"] else None


def _table(name: str | None) -> str | None:
    """A DuckDB output table as the catalog knows it (``People`` is ``main.people``)."""
    from sqlclose.model.spec import table_identity

    return table_identity(name) if name else None


@click.command(cls=OnceCommand, context_settings=CONTEXT,
               short_help="What a run would do (its SQL with --show-values); writes nothing.", epilog="""\b
Example:
  sqlclose explain datasets/table3/table3.toml
""")
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--source", type=click.Path(path_type=Path),
              help="Input table (overrides [source] path; refused when the spec's source is a query).")
@click.option("--node", metavar="COL=LEVEL,…", help="The node to show the release SQL at (with --show-values), "
              "a level for every quasi-identifier (default: the bottom).")
@click.option("--show-values", is_flag=True, help="Give example generalizations of hierarchies whose leaves are "
              "the data's values too, and the SQL, whose constants count them (withheld by default: a job's log "
              "would hold them).")
@json_option
@verbose_option
@guarded_read_only
def explain(spec_path: Path, source: Path | None, node: str | None, show_values: bool, as_json: bool,
            verbose: bool) -> None:
    """Show what a run would do: source and rows, each quasi-identifier's hierarchy with example
    generalizations per level, the lattice, the requirements, and with --show-values the SQL of the
    histogram scan and of the release. Reads the data once (validating it); writes nothing."""
    from sqlclose.model.spec import load_spec

    spec, chosen = load_spec(spec_path), parse_node(node)
    _refuse_node_before_reading(chosen, spec)  # as anonymize: a node to GAA was told after the data's scan
    from sqlclose import api  # once the spec is valid (as anonymize)

    _print_plan(api.plan(source, spec, chosen, values=show_values), as_json, quiet=False, sql=True,
                node_given=chosen is not None)


def _refuse_node_before_reading(chosen: dict[str, int] | None, spec) -> None:
    """``--node`` told now, before the data is read: any node to GAA, else its names (its levels:
    before the search)."""
    if chosen is not None:
        from sqlclose.model.lattice import refuse_node_before_reading

        refuse_node_before_reading(chosen, spec.search.algorithm, list(spec.quasi_identifiers))


def _print_plan(plan: dict, as_json: bool, quiet: bool, sql: bool = False, node_given: bool = False) -> None:
    if as_json:
        say(json.dumps(plan, indent=2))
        return
    if quiet:
        return
    say(f"source     {plan['source']}: {plan['rows']} rows ({plan['rows_anonymized']} after NULL policies)")
    search, qis = plan["search"], len(plan["quasi_identifiers"])
    if search["algorithm"] == "gaa":
        say(f"search     GAA, multidimensional recoding over {qis} quasi-identifiers (no lattice): strategy "
              f"{search['strategy']}, scope {search['scope']}, metric {search['metric']}")
    elif (plan.get("node_measured") or {}).get("satisfies"):  # the run measures it alone: no search to describe
        say(f"search     none: the node given is released (a lattice of {plan['lattice_size']} nodes, "
              f"{qis} quasi-identifiers)")
    else:
        say(f"search     Incognito over a lattice of {plan['lattice_size']} nodes, {qis} quasi-identifiers: "
              f"metric {search['metric']}, " + ("deciding every node" if search["explore"] == "lattice" else
                                                "deciding what the optimum needs"))
    for qi in plan["quasi_identifiers"]:
        values = "values not counted" if qi["leaves"] is None else counted(qi["leaves"], "value")
        say(f"  {qi['name']}: {qi['levels']} levels, {values}, from {qi['origin']}; {qi['domain']}")
        for example in qi["examples"]:
            say("      " + " -> ".join(example))
        if qi["examples_withheld"]:
            say(f"      examples withheld: {qi['examples_withheld']} (or explain --show-values)")
    req = plan["requirements"]
    suppression = "no record suppressed (GAA)" if search["algorithm"] == "gaa" else \
        f"suppression <= {req['suppression']:.1%}"
    say(f"require    k = {req['k']}, {suppression}")
    for name, s in req["sensitive"].items():
        details = ", ".join(f"{k} = {v}" for k, v in s.items() if k != "models")
        say(f"  {name}: {', '.join(s['models'])} ({details})")
    say(f"release    columns {', '.join(plan['released_columns'])}")
    for warning in plan["warnings"]:
        say(f"warning    {warning}")
    if sql and plan["sql"]["withheld"]:
        say(f"\n-- the SQL of the scan and of the release is withheld: {plan['sql']['withheld']}")
    elif sql:
        say("\n-- the one read of the source's rows (QI and sensitive values as codes, "
              + ("grouped and counted):" if plan["sql"]["histogram_scan_groups"] else
                 "a row each, as they stand: nearly every row is its own combination):"))
        say(plan["sql"]["histogram_scan"], artifact=True)
        if plan["sql"]["release"] is None:
            say("\n-- the release query maps each combination of quasi-identifier values to its class's labels, "
                  "which GAA chooses as it runs: it exists only after the search (anonymize writes with it)")
            return
        at = ", ".join(f"{name}={level}" for name, level in plan["release_node"].items())
        which = (f"at the node given ({at})" if node_given else
                 f"at the bottom node ({at}: every quasi-identifier as it is), not the node the search will choose: "
                 "give --node to see another")
        say(f"\n-- the release query {which}; suppressed classes are excluded once the search has run:")
        say(plan["sql"]["release"], artifact=True)
    else:
        if plan["node_measured"] is not None:  # a dry run's --node: what the run will do with it
            at = ", ".join(f"{name}={level}" for name, level in plan["node_measured"]["node"].items())
            say(f"node       {at}: measured alone, it satisfies the requirements (the run releases it "
                  "without a search)")
        say("dry run: nothing was written")


def describe_sensitive(s: dict) -> str:
    """One line of what a sensitive column reached, per model."""
    parts = []
    if "t" in s:
        what = "EMD" if s["emd"] else f"{s['distance']} distance (not EMD)"
        value = s.get("max_emd" if s["emd"] else "max_distance")
        shown = "withheld from the report (rows suppressed)" if value is None else f"{value:.4f}"
        parts.append(f"max {what} {shown} <= t = {s['t']}" + (f" ({s['distance']})" if s["emd"] else ""))
    if "distinct_l" in s:
        parts.append(f"distinct l {s['distinct_l']['reached']} >= {s['distinct_l']['l']}")
    if "entropy_l" in s:
        parts.append(f"entropy l {s['entropy_l']['reached']:.3f} >= {s['entropy_l']['l']}")
    if "recursive" in s:
        r = s["recursive"]
        parts.append(f"recursive r1/tail {r['reached']:.3f} < c = {r['c']} (l = {r['l']})")
    if "p" in s:
        parts.append(f"p {s['p']['reached']} >= {s['p']['p']}")
    return "; ".join(parts)


def _print_summary(doc: dict, report: Path) -> None:
    table = doc["output"].get("table")
    where = doc["output"]["path"] + (f" (table {name_cut(table)})" if table else "")
    say(f"released {doc['output']['rows']} of {doc['input']['rows']} rows -> {where}")
    if doc["node"] is not None:
        say(f"  node       {', '.join(f'{k}={v}' for k, v in doc['node'].items())}")
    else:
        for name, g in doc["generalization"].items():
            levels = ", ".join(f"level {lv}: {n}" for lv, n in (g.get("classes_per_level") or {}).items())
            say(f"  {name:<10} classes at {levels}")
    say(f"  classes    {doc['classes']} (min size {doc['privacy']['min_class_size']}, "
          f"{doc['suppressed_rows']} rows suppressed)")
    for name, s in doc["privacy"]["sensitive"].items():
        say(f"  {name:<10} {describe_sensitive(s)}")
    u = doc["utility"]
    chose = ""
    if u.get("metric") == "discernibility":  # the default metric says it chose, as the seven do below
        chose = " (the search's metric; the node was given)" if doc.get("node_given") else " (chose the release)"
    say(f"  utility    discernibility {u['discernibility']}{chose}, average class size "
          f"{u['average_class_size']:.1f}")
    chosen = u.get("alteration", {}).get(u.get("metric"))
    by = f"by {u['metric']} (the node was given, not chosen by it)" if doc.get("node_given") else \
        f"chosen by {u['metric']}"
    if chosen is not None:
        mean = u.get("mean_alteration")
        say(f"             {by}: {chosen:.2f} % altered; mean of the seven "
              + (f"{mean:.2f} %" if mean is not None else "withheld"))
    hidden = u.get("withheld") or {}
    if u.get("metric") in hidden:
        say(f"             {by}: its alteration is withheld from the report: {hidden[u['metric']]}")
    elif hidden:
        say(f"             withheld from the report: {', '.join(hidden)} (see utility.withheld)")
    if u.get("generalized_percent") is not None:
        say(f"             {u['generalized_percent']:.1f} % of values generalized, {u['root_percent']:.1f} % at "
              "the root")
    lat, gaa = doc["lattice"], doc.get("gaa")
    if lat is not None and not lat.get("searched", True):  # a report before the field: searched
        say(f"  search     none: the node was given, and measured alone (lattice of {lat['size']} nodes)")
    elif lat is not None:
        explored = "decided whole" if lat["complete"] else "explored for the optimum alone"
        say(f"  search     lattice of {lat['size']} nodes, {explored}, {lat['seconds']:.2f} s")
    if gaa is not None:
        say(f"  search     GAA {gaa['strategy']} ({gaa['scope']} scope, merge cost {gaa['metric']}): "
              f"{gaa['seconds']:.2f} s")
    for warning in doc["warnings"]:
        say(f"  warning    {warning}")
    digest = doc["output"]["sha256"] or doc["output"]["content_digest"]
    shown = f"sha256 {digest[:16]}" if doc["output"]["sha256"] else digest[:digest.index(":") + 17]
    say(f"  verified   {shown}…; report {report}")
