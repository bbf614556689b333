"""Memory limits as DuckDB spells them, in bytes (the search counts its own structures against
the user's ``[engine] memory_limit``: ``Engine.memory_budget``)."""

from __future__ import annotations

import re

_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_bytes(text: str) -> int:
    """``"256MB"`` → 256,000,000 (DuckDB's units: KB/MB/GB are powers of 1000, KiB/MiB/GiB of 1024)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"memory_limit {text!r}: a number and a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])
