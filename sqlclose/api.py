"""The Python entry points: ``anonymize`` a source under a spec."""

from __future__ import annotations

import dataclasses
import functools
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sqlglot import exp

from sqlclose.engine import Engine, engine_from
from sqlclose.engine.base import FileRead
from sqlclose.errors import InputError, NoSolutionError, SpecError
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.lattice import checked_node, refuse_node_to_gaa
from sqlclose.model.spec import Sensitive, Source, Spec, as_spec
from sqlclose.model.text import counted, file_sha256, name_shown, read_once
from sqlclose.prepare.digests import fingerprint_of, rows_digest
from sqlclose.prepare.pandas_frames import refuse_index_columns, refuse_zoned_dates
from sqlclose.prepare.problem import Problem, keyed_fingerprint, prepare
from sqlclose.prepare.sources import Opened, SourceLike, open_source, spec_engine
from sqlclose.privacy.criteria import Criterion, KAnonymity, criteria_for, failed_criteria, nothing_required
from sqlclose.release.checkpoints import checkpoint
from sqlclose.release.files import operator_key
from sqlclose.release.release import Release, RunObjects, SearchedRows, measure_node
from sqlclose.release.warehouse import WarehouseRelease
from sqlclose.release.writers import refuse_output_before_search
from sqlclose.search import ProgressCallback, SearchResult
from sqlclose.search.hybrid import search_problem
from sqlclose.search.incognito import incognito
from sqlclose.search.lattice_memory import refuse_too_large_lattice
from sqlclose.search.utility_costs import refuse_blind_metric, search_cost
from sqlclose.sql import queries as q

# GAA, plans and checks import their modules when called: a plain run does not load them
# (docs/performance.md "Cold start"). The warehouse release is imported here, ~5 ms, so that
# anonymize_histogram's return type resolves (typing.get_type_hints, documentation tools).

def anonymize(source: SourceLike, spec: Spec | str | Path | dict, *, engine: Engine | None = None,
              on_progress: ProgressCallback | None = None, fingerprint_key: str | None = None,
              node: dict[str, int] | tuple[int, ...] | None = None, output_format: str | None = None,
              partition_by: tuple[str, ...] | list[str] = ()) -> Release:
    """Find the optimal full-domain generalization of ``source`` that satisfies ``spec`` — or, with
    ``[search] algorithm = "gaa"``, GAA's multidimensional recoding (a ``GaaRelease``).

    ``source`` is a path (a Parquet file or folder, a CSV, a DuckDB file with the spec's table),
    a ``(duckdb connection, "schema.table")`` pair (split as ``[source] table`` is: ``'main."a.b"'``),
    a DuckDB relation, a pyarrow Table, a pandas DataFrame or a Spark DataFrame (on a Spark
    engine); ``None`` takes the spec's ``[source]``
    (also a query, a glob pattern or a warehouse table). Returns the ``Release`` (a ``GaaRelease``
    under GAA), open until closed (``with``): ``write`` it (verified, with its report, which it
    returns) or read it (``to_arrow``, ``summary``). Raises ``NoSolutionError`` when no node
    satisfies, ``InputError`` (bad input: ``SpecError``, ``DataError``…) before anything is written,
    ``EngineError`` or ``EnvironmentFailure``; ``write`` raises ``VerificationError`` too. Each is
    importable from ``sqlclose`` (README, "Errors in Python").
    ``fingerprint_key`` (default: $SQLCLOSE_FINGERPRINT_KEY) is the operator's secret that keys
    the input fingerprint in the report; without one the report records no fingerprint.
    ``node`` (as ``Release.at`` takes it) returns the release at that satisfying node instead of
    the optimum (``--node``): its form and levels are checked once the hierarchies are built, and
    it is measured alone (one GROUP BY); no search runs unless it does not satisfy, when the search
    finds the optimum (or the minimal nodes) to name in the ``InputError``. ``output_format`` (``"parquet"``,
    ``"parquet-folder"``, ``"csv"``, ``"duckdb"``) and ``partition_by``, how the release will be
    written: what they cannot hold of the sensitive and other columns, which every node releases as
    they are, is refused before the search, not after it (``write`` checks every column again).
    ``on_progress`` hears the search's progress: a ``SearchProgress`` per lattice height for
    Incognito, a ``sqlclose.search.gaa.GaaProgress`` about once a second for GAA.
    """
    started = time.perf_counter()
    spec = as_spec(spec)
    refuse_blind_search(spec)
    output = _checked_arguments(engine, fingerprint_key, output_format, partition_by)
    refuse_node_to_gaa(node, spec.search.algorithm)
    if engine is None:
        return _anonymize(source, spec, None, on_progress, fingerprint_key, started, node=node, output=output)
    # An engine the caller gave outlives the release: what this run makes on it is listed, and
    # dropped when the release closes (at once when the run fails), leaving the engine as it was.
    run = RunObjects()
    made: list = []
    try:
        with engine.objects_made() as made:
            release = _anonymize(source, spec, engine, on_progress, fingerprint_key, started, run, node, output)
    except BaseException:
        engine.drop_objects(made)
        raise
    run.objects.extend(made)
    return release


def _checked_arguments(engine: Engine | None, fingerprint_key: object, output_format: str | None,
                       partition_by: object) -> tuple[str | None, tuple[str, ...]]:
    """``anonymize``'s own arguments, refused in words (review of the sixty-fourth round): a DuckDB
    connection given as the engine failed with an AttributeError, a closed engine as a column type
    it "does not read", a key of bytes with another; ``partition_by="zip"`` was split into
    'z', 'i', 'p', an unknown format ran, and ``partition_by`` without the folder format went
    unchecked. Returns (format, partition columns)."""
    from sqlclose.release.writers import WRITERS

    if engine is not None and not isinstance(engine, Engine):
        raise InputError(f"engine= takes a sqlclose engine (sqlclose.engine.DuckDBEngine(…), SparkEngine(session)), "
                         f"not a {type(engine).__name__}: to read a DuckDB connection's table, give "
                         "(connection, \"table\") as the source")
    if engine is not None and getattr(engine, "closed", False):
        raise InputError("the engine given was closed: make a new one (e.g. sqlclose.engine.DuckDBEngine())")
    if fingerprint_key is not None and not isinstance(fingerprint_key, str):
        raise InputError(f"fingerprint_key is the operator's secret as text, not a {type(fingerprint_key).__name__}")
    if output_format is not None and output_format not in WRITERS:
        raise InputError(f"output_format {name_shown(output_format)} is not one sqlclose writes: {', '.join(WRITERS)}")
    columns = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by)
    if columns and output_format != "parquet-folder":
        raise InputError("partition_by is a Parquet folder's: give output_format=\"parquet-folder\" with it")
    return output_format, columns


def _anonymize(source: SourceLike, spec: Spec, engine: Engine | None, on_progress: ProgressCallback | None,
               fingerprint_key: str | None, started: float, run: RunObjects | None = None,
               node: dict[str, int] | tuple[int, ...] | None = None,
               output: tuple[str | None, tuple[str, ...]] = (None, ())) -> Release:
    with read_once(spec.files_read):  # the hierarchies parsed, hashed and named by the report: one version
        return _anonymized(source, spec, engine, on_progress, fingerprint_key, started, run, node, output)


def _anonymized(source: SourceLike, spec: Spec, engine: Engine | None, on_progress: ProgressCallback | None,
                fingerprint_key: str | None, started: float, run: RunObjects | None,
                node: dict[str, int] | tuple[int, ...] | None,
                output: tuple[str | None, tuple[str, ...]]) -> Release:
    given = engine
    key = operator_key(fingerprint_key)  # keys the fingerprint and the report's digests
    opened = open_for(source, spec, engine)
    engine = opened.engine
    try:
        timings = {}
        checkpoint("scan")
        problem, searched = _prepared(opened, spec, key)
        timings["prepare_seconds"] = time.perf_counter() - started
        criteria = criteria_for(spec.k, problem.sas)
        _refuse_before_search(spec, problem, *output)
        levels = None if node is None else _given_node(node, problem)
        inputs = files_read_by(opened, spec)
        if spec.search.algorithm == "gaa":
            from sqlclose.release.gaa_release import GaaRelease
            from sqlclose.search.gaa_run import run_gaa

            gaa = run_gaa(problem, criteria, spec.search, on_progress)  # it hears GaaProgress
            timings["search_seconds"] = gaa.result.seconds
            return GaaRelease(problem, None, criteria, spec.sha256(), opened.label, timings,
                              owns_engine=given is None, digest_key=key, inputs=inputs, searched_rows=searched,
                              source_path=opened.path,
                              selection=spec.search, gaa_run=gaa, hierarchy_files=_hierarchy_files(spec), _run=run,
                              _drops_run=run is not None)
        made = functools.partial(Release, problem, criteria=criteria, spec_sha256=spec.sha256(),
                                 source_label=opened.label, source_path=opened.path, timings=timings,
                                 owns_engine=given is None, digest_key=key,
                                 inputs=inputs, selection=spec.search, searched_rows=searched,
                                 hierarchy_files=_hierarchy_files(spec), _run=run, _drops_run=run is not None)
        if levels is not None and (unsearched := _given_unsearched(made, problem, levels, timings)) is not None:
            return unsearched
        started = time.perf_counter()
        result, known = _search(problem, criteria, spec, _with_checkpoint(on_progress))
        timings["search_seconds"] = time.perf_counter() - started  # with the histogram's collection, when local
    except BaseException:
        if given is None:
            engine.close()  # temp objects (and our own connection) go; a caller's connection stays
        raise
    release = made(search=result, **known)
    return release if levels is None else _at_given(release, levels)


def files_read_by(opened: Opened, spec: Spec) -> list[Path]:
    """Every file a run reads: the source's (its folder or pattern as a whole), the database files
    its connection has open, the spec file and the hierarchy files. No file the run writes may
    replace one of them (``files.refuse_inputs``): ``Release.write`` refuses them, and so do a
    sweep's files (``SweepResult``)."""
    return [*opened.files, *opened.databases, *spec.files_read]


def _given_unsearched(made: Callable[..., Release], problem: Problem, levels: tuple[int, ...],
                      timings: dict[str, float]) -> Release | None:
    """The release at a given node measured alone (one GROUP BY) when it satisfies: no search
    ran (its measuring is the search's time). None when it does not: the search then runs, to
    tell the optimum or the minimal nodes instead (``Release.at``'s message)."""
    started = time.perf_counter()
    unsearched = made(search=SearchResult.unsearched(tuple(qi.levels for qi in problem.qis)))
    chosen = unsearched.at_if_satisfied(levels)
    if chosen is None:
        return None
    timings["search_seconds"] = time.perf_counter() - started
    return _standing_for(unsearched, chosen)


def prepared_source(opened: Opened, spec: Spec, fingerprint_key: str | None = None,
                    relation: exp.Expression | None = None, fingerprint: str | None = None) -> Problem:
    """``prepare`` over a source as it was opened (its label; its kind and given path, for the advice
    its errors give; whether its names may be data), or over ``relation`` made from it. Every caller
    goes through this module's ``prepare``, the one name tests hook a scan by. ``fingerprint``: the
    report's, when taken already (``_prepared``)."""
    return prepare(opened.engine, opened.relation if relation is None else relation, spec, opened.label,
                   fingerprint_key, names_may_be_data=opened.names_may_be_data, source_kind=opened.kind,
                   given_path=opened.given_path, fingerprint=fingerprint)


def _prepared(opened: Opened, spec: Spec, key: str | None) -> tuple[Problem, SearchedRows | None]:
    """``prepare``'s problem, and the rows it searched, as the release's writes and ``to_arrow`` check
    them (``SearchedRows``). A source its owner may change while the release is open (``Opened.live``)
    is digested before ``prepare`` reads a row (``rows_digest``: typed, ~0.2 s per million rows, where
    MD5 of each row's text took 1.2–3.3 s; ninety-eighth round), and again after the write. Under the
    operator's ``key`` when given, whose one pass gives the report's fingerprint too (``fingerprint_of``:
    its HMAC; on Spark the text digest, which is the fingerprint), where until the ninety-ninth round
    the fingerprint was a second pass; else under a key of this run's own, and the report records no
    fingerprint. DuckDB's typed digest itself is never published. Until the ninety-seventh round a
    source without the operator's key was fingerprinted after the scan: a table changed during the scan
    was searched on one set of rows and published from another. A source of files (a Parquet file,
    folder or pattern, a CSV, a database file): their stamps as the source was opened, before a row
    was read (``Opened.stamps``), a change since refused alike."""
    searched, fingerprint = None, None
    if opened.live:
        change_key = key or secrets.token_hex(16)
        digest = rows_digest(opened.engine, opened.relation, change_key)
        searched = SearchedRows(opened.relation, change_key, digest)
        fingerprint = fingerprint_of(opened.engine, digest, key) if key else None
    elif opened.stamps:
        searched = SearchedRows(opened.relation, "", None, dict(opened.stamps))
    return prepared_source(opened, spec, key, fingerprint=fingerprint), searched


def _at_given(release: Release, levels: tuple[int, ...]) -> Release:
    """The release at a given node, standing for the search's: it closes what the run made, as
    the release would have."""
    try:
        chosen = release.at(levels)
    except BaseException:
        release.close()
        raise
    return _standing_for(release, chosen)


def _standing_for(run: Release, chosen: Release) -> Release:
    """``chosen`` (one of ``run``'s ``at`` copies, which own nothing) owning what the run made, as
    ``run`` would have: the caller gets it alone."""
    return dataclasses.replace(chosen, owns_engine=run.owns_engine, _drops_run=run._drops_run)


def _given_node(node: dict[str, int] | tuple[int, ...], problem: Problem) -> tuple[int, ...]:
    """``anonymize(…, node=…)``'s node, checked against the hierarchies before the search (GAA's
    was refused before the source was read: ``refuse_node_to_gaa``)."""
    return checked_node(node, [qi.name for qi in problem.qis], [qi.levels for qi in problem.qis])


def _with_checkpoint(on_progress: ProgressCallback | None) -> ProgressCallback:
    """The caller's progress callback, with the "search" checkpoint (tests hold a run there)."""

    def progress(event: Any) -> None:
        checkpoint("search")
        if on_progress is not None:
            on_progress(event)

    return progress


def _hierarchy_files(spec: Spec) -> dict[str, tuple[Path, str, str | None]]:
    """Per column, the hierarchy file it uses, its delimiter and the sha256 of the bytes the run
    read (``text.read_once``; None for a file not read), for the report to name."""
    given = dict(spec.quasi_identifiers)
    given.update({name: s.hierarchy for name, s in spec.sensitive.items() if s.hierarchy is not None})
    return {name: (Path(h.file), h.delimiter, file_sha256(Path(h.file))) for name, h in given.items()
            if h.file is not None}


def anonymize_histogram(histogram: str | Path, spec: Spec | str | Path | dict, *, dialect: str | None = None,
                        on_progress: ProgressCallback | None = None,
                        node: dict[str, int] | tuple[int, ...] | None = None) -> WarehouseRelease:
    """The warehouse path (docs/warehouse.md): search over ``histogram`` — the warehouse's export
    (Parquet or CSV) of ``histogram_sql(spec)``'s result, counts only — and return the release as
    a query for the warehouse (``release_sql()``, ``write_sql(path)``) in ``dialect`` (default:
    the spec's [source] dialect). Raises ``NoSolutionError`` when no node satisfies. ``node``: the
    release at that satisfying node instead (as ``anonymize``'s: measured alone, no search)."""
    spec = as_spec(spec)
    refuse_blind_search(spec)
    with read_once(spec.files_read):  # as _anonymize
        return _from_histogram(histogram, spec, dialect, on_progress, node)


def _from_histogram(histogram: str | Path, spec: Spec, dialect: str | None, on_progress: ProgressCallback | None,
                    node: dict[str, int] | tuple[int, ...] | None) -> WarehouseRelease:
    from sqlclose.prepare import histogram as hist
    from sqlclose.sql.warehouse import warehouse_table

    source = hist.warehouse_source(spec)
    dialect = hist.dialect_of(spec, dialect)
    if spec.search.algorithm != "incognito":
        raise SpecError(f"[search] algorithm = {name_shown(spec.search.algorithm)}: the warehouse path releases a "
                        "full-domain generalization (incognito), whose lookups the release query carries")
    started = time.perf_counter()
    histogram = Path(histogram).expanduser()  # "~": the home folder, as in a spec
    opened = hist.open_histogram(histogram, spec, dialect)
    try:
        problem = hist.prepare_histogram(opened, spec, dialect)
        # Nothing reads the histogram after prepare (the search, the query and its report read its
        # base table): a file replaced while prepare read it in several passes gave counts of two files.
        opened.refuse_changed("while the run read it", "the release query would be chosen on counts of the file "
                              "before and after; run the job again on the histogram as it is now")
        timings = {"prepare_seconds": time.perf_counter() - started}
        criteria = criteria_for(spec.k, problem.sas)
        _refuse_k_over_rows(spec, problem)
        _refuse_nothing_required(spec, problem)
        levels = None if node is None else _given_node(node, problem)
        drop = tuple(name for name, s in [*spec.quasi_identifiers.items(), *spec.sensitive.items()]
                     if s.nulls == "drop")
        made = functools.partial(WarehouseRelease, problem, criteria=criteria, spec_sha256=spec.sha256(),
                                 source_label=opened.label, source_path=opened.path, timings=timings,
                                 digest_key=operator_key(),
                                 inputs=[histogram, *spec.files_read], table=warehouse_table(source.table_parts),
                                 table_name=str(source.table), dialect=dialect, drop_nulls=drop,
                                 selection=spec.search, hierarchy_files=_hierarchy_files(spec))
        if levels is not None and (unsearched := _given_unsearched(made, problem, levels, timings)) is not None:
            return unsearched
        result, known = _search(problem, criteria, spec, on_progress)
        timings["search_seconds"] = result.seconds
    except BaseException:
        opened.engine.close()
        raise
    release = made(search=result, **known)
    return release if levels is None else _at_given(release, levels)


def histogram_sql(spec: Spec | str | Path | dict, dialect: str | None = None) -> str:
    """The one query a warehouse runs for the search (docs/warehouse.md): rows counted per
    combination of quasi-identifier and sensitive values, in ``dialect`` (default: the spec's)."""
    from sqlclose.prepare import histogram as hist

    return hist.histogram_sql(as_spec(spec), dialect)


def refuse_blind_search(spec: Spec) -> None:
    """A spec whose search metric is weighted by w1 with one quasi-identifier — w1 is 0, so the
    metric costs nothing and chooses nothing — refused from the spec alone, before the data are read
    (``refuse_blind_metric``; with several QIs, once their hierarchies are built)."""
    refuse_blind_metric(spec.search.metric_name, spec.search.algorithm, list(spec.quasi_identifiers))


def _refuse_before_search(spec: Spec, problem: Problem, output_format: str | None,
                          partition_by: tuple[str, ...]) -> None:
    """What no search can mend, refused before one runs (and by a dry run, which runs none)."""
    _refuse_k_over_rows(spec, problem)
    _refuse_nothing_required(spec, problem)
    if spec.search.algorithm == "gaa":  # GAA never enumerates the lattice
        from sqlclose.search.gaa_run import refuse_before_gaa

        refuse_before_gaa(problem, spec.search)
    else:
        refuse_too_large_lattice([qi.levels for qi in problem.qis], problem.engine.memory_budget)
    refuse_output_before_search(problem, output_format, partition_by)


def _refuse_k_over_rows(spec: Spec, problem: Problem) -> None:
    if spec.k > problem.rows:
        raise NoSolutionError(k_over_rows(spec.k, problem.rows))


def k_over_rows(k: int, rows: int) -> str:
    """Why no release of ``rows`` rows has classes of ``k`` rows: anonymize's words, and sweep's
    (which said it as bad input, exit 2, where anonymize says no solution, exit 3: the ninety-fourth
    round)."""
    return (f"k = {k} is larger than the table ({counted(rows, 'row')}): no generalization can make classes "
            "that big; lower k")


def _refuse_nothing_required(spec: Spec, problem: Problem) -> None:
    """k = 1 and every model holding for every class of this table: the spec refuses the models
    no table can fail, but a KL t holds for every table whose least share p of a value has
    −ln p ≤ t, which only the table tells (``nothing_required``). Released, it was the table as it
    is (found by the forty-eighth round's review)."""
    why = None if spec.k >= 2 else nothing_required([sa for sa in problem.sas if sa.spec is not None])
    if why is not None:
        raise InputError(f"the requirements as given protect nothing on {problem.label}: k = 1, and {why}; "
                         "raise k (e.g. k = 5), or lower t")


def _search(problem: Problem, criteria: list[Criterion], spec: Spec,
            on_progress: ProgressCallback | None) -> tuple[SearchResult, dict[str, Any]]:
    """Incognito under the spec's metric; raises NoSolutionError when no node satisfies. With it
    the release's fields known from the search: after a search over a local copy of the base (on
    Spark), the optimum's classes read there (``_hist``, ``_failing``), which the release read
    again from the source's engine (a job on Spark, ~0.1-0.3 s on a small table)."""
    cost = search_cost(problem, spec.search.metric_name, spec.search.weights)
    with search_problem(problem) as searched:  # on Spark: locally over the collected histogram
        result = incognito(searched, criteria, on_progress, cost, spec.search.exploring)
        if result.optimum is None:
            raise NoSolutionError(_no_solution_message(spec, problem, result.lattice_size))
        if searched is problem:
            return result, {}
        _, hist, failing = measure_node(problem, criteria, result.optimum, read_from=searched)
    return result, {"_hist": hist, "_failing": failing}


def plan(source: SourceLike, spec: Spec | str | Path | dict, node: dict[str, int] | None = None,
         examples: int = 3, *, as_run: bool = False, output_format: str | None = None,
         partition_by: tuple[str, ...] | list[str] = (), values: bool = False) -> dict:
    """What a run would do, without searching or writing: the source and its rows, each
    quasi-identifier's hierarchy (levels, a few example generalizations), the lattice, the models
    and thresholds, and (with ``values``) the SQL of the histogram scan and of the release (at
    ``node``, default the bottom; a node names a level for every quasi-identifier, as
    ``anonymize``'s does: one left out, or a name or level the spec lacks, is refused).
    Validates what the data and spec must hold (columns, hierarchies, NULLs); ``as_run`` (a dry
    run) also refuses what ``anonymize`` refuses before its search: a k past the rows, requirements
    that protect nothing, a column ``output_format`` and ``partition_by`` cannot hold, and measures a
    given ``node`` alone as the run does (one GROUP BY, no search): one that does not satisfy is
    refused (``InputError``, naming the requirements its classes fail), one that does is
    ``node_measured`` (``{"node": …, "satisfies": True}``; else None). ``values``:
    show example generalizations of hierarchies whose leaves are the data's own values too, and the
    SQL (``sql``), whose constants count them; without it ``sql["withheld"]`` says why it is not."""
    spec = as_spec(spec)
    refuse_node_to_gaa(node, spec.search.algorithm)
    refuse_blind_search(spec)  # what the run would refuse of its metric, said before the data are read
    opened = open_for(source, spec, None)
    try:
        problem = prepared_source(opened, spec)
        if as_run:
            _refuse_before_search(spec, problem, output_format, tuple(partition_by))
        from sqlclose.prepare.plan import describe_problem

        if spec.search.algorithm == "gaa":  # no lattice: no node to show the release at (none was given)
            from sqlclose.release.gaa_release import suppression_unused

            described = describe_problem(problem, spec, None, examples, values)
            described["warnings"] += suppression_unused(problem.suppression)
            return {**described, "node_measured": None}
        names = [qi.name for qi in problem.qis]
        # A partial node is refused, never filled with level 0: the SQL shown would be a node nobody named.
        given = node if node is not None else {name: 0 for name in names}
        levels = checked_node(given, names, [qi.levels for qi in problem.qis])
        measured = _measured_alone(problem, spec, levels) if as_run and node is not None else None
        return {**describe_problem(problem, spec, levels, examples, values), "node_measured": measured}
    finally:
        opened.engine.close()


def _measured_alone(problem: Problem, spec: Spec, levels: tuple[int, ...]) -> dict:
    """A dry run's given node, measured alone as the run measures it (``measure_node``: one GROUP BY,
    no search). One that does not satisfy is refused as the run refuses it (exit 2), naming the
    requirements its classes fail; the run would then search for the optimum to name, which a dry
    run, searching nothing, cannot (a nightly job's dry run passed a node its run refused)."""
    criteria = criteria_for(spec.k, problem.sas)
    evaluated, hist, _ = measure_node(problem, criteria, levels)
    named = {qi.name: int(level) for qi, level in zip(problem.qis, levels)}
    if not evaluated.satisfied:
        failed = [_requirement(c, spec) for c in failed_criteria(hist, criteria)]
        listed = failed[0] if len(failed) == 1 else f"{', '.join(failed[:-1])} and {failed[-1]}"
        raise InputError(f"node {named} does not satisfy the requirements: its classes failing {listed} hold more "
                         f"rows than suppression ≤ {spec.suppression:.1%} may remove; a run (anonymize without "
                         "--dry-run) would search the lattice for the optimum and name it")
    return {"node": named, "satisfies": True}


def _requirement(criterion: Criterion, spec: Spec) -> str:
    """A criterion as the spec states it: ``k = 3``, ``t = 0.2 on 'salary'``."""
    if isinstance(criterion, KAnonymity):
        return f"k = {criterion.k}"
    name = criterion.column.name  # type: ignore[attr-defined]  # every other criterion is a sensitive column's
    return f"{_model_term(spec.sensitive[name], criterion.key)} on {name_shown(name)}"


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
    """The hierarchy a run would use for a quasi-identifier (read, or built by its rule from the
    data) or for a sensitive column that has one, validated against the data (every value a leaf).
    Only ``column`` is judged, over the rows a run keeps: another column's problem is not this
    hierarchy's (a run reports it)."""
    spec = as_spec(spec)
    hierarchy_column(spec, column)
    alone = _narrowed_to(spec, column)
    opened = open_for(source, alone, None)
    try:
        relation = _without_dropped_rows(opened, spec, column)
        problem = prepared_source(opened, alone, relation=relation)
        return next(c.hierarchy for c in [*problem.qis, *problem.sas] if c.name == column)
    finally:
        opened.engine.close()


def hierarchy_column(spec: Spec, column: str) -> None:
    """Refuse a column that has no hierarchy in the spec, naming those that have one."""
    with_hierarchy = [name for name, s in spec.sensitive.items() if s.hierarchy is not None]
    if column not in spec.quasi_identifiers and column not in with_hierarchy:
        sensitive = f"; sensitive with a hierarchy: {', '.join(name_shown(c) for c in with_hierarchy)}" \
            if with_hierarchy else ""
        raise SpecError(f"{name_shown(column)} is neither a quasi-identifier of the spec nor a sensitive column with a "
                        f"hierarchy (quasi-identifiers: {', '.join(name_shown(c) for c in spec.quasi_identifiers)}"
                        f"{sensitive})")


def _narrowed_to(spec: Spec, column: str) -> Spec:
    """The spec with ``column`` its only declared column: another column's problem (a value off its
    hierarchy, a NULL, columns ``others`` leaves unsaid) is not this hierarchy's, and was reported
    for it. Copied unvalidated: a sensitive column alone has no quasi-identifier beside it."""
    qi, sensitive = spec.quasi_identifiers.get(column), spec.sensitive.get(column)
    return spec.model_copy(update={
        "quasi_identifiers": {} if qi is None else {column: qi},
        "sensitive": {} if qi is not None or sensitive is None else {column: sensitive},
        "identifiers": [], "others": "drop", "search": spec.search.model_copy(update={"weights": None})})


def _without_dropped_rows(opened: Opened, spec: Spec, column: str) -> exp.Expression:
    """The rows a run keeps: those without a NULL in another column under nulls = "drop" (a run's
    rule hierarchy is built from them, and only their values must be leaves)."""
    names = set(opened.engine.schema(opened.relation).names)
    drop = [name for name, entry in [*spec.quasi_identifiers.items(), *spec.sensitive.items()]
            if name != column and name in names and entry.nulls == "drop"]
    return q.without_nulls(opened.relation, drop) if drop else opened.relation


def open_for(source: SourceLike, spec: Spec, engine: Engine | None = None) -> Opened:
    """Open the source as a run does: on the given engine, else on the spec's [engine], else on
    DuckDB (also for callers that prepare once and search many times, like ``sqlclose.sweep``;
    the caller closes ``Opened.engine`` when it passed none)."""
    refuse_source_beside_query(source, spec)
    if source is None:
        if spec.source is None:
            raise SpecError("no source given: pass one, or add a [source] section with path = \"…\" to the spec")
        source = spec.source
    if isinstance(source, Source) and source.kind == "warehouse":
        return _open_catalog_table(source, spec, engine)
    refuse_index_columns(source, [*spec.quasi_identifiers, *spec.sensitive, *spec.identifiers])
    refuse_zoned_dates(source, [name for name, qi in spec.quasi_identifiers.items() if qi.kind == "dates"])
    numeric = tuple(name for name, s in spec.sensitive.items() if s.distance == "ordered")
    made = spec_engine(spec.engine, source) if engine is None else None
    try:
        opened = open_source(source, engine or made, FileRead.of(spec.source, numeric), _released_by(spec))
    except BaseException:
        if made is not None:
            made.close()
        raise
    if isinstance(source, (str, Path)):  # in place of the spec's [source]
        opened.given_path = Path(source).expanduser()
    return opened


def _released_by(spec: Spec) -> Callable[[str], bool]:
    """Whether a column's values reach the release under ``spec``: a quasi-identifier or sensitive
    column, or another kept (``others`` not "drop"), never an identifier."""
    judged = {*spec.quasi_identifiers, *spec.sensitive}
    return lambda name: name in judged or (name not in spec.identifiers and spec.others != "drop")


def refuse_source_beside_query(source: SourceLike, spec: Spec, option: str = "--source, or the source argument",
                               harm: str = "release the columns the query leaves out") -> None:
    """A source given with a spec whose [source] is a query is refused: it would replace the query,
    which chooses the columns read (with others = "keep", a column it leaves out, an SSN, was
    released from the file given instead, exit 0). ``option`` and ``harm``: how the caller took
    the source, and what replacing the query would do there."""
    if source is None or spec.source is None or spec.source.kind != "query":
        return
    given = source if isinstance(source, (str, Path)) else source.path if isinstance(source, Source) \
        else type(source).__name__
    remedy = "give no source" if option.startswith("--source") else f"leave {option} out"
    raise SpecError(f"the spec's [source] is a query, which chooses the rows and columns to read, and a source was "
                    f"given as well ({given}: {option}), which would replace it and {harm}: {remedy}, or name the "
                    "file in the query (FROM 'people.parquet')")


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
        # its parts as the warehouse path splits [source] table (spec.warehouse_table_parts), so that the table
        # read here is the one its histogram query reads
        return open_source((runner.spark, tuple(source.table_parts)), runner)
    except BaseException:
        if made is not None:
            made.close()
        raise


def _no_solution_message(spec: Spec, problem: Problem, size: int) -> str:
    """What was asked (every model with its threshold), and, where one can hold in no class at all,
    which and why: a class holds no more distinct values than the whole table, so distinct_l, p and
    recursive's l past the table's distinct values fail at every node, which "relax t or k" did not
    say (the sixty-second round's review). Only that the table holds fewer is told, not how many."""
    parts = [f"k = {spec.k}"] + [f"{', '.join(_model_terms(s))} on {name_shown(name)}"
                                 for name, s in spec.sensitive.items()]
    asked = (f"no generalization satisfies {', '.join(parts)} with suppression ≤ {spec.suppression:.1%} "
             f"(searched the lattice of {size} nodes over {problem.rows} rows)")
    impossible = _beyond_the_table(spec, problem)
    if impossible:
        return f"{asked}: {'; '.join(impossible)}"
    return f"{asked}; relax {_relaxable(spec)}, allow more suppression, or add hierarchy levels"


def _relaxable(spec: Spec) -> str:
    """The thresholds the spec gives, each once, in the order of ``model_keys`` ("relax t" with no
    t given, or "k" at k = 1, told the user to change what was not there)."""
    keys = (["k"] if spec.k > 1 else []) + list(dict.fromkeys(
        key for s in spec.sensitive.values() for key in s.model_keys))
    return " or ".join(keys) if keys else "the requirements"


def _model_terms(s: Sensitive) -> list[str]:
    return [_model_term(s, key) for key in s.model_keys]


def _model_term(s: Sensitive, key: str) -> str:
    value = getattr(s, key)
    return f"recursive (c = {value.c:g}, l = {value.l})" if key == "recursive" else f"{key} = {value:g}"


def _beyond_the_table(spec: Spec, problem: Problem) -> list[str]:
    """The models no class can satisfy, as the whole table's distinct sensitive values bound them."""
    told = []
    for sa in problem.sas:
        s = spec.sensitive.get(sa.name)
        if s is None or sa.q is None:
            continue
        distinct = int(np.count_nonzero(sa.q))
        needs = [(key, value) for key, value in (("distinct_l", s.distinct_l), ("p", s.p),
                                                 ("recursive's l", s.recursive.l if s.recursive else None))
                 if value is not None and value > distinct]
        if s.entropy_l is not None and s.entropy_l > distinct:  # exp(entropy) of m values is at most m
            needs.append(("entropy_l", s.entropy_l))
        for key, value in needs:
            told.append(f"{key} = {value:g} on {name_shown(sa.name)} can hold in no class, since the whole table holds "
                        f"fewer than {value:g} distinct values of {name_shown(sa.name)}: lower it, or add rows that "
                        "hold more values")
        r = s.recursive
        if r is not None and r.l <= distinct and r.c * (distinct - r.l + 1) <= 1:
            # r1 < c (r_l + … + r_m) with r_l + … + r_m ≤ (m − l + 1) r1 and m ≤ the table's distinct values
            told.append(f"recursive (c = {r.c:g}, l = {r.l}) on {name_shown(sa.name)} can hold in no class, since a "
                        f"class holds no more distinct values of {name_shown(sa.name)} than the whole table, too few "
                        f"for c = {r.c:g} (a class of m values needs c above 1 / (m − l + 1)): raise c, or lower l")
    return told
