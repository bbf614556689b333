"""What the paper reproductions share: where Adult and its hierarchies are, specs over them,
writing small Markdown tables, and the output folder."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ADULT_DIR = Path(os.environ.get("SQLCLOSE_ADULT_DIR", REPO.parent / "shared" / "datasets" / "adult"))
ADULT = ADULT_DIR / "adult.csv"
OURS = REPO / "datasets" / "adult" / "hierarchies"
DEFAULT_OUT = REPO / "benchmarks" / "data" / "experiments"

# Mauger et al. keep these nine Adult attributes, all quasi-identifiers in their section 3.
NINE = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation",
        "salary-class"]


def hierarchy(column: str, which: str) -> dict:
    """A QI's hierarchy spec: the project's own ("ours": files, age banded 5/10/20) or the ARX files
    shipped beside the data ("arx")."""
    if which == "arx":
        return {"file": str(ADULT_DIR / f"adult_hierarchy_{column}.csv")}
    return {"bands": [5, 10, 20]} if column == "age" else {"file": str(OURS / f"{column}.csv")}


def adult_spec(qis: list[str], which: str = "ours", *, k: int = 2, sensitive: dict | None = None,
               search: dict | None = None, suppression: float = 0.0) -> dict:
    """A spec over Adult read from $SQLCLOSE_ADULT_DIR; unnamed columns are dropped."""
    return {"source": {"path": str(ADULT), "delimiter": ";"}, "others": "drop",
            "privacy": {"k": k, "suppression": suppression},
            "quasi_identifiers": {c: hierarchy(c, which) for c in qis},
            "sensitive": sensitive or {}, "search": search or {}}


def markdown_table(header: list[str], rows: list[list]) -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return f"{v:.2f}"
        return "" if v is None else str(v)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def out_folder(given: str | None, name: str) -> Path:
    folder = Path(given) if given else DEFAULT_OUT / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
