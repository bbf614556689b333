"""``sqlclose demo``: a release on data the project ships, in a temporary folder."""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

import click

from sqlclose.cli.common import CONTEXT, OnceCommand, guarded, say, verbose_option
from sqlclose.model.text import escaped_controls

DEMO_FILES = ("table3.csv", "age.csv", "disease.csv", "table3.toml")
RELEASE = ("out/release.parquet", "out/release.parquet.report.json")
SHIPPED_RUN_LINE = "# Run from the repository root:  sqlclose anonymize datasets/table3/table3.toml"


def _shipped() -> Traversable:
    """datasets/table3, installed as the data package ``sqlclose.demo`` (see pyproject.toml)."""
    return resources.files("sqlclose.demo")


@click.command(cls=OnceCommand, context_settings=CONTEXT,
               short_help="A release of the paper's Table 3 in a temporary folder.",
               epilog="\b\nExamples:\n  sqlclose demo\n  sqlclose demo --folder /tmp/try")
@click.option("--folder", type=click.Path(file_okay=False, path_type=Path),
              help="Where to put the demo (default: a new temporary folder, kept for you to look at).")
@click.option("--overwrite", is_flag=True, help="Replace the demo's files in --folder when they exist there.")
@verbose_option
@guarded
def demo(folder: Path | None, overwrite: bool, verbose: bool) -> None:
    """Anonymize Table 3 of Li et al. (9 patients; ZIP, age; salary and disease sensitive):
    copies the data, hierarchies and spec into a folder, releases it, and says what it wrote."""
    from sqlclose import api
    from sqlclose.model.spec import load_spec

    # Expanded once, here: a quoted '~/x' was copied into ./~/x while the spec was loaded (load_spec
    # expands ~) from $HOME/x, releasing another folder's table over its release.
    temporary = folder is None
    folder = Path(tempfile.mkdtemp(prefix="sqlclose-demo-")) if temporary else folder.expanduser()
    _refuse_shipped(folder)
    _refuse_links(folder)
    if not overwrite:
        _refuse_existing(folder)
    spec_path, out = folder / "table3.toml", folder / "out" / "release.parquet"
    with _removed_on_failure(folder, temporary=temporary):
        _copy_shipped(folder, spec_path)
        with api.anonymize(None, load_spec(spec_path)) as release:
            doc = release.write_parquet(out, overwrite=True)  # refused above unless --overwrite (or a new folder)
    _tell(folder, spec_path, out, doc)


def _copy_shipped(folder: Path, spec_path: Path) -> None:
    """The shipped files into ``folder``, the spec's output and run line made to fit it."""
    shipped = _shipped()
    for name in DEMO_FILES:
        data = shipped.joinpath(name).read_bytes()
        if name == spec_path.name:
            text = data.decode("utf-8").replace("../../out/table3/release.parquet", "out/release.parquet")
            # Control characters shown escaped: a line break (or CR) in the folder's name ended the
            # comment, and the rest of the line was read as TOML ("not valid TOML", blaming the
            # demo's own spec: review h3 of the ninety-fourth round).
            run = escaped_controls(shlex.quote(str(spec_path)))
            data = text.replace(SHIPPED_RUN_LINE, f"# Run:  sqlclose anonymize {run}").encode("utf-8")
        _write_replacing(folder / name, data)


def _write_replacing(path: Path, data: bytes) -> None:
    """Written beside and renamed over: a link at ``path`` (refused before, yet made since) is
    replaced itself, never followed to a file outside the folder."""
    from sqlclose.model.whole_files import replaced_whole

    with replaced_whole(path) as temporary:
        temporary.write_bytes(data)


@contextmanager
def _removed_on_failure(folder: Path, temporary: bool = False) -> Iterator[None]:
    """What the demo adds to ``folder`` (its files, the folders it made) is removed when the run
    fails or is stopped: a rerun refused the files the failed run had left ("already holds …").
    The user's files it replaces (--overwrite) are put back then: the copy had replaced them before
    a release that failed. A ``temporary`` folder (made by the demo before this, without --folder)
    goes too when empty. The release's own files are replaced only by a release that succeeded."""
    from sqlclose.release.placing import folders_undone_on_failure

    before = {name for name in (*DEMO_FILES, *RELEASE) if os.path.lexists(folder / name)}
    aside: dict[str, Path] = {}
    with folders_undone_on_failure(folder / RELEASE[0]):  # out/, and --folder with its parents if made here
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _set_aside(folder, [name for name in DEMO_FILES if name in before], aside)
            yield
        except BaseException:
            for name in (*RELEASE, *DEMO_FILES):
                if name not in before:
                    _remove(folder / name)
            for name, kept in aside.items():
                os.replace(kept, folder / name)
            if temporary:  # it exists already: the folders made here do not count it
                for made in (folder / "out", folder):
                    _remove_if_empty(made)
            raise
    for kept in aside.values():
        _remove(kept)


def _set_aside(folder: Path, names: list[str], aside: dict[str, Path]) -> None:
    """Each of ``names`` renamed to a hidden name beside it, recorded in ``aside`` as it goes (a
    failure half-way puts back those moved)."""
    for name in names:
        fd, kept = tempfile.mkstemp(prefix=f".{name}.", suffix=".before-demo", dir=folder)
        os.close(fd)
        os.replace(folder / name, kept)
        aside[name] = Path(kept)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass  # never written (or under a file where a folder was asked): nothing of the demo's to remove


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not there, or holds something not the demo's: left as it is


def _tell(folder: Path, spec_path: Path, out: Path, doc: dict[str, Any]) -> None:
    say(f"demo in {folder}:")
    say(f"  input      {folder / 'table3.csv'} ({doc['input']['rows']} rows: "
          f"{', '.join(doc['output']['columns'])})")
    say(f"  spec       {spec_path}")
    say(f"  release    {out}: {doc['output']['rows']} rows, node "
          + ", ".join(f"{k}={v}" for k, v in doc["node"].items()))
    say(f"  report     {out}.report.json (k = {doc['privacy']['min_class_size']}, max EMD "
          + ", ".join(f"{n} {s['max_emd']:.3f}" for n, s in doc["privacy"]["sensitive"].items()) + ")")
    spec, release = shlex.quote(str(spec_path)), shlex.quote(str(out))
    say(f"next: sqlclose explain {spec}   |   sqlclose check {release} --spec {spec}")


def _refuse_shipped(folder: Path) -> None:
    """The folder the demo copies from is never its --folder: on an editable install (or a
    checkout) `demo --folder datasets/table3 --overwrite` rewrote the shipped spec, made its files
    private and added out/ there (review h3 of the ninety-fourth round). Compared as resolved real
    paths, so a link to it or a name through `..` is refused too; refused even with --overwrite."""
    from sqlclose.errors import OutputExistsError

    shipped = _shipped()
    if not isinstance(shipped, os.PathLike):
        return  # inside an archive (a zipped install): no folder a --folder could be
    try:
        same = os.path.realpath(folder) == os.path.realpath(shipped) or (
            folder.exists() and os.path.samefile(folder, shipped))
    except OSError:
        return  # not there or unreadable: the copy tells why
    if same:
        raise OutputExistsError(f"{folder} is the folder the demo copies its files from (the data shipped with "
                                "sqlclose), which it never writes to: choose another --folder")


def _refuse_links(folder: Path) -> None:
    """A symbolic link under a name the demo writes was followed: the copy created or overwrote
    (with --overwrite) its target, outside the folder. Refused, even with --overwrite."""
    from sqlclose.errors import OutputExistsError

    links = [name for name in ("out", *DEMO_FILES, *RELEASE) if (folder / name).is_symlink()]
    if links:
        raise OutputExistsError(f"{folder} holds {', '.join(links)} as a symbolic link, which the demo would write "
                                "through: remove the link, or give another (or an empty) --folder")


def _refuse_existing(folder: Path) -> None:
    """A file of the user's under a name the demo writes is never replaced without a word: the
    demo copied Table 3 over an existing table3.csv (or spec, or release) in a given --folder."""
    from sqlclose.errors import OutputExistsError

    there = [name for name in (*DEMO_FILES, *RELEASE) if os.path.lexists(folder / name)]
    if there:
        raise OutputExistsError(f"{folder} already holds {', '.join(there)}, which the demo would replace: give "
                                "another (or an empty) --folder, or pass --overwrite to replace them")
