"""The release's files before and after a run: targets refused before the search (an input, a
folder release, a name too long, a page over an input), what stands at a path (``identity``,
``found_pair``: to tell later whether it still does), digests (``sha256``, ``folder_sha256``, keyed by
the operator's secret), and flushing to disk. Placing the pair is ``placing``'s; settling a stopped
run's half move, ``recovery``'s."""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from sqlclose.errors import EnvironmentFailure, InputError, OutputExistsError
from sqlclose.model import text
from sqlclose.model.file_stamps import Stamp, stamp_of
from sqlclose.model.own_files import has_duckdb_header, is_html_page, is_report_file, unreadable_report
from sqlclose.model.spec import default_report_path


def overwrite_given(value: object) -> bool:
    """``overwrite`` as a caller gave it, which must be True or False: "no" is a true value in
    Python, and a release written over a file because of it is a file lost."""
    if not isinstance(value, bool):
        raise InputError(f"overwrite must be True or False (got {value!r}): replacing an existing output is asked "
                         "for with True alone")
    return value


def refuse_unsafe_targets(path: Path, report: Path, inputs: list[Path], overwrite: bool,
                          suffixes: tuple[str, ...] | None = None, kind: str = "parquet",
                          replacing: bool = False) -> None:
    """Refuse an output or report that is a folder (a file for ``kind = "parquet-folder"``),
    already exists (unless ``overwrite``), is the other one, or is — through any path, symlink or
    hard link — a file the job reads (or, for a folder, holds one); a report path holding a file
    that is no sqlclose report, and an output path holding one, which overwrite never replaces.
    ``suffixes``: the ones the output may have (a release's format and suffix are ``writers.Target``'s
    check). ``replacing``: the pair at the paths is one found and judged this spec's own (--force),
    whose placing refuses it changed."""
    for target in (path, report, placed_at(path), placed_at(report)):
        refuse_blocked_folder(target)
    refuse_long_names(path, report)
    if placed_at(path) != path or placed_at(report) != report:  # temporaries go beside the files links name
        refuse_long_names(placed_at(path), placed_at(report))
    if same(path, report):
        raise OutputExistsError(f"the report path is the output path ({path}); give the report its own file")
    folder = kind == "parquet-folder"
    if folder and _inside(report, path):
        raise OutputExistsError(f"the report {report} lies inside the output folder {path}: a Parquet folder release "
                                "holds its part files alone (its digest is theirs): put the report beside the folder, "
                                f"e.g. {path.with_name(path.name + '.report.json')}")
    for target, role in ((path, "output"), (report, "report")):
        refuse_unplaceable(target, role)
        if folder and target is path:
            if target.exists() and not target.is_dir():
                raise OutputExistsError(f"the output {target} is a file; a Parquet folder output needs a folder path")
            refuse_foreign_folder(target)
        elif target.is_dir():
            raise OutputExistsError(f"the {role} path {target} is a directory, not a file path")
        refuse_inputs(target, role, inputs)
        if folder and target is path:
            held = [source for source in inputs if _inside(source, target)]
            if held:
                raise OutputExistsError(f"the output folder {target} holds {held[0]}, which this job reads; writing "
                                        "the release there would destroy it: choose another path")
        if target is path and not folder and target.exists():  # before "pass overwrite": it would not help
            refuse_report_as_data(target)
        if target.exists() and not overwrite:
            raise OutputExistsError(f"{target} already exists; pass overwrite (--overwrite) to replace it")
        if target is report and not replacing and target.exists():
            refuse_foreign_report(target)
    refuse_orphaned_report(path, report)
    if suffixes is not None and not folder and path.suffix.lower() not in suffixes:
        raise OutputExistsError(f"the output {path} would hold {suffixes[0][1:].upper()} text, but its extension says "
                                f"{path.suffix or 'nothing'}: name it {path.stem}{suffixes[0]}")


def placed_at(path: Path) -> Path:
    """Where a release (or a report, a companion) given ``path`` is placed: the file (or folder) a
    symbolic link there names, the link kept, as ``cp`` and a shell's ``>`` write through a link; else
    ``path``. Placing renamed the release over the link itself: the link was gone, and the file it
    named kept the old release (ninety-ninth round). Its temporary files and journal lie beside that
    file, in its folder (a rename never crosses file systems). A link to nothing is refused before
    the search (``refuse_unplaceable``), but resolved here all the same: a run killed while placing
    set the named file aside, and the next one settles that move where it was made."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def refuse_orphaned_report(path: Path, report: Path) -> None:
    """A link's target written through (``placed_at``) with a sqlclose report at a name that stands
    for it which this release's report is not: beside the target (its own), or beside the link (a
    release made through the link before). Left in place, it would vouch for a file no longer
    there: ``check --against`` it fails (exit 4). Refused, naming the report path that keeps one
    report per file (the ninety-ninth round refused the target's; the link's was left stale by
    ``--report`` naming the target's: the hundredth). An output path that is no link: its own report
    alike (``refuse_stale_default_report``)."""
    placed = placed_at(path)
    if placed == path:
        refuse_stale_default_report(path, report)
        return
    if not placed.exists():
        return
    own, beside_link = default_report_path(placed), default_report_path(path)
    why = "a release written through the link would leave it describing a file no longer there"
    stale = [found for found, named, elsewhere in (
        (own, "the report beside the file the output's link names", "name that file itself"),
        (beside_link, "the report beside the output's link", f"give this release that report path ({beside_link})"))
        if not _replaced_by(report, found) and _holds_report(found, named, why, elsewhere)]
    if stale and same(own, beside_link):
        raise OutputExistsError(_one_report_two_names(path, placed, own, beside_link, report))
    if len(stale) == 2:
        raise OutputExistsError(f"the output path {path} is a symbolic link to {placed}, and both {beside_link} "
                                f"(beside the link) and {own} (beside that file) are sqlclose reports: a release "
                                "replaces one report, and the other would be left describing a file no longer "
                                "there: remove the one no longer used, and give this release the other "
                                "(--report)")
    if own in stale:
        raise OutputExistsError(f"the output path {path} is a symbolic link to {placed}, a release whose report "
                                f"{own} lies beside it: this release's report goes to {report}, and that one would "
                                f"be left describing a file no longer there: name {placed} itself as the output "
                                f"(its report is replaced with it), or give this release that report path "
                                f"(--report {own})")
    if stale:
        raise OutputExistsError(f"the output path {path} is a symbolic link to {placed}, and the report of a "
                                f"release written through that link, {beside_link}, lies beside it: this "
                                f"release's report goes to {report}, and that one would be left describing a file "
                                f"no longer there: give this release that report path (--report {beside_link}), "
                                "or remove it if it no longer stands for the link")


def refuse_stale_default_report(path: Path, report: Path, table: str | None = None) -> None:
    """A release at ``path`` (a DuckDB database's ``table``) given a report elsewhere, while its report
    at the default path, beside it, is a sqlclose report: the release was replaced and that report left
    vouching for a file no longer there (``check --against`` it failed, exit 4; the hundredth round).
    Refused before the search, as through a link (``refuse_orphaned_report``). A job that always gives
    its report elsewhere never made that one, and is not refused; one that did is told to give that
    path, or to remove the report."""
    own = default_report_path(path, table)
    if _replaced_by(report, own) or not own.exists():  # a hard link of it is no replacement
        return
    why = "a release written with its report elsewhere would leave it describing a file no longer there"
    if not _holds_report(own, "the report beside the output", why, f"give this release that report path ({own})"):
        return
    what, kind = (f"table {text.name_shown(table)} in {path}", "table") if table else (str(path), "file")
    raise OutputExistsError(f"the report of the release at {what}, {own}, lies beside it: this release's report "
                            f"goes to {report}, and that one would be left describing a {kind} no longer there: give "
                            f"this release that report path (--report {own}), or remove it if it no longer stands "
                            "for that release")


def refuse_foreign_report(report: Path) -> None:
    """Refuse a report path holding a file that is not a sqlclose report (another release's data,
    say): overwrite replaces a previous report, never another file."""
    if not _holds_report(report, "the report", "overwrite replaces a previous sqlclose report there, never another "
                         "file, so it is read first", "give the report another path (report = …, --report)"):
        raise OutputExistsError(f"the report path {report} holds a file that is not a sqlclose report; overwrite "
                                "replaces a previous report there, never another file: give the report another "
                                "path (report = …, --report), or move that file")


def refuse_report_as_data(path: Path) -> None:
    """Refuse an output path holding a sqlclose report (another release's, given as ``--output`` with a
    ``--format``): overwrite replaces a previous release there, never a report, as a report path never
    takes another release's data (``refuse_foreign_report``). Its Parquet bytes replaced the first
    release's report, and ``check --against`` failed on that release (the ninety-sixth round's review)."""
    if _holds_report(path, "the output path", "overwrite replaces a previous release there, never a report, so it "
                     "is read first", "give the output another path"):
        raise OutputExistsError(f"the output path {path} holds a sqlclose report, which the release's data would "
                                "replace; overwrite replaces a previous release there, never a report: give the "
                                "output another path (--output, [output] path), or move that file")


def _holds_report(path: Path, named: str, why: str, elsewhere: str) -> bool:
    """Whether ``path`` (``named`` "the report", "the output path") holds a sqlclose report, read before
    it is replaced (``why``). One this job may not read is the environment's refusal (exit 5), not a
    foreign file: a scheduler then fixes the permissions, or the run gives the file ``elsewhere``."""
    try:
        return is_report_file(path)
    except PermissionError:
        raise EnvironmentFailure(unreadable_report(path, why, named) + f", or {elsewhere}; nothing was placed at "
                                 "the output path") from None


# What ``recovery.hidden_name`` adds to a name, ".NAME.sqlclose-PID-TOKEN.KIND": a pid of up to 7 digits (Linux's
# largest, 4194304) and 12 hex digits; the data file's longest kind is "committed" (its journal
# renamed; a DuckDB database's ".tmp.wal" is shorter), the report's "tmp" or "old".
_HIDDEN = len(".") + len(".sqlclose-") + 7 + len("-") + 12 + len(".")
_HIDDEN_EXTRA = {"output": _HIDDEN + len("committed"), "report": _HIDDEN + len("tmp")}


def refuse_undecodable_path(path: Path, report: Path | None = None) -> None:
    """An output path that is no UTF-8 (``text.refuse_undecodable_path``): DuckDB failed after the
    whole search, told as a value it could not convert (exit 1, a bug: the ninety-eighth round).
    Told before the search. ``report``: the pair's report, which Python writes and the report and
    messages name: a Python caller's (or a spec's ``[output] report``) was written there, named as
    a lone surrogate (``r\\udcff.json``), where ``--report`` was refused (the hundredth round)."""
    text.refuse_undecodable_path(path, "cannot write the output path", "give a path named in UTF-8")
    if report is not None:
        text.refuse_undecodable_path(report, "cannot write the report", "give a path named in UTF-8",
                                     text.WRITTEN_NAMED_IN_UTF8)


def refuse_long_names(path: Path, report: Path, table: str | None = None) -> None:
    """An output or report whose name, with what ``recovery.hidden_name`` adds, is past the file system's
    longest: the name alone passed, and the run failed after the whole search, placing its
    temporary file (review of the ninety-first round). Told before the search, with the longest
    name that fits: the output's, where the report's name is the output's with a suffix (and the
    table's, a DuckDB table's report being named after both); else the report's own."""
    for target, role in ((path, "output"), (report, "report")):
        most = _longest_name(target)
        size = len(os.fsencode(target.name))
        if most is None or size + _HIDDEN_EXTRA[role] <= most:
            continue
        shown = target.name if len(target.name) <= 40 else target.name[:20] + "…" + target.name[-20:]
        fits = most - _HIDDEN_EXTRA[role]
        said = f"give the {role} a name of at most {fits} bytes"
        if role == "report" and report.absolute() == default_report_path(path, table).absolute():
            # The report named after the output (and the table): the advice names what its name comes from.
            named = report.name.removeprefix(path.name).removeprefix(".").removesuffix(".report.json")
            whose, part = ("output table", named) if table else ("output", path.name)
            room = fits - (size - len(os.fsencode(part)))
            said = (f"give the {whose} a name of at most {room} bytes, or the report a name of its own" if room > 0
                    else f"give the report a name of its own (--report), of at most {fits} bytes")
        raise InputError(f"the {role}'s name {text.name_shown(shown)} is {size} bytes long: sqlclose places it through "
                         f"temporary files beside it (.NAME.sqlclose-PID-TOKEN.KIND, {_HIDDEN_EXTRA[role]} bytes "
                         f"longer), and the file system there takes names of at most {most} bytes; {said}")


def _longest_name(target: Path) -> int | None:
    """The longest file name the file system holding ``target``'s folder takes (its nearest folder
    that exists), or None when it sets none."""
    folder = next((p for p in Path(target).absolute().parents if p.is_dir()), None)
    try:
        most = os.pathconf(folder, "PC_NAME_MAX") if folder is not None else 255
    except (OSError, ValueError):
        return 255
    return most if most > 0 else None


def refuse_unplaceable(target: Path, role: str) -> None:
    """Refuse a target a file cannot be placed at as sqlclose places one (renamed over the old file,
    with overwrite): a device, a pipe or a socket — with overwrite = true, `--report /dev/null` run
    as root replaced the system's /dev/null with the report — and a symbolic link to nothing, whose
    name the existence checks missed until the placing, after the whole job (the round's review)."""
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(found.st_mode) and not target.exists():
        raise OutputExistsError(f"the {role} path {target} is a symbolic link to {os.readlink(target)}, which does "
                                "not exist; remove the link, or give another path")
    kind = os.stat(target).st_mode if stat.S_ISLNK(found.st_mode) else found.st_mode
    if not (stat.S_ISREG(kind) or stat.S_ISDIR(kind)):
        raise OutputExistsError(f"the {role} path {target} is not a file but a device, a pipe or a socket, which "
                                "placing the new file there would replace: give the path of a file")


def refuse_foreign_folder(folder: Path) -> None:
    """Replacing a Parquet folder release removes the folder whole: refuse one that holds anything but
    Parquet files (a folder of documents named by mistake, with overwrite = true)."""
    if not folder.is_dir():
        return
    foreign = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() != ".parquet")
    if foreign:
        others = f" and {text.counted(len(foreign) - 1, 'other file')}" if len(foreign) > 1 else ""
        what = "that are not Parquet files" if len(foreign) > 1 else "that is not a Parquet file"
        them = "them" if len(foreign) > 1 else "it"
        raise OutputExistsError(f"the output folder {folder} holds {foreign[0].relative_to(folder)}{others} {what}: "
                                f"it is not a release, and replacing it would delete {them}; choose another path, or "
                                "empty the folder yourself")


def refuse_page_target(page: Path, protected: list[tuple[Path, str]], overwrite: bool) -> None:
    """Refuse a sign-off page path that is a folder, lies under a file, is — through any path — one
    of ``protected`` (the files a job reads, the release and its report: (path, what it is)) or lies
    inside one (a Parquet folder release, made yet or not, or a folder source), or already exists
    (unless ``overwrite``, which never reaches ``protected``). Checked before the search, so a page
    that cannot be written stops the job before anything is placed."""
    refuse_blocked_folder(page)
    refuse_unplaceable(page, "page")
    if page.is_dir():
        raise OutputExistsError(f"the page path {page} is a directory, not a file path")
    for path, role in protected:
        if same(page, path):
            raise OutputExistsError(f"the page path {page} is {role} ({path}); writing the page there would "
                                    "destroy it: choose another path")
        if _inside(page, path):
            raise OutputExistsError(f"the page path {page} lies inside {path}, {role}: a folder release or source "
                                    "is read and digested as all its files, so a page among them would break "
                                    "reading it and its check against the report: choose a path outside it")
    if page.exists() and not overwrite:
        raise OutputExistsError(f"{page} already exists; pass --overwrite to replace it")
    if page.exists() and not is_html_page(page):
        raise OutputExistsError(f"the page path {page} holds a file that is not an HTML page; --overwrite replaces "
                                "a previous page there, never another kind of file: choose another path, or move "
                                "that file")


def folder_releases_around(path: Path) -> list[tuple[Path, str]]:
    """The folders above ``path`` that are Parquet folder releases: those with a report of a
    parquet-folder release of their name beside them (``b`` and ``b.report.json``, the name a
    folder release's report takes by default). A file among their part files would be digested as
    one of them, and the release would no longer match its report. Each folder is looked at as
    written and resolved (a symlink ``alias -> rel`` reaches ``rel``'s files, and ``rel``'s report is
    beside ``rel``, not beside the link)."""
    found, seen = [], set()
    for folder in _folders_above(path):
        if not folder.name or not folder.is_dir():  # the root has no name; a folder not yet made holds nothing
            continue
        report = folder.with_name(folder.name + ".report.json")
        if report.is_file() and _parquet_folder_report(report, folder) and os.path.realpath(folder) not in seen:
            seen.add(os.path.realpath(folder))
            found.append((folder, f"a Parquet folder release (its report: {report})"))
    return found


def _folders_above(path: Path) -> list[Path]:
    """The folders above ``path`` as written and above the file it resolves to (a link's target, where
    a release is placed: ``placed_at``), then each of them resolved with the folders above that: every
    name under which a release's folder and its report beside it may be found."""
    written = list(dict.fromkeys([*Path(os.path.abspath(path)).parents, *Path(os.path.realpath(path)).parents]))
    resolved = [level for folder in written for level in (Path(os.path.realpath(folder)),
                                                             *Path(os.path.realpath(folder)).parents)]
    return list(dict.fromkeys(written + resolved))


def _parquet_folder_report(report: Path, folder: Path) -> bool:
    """Whether ``report`` is a release report of a Parquet folder (else not a report of ours). One this
    job may not read is the environment's refusal (exit 5), as ``_holds_report``'s: taken for "not
    ours", a file was written inside the release ``folder`` it vouches for (ninety-seventh round)."""
    try:
        doc = json.loads(report.read_text(encoding="utf-8"))
    except PermissionError:
        raise EnvironmentFailure(unreadable_report(report, f"to tell whether {folder} is a Parquet folder release, "
                                                           "inside which no file may be written") +
                                 "; nothing was written") from None
    except (OSError, ValueError):  # UnicodeDecodeError is a ValueError
        return False
    output = doc.get("output") if isinstance(doc, dict) else None
    return isinstance(output, dict) and output.get("format") == "parquet-folder"


def refuse_inside_folder_releases(target: Path, role: str) -> None:
    """Refuse an output or report inside a Parquet folder release (any run's, its report beside it):
    it would be digested as one of that release's files, which would then no longer match its report."""
    for folder, what in folder_releases_around(target):
        raise OutputExistsError(f"the {role} path {target} lies inside {folder}, {what}: a folder release is "
                                "digested as all its files, so a file among them would break its check against "
                                "its report: choose a path outside it")


def refuse_pair_inside_folder_releases(path: Path, report: Path) -> None:
    """``refuse_inside_folder_releases`` for a release's output and its report."""
    refuse_inside_folder_releases(path, "output")
    refuse_inside_folder_releases(report, "report")


def refuse_inputs(target: Path, role: str, inputs: list[Path], written: str = "the release") -> None:
    """Refuse a target that is — through any path, symlink or hard link — a file the job reads, or
    that lies in a folder the job reads (a Parquet folder source) or matches its pattern (a glob
    source): the next run would read the release back as input rows, so k would count people twice.
    ``written``: what the job writes there, as the message names it."""
    for source in inputs:
        if same(target, source) and is_database(source):  # another table there would destroy nothing, still refused
            raise OutputExistsError(f"the {role} path {target} is {read_by_job(target, source)}, a database the "
                                    f"source is read from (or its connection has open), which a release never "
                                    f"writes into: write {written} to another database file (or detach it from "
                                    "that connection)")
        if same(target, source):
            raise OutputExistsError(f"the {role} path {target} is {read_by_job(target, source)}; writing "
                                    f"{written} there would destroy it: choose another path")
        if source.is_dir() and _inside(target, source):
            raise OutputExistsError(f"the {role} path {target} is inside {source}, a folder this job reads; the "
                                    f"next run would read {written} as input rows: choose a path outside it")
        if _is_pattern(source) and fnmatch.fnmatchcase(os.path.realpath(target), _real_pattern(source)):
            raise OutputExistsError(f"the {role} path {target} matches {source}, the pattern this job reads; the "
                                    f"next run would read {written} as input rows: choose a path it does not match")


def is_database(path: Path) -> bool:
    """Whether ``path`` is a DuckDB database file, by its header (``has_duckdb_header``); an
    unreadable file is none."""
    try:
        return has_duckdb_header(path)
    except OSError:
        return False


def read_by_job(target: Path, source: Path) -> str:
    """How a target that is ``source`` is told: "a file this job reads" when both are written alike
    (not "X is X"), else "SOURCE, which this job reads" (another name of it: a link, ``..``)."""
    if os.path.abspath(target) == os.path.abspath(source):
        return f"{'a folder' if source.is_dir() else 'a file'} this job reads"
    return f"{source}, which this job reads"


def _is_pattern(path: Path) -> bool:
    return any(ch in str(path) for ch in "*?[") and not path.exists()


def _real_pattern(pattern: Path) -> str:
    """The pattern with its fixed leading folders resolved (symlinks, ``..``), as targets are."""
    parts = pattern.parts
    fixed = next((i for i, part in enumerate(parts) if any(ch in part for ch in "*?[")), len(parts))
    return os.path.join(os.path.realpath(Path(*parts[:fixed])) if fixed else os.getcwd(), *parts[fixed:])


def refuse_blocked_folder(target: Path) -> None:
    """The nearest existing ancestor must be a writable folder: fail before the search, not after."""
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise EnvironmentFailure(f"cannot create the folder for {target}: {folder} is a file")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise EnvironmentFailure(f"cannot write in {folder} (permission denied); choose another output path")


def _inside(path: Path, folder: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def same(a: Path, b: Path) -> bool:
    """Same file by resolved path, or (both existing) by device and inode: catches hard links."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _one_report_two_names(path: Path, placed: Path, own: Path, beside_link: Path, report: Path) -> str:
    """The refusal of a report elsewhere when the report beside the output's link and the one beside
    the file it names are one file of two names: told as "both … are sqlclose reports", two reports
    to choose between, where there is one (the hundredth round). Through a symbolic link either name
    gives the one file the release's report (``placed_at``); a hard link's names part when one is
    replaced, so one of them goes first."""
    told = (f"the output path {path} is a symbolic link to {placed}, and the report beside that file, {own}, is "
            f"the one beside the link too, {beside_link}")
    if not (own.is_symlink() or beside_link.is_symlink()):
        return (f"{told} (a hard link: one file of two names): a release's report replaces one of the names, and "
                "the other would be left describing a file no longer there: remove one of the two names, and give "
                "this release the other (--report)")
    return (f"{told} (a symbolic link: one report of two names): this release's report goes to {report}, and that "
            f"one would be left describing a file no longer there: give this release that report path (--report "
            f"{beside_link}), which replaces the one report both names reach")


def _replaced_by(report: Path, found: Path) -> bool:
    """Whether writing the report at ``report`` replaces the file at ``found``: one name once links
    are followed (``placed_at`` writes through a symbolic link). A hard link's other name is not
    (``same`` takes it for the file): the report is renamed over one name, and the other kept the
    old report, vouching for a file no longer there (the hundredth round)."""
    return os.path.realpath(report) == os.path.realpath(found)


def remove(path: Path) -> None:
    """Remove a file or a folder (a Parquet folder release); a missing one is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def identity(path: Path) -> Stamp | None:
    """A file's stamp (``file_stamps.stamp_of``: device, inode, size, modification time), None when
    there is none: whether the file at a path is still the one found there earlier. Unlike a source's
    ``file_stamp``, a file that cannot be looked at (no permission) is an error, not "none"."""
    try:
        return stamp_of(os.stat(path))
    except FileNotFoundError:
        return None


def found_at(path: Path) -> object:
    """What stands at a path, to tell later whether it still does: a file's ``identity``; a
    folder's with each of its files' (one rewritten in place leaves the folder's own unchanged)."""
    if path.is_dir():
        return identity(path), tuple((name, identity(path / name)) for name in folder_files(path))
    return identity(path)


@dataclass(frozen=True)
class FoundPair:
    """A release and its report as found at their paths (``found_pair``): an overwrite granted for
    this pair alone (``--force``, which redoes a spec's own release) replaces it, or nothing."""

    data: object
    report: object


def found_pair(path: Path, report: Path) -> FoundPair:
    """The pair at ``path`` and ``report`` as it stands now (taken before it is read and judged)."""
    return FoundPair(found_at(path), found_at(report))


def changed_since_found(target: Path) -> OutputExistsError:
    """A pair ``--force`` found to be this spec's own release, changed during the run."""
    return OutputExistsError(
        f"{target} changed while this run was searching and writing (another run placed a release there?): "
        "--force replaces only the release it found to be this spec's own before the search, so nothing of "
        "this run was placed; run again")


def sha256(path: Path) -> str:
    """A file's sha256, or a folder's (``folder_sha256``)."""
    if path.is_dir():
        return folder_sha256(path)
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


FINGERPRINT_KEY_VARIABLE = "SQLCLOSE_FINGERPRINT_KEY"


def operator_key(given: str | None = None) -> str | None:
    """The operator's secret: ``given``, else $SQLCLOSE_FINGERPRINT_KEY; None without one. It keys
    the input fingerprint and every digest a report publishes (``files.keyed``)."""
    return (given if given is not None else os.environ.get(FINGERPRINT_KEY_VARIABLE)) or None


def keyed(key: str | None, digest: str) -> str | None:
    """A digest a report may publish: HMAC-SHA256 of ``digest`` under the operator's secret, None
    without one. A plain digest of what may hold the data's values (a hierarchy built from them)
    let anyone who knows all rows but one test guesses of the last against it."""
    if key is None:
        return None
    return hmac.new(key.encode("utf-8"), digest.encode("ascii"), hashlib.sha256).hexdigest()


def folder_files(folder: Path) -> list[str]:
    """The files of a folder, as sorted '/'-separated paths relative to it."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def folder_sha256(folder: Path) -> str:
    """A folder's digest: the sha256 of its manifest — one line ``<sha256 of the file>  <relative
    path>`` per file (as ``sha256sum`` prints them), sorted by path. Reproducible with
    ``(cd FOLDER && find . -type f | sed 's|^./||' | LC_ALL=C sort | xargs sha256sum) | sha256sum``."""
    manifest = "".join(f"{sha256(folder / name)}  {name}\n" for name in folder_files(folder))
    return hashlib.sha256(manifest.encode("utf-8")).hexdigest()


def fsync(path: Path) -> None:
    """Flush a file (or every file of a folder, and its folders) to disk."""
    if path.is_dir():
        for name in folder_files(path):
            fsync(path / name)
        for sub in [path, *(p for p in path.rglob("*") if p.is_dir())]:
            fsync_dir(sub)
        return
    _fsync_one(path)


def _fsync_one(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    try:
        _fsync_one(path)
    except OSError:  # not every filesystem lets a directory be fsynced
        pass
