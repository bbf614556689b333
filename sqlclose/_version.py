"""The package's version, and its build: what tells two sqlclose codes apart between versions."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__version__ = "0.1.0"

_SOURCES = ("*.py", "*.sql", "*.properties")  # what the package runs; its bytecode is made from these


@functools.cache
def build() -> str:
    """The sha256 of the package's own source files (their paths within it and their bytes): a fix
    of what a release holds changes it where the version stays ("0.1.0" over 1,487 commits), so a
    report of another build is never "up to date" (review h2 of the eighty-sixth round). ~6 ms, once."""
    return sources_digest(Path(__file__).parent)


def sources_digest(root: Path) -> str:
    """The sha256 of the source files under ``root``: each one's path within it and its bytes."""
    digest = hashlib.sha256()
    found = {p for pattern in _SOURCES for p in root.rglob(pattern) if "__pycache__" not in p.parts and p.is_file()}
    for path in sorted(found):  # a file, not an editor's lock link (.#release.py, dangling)
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
