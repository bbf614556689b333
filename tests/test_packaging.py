"""What a user installs: the wheel carries every package, the SQL templates and the demo's data."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_package_on_disk_is_declared():
    # pyproject lists packages by hand (a data folder is mapped in), so a new folder must be added there.
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "sqlclose").rglob("__init__.py")}
    on_disk |= {"sqlclose.sql.templates", "sqlclose.demo"}
    assert set(_declared()["packages"]) == on_disk


@pytest.mark.slow
def test_the_wheel_holds_the_templates_and_the_demo(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    names = set(zipfile.ZipFile(next(tmp_path.glob("sqlclose-*.whl"))).namelist())
    templates = {f"sqlclose/sql/templates/{p.name}" for p in (ROOT / "sqlclose/sql/templates").glob("*.sql")}
    demo = {f"sqlclose/demo/{p.name}" for p in (ROOT / "datasets/table3").iterdir() if p.suffix in (".csv", ".toml")}
    assert templates and templates <= names
    assert {"sqlclose/demo/table3.csv", "sqlclose/demo/table3.toml", "sqlclose/demo/age.csv",
            "sqlclose/demo/disease.csv"} <= demo <= names


def test_the_public_apis_type_hints_resolve():
    """``typing.get_type_hints(sqlclose.anonymize_histogram)`` raised NameError (its return type was
    imported for type checkers only): documentation tools and callers that read hints broke."""
    import inspect
    import typing

    import sqlclose

    checked = 0
    for name in sqlclose.__all__:
        obj = getattr(sqlclose, name)
        functions = [obj] if inspect.isfunction(obj) else \
            [f for _, f in inspect.getmembers(obj, inspect.isfunction)] if inspect.isclass(obj) else []
        for function in functions:
            if function.__module__.startswith("sqlclose"):
                typing.get_type_hints(function)
                checked += 1
    assert checked > 40
