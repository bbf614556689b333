"""``sqlclose demo``: a release on data the project ships, in a temporary folder."""

from __future__ import annotations

import tempfile
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

import click

from sqlclose.cli.common import CONTEXT, OnceCommand, guarded, verbose_option

DEMO_FILES = ("table3.csv", "age.csv", "disease.csv", "table3.toml")
RELEASE = ("out/release.parquet", "out/release.parquet.report.json")


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

    if folder is not None and not overwrite:
        _refuse_existing(folder)
    folder = folder or Path(tempfile.mkdtemp(prefix="sqlclose-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    shipped = _shipped()
    for name in DEMO_FILES:
        (folder / name).write_bytes(shipped.joinpath(name).read_bytes())
    spec_path = folder / "table3.toml"
    spec_path.write_text(spec_path.read_text(encoding="utf-8").replace("../../out/table3/release.parquet",
                                                                        "out/release.parquet"), encoding="utf-8")
    out = folder / "out" / "release.parquet"
    with api.anonymize(None, load_spec(spec_path)) as release:
        doc = release.write_parquet(out, overwrite=True)  # refused above unless --overwrite (or a new folder)
    click.echo(f"demo in {folder}:")
    click.echo(f"  input      {folder / 'table3.csv'} (9 rows: zip, age, salary, disease)")
    click.echo(f"  spec       {spec_path}")
    click.echo(f"  release    {out}: {doc['output']['rows']} rows, node "
               + ", ".join(f"{k}={v}" for k, v in doc["node"].items()))
    click.echo(f"  report     {out}.report.json (k = {doc['privacy']['min_class_size']}, max EMD "
               + ", ".join(f"{n} {s['max_emd']:.3f}" for n, s in doc["privacy"]["sensitive"].items()) + ")")
    click.echo(f"next: sqlclose explain {spec_path}   |   sqlclose check {out} --spec {spec_path}")


def _refuse_existing(folder: Path) -> None:
    """A file of the user's under a name the demo writes is never replaced without a word: the
    demo copied Table 3 over an existing table3.csv (or spec, or release) in a given --folder."""
    from sqlclose.errors import OutputExistsError

    there = [name for name in (*DEMO_FILES, *RELEASE) if (folder / name).exists()]
    if there:
        raise OutputExistsError(f"{folder} already holds {', '.join(there)}, which the demo would replace: give "
                                "another (or an empty) --folder, or pass --overwrite to replace them")
