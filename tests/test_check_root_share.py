"""``sqlclose check FILE --spec``'s share of values at the root for a rule quasi-identifier. It took
``*`` as every rule's top, and a mask's top is its wholly masked code: every ZIP released as
``*****`` counted 0 % at the root, overall 0 % where it is 50 % (review rv29 #3, Incognito and GAA).
A rule's top now comes from the spec where the spec alone gives it (a mask's declared ``length``,
bands, dates); a mask without ``length`` has a top only the input's codes tell: unknown, not 0 %.

The oracle: ``avg(zip = '*****')`` by plain SQL over the written file (README: a mask of length 5
ends at ``*****``; a file hierarchy's top here is ``*``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb
import pytest
from forked_cli import run_cli

ZIPS = ["47677", "47602", "47678", "13053", "13068", "13268", "47905", "13906", "47906"]
AGES = [29, 22, 27, 43, 52, 47, 30, 36, 32]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd=cwd)


def _mask_release(folder: Path, algorithm: str, zip_rule: str = "{ mask = true, length = 5 }", top: int = 5) -> Path:
    dis = ["flu", "colitis", "gastritis"] * 3
    (folder / "t.csv").write_text("zip,age,disease\n" + "".join(f"{z},{a},{d}\n" for z, a, d in zip(ZIPS, AGES, dis)))
    (folder / "age.csv").write_text("".join(f"{a};{'<40' if a < 40 else '>=40'};*\n" for a in sorted(set(AGES))))
    search = '[search]\nalgorithm = "gaa"\n' if algorithm == "gaa" else ""
    (folder / "s.toml").write_text(f"""
[source]
path = "t.csv"
[output]
path = "out/r.parquet"
[privacy]
k = {9 if algorithm == "gaa" else 3}
[quasi_identifiers]
zip = {zip_rule}
age = {{ file = "age.csv" }}
[sensitive.disease]
distance = "equal"
t = 0.9
{search}""")
    node = ["--node", f"zip={top},age=1"] if algorithm != "gaa" else []
    made = run("anonymize", "s.toml", "-q", *node, cwd=folder)
    assert made.returncode == 0, made.stderr
    return folder / "out" / "r.parquet"


def _share(release: Path, column: str, top: str) -> float:
    return float(duckdb.connect().execute(f"SELECT avg(CASE WHEN CAST({column} AS VARCHAR) = ? THEN 100.0 ELSE 0 END) "
                                          f"FROM '{release}'", [top]).fetchone()[0])


def _utility(folder: Path, release: Path) -> dict:
    got = run("check", str(release), "--spec", "s.toml", "--json", cwd=folder)
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)["utility"]


@pytest.mark.parametrize("algorithm", ["incognito", "gaa"])
def test_check_counts_a_masks_declared_top_at_the_root(tmp_path, algorithm):
    release = _mask_release(tmp_path, algorithm)
    zip_root, age_root = _share(release, "zip", "*****"), _share(release, "age", "*")
    assert zip_root == 100.0  # every released ZIP is the mask's top
    utility = _utility(tmp_path, release)
    assert utility["quasi_identifiers"]["zip"]["root_percent"] == zip_root
    assert utility["root_percent"] == (zip_root + age_root) / 2
    report = json.loads(Path(f"{release}.report.json").read_text())  # the release's own report agrees
    assert report["utility"]["root_percent"] == (zip_root + age_root) / 2


def test_a_mask_with_a_top_of_its_own_counts_star_at_the_root(tmp_path):
    """mask = [1, 2] with length 5 stops at 476** and puts a top of its own, ``*``, above it."""
    release = _mask_release(tmp_path, "incognito", "{ mask = [1, 2], length = 5 }", top=3)
    assert _share(release, "zip", "*") == 100.0
    assert _utility(tmp_path, release)["quasi_identifiers"]["zip"]["root_percent"] == 100.0


def test_a_mask_without_a_declared_length_has_an_unknown_root_share(tmp_path):
    """Without ``length`` the top is as long as the input's codes: unknown from the spec, so the
    share is null (and the overall one with it) and the text says what to declare, not 0 %."""
    release = _mask_release(tmp_path, "incognito", "{ mask = true }")
    utility = _utility(tmp_path, release)
    assert utility["quasi_identifiers"]["zip"]["root_percent"] is None and utility["root_percent"] is None
    text = run("check", str(release), "--spec", "s.toml", cwd=tmp_path)
    assert "at the root unknown (a mask without a declared length" in text.stdout, text.stdout
