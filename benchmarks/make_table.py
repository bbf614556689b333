"""Generate a census-like table of N rows for scale benchmarks, with hierarchies and a spec.

    python benchmarks/make_table.py --rows 1000000 --out benchmarks/data/1m [--seed 1]

Writes into ``--out``:

- ``table.parquet``: age, dob (DATE), zip (5 digits), sex, race, marital_status, education,
  workclass, native_country, occupation, children, hours_per_week, area_code (3 digits),
  employer_zip (5 digits), housing, salary (INTEGER) — generated entirely in DuckDB from
  ``range(N)`` with hash-based pseudo-random columns, so it is deterministic for a seed and never
  held in Python memory (100 M rows stream to Parquet in row groups of 1 M);
- ``hierarchies/*.csv``: ARX-format hierarchies for the categorical columns (Adult's vocabularies,
  copied from datasets/adult/hierarchies) and for dob (day → month → year → 5-year band → *,
  generated in SQL from the calendar the generator draws from);
- ``table.toml``: k = 5, t = 0.2 hierarchical on occupation, 7 QIs (age as bands, zip masked,
  sex, race, marital_status, education, workclass), 0 % suppression;
  ``table_wide.toml``: the same with dob and native_country too (9 QIs, a 97,200-node lattice);
  ``table_15.toml``: 15 QIs (95 bits of codes: a wide problem), mostly flat value → * hierarchies
  (``hierarchies/flat_*.csv``, from the data's distinct values in SQL).

Diversity grows with N as in real data: ZIP codes are drawn from 100,000 with a skewed density,
ages from 73 years, dates of birth from ~27,000 days, so distinct QI combinations keep growing
(repeating Adult's rows would make k trivially true and hide the cost). Correlations: education
with age (no degree before 22), marital status with age, occupation with education, salary with
age, education and sex, workclass with occupation.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
ADULT_HIERARCHIES = ROOT / "datasets" / "adult" / "hierarchies"
ROW_GROUP = 1_000_000

# (value, weight) lists in Adult's vocabularies (roughly Adult's frequencies).
RACE = [("White", 85), ("Black", 9.5), ("Asian-Pac-Islander", 3), ("Amer-Indian-Eskimo", 1), ("Other", 0.8)]
EDUCATION = [("HS-grad", 32), ("Some-college", 22), ("Bachelors", 16), ("Masters", 5.3), ("Assoc-voc", 4.3),
             ("11th", 3.6), ("Assoc-acdm", 3.3), ("10th", 2.8), ("7th-8th", 2), ("Prof-school", 1.8), ("9th", 1.6),
             ("12th", 1.3), ("Doctorate", 1.3), ("5th-6th", 1), ("1st-4th", 0.5), ("Preschool", 0.2)]
DEGREES = ("Bachelors", "Masters", "Prof-school", "Doctorate")
MARITAL_OLDER = [("Married-civ-spouse", 52), ("Divorced", 16), ("Never-married", 18), ("Separated", 3.5),
                 ("Widowed", 6), ("Married-spouse-absent", 1.3), ("Married-AF-spouse", 0.1)]
MARITAL_YOUNG = [("Never-married", 85), ("Married-civ-spouse", 12), ("Divorced", 1.5), ("Separated", 1),
                 ("Married-AF-spouse", 0.5)]
OCC_DEGREE = [("Prof-specialty", 35), ("Exec-managerial", 28), ("Sales", 12), ("Adm-clerical", 7),
              ("Tech-support", 5), ("Craft-repair", 3), ("Other-service", 2), ("Protective-serv", 2),
              ("Machine-op-inspct", 1), ("Transport-moving", 1), ("Farming-fishing", 1), ("Handlers-cleaners", 1),
              ("Armed-Forces", 0.1), ("Priv-house-serv", 0.1)]
OCC_OTHER = [("Craft-repair", 16), ("Adm-clerical", 13), ("Other-service", 13), ("Sales", 11),
             ("Machine-op-inspct", 8), ("Exec-managerial", 8), ("Transport-moving", 6),
             ("Handlers-cleaners", 5.5), ("Prof-specialty", 5), ("Farming-fishing", 3.8), ("Tech-support", 3),
             ("Protective-serv", 2.5), ("Priv-house-serv", 0.6), ("Armed-Forces", 0.05)]
WORKCLASS = [("Private", 74), ("Self-emp-not-inc", 8), ("Local-gov", 6.8), ("State-gov", 4.2),
             ("Self-emp-inc", 3.5), ("Federal-gov", 3.1), ("Without-pay", 0.4)]
COUNTRIES = [line.split(";")[0] for line in (ADULT_HIERARCHIES / "native-country.csv").read_text().splitlines()
             if line and not line.startswith("United-States")]

COPIED = {"sex": "sex.csv", "race": "race.csv", "marital_status": "marital-status.csv",
          "education": "education.csv", "workclass": "workclass.csv", "native_country": "native-country.csv",
          "occupation": "occupation.csv"}


def _pick(weights: list[tuple[str, float]], u: str) -> str:
    """A CASE choosing a value by cumulative weight for the uniform ``u`` (constants only)."""
    total = sum(w for _, w in weights)
    cases, acc = [], 0.0
    for value, w in weights[:-1]:
        acc += w / total
        cases.append(f"WHEN {u} < {acc!r} THEN '{value}'")
    return f"CASE {' '.join(cases)} ELSE '{weights[-1][0]}' END"


def _uniform(k: int) -> str:
    """A pseudo-random uniform in [0, 1) per row, independent per k, fixed by the seed ($seed)."""
    return f"(CAST(hash(i, $seed, {k}) % 1000000007 AS DOUBLE) / 1000000007.0)"


def table_query() -> str:
    u = {k: _uniform(k) for k in range(1, 19)}
    degree = ", ".join(f"'{d}'" for d in DEGREES)
    countries = "[" + ", ".join(f"'{c}'" for c in COUNTRIES) + "]"
    return f"""
WITH a AS (
  SELECT i, 17 + CAST(floor(73 * pow({u[1]}, 1.25)) AS INTEGER) AS age FROM range($rows) AS t(i)
), b AS (
  SELECT i, age,
    CASE WHEN age < 22 AND e IN ({degree}) THEN 'Some-college' ELSE e END AS education
  FROM (SELECT i, age, {_pick(EDUCATION, u[2])} AS e FROM a)
)
SELECT
  age,
  CAST(make_date(2025 - age - 1, 1, 1) + CAST(floor({u[3]} * 365) AS INTEGER) AS DATE) AS dob,
  lpad(CAST(CAST(floor(1000 * pow({u[4]}, 2)) AS INTEGER) * 100 + CAST(floor(100 * {u[5]}) AS INTEGER)
       AS VARCHAR), 5, '0') AS zip,
  CASE WHEN {u[6]} < 0.48 THEN 'Female' ELSE 'Male' END AS sex,
  {_pick(RACE, u[7])} AS race,
  CASE WHEN age < 25 THEN {_pick(MARITAL_YOUNG, u[8])} ELSE {_pick(MARITAL_OLDER, u[8])} END AS marital_status,
  education,
  CASE WHEN occupation IN ('Exec-managerial', 'Sales', 'Craft-repair') AND {u[9]} < 0.2
       THEN CASE WHEN {u[10]} < 0.5 THEN 'Self-emp-not-inc' ELSE 'Self-emp-inc' END
       ELSE {_pick(WORKCLASS, u[9])} END AS workclass,
  CASE WHEN {u[11]} < 0.9 THEN 'United-States'
       ELSE list_extract({countries}, 1 + CAST(floor({len(COUNTRIES)} * {u[12]}) AS INTEGER)) END AS native_country,
  occupation,
  CASE WHEN age < 20 THEN 0 ELSE CAST(floor(4 * pow({u[14]}, 2) * least(age - 19, 20) / 10) AS INTEGER) END AS children,
  CAST(10 + floor(70 * pow({u[15]}, 0.8)) AS INTEGER) AS hours_per_week,
  lpad(CAST(200 + CAST(floor(800 * {u[16]}) AS INTEGER) AS VARCHAR), 3, '0') AS area_code,
  lpad(CAST(CAST(floor(100000 * pow({u[17]}, 1.5)) AS INTEGER) AS VARCHAR), 5, '0') AS employer_zip,
  CASE WHEN {u[18]} < 0.3 THEN 'own' WHEN {u[18]} < 0.6 THEN 'rent' ELSE 'other' END AS housing,
  CAST(round((12000 + 600 * least(age, 55) + CASE WHEN education IN ({degree}) THEN 25000 ELSE 0 END
       + CASE WHEN sex = 'Male' THEN 6000 ELSE 0 END + 60000 * pow({u[13]}, 3)) / 1000) * 1000 AS INTEGER) AS salary
FROM (
  SELECT i, age, education,
    CASE WHEN education IN ({degree}) THEN {_pick(OCC_DEGREE, u[10])} ELSE {_pick(OCC_OTHER, u[10])} END
      AS occupation
  FROM b
)
"""


def dob_hierarchy_query() -> str:
    """Every day the generator can draw (birth years 1935–2008): day;month;year;5-year band;*."""
    return """
SELECT strftime(d, '%Y-%m-%d') || ';' || strftime(d, '%Y-%m') || ';' || strftime(d, '%Y') || ';'
       || CAST(year(d) // 5 * 5 AS VARCHAR) || '-' || CAST(year(d) // 5 * 5 + 4 AS VARCHAR) || ';*' AS line
FROM (SELECT CAST(d AS DATE) AS d FROM generate_series(DATE '1935-01-01', DATE '2008-12-31', INTERVAL 1 DAY) AS t(d))
ORDER BY d
"""


SPEC = """# Generated by benchmarks/make_table.py: {rows:,} rows, seed {seed}.
others = "keep"

[source]
path = "table.parquet"

[output]
path = "out/{stem}.parquet"
overwrite = true

[privacy]
k = 5
suppression = 0.0

[quasi_identifiers]
age = {{ bands = [5, 10, 20], domain = [0, 120] }}   # domain, alphabet: the report may publish NCP
zip = {{ mask = true, length = 5, alphabet = "0123456789" }}
sex = {{ file = "hierarchies/sex.csv" }}
race = {{ file = "hierarchies/race.csv" }}
marital_status = {{ file = "hierarchies/marital_status.csv" }}
education = {{ file = "hierarchies/education.csv" }}
workclass = {{ file = "hierarchies/workclass.csv" }}
{extra}
[sensitive.occupation]
distance = "hierarchical"
t = 0.2
hierarchy = "hierarchies/occupation.csv"
"""
# 15 QIs: the 9 of table_wide and 6 more, with large domains (5-digit ZIP and employer ZIP,
# dates of birth, 800 area codes): more than 62 bits of class codes, so packed keys take
# two words (model.packing). Most QIs are flat (value → *) to keep the lattice searchable
# (221,184 nodes: 3·2·2·2·3·3·4·2⁸); the width is in the number of QIs and the code ranges.
SPEC15_QIS = """
[quasi_identifiers]
age = {{ bands = [20], domain = [0, 120] }}
zip = {{ mask = [5], length = 5, alphabet = "0123456789" }}
dob = {{ file = "hierarchies/flat_dob.csv" }}
sex = {{ file = "hierarchies/sex.csv" }}
race = {{ file = "hierarchies/race.csv" }}
marital_status = {{ file = "hierarchies/marital_status.csv" }}
education = {{ file = "hierarchies/education.csv" }}
workclass = {{ file = "hierarchies/flat_workclass.csv" }}
native_country = {{ file = "hierarchies/flat_native_country.csv" }}
salary = {{ file = "hierarchies/flat_salary.csv" }}
children = {{ file = "hierarchies/flat_children.csv" }}
hours_per_week = {{ file = "hierarchies/flat_hours_per_week.csv" }}
area_code = {{ mask = [3], length = 3, alphabet = "0123456789" }}
employer_zip = {{ mask = [5], length = 5, alphabet = "0123456789" }}
housing = {{ file = "hierarchies/flat_housing.csv" }}
"""
FLAT = ("dob", "workclass", "native_country", "salary", "children", "hours_per_week", "housing")
WIDE_EXTRA = ('dob = { file = "hierarchies/dob.csv" }\n'
              'native_country = { file = "hierarchies/native_country.csv" }\n')


def make(rows: int, out: Path, seed: int = 1, threads: int | None = None) -> Path:
    """Write table.parquet, hierarchies/ and the specs into ``out``; returns the Parquet path."""
    if rows < 1 or (threads is not None and threads < 1):
        raise ValueError(f"rows and threads must be 1 or more, not {rows} and {threads}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "hierarchies").mkdir(exist_ok=True)
    for column, name in COPIED.items():
        shutil.copyfile(ADULT_HIERARCHIES / name, out / "hierarchies" / f"{column}.csv")
    con = duckdb.connect()
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    con.execute("SET preserve_insertion_order = false")  # lets the COPY stream without ordering
    target = out / "table.parquet"
    tmp = out / "table.parquet.tmp"
    con.execute(f"COPY ({table_query()}) TO $path (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP})",
                {"rows": rows, "seed": seed, "path": str(tmp)})
    tmp.replace(target)
    lines = [r[0] for r in con.execute(dob_hierarchy_query()).fetchall()]
    (out / "hierarchies" / "dob.csv").write_text("\n".join(lines) + "\n")
    (out / "table.toml").write_text(SPEC.format(rows=rows, seed=seed, stem="table", extra=""))
    (out / "table_wide.toml").write_text(SPEC.format(rows=rows, seed=seed, stem="table_wide", extra=WIDE_EXTRA))
    for column in FLAT:  # value → * hierarchies of the 15-QI spec, from the data in SQL
        values = con.execute(f'SELECT DISTINCT CAST("{column}" AS VARCHAR) FROM read_parquet($path) ORDER BY 1',
                             {"path": str(target)}).fetchall()
        (out / "hierarchies" / f"flat_{column}.csv").write_text("".join(f"{v};*\n" for (v,) in values))
    head, tail = SPEC.split("[quasi_identifiers]")
    spec15 = head + SPEC15_QIS.strip() + "\n" + tail[tail.index("[sensitive."):]
    (out / "table_15.toml").write_text(spec15.format(rows=rows, seed=seed, stem="table_15"))
    return target


def count_of_one_or_more(text: str) -> int:
    """A count option's value: a whole number of 1 or more (no rows made an empty table; 0 threads
    was taken for DuckDB's default and fewer failed in DuckDB)."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"give a whole number of 1 or more, not {text!r}")
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=count_of_one_or_more, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1, help="any whole number")
    parser.add_argument("--threads", type=count_of_one_or_more, default=None, help="DuckDB's threads")
    args = parser.parse_args()
    started = time.perf_counter()
    path = make(args.rows, args.out, args.seed, args.threads)
    print(f"{path}: {args.rows:,} rows in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
