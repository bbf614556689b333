"""A spec or hierarchy file named with bytes that are not UTF-8 (a Latin-1 name: Python holds its
byte as a lone surrogate, ``\\udcff``). Sources and outputs so named were refused in the ninety-eighth
round; a spec's name reached messages as ``s\\udcff.toml`` and a hierarchy's the report's JSON as a lone
surrogate, no Unicode text (ninety-ninth round). Each is refused before anything is read or written,
its name spelled by its bytes, ``\\xff``: the oracle is that spelling, written out by hand."""

from __future__ import annotations

import os
from pathlib import Path

from forked_cli import run_cli

ROWS = "g,s\n" + "a,x\nb,y\na,y\nb,x\n" * 3
SPEC = ('[source]\npath = "{source}"\n[output]\npath = "{output}"\n[privacy]\nk = 2\n'
        '[quasi_identifiers]\ng = {{ file = "{hierarchy}" }}\n[sensitive.s]\ndistinct_l = 2\n')
NOT_UTF8 = ("its name is not UTF-8 (a byte of another encoding is shown as \\xNN), and sqlclose names the files "
            "it reads (in messages, in the report) as UTF-8 text: rename it (or the folder holding it) in UTF-8")


def _folder(tmp_path: Path) -> Path:
    """in.csv and h.csv (the hierarchy of g), and the same hierarchy in a folder named b'd\\xff'."""
    (tmp_path / "in.csv").write_text(ROWS)
    for folder in (tmp_path, tmp_path / os.fsdecode(b"d\xff")):
        folder.mkdir(exist_ok=True)
        (folder / "h.csv").write_text("a;*\nb;*\n")
    return tmp_path


def _spec(folder: Path, name: bytes, hierarchy: str = "h.csv") -> Path:
    spec = folder / os.fsdecode(name)
    spec.write_text(SPEC.format(source=folder / "in.csv", output=folder / "out.csv", hierarchy=hierarchy))
    return spec


def _refused(result, told: str) -> None:
    assert result.returncode == 2, result.stderr
    assert f"error: {told}: {NOT_UTF8}" in result.stderr, result.stderr
    assert "\\udc" not in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_a_spec_named_not_in_utf8_is_refused_by_its_bytes(tmp_path):
    """`anonymize s\\xff.toml` ran and `s\\xff.toml: invalid spec …` was told as `s\\udcff.toml`."""
    folder = _folder(tmp_path)
    spec = _spec(folder, b"s\xff.toml")
    for args in (("anonymize", spec), ("explain", spec), ("hierarchy", "validate", f"{spec}:g")):
        _refused(run_cli(args, cwd=folder), f"cannot read the spec file {folder}/s\\xff.toml")
    assert not (folder / "out.csv").exists()


def test_a_hierarchy_named_not_in_utf8_is_refused_by_its_bytes(tmp_path):
    """A spec's `file = "${HDIR}/h.csv"` with HDIR a Latin-1 folder name: the run wrote the release and
    a report whose hierarchy path held a lone surrogate (`\\udcff` in its JSON); `hierarchy validate`
    named the file `h\\udcff.csv` and called it valid."""
    folder = _folder(tmp_path)
    spec = _spec(folder, b"s.toml", hierarchy="${HDIR}/h.csv")
    env = {**os.environ, "HDIR": os.fsdecode(os.fsencode(folder) + b"/d\xff")}
    told = f"hierarchy of column 'g': cannot read the hierarchy file {folder}/d\\xff/h.csv"
    for args in (("anonymize", spec), ("explain", spec), ("hierarchy", "validate", f"{spec}:g")):
        _refused(run_cli(args, cwd=folder, env=env), told)
    assert not (folder / "out.csv").exists()
    (folder / os.fsdecode(b"h\xff.csv")).write_text("a;*\nb;*\n")
    for extra in ((), ("--data", folder / "in.csv", "--column", "g")):
        result = run_cli(("hierarchy", "validate", os.fsdecode(b"h\xff.csv"), *extra), cwd=folder)
        _refused(result, "cannot read the hierarchy file h\\xff.csv")
