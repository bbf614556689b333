"""A pair's placing stopped at its narrowest moments, and recovered from anywhere (review of the
ninety-second round, reproduced by its helper with strace's signal injection; here the signal is
its KeyboardInterrupt, raised at the same instruction).

- A signal landing as a link or rename returned left the placed file unknown to the undo: on a
  first run half a pair stood at the output path (each later run refused: it exists) while the
  command said nothing was placed; on a folder's overwrite the undo failed, "Directory not empty".
- A run killed while placing, given a relative --output, wrote its journal with relative paths: the
  next run, from another working folder, found nothing at them, restored nothing, and removed the
  set-aside previous release with the dead run's temporaries.
- A Parquet folder replaced with overwrite: a file saved into it during the run went with it.

Oracles: the bytes the test wrote, the folder listings, and hashlib against the report's sha256.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from sqlclose.errors import OutputExistsError
from sqlclose.release import files, placing, recovery


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _write_pair(txn: placing.Transaction, data: bytes | None, folder: bool = False) -> None:
    if folder:
        txn.data.mkdir()
        (txn.data / "part-0.parquet").write_bytes(data)
        digest = files.sha256(txn.data)
    else:
        txn.data.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
    txn.report.write_text(json.dumps({"output": {"sha256": digest}}))


def _place_pair(out: Path, report: Path, data: bytes, overwrite: bool, folder: bool = False) -> None:
    with placing.Transaction(out, report, overwrite=overwrite) as txn:
        _write_pair(txn, data, folder)
        txn.commit()


def _signal_as_placed(monkeypatch, which: Path) -> None:
    """The signal lands as ``which`` is placed: the link or rename done, the run not told."""
    real = placing._place

    def place(tmp, target, keep=False):
        real(tmp, target, keep)
        if target == which:
            raise KeyboardInterrupt
    monkeypatch.setattr(placing, "_place", place)


@pytest.mark.parametrize("which", ["data", "report"])
@pytest.mark.parametrize("folder", [False, True], ids=["file", "folder"])
def test_a_signal_as_a_first_pair_is_placed_leaves_nothing(tmp_path, monkeypatch, which, folder):
    out = tmp_path / ("rel" if folder else "r.parquet")
    report = tmp_path / f"{out.name}.report.json"
    _signal_as_placed(monkeypatch, out if which == "data" else report)
    with pytest.raises(KeyboardInterrupt):
        _place_pair(out, report, b"tonight's release", overwrite=False, folder=folder)
    assert _listing(tmp_path) == []


@pytest.mark.parametrize("which", ["data", "report"])
@pytest.mark.parametrize("folder", [False, True], ids=["file", "folder"])
def test_a_signal_as_an_overwrite_is_placed_puts_the_previous_pair_back(tmp_path, monkeypatch, which, folder):
    out = tmp_path / ("rel" if folder else "r.parquet")
    report = tmp_path / f"{out.name}.report.json"
    _place_pair(out, report, b"the previous night's release", overwrite=False, folder=folder)
    before = files.sha256(out), report.read_bytes()
    _signal_as_placed(monkeypatch, out if which == "data" else report)
    with pytest.raises(KeyboardInterrupt):
        _place_pair(out, report, b"tonight's release", overwrite=True, folder=folder)
    assert (files.sha256(out), report.read_bytes()) == before
    assert _listing(tmp_path) == sorted([out.name, report.name])


def _killed_while_placing(out: Path, report: Path, data: bytes, monkeypatch) -> None:
    """A run dies (SIGKILL: no undo, no clean-up) once it has set the old pair aside: its journal
    and hidden files stay, its mark of life unlocked, and its token no longer this process's."""
    real = placing._place

    def die(tmp, target, keep=False):
        raise SystemExit("killed")
    monkeypatch.setattr(placing, "_place", die)
    monkeypatch.setattr(placing.Transaction, "_undo", lambda self: None)
    # The kernel releases a dead process's locks: its mark of life (recovery.running) is let go of
    monkeypatch.setattr(placing.Transaction, "__exit__", lambda self, *a: self._live_fd and os.close(self._live_fd))
    ours = set(recovery._OURS)
    with pytest.raises(SystemExit):
        _place_pair(out, report, data, overwrite=True)
    recovery._OURS.intersection_update(ours)  # the dead run's token, no longer a live one's
    monkeypatch.setattr(placing, "_place", real)
    monkeypatch.undo()


def test_a_run_killed_while_placing_is_rolled_back_through_another_mount_of_its_folder(tmp_path, monkeypatch):
    """The journal's absolute paths are the dead run's view: a container seeing the shared volume
    under another path found nothing at them, and removed the set-aside previous release (the
    round's diff review). Each target is found by its name where its run's files lie."""
    real = tmp_path / "volume"
    real.mkdir()
    (tmp_path / "a").symlink_to(real)  # the killed run's mount
    (tmp_path / "b").symlink_to(real)  # the next run's
    out, report = tmp_path / "a" / "r.parquet", tmp_path / "a" / "r.parquet.report.json"
    _place_pair(out, report, b"the previous night's release", overwrite=False)
    before = out.read_bytes(), report.read_bytes()
    _killed_while_placing(out, report, b"tonight's release", monkeypatch)
    os.rename(tmp_path / "a", tmp_path / "a-unmounted")  # its view of the volume gone
    placing.recover_output(tmp_path / "b" / "r.parquet", tmp_path / "b" / "r.parquet.report.json")
    assert ((real / "r.parquet").read_bytes(), (real / "r.parquet.report.json").read_bytes()) == before
    assert _listing(real) == ["r.parquet", "r.parquet.report.json"]


def test_a_signal_as_a_folder_claims_its_name_leaves_no_empty_folder(tmp_path, monkeypatch):
    """A folder is placed by claiming its name (mkdir), then renaming the new folder over it: a signal
    between the two left the empty folder at the output path (every later run refused: it exists)."""
    real = placing._place

    def claim_then_signal(tmp, target, keep=False):
        if tmp.is_dir():
            target.mkdir()
            raise KeyboardInterrupt
        real(tmp, target, keep)
    monkeypatch.setattr(placing, "_place", claim_then_signal)
    with pytest.raises(KeyboardInterrupt):
        _place_pair(tmp_path / "rel", tmp_path / "rel.report.json", b"tonight's release", overwrite=False,
                    folder=True)
    assert _listing(tmp_path) == []


@pytest.mark.parametrize("journal", ["this build's", "an earlier build's (relative paths)"])
def test_a_run_killed_while_placing_is_rolled_back_from_another_working_folder(tmp_path, monkeypatch, journal):
    (tmp_path / "job").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "job")
    out, report = Path("out/r.parquet"), Path("out/r.parquet.report.json")  # relative, as --output gives them
    _place_pair(out, report, b"the previous night's release", overwrite=False)
    before = (tmp_path / "job" / out).read_bytes(), (tmp_path / "job" / report).read_bytes()
    _killed_while_placing(out, report, b"tonight's release", monkeypatch)
    folder = tmp_path / "job" / "out"
    assert not (folder / "r.parquet").exists()  # set aside, hidden
    if journal != "this build's":  # as builds before the fix wrote it: the paths as given
        written = next(folder.glob(".r.parquet.sqlclose-*.journal"))
        doc = json.loads(written.read_text())
        relative = {str(folder): "out"}

        def as_given(p: str) -> str:
            return p.replace(str(folder), relative[str(folder)])
        doc = dict(doc, data=as_given(doc["data"]), report=as_given(doc["report"]),
                   old=[as_given(p) for p in doc["old"]], existed=[as_given(p) for p in doc["existed"]])
        written.write_text(json.dumps(doc))
        assert json.loads(written.read_text())["data"] == "out/r.parquet"
    monkeypatch.chdir(tmp_path / "elsewhere")  # the next night's job, run from another folder
    placing.recover_output(folder / "r.parquet", folder / "r.parquet.report.json")
    assert ((folder / "r.parquet").read_bytes(), (folder / "r.parquet.report.json").read_bytes()) == before
    assert _listing(folder) == ["r.parquet", "r.parquet.report.json"]


def test_a_file_saved_into_a_folder_release_during_the_run_is_not_deleted_by_its_overwrite(tmp_path):
    out, report = tmp_path / "rel", tmp_path / "rel.report.json"
    _place_pair(out, report, b"the previous night's release", overwrite=False, folder=True)
    before = files.sha256(out)
    with placing.Transaction(out, report, overwrite=True) as txn:
        _write_pair(txn, b"tonight's release", folder=True)
        (out / "NOTES.txt").write_text("saved while the run wrote")  # refused before the search, had it been there
        with pytest.raises(OutputExistsError, match="holds NOTES.txt that is not a Parquet file"):
            txn.commit()
    assert (out / "NOTES.txt").read_text() == "saved while the run wrote"
    (out / "NOTES.txt").unlink()
    assert files.sha256(out) == before
    assert _listing(tmp_path) == ["rel", "rel.report.json"]


def test_a_live_run_whose_process_id_cannot_be_seen_keeps_its_files(tmp_path, monkeypatch):
    """Two runs in two containers (PID namespaces) writing one output: each saw the other's process
    id as no process, and removed its live temporaries (that run failed, exit 5). A run's mark of
    life, locked while it lives, tells it; its pid is not asked."""
    out, report = tmp_path / "r.parquet", tmp_path / "r.parquet.report.json"
    with placing.Transaction(out, report, overwrite=True) as txn:
        txn.data.write_bytes(b"tonight's release")
        txn.report.write_text(json.dumps({"output": {"sha256": hashlib.sha256(b"tonight's release").hexdigest()}}))
        monkeypatch.setattr(recovery, "alive", lambda pid, token=None: False)  # its pid, as another container sees it
        placing.recover_output(out, report)  # the other container's run, starting
        assert txn.data.exists() and txn.report.exists()
        monkeypatch.undo()
        txn.commit()
    assert out.read_bytes() == b"tonight's release"
    assert _listing(tmp_path) == ["r.parquet", "r.parquet.report.json"]


def test_a_dead_run_whose_process_id_was_reused_is_settled(tmp_path, monkeypatch):
    """A run killed after setting the old pair aside, its pid then taken by a long-lived process: it
    looked alive, and its move was left unsettled (the output without its data) for as long as that
    process lived. Its mark of life is unlocked: settled, the previous pair back."""
    out, report = tmp_path / "r.parquet", tmp_path / "r.parquet.report.json"
    _place_pair(out, report, b"the previous night's release", overwrite=False)
    before = out.read_bytes(), report.read_bytes()
    _killed_while_placing(out, report, b"tonight's release", monkeypatch)
    assert not out.exists()
    monkeypatch.setattr(recovery, "alive", lambda pid, token=None: True)  # its pid, reused
    placing.recover_output(out, report)
    assert (out.read_bytes(), report.read_bytes()) == before
    assert _listing(tmp_path) == ["r.parquet", "r.parquet.report.json"]
