"""``sqlclose anonymize`` and ``sqlclose explain``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from sqlclose.cli.common import CONTEXT, guarded, json_option, parse_node, quiet_option, verbose_option
from sqlclose.cli.progress import search_progress
from sqlclose.errors import SpecError

EXAMPLE = """\b
Examples:
  sqlclose anonymize datasets/table3/table3.toml
  sqlclose anonymize adult.toml --output out/adult.parquet --node age=2,zip=1
  sqlclose anonymize adult.toml --dry-run
"""


@click.command(context_settings=CONTEXT, epilog=EXAMPLE, short_help="Search, write, verify and report a release.")
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--source", type=click.Path(path_type=Path), help="Input table (overrides [source] path).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Parquet file to write (overrides [output] path).")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path),
              help="JSON report path (default: OUTPUT.report.json).")
@click.option("--overwrite", is_flag=True, default=None, help="Replace an existing output and report.")
@click.option("--force", is_flag=True, help="Redo the release even when the output is up to date (replaces it).")
@click.option("--dry-run", is_flag=True, help="Validate the spec, data and hierarchies; print the plan; write "
              "nothing.")
@click.option("--node", metavar="COL=LEVEL,…", help="Release this satisfying node (e.g. one of the minimal "
              "nodes) instead of the optimum.")
@click.option("--no-progress", is_flag=True, help="Do not show the search's progress.")
@click.option("--engine", "engine_name", help="Run the queries on this engine (duckdb, spark); overrides [engine].")
@click.option("--threads", type=int, help="DuckDB threads (overrides [engine] threads).")
@click.option("--memory-limit", help="DuckDB memory limit, e.g. 2GB; beyond it DuckDB spills to disk.")
@click.option("--temp-directory", type=click.Path(file_okay=False, path_type=Path), help="Where DuckDB spills.")
@click.option("--metric", help="What the release minimizes (overrides [search] metric): discernibility, distortion, "
              "ncp, total, llm, nllm, wllm, wnllm, or custom (with [search.weights]).")
@click.option("--algorithm", type=click.Choice(["incognito", "gaa"]), help="Full-domain Incognito (default) or "
              "GAA's multidimensional recoding (overrides [search] algorithm).")
@click.option("--strategy", help="GAA's merge strategy S1..S7, ldiv or tclo (overrides [search] strategy).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the sign-off page (one self-contained HTML file) here.")
@json_option
@quiet_option
@verbose_option
@guarded
def anonymize(spec_path: Path, source: Path | None, output: Path | None, report: Path | None,
              overwrite: bool | None, force: bool, dry_run: bool, node: str | None, no_progress: bool,
              engine_name: str | None, threads: int | None, memory_limit: str | None, temp_directory: Path | None,
              metric: str | None, algorithm: str | None, strategy: str | None,
              html_path: Path | None, as_json: bool, quiet: bool, verbose: bool) -> None:
    """Search the optimal generalization for SPEC.toml, write it as Parquet, verify it from the
    file, and place it with its JSON report."""
    from sqlclose import api
    from sqlclose.model.spec import default_report_path, load_spec
    from sqlclose.release.files import refuse_unsafe_targets

    spec = with_engine(load_spec(spec_path), engine_name, threads, memory_limit, temp_directory)
    spec = with_search(spec, metric=metric, algorithm=algorithm, strategy=strategy)
    chosen = parse_node(node)
    if dry_run:
        _print_plan(api.plan(source, spec, chosen), as_json, quiet)
        return
    out = output or (spec.output.path if spec.output else None)
    if out is None:
        raise SpecError(f"{spec_path}: no output path: add [output] path = \"…\" or pass --output")
    rep = report or (spec.output.report if spec.output and not output else None) or default_report_path(out)
    if not force and _up_to_date(api, source, spec, out, rep):
        if not quiet:
            click.echo(f"{out} is up to date (same spec, same input); nothing to do (--force redoes it)")
        return
    replace = force or (overwrite if overwrite is not None else bool(spec.output and spec.output.overwrite))
    inputs = [*spec.files_read, *([source] if source else [spec.source.path] if spec.source else [])]
    refuse_unsafe_targets(out, rep, inputs, replace)
    with search_progress(not (quiet or as_json or no_progress)) as on_progress:
        with api.anonymize(source, spec, on_progress=on_progress) as release:
            chosen_release = release.at(chosen) if chosen else release
            doc = chosen_release.write_parquet(out, rep, overwrite=replace)
    if html_path is not None:
        from sqlclose.audit.html import write_html

        write_html(rep, html_path, spec)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    elif not quiet:
        _print_summary(doc, rep)


def with_engine(spec, name: str | None, threads: int | None, memory_limit: str | None,
                temp_directory: Path | None):
    """The spec with the command line's engine settings over its [engine]."""
    given = {"name": name, "threads": threads, "memory_limit": memory_limit, "temp_directory": temp_directory}
    given = {key: value for key, value in given.items() if value is not None}
    if not given:
        return spec
    from pydantic import ValidationError

    from sqlclose.model.spec import EngineSettings, format_validation_error

    current = spec.engine.model_dump(exclude_none=True) if spec.engine else {}
    try:
        settings = EngineSettings.model_validate({**current, **given})
    except ValidationError as e:
        raise SpecError(format_validation_error(e, "command line")) from None
    return spec.model_copy(update={"engine": settings})


def with_search(spec, **given: str | None):
    """The spec with the command line's [search] settings over its own (validated together)."""
    given = {key: value for key, value in given.items() if value is not None}
    if not given:
        return spec
    from pydantic import ValidationError

    from sqlclose.model.spec import Search, format_validation_error

    current = spec.search.model_dump(exclude_none=True)
    if given.get("algorithm", current.get("algorithm")) != "gaa":  # GAA's settings go with GAA only
        current.pop("strategy", None)
        current.pop("scope", None)
    try:
        search = Search.model_validate({**current, **given})
    except ValidationError as e:
        raise SpecError(format_validation_error(e, "command line")) from None
    return spec.model_copy(update={"search": search})


def _up_to_date(api, source, spec, out: Path, report: Path) -> bool:
    """The output exists with a report for the same spec and (keyed) input fingerprint."""
    if not (out.is_file() and report.is_file()):
        return False
    try:
        doc = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if doc.get("spec_sha256") != spec.sha256() or not doc.get("input", {}).get("fingerprint"):
        return False
    from sqlclose.release.files import sha256

    if doc.get("output", {}).get("sha256") != sha256(out):
        return False
    return api.input_fingerprint(source, spec) == doc["input"]["fingerprint"]


@click.command(context_settings=CONTEXT, short_help="What a run would do, and its SQL; writes nothing.", epilog="""\b
Example:
  sqlclose explain datasets/table3/table3.toml
""")
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--source", type=click.Path(path_type=Path), help="Input table (overrides [source] path).")
@click.option("--node", metavar="COL=LEVEL,…", help="Show the release SQL at this node (default: the bottom).")
@json_option
@verbose_option
@guarded
def explain(spec_path: Path, source: Path | None, node: str | None, as_json: bool, verbose: bool) -> None:
    """Show what a run would do: source and rows, each quasi-identifier's hierarchy with example
    generalizations per level, the lattice, the requirements, and the SQL of the histogram scan
    and of the release. Reads the data once (validating it); writes nothing."""
    from sqlclose import api
    from sqlclose.model.spec import load_spec

    _print_plan(api.plan(source, load_spec(spec_path), parse_node(node)), as_json, quiet=False, sql=True)


def _print_plan(plan: dict, as_json: bool, quiet: bool, sql: bool = False) -> None:
    if as_json:
        click.echo(json.dumps(plan, indent=2))
        return
    if quiet:
        return
    click.echo(f"source     {plan['source']}: {plan['rows']} rows ({plan['rows_anonymized']} after NULL policies)")
    click.echo(f"lattice    {plan['lattice_size']} nodes over {len(plan['quasi_identifiers'])} quasi-identifiers")
    for qi in plan["quasi_identifiers"]:
        click.echo(f"  {qi['name']}: {qi['levels']} levels, {qi['leaves']} values, from {qi['origin']}")
        for example in qi["examples"]:
            click.echo("      " + " -> ".join(example))
    req = plan["requirements"]
    click.echo(f"require    k = {req['k']}, suppression <= {req['suppression']:.1%}")
    for name, s in req["sensitive"].items():
        details = ", ".join(f"{k} = {v}" for k, v in s.items() if k != "models")
        click.echo(f"  {name}: {', '.join(s['models'])} ({details})")
    click.echo(f"release    columns {', '.join(plan['released_columns'])}")
    if sql:
        click.echo("\n-- the one scan of the source (histogram of QI and sensitive values):")
        click.echo(plan["sql"]["histogram_scan"])
        click.echo("\n-- the release query (suppressed classes are excluded once the search has run):")
        click.echo(plan["sql"]["release"])
    else:
        click.echo("dry run: nothing was written")


def describe_sensitive(s: dict) -> str:
    """One line of what a sensitive column reached, per model."""
    parts = []
    if "t" in s:
        what = "EMD" if s["emd"] else f"{s['distance']} distance (not EMD)"
        value = s["max_emd"] if s["emd"] else s["max_distance"]
        parts.append(f"max {what} {value:.4f} <= t = {s['t']}" + (f" ({s['distance']})" if s["emd"] else ""))
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
    click.echo(f"released {doc['output']['rows']} of {doc['input']['rows']} rows -> {doc['output']['path']}")
    if doc["node"] is not None:
        click.echo(f"  node       {', '.join(f'{k}={v}' for k, v in doc['node'].items())}")
    else:
        for name, g in doc["generalization"].items():
            levels = ", ".join(f"level {lv}: {n}" for lv, n in (g.get("classes_per_level") or {}).items())
            click.echo(f"  {name:<10} classes at {levels}")
    click.echo(f"  classes    {doc['classes']} (min size {doc['privacy']['min_class_size']}, "
               f"{doc['suppressed_rows']} rows suppressed)")
    for name, s in doc["privacy"]["sensitive"].items():
        click.echo(f"  {name:<10} {describe_sensitive(s)}")
    u = doc["utility"]
    click.echo(f"  utility    discernibility {u['discernibility']}, average class size {u['average_class_size']:.1f}")
    chosen = u.get("alteration", {}).get(u.get("metric"))
    if chosen is not None:
        click.echo(f"             chosen by {u['metric']}: {chosen:.2f} % altered; mean of the seven "
                   f"{u['mean_alteration']:.2f} %")
    if u.get("generalized_percent") is not None:
        click.echo(f"             {u['generalized_percent']:.1f} % of values generalized, {u['root_percent']:.1f} % at "
                   "the root")
    lat, gaa = doc["lattice"], doc.get("gaa")
    if lat is not None:
        click.echo(f"  search     {lat['nodes_evaluated']} nodes evaluated in {lat['queries']} queries, lattice of "
                   f"{lat['size']}, {len(doc['minimal_nodes'])} minimal nodes, {lat['seconds']:.2f} s")
    if gaa is not None:
        click.echo(f"  search     GAA {gaa['strategy']} ({gaa['scope']} scope, merge cost {gaa['metric']}): "
                   f"{gaa['merges']} merges from {gaa['combinations']} combinations, {gaa['seconds']:.2f} s")
    for warning in doc["warnings"]:
        click.echo(f"  warning    {warning}")
    click.echo(f"  verified   sha256 {doc['output']['sha256'][:16]}…; report {report}")
