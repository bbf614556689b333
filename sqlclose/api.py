"""The Python entry points: ``anonymize`` a source under a spec."""

from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlclose.engine import DuckDBEngine, Engine, engine_from
from sqlclose.engine.base import FileRead
from sqlclose.errors import EngineError, InputError, NoSolutionError, SpecError
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.spec import Sensitive, Source, Spec, as_spec
from sqlclose.prepare.problem import Problem, keyed_fingerprint, prepare
from sqlclose.prepare.sources import (
    Opened,
    SourceLike,
    brings_engine,
    open_source,
    refuse_index_columns,
    spec_engine,
)
from sqlclose.privacy.criteria import Criterion, criteria_for
from sqlclose.release.checkpoints import checkpoint
from sqlclose.release.files import keyed, sha256
from sqlclose.release.release import MAX_LABELS_SHOWN, Release, RunObjects
from sqlclose.release.warehouse import WarehouseRelease
from sqlclose.release.writers import content_digest
from sqlclose.search import ProgressCallback, SearchResult
from sqlclose.search.hybrid import search_problem
from sqlclose.search.incognito import incognito
from sqlclose.search.utility_costs import search_cost

# GAA, plans and checks import their modules when called: a plain run does not load them
# (docs/performance.md "Cold start"). The warehouse release is imported here, ~5 ms, so that
# anonymize_histogram's return type resolves (typing.get_type_hints, documentation tools).

FINGERPRINT_KEY_VARIABLE = "SQLCLOSE_FINGERPRINT_KEY"


def anonymize(source: SourceLike, spec: Spec | str | Path | dict, *, engine: Engine | None = None,
              on_progress: ProgressCallback | None = None, fingerprint_key: str | None = None) -> Release:
    """Find the optimal full-domain generalization of ``source`` that satisfies ``spec`` — or, with
    ``[search] algorithm = "gaa"``, GAA's multidimensional recoding (a ``GaaRelease``).

    ``source`` is a path (a Parquet file or folder, a CSV, a DuckDB file with the spec's table),
    a ``(duckdb connection, "schema.table")`` pair, a DuckDB relation, a pyarrow Table, a pandas
    DataFrame or a Spark DataFrame (on a Spark engine); ``None`` takes the spec's ``[source]``
    (also a query, a glob pattern or a warehouse table). Raises ``NoSolutionError`` when no node
    satisfies, ``InputError`` (bad input) or ``SpecError`` (a bad spec) before anything is written.
    ``fingerprint_key`` (default: $SQLCLOSE_FINGERPRINT_KEY) is the operator's secret that keys
    the input fingerprint in the report; without one the report records no fingerprint.
    """
    started = time.perf_counter()
    spec = as_spec(spec)
    if engine is None:
        return _anonymize(source, spec, None, on_progress, fingerprint_key, started)
    # An engine the caller gave outlives the release: what this run makes on it is listed, and
    # dropped when the release closes (at once when the run fails), leaving the engine as it was.
    run = RunObjects()
    made: list = []
    try:
        with engine.objects_made() as made:
            release = _anonymize(source, spec, engine, on_progress, fingerprint_key, started, run)
    except BaseException:
        engine.drop_objects(made)
        raise
    run.objects.extend(made)
    return release


def _anonymize(source: SourceLike, spec: Spec, engine: Engine | None, on_progress: ProgressCallback | None,
               fingerprint_key: str | None, started: float, run: RunObjects | None = None) -> Release:
    given = engine
    key = operator_key(fingerprint_key)  # keys the fingerprint and the report's digests
    opened = open_for(source, spec, engine)
    engine = opened.engine
    try:
        timings = {}
        checkpoint("scan")
        problem = prepare(engine, opened.relation, spec, opened.label, key)
        timings["prepare_seconds"] = time.perf_counter() - started
        criteria = criteria_for(spec.k, problem.sas)
        _refuse_k_over_rows(spec, problem)
        inputs = [*opened.files, *spec.files_read]
        if spec.search.algorithm == "gaa":
            from sqlclose.release.gaa_release import GaaRelease
            from sqlclose.search.gaa_run import run_gaa

            gaa = run_gaa(problem, criteria, spec.search)
            timings["search_seconds"] = gaa.result.seconds
            return GaaRelease(problem, None, criteria, spec.sha256(), opened.label, timings,
                              owns_engine=given is None, digest_key=key, inputs=inputs,
                              selection=spec.search, gaa_run=gaa, hierarchy_files=_hierarchy_files(spec), _run=run,
                              _drops_run=run is not None)
        started = time.perf_counter()
        result = _search(problem, criteria, spec, _with_checkpoint(on_progress))
        timings["search_seconds"] = time.perf_counter() - started  # with the histogram's collection, when local
    except BaseException:
        if given is None:
            engine.close()  # temp objects (and our own connection) go; a caller's connection stays
        raise
    return Release(problem, result, criteria, spec.sha256(), opened.label, timings, owns_engine=given is None,
                   digest_key=key, inputs=inputs, selection=spec.search,
                   hierarchy_files=_hierarchy_files(spec), _run=run, _drops_run=run is not None)


def _with_checkpoint(on_progress: ProgressCallback | None) -> ProgressCallback:
    """The caller's progress callback, with the "search" checkpoint (tests hold a run there)."""

    def progress(event: Any) -> None:
        checkpoint("search")
        if on_progress is not None:
            on_progress(event)

    return progress


def _hierarchy_files(spec: Spec) -> dict[str, tuple[Path, str]]:
    """Per column, the hierarchy file it uses and its delimiter (the report names them)."""
    given = dict(spec.quasi_identifiers)
    given.update({name: s.hierarchy for name, s in spec.sensitive.items() if s.hierarchy is not None})
    return {name: (Path(h.file), h.delimiter) for name, h in given.items() if h.file is not None}


def anonymize_histogram(histogram: str | Path, spec: Spec | str | Path | dict, *, dialect: str | None = None,
                        on_progress: ProgressCallback | None = None) -> WarehouseRelease:
    """The warehouse path (docs/warehouse.md): search over ``histogram`` — the warehouse's export
    (Parquet or CSV) of ``histogram_sql(spec)``'s result, counts only — and return the release as
    a query for the warehouse (``release_sql()``, ``write_sql(path)``) in ``dialect`` (default:
    the spec's [source] dialect). Raises ``NoSolutionError`` when no node satisfies."""
    from sqlclose.prepare import histogram as hist
    from sqlclose.sql.warehouse import warehouse_table

    spec = as_spec(spec)
    source = hist.warehouse_source(spec)
    dialect = hist.dialect_of(spec, dialect)
    if spec.search.algorithm != "incognito":
        raise SpecError(f"[search] algorithm = {spec.search.algorithm!r}: the warehouse path releases a full-domain "
                        "generalization (incognito), whose lookups the release query carries")
    started = time.perf_counter()
    histogram = Path(histogram).expanduser()  # "~": the home folder, as in a spec
    opened = hist.open_histogram(histogram, spec)
    try:
        problem = hist.prepare_histogram(opened, spec)
        timings = {"prepare_seconds": time.perf_counter() - started}
        criteria = criteria_for(spec.k, problem.sas)
        _refuse_k_over_rows(spec, problem)
        result = _search(problem, criteria, spec, on_progress)
        timings["search_seconds"] = result.seconds
    except BaseException:
        opened.engine.close()
        raise
    drop = tuple(name for name, s in [*spec.quasi_identifiers.items(), *spec.sensitive.items()] if s.nulls == "drop")
    return WarehouseRelease(problem, result, criteria, spec.sha256(), opened.label, timings,
                            digest_key=operator_key(), inputs=[histogram, *spec.files_read],
                            table=warehouse_table(source.table_parts), table_name=str(source.table),
                            dialect=dialect, drop_nulls=drop, selection=spec.search)


def histogram_sql(spec: Spec | str | Path | dict, dialect: str | None = None) -> str:
    """The one query a warehouse runs for the search (docs/warehouse.md): rows counted per
    combination of quasi-identifier and sensitive values, in ``dialect`` (default: the spec's)."""
    from sqlclose.prepare import histogram as hist

    return hist.histogram_sql(as_spec(spec), dialect)


def _refuse_k_over_rows(spec: Spec, problem: Problem) -> None:
    if spec.k > problem.rows:
        raise NoSolutionError(f"k = {spec.k} is larger than the table ({problem.rows} rows): no "
                              "generalization can make classes that big; lower k")


def _search(problem: Problem, criteria: list[Criterion], spec: Spec,
            on_progress: ProgressCallback | None) -> SearchResult:
    """Incognito under the spec's metric; raises NoSolutionError when no node satisfies."""
    cost = search_cost(problem, spec.search.metric_name, spec.search.weights)
    with search_problem(problem) as searched:  # on Spark: locally over the collected histogram
        result = incognito(searched, criteria, on_progress, cost, spec.search.exploring)
    if result.optimum is None:
        raise NoSolutionError(_no_solution_message(spec, problem.rows, result.lattice_size))
    return result


def plan(source: SourceLike, spec: Spec | str | Path | dict, node: dict[str, int] | None = None,
         examples: int = 3) -> dict:
    """What a run would do, without searching or writing: the source and its rows, each
    quasi-identifier's hierarchy (levels, a few example generalizations), the lattice, the models
    and thresholds, and the SQL of the histogram scan and of the release (at ``node``, default
    the bottom). Validates everything a run validates (columns, hierarchies, NULLs)."""
    spec = as_spec(spec)
    opened = open_for(source, spec, None)
    try:
        problem = prepare(opened.engine, opened.relation, spec, opened.label)
        levels = tuple((node or {}).get(qi.name, 0) for qi in problem.qis)
        from sqlclose.prepare.plan import describe_problem

        return describe_problem(problem, spec, levels, examples)
    finally:
        opened.engine.close()


def input_fingerprint(source: SourceLike, spec: Spec | str | Path | dict,
                      fingerprint_key: str | None = None) -> str | None:
    """The keyed fingerprint a run would record for this input (None without a key): one scan."""
    spec = as_spec(spec)
    key = operator_key(fingerprint_key)
    if key is None:
        return None
    opened = open_for(source, spec, None)
    try:
        return keyed_fingerprint(opened.engine, opened.relation, key)
    finally:
        opened.engine.close()


def hierarchy_of(spec: Spec | str | Path | dict, column: str, source: SourceLike = None) -> Hierarchy:
    """The hierarchy a run would use for a quasi-identifier: read, or built by its rule from the
    data, and validated against the data (every value a leaf)."""
    spec = as_spec(spec)
    if column not in spec.quasi_identifiers:
        raise SpecError(f"{column!r} is not a quasi-identifier of the spec (those are: "
                        f"{', '.join(repr(c) for c in spec.quasi_identifiers)})")
    opened = open_for(source, spec, None)
    try:
        problem = prepare(opened.engine, opened.relation, spec, opened.label)
        return next(qi.hierarchy for qi in problem.qis if qi.name == column)
    finally:
        opened.engine.close()


def open_for(source: SourceLike, spec: Spec, engine: Engine | None = None) -> Opened:
    """Open the source as a run does: on the given engine, else on the spec's [engine], else on
    DuckDB (also for callers that prepare once and search many times, like ``sqlclose.sweep``;
    the caller closes ``Opened.engine`` when it passed none)."""
    if source is None:
        if spec.source is None:
            raise SpecError("no source given: pass one, or add a [source] section with path = \"…\" to the spec")
        source = spec.source
    if isinstance(source, Source) and source.kind == "warehouse":
        return _open_catalog_table(source, spec, engine)
    refuse_index_columns(source, [*spec.quasi_identifiers, *spec.sensitive, *spec.identifiers])
    numeric = tuple(name for name, s in spec.sensitive.items() if s.distance == "ordered")
    made = spec_engine(spec.engine, source) if engine is None else None
    try:
        return open_source(source, engine or made, FileRead.of(spec.source, numeric))
    except BaseException:
        if made is not None:
            made.close()
        raise


def _open_catalog_table(source: Source, spec: Spec, engine: Engine | None) -> Opened:
    """A warehouse table is read in place when the run's engine is that warehouse: a table of the
    Spark catalog on the Spark engine. Elsewhere sqlclose cannot reach it: the histogram path is
    the way (docs/warehouse.md)."""
    wants_spark = engine is None and spec.engine is not None and spec.engine.name == "spark"
    made = engine_from(spec.engine) if wants_spark else None
    runner = engine or made
    if runner is None or runner.name != "spark" or source.dialect not in (None, "spark"):
        if made is not None:
            made.close()
        from sqlclose.prepare.histogram import not_read_here

        raise not_read_here(source)
    try:
        return open_source((runner.spark, source.table), runner)
    except BaseException:
        if made is not None:
            made.close()
        raise


def operator_key(given: str | None = None) -> str | None:
    """The operator's secret: ``given``, else $SQLCLOSE_FINGERPRINT_KEY; None without one. It keys
    the input fingerprint and every digest a report publishes (``files.keyed``)."""
    return (given if given is not None else os.environ.get(FINGERPRINT_KEY_VARIABLE)) or None




def _no_solution_message(spec: Spec, rows: int, size: int) -> str:
    parts = [f"k = {spec.k}"] + [f"{', '.join(s.models)} on {name!r}" for name, s in spec.sensitive.items()]
    return (f"no generalization satisfies {', '.join(parts)} with suppression ≤ {spec.suppression:.1%} "
            f"(searched the lattice of {size} nodes over {rows} rows); relax t or k, allow more suppression, "
            "or add hierarchy levels")


AGAINST_TOLERANCE = 1e-9  # the report's values and the re-check's may differ in the last float bits


def verify_against_report(path: Path, report_path: Path, spec: Spec | str | Path | None = None,
                          engine: Engine | None = None) -> dict:
    """Re-verify a released file (or table) against its report (its manifest): the file's sha256
    (a table's content digest), its columns, and every claim of the report the file decides
    (``audit.claims``: rows released against input, dropped and suppressed rows, classes and
    smallest class, discernibility, labels and levels, every l/p value, each sensitive column's
    largest distance — against the file's own distribution, the report's ``t_against_release``,
    and, with nothing suppressed, ``max_emd`` — and ``max_emd`` within t). A hierarchy (a
    hierarchical distance's, or a quasi-identifier's, whose levels are checked against the file's
    labels) comes from the file the report names (refused if its keyed digest says it changed; read
    as it is, with a note in ``notes``, when no operator's key gives one), or from ``spec`` when
    given. ``engine`` runs the audit of a file (a DuckDB table is read on its own database's
    connection)."""
    path, report_path = Path(path).expanduser(), Path(report_path).expanduser()  # "~": the home folder
    try:
        doc = json.loads(report_path.read_text(encoding="utf-8"))
        qis, privacy, output = list(doc["generalization"]), doc["privacy"], doc["output"]
        _ = (doc["input"]["rows"], doc["suppressed_rows"], doc["classes"], privacy["k"],  # the claims every
             privacy["min_class_size"], output["rows"], output["columns"])  # check reads: told missing here
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"cannot read the report {report_path}: {e}") from None
    notes: list[str] = []
    models = dict(as_spec(spec).sensitive) if spec is not None else {
        name: _model_from_report(name, entry, doc.get("hierarchies", {}).get(name), notes)
        for name, entry in privacy["sensitive"].items()}
    from sqlclose.audit import claims

    with _released(path, output) as (source, digest, header, unreadable):
        problems = [] if digest == (output.get("content_digest") or output.get("sha256")) else [
            "its content digest differs from the report's output.content_digest (the table was changed or replaced)"
            if output.get("content_digest") else
            "its sha256 differs from the report's output.sha256 (the file was changed or replaced)"]
        if header is not None and header != output["columns"]:  # a CSV: its header, before a typed read
            return _outcome(path, report_path, problems + [claims.columns_differ(header, output["columns"])], notes)
        if unreadable is not None:  # a changed CSV its report's column types do not read
            return _outcome(path, report_path, problems + [unreadable], notes)
        from sqlclose.audit.check import check as run_check
        from sqlclose.audit.figures import release_figures

        table = output.get("table") if output.get("format") == "duckdb" else None
        own = None if brings_engine(source) else engine
        figures = release_figures(source, qis, output["columns"], _level_labels(doc, spec, notes),
                                  MAX_LABELS_SHOWN, table=table, engine=own)
        if figures.columns != output["columns"]:
            problems.append(claims.columns_differ(figures.columns, output["columns"]))
            return _outcome(path, report_path, problems, notes)
        audit_ = run_check(source, qis, models, k=privacy["k"], table=table, engine=own).to_dict()
    for name, entry in privacy["sensitive"].items():
        measured = audit_["sensitive"][name]
        for key in ("distinct_l", "entropy_l", "recursive", "p"):
            if key in entry:
                problems += _mismatch(f"{name} {key}", entry[key]["reached"], _reached(measured, key))
        if "t" in entry and name in doc.get("t_against_release", {}):
            got = measured["distances"][entry["distance"]]["reached"]
            problems += _mismatch(f"{name} largest {entry['distance']} distance against the release",
                                  doc["t_against_release"][name], got)
    problems += claims.row_claims(doc, figures) + claims.distance_claims(doc, audit_["sensitive"])
    problems += claims.utility_claims(doc, audit_["utility"]["sensitive"])
    problems += claims.node_claims(doc, {name: f.outside for name, f in (figures.labels or {}).items()})
    problems += claims.label_claims(doc, figures, MAX_LABELS_SHOWN)
    return _outcome(path, report_path, problems, notes, figures.rows, figures.classes)


def _outcome(path: Path, report_path: Path, problems: list[str], notes: list[str], rows: int | None = None,
             classes: int | None = None) -> dict:
    return {"file": str(path), "report": str(report_path), "rows": rows, "classes": classes,
            "problems": problems, "notes": notes}


def _level_labels(doc: dict, spec: Spec | str | Path | None, notes: list[str]) -> dict[str, Any]:
    """Per quasi-identifier whose hierarchy is known without the input (the spec's file or tree, or
    the file the report names, refused when its keyed digest says it changed), the labels of each
    level; for the spec's mask rule, the rule (``MaskLevels``). Another rule's hierarchy (bands,
    dates; a mask without the spec) is built from the input's values: its column's level is not
    checked against the file's labels, and ``notes`` says so."""
    from sqlclose.audit.figures import MaskLevels
    from sqlclose.model.spec import static_hierarchy

    given = as_spec(spec) if spec is not None else None
    out: dict[str, Any] = {}
    for name, g in doc["generalization"].items():
        if g.get("level") is None:  # GAA: labels of several levels, checked by the verifier at the release
            continue
        h: Hierarchy | None = None
        if given is not None and name in given.quasi_identifiers:
            s = given.quasi_identifiers[name]
            if s.kind == "mask":  # its levels' labels follow from the rule
                out[name] = MaskLevels(s.length, s.mask_char, s.mask_steps,
                                       s.null_value if s.nulls == "value" else None)
                continue
            h = static_hierarchy(s, name) if s.kind in ("file", "tree", "hierarchy") else None
        elif name in doc.get("hierarchies", {}):
            entry = doc["hierarchies"][name]
            h = Hierarchy.from_csv(_unchanged_hierarchy(name, entry, notes), entry.get("delimiter", ";"))
        if h is None:
            notes.append(f"the level of column {name!r} was not checked against the file's labels: its hierarchy "
                         "is built by a rule from the input's values" + ("" if given is not None else
                                                                          " (a mask's is checked given --spec)"))
            continue
        out[name] = {level: list(h.labels(level)) for level in range(h.levels)}
    return out


def released_digest(path: Path, output: dict) -> str:
    """What a release holds, as its report records it: a file's sha256, a table's content digest."""
    if output.get("format", "parquet") == "duckdb":
        opened = open_source(path, None, FileRead(table=output.get("table")))
        try:
            return content_digest(opened.engine, opened.relation)
        finally:
            opened.engine.close()
    if not Path(path).exists():
        raise InputError(f"{path} does not exist")
    return sha256(Path(path))  # a folder's: the digest of its files' (files.folder_sha256)


@contextmanager
def _released(path: Path, output: dict) -> Iterator[tuple[SourceLike, str, list[str] | None, str | None]]:
    """The release as ``check`` reads it (a CSV with the column types its report records), its
    digest, a CSV's header (None for other formats), and why a changed CSV cannot be read with its
    report's types (else None). A CSV whose header is not the report's columns, or that is not the
    file the report vouches for and fails that read, is given as its path, unread."""
    digest = released_digest(path, output)
    if output.get("format") != "csv" or not output.get("column_types"):
        yield path, digest, None, None
        return
    header = _csv_header(Path(path))
    if header != list(output["column_types"]):  # read with the report's types, its values would shift columns
        yield path, digest, header, None
        return
    engine = DuckDBEngine()
    try:
        written = engine.read_csv_typed(Path(path), output["column_types"])
    except EngineError as e:
        engine.close()
        why = f"cannot read {path} with the column types of its report: {str(e).splitlines()[0]}"
        if digest == output.get("sha256"):  # the very file the report vouches for: not a mismatch
            raise InputError(why) from None
        yield path, digest, header, why
        return
    try:
        yield (engine.con, written.name), digest, header, None
    finally:
        engine.close()


def _csv_header(path: Path) -> list[str]:
    """The column names of a CSV written by ``copy_to_csv`` (comma, double quotes): its first record."""
    try:
        with path.open(encoding="utf-8", newline="") as f:
            return next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"cannot read the header of {path}: {type(e).__name__}") from None


def _model_from_report(name: str, entry: dict, hierarchy: dict | None, notes: list[str]) -> Sensitive:
    given: dict[str, Any] = {}
    if entry.get("distance") == "hierarchical":
        if hierarchy is None:
            raise InputError(f"column {name!r} uses the hierarchical distance and the report names no hierarchy file "
                             "for it: give the release's spec (--spec)")
        file = _unchanged_hierarchy(name, hierarchy, notes)
        given["hierarchy"] = {"file": file, "delimiter": hierarchy.get("delimiter", ";")}
    given.update({"distance": entry.get("distance", "equal"), "t": entry.get("t")})
    given.update({key: entry[key]["l"] for key in ("distinct_l", "entropy_l") if key in entry})
    if "recursive" in entry:
        given["recursive"] = {"c": entry["recursive"]["c"], "l": entry["recursive"]["l"]}
    if "p" in entry:
        given["p"] = entry["p"]["p"]
    return Sensitive.model_validate({k: v for k, v in given.items() if v is not None})


def _unchanged_hierarchy(name: str, hierarchy: dict, notes: list[str]) -> Path:
    """The hierarchy file a report names, refused when it is gone or its keyed digest
    (``files.keyed``) says it changed. Without a digest to compare (no operator's key at the release
    or now), it is read as it is, and ``notes`` says so."""
    file, recorded, key = Path(hierarchy["path"]), hierarchy.get("sha256"), operator_key()
    if not file.is_file():
        state = "no longer exists"
    elif recorded is None or key is None:
        notes.append(f"the hierarchy of column {name!r} ({file}) was read as it is now: without "
                     "$SQLCLOSE_FINGERPRINT_KEY " + ("at the release" if recorded is None else "here")
                     + " nothing tells it unchanged; give the release's spec (--spec) to check with the hierarchy "
                     "it used")
        return file
    elif keyed(key, sha256(file)) != recorded:
        state = "changed since the release (or $SQLCLOSE_FINGERPRINT_KEY is not the release's key)"
    else:
        return file
    raise InputError(f"the hierarchy of column {name!r} ({file}) {state}: give the release's spec (--spec) with "
                     "the hierarchy it used")


def _reached(measured: dict, key: str) -> Any:
    entry = measured.get(key) or {}
    return entry.get("reached")


def _mismatch(what: str, claimed: Any, found: Any) -> list[str]:
    if claimed is None or found is None:
        return [] if claimed == found else [f"{what} is {found}, the report says {claimed}"]
    same = abs(float(claimed) - float(found)) <= AGAINST_TOLERANCE * max(1.0, abs(float(claimed)))
    return [] if same else [f"{what} is {found}, the report says {claimed}"]
