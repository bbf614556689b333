"""The ``sqlclose`` command. click gives us parsing, --help and exit codes without hand-written argv code.

Exit codes: 0 released and verified; 2 bad input (spec, hierarchy, data, existing output);
3 no generalization satisfies the requirements; 4 the written file failed verification;
1 anything unexpected.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import click

from . import __version__
from .errors import SpecError, SqlcloseError


@click.group()
@click.version_option(__version__, prog_name="sqlclose")
def main() -> None:
    """Publish tables about people safely: k-anonymity and t-closeness by generalization."""
    # SIGTERM unwinds like Ctrl-C, so a stopped job removes its temporary files on the way out.
    signal.signal(signal.SIGTERM, _terminate)


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@main.command()
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--source", type=click.Path(path_type=Path), help="Input table (overrides [source] path).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Parquet file to write (overrides [output] path).")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path),
              help="JSON report path (default: OUTPUT.report.json).")
@click.option("--overwrite", is_flag=True, default=None, help="Replace an existing output and report.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing on success.")
def anonymize(spec_path: Path, source: Path | None, output: Path | None, report: Path | None,
              overwrite: bool | None, as_json: bool, quiet: bool) -> None:
    """Search the optimal generalization for SPEC.toml, write it as Parquet, verify it, report."""
    from .api import anonymize as run
    from .spec import load_spec

    try:
        spec = load_spec(spec_path)
        out = output or (spec.output.path if spec.output else None)
        if out is None:
            raise SpecError(f"{spec_path}: no output path: add [output] path = \"…\" or pass --output")
        rep = report or (spec.output.report if spec.output and not output else None)
        replace = overwrite if overwrite is not None else bool(spec.output and spec.output.overwrite)
        inputs = [*spec.files_read, *([source] if source else [spec.source.path] if spec.source else [])]
        _refuse_existing(out, rep, replace, inputs)
        with run(source, spec) as release:
            doc = release.write_parquet(out, rep, overwrite=replace)
    except SqlcloseError as e:
        click.echo(f"sqlclose: error: {e}", err=True)
        sys.exit(e.exit_code)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    elif not quiet:
        _print_summary(doc)


@main.command()
@click.argument("source", metavar="TABLE")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Take quasi-identifiers, sensitive models and k from a release spec.")
@click.option("--qi", "qis", multiple=True, help="Quasi-identifier column (repeat, or comma-separate).")
@click.option("--sensitive", "sensitives", multiple=True, help="Sensitive column (repeat, or comma-separate).")
@click.option("--k", type=int, help="Require k-anonymity.")
@click.option("--t", "t", type=float, help="Require t-closeness (with --distance) on every sensitive column.")
@click.option("--distance", type=click.Choice(["ordered", "equal", "hierarchical", "variational", "kl"]),
              default="equal", show_default=True, help="Distance for --t (variational and kl are not EMD).")
@click.option("--distinct-l", type=int, help="Require distinct l-diversity.")
@click.option("--entropy-l", type=float, help="Require entropy l-diversity.")
@click.option("--recursive", metavar="C,L", help="Require recursive (c,l)-diversity, e.g. 4,4.")
@click.option("--p", "p", type=int, help="Require p-sensitivity (p distinct values per class).")
@click.option("--hierarchy", "hierarchies", multiple=True, metavar="COLUMN=FILE",
              help="Hierarchy of a sensitive column (hierarchical distance, similarity attack).")
@click.option("--reference", help="Table whose distribution t-closeness compares to (default: TABLE itself).")
@click.option("--skew", type=float, default=3.0, show_default=True,
              help="Skewness attack: a value's class share at least this many times its table share.")
@click.option("--similarity-level", type=int, default=1, show_default=True,
              help="Similarity attack: the hierarchy level whose groups an observer may learn.")
@click.option("--top", type=int, default=10, show_default=True, help="Worst classes listed per model.")
@click.option("--table", help="Table name, for a DuckDB database file.")
@click.option("--delimiter", help="CSV delimiter (default: detected).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(source: str, spec_path: Path | None, qis: tuple[str, ...], sensitives: tuple[str, ...], k: int | None,
          t: float | None, distance: str, distinct_l: int | None, entropy_l: float | None, recursive: str | None,
          p: int | None, hierarchies: tuple[str, ...], reference: str | None, skew: float, similarity_level: int,
          top: int, table: str | None, delimiter: str | None, as_json: bool) -> None:
    """Audit TABLE: k, l-diversity, t-closeness, p, and the homogeneity, skewness and similarity
    attacks. Exit 0 when every threshold given holds, 3 when one fails, 2 on bad input."""
    from .check import check as run_check

    try:
        qi = _split(qis)
        names = _split(sensitives)
        if spec_path is not None:
            flags = {"--sensitive": names, "--t": t, "--distinct-l": distinct_l, "--entropy-l": entropy_l,
                     "--recursive": recursive, "--p": p, "--hierarchy": hierarchies}
            given = [flag for flag, value in flags.items() if value]
            if given:
                raise SpecError(f"{', '.join(given)} cannot be combined with --spec: the spec's [sensitive] "
                                "sections set the models and thresholds (only --k and --qi may override)")
        sensitive = _sensitive_flags(names, t, distance, distinct_l, entropy_l, recursive, p, hierarchies) \
            if names else None
        report = run_check(source, qi or None, sensitive, spec=spec_path, k=k, reference=reference, skew=skew,
                           similarity_level=similarity_level, top=top, table=table, delimiter=delimiter)
    except SqlcloseError as e:
        click.echo(f"sqlclose: error: {e}", err=True)
        sys.exit(e.exit_code)
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else str(report))
    sys.exit(3 if report.passed is False else 0)


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _sensitive_flags(names: list[str], t: float | None, distance: str, distinct_l: int | None,
                     entropy_l: float | None, recursive: str | None, p: int | None,
                     hierarchies: tuple[str, ...]) -> dict[str, dict]:
    files = {}
    for item in hierarchies:
        column, sep, path = item.partition("=")
        if not sep or not path:
            raise SpecError(f"--hierarchy takes COLUMN=FILE, got {item!r}")
        files[column] = path
    unknown = sorted(set(files) - set(names))
    if unknown:
        raise SpecError(f"--hierarchy names {unknown[0]!r}, which is not a --sensitive column")
    rec = None
    if recursive is not None:
        try:
            c, l_ = recursive.split(",")
            rec = {"c": float(c), "l": int(l_)}
        except ValueError:
            raise SpecError(f"--recursive takes C,L (e.g. 4,4), got {recursive!r}") from None
    out = {}
    for name in names:
        entry = {"distance": distance, "t": t, "distinct_l": distinct_l, "entropy_l": entropy_l, "recursive": rec,
                 "p": p, "hierarchy": files.get(name)}
        out[name] = {key: value for key, value in entry.items() if value is not None}
    return out


def _refuse_existing(out: Path, report: Path | None, replace: bool, inputs: list[Path]) -> None:
    """Fail before the search, not after it, when the output is in the way."""
    from .files import refuse_unsafe_targets
    from .release import default_report_path

    refuse_unsafe_targets(out, report or default_report_path(out), inputs, replace)


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


def _print_summary(doc: dict) -> None:
    node = ", ".join(f"{k}={v}" for k, v in doc["node"].items())
    lat = doc["lattice"]
    click.echo(f"released {doc['output']['rows']} of {doc['input']['rows']} rows -> {doc['output']['path']}")
    click.echo(f"  node       {node}")
    click.echo(f"  classes    {doc['classes']} (min size {doc['privacy']['min_class_size']}, "
               f"{doc['suppressed_rows']} rows suppressed)")
    for name, s in doc["privacy"]["sensitive"].items():
        click.echo(f"  {name:<10} {describe_sensitive(s)}")
    click.echo(f"  utility    discernibility {doc['utility']['discernibility']}, "
               f"average class size {doc['utility']['average_class_size']:.1f}")
    click.echo(f"  search     {lat['nodes_evaluated']} nodes evaluated in {lat['queries']} queries, lattice of "
               f"{lat['size']}, {len(doc['minimal_nodes'])} minimal nodes, {lat['seconds']:.2f} s")
    click.echo(f"  verified   sha256 {doc['output']['sha256'][:16]}…; report beside the output")


if __name__ == "__main__":
    main()
