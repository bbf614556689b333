"""A copy of Table 3 with its hierarchies and spec in a folder of its own, and the CLI invoked in-process."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sqlclose.cli import main

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"


def invoke(*args: object, env: dict | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def table3_project(folder: Path) -> Path:
    """Table 3, its hierarchies and ``spec.toml`` (output ``out/release.parquet``, no overwrite)."""
    for name in ("table3.csv", "age.csv", "disease.csv"):
        (folder / name).write_bytes((TABLE3 / name).read_bytes())
    (folder / "spec.toml").write_text((TABLE3 / "table3.toml").read_text().replace(
        "../../out/table3/release.parquet", "out/release.parquet").replace("overwrite = true", "overwrite = false"))
    return folder


def table3_missing_age(folder: Path) -> Path:
    """``table3_project`` whose age 52 is 87 in its CSV (the spec's [source]), and age.csv without its
    line for 52: 87 is the one value its hierarchy lacks."""
    table3_project(folder)
    table = (folder / "table3.csv").read_text()
    assert table.count(",52,") == 1
    (folder / "table3.csv").write_text(table.replace(",52,", ",87,"))
    lines = (folder / "age.csv").read_text().splitlines(keepends=True)
    (folder / "age.csv").write_text("".join(line for line in lines if not line.startswith("52;")))
    return folder


def table3_released(folder: Path, salary: str | None = None) -> tuple[Path, Path]:
    """``table3_project`` in a new ``folder`` (its first salary, 3000, made ``salary``), released by the command:
    the release and its report."""
    folder.mkdir()
    table3_project(folder)
    if salary is not None:
        table = (folder / "table3.csv").read_text()
        assert table.count("47677,29,3000,") == 1
        (folder / "table3.csv").write_text(table.replace("47677,29,3000,", f"47677,29,{salary},"))
    assert invoke("anonymize", folder / "spec.toml", "--no-progress", "-q").exit_code == 0
    return folder / "out" / "release.parquet", folder / "out" / "release.parquet.report.json"


def table3_through_link(folder: Path) -> Path:
    """Table 3 released through ``link.parquet -> real/rel.parquet`` (the file it names made first),
    its report beside the link: the project's folder."""
    d = table3_project(folder)
    (d / "real").mkdir()
    (d / "real" / "rel.parquet").write_bytes(b"old")
    (d / "link.parquet").symlink_to("real/rel.parquet")
    first = invoke("anonymize", d / "spec.toml", "-o", d / "link.parquet", "--overwrite", "-q")
    assert first.exit_code == 0, first.output
    return d
