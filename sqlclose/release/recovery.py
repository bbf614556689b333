"""A stopped run's half move, settled by the next run; whether a run still lives.

Whatever stops a run — an exception, Ctrl-C, SIGTERM, or a SIGKILL with no chance to clean — the
next run naming the same output (``placing.recover_output``: before its search, and again before it
writes) finds the dead run's hidden files (``hidden_name``: their names carry its process id and
token; a run is alive while its mark of life, a hidden ``.live`` file it holds locked, stays locked:
``running``) and finishes or undoes its move: a pair past its commit mark is kept, anything else
rolls back to the old pair, and the temporaries are removed. Which files the dead run placed is
told by the journal (what existed before it: ``write_journal``) and the files it set aside, never
by their bytes: a rerun's release may be byte for byte the old one.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from pathlib import Path

from sqlclose.errors import HIDDEN_TEMPORARY, EnvironmentFailure
from sqlclose.model.own_files import unreadable_report
from sqlclose.release import files

_OURS: set[str] = set()  # the tokens of this process's runs (see ``alive``)


def hidden_name(target: Path, token: str, kind: str) -> Path:
    return target.with_name(f".{target.name}.sqlclose-{token}.{kind}")


def write_journal(journal: Path, path: Path, report: Path, digest: str, old: tuple[Path, Path],
                   companions: dict[str, list[str]], existed: list[str]) -> None:
    doc = {"data": str(path), "report": str(report), "sha256": digest, "old": [str(p) for p in old],
           "companions": companions,  # target: [its old file's hidden name, the new one's sha256]
           "existed": existed}  # the targets in place before the move: any other one found was placed by it
    journal.write_text(json.dumps(doc), encoding="utf-8")
    files.fsync(journal)


def recover(path: Path, report: Path, companions: tuple[Path, ...] = (), data_runs_only: bool = False) -> None:
    """Finish or undo the move of a run that died writing ``path`` (its process is gone), and
    remove its temporaries. Runs that are still alive are left alone. ``data_runs_only``: only the
    dead runs that left a file beside the data, named for ``path`` (a ``Transaction``'s mark of life,
    temporary or journal: every run of this build); a dead run that left report files alone (a
    DuckDB table output's earlier build, which wrote inside the database) is told by its database's
    leftover table at the next write, which needs those files."""
    hidden = [m for target in (path, report, *companions) for m in hidden_files(target)]
    marks = {m["token"]: f for f, m in hidden if m["kind"] == "live"}
    dead = [(f, m) for f, m in hidden if not running(m, marks.get(m["token"]))]
    if data_runs_only:
        beside = {m["token"] for _, m in dead if m["name"] == path.name}
        dead = [(f, m) for f, m in dead if m["token"] in beside]
    named = [Path(p).absolute() for p in (report, *companions)]  # where this run finds the pair's files
    for journal, m in dead:
        if m["kind"] in ("journal", "committed"):
            _settle(journal, committed=m["kind"] == "committed", named=named)
    for f, _ in dead:
        files.remove(f)


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
            files.remove(target)
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
    ours = data.exists() and files.sha256(data) == doc["sha256"]
    if ours and report.exists() and _vouches(report, doc["sha256"]):
        return  # the new pair was complete: keep it (the old pair and temporaries go)
    if ours:
        files.remove(data)
    if report.exists() and _vouches(report, doc["sha256"]):
        report.unlink()
    olds = [(old_data, data), (old_report, report)]
    for target, (old, digest) in doc.get("companions", {}).items():
        if Path(target).exists() and files.sha256(Path(target)) == digest:
            Path(target).unlink()
        olds.append((Path(old), Path(target)))
    for old, target in olds:
        if old.exists() and not target.exists():
            os.replace(old, target)


def _vouches(report: Path, digest: str) -> bool:
    """Whether ``report`` vouches for the data of sha256 ``digest``. One this job may not read is the
    environment's refusal (exit 5), the dead run's files left as they are: taken for "no", the new
    data went, the old came back, and the old report was removed with the temporaries, leaving the old
    data beside the new report (ninety-seventh round)."""
    try:
        return json.loads(report.read_text(encoding="utf-8")).get("output", {}).get("sha256") == digest
    except PermissionError:
        raise EnvironmentFailure(unreadable_report(report, "to tell whether a run stopped while placing its release "
                                                           "had placed all of it") +
                                 "; nothing was placed at the output path") from None
    except (OSError, ValueError, AttributeError):
        return False


def hidden_files(target: Path) -> list[tuple[Path, dict[str, str]]]:
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


def hold_mark(mark: Path) -> int | None:
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
