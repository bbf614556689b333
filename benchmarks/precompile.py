"""sqlclose's bytecode compiled before a benchmark times whole processes (not named ``bytecode``:
a package on PyPI is, and would be imported instead where installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def compile_sqlclose() -> None:
    """sqlclose's bytecode written once, where Python reads it (each package's ``__pycache__``, which
    git ignores), as a wheel's install writes it and as a run writes it when it may. Under
    ``PYTHONDONTWRITEBYTECODE`` no run writes it, and each compiled the modules it had not found
    compiled (~0.15 s at 1 M rows): the figure then hung on which earlier runs had left any."""
    package = Path(__import__("sqlclose").__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
