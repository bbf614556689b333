"""A w1-weighted metric that costs nothing is refused as a search's metric (the ninety-sixth round).

Mauger et al., Definition 8: w1(Q_j) = 1 − (h_j − 1)^m / Σ_i (h_i − 1)^m. With one quasi-identifier
that is 1 − x/x = 0, and with several it is 0 for the one whose hierarchy has more than one level
when every other has one (h_i − 1 = 0): Distortion, WLLM and WNLLM then cost 0 for every
generalization. GAA merged blindly (every merge a tie broken by class id: at k = 20 one class at
the root, 100 % NCP, where NCP-guided GAA kept three at 58.7 %) and Incognito took its tie-break's
node, both reported as "chosen by" the metric. Now the job is refused, naming the metric, why, and
its form without w1 — from the spec alone when there is one quasi-identifier, before any data is
read (a source that does not exist proves it: reading it would fail first)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import sqlclose
from sqlclose import api
from sqlclose.cli import main
from sqlclose.errors import SpecError
from sqlclose.sweep import sweep

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"
AGE_LEVELS = 4  # datasets/table3/age.csv: 29;2*;<40;*
WITHOUT_W1 = {"wllm": 'use metric = "llm"', "wnllm": 'use metric = "nllm"', "distortion": 'use metric = "total"'}
CHOOSES = {"gaa": "every merge of GAA would be a tie broken by class id alone",
           "incognito": "Incognito's node would be its tie-break's, the lowest satisfying one"}


def _spec(algorithm: str, metric: str, source: Path | None = None, **more_qis: dict) -> dict:
    """Table 3 with age as its quasi-identifier (and ``more_qis``), salary sensitive."""
    return {"others": "drop", "source": {"path": str(source or TABLE3 / "table3.csv")}, "privacy": {"k": 3},
            "quasi_identifiers": {"age": {"file": str(TABLE3 / "age.csv")}, **more_qis},
            "sensitive": {"salary": {"distance": "ordered", "t": 0.9}},
            "search": {"algorithm": algorithm, "metric": metric}}


@pytest.mark.parametrize("algorithm", ["gaa", "incognito"])
@pytest.mark.parametrize("metric", ["wllm", "wnllm", "distortion"])
def test_a_w1_metric_with_one_quasi_identifier_is_refused_before_the_data_is_read(tmp_path, algorithm, metric):
    """The premise by Definition 8 as written (the test's own arithmetic, m = 1, h = 4), the refusal
    with a source that does not exist, and the metric it names in its place, which runs."""
    m, h = 1, AGE_LEVELS
    assert 1 - (h - 1) ** m / sum((x - 1) ** m for x in [h]) == 0
    missing = tmp_path / "no-such-table.csv"
    for run in (lambda spec: sqlclose.anonymize(missing, spec), lambda spec: api.plan(missing, spec),
                lambda spec: sweep(missing, spec, [2, 3])):
        with pytest.raises(SpecError) as refused:
            run(_spec(algorithm, metric))
        said = str(refused.value)
        assert said.startswith(f"metric {metric} weighs each quasi-identifier's costs by w1 = 1 − (h_j − 1)^m / "
                               "Σ_i (h_i − 1)^m (Mauger et al., Definition 8), which is 0 for 'age', the only "
                               f"quasi-identifier (1 − x/x): every generalization costs 0 under {metric}, so "
                               f"{CHOOSES[algorithm]}"), said
        assert WITHOUT_W1[metric] in said, said
    instead = WITHOUT_W1[metric].removeprefix('use metric = "').rstrip('"')
    release = sqlclose.anonymize(None, _spec(algorithm, instead))
    try:
        assert release.summary["classes"] >= 1
    finally:
        release.close()


def test_a_sweep_naming_a_w1_metric_among_others_is_refused_up_front(tmp_path):
    """--metrics wllm,ncp ran the blind WLLM curve beside NCP's without a word."""
    with pytest.raises(SpecError, match=re.escape("metric wllm weighs each quasi-identifier's costs by w1")):
        sweep(tmp_path / "no-such-table.csv", _spec("gaa", "ncp"), [2, 5, 20], metrics=["ncp", "wllm"])


@pytest.mark.parametrize("command", [["anonymize", "--output", "{out}"],
                                     ["anonymize", "--dry-run", "--output", "{out}"], ["explain"],
                                     ["sweep", "--k", "2,5", "--out", "{out}"]])
def test_the_commands_refuse_it_and_write_nothing(tmp_path, command):
    spec = tmp_path / "spec.toml"
    spec.write_text(f'others = "drop"\n[source]\npath = "{TABLE3 / "table3.csv"}"\n[privacy]\nk = 20\n'
                    f'[quasi_identifiers]\nage = {{ file = "{TABLE3 / "age.csv"}" }}\n'
                    '[sensitive.salary]\ndistance = "ordered"\nt = 0.9\n[search]\nalgorithm = "gaa"\n'
                    'metric = "wllm"\n', encoding="utf-8")
    out = tmp_path / "out"
    args = [command[0], str(spec), *[a.format(out=out / "rel.parquet") for a in command[1:]]]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert "error: metric wllm weighs each quasi-identifier's costs by w1" in result.stderr, result.stderr
    assert not out.exists()


def test_the_command_line_metric_is_refused_too(tmp_path):
    toml = tmp_path / "spec.toml"
    toml.write_text(f'others = "drop"\n[source]\npath = "{TABLE3 / "table3.csv"}"\n[privacy]\nk = 3\n'
                    f'[quasi_identifiers]\nage = {{ file = "{TABLE3 / "age.csv"}" }}\n'
                    '[sensitive.salary]\ndistance = "ordered"\nt = 0.9\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["anonymize", str(toml), "--metric", "wnllm", "--dry-run", "--output",
                                       str(tmp_path / "rel.parquet")])
    assert result.exit_code == 2, (result.output, result.exception)
    assert "metric wnllm weighs" in result.stderr and 'use metric = "nllm"' in result.stderr, result.stderr


def _with_constant_column(tmp_path: Path) -> tuple[Path, Path]:
    """Table 3 with a column c of one value, and c's hierarchy of one level (its leaf is its top)."""
    lines = (TABLE3 / "table3.csv").read_text(encoding="utf-8").splitlines()
    table = tmp_path / "t.csv"
    table.write_text("\n".join([lines[0] + ",c", *(line + ",x" for line in lines[1:])]) + "\n", encoding="utf-8")
    hierarchy = tmp_path / "c.csv"
    hierarchy.write_text("x\n", encoding="utf-8")
    return table, hierarchy


@pytest.mark.parametrize("algorithm", ["gaa", "incognito"])
def test_w1_is_zero_for_the_one_qi_that_generalizes_among_qis_of_one_level(tmp_path, algorithm):
    """m = 2, h = (4, 1): w1 = 1 − 3²/(3² + 0²) = 0 for age, and c never generalizes: all costs 0.
    Refused once the hierarchies are built (their levels are in the files)."""
    assert 1 - (AGE_LEVELS - 1) ** 2 / ((AGE_LEVELS - 1) ** 2 + (1 - 1) ** 2) == 0
    table, hierarchy = _with_constant_column(tmp_path)
    spec = _spec(algorithm, "wllm", table, c={"file": str(hierarchy)})
    expected = ("which is 0 for 'age', the only quasi-identifier whose hierarchy has more than one level ('c': "
                "h − 1 = 0)")
    for run in (lambda: sqlclose.anonymize(None, spec), lambda: sweep(None, spec, [2, 3])):
        with pytest.raises(SpecError, match=re.escape(expected)):
            run()
    # m = 2, h = (4, 6) for age and zip: w1 = 1 − 9/34 and 1 − 25/34, neither 0: WLLM runs
    release = sqlclose.anonymize(None, _spec(algorithm, "wllm", zip={"mask": True, "length": 5}))
    try:
        assert release.summary["classes"] >= 1
    finally:
        release.close()
