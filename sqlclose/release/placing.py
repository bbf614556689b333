"""Placing a release and its report on disk: both or neither, never over another run's pair.

A release is a pair — the data (a file, or a Parquet folder) and the report that vouches for it
(its sha256; a folder's is defined by ``files.folder_sha256``). The pair is placed by a
``Transaction``: both are written to hidden temporary names beside their targets and verified;
then a journal records the move, an existing pair (``overwrite``) is set aside, the data and then
the report are linked into place, the journal is renamed to its commit mark, and the old pair and
the mark go: a data file without its report is never a finished release. A pair may bring
companions (the warehouse's ``release.verify.sql``): placed before the data under the same journal,
and rolled back with the pair. A run stopped at any point is settled by the next one
(``recovery``).

Runs placing a release in the same folder take turns (``placing_lock``: an advisory lock on the
folder itself, so nothing is left behind): two nightly runs writing one output at once each set
aside and place a whole pair, and one never undoes the other's. A new data file built from the old
one (a DuckDB database, its other tables carried over) replaces that very file or nothing
(``Transaction.builds_on``): one placed meanwhile by a process that took no lock is never dropped.
An overwrite granted for one pair alone (``--force`` redoing this spec's own release) replaces that
pair as it was found before the search (``files.found_pair``), never one placed there since.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from sqlclose.errors import EnvironmentFailure, OutputExistsError, WaitWarning
from sqlclose.release import files, recovery

_UNCHECKED = object()  # a Transaction whose data file is not compared before it is replaced
LOCK_WAIT_SECONDS = 300.0  # the longest a run waits for another to finish placing in the same folder


class Transaction:
    """Writes to ``data`` and ``report`` (temporary paths), then ``commit`` places both. ``data``
    may be written as a file or as a folder (a Parquet folder release): both are placed alike."""

    def __init__(self, path: Path, report: Path, overwrite: bool, companions: tuple[Path, ...] = (),
                 replaces_data: bool = False, replacing: files.FoundPair | None = None) -> None:
        """``companions``: files placed with the pair (write each at ``companion(target)``).
        ``replaces_data``: the data file is replaced even without ``overwrite`` (a DuckDB database,
        whose new file carries the old one's other tables); the report still is only with it.
        ``replacing``: the pair ``overwrite`` was granted for (``found_pair``): the commit refuses
        one placed since (a database's file is its writer's to compare, before it builds on it)."""
        # Absolute: the journal names them for a run recovering from another working folder (relative,
        # that run found nothing at them and removed the set-aside previous release: review of the
        # ninety-second round). A report path that is a symbolic link is written through, as the
        # data's is (``files.placed_at``): renamed over, the link was replaced by a file, and the file
        # it named kept the previous report (the hundredth round).
        path, report = path.absolute(), files.placed_at(report).absolute()
        companions = tuple(target.absolute() for target in companions)
        self.path, self.report_path, self.overwrite = path, report, overwrite
        self._replaces_data, self._replacing = replaces_data, replacing
        for folder in {path.parent, report.parent}:
            folder.mkdir(parents=True, exist_ok=True)
        recover_output(path, report, companions)
        token = recovery.run_token()
        self.data = recovery.hidden_name(path, token, "tmp")
        self.report = recovery.hidden_name(report, token, "tmp")
        self._companions = {target: recovery.hidden_name(target, token, "tmp") for target in companions}
        self._journal = recovery.hidden_name(path, token, "journal")
        self._committed = recovery.hidden_name(path, token, "committed")  # the journal, renamed once the report stands
        self._old = (recovery.hidden_name(path, token, "old"), recovery.hidden_name(report, token, "old"))
        self._old_companions = {target: recovery.hidden_name(target, token, "old") for target in companions}
        self._placed: list[Path] = []
        self._placing: tuple[Path, tuple[int, int] | None] | None = None  # (target, the inode being placed there)
        self._set_aside: list[tuple[Path, Path]] = []  # (old file's hidden name, its place)
        self._told = False  # the commit listeners, told once
        self._built_on: object = _UNCHECKED  # the data file the new one was built from (``builds_on``)
        self._live = recovery.hidden_name(path, token, "live")
        self._live_fd = recovery.hold_mark(self._live)  # the mark of life (``recovery.running``)

    def builds_on(self, found: files.Stamp | None) -> None:
        """The data file the new one is built from (a DuckDB database's other tables copied out of
        it), as ``files.identity`` found it (None: there was none): ``commit`` replaces that file or
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
                files.remove(leftover)
            files.remove(self._live)
        finally:  # held on, every other run would take this one's half move for a live one's
            if self._live_fd is not None:
                os.close(self._live_fd)
                self._live_fd = None

    def commit(self, digest: str | None = None) -> None:
        """Place the pair: journal, old files aside, companions, data, report, then drop the old files.
        Under the folders' lock, and undone under it on failure: between another run's setting
        aside and placing, nothing of it is touched. ``digest``: the data's sha256 when the caller
        has it (the report's), so that a large release is not read again under the lock."""
        digest = digest or files.sha256(self.data)
        companions = {str(target): [str(self._old_companions[target]), files.sha256(tmp)]
                      for target, tmp in self._companions.items()}
        with placing_lock(self.path, self.report_path, *self._companions):
            # A run that died since this one began left its move half done: settled first, or its
            # files would be set aside here as if they were the old pair.
            recovery.recover(self.path, self.report_path, tuple(self._companions))
            try:
                self._commit(digest, companions)
            except BaseException:
                self._undo()
                raise

    def _commit(self, digest: str, companions: dict[str, list[str]]) -> None:
        self._refuse_replaced_data()
        self._refuse_changed_pair()
        if self.overwrite:  # a file saved into a folder release during the run would go with it
            files.refuse_foreign_folder(self.path)
        existed = [str(t) for t in (self.path, self.report_path, *self._companions) if t.exists()]
        recovery.write_journal(self._journal, self.path, self.report_path, digest, self._old, companions, existed)
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
        files.fsync_dir(self.path.parent)
        # The lists are cleared once the old files are gone: a signal here finds them again in the
        # undo's finish (cleared first, the previous release was left hidden for good).
        for old, _ in self._set_aside:
            files.remove(old)
        self._placed, self._placing, self._set_aside = [], None, []
        files.remove(self._committed)

    def _refuse_replaced_data(self) -> None:
        if self._built_on is _UNCHECKED or files.identity(self.path) == self._built_on:
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
            if files.found_at(target) != was:
                raise files.changed_since_found(target)

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
            files.remove(target)
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
def placing_lock(*targets: Path) -> Iterator[None]:
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


def recover_output(path: Path, report: Path, companions: tuple[Path, ...] = (),
                   data_runs_only: bool = False) -> None:
    """``recovery.recover`` under the placing lock. Run at the start of every run that names the output,
    before its search: one stopping early (bad input, no solution) must still leave the previous
    pair in place, not the half move of a run killed while placing it; and again before a write. The
    report where a ``Transaction`` places it (through a link: ``files.placed_at``)."""
    report = files.placed_at(report)
    with placing_lock(path, report, *companions):
        recovery.recover(path, report, companions, data_runs_only)
