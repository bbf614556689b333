"""A CSV record over DuckDB's 2 MB default line cap (a free-text note kept beside the QIs) is read,
released and re-checked. It stopped the job: ``Maximum line size of 2000000 bytes exceeded`` on
the source read, and a CSV release holding it would have failed its own re-check (the written file
is read back with read_csv too). Spark's reader has no cap. The oracle: the note as this test
wrote it, its length and digest computed by a plain query over the written file."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest
from own_connection import rows as _rows
from table3_project import invoke

NOTE = "long free text, " * 200_000  # 3.2 MB, past the 2 MB default
ROWS = 40


def _project(folder: Path, output: str) -> Path:
    draw = random.Random(7)
    lines = ["age,sex,note,disease"]
    for i in range(ROWS):
        note = f'"{NOTE}"' if i == 3 else "short"
        lines.append(f"{draw.randint(20, 59)},{'MF'[i % 2]},{note},{['flu', 'cold'][i % 2 ^ (i // 2) % 2]}")
    (folder / "p.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = folder / "s.toml"
    spec.write_text(f'others = "keep"\n[source]\npath = "p.csv"\n[output]\npath = "{output}"\n'
                    '[privacy]\nk = 4\n[quasi_identifiers]\nage = { bands = [10, 20], domain = [0, 100] }\n'
                    'sex = { tree = { "*" = ["M", "F"] } }\n[sensitive.disease]\ndistinct_l = 2\n', encoding="utf-8")
    return spec


@pytest.mark.parametrize("output", ["out/r.parquet", "out/r.csv"])
def test_a_csv_record_longer_than_two_megabytes_is_released_and_rechecked(tmp_path, output):
    spec = _project(tmp_path, output)
    result = invoke("anonymize", spec, "--no-progress", "-q")
    assert result.exit_code == 0, result.output
    written = tmp_path / output
    reader = "read_parquet(?)"
    if output.endswith(".csv"):
        reader = "read_csv(?, all_varchar = true, max_line_size = 100000000)"
    got = _rows(f"SELECT length(note), md5(note), count(*) FROM {reader} GROUP BY ALL ORDER BY 1", [str(written)])
    assert got == [(5, hashlib.md5(b"short").hexdigest(), ROWS - 1),
                   (len(NOTE), hashlib.md5(NOTE.encode()).hexdigest(), 1)]
    checked = invoke("check", written, "--against", f"{written}.report.json", "-q")
    assert checked.exit_code == 0, checked.output
