"""A release the warehouse makes itself: the chosen node as a query in the warehouse's dialect.

The search ran locally over the warehouse's histogram; the rows never left the warehouse, so they
cannot be written or re-checked here. What is written is the release *query* (``release_sql``:
the chosen level's lookups and the suppressed classes inline, the same joins and ORDER BY as the
local release) and the report, which says the release was not verified locally and names the
verification query for the warehouse (``verification_sql``, in ``release.verify.sql`` beside the
release query) with the values it must return. The two queries hold raw values (their lookups),
the report does not: it is the file one may publish. The pair is placed as a local release is
(``placing.Transaction``), the verification query a companion of the pair: placed first under
the same journal, and rolled back with it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from sqlglot import exp

from sqlclose.errors import EnvironmentFailure, InputError, OutputExistsError, writing_file
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.sparse_counts import values_held
from sqlclose.model.spec import default_report_path
from sqlclose.release import files, placing
from sqlclose.release import verify_sql as vs
from sqlclose.release.release import Release
from sqlclose.release.report import Report
from sqlclose.sql import queries as q
from sqlclose.sql import warehouse as wh
from sqlclose.sql.templates import template

NOT_VERIFIED = ("the release was not verified locally: the warehouse makes it, so sqlclose never sees its rows; "
                "run the verification query (the file verification_query names) in the warehouse over the same "
                "table and compare with expected (its ok column says whether every value matches)")


# The verification row's column for the figure a model's worst class reaches (``verify_sql._model_specs``'
# reached_i), per sensitive column s<j>; distinct l and p are read from min_distinct_s<j>, k from
# min_class_size.
FIGURES = {"t-closeness": "max_distance_s{j}", "entropy l-diversity": "min_entropy_l_s{j}",
           "recursive (c,l)-diversity": "max_recursive_ratio_s{j}"}
MEASURED_ELSEWHERE = {"distinct l-diversity": "min_distinct_s{j}", "p-sensitivity": "min_distinct_s{j}"}
# With the hierarchical distance: the released rows whose value is no leaf of the hierarchy (must be 0).
OFF_HIERARCHY = "off_hierarchy_s{j}"


def verification_path(path: Path) -> Path:
    """Where the verification query of the release query ``path`` goes: ``release.sql`` → ``release.verify.sql``.
    Like the release query, it holds raw quasi-identifier values (its lookups) and the suppressed
    classes' codes: it is for the operator's warehouse, not for publishing, so the report names it
    and does not hold it."""
    return path.with_name(f"{path.stem}.verify.sql")


def refuse_report_at_verification(path: Path, report: Path) -> None:
    """Refuse a report path that is the verification query's (``release.verify.sql`` beside the
    release query ``path``): the refusal named it the output path, which it is not."""
    verify = verification_path(path)
    if files.same(verify, report):
        raise OutputExistsError(f"the report path is the verification query's path ({verify}), which goes beside "
                                f"the release query {path}: give the report its own file, e.g. "
                                f"{default_report_path(path)}")


def refuse_verification_inside_folder_releases(path: Path) -> None:
    """Refuse the verification query beside the release query ``path`` inside a Parquet folder release:
    there only with the query (refused as the output), or as a link written through into one
    (``files.placed_at``), where it would break that release's check against its report."""
    files.refuse_inside_folder_releases(verification_path(path), "verification query")


def refuse_verification_at_query(path: Path) -> None:
    """Refuse a verification query's path that is — through a link, each written through
    (``files.placed_at``) — the release query's own file: one would be written over the other. Said
    by which of the two is the link: the release query's link to the verification query's file, or
    a hard link, was told "release.verify.sql is a symbolic link to release.verify.sql"."""
    verify = verification_path(path)
    if not files.same(verify, path):
        return
    if verify.is_symlink():
        how = f"is a symbolic link to {files.placed_at(verify)}, the file the release query {path} is written to"
        fix = "remove that link, or point it at a file of its own"
    elif path.is_symlink():
        how = f"is the file the release query's path {path}, a symbolic link, names"
        fix = "point that link at a file of its own, or give the release query another path"
    else:
        how = f"is the file the release query {path} is written to (a hard link: one file of two names)"
        fix = "remove one of the two names"
    raise OutputExistsError(f"the verification query's path {verify} {how}: one would replace the other: {fix}")


@dataclass(repr=False)  # Release's own repr
class WarehouseRelease(Release):
    """``Release`` over a warehouse's histogram: everything measured is the same; the data is a query."""

    MADE_BY: ClassVar[str] = "sqlclose.anonymize_histogram"
    table: exp.Table | None = None  # the warehouse table the histogram counted
    table_name: str = ""
    dialect: str = "duckdb"
    drop_nulls: tuple[str, ...] = ()  # columns whose NULL rows nulls = "drop" removes

    @property
    def node(self) -> dict[str, int]:
        """The lattice node released: a histogram's search is Incognito's (GAA is refused, ``api._from_histogram``)."""
        return self._named(self.search.optimum)

    # ---- the queries --------------------------------------------------------------------
    def release_query(self) -> exp.Select:
        """A fresh query each call (rendering and the verification consume it), from lookups read once."""
        hist, failing = self._classes()
        suppressed = hist.codes[failing].tolist() if failing.any() else []
        counted = {c.name for c in self.problem.qis} | {c.name for c in self.problem.sas}
        kept = [name for name in self.columns if name not in counted]
        return wh.release(self.table, self.columns, self._lookups, suppressed, list(self.drop_nulls), kept)

    @cached_property
    def _lookups(self) -> list[wh.InlineLookup]:
        """Each QI's lookup at the chosen level (one DISTINCT query each): the release file and its
        verification file both hold them, read once for the pair."""
        lookups = []
        for qi, level in zip(self.problem.qis, self.search.optimum):
            h = qi.hierarchy
            # Only the leaves the histogram counted: a row with a value the search never saw (the
            # table changed since) finds no lookup row and is not released.
            seen = self._counted_codes(qi.coded.code)
            rows = [i for i, code in enumerate(h.leaf_codes.tolist()) if code in seen]
            codes = (h.leaf_codes[rows] // h.divisors[level]).tolist()
            # labels and leaves read once: each is a list made per call (34,730 dates of birth read
            # per row took 14 minutes)
            names, leaves = h.labels(level), h.leaves
            labels = [names[c] for c in h.level_codes[rows, level].tolist()] if level else None
            lookups.append(wh.InlineLookup(qi.coded, int(level), [leaves[i] for i in rows], codes, labels))
        return lookups

    def _counted_codes(self, code: str) -> set[int]:
        """The leaf codes of one quasi-identifier present in the base histogram."""
        query = exp.select(q.col(code)).distinct().from_(self.problem.base.copy())
        return set(self.problem.engine.fetch(query).column(0).to_pylist())

    def release_sql(self, dialect: str | None = None) -> str:
        """The release, for the warehouse to run (e.g. in CREATE TABLE … AS)."""
        self._require_open()
        return wh.render(self.release_query(), dialect or self.dialect)

    def expected(self) -> dict[str, int]:
        """What the verification query must measure: the search's own claims."""
        hist, failing = self._classes()
        kept = ~failing
        sizes = hist.sizes[kept]
        out = {"released_rows": int(sizes.sum()), "classes": int(kept.sum()),
               "min_class_size": int(sizes.min()) if sizes.size else 0}
        for j in range(len(self.problem.sas)):
            distinct = values_held(hist.counts[j])[kept]
            out[f"min_distinct_s{j}"] = int(distinct.min()) if distinct.size else 0
        out["source_rows"] = int(hist.sizes.sum())  # the rows the histogram counted, after the NULL policies
        return out

    def verification_sql(self, dialect: str | None = None) -> str:
        """One row measured in the warehouse on the released table, with ``ok``."""
        self._require_open()
        return self._verification_sql(self._model_checks()[0], dialect)

    def _verification_sql(self, checks: list[wh.ModelCheck], dialect: str | None = None) -> str:
        """``verification_sql`` measuring ``checks`` (``_model_checks``' first part: the query takes
        their expressions, not copies, as it takes ``release_query``'s)."""
        query = wh.verification(self.release_query(), [qi.name for qi in self.problem.qis],
                                [sa.coded for sa in self.problem.sas], self.expected(), self.problem.k,
                                wh.rows_counted(self.table, list(self.drop_nulls)), checks)
        return wh.render(query, dialect or self.dialect)

    def _model_checks(self) -> tuple[list[wh.ModelCheck], dict[str, list[dict]]]:
        """Per sensitive column with t, entropy l or recursive (c,l), its models measured in the
        warehouse (``_model_check``); and what each column of the verification row measures (the
        report's ``warehouse.verification_models``)."""
        checks: list[wh.ModelCheck] = []
        models: dict[str, list[dict]] = {
            "min_class_size": [{"model": "k-anonymity", "column": None, "parameters": {"k": self.problem.k}}]}
        for j, sa in enumerate(self.problem.sas):
            check, specs = _model_check(j, vs.WrittenSensitive(sa.name, sa.spec, sa.hierarchy))
            for name, parameters, *_ in specs:
                column = (FIGURES | MEASURED_ELSEWHERE)[name].format(j=j)
                models.setdefault(column, []).append({"model": name, "column": sa.name, "parameters": parameters})
                if name == "t-closeness" and _off_tree(sa.spec):
                    models[OFF_HIERARCHY.format(j=j)] = [{"model": name, "column": sa.name, "parameters": parameters}]
            if check is not None:
                checks.append(check)
        return checks, models

    # ---- no local data ---------------------------------------------------------------------
    def to_arrow(self) -> Any:
        raise InputError("this release is made by the warehouse: sqlclose never sees its rows; run release_sql() "
                         "there (or write_sql)")

    def write(self, path: str | Path, report: str | Path | None = None, overwrite: bool = False, *,
              format: str | None = None, table: str | None = None, partition_by: str | Sequence[str] = ()) -> dict:
        """A ``.sql`` path (no other format given) is ``write_sql``; any other write is refused, as
        ``write_parquet`` and ``write_parquet_folder`` are (they are this): the rows are in the
        warehouse. Inherited, it wrote a file rebuilt from the histogram's counts, verified against
        that histogram alone, whose report named no warehouse (review of the sixty-third round)."""
        if format is None and table is None and not partition_by and Path(path).suffix.lower() == ".sql":
            return self.write_sql(path, report, overwrite)
        raise InputError("this release is made by the warehouse: sqlclose never sees its rows; write its query "
                         "with write_sql(\"release.sql\") and run it there")

    def query(self, dictionaries: bool = False) -> tuple[Any, list]:
        raise InputError("this release is made by the warehouse: its query is release_sql(), for the warehouse "
                         "to run; sqlclose has no local query of its rows")

    def query_for_write(self, dictionaries: bool = False) -> Any:
        return self.query(dictionaries)

    # ---- writing ---------------------------------------------------------------------------
    def write_sql(self, path: str | Path, report: str | Path | None = None, overwrite: bool = False) -> dict:
        """Write the release query and its report as a pair; returns the report."""
        self._require_open()
        overwrite = files.overwrite_given(overwrite)
        path = Path(path).expanduser()  # "~": the home folder, as in a spec
        report_path = Path(report).expanduser() if report else default_report_path(path)
        verify = verification_path(path)
        files.refuse_undecodable_path(path, report_path)  # the companion's name is the query's, with a suffix
        files.refuse_pair_inside_folder_releases(path, report_path)
        refuse_verification_inside_folder_releases(path)
        refuse_report_at_verification(path, report_path)
        files.refuse_unsafe_targets(path, report_path, self.inputs, overwrite, suffixes=(".sql",))
        files.refuse_unsafe_targets(verify, report_path, self.inputs, overwrite, suffixes=(".sql",))
        refuse_verification_at_query(path)
        # Built once for the pair: the verification query's model checks and the report's account of
        # them (each call builds every sensitive column's measures and hierarchy tree again).
        checks, models = self._model_checks()
        try:
            # The verification file is placed with the pair, and rolled back with it: a report
            # never names a verification file that is not its own.
            # Each written through a link, as ``cp`` writes (``files.placed_at``): the companion's link
            # was replaced by a file while the query's was kept (ninety-ninth round).
            placed = files.placed_at(verify)
            with placing.folders_undone_on_failure(path, report_path), \
                    placing.Transaction(files.placed_at(path), report_path, overwrite,
                                        companions=(placed,)) as txn:
                txn.data.write_text(_salted(self.release_sql()), encoding="utf-8")
                files.fsync(txn.data)
                with writing_file(placed):
                    txn.companion(placed).write_text(self._verification_sql(checks) + "\n", encoding="utf-8")
                    files.fsync(txn.companion(placed))
                digest = files.sha256(txn.data)
                doc = self._warehouse_report(path, digest, models)
                with writing_file(report_path):  # a full disk names no file: say which one
                    txn.report.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
                    files.fsync(txn.report)
                txn.commit(digest)
        except OSError as e:
            raise EnvironmentFailure.from_os_error(e, path) from None
        return doc

    def warehouse_report(self, path: Path | None = None, digest: str | None = None) -> dict:
        """The report: the local one's values, ``verified: false``, and the ``warehouse`` section."""
        return self._warehouse_report(path, digest, self._model_checks()[1])

    def _warehouse_report(self, path: Path | None, digest: str | None, models: dict[str, list[dict]]) -> dict:
        """``warehouse_report`` with ``models``, its ``verification_models`` (``_model_checks``' second part)."""
        doc = self.report(self.summary, path, digest, output_format="sql")
        doc["verified"] = False
        doc["warehouse"] = {
            "dialect": self.dialect, "table": self.table_name, "histogram": self.source_label,
            "release_query": str(path) if path else None,
            "verified_locally": False, "note": NOT_VERIFIED,
            "verification_query": str(verification_path(path)) if path else None,
            "expected": self.expected(),
            "sensitive_columns": {f"s{j}": sa.name for j, sa in enumerate(self.problem.sas)},
            "verification_models": models,
        }
        doc["warnings"] = [*doc["warnings"], NOT_VERIFIED]
        return Report.model_validate(doc).to_dict()


def _model_check(j: int, sa: vs.WrittenSensitive) -> tuple[wh.ModelCheck | None, list[tuple]]:
    """The ``j``-th sensitive column's models measured by the local re-check's own SQL
    (``verify_sql.model_measures`` and ``class_distances``) over the warehouse's CTEs: its class
    counts and reference (``sql/warehouse.py``), and where the re-check keeps tables, CTEs (the
    class sizes; the hierarchy's tree, as VALUES); values inlined as literals. None when the column
    asks for distinct l or p alone: min_distinct_s<j>, equal to the search's claim, says it. With the
    models' specs (``verify_sql._model_specs``)."""
    params: list[Any] = []
    ctes: list[tuple[str, exp.Expression]] = []
    counts, reference = wh.class_counts(j), wh.reference(j)

    def kept(name: str, query: exp.Expression) -> exp.Table:
        ctes.append((name, query))
        return q.table(name)

    distances = None
    if sa.spec.t is not None:
        distances = vs.class_distances(
            sa, counts, reference, params,
            sizes=lambda: kept(f"__sqlclose_sizes_s{j}",
                               template("verify_class_sizes", counts=counts, reference=reference)),
            tree=lambda h: kept(f"__sqlclose_tree_s{j}", _tree(h)),
            keys=lambda: vs.ordered_keys(wh.WIDE_INTEGER, wh.exact_div))
    measures, specs = vs.model_measures(sa, counts, distances, params)
    figures = [(FIGURES[name].format(j=j), f"reached_{i}") for i, (name, *_) in enumerate(specs) if name in FIGURES]
    if not figures:
        return None, specs
    failing = [f"failing_{i}" for i in range(len(specs))]
    if _off_tree(sa.spec):
        measures = wh.with_off_hierarchy(measures, counts, q.table(f"__sqlclose_tree_s{j}"))
        figures.append((OFF_HIERARCHY.format(j=j), wh.OFF_HIERARCHY))
        failing.append(wh.OFF_HIERARCHY)
    return wh.ModelCheck(j, [(name, wh.inline(cte, params)) for name, cte in ctes], wh.inline(measures, params),
                         figures, failing), specs


def _off_tree(spec: Any) -> bool:
    """Whether the column's t is measured over its hierarchy's tree, which a released value off it
    would escape: verify_hierarchical.sql joins each class's values to their leaves, and a value of
    no leaf dropped out of every cost (an edited histogram named it as a leaf: ok was true). The
    local re-check refuses such a value apart; here its rows are counted (``OFF_HIERARCHY``)."""
    return spec.t is not None and spec.distance == "hierarchical"


def _tree(h: Hierarchy) -> exp.Expression:
    """verify_hierarchical.sql's tree of the hierarchy ``h`` (``verify_sql.tree_rows``) as inline VALUES."""
    rows = [[exp.Literal.string(leaf), exp.Literal.number(level), exp.Literal.string(node),
             exp.Literal.string(parent), exp.Literal.number(height)]
            for leaf, level, node, parent, height in vs.tree_rows(h)]
    return wh.values_table(vs.TREE_COLUMNS, rows)


def _salted(query: str) -> str:
    """The release query as written, led by a comment holding a random token. The report (which
    may be published) gives the file's sha256 to vouch for it; without the token that digest is a
    function of the spec and the raw values the lookups list, so anyone knowing all rows but one
    could rebuild the query for each guess of the last one and test it against the report. No ';'
    at the end: the warehouse wraps the query (a leading line comment wraps with it)."""
    return f"-- sqlclose release query {secrets.token_hex(16)}: for the warehouse, never to be published\n{query}\n"
