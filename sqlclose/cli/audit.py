"""``sqlclose check``: audit any table, or re-verify a released file against its report."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from sqlclose.cli.common import (
    CONTEXT,
    FINITE_FLOAT,
    OnceCommand,
    engine_options,
    engine_settings,
    guarded_read_only,
    json_option,
    quiet_option,
    say,
    verbose_option,
)
from sqlclose.errors import OptionError, SpecError, VerificationError
from sqlclose.model.spec import ALL_DISTANCES
from sqlclose.model.text import name_cut, name_shown

if TYPE_CHECKING:
    from sqlclose.engine import Engine
    from sqlclose.model.spec import Spec

EXAMPLE = """\b
Examples:
  sqlclose check out/table3/release.parquet --spec datasets/table3/table3.toml
  sqlclose check data.parquet --qi age,zip --sensitive disease --hierarchy disease=disease.csv \\
      --k 5 --t 0.2 --distance hierarchical --json
  sqlclose check out/table3/release.parquet --against out/table3/release.parquet.report.json \\
      --spec datasets/table3/table3.toml
"""


@click.command(cls=OnceCommand, context_settings=CONTEXT, epilog=EXAMPLE,
               short_help="Audit a table, or re-verify a release against its report.")
@click.argument("source", metavar="TABLE")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Take quasi-identifiers, sensitive models and k from a release spec.")
@click.option("--against", "report_path", type=click.Path(dir_okay=False, readable=False, path_type=Path),
              help="Re-verify TABLE against this release report (its manifest): sha256, columns, and every claim "
                   "the file decides (rows, classes, labels and levels, the values reached; docs/verification.md).")
@click.option("--qi", "qis", multiple=True,
              help="Quasi-identifier column (repeat, or comma-separate; a name holding ',' is given by --spec).")
@click.option("--sensitive", "sensitives", multiple=True,
              help="Sensitive column (repeat, or comma-separate; a name holding ',' is given by --spec).")
@click.option("--k", type=int, help="Require k-anonymity.")
@click.option("--t", "t", type=FINITE_FLOAT, help="Require t-closeness (with --distance) on every sensitive column.")
@click.option("--distance", type=click.Choice(ALL_DISTANCES),
              default="equal", show_default=True, help="Distance for --t (variational and kl are not EMD).")
@click.option("--distinct-l", type=int, help="Require distinct l-diversity.")
@click.option("--entropy-l", type=FINITE_FLOAT, help="Require entropy l-diversity.")
@click.option("--recursive", metavar="C,L", help="Require recursive (c,l)-diversity, e.g. 4,4.")
@click.option("--p", "p", type=int, help="Require p-sensitivity (p distinct values per class).")
@click.option("--hierarchy", "hierarchies", multiple=True, metavar="COLUMN=FILE",
              help="Hierarchy of a sensitive column (hierarchical distance, similarity attack; a COLUMN "
                   "holding ',' or '=' is given by --spec).")
@click.option("--hierarchy-delimiter", default=";", show_default=True, metavar="CHAR",
              help="Delimiter of the --hierarchy files (the table's is --delimiter).")
@click.option("--reference", help="Table whose distribution t-closeness compares to (default: TABLE itself).")
@click.option("--skew", type=FINITE_FLOAT, default=3.0, show_default=True,
              help="Skewness attack: a value's class share at least this many times its table share (a "
                   "finite number above 1).")
@click.option("--similarity-level", type=int, default=1, show_default=True,
              help="Similarity attack: the hierarchy level whose groups an observer may learn (1 up to the "
                   "height of every sensitive hierarchy).")
@click.option("--top", type=int, default=10, show_default=True, help="Worst classes listed per model.")
@click.option("--table", help="Table name, for a DuckDB database file.")
@click.option("--delimiter", help="CSV delimiter (default: detected).")
@engine_options
@json_option
@quiet_option
@verbose_option
@guarded_read_only
def check(source: str, spec_path: Path | None, report_path: Path | None, qis: tuple[str, ...],
          sensitives: tuple[str, ...], k: int | None, t: float | None, distance: str, distinct_l: int | None,
          entropy_l: float | None, recursive: str | None, p: int | None, hierarchies: tuple[str, ...],
          hierarchy_delimiter: str, reference: str | None, skew: float, similarity_level: int, top: int,
          table: str | None, delimiter: str | None, engine_name: str | None, threads: int | None,
          memory_limit: str | None, temp_directory: Path | None, as_json: bool, quiet: bool, verbose: bool) -> None:
    """Audit TABLE: k, l-diversity, t-closeness, p, and the homogeneity, skewness and similarity
    attacks. Exit 0 when every threshold given holds, 3 when one fails, 2 on bad input; with
    --against (the report's own claims; no thresholds beside it), 4 when the file does not match its
    report. --quiet prints nothing: the exit code (and a failure's one line on stderr) says it all."""
    from sqlclose.model.text import named_once

    qi = _split(qis)
    names = _split(sensitives)
    named_once(names, "--sensitive")  # collapsed into one model by the flags' dict below, never refused there
    models = _model_flags_given()
    shaping = _flags_given(_SENSITIVE_AUDIT_OPTIONS)
    if report_path is not None:
        _refuse_thresholds_with_against(models)
        _refuse_audit_options_with_against(shaping + _flags_given({"top": "--top"}))
        _refuse_reading_options_with_against(_flags_given({"delimiter": "--delimiter"}))
    if spec_path is not None:
        given = (["--sensitive"] if names else []) + models
        if given:
            raise SpecError(f"{', '.join(given)} cannot be combined with --spec: the spec's [sensitive] "
                            "sections set the models and thresholds (only --k and --qi may override)")
    elif models and not names:
        # Dropped, the thresholds were never judged: the run passed, saying none was given.
        raise SpecError(f"{', '.join(models)} {'needs' if len(models) == 1 else 'need'} a sensitive column to be "
                        "judged on: give --sensitive COLUMN")
    elif shaping and not names:
        # Dropped too: the distribution and attacks they set are measured on sensitive columns only.
        raise SpecError(f"{', '.join(shaping)} {'acts' if len(shaping) == 1 else 'act'} on a sensitive column (the "
                        "distribution t-closeness compares to, the skewness and similarity attacks), and none was "
                        "given: give --sensitive COLUMN")
    elif "--similarity-level" in shaping and not hierarchies:
        raise SpecError(_SIMILARITY_WITHOUT_HIERARCHY + "give --hierarchy COLUMN=FILE")
    from sqlclose.model.spec import load_spec

    spec = load_spec(spec_path) if spec_path is not None else None
    if spec is not None and report_path is None:
        _refuse_shaping_the_spec_cannot_use(shaping, spec)
    # Loaded once the spec is valid: a mistake in it is told without loading the engines.
    from sqlclose.audit.check import at_least_one, refuse_unused_reading_options, spec_reading
    from sqlclose.audit.check import check as run_check
    from sqlclose.engine import engine_from

    if report_path is None:  # named as typed; check() itself refuses them too, for Python's callers
        refuse_unused_reading_options(source, reference if spec_reading(spec) is None else None, table, delimiter,
                                      ("--table", "--delimiter"))

    settings = engine_settings(spec.engine if spec else None, engine_name, threads, memory_limit, temp_directory)
    engine = engine_from(settings) if settings is not None else None
    try:
        if report_path is not None:
            _against(Path(source), report_path, spec, as_json, engine, quiet, table)
            return
        at_least_one(k, "--k")
        at_least_one(top, "--top")
        sensitive = _sensitive_flags(names, t, distance, distinct_l, entropy_l, recursive, p, hierarchies,
                                     hierarchy_delimiter) if names else None
        try:
            report = run_check(source, qi or None, sensitive, spec=spec, k=k, reference=reference, skew=skew,
                               similarity_level=similarity_level if "--similarity-level" in shaping else None,
                               top=top, table=table, delimiter=delimiter,
                               engine=engine)
        except OptionError as e:  # named as Python gives it (skew): here as typed (--skew)
            raise e.renamed(_AUDIT_FLAGS) from None
    finally:
        if engine is not None:
            engine.close()
    if as_json or not quiet:
        say(json.dumps(report.to_dict(), indent=2) if as_json else str(report))
    sys.exit(3 if report.passed is False else 0)


def _against(path: Path, report_path: Path, spec: Spec | None, as_json: bool, engine: Engine | None,
             quiet: bool = False, table: str | None = None) -> None:
    """A released file against its manifest: same bytes, same columns, and every claim of the report
    the file decides (the distances against the file's own distribution, as an auditor holding only
    the file sees them; docs/verification.md, "Re-verifying a release against its report")."""
    from sqlclose.against_report import verify_against_report

    outcome = verify_against_report(path, report_path, spec, engine, table=table)
    if outcome["problems"]:  # with --json, the failure's document says them (one document on stdout)
        raise VerificationError(f"{path} does not match {report_path}: " + "; ".join(outcome["problems"]))
    if as_json:
        say(json.dumps(outcome, indent=2))
    elif not quiet:
        content = "content, " if outcome["content_compared"] else ""
        say(f"{path} matches {report_path}: {content}columns, {outcome['rows']} rows, {outcome['classes']} "
              "classes, labels and levels, k and every value reached the file decides")
        for line in _report_utility(report_path):
            say(line)
        for note in outcome["notes"]:
            say(f"  note: {note}")


def _report_utility(report_path: Path) -> list[str]:
    """The report's information loss, printed once the file matched it: the alterations and shares the
    file decides were held to it (``audit/alterations.py``, ``claims.share_claims``); the notes say
    which could not be re-derived."""
    u = json.loads(report_path.read_text(encoding="utf-8")).get("utility", {})
    alteration = u.get("alteration") or {}
    if not alteration:
        return []
    hidden = u.get("withheld") or {}
    shown = ", ".join(f"{name} {value:.2f} %" if value is not None else
                      f"{name} {'withheld' if name in hidden else 'undefined'}" for name, value in alteration.items())
    mean = u.get("mean_alteration")
    mean_text = f"{mean:.2f} %" if mean is not None else "withheld" if "mean_alteration" in hidden else "undefined"
    return [f"utility (from the report; chosen by {u.get('metric')}): alteration {shown}; mean {mean_text}; "
            f"{_percent(u.get('generalized_percent'))} of values generalized, "
            f"{_percent(u.get('root_percent'))} at the root"]


def _percent(value: object) -> str:
    """A share as the report gives it; one left out or null is told as a mismatch by the check itself."""
    return f"{value:.1f} %" if isinstance(value, (int, float)) and not isinstance(value, bool) else "not given"


# The options that set a sensitive column's models: refused with --spec (which sets them) and
# without --sensitive (nothing to judge them on).
_MODEL_OPTIONS = {"t": "--t", "distance": "--distance", "distinct_l": "--distinct-l", "entropy_l": "--entropy-l",
                  "recursive": "--recursive", "p": "--p", "hierarchies": "--hierarchy",
                  "hierarchy_delimiter": "--hierarchy-delimiter"}


# The options that shape the audit of a sensitive column without being thresholds: refused without
# --sensitive (dropped, they changed nothing) and, with --top, beside --against (which lists no
# classes and measures the report's figures against the file's own distribution).
_SENSITIVE_AUDIT_OPTIONS = {"reference": "--reference", "skew": "--skew", "similarity_level": "--similarity-level"}


# check()'s keywords a bad value is told by (``OptionError``), as the command line spells them.
_AUDIT_FLAGS = {"k": "--k", "top": "--top", "quasi_identifiers": "--qi", **_SENSITIVE_AUDIT_OPTIONS}


def _model_flags_given() -> list[str]:
    """The model options the command line gave, as typed."""
    return _flags_given(_MODEL_OPTIONS)


def _flags_given(options: dict[str, str]) -> list[str]:
    """The ``options`` (parameter name: flag) the command line gave, as typed. Asked of click, not
    of the values: --distance and --skew always hold one (their defaults), and --t 0 is falsy."""
    ctx = click.get_current_context()
    return [flag for name, flag in options.items()
            if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)]


def _refuse_thresholds_with_against(models: list[str]) -> None:
    """--against decides the report's own claims only: a threshold beside it was never judged, and the
    run passed (exit 0) as if it held. Asked of click, so that a default does not count."""
    given = _flags_given({"qis": "--qi", "sensitives": "--sensitive", "k": "--k"}) + models
    if given:
        raise SpecError(f"{', '.join(given)} cannot be combined with --against: --against checks the report's own "
                        "claims against the file; to judge thresholds, run 'sqlclose check TABLE' without --against")


def _refuse_audit_options_with_against(given: list[str]) -> None:
    """--against compares the report's figures with the file's: an audit option beside it changed
    nothing, and the run passed as if it had been applied."""
    if given:
        raise SpecError(f"{', '.join(given)} cannot be combined with --against: --against compares the report's "
                        "figures with the file's own, listing no classes and no attacks; to audit the file with "
                        f"{'it' if len(given) == 1 else 'them'}, run 'sqlclose check TABLE' without --against")


def _refuse_reading_options_with_against(given: list[str]) -> None:
    """The report says how its release is read (a CSV output's delimiter): an option beside
    --against was never used, whatever it said. (--table is checked against the report's.)"""
    if given:
        raise SpecError(f"{', '.join(given)} cannot be combined with --against: the report says how its release "
                        "is read; give the release and its report alone")


_SIMILARITY_WITHOUT_HIERARCHY = ("--similarity-level is a level of a sensitive column's hierarchy (values under one "
                                 "label there count as similar, for the similarity attack), and no sensitive column "
                                 "has one: ")


def _refuse_shaping_the_spec_cannot_use(shaping: list[str], spec: Spec) -> None:
    """The spec's [sensitive] sections are the sensitive columns: without one, or without a hierarchy
    for --similarity-level, the option changed nothing and the run passed as if it had."""
    if shaping and not spec.sensitive:
        raise SpecError(f"{', '.join(shaping)} {'acts' if len(shaping) == 1 else 'act'} on a sensitive column, and "
                        "the spec declares none: add a [sensitive.COLUMN] section to it")
    if "--similarity-level" in shaping and all(s.hierarchy is None for s in spec.sensitive.values()):
        raise SpecError(_SIMILARITY_WITHOUT_HIERARCHY + "give one in the spec's [sensitive.COLUMN] section "
                        "(hierarchy = \"FILE\")")


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _sensitive_flags(names: list[str], t: float | None, distance: str, distinct_l: int | None,
                     entropy_l: float | None, recursive: str | None, p: int | None,
                     hierarchies: tuple[str, ...], delimiter: str = ";") -> dict[str, dict]:
    from sqlclose.model.text import named_once

    files = {}
    for item in hierarchies:
        column, sep, path = item.partition("=")
        if not sep or not path:
            raise SpecError(f"--hierarchy takes COLUMN=FILE, got {item!r}")
        named_once([*files, column], "--hierarchy")  # the last one given was used, silently
        files[column] = path
    unknown = sorted(set(files) - set(names))
    if unknown:
        raise SpecError(f"--hierarchy names {name_shown(unknown[0])}, which is not a --sensitive column")
    if distance == "hierarchical" and t is not None and (missing := [n for n in names if n not in files]):
        raise SpecError(f"--distance hierarchical needs a hierarchy of each --sensitive column: give --hierarchy "
                        f"{missing[0]}=FILE (an ARX-format file: leaf;level 1;…;*)")
    read = _read_hierarchies(files, delimiter)
    rec = None
    if recursive is not None:
        try:
            c, l_ = recursive.split(",")
            rec = {"c": float(c), "l": int(l_)}
        except ValueError:
            raise SpecError(f"--recursive takes C,L (e.g. 4,4), got {recursive!r}") from None
        if not math.isfinite(rec["c"]):  # as typed: 1e400 is read as inf
            from sqlclose.model.text import not_finite

            raise SpecError(f"--recursive: c = {not_finite(c.strip())}: give C,L as finite numbers, e.g. 4,4")
    out = {}
    for name in names:
        hierarchy = {"file": files[name], "delimiter": delimiter} if name in files else None
        entry = {"distance": distance, "t": t, "distinct_l": distinct_l, "entropy_l": entropy_l, "recursive": rec,
                 "p": p, "hierarchy": hierarchy}
        if name in read and _default_stand_in() in read[name].leaves:
            # A release made with nulls = "value" writes the stand-in's rows as NULL: read back as that
            # leaf, as --spec reads them (without, such a release could not be audited: review of the
            # sixty-fourth round).
            entry["nulls"] = "value"
        out[name] = {key: value for key, value in entry.items() if value is not None}
        _validate_flags(out[name], recursive)
    return out


def _read_hierarchies(files: dict[str, str], delimiter: str) -> dict:
    """Each --hierarchy file read once here, so that a mistake in it is told in this command's
    terms (``--hierarchy-delimiter``, not a spec's ``delimiter = …``), naming its column."""
    from sqlclose.errors import HierarchyError
    from sqlclose.model.hierarchy import Hierarchy

    read = {}
    for column, path in files.items():
        try:
            read[column] = Hierarchy.from_csv(path, delimiter, option="--hierarchy-delimiter")
        except HierarchyError as e:
            raise HierarchyError(f"--hierarchy {name_cut(column)}={path}: {e}") from None
    return read


def _default_stand_in() -> str:
    """A spec's default ``null_value``: the leaf a NULL sensitive value stands as."""
    from sqlclose.model.spec import Sensitive

    return Sensitive.model_fields["null_value"].default


# The option each Sensitive key comes from, for messages that name what the user typed.
_FLAG_OF = {"t": "--t", "distance": "--distance", "distinct_l": "--distinct-l", "entropy_l": "--entropy-l",
            "recursive": "--recursive", "p": "--p", "hierarchy": "--hierarchy"}


def _validate_flags(entry: dict, recursive: str | None) -> None:
    """The thresholds given as options, validated as the spec's are, each problem told as one line
    naming the option and its range (``--entropy-l: must be at least 1 (got 0.5)``), not pydantic's."""
    from pydantic import ValidationError

    from sqlclose.model.spec import Sensitive

    try:
        Sensitive.model_validate(entry)
    except ValidationError as e:
        problems = []
        for item in e.errors():
            loc = [str(p) for p in item["loc"] if not str(p).startswith("function-")]
            key = loc[0] if loc else ""
            msg = item["msg"].removeprefix("Value error, ").replace("Input should be", "must be")
            got = recursive if key == "recursive" else entry.get(key)
            # "c must be greater than 0" reads as one; "c give a finite number" did not: "c: give …"
            inner = f"{'.'.join(loc[1:])}{' ' if msg.startswith('must') else ': '}" if len(loc) > 1 else ""
            problems.append(f"{_FLAG_OF.get(key, key)}: {inner}{msg} (got {got})" if key else msg)
        raise SpecError("; ".join(problems)) from None
