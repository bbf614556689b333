"""A number that is not finite — nan, inf, or digits past what a float holds — is told as typed
(the ninety-sixth round). ``sqlclose sweep --t 1e400`` said "t = inf is out of range (t ≥ 0)", a
value nobody typed in a message contradicting itself; ``--nauc-range 2,1e400`` echoed "got 2,inf";
a spec's ``t = 1e400`` and ``check --t 1e400`` said "(got inf)". The oracle: the text the test typed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqlclose.cli import main
from sqlclose.errors import InputError
from sqlclose.sweep import sweep

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"
PAST = " (beyond what a float holds, ±1.8e308)"  # said of digits a float cannot hold, not of nan or inf


def _stderr(*args: object) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stderr.startswith("sqlclose: error:") and "Traceback" not in result.stderr, result.stderr
    return result.stderr


@pytest.mark.parametrize(("option", "typed", "said"), [
    ("--t", "1e400", f"'--t': t = 1e400 is not a finite number{PAST}"),
    ("--l", "1e400", f"'--l': l = 1e400 is not a finite number{PAST}"),
    ("--t", "0.2,-1E999", f"'--t': t = -1E999 is not a finite number{PAST}"),
    ("--t", "nan", "'--t': t = nan is not a finite number"),
    ("--l", "Infinity", "'--l': l = Infinity is not a finite number"),
    ("--nauc-range", "2,1e400", f"'--nauc-range': 1e400 is not a finite number{PAST}"),
])
def test_sweep_options_tell_a_number_that_is_not_finite_as_typed(tmp_path, option, typed, said):
    out = tmp_path / "o"
    stderr = _stderr("sweep", TABLE3 / "table3.toml", "--k", "2,3", option, typed, "--out", out)
    assert f"Invalid value for {said}: give finite numbers written in digits" in stderr, stderr
    assert "inf is out of range" not in stderr and "got 2,inf" not in stderr
    assert not out.exists()


@pytest.mark.parametrize(("keyword", "value", "said"), [
    ("ts", [float("inf")], "t = inf is not a finite number: give t as a finite number ≥ 0"),
    ("ls", [float("nan")], "l = nan is not a finite number: give l as a finite number ≥ 1"),
    ("ks", [float("inf")], "k = inf is not a finite number: give k as a finite number ≥ 1"),
])
def test_sweep_from_python_says_not_finite_not_out_of_range(keyword, value, said):
    with pytest.raises(InputError, match=re.escape(said)):
        sweep(None, TABLE3 / "table3.toml", **{"ks": [2, 3], keyword: value})


@pytest.mark.parametrize(("line", "key", "typed", "past"), [
    ("t = 1e400", "sensitive.salary.t", "1e400", True),
    ("t = -1e400", "sensitive.salary.t", "-1e400", True),
    ("t = nan", "sensitive.salary.t", "nan", False),
    ("t = inf", "sensitive.salary.t", "inf", False),
    ("entropy_l = 1e400", "sensitive.salary.entropy_l", "1e400", True),
    ("recursive = { c = 1e400, l = 2 }", "sensitive.salary.recursive.c", "1e400", True),
])
def test_a_spec_value_that_is_not_finite_is_told_as_written(tmp_path, line, key, typed, past):
    text = (TABLE3 / "table3.toml").read_text(encoding="utf-8").replace(
        'distance = "ordered"             # numbers: EMD over the sorted salaries\nt = 0.2',
        f'distance = "ordered"\n{line}')
    assert line in text
    spec = tmp_path / "spec.toml"
    spec.write_text(text.replace('"table3.csv"', f'"{TABLE3 / "table3.csv"}"').replace(
        '"age.csv"', f'"{TABLE3 / "age.csv"}"').replace('"disease.csv"', f'"{TABLE3 / "disease.csv"}"'),
        encoding="utf-8")
    stderr = _stderr("anonymize", spec, "--dry-run")
    assert stderr == (f"sqlclose: error: {spec}: invalid spec: {key}: {typed} is not a finite number"
                      f"{PAST if past else ''}: give a finite number\n")


@pytest.mark.parametrize(("option", "typed", "said"), [
    ("--t", "1e400", f"Invalid value for '--t': 1e400 is not a finite number{PAST}: give a finite number"),
    ("--t", "nan", "Invalid value for '--t': nan is not a finite number: give a finite number"),
    ("--entropy-l", "1e400", f"Invalid value for '--entropy-l': 1e400 is not a finite number{PAST}: give a "
                             "finite number"),
    ("--recursive", "1e400,2", f"--recursive: c = 1e400 is not a finite number{PAST}: give C,L as finite numbers, "
                               "e.g. 4,4"),
])
def test_check_options_tell_a_number_that_is_not_finite_as_typed(option, typed, said):
    stderr = _stderr("check", TABLE3 / "table3.csv", "--qi", "zip,age", "--sensitive", "salary", option, typed)
    assert said in stderr, stderr
    assert "got inf" not in stderr


@pytest.mark.parametrize(("rule", "key", "got"), [
    ("bands = [10], origin = 1e400", "origin", "(got 1e400)"),
    ("bands = [10, 1e400]", "bands", "(got [10, 1e400])"),
])
def test_a_band_rules_number_past_a_float_is_quoted_as_written(tmp_path, rule, key, got):
    """A rule's own check of its numbers quoted them as read: origin = 1e400 was "(got inf)"."""
    spec = tmp_path / "spec.toml"
    spec.write_text(f'others = "drop"\n[source]\npath = "{TABLE3 / "table3.csv"}"\n[privacy]\nk = 2\n'
                    f'[quasi_identifiers]\nage = {{ {rule} }}\n', encoding="utf-8")
    stderr = _stderr("anonymize", spec, "--dry-run", "--output", tmp_path / "r.parquet")
    assert stderr.startswith(f"sqlclose: error: {spec}: invalid spec: quasi_identifiers.age.{key}: "), stderr
    assert stderr.endswith(f" {got}\n"), stderr
