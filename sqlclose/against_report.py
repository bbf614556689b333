"""Re-verifying a release against its report (``sqlclose check --against``): the file's digest,
its columns, and every claim of the report the file decides (``audit.claims`` over
``audit.figures``), with the hierarchies the report names or the release's spec. What the file
cannot decide is listed in docs/verification.md, "Re-verifying a release against its report"."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlglot import exp

from sqlclose.engine import DuckDBEngine, Engine
from sqlclose.engine.listing import SPECIAL_FILE_WHY, FilesBelow, files_below, folder_files, is_parquet, special_kind
from sqlclose.errors import (
    EngineError,
    EngineOutOfMemory,
    InputError,
    SensitiveOffHierarchyError,
    SpecError,
    VerificationError,
)
from sqlclose.model.file_stamps import Stamp, refuse_changed_files, stamps_of
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.spec import QuasiIdentifier, Sensitive, Spec, as_spec, table_identity
from sqlclose.model.text import (
    NAMED_IN_UTF8,
    RENAME_IN_UTF8,
    counted,
    name_cut,
    name_shown,
    named,
    refuse_undecodable_path,
    shown,
)
from sqlclose.prepare.sources import SourceLike, brings_engine, magic_format
from sqlclose.release.files import keyed, operator_key, sha256
from sqlclose.release.release import MAX_LABELS_SHOWN
from sqlclose.release.table_digest import table_release_digest

if TYPE_CHECKING:
    from sqlclose.audit.check import CheckReport


def verify_against_report(path: Path, report_path: Path, spec: Spec | str | Path | None = None,
                          engine: Engine | None = None, table: str | None = None, *,
                          lenient: bool = False) -> dict:
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
    connection). ``table``: the table the caller names (``--table``), which must be the report's.
    ``lenient`` (the sign-off page, given no spec): a column whose model the report cannot rebuild is
    measured without it, its distances left unchecked and said so in ``notes``, where ``check`` stops."""
    return _verification(path, report_path, spec, engine, table, lenient)[0]


def _verification(path: Path, report_path: Path, spec: Spec | str | Path | None, engine: Engine | None,
                  table: str | None, lenient: bool) -> tuple[dict, CheckReport | None]:
    """``verify_against_report``'s outcome, and the audit of the file it made (None where it stopped
    before one): the sign-off page draws from that audit instead of making it again."""
    path, report_path = Path(path).expanduser(), Path(report_path).expanduser()  # "~": the home folder
    refuse_undecodable_pair(path, report_path)
    with refused_if_replaced(pair_stamps(path, report_path), path, "while it was checked against its report",
                             "check it again"):
        return _verified(path, report_path, spec, engine, table, lenient)


def refuse_undecodable_pair(path: Path, report_path: Path) -> None:
    """A release or report whose name is not UTF-8, refused as ``check --against``'s arguments are: a
    Python caller's report was read and its name told as a lone surrogate (the hundredth round)."""
    refuse_undecodable_path(report_path, "cannot read the report", RENAME_IN_UTF8, NAMED_IN_UTF8)
    refuse_undecodable_path(path, "cannot read the release", RENAME_IN_UTF8)


def pair_stamps(path: Path, report_path: Path) -> dict[str, Stamp]:
    """The stamps of a release's report and files, taken before either is read: a run placing its new
    pair meanwhile (data, then report) left a reader with the old report and the new file, whose
    digest and figures differed from its claims (a false "does not match", exit 4, or a sensitive
    value "not in its domain", exit 2: the ninety-eighth round)."""
    return stamps_of([report_path, *_release_files(path)])


@contextmanager
def refused_if_replaced(read: dict[str, Stamp], path: Path, when: str, again: str) -> Iterator[None]:
    """Within the block the release at ``path`` and its report are read; refused (``InputError``)
    after it when either changed since ``pair_stamps`` took ``read`` — a refusal or a mismatch found
    in the block too, which may be that of two releases' files read as one (``when``: "while it
    was checked against its report"; ``again``: what to do, "check it again")."""
    harm = ("the report's claims and the file's digest and figures would be of two releases (a run placed a new "
            f"one meanwhile?); {again} once no run is placing a release there")
    try:
        yield
    except Exception:
        refuse_changed_files(read, f"{path} or its report", when, harm)
        raise
    refuse_changed_files(read, f"{path} or its report", when, harm)


def _verified(path: Path, report_path: Path, spec: Spec | str | Path | None, engine: Engine | None,
              table: str | None, lenient: bool) -> tuple[dict, CheckReport | None]:
    from sqlclose.audit import alterations, claims

    doc = claims.read_report(report_path)  # the claims every check reads: a field missing is told here
    _refuse_newer_schema(doc, report_path)
    qis, privacy, output = list(doc["generalization"]), doc["privacy"], doc["output"]
    _refuse_another_table(table, output, report_path)
    notes = _Notes()
    if stripped := _stripped_digests(doc):
        return _outcome(path, report_path, stripped, notes), None
    unmodelled: set[str] = set()
    if spec is not None:
        models = dict(as_spec(spec).sensitive)
        if other_columns := claims.sensitive_columns_claims(doc, as_spec(spec)):
            return _outcome(path, report_path, other_columns, notes), None
    elif lenient:
        rebuilt = models_from_report(doc)
        models, unmodelled = rebuilt.models, set(rebuilt.unknown)
        notes.lines += rebuilt.notes + [f"{name_cut(name)}: its distances were not checked: {why}"
                                        for name, why in rebuilt.unknown.items()]
    else:
        models = {name: _model_from_report(name, entry, doc.get("hierarchies", {}).get(name), notes)
                  for name, entry in privacy["sensitive"].items()}

    query_made = output.get("format") == "sql"
    if query_made:
        notes.lines.append(QUERY_DIGEST_NOTE)
        notes.content_compared = False
    if form := _form_claims(path, output):  # read by another format's reader, the file tells nothing true
        return _outcome(path, report_path, form, notes), None
    with _released(path, output, engine) as (source, digest, header, unreadable):
        problems = _self_contradictions(doc) + ([] if query_made else digest_problems(digest, output))
        if header is not None and header != output["columns"]:  # a CSV: its header, before a typed read
            return _outcome(path, report_path, problems + [claims.columns_differ(header, output["columns"])],
                            notes), None
        if unreadable is not None:  # a changed CSV its report's column types do not read
            return _outcome(path, report_path, problems + [unreadable], notes), None
        from sqlclose.audit.check import check as run_check
        from sqlclose.audit.figures import release_figures

        table = output.get("table") if output.get("format") == "duckdb" else None
        own = None if brings_engine(source) else engine
        # A Parquet folder's Hive partition columns are read last (``_partitioned``): the release's order otherwise.
        expected = claims.read_back_order(output["columns"], _partition_columns(path, output))
        level_labels, hierarchies = _level_labels(doc, spec, notes)
        leaf_counted = hierarchies if set(hierarchies) == set(qis) and alterations.counts_leaves(doc) else {}
        with _told_as_file(source, path):
            figures = release_figures(source, qis, expected, level_labels, MAX_LABELS_SHOWN, table=table, engine=own,
                                      several_levels=doc.get("algorithm") == "gaa", label_rows=leaf_counted,
                                      read_labels=_values_labelled(doc) if query_made else None)
        if figures.columns != expected:
            problems.append(claims.columns_differ(figures.columns, output["columns"]))
            return _outcome(path, report_path, problems, notes), None
        if not query_made and digest_problems(digest, output):
            # A file that is not the release is told by its digest and columns alone: given the raw
            # table by mistake, `check --against` printed its classes, label counts and distances
            # into the job's log, which told of the suppressed rows (review h4 of the 85th round).
            return _outcome(path, report_path, problems, notes), None
        try:
            with _told_as_file(source, path):
                audit = run_check(source, qis, models, k=privacy["k"], table=table, engine=own)
        except SensitiveOffHierarchyError as off:  # a release holds only its hierarchy's leaves
            if spec is not None:  # the operator's hierarchy, which may not be the release's: bad input
                raise
            rows = "" if off.rows is None else f" in {counted(off.rows, 'row')}"
            problems.append(f"{name_cut(off.column)}: the file holds {counted(off.values, 'value')}{rows} that "
                            "its hierarchy lacks (not shown: sensitive values), which no release made with it holds")
            return _outcome(path, report_path, problems, notes), None
        audit_ = audit.to_dict()
    for name, entry in privacy["sensitive"].items():
        measured = audit_["sensitive"][name]
        for key in ("distinct_l", "entropy_l", "recursive", "p"):
            if key in entry:
                problems += claims.differs(f"privacy.sensitive.{name_cut(name)}.{key}.reached", entry[key]["reached"],
                                           _reached(measured, key))
        if "t" in entry and name in doc.get("t_against_release", {}) and name not in unmodelled:
            problems += _t_against_release(name, entry, doc["t_against_release"][name], measured, models.get(name))
    problems += claims.requirement_claims(doc, models if spec is not None else None) + claims.suppressed_t_claims(doc)
    problems += claims.spec_claims(doc, as_spec(spec)) if spec is not None else []
    problems += claims.row_claims(doc, figures) + claims.distance_claims(doc, audit_["sensitive"], unmodelled)
    problems += claims.utility_claims(doc, audit_["utility"]["sensitive"]) + claims.share_claims(doc)
    problems += claims.gaa_share_claims(doc, figures)
    problems += claims.node_claims(doc, {name: f.outside for name, f in (figures.labels or {}).items()})
    known_levels = {name: count for name, labels in level_labels.items()
                    if (count := _level_count(labels, (figures.labels or {}).get(name))) is not None}
    problems += claims.lattice_claims(doc, known_levels) + claims.several_level_claims(doc, figures, known_levels)
    notes.lines += [f"the level of column {name_shown(name)} was not checked against the file's labels: some of its "
                    "band labels have edges of more digits than the check's arithmetic holds (38)"
                    for name, f in (figures.labels or {}).items() if f.unjudged]
    problems += claims.label_claims(*_labels_as_read(doc, figures, notes), figures, MAX_LABELS_SHOWN)
    altered, unaltered = alterations.alteration_claims(
        doc.get("utility") or {}, alterations.release_records(doc, figures, hierarchies), doc.get("algorithm") != "gaa",
        (as_spec(spec).search.weights or {}) if spec is not None else None)
    problems += altered
    notes.lines += unaltered
    return _outcome(path, report_path, problems, notes, figures.rows, figures.classes), audit


@dataclass
class ReportModels:
    """The sensitive columns' models as a report records them (``models_from_report``)."""

    models: dict[str, Sensitive | None]  # None: measured without a model (no t judged, no hierarchy)
    unknown: dict[str, str]  # per column whose model needs the release's spec: why
    notes: list[str]  # what the models rest on that nothing vouches for (a hierarchy file read as it is now)


def models_from_report(doc: dict) -> ReportModels:
    """Each sensitive column's model rebuilt from the report ``doc``, as ``check --against`` rebuilds
    it (its distance, t, l and p models, NULL stand-in and the hierarchy file it names), for a reader
    given no spec (the sign-off page). A column whose model cannot be rebuilt (a hierarchical
    distance over a hierarchy the report names no file for, or whose file changed) is measured
    without one, and ``unknown`` says why, instead of the whole audit stopping."""
    notes = _Notes()
    models: dict[str, Sensitive | None] = {}
    unknown: dict[str, str] = {}
    for name, entry in doc["privacy"]["sensitive"].items():
        try:
            models[name] = _model_from_report(name, entry, doc.get("hierarchies", {}).get(name), notes)
        except InputError as e:
            models[name], unknown[name] = None, str(e)
    return ReportModels(models, unknown, notes.as_list())


def _t_against_release(name: str, entry: dict, claimed: Any, measured: dict, model: Sensitive | None) -> list[str]:
    """The report's largest distance of a class from the file's own distribution against the one
    measured, by the distance the report names. One the audit did not measure (the spec given judges
    the column by another, and its column holds no hierarchy or no numbers for the report's) is a
    claim the spec contradicts: it was a KeyError (exit 1, review rv28)."""
    from sqlclose.audit import claims

    distance = entry.get("distance")
    if distance not in measured["distances"]:
        judged = f"judges {name_shown(name)} by {claims.as_json(model.distance)}" if model is not None else \
            "gives no model of it"
        return [f"privacy.sensitive.{name_cut(name)}.distance: the report says {claims.as_json(distance)}, the "
                f"spec given (--spec) {judged}, and the file's {name_shown(name)} was not measured by "
                f"{claims.as_json(distance)}: give the release's spec"]
    return claims.differs(f"t_against_release.{name_cut(name)}", claimed, measured["distances"][distance]["reached"])


QUERY_DIGEST_NOTE = ("the report's output.sha256 is its release query's (the warehouse made the rows), not this "
                     "file's: the file's bytes were not compared; its columns and every figure it decides were")


@dataclass
class _Notes:
    """What the check could not vouch for: its notes, and the hierarchy files read as they are now
    (by when no key told them unchanged: "at the release" or "here"), told in one note each."""

    lines: list[str] = field(default_factory=list)
    read_as_they_are: dict[str, list[str]] = field(default_factory=dict)
    content_compared: bool = True  # False for a warehouse release: its digest is the query's (the note says)

    def as_list(self) -> list[str]:
        told = [f"the hierarchies of {named('column', dict.fromkeys(names))} were read as "
                f"they are now: without $SQLCLOSE_FINGERPRINT_KEY {when} nothing tells them unchanged; give the "
                "release's spec (--spec) to check with the hierarchies it used"
                for when, names in self.read_as_they_are.items()]
        return self.lines + told


def _refuse_another_table(table: str | None, output: dict, report_path: Path) -> None:
    """The report says which table it is of: one named otherwise was checked as the report's (rv21:
    ``check DB --table B --against A.report.json`` said B matched)."""
    if table is None or (output.get("table") and table_identity(table) == table_identity(output["table"])):
        return  # one table however it is spelled (People, main.people), as its report's name has it
    of = f"table {name_shown(output['table'])}" if output.get("table") else "a file, not a database table"
    raise SpecError(f"--table {name_shown(table)}: the report {report_path} is of {of}; give the report of table "
                    f"{name_shown(table)}, or leave --table out (the report names its table)")


def _refuse_newer_schema(doc: dict, report_path: Path) -> None:
    """A report of a newer major schema may hold claims this version does not know to check: refused
    (bad input), not judged by the fields it happens to share."""
    from sqlclose.release.report import SCHEMA_VERSION

    given = str(doc.get("schema_version", ""))
    major = given.split(".")[0]
    if major.isdigit() and int(major) > int(SCHEMA_VERSION.split(".")[0]):
        raise InputError(f"{report_path} is a report of schema {given}, newer than this sqlclose reads "
                         f"({SCHEMA_VERSION}): check it with the sqlclose that wrote it, or a newer one")


def _self_contradictions(doc: dict) -> list[str]:
    """What a report says against itself, which no file can settle: a written release that says it
    was not verified (sqlclose places none unverified; a warehouse query's is verified where it
    runs), and sensitive columns named in one section and not in another (a column's claims cut
    out leave nothing of it checked; review of the sixty-third round)."""
    from sqlclose.audit.claims import as_json

    output, problems = doc["output"], []
    if output.get("format") != "sql" and doc.get("verified") is not True:
        problems.append(f"verified: the report says {as_json(doc.get('verified'))}, where sqlclose places a release "
                        "only once it is verified from the written file")
    sensitive = set(doc["privacy"]["sensitive"])
    roles = output.get("column_roles") or {}
    qis = set(doc["generalization"])
    own_roles = {c: "quasi-identifier (generalized)" if c in qis else "sensitive (unchanged)" if c in sensitive
                 else "other (unchanged)" for c in output["columns"]}
    if roles and roles != own_roles:  # a QI told as kept unchanged reads as no anonymization of it
        problems.append(f"output.column_roles: the report says {as_json(roles)}, its generalization and sensitive "
                        f"columns make {as_json(own_roles)}: the report contradicts itself")
    for where, names in (("output.column_roles", {c for c, role in roles.items() if str(role).startswith("sensitive")}
                          if roles else sensitive),
                         ("utility.sensitive", set(doc["utility"].get("sensitive") or sensitive)),
                         ("t_against_release", set(doc.get("t_against_release") or {})
                          | {c for c, e in doc["privacy"]["sensitive"].items() if "t" not in e})):
        if names != sensitive:
            problems.append(f"{where} names the sensitive columns {sorted(names)}, privacy.sensitive "
                            f"{sorted(sensitive)}: the report contradicts itself")
    return problems


def _form_claims(path: Path, output: dict) -> list[str]:
    """The release's form as the report gives it: its format (a file read by its report's format: a
    CSV's report over a Parquet file passed), and a folder's partition columns (its readers take them
    as columns, outermost first), which the written folder decides."""
    from sqlclose.audit.claims import as_json

    if not Path(path).exists():  # told where it is read, as before
        return []
    said, found = output.get("format"), _written_format(Path(path))
    problems: list[str] = []
    if said not in ("sql", found):  # the digest first, as ever: another file given is told as such
        if output.get("sha256") and sha256(Path(path)) != output["sha256"]:
            problems += digest_problems("", {"sha256": output["sha256"]})
        problems.append(f"output.format: the report says {as_json(said)}, the release is {as_json(found)}")
    if found == said == "parquet-folder" and (foreign := _foreign_claims(Path(path))):
        return foreign  # told before anything below the folder is read
    partitions = _partition_columns(path, output) if found == said == "parquet-folder" else []
    if found == said == "parquet-folder" and list(output.get("partition_by") or []) != partitions:
        problems.append(f"output.partition_by: the report says {as_json(output.get('partition_by'))}, the folder is "
                        f"partitioned by {as_json(partitions)}")
    return problems


def _foreign_claims(folder: Path) -> list[str]:
    """What a folder release holds that sqlclose never writes into one: a link, a pipe, socket or
    device, a file that is not Parquet, a hidden file (the first kind found is told), found in one walk."""
    found = files_below(folder)
    return (_link_claims(found) or _special_file_claims(found) or _other_file_claims(found)
            or _hidden_file_claims(found))


def _link_claims(found: FilesBelow) -> list[str]:
    """A folder release holding a symbolic link, at any depth: sqlclose writes none into a release, so
    the folder is not the one its report describes, a mismatch (exit 4). A folder *source* holding a
    link to a folder stays bad input (exit 2, ``sources``). Its readers follow a link to files nothing
    vouches for: a linked folder is outside the digest's listing, and a class of one behind it passed."""
    links = found.links
    return _claim(links, "other link", f", a symbolic link {_link_kind(links[0])}" if links else "",
                  "and sqlclose writes no link into a release")


def _special_file_claims(found: FilesBelow) -> list[str]:
    """A folder release holding a pipe (FIFO), a socket or a device, at any depth: the folder's
    digest lists regular files only and passed it, though its readers would try to read it (a pipe
    blocks them). sqlclose writes none into a release: not the release (exit 4), named, never opened
    (ninety-sixth round)."""
    special = found.special
    return _claim(special, "other special file", special_kind(special[0]) if special else "",
                  f"{SPECIAL_FILE_WHY}, and sqlclose writes only Parquet files into a release")


def _other_file_claims(found: FilesBelow) -> list[str]:
    """A folder release holding a file that is not Parquet where its readers read one (not under a
    hidden part): sqlclose writes only Parquet files there, so the folder is not the release (exit 4),
    where it was refused as a source folder's (exit 2: bad input)."""
    return _claim([path for path in found.visible if not is_parquet(path)], "other file", "",
                  "not Parquet, which its readers (Spark, Hive) would read as part of the table, and sqlclose writes "
                  "only Parquet files into a release")


def _hidden_file_claims(found: FilesBelow) -> list[str]:
    """A folder release holding a file under a hidden name (``.notes``, ``_SUCCESS``, ``_temporary/…``),
    which its readers skip and sqlclose never writes into a release (its own temporaries and lock lie
    beside the folder): the folder is not the release (exit 4), named as the other foreign files are,
    where only its digest told it, as a changed file (ninety-sixth round)."""
    return _claim(found.hidden, "other hidden file", "",
                  "under a hidden name its readers (Spark, Hive) skip, and sqlclose writes no hidden file into a "
                  "release")


def _claim(found: list[Path], others: str, kind: str, why: str) -> list[str]:
    """The claim of a folder release holding ``found`` files (links, …) sqlclose never writes: the
    first named (with its ``kind``), the count of the ``others``, and ``why`` it is not the release."""
    if not found:
        return []
    more = f" (and {counted(len(found) - 1, others)})" if len(found) > 1 else ""
    return [f"the folder holds {found[0]}{kind}{more}, {why}: not the release the report describes"]


def _link_kind(link: Path) -> str:
    if link.is_dir():
        return "to a folder"
    if link.is_file():
        return "to a file"
    return "to nothing" if not link.exists() else "to a device, pipe or socket"


def _written_format(path: Path) -> str:
    """What a written release is, by its bytes: a folder, a Parquet file, a DuckDB database
    (``magic_format``), "unreadable", or else text (a CSV, compressed or not)."""
    if path.is_dir():
        return "parquet-folder"
    if not os.access(path, os.R_OK):
        return "unreadable"
    return magic_format(path) or "csv"


def _outcome(path: Path, report_path: Path, problems: list[str], notes: _Notes, rows: int | None = None,
             classes: int | None = None) -> dict:
    return {"file": str(path), "report": str(report_path), "rows": rows, "classes": classes,
            "problems": problems, "notes": notes.as_list(), "content_compared": notes.content_compared}


def _values_labelled(doc: dict) -> dict[str, list[str]]:
    """A warehouse report's quasi-identifiers released as they are (level 0), each with the labels it
    lists (all of them, or its first ``MAX_LABELS_SHOWN`` and their count): the warehouse's text of
    each value."""
    return {name: list(g["labels"]) for name, g in doc["generalization"].items()
            if g.get("level") == 0 and g.get("labels")}


def _labels_as_read(doc: dict, figures: Any, notes: _Notes) -> tuple[dict, dict[str, int]]:
    """``doc`` with the labels of its columns released as they are as the file's values are written
    (``figures.labels_read``: the warehouse's text cast to the file column's type), in the order the
    file's labels are listed, byte order: a faithful export of a warehouse release of a DOUBLE or a
    TIMESTAMP released at level 0 was refused ('2.9E1' against the file's 29.0). Every other label is
    compared as written. Second: the columns whose report lists only its first labels, each with how
    many of them the file holds (``figures.labels[name].among``): listed in the warehouse's text
    order, they are not the file's first (2.0E1 … against 20.0 …), so each must be among the file's
    values, a note saying their order is not judged (ninety-eighth round)."""
    read = figures.labels_read or {}
    generalization = dict(doc["generalization"])
    among: dict[str, int] = {}
    for name, texts in read.items():
        g = generalization[name]
        if g.get("label_count") == len(g["labels"]):
            generalization[name] = {**g, "labels": sorted(texts)}
            continue
        among[name] = figures.labels[name].among or 0
        if among[name] == len(texts):  # else label_claims says how many the file lacks
            notes.lines.append(f"the labels of column {name_shown(name)} were found among the file's values, read as "
                               f"its column's type; that they are its first {len(texts)} in the warehouse's text "
                               "order was not judged (the file writes its values otherwise)")
    return {**doc, "generalization": generalization}, among


def _level_count(labels: Any, found: Any) -> int | None:
    """A column's levels as its hierarchy or rule makes them: a mask's from its codes' length,
    declared or read from the file's labels (``found``); None where that is not known."""
    from sqlclose.audit.figures import MaskLevels, mask_masked
    from sqlclose.audit.rule_levels import BandLevels, DateLevels

    if isinstance(labels, MaskLevels):
        known = mask_masked(labels, found.first) if found is not None else None
        return len(known[1]) if known else None
    return labels.levels if isinstance(labels, BandLevels | DateLevels) else len(labels)


def _rule_levels(s: QuasiIdentifier, stand_in: str | None) -> Any:
    """A mask, bands or dates rule's levels, as the file's labels are held to them."""
    from sqlclose.audit.figures import MaskLevels
    from sqlclose.audit.rule_levels import BandLevels, DateLevels

    if s.kind == "mask":
        return MaskLevels(s.length, s.mask_char, s.mask_steps, stand_in)
    if s.kind == "bands":  # the widths and origin as the exact decimals written, as the rule cuts them
        return BandLevels(tuple(Decimal(str(w)) for w in s.bands or []), Decimal(str(s.origin)), stand_in)
    return DateLevels(tuple(s.date_levels), stand_in)


def _rule_domain(s: QuasiIdentifier, stand_in: str | None) -> Any:
    """A mask, bands or dates rule whose domain the spec declares (``rule_covers``), else None."""
    from sqlclose.audit.rule_covers import RuleDomain

    if s.kind == "mask":
        return None if s.alphabet is None else RuleDomain("mask", stand_in, alphabet=len(s.alphabet), length=s.length,
                                                          mask_char=s.mask_char)
    domain = s.declared_domain
    return None if domain is None else RuleDomain(s.kind, stand_in, whole_widths=s.whole_bands, domain=domain)


def _level_labels(doc: dict, spec: Spec | str | Path | None,
                  notes: _Notes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per quasi-identifier whose hierarchy is known without the input (the spec's file or tree, or
    the file the report names, refused when its keyed digest says it changed), the labels of each
    level; for the spec's mask, bands or dates rule, the rule (``_rule_levels``: its levels' labels
    follow from it, told by their shape). Without the spec a tree or rule is unknown: its column's
    level is not checked against the file's labels, and ``notes`` says so, and to pass it. Second:
    the known file and tree hierarchies themselves, and the rules whose domain the spec declares
    (``_rule_domain``): what the leaf-counting alterations are re-derived with."""
    from sqlclose.model.spec import static_hierarchy

    given = as_spec(spec) if spec is not None else None
    out: dict[str, Any] = {}
    known: dict[str, Any] = {}
    for name in doc["generalization"]:
        h: Hierarchy | None = None
        if given is not None and name in given.quasi_identifiers:
            s = given.quasi_identifiers[name]
            if s.kind in ("mask", "bands", "dates"):  # its levels' labels follow from the rule
                stand_in = s.null_value if s.nulls == "value" else None
                out[name] = _rule_levels(s, stand_in)
                if (domain := _rule_domain(s, stand_in)) is not None:
                    known[name] = domain
                continue
            h = static_hierarchy(s, name)
        elif name in doc.get("hierarchies", {}):
            entry = doc["hierarchies"][name]
            h = Hierarchy.from_csv(_unchanged_hierarchy(name, entry, notes), entry.get("delimiter", ";"))
        if h is None:
            notes.lines.append(f"the level of column {name_shown(name)} was not checked against the file's labels: its "
                               "hierarchy is given in the spec (a tree, or a rule), not a file the report names; "
                               "pass the release's spec (--spec) to check it")
            continue
        out[name] = {level: list(h.labels(level)) for level in range(h.levels)}
        known[name] = h
    return out, known


def digest_problems(digest: str, output: dict) -> list[str]:
    """The release's digest (``released_digest``) against its report's: [] when they are equal."""
    if digest == (output.get("content_digest") or output.get("sha256")):
        return []
    return ["its content digest differs from the report's output.content_digest (the table was changed or replaced)"
            if output.get("content_digest") else
            "its sha256 differs from the report's output.sha256 (the file was changed or replaced)"]


def refuse_changed_release(path: Path, report_path: Path, output: dict,
                           spec: Spec | str | Path | None = None) -> tuple[CheckReport | None, list[str]]:
    """Refuse (``VerificationError``, exit 4, as ``check --against``) a release that is not the one
    its report vouches for — edited since, replaced, or another file given as it: a page of it
    would print the report's sha256 and "verified" over another file's figures — or whose report
    claims what the file does not hold (``verify_against_report``, every claim). A release query
    (``output.format = "sql"``) has no digest of the rows: the table exported from the warehouse is
    checked against every figure of the report it decides instead (``verify_against_report``; a
    page once vouched "the smallest has 5 rows" for a file whose smallest class had 3, or for the
    raw table). ``spec``: the release's, for the hierarchies that check reads. Returns the audit of
    the file the check made (None when it made none), for the page to draw from, and its notes: what
    it could not check (a column's levels without the spec that gives its hierarchy), for the page
    to say."""
    if not Path(path).exists():  # the page's reading says what is missing
        return None, []
    audit, notes = None, []
    if output.get("format") == "sql":
        if Path(path) == Path(output.get("path") or ""):  # the query itself: the page asks for the table
            return None, []
        outcome = verify_against_report(Path(path), Path(report_path), spec)
        problems, notes = outcome["problems"], outcome["notes"]
    else:
        # The digest ties the file to the report, not the report's figures to the file: a report edited
        # beside its release (k = 5 over classes of 3, a distance lowered) kept the digest, and its page
        # vouched for the edited figures (review of the sixty-third round). Every claim is checked.
        problems = digest_problems(released_digest(path, output), output)
        if not problems:
            outcome, audit = _verification(Path(path), Path(report_path), spec, None, None, lenient=True)
            problems, notes = outcome["problems"], outcome["notes"]
    if problems:
        raise VerificationError(f"{path} does not match its report {report_path}: " + "; ".join(problems)
                                + "; a page of it would vouch for another file than the report describes (run "
                                "`sqlclose check --against` to see what differs)")
    return audit, notes


def released_digest(path: Path, output: dict, engine: Engine | None = None) -> str:
    """What a release holds, as its report records it: a file's sha256, a table's content digest
    (taken on ``engine`` when it is a DuckDB one: the check's, its limits with it)."""
    if output.get("format", "parquet") == "duckdb":
        own = engine if isinstance(engine, DuckDBEngine) else None
        return table_release_digest(Path(path), output.get("table") or "", output.get("content_digest"), own)
    if not Path(path).exists():
        raise InputError(f"{path} does not exist")
    return sha256(Path(path))  # a folder's: the digest of its files' (files.folder_sha256)


def _release_files(path: Path) -> list[Path]:
    """The files a check of the release at ``path`` reads: the file (a DuckDB database's too), or a
    Parquet folder with its part files."""
    return [path, *folder_files(path).parquet] if Path(path).is_dir() else [path]


def _partition_columns(path: Path, output: dict) -> list[str]:
    """A Parquet folder release's Hive partition columns (the ``name=`` of its partition folders),
    outermost first — a warehouse release's export too, however it was partitioned; [] for any
    other release."""
    if output.get("format") not in ("parquet-folder", "sql") or not Path(path).is_dir():
        return []
    names: dict[str, None] = {}
    for part in folder_files(Path(path)).parquet:  # the files its readers take (engine.listing)
        for folder in part.relative_to(path).parts[:-1]:
            if "=" in folder:
                names.setdefault(folder.split("=", 1)[0])
    return list(names)


@contextmanager
def _released(path: Path, output: dict,
              engine: Engine | None = None) -> Iterator[tuple[SourceLike, str, list[str] | None, str | None]]:
    """The release as ``check`` reads it (a CSV with the column types its report records), its
    digest, a CSV's header (None for other formats), and why a changed CSV cannot be read with its
    report's types (else None). A CSV whose header is not the report's columns, or that is not the
    file the report vouches for and fails that read (or the reading of its header: the digest is
    compared first, so another file is a mismatch, not bad input), is given as its path, unread."""
    digest = released_digest(path, output, engine)
    partitions = _partition_columns(path, output)
    if partitions:
        with _partitioned(Path(path), partitions, output.get("column_types") or {}, engine) as (read, unread):
            yield read, digest, None, unread
        return
    if output.get("format") != "csv" or not output.get("column_types"):
        yield path, digest, None, None
        return
    try:
        header = _csv_header(Path(path))
    except InputError as e:  # bytes no CSV of ours holds (one corrupted, a Parquet file given)
        if digest == output.get("sha256"):  # the very file the report vouches for: bad input
            raise
        yield path, digest, None, str(e)  # another file: a mismatch, told after its sha256
        return
    if header != list(output["column_types"]):  # read with the report's types, its values would shift columns
        yield path, digest, header, None
        return
    reader = _reader(engine)
    try:
        written = reader.read_csv_typed(Path(path), output["column_types"], shared=True)  # seen by a cursor
    except EngineError as e:
        _done(reader, engine)
        if isinstance(e, EngineOutOfMemory):  # not the file's fault: its message says which limit to raise
            raise
        why = f"cannot read {path} with the column types of its report: {str(e).splitlines()[0]}"
        if digest == output.get("sha256"):  # the very file the report vouches for: not a mismatch
            raise InputError(why) from None
        yield path, digest, header, why
        return
    try:
        yield (reader.con, written.name), digest, header, None
    finally:
        _done(reader, engine)


@contextmanager
def _told_as_file(source: SourceLike, path: Path) -> Iterator[None]:
    """Bad input found in a CSV or partitioned folder read back into a table of the check's
    (``_released``) names the release, not that table (``duckdb table __sqlclose_written_csv_…``)."""
    try:
        yield
    except InputError as e:
        internal = f"duckdb table {source[1]}" if isinstance(source, tuple) else None
        if internal is None or internal not in str(e):
            raise
        raise InputError(str(e).replace(internal, f"{path} (read with its report's output.column_types)")) from None


def _reader(engine: Engine | None) -> DuckDBEngine:
    """The DuckDB a written CSV or partitioned folder is read into for the check: the caller's, so
    that its settings (memory_limit, threads, temp_directory) bound the check (a DuckDB of the
    process's own ignored them), else one of its own."""
    return engine if isinstance(engine, DuckDBEngine) else DuckDBEngine()


def _done(reader: DuckDBEngine, engine: Engine | None) -> None:
    if reader is not engine:  # the caller's engine is the caller's to close
        reader.close()


@contextmanager
def _partitioned(path: Path, partitions: list[str], types: dict[str, str],
                 given: Engine | None = None) -> Iterator[tuple[SourceLike, str | None]]:
    """A partitioned Parquet folder as ``check`` reads it: the files' own columns in their order,
    then the partition columns outermost first (``claims.read_back_order``; DuckDB's reader gives
    them in alphabetical order, Spark's in the folders'), each read with the type its report records
    (``output.column_types``): text in its folder names, an ordered column there was refused as no
    number. Second: a mismatch naming the partition column whose folder names its recorded type does
    not read (a report's type edited to another: its labels were blamed), else None."""
    engine = _reader(given)
    try:
        written = engine.read_parquet(path)
        from sqlclose.release.folder import typed_columns

        names = [c for c in engine.schema(written).names if c not in partitions] + partitions
        name = engine.temp_name("partitioned_folder")
        parsed = _report_types(types)
        selected = exp.select(*typed_columns(names, parsed, safe=True)).from_(written)
        # A table of the connection's database: a (connection, table) source is read by a cursor,
        # which sees no temporary object of the connection's (nor a registered relation).
        engine.create_temp_table(name, selected, shared=True)
        yield (engine.con, name), _unread_partitions(engine, written, {c: parsed[c] for c in partitions if c in parsed},
                                                     types)
    finally:
        _done(engine, given)


def _unread_partitions(engine: DuckDBEngine, written: exp.Expression, parsed: dict[str, exp.DataType],
                       types: dict[str, str]) -> str | None:
    """The partition columns whose folder names the report's recorded type reads as no value: the
    rows each loses, in one pass over the folder's partition columns (no file's data is read)."""
    from sqlclose.audit.claims import as_json
    from sqlclose.release.folder import typed_columns

    if not parsed:
        return None
    columns = list(parsed)
    typed = typed_columns(columns, parsed, safe=True)
    lost = [exp.Sum(this=exp.If(this=exp.and_(exp.column(exp.to_identifier(c, quoted=True)).is_(exp.null()).not_(),
                                              t.this.copy().is_(exp.null())),
                                true=exp.Literal.number(1), false=exp.Literal.number(0))).as_(f"c{i}")
            for i, (c, t) in enumerate(zip(columns, typed))]
    row = engine.fetch_row(exp.select(*lost, exp.Count(this=exp.Star()).as_("n")).from_(written.copy()))
    told = [f"output.column_types.{name_cut(c)}: the report says {as_json(types[c])}, which reads "
            f"{row[f'c{i}']} of the folder's {row['n']} rows' {name_shown(c)} (their partition folders' names) as "
            "no value"
            for i, c in enumerate(columns) if row[f"c{i}"]]
    return "; ".join(told) or None


def _report_types(types: dict[str, str]) -> dict[str, exp.DataType]:
    """The column types a report records, parsed once for the read-back's casts; one that names no
    type (it stopped the read as an internal error) means the report is not one sqlclose wrote."""
    from sqlglot.errors import SqlglotError

    parsed: dict[str, exp.DataType] = {}
    for column, kind in types.items():
        try:
            parsed[column] = exp.DataType.build(kind, dialect="duckdb")
        except (SqlglotError, ValueError, TypeError):
            raise InputError(f"output.column_types.{name_cut(column)} is {shown(kind)}, which names no column "
                             "type: the report is not one sqlclose wrote (give the report written beside the "
                             "release)") from None
    return parsed


def _csv_header(path: Path) -> list[str]:
    """The column names of a CSV written by ``copy_to_csv`` (comma, double quotes): its first record."""
    try:
        with path.open(encoding="utf-8", newline="") as f:
            return next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"cannot read the header of {path}: {type(e).__name__}") from None


def _model_from_report(name: str, entry: dict, hierarchy: dict | None, notes: _Notes) -> Sensitive:
    given: dict[str, Any] = {}
    if entry.get("distance") == "hierarchical":
        if hierarchy is None:
            raise InputError(f"column {name_shown(name)} uses the hierarchical distance and the report names no "
                             "hierarchy file for it: give the release's spec (--spec)")
        file = _unchanged_hierarchy(name, hierarchy, notes)
        given["hierarchy"] = {"file": file, "delimiter": hierarchy.get("delimiter", ";")}
    given.update({"distance": entry.get("distance", "equal"), "t": entry.get("t")})
    if entry.get("null_value") is not None:  # the file's NULLs count as this value, as the release measured them
        given.update(nulls="value", null_value=entry["null_value"])
    given.update({key: entry[key]["l"] for key in ("distinct_l", "entropy_l") if key in entry})
    if "recursive" in entry:
        given["recursive"] = {"c": entry["recursive"]["c"], "l": entry["recursive"]["l"]}
    if "p" in entry:
        given["p"] = entry["p"]["p"]
    try:
        return Sensitive.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as e:  # a t of 0 or 5, an unknown distance: no model sqlclose releases under
        reasons = "; ".join(f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in e.errors())
        raise InputError(f"privacy.sensitive.{name_cut(name)} of the report is no model sqlclose releases under "
                         f"({reasons}): give the report written beside the release, or the release's spec "
                         "(--spec)") from None


def _stripped_digests(doc: dict) -> list[str]:
    """With the operator's key here, a report whose other digests are keyed was made with one, so a
    hierarchy file it names without a digest had it taken out: read as it is, any file could stand in
    for it (a hierarchy that made a class's distance 0.185, not 0.296, passed; the eighty-seventh
    round's review). A report stripped of every keyed digest still reads as one made without a key."""
    if operator_key() is None:
        return []
    named = {name: h for name, h in (doc.get("hierarchies") or {}).items() if isinstance(h, dict) and h.get("path")}
    digests = [doc["input"].get("fingerprint"), doc.get("spec_sha256"), *(h.get("sha256") for h in named.values())]
    if not any(digests):
        return []
    return [f"hierarchies.{name_cut(name)}.sha256: the report gives none, yet its other digests are keyed: a "
            "release made with the operator's key gives every hierarchy file's"
            for name, h in named.items() if h.get("sha256") is None]


def _unchanged_hierarchy(name: str, hierarchy: dict, notes: _Notes) -> Path:
    """The hierarchy file a report names, refused when it is gone or its keyed digest
    (``files.keyed``) says it changed. Without a digest to compare (no operator's key at the release
    or now), it is read as it is, and ``notes`` says so."""
    file, recorded, key = Path(hierarchy["path"]), hierarchy.get("sha256"), operator_key()
    if not file.is_file():
        state = "no longer exists"
    elif recorded is None or key is None:
        notes.read_as_they_are.setdefault("at the release" if recorded is None else "here", []).append(name)
        return file
    elif keyed(key, sha256(file)) != recorded:
        state = "changed since the release (or $SQLCLOSE_FINGERPRINT_KEY is not the release's key)"
    else:
        return file
    raise InputError(f"the hierarchy of column {name_shown(name)} ({file}) {state}: give the release's spec (--spec) "
                     "with the hierarchy it used")


def _reached(measured: dict, key: str) -> Any:
    entry = measured.get(key) or {}
    return entry.get("reached")
