"""Placing a release and its report on disk: both or neither, never over an input.

A release is a pair — the data (a file, or a Parquet folder) and the report that vouches for it
(its sha256; a folder's is defined by ``folder_sha256``). The pair
is placed by a ``Transaction``: both are written to hidden temporary names beside their targets
and verified; then a journal records the move, an existing pair (``overwrite``) is set aside,
the data and then the report are linked into place, the journal is renamed to its commit mark,
and the old pair and the mark go: a data file without its report is never a finished release. A pair
may bring companions (the warehouse's ``release.verify.sql``): placed before the data under the same
journal, and rolled back with the pair.

Whatever stops a run — an exception, Ctrl-C, SIGTERM, or a SIGKILL with no chance to clean — the
next run naming the same output (``recover_output``: before its search, and again before it
writes) finds the dead run's hidden files (their names carry its process id and token; a run is
alive while its mark of life, a hidden ``.live`` file it holds locked, stays locked: ``running``)
and finishes or undoes its move: a pair past its commit mark is kept, anything else rolls back to the old pair,
and the temporaries are removed. Which files the dead run placed is
told by the journal (what existed before it) and the files it set aside, never by their bytes: a
rerun's release may be byte for byte the old one.

Runs placing a release in the same folder take turns (``_placing_lock``: an advisory lock on the
folder itself, so nothing is left behind): two nightly runs writing one output at once each set
aside and place a whole pair, and one never undoes the other's. A new data file built from the old
one (a DuckDB database, its other tables carried over) replaces that very file or nothing
(``Transaction.builds_on``): one placed meanwhile by a process that took no lock is never dropped.
An overwrite granted for one pair alone (``--force`` redoing this spec's own release) replaces that
pair as it was found before the search (``found_pair``), never one placed there since.
"""

from __future__ import annotations

import fcntl
import fnmatch
import functools
import hashlib
import hmac
import json
import os
import secrets
import shutil
import stat
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from sqlclose.errors import HIDDEN_TEMPORARY, EnvironmentFailure, InputError, OutputExistsError, WaitWarning
from sqlclose.model.spec import default_report_path
from sqlclose.model.text import counted

_OURS: set[str] = set()  # the tokens of this process's runs (see ``alive``)
_UNCHECKED = object()  # a Transaction whose data file is not compared before it is replaced
LOCK_WAIT_SECONDS = 300.0  # the longest a run waits for another to finish placing in the same folder


def overwrite_given(value: object) -> bool:
    """``overwrite`` as a caller gave it, which must be True or False: "no" is a true value in
    Python, and a release written over a file because of it is a file lost."""
    if not isinstance(value, bool):
        raise InputError(f"overwrite must be True or False (got {value!r}): replacing an existing output is asked "
                         "for with True alone")
    return value


def refuse_unsafe_targets(path: Path, report: Path, inputs: list[Path], overwrite: bool,
                          suffixes: tuple[str, ...] | None = None, kind: str = "parquet") -> None:
    """Refuse an output or report that is a folder (a file for ``kind = "parquet-folder"``),
    already exists (unless ``overwrite``), is the other one, or is — through any path, symlink or
    hard link — a file the job reads (or, for a folder, holds one). ``suffixes``: the ones the
    output may have (a release's format and suffix are ``writers.Target``'s check)."""
    for target in (path, report):
        refuse_blocked_folder(target)
    refuse_long_names(path, report)
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
        if target.exists() and not overwrite:
            raise OutputExistsError(f"{target} already exists; pass overwrite (--overwrite) to replace it")
    if suffixes is not None and not folder and path.suffix.lower() not in suffixes:
        raise OutputExistsError(f"the output {path} would hold {suffixes[0][1:].upper()} text, but its extension says "
                                f"{path.suffix or 'nothing'}: name it {path.stem}{suffixes[0]}")


# What ``_hidden`` adds to a name, ".NAME.sqlclose-PID-TOKEN.KIND": a pid of up to 7 digits (Linux's
# largest, 4194304) and 12 hex digits; the data file's longest kind is "committed" (its journal
# renamed; a DuckDB database's ".tmp.wal" is shorter), the report's "tmp" or "old".
_HIDDEN = len(".") + len(".sqlclose-") + 7 + len("-") + 12 + len(".")
_HIDDEN_EXTRA = {"output": _HIDDEN + len("committed"), "report": _HIDDEN + len("tmp")}


def refuse_long_names(path: Path, report: Path, table: str | None = None) -> None:
    """An output or report whose name, with what ``_hidden`` adds, is past the file system's
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
        raise InputError(f"the {role}'s name {shown!r} is {size} bytes long: sqlclose places it through temporary "
                         f"files beside it (.NAME.sqlclose-PID-TOKEN.KIND, {_HIDDEN_EXTRA[role]} bytes longer), and "
                         f"the file system there takes names of at most {most} bytes; {said}")


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
        others = f" and {counted(len(foreign) - 1, 'other file')}" if len(foreign) > 1 else ""
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
        if report.is_file() and _parquet_folder_report(report) and os.path.realpath(folder) not in seen:
            seen.add(os.path.realpath(folder))
            found.append((folder, f"a Parquet folder release (its report: {report})"))
    return found


def _folders_above(path: Path) -> list[Path]:
    """The folders above ``path`` as written, then each of them resolved with the folders above that:
    every name under which a release's folder and its report beside it may be found."""
    written = list(Path(os.path.abspath(path)).parents)
    resolved = [level for folder in written for level in (Path(os.path.realpath(folder)),
                                                             *Path(os.path.realpath(folder)).parents)]
    return list(dict.fromkeys(written + resolved))


def _parquet_folder_report(report: Path) -> bool:
    """Whether ``report`` is a release report of a Parquet folder (else not a report of ours)."""
    try:
        doc = json.loads(report.read_text(encoding="utf-8"))
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
    """Whether ``path`` is a DuckDB database file, by its header ("DUCK" at byte 8)."""
    try:
        with open(path, "rb") as f:
            return f.read(12)[8:12] == b"DUCK"
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


class Transaction:
    """Writes to ``data`` and ``report`` (temporary paths), then ``commit`` places both. ``data``
    may be written as a file or as a folder (a Parquet folder release): both are placed alike."""

    def __init__(self, path: Path, report: Path, overwrite: bool, companions: tuple[Path, ...] = (),
                 replaces_data: bool = False, replacing: FoundPair | None = None) -> None:
        """``companions``: files placed with the pair (write each at ``companion(target)``).
        ``replaces_data``: the data file is replaced even without ``overwrite`` (a DuckDB database,
        whose new file carries the old one's other tables); the report still is only with it.
        ``replacing``: the pair ``overwrite`` was granted for (``found_pair``): the commit refuses
        one placed since (a database's file is its writer's to compare, before it builds on it)."""
        # Absolute: the journal names them for a run recovering from another working folder (relative,
        # that run found nothing at them and removed the set-aside previous release: review of the
        # ninety-second round).
        path, report = path.absolute(), report.absolute()
        companions = tuple(target.absolute() for target in companions)
        self.path, self.report_path, self.overwrite = path, report, overwrite
        self._replaces_data, self._replacing = replaces_data, replacing
        for folder in {path.parent, report.parent}:
            folder.mkdir(parents=True, exist_ok=True)
        recover_output(path, report, companions)
        token = run_token()
        self.data = _hidden(path, token, "tmp")
        self.report = _hidden(report, token, "tmp")
        self._companions = {target: _hidden(target, token, "tmp") for target in companions}
        self._journal = _hidden(path, token, "journal")
        self._committed = _hidden(path, token, "committed")  # the journal, renamed once the report stands
        self._old = (_hidden(path, token, "old"), _hidden(report, token, "old"))
        self._old_companions = {target: _hidden(target, token, "old") for target in companions}
        self._placed: list[Path] = []
        self._placing: tuple[Path, tuple[int, int] | None] | None = None  # (target, the inode being placed there)
        self._set_aside: list[tuple[Path, Path]] = []  # (old file's hidden name, its place)
        self._told = False  # the commit listeners, told once
        self._built_on: object = _UNCHECKED  # the data file the new one was built from (``builds_on``)
        self._live = _hidden(path, token, "live")
        self._live_fd = _hold(self._live)  # the run's mark of life, held until it ends (``running``)

    def builds_on(self, found: FileIdentity | None) -> None:
        """The data file the new one is built from (a DuckDB database's other tables copied out of
        it), as ``identity`` found it (None: there was none): ``commit`` replaces that file or
        nothing, so that another process's file placed meanwhile is never dropped unseen."""
        self._built_on = found

    def companion(self, target: Path) -> Path:
        """The temporary path to write the companion ``target`` at."""
        return self._companions[target.absolute()]

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if kind is not None:
                self._undo()
            for leftover in (self.data, self.report, self._journal, self._committed, *self._companions.values()):
                remove(leftover)
            remove(self._live)
        finally:  # held on, every other run would take this one's half move for a live one's
            if self._live_fd is not None:
                os.close(self._live_fd)
                self._live_fd = None

    def commit(self, digest: str | None = None) -> None:
        """Place the pair: journal, old files aside, companions, data, report, then drop the old files.
        Under the folders' lock, and undone under it on failure: between another run's setting
        aside and placing, nothing of it is touched. ``digest``: the data's sha256 when the caller
        has it (the report's), so that a large release is not read again under the lock."""
        digest = digest or sha256(self.data)
        companions = {str(target): [str(self._old_companions[target]), sha256(tmp)]
                      for target, tmp in self._companions.items()}
        with _placing_lock(self.path, self.report_path, *self._companions):
            # A run that died since this one began left its move half done: settled first, or its
            # files would be set aside here as if they were the old pair.
            recover(self.path, self.report_path, tuple(self._companions))
            try:
                self._commit(digest, companions)
            except BaseException:
                self._undo()
                raise

    def _commit(self, digest: str, companions: dict[str, list[str]]) -> None:
        self._refuse_replaced_data()
        self._refuse_changed_pair()
        if self.overwrite:  # a file saved into a folder release during the run would go with it
            refuse_foreign_folder(self.path)
        existed = [str(t) for t in (self.path, self.report_path, *self._companions) if t.exists()]
        _write_journal(self._journal, self.path, self.report_path, digest, self._old, companions, existed)
        olds = [*zip(self._old, (self.path, self.report_path)),
                *((old, target) for target, old in self._old_companions.items())]
        for old, target in olds:
            if self.overwrite or (self._replaces_data and target == self.path):
                if target.exists():
                    self._set_aside.append((old, target))
                    os.replace(target, old)
        placing = [*((tmp, target) for target, tmp in self._companions.items()),
                   (self.data, self.path), (self.report, self.report_path)]
        for tmp, target in placing:
            # Known before it is placed: a signal landing as the link or rename returns left a placed
            # file the undo did not know of (half a pair, with "nothing was placed").
            self._placing = (target, _inode(tmp))
            _place(tmp, target)
            self._placed.append(target)
            self._placing = None
        # The journal renamed is the commit mark: from here the new pair stands, and a signal must
        # not undo it (``_undo`` asks the mark, not the lists cleared just after it).
        os.replace(self._journal, self._committed)
        self._finish()

    def _finish(self) -> None:
        """Past the commit mark: the listeners are told (once), the old files go, then the mark. Run
        by a commit and by the undo of one interrupted past its mark (here too: it goes on where the
        signal stopped it), so a stop anywhere after the mark is told it stands and leaves no copy."""
        if not self._told:
            self._told = True
            for listener in list(_commit_listeners):
                listener()
        fsync_dir(self.path.parent)
        # The lists are cleared once the old files are gone: a signal here finds them again in the
        # undo's finish (cleared first, the previous release was left hidden for good).
        for old, _ in self._set_aside:
            remove(old)
        self._placed, self._placing, self._set_aside = [], None, []
        remove(self._committed)

    def _refuse_replaced_data(self) -> None:
        if self._built_on is _UNCHECKED or identity(self.path) == self._built_on:
            return
        raise EnvironmentFailure(
            f"{self.path} was replaced while this run was building its new file from it (by a process that "
            "does not take sqlclose's lock: an older sqlclose, a copy); placing this run's file would drop "
            "what that one holds, so nothing was placed at the output path: run again")

    def _refuse_changed_pair(self) -> None:
        if self._replacing is None:
            return
        found = [(self.report_path, self._replacing.report)]
        if not self._replaces_data:
            found.append((self.path, self._replacing.data))
        for target, was in found:
            if found_at(target) != was:
                raise changed_since_found(target)

    def _undo(self) -> None:
        # The file system says whether the pair was committed: a signal landing between the mark's
        # rename and the lists' clearing left them full, and undid a committed pair. The rename is
        # atomic, so the mark's existence is the commit; no signal masking is needed.
        if self._committed.exists():
            self._finish()
            return
        if self._placing is not None:  # placed, or not: told by whether its inode stands at the target
            target, inode = self._placing
            if inode is not None and _inode(target) == inode:
                self._placed.append(target)
            elif target.is_dir() and not target.is_symlink():
                try:  # the empty folder a folder's placing claims first (``_place_folder``)
                    target.rmdir()
                except OSError:  # not empty: not this run's
                    pass
            self._placing = None
        for target in self._placed:
            remove(target)
        for old, target in self._set_aside:
            if old.exists():
                os.replace(old, target)
        self._placed, self._set_aside = [], []  # undone once: a later call must not touch another run's pair


# Told when a pair is committed (``telling_commits``): a command's word on what stands at the output path.
_commit_listeners: list[Callable[[], None]] = []


@contextmanager
def telling_commits(listener: Callable[[], None]) -> Iterator[None]:
    """Within the block, ``listener()`` is called when a transaction's pair is committed, before the
    commit returns: a signal landing after the commit mark finds the command told the pair stands
    (it would otherwise say that nothing was placed, and its retry be refused: the output exists)."""
    _commit_listeners.append(listener)
    try:
        yield
    finally:
        _commit_listeners.remove(listener)


def lock_exclusively(fd: int, deadline: float, overdue: EnvironmentFailure,
                     on_wait: Callable[[], None] | None = None) -> None:
    """Take the exclusive advisory lock (flock) of the file open at ``fd``, waiting for its holder
    until ``deadline`` (``time.monotonic``), then raising ``overdue``; ``on_wait`` is called once,
    when the lock is first found held. A filesystem without flock passes unlocked (what the lock
    guards has its own check, or runs as before)."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
                on_wait = None
            if time.monotonic() > deadline:
                raise overdue from None
            time.sleep(0.05)
        except OSError:  # no flock on this filesystem
            return


@contextmanager
def _placing_lock(*targets: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock (flock) on the folder of each target, in one order, while a
    pair is placed or a dead run's move settled. The lock is on the folder itself: no lock file is
    left beside the release. A filesystem without flock places as before, unlocked; a lock held past
    ``LOCK_WAIT_SECONDS`` (a run stopped mid-placing) is an environment failure that names it."""
    fds: list[int] = []
    try:
        for folder in sorted({os.path.realpath(t.parent) for t in targets}):
            try:
                fd = os.open(folder, os.O_RDONLY)
            except OSError:
                continue
            fds.append(fd)
            overdue = EnvironmentFailure(
                f"another run has been placing a release in {folder} for {LOCK_WAIT_SECONDS:.0f} s; nothing was "
                "placed at the output path: check for a stopped sqlclose process there, and run again")
            lock_exclusively(fd, time.monotonic() + LOCK_WAIT_SECONDS, overdue,
                             on_wait=functools.partial(_say_it_waits, folder))
        yield
    finally:
        for fd in fds:
            os.close(fd)  # releases the lock


def _say_it_waits(folder: str) -> None:
    """Placing takes milliseconds, so a wait means a run stopped mid-placing (SIGSTOP, a debugger): a
    job's log says why it seems to hang (the command prints it as one line, none under --quiet)."""
    warnings.warn(f"another sqlclose run is placing a release in {folder}; this run waits for it to finish, "
                  f"at most {LOCK_WAIT_SECONDS:.0f} s", WaitWarning, stacklevel=2)


@contextmanager
def folders_undone_on_failure(*targets: Path) -> Iterator[None]:
    """Folders the block makes for ``targets`` (missing now) are removed again if it fails and
    they are still empty: a failed run leaves nothing at the output path, not even its folder."""
    missing: list[Path] = []
    for target in targets:
        folder = target.absolute().parent
        while not folder.exists() and folder not in missing:
            missing.append(folder)
            folder = folder.parent
    try:
        yield
    except BaseException:
        for folder in sorted(missing, key=lambda f: len(f.parts), reverse=True):  # the deepest first
            try:
                folder.rmdir()
            except OSError:  # not empty (another run's files), or gone
                pass
        raise


def place(tmp: Path, target: Path, keep: bool = False) -> None:
    """Move a finished temporary file to its target, refusing one that appeared meanwhile.
    ``keep``: the temporary stays (a second link, or a copy), to tell later what was placed."""
    _place(tmp, target, keep)


def _hidden(target: Path, token: str, kind: str) -> Path:
    return target.with_name(f".{target.name}.sqlclose-{token}.{kind}")


def _place(tmp: Path, target: Path, keep: bool = False) -> None:
    """A hard link fails atomically if the target appeared meanwhile (no check-then-act window)."""
    if tmp.is_dir():
        _place_folder(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise OutputExistsError(_appeared(target)) from None
    except OSError:  # filesystems without hard links: a checked rename (a copy when kept)
        if target.exists():
            raise OutputExistsError(_appeared(target)) from None
        (shutil.copyfile if keep else os.replace)(tmp, target)
        return
    if not keep:
        tmp.unlink()


def _appeared(target: Path) -> str:
    return (f"{target} appeared while the release was being written (another run placed it?); nothing of this run "
            "was placed: pass overwrite (--overwrite) to replace it")


def _place_folder(tmp: Path, target: Path) -> None:
    """``mkdir`` claims the name atomically (it fails if anything is there), then the folder is
    renamed over the empty folder it made: a folder that appeared meanwhile is never replaced."""
    try:
        target.mkdir()
    except FileExistsError:
        raise OutputExistsError(_appeared(target)) from None
    try:
        os.replace(tmp, target)
    except BaseException:  # a signal too: the empty folder claimed goes (a placed one is not empty)
        try:
            target.rmdir()
        except OSError:
            pass
        raise


def _inode(path: Path) -> tuple[int, int] | None:
    """A file's or folder's (device, inode), None when there is none: what a link or a rename keeps."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def remove(path: Path) -> None:
    """Remove a file or a folder (a Parquet folder release); a missing one is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _write_journal(journal: Path, path: Path, report: Path, digest: str, old: tuple[Path, Path],
                   companions: dict[str, list[str]], existed: list[str]) -> None:
    doc = {"data": str(path), "report": str(report), "sha256": digest, "old": [str(p) for p in old],
           "companions": companions,  # target: [its old file's hidden name, the new one's sha256]
           "existed": existed}  # the targets in place before the move: any other one found was placed by it
    journal.write_text(json.dumps(doc), encoding="utf-8")
    fsync(journal)


def recover_output(path: Path, report: Path, companions: tuple[Path, ...] = (), moves_only: bool = False) -> None:
    """``recover`` under the placing lock. Run at the start of every run that names the output,
    before its search: one stopping early (bad input, no solution) must still leave the previous
    pair in place, not the half move of a run killed while placing it; and again before a write."""
    with _placing_lock(path, report, *companions):
        recover(path, report, companions, moves_only)


def recover(path: Path, report: Path, companions: tuple[Path, ...] = (), moves_only: bool = False) -> None:
    """Finish or undo the move of a run that died writing ``path`` (its process is gone), and
    remove its temporaries. Runs that are still alive are left alone. ``moves_only``: only the
    dead runs that had begun placing (a journal), whose half move leaves the output without its
    pair; the others' temporaries wait for the next write (a DuckDB output's earlier-build
    leftovers are told by its database first)."""
    hidden = [m for target in (path, report, *companions) for m in _hidden_files(target)]
    marks = {m["token"]: f for f, m in hidden if m["kind"] == "live"}
    dead = [(f, m) for f, m in hidden if not running(m, marks.get(m["token"]))]
    if moves_only:
        moving = {m["token"] for _, m in dead if m["kind"] in ("journal", "committed")}
        dead = [(f, m) for f, m in dead if m["token"] in moving]
    named = [Path(p).absolute() for p in (report, *companions)]  # where this run finds the pair's files
    for journal, m in dead:
        if m["kind"] in ("journal", "committed"):
            _settle(journal, committed=m["kind"] == "committed", named=named)
    for f, _ in dead:
        remove(f)


def _settle(journal: Path, committed: bool, named: list[Path] = ()) -> None:
    """A dead run's move: past its commit mark the new pair stands and the old files go; before it,
    what the run placed goes (a target it set aside, or one that was not there before it) and what
    it set aside comes back."""
    try:
        doc = _anchored(json.loads(journal.read_text(encoding="utf-8")), journal, named)
    except (OSError, ValueError, TypeError, KeyError):
        return
    if "existed" not in doc:
        _settle_by_digest(doc)
        return
    if committed:
        return  # the new pair stands; the old files, hidden, go with the dead run's other files
    moves = [(Path(doc["data"]), Path(doc["old"][0])), (Path(doc["report"]), Path(doc["old"][1])),
             *((Path(target), Path(old)) for target, (old, _) in doc["companions"].items())]
    for target, old in moves:
        if target.exists() and (old.exists() or str(target) not in doc["existed"]):
            remove(target)
        if old.exists():
            os.replace(old, target)


def _anchored(doc: dict, journal: Path, named: list[Path] = ()) -> dict:
    """The journal's paths as they are from here. Its folders are the dead run's view: relative to
    its working folder in builds before the ninety-second round, or absolute under a mount another
    container sees elsewhere. Trusted, a run recovering from elsewhere found nothing at them and
    removed the set-aside previous release. Each is taken by its name: the data's beside the journal
    (its own folder, by construction), the report's and companions' in the folder holding the dead
    run's hidden files of that name, else where this run names a file of that name (``named``), else
    beside the journal."""
    run = HIDDEN_TEMPORARY.match(journal.name)
    if run is None:
        return doc
    folders = list(dict.fromkeys([journal.parent, *(p.parent for p in named)]))

    def where(recorded: str) -> str:
        name = Path(recorded).name
        mark = name if HIDDEN_TEMPORARY.match(name) else f".{name}.sqlclose-{run['pid']}-{run['token']}."
        for folder in folders:
            try:
                if any(e.name.startswith(mark) for e in folder.iterdir()):
                    return str(folder / name)
            except OSError:
                continue
        return str(next((p for p in named if p.name == name), journal.parent / name))

    data = str(journal.parent / Path(doc["data"]).name)
    anchored = dict(doc, data=data, report=where(doc["report"]),
                    old=[str(journal.parent / Path(doc["old"][0]).name), where(doc["old"][1])])
    if "existed" in doc:
        anchored["existed"] = [data if Path(p).name == Path(doc["data"]).name else where(p) for p in doc["existed"]]
    anchored["companions"] = {where(t): [where(o), d] for t, (o, d) in doc.get("companions", {}).items()}
    return anchored


def _settle_by_digest(doc: dict) -> None:
    """A journal an earlier build wrote (no ``existed``, no commit mark), left by a run killed
    before an upgrade: the report vouching for the data was its mark, the data told by its sha256."""
    data, report = Path(doc["data"]), Path(doc["report"])
    old_data, old_report = (Path(p) for p in doc["old"])
    ours = data.exists() and sha256(data) == doc["sha256"]
    if ours and report.exists() and _vouches(report, doc["sha256"]):
        return  # the new pair was complete: keep it (the old pair and temporaries go)
    if ours:
        remove(data)
    if report.exists() and _vouches(report, doc["sha256"]):
        report.unlink()
    olds = [(old_data, data), (old_report, report)]
    for target, (old, digest) in doc.get("companions", {}).items():
        if Path(target).exists() and sha256(Path(target)) == digest:
            Path(target).unlink()
        olds.append((Path(old), Path(target)))
    for old, target in olds:
        if old.exists() and not target.exists():
            os.replace(old, target)


def _vouches(report: Path, digest: str) -> bool:
    try:
        return json.loads(report.read_text(encoding="utf-8")).get("output", {}).get("sha256") == digest
    except (OSError, ValueError, AttributeError):
        return False


def _hidden_files(target: Path) -> list[tuple[Path, dict[str, str]]]:
    prefix = f".{target.name}.sqlclose-"
    try:
        entries = [e for e in target.parent.iterdir() if e.name.startswith(prefix)]
    except OSError:
        return []
    found = []
    for entry in entries:
        m = HIDDEN_TEMPORARY.match(entry.name)  # kind: tmp, old, journal, committed (+ .wal)
        if m and m["name"] == target.name:
            found.append((entry, m.groupdict()))
    return found


def run_token(sep: str = "-") -> str:
    """``<pid><sep><random hex>``: names a run's temporaries (files, a table output's temporary
    table); the hex is remembered as this process's own."""
    token = secrets.token_hex(6)
    _OURS.add(token)
    return f"{os.getpid()}{sep}{token}"


def _hold(mark: Path) -> int | None:
    """A run's mark of life: a hidden file locked (flock) for as long as the run's process lives,
    the kernel releasing it when the process ends however it ends. Locked under a name of its own,
    then renamed into place, so that no run finds it unlocked while it lives. None where the file
    system takes no flock (the process id then tells, as before)."""
    staged = mark.with_name(mark.name + "-")
    fd = None
    try:
        fd = os.open(staged, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(staged, mark)
        return fd
    except BaseException as e:  # a signal too: no mark left behind by a run that never began
        if fd is not None:
            os.close(fd)
        for made in (staged, mark):
            made.unlink(missing_ok=True)
        if isinstance(e, OSError) and e.filename is None:  # flock refused: a file system without it
            return None
        raise


def running(found: dict[str, str], mark: Path | None) -> bool:
    """Whether the run that named a hidden file (``found``: its pid and token) is still going: its
    mark of life still locked, where it left one. A process id alone mistook a reused one for the
    dead run (its move left unsettled while that process lived), and another container's run, whose
    id this one cannot see, for a dead one (its live temporaries removed): review of the
    ninety-second round."""
    if mark is not None:
        try:
            fd = os.open(mark, os.O_RDONLY)
        except OSError:
            fd = None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared: NFS takes it on a read-only fd
                return False  # no holder: its process ended
            except BlockingIOError:
                return True
            except OSError:
                pass  # no flock here: the process id tells
            finally:
                os.close(fd)
    return alive(int(found["pid"]), found["token"])


def alive(pid: int, token: str | None = None) -> bool:
    """Whether the run that named a temporary ``pid``-``token`` may still be going. Our own pid with
    a token this process never made is a dead process's that had our pid: a job in a container is
    the same PID (often 1) every night, so last night's killed run looked alive forever."""
    if pid == os.getpid():
        return token is None or token in _OURS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


FileIdentity = tuple[int, int, int, int]


def identity(path: Path) -> FileIdentity | None:
    """A file's (device, inode, size, modification time in ns), None when there is none: whether the
    file at a path is still the one found there earlier."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


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
